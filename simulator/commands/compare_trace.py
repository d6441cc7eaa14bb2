"""`clustersim compare-trace SCENARIO TRACE.json`: a profiled step vs the model, kernel by kernel
and as a whole.

Every NCCL collective, GEMM and attention kernel of a PyTorch profiler (Kineto) trace is
predicted on the scenario's hardware (collectives with the measured size and group size, kernels
with the measured shapes) and compared: a per-event table, the median and worst error per
category, and optionally a PNG (``--plot``) and JSON (``--json``). Unless ``--kernels-only``,
the scenario is simulated too and its step time, compute and exposed communication are laid
beside the median profiled step of the trace (:mod:`simulator.calibration.trace_steps`): the
scenario should then describe the run that was traced.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from simulator.commands import add_hardware_option
from simulator.errors import InputError


def register(subparsers) -> None:
    p = subparsers.add_parser("compare-trace", help="compare a measured profiler trace with the model, kernel by kernel",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("scenario", help="scenario YAML (its hardware and node count are used)")
    p.add_argument("trace", help="PyTorch profiler (Kineto) Chrome trace, .json or .json.gz")
    p.add_argument("--plot", metavar="F.png", default=None, help="write predicted-vs-measured scatter PNG")
    p.add_argument("--json", metavar="F", default=None, help="write the comparison as JSON ('-' for stdout)")
    p.add_argument("--kernels-only", action="store_true",
                   help="compare kernel by kernel only; by default the scenario is also simulated and the whole "
                        "step (step time, compute, exposed communication) laid beside the trace's profiled steps")
    p.add_argument("--attention-mask", choices=("causal", "full"), default="causal",
                   help="mask the measured attention used (the trace does not record it; default causal)")
    add_hardware_option(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from simulator.calibration.kineto import _load, parse_kineto_data
    from simulator.calibration.trace_compare import compare_trace, render_table
    from simulator.calibration.trace_steps import compare_steps, measure_steps, render_steps
    from simulator.commands import check_outputs, figure_png
    from simulator.config.scenario import load_scenario
    from simulator.files import STDOUT, OutputSet
    from simulator.report.inputs import file_inputs, scenario_inputs

    if args.plot == STDOUT:
        raise InputError("--plot writes a PNG file; give a file name, not '-'", source="command line", field="--plot")
    if args.plot and not args.plot.endswith(".png"):
        raise InputError(f"expected a .png path, got {args.plot!r}", field="--plot")
    check_outputs(args, "json", "plot")
    scenario = load_scenario(args.scenario, args.hardware)
    data = _load(Path(args.trace))
    trace = parse_kineto_data(data, args.trace)
    for note in trace.unusable:
        print(f"clustersim: warning: {args.trace}: {note}", file=sys.stderr)
    if not (trace.collectives or trace.gemms or trace.attentions):
        raise InputError("no collective, GEMM or attention kernels found: expected a PyTorch profiler (Kineto) "
                         "trace, this looks like another tool's Chrome trace", source=args.trace)
    cmp = compare_trace(scenario, trace, causal=args.attention_mask == "causal")
    if not cmp.events:
        raise InputError("none of the trace's kernels can be compared: "
                         + "; ".join(cmp.skipped[:3]), source=args.trace)
    step = None
    if not args.kernels_only:
        from simulator.simulation import simulate_scenario

        step = compare_steps(measure_steps(data), simulate_scenario(scenario).report)
    inputs = scenario_inputs(scenario) | {"trace": file_inputs(args.trace), "attention_mask": args.attention_mask}
    if args.json != STDOUT:
        print(render_table(cmp))
        if step is not None:
            print()
            print(render_steps(step))
    with OutputSet() as out:
        if args.json:
            doc = {"inputs": inputs, **cmp.to_json(), "step": step.to_json() if step else None}
            out.add(args.json, json.dumps(doc, indent=2) + "\n", "--json")
        if args.plot:
            from simulator.calibration.compare_plots import trace_comparison_figure

            out.add(args.plot, figure_png(trace_comparison_figure(cmp)), "--plot")
    for path in (args.json, args.plot):
        if path and path != STDOUT:
            print(f"wrote {path}", file=sys.stderr if args.json == STDOUT else sys.stdout)
    return 0

"""`clustersim run SCENARIO [--json F] [--trace F] [--plot F] [--plot-window W]`: estimate one
training step."""

from __future__ import annotations

import argparse
import json
import sys

from simulator.commands import add_hardware_option, check_outputs, figure_png
from simulator.errors import InputError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("run", help="estimate one training step of a scenario",
                              description="Replay one training step and print step time, breakdown, MFU and memory.")
    p.add_argument("scenario", help="scenario YAML")
    p.add_argument("--json", metavar="F", help="write the results as JSON to F ('-' for stdout)")
    p.add_argument("--trace", metavar="F",
                   help="write a Chrome/Perfetto trace JSON to F (gzip-compressed if F ends in .gz; '-' for stdout)")
    p.add_argument("--plot", metavar="F", help="write PNG plots (F-gantt.png, F-breakdown.png)")
    p.add_argument("--plot-window", metavar="W", default="layer",
                   help="what the Gantt shows: 'layer' (default: forward and backward of one steady-state "
                        "layer on the critical rank and its TP/CP/DP peers), 'step' (the whole step), or "
                        "a time range in ms, e.g. 120:180")
    p.add_argument("--algo", help="pin the NCCL algorithm of every collective (ring, tree, nvls, ...)")
    p.add_argument("--proto", help="pin the NCCL protocol (ll, ll128, simple)")
    p.add_argument("--max-ranks", type=int, default=None,
                   help="simulate symmetric ranks once above this many ranks (default 4096)")
    p.add_argument("--no-fold", action="store_true",
                   help="replay every steady micro-batch (default: repeated ones are replayed once where "
                        "nothing differs between them; the same step times and trace)")
    add_hardware_option(p)
    p.set_defaults(handler=run)


def parse_plot_window(text: str) -> str | tuple[float, float]:
    """``layer`` | ``step`` | ``A:B`` (milliseconds) -> the plots' window (seconds for a range)."""
    if text in ("layer", "step"):
        return text
    lo, sep, hi = text.partition(":")
    try:
        a, b = float(lo), float(hi)
    except ValueError:
        a = b = float("nan")
    if not sep or not (0 <= a < b < float("inf")):
        raise InputError(f"{text!r}: expected 'layer', 'step' or a range START:END in ms with 0 <= START < END",
                         source="command line", field="--plot-window")
    return (a * 1e-3, b * 1e-3)


def run(args: argparse.Namespace) -> int:
    from simulator.config.scenario import load_scenario
    from simulator.files import STDOUT, OutputSet
    from simulator.report.summary import format_table, report_to_json
    from simulator.simulation import simulate_scenario

    window = parse_plot_window(args.plot_window)
    if args.plot == STDOUT:
        raise InputError("--plot writes two PNG files (F-gantt.png, F-breakdown.png); give a file name, not '-'",
                         source="command line", field="--plot")
    if args.max_ranks is not None and args.max_ranks < 1:
        raise InputError(f"{args.max_ranks}: expected a number of ranks >= 1", source="command line",
                         field="--max-ranks")
    check_outputs(args, "json", "trace")
    if args.plot:
        from simulator.report.plots import plot_paths

        for path in plot_paths(args.plot):
            check_outputs(argparse.Namespace(plot=str(path)), "plot")
    from simulator.costs.collectives import ALGORITHMS, PROTOCOLS

    for option, value, known in (("--algo", args.algo, ALGORITHMS), ("--proto", args.proto, PROTOCOLS)):
        if value is not None and value.lower() not in known:
            raise InputError(f"{value!r}: expected one of {', '.join(known)}", source="command line", field=option)
    sim = simulate_scenario(load_scenario(args.scenario, args.hardware), algo=args.algo, proto=args.proto,
                            max_ranks=args.max_ranks, fold=not args.no_fold)
    # the NCCL algorithm / protocol pinned on the command line change every number: echo them
    sim.report.inputs.update({k: v for k, v in (("algo", args.algo), ("proto", args.proto)) if v})
    to_stdout = STDOUT in (args.json, args.trace)
    if not to_stdout:
        print(format_table(sim.report))
    with OutputSet() as out:
        if args.json:
            out.add(args.json, json.dumps(report_to_json(sim.report), indent=2) + "\n", "--json")
        if args.trace:
            from simulator.replay.chrome_trace import chrome_trace_json

            out.add(args.trace, chrome_trace_json(sim.trace, inputs=sim.report.inputs, grid=sim.schedule.grid,
                                                  topology=sim.topology), "--trace")
        if args.plot:
            from simulator.report.labels import run_title
            from simulator.report.plots import plot_breakdown, plot_gantt, plot_paths

            gantt, breakdown = plot_paths(args.plot)
            title = run_title(sim.scenario, sim.report.step_time_s)
            out.add(gantt, figure_png(plot_gantt(sim.trace, window=window, grid=sim.schedule.grid, title=title)),
                    "--plot")
            out.add(breakdown, figure_png(plot_breakdown([sim.report], title=title)), "--plot")
    for path in out.written:
        print(f"wrote {path}", file=sys.stderr if to_stdout else sys.stdout)
    return 0

"""`clustersim sweep SCENARIO [--fix KEY=V ...] [--max KEY=N ...] [--vary KNOBS] [--max-plans N]
[--objective step_time|tokens_per_s] [--memory-cap GiB] [--results F | --resume F] [--ray auto|ADDR]
[--top K] [--jobs N] [--json F] [--csv F] [--plot F.png] [--pareto F.png]`: enumerate parallel
plans for the scenario's model and cluster, screen out the invalid, the ones that do not fit and
the ones that cannot beat the best, simulate the rest, rank them."""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path

from simulator.commands import add_hardware_option, check_outputs
from simulator.errors import InputError


def _assignment(text: str) -> tuple[str, int | str]:
    from simulator.sweep.plans import CHOICES

    key, sep, value = text.partition("=")
    key, value = key.strip(), value.strip()
    if sep and key in CHOICES and value:
        return key, value
    if not sep or not value.lstrip("-").isdigit():
        raise argparse.ArgumentTypeError(f"expected KEY=N such as tp=8 (or recompute=selective), got {text!r}")
    return key, int(value)


def _vary(text: str) -> frozenset[str]:
    from simulator.sweep.plans import VARY_KEYS

    names = {t.strip() for t in text.split(",") if t.strip()}
    if not names:
        raise argparse.ArgumentTypeError(f"expected knobs separated by commas ({', '.join(VARY_KEYS)} or all), "
                                         f"got {text!r}")
    return frozenset(VARY_KEYS) if "all" in names else frozenset(names)


def add_output_options(p: argparse.ArgumentParser) -> None:
    """Options shared by compare and sweep."""
    p.add_argument("--top", type=int, metavar="K", default=None, help="print only the K fastest plans")
    p.add_argument("--jobs", type=int, metavar="N", default=1, help="simulate N plans in parallel processes")
    p.add_argument("--json", metavar="F", help="write the ranked plans as JSON to F ('-' for stdout)")
    p.add_argument("--csv", metavar="F", help="write one CSV row per plan to F ('-' for stdout)")
    p.add_argument("--plot", metavar="F", help="write a stacked-breakdown bar chart PNG to F")
    p.add_argument("--pareto", metavar="F", help="write a PNG of step time against memory per GPU, "
                                                 "the Pareto front and the chosen plan marked")
    p.add_argument("--results", metavar="F", help="append every finished plan to F as it finishes (JSON Lines)")
    p.add_argument("--resume", metavar="F", help="skip the plans F (a --results file) already holds, and "
                                                 "append the new ones to it")
    p.add_argument("--ray", metavar="ADDR", help="run the plans as Ray tasks: 'auto' (this machine's Ray "
                                                 "cluster, or a local one) or a cluster address; needs "
                                                 "pip install 'clustersim[ray]'")
    p.add_argument("--quiet", action="store_true", help="no progress line on stderr")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("sweep", help="enumerate and rank parallel plans for a scenario",
                              description="Enumerate tp/pp/cp/ulysses/zero/micro-batch plans (and with --vary the "
                                          "overlap, CP flavour, recompute, pipeline schedule and ZeRO-3 "
                                          "implementation) for the scenario's model and cluster, screen out the "
                                          "invalid, those that do not fit in memory and those whose lower bound "
                                          "cannot beat the best so far, simulate the rest and rank them; a "
                                          "pipelined plan whose stages a split of the layers would even out is "
                                          "tried again with that split.")
    p.add_argument("scenario", help="scenario YAML (its parallel block supplies the knobs not swept)")
    p.add_argument("--fix", type=_assignment, action="append", default=[], metavar="KEY=V",
                   help="pin an axis (tp, pp, cp, ulysses, dp, zero, micro_batch, vp) or knob (tp_overlap, "
                        "cp_comm, recompute, zero3_impl, fsdp_reshard); repeatable")
    p.add_argument("--max", type=_assignment, action="append", default=[], metavar="KEY=N", dest="maximum",
                   help="cap an axis, e.g. --max cp=8 (cp/ulysses are swept only for seq_len >= 32K "
                        "unless capped here), --max micro_batch=4, --max vp=4; repeatable")
    p.add_argument("--vary", type=_vary, default=frozenset(), metavar="KNOBS",
                   help="also sweep these knobs (comma-separated): tp_overlap, cp_comm, recompute, "
                        "pp_schedule (1F1B and interleaved with vp), zero3 (DeepSpeed / FSDP2, reshard), or all")
    p.add_argument("--max-plans", type=int, metavar="N", default=None,
                   help="simulate at most N plans, the most promising first (the rest are listed as skipped)")
    p.add_argument("--objective", choices=("step_time", "tokens_per_s"), default="step_time",
                   help="what ranks the plans (the global batch is fixed, so both give the same order)")
    p.add_argument("--memory-cap", type=float, metavar="GiB", default=None,
                   help="treat plans needing more than this many GiB per GPU (peak reserved + CUDA context, "
                        "NCCL buffers and userbuffers) as infeasible")
    p.add_argument("--no-prune", action="store_true",
                   help="simulate every feasible plan, even those whose lower bound cannot beat the best")
    p.add_argument("--even-split", action="store_true",
                   help="keep every pipelined plan's layers split evenly over its stages (by default a plan "
                        "whose stages a split of the layers would even out is also tried with that split)")
    add_output_options(p)
    add_hardware_option(p)
    p.set_defaults(handler=run)


def check_jobs(args: argparse.Namespace) -> None:
    if args.jobs < 1:
        raise InputError(f"--jobs {args.jobs}: expected at least 1", source="command line")
    if args.top is not None and args.top < 1:
        raise InputError(f"--top {args.top}: expected at least 1", source="command line")
    if args.results and args.resume and Path(args.results) != Path(args.resume):
        raise InputError("--resume F appends to F; give --results only for a new file", source="command line",
                         field="--results")
    check_outputs(args, "json", "csv", "plot", "pareto", "results")


def emit(result, args: argparse.Namespace, base=None) -> int:
    """Print the table, write JSON, CSV and plots as asked, all together or none. Exit 0. The
    JSON starts with the ``inputs`` (the base scenario) and ends with ``meta`` (the wall time)."""
    from simulator.commands import figure_png
    from simulator.files import STDOUT, OutputSet
    from simulator.report.inputs import fixed_inputs_title, inputs_line, scenario_inputs
    from simulator.sweep.run import sweep_json
    from simulator.sweep.table import csv_text, format_plans, plot_rows

    doc = sweep_json(result)
    meta = {"wall_s": doc.pop("wall_s")} if "wall_s" in doc else {}
    inputs = scenario_inputs(base) if base is not None else {}
    doc = {"inputs": inputs, **doc, "meta": meta}
    title = fixed_inputs_title(inputs) if inputs else result.scenario
    line = inputs_line(inputs, plan_label="base plan (each row overrides it)") if inputs else ""
    if STDOUT not in (args.json, args.csv):
        print(format_plans(result, top=args.top))
        if line:
            print(line)
    with OutputSet() as out:
        if args.json:
            out.add(args.json, json.dumps(doc, indent=2) + "\n", "--json")
        if args.csv:
            out.add(args.csv, csv_text(result, line), "--csv")
        if args.plot:
            from simulator.report.compare_plots import plot_plan_comparison

            out.add(args.plot, figure_png(plot_plan_comparison(plot_rows(result.plans, args.top),
                                                               title=title)), "--plot")
        if getattr(args, "pareto", None):
            from simulator.report.compare_plots import plot_pareto
            from simulator.sweep.table import pareto_points

            out.add(args.pareto, figure_png(plot_pareto(pareto_points(result.plans), title=title,
                                                        memory_cap_gib=getattr(args, "memory_cap", None))),
                    "--pareto")
    return 0


class _SignalsAsExceptions:
    """SIGTERM (and SIGHUP) raise Interrupted in the main thread, as SIGINT raises
    KeyboardInterrupt: the sweep then stops its workers and closes its results file."""

    def __enter__(self):
        from simulator.sweep.run import Interrupted

        def handler(signum, frame):  # noqa: ARG001
            raise Interrupted(signum)

        self.saved = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGHUP)}
        return self

    def __exit__(self, *exc):
        for s, h in self.saved.items():
            signal.signal(s, h)


def _none_can_run(result, source: str, field: str) -> InputError | None:
    """An empty sweep is bad input: when every plan is invalid (not one could even be built,
    as opposed to plans that do not fit in memory, which are results with their numbers), the
    error names the plans' first reasons and writes nothing."""
    plans = result.plans
    if not plans or any(p.status != "invalid" for p in plans):
        return None
    shown = "; ".join(f"{p.label}: {p.reason}" for p in plans[:3])
    more = f" (and {len(plans) - 3} more)" if len(plans) > 3 else ""
    return InputError(f"none of the {len(plans)} plans can run: {shown}{more}", source=source, field=field)


def execute(base, candidates, args: argparse.Namespace, *, where: tuple[str, str] = ("command line", "--fix/--max"),
            **kwargs) -> int:
    """Run the plans with the options shared by compare and sweep; report an interruption.
    ``where``: the source and field an empty sweep (every plan invalid) is blamed on."""
    from simulator.simulation import simulate_scenario
    from simulator.sweep.progress import Progress
    from simulator.sweep.run import Interrupted, run_plans

    progress = Progress(enabled=not args.quiet)
    try:
        with _SignalsAsExceptions():
            result = run_plans(base, candidates, simulate_scenario, jobs=args.jobs, results=args.results,
                               resume=args.resume, ray=args.ray, progress=progress, **kwargs)
    except (KeyboardInterrupt, Interrupted) as exc:
        saved = args.results or args.resume
        resume = f"; finished plans are in {saved}, continue with --resume {saved}" if saved else ""
        print(f"clustersim: sweep interrupted{resume}", file=sys.stderr)
        return 128 + (exc.signum if isinstance(exc, Interrupted) else signal.SIGINT)
    empty = _none_can_run(result, *where)
    if empty is not None:
        raise empty
    if "-" in (args.json, args.csv):  # no table on stdout: say what the sweep did on stderr
        from simulator.sweep.table import counts_line

        progress.finish(counts_line(result))
    return emit(result, args, base)


def run(args: argparse.Namespace) -> int:
    from simulator.config.scenario import load_scenario
    from simulator.sweep.plans import SweepBounds, enumerate_plans

    check_jobs(args)
    if args.max_plans is not None and args.max_plans < 1:
        raise InputError(f"--max-plans {args.max_plans}: expected at least 1", source="command line")
    if args.memory_cap is not None and not (0 < args.memory_cap < float("inf")):
        raise InputError(f"--memory-cap {args.memory_cap}: expected a positive number of GiB", source="command line")
    for option, pairs in (("--fix", args.fix), ("--max", args.maximum)):
        given: dict[str, int | str] = {}
        for key, value in pairs:
            if key in given and given[key] != value:
                raise InputError(f"{key} is given twice ({key}={given[key]} and {key}={value}); expected one value",
                                 source="command line", field=option)
            given[key] = value
    bounds = SweepBounds(fixed=dict(args.fix), maximum=dict(args.maximum), vary=args.vary)
    base = load_scenario(args.scenario, args.hardware)
    candidates = enumerate_plans(base, bounds)
    if not candidates:
        pinned = " ".join(f"{k}={v}" for k, v in bounds.fixed.items()) or "none"
        raise InputError(f"no plan matches the bounds (fixed: {pinned}): the degrees tp x cp x ulysses x pp "
                         f"must divide {base.n_gpus} GPUs", source="command line", field="--fix/--max")
    return execute(base, candidates, args, max_plans=args.max_plans, prune=not args.no_prune,
                   objective=args.objective, memory_cap_gib=args.memory_cap, balance_stages=not args.even_split)

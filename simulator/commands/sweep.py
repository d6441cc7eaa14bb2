"""`clustersim sweep SCENARIO [--max-plans N] [--fix tp=8 ...] [--max cp=4 ...] [--top K]
[--jobs N] [--json F] [--plot F.png]`: enumerate parallel plans for the scenario's model and
cluster, prune the invalid and the ones that do not fit, simulate the rest, rank them."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from simulator.commands import add_hardware_option
from simulator.errors import InputError


def _assignment(text: str) -> tuple[str, int]:
    key, sep, value = text.partition("=")
    if not sep or not value.strip().lstrip("-").isdigit():
        raise argparse.ArgumentTypeError(f"expected KEY=N such as tp=8, got {text!r}")
    return key.strip(), int(value)


def add_output_options(p: argparse.ArgumentParser) -> None:
    """Options shared by compare and sweep."""
    p.add_argument("--top", type=int, metavar="K", default=None, help="print only the K fastest plans")
    p.add_argument("--jobs", type=int, metavar="N", default=1, help="simulate N plans in parallel processes")
    p.add_argument("--json", metavar="F", help="write the ranked plans as JSON to F ('-' for stdout)")
    p.add_argument("--plot", metavar="F", help="write a stacked-breakdown bar chart PNG to F")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("sweep", help="enumerate and rank parallel plans for a scenario",
                              description="Enumerate tp/pp/cp/ulysses/zero/micro-batch plans for the scenario's "
                                          "model and cluster, prune the invalid and those that do not fit in "
                                          "memory, simulate the rest and rank them fastest first.")
    p.add_argument("scenario", help="scenario YAML (its parallel block supplies the knobs not swept)")
    p.add_argument("--fix", type=_assignment, action="append", default=[], metavar="KEY=N",
                   help="pin an axis (tp, pp, cp, ulysses, dp, zero, micro_batch, vp); repeatable")
    p.add_argument("--max", type=_assignment, action="append", default=[], metavar="KEY=N", dest="maximum",
                   help="cap an axis, e.g. --max cp=8 (cp/ulysses are swept only for seq_len >= 32K "
                        "unless capped here), --max micro_batch=4, --max vp=4; repeatable")
    p.add_argument("--max-plans", type=int, metavar="N", default=None,
                   help="simulate at most N plans (the rest are listed as not simulated)")
    add_output_options(p)
    add_hardware_option(p)
    p.set_defaults(handler=run)


def check_jobs(args: argparse.Namespace) -> None:
    if args.jobs < 1:
        raise InputError(f"--jobs {args.jobs}: expected at least 1", source="command line")
    if args.top is not None and args.top < 1:
        raise InputError(f"--top {args.top}: expected at least 1", source="command line")


def emit(result, args: argparse.Namespace) -> int:
    """Print the table, write JSON and plot as asked. Exit 0 when some plan could be simulated."""
    from simulator.sweep.run import sweep_json
    from simulator.sweep.table import format_plans, plot_rows

    doc = sweep_json(result)
    if args.json == "-":
        print(json.dumps(doc, indent=2))
    else:
        print(format_plans(result, top=args.top))
        if args.json:
            Path(args.json).write_text(json.dumps(doc, indent=2) + "\n")
    if args.plot:
        from simulator.report.compare_plots import plot_plan_comparison

        plot_plan_comparison(plot_rows(result.plans, args.top), title=result.scenario, path=args.plot)
    return 0


def run(args: argparse.Namespace) -> int:
    from simulator.config.scenario import load_scenario
    from simulator.simulate import simulate_scenario
    from simulator.sweep.plans import SweepBounds, enumerate_plans
    from simulator.sweep.run import run_plans

    check_jobs(args)
    if args.max_plans is not None and args.max_plans < 1:
        raise InputError(f"--max-plans {args.max_plans}: expected at least 1", source="command line")
    bounds = SweepBounds(fixed=dict(args.fix), maximum=dict(args.maximum))
    base = load_scenario(args.scenario, args.hardware)
    candidates = enumerate_plans(base, bounds)
    if not candidates:
        pinned = " ".join(f"{k}={v}" for k, v in bounds.fixed.items()) or "none"
        raise InputError(f"no plan matches the bounds (fixed: {pinned}): the degrees tp x cp x ulysses x pp "
                         f"must divide {base.n_gpus} GPUs", source="command line", field="--fix/--max")
    result = run_plans(base, candidates, simulate_scenario, jobs=args.jobs, max_plans=args.max_plans)
    return emit(result, args)

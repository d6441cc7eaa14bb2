"""`clustersim compare SCENARIO --plans PLANS.yaml [--top K] [--jobs N] [--json F] [--csv F]
[--plot F.png] [--pareto F.png] [--results F | --resume F] [--ray ADDR]`: simulate the plans
listed in a file (overrides of the scenario's plan) and rank them."""

from __future__ import annotations

import argparse

from simulator.commands import add_hardware_option
from simulator.commands.sweep import add_output_options, check_jobs, execute


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("compare", help="rank the parallel plans listed in a plans file",
                              description="Simulate each plan of PLANS.yaml (overrides of the scenario's "
                                          "parallel block, optionally micro_batch) and print them side by "
                                          "side, fastest first, with the breakdown and memory per GPU.")
    p.add_argument("scenario", help="scenario YAML (the base every plan overrides)")
    p.add_argument("--plans", required=True, metavar="PLANS.yaml",
                   help="YAML with a `plans:` list; see scenarios/plans/llama3-8b-h100-plans.yaml")
    add_output_options(p)
    add_hardware_option(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from simulator.config.scenario import load_scenario
    from simulator.sweep.plans import dedupe
    from simulator.sweep.plans_file import load_plans

    check_jobs(args)
    base = load_scenario(args.scenario, args.hardware)
    candidates = load_plans(args.plans, base)
    unique = dedupe(candidates)
    if len(unique) < len(candidates):
        print(f"note: {len(candidates) - len(unique)} duplicate plan(s) in {args.plans} simulated once")
    # every listed plan is simulated: the user asked for each of them
    return execute(base, unique, args, prune=False, where=(str(args.plans), "plans"))

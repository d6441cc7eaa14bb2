"""`clustersim run SCENARIO [--json F] [--trace F] [--plot F]`: estimate one training step."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from simulator.commands import add_hardware_option


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("run", help="estimate one training step of a scenario",
                              description="Replay one training step and print step time, breakdown, MFU and memory.")
    p.add_argument("scenario", help="scenario YAML")
    p.add_argument("--json", metavar="F", help="write the results as JSON to F ('-' for stdout)")
    p.add_argument("--trace", metavar="F", help="write a Chrome/Perfetto trace JSON to F")
    p.add_argument("--plot", metavar="F", help="write PNG plots (F-gantt.png, F-breakdown.png)")
    p.add_argument("--algo", help="pin the NCCL algorithm of every collective (ring, tree, nvls, ...)")
    p.add_argument("--proto", help="pin the NCCL protocol (ll, ll128, simple)")
    p.add_argument("--max-ranks", type=int, default=None,
                   help="simulate symmetric ranks once above this many ranks (default 4096)")
    add_hardware_option(p)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from simulator.report.summary import format_table, report_to_json
    from simulator.config.scenario import load_scenario
    from simulator.simulate import simulate_scenario

    sim = simulate_scenario(load_scenario(args.scenario, args.hardware), algo=args.algo, proto=args.proto,
                            max_ranks=args.max_ranks)
    if args.json == "-":
        print(json.dumps(report_to_json(sim.report), indent=2))
    else:
        print(format_table(sim.report))
        if args.json:
            Path(args.json).write_text(json.dumps(report_to_json(sim.report), indent=2) + "\n")
    if args.trace:
        from simulator.replay.chrome_trace import write_chrome_trace

        write_chrome_trace(sim.trace, args.trace)
    if args.plot:
        from simulator.report.plots import save_plots

        save_plots(sim.trace, sim.report, args.plot)
    return 0

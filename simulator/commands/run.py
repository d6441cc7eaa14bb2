"""`clustersim run SCENARIO [--json F] [--trace F] [--plot F] [--plot-window W]`: estimate one
training step."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from simulator.commands import add_hardware_option
from simulator.errors import InputError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("run", help="estimate one training step of a scenario",
                              description="Replay one training step and print step time, breakdown, MFU and memory.")
    p.add_argument("scenario", help="scenario YAML")
    p.add_argument("--json", metavar="F", help="write the results as JSON to F ('-' for stdout)")
    p.add_argument("--trace", metavar="F", help="write a Chrome/Perfetto trace JSON to F")
    p.add_argument("--plot", metavar="F", help="write PNG plots (F-gantt.png, F-breakdown.png)")
    p.add_argument("--plot-window", metavar="W", default="layer",
                   help="what the Gantt shows: 'layer' (default: forward and backward of one steady-state "
                        "layer on the critical rank and its TP/CP/DP peers), 'step' (the whole step), or "
                        "a time range in ms, e.g. 120:180")
    p.add_argument("--algo", help="pin the NCCL algorithm of every collective (ring, tree, nvls, ...)")
    p.add_argument("--proto", help="pin the NCCL protocol (ll, ll128, simple)")
    p.add_argument("--max-ranks", type=int, default=None,
                   help="simulate symmetric ranks once above this many ranks (default 4096)")
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
    from simulator.report.summary import format_table, report_to_json
    from simulator.config.scenario import load_scenario
    from simulator.simulate import simulate_scenario

    window = parse_plot_window(args.plot_window)
    sim = simulate_scenario(load_scenario(args.scenario, args.hardware), algo=args.algo, proto=args.proto,
                            max_ranks=args.max_ranks)
    wrote: list[str] = []
    if args.json == "-":
        print(json.dumps(report_to_json(sim.report), indent=2))
    else:
        print(format_table(sim.report))
        if args.json:
            Path(args.json).write_text(json.dumps(report_to_json(sim.report), indent=2) + "\n")
            wrote.append(args.json)
    if args.trace:
        from simulator.replay.chrome_trace import write_chrome_trace

        write_chrome_trace(sim.trace, args.trace)
        wrote.append(args.trace)
    if args.plot:
        from simulator.report.plots import save_plots

        wrote += [str(p) for p in save_plots(sim.trace, sim.report, args.plot, scenario=sim.scenario,
                                             grid=sim.schedule.grid, window=window)]
    for path in wrote:
        print(f"wrote {path}", file=sys.stderr if args.json == "-" else sys.stdout)
    return 0

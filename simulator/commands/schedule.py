"""``clustersim schedule SCENARIO -o F.json``: write the per-role programs of one step as JSON."""

from __future__ import annotations

import argparse
import json
import sys

from simulator.config.scenario import load_scenario
from simulator.errors import InputError
from simulator.schedule.build import build_schedule, schedule_to_json


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("schedule", help="write the schedule of one training step as JSON")
    parser.add_argument("scenario", help="scenario YAML")
    parser.add_argument("-o", "--output", default="-", help="output JSON file (default: stdout)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    data = schedule_to_json(build_schedule(load_scenario(args.scenario)))
    text = json.dumps(data, separators=(",", ":"))
    if args.output == "-":
        sys.stdout.write(text + "\n")
        return 0
    try:
        with open(args.output, "w") as fh:
            fh.write(text)
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror}", source=args.output) from None
    return 0

"""``clustersim schedule SCENARIO -o F.json``: write the per-role programs of one step as JSON."""

from __future__ import annotations

import argparse
import json

from simulator.commands import check_outputs
from simulator.config.scenario import load_scenario
from simulator.files import OutputSet
from simulator.report.inputs import scenario_inputs
from simulator.schedule.build import build_schedule, schedule_to_json


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("schedule", help="write the schedule of one training step as JSON")
    parser.add_argument("scenario", help="scenario YAML")
    parser.add_argument("-o", "--output", default="-", help="output JSON file ('-', the default: stdout; .gz: gzip-compressed)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    check_outputs(args, "output")
    scenario = load_scenario(args.scenario)
    data = {"inputs": scenario_inputs(scenario), **schedule_to_json(build_schedule(scenario))}
    with OutputSet() as out:
        out.add(args.output, json.dumps(data, separators=(",", ":")) + "\n", "-o")
    return 0

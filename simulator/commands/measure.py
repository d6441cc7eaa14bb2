"""`clustersim measure`: time collectives on this cluster's real process groups (run it under
torchrun) and write nccl-tests-format output for `clustersim calibrate`. See simulator/measure.py."""

from __future__ import annotations

import argparse

from simulator import measure


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "measure", help="time collectives on real process groups (torchrun) -> nccl-tests-format log",
        description=measure.__doc__.split("\n\n")[0] if measure.__doc__ else None)
    measure.build_parser(parser)
    parser.set_defaults(handler=handler)


def handler(args: argparse.Namespace) -> int:
    return measure.run(args)

"""Sub-commands of the CLI, one module each (part of the CLI layer)."""

from __future__ import annotations

import argparse


def add_hardware_option(parser: argparse.ArgumentParser) -> None:
    """``--hardware P``: run the scenario on another profile than its ``hardware:`` key says."""
    parser.add_argument("--hardware", metavar="P", default=None,
                        help="use this hardware profile instead of the scenario's (a bundled name, or a profile "
                             "YAML such as a calibrate overlay)")

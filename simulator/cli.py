"""Command line. Thin: each sub-command lives in simulator/commands/<name>.py and exposes
``register(subparsers)``, which adds its parser and sets ``handler(args) -> int``.

This is the only place errors become exit codes: 0 ok, 2 invalid input, 1 internal error
or a simulation that cannot complete.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import NoReturn, Sequence

from simulator.errors import ClusterSimError, InputError

# Sub-command modules, in the order `--help` lists them. A module that is not present yet
# is skipped, so the CLI grows with the package.
COMMANDS = ("run", "check", "schedule", "collective", "compare", "sweep", "calibrate", "compare_trace", "measure",
            "scenarios")


class _Parser(argparse.ArgumentParser):
    """argparse exits with 2 on bad options already; keep its message, drop the usage dump noise."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        raise InputError(message, source="command line")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="clustersim", description="Discrete-event simulator of distributed LLM training.")
    from simulator import __version__

    parser.add_argument("--version", action="version", version=f"clustersim {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"simulator.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"simulator.commands.{name}":
                continue
            raise
        module.register(sub)
    parser.set_defaults(_subcommands=sub.choices)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    # No matplotlib backend is chosen anywhere: the plots are drawn on ``Figure`` objects and
    # saved through their own canvas, which needs none. Setting one here (even through the
    # environment) would leak into a notebook that calls ``main`` and into its kernels.
    try:
        parser = build_parser()
        args, extra = parser.parse_known_args(argv)
        if extra:  # name the sub-command's usage, not the top-level one
            sub = getattr(args, "_subcommands", {}).get(getattr(args, "command", None) or "", parser)
            sub.error(f"unrecognized arguments: {' '.join(extra)}")
        if not getattr(args, "handler", None):
            parser.print_help()
            return 2
        return int(args.handler(args) or 0)
    except InputError as exc:
        print(f"clustersim: error: {exc}", file=sys.stderr)
        return 2
    except ClusterSimError as exc:
        print(f"clustersim: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    except OSError as exc:
        if exc.filename is None:
            return _internal(exc)
        # a path the user gave cannot be read or written (a directory, no permission, disk full)
        print(f"clustersim: error: {exc.filename}: cannot use this path: {exc.strerror}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # an internal bug: say so plainly, exit 1, no traceback noise by default
        return _internal(exc)


def _internal(exc: BaseException) -> int:
    import os
    import traceback

    if os.environ.get("CLUSTERSIM_DEBUG"):
        traceback.print_exception(exc)
    print(f"clustersim: internal error: {type(exc).__name__}: {exc} "
          "(set CLUSTERSIM_DEBUG=1 for the traceback)", file=sys.stderr)
    return 1

"""Sub-commands of the CLI, one module each (part of the CLI layer)."""

from __future__ import annotations

import argparse


def add_hardware_option(parser: argparse.ArgumentParser) -> None:
    """``--hardware P``: run the scenario on another profile than its ``hardware:`` key says."""
    parser.add_argument("--hardware", metavar="P", default=None,
                        help="use this hardware profile instead of the scenario's (a bundled name, or a profile "
                             "YAML such as a calibrate overlay)")


def check_outputs(args: argparse.Namespace, *options: str) -> None:
    """Before any work: every output option given must be writable (``-`` is stdout, at most
    one of them). ``options`` are the dests (``json``, ``trace``, ``plot``, ``output``, ``log``)."""
    from simulator.errors import InputError
    from simulator.files import STDOUT, check_output_path

    given = {o: getattr(args, o, None) for o in options if getattr(args, o, None) is not None}
    to_stdout = [o for o, v in given.items() if str(v) == STDOUT]
    if len(to_stdout) > 1:
        raise InputError(f"only one output can go to stdout ('-'), got {' and '.join(_flag(o) for o in to_stdout)}",
                         source="command line", field=_flag(to_stdout[1]))
    for o, v in given.items():
        check_output_path(v, _flag(o))


def _flag(dest: str) -> str:
    return {"output": "-o", "log": "--log", "dest": "DEST"}.get(dest, f"--{dest.replace('_', '-')}")


def figure_png(fig) -> bytes:
    """A matplotlib Figure as PNG bytes, to be written with the command's other outputs."""
    import io

    from simulator.report.figures import DPI

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    return buf.getvalue()

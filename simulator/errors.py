"""One error hierarchy. The CLI turns InputError into exit code 2 and SimulationError into 1."""

from __future__ import annotations

import sys
from typing import Callable


class ClusterSimError(Exception):
    """Base class of every error clustersim raises on purpose."""


class InputError(ClusterSimError):
    """The user's input is wrong: a file, a field, a command-line option.

    The message names where (file and field path, or option) and what was expected,
    e.g. ``scenarios/x.yaml: parallel.tp: tp=8 does not divide kv_heads=4``.
    """

    def __init__(self, message: str, *, source: str | None = None, field: str | None = None):
        self.source = source
        self.field = field
        self.detail = message
        prefix = ""
        if source:
            prefix += f"{source}: "
        if field:
            prefix += f"{field}: "
        super().__init__(prefix + message)


class SimulationError(ClusterSimError):
    """The simulation could not complete (for example, ranks wait on each other forever)."""


class HangError(SimulationError):
    """Ranks block forever; the message lists which ranks wait on which op."""


def exit_code(prog: str, run: Callable[[], int]) -> int:
    """Run a ``python -m`` entry point: an InputError becomes its message on stderr and exit
    code 2, never a traceback (``clustersim`` itself does this in :mod:`simulator.cli`)."""
    try:
        return run()
    except InputError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2

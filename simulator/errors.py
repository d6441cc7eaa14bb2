"""One error hierarchy. The CLI turns InputError into exit code 2 and SimulationError into 1."""

from __future__ import annotations

import sys
from typing import Callable


class ClusterSimError(Exception):
    """Base class of every error clustersim raises on purpose."""


MAX_MESSAGE_CHARS = 4000  # an error message is read by a person; longer ones are cut, saying so


def quote(value: object, limit: int = 80, *, repr_: bool = True) -> str:
    """``repr(value)`` (or ``str``) cut to ``limit`` characters, for quoting user input in a
    message: a field can hold a megabyte-long string or an alias-expanded list."""
    if isinstance(value, (list, tuple, dict, set)) and len(value) > limit:
        text = f"<{type(value).__name__} of {len(value):,} items>"
    else:
        text = repr(value) if repr_ else str(value)
    if len(text) > limit:
        text = f"{text[:limit]}... ({len(text) - limit:,} more characters)"
    return text


class InputError(ClusterSimError):
    """The user's input is wrong: a file, a field, a command-line option.

    The message names where (file and field path, or option) and what was expected,
    e.g. ``scenarios/x.yaml: parallel.tp: tp=8 does not divide kv_heads=4``.
    """

    def __init__(self, message: str, *, source: str | None = None, field: str | None = None):
        self.source = source
        self.field = field
        if len(message) > MAX_MESSAGE_CHARS:
            message = f"{message[:MAX_MESSAGE_CHARS]}... ({len(message) - MAX_MESSAGE_CHARS:,} more characters)"
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

"""The sweep's progress line on stderr: plans done of the plans to simulate, how many were
feasible, the best so far and an estimate of the time left.

On a terminal the line is redrawn in place (carriage return) at most five times a second; when
stderr is a file or a pipe (CI logs) a full line is printed at most every ten seconds, and one
at the end, so a log stays short. Hand-written rather than tqdm: one line of text does not need
a dependency.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


def _duration(s: float) -> str:
    s = int(round(s))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


class Progress:
    def __init__(self, stream: TextIO | None = None, enabled: bool = True):
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.t0 = time.perf_counter()
        self.last = 0.0
        self.width = 0
        self.total = 0  # plans to simulate (shrinks as plans are pruned)
        self.done = 0
        self.simulated_times: list[float] = []

    def start(self, screened: int, to_simulate: int, resumed: int) -> None:
        self.total = to_simulate
        if self.enabled:
            note = f", {resumed} from the results file" if resumed else ""
            self._emit(f"sweep: {screened} plans screened{note}; {to_simulate} to simulate", final=True)

    def update(self, *, done: int, total: int, feasible: int, best: str, force: bool = False) -> None:
        self.done, self.total = done, total
        if not self.enabled:
            return
        now = time.perf_counter()
        if not force and now - self.last < (0.2 if self.tty else 10.0):
            return
        self.last = now
        elapsed = now - self.t0
        left = total - done
        eta = f", ETA {_duration(elapsed / done * left)}" if done and left > 0 else ""
        self._emit(f"sweep: {done}/{total} simulated, {feasible} feasible, best {best or '-'}"
                   f" [{_duration(elapsed)}{eta}]")

    def finish(self, text: str) -> None:
        if self.enabled:
            self._emit(text, final=True)

    def _emit(self, text: str, final: bool = False) -> None:
        if self.tty:
            pad = " " * max(0, self.width - len(text))
            self.stream.write("\r" + text + pad + ("\n" if final else ""))
            self.width = 0 if final else len(text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

"""The results file of a sweep (``--results F``, ``--resume F``): JSON Lines, one finished plan a
line, appended the moment the plan is decided.

Each line holds the plan (its label, ``parallel`` block, micro-batch and recompute mode, and a
``key`` that identifies it), its status (``simulated``, ``infeasible``, ``invalid``, ``pruned``,
``failed``), its figures (step time, tokens/s, MFU, breakdown, memory per GPU, the analytical
lower bound) and the hashes of the inputs it was computed from (the scenario, the hardware
profile, the clustersim version). ``--resume F`` reads F back, refuses it when the hashes say it
was computed for other inputs, and skips every plan F holds.

Consistency: every line is written with one ``write`` system call on a file opened with
``O_APPEND`` from the sweep's main process only, so an interrupted sweep (SIGINT, SIGTERM, or
the machine going away between two lines) leaves whole lines; a line cut short by a crash in
the middle of that call is the last one, and reading drops it (and says so) instead of failing.
Plans not simulated because of ``--max-plans`` are not written: they are not finished.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from simulator.config.scenario import Scenario
from simulator.errors import InputError


def _digest(obj: Any) -> str:
    text = json.dumps(obj, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def input_hashes(scn: Scenario) -> dict[str, str]:
    """What a plan's figures depend on besides the plan: the scenario (model, training, cluster
    size and the base plan's knobs the sweep does not vary), the hardware profile (every number,
    overlays merged) and the clustersim version."""
    from simulator import __version__

    scenario = {"name": scn.name, "nodes": scn.nodes, "model": scn.model.model_dump(),
                "training": scn.training.model_dump(), "parallel": scn.parallel.model_dump()}
    return {"scenario_sha256": _digest(scenario), "hardware_sha256": _digest(scn.profile.model_dump()),
            "clustersim": __version__}


@dataclass
class Loaded:
    """The lines of a results file, by plan key, and how many trailing bytes were unusable."""

    lines: dict[str, dict[str, Any]]
    dropped_tail: bool = False


def read_results(path: str | Path, hashes: dict[str, str]) -> Loaded:
    """The finished plans of ``path`` (missing file: none). Raises InputError (exit 2) when a
    line is not a results line or was computed for other inputs."""
    p = Path(path)
    if not p.exists():
        return Loaded({})
    if p.is_dir():
        raise InputError("is a directory, expected a results file (JSON Lines)", source=str(p), field="--resume")
    raw = p.read_bytes()
    out: dict[str, dict[str, Any]] = {}
    dropped = False
    chunks = raw.split(b"\n")
    for n, chunk in enumerate(chunks, start=1):
        if not chunk.strip():
            continue
        try:
            doc = json.loads(chunk)
        except (ValueError, UnicodeDecodeError):
            if n == len(chunks):  # the last line, cut short by a crash: drop it
                dropped = True
                continue
            raise InputError(f"line {n} is not JSON; expected one plan per line as `sweep --results` writes",
                             source=str(p), field="--resume") from None
        if not isinstance(doc, dict) or "key" not in doc or "inputs" not in doc:
            raise InputError(f"line {n} is not a sweep result (no key/inputs)", source=str(p), field="--resume")
        if doc["inputs"] != hashes:
            what = [k for k in hashes if doc["inputs"].get(k) != hashes[k]]
            raise InputError(f"line {n} was computed for other inputs ({', '.join(what)} differ): resume only "
                             f"with the same scenario, hardware and clustersim version, or start a new file",
                             source=str(p), field="--resume")
        out[doc["key"]] = doc
    return Loaded(out, dropped)


class ResultsWriter:
    """Appends one JSON line per finished plan, each with a single ``os.write``."""

    def __init__(self, path: str | Path, truncate_tail: bool = False):
        self.path = Path(path)
        if self.path.is_dir():
            raise InputError("is a directory, expected a file for the results", source=str(self.path),
                             field="--results")
        if truncate_tail:
            _drop_partial_line(self.path)
        try:
            self.fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise InputError(f"cannot write: {exc.strerror}", source=str(self.path), field="--results") from None

    def append(self, doc: dict[str, Any]) -> None:
        data = (json.dumps(doc, sort_keys=True, allow_nan=False) + "\n").encode()
        written = os.write(self.fd, data)
        while written < len(data):  # regular files take it whole; be correct anyway
            written += os.write(self.fd, data[written:])

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> "ResultsWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _drop_partial_line(path: Path) -> None:
    """Cut a trailing line without its newline (a write cut short by a crash)."""
    if not path.exists():
        return
    raw = path.read_bytes()
    if raw and not raw.endswith(b"\n"):
        with open(path, "r+b") as fh:
            fh.truncate(raw.rfind(b"\n") + 1)


def iter_lines(path: str | Path) -> Iterator[dict[str, Any]]:
    """Every whole line of a results file (for tools and tests)."""
    for chunk in Path(path).read_bytes().split(b"\n"):
        if chunk.strip():
            try:
                yield json.loads(chunk)
            except ValueError:
                continue

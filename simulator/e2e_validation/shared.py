"""Simulated step times shared between processes through a folder, so that several processes
scoring the same rows (the test files of one ``pytest -n N`` run, each in its own worker) simulate
each scenario once between them.

One file per simulation key (``scoring``'s key: the scenario, the profile and the NCCL release),
named by its SHA-256: a JSON record of the key and the simulated values, written to a temporary
name and renamed into place (``os.replace`` is atomic within a folder), so a reader sees all of a
record or none of it. A process claims a key before simulating it by creating ``<name>.lock`` with
``O_CREAT | O_EXCL`` (exactly one creator succeeds), holding its process id; it removes the lock
after writing the record, or without a record when the simulation fails, so that another process
claims the key and meets the failure itself. A lock whose process is gone is stale and is taken
over. The folder holds only what processes simulated since it was created: it is a meeting place
for one run, not a cache across runs.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
from pathlib import Path
from typing import Any


class SharedSimulations:
    """Records of simulated keys in `directory` (created if absent), with claims on keys being simulated."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str, suffix: str) -> Path:
        return self.directory / (hashlib.sha256(key.encode()).hexdigest() + suffix)

    def get(self, key: str) -> dict[str, Any] | None:
        """The values another process (or this one) stored for `key`, or None."""
        try:
            record = json.loads(self._path(key, ".json").read_text())
        except FileNotFoundError:
            return None
        if record["key"] != key:  # a SHA-256 collision: never in practice, but never a wrong value
            return None
        values: dict[str, Any] = record["values"]
        return values

    def claim(self, key: str) -> bool:
        """True if this process now holds `key` (it must then :meth:`put` or :meth:`release` it);
        False while another live process holds it."""
        lock = self._path(key, ".lock")
        for _ in range(2):
            try:
                fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                if _holder_alive(lock):
                    return False
                lock.unlink(missing_ok=True)  # stale: its process ended without a record or a release
                continue
            with os.fdopen(fd, "w") as f:
                f.write(str(os.getpid()))
            return True
        return False

    def put(self, key: str, values: dict[str, Any]) -> None:
        """Store the values of a claimed key and release the claim."""
        final = self._path(key, ".json")
        tmp = final.with_name(f"{final.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"key": key, "values": values}))
        os.replace(tmp, final)
        self.release(key)

    def release(self, key: str) -> None:
        """Give up a claimed key (stored or not)."""
        self._path(key, ".lock").unlink(missing_ok=True)

    def held(self, key: str) -> bool:
        """Whether some live process holds `key` now."""
        lock = self._path(key, ".lock")
        return lock.exists() and _holder_alive(lock)


def _holder_alive(lock: Path) -> bool:
    try:
        pid = int(lock.read_text() or "0")
    except FileNotFoundError:
        return False
    except ValueError:  # the holder has created the file but not written its id yet
        return True
    if pid <= 0:
        return True  # as above: an empty lock is one being written
    try:
        os.kill(pid, 0)
    except OSError as e:
        return e.errno == errno.EPERM
    return True

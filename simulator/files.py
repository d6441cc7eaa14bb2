"""File helpers shared by the layers: where the bundled files are, and writing results.

Every result clustersim writes goes through :func:`write_atomically` or an :class:`OutputSet`:
the bytes land in a temporary file beside the target, which is renamed over it only once it is
complete, so a reader never sees a half-written file and a failure leaves the old file (or
nothing) behind. Files get the mode the user's umask gives any new file (``mkstemp`` alone
would make them 0600). A path ending in ``.gz`` is written gzip-compressed (with a zero
timestamp, so identical content gives identical bytes). ``-`` means standard output.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import os
import re
import stat
import sys
import tempfile
from importlib import resources
from pathlib import Path

from simulator.errors import InputError

STDOUT = "-"


def bundled_dir(relative: str) -> Path:
    """A folder shipped with clustersim (``hardware_profiles``, ``scenarios``, ``data/nccl``,
    ``data/e2e``, ``data/kernels``).

    The repository's top-level folders are the source of truth. A checkout or an editable
    install reads them in place; a built wheel or a regular install (``pip install .``,
    ``--user``, ``--target``) carries them as package data under ``simulator/bundled/``
    (pyproject ``[tool.setuptools.package-data]`` with a ``package-dir`` mapping), found through
    :mod:`importlib.resources` wherever pip put the package.
    """
    root = Path(__file__).resolve().parents[1]
    if (root / "pyproject.toml").is_file() and (root / relative).is_dir():
        return root / relative
    packaged = resources.files("simulator") / "bundled" / relative
    return Path(str(packaged))


def read_commented_csv(path: str | Path) -> list[dict[str, str]]:
    """Rows of a bundled data CSV as dicts, skipping its ``#`` provenance lines."""
    with open(path, newline="") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def note_value(notes: str, key: str) -> str:
    """The value of ``key=value`` in a data row's ``;``-separated notes, or "" when the notes have none."""
    m = re.search(rf"\b{re.escape(key)}=([^;]+)", notes)
    return m.group(1).strip() if m else ""


def sha256_file(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes (to echo the exact inputs of a result)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _encode(path: Path, data: str | bytes) -> bytes:
    raw = data.encode() if isinstance(data, str) else data
    if path.name.endswith(".gz"):
        return gzip.compress(raw, compresslevel=6, mtime=0)  # gzip(1)'s default level: 9 costs 2.4x the CPU for 5% smaller traces
    return raw


def _stage(path: Path, data: bytes) -> Path:
    """Write ``data`` to a new temporary file beside ``path``; return the temporary path."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


def is_special_file(path: Path) -> bool:
    """Whether ``path`` exists and is neither a regular file nor a folder: a device such as
    ``/dev/null`` or ``/dev/stdout``, a FIFO, a socket. Such a target is written in place, never
    renamed over: a rename would replace ``/dev/null`` itself with a regular file (as root, or
    wherever the folder is writable)."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _write_in_place(path: Path, data: bytes, option: str | None = None) -> None:
    try:
        with open(path, "wb") as fh:
            fh.write(data)
    except OSError as exc:  # /dev/full, a FIFO nobody reads that was closed, ...
        raise InputError(f"cannot write {str(path)!r}: {exc.strerror or exc}", source="command line",
                         field=option) from None


def write_atomically(path: str | Path, data: str | bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file and a rename (gzip for ``*.gz``); a
    device or FIFO (:func:`is_special_file`) is written in place."""
    p = Path(path)
    if is_special_file(p):
        _write_in_place(p, _encode(p, data))
        return p
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = _stage(p, _encode(p, data))
    try:
        os.replace(tmp, p)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return p


def check_output_path(path: str | Path | None, option: str) -> None:
    """Refuse, before any work is done, an output path that cannot be written: its folder
    missing or not writable, or the path itself a folder. ``-`` (stdout) and None pass."""
    if path is None or str(path) == STDOUT:
        return
    p = Path(path)
    if is_special_file(p):  # a device or FIFO is written in place: it must be writable itself
        if not os.access(p, os.W_OK):
            raise InputError(f"cannot write {str(path)!r}: not writable", source="command line", field=option)
        return
    if str(path) == "" or p.is_dir():
        raise InputError(f"{str(path)!r} is a directory; expected a file path", source="command line", field=option)
    folder = p.parent
    if not folder.is_dir():
        raise InputError(f"cannot write {str(path)!r}: the directory {str(folder)!r} does not exist",
                         source="command line", field=option)
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(f"cannot write {str(path)!r}: the directory {str(folder)!r} is not writable",
                         source="command line", field=option)


class OutputSet:
    """The files of one command, written all or none.

    ``add`` stages each file in a temporary file beside its target at once (so a large trace
    is not held twice in memory); leaving the ``with`` block normally renames them all into
    place, an exception removes the staged files and leaves every target as it was. Text for
    ``-`` is printed to stdout when the set is committed.
    """

    def __init__(self) -> None:
        self._staged: list[tuple[Path, Path]] = []
        self._special: list[tuple[Path, bytes, str | None]] = []  # devices and FIFOs: written in place (is_special_file)
        self._stdout: list[str] = []
        self.written: list[Path] = []  # the files renamed into place by commit

    def add(self, path: str | Path, data: str | bytes, option: str | None = None) -> None:
        if str(path) == STDOUT:
            self._stdout.append(data if isinstance(data, str) else data.decode())
            return
        p = Path(path)
        if is_special_file(p):  # written in place at commit, after the staged files are in place
            self._special.append((p, _encode(p, data), option))
            return
        try:
            self._staged.append((_stage(p, _encode(p, data)), p))
        except OSError as exc:
            raise InputError(f"cannot write {str(path)!r}: {exc.strerror or exc}", source="command line",
                             field=option) from None

    def abort(self) -> None:
        for tmp, _ in self._staged:
            tmp.unlink(missing_ok=True)
        self._staged.clear()
        self._special.clear()
        self._stdout.clear()

    def commit(self) -> list[Path]:
        done, text, special = [], list(self._stdout), list(self._special)
        try:
            for tmp, target in self._staged:
                os.replace(tmp, target)
                done.append(target)
                self.written.append(target)
        finally:
            self.abort()  # whatever was not renamed
        for target, data, option in special:
            _write_in_place(target, data, option)
            done.append(target)
            self.written.append(target)
        for t in text:
            sys.stdout.write(t if t.endswith("\n") else t + "\n")
        return done

    def __enter__(self) -> "OutputSet":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()

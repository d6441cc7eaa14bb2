"""Read the bundled measured collective sweeps (``data/nccl/*.csv``).

Each file opens with ``# key: value`` provenance lines (hardware, software, collective, env,
provenance, ...; data/nccl/INDEX.md), then ``size_bytes,count,dtype,time_us,algbw_GBps,
busbw_GBps,inplace`` rows as nccl-tests printed them. Empty cells (a PyTorch-measured file has
no time column) become None.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from simulator.errors import InputError
from simulator.files import bundled_dir

DATA_DIR = bundled_dir("data/nccl")
COLUMNS = ("size_bytes", "count", "dtype", "time_us", "algbw_GBps", "busbw_GBps", "inplace")


@dataclass(frozen=True)
class MeasuredRow:
    size_bytes: int
    count: int | None
    dtype: str
    time_us: float | None
    algbw_GBps: float
    busbw_GBps: float
    inplace: bool


@dataclass(frozen=True)
class MeasuredSweep:
    """One sweep file: its provenance header (verbatim and as key → value) and its rows."""

    path: Path
    header: tuple[str, ...]
    meta: dict[str, str] = field(default_factory=dict)
    rows: tuple[MeasuredRow, ...] = ()

    @property
    def name(self) -> str:
        return self.path.stem

    @property
    def has_time(self) -> bool:
        return all(r.time_us is not None for r in self.rows)

    @property
    def env(self) -> dict[str, str]:
        """``NCCL_*`` settings named in the header's env line."""
        return dict(re.findall(r"(NCCL_[A-Z0-9_]+)=([^\s,;()]+)", self.meta.get("env", "")))

    @property
    def nccl_version(self) -> str | None:
        """The NCCL release the ``# software:`` line names (``NCCL 2.22.3-1+cuda12.6`` ->
        ``2.22.3``), None when it names none (an RCCL line counts: RCCL numbers its releases by
        the NCCL API it implements). A line that names the minor release only (``NCCL 2.18``: a
        run whose log prints no patch release, dated by its library's source, as ALCF's
        ``results_*/nccl_2_18`` runs of the HPC SDK 23.9 build) gives ``2.18``: every patch
        release of a minor one runs the same encoded tuner tables (``nccl_versions.resolve``)."""
        m = re.search(r"\b[NR]CCL (?:version )?(\d+\.\d+(?:\.\d+)?)\b", self.meta.get("software", ""))
        return m.group(1) if m else None

    @property
    def gpus_per_process(self) -> int:
        """nccl-tests ``-g`` (GPUs driven by one process), 1 when not stated."""
        m = re.search(r"(?<![\w-])-g\s*(\d+)", self.meta.get("collective", ""))
        return int(m.group(1)) if m else 1


def _num(text: str, cast, where: str, column: str, *, whole: bool = False):
    """A row's value in ``column``: None when empty, else a finite number >= 0 (a whole one for
    ``whole``); anything else is an :class:`InputError` naming the line and the column."""
    text = text.strip()
    if text == "":
        return None
    what = "a whole number >= 0" if whole else "a finite number >= 0"
    try:
        value = cast(text)
    except ValueError:
        raise InputError(f"expected {what}, got {text!r}", source=where, field=column) from None
    if not math.isfinite(value) or value < 0:
        raise InputError(f"expected {what}, got {text!r}", source=where, field=column)
    return value


MAX_SWEEP_BYTES = 64 * 1024 * 1024  # the bundled sweeps are under 60 KB; a dense one of every size is a few MB


def read_sweep(path: str | Path) -> MeasuredSweep:
    p = Path(path)
    if not p.is_file():
        raise InputError("no such file", source=str(p))
    header: list[str] = []
    meta: dict[str, str] = {}
    body: list[str] = []
    from simulator.config.loader import read_text

    text = read_text(p, max_bytes=MAX_SWEEP_BYTES, what="a measured sweep CSV (data/nccl/ layout)")
    for line in text.splitlines():
        if line.startswith("#"):
            header.append(line)
            m = re.match(r"#\s*([A-Za-z][\w /()-]*?):\s*(.*)$", line)
            if m and m.group(1).strip().lower() not in meta:
                meta[m.group(1).strip().lower()] = m.group(2).strip()
        elif line.strip():
            body.append(line)
    reader = csv.DictReader(body)
    if tuple(reader.fieldnames or ()) != COLUMNS:
        raise InputError(f"expected columns {','.join(COLUMNS)}, got {reader.fieldnames}", source=str(p))
    rows = []
    for i, rec in enumerate(reader, start=len(header) + 2):
        where = f"{p}:{i}"
        if None in rec or any(v is None for v in rec.values()):  # DictReader: extra cells / missing ones
            got = len(COLUMNS) + len(rec.get(None) or ()) - sum(v is None for k, v in rec.items() if k is not None)
            raise InputError(f"expected {len(COLUMNS)} cells ({','.join(COLUMNS)}), got {got}", source=where)
        rows.append(MeasuredRow(
            size_bytes=_num(rec["size_bytes"], int, where, "size_bytes", whole=True),
            count=_num(rec["count"], int, where, "count", whole=True),
            dtype=rec["dtype"].strip(), time_us=_num(rec["time_us"], float, where, "time_us"),
            algbw_GBps=_num(rec["algbw_GBps"], float, where, "algbw_GBps") or 0.0,
            busbw_GBps=_num(rec["busbw_GBps"], float, where, "busbw_GBps") or 0.0,
            inplace=rec["inplace"].strip() == "1",
        ))
    return MeasuredSweep(p, tuple(header), meta, tuple(rows))


def bundled_sweeps(directory: Path = DATA_DIR) -> list[MeasuredSweep]:
    """Every sweep CSV shipped in data/nccl/, by file name."""
    return [read_sweep(p) for p in sorted(directory.glob("*.csv"))]

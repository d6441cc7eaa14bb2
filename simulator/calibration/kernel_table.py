"""The kernel table: measured GEMM and fused-attention kernel times by shape, as CSV.

``python -m simulator.measure_kernels`` writes it on a GPU; ``clustersim calibrate`` reads it
like a profiler trace (its rows become :class:`GemmEvent` / :class:`AttentionEvent`) to fit
``gpu.gemm_efficiency``, ``gpu.fp8_gemm_efficiency_scale`` and ``gpu.attention_efficiency``.
The file starts with ``# clustersim kernel table``, then ``# key: value`` lines saying where and
with what it was measured (date, GPU, driver, CUDA, torch, cuBLAS/cuDNN), then the CSV.

Columns: ``kind`` (gemm | attention), ``kernel`` (what ran: cublas, cublas-fp8, flash2, flash3,
or the backend's name), ``dtype``, ``m, n, k, batch`` (GEMM: C[m,n] = A[m,k]·B[k,n], ``batch``
of them), ``heads, seq, head_dim, causal`` (attention, ``batch`` sequences), ``direction``
(fwd | bwd; GEMM: fwd), ``time_us`` (median kernel time), ``tflops`` (achieved, on the computed
FLOPs), ``label`` (where the shape comes from, e.g. ``llama3-70b tp8 fc1``).
"""

from __future__ import annotations

import csv
import io
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from simulator.calibration.kineto import AttentionEvent, GemmEvent
from simulator.errors import InputError
from simulator.schedule.attention import FLASH_BWD_FACTOR, attention_flops, causal_fraction_diagonal

MAGIC = "# clustersim kernel table"


@dataclass(frozen=True)
class KernelRow:
    kind: str
    kernel: str
    dtype: str
    direction: str
    time_us: float
    m: int = 0
    n: int = 0
    k: int = 0
    batch: int = 1
    heads: int = 0
    seq: int = 0
    head_dim: int = 0
    causal: bool = True
    label: str = ""

    @property
    def flops(self) -> float:
        """Computed FLOPs (causal attention: the lower triangle only)."""
        if self.kind == "gemm":
            return 2.0 * self.batch * self.m * self.n * self.k
        frac = causal_fraction_diagonal(self.seq) if self.causal else 1.0
        fwd = attention_flops(self.batch, self.heads, self.seq, self.seq, self.head_dim, frac)
        return fwd * (FLASH_BWD_FACTOR if self.direction == "bwd" else 1.0)

    @property
    def tflops(self) -> float:
        return self.flops / (self.time_us * 1e-6) / 1e12


@dataclass
class KernelTable:
    rows: list[KernelRow]
    header: dict[str, str] = field(default_factory=dict)

    def gemm_events(self) -> list[GemmEvent]:
        return [GemmEvent(r.kernel, None, r.m, r.n, r.k, r.batch, r.dtype, 0.0, r.time_us * 1e-6)
                for r in self.rows if r.kind == "gemm"]

    def attention_events(self) -> list[AttentionEvent]:
        """Attention rows as kernels whose name is the generation (flash2 / flash3 / other)."""
        return [AttentionEvent(r.kernel, None, r.direction == "bwd", r.batch, r.heads, r.heads, r.seq, r.seq,
                               r.head_dim, r.dtype, 0.0, r.time_us * 1e-6, causal=r.causal)
                for r in self.rows if r.kind == "attention"]


_COLUMNS = [f.name for f in fields(KernelRow)] + ["tflops"]


def format_table(table: KernelTable) -> str:
    out = io.StringIO()
    out.write(MAGIC + "\n")
    for key, value in table.header.items():
        out.write(f"# {key}: {value}\n")
    w = csv.DictWriter(out, fieldnames=_COLUMNS, lineterminator="\n")
    w.writeheader()
    for r in table.rows:
        w.writerow({**asdict(r), "causal": int(r.causal), "time_us": f"{r.time_us:.3f}", "tflops": f"{r.tflops:.2f}"})
    return out.getvalue()


def is_kernel_table(path: str | Path) -> bool:
    try:
        with Path(path).open(errors="replace") as fh:
            return fh.readline().startswith(MAGIC)
    except OSError:
        return False


def read_kernel_table(path: str | Path) -> KernelTable:
    """Parse a kernel table; InputError names the file, the line and the column that is wrong."""
    lines = Path(path).read_text(errors="replace").splitlines()
    if not lines or not lines[0].startswith(MAGIC):
        raise InputError(f"not a kernel table: expected the first line {MAGIC!r}", source=f"{path}:1")
    header: dict[str, str] = {}
    body_start = 1
    for i, line in enumerate(lines[1:], start=1):
        if not line.startswith("#"):
            body_start = i
            break
        key, _, value = line[1:].partition(":")
        header[key.strip()] = value.strip()
    else:
        body_start = len(lines)
    reader = csv.DictReader(lines[body_start:])
    missing = [c for c in ("kind", "kernel", "dtype", "direction", "time_us") if c not in (reader.fieldnames or [])]
    if missing:
        raise InputError(f"missing column(s) {', '.join(missing)}", source=f"{path}:{body_start + 1}")
    rows: list[KernelRow] = []
    for j, rec in enumerate(reader):
        where = f"{path}:{body_start + 2 + j}"
        try:
            kw: dict[str, Any] = {f.name: rec[f.name] for f in fields(KernelRow) if rec.get(f.name) not in (None, "")}
            for name in ("m", "n", "k", "batch", "heads", "seq", "head_dim"):
                if name in kw:
                    kw[name] = int(kw[name])
            kw["time_us"] = float(kw["time_us"])
            kw["causal"] = str(kw.get("causal", "1")).strip().lower() in ("1", "true", "yes")
            row = KernelRow(**kw)
        except (KeyError, ValueError, TypeError) as exc:
            raise InputError(f"bad row: {exc}", source=where) from None
        if row.kind not in ("gemm", "attention") or row.direction not in ("fwd", "bwd") or row.time_us <= 0:
            raise InputError("expected kind gemm|attention, direction fwd|bwd and time_us > 0", source=where)
        if row.kind == "gemm" and min(row.m, row.n, row.k, row.batch) <= 0:
            raise InputError("a gemm row needs m, n, k, batch > 0", source=where)
        if row.kind == "attention" and min(row.heads, row.seq, row.head_dim, row.batch) <= 0:
            raise InputError("an attention row needs batch, heads, seq, head_dim > 0", source=where)
        rows.append(row)
    if not rows:
        raise InputError("no rows", source=str(path))
    return KernelTable(rows, header)

"""Writer of nccl-tests-format text output, so that measurements taken by ``clustersim measure``
(and logs reconstructed from transcribed CSVs) read back through :mod:`.nccl_log` exactly like
a real nccl-tests run.

Three layouts of NVIDIA/nccl-tests ``src/common.cu`` are reproduced (the printf formats are the
figures carried over; the code is ours):

* ``current`` (nccl-tests >= 2.14): version line, ``Collective test starting``, ``Group`` in the
  rank lines, ``redop root`` columns, ``#wrong`` counts;
* ``root`` (about 2.10-2.13): the same table without the version/starting lines;
* ``old`` (2.0-2.9, NCCL 2.8 era): no ``Group``, one ``redop`` column (a rooted tool such as
  ``broadcast_perf`` prints ``root`` there instead), ``error`` = max abs error.

A size measured only out-of-place prints ``N/A`` in the four in-place columns (and vice versa);
that is our convention for partial data, which :mod:`.nccl_log` reads back as "not measured".
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Iterable, Literal, Sequence

from simulator.calibration.nccl_log import ELEMENT_BYTES, Device, Sweep, SweepRow, count_for
from simulator.costs.collectives import busbw_factor
from simulator.errors import InputError
from simulator.files import write_atomically

Style = Literal["current", "root", "old"]

TOOL_NAMES = {
    "allreduce": "all_reduce_perf", "allgather": "all_gather_perf", "reducescatter": "reduce_scatter_perf",
    "alltoall": "alltoall_perf", "alltoallv": "alltoallv_perf", "sendrecv": "sendrecv_perf",
    "broadcast": "broadcast_perf", "reduce": "reduce_perf", "gather": "gather_perf",
    "scatter": "scatter_perf", "hypercube": "hypercube_perf",
}
_REDUCING = ("allreduce", "reducescatter", "reduce")
_ROOTED = ("broadcast", "reduce", "gather", "scatter")


def version_code(version: str) -> int:
    """'2.29.2' -> 22902 (NCCL_VERSION of nccl.h; X*1000+Y*100+Z before 2.9)."""
    major, minor, patch = (int(p) for p in version.split(".")[:3])
    if (major, minor) >= (2, 9):
        return major * 10000 + minor * 100 + patch
    return major * 1000 + minor * 100 + patch


def make_row(op: str, size_bytes: int, dtype: str, time_s: float, nranks: int, *, inplace: bool = False,
             wrong: float | None = 0) -> SweepRow:
    """A result as nccl-tests computes it from a measured time: algbw = size/time, busbw = algbw x factor."""
    if dtype not in ELEMENT_BYTES:
        raise InputError(f"unknown data type {dtype!r}; expected one of {', '.join(sorted(ELEMENT_BYTES))}",
                         field="dtype")
    algbw = size_bytes / time_s / 1e9 if time_s > 0 else 0.0
    return SweepRow(
        size_bytes=size_bytes, count=count_for(op, size_bytes, ELEMENT_BYTES[dtype], nranks), dtype=dtype,
        time_us=time_s * 1e6, algbw=algbw, busbw=algbw * busbw_factor(op, nranks), inplace=inplace,
        redop="sum" if op in _REDUCING else "none", root=0 if op in _ROOTED else -1, wrong=wrong)


def _time_text(time_us: float) -> str:
    """nccl-tests prints %7.0f from 10 ms, %7.1f from 100 us, else %7.2f. Some versions keep two
    decimals throughout; a value transcribed with more digits than the rule keeps them."""
    if time_us >= 10000.0:
        text = f"{time_us:7.0f}"
    elif time_us >= 100.0:
        text = f"{time_us:7.1f}"
    else:
        text = f"{time_us:7.2f}"
    if float(text) != time_us and round(time_us, 2) == time_us:
        text = f"{time_us:7.2f}"
    return text


def _half(row: SweepRow | None, style: Style) -> str:
    if row is None:
        return f"  {'N/A':>7s}  {'N/A':>6s}  {'N/A':>6s}  {'N/A':>5s}"
    if row.wrong is None:
        wrong = f"{'N/A':>5s}"
    elif style == "old":
        wrong = f"{row.wrong:5.0e}"
    else:
        wrong = f"{int(row.wrong):5d}"
    return f"  {_time_text(row.time_us)}  {row.algbw:6.2f}  {row.busbw:6.2f}  {wrong}"


def _pairs(rows: Sequence[SweepRow]) -> list[tuple[SweepRow | None, SweepRow | None]]:
    """Out-of-place and in-place halves of one printed line, in order (sizes may repeat, e.g. 0)."""
    lines: list[list[SweepRow | None]] = []
    for r in rows:
        key = (r.size_bytes, r.count, r.dtype, r.redop, r.root)
        if r.inplace and lines and lines[-1][1] is None and lines[-1][0] is not None:
            prev = lines[-1][0]
            if (prev.size_bytes, prev.count, prev.dtype, prev.redop, prev.root) == key:
                lines[-1][1] = r
                continue
        lines.append([None, r] if r.inplace else [r, None])
    return [(a, b) for a, b in lines]


def _step(sweep: Sweep) -> str:
    if sweep.step:
        return sweep.step
    sizes = sorted({r.size_bytes for r in sweep.rows if r.size_bytes > 0})
    if len(sizes) >= 2 and all(b == 2 * a for a, b in zip(sizes, sizes[1:])):
        return "2(factor)"
    if len(sizes) >= 2:
        return f"{sizes[1] - sizes[0]}(bytes)"
    return "2(factor)"


def format_sweep(sweep: Sweep, *, style: Style = "current", nccl_tests_version: str = "2.17.8",
                 preamble: Iterable[str] = ()) -> str:
    """One run in nccl-tests layout. ``preamble`` lines (e.g. NCCL INFO lines) go after the
    device list, where NCCL prints them while communicators are created."""
    op, tool = sweep.op, sweep.tool or TOOL_NAMES.get(sweep.op, f"{sweep.op}_perf")
    sizes = [r.size_bytes for r in sweep.rows] or [0]
    min_b = sweep.min_bytes if sweep.min_bytes is not None else min(sizes)
    max_b = sweep.max_bytes if sweep.max_bytes is not None else max(sizes)
    warmup = sweep.warmup_iters if sweep.warmup_iters is not None else 5
    iters = sweep.iters if sweep.iters is not None else 20
    out: list[str] = []
    if style == "current":
        if sweep.nccl_version:
            code = version_code(sweep.nccl_version)
            out.append(f"# nccl-tests version {nccl_tests_version} nccl-headers={code} nccl-library={code}")
        out.append(f"# Collective test starting: {tool}")
    agg = "" if style == "old" else "agg iters: 1 "
    validation = int(any(r.wrong is not None for r in sweep.rows))
    graph = "" if style == "old" else " graph: 0"
    out.append(f"# nThread {sweep.nthreads} nGpus {sweep.ngpus} minBytes {min_b} maxBytes {max_b} "
               f"step: {_step(sweep)} warmup iters: {warmup} iters: {iters} {agg}validation: {validation}{graph}")
    out.append("#")
    out.append("# Using devices")
    for d in sweep.devices:
        if style == "old" or d.group is None:
            out.append(f"#   Rank {d.rank:2d} Pid {d.pid:6d} on {d.host:>10s} device {d.device:2d} [{d.bus_id}] {d.name}")
        else:
            out.append(f"#  Rank {d.rank:2d} Group {d.group:2d} Pid {d.pid:6d} on {d.host:>10s} "
                       f"device {d.device:2d} [{d.bus_id}] {d.name}")
    out.extend(preamble)
    out.append("#")
    if style == "old":  # a rooted tool prints its root where the others print the reduction
        column = "root" if op in _ROOTED else "redop"
        out.append(f"# {'':>10s}  {'':>12s}  {'':>6s}  {'':>6s}        out-of-place                       in-place          ")
        out.append(f"# {'size':>10s}  {'count':>12s}  {'type':>6s}  {column:>6s}  {'time':>7s}  {'algbw':>6s}  "
                   f"{'busbw':>6s}  {'error':>5s}  {'time':>7s}  {'algbw':>6s}  {'busbw':>6s}  {'error':>5s}")
        out.append(f"# {'(B)':>10s}  {'(elements)':>12s}  {'':>6s}  {'':>6s}  {'(us)':>7s}  {'(GB/s)':>6s}  "
                   f"{'(GB/s)':>6s}  {'':>5s}  {'(us)':>7s}  {'(GB/s)':>6s}  {'(GB/s)':>6s}  {'':>5s}")
    else:
        out.append(f"# {'':>10s}  {'':>12s}  {'':>8s}  {'':>6s}  {'':>6s}           out-of-place                       in-place          ")
        out.append(f"# {'size':>10s}  {'count':>12s}  {'type':>8s}  {'redop':>6s}  {'root':>6s}  {'time':>7s}  "
                   f"{'algbw':>6s}  {'busbw':>6s} {'#wrong':>6s}  {'time':>7s}  {'algbw':>6s}  {'busbw':>6s} {'#wrong':>6s}")
        out.append(f"# {'(B)':>10s}  {'(elements)':>12s}  {'':>8s}  {'':>6s}  {'':>6s}  {'(us)':>7s}  {'(GB/s)':>6s}  "
                   f"{'(GB/s)':>6s}  {'':>5s}  {'(us)':>7s}  {'(GB/s)':>6s}  {'(GB/s)':>6s}  {'':>5s}")
    for oop, ip in _pairs(sweep.rows):
        first = oop or ip
        assert first is not None
        redop = first.redop or ("sum" if op in _REDUCING else "none")
        if style == "old" and op in _ROOTED:
            root = first.root if first.root is not None else 0
            head = f"{first.size_bytes:12d}  {first.count:12d}  {first.dtype:>6s}  {root:6d}"
        elif style == "old":
            head = f"{first.size_bytes:12d}  {first.count:12d}  {first.dtype:>6s}  {redop:>6s}"
        else:
            root = first.root if first.root is not None else (0 if op in _ROOTED else -1)
            head = f"{first.size_bytes:12d}  {first.count:12d}  {first.dtype:>8s}  {redop:>6s}  {root:6d}"
        out.append(head + _half(oop, style) + _half(ip, style))
    busbws = [r.busbw for r in sweep.rows]
    avg = sweep.avg_busbw if sweep.avg_busbw is not None else (sum(busbws) / len(busbws) if busbws else 0.0)
    wrong_total = sweep.out_of_bounds if sweep.out_of_bounds is not None else 0
    out.append(f"# Out of bounds values : {wrong_total} {'FAILED' if wrong_total else 'OK'}")
    out.append(f"# Avg bus bandwidth    : {avg:g} ")
    out.append("#")
    if style == "current":
        out.append(f"# Collective test concluded: {tool}")
    out.append("")
    return "\n".join(out)


def format_log(sweeps: Iterable[Sweep], *, style: Style = "current", nccl_tests_version: str = "2.17.8",
               preamble: Iterable[str] = (), comment: Iterable[str] = ()) -> str:
    """Several runs, one after another, as a script running several *_perf tools prints them.
    ``comment`` lines go first (each prefixed with '# ' when it is not a comment already)."""
    head = [c if c.startswith("#") else f"# {c}" for c in comment]
    body = [format_sweep(s, style=style, nccl_tests_version=nccl_tests_version, preamble=list(preamble))
            for s in sweeps]
    return "\n".join(head + body) if head else "\n".join(body)


def write_nccl_log(path: str | Path, sweeps: Iterable[Sweep], *, style: Style = "current",
                   nccl_tests_version: str = "2.17.8", preamble: Iterable[str] = (), comment: Iterable[str] = ()) -> Path:
    """:func:`format_log` written atomically (temp file + rename): a reader never sees a half-written log."""
    return write_atomically(path, format_log(sweeps, style=style, nccl_tests_version=nccl_tests_version,
                                             preamble=preamble, comment=comment))


def synthetic_devices(nranks: int, gpus_per_node: int, name: str, *, hosts: Sequence[str] | None = None,
                      ranks_per_process: int = 1, pid0: int = 4000) -> tuple[Device, ...]:
    """Device lines for a log whose real ones were not transcribed (reconstructions): host
    ``node<k>`` (or ``hosts[k]``), local device index, one pid per process."""
    devices = []
    for rank in range(nranks):
        node = rank // gpus_per_node
        host = hosts[node] if hosts else f"node{node:02d}"
        devices.append(Device(rank=rank, group=0, pid=pid0 + rank // ranks_per_process, host=host,
                              device=rank % gpus_per_node, bus_id=f"0x{(rank % gpus_per_node) * 16 + 0x18:02x}",
                              name=name))
    return tuple(devices)


def with_rows(sweep: Sweep, rows: Iterable[SweepRow]) -> Sweep:
    return replace(sweep, rows=tuple(rows))

"""Parser of nccl-tests / rccl-tests text output (every ``*_perf`` tool).

The layout follows ``src/common.cu`` of NVIDIA/nccl-tests (and its fork ROCm/rccl-tests):

* a run starts with ``# nThread T nGpus G minBytes .. maxBytes .. step: ..`` (newer versions
  precede it with ``# nccl-tests version X nccl-headers=.. nccl-library=NNNNN`` and
  ``# Collective test starting: all_reduce_perf``);
* ``# Using devices`` and one ``#  Rank  r [Group g] Pid p on host device d [bus] NAME`` line per
  rank (the ``Group`` field appeared with NCCL_TESTS_SPLIT_MASK support);
* a column header naming the columns: ``size count type [redop] [root]`` then two groups of
  ``time algbw busbw #wrong`` (out-of-place, in-place); older versions print ``error`` (the max
  absolute error) instead of ``#wrong`` and have no ``root`` column; ``N/A`` when -c 0;
* one row per size; ``# Out of bounds values : N OK`` and ``# Avg bus bandwidth : X`` end a run.

NCCL INFO/WARN/TRACE lines, launcher noise and several runs in one file are allowed. A file that
ends inside a results table (no ``Avg bus bandwidth`` line), or a row cut short, is an
:class:`~simulator.errors.InputError` that names the file and the line.

Numbers stay as printed (time in us, algbw/busbw in decimal GB/s); properties give SI values.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from simulator.errors import InputError, quote
from simulator.vocabulary import NCCL_TESTS_OPS as OPS
from simulator.vocabulary import OP_ALIASES, canonical_op

# nccl-tests type names -> bytes per element (src/common.cu test_typenames; f8 types in newer ones).
ELEMENT_BYTES = {
    "int8": 1, "uint8": 1, "char": 1, "int32": 4, "uint32": 4, "int": 4, "int64": 8, "uint64": 8,
    "half": 2, "float16": 2, "float": 4, "float32": 4, "double": 8, "float64": 8,
    "bfloat16": 2, "f8e4m3": 1, "f8e5m2": 1, "fp8_e4m3": 1, "fp8_e5m2": 1,
}



def count_for(op: str, size_bytes: int, element_bytes: int, nranks: int) -> int:
    """The ``count`` column nccl-tests prints for a ``size`` (elements per rank, or per peer)."""
    elements = size_bytes // element_bytes
    if op in ("allgather", "reducescatter", "alltoall", "alltoallv", "gather", "scatter"):
        return elements // nranks
    return elements


@dataclass(frozen=True)
class SweepRow:
    """One half (out-of-place or in-place) of one nccl-tests result line, as printed."""

    size_bytes: int
    count: int
    dtype: str
    time_us: float
    algbw: float  # GB/s (1e9 bytes/s), as printed
    busbw: float  # GB/s, as printed
    inplace: bool
    redop: str | None = None
    root: int | None = None
    wrong: float | None = None  # #wrong elements (or the old max-abs "error"); None for N/A
    line: int = 0  # 1-based line in the source file

    @property
    def time_s(self) -> float:
        return self.time_us * 1e-6

    @property
    def algbw_Bps(self) -> float:
        return self.algbw * 1e9

    @property
    def busbw_Bps(self) -> float:
        return self.busbw * 1e9


@dataclass(frozen=True)
class Device:
    """A ``#  Rank  r Group g Pid p on host device d [bus] NAME`` line."""

    rank: int
    pid: int
    host: str
    device: int
    bus_id: str
    name: str
    group: int | None = None


@dataclass(frozen=True)
class Sweep:
    """One run of one *_perf tool: its header, its devices and its rows."""

    op: str
    nranks: int
    ngpus: int  # GPUs per thread (-g)
    devices: tuple[Device, ...]
    rows: tuple[SweepRow, ...]
    nccl_version: str | None
    source: str
    first_line: int
    nthreads: int = 1
    tool: str | None = None  # e.g. all_reduce_perf, when the log names it
    min_bytes: int | None = None
    max_bytes: int | None = None
    step: str | None = None  # '2(factor)' or '1048576(bytes)', as printed
    warmup_iters: int | None = None
    iters: int | None = None
    avg_busbw: float | None = None  # the footer's "Avg bus bandwidth" (GB/s)
    out_of_bounds: int | None = None

    @property
    def hosts(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for d in self.devices:
            seen.setdefault(d.host, None)
        return tuple(seen)

    @property
    def nodes(self) -> int:
        return max(1, len(self.hosts))

    @property
    def gpus_per_node(self) -> int:
        return self.nranks // self.nodes

    @property
    def device_name(self) -> str | None:
        return self.devices[0].name if self.devices else None

    def out_of_place(self) -> list[SweepRow]:
        return [r for r in self.rows if not r.inplace]

    def in_place(self) -> list[SweepRow]:
        return [r for r in self.rows if r.inplace]

    def measured(self) -> list[SweepRow]:
        """One row per printed line: the out-of-place half, or the in-place one where only that
        was measured (torch has no out-of-place AllReduce; transcriptions kept out-of-place only)."""
        out: list[SweepRow] = []
        for r in self.rows:
            if r.inplace and out and out[-1].line == r.line and not out[-1].inplace:
                continue
            out.append(r)
        return out


# ---------------------------------------------------------------------------------------------
# line patterns

_NCCL_MSG = re.compile(r"\bNCCL (INFO|WARN|TRACE|ABORT)\b")
_NCCL_VERSION_INFO = re.compile(r"NCCL version (\d+\.\d+\.\d+)")
_RCCL_VERSION_INFO = re.compile(r"RCCL version[ :]+(\d+\.\d+\.\d+)")
_TESTS_VERSION = re.compile(r"^#\s*(?:nccl|rccl)-tests version\s+(\S+).*?(?:nccl|rccl)-library=(\d+)")
_TEST_STARTING = re.compile(r"^#\s*Collective test starting:\s*(\S+)")
_HEADER = re.compile(
    r"^#\s*nThread\s+(\d+)\s+nGpus\s+(\d+)\s+minBytes\s+(\d+)\s+maxBytes\s+(\d+)"
    r"(?:\s+step:\s*(\S+))?(?:.*?warmup iters:\s*(\d+))?(?:.*?\biters:\s*(\d+))?"
)
_RANK = re.compile(
    r"^#\s*Rank\s+(\d+)\s+(?:Group\s+(\d+)\s+)?Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s*(.*?)\s*$"
)
_OUT_OF_BOUNDS = re.compile(r"^#\s*Out of bounds values\s*:\s*(\d+)")
_AVG_BUSBW = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*([0-9.eE+-]+|nan|inf)", re.IGNORECASE)
_TOOL = re.compile(r"\b([a-z_]+?)_perf(?:_mpi)?\b")
_TIME_COLUMNS = ("time", "cputime")
_WRONG_COLUMNS = ("#wrong", "error", "wrong", "#error")


def _library_code_to_version(code: int) -> str:
    """NCCL_VERSION(X,Y,Z): X*1000+Y*100+Z before 2.9, X*10000+Y*100+Z from 2.9 on (nccl.h)."""
    if code >= 20900:
        return f"{code // 10000}.{code // 100 % 100}.{code % 100}"
    return f"{code // 1000}.{code // 100 % 10}.{code % 100}"


MAX_SIZE_BYTES = 1 << 50  # 1 PiB: no collective buffer comes near it
# 10^12 us is 11.6 days: no collective call takes that long, and a longer time would make the
# row's measured bandwidth vanish (an infinite relative error in every report computed from it).
MAX_TIME_US = 1e12


def _number(token: str, what: str, source: str, line: int) -> float:
    """A finite, non-negative number of a result row (nccl-tests prints nothing else; a NaN, inf
    or negative time would turn into a non-finite fit)."""
    try:
        value = float(token)
    except ValueError:
        raise InputError(f"line {line}: expected a number for {what}, got {quote(token, 40)}", source=source) from None
    if not math.isfinite(value) or value < 0:
        raise InputError(f"line {line}: expected a finite number >= 0 for {what}, got {quote(token, 40)}",
                         source=source)
    if what in ("size", "count") and (value > MAX_SIZE_BYTES or not value.is_integer()):
        raise InputError(f"line {line}: expected a whole {what} up to {MAX_SIZE_BYTES:,}, got {quote(token, 40)}",
                         source=source)
    if what == "time" and value > MAX_TIME_US:
        raise InputError(f"line {line}: expected a time up to {MAX_TIME_US:g} us, got {quote(token, 40)}",
                         source=source)
    return value


@dataclass
class _Run:
    """A run being read."""

    first_line: int
    nthreads: int = 1
    ngpus: int = 1
    min_bytes: int | None = None
    max_bytes: int | None = None
    step: str | None = None
    warmup_iters: int | None = None
    iters: int | None = None
    tool: str | None = None
    version: str | None = None
    devices: list[Device] = field(default_factory=list)
    params: list[str] | None = None  # parameter column names before the first time column
    groups: int = 2  # result groups per row (out-of-place, in-place)
    rows: list[SweepRow] = field(default_factory=list)
    avg_busbw: float | None = None
    out_of_bounds: int | None = None
    last_row_line: int = 0


class _Reader:
    def __init__(self, source: str, op: str | None) -> None:
        self.source = source
        self.op = op
        self.sweeps: list[Sweep] = []
        self.run: _Run | None = None
        self.version: str | None = None  # last NCCL version seen in INFO lines
        self.pending_tool: str | None = None
        self.pending_version: str | None = None
        self.tool_hint: str | None = None  # a *_perf name seen anywhere, e.g. in an echoed command

    def error(self, line: int, message: str) -> InputError:
        return InputError(f"line {line}: {message}", source=self.source)

    def feed(self, n: int, raw: str) -> None:
        line = raw.rstrip("\r\n")
        text = line.strip()
        if not text:
            return
        if _NCCL_MSG.search(text) or text.startswith(("NCCL version", "RCCL version")):
            m = _NCCL_VERSION_INFO.search(text) or _RCCL_VERSION_INFO.search(text)
            if m:
                self.version = m.group(1)
                if self.run and not self.run.version:
                    self.run.version = m.group(1)
            return
        if not text.startswith("#"):
            if self.run and self.run.params is not None and text[0].isdigit():
                self.row(n, text)
                return
            m = _TOOL.search(text)
            if m and canonical_op(m.group(1)):
                self.tool_hint = m.group(0)
            return
        self.comment(n, text)

    def comment(self, n: int, text: str) -> None:
        m = _TESTS_VERSION.match(text)
        if m:
            self.finish_open(n)
            code = int(m.group(2))
            self.pending_version = _library_code_to_version(code) if code else None
            return
        m = _TEST_STARTING.match(text)
        if m:
            self.finish_open(n)
            self.pending_tool = m.group(1)
            return
        m = _HEADER.match(text)
        if m:
            self.finish_open(n)
            self.run = _Run(
                first_line=n, nthreads=int(m.group(1)), ngpus=int(m.group(2)),
                min_bytes=int(m.group(3)), max_bytes=int(m.group(4)), step=m.group(5),
                warmup_iters=int(m.group(6)) if m.group(6) else None,
                iters=int(m.group(7)) if m.group(7) else None,
                tool=self.pending_tool, version=self.pending_version or None,
            )
            self.pending_tool = self.pending_version = None
            return
        m = _RANK.match(text)
        if m:
            run = self.ensure_run(n)
            run.devices.append(Device(
                rank=int(m.group(1)), group=int(m.group(2)) if m.group(2) is not None else None,
                pid=int(m.group(3)), host=m.group(4), device=int(m.group(5)), bus_id=m.group(6),
                name=m.group(7)))
            return
        tokens = text.lstrip("#").split()
        lowered = [t.lower() for t in tokens]
        if len(lowered) >= 4 and lowered[0] == "size" and "count" in lowered and any(t in lowered for t in _TIME_COLUMNS):
            self.column_header(n, lowered)
            return
        m = _OUT_OF_BOUNDS.match(text)
        if m and self.run:
            self.run.out_of_bounds = int(m.group(1))
            return
        m = _AVG_BUSBW.match(text)
        if m and self.run:
            self.run.avg_busbw = float(m.group(1))
            self.close(n, complete=True)
            return
        m = re.search(r"Reducing maxBytes to (\d+)", text)
        if m and self.run:
            self.run.max_bytes = int(m.group(1))

    def ensure_run(self, n: int) -> _Run:
        if self.run is None:  # a table pasted without its '# nThread' header
            self.run = _Run(first_line=n, tool=self.pending_tool, version=self.pending_version)
            self.pending_tool = self.pending_version = None
        return self.run

    def column_header(self, n: int, names: list[str]) -> None:
        run = self.ensure_run(n)  # a second table in one run (-d all / -o all) just repeats this
        first_time = next(i for i, t in enumerate(names) if t in _TIME_COLUMNS)
        params = names[:first_time]
        results = names[first_time:]
        if len(results) % 4 or not results:
            raise self.error(n, f"unexpected column header {' '.join(names)!r}: expected "
                                "'time algbw busbw #wrong' for out-of-place and in-place")
        for g in range(len(results) // 4):
            group = results[4 * g: 4 * g + 4]
            if group[0] not in _TIME_COLUMNS or group[1] != "algbw" or group[2] != "busbw" or group[3] not in _WRONG_COLUMNS:
                raise self.error(n, f"unexpected column header {' '.join(names)!r}")
        run.params = params
        run.groups = len(results) // 4

    def row(self, n: int, text: str) -> None:
        run = self.run
        assert run is not None and run.params is not None
        tokens = text.split()
        expected = len(run.params) + 4 * run.groups
        if len(tokens) != expected:
            raise self.error(n, f"result row has {len(tokens)} fields, expected {expected} "
                                f"({' '.join(run.params)} + {run.groups} x time algbw busbw #wrong); "
                                "the log is truncated or garbled")
        values = dict(zip(run.params, tokens))
        if "size" not in values or "count" not in values:
            raise self.error(n, "column header has no 'size' or 'count' column")
        size = int(_number(values["size"], "size", self.source, n))
        count = int(_number(values["count"], "count", self.source, n))
        dtype = values.get("type", "float")
        redop = values.get("redop")
        root = int(values["root"]) if "root" in values and values["root"].lstrip("-").isdigit() else None
        base = len(run.params)
        for g in range(run.groups):
            t, alg, bus, wrong = tokens[base + 4 * g: base + 4 * g + 4]
            if t.upper() == "N/A":  # a half that was not measured
                continue
            run.rows.append(SweepRow(
                size_bytes=size, count=count, dtype=dtype,
                time_us=_number(t, "time", self.source, n),
                algbw=_number(alg, "algbw", self.source, n),
                busbw=_number(bus, "busbw", self.source, n),
                inplace=g == 1, redop=redop, root=root,
                wrong=None if wrong.upper() == "N/A" else _number(wrong, "#wrong", self.source, n),
                line=n))
        run.last_row_line = n

    def finish_open(self, n: int) -> None:
        """A new run begins: the open one must have been complete."""
        if self.run is not None:
            self.close(n, complete=False)

    def close(self, n: int, *, complete: bool) -> None:
        run = self.run
        assert run is not None
        self.run = None
        if not complete:
            where = run.last_row_line or run.first_line
            raise self.error(where, f"the run that starts at line {run.first_line} ends without its "
                                    "'# Avg bus bandwidth' line: the log is truncated (or the run failed)")
        if not run.rows:
            raise self.error(n, f"the run that starts at line {run.first_line} has no result rows")
        op = self.resolve_op(run, n)
        nranks = len(run.devices) or self.infer_nranks(op, run, n)
        self.sweeps.append(Sweep(
            op=op, nranks=nranks, ngpus=run.ngpus, devices=tuple(run.devices), rows=tuple(run.rows),
            nccl_version=run.version or self.version, source=self.source, first_line=run.first_line,
            nthreads=run.nthreads, tool=run.tool or self.tool_hint, min_bytes=run.min_bytes,
            max_bytes=run.max_bytes, step=run.step, warmup_iters=run.warmup_iters, iters=run.iters,
            avg_busbw=run.avg_busbw, out_of_bounds=run.out_of_bounds))

    def resolve_op(self, run: _Run, n: int) -> str:
        if self.op:
            op = canonical_op(self.op)
            if op is None:
                raise InputError(f"unknown collective {self.op!r}; expected one of {', '.join(OPS)}", field="op")
            return op
        for candidate in (run.tool, self.tool_hint):
            named = canonical_op(candidate) if candidate else None
            if named:
                return named
        stem = Path(self.source).stem.lower().replace("-", "_")
        for alias in sorted(OP_ALIASES, key=len, reverse=True):  # 'allreduce' before 'reduce'
            if alias in stem:
                return OP_ALIASES[alias]
        raise self.error(run.first_line, "cannot tell which collective this run measured (no "
                                         "'Collective test starting' line, no *_perf name in the log "
                                         "or the file name); pass the op explicitly")

    def infer_nranks(self, op: str, run: _Run, n: int) -> int:
        """No device lines: recover n from busbw/algbw, which nccl-tests derives from n."""
        for row in run.rows:
            if row.algbw >= 1.0:
                f = row.busbw / row.algbw
                if op == "allreduce" and f < 2:
                    return max(1, round(2 / (2 - f)))
                if op in ("allgather", "reducescatter", "alltoall", "gather", "scatter") and f < 1:
                    return max(1, round(1 / (1 - f)))
        raise self.error(run.first_line, "the run lists no '# Rank' device lines and its rank count "
                                         "cannot be inferred from busbw/algbw")

    def end(self, n: int) -> list[Sweep]:
        if self.run is not None:
            self.close(n, complete=False)
        if not self.sweeps:
            raise InputError("no nccl-tests results found: expected a '# nThread .. nGpus ..' header, "
                             "a column header and result rows (is this an nccl-tests/rccl-tests log?)",
                             source=self.source)
        return self.sweeps


def parse_nccl_text(text: str, source: str = "<text>", *, op: str | None = None) -> list[Sweep]:
    """Parse nccl-tests output held in a string; ``op`` overrides the collective it names."""
    reader = _Reader(source, op)
    lines = text.splitlines()
    for n, line in enumerate(lines, start=1):
        reader.feed(n, line)
    return reader.end(len(lines))


def parse_nccl_log(path: str | Path, *, op: str | None = None) -> list[Sweep]:
    """Parse an nccl-tests / rccl-tests log file into one :class:`Sweep` per run."""
    p = Path(path)
    if not p.is_file():
        raise InputError("no such file", source=str(path))
    try:
        text = p.read_text(errors="replace")
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", source=str(path)) from None
    return parse_nccl_text(text, str(path), op=op)

"""Parser of PyTorch profiler (Kineto) Chrome traces: the measured collectives, GEMMs and
attention kernels of a step, with their sizes and shapes.

Schema (what ``torch.profiler.profile(...).export_chrome_trace`` writes; Kineto
``libkineto/src/output_json.cpp``, PyTorch ``torch/csrc/profiler/util.cpp``):

* ``traceEvents``: complete events (``ph: "X"``, ``ts``/``dur`` in microseconds) with a ``cat``:
  ``kernel`` (GPU; ``args.correlation``, ``args.device``, ``args.stream``), ``cuda_runtime`` /
  ``cuda_driver`` (the launch; same ``args.correlation``), ``cpu_op`` (aten ops; ``args["External
  id"]``, ``args["Input Dims"]``, ``args["Input type"]``), ``user_annotation``;
  flow events ``ph: "s"/"f"`` with ``cat: "ac2g"`` link a launch to its kernel by ``id``.
* ``record_param_comms`` CPU ops (NCCL backend) carry ``Collective name``, ``dtype``,
  ``In msg nelems``, ``Out msg nelems``, ``Group size``, ``Process Group Name``, ``Rank``.
* On CPU with gloo there are no kernels: the work runs on the ``pt_gloo_runloop`` thread as
  ``gloo:all_reduce``-style user annotations whose ``Input Dims`` give the per-rank tensor;
  the group size comes from the top-level ``distributedInfo``.

A kernel is tied to the CPU ops that launched it: its launch (same correlation id, or the
flow arrow) runs on a CPU thread, and every ``cpu_op`` on that thread whose span covers the
launch time encloses it. The innermost ``record_param_comms`` gives a collective's size; the
innermost GEMM/attention aten op gives the shape.

NCCL kernel names carry the collective and, for specialised kernels, algorithm and protocol:
``ncclDevKernel_AllGather_RING_LL(...)`` (NCCL >= 2.19), ``ncclKernel_AllReduce_RING_LL_Sum_float``
(older). The generic kernel (``ncclDevKernel_Generic``) does not name them: then they are None.
"""

from __future__ import annotations

import bisect
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simulator.errors import InputError, quote
from simulator.schedule.attention import FLASH_BWD_FACTOR, attention_flops
from simulator.vocabulary import OP_ALIASES

# torch ScalarType names as record_param_comms / "Input type" print them -> bytes per element.
DTYPE_BYTES = {
    "float": 4, "float32": 4, "double": 8, "float64": 8, "half": 2, "float16": 2,
    "c10::half": 2, "bfloat16": 2, "c10::bfloat16": 2, "float8_e4m3fn": 1, "float8_e5m2": 1,
    "c10::float8_e4m3fn": 1, "c10::float8_e5m2": 1, "float8_e4m3fnuz": 1, "float8_e5m2fnuz": 1,
    "int": 4, "int32": 4, "long": 8, "int64": 8, "long int": 8, "char": 1, "signed char": 1,
    "int8": 1, "byte": 1, "unsigned char": 1, "uint8": 1, "bool": 1, "short": 2, "int16": 2,
}

# Collective names used by kernels, record_param_comms and gloo annotations -> simulator op:
# every spelling of simulator/vocabulary.py plus torch.distributed's internal ones. PyTorch's
# all_to_allv (uneven splits) is the AllToAll kernel NCCL runs for all_to_all too.
_COLLECTIVE = {
    **OP_ALIASES,
    "allreduce_coalesced": "allreduce", "_allgather_base": "allgather",
    "all_gather_into_tensor_coalesced": "allgather", "allgather_into_tensor_coalesced": "allgather",
    "allgather_coalesced": "allgather", "_reduce_scatter_base": "reducescatter",
    "reduce_scatter_tensor_coalesced": "reducescatter", "reduce_scatter_base": "reducescatter",
    "all_to_allv": "alltoall", "alltoallv": "alltoall", "alltoall_base": "alltoall",
    "send": "sendrecv", "recv": "sendrecv", "barrier": "barrier",
}
_ALGORITHMS = ("COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS_TREE", "NVLS", "RING", "TREE", "PAT")
_NCCL_KERNEL = re.compile(r"^nccl(?:Dev)?Kernel_([A-Za-z]+)(.*)$")
_NCCL_ALGO_PROTO = re.compile(r"_(" + "|".join(_ALGORITHMS) + r")_(LL128|LL|SIMPLE)(?![A-Za-z0-9])")

_GEMM_KERNEL = re.compile(r"gemm|sm\d+_xmma|cutlass|cublas|s\d+gemm|h\d+gemm|nvjet|wgmma|^Cijk_", re.IGNORECASE)
_ATTN_KERNEL = re.compile(r"flash|fmha|attention|attn", re.IGNORECASE)
_GEMM_OPS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::matmul", "aten::linear",
             "aten::_scaled_mm", "aten::addmv", "aten::mv")
_ATTN_OPS = ("aten::_flash_attention_forward", "aten::_flash_attention_backward",
             "aten::_scaled_dot_product_flash_attention", "aten::_scaled_dot_product_flash_attention_backward",
             "aten::_efficient_attention_forward", "aten::_efficient_attention_backward",
             "aten::_scaled_dot_product_efficient_attention",
             "aten::_scaled_dot_product_efficient_attention_backward",
             "aten::_scaled_dot_product_cudnn_attention", "aten::_scaled_dot_product_cudnn_attention_backward",
             "flash_attn::_flash_attn_forward", "flash_attn::_flash_attn_backward",
             "flash_attn::_flash_attn_varlen_forward", "flash_attn::_flash_attn_varlen_backward")
# Ops whose query/key are laid out [batch, heads, seq, dim]; the others use [batch, seq, heads, dim].
_BHSD_OPS = ("aten::_scaled_dot_product_flash_attention", "aten::_scaled_dot_product_efficient_attention",
             "aten::_scaled_dot_product_cudnn_attention", "aten::_scaled_dot_product_flash_attention_backward",
             "aten::_scaled_dot_product_efficient_attention_backward",
             "aten::_scaled_dot_product_cudnn_attention_backward")


@dataclass(frozen=True)
class CollectiveEvent:
    """A measured collective: an NCCL kernel (GPU) or a gloo work item (CPU)."""

    name: str
    op: str  # allreduce, allgather, reducescatter, alltoall, broadcast, reduce, sendrecv, ...
    algorithm: str | None  # ring, tree, nvls, nvls_tree, collnet_direct, collnet_chain, pat
    protocol: str | None  # ll, ll128, simple
    size_bytes: int | None  # nccl-tests convention (AllGather: gathered output; ReduceScatter: input)
    group_size: int | None
    dtype: str | None
    start_s: float
    duration_s: float
    device: int | None = None
    stream: int | None = None
    process_group: str | None = None
    backend: str = "nccl"


def dtype_alias(name: str | None) -> str | None:
    """A trace's dtype spelling (``c10::BFloat16``, ``torch.float16``, ``float8_e4m3fn``) as the
    profile's (bf16, fp16, fp32, fp8); None stays None, an unknown name passes through."""
    if name is None:
        return None
    key = name.lower().replace("torch.", "").replace("c10::", "")
    return {"bfloat16": "bf16", "half": "fp16", "float16": "fp16", "float": "fp32", "float32": "fp32",
            "float8_e4m3fn": "fp8", "float8_e5m2": "fp8"}.get(key, key)


@dataclass(frozen=True)
class GemmEvent:
    """A GEMM kernel and the shape of the aten op that launched it (C[m,n] = A[m,k] B[k,n], x batch)."""

    name: str
    aten_op: str | None
    m: int | None
    n: int | None
    k: int | None
    batch: int
    dtype: str | None
    start_s: float
    duration_s: float
    device: int | None = None

    @property
    def mnk(self) -> tuple[int, int, int] | None:
        """(m, n, k) when the launching op recorded its shape."""
        if self.m is None or self.n is None or self.k is None:
            return None
        return self.m, self.n, self.k

    @property
    def flops(self) -> float | None:
        mnk = self.mnk
        return None if mnk is None else 2.0 * self.batch * mnk[0] * mnk[1] * mnk[2]

    @property
    def achieved_flops(self) -> float | None:
        f = self.flops
        return f / self.duration_s if f is not None and self.duration_s > 0 else None


@dataclass(frozen=True)
class AttentionEvent:
    """An attention kernel (flash / memory-efficient / cuDNN) with the launching op's shape."""

    name: str
    aten_op: str | None
    backward: bool
    batch: int | None
    heads: int | None
    kv_heads: int | None
    seq_q: int | None
    seq_k: int | None
    head_dim: int | None
    dtype: str | None
    start_s: float
    duration_s: float
    device: int | None = None
    causal: bool | None = None  # a trace does not record the mask (None); a kernel table does

    @property
    def flops(self) -> float | None:
        """Non-causal matmul FLOPs: 4·b·h·sq·sk·d forward (QK^T and PV), 2.5x that backward
        (FlashAttention-2 paper's accounting). Causal masking halves the useful work; the trace
        does not say whether it was used, so the caller decides."""
        b, h, sq, sk, d = self.batch, self.heads, self.seq_q, self.seq_k, self.head_dim
        if b is None or h is None or sq is None or sk is None or d is None:
            return None
        fwd = attention_flops(b, h, sq, sk, d)
        return fwd * FLASH_BWD_FACTOR if self.backward else fwd


@dataclass(frozen=True)
class KinetoTrace:
    """The measured events of one rank's trace."""

    source: str
    collectives: tuple[CollectiveEvent, ...]
    gemms: tuple[GemmEvent, ...]
    attentions: tuple[AttentionEvent, ...]
    rank: int | None
    world_size: int | None
    backend: str | None
    device_names: tuple[str, ...] = ()
    # Events left out because a field was missing, not finite or of the wrong type, one line
    # per kind of problem ("3 kernel events without a finite ts, first 'x' at traceEvents[12]").
    unusable: tuple[str, ...] = ()


# ---------------------------------------------------------------------------------------------


def parse_nccl_kernel_name(name: str) -> tuple[str | None, str | None, str | None]:
    """(op, algorithm, protocol) from an NCCL kernel name; (None, None, None) if not NCCL."""
    m = _NCCL_KERNEL.match(name)
    if not m:
        return None, None, None
    coll = m.group(1)
    op = _COLLECTIVE.get(coll.lower())
    if coll == "Generic":
        op = None
    ap = _NCCL_ALGO_PROTO.search(m.group(2).split("(")[0] + " ")
    if not ap:
        return op, None, None
    return op, ap.group(1).lower(), ap.group(2).lower()


def collective_size_bytes(op: str, in_nelems: int, out_nelems: int, elem_bytes: int, group: int | None) -> int:
    """nccl-tests ``size`` from record_param_comms' element counts: the larger buffer for
    AllGather/ReduceScatter (gathered output / scattered input), the send buffer otherwise."""
    if op in ("allgather", "reducescatter", "gather", "scatter"):
        return max(in_nelems, out_nelems) * elem_bytes
    return (in_nelems or out_nelems) * elem_bytes


def _dims(args: dict[str, Any]) -> list[Any]:
    dims = args.get("Input Dims")
    return dims if isinstance(dims, list) else []


def _types(args: dict[str, Any]) -> list[Any]:
    t = args.get("Input type")
    return t if isinstance(t, list) else []


def _dtype_name(t: Any) -> str | None:
    if not isinstance(t, str) or not t:
        return None
    return t.replace("c10::", "").lower()


def _dim(x: Any) -> bool:
    """A tensor dimension as a trace should hold it: a positive int below 2**40."""
    return isinstance(x, int) and not isinstance(x, bool) and 0 < x < 1 << 40


def _count(x: Any) -> int | None:
    """An element count: a non-negative int below 2**48, else None."""
    return x if isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 1 << 48 else None


def gemm_shape(op: str, dims: list[Any]) -> tuple[int, int, int, int] | None:
    """(batch, m, n, k) from an aten GEMM op's ``Input Dims``."""

    def mat(d: Any) -> list[int] | None:
        return [int(x) for x in d] if isinstance(d, list) and d and all(_dim(x) for x in d) else None

    try:
        if op in ("aten::mm", "aten::_scaled_mm"):
            a, b = mat(dims[0]), mat(dims[1])
            return (1, a[0], b[1], a[1]) if a and b and len(a) == 2 and len(b) == 2 else None
        if op == "aten::addmm":
            a, b = mat(dims[1]), mat(dims[2])
            return (1, a[0], b[1], a[1]) if a and b and len(a) == 2 and len(b) == 2 else None
        if op in ("aten::bmm", "aten::baddbmm"):
            a, b = (mat(dims[0]), mat(dims[1])) if op == "aten::bmm" else (mat(dims[1]), mat(dims[2]))
            return (a[0], a[1], b[2], a[2]) if a and b and len(a) == 3 and len(b) == 3 else None
        if op == "aten::matmul":
            a, b = mat(dims[0]), mat(dims[1])
            if not a or not b or len(a) < 2 or len(b) < 2:
                return None
            if len(b) == 2:  # [..., m, k] @ [k, n]: leading dims fold into m
                m = 1
                for x in a[:-1]:
                    m *= x
                return (1, m, b[1], a[-1])
            batch = 1
            for x in a[:-2]:
                batch *= x
            return (batch, a[-2], b[-1], a[-1])
        if op == "aten::linear":  # x[..., k] @ W[n, k]^T
            a, w = mat(dims[0]), mat(dims[1])
            if not a or not w or len(w) != 2:
                return None
            m = 1
            for x in a[:-1]:
                m *= x
            return (1, m, w[0], a[-1])
    except (IndexError, TypeError):
        return None
    return None


def attention_shape(op: str, dims: list[Any]) -> tuple[int, int, int, int, int, int] | None:
    """(batch, heads, kv_heads, seq_q, seq_k, head_dim) from query/key dims of an attention op.
    Backward ops take grad_out first, then query, key."""
    backward = "backward" in op
    qi = 1 if backward else 0
    try:
        q, k = dims[qi], dims[qi + 1]
        if not (isinstance(q, list) and isinstance(k, list) and len(q) == 4 and len(k) == 4):
            return None
        if op in _BHSD_OPS:
            b, h, sq, d = q
            _, hk, sk, _ = k
        else:
            b, sq, h, d = q
            _, sk, hk, _ = k
        if not all(_dim(x) for x in (b, h, hk, sq, sk, d)):
            return None
        return int(b), int(h), int(hk), int(sq), int(sk), int(d)
    except (IndexError, TypeError, ValueError):
        return None


class _CpuIndex:
    """CPU ops per (pid, tid), for 'which ops enclose this launch time' queries.

    The ops of one thread nest (each is a RecordFunction scope), so each op's parent is found
    once with a stack while the ops are swept in start order; a query is then a binary search
    for the last op starting at or before the time and a walk up its parents: O(n log n) to
    build and O(log n + depth) per query, where scanning every earlier op made a trace of
    30 MB take minutes.
    """

    def __init__(self, events: list[dict[str, Any]]) -> None:
        self.by_thread: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
        for e in events:
            self.by_thread.setdefault((_hashable(e.get("pid")), _hashable(e.get("tid"))), []).append(e)
        self.starts: dict[tuple[Any, Any], list[float]] = {}
        self.parents: dict[tuple[Any, Any], list[int]] = {}
        for key, evs in self.by_thread.items():
            evs.sort(key=lambda e: (e["ts"], -e["dur"]))
            self.starts[key] = [e["ts"] for e in evs]
            parents: list[int] = []
            stack: list[int] = []
            for i, e in enumerate(evs):
                while stack and evs[stack[-1]]["ts"] + evs[stack[-1]]["dur"] < e["ts"]:
                    stack.pop()
                parents.append(stack[-1] if stack else -1)
                stack.append(i)
            self.parents[key] = parents

    def enclosing(self, pid: Any, tid: Any, ts: float) -> list[dict[str, Any]]:
        """Ops on that thread covering ts, innermost (latest start) first."""
        key = (_hashable(pid), _hashable(tid))
        evs = self.by_thread.get(key)
        if not evs:
            return []
        i = bisect.bisect_right(self.starts[key], ts) - 1
        parents = self.parents[key]
        out = []
        while i >= 0:
            e = evs[i]
            if e["ts"] + e["dur"] >= ts:
                out.append(e)
            i = parents[i]
        return out


_HASHABLE = (str, int, float, type(None))


def _hashable(value: Any) -> Any:
    return value if type(value) in _HASHABLE else repr(value)


def _c10d_op(name: str) -> str | None:
    """'c10d::_reduce_scatter_base_' -> 'reducescatter'; None for other ops."""
    if not name.startswith("c10d::"):
        return None
    core = name[len("c10d::"):].strip("_").replace("_base", "")
    return _COLLECTIVE.get(core) or _COLLECTIVE.get(core.replace("_", ""))


def _cpu_gemms(cpu_ops: list[dict[str, Any]]) -> list[GemmEvent]:
    """A trace without GPU kernels (CPU run): the outermost GEMM aten ops are the GEMMs, timed
    by their CPU span (aten::matmul calls aten::mm; count it once)."""
    gemm_ops = [e for e in cpu_ops if e.get("cat") == "cpu_op" and e.get("name") in _GEMM_OPS]
    index = _CpuIndex(gemm_ops)
    out = []
    for e in gemm_ops:
        outer = [o for o in index.enclosing(e.get("pid"), e.get("tid"), e["ts"]) if o is not e
                 and o["ts"] + o["dur"] >= e["ts"] + e["dur"]]
        if outer:
            continue
        shape = gemm_shape(e["name"], _dims(e.get("args") or {}))
        types = _types(e.get("args") or {})
        dtype = next((_dtype_name(t) for t in types if _dtype_name(t) in DTYPE_BYTES), None)
        out.append(GemmEvent(
            name=e["name"], aten_op=e["name"], m=shape[1] if shape else None, n=shape[2] if shape else None,
            k=shape[3] if shape else None, batch=shape[0] if shape else 1, dtype=dtype,
            start_s=e["ts"] * 1e-6, duration_s=e["dur"] * 1e-6))
    return out


def _not_a_number(_: str) -> None:
    """JSON's non-standard NaN / Infinity literals (Python's json accepts them) read as missing."""
    return None


def _load(path: Path) -> dict[str, Any]:
    """The trace's JSON. A gzipped trace is decompressed as it is parsed, never held whole in
    memory as bytes; NaN and Infinity read as missing values (the events are then reported)."""
    if path.is_dir():
        raise InputError("is a directory; expected a PyTorch profiler trace (.json or .json.gz)", source=str(path))
    if not path.is_file():
        raise InputError("no such file", source=str(path))
    try:
        with path.open("rb") as fh:
            head = fh.read(2)
        if path.suffix == ".gz" or head == b"\x1f\x8b":
            import gzip

            with gzip.open(path, "rt", encoding="utf-8", errors="replace") as fh:
                data = json.load(fh, parse_constant=_not_a_number)
        else:
            with path.open("r", encoding="utf-8", errors="replace") as fh:
                data = json.load(fh, parse_constant=_not_a_number)
    except (json.JSONDecodeError, UnicodeDecodeError, OSError, EOFError, RecursionError) as exc:
        where = f" at line {exc.lineno}, column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else ""
        why = " (nested too deeply)" if isinstance(exc, RecursionError) else ""
        raise InputError(f"not a PyTorch profiler (Kineto) trace: not valid JSON{where}{why}", source=str(path)) from None
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        raise InputError("not a PyTorch profiler (Kineto) trace: expected a JSON object with a "
                         "'traceEvents' list (as torch.profiler export_chrome_trace writes)", source=str(path))
    return data


def _finite(value: Any) -> float | None:
    kind = type(value)  # exact types: a bool is not a time
    if kind is not float and kind is not int:
        return None
    f = float(value)
    return f if math.isfinite(f) else None


def _usable_events(raw: list[Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """The events with a finite ``ts`` (and, for complete events, a finite ``dur`` >= 0), with
    ``ts``/``dur`` as floats, ``name`` a string and ``args`` a mapping; the rest are counted per
    category and problem, and named by their first occurrence."""
    out: list[dict[str, Any]] = []
    bad: dict[tuple[str, str], list[Any]] = {}  # (category, problem) -> [count, first name, first index]
    for i, e in enumerate(raw):
        if not isinstance(e, dict):
            continue
        ph = e.get("ph")
        if ph not in ("X", "s", "f"):
            out.append(e)  # metadata, counters, instants: not timed here
            continue
        ts = e.get("ts")
        ts = ts if type(ts) is float and math.isfinite(ts) else _finite(ts)
        dur = e.get("dur", 0.0) if ph == "X" else 0.0
        dur = dur if type(dur) is float and math.isfinite(dur) else _finite(dur)
        problem = ("without a finite ts" if ts is None else
                   "without a finite, non-negative dur" if dur is None or dur < 0 else None)
        if problem:
            key = (str(e.get("cat", "uncategorised"))[:40], problem)
            if key not in bad:
                bad[key] = [0, quote(e.get("name", ""), 60), i]
            bad[key][0] += 1
            continue
        e["ts"], e["dur"] = ts, dur
        if type(e.get("args")) is not dict:
            e["args"] = {}
        if type(e.get("name", "")) is not str:
            e["name"] = str(e.get("name"))[:200]
        out.append(e)
    notes = [f"{n} {cat} event(s) {problem} left out (first: {name} at traceEvents[{i}])"
             for (cat, problem), (n, name, i) in bad.items()]
    return out, notes


def parse_kineto_trace(path: str | Path) -> KinetoTrace:
    """Read one rank's Chrome trace (``.json`` or ``.json.gz``) into measured events."""
    p = Path(path)
    data = _load(p)
    return parse_kineto_data(data, str(p))


def parse_kineto_data(data: dict[str, Any], source: str = "<trace>") -> KinetoTrace:
    events, unusable = _usable_events(data["traceEvents"])
    complete = [e for e in events if e.get("ph") == "X"]
    info = data.get("distributedInfo")
    dist: dict[str, Any] = info if isinstance(info, dict) else {}
    world = dist.get("world_size") if _dim(dist.get("world_size")) else None
    pg_list = dist.get("pg_config")
    pg_sizes = {str(pg.get("pg_name")): pg.get("pg_size") for pg in (pg_list if isinstance(pg_list, list) else [])
                if isinstance(pg, dict)}

    cpu_ops = [e for e in complete if e.get("cat") in ("cpu_op", "user_annotation", "python_function")]
    index = _CpuIndex([e for e in cpu_ops if e.get("cat") != "python_function"])
    launches = {}
    for e in complete:
        if e.get("cat") in ("cuda_runtime", "cuda_driver", "runtime", "hip_runtime"):
            corr = (e.get("args") or {}).get("correlation")
            if corr is not None:
                launches[_hashable(corr)] = e
    flows_start = {_hashable(e.get("id")): e for e in events if e.get("ph") == "s" and e.get("cat") == "ac2g"}

    def launch_of(kernel: dict[str, Any]) -> dict[str, Any] | None:
        corr = _hashable((kernel.get("args") or {}).get("correlation"))
        return launches.get(corr) or flows_start.get(corr)

    def stack_of(kernel: dict[str, Any]) -> list[dict[str, Any]]:
        launch = launch_of(kernel)
        if launch is None:
            return []
        return index.enclosing(launch.get("pid"), launch.get("tid"), launch["ts"])

    collectives: list[CollectiveEvent] = []
    gemms: list[GemmEvent] = []
    attentions: list[AttentionEvent] = []
    for k in complete:
        if k.get("cat") not in ("kernel", "gpu_op"):
            continue
        name = str(k.get("name", ""))
        args = k.get("args") or {}
        start, dur = k["ts"] * 1e-6, k["dur"] * 1e-6
        device = args.get("device") if _count(args.get("device")) is not None else None
        if name.startswith(("ncclKernel", "ncclDevKernel")):
            op, algo, proto = parse_nccl_kernel_name(name)
            meta = next((e for e in stack_of(k) if e.get("name") == "record_param_comms"), None)
            size = group = None
            dtype = pg = None
            if meta is not None:
                ma = meta.get("args") or {}
                issued = _COLLECTIVE.get(str(ma.get("Collective name", "")).lower())
                # NCCL runs All-to-All as grouped send/recv (a SendRecv kernel): the issued
                # collective names what was asked for.
                if issued and (op is None or op == "sendrecv"):
                    op = issued
                dtype = _dtype_name(ma.get("dtype"))
                group = ma.get("Group size") if _dim(ma.get("Group size")) else None
                pg = str(ma["Process Group Name"])[:200] if "Process Group Name" in ma else None
                elem = DTYPE_BYTES.get(dtype or "", None)
                n_in, n_out = _count(ma.get("In msg nelems")), _count(ma.get("Out msg nelems", 0)) or 0
                if op and elem and n_in is not None:
                    size = collective_size_bytes(op, n_in, n_out, elem, group)
            collectives.append(CollectiveEvent(
                name=name, op=op or "unknown", algorithm=algo, protocol=proto, size_bytes=size, group_size=group,
                dtype=dtype, start_s=start, duration_s=dur, device=device,
                stream=args.get("stream") if _count(args.get("stream")) is not None else None,
                process_group=pg))
        elif _ATTN_KERNEL.search(name):
            op_ev = next((e for e in stack_of(k) if e.get("name") in _ATTN_OPS), None)
            attn = attention_shape(op_ev["name"], _dims(op_ev.get("args") or {})) if op_ev else None
            backward = ("bwd" in name.lower() or "backward" in name.lower()
                        or (op_ev is not None and "backward" in op_ev["name"]))
            types = _types(op_ev.get("args") or {}) if op_ev else []
            attentions.append(AttentionEvent(
                name=name, aten_op=op_ev["name"] if op_ev else None, backward=backward,
                batch=attn[0] if attn else None, heads=attn[1] if attn else None,
                kv_heads=attn[2] if attn else None, seq_q=attn[3] if attn else None,
                seq_k=attn[4] if attn else None, head_dim=attn[5] if attn else None,
                dtype=_dtype_name(types[1 if backward else 0]) if len(types) > 1 else None,
                start_s=start, duration_s=dur, device=device))
        elif _GEMM_KERNEL.search(name):
            op_ev = next((e for e in stack_of(k) if e.get("name") in _GEMM_OPS), None)
            shape = gemm_shape(op_ev["name"], _dims(op_ev.get("args") or {})) if op_ev else None
            types = _types(op_ev.get("args") or {}) if op_ev else []
            dtype = next((_dtype_name(t) for t in types if _dtype_name(t) in DTYPE_BYTES), None)
            gemms.append(GemmEvent(
                name=name, aten_op=op_ev["name"] if op_ev else None,
                m=shape[1] if shape else None, n=shape[2] if shape else None, k=shape[3] if shape else None,
                batch=shape[0] if shape else 1, dtype=dtype, start_s=start, duration_s=dur, device=device))

    if not any(e.get("cat") in ("kernel", "gpu_op") for e in complete):
        gemms.extend(_cpu_gemms(cpu_ops))

    # CPU process groups (gloo): the work items on the runloop threads. gloo runs some
    # collectives as others (reduce_scatter_tensor shows as gloo:all_reduce), so the collective
    # is taken from the c10d op that enqueued the work when the two sequences pair up one to one
    # (gloo executes a process group's work in order).
    gloo = sorted((e for e in cpu_ops if str(e.get("name", "")).startswith("gloo:")), key=lambda e: e["ts"])
    c10d = sorted((e for e in cpu_ops if e.get("cat") == "cpu_op" and _c10d_op(str(e.get("name", "")))),
                  key=lambda e: e["ts"])
    c10d_ops: list[str | None] = [_c10d_op(str(e["name"])) for e in c10d] if len(c10d) == len(gloo) else [None] * len(gloo)
    for e, issued_op in zip(gloo, c10d_ops):
        name = str(e.get("name", ""))
        op = issued_op or _COLLECTIVE.get(name.split(":", 1)[1].lower())
        if op is None or op == "barrier":
            continue
        args = e.get("args") or {}
        dims, types = _dims(args), _types(args)
        group = pg_sizes.get("0") if len(pg_sizes) == 1 else None
        group = group if _dim(group) else (world if len(pg_sizes) <= 1 else None)
        dtype = _dtype_name(types[0]) if types else None
        size = None
        if dims and isinstance(dims[0], list) and all(_dim(x) for x in dims[0]) and dtype is not None and dtype in DTYPE_BYTES:
            numel = 1
            for x in dims[0]:
                numel *= x
            per_rank = numel * DTYPE_BYTES[dtype]
            # gloo records the rank's input: AllGather's size is the gathered total
            size = per_rank * group if op == "allgather" and group else per_rank
        collectives.append(CollectiveEvent(
            name=name, op=op, algorithm=None, protocol=None, size_bytes=size, group_size=group, dtype=dtype,
            start_s=e["ts"] * 1e-6, duration_s=e["dur"] * 1e-6, backend="gloo"))

    props = data.get("deviceProperties")
    device_names = tuple(str(d.get("name"))[:200] for d in (props if isinstance(props, list) else [])
                         if isinstance(d, dict) and d.get("name"))
    return KinetoTrace(
        source=source,
        collectives=tuple(sorted(collectives, key=lambda c: c.start_s)),
        gemms=tuple(sorted(gemms, key=lambda g: g.start_s)),
        attentions=tuple(sorted(attentions, key=lambda a: a.start_s)),
        rank=dist.get("rank") if isinstance(dist.get("rank"), int) else None,
        world_size=world, backend=dist.get("backend") if isinstance(dist.get("backend"), str) else None,
        device_names=device_names, unusable=tuple(unusable))

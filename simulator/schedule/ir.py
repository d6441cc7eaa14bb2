"""The schedule IR: per-rank programs of compute, collective and point-to-point ops.

Plain frozen dataclasses, serialisable to JSON. A *program* is the ordered list of ops one rank
issues in one training step; the list order is the issue order, and ops on one stream run in that
order (a CUDA stream is FIFO). An op may start when every op in ``deps`` (indices into the same
program) has finished and every earlier op of its stream has finished.

Streams: ``"compute"`` for kernels, and one stream per process group for communication, named by
its axes (``"tp"``, ``"dp+cp"``, ``"pp"``, ...), as PyTorch's NCCL backend gives each process group
its own stream.

Groups are not spelled out per op: ``axes`` names the process group (``("tp",)``, ``("dp", "cp")``)
and :class:`simulator.schedule.groups.Grid` resolves it to member ranks for a given rank. That is
what lets symmetric ranks share one program: a schedule stores one program per *role* (for example
per pipeline stage), not per rank.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any, Callable, Literal, Union

from simulator.vocabulary import COMM_TYPES, CollectiveKind

__all__ = ["COMM_TYPES", "CollectiveKind"]  # re-exported: the IR's vocabulary (simulator/vocabulary.py)

Phase = Literal["fwd", "bwd", "opt", "other"]
# an op's part in a CUDA graph replay (ComputeOp.cuda_graph): "" eager, the graph's first op, or another of its ops
CudaGraphRole = Literal["", "launch", "captured"]
# host: work of the issuing CPU thread (Python loops, op dispatch, launches) that the GPU waits for
# with no kernel running; priced as ``count`` host launches (``gpu.kernel_launch_us``, costs/compute.py).
ComputeKind = Literal["gemm", "attention", "scan", "elementwise", "norm", "embedding", "loss", "optimizer", "copy",
                      "host"]



@dataclass(frozen=True, slots=True)
class Tag:
    """Where an op belongs, for reports and traces."""

    phase: Phase = "other"
    layer: int | None = None  # global transformer-layer index
    mb_index: int | None = None  # which micro-batch of the step (not its size)
    chunk: int | None = None  # virtual pipeline chunk (interleaved 1F1B)


@dataclass(frozen=True, slots=True)
class ComputeOp:
    """A kernel (or a fused group of kernels) on the compute stream.

    ``flops`` counts multiply-adds as 2. ``hbm_bytes`` is what the kernel moves to and from HBM,
    used for memory-bound ops. ``gemm`` is (m, n, k) for shape-dependent GEMM efficiency;
    ``count`` repeats the same kernel (for example per-head or per-chunk GEMMs) so one op can
    stand for a batch of identical kernels. ``sm_fraction`` < 1 when communication kernels hold
    some SMs (TransformerEngine pipelined overlap). ``attention_kernel`` names the fused
    attention kernel of an ``attention`` op (``flash2``, ``flash3``; ``""``: the GPU's default),
    whose efficiency the hardware profile gives per kernel generation, and ``attention_shape``
its sequence lengths, head dimension and masking. A ``host`` op is CPU work
    the GPU waits for: ``count`` steps of ``host_us`` microseconds each (0: the host's ``kernel_launch_us``),
    at the node's host pace (``node.host_time_scale``); one of ``impl`` "dma" is a copy from host
    memory on the stream instead, ``host_us`` the transfer's time at its link's rate, which the
    host's pace does not change.
    ``host_issue`` false: what the host thread spends issuing the op is already timed by a host
    op (the op is one, or its kernels are launched inside one's loop: ZeRO-3 of 2021's per-rank
    copies), so the issue queue (costs/host.py) charges nothing for it.
    ``host_sync``: once it has issued this op, the host waits until the GPU has finished it
    before it issues the next op of the program (a device-to-host read the framework blocks
    on: DeepEP's received-token counts, a ``.cpu()`` of split sizes). The run-ahead the host
    had is lost, so the host costs of the ops after it are exposed until it is ahead again.
    ``host_tensors``: parameter tensors the framework's Python visits while issuing the op (an
    optimizer step's per-tensor bookkeeping), each costing the host ``OPT_TENSOR_US``.
    ``host_calls`` > 0: the op's ``count`` kernels are issued by that many calls from Python, the
    rest from a C++ loop inside them (TransformerEngine's grouped GEMM over the local experts,
    ``split_quantize`` over their row splits, a current-scaling quantizer's four kernels), which
    costs the host a launch per kernel and no Python (costs/host.py); 0: one call per kernel.
    ``concurrent`` > 1 on a chunk GEMM: that many same-shape chunks run at once on separate
    compute streams (TransformerEngine's round-robin streams of its TP overlap), so their thread
    blocks share the SMs and a partly empty wave of one chunk is filled by the next.
    ``impl`` names the implementation of a memory-bound kernel where it sets the bandwidth the
    kernel reaches: ``"eager"`` on a ``norm`` is PyTorch's native LayerNorm/RMSNorm kernel
    (``costs/memory_bound.py``); ``""`` is a streaming kernel.
    ``cuda_graph``: the op is replayed from a CUDA graph (``training.cuda_graph_scope``,
    ``schedule/cuda_graphs.py``): ``"launch"`` for the first op of a graph, whose host cost is the
    graph's launch, ``"captured"`` for the others, which cost the host nothing; either way its
    kernels follow each other with the graph's shorter gap. ``""``: issued eagerly.
    """

    name: str
    kind: ComputeKind
    flops: float = 0.0
    hbm_bytes: float = 0.0
    deps: tuple[int, ...] = ()
    gemm: tuple[int, int, int] | None = None
    count: int = 1
    dtype: str = "bf16"
    causal_fraction: float = 1.0  # attention: fraction of the score matrix actually computed
    sm_fraction: float = 1.0
    stream: str = "compute"
    tag: Tag = field(default_factory=Tag)
    type: Literal["compute"] = "compute"
    attention_kernel: str = ""
    # attention: (query tokens, key tokens, head dim, causal mask) of one kernel, which sets its
    # efficiency relative to the profile's long-sequence figure (costs/attention_shape.py);
    # None: priced at that figure
    attention_shape: tuple[int, int, int, bool] | None = None
    # attention: keys each query row of a causal kernel sees, itself included (sliding-window
    # attention, model.sliding_window); 0: its whole causal prefix
    attention_window: int = 0
    host_us: float = 0.0
    concurrent: int = 1
    host_issue: bool = True
    impl: str = ""
    host_sync: bool = False
    # parameter tensors a Python loop of the framework visits while issuing the op (an optimizer
    # step's per-tensor bookkeeping: costs/host.py OPT_TENSOR_US); 0: none
    host_tensors: int = 0
    # Python calls that issue the op's count kernels, the others launched from C++ inside them (costs/host.py); 0: each kernel its own
    host_calls: int = 0
    # attention backward: sequences x query heads of a kernel that runs its deterministic algorithm
    # (training.deterministic; costs/attention_determinism.py); 0: the default algorithm
    deterministic_heads: int = 0
    # attention: the kernel applies the attention dropout itself (training.fused_attention_dropout):
    # a Philox draw per computed score element (costs/attention_dropout.py)
    attention_dropout: bool = False
    # fp8 GEMM: the block scaling of its operands ("mxfp8": 1x32 E8M0 scales, run as cuBLAS's
    # block-scaled kernel; "blockwise": 1x128 / 128x128 scales; costs/compute.py
    # BLOCK_SCALED_GEMM_TIME); "": one scale per tensor
    scaling: str = ""
    cuda_graph: CudaGraphRole = ""
    # bytes of the op's outputs that PyTorch fills with NaN as it allocates them, in fill_kernels
    # kernels before the op's own (training.torch_deterministic: ATen's fill_empty_deterministic_
    # in the empty factories; schedule/deterministic_fill.py); 0: no fill
    fill_bytes: float = 0.0
    fill_kernels: int = 0


@dataclass(frozen=True, slots=True)
class CommOp:
    """A collective over the process group ``axes``; ``size_bytes`` in the nccl-tests convention:
    AllGather the gathered output, ReduceScatter the input, AllReduce/Broadcast the buffer,
    AllToAll the whole send buffer of one rank."""

    name: str
    op: CollectiveKind
    axes: tuple[str, ...]
    size_bytes: int
    deps: tuple[int, ...] = ()
    stream: str = ""  # defaults to "+".join(axes)
    dtype: str = "bf16"
    tag: Tag = field(default_factory=Tag)
    type: Literal["comm"] = "comm"
    host_sync: bool = False  # the host waits for it to end before issuing more (ComputeOp.host_sync)
    cuda_graph: CudaGraphRole = ""  # captured in a CUDA graph (ComputeOp.cuda_graph)

    def __post_init__(self) -> None:
        if not self.stream:
            object.__setattr__(self, "stream", "+".join(self.axes))


@dataclass(frozen=True, slots=True)
class Transfer:
    """One send or receive of a P2P batch: the peer is the rank ``offset`` steps away along
    ``axis`` (cyclic), e.g. ("pp", +1) is the next pipeline stage, ("cp", -1) the previous ring
    neighbour. ``key`` matches a send with its receive: the receiver's Transfer for the same
    message carries the same key (a layer pass's keys hold :data:`MB_PLACEHOLDER` for the
    micro-batch of the op's tag: :func:`transfer_key`). ``transport`` is ``nccl``
    (ncclSend/ncclRecv: NCCL's channels and protocols) or ``userbuffers`` (TransformerEngine's
    copies between registered buffers)."""

    axis: str
    offset: int
    nbytes: int
    key: str
    transport: Literal["nccl", "userbuffers"] = "nccl"


@dataclass(frozen=True, slots=True)
class P2POp:
    """A batch of sends and receives issued together (ncclGroupStart/End; torch
    batch_isend_irecv). It finishes when all of them have; a ring step is one P2POp with one
    send to the next rank and one receive from the previous one."""

    name: str
    sends: tuple[Transfer, ...] = ()
    recvs: tuple[Transfer, ...] = ()
    deps: tuple[int, ...] = ()
    stream: str = ""
    tag: Tag = field(default_factory=Tag)
    type: Literal["p2p"] = "p2p"

    def __post_init__(self) -> None:
        if not self.stream:
            axes = sorted({t.axis for t in self.sends + self.recvs})
            object.__setattr__(self, "stream", "+".join(axes) or "p2p")


Op = Union[ComputeOp, CommOp, P2POp]


def _writable_twin(cls: type) -> type:
    """A class of ``cls``'s slots in the same order and nothing else: the same object layout,
    so an instance built as the twin becomes a ``cls`` by assigning its ``__class__`` (CPython
    checks the layouts match and raises otherwise, ``object_set_class`` in Objects/typeobject.c).
    The twin is not frozen, so its slots are set by plain attribute stores, which CPython 3.11
    specialises (``STORE_ATTR_SLOT``), where a frozen dataclass needs one call of each slot
    descriptor's ``__set__`` per field: a GPT-3 175B step's ComputeOp in 0.3 us instead of 0.9."""
    return type(f"_Writable{cls.__name__}", (), {"__slots__": getattr(cls, "__slots__")})


def _constructor(cls: type, signature: str, value: Callable[[int, str], str]) -> Callable[..., Op]:
    """``make(<signature>)``: a ``cls`` whose slot ``i`` (named ``n``) holds ``value(i, n)``,
    set without ``__init__`` and ``__post_init__`` (the values are a complete op's) on its
    writable twin (:func:`_writable_twin`). Written out as source, one store per field, as
    ``dataclasses`` writes ``__init__``."""
    names: tuple[str, ...] = getattr(cls, "__slots__")
    body = "".join(f"    op.{name} = {value(i, name)}\n" for i, name in enumerate(names))
    scope: dict = {"new": object.__new__, "twin": _writable_twin(cls), "cls": cls}
    exec(f"def make({signature}):\n    op = new(twin)\n{body}    op.__class__ = cls\n    return op\n", scope)
    return scope["make"]


def _field_setter_constructor(cls: type) -> Callable[..., Op]:
    """A constructor of ``cls`` from every field's value in slot order (:func:`_constructor`).
    For copies of complete ops with a few fields changed (``transformer._stamp``): a deep
    pipeline's step stamps millions of them."""
    names: tuple[str, ...] = getattr(cls, "__slots__")
    return _constructor(cls, ", ".join(f"a{i}" for i in range(len(names))), lambda i, name: f"a{i}")


# Field values in slot order -> the op (see _field_setter_constructor).
MAKE_OP: dict[type, Callable[..., Op]] = {cls: _field_setter_constructor(cls) for cls in (ComputeOp, CommOp, P2POp)}


# CommOp(name, op, axes, size_bytes, deps, stream, dtype, tag) with its stream given (not left to
# __post_init__): a data-parallel schedule issues tens of thousands of collectives
# (data_parallel.GradSync._comm): a fifth of the time of the frozen __init__ (0.6 against 3.1 us).
make_comm: Callable[..., CommOp] = _constructor(  # type: ignore[assignment]
    CommOp, "name, kind, axes, size_bytes, deps, stream, dtype, tag",  # ``op`` names the op being made
    lambda i, name: {"op": "kind", "type": '"comm"', "host_sync": "False", "cuda_graph": '""'}.get(name, name))


# Tag(phase, layer, mb_index, chunk) without the frozen __init__'s object.__setattr__ per field
# (transformer._stamp_ops makes a pass's tags for each micro-batch it stamps)
make_tag: Callable[[Phase, int | None, int | None, int | None], Tag] = _constructor(  # type: ignore[assignment]
    Tag, "phase, layer, mb_index, chunk", lambda i, name: name)


# make(op, deps): a copy of ``op`` (of this class) with ``deps`` in place of its dependencies, set
# slot by slot as MAKE_OP's are (:func:`_constructor`); ``dataclasses.replace`` passes every field
# through ``__init__`` and the frozen ``object.__setattr__`` (4-5 us an op), and the combined-1F1B
# reordering (``moe_overlap.interleave``) renumbers the dependencies of nearly every op of an
# MoE step: 2.7 million of them at Qwen3-235B's 512 micro-batches.
_WITH_DEPS: dict[type, Callable[[Any, tuple[int, ...]], Op]] = {
    cls: _constructor(cls, "o, deps", lambda i, name: "deps" if name == "deps" else f"o.{name}")
    for cls in (ComputeOp, CommOp, P2POp)}


def with_deps(op: Op, deps: tuple[int, ...]) -> Op:
    """``dataclasses.replace(op, deps=deps)``, equal field for field, without ``__init__``: a
    complete op's fields stay valid with other dependencies (an op whose ``stream`` is still
    empty, which ``__post_init__`` would fill, goes through ``replace``)."""
    if not op.stream:
        return replace(op, deps=deps)
    return _WITH_DEPS[type(op)](op, deps)


def restamp_constructor(cls: type) -> Callable[[tuple, tuple[int, ...], Any], Op]:
    """``make(state, deps, tag)``: an op of ``cls`` with the field values ``state`` (in slot
    order) but ``deps`` and ``tag`` (:func:`_constructor`), without first copying ``state`` into
    an argument list (``transformer._stamp`` makes most ops of a deep pipeline's step this way)."""
    return _constructor(cls, "s, deps, tag", lambda i, name: name if name in ("deps", "tag") else f"s[{i}]")


# Stands for the micro-batch in the keys of the sends and receives of a layer pass (TP ring
# exchange, context-parallel and ring-attention rings: ``tensor_parallel._key``, ``RingSpec.key``):
# the op's tag names the micro-batch, so a pass stamped from its template for another micro-batch
# (``transformer._stamp``) keeps the template's transfers. A transfer per send and receive per
# stamp, with the digits in its key, was half the build of Llama 3.1 405B at tp 4 pp 16 vp 4
# (TP ring-exchange overlap: 1.7 million transfers over 384 micro-batches).
MB_PLACEHOLDER = "\x00"


def layer_key(kind: str, layer: int) -> str:
    """The prefix of the keys of a layer pass's sends and receives (``tp.L3.mb`` + the
    placeholder): the layer named once, the micro-batch left to the op's tag."""
    return f"{kind}.L{layer}.mb{MB_PLACEHOLDER}"


def layer_marker(layer: int) -> str:
    """What every key of layer ``layer``'s passes holds exactly once: :func:`layer_key` but its
    kind, and the dot after it."""
    return f".L{layer}.mb{MB_PLACEHOLDER}."


def transfer_key(op: P2POp, t: Transfer) -> str:
    """The key that matches ``t``, a send or receive of ``op``, with its other side: ``t.key``,
    with the micro-batch of ``op``'s tag in place of :data:`MB_PLACEHOLDER` where it holds one."""
    key = t.key
    return key.replace(MB_PLACEHOLDER, str(op.tag.mb_index)) if MB_PLACEHOLDER in key else key


def _dict_maker(cls: type) -> Callable[[Any], dict]:
    """``to_dict(obj)``: ``dataclasses.asdict`` of an IR object of ``cls``, written out as source
    with one entry per field in declaration order (as :func:`_constructor` writes constructors).
    ``asdict`` recurses through every value with ``deepcopy`` (27 CPU s for the 344,329 ops of
    GPT-3 175B on 1,024 GPUs); the IR's values are immutable (str, numbers, tuples of them)
    except the nested dataclasses (``tag``, the ``Transfer`` s of a P2P batch), converted here."""
    nested = {"tag": "tag_dict(obj.tag)",  # a P2P op's transfers with their keys as matched (transfer_key)
              "sends": "tuple([{**transfer_dict(t), 'key': key(obj, t)} for t in obj.sends])",
              "recvs": "tuple([{**transfer_dict(t), 'key': key(obj, t)} for t in obj.recvs])"}
    body = ", ".join(f"{f.name!r}: {nested.get(f.name, 'obj.' + f.name)}" for f in fields(cls))
    scope: dict = {"tag_dict": _DICT.get(Tag), "transfer_dict": _DICT.get(Transfer), "key": transfer_key}
    exec(f"def to_dict(obj):\n    return {{{body}}}\n", scope)
    return scope["to_dict"]


_DICT: dict[type, Callable[[Any], dict]] = {}
for _cls in (Tag, Transfer, ComputeOp, CommOp, P2POp):  # nested classes first
    _DICT[_cls] = _dict_maker(_cls)


def op_to_dict(op: Op) -> dict:
    """JSON-friendly dict of an op (the same as ``dataclasses.asdict``; JSON writes tuples as lists)."""
    return _DICT[type(op)](op)


class ProgramBuilder:
    """Appends ops to one rank's program and hands back their indices for ``deps``."""

    def __init__(self) -> None:
        self.ops: list[Op] = []
        # Where the caller asks for them (a list; None: not kept), the runs of ops appended as
        # one stamp of a layer pass's template (``transformer._stamp_kept``): (start, the ops,
        # the template). The template's fields are every field of its ops but their deps and tags.
        self.stamps: list[tuple[int, tuple[Op, ...], Any]] | None = None
        # True: the program is read for what its ops cost alone and on which stream, in program
        # order (the sweep's bound, sweep/bound.py ``_priced_programs``): a stamped pass then
        # appends the ops of an earlier stamp of its template (``transformer._stamp_kept``),
        # every field of them the pass's own but their dependencies, micro-batch tags and P2P
        # keys, which are that stamp's.
        self.priced_only = False

    def add(self, op: Op) -> int:
        ops = self.ops
        n = len(ops)
        for d in op.deps:
            if not 0 <= d < n:
                raise ValueError(f"op {op.name!r} depends on op {d}, which is not in the program yet")
        ops.append(op)
        return n

    def __len__(self) -> int:
        return len(self.ops)


# A hook before each weight GEMM of a dense layer: (program, layer, GEMM name, pass, the op the GEMM
# would depend on) -> the op it depends on instead. DeepSpeed ZeRO-3 of 2021 fetches a module's
# parameters in that module's own pre-hook, with a host synchronisation, so its parameter gathers
# interleave with the layer's kernels (``schedule/zero.py``). GEMMs: qkv, proj, fc1, fc2; passes:
# fwd, recompute (the forward re-run inside backward), bwd.
Gate = Callable[[ProgramBuilder, int, str, str, int], int]

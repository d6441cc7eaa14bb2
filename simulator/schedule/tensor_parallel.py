"""Megatron tensor parallelism (arXiv:1909.08053) with sequence parallelism (arXiv:2205.05198),
and TransformerEngine's Userbuffers comm/GEMM overlap.

Four building blocks, one per (column | row)-parallel linear layer and pass. The transformer layer
builder calls them for QKV/FC1 (column) and proj/FC2 (row). Shapes are per TP rank; ``A`` is one
full-sequence hidden activation of this rank, ``A = b·s·h·B`` with ``s = seq_local`` (already
divided by cp and ulysses); every TP collective moves ``A`` (MECHANICS.md §2.1).

Without SP (Megatron `megatron/core/tensor_parallel/{layers,mappings}.py`):
  column fwd: GEMM.                       row fwd: GEMM → AllReduce(A).
  column bwd: dgrad → async AllReduce(dX) overlapping wgrad.      row bwd: dgrad, wgrad.
  Before Megatron-LM's ``async_tensor_model_parallel_allreduce`` (Sep 2021; Megatron-LM 2020,
  BLOOM's Megatron-DeepSpeed) the column bwd is dgrad, wgrad, then AllReduce(dX): the AllReduce is
  the backward of ``copy_to_tensor_model_parallel_region``, which autograd runs after the
  linear's, and the next layer's backward waits for it.
With SP (inputs of column layers and outputs of row layers are sequence-sharded):
  column fwd: AllGather(A) → GEMM.        row fwd: GEMM → ReduceScatter(A).
  column bwd: async re-AllGather of the saved sharded input overlapping the dgrad GEMM, then
              async ReduceScatter(dX) overlapping the wgrad GEMM (which needs the gathered input).
  row bwd:    AllGather(dY) → dgrad and wgrad.
Per layer that is 2 AG + 2 RS forward and 4 AG + 2 RS backward (MECHANICS.md §2.2).

Overlap modes (TE ``initialize_ub`` in ``transformer_engine/pytorch/module/base.py`` and
``common/comm_gemm_overlap/comm_gemm_overlap.cpp``; MECHANICS.md §2.3). Userbuffers needs SP
(Megatron asserts ``tp_comm_overlap`` ⇒ ``sequence_parallel``), so without SP every mode is "none".

* ``none``: plain NCCL as above.
* ``bulk``: only TE's bulk overlaps (``tp_comm_bulk_dgrad``/``tp_comm_bulk_wgrad``): in the column
  backward the whole re-AllGather runs beside the whole dgrad GEMM and the whole ReduceScatter(dX)
  beside the whole wgrad GEMM, on ``UB_COMM_SMS`` SMs, so those GEMMs run on ``SMs − 16`` (TE's
  ``set_sm_margin``, its default from 2.0 on; TE 1.x launches them on every SM:
  ``TPContext.margin_fraction``, ``parallel.tp_overlap_sm_margin``).
  Forward AG/RS and the row-backward AG(dY) stay blocking.
* ``pipelined``: bulk as above, plus every collective a GEMM waits on (fprop AG/RS, dgrad AG(dY))
  is split into ``UB_NUM_SPLITS`` = 4 chunks interleaved with GEMM chunks, the GEMM chunks running
  on ``SMs − 16`` (``CommOverlapBase::split_overlap_rs``). Deviation: TE has no pipelined AG-GEMM
  (its AG-GEMMs default to ring_exchange); here the AG side is chunked the same way as the RS side
  so the mode is one uniform "chunked collectives" choice. Use ``ring_exchange`` for TE's AG method.
* ``ring_exchange``: bulk as above, plus AG-GEMMs as ``CommOverlapP2PBase::split_overlap_ag``
  (t GEMM chunks, t−1 send/recv steps of A/t to tp+1 / from tp−1, on the copy engine) and
  GEMM-RS as ``CommOverlapP2PBase::split_overlap_rs`` (all-pairs: at step i send the previous
  partial to tp+i, receive from tp−i, then a local reduction over t partials; the functional test
  yaml selects it for fc2_fprop).
* ``te_default``: TransformerEngine's default per-GEMM methods, what Megatron's
  ``--tp-comm-overlap`` runs (``initialize_ub`` defaults, MECHANICS.md §2.3 table): qkv/fc1 fprop
  and proj/fc2 dgrad AG-GEMMs as ``ring_exchange``; proj/fc2 fprop GEMM-RS as ``pipeline``
  (4 splits, 16 comm SMs, 32 = ``UB_MAX_SM`` on the last chunk); qkv/fc1 dgrad re-gather and
  wgrad RS as ``bulk``; proj/fc2 wgrad reuse the gathered dY (``external``). GEMMs outside TE's
  table (Megatron's output layer ``lm_head`` is a plain ``ColumnParallelLinear``) use plain NCCL.
  A tuned Userbuffers configuration overrides the table per GEMM (``parallel.tp_overlap_methods``,
  the config's ``method``): proj/fc2 fprop by ring exchange, or the qkv/fc1 dgrad as a
  ReduceScatter of dX pipelined (or ring-exchanged) with the dgrad GEMM itself, TE's
  ``ub_overlap_rs_dgrad`` (``_LayerNormLinear.backward``, v2.2): the bulk overlaps are off, the
  saved input is re-gathered by NCCL, launched before the dgrad GEMM and waited on by the wgrad
  GEMM, which runs on every SM with nothing left to reduce beside it.

Each mode is a table from GEMM (``<layer>_<fprop|dgrad|wgrad>``) to TE method (:func:`gemm_method`);
the two overlapped patterns below implement each method once.

FP8: TE's AG buffers carry FP8 (1 byte/element); ReduceScatter and AllReduce stay bf16.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Final, Literal

from simulator.schedule import deterministic_fill
from simulator.schedule.ir import (CollectiveKind, CommOp, ComputeOp, P2POp, Phase, ProgramBuilder, Tag, Transfer,
                                   layer_key)

OVERLAP_MODES = ("none", "bulk", "pipelined", "ring_exchange", "te_default")

# TE initialize_ub defaults (transformer_engine/pytorch/module/base.py, MECHANICS.md §2.3 table).
UB_NUM_SPLITS = 4  # num_splits of the "pipeline" method
UB_COMM_SMS = 16  # num_sm of "pipeline" and "bulk" methods (set_sm_margin: the GEMM gets SMs − 16)
UB_RING_EXCHANGE_SMS = 1  # ring_exchange copies with the copy engine (use_ce) and holds ~1 SM
# Compute streams the chunk GEMMs of "pipeline" and "ring_exchange" are issued on round-robin
# (TE's NVTE_COMM_OVERLAP_MAX_STREAMS, MECHANICS.md §2.3): up to this many run at once, so the
# partly empty last wave of one chunk is filled by the next (ComputeOp.concurrent).
UB_MAX_STREAMS = 3
UB: Final = "userbuffers"  # ring_exchange sends are copies between registered buffers, not ncclSend
AXES = ("tp",)
# The stream of an NCCL collective that runs while Userbuffers' own communicators are busy (the
# re-gather beside a ReduceScatter-overlapped dgrad): NCCL's stream, not the UB chunks' queue.
NCCL_BESIDE_UB: Final = "tp.nccl"

Method = Literal["nccl", "bulk", "pipeline", "ring_exchange"]
"""How one GEMM's TP collective runs: plain blocking NCCL, or one of TE's Userbuffers methods."""

# TE's default method per GEMM (initialize_ub; MECHANICS.md §2.3). proj/fc2 wgrad are "external"
# (they reuse the dY their dgrad gathered) and have no collective of their own, so no entry.
TE_DEFAULT_METHODS: dict[str, Method] = {
    "qkv_fprop": "ring_exchange", "fc1_fprop": "ring_exchange",
    "proj_fprop": "pipeline", "fc2_fprop": "pipeline",
    "proj_dgrad": "ring_exchange", "fc2_dgrad": "ring_exchange",
    "qkv_dgrad": "bulk", "fc1_dgrad": "bulk",
    "qkv_wgrad": "bulk", "fc1_wgrad": "bulk",
}


Site = Literal["ag_gemm", "gemm_rs", "bulk"]
"""Where a GEMM meets its collective: an AllGather feeding it, a ReduceScatter fed by it, or (the
column-parallel backward) a whole collective running beside it with no data dependency."""

# The uniform modes: one method per site for every GEMM.
_UNIFORM_METHODS: dict[str, dict[str, Method]] = {
    "none": {"ag_gemm": "nccl", "gemm_rs": "nccl", "bulk": "nccl"},
    "bulk": {"ag_gemm": "nccl", "gemm_rs": "nccl", "bulk": "bulk"},
    "pipelined": {"ag_gemm": "pipeline", "gemm_rs": "pipeline", "bulk": "bulk"},
    "ring_exchange": {"ag_gemm": "ring_exchange", "gemm_rs": "ring_exchange", "bulk": "bulk"},
}


def gemm_method(mode: str, gemm: str, site: Site, overrides: tuple[tuple[str, Method], ...] = ()) -> Method:
    """The method of GEMM ``gemm`` (``<layer>_<fprop|dgrad|wgrad>``) at ``site`` under ``mode``.

    ``te_default`` looks the GEMM up in ``overrides`` (a tuned configuration's methods), then in
    TE's table, and falls back to plain NCCL for GEMMs that TE does not wrap (Megatron's
    ``lm_head``); the other modes ignore the GEMM and apply one method per site."""
    if mode == "te_default":
        for name, method in overrides:
            if name == gemm:
                return method
        return TE_DEFAULT_METHODS.get(gemm, "nccl")
    return _UNIFORM_METHODS[mode][site]


@dataclass(frozen=True)
class TPContext:
    tp: int
    sp: bool  # sequence parallelism in effect (RankShapes.sequence_parallel: asked for and tp > 1)
    overlap: str  # one of OVERLAP_MODES
    tokens: int  # rows of every TP GEMM: b·s with s = seq / cp / ulysses (RankShapes.tokens, before the SP split)
    hidden: int
    dtype: str
    dtype_bytes: int
    layer: int
    mb_index: int  # which micro-batch of the step this op belongs to, 0 .. n_micro - 1
    sms: int  # GPU SM count (pipelined overlap steals some)
    async_allreduce: bool = True  # without SP: the dX AllReduce overlaps wgrad (else it follows it)
    sm_margin: bool = True  # TE set_sm_margin: pipeline/bulk GEMMs on SMs − num_sm (else on all SMs)
    gemm_sms: tuple[tuple[str, int], ...] = ()  # per GEMM, SMs a tuned config withholds (ub_sm_fraction)
    methods: tuple[tuple[str, Method], ...] = ()  # per GEMM, a tuned config's method where not TE's default
    scaling: str = ""  # block scaling of the fp8 GEMMs' operands (ComputeOp.scaling; "": per tensor)
    # which GEMM outputs PyTorch fills with NaN as TransformerEngine allocates them
    # (training.torch_deterministic, schedule/deterministic_fill.py); default: none
    fill: deterministic_fill.Fill = deterministic_fill.Fill()

    def __post_init__(self) -> None:
        if self.overlap not in OVERLAP_MODES:
            raise ValueError(f"tp_overlap must be one of {', '.join(OVERLAP_MODES)}, got {self.overlap!r}")
        if self.sp and self.tp == 1:
            raise ValueError("sp: sequence parallelism is never in effect with tp = 1")

    @property
    def mode(self) -> str:
        """The overlap mode in effect (Userbuffers requires SP)."""
        return self.overlap if self.sp else "none"

    @property
    def ag_bytes(self) -> int:
        """AllGather size A (gathered output); FP8 buffers under fp8."""
        return self.tokens * self.hidden * (1 if self.dtype == "fp8" else self.dtype_bytes)

    @property
    def rs_bytes(self) -> int:
        """ReduceScatter / AllReduce size A; partial sums stay bf16 under fp8."""
        return self.tokens * self.hidden * (2 if self.dtype == "fp8" else self.dtype_bytes)

    @cached_property
    def tags(self) -> dict[Phase, Tag]:
        """One shared Tag per phase (schedules hold ~10⁵ ops; building them is the hot path)."""
        return {"fwd": Tag("fwd", self.layer, self.mb_index), "bwd": Tag("bwd", self.layer, self.mb_index)}

    def sm_fraction(self, comm_sms: int) -> float:
        return max(self.sms - comm_sms, 1) / self.sms

    @property
    def margin_fraction(self) -> float:
        """SMs a GEMM of TE's pipeline or bulk overlap is launched on: SMs − ``UB_COMM_SMS`` with
        ``set_sm_margin`` (TE >= 2.0's default), else all of them (TE 1.x's default,
        ``comm_gemm_overlap.h`` of v1.8: ``_math_sms = (set_sm_margin) ? SMs − num_comm_sm :
        SMs``): the communication kernel then competes for SMs as an NCCL kernel does, and the
        replay charges the GPU's ``overlap_slowdown`` to the GEMM it runs beside."""
        return self.sm_fraction(UB_COMM_SMS) if self.sm_margin else 1.0

    def ub_sm_fraction(self, gemm: str) -> float:
        """SMs the pipeline or bulk GEMM ``gemm`` is launched on: those a tuned Userbuffers
        configuration leaves it (``parallel.tp_overlap_gemm_sms``: its ``num_sm`` where it sets
        ``set_sm_margin``, none withheld where it does not), else TE's default
        (:attr:`margin_fraction`)."""
        for name, comm_sms in self.gemm_sms:
            if name == gemm:
                return self.sm_fraction(comm_sms)
        return self.margin_fraction

    def method(self, gemm: str, site: Site) -> Method:
        """The method in effect for ``gemm`` (plain NCCL without SP: Userbuffers requires it)."""
        return gemm_method(self.mode, gemm, site, self.methods)


# ---------------------------------------------------------------------------------------------
# small op factories


def _tag(ctx: TPContext, phase: Phase) -> Tag:
    return ctx.tags[phase]


def _gemm(pb: ProgramBuilder, ctx: TPContext, name: str, phase: Phase, m: int, n: int, k: int,
          deps: tuple[int, ...], parts: int = 1, split: str = "m", sm_fraction: float = 1.0,
          wgrad: bool = False) -> int:
    """An m×n×k GEMM, or one of ``parts`` equal chunks of it cut along ``split`` (m rows or n columns);
    ``wgrad``: a weight gradient, whose output is a fresh tensor only without gradient-accumulation fusion."""
    elem = 1 if ctx.dtype == "fp8" else ctx.dtype_bytes
    shape = (max(m // parts, 1), n, k) if split == "m" else (m, max(n // parts, 1), k)
    a_bytes, b_bytes, c_bytes = m * k, k * n, m * n
    io = (a_bytes / parts + b_bytes + c_bytes / parts) if split == "m" else (a_bytes + (b_bytes + c_bytes) / parts)
    fill = ctx.fill.gemm(wgrad)
    out = deterministic_fill.gemm_output_bytes(shape[0], shape[1], ctx.dtype, ctx.dtype_bytes) if fill else 0.0
    return pb.add(ComputeOp(
        name=name, kind="gemm", flops=2.0 * m * n * k / parts, hbm_bytes=io * elem, deps=deps,
        gemm=shape, dtype=ctx.dtype, sm_fraction=sm_fraction, tag=_tag(ctx, phase), scaling=ctx.scaling,
        concurrent=min(parts, UB_MAX_STREAMS),
        fill_bytes=out, fill_kernels=1 if fill else 0))


def _coll(pb: ProgramBuilder, ctx: TPContext, name: str, phase: Phase, op: CollectiveKind, size: int,
          deps: tuple[int, ...], stream: str = "") -> int:
    dtype = "fp8" if (ctx.dtype == "fp8" and op == "allgather") else ("bf16" if ctx.dtype == "fp8" else ctx.dtype)
    return pb.add(CommOp(name=name, op=op, axes=AXES, size_bytes=size, deps=deps, dtype=dtype,
                         tag=_tag(ctx, phase), stream=stream))


def _key(ctx: TPContext, label: str, step: int) -> str:
    """A ring-exchange step's key; its micro-batch is its tag's (``ir.transfer_key``)."""
    return f"{layer_key('tp', ctx.layer)}.{label}.step{step}"


# ---------------------------------------------------------------------------------------------
# the two overlapped patterns: AllGather feeding a GEMM, GEMM feeding a ReduceScatter


def _allgather_gemm(pb: ProgramBuilder, ctx: TPContext, label: str, phase: Phase,
                    n: int, k: int, after: int, method: Method, gemm: str = "") -> int:
    """AllGather of the sequence-sharded input (A), then the GEMM (m = b·s, n, k) that consumes it,
    run with ``method`` (nccl | pipeline | ring_exchange). Returns the last GEMM op."""
    m, t = ctx.tokens, ctx.tp
    if method == "pipeline":
        last = after
        for i in range(UB_NUM_SPLITS):
            ag = _coll(pb, ctx, f"{label}.ag{i}", phase, "allgather", ctx.ag_bytes // UB_NUM_SPLITS, (after,))
            last = _gemm(pb, ctx, f"{label}.gemm{i}", phase, m, n, k, (ag,),
                         parts=UB_NUM_SPLITS, sm_fraction=ctx.ub_sm_fraction(gemm))
        return last
    if method == "ring_exchange":
        # split_overlap_ag: step i multiplies the chunk held now and forwards it to tp+1 while
        # receiving the next one from tp−1; the next GEMM chunk waits on that receive.
        chunk = ctx.ag_bytes // t
        ready, sm, last = after, ctx.sm_fraction(UB_RING_EXCHANGE_SMS), after
        for i in range(t):
            if i < t - 1:
                key = _key(ctx, label, i)
                xfer = pb.add(P2POp(
                    name=f"{label}.sendrecv{i}", sends=(Transfer("tp", +1, chunk, key, UB),),
                    recvs=(Transfer("tp", -1, chunk, key, UB),), deps=(ready,), stream="tp", tag=_tag(ctx, phase)))
            last = _gemm(pb, ctx, f"{label}.gemm{i}", phase, m, n, k, (ready,), parts=t, sm_fraction=sm)
            if i < t - 1:
                ready = xfer
        return last
    ag = _coll(pb, ctx, f"{label}.ag", phase, "allgather", ctx.ag_bytes, (after,))
    return _gemm(pb, ctx, f"{label}.gemm", phase, m, n, k, (ag,))


def _gemm_reducescatter(pb: ProgramBuilder, ctx: TPContext, label: str, phase: Phase,
                        k: int, after: int, method: Method, gemm: str = "") -> int:
    """GEMM (m = b·s, n = h, k) producing partial sums, then their ReduceScatter over tp, run with
    ``method`` (nccl | pipeline | ring_exchange). Returns the op after which the reduced,
    sequence-sharded output is ready."""
    m, h, t = ctx.tokens, ctx.hidden, ctx.tp
    if method == "pipeline":
        # split_overlap_rs: the output's N dimension in UB_NUM_SPLITS column blocks; RS of block i
        # starts when GEMM block i is done. RS ops share the tp stream, so the last one ends last.
        # Every GEMM block runs on SMs − UB_COMM_SMS with set_sm_margin (else on every SM). TE
        # gives the last RS, which runs after the last GEMM block, UB_MAX_SM = 32 SMs; a CommOp
        # carries no SM count, so that only matters to the comm cost model's bandwidth, not to
        # the GEMMs here.
        last = after
        for i in range(UB_NUM_SPLITS):
            g = _gemm(pb, ctx, f"{label}.gemm{i}", phase, m, h, k, (after,),
                      parts=UB_NUM_SPLITS, split="n", sm_fraction=ctx.ub_sm_fraction(gemm))
            last = _coll(pb, ctx, f"{label}.rs{i}", phase, "reducescatter", ctx.rs_bytes // UB_NUM_SPLITS, (g,))
        return last
    if method == "ring_exchange":
        # CommOverlapP2PBase::split_overlap_rs: step i computes the partial for rank tp+i+1's
        # sequence chunk; from step 1 on the previous partial goes straight to its owner tp+i and
        # the one for us arrives from tp−i. A final kernel sums the t partials (reads A).
        chunk = ctx.rs_bytes // t
        sm = ctx.sm_fraction(UB_RING_EXCHANGE_SMS)
        prev_gemm, xfer = after, after
        for i in range(t):
            g = _gemm(pb, ctx, f"{label}.gemm{i}", phase, m, h, k, (after,), parts=t, sm_fraction=sm)
            if i >= 1:
                key = _key(ctx, label, i)
                xfer = pb.add(P2POp(
                    name=f"{label}.sendrecv{i}", sends=(Transfer("tp", +i, chunk, key, UB),),
                    recvs=(Transfer("tp", -i, chunk, key, UB),), deps=(prev_gemm,), stream="tp",
                    tag=_tag(ctx, phase)))
            prev_gemm = g
        return pb.add(ComputeOp(
            name=f"{label}.reduce", kind="elementwise", hbm_bytes=ctx.rs_bytes + chunk,
            deps=(prev_gemm, xfer), tag=_tag(ctx, phase)))
    g = _gemm(pb, ctx, f"{label}.gemm", phase, m, h, k, (after,))
    if t == 1:
        return g
    op: CollectiveKind = "reducescatter" if ctx.sp else "allreduce"
    return _coll(pb, ctx, f"{label}.{'rs' if ctx.sp else 'ar'}", phase, op, ctx.rs_bytes, (g,))


# ---------------------------------------------------------------------------------------------
# the four public building blocks


def column_parallel_fwd(pb: ProgramBuilder, ctx: TPContext, name: str, n_out_local: int, after: int) -> int:
    """Y = X·W with W split by columns: (SP) AllGather X, then GEMM (b·s, n_out_local, h)."""
    label = f"L{ctx.layer}.{name}.fwd"
    if not ctx.sp:
        return _gemm(pb, ctx, f"{label}.gemm", "fwd", ctx.tokens, n_out_local, ctx.hidden, (after,))
    return _allgather_gemm(pb, ctx, label, "fwd", n_out_local, ctx.hidden, after,
                           ctx.method(f"{name}_fprop", "ag_gemm"), f"{name}_fprop")


def row_parallel_fwd(pb: ProgramBuilder, ctx: TPContext, name: str, k_in_local: int, after: int) -> int:
    """Y = X·W with W split by rows: GEMM (b·s, h, k_in_local), then ReduceScatter (SP) or
    AllReduce of the partial sums."""
    return _gemm_reducescatter(pb, ctx, f"L{ctx.layer}.{name}.fwd", "fwd", k_in_local, after,
                               ctx.method(f"{name}_fprop", "gemm_rs"), f"{name}_fprop")


def column_parallel_bwd(pb: ProgramBuilder, ctx: TPContext, name: str, n_out_local: int, after: int) -> int:
    """dX = dY·Wᵀ (dgrad) reduced over tp; dW = dYᵀ·X (wgrad).

    Follows ``LinearWithGradAccumulationAndAsyncCommunication.backward``: the re-gather of the saved
    sharded input is launched before the dgrad GEMM and overlaps it; the reduction of dX is
    launched after dgrad and overlaps wgrad. TE's ``bulk`` method runs the same pairs concurrently
    with the GEMM on ``SMs − 16``; the method is looked up per GEMM (dgrad: the re-gather, wgrad:
    the ReduceScatter of dX).
    """
    label = f"L{ctx.layer}.{name}.bwd"
    m, h, t = ctx.tokens, ctx.hidden, ctx.tp
    dgrad_sm = ctx.ub_sm_fraction(f"{name}_dgrad") if ctx.method(f"{name}_dgrad", "bulk") == "bulk" else 1.0
    wgrad_sm = ctx.ub_sm_fraction(f"{name}_wgrad") if ctx.method(f"{name}_wgrad", "bulk") == "bulk" else 1.0
    if t == 1:
        _gemm(pb, ctx, f"{label}.dgrad", "bwd", m, h, n_out_local, (after,))
        return _gemm(pb, ctx, f"{label}.wgrad", "bwd", n_out_local, h, m, (after,), wgrad=True)
    if not ctx.sp:
        dgrad = _gemm(pb, ctx, f"{label}.dgrad", "bwd", m, h, n_out_local, (after,))
        if not ctx.async_allreduce:  # autograd: the linear's backward (dgrad, wgrad), then the copy's AllReduce
            wgrad = _gemm(pb, ctx, f"{label}.wgrad", "bwd", n_out_local, h, m, (dgrad,), wgrad=True)
            return _coll(pb, ctx, f"{label}.ar", "bwd", "allreduce", ctx.rs_bytes, (dgrad, wgrad))
        ar = _coll(pb, ctx, f"{label}.ar", "bwd", "allreduce", ctx.rs_bytes, (dgrad,))
        _gemm(pb, ctx, f"{label}.wgrad", "bwd", n_out_local, h, m, (after,), wgrad=True)
        return ar
    dgrad_method = ctx.method(f"{name}_dgrad", "bulk")
    if dgrad_method in ("pipeline", "ring_exchange"):
        # TE's ub_overlap_rs_dgrad (module docstring): NCCL re-gathers the input on a stream of its
        # own beside the dgrad GEMM, which reduces its output chunk by chunk through Userbuffers.
        ag = _coll(pb, ctx, f"{label}.ag", "bwd", "allgather", ctx.ag_bytes, (after,), stream=NCCL_BESIDE_UB)
        rs = _gemm_reducescatter(pb, ctx, f"{label}.dgrad", "bwd", n_out_local, after, dgrad_method, f"{name}_dgrad")
        _gemm(pb, ctx, f"{label}.wgrad", "bwd", n_out_local, h, m, (ag,), wgrad=True)
        return rs
    ag = _coll(pb, ctx, f"{label}.ag", "bwd", "allgather", ctx.ag_bytes, (after,))
    dgrad = _gemm(pb, ctx, f"{label}.dgrad", "bwd", m, h, n_out_local, (after,), sm_fraction=dgrad_sm)
    rs = _coll(pb, ctx, f"{label}.rs", "bwd", "reducescatter", ctx.rs_bytes, (dgrad, ag))
    _gemm(pb, ctx, f"{label}.wgrad", "bwd", n_out_local, h, m, (ag,), sm_fraction=wgrad_sm, wgrad=True)
    return rs


def row_parallel_bwd(pb: ProgramBuilder, ctx: TPContext, name: str, k_in_local: int, after: int) -> int:
    """(SP) AllGather of the sequence-sharded output gradient dY, then dgrad (b·s, k_in_local, h)
    and wgrad (h, k_in_local, b·s); wgrad reuses the gathered dY (TE ``external`` method)."""
    label = f"L{ctx.layer}.{name}.bwd"
    m, h = ctx.tokens, ctx.hidden
    if ctx.sp:
        dgrad = _allgather_gemm(pb, ctx, f"{label}.dgrad", "bwd", k_in_local, h, after,
                                ctx.method(f"{name}_dgrad", "ag_gemm"), f"{name}_dgrad")
    else:
        dgrad = _gemm(pb, ctx, f"{label}.dgrad.gemm", "bwd", m, k_in_local, h, (after,))
    return _gemm(pb, ctx, f"{label}.wgrad", "bwd", h, k_in_local, m, (dgrad,), wgrad=True)

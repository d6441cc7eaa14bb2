"""The attention core of one layer on one rank, and the interface every sequence-parallel
attention pattern (Ulysses, Ring Attention, Megatron CP) implements.

A pattern module exposes two functions with the signature of :func:`local_forward` and
:func:`local_backward`: given a :class:`ProgramBuilder`, an :class:`AttentionContext` and the
index of the op that produced q, k, v (forward) or the output gradient (backward), they append
their ops and return the index of the op after which the attention output (forward) or dq, dk,
dv (backward) are ready. The transformer layer builder calls the one the plan selects, in place
of the plain local attention below.

FLOPs of attention for b sequences of length s_q attending to s_k keys, with `heads` query heads
of size d: QK^T and PV are each 2·b·heads·s_q·s_k·d FLOPs (4·b·heads·s_q·s_k·d forward); causal
masking computes about half the score matrix; backward is 2.5x forward in FlashAttention-2
(arXiv:2307.08691 §3.2: 5 matmuls instead of 2, one of them the recomputed QK^T).
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.schedule.ir import ComputeKind, ComputeOp, Phase, ProgramBuilder, Tag

FLASH_BWD_FACTOR = 2.5


@dataclass(frozen=True)
class AttentionContext:
    """Local shapes on one rank for one layer and one micro-batch.

    ``seq`` is the full sequence length of the model; ``seq_local`` the number of query tokens
    this rank holds before attention (seq / cp / ulysses; sequence parallelism of TP does not
    shard attention). ``heads`` and ``kv_heads`` are per TP rank.
    """

    micro_batch_size: int  # sequences per micro-batch (the scenario's training.micro_batch)
    seq: int
    seq_local: int
    heads: int  # query heads on this TP rank
    kv_heads: int  # key/value heads on this TP rank (GQA)
    head_dim: int
    dtype_bytes: int
    causal: bool
    cp: int  # context-parallel degree (ring / Megatron CP)
    cp_rank: int  # this rank's index on the cp axis
    ulysses: int  # DeepSpeed-Ulysses degree
    cp_comm: str  # ring | p2p | all_gather | a2a | a2a+p2p
    layer: int
    mb_index: int  # which micro-batch of the step this op belongs to, 0 .. n_micro - 1
    dtype: str = "bf16"
    cp_a2a: int | None = None  # a2a+p2p: All-to-All degree (None: derived, see context_parallel)
    kernel: str = ""  # fused attention kernel (flash2 | flash3; "": the GPU's default)

    @property
    def q_bytes(self) -> int:
        """Bytes of this rank's local query block (b·s_local·heads·d)."""
        return self.micro_batch_size * self.seq_local * self.heads * self.head_dim * self.dtype_bytes

    @property
    def kv_bytes(self) -> int:
        """Bytes of this rank's local key plus value blocks (2·b·s_local·kv_heads·d)."""
        return 2 * self.micro_batch_size * self.seq_local * self.kv_heads * self.head_dim * self.dtype_bytes


def attention_flops(b: int, heads: int, s_q: int, s_k: int, d: float, causal_fraction: float = 1.0) -> float:
    """Forward FLOPs of softmax(QK^T)V for b sequences: 4·b·heads·s_q·s_k·d, times the computed fraction."""
    return 4.0 * b * heads * s_q * s_k * d * causal_fraction


def causal_fraction_diagonal(s: int) -> float:
    """Computed fraction of an s×s causal block (the diagonal included): (s+1)/(2s)."""
    return (s + 1) / (2 * s)


def local_forward(pb: ProgramBuilder, ctx: AttentionContext, after: int) -> int:
    """No sequence sharding of attention: one FlashAttention kernel over the whole sequence."""
    frac = causal_fraction_diagonal(ctx.seq) if ctx.causal else 1.0
    return pb.add(ComputeOp(
        name=f"L{ctx.layer}.attn.core.fwd", kind="attention",
        flops=attention_flops(ctx.micro_batch_size, ctx.heads, ctx.seq, ctx.seq, ctx.head_dim, frac),
        hbm_bytes=ctx.q_bytes * 2 + ctx.kv_bytes, deps=(after,), dtype=ctx.dtype, causal_fraction=frac,
        tag=Tag("fwd", ctx.layer, ctx.mb_index), attention_kernel=ctx.kernel))


def local_backward(pb: ProgramBuilder, ctx: AttentionContext, after: int) -> int:
    frac = causal_fraction_diagonal(ctx.seq) if ctx.causal else 1.0
    return pb.add(ComputeOp(
        name=f"L{ctx.layer}.attn.core.bwd", kind="attention",
        flops=FLASH_BWD_FACTOR * attention_flops(ctx.micro_batch_size, ctx.heads, ctx.seq, ctx.seq, ctx.head_dim, frac),
        hbm_bytes=(ctx.q_bytes * 2 + ctx.kv_bytes) * 2, deps=(after,), dtype=ctx.dtype, causal_fraction=frac,
        tag=Tag("bwd", ctx.layer, ctx.mb_index), attention_kernel=ctx.kernel))


# ---------------------------------------------------------------------------------------------
# attention without FlashAttention (training.attention: unfused)
#
# Megatron-LM's CoreAttention before FlashAttention (2020-2022, also Megatron-DeepSpeed/BLOOM)
# materialises the b·a·s² score matrix: baddbmm QK^T, one fused scale-mask-softmax kernel
# (megatron/fused_kernels/scaled_upper_triang_masked_softmax), attention dropout, bmm with V.
# FlashAttention (arXiv:2205.14135 §2.2, Algorithm 0) counts exactly this HBM traffic: the
# score and probability matrices are written and read back between the kernels, Θ(s²) per
# head, which is what FlashAttention removes. The GEMMs compute the whole s×s block (the causal
# mask is applied inside the softmax), so no causal halving; with k = head_dim the batched
# GEMMs have an arithmetic intensity of about head_dim FLOP/byte and are HBM-bound on A100/H100,
# which the roofline of costs.compute captures through hbm_bytes.

ATTENTION_DROPOUT_MASK_BYTES = 1  # torch's dropout keeps a bool (uint8) mask per element


def _score_elems(ctx: AttentionContext) -> int:
    """Elements of the local score matrix, b·a·s_q·s_k."""
    return ctx.micro_batch_size * ctx.heads * ctx.seq * ctx.seq


def _unfused(pb: ProgramBuilder, ctx: AttentionContext, name: str, kind: ComputeKind, flops: float,
             hbm_bytes: float, after: int, phase: Phase) -> int:
    return pb.add(ComputeOp(name=f"L{ctx.layer}.attn.{name}", kind=kind, flops=flops, hbm_bytes=hbm_bytes,
                            deps=(after,), dtype=ctx.dtype, tag=Tag(phase, ctx.layer, ctx.mb_index)))


def unfused_forward(pb: ProgramBuilder, ctx: AttentionContext, after: int) -> int:
    """QK^T → scale/mask/softmax → dropout → ·V, four kernels with the scores in HBM."""
    B, S = ctx.dtype_bytes, _score_elems(ctx)
    half = attention_flops(ctx.micro_batch_size, ctx.heads, ctx.seq, ctx.seq, ctx.head_dim) / 2
    qk_bytes = ctx.q_bytes + ctx.kv_bytes / 2 * ctx.heads / max(ctx.kv_heads, 1)  # K expanded to all heads
    i = _unfused(pb, ctx, "scores.fwd", "gemm", half, qk_bytes + S * B, after, "fwd")
    i = _unfused(pb, ctx, "softmax.fwd", "elementwise", 5.0 * S, 2 * S * B, i, "fwd")
    i = _unfused(pb, ctx, "dropout.fwd", "elementwise", 2.0 * S, S * (2 * B + ATTENTION_DROPOUT_MASK_BYTES), i, "fwd")
    return _unfused(pb, ctx, "context.fwd", "gemm", half, S * B + 2 * ctx.q_bytes, i, "fwd")


def unfused_backward(pb: ProgramBuilder, ctx: AttentionContext, after: int) -> int:
    """The reverse: dV and dP (two GEMMs reading P, writing dP), dropout and softmax backward
    (softmax' reads y and dy, writes dx), dQ and dK (two GEMMs reading dS)."""
    B, S = ctx.dtype_bytes, _score_elems(ctx)
    half = attention_flops(ctx.micro_batch_size, ctx.heads, ctx.seq, ctx.seq, ctx.head_dim) / 2
    i = _unfused(pb, ctx, "context.bwd", "gemm", 2 * half, 2 * S * B + 3 * ctx.q_bytes, after, "bwd")
    i = _unfused(pb, ctx, "dropout.bwd", "elementwise", 1.0 * S, S * (2 * B + ATTENTION_DROPOUT_MASK_BYTES), i, "bwd")
    i = _unfused(pb, ctx, "softmax.bwd", "elementwise", 3.0 * S, 3 * S * B, i, "bwd")
    return _unfused(pb, ctx, "scores.bwd", "gemm", 2 * half, 2 * S * B + 4 * ctx.q_bytes, i, "bwd")

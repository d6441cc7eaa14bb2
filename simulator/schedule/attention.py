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

from simulator.config.hardware import GPU
from simulator.config.workload import Training
from simulator.schedule.ir import ComputeKind, ComputeOp, Phase, ProgramBuilder, Tag

FLASH_BWD_FACTOR = 2.5


def resolve_kernel(gpu: GPU, training: Training) -> str:
    """The attention kernel the layers run: ``training.attention`` as the profile resolves it
    (:meth:`GPU.resolve_attention`), except where TransformerEngine's backend filter turns the
    default away for this run.

    ``auto`` is what TransformerEngine picks. On Blackwell (sm100 and later) its cuDNN backend
    (``F16_arbitrary_seqlen``) serves a deterministic training backward only without dropout and
    bias (``nvte_get_fused_attn_backend``, transformer_engine/common/fused_attn/fused_attn.cpp,
    "determinism on Blackwell": from TE 27fc168e2, 2026-01, with cuDNN >= 9.18.1; never before it),
    and FlashAttention-3 and -4 take no dropout at all (``get_attention_backend``, "Filter:
    Dropout"). A deterministic run with an attention dropout (``training.deterministic`` with
    ``fused_attention_dropout``: Megatron's ``--deterministic-mode`` at its default attention
    dropout of 0.1) therefore runs FlashAttention-2, deterministic from flash-attn 2.4.1 on, with
    no Blackwell-specific (tcgen05) path: ``flash2`` at the profile's rate, its deterministic
    backward priced by costs/attention_determinism.py. A profile without a ``flash2`` rate keeps
    its default."""
    kernel = gpu.resolve_attention(training.attention)
    if (training.attention == "auto" and gpu.arch == "blackwell" and training.deterministic
            and training.fused_attention_dropout and "flash2" in gpu.attention_efficiency):
        return "flash2"
    return kernel


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
    cp_qkv_format: str = "sbhd"  # p2p: the layout TE's CP attention runs in (sbhd | bshd, see context_parallel)
    kernel: str = ""  # fused attention kernel (flash2 | flash3; "": the GPU's default)
    eager: bool = False  # unfused attention in PyTorch ops (training.fused_kernels false)
    dropout: bool = True  # attention dropout active (training.dropout)
    alibi: bool = False  # ALiBi bias added to the scores (model.position_embedding alibi)
    deterministic: bool = False  # the fused backward runs its deterministic algorithm (training.deterministic)
    fused_dropout: bool = False  # the fused kernel draws the attention dropout (training.fused_attention_dropout)
    softmax: str = "fused"  # unfused attention's scale-mask-softmax: fused | torch (training.masked_softmax)
    window: int = 0  # keys each query sees, itself included, in a sliding-window layer (model.sliding_window); 0: all before it
    sink_rescale: bool = False  # the sinks applied after the kernel (model.attention_sinks, training.attention_sink_kernel)
    fill: bool = False  # the fused kernel's outputs are filled with NaN first (training.torch_deterministic)

    @property
    def deterministic_heads(self) -> int:
        """``ComputeOp.deterministic_heads`` of this layer's backward kernels: sequences x query
        heads on this rank when the backward is deterministic, else 0."""
        return self.micro_batch_size * self.heads if self.deterministic else 0

    @property
    def q_bytes(self) -> int:
        """Bytes of this rank's local query block (b·s_local·heads·d)."""
        return self.micro_batch_size * self.seq_local * self.heads * self.head_dim * self.dtype_bytes

    def kernel_shape(self, s_q: int | None = None, s_k: int | None = None,
                     causal: bool | None = None) -> tuple[int, int, int, bool]:
        """``ComputeOp.attention_shape`` of one fused kernel of this layer: the whole sequence by
        default, or the query and key lengths (and masking) of one chunk of it."""
        return (self.seq if s_q is None else s_q, self.seq if s_k is None else s_k, self.head_dim,
                self.causal if causal is None else causal)

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


def window_fraction(s: int, window: int) -> float:
    """Computed fraction of an s×s causal block whose query i sees only the ``window`` keys up
    to and including itself (i − W < j ≤ i; Mistral's and GPT-OSS's sliding window, Megatron-Core
    ``window_size = (W − 1, 0)``): W(W+1)/2 + (s − W)·W of s² scores, cuDNN's own count in its
    sliding-window benchmarks. A window of s or more is plain causal masking."""
    if window <= 0 or window >= s:
        return causal_fraction_diagonal(s)
    return (window * (window + 1) / 2 + (s - window) * window) / (s * s)


def _local_fraction(ctx: AttentionContext) -> float:
    if not ctx.causal:
        return 1.0
    return window_fraction(ctx.seq, ctx.window)


# Attention sinks outside the kernel (training.attention_sink_kernel: rescale). NeMo AutoModel's
# FlexAttention has no sink, so GPT-OSS's layers run the kernel without it and rescale its output
# (nemo_automodel/components/attention/flex_attention.py, FlexAttention.forward): s = sigmoid(lse −
# w_h) over the (b, h, s) log-sum-exps, then out * s, which type promotion makes fp32, cast back to
# bf16. Per element of the output (b·s·h·d, B bytes): the multiply reads B and writes 4, the cast
# reads 4 and writes B; per row the subtraction and the sigmoid read and write 4 bytes each; 4
# kernels. Backward: the cast's gradient to fp32 (read B, write 4), the multiply's gradient for
# the output (an fp32 product, read 4, write 4, cast back: read 4, write B) and for the scale (the
# fp32 product with the output, read 4 + B, write 4, summed over d: read 4); per row the sigmoid's
# and the subtraction's gradients (read and write 4 bytes, twice); 7 kernels.
SINK_FWD_KERNELS, SINK_BWD_KERNELS = 4, 7


def sink_rescale_bytes(ctx: AttentionContext, backward: bool) -> float:
    """HBM bytes of the sink rescale around one layer's local kernel over ``ctx.seq`` tokens and
    ``ctx.heads`` heads (module comment above)."""
    B = ctx.dtype_bytes
    elements = ctx.micro_batch_size * ctx.seq * ctx.heads * ctx.head_dim
    rows = ctx.micro_batch_size * ctx.seq * ctx.heads
    if backward:
        return elements * ((B + 4) + (8 + 4 + B) + (4 + B + 4 + 4)) + rows * 16
    return elements * ((B + 4) + (4 + B)) + rows * 16


def _sink_rescale(pb: ProgramBuilder, ctx: AttentionContext, dep: int, phase: Phase) -> int:
    if not ctx.sink_rescale:
        return dep
    backward = phase == "bwd"
    nbytes = sink_rescale_bytes(ctx, backward)
    return pb.add(ComputeOp(name=f"L{ctx.layer}.attn.sink_rescale.{phase}", kind="elementwise", flops=nbytes / 2,
                            hbm_bytes=nbytes, deps=(dep,), count=SINK_BWD_KERNELS if backward else SINK_FWD_KERNELS,
                            tag=Tag(phase, ctx.layer, ctx.mb_index)))


def local_forward(pb: ProgramBuilder, ctx: AttentionContext, after: int) -> int:
    """No sequence sharding of attention: one FlashAttention kernel over the whole sequence."""
    frac = _local_fraction(ctx)
    core = pb.add(ComputeOp(
        name=f"L{ctx.layer}.attn.core.fwd", kind="attention",
        flops=attention_flops(ctx.micro_batch_size, ctx.heads, ctx.seq, ctx.seq, ctx.head_dim, frac),
        hbm_bytes=ctx.q_bytes * 2 + ctx.kv_bytes, deps=(after,), dtype=ctx.dtype, causal_fraction=frac,
        tag=Tag("fwd", ctx.layer, ctx.mb_index), attention_kernel=ctx.kernel, attention_shape=ctx.kernel_shape(),
        attention_window=ctx.window if ctx.causal else 0, attention_dropout=ctx.fused_dropout,
        fill_bytes=float(ctx.q_bytes) if ctx.fill else 0.0, fill_kernels=1 if ctx.fill else 0))
    return _sink_rescale(pb, ctx, core, "fwd")


def local_backward(pb: ProgramBuilder, ctx: AttentionContext, after: int) -> int:
    frac = _local_fraction(ctx)
    after = _sink_rescale(pb, ctx, after, "bwd")
    return pb.add(ComputeOp(
        name=f"L{ctx.layer}.attn.core.bwd", kind="attention",
        flops=FLASH_BWD_FACTOR * attention_flops(ctx.micro_batch_size, ctx.heads, ctx.seq, ctx.seq, ctx.head_dim, frac),
        hbm_bytes=(ctx.q_bytes * 2 + ctx.kv_bytes) * 2, deps=(after,), dtype=ctx.dtype, causal_fraction=frac,
        tag=Tag("bwd", ctx.layer, ctx.mb_index), attention_kernel=ctx.kernel, attention_shape=ctx.kernel_shape(),
        attention_window=ctx.window if ctx.causal else 0, deterministic_heads=ctx.deterministic_heads,
        attention_dropout=ctx.fused_dropout,  # dQ, dK and dV filled where ctx.fill
        fill_bytes=float(ctx.q_bytes + ctx.kv_bytes) if ctx.fill else 0.0, fill_kernels=3 if ctx.fill else 0))


# ---------------------------------------------------------------------------------------------
# attention without FlashAttention (training.attention: unfused)
#
# Megatron-LM's CoreAttention before FlashAttention (2020-2022, also Megatron-DeepSpeed/BLOOM)
# materialises the b·a·s² score matrix: baddbmm QK^T, one fused scale-mask-softmax kernel
# (megatron/fused_kernels/scaled_upper_triang_masked_softmax), attention dropout, bmm with V.
# FlashAttention (arXiv:2205.14135 §2.2, Algorithm 0) counts exactly this HBM traffic: the
# score and probability matrices are written and read back between the kernels, Θ(s²) per
# head, which is what FlashAttention removes. The GEMMs compute the whole s×s block (the causal
# mask is applied inside the softmax), so no causal halving. Each is b·a GEMMs of one head's shape
# in one batched call, priced by that shape (costs/gemm_shape.py), not as one large GEMM of the
# same FLOPs: QK^T and dP = dO·V^T are s×s×d, whose k-loop of d steps is shorter than a tile's
# prologue and epilogue (gemm_shape.K_OVERHEAD = 167 steps), so at d = 128 they run at about a
# third of the plateau, slower than their HBM traffic; P·V, dV, dQ and dK are s×d×s, HBM-bound on
# reading the s×s operand (costs.compute takes the slower of the two through hbm_bytes). Checked
# against Megatron's attention on an A100-40GB in the FlashAttention paper's appendix tables
# (data/kernels/flashattention_paper_a100_unfused_attention.csv, tests/unit/test_unfused_attention_bench.py).

ATTENTION_DROPOUT_MASK_BYTES = 1  # torch's dropout keeps a bool (uint8) mask per element


def _score_elems(ctx: AttentionContext) -> int:
    """Elements of the local score matrix, b·a·s_q·s_k."""
    return ctx.micro_batch_size * ctx.heads * ctx.seq * ctx.seq


def _unfused(pb: ProgramBuilder, ctx: AttentionContext, name: str, kind: ComputeKind, flops: float,
             hbm_bytes: float, after: int, phase: Phase, count: int = 1,
             gemm: tuple[int, int, int] | None = None) -> int:
    return pb.add(ComputeOp(name=f"L{ctx.layer}.attn.{name}", kind=kind, flops=flops, hbm_bytes=hbm_bytes,
                            deps=(after,), dtype=ctx.dtype, tag=Tag(phase, ctx.layer, ctx.mb_index), count=count,
                            gemm=gemm))


def _score_gemm(ctx: AttentionContext) -> tuple[int, int, int]:
    """One head's GEMM that produces an s×s matrix from head_dim-deep operands (QK^T, dP = dO·V^T)."""
    return (ctx.seq, ctx.seq, ctx.head_dim)


def _context_gemm(ctx: AttentionContext) -> tuple[int, int, int]:
    """One head's GEMM that contracts an s×s matrix to head_dim columns (P·V, dV, dQ, dK)."""
    return (ctx.seq, ctx.head_dim, ctx.seq)


# Megatron-LM of Sep 2020 ran the same core in PyTorch ops (megatron/model/transformer.py,
# ``ParallelSelfAttention``; its fused kernels came later): q and k each divided by
# sqrt(norm_factor) (two elementwise kernels), torch.matmul, the causal mask as an in-place
# ``masked_fill_`` on the scores (gpt2_model.py ``gpt2_attention_mask_func``: one more pass over
# them, and its backward one more), ``torch.nn.Softmax``, dropout, torch.matmul, and the context
# permuted back with ``.contiguous()`` (a copy). PyTorch's softmax keeps a row in registers when
# it has at most 1,024 elements of at most 4 KB (one read, one write; aten/src/ATen/native/cuda/
# SoftMax.cu, ``dispatch_softmax_forward``); longer rows are read for the max, the sum and the
# output: four passes.

PERSISTENT_SOFTMAX_MAX = 1024  # elements of a row PyTorch's warp softmax holds in registers


def _scale_qk(pb: ProgramBuilder, ctx: AttentionContext, after: int, phase: Phase) -> int:
    """Eager Megatron-LM 2020's division of q and of k by sqrt(norm_factor): two elementwise
    kernels, each reading and writing its tensor (their gradients the same in backward)."""
    return _unfused(pb, ctx, f"scale_qk.{phase}", "elementwise", 0.0, 2 * (ctx.q_bytes + ctx.kv_bytes // 2), after,
                    phase, 2)


def _eager_softmax_passes(ctx: AttentionContext, elem_bytes: int | None = None) -> int:
    """HBM passes over the scores of PyTorch's own softmax forward (read + write, or three reads
    and a write when the row does not fit the warp kernel; its backward then reads the gradient
    and the output twice and writes: five instead of three), on elements of ``elem_bytes``
    (default: the activations')."""
    row_bytes = ctx.seq * (ctx.dtype_bytes if elem_bytes is None else elem_bytes)
    return 2 if ctx.seq <= PERSISTENT_SOFTMAX_MAX and row_bytes <= 4096 else 4


# Megatron's FusedScaleMaskSoftmax (megatron/model/fused_softmax.py) runs its fused kernel only when
# ``is_kernel_available`` holds for the rank's [b, np, sq, sk] scores; otherwise
# ``forward_torch_softmax`` runs the same three steps in PyTorch ops. With
# ``apply_query_key_layer_scaling`` (Megatron's default: ``--no-query-key-layer-scaling`` is a
# store_false) the softmax is in fp32 and scaled by the layer number: ``input.float()``,
# ``input * self.scale``, the mask function's in-place ``masked_fill_(mask, -10000.0)``
# (megatron/model/utils.py attention_mask_func; the [1, 1, s, s] bool mask stays in L2),
# ``torch.nn.Softmax`` on fp32 rows (a 2,048-long row is 8 KB, past the 4 KB the warp kernel holds:
# three reads and a write), and ``probs.half()`` / ``.bfloat16()``. Autograd runs the reverse:
# the cast of the incoming gradient to fp32, softmax's backward (five passes on such rows), the
# masked_fill's and the multiply's backward (a read and a write each), the cast back.
# The fused kernel (scaled_upper_triang_masked_softmax) reads the scores once and writes the
# probabilities once in the activations' dtype (backward: two reads, one write).

def _megatron_batch_per_block(key_len: int) -> int:
    """``get_batch_per_block`` of Megatron's scaled_masked_softmax.h: rows a 128-thread block of
    the warp softmax takes, from the next power of two of the key length."""
    pow2 = 1 << max(0, (key_len - 1).bit_length())
    warp_size = min(pow2, 32)
    batches_per_warp = 2 if pow2 <= 128 else 1
    return (128 // warp_size) * batches_per_warp


def megatron_fused_softmax_available(micro_batch: int, heads: int, seq: int, *, max_seq: int = 2048,
                                     swapped_batch_per_block: bool = False) -> bool:
    """Whether Megatron's ``FusedScaleMaskSoftmax.is_kernel_available`` takes the fused causal
    kernel for ``micro_batch`` sequences of ``seq`` tokens and ``heads`` heads on the rank (fp16
    or bf16 scores, a mask given): 16 < s <= ``max_seq`` (2,048 until Megatron-LM's kernels took
    4,096 in 2022), s % 4 == 0, b·np % 4 == 0 and b·np a multiple of the kernel's rows per block.

    ``swapped_batch_per_block``: Megatron-DeepSpeed from 9f5f5d4c (2021-10-21, "fused softmax
    layer bug fix sync") to 1cb76a64 (2022-03-06, "sync the whole Meg-LM fused_kernels
    sub-tree") declares ``get_batch_per_block(b, np, sq, sk)`` but calls it as
    ``self.get_batch_per_block(sq, sk, b, np)``, and the method passes ``(sq, sk, b, np)`` on to the
    CUDA ``get_batch_per_block(query_seq_len, key_seq_len, batches, attn_heads)``: the rows per
    block are then those of a key length equal to the heads on the rank, np, instead of s. At
    TP 8 with 64 heads (np = 8: 32 rows per block) only b·np multiples of 32 pass, micro-batches
    of 4 and 8, not 1, 2 or 6. The swap is Megatron-LM's 40becfc9 (2021-08-13), which upstream
    fixed the same day (0d350c8d, "fix bugs in fused softmax"; microsoft/Megatron-DeepSpeed has
    the fix): only BigScience's fork ran it for months."""
    attn_batches = micro_batch * heads
    if not (16 < seq <= max_seq and seq % 4 == 0 and attn_batches % 4 == 0):
        return False
    return attn_batches % _megatron_batch_per_block(heads if swapped_batch_per_block else seq) == 0


def _torch_softmax_bytes(ctx: AttentionContext, phase: Phase) -> int:
    """Bytes per score element of ``forward_torch_softmax`` (above) and of its backward."""
    B = ctx.dtype_bytes
    persistent = _eager_softmax_passes(ctx, 4) == 2
    if phase == "fwd":  # float(), * scale, masked_fill_, softmax, cast back
        return (B + 4) + 8 + 8 + (2 if persistent else 4) * 4 + (4 + B)
    return (B + 4) + (3 if persistent else 5) * 4 + 8 + 8 + (4 + B)


TORCH_SOFTMAX_KERNELS = 5  # the cast, the scale, the mask, the softmax, the cast back (each way)


def _softmax(pb: ProgramBuilder, ctx: AttentionContext, phase: Phase, flops: float, passes: int, after: int) -> int:
    """The softmax of materialised scores: Megatron's PyTorch fallback (``training.masked_softmax:
    torch`` with fused kernels on) as its :data:`TORCH_SOFTMAX_KERNELS` kernels moving
    :func:`_torch_softmax_bytes`, otherwise one kernel of ``passes`` passes over the scores."""
    S = _score_elems(ctx)
    if ctx.softmax == "torch" and not ctx.eager:
        return _unfused(pb, ctx, f"softmax.{phase}", "elementwise", flops, _torch_softmax_bytes(ctx, phase) * S, after,
                        phase, count=TORCH_SOFTMAX_KERNELS)
    return _unfused(pb, ctx, f"softmax.{phase}", "elementwise", flops, passes * S * ctx.dtype_bytes, after, phase)


# ALiBi on materialised scores: Megatron-DeepSpeed's ParallelAttention (BLOOM; bigscience-workshop/
# Megatron-DeepSpeed megatron/model/transformer.py) starts the scores from the bias,
# ``matmul_result = alibi[:b·np, :, :sk]`` (shape [b·np, 1, sk], broadcast over the query rows) and
# ``torch.baddbmm(matmul_result, q, k^T, beta=beta, alpha=1/norm_factor)`` with beta != 0.
# PyTorch's baddbmm copies the broadcast input into the output before the GEMM when beta != 0
# (aten/src/ATen/native/LinearAlgebra.cpp, common_checks_baddbmm_bmm: ``if (beta != 0)
# result.copy_(self)``; Blas.cpp baddbmm_out_cuda_impl before the structured kernels:
# ``result.resize_as_(self); if (beta != 0) result.copy_(self)``), and cuBLAS's bgemm with beta
# != 0 reads that output back (C = alpha·AB + beta·C): the score matrix is written once more and
# read once more per forward. The bias is a constant, so the backward is unchanged. A fused kernel
# (FlashAttention's alibi_slopes, Triton's attn_bias) adds the bias in registers: no traffic.


def _alibi_bias(pb: ProgramBuilder, ctx: AttentionContext, after: int) -> int:
    """baddbmm's copy of the broadcast ALiBi bias into the score buffer: one write of the
    scores (the [b·np, 1, s] bias read is s times smaller)."""
    B, S = ctx.dtype_bytes, _score_elems(ctx)
    bias_bytes = ctx.micro_batch_size * ctx.heads * ctx.seq * B
    return _unfused(pb, ctx, "alibi_bias.fwd", "copy", 0.0, S * B + bias_bytes, after, "fwd")


def unfused_forward(pb: ProgramBuilder, ctx: AttentionContext, after: int) -> int:
    """QK^T → scale/mask/softmax → dropout → ·V, four kernels with the scores in HBM (in eager
    PyTorch ops, ``ctx.eager``: the q/k scaling, the mask and the context copy as kernels of
    their own, above; no dropout kernel when its p is 0; with ALiBi the bias copied into the
    scores first and read back by the GEMM, above)."""
    B, S = ctx.dtype_bytes, _score_elems(ctx)
    half = attention_flops(ctx.micro_batch_size, ctx.heads, ctx.seq, ctx.seq, ctx.head_dim) / 2
    qk_bytes = ctx.q_bytes + ctx.kv_bytes / 2 * ctx.heads / max(ctx.kv_heads, 1)  # K expanded to all heads
    if ctx.eager:
        after = _scale_qk(pb, ctx, after, "fwd")
    scores_in = 0
    if ctx.alibi:
        after, scores_in = _alibi_bias(pb, ctx, after), S * B
    i = _unfused(pb, ctx, "scores.fwd", "gemm", half, qk_bytes + scores_in + S * B, after, "fwd",
                 gemm=_score_gemm(ctx))
    softmax_passes = 2
    if ctx.eager:
        i = _unfused(pb, ctx, "mask.fwd", "elementwise", 1.0 * S, 2 * S * B, i, "fwd")
        softmax_passes = _eager_softmax_passes(ctx)
    i = _softmax(pb, ctx, "fwd", 5.0 * S, softmax_passes, i)
    if ctx.dropout:
        i = _unfused(pb, ctx, "dropout.fwd", "elementwise", 2.0 * S, S * (2 * B + ATTENTION_DROPOUT_MASK_BYTES), i,
                     "fwd")
    i = _unfused(pb, ctx, "context.fwd", "gemm", half, S * B + 2 * ctx.q_bytes, i, "fwd", gemm=_context_gemm(ctx))
    if ctx.eager:
        i = _unfused(pb, ctx, "context_copy.fwd", "copy", 0.0, 2 * ctx.q_bytes, i, "fwd")
    return i


def unfused_backward(pb: ProgramBuilder, ctx: AttentionContext, after: int) -> int:
    """The reverse: dP = dO·V^T (writes dP) and dV = P^T·dO (reads P), dropout and softmax backward
    (softmax' reads y and dy, writes dx), dQ and dK (two GEMMs reading dS)."""
    B, S = ctx.dtype_bytes, _score_elems(ctx)
    half = attention_flops(ctx.micro_batch_size, ctx.heads, ctx.seq, ctx.seq, ctx.head_dim) / 2
    i = _unfused(pb, ctx, "context_dp.bwd", "gemm", half, S * B + 2 * ctx.q_bytes, after, "bwd", gemm=_score_gemm(ctx))
    i = _unfused(pb, ctx, "context_dv.bwd", "gemm", half, S * B + ctx.q_bytes, i, "bwd", gemm=_context_gemm(ctx))
    if ctx.dropout:
        i = _unfused(pb, ctx, "dropout.bwd", "elementwise", 1.0 * S, S * (2 * B + ATTENTION_DROPOUT_MASK_BYTES), i,
                     "bwd")
    softmax_bwd_passes = 3 if not ctx.eager or _eager_softmax_passes(ctx) == 2 else 5
    i = _softmax(pb, ctx, "bwd", 3.0 * S, softmax_bwd_passes, i)
    if ctx.eager:
        i = _unfused(pb, ctx, "mask.bwd", "elementwise", 1.0 * S, 2 * S * B, i, "bwd")
    i = _unfused(pb, ctx, "scores.bwd", "gemm", 2 * half, 2 * S * B + 4 * ctx.q_bytes, i, "bwd", count=2,
                 gemm=_context_gemm(ctx))
    if ctx.eager:
        i = _scale_qk(pb, ctx, i, "bwd")
    return i

"""Megatron / TransformerEngine context parallelism (TE
``transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py``; Megatron
``get_batch_on_this_cp_rank``; MECHANICS.md §5), for ``cp_comm`` p2p | all_gather | a2a | a2a+p2p.

Layout (§5.1, "DualChunkSwap"): each sequence is cut into 2c chunks of s/(2c) tokens and cp rank r
holds chunks r and 2c−1−r, so causal work is the same on every rank. ``ctx.seq_local`` = s/c.

p2p (§5.2, ``AttnFuncWithCPAndKVP2P``): a KV ring over ``cp`` (ring.py), c steps, c−1 send/recv of
    M_kv = 2·b·(s/c)·g·d·B. Causal sections per step, U = 4·b·(s/2c)²·a·d one chunk tile:
        step 0        "diagonal": both local chunks causally, ½U + U + ½U
        steps 1..r    full local Q × the first incoming KV chunk, 2U
        steps r+1..   the second local Q chunk × both incoming KV chunks, 2U
    Backward: the KV ring again in the reverse direction (send to cp−1), bundling the dK/dV
    partials with the KV (KV only at step 0, [KV; dKV] at 1..c−2, dKV only at c−1), dKV in the
    activation dtype: 2·(c−1)·M_kv. TE alternates attention between two streams and orders
    even/odd ranks' send and receive to avoid deadlock; one batched P2POp per step stands for it.
    Around each step's kernel TE moves memory (``p2p_blocks``; Q = this rank's q bytes
    b·(s/c)·a·d·B, M = M_kv): the forward first concatenates K and V into the ring's send
    buffer (``torch.cat``, 2M); the output is merged after the last step, one correction
    per step (``flash_attn_fwd_out_correction``: read the step's output and the running output,
    write it back, 3Q; the first step's only scales and writes, 2Q), so (3c−1)·Q in c kernels
    instead of one pass; the backward copies the local KV into the first send buffer (2M), adds
    each step's dQ into the running dQ (3Q) and, once the step's transfer arrived, its dK/dV
    into the received partial (3M on the diagonal, 1.5M for the half blocks of rank c−1's other
    steps, which the blocks price). Read in TE v2.2 ``AttnFuncWithCPAndKVP2P`` (NeMo 25.04; the
    same in TE main) and v1.4 ``AttnFuncWithCP`` (NeMo 24.03).
    ``ctx.cp_qkv_format`` bshd (TE ≤ 1.6, whose CP took only bshd; v1.4 ``FusedAttention.forward``
    and ``AttnFuncWithCP``) adds: q, k, v transposed from Megatron's sbhd on entry
    (``transpose(0, 1).contiguous()``, 2(Q + M)), the output back (2Q) and, in backward, the
    incoming output gradient (2Q) (:func:`transpose_bytes`: at micro-batch 1 only V is copied,
    the rest are views); on rank c−1's off-diagonal steps the first halves of K and V
    copied to contiguous tensors before the kernel (``kv[:, :, 0].contiguous()``, M, forward and
    backward); dK and dV concatenated before the addition (``torch.cat``, 2M on the diagonal, M
    for a half block). In sbhd (TE ≥ 1.7) those halves are contiguous slices and dK, dV share
    one buffer (``_combine_tensors``).
all_gather (§5.3, ``AttnFuncWithCPAndKVAllGather``): blocking AllGather of K, then of V
    (b·s·g·d·B each), then two attention steps, one per local Q chunk against its causal KV
    prefix. Backward: AllGather K and V again, attention backward, ReduceScatter dK and dV.
a2a (§5.4, ``AttnFuncWithCPAndQKVOA2A``): Ulysses inside TE over ``cp`` (head_parallel.py's head
    scatter with P = c, KV heads not replicated), attention over the full sequence; each
    exchanged tensor copied on both sides of its All-to-All (``layout_copies``).
a2a+p2p (§5.5): a2a over a sub-group of c1 consecutive cp ranks (axis ``cp_a2a``), then the p2p
    ring over the c2 = c/c1 ranks that are c1 apart on ``cp`` (ring hop c1). c1 comes from
    ``ctx.cp_a2a`` when the config provides it (TE ``hierarchical_context_parallel_sizes[0]``);
    until then it defaults to the largest power of two ≤ 8 (one NVLink domain) that divides cp,
    heads and kv_heads — the KV heads too, because TE's a2a needs (g/t) % c1 == 0. With c1 = 1
    it is plain p2p and with c1 = cp plain a2a over ``cp`` (no single-member groups emitted).
"""

from __future__ import annotations

from dataclasses import replace

from simulator.errors import InputError
from simulator.schedule.attention import (
    FLASH_BWD_FACTOR, AttentionContext, attention_flops, causal_fraction_diagonal, local_backward, local_forward)
from simulator.schedule.ir import CollectiveKind, CommOp, ComputeOp, Phase, ProgramBuilder, Tag, layer_key
from simulator.schedule.ring import RingBlock, RingSpec, ring_backward, ring_forward
from simulator.schedule.head_parallel import head_parallel_backward, head_parallel_forward

AXES = ("cp",)
A2A_SUBGROUP_AXES = ("cp_a2a",)
MAX_A2A_DEGREE = 8  # one NVLink domain of an 8-GPU node


# ---------------------------------------------------------------------------------------------
# p2p: the load-balanced KV ring


def p2p_blocks(ctx: AttentionContext) -> list[RingBlock]:
    """Attention work of each of TE's c p2p steps (the same on every rank), with the memory
    passes around each kernel (module docstring)."""
    chunk = ctx.seq_local // 2
    tile = attention_flops(ctx.micro_batch_size, ctx.heads, chunk, chunk, ctx.head_dim)  # U
    io = ctx.q_bytes * 2 + ctx.kv_bytes
    n = ctx.seq_local
    q, m = ctx.q_bytes, ctx.kv_bytes
    full = dict(dq_accum_bytes=3 * q, dkv_accum_bytes=3 * m)  # read, read, write
    first = dict(full, copy_bwd_bytes=2 * m)  # the local KV copied into the first send buffer
    if not ctx.causal:
        return ([RingBlock(4 * tile, 1.0, io, ctx.kernel_shape(n, n, False), **first)]
                + [RingBlock(4 * tile, 1.0, io, ctx.kernel_shape(n, n, False), **full)] * (ctx.cp - 1))
    diag = (2 * causal_fraction_diagonal(chunk) + 1) * tile
    # off the diagonal one unmasked kernel: both local Q chunks × the first KV chunk (steps ≤ r) or
    # the second Q chunk × both KV chunks (steps > r); priced as the former on every rank (rank
    # c−1's steps), whose dK/dV partials cover the first KV chunk only
    half = dict(dq_accum_bytes=3 * q, dkv_accum_bytes=1.5 * m)
    if ctx.cp_qkv_format == "bshd":  # KV halves made contiguous, dK and dV concatenated
        first = dict(first, dkv_accum_bytes=first["dkv_accum_bytes"] + 2 * m)
        half = dict(half, copy_fwd_bytes=m, copy_bwd_bytes=m, dkv_accum_bytes=half["dkv_accum_bytes"] + m)
    return ([RingBlock(diag, diag / (4 * tile), io, ctx.kernel_shape(n, n, True), **first)]
            + [RingBlock(2 * tile, 0.5, io, ctx.kernel_shape(n, chunk, False), **half)] * (ctx.cp - 1))


def out_correction_bytes(ctx: AttentionContext) -> int:
    """Bytes of TE's forward output merge over c steps: 2Q for the first, 3Q for each other."""
    return (3 * ctx.cp - 1) * ctx.q_bytes


def _ring_spec(ctx: AttentionContext, hop: int) -> RingSpec:
    return RingSpec(axis="cp", hop=hop, size=ctx.cp, kv_bytes=ctx.kv_bytes, name=f"L{ctx.layer}.attn.cp",
                    key=layer_key("cp", ctx.layer), layer=ctx.layer, mb_index=ctx.mb_index,
                    dtype=ctx.dtype, kernel=ctx.kernel, deterministic_heads=ctx.deterministic_heads,
                    dropout=ctx.fused_dropout)


def transpose_bytes(ctx: AttentionContext) -> tuple[int, int, int]:
    """HBM bytes of the bshd layout's ``transpose(0, 1).contiguous()`` passes: q, k, v on entry,
    the output back to sbhd, the output gradient in (read + write of each tensor copied).

    ``contiguous()`` copies only a tensor that is not contiguous already, and PyTorch's
    contiguity check skips dimensions of size 1 (``is_contiguous``, c10 ``compute_contiguous``).
    At micro-batch 1 the sbhd → bshd transpose of a contiguous [s, 1, h, d] tensor is therefore
    a view: q and k come contiguous from the rotary embedding (a new tensor), the output and its
    gradient from the kernel and from the projection's dgrad. V is still copied: Megatron-Core
    splits it from the fused QKV projection's output (``get_query_key_value_tensors``:
    ``torch.split`` of [s, b, g, (a/g + 2)·d]), a strided view. With b > 1 every transpose
    copies."""
    q, m = ctx.q_bytes, ctx.kv_bytes
    if ctx.micro_batch_size == 1:
        return m, 0, 0  # V alone (half of K + V), read and written
    return 2 * (q + m), 2 * q, 2 * q


def _copy(pb: ProgramBuilder, ctx: AttentionContext, name: str, nbytes: int, phase: Phase, after: int) -> int:
    if nbytes <= 0:
        return after
    return pb.add(ComputeOp(name=f"L{ctx.layer}.attn.cp.{phase}.{name}", kind="copy", hbm_bytes=nbytes, deps=(after,),
                            dtype=ctx.dtype, tag=Tag(phase, ctx.layer, ctx.mb_index)))


def _p2p_forward(pb: ProgramBuilder, ctx: AttentionContext, after: int, hop: int = 1) -> int:
    bshd = ctx.cp_qkv_format == "bshd"
    to_bshd, to_sbhd, grad_in = transpose_bytes(ctx)
    if bshd:  # q, k, v from Megatron's sbhd to bshd
        after = _copy(pb, ctx, "to_bshd", to_bshd, "fwd", after)
    # K and V concatenated into the first send buffer, which step 0's kernel also reads
    kv = _copy(pb, ctx, "kv_cat", 2 * ctx.kv_bytes, "fwd", after)
    out = ring_forward(pb, _ring_spec(ctx, hop), p2p_blocks(ctx), out_correction_bytes(ctx), kv, direction=+1,
                       out_kernels=ctx.cp)
    return _copy(pb, ctx, "to_sbhd", to_sbhd, "fwd", out) if bshd else out


def _p2p_backward(pb: ProgramBuilder, ctx: AttentionContext, after: int, hop: int = 1) -> int:
    if ctx.cp_qkv_format == "bshd":  # the output gradient to bshd
        after = _copy(pb, ctx, "to_bshd", transpose_bytes(ctx)[2], "bwd", after)
    return ring_backward(pb, _ring_spec(ctx, hop), p2p_blocks(ctx), ctx.kv_bytes, bundle_dkv=True,
                         after=after, direction=-1)


# ---------------------------------------------------------------------------------------------
# all_gather


def _local_chunks(ctx: AttentionContext) -> list[tuple[int, float]]:
    """(KV tokens attended, computed fraction) for each local Q chunk r and 2c−1−r."""
    chunk = ctx.seq_local // 2
    out = []
    for j in (ctx.cp_rank, 2 * ctx.cp - 1 - ctx.cp_rank):
        if ctx.causal:  # KV prefix of chunks 0..j, bottom-right causal mask on the last one
            prefix = (j + 1) * chunk
            pairs = j * chunk * chunk + chunk * (chunk + 1) / 2
            out.append((prefix, pairs / (chunk * prefix)))
        else:
            out.append((ctx.seq, 1.0))
    return out


def _ag_attention(pb: ProgramBuilder, ctx: AttentionContext, phase: Phase, deps: tuple[int, ...]) -> int:
    chunk = ctx.seq_local // 2
    scale = FLASH_BWD_FACTOR if phase == "bwd" else 1.0
    last = deps[-1]
    for i, (s_k, frac) in enumerate(_local_chunks(ctx)):
        kv_io = 2 * ctx.micro_batch_size * s_k * ctx.kv_heads * ctx.head_dim * ctx.dtype_bytes
        last = pb.add(ComputeOp(
            name=f"L{ctx.layer}.attn.cp.{phase}.chunk{i}", kind="attention",
            flops=scale * attention_flops(ctx.micro_batch_size, ctx.heads, chunk, s_k, ctx.head_dim, frac),
            hbm_bytes=(ctx.q_bytes + kv_io) * (2 if phase == "bwd" else 1), deps=deps, dtype=ctx.dtype,
            causal_fraction=frac, tag=Tag(phase, ctx.layer, ctx.mb_index),
            attention_kernel=ctx.kernel, attention_shape=ctx.kernel_shape(chunk, s_k),
            deterministic_heads=ctx.deterministic_heads if phase == "bwd" else 0, attention_dropout=ctx.fused_dropout))
    return last


def _cp_coll(pb: ProgramBuilder, ctx: AttentionContext, name: str, op: CollectiveKind, phase: Phase, deps: tuple[int, ...]) -> int:
    full = ctx.kv_bytes // 2 * ctx.cp  # K (or V) of the whole sequence: b·s·g·d·B
    return pb.add(CommOp(name=f"L{ctx.layer}.attn.cp.{phase}.{name}", op=op, axes=AXES, size_bytes=full,
                         deps=deps, dtype=ctx.dtype, tag=Tag(phase, ctx.layer, ctx.mb_index)))


def _all_gather_forward(pb: ProgramBuilder, ctx: AttentionContext, after: int) -> int:
    k = _cp_coll(pb, ctx, "ag_k", "allgather", "fwd", (after,))
    v = _cp_coll(pb, ctx, "ag_v", "allgather", "fwd", (k,))
    return _ag_attention(pb, ctx, "fwd", (v,))


def _all_gather_backward(pb: ProgramBuilder, ctx: AttentionContext, after: int) -> int:
    k = _cp_coll(pb, ctx, "ag_k", "allgather", "bwd", (after,))
    v = _cp_coll(pb, ctx, "ag_v", "allgather", "bwd", (k,))
    attn = _ag_attention(pb, ctx, "bwd", (v,))
    dk = _cp_coll(pb, ctx, "rs_dk", "reducescatter", "bwd", (attn,))
    return _cp_coll(pb, ctx, "rs_dv", "reducescatter", "bwd", (dk,))


# ---------------------------------------------------------------------------------------------
# a2a and a2a+p2p


def hierarchical_a2a_degree(cp: int, heads: int, kv_heads: int, explicit: int | None = None) -> int:
    """c1 of a2a+p2p for ``heads``/``kv_heads`` per TP rank: ``explicit`` (parallel.cp_a2a) if
    set, else the largest power of two ≤ 8 dividing cp, heads and kv_heads."""
    if explicit:
        if cp % explicit:
            raise InputError(f"cp_a2a={explicit} does not divide cp={cp}", field="parallel.cp_a2a")
        return int(explicit)
    c1 = 1
    while 2 * c1 <= MAX_A2A_DEGREE and all(x % (2 * c1) == 0 for x in (cp, heads, kv_heads)):
        c1 *= 2
    return c1


def a2a_degree(ctx: AttentionContext) -> int:
    """c1 of a2a+p2p for this layer's context."""
    return hierarchical_a2a_degree(ctx.cp, ctx.heads, ctx.kv_heads, ctx.cp_a2a)


def _ring_context(ctx: AttentionContext, c1: int) -> AttentionContext:
    """After the a2a: the p2p ring over c2 = cp/c1 ranks, the ring position being cp_rank // c1."""
    return replace(ctx, cp=ctx.cp // c1, cp_rank=ctx.cp_rank // c1)


def _hierarchical(ctx: AttentionContext, backward: bool):
    c1 = a2a_degree(ctx)
    ring = _p2p_backward if backward else _p2p_forward

    def inner(pb: ProgramBuilder, sharded: AttentionContext, after: int) -> int:
        return ring(pb, _ring_context(sharded, c1), after, hop=c1)

    return dict(axes=A2A_SUBGROUP_AXES, degree=c1, replicate_kv=False, label="cp_a2a",
                field="parallel.cp_a2a", inner=inner, layout_copies=True)


def _flat_a2a(ctx: AttentionContext, backward: bool):
    def inner(pb: ProgramBuilder, sharded: AttentionContext, after: int) -> int:
        flat = replace(sharded, cp=1, cp_rank=0)
        return (local_backward if backward else local_forward)(pb, flat, after)

    return dict(axes=AXES, degree=ctx.cp, replicate_kv=False, label="cp_a2a", field="parallel.cp", inner=inner,
                layout_copies=True)


# ---------------------------------------------------------------------------------------------
# the pattern interface


def program_depends_on_cp_rank(cp_comm: str) -> bool:
    """Whether the ops of a rank depend on its CP index, beyond whom they meet.

    ``ring`` does (without load balancing, step i computes only on ranks past i:
    ring_attention.blocks), and so does ``all_gather`` (rank r attends with its chunks r and
    2c-1-r: _local_chunks). TransformerEngine's load-balanced ``p2p`` steps are the same on every
    rank (p2p_blocks), and ``a2a``, ``a2a+p2p`` (whose ring is p2p) hold nothing per rank either:
    their send/recv peers are offsets on the cp axis, which the grid resolves per rank. Their CP
    roles then run one program, built and priced once (schedule/build.py).
    """
    return cp_comm in ("ring", "all_gather")



def _effective_comm(ctx: AttentionContext) -> str:
    """a2a+p2p degenerates to p2p when c1 = 1 and to a2a when c1 = cp (no empty sub-groups)."""
    if ctx.cp_comm == "a2a+p2p":
        c1 = a2a_degree(ctx)
        return "p2p" if c1 == 1 else ("a2a" if c1 == ctx.cp else "a2a+p2p")
    return ctx.cp_comm


def forward(pb: ProgramBuilder, ctx: AttentionContext, after: int) -> int:
    comm = _effective_comm(ctx)
    if comm == "p2p":
        return _p2p_forward(pb, ctx, after)
    if comm == "all_gather":
        return _all_gather_forward(pb, ctx, after)
    if comm == "a2a":
        return head_parallel_forward(pb, ctx, after, **_flat_a2a(ctx, backward=False))
    if comm == "a2a+p2p":
        return head_parallel_forward(pb, ctx, after, **_hierarchical(ctx, backward=False))
    raise InputError(f"cp_comm must be p2p, all_gather, a2a or a2a+p2p here, got {ctx.cp_comm!r}",
                     field="parallel.cp_comm")


def backward(pb: ProgramBuilder, ctx: AttentionContext, after: int) -> int:
    comm = _effective_comm(ctx)
    if comm == "p2p":
        return _p2p_backward(pb, ctx, after)
    if comm == "all_gather":
        return _all_gather_backward(pb, ctx, after)
    if comm == "a2a":
        return head_parallel_backward(pb, ctx, after, **_flat_a2a(ctx, backward=True))
    if comm == "a2a+p2p":
        return head_parallel_backward(pb, ctx, after, **_hierarchical(ctx, backward=True))
    raise InputError(f"cp_comm must be p2p, all_gather, a2a or a2a+p2p here, got {ctx.cp_comm!r}",
                     field="parallel.cp_comm")


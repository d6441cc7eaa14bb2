"""Head parallelism by All-to-All: the head-scatter / head-gather pair shared by
DeepSpeed-Ulysses (``ulysses.py``, over the ``ulysses`` axis) and the first level of
TransformerEngine's ``a2a`` and ``a2a+p2p`` context parallelism (``context_parallel.py``, over
``cp``). Written once, with the process group, degree and inner attention as parameters.

forward   a2a(Q), a2a(K), a2a(V)   [s/P, a] → [s, a/P]    three separate synchronous calls
          ``inner`` attention with P× the tokens and a/P query heads, g/P KV heads
          a2a(O)                   [s, a/P] → [s/P, a]
backward  a2a(dO), ``inner`` attention backward, a2a(dQ), a2a(dK), a2a(dV)

``size_bytes`` of an All-to-All is one rank's whole send buffer: M_q = M_o = b·(s/P)·a·d·B and
M_k = M_v = b·(s/P)·g·d·B (MECHANICS.md §3). With ``layout_copies`` (TE's a2a CP,
``flash_attn_a2a_communicate`` in ``dot_product_attention/context_parallel.py``, v2.2 to main)
each exchanged tensor is copied on both sides of its All-to-All: before it, the head-group
dimension moved to the front (``movedim(...).contiguous()``, or the chunk reorder's
``index_select`` for O and the gradients), after it the sequence chunks put back in order
(``index_select``, or the layout copy back): 2 × (read + write) of the tensor. With fewer KV heads than P, ``replicate_kv``
follows ALST (``runtime/sequence_parallel/ulysses_sp.py``: ``repeat_interleave`` by P/g before
the a2a, so K and V carry P heads); TE's a2a CP does not replicate and requires divisibility.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

from simulator.errors import InputError
from simulator.schedule.attention import AttentionContext
from simulator.schedule.ir import CommOp, ComputeOp, Phase, ProgramBuilder, Tag

InnerPass = Callable[[ProgramBuilder, AttentionContext, int], int]


def exchanged_kv_heads(kv_heads: int, degree: int, replicate_kv: bool, field: str) -> int:
    """KV heads that go through the a2a: g if P divides g; P if KV heads are replicated (ALST)."""
    if kv_heads % degree == 0:
        return kv_heads
    if replicate_kv and degree % kv_heads == 0:
        return degree
    knob = field.rsplit(".", 1)[-1]
    raise InputError(f"{knob}={degree} does not divide kv_heads={kv_heads} per TP rank"
                     + (" (nor is it a multiple of it)" if replicate_kv else ""), field=field)


def head_sharded_context(ctx: AttentionContext, degree: int, replicate_kv: bool, field: str) -> AttentionContext:
    """The attention problem after the head scatter: degree× the tokens, 1/degree of the heads."""
    if ctx.heads % degree:
        raise InputError(f"{field.rsplit('.', 1)[-1]}={degree} does not divide heads={ctx.heads} per TP rank",
                         field=field)
    g = exchanged_kv_heads(ctx.kv_heads, degree, replicate_kv, field)
    return replace(ctx, seq_local=ctx.seq_local * degree, heads=ctx.heads // degree, kv_heads=g // degree)


def _a2a(pb: ProgramBuilder, ctx: AttentionContext, axes: tuple[str, ...], name: str, size: int,
         deps: tuple[int, ...], phase: Phase) -> int:
    return pb.add(CommOp(name=name, op="alltoall", axes=axes, size_bytes=size, deps=deps, dtype=ctx.dtype,
                         tag=Tag(phase, ctx.layer, ctx.mb_index)))


def _buffers(ctx: AttentionContext, degree: int, replicate_kv: bool, field: str) -> tuple[int, int]:
    """(M_q, M_k): one rank's send buffers before the head scatter."""
    g = exchanged_kv_heads(ctx.kv_heads, degree, replicate_kv, field)
    m_q = ctx.micro_batch_size * ctx.seq_local * ctx.heads * ctx.head_dim * ctx.dtype_bytes
    m_k = ctx.micro_batch_size * ctx.seq_local * g * ctx.head_dim * ctx.dtype_bytes
    return m_q, m_k


def _copy(pb: ProgramBuilder, ctx: AttentionContext, name: str, size: int, after: int, phase: Phase) -> int:
    return pb.add(ComputeOp(name=name, kind="copy", hbm_bytes=2 * size, deps=(after,), dtype=ctx.dtype,
                            tag=Tag(phase, ctx.layer, ctx.mb_index)))


def _exchange(pb: ProgramBuilder, ctx: AttentionContext, axes: tuple[str, ...], name: str, size: int, after: int,
              phase: Phase, layout_copies: bool) -> int:
    """One tensor through its All-to-All, with TE's copy on either side when ``layout_copies``."""
    if layout_copies:
        after = _copy(pb, ctx, f"{name}.pre", size, after, phase)
    sent = _a2a(pb, ctx, axes, name, size, (after,), phase)
    return _copy(pb, ctx, f"{name}.post", size, sent, phase) if layout_copies else sent


def head_parallel_forward(pb: ProgramBuilder, ctx: AttentionContext, after: int, *, axes: tuple[str, ...],
                          degree: int, replicate_kv: bool, label: str, field: str, inner: InnerPass,
                          layout_copies: bool = False) -> int:
    """a2a Q, K, V → ``inner`` attention on the head-sharded problem → a2a O."""
    m_q, m_k = _buffers(ctx, degree, replicate_kv, field)
    name = f"L{ctx.layer}.attn.{label}.fwd"
    q = _exchange(pb, ctx, axes, f"{name}.a2a_q", m_q, after, "fwd", layout_copies)
    k = _exchange(pb, ctx, axes, f"{name}.a2a_k", m_k, after, "fwd", layout_copies)
    v = _exchange(pb, ctx, axes, f"{name}.a2a_v", m_k, after, "fwd", layout_copies)
    attn = inner(pb, head_sharded_context(ctx, degree, replicate_kv, field), _last(q, k, v))
    return _exchange(pb, ctx, axes, f"{name}.a2a_o", m_q, attn, "fwd", layout_copies)


def head_parallel_backward(pb: ProgramBuilder, ctx: AttentionContext, after: int, *, axes: tuple[str, ...],
                           degree: int, replicate_kv: bool, label: str, field: str, inner: InnerPass,
                           layout_copies: bool = False) -> int:
    """a2a dO → ``inner`` attention backward → a2a dQ, dK, dV (three calls, not merged)."""
    m_q, m_k = _buffers(ctx, degree, replicate_kv, field)
    name = f"L{ctx.layer}.attn.{label}.bwd"
    do = _exchange(pb, ctx, axes, f"{name}.a2a_do", m_q, after, "bwd", layout_copies)
    attn = inner(pb, head_sharded_context(ctx, degree, replicate_kv, field), do)
    dq = _exchange(pb, ctx, axes, f"{name}.a2a_dq", m_q, attn, "bwd", layout_copies)
    dk = _exchange(pb, ctx, axes, f"{name}.a2a_dk", m_k, attn, "bwd", layout_copies)
    dv = _exchange(pb, ctx, axes, f"{name}.a2a_dv", m_k, attn, "bwd", layout_copies)
    return _last(dq, dk, dv) if layout_copies else dv


def _last(*ops: int) -> int:
    """The three a2a share one stream (FIFO), and so do the copies after them (the compute
    stream): the last one finishing implies all have."""
    return max(ops)

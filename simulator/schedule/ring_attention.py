"""Ring Attention (arXiv:2310.01889) as ``zhuzilin/ring-flash-attention`` implements it
(``ring_flash_attn.py``, ``utils.RingComm``; MECHANICS.md §4), selected by ``cp_comm: ring``.

Contiguous layout: cp rank r holds tokens [r·s/c, (r+1)·s/c) and keeps its query block. Its K and
V blocks travel around the ring over the ``cp`` axis (send to cp+1, receive from cp−1):

forward   c steps; at step i the rank holds the KV block of rank r−i. c−1 send/recv steps of
          M_kv = 2·b·(s/c)·g·d·B, each overlapped with one attention block (ring.py).
backward  the KV ring again (c−1 prefetches) and a dK/dV ring that sends the accumulated
          gradients on every step (c sends). ring-flash-attn keeps the dK/dV accumulators in fp32
          and sends them as fp32, so each dKV message is 2·M_kv with bf16 activations.

Causal imbalance of the contiguous layout: KV blocks from later ranks are fully masked, so rank r
computes at steps 0..r only: a causal (diagonal) block at step 0, then r full blocks. It still
forwards every KV block. Rank c−1 works on every step and is the straggler; the steps are
ring-synchronous, so causal ring attention takes ≈ (c − ½) blocks against an ideal c/2.
"""

from __future__ import annotations

from simulator.schedule.attention import AttentionContext, attention_flops, causal_fraction_diagonal
from simulator.schedule.ir import ProgramBuilder, layer_key
from simulator.schedule.ring import RingBlock, RingSpec, ring_backward, ring_forward

DKV_BYTES_PER_ELEMENT = 4  # ring-flash-attn sends dK/dV as fp32


def blocks(ctx: AttentionContext) -> list[RingBlock | None]:
    """Attention work of each ring step on rank ``ctx.cp_rank``; None where the block is masked."""
    n = ctx.seq_local
    io = ctx.q_bytes * 2 + ctx.kv_bytes
    out: list[RingBlock | None] = []
    for step in range(ctx.cp):
        if not ctx.causal:
            frac = 1.0
        elif step == 0:
            frac = causal_fraction_diagonal(n)
        elif step <= ctx.cp_rank:
            frac = 1.0
        else:
            out.append(None)
            continue
        out.append(RingBlock(attention_flops(ctx.micro_batch_size, ctx.heads, n, n, ctx.head_dim, frac), frac, io,
                             ctx.kernel_shape(n, n, ctx.causal and step == 0)))
    return out


def _spec(ctx: AttentionContext) -> RingSpec:
    return RingSpec(axis="cp", hop=1, size=ctx.cp, kv_bytes=ctx.kv_bytes, name=f"L{ctx.layer}.attn.ring",
                    key=layer_key("ring", ctx.layer), layer=ctx.layer, mb_index=ctx.mb_index,
                    dtype=ctx.dtype, kernel=ctx.kernel, deterministic_heads=ctx.deterministic_heads,
                    dropout=ctx.fused_dropout)


def dkv_bytes(ctx: AttentionContext) -> int:
    """One dK+dV message: this rank's K and V block in fp32."""
    return ctx.kv_bytes * DKV_BYTES_PER_ELEMENT // ctx.dtype_bytes


def forward(pb: ProgramBuilder, ctx: AttentionContext, after: int) -> int:
    # The output and LSE are accumulated in fp32 and cast at the end: read 4 B, write B per element.
    out_bytes = ctx.q_bytes // ctx.dtype_bytes * (4 + ctx.dtype_bytes)
    return ring_forward(pb, _spec(ctx), blocks(ctx), out_bytes, after, direction=+1)


def backward(pb: ProgramBuilder, ctx: AttentionContext, after: int) -> int:
    return ring_backward(pb, _spec(ctx), blocks(ctx), dkv_bytes(ctx), bundle_dkv=False, after=after, direction=+1)

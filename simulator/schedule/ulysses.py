"""DeepSpeed-Ulysses (arXiv:2309.14509; ``deepspeed/sequence/layer.py`` ``DistributedAttention``).

Every rank holds ``s/P`` tokens of each sequence and all heads (of its TP shard). Attention is
turned into head parallelism by All-to-Alls over the Ulysses group (MECHANICS.md §3):

forward   a2a(Q), a2a(K), a2a(V)   [s/P, a] → [s, a/P]    three separate synchronous calls
          attention over the full sequence s with a/P query heads and g/P KV heads
          a2a(O)                   [s, a/P] → [s/P, a]
backward  a2a(dO), attention backward, a2a(dQ), a2a(dK), a2a(dV)

``size_bytes`` of an All-to-All is one rank's whole send buffer: M_q = M_o = b·(s/P)·a·d·B and
M_k = M_v = b·(s/P)·g·d·B; with MHA the 8 calls of a layer sum to 8·b·(s/P)·h·B.

GQA with fewer KV heads than P: ALST (``runtime/sequence_parallel/ulysses_sp.py``) replicates KV
heads (``repeat_interleave`` by P/g) before the a2a, so K and V buffers carry P heads; we follow it
when P is a multiple of g. TE's a2a CP (``context_parallel.py``) does not replicate and requires
divisibility (``replicate_kv=False``).

The head-scatter / head-gather pair is also the first level of TE's ``a2a`` and ``a2a+p2p`` context
parallelism, so it lives in ``head_parallel.py`` with the process group, degree and inner attention
as parameters; this module applies it over the ``ulysses`` axis.

Ulysses combined with cp > 1 composes as USP (Fang & Zhao 2024, arXiv:2405.07719): the a2a over
``ulysses`` first, then the plan's CP ring over ``cp`` (``cp_comm`` ring: ``ring_attention.py``;
p2p, the load-balanced ring: ``context_parallel.py``) on the gathered s/cp tokens with a/P query
and g/P KV heads, so each ring step sends 1/P of the KV bytes a plain ring would. The config
admits only those two CP flavours with ulysses (``config/parallelism.py``); placing ``ulysses``
before ``cp`` in ``order`` keeps the All-to-Alls inside a node (scenarios/llama3-8b-usp-256k.yaml).
"""

from __future__ import annotations

from dataclasses import replace

from simulator.schedule import context_parallel, ring_attention
from simulator.schedule.attention import AttentionContext, local_backward, local_forward
from simulator.schedule.head_parallel import InnerPass, head_parallel_backward, head_parallel_forward
from simulator.schedule.ir import ProgramBuilder

AXES = ("ulysses",)


def _inner(ctx: AttentionContext, backward: bool) -> InnerPass:
    """Local attention, or the CP pattern when Ulysses is combined with cp > 1 (USP)."""
    if ctx.cp <= 1:
        return local_backward if backward else local_forward
    if ctx.cp_comm == "ring":
        return ring_attention.backward if backward else ring_attention.forward
    return context_parallel.backward if backward else context_parallel.forward


def _sharded(ctx: AttentionContext) -> AttentionContext:
    return replace(ctx, ulysses=1)


def forward(pb: ProgramBuilder, ctx: AttentionContext, after: int) -> int:
    return head_parallel_forward(pb, _sharded(ctx), after, axes=AXES, degree=ctx.ulysses, replicate_kv=True,
                                 label="ulysses", field="parallel.ulysses", inner=_inner(ctx, backward=False))


def backward(pb: ProgramBuilder, ctx: AttentionContext, after: int) -> int:
    return head_parallel_backward(pb, _sharded(ctx), after, axes=AXES, degree=ctx.ulysses, replicate_kv=True,
                                  label="ulysses", field="parallel.ulysses", inner=_inner(ctx, backward=True))

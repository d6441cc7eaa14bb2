"""Combined 1F1B: one micro-batch's forward and another's backward, interleaved layer by layer so
that each one's expert-parallel All-to-Alls run while the other computes.

Megatron-Core's ``overlap_moe_expert_parallel_comm`` (megatron/core/pipeline_parallel/
combined_1f1b.py, megatron/core/models/common/model_chunk_schedule_plan.py) splits a transformer
layer into five nodes: ``attn`` (attention, norm, router, permute), ``moe_dispatch`` (the
dispatch All-to-All), ``mlp`` (shared and routed experts), ``moe_combine`` (the combine
All-to-All) and what follows it. ``TransformerLayerSchedulePlan.run`` pairs forward layer i of
micro-batch f with backward layer n−1−i of micro-batch b and issues, the communication nodes on
one stream and the compute nodes on another::

    comm:    combine_bwd | dispatch_fwd → dispatch_bwd | combine_fwd
    compute: attn_fwd    | mlp_bwd      → mlp_fwd      | attn_bwd

so the combine of b hides under f's attention, f's dispatch under b's experts, b's dispatch under
f's experts and f's combine under b's attention. Here a layer pass is built as usual and then its
ops are reordered into that issue order: streams are FIFO in issue order and every op keeps its
dependencies, so the overlap follows from the replay, not from a discount. With DeepEP the GEMMs of a node
paired with an exchange run on the SMs its kernels leave (``moe_deepep_sms``), for the whole node:
an upper bound on the contention when the node outlasts the exchange, as for TransformerEngine's
pipelined overlap (``ComputeOp.sm_fraction``).

A pass is cut into nodes at its token-exchange collectives (the groups ``ep``, ``etp``, and
DeepEP's ``ep_intra`` / ``ep_inter``): a forward MoE layer reads attn, dispatch, mlp, combine,
rest; a backward one rest, combine, mlp, dispatch, attn. A dense layer (no exchange) is cut at the
norm before its MLP into its attention and MLP nodes.
"""

from __future__ import annotations

from typing import Callable

from simulator.schedule import moe
from simulator.schedule.ir import CommOp, ProgramBuilder, with_deps

EXCHANGE_AXES = frozenset({"ep", "etp", "ep_intra", "ep_inter"})  # the token dispatch / combine groups


def _is_exchange(op: object) -> bool:
    return isinstance(op, CommOp) and bool(op.axes) and set(op.axes) <= EXCHANGE_AXES


def nodes(pb: ProgramBuilder, start: int, end: int) -> list[list[int]]:
    """The ops of one layer pass [start, end) as its five nodes, in issue order: before the first
    exchange, the first run of exchanges, between, the second run, after. A pass without an
    exchange is all in the first node."""
    runs: list[tuple[int, int]] = []
    i = start
    while i < end:
        if _is_exchange(pb.ops[i]):
            j = i
            while j < end and _is_exchange(pb.ops[j]):
                j += 1
            runs.append((i, j))
            i = j
        else:
            i += 1
    if not runs:
        return _dense_nodes(pb, start, end)
    if len(runs) != 2:
        names = [pb.ops[a].name for a, _ in runs]
        raise ValueError(f"a layer pass with {len(runs)} token exchanges ({names}); the combined 1F1B "
                         "schedule splits a pass with two (dispatch, combine)")
    (a0, a1), (b0, b1) = runs
    return [list(range(start, a0)), list(range(a0, a1)), list(range(a1, b0)), list(range(b0, b1)),
            list(range(b1, end))]


def _dense_nodes(pb: ProgramBuilder, start: int, end: int) -> list[list[int]]:
    """A dense layer (or one without an exchange) as Megatron's two compute nodes: in forward,
    attention up to the second norm then the MLP; in backward, the MLP up to that norm's
    gradient then attention. Its two exchange nodes are empty."""
    cut = next((i + 1 for i in range(start, end) if pb.ops[i].name.endswith(_NORM_SUFFIXES)), end)
    if pb.ops[start].tag.phase == "bwd":
        return [[], [], list(range(start, cut)), [], list(range(cut, end))]
    return [list(range(start, cut)), [], list(range(cut, end)), [], []]


_NORM_SUFFIXES = (".res1_ln2.fwd", ".res1_ln2.bwd")  # transformer.py: the norm before the MLP


def interleave(pb: ProgramBuilder, start: int, mid: int, sm_fraction: float = 1.0) -> Callable[[int], int]:
    """Reorder the forward pass [start, mid) and the backward pass [mid, len(pb)) just appended
    into Megatron's combined issue order; returns the map from old op indices to new ones (the
    identity outside the two passes). ``sm_fraction``: the SMs a compute node keeps beside the
    exchange it is paired with (DeepEP's kernels hold the rest; :func:`moe.hold_sms`)."""
    end = len(pb)
    f_attn, f_dispatch, f_mlp, f_combine, f_rest = nodes(pb, start, mid)
    b_rest, b_combine, b_mlp, b_dispatch, b_attn = nodes(pb, mid, end)
    for exchange, beside in ((b_combine, f_attn), (f_dispatch, b_mlp), (b_dispatch, f_mlp), (f_combine, b_attn)):
        if exchange:
            moe.hold_sms(pb, beside, sm_fraction)
    # TransformerLayerSchedulePlan.run; what follows f's combine runs after b's attention, as it
    # does on Megatron's communication stream behind the combine.
    order = (b_rest + b_combine + f_attn + b_mlp + f_dispatch + b_dispatch + f_mlp + f_combine + b_attn
             + f_rest)
    new = {old: start + k for k, old in enumerate(order)}
    ops = pb.ops
    moved = []
    for old in order:
        op = ops[old]
        deps = op.deps
        for d in deps:
            if start <= d < end:
                op = with_deps(op, tuple([new.get(d, d) for d in deps]))
                break
        moved.append(op)
    ops[start:end] = moved
    return lambda i: new.get(i, i)

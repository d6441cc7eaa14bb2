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

from dataclasses import dataclass
from typing import Any, Callable

from simulator.schedule import moe
from simulator.schedule.ir import CommOp, Op, ProgramBuilder, with_deps

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
    exchange it is paired with (DeepEP's kernels hold the rest; :func:`moe.hold_sms`).

    Where both passes were stamped from layer templates (``ProgramBuilder.stamps``), the
    reordering is worked out once per pair of templates (:class:`PairPlan`) and replayed for every
    other pair of their stamps; the pair then counts as one stamp of that plan."""
    # (a priced-only program's stamps hold an earlier stamp's dependencies, ProgramBuilder.priced_only:
    # its pairs are reordered op by op, and no plan is made from them)
    stamped = None if pb.priced_only else _stamped_pair(pb, start, mid)
    if stamped is None:
        return _interleave_ops(pb, start, mid, sm_fraction)
    forward, backward = stamped
    plan = _pair_plan(pb, start, mid, sm_fraction, forward, backward)
    return _apply_plan(pb, start, plan)


def _interleave_ops(pb: ProgramBuilder, start: int, mid: int, sm_fraction: float) -> Callable[[int], int]:
    """:func:`interleave` worked out from the ops themselves."""
    end = len(pb)
    order = _issue_order(pb, start, mid, sm_fraction)
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


def _issue_order(pb: ProgramBuilder, start: int, mid: int, sm_fraction: float) -> list[int]:
    """The old indices of the two passes in combined issue order, the compute nodes beside an
    exchange holding their SMs (in ``pb``, in place)."""
    end = len(pb)
    f_attn, f_dispatch, f_mlp, f_combine, f_rest = nodes(pb, start, mid)
    b_rest, b_combine, b_mlp, b_dispatch, b_attn = nodes(pb, mid, end)
    for exchange, beside in ((b_combine, f_attn), (f_dispatch, b_mlp), (b_dispatch, f_mlp), (f_combine, b_attn)):
        if exchange:
            moe.hold_sms(pb, beside, sm_fraction)
    # TransformerLayerSchedulePlan.run; what follows f's combine runs after b's attention, as it
    # does on Megatron's communication stream behind the combine.
    return (b_rest + b_combine + f_attn + b_mlp + f_dispatch + b_dispatch + f_mlp + f_combine + b_attn
            + f_rest)


@dataclass(frozen=True, eq=False)
class PairPlan:
    """The combined issue order of a forward pass and a backward pass stamped from the templates
    ``forward`` and ``backward`` (``schedule/transformer.py``), as offsets from the pair's first op.

    Exact for every stamp of the two: a stamp's ops have every field of its template's but their
    dependencies and tags, and what decides the order and the SMs held reads only such fields
    (an exchange is a CommOp on the token-exchange axes, a dense pass is cut at its norm's name
    and read by its tag's phase, :func:`moe.hold_sms` looks at a compute op's kind). A pass's
    dependencies inside itself are its template's (``start + k``) and those outside it are on
    ops before the pair (the pass's ``after`` and waits, issued before the forward was appended),
    which the reordering leaves as they are: which dependency of an op is inside the pair is the
    same in every stamp."""

    forward: Any  # the templates (kept alive: the plan's cache key holds their ids)
    backward: Any
    new: tuple[int, ...]  # old offset -> new offset
    # (ops, start) -> the reordered ops of the pair whose stamped ops are ``ops[start:]``
    # (:func:`_reorderer`)
    reorder: Callable[[list[Op], int], tuple[Op, ...]]
    # as ``transformer._Template.origin`` (what the replay and the sweep price a stamp by): a
    # plan is its own
    origin = None


_PLANS: dict[tuple[int, int, float], PairPlan] = {}
_PLANS_KEPT = 4096


def _stamped_pair(pb: ProgramBuilder, start: int, mid: int) -> tuple[Any, Any] | None:
    """The templates of the forward pass [start, mid) and the backward pass [mid, len(pb)) when
    each is the program's last stamps, ops unchanged since; else None."""
    stamps = pb.stamps
    if not stamps or len(stamps) < 2:
        return None
    (a, f_ops, f_tpl), (b, b_ops, b_tpl) = stamps[-2], stamps[-1]
    end = len(pb)
    if a != start or b != mid or a + len(f_ops) != mid or b + len(b_ops) != end:
        return None
    ops = pb.ops
    if tuple(ops[start:mid]) != f_ops or tuple(ops[mid:end]) != b_ops:
        return None
    return f_tpl, b_tpl


def _pair_plan(pb: ProgramBuilder, start: int, mid: int, sm_fraction: float, forward: Any, backward: Any) -> PairPlan:
    """The plan of the pair (:class:`PairPlan`), worked out from the ops at ``start`` the first
    time the two templates meet."""
    key = (id(forward), id(backward), sm_fraction)
    plan = _PLANS.get(key)
    if plan is not None and plan.forward is forward and plan.backward is backward:
        return plan
    end = len(pb)
    before = pb.ops[start:end]
    order = [old - start for old in _issue_order(pb, start, mid, sm_fraction)]
    # _issue_order held the SMs of the ops beside an exchange in place (a new op for each): the
    # plan notes which, and puts the stamped ops back for the plan to hold them as it did
    held = [pb.ops[start + old] is not before[old] for old in order]
    pb.ops[start:end] = before
    new = [0] * len(order)
    for k, old in enumerate(order):
        new[old] = k
    plan = PairPlan(forward, backward, tuple(new), _reorderer(before, start, order, new, held, sm_fraction))
    if len(_PLANS) >= _PLANS_KEPT:
        _PLANS.clear()
    _PLANS[key] = plan
    return plan


def _reorderer(pair: list[Op], at: int, order: list[int], new: list[int], held: list[bool],
               sm_fraction: float) -> Callable[[list[Op], int], tuple[Op, ...]]:
    """``reorder(ops, start)``: the ops of a stamp of the two templates of ``pair`` (the pair's
    ops, appended at ``at``) at ``start``, in the order ``order``, each as :func:`_interleave_ops`
    makes it (its SMs held where ``held``, then its dependencies inside the pair renumbered by
    ``new``), written out as source with one expression per op, as ``transformer._stamper``
    writes a pass's stamps: a deep MoE step reorders tens of thousands of pairs."""
    n = len(pair)
    items = []
    for old, hold in zip(order, held):
        op = pair[old]
        base = f"o[start + {old}]"
        expr = f"H({base})" if hold else base
        deps = op.deps
        inside = [at <= d < at + n for d in deps]
        if any(inside):
            parts = [f"start + {new[d - at]}" if ins else f"{base}.deps[{i}]" for i, (d, ins) in enumerate(zip(deps, inside))]
            display = f"({parts[0]},)" if len(parts) == 1 else f"({', '.join(parts)})"
            expr = f"W({expr}, {display})"
        items.append(f"        {expr},\n")
    scope: dict[str, Any] = {"W": with_deps, "H": lambda op: moe.held(op, sm_fraction)}
    exec("def reorder(o, start):\n    return (\n" + "".join(items) + "    )\n", scope)
    fn: Callable[[list[Op], int], tuple[Op, ...]] = scope["reorder"]
    return fn


def _apply_plan(pb: ProgramBuilder, start: int, plan: PairPlan) -> Callable[[int], int]:
    """The pair at ``start`` reordered by ``plan``: what :func:`_interleave_ops` makes of it, op
    for op, recorded as one stamp of the plan (replay/fold.py then compares two stamps of a plan
    by their dependencies on ops before them alone, as it does a layer pass's)."""
    moved = plan.reorder(pb.ops, start)
    end = start + len(moved)
    pb.ops[start:end] = moved
    stamps = pb.stamps
    assert stamps is not None
    stamps[-2:] = [(start, moved, plan)]
    new = plan.new

    def position(i: int) -> int:
        return start + new[i - start] if start <= i < end else i

    return position

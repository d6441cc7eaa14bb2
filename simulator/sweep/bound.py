"""A lower bound on a plan's step time, to skip plans that cannot beat the best one simulated so
far without replaying them.

The bound prices the ops the replay itself would run, with the replay's own cost model, and
keeps only what no schedule can hide:

* **A layer pass's chain.** The forward and the backward (with its recompute) of one
  transformer layer, the embedding and the LM head with the loss are built by the schedule's
  own :class:`~simulator.schedule.transformer.LayerBuilder` for this plan's per-rank shapes. Each
  kernel is priced by :func:`simulator.costs.compute.compute_times`: GEMMs at their shape's
  efficiency (tile and wave quantisation, the TP-overlap chunks and their SM share), attention
  at its kernel's figure and shape factor, norms and elementwise kernels at their bandwidth, the
  launch floor. Each collective (TP, CP, Ulysses, the experts' dispatch and combine) is priced
  at its time alone on an empty network (:meth:`CostModel.time_alone_s`: latency, then per
  phase the busiest link at its capacity or the tightest rate cap, which no sharing of the links
  can beat), over nodes too: an expert-parallel group of 16 spans two DGX nodes, and its
  AllGather and ReduceScatter sit between the router and the experts. Each send/recv batch (a
  CP ring step's KV exchange) is priced at its slowest transfer's time alone (NCCL's
  ``sendrecv`` plan of the pair; a userbuffers copy at its latency). A pass costs at least its
  longest chain from its first to its last compute-stream kernel through dependencies and each
  stream's FIFO order (the replay's semantics, ``replay/engine.py``: an op starts when its deps
  and the ops before it on its stream are done; a kernel takes at least its compute time,
  ``overlap_slowdown`` and the host's issue only lengthen it). The compute stream's FIFO order
  joins the last kernel of one pass to the first of the next, so the chains of a stage's passes
  add up; the chain holds every compute-stream kernel of the pass, so it is never below their
  sum. The optimizer step,
  data-parallel and pipeline traffic and any op outside these passes count 0. Passes are built
  once per distinct :class:`~simulator.schedule.transformer.LayerSpec` (tp, cp, micro-batch,
  recompute, overlap mode...) and priced once per spec and process groups, which a sweep's
  plans share by the hundred. Where a rank's attention work depends on its CP index (Ring
  Attention's contiguous layout, ``cp_comm: ring``), the passes are those of the CP rank with the
  longest chains, the last: the step waits for it.
* **Bubble**: stage j cannot start its first layer before stages 0..j-1 ran the forward of model
  chunk 0 of the first micro-batch (its input comes through them), and the step cannot end before
  stages j-1..0 ran the backward of chunk 0 of the last micro-batch after stage j's last kernel,
  which is that backward (1F1B and Megatron's interleaved 1F1B end with chunk 0 of the last
  micro-batch: ``get_model_chunk_id`` of Megatron-LM's schedules.py gives the backward chunk
  ``vp - 1 - (k // pp) % vp``, 0 at k = m·vp - 1 with m a multiple of pp). Between stages i and
  i + 1 the first micro-batch's activations and the last one's gradients each cross as a send of
  the stage's output, at least ``h(i)``, its time alone (:func:`_stage_hops_s`). So
  ``step >= max_j (sum_{i<j} (F0(i) + h(i)) + m x T(j) + sum_{i<j} (B0(i) + h(i)))``, with
  ``T(j)`` the passes of one micro-batch on stage j and ``F0(i)``, ``B0(i)`` the forward and
  backward of stage i's chunk 0: with equal chunks and free messages, the 1F1B bubble
  ``(p-1)/vp`` of a micro-batch's time (Narayanan et al. 2021, arXiv:2104.04473 §2.2).
* **What the schedule's own dependencies keep out of the passes** (:func:`program_floor`), on
  stage 0, whose last kernel ends the chain above: before its first forward kernel, whatever
  that kernel waits for (ZeRO-3's AllGather of the first unit's parameters, ``schedule/zero.py``);
  after its last forward or backward kernel, the longest chain that starts there (the last
  gradient bucket's AllReduce or ReduceScatter issued after that kernel, then the gradient
  clipping and the optimizer step that wait for it, and for ZeRO-1/2 the parameter AllGather
  after the step, ``schedule/data_parallel.py``). Both are walked in the stage's real program
  built with its fewest micro-batches (``pp`` per flush: these ops do not depend on how many
  micro-batches the step has), kernels at their compute time, every collective at its time
  alone on an empty network, sends at 0. Ops not reached from the anchor count 0, so the chain
  is a lower bound of what follows it whatever runs alongside.
  Every chain of the bubble term starts at or after stage 0's first forward kernel and ends at
  or before its last kernel (the compute stream is FIFO), so ``step >= before + max_j(...) +
  after``.
* **The busiest stream**: a stream runs its ops one after the other (``schedule/ir.py``), so the
  step is at least the sum of one stream's ops at their floors. On the data-parallel stream of a
  ZeRO-3 plan that is every micro-batch's parameter AllGathers (forward and backward) and
  gradient ReduceScatters (DeepSpeed's stage3 hooks; ``schedule/zero.py``), which the passes'
  chains leave out whatever their overlap: GPT-3 175B at tp 8, pp 1, ZeRO-3 over dp 128 replays
  in 88 s, where the passes bound 24 s. The sums are taken at ``pp`` and ``2 pp`` micro-batches
  per flush and extended along their line to the plan's count (each further micro-batch adds the
  same ops; a stream sum that would shrink adds 0).

* **Kernels slowed beside communication** (:func:`slowdown_bound`), on a stage ``j``: the
  replay runs a kernel at ``1/(1 + overlap_slowdown)`` of its speed alone while its rank has
  communication in flight, at full speed otherwise (``replay/engine.py``, ``_comm_started``,
  ``_retime``; ``replay/rank_state.py``; kernels with ``sm_fraction`` < 1 excepted). So a
  kernel of base time c overlapped by communication for ``o`` seconds takes exactly
  ``c + o s/(1+s)``. Let ``Z`` be the time of the stage's window (its first to its last pass
  kernel) in which none of its slowable pass kernels runs: at least ``G + U``, the gaps its
  passes force between consecutive compute-stream kernels (a kernel waiting for a TP collective
  that waits for the kernel before it: nothing else of the pass can run there, the stream is
  FIFO) and the kernels that are never slowed. A comm stream busy ``D`` seconds (its ops at
  their time alone; a stream runs one at a time) overlaps slowable kernels for at least
  ``D - Z - (outside the window)``, so ``step >= O + W + G + max(D - O - G - U, 0) s/(1+s)``,
  with ``W`` the pass kernels' base time and ``O`` what lies outside the window: before it,
  stage 0's ``before`` and the chain of chunk 0's forward through stages 0..j-1 (the bubble's
  chain, above), after it the backward chain back through them and stage 0's ``after``; the
  right side grows with each. Every stage's window gives such a bound; the last stage has the
  most of the bubble outside its window, and the stage before it is read too where it holds
  more layers (a split that evens out the LM head's load). On GPT-3 175B's ZeRO-2
  plans, whose gradient ReduceScatters keep the DP stream busy half the step beside the
  kernels, this is the tightest term. Not where combined 1F1B interleaves two micro-batches'
  passes (the gaps of one are not free of the other's kernels).

* **The stage's window** (:func:`window_bound`): between its first layer kernel and its last, a
  stage runs at least the longest chain of its own program through dependencies and each
  stream's FIFO order, kernels at their compute time, collectives at their time alone, sends
  and receives at 0 (:func:`window_s`, walked in the program built at the plan's
  micro-batches), and outside that window lie the bubble's chains and stage 0's ends as above.
  The passes' chains add up along the compute stream; the window also holds what the schedule
  puts between passes: with FSDP2 over a pipeline each micro-batch's forward waits for the
  AllGather of its stage's parameters, queued on the data-parallel stream behind the
  ReduceScatter of the backward before it (Qwen3-235B at tp 2 pp 32 ep 4 on 256 H100: 9.04 ->
  10.00 s, replayed 10.29). Taken on the same stages as the slowdown, and, in a sweep,
  only for plans whose other terms come within ``_NEAR`` of the best step so far (it builds
  a stage's whole program), and only for ZeRO-3 plans: the gathers are what it adds there.

``tests/unit/test_sweep_bound.py`` checks the bound stays below the simulated step time over
plans of several shapes and that pruning keeps an unpruned sweep's ranking; the sweep reports
how many plans it pruned.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial, reduce
from operator import add
from typing import Any, Callable, cast

from simulator.config.scenario import Scenario
from simulator.costs.compute import compute_time, compute_times, shape_key
from simulator.costs.model import CostModel
from simulator.replay.collector import built_frozen, collector_spared
from simulator.schedule.build import build_program, make_grid
from simulator.schedule.context_parallel import program_depends_on_cp_rank
from simulator.schedule.ir import CommOp, ComputeOp, Op, P2POp, ProgramBuilder
from simulator.schedule.pipeline import stage_message_bytes
from simulator.schedule.shapes import stage_units, virtual_layers
from simulator.schedule.transformer import LayerBuilder, LayerSpec

# Entries kept per cache before it is emptied; a sweep of thousands of plans needs a few hundred.
_CACHE_SIZE = 4096


def block_kind(spec: LayerSpec, layer: int) -> str:
    """What a layer's passes are built as: a hybrid model's block letter (``M``, ``*``, ``-``,
    ``E``: ``model.layer_pattern``), otherwise ``dense`` or ``moe``."""
    if spec.pattern and layer < len(spec.pattern):
        return spec.pattern[layer]
    return "moe" if spec.is_moe(layer) else "dense"


@dataclass(frozen=True)
class PassTimes:
    """Seconds no replay of one micro-batch's passes on one rank can beat (module docstring)."""

    fwd: dict[str, float]  # per block kind (block_kind), the layer's forward
    bwd: dict[str, float]  # per block kind, its backward, recompute included
    embedding: float  # embedding forward + backward
    head: float  # LM head and loss forward + backward
    bwd_kept: dict[str, float]  # per block kind, the backward of a layer full recompute leaves out

    def layer(self, spec: LayerSpec, layer: int) -> tuple[float, float]:
        k = block_kind(spec, layer)
        return self.fwd[k], (self.bwd_kept if layer in spec.kept_layers else self.bwd)[k]


@dataclass(frozen=True)
class _Passes:
    """The ops of every pass of one LayerSpec, each a program of its own."""

    layers: dict[str, tuple[list[Op], list[Op]]]  # per block kind, one layer's (forward, backward)
    embedding: list[Op]
    head: list[Op]
    kept: dict[str, list[Op]]  # per block kind, the backward without the layer's re-run

    def all(self) -> tuple[list[Op], ...]:
        return (*(ops for pair in self.layers.values() for ops in pair), self.embedding, self.head,
                *self.kept.values())


class _Cluster:
    """What one cluster's plans share: its cost model, collectives' times alone, pass times."""

    def __init__(self, scn: Scenario):
        from simulator.hardware.topology import build_topology

        self.profile = scn.profile  # kept alive: its id keys this entry
        self.costs = CostModel(build_topology(scn.profile, scn.nodes))
        self.alone: dict[tuple, float] = {}
        # kernels' compute times by their shape (costs.compute.shape_key: all compute_time reads)
        self.kernels: dict[tuple, float] = {}
        self.times: dict[tuple, tuple[PassTimes, PassTimes, PassTimes]] = {}


_passes: dict[Any, _Passes] = {}
_clusters: dict[tuple[int, int], _Cluster] = {}


def _bounded(cache: dict) -> dict:
    if len(cache) >= _CACHE_SIZE:
        cache.clear()
    return cache


def _layer_ops(spec: LayerSpec, layer: int) -> tuple[list[Op], list[Op]]:
    pb = ProgramBuilder()
    lb = LayerBuilder(spec)
    out = lb.forward(pb, layer, 0, -1)
    n_fwd = len(pb)
    lb.backward(pb, layer, 0, out)
    return _rebased(pb.ops[:n_fwd], 0), _rebased(pb.ops[n_fwd:], n_fwd)


def _rebased(ops: list[Op], start: int) -> list[Op]:
    """A slice of a program as a program of its own: dependencies before it dropped."""
    return [replace(op, deps=tuple(d - start for d in op.deps if d >= start)) for op in ops]


def _passes_of(spec: LayerSpec) -> _Passes:
    hit = _passes.get(spec)
    if hit is not None:
        return hit
    # the first layer of each block kind stands for its kind (a hybrid model's Mamba, attention,
    # MLP and MoE blocks differ as much as a dense layer and an MoE one), re-run or not as the
    # spec's recompute says; a layer that full recompute leaves out is priced as the same layer
    # without recompute
    every = replace(spec, kept_layers=frozenset())
    first: dict[str, int] = {}
    for layer in range(len(spec.pattern)) if spec.pattern else (0, max(spec.first_dense, 0)):
        first.setdefault(block_kind(spec, layer), layer)
    layers = {k: _layer_ops(every, layer) for k, layer in first.items()}
    kept = {k: pair[1] for k, pair in layers.items()}
    if spec.kept_layers:
        none = replace(every, recompute="none")
        kept = {k: _layer_ops(none, layer)[1] for k, layer in first.items()}
    lb = LayerBuilder(spec)
    pb = ProgramBuilder()
    lb.embedding_backward(pb, 0, lb.embedding_forward(pb, 0))
    emb = pb.ops
    pb = ProgramBuilder()
    lb.head_backward(pb, 0, lb.head_forward(pb, 0, -1))
    out = _bounded(_passes)[spec] = _Passes(layers, emb, pb.ops, kept)
    return out


def _cluster(scn: Scenario) -> _Cluster:
    """One entry per cluster (profile object and node count), its cost model built as the
    replay builds it."""
    key = (id(scn.profile), scn.nodes)
    hit = _clusters.get(key)
    if hit is None or hit.profile is not scn.profile:
        hit = _bounded(_clusters)[key] = _Cluster(scn)
    return hit


def _collective_s(cluster: _Cluster, kind: str, members: tuple[int, ...], size: int) -> float:
    """The collective's latency and phases alone on an empty network
    (:meth:`CostModel.time_alone_s`): a phase's flows cannot cross their busiest link faster than
    its capacity, nor beat their rate caps, however the replay shares the links. The cost model
    keeps each group shape's pattern, so a sweep plans an All-to-All of 64 ranks once (20 ms)
    and scales it for every other size and plan (0.1 ms)."""
    if len(members) <= 1:
        return 0.0
    key = (kind, members, size)
    t = cluster.alone.get(key)
    if t is None:
        costs = cluster.costs
        t = _bounded(cluster.alone)[key] = costs.time_alone_s(costs.plan(kind, members, size))
    return t


def _transfers(op: P2POp) -> tuple:
    """A send/recv batch as what prices it: (send?, axis, offset, bytes, transport) per transfer."""
    return tuple((True, t.axis, t.offset, t.nbytes, t.transport) for t in op.sends) + \
        tuple((False, t.axis, t.offset, t.nbytes, t.transport) for t in op.recvs)


def _p2p_s(cluster: _Cluster, grid: Any, rank: int, batch: tuple) -> float:
    """Seconds a send/recv batch of ``rank`` (:func:`_transfers`) lasts at least: its slowest
    transfer alone on an empty network. An NCCL transfer is its ``sendrecv`` plan of the pair,
    latency and bytes at the busiest link or the channels' rate cap (what the replay's flow gets
    at best, ``CostModel.p2p``); a userbuffers copy (TransformerEngine's ring exchange), which
    NCCL's channels do not cap, its latency alone."""
    longest = 0.0
    for send, axis, offset, nbytes, transport in batch:
        peer = grid.peer(rank, axis, offset)
        if peer == rank or nbytes <= 0:
            continue
        src, dst = (rank, peer) if send else (peer, rank)
        key = ("p2p", src, dst, nbytes, transport)
        t = cluster.alone.get(key)
        if t is None:
            costs = cluster.costs
            t = costs.p2p(src, dst, nbytes, transport).latency_s if transport != "nccl" else \
                costs.time_alone_s(costs.plan("sendrecv", (src, dst), nbytes))
            _bounded(cluster.alone)[key] = t
        longest = max(longest, t)
    return longest


def _pass_costs(ops: list[Op], gpu: Any, comm_s: list[float]) -> tuple[float, float, float]:
    """(chain, busy, free) of one pass: kernels at their compute time, collectives and send/recv
    batches at ``comm_s``.

    ``chain``: the longest chain from the first to the last compute-stream kernel, through the
    dependencies and the FIFO order of each stream (:func:`_walk`). Every kernel of the compute
    stream lies on that chain, so it is at least their sum; chained passes (the compute stream's
    FIFO order joins the last kernel of one to the first of the next) add up.
    ``busy``: the compute-stream kernels plus the gaps the pass forces between consecutive ones
    (the longest chain from a kernel's end to the next kernel's start through the ops that wait
    for it: a TP collective between them); ``free``: those gaps plus the kernels never slowed
    beside communication (``sm_fraction`` < 1). Both for :func:`slowdown_bound`."""
    kernels = [i for i, op in enumerate(ops) if isinstance(op, ComputeOp) and op.stream == "compute"]
    if not kernels:
        return 0.0, 0.0, 0.0
    first, last = kernels[0], kernels[-1]
    durations = [c if t is None else t for t, c in zip(compute_times(ops, gpu), comm_s)]
    chain = _walk(ops, durations, first, last, origin=durations[first])[last] or 0.0
    gaps = _forced_gaps(ops, durations, kernels)
    unslowed = sum(durations[k] for k in kernels if cast(ComputeOp, ops[k]).sm_fraction < 1.0)
    return chain, sum(durations[k] for k in kernels) + gaps, gaps + unslowed


def _forced_gaps(ops: list[Op], durations: list[float], kernels: list[int]) -> float:
    """Sum over consecutive compute-stream kernels k, k' of the longest chain from k's end to
    k''s start through the ops between them that wait for k (dependencies and each stream's FIFO
    order, as :func:`_walk`). Only those ops can delay k' (dependencies point backwards), so
    each op is visited once."""
    before: list[int] = []
    last_on: dict[str, int] = {}
    for i, op in enumerate(ops):
        before.append(last_on.get(op.stream, -1))
        last_on[op.stream] = i
    total = 0.0
    for k, nxt in zip(kernels, kernels[1:]):
        end = {k: 0.0}  # ends after k's end, of the ops reached from k
        for i in range(k + 1, nxt):
            reached = [end[d] for d in (*ops[i].deps, before[i]) if d in end]
            if reached:
                end[i] = max(reached) + durations[i]
        total += max([end[d] for d in (*ops[nxt].deps, before[nxt]) if d in end], default=0.0)
    return total


def stage_pass_times(scn: Scenario) -> tuple[LayerSpec, list[PassTimes]]:
    """The plan's layer spec (of the CP rank :func:`_stage_pass_costs` picks) and what its passes
    cost at least on each pipeline stage (on the rank of the stage's TP and DP coordinates 0).
    The chains are walked once per spec and times of its collectives, which the stages of a
    symmetric cluster share."""
    spec, costs = _stage_pass_costs(scn)
    return spec, [c[0] for c in costs]


def _stage_pass_costs(scn: Scenario) -> tuple[LayerSpec, list[tuple[PassTimes, PassTimes, PassTimes]]]:
    """Per stage, the (chain, busy, free) of :func:`_pass_costs` of every pass, each as PassTimes,
    on the CP rank whose layers' chains are longest. Where a rank's ops depend on its CP index
    (``context_parallel.program_depends_on_cp_rank``), the first and the last are compared: Ring
    Attention's contiguous layout leaves the last rank a full block at every step and the first
    the diagonal block alone (``ring_attention.blocks``), and the step waits for the last.
    Every rank's chains bound the step, so the longest is the tightest of them."""
    p = scn.parallel
    ranks = (0, p.cp - 1) if p.cp > 1 and program_depends_on_cp_rank(p.cp_comm) else (0,)
    best: tuple[float, LayerSpec, list[tuple[PassTimes, PassTimes, PassTimes]]] | None = None
    for cp_rank in ranks:
        spec = LayerSpec.from_scenario(scn, cp_rank)
        costs = _costs_on(scn, spec)
        load = sum(sum(costs[0][0].layer(spec, layer)) for layer in range(scn.model.layers))
        if best is None or load > best[0]:
            best = (load, spec, costs)
    assert best is not None
    return best[1], best[2]


def _costs_on(scn: Scenario, spec: LayerSpec) -> list[tuple[PassTimes, PassTimes, PassTimes]]:
    """:func:`_stage_pass_costs` of the rank whose layers ``spec`` builds."""
    grid = make_grid(scn)
    passes = _passes_of(spec)
    comms = sorted({(op.op, op.axes, op.size_bytes) for ops in passes.all() for op in ops if isinstance(op, CommOp)})
    cluster = _cluster(scn)
    gpu = scn.profile.gpu
    out: list[tuple[PassTimes, PassTimes, PassTimes]] = []
    batches = sorted({_transfers(op) for ops in passes.all() for op in ops if isinstance(op, P2POp)})
    axes_of = sorted({axes for _, axes, _ in comms})
    for stage in range(scn.parallel.pp):
        rank = grid.rank_of({"pp": stage, "cp": spec.cp_rank})
        groups = {axes: grid.group(rank, axes) for axes in axes_of}  # a pass's collectives share a few groups
        alone = {(kind, axes, size): _collective_s(cluster, kind, groups[axes], size) for kind, axes, size in comms}
        p2p = {batch: _p2p_s(cluster, grid, rank, batch) for batch in batches}
        key = (spec, tuple(alone.values()), tuple(p2p.values()))
        times = cluster.times.get(key)
        if times is None:
            def path(ops: list[Op]) -> tuple[float, float, float]:
                comm = [alone[(op.op, op.axes, op.size_bytes)] if isinstance(op, CommOp) else
                        p2p[_transfers(op)] if isinstance(op, P2POp) else 0.0 for op in ops]
                return _pass_costs(ops, gpu, comm)

            fwd = {k: path(pair[0]) for k, pair in passes.layers.items()}
            bwd = {k: path(pair[1]) for k, pair in passes.layers.items()}
            kept = {k: path(ops) for k, ops in passes.kept.items()}
            emb, head = path(passes.embedding), path(passes.head)

            def part(i: int) -> PassTimes:
                return PassTimes({k: v[i] for k, v in fwd.items()}, {k: v[i] for k, v in bwd.items()}, emb[i],
                                 head[i], {k: v[i] for k, v in kept.items()})

            times = (part(0), part(1), part(2))
            _bounded(cluster.times)[key] = times
        out.append(times)
    return out


def _stage_bounds(scn: Scenario, spec: LayerSpec, times: list[PassTimes]) -> list[float]:
    pp, vp = scn.parallel.pp, scn.parallel.vp
    vl = virtual_layers(scn)  # each stage's layers as stage_layers gives them, the split made once
    out = []
    for s, st in enumerate(times):
        t = sum(sum(st.layer(spec, layer)) for layer in (layer for c in range(vp) for layer in vl[c * pp + s]))
        if s == 0:
            t += st.embedding
        if s == pp - 1:
            t += st.head
        out.append(t)
    return out


def _chunk0_bounds(scn: Scenario, spec: LayerSpec, times: list[PassTimes]) -> list[tuple[float, float]]:
    vl = virtual_layers(scn)
    out = []
    for s, st in enumerate(times):
        f = b = 0.0
        for layer in vl[s]:
            lf, lb = st.layer(spec, layer)
            f, b = f + lf, b + lb
        out.append((f, b))
    return out


def stage_compute_lower_bounds(scn: Scenario) -> list[float]:
    """``T(j)``: seconds per micro-batch of each pipeline stage's passes, at least."""
    return _stage_bounds(scn, *stage_pass_times(scn))


def chunk0_lower_bounds(scn: Scenario) -> list[tuple[float, float]]:
    """``(F0(i), B0(i))``: the forward and backward of model chunk 0 of each stage, one
    micro-batch (transformer layers only), at least."""
    return _chunk0_bounds(scn, *stage_pass_times(scn))


def _with_micro_batches(scn: Scenario, n: int) -> Scenario:
    """The plan with ``n`` micro-batches per step (the schedule reads nothing else of the batch)."""
    from dataclasses import replace

    t = scn.training
    return replace(scn, training=t.model_copy(update={"global_batch": t.micro_batch * scn.dp * n}))


@dataclass
class _Priced:
    """A stage's program priced (:func:`_priced_program`), with what the bounds read of it, taken
    in the one pass that prices it."""

    ops: list[Op]
    # each op's seconds at least, and per stream its ops' seconds added in program order (a
    # stream runs them one after the other); None where only the collectives were priced
    durations: list[float] | None
    sums: dict[str, float] | None
    comm_sums: dict[str, float]  # per stream, its collectives' seconds added in program order
    heads: dict[str, int]  # per stream, its first op

    def compute_kernel(self, phases: tuple[str, ...], last: bool = False, layer: bool = False) -> int | None:
        """The first (or last) kernel of the compute stream of one of ``phases`` (with ``layer``,
        of a transformer layer's pass)."""
        ops = self.ops
        for i in (range(len(ops) - 1, -1, -1) if last else range(len(ops))):
            op = ops[i]
            if op.__class__ is ComputeOp and op.stream == "compute" and op.tag.phase in phases and (
                    not layer or (op.tag.layer is not None and op.tag.layer >= 0)):
                return i
        return None


@dataclass(frozen=True)
class _PricedPass:
    """The ops of one stamp of a layer pass's template priced (:func:`_priced_program`): every
    stamp of the template has the same fields but dependencies and tags, so the same seconds."""

    durations: tuple[float, ...]
    # per stream, in the order of their first op: that op's offset in the pass and the seconds
    # of the stream's ops in program order
    streams: tuple[tuple[str, int, tuple[float, ...]], ...]
    comms: tuple[tuple[str, tuple[float, ...]], ...]  # per stream, its collectives' seconds in order


def _priced_program(scn: Scenario, stage: int, build: Callable[..., list[Op]], kernels: bool,
                    passes: dict[int, tuple[Any, _PricedPass]], cp_index: int = 0) -> _Priced:
    """A stage's program and each op's seconds at least: kernels at their compute time
    (:func:`~simulator.costs.compute.compute_time`, one evaluation per kernel shape, as
    :func:`~simulator.costs.compute.compute_times`), every collective at its time alone (its
    group's size uncapped), sends and receives at 0. Without ``kernels``, only the collectives
    (what :func:`comm_streams_s` reads).

    The layer passes the build stamped from a template (``ProgramBuilder.stamps``; nine tenths
    of the GPT-3 175B sweep's ops) are priced once per template (``passes``, shared by the
    builds of one stage; a template relabeled for another layer by the one it was relabeled
    from, ``_Template.origin``): a stamp's ops are the template's but their dependencies, tags
    and names, which no price reads. Each stream's sum adds its ops' seconds in program order
    either way (the ops of other streams do not enter it), so every figure is the one priced
    op by op (``tests/unit/test_sweep_bound.py``). A stamp whose ops the build replaced or
    moved since (``tuple`` equality with the ops it appended: MoE's SM share, combined 1F1B's
    reordering) is priced op by op."""
    stamps: list[tuple[int, tuple[Op, ...], Any]] = []
    ops = build(scn, stage, cp_index, stamps=stamps)
    grid = make_grid(scn)
    rank = grid.rank_of({"pp": stage, "cp": cp_index})
    cluster = _cluster(scn)
    gpu = scn.profile.gpu
    shapes = cluster.kernels
    groups: dict[tuple[str, ...], tuple[int, ...]] = {}
    alone: dict[tuple, float] = {}  # by (kind, axes, size): the program's thousands of collectives are a few dozen
    durations: list[float] | None = [] if kernels else None
    # per stream, its ops' seconds (with kernels) and its collectives' seconds in program order,
    # added up at the end
    times: dict[str, list[float]] = {}
    comm_times: dict[str, list[float]] = {}
    heads: dict[str, int] = {}

    def collective(op: CommOp) -> float:
        key = (op.op, op.axes, op.size_bytes)
        t = alone.get(key)
        if t is None:
            members = groups.get(op.axes)
            if members is None:
                members = groups[op.axes] = grid.group(rank, op.axes)
            t = alone[key] = _collective_s(cluster, op.op, members, op.size_bytes)
        return t

    def seconds(op: Op) -> float:
        cls = op.__class__
        if cls is CommOp:
            return collective(op)  # type: ignore[arg-type]
        if cls is ComputeOp and kernels:
            key = shape_key(op)  # type: ignore[arg-type]
            t = shapes.get(key)
            if t is None:
                t = shapes[key] = compute_time(op, gpu)  # type: ignore[arg-type]
            return t
        return 0.0

    def op_by_op(lo: int, hi: int) -> None:
        for i in range(lo, hi):
            op = ops[i]
            stream = op.stream
            seq = times.get(stream)
            if seq is None:
                heads[stream] = i
                seq = times[stream] = []
            if op.__class__ is CommOp:  # the data-parallel collectives, most of the ops left
                t = alone.get((op.op, op.axes, op.size_bytes))
                if t is None:
                    t = collective(op)
                comm = comm_times.get(stream)
                if comm is None:
                    comm = comm_times[stream] = []
                comm.append(t)
            else:
                t = seconds(op)
            if durations is not None:
                seq.append(t)
                durations.append(t)

    def priced_pass(seg: tuple[Op, ...]) -> _PricedPass:
        each = [seconds(op) for op in seg]
        streams: dict[str, tuple[int, list[float]]] = {}
        comms: dict[str, list[float]] = {}
        for k, (op, t) in enumerate(zip(seg, each)):
            entry = streams.get(op.stream)
            if entry is None:
                entry = streams[op.stream] = (k, [])
            entry[1].append(t)
            if op.__class__ is CommOp:
                comms.setdefault(op.stream, []).append(t)
        return _PricedPass(tuple(each), tuple((s, k, tuple(ts)) for s, (k, ts) in streams.items()),
                           tuple((s, tuple(ts)) for s, ts in comms.items()))

    done = 0  # ops priced so far
    for start, seg, tpl in stamps:
        n = len(seg)
        if start < done or tuple(ops[start:start + n]) != seg:
            continue
        if done < start:
            op_by_op(done, start)
        tpl = tpl.origin or tpl  # a relabeled template's ops differ from its origin's in their names alone
        hit = passes.get(id(tpl))
        if hit is None or hit[0] is not tpl:
            hit = passes[id(tpl)] = (tpl, priced_pass(seg))
        priced = hit[1]
        for stream, first, ts in priced.streams:
            seq = times.get(stream)
            if seq is None:
                heads[stream] = start + first
                seq = times[stream] = []
            if durations is not None:
                seq.extend(ts)
        for stream, ts in priced.comms:
            seq = comm_times.get(stream)
            if seq is None:
                seq = comm_times[stream] = []
            seq.extend(ts)
        if durations is not None:
            durations.extend(priced.durations)
        done = start + n
    op_by_op(done, len(ops))
    # each sum in program order, as the replay's FIFO stream runs them
    sums = {k: reduce(add, v, 0.0) for k, v in times.items()} if kernels else None
    comm_sums = {k: reduce(add, v, 0.0) for k, v in comm_times.items()}
    return _Priced(ops, durations, sums, comm_sums, heads)


def _walk(ops: list[Op], durations: list[float], start: int, stop: int | None,
          origin: float = 0.0) -> list[float | None]:
    """End times of the ops reached from op ``start`` (ending at ``origin``; ``start`` -1: every
    op, none waiting at first) through dependencies and each stream's FIFO order, up to op
    ``stop``. Ops before ``start`` are neither walked nor looked at: none is reached, so an op's
    predecessor on its stream before ``start`` adds nothing to it."""
    end: list[float | None] = [None] * len(ops)
    last_on: dict[str, int] = {}
    first = max(start, 0)
    for i, op in enumerate(ops[first:len(ops) if stop is None else stop + 1], first):
        prev = last_on.get(op.stream)
        last_on[op.stream] = i
        if i == start:
            end[i] = origin
            continue
        reached = [e for e in (end[p] for p in (*op.deps, *(() if prev is None else (prev,)))) if e is not None]
        if reached or start < 0:
            end[i] = max(reached, default=0.0) + durations[i]
    return end


def _per_flush(scn: Scenario) -> int:
    """The fewest micro-batches every schedule accepts: ``pp`` per flush."""
    return scn.parallel.pp * scn.parallel.pp_flushes


def _extended(scn: Scenario, per_flush: int, sums: dict[str, float], more: dict[str, float]) -> dict[str, float]:
    """Stream sums at the plan's micro-batches, on the line through those at ``per_flush``
    (``sums``) and twice that (``more``): one more micro-batch adds the same ops to a stream."""
    scale = (scn.n_micro - per_flush) / per_flush
    return {k: v + scale * max(more.get(k, 0.0) - v, 0.0) for k, v in sums.items()}


@dataclass(frozen=True)
class ProgramFloor:
    """What stage 0's program itself forces beyond its passes' chains (module docstring)."""

    before: float  # before its first forward kernel can start
    after: float  # after its last forward or backward kernel has ended
    stream: float  # the busiest stream's ops end to end (a stream is FIFO)


def _priced_programs(scn: Scenario, stage: int) -> list[_Priced]:
    """The stage's priced program (:func:`_priced_program`) with ``pp`` micro-batches per flush,
    and with twice that where the plan has more; the last ones asked for are kept (the bounds of
    one plan read stage 0's and the last stage's, the same stage when ``pp`` is 1)."""
    key = (id(scn), scn.training.global_batch, stage)
    if _programs_kept[0] == key:
        return _programs_kept[1]
    per_flush = _per_flush(scn)
    few = scn if scn.n_micro <= per_flush else _with_micro_batches(scn, per_flush)
    # build_program turns the cyclic collector off while it builds, but the first collection
    # after it scanned the two programs' hundreds of thousands of ops (no cycles) while they
    # were priced: 0.56 of 3.1 CPU s of the 53 GPT-3 175B plans' bounds (gc.callbacks), 0.03
    # with the ops frozen as built, as the replay does (replay/collector.py).
    chunks = stage_units(scn, stage)  # the same for both builds (model and parallelism alone)
    with collector_spared() as frozen:
        build = partial(built_frozen(build_program) if frozen else build_program, chunks=chunks)
        # the last stage's are read for their collectives alone (comm_streams_s)
        kernels = stage == 0
        passes: dict[int, tuple[Any, _PricedPass]] = {}  # the stage's layer passes, priced once for both
        out = [_priced_program(few, stage, build, kernels, passes)]
        if few is not scn:
            # Read for its stream sums alone where the stage is not the last (program_floor);
            # the last stage's is walked through its dependencies too (_after_backward).
            last = stage == scn.parallel.pp - 1
            out.append(_priced_program(_with_micro_batches(scn, 2 * per_flush), stage,
                                       build if last else partial(build, priced_only=True), kernels, passes))
    _programs_kept[:] = [key, out, scn]  # scn kept alive: its id keys the entry
    return out


_programs_kept: list[Any] = [None, None, None]


def program_floor(scn: Scenario) -> ProgramFloor:
    """Stage 0's ends and busiest stream, from its program with ``pp`` micro-batches per flush
    (the fewest every schedule accepts) and twice that: what one more micro-batch adds to a
    stream is the same for every micro-batch of a flush, so the stream's sum at the plan's own
    count is the line through those two (module docstring)."""
    programs = _priced_programs(scn, 0)
    few = programs[0]
    sums, ops, durations = few.sums, few.ops, few.durations
    assert sums is not None and durations is not None  # stage 0's are priced whole
    if len(programs) > 1:
        assert programs[1].sums is not None
        sums = _extended(scn, _per_flush(scn), sums, programs[1].sums)
    first = few.compute_kernel(("fwd", "bwd"))
    if first is None:
        return ProgramFloor(0.0, 0.0, max(sums.values(), default=0.0))
    last = few.compute_kernel(("fwd", "bwd"), last=True)
    assert last is not None
    head = _walk(ops, durations, -1, first)
    after = max((e for e in _walk(ops, durations, last, None) if e is not None), default=0.0)
    return ProgramFloor((head[first] or 0.0) - durations[first], after, max(sums.values(), default=0.0))


def passes_lower_bound(scn: Scenario) -> float:
    """Seconds no replay of this plan's passes and bubble can beat (the first two terms of the
    module docstring): milliseconds, and shared by a sweep's plans, so every plan gets it."""
    spec, times = stage_pass_times(scn)
    micro = scn.n_micro
    best, before = 0.0, 0.0
    hops = _stage_hops_s(scn, spec) + [0.0]
    for tj, (f0, b0), hop in zip(_stage_bounds(scn, spec, times), _chunk0_bounds(scn, spec, times), hops):
        best = max(best, micro * tj + before)
        before += f0 + b0 + 2 * hop
    return best


def _stage_hops_s(scn: Scenario, spec: LayerSpec) -> list[float]:
    """Per pipeline boundary (stage i to i + 1), one message's send alone on an empty network
    (:func:`_p2p_s`): the first micro-batch's activations cross it before stage i + 1 can start,
    and the last one's gradients on their way back after it ends, so the bubble's chain crosses
    each boundary twice. The message is what the schedule sends (``pipeline.stage_message_bytes``;
    the AllGather after the receive of Megatron's scatter/gather counts 0)."""
    p = scn.parallel
    if p.pp <= 1:
        return []
    msg, _ = stage_message_bytes(scn, spec)
    grid, cluster = make_grid(scn), _cluster(scn)
    batch = ((True, "pp", +1, msg, "nccl"),)
    return [_p2p_s(cluster, grid, grid.rank_of({"pp": i}), batch) for i in range(p.pp - 1)]


def _after_backward(program: _Priced) -> set[str]:
    """The streams whose first op waits, through dependencies, for the first backward kernel of
    the compute stream (a gradient's ReduceScatter): nothing of them is in flight before the
    stage's first pass kernel, a forward that comes before that kernel on the FIFO stream.

    The ops :func:`_walk` reaches from that kernel, searched backwards from each stream's first
    op after it: an op is reached when one of its dependencies or its predecessor on its stream
    is, and every later op of the kernel's own stream is (its FIFO order), where most searches
    end. A stream whose first op comes before that kernel is not reached (dependencies and each
    stream's FIFO order point backwards)."""
    first = program.compute_kernel(("bwd",))
    if first is None:
        return set()
    later = {stream: i for stream, i in program.heads.items() if i >= first}
    if not later:
        return set()
    ops = program.ops
    own = ops[first].stream
    # an op's predecessor on its stream, of the ops the searches visit (a stream's first op has none)
    prev: dict[int, int] = {i: -1 for i in program.heads.values()}
    reached: dict[int, bool] = {first: True}

    def predecessor(i: int) -> int:
        p = prev.get(i)
        if p is None:
            stream, p = ops[i].stream, i - 1
            while p >= first and ops[p].stream != stream:
                p -= 1
            prev[i] = p
        return p

    def is_reached(head: int) -> bool:
        stack = [head]
        while stack:
            i = stack[-1]
            if i in reached:
                stack.pop()
                continue
            if ops[i].stream == own:  # after the kernel on its FIFO stream
                reached[i] = True
                stack.pop()
                continue
            # what it waits for, after the kernel and before it (_walk reads only ops already
            # walked: a dependency on a later op reaches nothing)
            waits = [d for d in (*ops[i].deps, predecessor(i)) if first <= d < i]
            open_ = [d for d in waits if d not in reached]
            if open_:
                stack.extend(open_)
                continue
            reached[i] = any(reached[d] for d in waits)
            stack.pop()
        return reached[head]

    return {stream for stream, i in later.items() if is_reached(i)}


def comm_streams_s(scn: Scenario, stage: int) -> dict[str, tuple[float, bool]]:
    """Per communication stream of ``stage``: the seconds it is in flight at least (its
    collectives one after the other at their time alone, at the plan's micro-batches: the line
    through ``pp`` and ``2 pp`` per flush, as :func:`program_floor`), and whether its first op
    waits for the first backward kernel (:func:`_after_backward`, in both programs)."""
    programs = _priced_programs(scn, stage)
    sums, late = programs[0].comm_sums, _after_backward(programs[0])
    if len(programs) > 1:
        sums = _extended(scn, _per_flush(scn), sums, programs[1].comm_sums)
        late &= _after_backward(programs[1])
    return {k: (v, k in late) for k, v in sums.items()}


def _outside_s(scn: Scenario, floor: ProgramFloor, stage: int) -> tuple[float, float]:
    """What lies outside ``stage``'s window at least: before it, stage 0's ``before`` and chunk
    0's forward of the first micro-batch through the stages before it with its sends across
    their boundaries; after it, their backward of the last micro-batch with its sends, then
    stage 0's ``after`` (the bubble's chains, module docstring)."""
    spec, costs = _stage_pass_costs(scn)
    chunk0 = _chunk0_bounds(scn, spec, [c[0] for c in costs])[:stage]
    hops = sum(_stage_hops_s(scn, spec)[:stage])
    return (floor.before + sum(f for f, _ in chunk0) + hops, floor.after + sum(b for _, b in chunk0) + hops)


def slowdown_bound(scn: Scenario, floor: ProgramFloor, stages: tuple[int, ...] | None = None) -> float:
    """``O + W + G + max(D - O - G - U, 0) s/(1+s)`` (module docstring, "Kernels slowed beside
    communication") on the stages of :func:`_last_two` (or ``stages``), the larger: ``O`` the time
    outside the stage's window, before and after it (:func:`_outside_s`), ``W + G``
    the stage's passes' kernels and forced gaps, ``G + U`` the part of its window no slowable
    pass kernel fills, ``D`` a communication stream's seconds in flight, the best stream. A
    stream whose first op waits for a backward kernel is in flight only after the window has
    begun: only the time after it is taken off.

    Any stage's window gives such a bound; the last stage's has the most outside it, and where
    the stage before it holds more layers, that stage's gradient collectives can slow more
    kernels: Qwen3-235B at tp 2 pp 16 over ZeRO-2 (ep 4, the sweep of that model on 256 H100)
    has 4 layers on its last stage beside 6 on the others, and the ReduceScatters of 6 layers'
    gradients slow stage 14's kernels by 0.36 s, on top of the 0.95 s of the bubble outside
    its window: 9.34 s, where the last stage gives 9.00 and the replay 10.15."""
    s = scn.profile.gpu.overlap_slowdown
    if scn.parallel.overlap_moe_expert_parallel_comm:
        # Combined 1F1B interleaves one micro-batch's forward with another's backward
        # (schedule/moe_overlap.py): the other pass's kernels may fill a pass's gaps.
        return 0.0
    spec, costs = _stage_pass_costs(scn)
    busy = _stage_bounds(scn, spec, [c[1] for c in costs])
    free = _stage_bounds(scn, spec, [c[2] for c in costs])
    micro = scn.n_micro
    best = 0.0
    for stage in stages if stages is not None else _last_two(scn):
        before, after = _outside_s(scn, floor, stage)
        bound = before + after + micro * busy[stage]
        if s > 0:
            beside = max((d - after - (0.0 if late else before) - micro * free[stage]
                          for d, late in comm_streams_s(scn, stage).values()), default=0.0)
            bound += max(beside, 0.0) * s / (1.0 + s)
        best = max(best, bound)
    return best


def window_s(scn: Scenario, stage: int) -> float:
    """Seconds from the start of ``stage``'s first layer kernel to the end of its last, at least:
    the longest chain between them through dependencies and each stream's FIFO order in the
    stage's own program at the plan's micro-batches (:func:`_walk`; kernels at their compute
    time, collectives at their time alone, sends and receives at 0), on the CP rank whose passes
    the other terms read (:func:`_stage_pass_costs`: its stage receives from that rank of the
    stage before). Beyond the passes' chains it holds what the schedule puts between passes:
    with FSDP2 over a pipeline, each micro-batch's forward waits for the AllGather of its
    stage's parameters, queued on the data-parallel stream behind the ReduceScatter of the
    backward before it (module docstring, "The stage's window")."""
    cp_index = _stage_pass_costs(scn)[0].cp_rank  # the rank whose chains the bubble's terms are
    build = partial(build_program, chunks=stage_units(scn, stage))
    with collector_spared() as frozen:
        priced = _priced_program(scn, stage, built_frozen(build) if frozen else build, True, {}, cp_index)
    durations = priced.durations
    assert durations is not None
    first = priced.compute_kernel(("fwd",), layer=True)
    last = priced.compute_kernel(("bwd",), last=True, layer=True)
    if first is None or last is None or first > last:
        return 0.0
    return _walk(priced.ops, durations, first, last, origin=durations[first])[last] or 0.0

# In a sweep, a plan's bound is refined by the terms that build another stage's programs (the
# slowdown on the stage before the last, the windows: a stage's whole program) only where its
# other terms come this close to the best step so far: each adds a few percent of the step, and
# reading them costs up to a tenth of the plan's replay. Read for every plan that reaches them
# (the stage before the last whatever its layers, windows whatever the ZeRO stage), they took
# the Mixtral 8x22B sweep of docs/sweep.md from 131 to 157 s and pruned no more; as they are
# read, its 752 refined bounds take 27 CPU s where they took 22.
_NEAR = 0.9


def window_bound(scn: Scenario, floor: ProgramFloor, enough: float | None = None) -> float:
    """``before + window + after`` on the stages of :func:`_last_two`, the larger (module
    docstring, "The stage's window"): ``before`` and ``after`` what lies outside the stage's
    window (:func:`_outside_s`), the window by :func:`window_s`."""
    best = 0.0
    for stage in _last_two(scn):
        if enough is not None and best >= enough:
            break
        before, after = _outside_s(scn, floor, stage)
        best = max(best, before + window_s(scn, stage) + after)
    return best


def step_lower_bound(scn: Scenario, passes: float | None = None, enough: float | None = None) -> float:
    """Seconds no replay of this plan can beat (module docstring). Walking stage 0's program costs
    a tenth of a second or more, so a sweep asks for it only of plans whose ``passes`` bound
    (:func:`passes_lower_bound`) does not already rule them out. With ``enough`` (the best step
    so far), the slowdown term, which builds the last stage's program too, is left out where
    stage 0's terms already reach it: a bound that high prunes the plan either way; the slowdown
    on the stage before the last and the windows of ZeRO-3 plans, which build more programs, are
    read only where the terms before them come within ``_NEAR`` of it."""
    if passes is None:
        passes = passes_lower_bound(scn)
    floor = program_floor(scn)
    bound = max(floor.before + passes + floor.after, floor.stream)
    if enough is not None and bound >= enough:
        return bound
    pp = scn.parallel.pp
    bound = max(bound, slowdown_bound(scn, floor, (pp - 1,)))
    if enough is not None and not _NEAR * enough <= bound < enough:
        return bound
    # the terms that build more programs, for plans near the best alone
    if len(_last_two(scn)) > 1:
        bound = max(bound, slowdown_bound(scn, floor, (pp - 2,)))
    if scn.parallel.zero < 3 or (enough is not None and bound >= enough):
        return bound
    return max(bound, window_bound(scn, floor, enough))


def _last_two(scn: Scenario) -> tuple[int, ...]:
    """The last pipeline stage, and the one before it where that holds more transformer layers
    (the one stage without a pipeline). With as many layers, the last stage's terms are the
    larger: it runs the same passes and the LM head's, and has one stage's chains more outside
    its window; with fewer (a split that evens out the head's load: Qwen3-235B's 6 x 15 + 4 over
    16 stages), the stage before it can give more."""
    p = scn.parallel
    if p.pp <= 2:
        return (p.pp - 1,)
    vl = virtual_layers(scn)
    held = [sum(len(vl[c * p.pp + s]) for c in range(p.vp)) for s in (p.pp - 2, p.pp - 1)]
    return (p.pp - 1, p.pp - 2) if held[0] > held[1] else (p.pp - 1,)

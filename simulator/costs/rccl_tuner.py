"""RCCL's own choice of algorithm and protocol, for communicators of AMD GPUs.

RCCL keeps NCCL's selection structure (``ncclTopoTuneModel`` fills a latency and a bandwidth
per collective, algorithm and protocol; ``getAlgoInfo`` takes the least ``latency + bytes /
bandwidth``) but fills it from its own tables, ``rcclTuningModel[]`` in ``src/graph/tuning.cc``
of ROCm/rccl, picked per platform by the ``tuning=`` option of the matching ``rome_models.cc``
entry; and from RCCL 2.22 on, ``rcclUpdateCollectiveProtocol`` (``src/rccl_wrap.cc``) then
replaces the protocol of a multi-node AllReduce, AllGather or ReduceScatter by per-size cut-offs
(``llProtoRanges``): Simple, except LL while the bytes per rank lie in the LL range.

Encoded first (:data:`RELEASE_2_21`): ``tuning_model_5``, the table of the 8-GPU xGMI-mesh platforms (``rome_model_79``
without NICs, ``rome_model_84`` with NICs: MI300X), which RCCL applies to gfx942 and gfx950 alike
(the arch checks of ``tuning.cc`` name both). Read from ROCm/rccl ``src/graph/tuning.cc`` at
commit 9e22c79 (RCCL 2.2x develop; the October 2024 develop tree, ``makefiles/version.mk`` 2.21.5,
has the same latencies and ratios with LL128's entries zeroed, Tree/Simple's correction at 1.0 up
to 2 GiB, Ring/Simple's reaching 0.8 only at 512 MiB, and no protocol ranges) and
``src/rccl_wrap.cc`` (``rcclUpdateCollectiveProtocol``, ``rcclGetSizePerRank``):

* base latency (us): LL 12, LL128 12, Simple 17 for ring and tree;
* hop latency (us) per link class, (LL, LL128, Simple): xGMI (RCCL's NVLink class) tree
  (0.9, 0.9, 2.3), ring (0.8, 0.8, 2.1); network tree (10.5, 10.5, 25), ring (9.5, 9.5, 320);
  with one GPU per node every algorithm uses the tree's network row; across nodes a ring step
  costs at least the host's net overhead (2 us on AMD hosts, 3x for Simple), as in NCCL;
* bandwidth: channels x per-channel speed (``bwIntra`` on <= 2 nodes, else ``bwInter``) times
  ``bwRatio[<=2 nodes | more][algo][proto]``: tree (0.06, 0.06, 0.11 | 0.59), ring
  (0.08, 0.08, 1.00); ring converted by n/nsteps, tree by 1/2 (no NCCL caps: RCCL compiles the
  ``llMaxBw``/``perChMax*`` refinements out);
* per-size correction of that bandwidth, index log2(bytes/64) up to 26 (4 GiB and above use the
  last): :data:`TREE_CORRECTION` always, :data:`RING_CORRECTION` when the communicator spans nodes;
* LL128 disabled (enabled only in builds with ``ENABLE_LL128`` on platforms whose rome model sets
  ``ll128Enabled``, which the MI300X models of that tree do not; gfx950 from 2.26: below);
  Tree/Simple skipped on one node;
* multi-node protocol ranges (bytes per rank: the call's bytes for AllReduce, bytes / ranks for
  AllGather and ReduceScatter): LL in (0, 1 MiB] for AllReduce, (0, 96 KiB] for AllGather,
  (0, 640 KiB] for ReduceScatter, Simple above.

The tables drive the *choice* only. Several of their numbers are weights that steer it (a ring's
Simple network hop of 320 us against 9.5 us for LL keeps rings off until 256 MiB; Tree/Simple's
bandwidth ratio of 0.11 on two nodes is not a rate a tree delivers), so the time of what RCCL
runs is the same flow and latency model as NCCL's (:mod:`simulator.costs.collectives`), with the
deployed constants fitted on RCCL systems (:mod:`simulator.costs.deployed`, key ``<transport>/rccl``).

Per release (:func:`tables_for`, keyed by the RCCL release a sweep's header names, the ``nccl.version``
of an AMD profile, and the GPU: gfx942 = CDNA3, gfx950 = CDNA4). RCCL 2.26.6 (ROCm 7.0.0) added gfx950
with its own table, ``tuning_model_6`` (``rcclApplyTuningOverrides`` sets ``tuning = 6`` on gfx950), and
turned LL128 on there; the multi-node protocol ranges gained an LL128 range that overrides LL while the
bytes per rank lie in it (``rcclUpdateCollectiveProtocol``: Simple, then LL in its range, then LL128 in
its range when the topology has ``ll128Enabled``). ROCm/rccl ``CHANGELOG.md``: "RCCL 2.26.6 for ROCm
7.0.0 ... Enabled LL128 protocol on gfx950 ... LL/LL128 usage ranges for AR, AG, and RS are part of the
tuning models"; "RCCL 2.22.3 for ROCm 6.4.2: Added support for the LL128 protocol on gfx942" (enabled by
the rome model that matches the node, not by the arch); "RCCL 2.28.3 for ROCm 7.11: Updated multi-node
LL/LL128 tuning for gfx950" (not encoded: releases from 2.28 take the newest encoded tables). The
2.26-2.27 tables were read from ``src/graph/tuning.cc`` of that tree (``tuning_model_5`` and
``tuning_model_6``, the ``rcclTuningModel[]`` of 7 models whose ``ncclTopoGetAlgoTime`` batches pipelined
collectives by ``NCCL_MAX_DEV_WORK_BATCH_COLLS``, NCCL 2.23+ code). The file names no release; it is
placed by the CHANGELOG entries above: it has 2.26.6's gfx950 table and LL128 ranges, and not the later
retuning (the newest tree's ``tuning_model_6``, 2.30-era, runs AllReduce LL to 262144 and LL128 to
70640910 bytes per rank and adds per-size channel thresholds):

* gfx950, ``tuning_model_6``: latencies and bandwidth ratios as ``tuning_model_5``; its own per-size
  corrections (:data:`TREE_CORRECTION_6`, :data:`RING_CORRECTION_6`); AllReduce LL in (0, 131071] and
  LL128 in (131071, 17660227] bytes per rank, ReduceScatter LL (0, 131071] and LL128 (131071, 4 MiB],
  AllGather LL (0, 7] and LL128 (7, 8 MiB]; LL128 enabled (the tuner's bandwidth and the ranges);
* gfx942, ``tuning_model_5``: as before, the AllReduce LL range (0, 1 MiB] with an LL128 range
  (1 MiB, 9437184] that applies only where the node's rome model sets ``ll128Enabled``; the MI300X
  models of the October 2024 tree do not, so LL128 stays off on gfx942 here.

Releases before 2.26 (the October 2024 tree, :data:`RELEASE_2_21`) have no gfx950 table and no LL128
range; the newest encoded set (:data:`RELEASE_2_26`) serves a profile that names no release.

What the measured sweeps show (data/nccl/mi300x16_allreduce_2node_aac10_roce.csv, RCCL 2.22.3;
mi355x16_allreduce_2node_aac14_pollara.csv, RCCL 2.26.6): busbw steps up between 128 and 256 MiB
(173 -> 294 GB/s and 242 -> 305 GB/s), where these tables move AllReduce from Tree/Simple to
Ring/Simple (the ring correction reaches 1.0 at 256 MiB). On gfx950 (AAC14, RCCL 2.26.6; Alibaba's
MI355X, 2.27.7) 128 KiB-4 MiB take 66-119 and 51-89 us where Tree/Simple is timed at 128-156 us:
the LL128 range, Tree/LL128 timed at 80-111 us. Above 4 MiB AAC14's rows (166 and 262 us at 8 and 16
MiB) sit nearer Tree/Simple (182, 258 us) than Tree/LL128 (137, 195 us): the sweep does not show
where its release's LL128 range ends, and the 2.26-2.27 table read here ends it at 16.8 MiB.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from simulator.config.nccl_overrides import release_reached
from simulator.costs.nccl_constants import PROTOS
from simulator.costs.nccl_graph import TunerContext

_Row = tuple[float, float, float]  # LL, LL128, Simple

BASE_LATENCY_US: dict[str, _Row] = {"tree": (12.0, 12.0, 17.0), "ring": (12.0, 12.0, 17.0)}
HW_LATENCY_US: dict[str, dict[str, _Row]] = {
    "nvlink": {"tree": (0.9, 0.9, 2.3), "ring": (0.8, 0.8, 2.1)},  # xGMI is RCCL's LINK_NVL
    "pci": {"tree": (2.2, 2.2, 5.7), "ring": (2.2, 2.2, 5.7)},
    "net": {"tree": (10.5, 10.5, 25.0), "ring": (9.5, 9.5, 320.0)},
}
# bwRatio: [0] on <= 2 nodes, [1] on more
BW_RATIO: tuple[dict[str, _Row], dict[str, _Row]] = (
    {"tree": (0.06, 0.06, 0.11), "ring": (0.08, 0.08, 1.00)},
    {"tree": (0.06, 0.06, 0.59), "ring": (0.08, 0.08, 1.00)},
)
# Index log2(bytes / 64), 0..26 (64 B .. 4 GiB), per protocol (LL, LL128, Simple).
TREE_CORRECTION: dict[str, tuple[float, ...]] = {
    "ll": (.1, .1, .1, .1, .1, .1, 1., 1., 1., 1., 1., .6, 1., .9, 1., 1., .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1),
    "ll128": (.1, .1, .1, .1, .1, .1, 1., 1., 1., 1., 1., .6, 1., .9, 1., 1., .1, .1, .1, .1, .1, .1, .1, .1, .1, .1,
              .1),
    "simple": (.1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .7, 1., 1., 1., 1., 1., .7, .7, .5, .6, .6,
               .6),
}
RING_CORRECTION: dict[str, tuple[float, ...]] = {
    "ll": (.1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, 1., .2, 1., .4, .4, .1, .2, .2, .1, .1, .1, .1, .1, .1, .1, .1),
    "ll128": (.1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, 1., .2, 1., .4, .4, .1, .2, .2, .1, .1, .1, .1, .1, .1, .1,
              .1),
    "simple": (.1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, 1., .8, 1., 1.,
               1.),
}
# llProtoRanges of tuning_model_5: the LL range (min, max] of bytes per rank, multi-node only.
LL_RANGE: dict[str, tuple[int, int]] = {"reducescatter": (0, 655360), "allgather": (0, 98304),
                                        "allreduce": (0, 1048576)}
# tuning_model_6 (gfx950, RCCL 2.26-2.27): index log2(bytes / 64) as above.
TREE_CORRECTION_6: dict[str, tuple[float, ...]] = {
    "ll": TREE_CORRECTION["ll"],
    "ll128": (.1, .1, .1, .1, .1, .1, 1., 1., 1., 1., 1., .6, 1., .9, 1., 1., 1., 1., 1., 2., .1, .1, .1, .1, .1, .1,
              .1),
    "simple": (.1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .7, 1., .1, .1, .1, .9, .9, .7, .8, .6, .6,
               .6),
}
RING_CORRECTION_6: dict[str, tuple[float, ...]] = {
    "ll": RING_CORRECTION["ll"],
    "ll128": (.1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, 1., .2, 1., .4, .4, .1, .2, .1, .1, .1, .1, .1, .1, .1, .1,
              .1),
    "simple": (.1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, .1, 1., .8, .8, 1.,
               1.),
}


@dataclass(frozen=True)
class RcclTables:
    """One ``rcclTuningModel[]`` entry as a release applies it to one GPU architecture."""

    name: str
    tree_correction: dict[str, tuple[float, ...]]
    ring_correction: dict[str, tuple[float, ...]]
    ll_range: dict[str, tuple[int, int]]  # llProtoRanges[..][LL]: (min, max] bytes per rank, multi-node
    ll128_range: dict[str, tuple[int, int]] = field(default_factory=dict)  # llProtoRanges[..][LL128]
    ll128: bool = False  # ll128Enabled: LL128 in the tuner's table and its range in the override


MODEL_5 = RcclTables("tuning_model_5", TREE_CORRECTION, RING_CORRECTION, LL_RANGE)
MODEL_5_2_26 = RcclTables(
    "tuning_model_5 (2.26)", TREE_CORRECTION, RING_CORRECTION, LL_RANGE,
    {"reducescatter": (131072, 3211264), "allgather": (98304, 5046272), "allreduce": (1048576, 9437184)})
MODEL_6_2_26 = RcclTables(
    "tuning_model_6 (2.26)", TREE_CORRECTION_6, RING_CORRECTION_6,
    {"reducescatter": (0, 131071), "allgather": (0, 7), "allreduce": (0, 131071)},
    {"reducescatter": (131071, 4194304), "allgather": (7, 8388608), "allreduce": (131071, 17660227)},
    ll128=True)
# Release sets: (first release, {GPU arch: tables}); a release takes the last set it reaches.
RELEASE_2_21 = ("2.21.5", {"cdna3": MODEL_5, "cdna4": MODEL_5})
RELEASE_2_26 = ("2.26.6", {"cdna3": MODEL_5_2_26, "cdna4": MODEL_6_2_26})
RELEASES = (RELEASE_2_21, RELEASE_2_26)
# rcclUpdateCollectiveProtocol: an AllReduce on more than 2 nodes scales the LL128 range's max by 3.8
# ("Tree has special behavior at 2 nodes")
LL128_MAX_SCALE_BEYOND_2_NODES = 3.8


def tables_for(release: str | None, gpu_arch: str) -> RcclTables:
    """The tables RCCL ``release`` applies on ``gpu_arch`` (None: the newest encoded release;
    a release before the first encoded one takes the first)."""
    sets = dict(RELEASES)
    first = release_reached(release, tuple(sets)) if release else RELEASES[-1][0]
    return sets[first].get(gpu_arch, MODEL_5)


def _tables(ctx: TunerContext) -> RcclTables:
    return tables_for(ctx.rccl_release, ctx.gpu_arch)


NET_OVERHEAD_US = {"amd": 2.0}  # getNetOverhead: AMD x86 hosts 2 us, Intel and others 1 us
ALGOS = ("tree", "ring")
# tuning.cc enables LL128 only where the graphs' GPU-to-NIC path is no farther than PATH_PXB
LL128_NET_PATHS = ("nvl", "pix", "pxb")


def _nsteps(coll: str, n: int) -> int:
    return {"allreduce": 2 * (n - 1), "allgather": n - 1, "reducescatter": n - 1}.get(coll, n)


def enabled(ctx: TunerContext, coll: str, algo: str, proto: str) -> bool:
    """RCCL's rules for tuning_model_5 platforms, within the transport's stack."""
    if algo not in ALGOS or not ctx.stack.allows(algo, proto) or ctx.n_ranks <= 1:
        return False
    if proto == "ll128" and not (_tables(ctx).ll128 and ctx.net_path in LL128_NET_PATHS):
        return False
    if algo == "tree" and coll != "allreduce":
        return False
    if algo == "tree" and proto == "simple" and ctx.n_nodes == 1:
        return False
    return True


def latency_us(ctx: TunerContext, coll: str, algo: str, proto: str) -> float:
    """RCCL's latency estimate (us) of one call."""
    p = PROTOS.index(proto)
    n, nodes, ppn = ctx.n_ranks, ctx.n_nodes, ctx.ppn
    intra = HW_LATENCY_US[ctx.intra_link][algo][p]
    inter = HW_LATENCY_US["net"]["tree" if ppn == 1 else algo][p] + ctx.constants.for_selection.net_latency_us
    if proto == "simple":
        inter += ctx.constants.for_selection.net_latency_us  # the flush
    lat = BASE_LATENCY_US[algo][p]
    if algo == "ring":
        if coll not in ("allreduce", "allgather", "reducescatter"):
            return lat + _nsteps(coll, n) * (HW_LATENCY_US["net" if nodes > 1 else ctx.intra_link]["ring"][p])
        overhead = NET_OVERHEAD_US.get(ctx.cpu_vendor, 1.0) * (3 if proto == "simple" else 1) if nodes > 1 else 0.0
        inter_steps = 0 if nodes == 1 else (2 * (nodes - 1) if coll == "allreduce" else nodes - 1)
        return lat + (_nsteps(coll, n) - inter_steps) * max(intra, overhead) + inter_steps * inter
    log2n = int(math.log2(nodes)) if nodes > 0 else 0
    return lat + 2 * ((ppn - 1) * intra + log2n * inter)


def bandwidth_GBps(ctx: TunerContext, coll: str, algo: str, proto: str) -> float:
    """RCCL's algorithm bandwidth (GB/s) before the size correction; 0 when disabled."""
    if not enabled(ctx, coll, algo, proto):
        return 0.0
    g = ctx.graph
    per_ch = g.bw_intra_GBps if ctx.n_nodes <= 2 else g.bw_inter_GBps
    bus = g.n_channels * per_ch * BW_RATIO[0 if ctx.n_nodes <= 2 else 1][algo][PROTOS.index(proto)]
    if algo == "ring":
        return bus * ctx.n_ranks / _nsteps(coll, ctx.n_ranks)
    return bus * 0.5


def correction(ctx: TunerContext, algo: str, proto: str, nbytes: int) -> float:
    """The per-size bandwidth factor (ring: only across nodes)."""
    if algo == "ring" and ctx.n_nodes == 1:
        return 1.0
    idx = min(26, int(math.log2(nbytes >> 6))) if nbytes >= 128 else 0
    t = _tables(ctx)
    return (t.tree_correction if algo == "tree" else t.ring_correction)[proto][idx]


def predict_us(ctx: TunerContext, coll: str, algo: str, proto: str, nbytes: int) -> float:
    """RCCL's estimate of one call (``ncclTopoGetAlgoTime``), us; inf when disabled."""
    bw = bandwidth_GBps(ctx, coll, algo, proto) * correction(ctx, algo, proto, nbytes)
    if bw <= 0:
        return math.inf
    return latency_us(ctx, coll, algo, proto) + nbytes / (1000.0 * bw)


def protocol_override(ctx: TunerContext, coll: str, nbytes: int) -> str | None:
    """``rcclUpdateCollectiveProtocol``: the protocol a multi-node call runs whatever the model
    chose (None where RCCL keeps the model's choice): Simple, LL while the bytes per rank lie in
    the LL range, LL128 while they lie in the LL128 range where the tables enable LL128."""
    t = _tables(ctx)
    if ctx.n_nodes < 2 or coll not in t.ll_range:
        return None
    per_rank = nbytes if coll == "allreduce" else nbytes // ctx.n_ranks
    lo, hi = t.ll_range[coll]
    chosen = "ll" if lo < per_rank <= hi and ctx.stack.allows("ring", "ll") else "simple"
    if t.ll128 and coll in t.ll128_range and ctx.stack.allows("ring", "ll128"):
        lo, hi = t.ll128_range[coll]
        if coll == "allreduce" and ctx.n_nodes > 2:
            hi = int(hi * LL128_MAX_SCALE_BEYOND_2_NODES)
        if lo < per_rank <= hi:
            chosen = "ll128"
    return chosen


def select(ctx: TunerContext, coll: str, nbytes: int, algo: str | None = None,
           proto: str | None = None, algos: tuple[str, ...] = ALGOS) -> tuple[str, str]:
    """The (algorithm, protocol) RCCL runs: the least :func:`predict_us` over what is enabled
    (restricted to ``algo``/``proto`` where pinned, like ``NCCL_ALGO``/``NCCL_PROTO``), then the
    multi-node protocol ranges unless the protocol is pinned (RCCL honours ``NCCL_PROTO``).

    Raises ValueError when the pins leave nothing enabled.
    """
    nbytes = max(1, nbytes)
    best: tuple[float, str, str] | None = None
    for a in algos:
        if a not in ALGOS or (algo is not None and a != algo):
            continue
        for p in PROTOS:
            if proto is not None and p != proto:
                continue
            t = predict_us(ctx, coll, a, p, nbytes)
            if t < math.inf and (best is None or t < best[0]):
                best = (t, a, p)
    if best is None:
        raise ValueError(f"no enabled algorithm/protocol for {coll} with algo={algo} proto={proto}")
    chosen = best[2] if proto is not None else (protocol_override(ctx, coll, nbytes) or best[2])
    return best[1], chosen

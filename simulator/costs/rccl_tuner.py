"""RCCL's own choice of algorithm and protocol, for communicators of AMD GPUs.

RCCL keeps NCCL's selection structure (``ncclTopoTuneModel`` fills a latency and a bandwidth
per collective, algorithm and protocol; ``getAlgoInfo`` takes the least ``latency + bytes /
bandwidth``) but fills it from its own tables, ``rcclTuningModel[]`` in ``src/graph/tuning.cc``
of ROCm/rccl, picked per platform by the ``tuning=`` option of the matching ``rome_models.cc``
entry; and from RCCL 2.22 on, ``rcclUpdateCollectiveProtocol`` (``src/rccl_wrap.cc``) then
replaces the protocol of a multi-node AllReduce, AllGather or ReduceScatter by per-size cut-offs
(``llProtoRanges``): Simple, except LL while the bytes per rank lie in the LL range.

Encoded here: ``tuning_model_5``, the table of the 8-GPU xGMI-mesh platforms (``rome_model_79``
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
  ``ll128Enabled``, which the MI300X models do not); Tree/Simple skipped on one node;
* multi-node protocol ranges (bytes per rank: the call's bytes for AllReduce, bytes / ranks for
  AllGather and ReduceScatter): LL in (0, 1 MiB] for AllReduce, (0, 96 KiB] for AllGather,
  (0, 640 KiB] for ReduceScatter, Simple above.

The tables drive the *choice* only. Several of their numbers are weights that steer it (a ring's
Simple network hop of 320 us against 9.5 us for LL keeps rings off until 256 MiB; Tree/Simple's
bandwidth ratio of 0.11 on two nodes is not a rate a tree delivers), so the time of what RCCL
runs is the same flow and latency model as NCCL's (:mod:`simulator.costs.collectives`), with the
deployed constants fitted on RCCL systems (:mod:`simulator.costs.deployed`, key ``<transport>/rccl``).

What the measured sweeps show (data/nccl/mi300x16_allreduce_2node_aac10_roce.csv, RCCL 2.22.3;
mi355x16_allreduce_2node_aac14_pollara.csv, RCCL 2.26.6): busbw steps up between 128 and 256 MiB
(173 -> 294 GB/s and 242 -> 305 GB/s), where these tables move AllReduce from Tree/Simple to
Ring/Simple (the ring correction reaches 1.0 at 256 MiB).
"""

from __future__ import annotations

import math

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
NET_OVERHEAD_US = {"amd": 2.0}  # getNetOverhead: AMD x86 hosts 2 us, Intel and others 1 us
ALGOS = ("tree", "ring")


def _nsteps(coll: str, n: int) -> int:
    return {"allreduce": 2 * (n - 1), "allgather": n - 1, "reducescatter": n - 1}.get(coll, n)


def enabled(ctx: TunerContext, coll: str, algo: str, proto: str) -> bool:
    """RCCL's rules for tuning_model_5 platforms, within the transport's stack."""
    if algo not in ALGOS or not ctx.stack.allows(algo, proto) or ctx.n_ranks <= 1:
        return False
    if proto == "ll128":
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
    return (TREE_CORRECTION if algo == "tree" else RING_CORRECTION)[proto][idx]


def predict_us(ctx: TunerContext, coll: str, algo: str, proto: str, nbytes: int) -> float:
    """RCCL's estimate of one call (``ncclTopoGetAlgoTime``), us; inf when disabled."""
    bw = bandwidth_GBps(ctx, coll, algo, proto) * correction(ctx, algo, proto, nbytes)
    if bw <= 0:
        return math.inf
    return latency_us(ctx, coll, algo, proto) + nbytes / (1000.0 * bw)


def protocol_override(ctx: TunerContext, coll: str, nbytes: int) -> str | None:
    """``rcclUpdateCollectiveProtocol``: the protocol a multi-node call runs whatever the model
    chose (None where RCCL keeps the model's choice)."""
    if ctx.n_nodes < 2 or coll not in LL_RANGE:
        return None
    per_rank = nbytes if coll == "allreduce" else nbytes // ctx.n_ranks
    lo, hi = LL_RANGE[coll]
    return "ll" if lo < per_rank <= hi and ctx.stack.allows("ring", "ll") else "simple"


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

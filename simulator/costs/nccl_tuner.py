"""NCCL's own cost model, used to choose an algorithm and protocol the way NCCL does.

The constants and formulas follow NCCL 2.30.7 ``src/graph/tuning.cc`` (``ncclTopoTuneModel``)
and ``src/enqueue.cc`` (``topoGetAlgoInfo``) as paraphrased in ``docs/reference/NCCL-COST-MODEL.md``
(§1 latencies, §2 bandwidths and caps, §3 selection, §4 channels); the tables and rules that
moved between releases are those of the profile's ``nccl.version``
(:mod:`simulator.costs.nccl_versions`, ``ctx.constants.tables``). Units inside this module
follow NCCL's tables: microseconds and GB/s; the public helpers that leave the module convert to
SI where their names say so.

The tables and the ``nccl:`` overrides are in :mod:`simulator.costs.nccl_constants`, the
communicator (graph-search channels and bandwidths) in :mod:`simulator.costs.nccl_graph`.

Every constant can be overridden from a profile's ``nccl:`` mapping
(``nccl_constants.OVERRIDE_KEYS``; ``clustersim calibrate`` writes them). The overrides time the
chosen algorithm; the choice itself is made as NCCL makes it, with the built-in tables
(:func:`selection_context`), because a fitted latency or efficiency describes the hardware,
which NCCL's tuner does not measure.
"""

from __future__ import annotations

import math
from dataclasses import replace

from simulator.costs.nccl_constants import (
    ALGOS, LL_MAX_BW_MULTINODE, MAX_THREADS, NVLINK_PER_LINK_BW, NVLS_EFFICIENCY, P2P_LL_THRESHOLD,
    P2P_PER_CHANNEL_NET_GBPS, PER_CH_MAX_NVLS_TREE_BW, PROTOS, SIMPLE_TREE_FACTOR, THREAD_THRESHOLD, TREE_CORRECTION,
)
from simulator.costs import ring_window
from simulator.costs.nccl_graph import TunerContext
from simulator.costs.aws_ofi_tuner import plugin_choice
from simulator.costs.nccl_versions import tables_for

# GPU-to-NIC paths over which NCCL enables LL128 across nodes (tuning.cc, typeInter <= PATH_PXB), and
# the one more it enables on compute capability >= 9.0 from 2.27: a Grace superchip's C2C path (P2C,
# ``typeInter <= (ncclParamLl128C2c() ? PATH_P2C : PATH_PXN)``, NCCL_LL128_C2C default 1; config/gdr.py).
LL128_NET_PATHS = ("pix", "pxb")
LL128_NET_PATHS_SM90 = LL128_NET_PATHS + ("p2c",)

# --- §1 latency ----------------------------------------------------------------------------

def _row(ctx: TunerContext) -> str:
    """The GPU row of the release's caps tables (a Blackwell GPU reads Hopper's before 2.27)."""
    return ctx.constants.tables.arch_row(ctx.arch)


def _nsteps(coll: str, n: int) -> int:
    return {"allreduce": 2 * (n - 1), "allgather": n - 1, "reducescatter": n - 1}.get(coll, n)


def _net_overhead_us(ctx: TunerContext, proto: str) -> float:
    c = ctx.constants.net_overhead_us
    if c is None and not ctx.constants.tables.net_overhead:
        return 0.0  # before 2.18 NCCL had no host net overhead
    base = c if c is not None else (2.0 if ctx.cpu_vendor == "amd" else 1.0)
    return base * (3 if proto == "simple" else 1)


def net_plugin_latency_us(ctx: TunerContext, proto: str) -> float:
    """The net plugin's ``latencyInter`` as NCCL adds it to one inter-node hop: once, and once
    more for Simple (the GDR flush), NCCL-COST-MODEL.md §1."""
    lat = ctx.constants.net_latency_us
    return lat * (2 if proto == "simple" else 1)


def ring_net_crossings(nsteps: int, ppn: int, inter_steps: int) -> int:
    """Network crossings on a ring's critical path: what the deployed per-hop extra
    (``net_hop_extra_us``, a time NCCL does not know) is paid for.

    A small call's time is the chain of one chunk through the ring's ``nsteps`` consecutive
    steps (``src/device/all_reduce.h`` ``runRing``: each step receives what the previous rank
    sent), and the chunks start at every rank. With ``ppn`` ranks per node the ring leaves a node
    once every ``ppn`` steps, so the worst chunk, starting just before a node boundary, crosses
    the network ``ceil(nsteps / ppn)`` times: ``nodes`` times for an AllGather or a
    ReduceScatter (``n - 1`` steps), ``2 * nodes`` for an AllReduce (``2(n - 1)`` steps) when
    ``ppn >= 3``. NCCL's tuner (``src/graph/tuning.cc``) counts ``nNodes - 1`` and, from 2.23,
    ``2(nNodes - 1)`` inter-node steps: its latency tables keep that count (they are NCCL's
    estimate, which steers its choice), the deployed extra counts the crossings. With one rank per
    node every step crosses (``nsteps``, fewer than the ``2 * nNodes`` of NCCL releases before
    2.23); those rings keep NCCL's count: one-rank-per-node rings (their channels and protocol)
    are modelled apart, and with ``nsteps`` the one such system (2 x 1 A100-PCIe) would alone
    pull InfiniBand's fitted extra from 5 to 15 us per crossing (fitted on two systems)."""
    if ppn <= 1:
        return inter_steps
    return -(-nsteps // ppn)


def nvlink_hop_extra_us(ctx: TunerContext) -> float:
    """What one NVLink step of a ring or tree costs beyond NCCL's table on the communicator's GPUs
    (``nccl_constants.NVLINK_HOP_EXTRA_US``: 0.7 us on Blackwell, NVIDIA/nccl issue #1940; set
    per GPU by ``nccl_graph.context_from_profile``), us; 0 over PCIe and in NCCL's own choice
    (:func:`selection_context`)."""
    own = ctx.constants.nvlink_hop_extra_us
    return own if own is not None and ctx.intra_link == "nvlink" else 0.0


def latency_us(ctx: TunerContext, coll: str, algo: str, proto: str) -> float:
    """NCCL's per-call latency term for (collective, algorithm, protocol), microseconds."""
    p = PROTOS.index(proto)
    k = ctx.constants
    base = k.base_latency_us[algo][p]
    intra = k.hw_latency_us[ctx.intra_link][algo][p]
    t = k.tables
    if proto == "ll" and ctx.n_nodes > 1:
        intra *= t.ll_intra_latency_multinode
    if algo in ("ring", "tree"):  # each step a GPU-to-GPU exchange (NVLS's is the switch's own)
        intra += nvlink_hop_extra_us(ctx)
    inter_algo = "tree" if ctx.ppn == 1 and ctx.n_nodes > 1 and t.ppn1_uses_tree_net_latency else algo
    tuned = k.hw_latency_us["net"][inter_algo][p] + net_plugin_latency_us(ctx, proto)
    inter = tuned + k.net_hop_extra_us
    n, nodes = ctx.n_ranks, ctx.n_nodes
    log2n = int(math.log2(nodes)) if nodes > 0 else 0
    if algo == "ring":
        if coll in ("allreduce", "allgather", "reducescatter"):
            nsteps = _nsteps(coll, n)
            per_node = t.ring_allreduce_inter_steps_per_node
            inter_steps = 0 if nodes == 1 else (2 * (nodes - (0 if per_node else 1)) if coll == "allreduce"
                                                else nodes - 1)
            net_oh = _net_overhead_us(ctx, proto) if nodes > 1 else 0.0
            crossings = ring_net_crossings(nsteps, ctx.ppn, inter_steps) if nodes > 1 else 0
            return (base + (nsteps - inter_steps) * max(intra, net_oh) + inter_steps * tuned
                    + crossings * k.net_hop_extra_us)
        hop = inter if nodes > 1 else intra
        return base + hop  # broadcast: every channel shares the ring order
    if algo == "tree":
        return base + 2 * ((ctx.ppn - 1) * intra + log2n * inter)
    if algo == "collnet_direct":
        return 2 * (min(1, ctx.ppn - 1) * intra + 0.4 * (ctx.ppn - 1)) + inter
    if algo == "collnet_chain":
        return 2 * (ctx.ppn - 1) * intra + inter
    if algo == "nvls":  # 2.18: base 23 us, no NVLink hop; from 2.21: no base, a 25 us NVLink hop
        return base + intra + (inter if nodes > 1 else 0.0)
    if algo == "nvls_tree":
        if t.nvls_tree_linear_hops:
            return base + 2 * (nodes - 1) * inter
        return base + intra + 2 * log2n * inter
    if algo == "pat":
        return 8.0 + log2n * inter / 3.5 + 2.8 * n
    raise ValueError(f"unknown algorithm {algo!r}")


# --- §2 bandwidth --------------------------------------------------------------------------

def proto_efficiency(ctx: TunerContext, proto: str, algo: str = "ring") -> float:
    """The calibrated achievable fraction of `proto`'s rate for `algo` (ring or tree; the
    hierarchical rings read the ring's) on this communicator: the network one when it spans
    nodes, else the intra-node one (1.0 unless calibrated or the transport's deployed constants
    say otherwise, :mod:`simulator.costs.deployed`)."""
    table = ctx.constants.net_proto_efficiency if ctx.n_nodes > 1 else ctx.constants.proto_efficiency
    return table["tree" if algo in ("tree", "nvls_tree") else "ring"][PROTOS.index(proto)]


def ll_max_bw_GBps(ctx: TunerContext) -> float:
    if ctx.constants.ll_max_bw_GBps is not None:
        return ctx.constants.ll_max_bw_GBps
    if ctx.library == "rccl":
        return math.inf  # RCCL's tuning.cc has no llMaxBw (NCCL's table is under #if !__HIP_PLATFORM_AMD__)
    rows = ctx.constants.tables.ll_max_bw
    arch = _row(ctx)
    if ctx.n_nodes == 1:
        return rows[arch][0]
    if arch in ("hopper", "blackwell"):
        row = rows[arch][1:]
    else:
        row = LL_MAX_BW_MULTINODE["amd" if ctx.cpu_vendor == "amd" else "intel"]
    return row[0] if ctx.n_nodes == 2 else row[1]


def nvls_efficiency(ctx: TunerContext) -> float:
    e = ctx.constants.nvls_efficiency
    return e if e is not None else NVLS_EFFICIENCY[ctx.arch]


def enabled(ctx: TunerContext, coll: str, algo: str, proto: str) -> bool:
    """NCCL's default enablement rules (§3) for this communicator, within what the transport's
    stack enables (``NCCL_ALGO``/``NCCL_PROTO``/``NCCL_NVLS_ENABLE``, costs/transports.py)."""
    if not ctx.stack.allows(algo, proto):
        return False
    if coll == "broadcast" and algo != "ring":
        return False
    if coll in ("allgather", "reducescatter") and algo not in ("ring", "pat", "nvls", "collnet_direct"):
        return False
    if coll in ("allgather", "reducescatter") and algo != "ring" and ctx.constants.tables.allgather_ring_only:
        return False
    if coll == "allreduce" and algo == "pat":
        return False
    if algo in ("collnet_direct", "collnet_chain"):
        return False  # needs SHARP/CollNet, which no bundled profile models
    if algo in ("nvls", "nvls_tree"):
        if proto != "simple" or not ctx.nvls_supported or nvls_efficiency(ctx) == 0:
            return False
        if ctx.ppn < 2:
            # One GPU per node: ncclNvlsInit (src/transport/nvls.cc, v2.29.2-1 line 161) leaves
            # nvlsSupport at 0 when the node's topology has fewer than two GPUs, and the NVLS graph
            # has at most one head per GPU (search.cc line 1064), below the two channels tuning.cc
            # requires ("NVLS/NVLStree needs at least 2 channels"). Measured: one H100 per node on
            # 10 nodes runs AllReduce at 48.9 GB/s busbw, its NIC's ring rate
            # (data/nccl/h100x10_allreduce_10node_xxrjun_ib_1pernode.csv).
            return False
        if algo == "nvls_tree" and ctx.n_nodes == 1:
            return False
        if algo == "nvls" and ctx.n_nodes > 1:
            return False  # multi-node NVLS needs CollNet; NVLSTree covers that case
        if coll != "allreduce" and (ctx.n_nodes > 1 or ctx.ppn > 32):
            return False
    if algo == "pat" and (proto != "simple" or ctx.ppn != 1 or ctx.constants.tables.pat_bw_factor == 0):
        return False
    if algo == "tree" and ctx.n_nodes == 1 and coll != "allreduce":
        return False
    if proto == "ll128" and ctx.intra_link == "pci" and ctx.n_ranks > ctx.n_nodes:
        return False  # LL128 needs an NVLink path inside the node
    paths = LL128_NET_PATHS_SM90 if ctx.arch in ("hopper", "blackwell") else LL128_NET_PATHS
    if proto == "ll128" and ctx.n_nodes > 1 and ctx.net_path not in paths:
        # tuning.cc: "pEnable &= (graphs[a]->typeInter <= PATH_PXB || (minCompCap >= 90 &&
        # graphs[a]->typeInter <= PATH_PXN))": a GPU that reaches its NIC through the CPU's host
        # bridge (PHB) or across sockets runs no LL128 across nodes, on any architecture. A GH200's
        # GPU reaches its NIC over C2C and the Grace CPU's host bridge: PHB until 2.26, P2C (LL128 on)
        # from 2.27 (ctx.net_path is the release's type: config/gdr.py nccl_path_type).
        return False
    return ctx.n_ranks > 1


def algo_bandwidth_GBps(ctx: TunerContext, coll: str, algo: str, proto: str, *, tree_pattern: bool = True) -> float:
    """NCCL's algorithm bandwidth (``comm->bandwidths``) in GB/s; 0 when disabled.

    ``tree_pattern=False`` leaves out the × 0.85 NCCL rates a TREE-pattern graph's Tree with
    (:func:`simulator.costs.nccl_graph.simple_tree_pattern`): what the tree's channels carry."""
    if not enabled(ctx, coll, algo, proto):
        return 0.0
    g, s, n = ctx.graph, ctx.scale, ctx.n_ranks
    t, row = ctx.constants.tables, _row(ctx)
    n_ch = g.n_channels
    per_ch = g.bw_intra_GBps if ctx.n_nodes <= 2 else g.bw_inter_GBps
    if algo == "tree" and ctx.n_nodes <= 2:
        per_ch = g.tree_intra_GBps
    if algo in ("nvls", "nvls_tree") and t.nvls_bw_model != "2.28":
        return _nvls_bw_before_2_28(ctx, coll, algo)
    if algo in ("nvls", "nvls_tree"):
        n_ch, bw_intra, bw_inter = nvls_search_graph(ctx)
        intra = bw_intra * nvls_efficiency(ctx) * (n_ch - 1) / n_ch
        intra *= 2 if coll == "allreduce" else (ctx.ppn - 1) / ctx.ppn
        inter = bw_inter * (2 if algo == "nvls_tree" and ctx.n_nodes <= 2 else 1) if ctx.n_nodes > 1 else math.inf
        per_ch = min(intra, inter)
        if algo == "nvls_tree":
            per_ch = min(per_ch, PER_CH_MAX_NVLS_TREE_BW[ctx.arch][s])
    bus = n_ch * per_ch
    if t.ampere_bus_cap_GBps is not None and ctx.arch == "ampere":
        bus = min(bus, t.ampere_bus_cap_GBps)
    if algo == "ring" and proto == "ll":
        bus = min(ll_max_bw_GBps(ctx), t.ring_ll_fraction(coll, ctx.n_nodes) * bus)
    elif algo == "ring" and proto == "ll128":
        bus = min(t.ring_ll128_factor(ctx.ppn) * bus, n_ch * t.ll128_per_ch_cap(coll, "ring", row, s))
    elif algo == "tree" and coll == "allreduce":
        bus = min(0.92 * bus, n_ch * t.per_ch_max_tree[row][s])
        if proto == "ll":
            bus = min(bus / 3.8, ll_max_bw_GBps(ctx))
        elif proto == "ll128":
            bus = min(bus * (7 / 9 if ctx.n_nodes == 1 else t.tree_ll128_net_factor),
                      n_ch * t.ll128_per_ch_cap(coll, "tree", row, s))
    if algo == "tree" and g.simple_tree and tree_pattern and t.simple_tree_derate:  # × .85 for NCCL_TOPO_PATTERN_TREE
        bus *= SIMPLE_TREE_FACTOR
    if algo == "pat":
        bus *= t.pat_bw_factor
    if algo in ("ring", "nvls", "nvls_tree"):
        if algo == "ring" or coll == "allreduce":
            steps = _nsteps(coll, n) if coll in ("allreduce", "allgather", "reducescatter") else n
            return bus * (n / steps if coll != "broadcast" else 1.0)
        return bus  # NVLS AllGather/ReduceScatter are not converted
    if algo == "tree":
        return bus * 0.5
    return bus


def nvls_tree_edge_GBps(ctx: TunerContext) -> float | None:
    """What one NVLSTree tree edge of one local index (one head's share on one of the two trees,
    one direction: a flow of :func:`simulator.costs.flow_patterns.nvls_tree_inter`) may carry, GB/s;
    None when NCCL gives no ceiling (one node, an architecture without a row).

    NCCL's tuner caps every NVLSTree channel at ``perChMaxNVLSTreeBws`` (``src/graph/tuning.cc`` of
    v2.30.7-1, lines 205-210 (Hopper 57.7 GB/s on two nodes, 45.5 on more) and 321-322), busBw per
    graph channel, and converts busBw to algorithm bandwidth by n/nsteps = n/(2(n-1)) (line 379).
    Those ceilings are NCCL's own rates for its kernel, whose channels split their
    warps between the in-node scatter/gather, the reduce-and-send to the network and the
    receive-and-broadcast from it (``src/device/all_reduce.h``, RunWorkColl NVLS_TREE, lines
    538-542 of v2.30.7-1, 507-510 of v2.22.3-1: of 20 warps per CTA, 5 reduce and send, 4 receive
    and broadcast), which is less than the NIC on two nodes, where
    each NIC carries S/8 per direction. Measured two-node H100 plateaus: 249 GB/s algbw over
    InfiniBand (data/nccl/h100x16_allreduce_2node_issue309_ib.csv, ..._xe9680_ib.csv: 250),
    251 over RoCE (..._oci_roce.csv) and 260 over EFA (..._awsp5_efa.csv) against 8 x 57.7 x 16/30
    = 246 GB/s; the links alone give 278. The kernel's warp split is the same from 2.22 on, so the
    ceiling applies whatever release's tables choose the algorithm. A graph channel is one head (one
    local index), whose traffic the pattern spreads over two trees: each tree edge gets half the
    channel's rate. On more nodes (45.5 GB/s) the NIC binds first on 8-NIC nodes; 10 nodes x 2 GPUs
    measure 51.5 GB/s algbw against this ceiling's 47.9 (data/nccl/h100x20_allreduce_10node_xxrjun_ib_2pernode.csv).
    """
    if ctx.n_nodes < 2:
        return None
    row = PER_CH_MAX_NVLS_TREE_BW.get(ctx.arch)
    per_ch = row[ctx.scale] if row else 0.0
    if per_ch <= 0:
        return None
    n = ctx.n_ranks
    return per_ch * n / (2 * (n - 1)) / 2


def nvls_search_graph(ctx: TunerContext) -> tuple[int, float, float]:
    """(channels, bwIntra, bwInter) NCCL's tuner rates NVLS/NVLSTree with: across nodes the NVLS
    search graph (:func:`simulator.costs.nccl_graph.nvls_graph`: one channel per head); on one node
    the runtime channels' share of the NVLink total, as before (the ring graph's bwInter)."""
    g = ctx.graph
    if ctx.n_nodes > 1 and g.nvls_graph is not None and not ctx.constants.nvls_channels:
        return g.nvls_graph
    n_ch = g.nvls_channels
    total = g.nvls_intra_total_GBps if g.nvls_intra_total_GBps is not None else g.n_channels * g.bw_intra_GBps
    return n_ch, total / n_ch, g.bw_inter_GBps


def _nvls_bw_before_2_28(ctx: TunerContext, coll: str, algo: str) -> float:
    """NVLS/NVLSTree algorithm bandwidth as releases before 2.28 rate it (``tuning.cc`` of
    v2.18.3-1, v2.19.3-1 .. v2.27.7-1; :mod:`simulator.costs.nccl_versions`): from the NVLS graph's
    own bwIntra (its NVLink total over its channels) and bwInter (the network speed across nodes),
    without ``nvlsEfficiency``, converted to algorithm bandwidth by 5/6 instead of n/nsteps."""
    model, nodes = ctx.constants.tables.nvls_bw_model, ctx.n_nodes
    n_ch, bw_intra, bw_inter = nvls_search_graph(ctx)
    bw_inter = bw_inter if nodes > 1 else bw_intra
    if model == "2.18":
        bw = bw_intra if nodes <= 2 else bw_inter
        ratio = 5 / 6 if algo == "nvls" else 0.70 * nodes / (2 * (nodes - 1))
        return n_ch * bw * ratio
    if algo == "nvls" and coll != "allreduce" and model == "2.27":
        return n_ch * min(bw_intra * (ctx.ppn - 1) / ctx.ppn, bw_inter * 0.9)  # not converted
    if algo == "nvls":
        bw = min(bw_intra, bw_inter)
    else:
        bw = min(bw_intra, bw_inter if nodes <= 2 else bw_inter / 2)
    return n_ch * bw * 5 / 6


def predict_us(ctx: TunerContext, coll: str, algo: str, proto: str, nbytes: int) -> float:
    """NCCL's predicted time (§3) for one call of `nbytes` (nccl-tests size convention)."""
    bw = algo_bandwidth_GBps(ctx, coll, algo, proto)
    if bw <= 0:
        return math.inf
    return _sized_us(ctx, coll, algo, proto, nbytes, bw, latency_us(ctx, coll, algo, proto))


def _sized_us(ctx: TunerContext, coll: str, algo: str, proto: str, nbytes: int, bw: float, lat: float) -> float:
    """:func:`predict_us` from the call's algorithm bandwidth ``bw`` (> 0) and latency term
    ``lat``, which do not depend on the size."""
    if algo == "ring" and proto == "simple" and coll == "allreduce" and ctx.n_nodes > 1:
        if ctx.constants.tables.ring_plateau_up_to_2_16:
            if nbytes >= ctx.n_ranks / 16 * 65536:
                lat *= 1.9
        elif nbytes / (ctx.graph.n_channels * ctx.n_ranks) >= 64:
            lat *= 1.4 if ctx.arch != "volta" else 1.9
    if algo == "tree" and coll == "allreduce":
        bw *= tree_correction(proto, nbytes, ctx.constants.tables.tree_ll128_correction)
    return lat + nbytes / (1000.0 * bw)


def tree_correction(proto: str, nbytes: int, ll128_row: tuple[float, ...] | None = None) -> float:
    """NCCL's size-dependent Tree AllReduce bandwidth factor (index log2(nBytes/64), 0..22);
    `ll128_row`: the release's own LL128 row where it differs (``NcclTables.tree_ll128_correction``)."""
    idx = int(math.log2(nbytes / 64)) if nbytes >= 64 else 0
    row = ll128_row if proto == "ll128" and ll128_row is not None else TREE_CORRECTION[proto]
    return row[idx] if idx <= 22 else 1.0


def selection_context(ctx: TunerContext) -> TunerContext:
    """The communicator as NCCL's tuner sees it when it *chooses*: its built-in constants, plus
    what it learns from the system at init: the graph (channels, per-channel bandwidths, already
    in ``ctx.graph``), the net plugin's reported ``latencyInter`` (``net_latency_us``) and the
    host's net overhead.

    Every other ``nccl:`` value of a profile (a fitted hop latency, ``ll_max_bw_GBps``,
    ``nvls_efficiency``, the protocol and p2p efficiencies) describes how the hardware really
    behaves, which NCCL does not know: it changes the time of the chosen algorithm, not the
    choice. A calibrated profile whose LL runs at an eighth of NCCL's estimate still runs LL
    wherever NCCL's own tables pick it, as the measured sweeps show (data/nccl/a100pcie_x2_*).
    """
    known = ctx.constants.for_selection
    return ctx if known is ctx.constants else replace(ctx, constants=known)


def _selection_terms(ctx: TunerContext, coll: str, algos: tuple[str, ...], algo: str | None, proto: str | None
                     ) -> tuple[TunerContext, tuple[tuple[str, str, float, float], ...]]:
    """The :func:`selection_context` and, on it, every enabled (algorithm, protocol) :func:`select`
    considers, in its order, with its algorithm bandwidth and latency term: what :func:`predict_us`
    computes before the size. Kept on the communicator's context (it is frozen), as a sweep asks its
    choice at every size: the tuner's tables are read once per communicator and question, not once
    per size."""
    memo = ctx.__dict__.setdefault("_selection_terms", {})
    key = (coll, algos, algo, proto)
    got = memo.get(key)
    if got is None:
        sel = selection_context(ctx)
        terms = []
        for a in algos:
            if algo is not None and a != algo:
                continue
            for p in PROTOS:
                if proto is not None and p != proto:
                    continue
                bw = algo_bandwidth_GBps(sel, coll, a, p)
                if bw > 0:
                    terms.append((a, p, bw, latency_us(sel, coll, a, p)))
        got = memo[key] = (sel, tuple(terms))
    return got


def select(ctx: TunerContext, coll: str, nbytes: int, algo: str | None = None,
           proto: str | None = None, algos: tuple[str, ...] = ALGOS) -> tuple[str, str]:
    """The (algorithm, protocol) NCCL would run: argmin of :func:`predict_us` on the
    :func:`selection_context` over the enabled combinations of `algos`, restricted to
    `algo`/`proto` where pinned (like NCCL_ALGO / NCCL_PROTO). Where the profile names a tuner
    plugin the runs load (``nccl.tuner_plugin``), its choice among those enabled comes first
    (:func:`simulator.costs.aws_ofi_tuner.plugin_choice`), as NCCL runs the pair the plugin costs at 0.

    Raises ValueError when the pins leave nothing enabled.
    """
    best: tuple[float, str, str] | None = None
    sel, terms = _selection_terms(ctx, coll, algos, algo, proto)
    if ctx.tuner_plugin:  # a loaded tuner plugin's choice among the enabled pairs, where it has one
        chosen = plugin_choice(ctx.tuner_plugin, coll, nbytes, ctx.n_ranks, ctx.n_nodes,
                               {(a, p) for a, p, _, _ in terms})
        if chosen is not None:
            return chosen
    for a, p, bw, lat in terms:  # predict_us(selection_context(ctx), coll, a, p, size) of each enabled one
        t = _sized_us(sel, coll, a, p, max(1, nbytes), bw, lat)
        if t < math.inf and (best is None or t < best[0]):
            best = (t, a, p)
    if best is None:
        raise ValueError(f"no enabled algorithm/protocol for {coll} with algo={algo} proto={proto}")
    return best[1], best[2]


def channels_used(ctx: TunerContext, algo: str, proto: str, nbytes: int) -> int:
    """Channels one call actually launches (§4): fewer for small messages."""
    if algo in ("nvls", "nvls_tree"):
        return ctx.graph.nvls_channels
    return _thread_threshold_channels(ctx, algo, proto, nbytes, ctx.graph.n_channels)


def _thread_threshold_channels(ctx: TunerContext, algo: str, proto: str, nbytes: int, nc: int) -> int:
    """``enqueue.cc``'s reduction of a call's channels: one fewer while ``nBytes < nc * nt *
    threadThreshold`` (the ring LL threshold times the ranks: ``tuning.cc``)."""
    nt = MAX_THREADS[proto]
    thr = THREAD_THRESHOLD[proto] * (ctx.n_ranks if (algo == "ring" and proto == "ll") else 1)
    while nc > 1 and nbytes < nc * nt * thr:
        nc -= 1
    return nc


def launched_channels(ctx: TunerContext, algo: str, proto: str, nbytes: int) -> int:
    """Channels a ring or tree call really runs, each with its own network connection: the
    communicator's channels, twice the graph's (``ncclTopoPostset``, src/graph/connect.cc of
    v2.18.5, line 391: ``nChannels = comm->nChannels = std::min(MAXCHANNELS,nChannels*2)``;
    :data:`RING_CTAS_PER_GRAPH_CHANNEL`), reduced by the same thread-threshold rule as
    :func:`channels_used` (``enqueue.cc`` starts it from ``comm->nChannels``). What the tuner's
    bandwidth counts stays the graph's (:func:`channels_used`); this is what the proxy serves."""
    nc = min(ctx.graph.max_channels, RING_CTAS_PER_GRAPH_CHANNEL * ctx.graph.n_channels)
    return _thread_threshold_channels(ctx, algo, proto, nbytes, nc)


def channel_bw_GBps(ctx: TunerContext, algo: str, proto: str, nbytes: int | None = None,
                    coll: str = "allreduce", ll128_fraction: float = 1.0) -> float:
    """Payload bandwidth one channel of `coll` can drive (GB/s): the graph's per-channel speed,
    capped by the protocol's per-channel maxima (LL: the release's share of the ring's rate,
    llMaxBw spread over the channels; before 2.17 also Ampere's 235 GB/s bus cap).
    ``ll128_fraction`` scales what a ring's LL128 CTAs move (the network's LL128 fraction,
    ``collectives.channel_fraction``), not the graph's speed.

    Tree AllReduce channels run at NCCL's own tree estimate (its algorithm bandwidth, with the
    size correction when `nbytes` is given) divided over the channels: the tuner's constants
    encode how far a pipelined chain+tree falls short of the links, which a fluid model of the
    links alone would not see. (Sophia's and Alibaba's MI355X Tree/LL128 and Tree/Simple AllReduce
    rows at 1-128 MiB run 9-33% faster than the model, where the correction is 0.6-0.9. Timed without
    it, NCCL's choice keeping it, the held-out collective validation at >= 1 MiB went Sophia 7.8% ->
    8.9%, Polaris 13.5% -> 16.3%, Kestrel 15.4% -> 23.1%, MI355X 5.9% -> 19.1% (2026-12-04, the
    deployed constants refitted): the correction describes most measured trees too.)

    A Simple ring of RCCL on one xGMI node has no per-channel bound (``math.inf``,
    :func:`rccl_ring_unpaced`): its links bound it.
    """
    g = ctx.graph
    if algo == "tree":
        # Without the × 0.85 of a TREE-pattern graph: NCCL's guess for the unbalanced chain steers
        # its choice, but two GH200 nodes (one NIC per GPU, so a TREE graph) reach the full estimate
        # (158 GB/s busbw measured, data/nccl/gh200x8_allreduce_2node_alps_slingshot.csv; 18%
        # below with the factor), as the 512-rank Tree rows do (60 GB/s at 512 MiB).
        bw = algo_bandwidth_GBps(ctx, "allreduce", "tree", proto, tree_pattern=False)
        if nbytes is not None:
            bw *= tree_correction(proto, nbytes, ctx.constants.tables.tree_ll128_correction)
        if bw > 0:
            return net_ll_cap(ctx, algo, bw / g.n_channels) if proto == "ll" else bw / g.n_channels
    t = ctx.constants.tables
    per_ch = g.bw_intra_GBps if ctx.n_nodes <= 2 else g.bw_inter_GBps
    if t.ampere_bus_cap_GBps is not None and ctx.arch == "ampere":
        per_ch = min(per_ch, t.ampere_bus_cap_GBps / g.n_channels)
    if proto == "ll":
        nccl = min(t.ring_ll_fraction(coll, ctx.n_nodes) * per_ch, ll_max_bw_GBps(ctx) / g.n_channels)
        return net_ll_cap(ctx, algo, nccl)
    ctas = ring_ctas_per_channel(ctx)
    if proto == "ll128":
        # NCCL's per-channel LL128 cap rates a graph channel, which runs as two CTAs: more CTAs move more
        cap = t.ll128_per_ch_cap(coll, algo, _row(ctx), ctx.scale) * ctas / RING_CTAS_PER_GRAPH_CHANNEL
        return min(per_ch * 120 / 128, cap * ll128_fraction)
    if rccl_ring_unpaced(ctx, algo):
        return math.inf
    cta = ring_cta_GBps(ctx)
    return per_ch if cta is None else min(per_ch, ctas * cta)


def rccl_ring_unpaced(ctx: TunerContext, algo: str) -> bool:
    """Whether a Simple ring's channels run at the links' rate rather than the graph's speed: RCCL
    on one node of xGMI.

    RCCL's graph rates every xGMI link at a nominal width, ``GFX94X_XGMI_WIDTH`` and
    ``GFX95X_XGMI_WIDTH`` alike, 48 GB/s (``src/graph/topo.h`` of ROCm/rccl 0cbce2a and of
    ROCm/rocm-systems ``projects/rccl``), and its rome models spread the GPU's total over their
    channels (``rome_models.cc`` parseGraph: ``bwIntra = bwInter = totalBw / nChannels``): a number
    for the tuner's choice, not a pace its kernels keep (``connect.cc`` then doubles the channels, up
    to 64 on gfx94x, without rating them again). The speed is the same on MI300X's 64 GB/s links and
    on MI355X's 76.5 GB/s ones, and one MI355X node runs a Ring AllReduce at 408 GB/s busbw
    (data/nccl/mi355x8_allreduce_1node_oci_pollara.csv), above the 7 x 48 = 336 the graph gives it
    at most: the links (``scale_up.efficiency``) bound it, not the graph. Across nodes the graph's
    speed is the NIC's (``net_devices``), a rate the NIC does keep, so it stays a cap there. On 2 and
    4 GPUs of an MI300X node a ring then runs at 1 and 3 links' rate, 44.1 and 132 GB/s busbw (the
    graph's 40 and 120 before; 44 GB/s is the one-link P2P figure the profile's efficiency comes
    from); no such sweep is bundled."""
    return ctx.library == "rccl" and ctx.n_nodes == 1 and ctx.intra_link == "nvlink" and algo == "ring"


def ring_window_GBps(ctx: TunerContext, algo: str, proto: str, nbytes: int | None) -> float:
    """What one graph channel of a ring across nodes (its CTAs together) carries through the
    window of slots of its network connections at the call's message size
    (:mod:`simulator.costs.ring_window`), GB/s: each CTA's messages cycle through the receiving
    CTA (:func:`ring_cta_GBps`), the CTA's share of the NIC and NCCL's network hop latency each
    way (the table's hwLat NET Ring, without the plugin's reported latency, which the latency term
    counts). Infinite inside a node, for other algorithms and protocols, without a size, for
    libraries without a modelled CTA rate, and for LL and LL128, whose one-step messages (eight in
    flight) keep the window above their per-channel caps wherever the bytes, not NCCL's latency
    term, set the time."""
    cta = ring_cta_GBps(ctx)
    if algo != "ring" or ctx.n_nodes < 2 or nbytes is None or proto != "simple" or cta is None:
        return math.inf
    launched = launched_channels(ctx, algo, proto, nbytes)
    buff = ctx.stack.buff_bytes
    step = ring_window.ring_step_bytes(nbytes, launched, ctx.n_ranks, buff, proto)
    msg = ring_window.message_bytes(step, proto, buff)
    ctas = ring_ctas_per_channel(ctx)
    hop = ctx.constants.hw_latency_us["net"]["ring"][PROTOS.index(proto)]
    return ctas * ring_window.window_GBps(msg, ring_window.in_flight(proto), cta, ctx.graph.bw_inter_GBps / ctas, hop)


def net_ll_cap(ctx: TunerContext, algo: str, rate_GBps: float) -> float:
    """An LL channel's rate across nodes: NCCL's, capped at what the host-memory path of network
    LL lines carries per channel (``net_ll_channel_GBps``, nccl_constants.TunerConstants; none set:
    NCCL's). Inside a node LL lines go GPU to GPU and keep NCCL's rate."""
    cap = ctx.constants.net_ll_channel_GBps.get("tree" if algo == "tree" else "ring") if ctx.n_nodes > 1 else None
    return rate_GBps if cap is None else min(rate_GBps, cap)


# NCCL runs every ring of its graph twice: ncclTopoPostset duplicates the graph's channels
# (src/graph/connect.cc of v2.29.2-1, line 452: "nChannels = comm->nChannels =
# std::min(MAXCHANNELS,nChannels*2)"), and each of those channels is one CTA of the kernel. The
# graph's per-channel speed (``TunerGraph``) is thus shared by two CTAs.
RING_CTAS_PER_GRAPH_CHANNEL = 2


def ring_ctas_per_channel(ctx: TunerContext) -> float:
    """CTAs that run one graph channel of a ring: two (:data:`RING_CTAS_PER_GRAPH_CHANNEL`), more
    when ``NCCL_MIN_NCHANNELS`` / ``NCCL_MIN_CTAS`` (``min_channels``) asks for more channels than the
    duplicated graph has: ``ncclTopoPostset`` (src/graph/connect.cc of v2.26.2-1, lines 478-485)
    copies the rings up to that floor, at most ``MAXCHANNELS`` (32; 64 from 2.25), so each ring runs on more CTAs.
    Measured: 128 x 8 H100 with NCCL_MIN_NCHANNELS=32 run Ring/LL128 at 367 GB/s busbw from 8 GiB
    (data/nccl/h100x1024_allreduce_128node_issue322_ringll128.csv), 45.9 GB/s of payload per
    400 Gb/s NIC, above the 8 x 36.7 = 294 GB/s NCCL's LL128 cap gives two CTAs per NIC."""
    m = ctx.constants.min_channels
    n = max(1, ctx.graph.n_channels)
    if not m:
        return float(RING_CTAS_PER_GRAPH_CHANNEL)
    cap = ctx.graph.max_channels
    runtime = max(min(RING_CTAS_PER_GRAPH_CHANNEL * n, cap), min(m, cap))
    return max(float(RING_CTAS_PER_GRAPH_CHANNEL), runtime / n)


def ring_cta_GBps(ctx: TunerContext) -> float | None:
    """What one CTA of a Simple ring moves, GB/s (None: no limit modelled: RCCL's kernels, GPUs
    without an NVLink class).

    One CTA copies a channel's data from its receive buffer to the next rank's (and the output);
    it carries what one p2p channel carries (:func:`p2p_channel_GBps`, the same one-CTA copy:
    NCCL's nominal per-link NVLink bandwidth, 20.6 GB/s on SM90, or the profile's
    ``nccl.p2p_channel_GBps``), whatever the link behind it. Inside a node NCCL's graph gives a
    ring channel less than that (an H100 node: 24 CTAs at 15 GB/s); across nodes one graph channel
    per 400 Gb/s NIC runs at 48 GB/s on Hopper (search.cc speed list, no duplication at
    bwIntra < 50 with more than 4 channels), which its two CTAs cannot reach: 2 x 20.6 = 41.2 GB/s per
    NIC. Measured: 8 x 40.5-40.7 GB/s busbw on the Ring AllGather and ReduceScatter plateaus of
    10 x 8 H100 over InfiniBand (data/nccl/h100x80_allgather_10node_xxrjun_ib.csv: 324 GB/s at
    16 GiB) and 2 x 8 H200 over RoCE (h200x16_allgather_2node_gcp_a3ultra_roce.csv: 325 GB/s at
    8 GiB), where the NIC's own 47.5 GB/s (ib_write_bw) would give 380; with 1, 2 or 4 GPUs per
    node the same cluster's NICs carry 48.7-49.2 GB/s each (xxrjun/nccl-tests-cluster N10_G1/G2/G4
    logs: four CTAs per NIC), so the limit is the CTAs', not the NIC's. The 1-node H100 SendRecv
    measures the same CTA: 19.9-20.4 GB/s per channel (nccl_constants.TunerConstants.p2p_channel_GBps).
    """
    if ctx.library != "nccl":
        return None
    c = ctx.constants.p2p_channel_GBps
    return c if c is not None else NVLINK_PER_LINK_BW.get(ctx.arch)


# --- point-to-point channels (enqueue.cc addP2pToPlan) -----------------------------------------

def p2p_ring_latency_us(ctx: TunerContext, link: str | None, proto: str) -> float:
    """The Ring row of NCCL's latency tables that a send or receive is priced with: the hop of
    `link` (``nvlink``, ``pci``, ``net``), or the base latency when `link` is None.

    NCCL's tuner never rates point-to-point operations (enqueue.cc plans sends without it), so an
    older release's table says nothing about what a send costs: the row is the newest release's,
    unless the profile sets its own (a fitted value)."""
    p = PROTOS.index(proto)

    def row(base, hw) -> float:
        return base["ring"][p] if link is None else hw[link]["ring"][p]

    k, release = ctx.constants, ctx.constants.tables
    own = row(k.base_latency_us, k.hw_latency_us)
    if own != row(release.base_latency_us, release.hw_latency_us):
        return own
    newest = tables_for(None)
    return row(newest.base_latency_us, newest.hw_latency_us)


def p2p_channels_used(ctx: TunerContext, nbytes: float) -> int:
    """Channels one send or receive of `nbytes` is split over.

    NCCL starts from the per-peer channels halved until every rank of the communicator can have
    its own (``nChannelsMin``), at most one per ``minPart`` bytes, then doubles the count while a
    part exceeds ``maxPart``, up to ``p2pnChannelsPerPeer``. Inside a node a part may reach 32 NVLink
    chunks (16 MiB), so a 32 MiB SendRecv among 8 H100s runs on 4 channels, 256 MiB on 16: the
    measured busbw doubles with each doubling of size from 64 MiB to 256 MiB
    (data/nccl/h100x8_sendrecv_1node.csv). Across nodes parts stay within one network chunk, and
    (nChannelsMin, nChannelsMax) are those of the communicator's NCCL release
    (:func:`~simulator.costs.nccl_graph.p2p_split_channels`), which the message count uses too.
    """
    g = ctx.graph
    if ctx.n_nodes > 1:  # the release's own split across nodes (nccl_graph.p2p_split_channels)
        n_min, n_max = g.p2p_split
    else:
        n_max = g.p2p_channels_per_peer
        n_min = n_max
        while n_min * ctx.n_ranks > g.p2p_channels and n_min > 1:
            n_min //= 2
    if nbytes <= 0:
        return 1
    step = g.p2p_chunk_bytes
    min_part = step // 2 if ctx.n_nodes > 1 else step // 8
    max_part = step if ctx.n_nodes > 1 else step * 32
    n = max(1, min(n_min, math.ceil(nbytes / min_part)))
    part = max(min_part, math.ceil(nbytes / n))
    while part > max_part and n <= n_max // 2:
        n *= 2
        part = math.ceil(nbytes / n)
    return n


def p2p_protocol(ctx: TunerContext, nbytes: float) -> str:
    """LL while a send carries at most ``NCCL_P2P_LL_THRESHOLD`` bytes per channel, else Simple."""
    return "ll" if nbytes <= p2p_channels_used(ctx, nbytes) * P2P_LL_THRESHOLD else "simple"


def p2p_channel_GBps(ctx: TunerContext, link: str) -> float | None:
    """What one p2p channel carries on a route of this class (``nvlink``, ``net``, other), GB/s;
    None where no per-channel limit is modelled (PCIe, xGMI: the links bind first).

    NVLink: the profile's ``nccl.p2p_channel_GBps``, else NCCL's per-link NVLink bandwidth.
    Network: ``NCCL_P2P_PER_CHANNEL_NET_BW``, what NCCL plans one network channel to carry.
    """
    if link == "net":
        return P2P_PER_CHANNEL_NET_GBPS
    if link == "nvlink":
        c = ctx.constants.p2p_channel_GBps
        return c if c is not None else NVLINK_PER_LINK_BW.get(ctx.arch)
    return None

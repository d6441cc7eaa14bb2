"""Collectives as NCCL runs them, decomposed into flows over the topology's routes.

``plan_collective`` chooses the algorithm and protocol with NCCL's own tuner
(:mod:`simulator.costs.nccl_tuner`) unless pinned, and returns a :class:`CollectivePlan`: the
tuner's latency term plus phases of concurrent :class:`Flow` s. Timing a plan needs the shared
network: :func:`simulator.replay.single_collective.time_collective` runs one plan on a SimPy
FlowNetwork; :meth:`simulator.costs.model.CostModel.time_alone_s` is the closed-form equivalent
for one collective alone on an empty network (per phase, the slowest link or rate cap).
``plan_collective`` keeps its tuner contexts in the ``cache`` and its patterns in the ``geometry``
it is given: the :class:`~simulator.costs.model.CostModel` of the topology passes its own, so nothing is cached
in module state.

Volumes (per rank, S = size in the nccl-tests convention, n ranks):

* ring AllGather / ReduceScatter: (n-1)/n·S to the next rank; AllReduce = ReduceScatter then
  AllGather, 2(n-1)/n·S; Broadcast: S along an open chain from the root. Channels each carry an
  equal share; across nodes channel c leaves every node through rail c (rings rotated so that a
  channel's inter-node hop is rail-aligned), as NCCL spreads channels over NICs. Inside a
  full-mesh node (no switch) each channel is spread over ring orders that together use every
  peer link equally (``flow_patterns.hamiltonian_decomposition``), as RCCL's and NCCL's
  multi-ring graphs do; across full-mesh nodes each channel's chain through a node is one of a
  set of balanced Hamiltonian paths (``flow_patterns.hamiltonian_paths``) entering at one NIC's
  GPU and leaving through another's, so the channels together load every peer link alike. On
  a mesh node with fewer NICs than GPUs (ALCF Polaris: 2 NICs, 4 A100) a channel enters at one
  NIC's local GPU and leaves at another's (``flow_patterns._cross_nic_ring_orders``), so every
  NIC carries a channel each way.
* double binary tree AllReduce (Sanders et al. 2009; NCCL ``trees.cc``): an intra-node chain and
  two complementary binary trees over nodes, each carrying half the channels; reduce and
  broadcast are pipelined, so every tree edge carries its share once up and once down.
* NVLS (in-switch reduction, NCCL ``nvls.cc``): AllReduce = multimem.ld_reduce of the rank's
  1/n shard (the switch reads every member: S up per GPU, S/n down) + multimem.st of it (S/n up,
  S down); NVLS-tree adds a rail-aligned binary tree across nodes on each 1/ppn shard.
* hierarchical (pinned only; not an NCCL algorithm): intra-node ring ReduceScatter, inter-node
  ring AllReduce per rail on the 1/ppn shard, intra-node ring AllGather.
* direct All-to-All: S/n from every rank to every other rank; SendRecv: rank i sends S to i+1.

The flows of each algorithm are built in :mod:`simulator.costs.flow_patterns`; this module
chooses the algorithm and protocol, scales the patterns by the message size and times them.

Protocols change the bytes on the wire (LL: 8 B of payload per 16 B line, so 2×; LL128: 120 of
128 B, so 128/120×; Simple: 1×) and the per-channel rate (tuner caps). The achievable fraction of
each link (profile ``scale_up.efficiency``, ``nics.efficiency``) scales link capacities
(:func:`effective_capacity_Bps`), not flows; NVLS multimem traffic additionally runs at NCCL's
``nvlsEfficiency`` (0.85 on Hopper), applied as extra wire bytes.

Calibration knobs from the profile's ``nccl:`` mapping (:class:`~simulator.costs.nccl_constants.TunerConstants`;
their defaults change nothing): ``proto_efficiency.[<ring|tree>.]<proto>``
(``proto_efficiency.net.[<ring|tree>.]<proto>`` for a communicator spanning nodes) divides the
wire bytes of ring (and hierarchical) or tree flows (a ring's LL128 across nodes: it scales what its
CTAs move instead, :func:`channel_fraction`), ``p2p_efficiency`` those of All-to-All and of SendRecv across nodes, and ``net_latency_us``
(NCCL's ``latencyInter``) is added to every inter-node hop's latency. A key prefixed ``coll.``
times only the collective algorithms and one prefixed ``p2p.`` only All-to-All and SendRecv
(:func:`pattern_scope`): what ``clustersim calibrate`` writes when it measured one of them.

Point-to-point (All-to-All, SendRecv) runs each send on the channels NCCL gives it
(:func:`~simulator.costs.nccl_tuner.p2p_channels_used`: few for a send that is small relative to
the communicator, up to ``p2pnChannelsPerPeer``), each carrying ``p2p_channel_GBps``: a 32 MiB
SendRecv among 8 H100s runs on 4 channels at ~80 GB/s, not at the NVLink's 370.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import partial
from typing import Sequence

import numpy as np

from simulator.config.hardware import GPU
from simulator.costs import (nccl_constants, nccl_graph, net_messages, nvlink_store, nvls_pipeline, nvls_reduce,
                             ring_window, ring_work, tree_pipeline)
from simulator.costs import nccl_tuner as tuner
from simulator.costs import nccl_p2p, rccl_p2p, rccl_tuner
from simulator.costs.flow_patterns import (
    Flow, Layout, Pattern, Phase, cached_pattern, direct_pattern, join_phases, layout, link_loads, make_phase, nvls_intra,
    nvls_tree_inter, p2p_pattern, pattern_arrays, ring_pattern, scaled_flows, tree_pattern,
)
from simulator.costs.memory_bound import memory_time
from simulator.costs.topology_view import TopologyView
from simulator.costs.transports import TransportStack
from simulator.errors import InputError
from simulator.vocabulary import PREDICTED_OPS, canonical_op, normalize_op

OPS = PREDICTED_OPS
ALGORITHMS = ("ring", "tree", "nvls", "nvls_tree", "hierarchical", "direct", "p2p")
PROTOCOLS = ("ll", "ll128", "simple")
WIRE_FACTOR = net_messages.WIRE_FACTOR
_STRUCTURAL = {
    "allreduce": ("ring", "tree", "nvls", "nvls_tree", "hierarchical"),
    "allgather": ("ring", "nvls", "hierarchical"),
    "reducescatter": ("ring", "nvls", "hierarchical"),
    "broadcast": ("ring",),
    "alltoall": ("direct",),
    "sendrecv": ("p2p",),
}
FLOWED = ("ring", "tree", "nvls", "nvls_tree")  # NCCL algorithms the tuner may pick that have flows here


@dataclass(frozen=True)
class CollectivePlan:
    """One collective: latency term plus phases of concurrent flows run one after another."""

    op: str
    algorithm: str
    protocol: str
    latency_s: float
    phases: tuple[Sequence[Flow], ...]
    size_bytes: int
    n_ranks: int
    channels: int = 1
    # Network messages a channel sends one after another (a ring/tree across nodes on a
    # transport whose message protocol runs on the host), or a rank's proxy (an All-to-All or
    # SendRecv there; costs/net_messages.py), each costing ``net_message_us`` of the latency term
    # (a flushed receive's counts 3/2: net_messages.FLUSHED_MESSAGE_WEIGHT); 0 elsewhere.
    net_messages: float = 0
    # Of a rank's p2p messages across nodes, those the provider injects after copying them out of
    # GPU memory (p2p_inject_copies), each costing ``net_inject_copy_us`` more; 0 elsewhere.
    net_inject_copies: float = 0

    @property
    def n_flows(self) -> int:
        return sum(len(p) for p in self.phases)

    @property
    def wire_bytes(self) -> float:
        return float(sum(p.wire_bytes if isinstance(p, Phase) else sum(f.nbytes for f in p) for p in self.phases))


def effective_capacity_Bps(topo: TopologyView) -> np.ndarray:
    """Link capacities × the profile's achievable fraction per link class.

    NVLink/xGMI (and PCIe peer links of a PCIe-only node) use ``scale_up.efficiency``; NIC,
    fabric and GPU↔NIC PCIe links use ``nics.efficiency``. These are documented per-profile
    constants (HARDWARE.md), not fitted per sweep. The replay engine should build its
    FlowNetwork on these capacities so that collectives there match this module.
    """
    node = topo.profile.node
    su_eff, nic_eff = node.scale_up.efficiency, node.nics.efficiency
    pcie_eff = su_eff if node.scale_up.kind == "pcie" else nic_eff
    table = {"nvlink": su_eff, "xgmi": su_eff, "pcie": pcie_eff, "nic": nic_eff, "net": nic_eff}
    # per run of like links, not per link: a 100k-GPU fabric has ~800k link directions in a few runs
    runs = topo.kind_runs
    factor = np.repeat(np.fromiter((table.get(k, 1.0) for k, _ in runs), dtype=np.float64, count=len(runs)),
                       np.fromiter((n for _, n in runs), dtype=np.int64, count=len(runs)))
    return np.asarray(topo.capacity_Bps, dtype=np.float64) * factor


P2P_OPS = ("alltoall", "sendrecv")  # point-to-point patterns: the ``p2p`` scope of a profile's nccl: keys


def pattern_scope(op: str) -> str:
    """The scope of a profile's ``nccl:`` keys that times ``op``: ``p2p`` for All-to-All and
    SendRecv, ``coll`` for NCCL's collective algorithms (config/nccl_overrides.py)."""
    return "p2p" if op in P2P_OPS else "coll"


def _context(topo: TopologyView, cache: dict, n_ranks: int, n_nodes: int, scope: str = "coll") -> nccl_graph.TunerContext:
    key = ("ctx", n_ranks, n_nodes, scope)
    if key not in cache:
        cache[key] = nccl_graph.context_from_profile(topo.profile, n_ranks, n_nodes, scope)
    return cache[key]


# ------------------------------------------------------------------------------ planning

def _ring_volume(op: str, n: int, size: float) -> float:
    return {"allgather": (n - 1) / n * size, "reducescatter": (n - 1) / n * size,
            "allreduce": 2 * (n - 1) / n * size, "broadcast": size}[op]


def _layout(topo: TopologyView, geo: dict, gpus: Sequence[int]) -> Layout:
    """:func:`~simulator.costs.flow_patterns.layout`, kept per group (a sweep plans one group at
    every size)."""
    key = ("layout", tuple(gpus))
    got = geo.get(key)
    if got is None:
        got = geo[key] = layout(topo, gpus)
    return got


def _check_pins(op: str, algo: str | None, proto: str | None, topo: TopologyView, lay: Layout) -> None:
    if algo is not None:
        if algo not in ALGORITHMS:
            raise InputError(f"unknown algorithm {algo!r}; expected one of {', '.join(ALGORITHMS)}", field="algo")
        if algo not in _STRUCTURAL[op]:
            raise InputError(f"{algo} does not implement {op}; expected one of {', '.join(_STRUCTURAL[op])}", field="algo")
        if algo in ("nvls", "nvls_tree") and not topo.profile.nvls_available:
            raise InputError(f"{algo} needs an NVSwitch with in-switch reduction; {topo.profile.name} has none", field="algo")
        if algo == "nvls" and op != "allreduce" and len(lay.by_node) > 1:
            raise InputError(f"nvls {op} works inside one node only; this group spans {len(lay.by_node)} nodes", field="algo")
        if algo == "nvls_tree" and len(lay.by_node) == 1:
            raise InputError("nvls_tree needs more than one node; use nvls inside a node", field="algo")
    if proto is not None and proto not in PROTOCOLS:
        raise InputError(f"unknown protocol {proto!r}; expected one of {', '.join(PROTOCOLS)}", field="proto")
    if proto is not None and proto != "simple" and algo in ("nvls", "nvls_tree"):
        raise InputError(f"{algo} runs the simple protocol only", field="proto")


def _choose(op: str, size: int, ctx: nccl_graph.TunerContext, lay: Layout, algo: str | None, proto: str | None) -> tuple[str, str]:
    if op == "alltoall" or op == "sendrecv":
        return ("direct" if op == "alltoall" else "p2p"), proto or tuner.p2p_protocol(ctx, _per_peer(op, size, lay))
    choose = rccl_tuner.select if ctx.library == "rccl" else tuner.select
    if algo == "hierarchical":
        return algo, proto or choose(ctx, op, size, algo="ring")[1]
    tuner_algo = algo
    if algo == "nvls" and len(lay.by_node) > 1:
        tuner_algo = "nvls_tree"  # NCCL_ALGO=NVLS across nodes without CollNet runs NVLSTree
    try:  # the library's choice, with its own tables (not calibrated values), among the algorithms with flows
        return choose(ctx, op, size, algo=tuner_algo, proto=proto, algos=FLOWED)
    except ValueError:
        pass
    if tuner_algo is not None and tuner_algo in _STRUCTURAL[op]:
        return tuner_algo, proto or "simple"  # pinned outside NCCL's default rules: run it anyway
    raise InputError(f"no algorithm/protocol combination is enabled for {op} (algo={algo}, proto={proto})", field="algo")


def net_p2p_protocol(proto: str) -> str:
    """The protocol a send to a peer on another node runs: Simple, whatever the call's label.

    NCCL picks LL for a p2p operation only where every channel's connection has LL buffers
    (``addP2pToPlan``: ``protoLL[dir] &= conn->conn.buffs[NCCL_PROTO_LL] != nullptr``,
    src/enqueue.cc of v2.29.7-1 line 866), and a network connection of the p2p connector gets
    them only under ``NCCL_ALLOC_P2P_NET_LL_BUFFERS`` (default 0, src/init.cc line 800;
    src/transport/net.cc lines 901 and 1073 add ``buffs[NCCL_PROTO_LL]`` only then). So a 1 KiB
    send across nodes goes through the Simple path: the receiver's proxy posts the receive (its
    clear-to-send), the sender's proxy writes the chunk once the GPU has filled the buffer, the
    receiver's proxy flushes and hands it to the GPU; NCCL's Ring/Simple row (8.4 us base, 14 us
    network hop, src/graph/tuning.cc of v2.29.7-1 lines 144-167) rather than its LL row (6.6 + 2.7)."""
    return "simple" if proto == "ll" else proto


def _p2p_latency_us(ctx: nccl_graph.TunerContext, proto: str) -> float:
    """One send/recv: NCCL's ring base latency plus one hop of the link class. A SendRecv ring
    across nodes waits on its network send, which runs Simple whatever its size
    (:func:`net_p2p_protocol`): Together's 2 x 8, 8 x 8 and 64 x 8 B200 rings take 23-35 us at
    1-16 KiB (data/nccl/b200x*_sendrecv_*node_together_ib.csv), where the LL rows give 9.3 us
    before the deployed hop extra."""
    if ctx.n_nodes == 1:
        return tuner.p2p_ring_latency_us(ctx, None, proto) + tuner.p2p_ring_latency_us(ctx, ctx.intra_link, proto)
    net = net_p2p_protocol(proto)
    return tuner.p2p_ring_latency_us(ctx, None, net) + _net_hop_us(ctx, net)


def _alltoall_latency_us(ctx: nccl_graph.TunerContext, topo: TopologyView, lay: Layout, proto: str,
                         n_ch: int | None = None) -> float:
    """Grouped send/recv to every peer: the base latency once, plus the hops a rank's chain of p2p
    rounds runs in order (a peer on another node costs a NET hop, a local one an NVLink/PCI hop).
    Inside one node the model adds one hop per peer. Across nodes NCCL runs the rounds of one
    node's peers together in one batch and different nodes' batches on different channels, so
    only the batches that share the busiest channel add up, and the proxy adds ``p2p_peer_us``
    for each remote peer beyond the first (costs/nccl_p2p.py; ``n_ch``: the channels each round
    uses, the release's nChannelsMin across nodes when not given, as ``tuner.p2p_channels_used``).
    Assumes the group's layout is the same for every rank (the first rank's peers are counted).
    RCCL gives every round its own channels across nodes (:func:`_rccl_rounds_latency_us`,
    costs/rccl_p2p.py).

    Where the transport's message protocol runs in host software (``stack.host_messages``), what a
    rank pays per remote peer in order is its proxy's work on that peer's messages, which
    :func:`p2p_host_messages` prices (``net_message_us`` each, the network round included: the CXI
    provider's Get and done-notify complete inside it, costs/transports.py); the peers' network
    hops overlap that chain, so one is paid, not one per peer (remote_hops_in_order). Counting both
    priced each of Polaris' 1,020 remote peers at 256 nodes the flushed message (1.5 x 8 us) plus
    NCCL's Ring hop, 2.7 us for LL and 14 us for Simple (the label from 32 KiB a peer): 14.7 and 26 us,
    where 10.3-12.6 us a peer are measured from 1 to 32 MiB (one message each), with no step where the
    label changes (data/nccl/a100x1024_alltoall_256node_polaris_slingshot.csv: 12.8 ms at 16 MiB,
    11.8 ms at 32 MiB)."""
    remote = _remote_peers(topo, lay, "alltoall")
    local = len(lay.gpus) - 1 - remote
    hop = partial(tuner.p2p_ring_latency_us, ctx, proto=proto)
    if rccl_p2p.rounds_have_own_channels(ctx):
        return hop(None) + _rccl_rounds_latency_us(ctx, local, remote, hop(ctx.intra_link))
    if remote and not ctx.stack.host_messages:
        p2p = max(1, ctx.graph.p2p_channels)
        per_round = n_ch or ctx.graph.p2p_split[0]
        chain = nccl_p2p.batches_in_order(lay.ppn, len(lay.by_node), per_round, p2p)
        return (hop(None) + chain.local * hop(ctx.intra_link) + chain.remote * _net_hop_us(ctx, proto)
                + nccl_p2p.proxied_peers(remote) * ctx.constants.p2p_peer_us)
    return (hop(None) + local * hop(ctx.intra_link)
            + remote_hops_in_order(remote) * _net_hop_us(ctx, proto))


def _net_hop_us(ctx: nccl_graph.TunerContext, proto: str) -> float:
    """One p2p hop to a peer on another node, us: NCCL's network hop of the protocol, the plugin's
    latency (twice for Simple: the flush) and the deployed hop extra."""
    return (tuner.p2p_ring_latency_us(ctx, "net", proto) + tuner.net_plugin_latency_us(ctx, proto)
            + ctx.constants.net_hop_extra_us)


def _rccl_rounds_latency_us(ctx: nccl_graph.TunerContext, local: int, remote: int, local_hop_us: float) -> float:
    """The hops of RCCL's All-to-All rounds beyond the base latency, us: each round on its own
    channels (costs/rccl_p2p.py), a channel runs ``rounds_in_order`` of them in order, the slowest
    channel's remote rounds first; a remote round is its Simple send's network hop (the send runs
    Simple whatever the call's protocol: rccl_p2p), with the plugin's latency and flush and the
    deployed hop extra. NCCL runs a node's rounds as one batch instead (:func:`_alltoall_latency_us`,
    costs/nccl_p2p.py)."""
    in_order = rccl_p2p.rounds_in_order(ctx)
    remote_in_order = min(remote, in_order)
    local_in_order = min(local, in_order - remote_in_order)
    return remote_in_order * _net_hop_us(ctx, "simple") + local_in_order * local_hop_us


def remote_hops_in_order(remote_peers: int) -> int:
    """The network hops a host-message transport's All-to-All adds up over ``remote_peers`` peers
    on other nodes: one in all, each peer's messages costing the proxy a host round that
    :func:`p2p_host_messages` counts in order (``stack.host_messages``); 0 without remote peers.
    Other transports' chains: :func:`simulator.costs.nccl_p2p.batches_in_order`."""
    return 1 if remote_peers > 0 else 0


def plan_collective(op: str, gpus: Sequence[int], size_bytes: int, topo: TopologyView, *,
                    algo: str | None = None, proto: str | None = None, cache: dict | None = None,
                    geometry: dict | None = None) -> CollectivePlan:
    """Plan one collective over `gpus` (rank order) of `size_bytes` (nccl-tests convention).

    ``cache`` keeps the tuner contexts of ``topo`` between calls (a
    :class:`~simulator.costs.model.CostModel` passes its own); None plans from scratch.
    ``geometry`` keeps what depends only on the routes (group layouts, flow patterns, their
    arrays and route classes); None: ``cache`` keeps them too. Topologies with the same routes
    may share one (calibration re-plans on profiles that differ in latencies and efficiencies)."""
    if cache is None:
        cache = {}
    geo = cache if geometry is None else geometry
    op = normalize_op(op)
    if size_bytes < 0:
        raise InputError(f"expected a size >= 0 bytes, got {size_bytes}", field="size_bytes")
    lay = _layout(topo, geo, gpus)
    n, n_nodes = len(lay.gpus), len(lay.by_node)
    algo = algo.lower() if algo else None
    proto = proto.lower() if proto else None
    _check_pins(op, algo, proto, topo, lay)
    if n == 1:
        return CollectivePlan(op, "copy", "simple", one_rank_copy_s(size_bytes, topo.profile.gpu), (), size_bytes, 1)
    ctx = _context(topo, cache, n, n_nodes, pattern_scope(op))
    algorithm, protocol = _choose(op, size_bytes, ctx, lay, algo, proto)
    wire = WIRE_FACTOR[protocol]
    # Calibration knobs (1.0 by default): the achievable fraction of the protocol's rate and of
    # the links for p2p traffic, applied as extra wire bytes like nvlsEfficiency (rate caps stay).
    proto_eff = tuner.proto_efficiency(ctx, protocol, algorithm)
    key_base = (lay.gpus,)
    msgs: float = 0.0
    copies: float = 0.0

    if algorithm in ("ring", "tree"):
        n_ch = tuner.channels_used(ctx, algorithm, protocol, size_bytes)
        # the network's LL128 fraction on a ring slows its channels' CTAs, not the bytes (channel_fraction)
        per_cta = channel_fraction(algorithm, protocol, n_nodes)
        cap = tuner.channel_bw_GBps(ctx, algorithm, protocol, size_bytes, op,
                                    ll128_fraction=proto_eff if per_cta else 1.0) * 1e9 * wire
        byte_eff = 1.0 if per_cta else proto_eff
        work = ring_work_cap_Bps(topo, op, algorithm, protocol, n, n_nodes)
        if work is not None:  # fewer GPUs than the node: the CTAs' reads and reductions bind (costs/ring_work.py)
            cap = min(cap, work / n_ch * wire)
        store = ll128_store_cap_Bps(topo, ctx, algorithm, protocol, n_nodes)
        if store is not None:  # LL128 stores over NVLink where Simple reads (costs/nvlink_store.py)
            cap = min(cap, store / n_ch * wire)
        if algorithm == "ring":
            closed = op != "broadcast"
            pat = cached_pattern(geo, ("ring", closed, n_ch) + key_base, lambda: ring_pattern(topo, lay, n_ch, closed, geo))
            volume = _ring_volume(op, n, size_bytes)
        else:
            pat = cached_pattern(geo, ("tree", n_ch) + key_base, lambda: tree_pattern(topo, lay, n_ch))
            volume = float(size_bytes)
        phases: tuple[Sequence[Flow], ...] = (scaled_flows(pat, volume * wire / byte_eff, cap, geo),)
        paid = _eager_gate(ctx, algorithm, protocol, size_bytes, n_ch, lay)
        latency_us = (tuner.latency_us(paid, op, algorithm, protocol)
                      + tree_fill_us(ctx, op, algorithm, protocol, size_bytes)
                      + window_stall_us(ctx, op, algorithm, protocol, size_bytes, n_ch, cap / wire / 1e9,
                                        volume / byte_eff))
        msgs = host_messages(ctx, op, algorithm, protocol, size_bytes, n_ch)
        overlap = messages_overlap(algorithm, protocol, ctx.stack)
        # an overlapping chain runs alongside the channels' bytes: at most their time at the channel cap
        bytes_us = volume * wire / byte_eff / (n_ch * cap) * 1e6 if overlap and cap > 0 else 0.0
        latency_us = with_messages_us(latency_us, msgs * ctx.constants.net_message_us, overlap, bytes_us)
    elif algorithm in ("nvls", "nvls_tree"):
        n_ch = ctx.graph.nvls_channels
        # the AllReduce kernels' chunk pipeline fill: rounds of nvlsChannels x heads chunks
        # (costs/nvls_pipeline.py); every GPU of a node is the head of one slice of each channel
        fill = (nvls_pipeline.nvls_tree_fill_factor(size_bytes, n_ch * ctx.ppn, n_nodes) if algorithm == "nvls_tree"
                else nvls_pipeline.nvls_fill_factor(size_bytes, n_ch * ctx.ppn) if op == "allreduce" else 1.0)
        scale = wire / tuner.nvls_efficiency(ctx) * fill
        intra = cached_pattern(geo, ("nvls", op) + key_base, lambda: nvls_intra(topo, lay, op))
        # the switches' reduction rate bounds each GPU's share of it (costs/nvls_reduce.py)
        reduce_cap = nvls_reduce.reduce_cap_Bps(topo.profile.node.scale_up.nvls_reduce_GBps, op, scale / fill)
        flows = scaled_flows(intra, size_bytes * scale, reduce_cap, geo)
        if algorithm == "nvls_tree":
            inter = cached_pattern(geo, ("nvls_tree",) + key_base, lambda: nvls_tree_inter(topo, lay))
            # the inter-node tree runs Simple across nodes: the network's Simple fraction
            inter_wire = wire / tuner.proto_efficiency(ctx, "simple", "tree")
            # each tree edge at most NCCL's per-channel NVLSTree ceiling (nccl_tuner.nvls_tree_edge_GBps)
            edge = tuner.nvls_tree_edge_GBps(ctx)
            edge_cap = None if edge is None else edge * 1e9 * inter_wire
            flows = join_phases(flows, scaled_flows(inter, size_bytes * inter_wire * fill, edge_cap, geo))
        phases = (flows,)
        latency_us = tuner.latency_us(ctx, op, algorithm, protocol)
    elif algorithm == "hierarchical":
        phases, latency_us, n_ch = _hierarchical(op, lay, size_bytes, protocol, topo, cache, geo)
    else:  # direct All-to-All or p2p SendRecv
        n_ch = tuner.p2p_channels_used(ctx, _per_peer(op, size_bytes, lay))
        gated = _eager_gate(ctx, algorithm, protocol, _per_peer(op, size_bytes, lay), n_ch, lay)
        if algorithm == "direct":
            pat = cached_pattern(geo, ("direct",) + key_base, lambda: direct_pattern(topo, lay))
            latency_us = _alltoall_latency_us(gated, topo, lay, protocol, n_ch)
        else:
            pat = cached_pattern(geo, ("p2p",) + key_base, lambda: p2p_pattern(topo, lay))
            latency_us = _p2p_latency_us(gated, protocol)
        if algorithm == "direct" or n_nodes > 1:
            wire /= ctx.constants.p2p_efficiency
        # a send to a peer on another node runs Simple whatever the call's label: NCCL picks LL for a p2p
        # operation only where its connection has LL buffers (enqueue.cc addP2pToPlan: ``conn->buffs[
        # NCCL_PROTO_LL] != nullptr``), which a network connection lacks unless NCCL_ALLOC_P2P_NET_LL_BUFFERS
        # is set (default 0, init.cc), so only the local peers' bytes carry LL's flag words
        net_wire = WIRE_FACTOR["simple"] / ctx.constants.p2p_efficiency if n_nodes > 1 else None
        phases = (_p2p_flows(topo, geo, ctx, pat, size_bytes, wire, n_ch, net_wire),)
        msgs = p2p_host_messages(ctx, topo, lay, op, protocol, size_bytes)
        copies = p2p_inject_copies(ctx, topo, lay, op, size_bytes)
        latency_us += msgs * ctx.constants.net_message_us + copies * ctx.constants.net_inject_copy_us
    if n_nodes > 1:  # once per call across the network, whatever its algorithm (nccl_constants)
        latency_us += ctx.constants.net_call_extra_us
    phases = tuple(p for p in phases if p)
    return CollectivePlan(op, algorithm, protocol, latency_us * 1e-6, phases, size_bytes, n, n_ch, msgs, copies)


def ring_work_cap_Bps(topo: TopologyView, op: str, algorithm: str, protocol: str, n: int,
                      n_nodes: int) -> float | None:
    """The busbw (bytes/s) a ring's CTAs reach on ``n`` GPUs of one node
    (:func:`simulator.costs.ring_work.allreduce_busbw_cap_GBps`); None where it does not bind."""
    if algorithm != "ring":
        return None
    profile = topo.profile
    su = profile.node.scale_up
    if profile.collective_library != "nccl":
        return None
    cap = ring_work.allreduce_busbw_cap_GBps(op, protocol, n, n_nodes, profile.node.physical_gpus, profile.gpu.arch,
                                             su.kind, su.link_GBps, su.efficiency)
    return None if cap is None else cap * 1e9


def ll128_store_cap_Bps(topo: TopologyView, ctx: nccl_graph.TunerContext, algorithm: str, protocol: str,
                        n_nodes: int) -> float | None:
    """The busbw (bytes/s) a Ring/LL128 call of one node reaches at the NVLink store rate of NCCL's
    LL ceiling where Simple reads (:func:`simulator.costs.nvlink_store.ll128_busbw_cap_GBps`); None
    where it does not bind."""
    profile = topo.profile
    if profile.collective_library != "nccl" or algorithm != "ring" or protocol != "ll128":
        return None
    cap = nvlink_store.ll128_busbw_cap_GBps(algorithm, protocol, n_nodes, profile.gpu.arch,
                                            profile.node.scale_up.kind, tuner.ll_max_bw_GBps(ctx))
    return None if cap is None else cap * 1e9


def tree_fill_us(ctx: nccl_graph.TunerContext, op: str, algorithm: str, protocol: str, size_bytes: int) -> float:
    """The pipeline fill of a Tree/Simple AllReduce across nodes (costs/tree_pipeline.py), us: its
    chunk (``net_messages.tree_simple_chunk_bytes`` of the communicator's NCCL release and buffer,
    at most a launched channel's share) through ``2(ppn-1)`` NVLink stages at one CTA's copy rate
    (``nccl_tuner.ring_cta_GBps``) and the network stages at a launched channel's share of the graph
    channels' ``bwInter``. 0 for anything else, one node, and GPUs without a modelled CTA rate (RCCL)."""
    if op != "allreduce" or algorithm != "tree" or protocol != "simple" or ctx.n_nodes < 2:
        return 0.0
    nvlink = tuner.ring_cta_GBps(ctx)
    if nvlink is None:
        return 0.0
    launched = tuner.launched_channels(ctx, algorithm, protocol, size_bytes)
    chunk = net_messages.tree_simple_chunk_bytes(size_bytes, launched, net_messages.tree_depth(ctx.ppn, ctx.n_nodes),
                                                 ctx.stack.buff_bytes, ctx.constants.nccl_version)
    net = ctx.graph.bw_inter_GBps * ctx.graph.n_channels / max(1, launched)
    return tree_pipeline.tree_simple_fill_us(size_bytes, launched, chunk, ctx.ppn, ctx.n_nodes, nvlink, net)


def window_stall_us(ctx: nccl_graph.TunerContext, op: str, algorithm: str, protocol: str, size_bytes: int,
                    n_channels: int, cap_GBps: float, volume: float) -> float:
    """The time a ring's channels wait on their network connections' windows, us: the ring's
    ``volume`` (bytes per rank) at the window's rate (``nccl_tuner.ring_window_GBps``,
    costs/ring_window.py) less its time at the channels' own rate ``cap_GBps`` (per graph channel),
    when the window is the slower. The links sit idle for it, so it adds to the latency term, and
    the flows keep rates that do not depend on the size (a larger call's phase is the smaller one's
    scaled: replay/solo_phases.py), for the messages beyond the first window's
    (``ring_window.windowed_fraction``: a call of a few messages per connection never waits for a
    slot). 0 for anything but a Simple ring across nodes."""
    window = tuner.ring_window_GBps(ctx, algorithm, protocol, size_bytes)
    if not math.isfinite(window) or window <= 0 or cap_GBps <= 0 or window >= cap_GBps or volume <= 0:
        return 0.0
    launched = tuner.launched_channels(ctx, algorithm, protocol, size_bytes)
    waiting = ring_window.windowed_fraction(
        ring_window.ring_messages(op, size_bytes, launched, ctx.n_ranks, ctx.stack.buff_bytes), protocol)
    per_channel = volume / max(1, n_channels) / 1e3  # bytes -> us at 1 GB/s
    return waiting * (per_channel / window - per_channel / cap_GBps)


def channel_fraction(algorithm: str, protocol: str, n_nodes: int) -> bool:
    """Whether the network's achievable fraction of LL128 (``proto_efficiency.net.ring.ll128``, the
    deployed constant of :mod:`simulator.costs.deployed`) scales what a ring's LL128 CTAs move
    (``nccl_tuner.channel_bw_GBps``) rather than the bytes every link carries: a ring across nodes.

    A ring channel's LL128 rate is the lesser of the graph's speed (its NIC's share) and what its
    CTAs move (NCCL's per-channel LL128 cap, for the two CTAs a graph channel runs as: each CTA polls
    the flag of every 128-byte line and forwards it, ``src/device/prims_ll128.h``). A shortfall of
    LL128 across the network is the CTAs' (they run the protocol; the NIC moves bytes as for Simple),
    so it shows where they bind, with two CTAs per NIC, and not where more CTAs than the NIC can feed
    share it: 128 x 8 H100 over RoCE with NCCL_MIN_NCHANNELS=32 (four CTAs per 400 Gb/s NIC,
    ``nccl_tuner.ring_ctas_per_channel``) run Ring/LL128 at 364-367 GB/s busbw from 8 GiB
    (data/nccl/h100x1024_allreduce_128node_issue322_ringll128.csv), 45.9 GB/s of payload per NIC,
    above the 0.9 x 8 x 48 x 120/128 = 324 GB/s that RoCE's fraction (x 0.9, fitted on 2-node systems
    whose rings run two CTAs per NIC) allowed on the bytes. A tree channel's rate is NCCL's tree
    estimate, not a CTA cap, and Simple, LL and the fractions inside a node are the links': there the
    fraction divides the wire bytes."""
    return algorithm == "ring" and protocol == "ll128" and n_nodes > 1


def _eager_gate(ctx: nccl_graph.TunerContext, algorithm: str, protocol: str, size_bytes: float, n_channels: int,
                lay: Layout) -> nccl_graph.TunerContext:
    """The context whose latency a call pays: without the deployed per-hop extra when its network
    messages stay within the transport's eager limit (``stack.eager_max_bytes``: libfabric CXI on
    Slingshot, costs/transports.py), where that extra is the provider's rendezvous."""
    limit = ctx.stack.eager_max_bytes
    if not limit or not ctx.constants.net_hop_extra_us:
        return ctx
    if algorithm in ("direct", "p2p"):
        msg = 0.0  # the rendezvous to different peers overlap; what is serial is the host's (host_messages)
    else:
        msg = net_messages.coll_message_bytes(algorithm, protocol, int(size_bytes), n_channels, len(lay.gpus),
                                              ctx.stack.buff_bytes)
    if msg > limit:
        return ctx
    gated = ctx.__dict__.get("_eager_gated")  # made once per (frozen) context: a sweep gates every small size
    if gated is None:
        gated = ctx.__dict__["_eager_gated"] = replace(ctx, constants=replace(ctx.constants, net_hop_extra_us=0.0))
    return gated


def messages_overlap(algorithm: str, protocol: str, stack: TransportStack | None = None) -> bool:
    """Whether a call's host messages form one chain that runs alongside its bytes rather than
    adding to the latency term: an LL ring, and an LL128 ring or a Tree/Simple call unless the stack
    moves each payload inside its message's host round (below). Each ring step
    sends one message per launched channel (``nccl_tuner.launched_channels``: twice the graph's,
    fewer for small calls),
    and one proxy thread per rank posts and progresses every channel's sends (``src/proxy.cc``,
    ``ncclProxyProgress``), so a step waits for the rank's proxy to serve all of them in turn:
    ``channels x steps`` messages of ``net_message_us`` each (:func:`host_messages`; on a stack whose
    cost is paid in the sending rank's process, the channels crossing at one rank:
    :func:`channels_per_crossing_rank`). The
    LL lines themselves are written as the data arrives, so the bytes overlap that chain.
    Measured on Polaris (data/nccl/a100x*_allgather_*node_polaris_slingshot.csv, Ring/LL AllGather):
    per ring step 7.8-9.2 us on one launched channel (16 KiB-4 MiB at 256 nodes, 33 KiB-8 MiB at 540,
    1-128 KiB at 8), 14.5-18.5 us on two (8 MiB at 256 nodes, 256 KiB at 8), 27-32 us on four (16-128
    MiB at 256 nodes, 64-128 MiB at 540, 0.5-2 MiB at 8; tests/unit/test_net_messages.py): the time
    follows the channels, not the messages' size, so no rendezvous round is
    added per message above the CXI eager limit (those messages, up to 64 KiB, cost what the eager
    ones do).

    A Tree/Simple call's messages overlap its bytes too: each channel's chunks stream through a
    store-and-forward pipeline (costs/tree_pipeline.py) whose connection keeps ``NCCL_STEPS`` (8)
    steps in flight, so the host's work on one chunk's message runs while the chunks before it are
    on the wire, and the message chain shows only where it outlasts the bytes (chunks small against
    the host's cost per message). Not where the payload itself moves inside each message's host
    round (``TransportStack.payload_in_host_round``: the CXI provider's alt_read rendezvous, whose
    target issues the Get from software-matched progress and acknowledges it with a done-notify
    before the send completes; costs/transports.py): there the per-message time adds to the bytes,
    as the 8- and 540-node Polaris Tree/Simple AllReduce rows show (13.3% / 34.6% held out with the
    overlap, 7.2% / 20.2% without). With the pipeline's fill priced (``tree_fill_us``), GPUDirect-TCPXO's
    1 MiB chunks (2 x 8 H100, data/nccl/h100x16_allreduce_2node_gcp_a3mega_tcpxo.csv) stream at 183 GB/s
    over 8 NICs from 64 MiB to 8 GiB, 0.92 of the line rate, where a serial cost of ~8 us per chunk
    would add 1,024 x 8 us to the 8 GiB call (-22% held out; -10% with the overlap); EFA's SENDRECV
    path on 2 x 8 A100 (a100x16_allreduce_2node_awsp4de_efa.csv, 512 KiB chunks) likewise reaches
    42.6 GB/s over its four 100 Gb/s NICs from 1 to 2 GiB. A Simple ring step sends its chunk in
    slices behind the bytes of the step before: those add to the latency term.

    A Ring/LL128 call's messages add too where their payload moves inside the host round
    (``payload_in_host_round``): NCCL keeps a network connection's LL128 buffers in GPU memory under
    GPUDirect RDMA and its proxy sends a step once the GPU has written all of it, so each message is
    a whole step pulled by the provider's read protocol (EFA under NCCL <= 2.11, costs/transports.py;
    Ring/LL128 at 2-32 MiB over 2 x p4d, +37% to +110% with the overlap, -17% to +46% without; CXI's
    alt_read Get likewise, though NCCL picks Ring/LL128 on no measured Slingshot row). LL
    keeps its send buffer in host memory (``src/transport/net.cc`` v2.8.3-1, ``protoLoc``), sent
    eagerly, and its lines stream as they arrive."""
    if (algorithm, protocol) in (("tree", "simple"), ("ring", "ll128")):
        return stack is None or not stack.payload_in_host_round
    return algorithm == "ring" and protocol == "ll"


def with_messages_us(latency_us: float, messages_us: float, overlap: bool, bytes_us: float = 0.0) -> float:
    """The latency term with the host messages' time (:func:`messages_overlap`): an overlapping
    chain shows only where it outlasts the latency term plus the bytes' time (``bytes_us``, which
    the flows add after it), else it adds."""
    return max(latency_us, messages_us - bytes_us) if overlap else latency_us + messages_us


def host_messages(ctx: nccl_graph.TunerContext, op: str, algorithm: str, protocol: str, size_bytes: int,
                  n_channels: int) -> float:
    """Network messages each channel of a ring or tree sends in order, on a transport whose
    message protocol runs in host software (``ctx.stack.host_messages``; costs/net_messages.py):
    each costs ``net_message_us``: Simple's slices and chunks, and LL/LL128's one message per step
    slot (only Slingshot's alt_read stack runs them: EFA's SENDRECV path and TCPXO force Simple).
    0 inside a node and on every other transport."""
    if not ctx.stack.host_messages or ctx.n_nodes < 2:
        return 0
    if algorithm == "ring" and protocol != "simple":
        # the rank's proxy serves every launched channel's step message in turn (messages_overlap)
        launched = tuner.launched_channels(ctx, algorithm, protocol, size_bytes)
        return channels_per_crossing_rank(ctx, launched) * net_messages.ll_messages_per_channel(
            op, algorithm, protocol, size_bytes, launched, ctx.n_ranks)
    if protocol != "simple":
        return net_messages.ll_messages_per_channel(op, algorithm, protocol, size_bytes, n_channels, ctx.n_ranks)
    if algorithm == "tree":
        # NCCL halves a tree's chunk, and counts its steps, over the channels the call launches
        # (net_messages.tree_simple_chunk_bytes): each of them sends its own chunks on its own connection
        n_channels = tuner.launched_channels(ctx, algorithm, protocol, size_bytes)
    return flush_weight(ctx) * net_messages.messages_per_channel(op, algorithm, size_bytes, n_channels, ctx.n_ranks,
                                                                 ctx.ppn, ctx.n_nodes, ctx.stack.buff_bytes,
                                                                 ctx.constants.nccl_version)


def channels_per_crossing_rank(ctx: nccl_graph.TunerContext, launched: int) -> int:
    """The launched ring channels whose network messages one rank's proxy serves in turn.

    Every launched channel where the stack gives no finer unit (Slingshot with alt_read: measured
    per launched channel, :func:`messages_overlap`). Where the stack's message protocol runs in
    the sending rank's own process (``TransportStack.messages_per_crossing_rank``: aws-ofi-nccl's
    tagged sends under NCCL <= 2.11, costs/transports.py), only the channels that cross the node
    boundary at that rank: the communicator's channels are the ring graph's, duplicated
    (``ncclTopoPostset``: channel ``c`` and ``c + nGraph`` run the same ring), a call launches the
    first ``launched`` of them, and each graph ring leaves the node at its own GPU through its own
    NIC (NCCL before 2.12 has no PXN to route another GPU's sends through a NIC's local one), so a
    crossing rank serves ``ceil(launched / graph channels)``."""
    if not ctx.stack.messages_per_crossing_rank:
        return launched
    rings = max(1, min(ctx.graph.n_channels, ctx.ppn))
    return max(1, math.ceil(launched / rings))


def flush_weight(ctx: nccl_graph.TunerContext) -> float:
    """What one Simple network message counts of ``net_message_us``: 3/2 where NCCL flushes its
    receive (the plugin's read, a third operation: ``net_messages.gdr_flush``), else 1."""
    return net_messages.FLUSHED_MESSAGE_WEIGHT if ctx.gdr_flush else 1.0


def p2p_host_messages(ctx: nccl_graph.TunerContext, topo: TopologyView, lay: Layout, op: str, protocol: str,
                      size_bytes: int) -> float:
    """Network messages a rank's proxy handles in order in an All-to-All or a SendRecv across nodes
    on a transport whose message protocol runs in host software (costs/net_messages.py
    ``p2p_messages``; each costs ``net_message_us``), whatever the protocol. 0 inside a node and on
    every other transport. Counts the first rank's peers, as :func:`_alltoall_latency_us` does."""
    if not ctx.stack.host_messages or ctx.n_nodes < 2:
        return 0
    # network p2p runs Simple whatever the call's label (net_messages: no LL buffers for it)
    return flush_weight(ctx) * _p2p_network_messages(ctx, topo, lay, op, size_bytes)


def p2p_inject_copies(ctx: nccl_graph.TunerContext, topo: TopologyView, lay: Layout, op: str,
                      size_bytes: int) -> float:
    """Messages a rank's proxy sends in order in an All-to-All or a SendRecv across nodes that the
    provider injects after copying their payload out of GPU memory (``stack.inject_max_bytes``: the
    libfabric CXI provider's IDC sends of 1-192 bytes, costs/transports.py), each costing
    ``net_inject_copy_us`` beyond its ``net_message_us``: network p2p runs Simple, from GPU memory where
    GPUDirect RDMA serves the send (``ctx.gdr_send``; else from a host buffer, whose copy is a
    ``memcpy``). Counts the first rank's peers, as :func:`p2p_host_messages` does; 0 inside a node."""
    inject = ctx.stack.inject_max_bytes
    if not inject or not ctx.gdr_send or ctx.n_nodes < 2:
        return 0
    return _p2p_network_messages(ctx, topo, lay, op, size_bytes, at_most=inject)


def _p2p_network_messages(ctx: nccl_graph.TunerContext, topo: TopologyView, lay: Layout, op: str,
                          size_bytes: int, at_most: int | None = None) -> int:
    """The network messages (with ``at_most``, only those of 1 to ``at_most`` bytes) the first rank
    of ``lay`` sends in order in an All-to-All or a SendRecv (net_messages.p2p_messages)."""
    n_min, n_max = ctx.graph.p2p_split
    return net_messages.p2p_messages(_per_peer(op, size_bytes, lay), _remote_peers(topo, lay, op), n_min, n_max,
                                     ctx.graph.p2p_chunk_bytes, ctx.constants.nccl_version, at_most)


def _remote_peers(topo: TopologyView, lay: Layout, op: str) -> int:
    """The first rank's peers on other nodes: in an All-to-All every rank outside its node; in a
    SendRecv one each way, across nodes when the group spans them."""
    if op != "alltoall":
        return 1
    me = lay.gpus[0]
    return sum(1 for g in lay.gpus[1:] if topo.domain_of(g) != topo.domain_of(me))


def net_hops_in_latency(op: str, gpus: Sequence[int], topo: TopologyView, algorithm: str, protocol: str,
                        cache: dict | None = None, size_bytes: int | None = None) -> float:
    """How many inter-node hops the latency term of (algorithm, protocol) counts: the derivative
    of the plan's latency by ``net_hop_extra_us`` (0 inside a node). Used to fit and apply the
    deployed per-hop cost (costs/deployed.py) without re-planning. With ``size_bytes``, 0 for a
    call whose network messages stay within the transport's eager limit (:func:`_eager_gate`)."""
    lay = layout(topo, gpus)
    n, n_nodes = len(lay.gpus), len(lay.by_node)
    if n == 1 or n_nodes == 1 or algorithm == "hierarchical":
        return 0.0
    ctx = _context(topo, {} if cache is None else cache, n, n_nodes,
                   "p2p" if algorithm in ("direct", "p2p") else "coll")
    bumped = replace(ctx, constants=replace(ctx.constants, net_hop_extra_us=ctx.constants.net_hop_extra_us + 1.0))
    n_ch: int | None = None
    if size_bytes is not None and algorithm in ("ring", "tree", "direct", "p2p"):  # a call within the eager limit
        size = _per_peer(op, size_bytes, lay) if algorithm in ("direct", "p2p") else size_bytes
        n_ch = (tuner.p2p_channels_used(ctx, size) if algorithm in ("direct", "p2p")
                else tuner.channels_used(ctx, algorithm, protocol, size_bytes))
        if _eager_gate(bumped, algorithm, protocol, size, n_ch, lay) is not bumped:
            return 0.0

    def lat(c: nccl_graph.TunerContext) -> float:
        if algorithm == "direct":
            return _alltoall_latency_us(c, topo, lay, protocol, n_ch)
        if algorithm == "p2p":
            return _p2p_latency_us(c, protocol)
        return tuner.latency_us(c, op, algorithm, protocol)

    return lat(bumped) - lat(ctx)


def proxied_peers_in_latency(op: str, gpus: Sequence[int], topo: TopologyView, algorithm: str, protocol: str,
                             cache: dict | None = None) -> float:
    """How many remote peers the proxy adds in order to the latency of an All-to-All across nodes:
    the derivative of the plan's latency by ``p2p_peer_us`` (costs/nccl_p2p.py; 0 for every other
    call, and where RCCL runs the rounds or the transport's messages are priced one by one), as
    :func:`net_hops_in_latency` is by the hop extra. Used to fit the deployed per-peer cost without
    re-planning."""
    lay = layout(topo, gpus)
    if algorithm != "direct" or len(lay.by_node) < 2:
        return 0.0
    ctx = _context(topo, {} if cache is None else cache, len(lay.gpus), len(lay.by_node), "p2p")
    bumped = replace(ctx, constants=replace(ctx.constants, p2p_peer_us=ctx.constants.p2p_peer_us + 1.0))
    return _alltoall_latency_us(bumped, topo, lay, protocol) - _alltoall_latency_us(ctx, topo, lay, protocol)


def _per_peer(op: str, size: float, lay: Layout) -> float:
    """Bytes of one send: All-to-All sends S/n to each peer, SendRecv S to its one peer."""
    return size / len(lay.gpus) if op == "alltoall" else size


def _route_class(topo: TopologyView, links: Sequence[int]) -> str:
    kinds = {topo.kind_of(link) for link in links}
    return "net" if "nic" in kinds else ("nvlink" if kinds == {"nvlink"} else "other")


def _p2p_flows(topo: TopologyView, cache: dict, ctx: nccl_graph.TunerContext, pattern: Pattern, size: float,
               inflation: float, n_ch: int, net_inflation: float | None = None) -> Sequence[Flow]:
    """Point-to-point flows of `size` × `inflation` wire bytes (the protocol's wire factor, over
    ``p2p_efficiency`` for All-to-All and for SendRecv across nodes), each send bounded by its `n_ch` channels at ``tuner.p2p_channel_GBps`` of
    its route class. The bound is on payload, so it is inflated like the bytes. ``net_inflation``:
    the factor of the flows whose route crosses the network, where it differs (their Simple protocol)."""
    if size <= 0:
        return ()
    # Route classes per flow (the pattern's entries of weight > 0), found once per pattern (an
    # 8,192-rank All-to-All pattern has ~70k entries and is planned at every size); channel
    # rates once per class; the flows' bytes and caps as array products (the same IEEE
    # operations, left to right, as per flow).
    arrays = pattern_arrays(cache, pattern)
    hit = cache.get(("route_classes", id(pattern)))
    if hit is None or hit[0] is not pattern:
        classes = [_route_class(topo, links) for links, w, _ in pattern if w > 0]
        names = sorted(set(classes))
        hit = cache[("route_classes", id(pattern))] = (
            pattern, names, np.array([names.index(c) for c in classes], dtype=np.int64))
    _, names, class_of_flow = hit
    rate = [tuner.p2p_channel_GBps(ctx, cls) for cls in names]
    ch = np.array([np.nan if r is None else r for r in rate], dtype=np.float64)[class_of_flow]
    volume: float | None = size * inflation
    infl: float | np.ndarray = inflation
    if net_inflation is not None and net_inflation != inflation and "net" in names:
        infl = np.array([net_inflation if c == "net" else inflation for c in names], dtype=np.float64)[class_of_flow]
        volume = None  # not one pattern scaled by one volume
    nbytes = arrays.w * size * infl
    flow_caps = arrays.m * n_ch * ch * 1e9 * infl  # NaN where the class has no channel rate
    caps = np.where(np.isnan(flow_caps) | (flow_caps == 0), np.inf, flow_caps)
    return make_phase(arrays, nbytes, caps, flow_caps, volume)


def _hierarchical(op: str, lay: Layout, size: int, proto: str, topo: TopologyView,
                  cache: dict, geo: dict) -> tuple[tuple[Sequence[Flow], ...], float, int]:
    """Intra-node ring, then per-rail ring across nodes, then intra-node ring (AllReduce);
    AllGather runs inter then intra, ReduceScatter intra then inter."""
    ppn, n_nodes = lay.ppn, len(lay.by_node)
    intra_lay = [Layout(m, (lay.nodes[i],), (m,)) for i, m in enumerate(lay.by_node)]
    columns = [tuple(m[j] for m in lay.by_node if j < len(m)) for j in range(ppn)]
    inter_lay = [Layout(c, tuple(topo.domain_of(g) for g in c), tuple((g,) for g in c)) for c in columns]
    ctx_in = _context(topo, cache, ppn, 1)
    ctx_out = _context(topo, cache, n_nodes, n_nodes)

    def ring_phase(lays: list[Layout], ctx: nccl_graph.TunerContext, sub_op: str, sub_size: float) -> tuple[Sequence[Flow], float, int]:
        k = len(lays[0].gpus)
        if k < 2 or sub_size <= 0:
            return (), 0.0, 0
        n_ch = tuner.channels_used(ctx, "ring", proto, int(sub_size))
        wire = WIRE_FACTOR[proto] / tuner.proto_efficiency(ctx, proto)
        cap = tuner.channel_bw_GBps(ctx, "ring", proto, coll=sub_op) * 1e9 * wire
        flows: Sequence[Flow] = ()
        for sub in lays:
            pat = cached_pattern(geo, ("ring", True, n_ch, sub.gpus), partial(ring_pattern, topo, sub, n_ch, True, geo))
            flows = join_phases(flows, scaled_flows(pat, _ring_volume(sub_op, len(sub.gpus), sub_size) * wire, cap, geo))
        return flows, tuner.latency_us(ctx, sub_op, "ring", proto), n_ch

    if op == "allreduce":
        steps = [(intra_lay, ctx_in, "reducescatter", size), (inter_lay, ctx_out, "allreduce", size / ppn),
                 (intra_lay, ctx_in, "allgather", size)]
    elif op == "allgather":
        steps = [(inter_lay, ctx_out, "allgather", size / ppn), (intra_lay, ctx_in, "allgather", size)]
    else:
        steps = [(intra_lay, ctx_in, "reducescatter", size), (inter_lay, ctx_out, "reducescatter", size / ppn)]
    phases, latency, n_ch = [], 0.0, 1
    for lays, ctx, sub_op, sub_size in steps:
        flows, lat, ch = ring_phase(lays, ctx, sub_op, sub_size)
        phases.append(flows)
        latency += lat
        n_ch = max(n_ch, ch)
    return tuple(phases), latency, n_ch


# ------------------------------------------------------------------------------ timing

def phase_time_s(flows: Sequence[Flow], capacity_Bps: np.ndarray) -> float:
    """Time of one phase alone on an empty network: the busiest link or the tightest rate cap.
    Exact for the symmetric phases built here (every flow on the bottleneck lasts the phase)."""
    if not flows:
        return 0.0
    if isinstance(flows, Phase):  # built from a pattern: its arrays are at hand
        a = flows.arrays
        if flows.scale is not None:  # one pattern × a volume: its links' loads scale with it
            used, unit = a.unit_load
            busiest = float(np.max(unit / capacity_Bps[used])) * flows.scale if used.size else 0.0
        else:
            used, load = link_loads(a.links, flows.nbytes[a.flow_of_link])
            busiest = float(np.max(load / capacity_Bps[used])) if used.size else 0.0
        return max(float(np.max(flows.nbytes / flows.caps)), busiest)
    lengths = [len(f.links) for f in flows]
    links = np.fromiter((link for f in flows for link in f.links), dtype=np.int64, count=sum(lengths))
    nbytes = np.fromiter((f.nbytes for f in flows), dtype=np.float64, count=len(flows))
    used, load = link_loads(links, np.repeat(nbytes, lengths))
    caps = np.fromiter((f.rate_cap_Bps or np.inf for f in flows), dtype=np.float64, count=len(flows))
    return max(float(np.max(nbytes / caps)), float(np.max(load / capacity_Bps[used])) if used.size else 0.0)


# nccl-tests' busbw / algbw per tool (NCCL-COST-MODEL.md §6; nccl-tests src/*.cu GetBw), n ranks.
_BUSBW_FACTOR = {
    "allreduce": lambda n: 2 * (n - 1) / n,
    "allgather": lambda n: (n - 1) / n, "reducescatter": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n, "alltoallv": lambda n: (n - 1) / n,
    "gather": lambda n: (n - 1) / n, "scatter": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0, "reduce": lambda n: 1.0, "sendrecv": lambda n: 1.0, "hypercube": lambda n: 1.0,
}


def busbw_factor(op: str, n: int) -> float:
    """nccl-tests busbw = algbw × this, for every nccl-tests tool (any spelling :func:`~simulator.vocabulary.canonical_op` reads).
    On one rank as nccl-tests prints it: 0 for the collectives whose factor is (n − 1)/n, 1 for
    Broadcast, Reduce and SendRecv."""
    key = canonical_op(op)
    if key not in _BUSBW_FACTOR:
        raise InputError(f"unknown collective {op!r}; expected one of {', '.join(_BUSBW_FACTOR)}", field="op")
    return float(_BUSBW_FACTOR[key](max(n, 1)))


def one_rank_copy_s(size_bytes: int, gpu: GPU) -> float:
    """A collective of one rank, out of place (nccl-tests' first columns): NCCL issues no kernel
    of its own but copies the send buffer into the receive buffer (``ncclLaunchOneRank``,
    src/device/onerank.cu: ``cudaMemcpyAsync`` device to device unless the op is a PreMulSum;
    a SendRecv or All-to-All to itself copies the same bytes through its p2p kernel), so
    ``size_bytes`` read and written at a streaming kernel's share of HBM
    (:func:`simulator.costs.memory_bound.memory_time`). The launch floor is the caller's, as for
    every collective."""
    return memory_time(2.0 * size_bytes, 1, "stream", gpu) if size_bytes > 0 else 0.0

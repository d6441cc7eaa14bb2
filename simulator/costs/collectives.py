"""Collectives as NCCL runs them, decomposed into flows over the topology's routes.

``plan_collective`` chooses the algorithm and protocol with NCCL's own tuner
(:mod:`simulator.costs.nccl_tuner`) unless pinned, and returns a :class:`CollectivePlan`: the
tuner's latency term plus phases of concurrent :class:`Flow` s. Timing a plan needs the shared
network: :func:`simulator.replay.single_collective.time_collective` runs one plan on a SimPy
FlowNetwork; :func:`time_collective` here is the closed-form equivalent for one collective alone
on an empty network (per phase, the slowest link or rate cap).

Volumes (per rank, S = size in the nccl-tests convention, n ranks):

* ring AllGather / ReduceScatter: (n-1)/n·S to the next rank; AllReduce = ReduceScatter then
  AllGather, 2(n-1)/n·S; Broadcast: S along an open chain from the root. Channels each carry an
  equal share; across nodes channel c leaves every node through rail c (rings rotated so that a
  channel's inter-node hop is rail-aligned), as NCCL spreads channels over NICs. Inside a
  full-mesh node (no switch) each channel is spread over ring orders that together use every
  peer link equally (:func:`hamiltonian_decomposition`), as RCCL's and NCCL's multi-ring graphs do.
* double binary tree AllReduce (Sanders et al. 2009; NCCL ``trees.cc``): an intra-node chain and
  two complementary binary trees over nodes, each carrying half the channels; reduce and
  broadcast are pipelined, so every tree edge carries its share once up and once down.
* NVLS (in-switch reduction, NCCL ``nvls.cc``): AllReduce = multimem.ld_reduce of the rank's
  1/n shard (the switch reads every member: S up per GPU, S/n down) + multimem.st of it (S/n up,
  S down); NVLS-tree adds a rail-aligned binary tree across nodes on each 1/ppn shard.
* hierarchical (pinned only; not an NCCL algorithm): intra-node ring ReduceScatter, inter-node
  ring AllReduce per rail on the 1/ppn shard, intra-node ring AllGather.
* direct All-to-All: S/n from every rank to every other rank; SendRecv: rank i sends S to i+1.

Protocols change the bytes on the wire (LL: 8 B of payload per 16 B line, so 2×; LL128: 120 of
128 B, so 128/120×; Simple: 1×) and the per-channel rate (tuner caps). The achievable fraction of
each link (profile ``scale_up.efficiency``, ``nics.efficiency``) scales link capacities
(:func:`effective_capacity_Bps`), not flows; NVLS multimem traffic additionally runs at NCCL's
``nvlsEfficiency`` (0.85 on Hopper), applied as extra wire bytes.

Calibration knobs from the profile's ``nccl:`` mapping (:class:`~simulator.costs.nccl_tuner.TunerConstants`;
their defaults change nothing): ``proto_efficiency.<proto>`` divides the wire bytes of ring/tree
(and hierarchical) flows, ``p2p_efficiency`` those of All-to-All and SendRecv, and
``net_latency_us`` (NCCL's ``latencyInter``) is added to every inter-node hop's latency.
"""

from __future__ import annotations

import weakref
from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache
from math import gcd
from typing import Any, Sequence

import numpy as np

from simulator.costs import nccl_tuner as tuner
from simulator.errors import InputError

OPS = ("allgather", "reducescatter", "allreduce", "alltoall", "broadcast", "sendrecv")
ALGORITHMS = ("ring", "tree", "nvls", "nvls_tree", "hierarchical", "direct", "p2p")
PROTOCOLS = ("ll", "ll128", "simple")
WIRE_FACTOR = {"ll": 2.0, "ll128": 128.0 / 120.0, "simple": 1.0}
_STRUCTURAL = {
    "allreduce": ("ring", "tree", "nvls", "nvls_tree", "hierarchical"),
    "allgather": ("ring", "nvls", "hierarchical"),
    "reducescatter": ("ring", "nvls", "hierarchical"),
    "broadcast": ("ring",),
    "alltoall": ("direct",),
    "sendrecv": ("p2p",),
}
_FLOWED = ("ring", "tree", "nvls", "nvls_tree")  # NCCL algorithms the tuner may pick that have flows here
P2P_LL_THRESHOLD = 16384  # NCCL_P2P_LL_THRESHOLD default: per-peer bytes up to this use LL
MAX_FLOWS_PER_PATTERN = 20000  # beyond this, All-to-All flows are aggregated per link


@dataclass(frozen=True, slots=True)
class Flow:
    """``nbytes`` (wire bytes) over ``links``; ``rate_cap_Bps`` bounds its rate (None: links only)."""

    links: tuple[int, ...]
    nbytes: float
    rate_cap_Bps: float | None = None


@dataclass(frozen=True)
class CollectivePlan:
    """One collective: latency term plus phases of concurrent flows run one after another."""

    op: str
    algorithm: str
    protocol: str
    latency_s: float
    phases: tuple[tuple[Flow, ...], ...]
    size_bytes: int
    n_ranks: int
    channels: int = 1

    @property
    def n_flows(self) -> int:
        return sum(len(p) for p in self.phases)

    @property
    def wire_bytes(self) -> float:
        return float(sum(f.nbytes for p in self.phases for f in p))


@dataclass(frozen=True)
class _Layout:
    """Members grouped by node, in order of first appearance."""

    gpus: tuple[int, ...]
    nodes: tuple[int, ...]
    by_node: tuple[tuple[int, ...], ...]

    @property
    def ppn(self) -> int:
        return max(len(m) for m in self.by_node)


def normalize_op(op: str) -> str:
    key = op.lower().replace("_", "").replace("-", "")
    key = {"alltoall": "alltoall", "a2a": "alltoall", "p2p": "sendrecv"}.get(key, key)
    if key not in OPS:
        raise InputError(f"unknown collective {op!r}; expected one of {', '.join(OPS)}", field="op")
    return key


def _layout(topo: Any, gpus: Sequence[int]) -> _Layout:
    members = tuple(int(g) for g in gpus)
    if not members:
        raise InputError("a collective needs at least one GPU", field="gpus")
    if len(set(members)) != len(members):
        raise InputError("a GPU appears twice in the group", field="gpus")
    by: dict[int, list[int]] = {}
    for g in members:
        if not 0 <= g < topo.n_gpus:
            raise InputError(f"GPU {g} is outside this cluster of {topo.n_gpus} GPUs", field="gpus")
        by.setdefault(topo.node_of(g), []).append(g)
    return _Layout(members, tuple(by), tuple(tuple(v) for v in by.values()))


def effective_capacity_Bps(topo: Any) -> np.ndarray:
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
    factor = np.fromiter((table.get(k, 1.0) for k in topo.kind), dtype=np.float64, count=len(topo.kind))
    return np.asarray(topo.capacity_Bps, dtype=np.float64) * factor


# ------------------------------------------------------------------------------ caches

_CTX_CACHE: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()


def _cache(topo: Any) -> dict:
    try:
        return _CTX_CACHE.setdefault(topo, {})
    except TypeError:  # not weak-referenceable: no caching
        return {}


def _context(topo: Any, n_ranks: int, n_nodes: int) -> tuner.TunerContext:
    cache = _cache(topo)
    key = ("ctx", n_ranks, n_nodes)
    if key not in cache:
        cache[key] = tuner.context_from_profile(topo.profile, n_ranks, n_nodes)
    return cache[key]


# ------------------------------------------------------------------------------ patterns
# A pattern is a list of (links, weight, mult): a flow carrying `weight` × the per-rank volume,
# made of `mult` merged channel-hops (its rate cap is mult × the per-channel cap; fractional where
# a channel is split over several ring orders).

Pattern = list[tuple[tuple[int, ...], float, float]]


def _merge(entries: dict[tuple[int, ...], list[float]]) -> Pattern:
    return [(links, w, m) for links, (w, m) in entries.items() if links]


def _rails(topo: Any, members: Sequence[int]) -> list[int]:
    rails = sorted({topo.nic_of(g) for g in members}) if getattr(topo, "rails", 1) else [0]
    return rails or [0]


def _rotate_to_rail(topo: Any, members: tuple[int, ...], rail: int) -> tuple[int, ...]:
    for i, g in enumerate(members):
        if topo.nic_of(g) == rail:
            return members[i:] + members[:i]
    return members


@lru_cache(maxsize=None)
def hamiltonian_decomposition(n: int) -> tuple[tuple[int, ...], ...]:
    """Directed Hamiltonian cycles of the complete digraph on n GPUs that use every ordered pair
    (i, j) equally often: once (n-1 cycles) where that is possible, else twice (2(n-1) cycles).

    Why: on a full mesh (MI300X xGMI, GH200 NVLink without NVSwitch) every GPU has a separate
    link to each peer, and RCCL/NCCL reach the mesh's bandwidth by running channels over
    different ring orders so that all n-1 links of a GPU carry traffic (RCCL
    ``src/graph/rome_models.cc``: the 8-GPU, 7-xGMI-link model lists 8 ring orders that together
    use all 56 GPU pairs; the measured MI300X AllReduce plateau of 315 GB/s busbw equals the sum
    of all 7 links, data/nccl/mi300x8_allreduce_1node.csv). A decomposition into Hamiltonian
    cycles exists for every n except 4 and 6 (Tillson 1980, "A Hamiltonian decomposition of
    K*_2m, 2m >= 8"); for those, each arc twice (e.g. n=4: the 3 undirected 4-cycles in both
    directions). Found by a small depth-first search, canonical cycles starting at 0; above
    :data:`_DECOMPOSE_MAX_N` GPUs (or if the search budget runs out) it falls back to strides
    coprime with n, which are balanced when n is prime.
    """
    if n <= 2:
        return (tuple(range(n)),)
    if n <= _DECOMPOSE_MAX_N:
        for k in ((2,) if n in (4, 6) else (1, 2)):
            found = _search_cycles(n, k)
            if found is not None:
                return found
    strides = [s for s in range(1, n) if gcd(s, n) == 1]
    return tuple(tuple((i * s) % n for i in range(n)) for s in strides)


_DECOMPOSE_MAX_N = 16


def _search_cycles(n: int, k: int, budget: int = 200_000) -> tuple[tuple[int, ...], ...] | None:
    use = [[0] * n for _ in range(n)]
    cycles: list[tuple[int, ...]] = []
    steps = 0
    target = k * (n - 1)

    def extend(path: list[int], seen: set[int]) -> bool:
        nonlocal steps
        steps += 1
        if steps > budget:
            raise TimeoutError
        cur = path[-1]
        if len(path) == n:
            if use[cur][path[0]] >= k:
                return False
            use[cur][path[0]] += 1
            cycles.append(tuple(path))
            if len(cycles) == target or extend([0], {0}):
                return True
            cycles.pop()
            use[cur][path[0]] -= 1
            return False
        for nxt in sorted(range(n), key=lambda j: use[cur][j]):  # least-used arc first
            if nxt in seen or use[cur][nxt] >= k:
                continue
            use[cur][nxt] += 1
            seen.add(nxt)
            path.append(nxt)
            if extend(path, seen):
                return True
            path.pop()
            seen.discard(nxt)
            use[cur][nxt] -= 1
        return False

    try:
        return tuple(cycles) if extend([0], {0}) else None
    except TimeoutError:
        return None


def _mesh_orders(members: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Ring orders over a full mesh that load every peer link equally (see
    :func:`hamiltonian_decomposition`); every channel spreads its share over all of them."""
    return [tuple(members[i] for i in cycle) for cycle in hamiltonian_decomposition(len(members))]


def _ring_orders(topo: Any, lay: _Layout, n_ch: int) -> list[tuple[tuple[int, ...], int | None]]:
    """Per channel: the ring order and the rail its inter-node hops use."""
    if len(lay.by_node) == 1:
        members = lay.by_node[0]
        if topo.profile.node.scale_up.kind == "mesh" and len(members) > 2:
            orders = _mesh_orders(members)
            return [(o, None) for _ in range(n_ch) for o in orders]
        return [(members, None)] * n_ch
    rails = _rails(topo, lay.by_node[0])
    out = []
    for c in range(n_ch):
        r = rails[c % len(rails)]
        order: tuple[int, ...] = ()
        for members in lay.by_node:
            order += _rotate_to_rail(topo, members, r)
        out.append((order, r))
    return out


def _ring_pattern(topo: Any, lay: _Layout, n_ch: int, closed: bool = True) -> Pattern:
    acc: dict[tuple[int, ...], list[float]] = defaultdict(lambda: [0.0, 0])
    rings = _ring_orders(topo, lay, n_ch)
    per_ring = n_ch / len(rings)  # a channel split over several ring orders (full mesh)
    for order, rail in rings:
        if not closed:  # broadcast: open chain starting at the root
            i0 = order.index(lay.gpus[0])
            order = order[i0:] + order[:i0]
        hops = len(order) if closed else len(order) - 1
        for i in range(hops):
            a, b = order[i], order[(i + 1) % len(order)]
            cross = topo.node_of(a) != topo.node_of(b)
            e = acc[topo.route(a, b, rail if cross else None).links]
            e[0] += per_ring / n_ch
            e[1] += per_ring
    return _merge(acc)


def _binary_tree_edges(k: int, mirrored: bool) -> list[tuple[int, int]]:
    """(child, parent) position pairs of a heap-ordered binary tree over k positions; the
    mirrored tree numbers positions from the other end, so leaves of one are inner nodes of the
    other (the double binary tree's complementarity, approximately)."""
    pos = list(range(k))[::-1] if mirrored else list(range(k))
    return [(pos[i], pos[(i - 1) // 2]) for i in range(1, k)]


def _tree_pattern(topo: Any, lay: _Layout, n_ch: int) -> Pattern:
    acc: dict[tuple[int, ...], list[float]] = defaultdict(lambda: [0.0, 0])
    rails = _rails(topo, lay.by_node[0])

    def add(a: int, b: int, rail: int | None) -> None:
        for s, d in ((a, b), (b, a)):  # reduce up and broadcast down, pipelined
            e = acc[topo.route(s, d, rail).links]
            e[0] += 1.0 / n_ch
            e[1] += 1

    for c in range(n_ch):
        r = rails[c % len(rails)]
        chains = [_rotate_to_rail(topo, m, r) for m in lay.by_node]
        for chain in chains:
            for i in range(len(chain) - 1):
                add(chain[i + 1], chain[i], None)
        for child, parent in _binary_tree_edges(len(chains), mirrored=bool(c % 2)):
            add(chains[child][0], chains[parent][0], r)
    return _merge(acc)


def _nvls_intra(topo: Any, lay: _Layout, op: str) -> Pattern:
    """Per-GPU up/down link loads of the in-switch reduction, as multiples of S."""
    out: Pattern = []
    for members in lay.by_node:
        k = len(members)
        up_w, down_w = {"allreduce": (1 + 1 / k, 1 + 1 / k), "allgather": (1 / k, 1.0),
                        "reducescatter": (1.0, 1 / k)}[op]
        routes = topo.nvls_routes(members)
        out += [((u,), up_w, 1) for u in routes.up] + [((d,), down_w, 1) for d in routes.down]
    return out


def _nvls_tree_inter(topo: Any, lay: _Layout) -> Pattern:
    """Each local index's 1/ppn shard reduced and broadcast across nodes on two binary trees."""
    acc: dict[tuple[int, ...], list[float]] = defaultdict(lambda: [0.0, 0])
    ppn = lay.ppn
    for local in range(ppn):
        column = [m[local] for m in lay.by_node if local < len(m)]
        for mirrored in (False, True):
            for child, parent in _binary_tree_edges(len(column), mirrored):
                for s, d in ((column[child], column[parent]), (column[parent], column[child])):
                    e = acc[topo.route(s, d).links]
                    e[0] += 0.5 / ppn
                    e[1] += 1
    return _merge(acc)


def _direct_sends(lay: _Layout) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(src, dst, weight) of every All-to-All send, weight in units of the per-rank buffer S.

    Up to 128 ranks every rank sends S/n to every other. Larger groups send the inter-node part
    rail-aligned: rank i of a node hands everything bound for another node to that node's GPU
    of the same local index (PXN-style), which forwards it inside the node.
    """
    n = len(lay.gpus)
    exact = n <= 128
    src, dst, weight = [], [], []
    for members in lay.by_node:
        here = np.asarray(members, dtype=np.int64)
        for other in lay.by_node:
            there = np.asarray(other, dtype=np.int64)
            if other is members or exact:
                s, d = np.repeat(here, there.size), np.tile(there, here.size)
                keep = s != d
                src.append(s[keep]), dst.append(d[keep]), weight.append(np.full(int(keep.sum()), 1.0 / n))
            else:
                src.append(here), dst.append(there[np.arange(here.size) % there.size])
                weight.append(np.full(here.size, there.size / n))
    return np.concatenate(src), np.concatenate(dst), np.concatenate(weight)


def _direct_pattern(topo: Any, lay: _Layout) -> Pattern:
    """All-to-All as flows: sends with identical routes merged; very large patterns are
    aggregated into one flow per link (the same link loads)."""
    src, dst, weight = _direct_sends(lay)
    routes = topo.route_matrix(src, dst)
    rows, inverse = np.unique(routes.links, axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    if len(rows) <= MAX_FLOWS_PER_PATTERN:
        w = np.bincount(inverse, weights=weight, minlength=len(rows))
        mult = np.bincount(inverse, minlength=len(rows))
        return [(tuple(r[r >= 0].tolist()), float(x), int(k)) for r, x, k in zip(rows, w, mult) if r[0] >= 0]
    pair, link = routes.entries()
    w = np.bincount(link, weights=weight[pair], minlength=topo.n_links)
    mult = np.bincount(link, minlength=topo.n_links)
    return [((int(l),), float(w[l]), int(mult[l])) for l in np.flatnonzero(mult)]


def _p2p_pattern(topo: Any, lay: _Layout) -> Pattern:
    n = len(lay.gpus)
    acc: dict[tuple[int, ...], list[float]] = defaultdict(lambda: [0.0, 0])
    for i, src in enumerate(lay.gpus):
        dst = lay.gpus[(i + 1) % n]
        e = acc[topo.route(src, dst).links]
        e[0] += 1.0
        e[1] += 1
    return _merge(acc)


def _cached_pattern(topo: Any, key: tuple, build) -> Pattern:
    cache = _cache(topo)
    if key not in cache:
        cache[key] = build()
    return cache[key]


def _flows(pattern: Pattern, volume: float, cap_per_channel: float | None) -> tuple[Flow, ...]:
    if volume <= 0:
        return ()
    return tuple(Flow(links, w * volume, None if cap_per_channel is None else m * cap_per_channel)
                 for links, w, m in pattern if w > 0)


# ------------------------------------------------------------------------------ planning

def _ring_volume(op: str, n: int, size: float) -> float:
    return {"allgather": (n - 1) / n * size, "reducescatter": (n - 1) / n * size,
            "allreduce": 2 * (n - 1) / n * size, "broadcast": size}[op]


def _nvls_available(topo: Any) -> bool:
    p = topo.profile
    return bool(p.node.scale_up.nvls) and p.gpu.arch in ("hopper", "blackwell")


def _check_pins(op: str, algo: str | None, proto: str | None, topo: Any, lay: _Layout) -> None:
    if algo is not None:
        if algo not in ALGORITHMS:
            raise InputError(f"unknown algorithm {algo!r}; expected one of {', '.join(ALGORITHMS)}", field="algo")
        if algo not in _STRUCTURAL[op]:
            raise InputError(f"{algo} does not implement {op}; expected one of {', '.join(_STRUCTURAL[op])}", field="algo")
        if algo in ("nvls", "nvls_tree") and not _nvls_available(topo):
            raise InputError(f"{algo} needs an NVSwitch with in-switch reduction; {topo.profile.name} has none", field="algo")
        if algo == "nvls" and op != "allreduce" and len(lay.by_node) > 1:
            raise InputError(f"nvls {op} works inside one node only; this group spans {len(lay.by_node)} nodes", field="algo")
        if algo == "nvls_tree" and len(lay.by_node) == 1:
            raise InputError("nvls_tree needs more than one node; use nvls inside a node", field="algo")
    if proto is not None and proto not in PROTOCOLS:
        raise InputError(f"unknown protocol {proto!r}; expected one of {', '.join(PROTOCOLS)}", field="proto")
    if proto is not None and proto != "simple" and algo in ("nvls", "nvls_tree"):
        raise InputError(f"{algo} runs the simple protocol only", field="proto")


def _choose(op: str, size: int, ctx: tuner.TunerContext, lay: _Layout, algo: str | None, proto: str | None) -> tuple[str, str]:
    if op == "alltoall" or op == "sendrecv":
        per_peer = size / len(lay.gpus) if op == "alltoall" else size
        return ("direct" if op == "alltoall" else "p2p"), proto or ("ll" if per_peer <= P2P_LL_THRESHOLD else "simple")
    if algo == "hierarchical":
        return algo, proto or tuner.select(ctx, op, size, algo="ring")[1]
    tuner_algo = algo
    if algo == "nvls" and len(lay.by_node) > 1:
        tuner_algo = "nvls_tree"  # NCCL_ALGO=NVLS across nodes without CollNet runs NVLSTree
    best: tuple[float, str, str] | None = None
    for a in _FLOWED:
        if tuner_algo is not None and a != tuner_algo:
            continue
        for p in tuner.PROTOS:
            if proto is not None and p != proto:
                continue
            t = tuner.predict_us(ctx, op, a, p, max(1, size))
            if t < float("inf") and (best is None or t < best[0]):
                best = (t, a, p)
    if best is not None:
        return best[1], best[2]
    if tuner_algo is not None and tuner_algo in _STRUCTURAL[op]:
        return tuner_algo, proto or "simple"  # pinned outside NCCL's default rules: run it anyway
    raise InputError(f"no algorithm/protocol combination is enabled for {op} (algo={algo}, proto={proto})", field="algo")


def _p2p_latency_us(ctx: tuner.TunerContext, proto: str) -> float:
    """One send/recv: NCCL's ring base latency plus one hop of the link class."""
    link = "net" if ctx.n_nodes > 1 else ctx.intra_link
    p = tuner.PROTOS.index(proto)
    plugin = tuner.net_plugin_latency_us(ctx, proto) if ctx.n_nodes > 1 else 0.0
    return ctx.constants.base_latency_us["ring"][p] + ctx.constants.hw_latency_us[link]["ring"][p] + plugin


def _alltoall_latency_us(ctx: tuner.TunerContext, topo: Any, lay: _Layout, proto: str) -> float:
    """Grouped send/recv to every peer: the base latency once, plus one hop latency per peer
    (NCCL schedules a grouped All-to-All as one p2p round per peer distance, so per-peer
    latencies add up; a peer on another node costs a NET hop, a local one an NVLink/PCI hop).
    Assumes the group's layout is the same for every rank (the first rank's peers are counted)."""
    p = tuner.PROTOS.index(proto)
    hw = ctx.constants.hw_latency_us
    me = lay.gpus[0]
    local = sum(1 for g in lay.gpus[1:] if topo.node_of(g) == topo.node_of(me))
    remote = len(lay.gpus) - 1 - local
    return (ctx.constants.base_latency_us["ring"][p] + local * hw[ctx.intra_link]["ring"][p]
            + remote * (hw["net"]["ring"][p] + tuner.net_plugin_latency_us(ctx, proto)))


def plan_collective(op: str, gpus: Sequence[int], size_bytes: int, topo: Any, *,
                    algo: str | None = None, proto: str | None = None) -> CollectivePlan:
    """Plan one collective over `gpus` (rank order) of `size_bytes` (nccl-tests convention)."""
    op = normalize_op(op)
    if size_bytes < 0:
        raise InputError(f"expected a size >= 0 bytes, got {size_bytes}", field="size_bytes")
    lay = _layout(topo, gpus)
    n, n_nodes = len(lay.gpus), len(lay.by_node)
    algo = algo.lower() if algo else None
    proto = proto.lower() if proto else None
    _check_pins(op, algo, proto, topo, lay)
    if n == 1:
        return CollectivePlan(op, algo or "none", proto or "simple", 0.0, (), size_bytes, 1)
    ctx = _context(topo, n, n_nodes)
    algorithm, protocol = _choose(op, size_bytes, ctx, lay, algo, proto)
    wire = WIRE_FACTOR[protocol]
    # Calibration knobs (1.0 by default): the achievable fraction of the protocol's rate and of
    # the links for p2p traffic, applied as extra wire bytes like nvlsEfficiency (rate caps stay).
    proto_eff = ctx.constants.proto_efficiency[tuner.PROTOS.index(protocol)]
    key_base = (lay.gpus,)

    if algorithm in ("ring", "tree"):
        n_ch = tuner.channels_used(ctx, algorithm, protocol, size_bytes)
        cap = tuner.channel_bw_GBps(ctx, algorithm, protocol, size_bytes) * 1e9 * wire
        if algorithm == "ring":
            closed = op != "broadcast"
            pat = _cached_pattern(topo, ("ring", closed, n_ch) + key_base, lambda: _ring_pattern(topo, lay, n_ch, closed))
            volume = _ring_volume(op, n, size_bytes)
        else:
            pat = _cached_pattern(topo, ("tree", n_ch) + key_base, lambda: _tree_pattern(topo, lay, n_ch))
            volume = float(size_bytes)
        phases = (_flows(pat, volume * wire / proto_eff, cap),)
        latency_us = tuner.latency_us(ctx, op, algorithm, protocol)
    elif algorithm in ("nvls", "nvls_tree"):
        n_ch = ctx.graph.nvls_channels
        scale = wire / tuner.nvls_efficiency(ctx)
        intra = _cached_pattern(topo, ("nvls", op) + key_base, lambda: _nvls_intra(topo, lay, op))
        flows = _flows(intra, size_bytes * scale, None)
        if algorithm == "nvls_tree":
            inter = _cached_pattern(topo, ("nvls_tree",) + key_base, lambda: _nvls_tree_inter(topo, lay))
            flows += _flows(inter, size_bytes * wire, None)
        phases = (flows,)
        latency_us = tuner.latency_us(ctx, op, algorithm, protocol)
    elif algorithm == "hierarchical":
        phases, latency_us, n_ch = _hierarchical(op, lay, size_bytes, protocol, topo)
    elif algorithm == "direct":
        n_ch = 1
        pat = _cached_pattern(topo, ("direct",) + key_base, lambda: _direct_pattern(topo, lay))
        phases = (_flows(pat, size_bytes * wire / ctx.constants.p2p_efficiency, None),)
        latency_us = _alltoall_latency_us(ctx, topo, lay, protocol)
    else:  # p2p
        n_ch = 1
        pat = _cached_pattern(topo, ("p2p",) + key_base, lambda: _p2p_pattern(topo, lay))
        phases = (_flows(pat, size_bytes * wire / ctx.constants.p2p_efficiency, None),)
        latency_us = _p2p_latency_us(ctx, protocol)
    phases = tuple(p for p in phases if p)
    return CollectivePlan(op, algorithm, protocol, latency_us * 1e-6, phases, size_bytes, n, n_ch)


def _proto_efficiency(topo: Any, proto: str) -> float:
    """The profile's ``nccl.proto_efficiency.<proto>`` (1.0 unless calibrated)."""
    return _context(topo, 2, 1).constants.proto_efficiency[tuner.PROTOS.index(proto)]


def _hierarchical(op: str, lay: _Layout, size: int, proto: str, topo: Any) -> tuple[tuple[tuple[Flow, ...], ...], float, int]:
    """Intra-node ring, then per-rail ring across nodes, then intra-node ring (AllReduce);
    AllGather runs inter then intra, ReduceScatter intra then inter."""
    ppn, n_nodes = lay.ppn, len(lay.by_node)
    wire = WIRE_FACTOR[proto] / _proto_efficiency(topo, proto)
    intra_lay = [_Layout(m, (lay.nodes[i],), (m,)) for i, m in enumerate(lay.by_node)]
    columns = [tuple(m[j] for m in lay.by_node if j < len(m)) for j in range(ppn)]
    inter_lay = [_Layout(c, tuple(topo.node_of(g) for g in c), tuple((g,) for g in c)) for c in columns]
    ctx_in = _context(topo, ppn, 1)
    ctx_out = _context(topo, n_nodes, n_nodes)

    def ring_phase(lays: list[_Layout], ctx: tuner.TunerContext, sub_op: str, sub_size: float) -> tuple[tuple[Flow, ...], float, int]:
        k = len(lays[0].gpus)
        if k < 2 or sub_size <= 0:
            return (), 0.0, 0
        n_ch = tuner.channels_used(ctx, "ring", proto, int(sub_size))
        cap = tuner.channel_bw_GBps(ctx, "ring", proto) * 1e9 * wire
        flows: tuple[Flow, ...] = ()
        for sub in lays:
            pat = _cached_pattern(topo, ("ring", True, n_ch, sub.gpus), lambda sub=sub: _ring_pattern(topo, sub, n_ch))
            flows += _flows(pat, _ring_volume(sub_op, len(sub.gpus), sub_size) * wire, cap)
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
    lengths = [len(f.links) for f in flows]
    links = np.fromiter((link for f in flows for link in f.links), dtype=np.int64, count=sum(lengths))
    nbytes = np.fromiter((f.nbytes for f in flows), dtype=np.float64, count=len(flows))
    load = np.bincount(links, weights=np.repeat(nbytes, lengths), minlength=capacity_Bps.size)
    caps = np.fromiter((f.rate_cap_Bps or np.inf for f in flows), dtype=np.float64, count=len(flows))
    return max(float(np.max(nbytes / caps)), float(np.max(load / capacity_Bps)))


def time_collective(op: str, gpus: Sequence[int], size_bytes: int, topo: Any, *,
                    algo: str | None = None, proto: str | None = None) -> float:
    """Seconds one collective takes alone on an empty network (closed form, no event loop)."""
    plan = plan_collective(op, gpus, size_bytes, topo, algo=algo, proto=proto)
    cap = effective_capacity_Bps(topo)
    return plan.latency_s + sum(phase_time_s(p, cap) for p in plan.phases)


# nccl-tests' busbw / algbw per tool (NCCL-COST-MODEL.md §6; nccl-tests src/*.cu GetBw), n ranks.
_BUSBW_FACTOR = {
    "allreduce": lambda n: 2 * (n - 1) / n,
    "allgather": lambda n: (n - 1) / n, "reducescatter": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n, "alltoallv": lambda n: (n - 1) / n,
    "gather": lambda n: (n - 1) / n, "scatter": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0, "reduce": lambda n: 1.0, "sendrecv": lambda n: 1.0, "hypercube": lambda n: 1.0,
}


def busbw_factor(op: str, n: int) -> float:
    """nccl-tests busbw = algbw × this, for every nccl-tests tool (aliases as normalize_op)."""
    key = op.lower().replace("_", "").replace("-", "")
    key = {"a2a": "alltoall", "p2p": "sendrecv"}.get(key, key)
    if key not in _BUSBW_FACTOR:
        raise InputError(f"unknown collective {op!r}; expected one of {', '.join(_BUSBW_FACTOR)}", field="op")
    return 1.0 if n <= 1 else float(_BUSBW_FACTOR[key](n))
    if op == "allreduce":
        return 2 * (n - 1) / n
    if op in ("allgather", "reducescatter", "alltoall"):
        return (n - 1) / n
    return 1.0

"""Where each collective algorithm's bytes go: flow patterns over the topology's routes.

A *pattern* is the set of flows one algorithm puts on the network for a group of GPUs, each as
``(links, weight, mult)``: a flow carrying ``weight`` × the per-rank volume over ``links``, made
of ``mult`` merged channel-hops (its rate cap is ``mult`` × the per-channel cap). Patterns depend
only on the group and the topology, so they are built once per topology and group and scaled by
the message size (:func:`flows`). The algorithms and their volumes are described in
:mod:`simulator.costs.collectives`, which chooses among them.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import cached_property, lru_cache
from math import gcd
from itertools import chain
from typing import Callable, Iterable, Iterator, Sequence

import numpy as np

from simulator.costs import nvls_reduce
from simulator.costs.topology_view import TopologyView
from simulator.errors import InputError

MAX_FLOWS_PER_PATTERN = 20000  # beyond this, All-to-All flows are aggregated per link
ROUTE_CHUNK = 1 << 18  # All-to-All sends whose routes are looked up at once (~100 MB of route tables)


@dataclass(frozen=True, slots=True)
class Flow:
    """``nbytes`` (wire bytes) over ``links``; ``rate_cap_Bps`` bounds its rate (None: links only)."""

    links: tuple[int, ...]
    nbytes: float
    rate_cap_Bps: float | None = None


@dataclass(frozen=True)
class Layout:
    """Members grouped by NVLink domain (what NCCL calls a node: the node itself, or with MNNVL
    a multi-node domain such as an NVL72 rack), in order of first appearance; ``nodes`` and
    ``by_node`` name the domains."""

    gpus: tuple[int, ...]
    nodes: tuple[int, ...]
    by_node: tuple[tuple[int, ...], ...]

    @cached_property
    def ppn(self) -> int:
        """The most members in one domain (worked out once: a DP group has one per node)."""
        return max(len(m) for m in self.by_node)


def layout(topo: TopologyView, gpus: Sequence[int]) -> Layout:
    members = tuple(int(g) for g in gpus)
    if not members:
        raise InputError("a collective needs at least one GPU", field="gpus")
    if len(set(members)) != len(members):
        raise InputError("a GPU appears twice in the group", field="gpus")
    if min(members) < 0 or max(members) >= topo.n_gpus:
        g = next(g for g in members if not 0 <= g < topo.n_gpus)
        raise InputError(f"GPU {g} is outside this cluster of {topo.n_gpus} GPUs", field="gpus")
    by: dict[int, list[int]] = {}
    for g, d in zip(members, map(topo.domain_of, members)):
        by.setdefault(d, []).append(g)
    return Layout(members, tuple(by), tuple(tuple(v) for v in by.values()))


# ------------------------------------------------------------------------------ patterns
# A pattern is a list of (links, weight, mult): a flow carrying `weight` × the per-rank volume,
# made of `mult` merged channel-hops (its rate cap is mult × the per-channel cap; fractional where
# a channel is split over several ring orders).

Pattern = list[tuple[tuple[int, ...], float, float]]


def _merge(entries: dict[tuple[int, ...], list[float]]) -> Pattern:
    return [(links, w, m) for links, (w, m) in entries.items() if links]


def group_rails(topo: TopologyView, members: Sequence[int]) -> list[int]:
    rails = sorted({topo.nic_of(g) for g in members}) if topo.rails else [0]
    return rails or [0]


def _rotate_to_rail(topo: TopologyView, members: tuple[int, ...], rail: int) -> tuple[int, ...]:
    """``members`` rotated to start at the GPU a channel through NIC ``rail`` enters at: the
    NIC's local GPU (``HardwareProfile.nic_local_gpus``) when it is a member, else the first
    member that sends through that NIC."""
    if len(members) == 1:  # one GPU per domain (a DP group across nodes): nothing to rotate
        return members
    local = topo.profile.nic_local_gpus
    if rail < len(local):
        for i, g in enumerate(members):
            if g % topo.gpus_per_node == local[rail] and topo.nic_of(g) == rail:
                return members[i:] + members[:i]
    for i, g in enumerate(members):
        if topo.nic_of(g) == rail:
            return members[i:] + members[:i]
    return members


def nic_ends(topo: TopologyView, members: tuple[int, ...]) -> tuple[int, ...]:
    """The members of one node that are a NIC's local GPU, in NIC order: where NCCL's rings
    may enter and leave the node (search.cc ``ncclTopoSearchRecNet`` starts a channel at the
    GPU closest to its NIC, and the ring leaves through the NIC closest to its last GPU)."""
    by_local = {g % topo.gpus_per_node: g for g in members}
    return tuple(by_local[g] for g in topo.profile.nic_local_gpus if g in by_local)


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


@lru_cache(maxsize=None)
def hamiltonian_paths(n: int) -> tuple[tuple[int, ...], ...]:
    """Directed Hamiltonian paths of the complete digraph on n GPUs that use every ordered pair
    equally often, with every GPU the start of equally many paths (and the end of as many).

    Why: across nodes a ring does not close inside a node; each channel enters a node at the GPU
    of one NIC, visits every GPU once and leaves through the NIC of the last one (NCCL
    ``search.cc`` ring search from a NET to a NET; RCCL's rome models write such rings as
    ``N0 ... N1``). On a full mesh the channels' paths together must use all n(n-1) peer links
    once each, or all channels queue on the same n-1 links. Derived from a cycle decomposition
    of n+1 vertices (:func:`hamiltonian_decomposition`) by deleting vertex n: every cycle becomes
    a path from the successor of n to its predecessor, and the arcs through n were the only
    ones lost. n ≤ 2: the one order.
    """
    if n <= 2:
        return (tuple(range(n)),)
    paths = []
    for cycle in hamiltonian_decomposition(n + 1):
        i = cycle.index(n)
        paths.append(cycle[i + 1:] + cycle[:i])
    return tuple(paths)


def _mesh_node_paths(members: tuple[int, ...]) -> dict[int, list[tuple[int, ...]]]:
    """The balanced Hamiltonian paths over one node's members, keyed by their first GPU."""
    by_start: dict[int, list[tuple[int, ...]]] = defaultdict(list)
    for path in hamiltonian_paths(len(members)):
        by_start[members[path[0]]].append(tuple(members[i] for i in path))
    return by_start


def _mesh_chain(paths: dict[int, list[tuple[int, ...]]], entry: int, c: int) -> tuple[int, ...]:
    options = paths[entry]
    return options[(c // len(paths)) % len(options)]


def _ring_orders(topo: TopologyView, lay: Layout, n_ch: int) -> list[tuple[tuple[int, ...], int | None]]:
    """Per channel: the ring order and the rail its inter-node hops use.

    On a switched node (NVSwitch, PCIe) channel c enters and leaves every node through rail c.
    On a full mesh (xGMI, NVLink without switch) channel c enters the first node at GPU c and
    follows one of the balanced Hamiltonian paths (:func:`hamiltonian_paths`) to its exit GPU e,
    whose NIC carries it to GPU e's rail peer on the next node, where the path starting at that
    GPU continues; so every node runs each path once over ppn channels and every peer link
    carries an equal share. The hop closing the ring returns cross-rail when the paths' exits
    do not come back to the start (on a rail fat tree it crosses a spine, as NCCL's does).
    """
    mesh = topo.profile.node.scale_up.kind == "mesh"
    if len(lay.by_node) == 1:
        members = lay.by_node[0]
        if mesh and len(members) > 2:
            orders = _mesh_orders(members)
            return [(o, None) for _ in range(n_ch) for o in orders]
        return [(members, None)] * n_ch
    if mesh and lay.ppn > 2 and len({len(m) for m in lay.by_node}) == 1:
        return _mesh_ring_orders(topo, lay, n_ch)
    out: list[tuple[tuple[int, ...], int | None]] = []
    for c in range(n_ch):
        chains, r = _channel_chains(topo, lay, c, n_ch)
        out.append((tuple(chain.from_iterable(chains)), r))  # (not sum(chains, ()): quadratic in the nodes)
    return out


def _channel_chains(topo: TopologyView, lay: Layout, c: int, n_ch: int) -> tuple[list[tuple[int, ...]], int]:
    """Channel c's path through each domain of the group (members rotated to the GPU it enters
    at) and the rail its inter-domain hops use.

    A domain of one node: channel c enters every node through rail c (mod the node's rails), as
    NCCL spreads channels over the NICs of a node. A domain spanning nodes (MNNVL, an NVL72 rack
    of 18 trays): NCCL's graph search sees one node with a NIC per GPU, so the channels enter and
    leave through different GPUs' NICs, spread over the domain: channel c enters at member
    ``c * members / n_ch`` and its hops use that GPU's rail (on every domain the same position,
    so the hop stays on one rail of the fabric).
    """
    if topo.profile.nodes_per_domain > 1:
        first = lay.by_node[0]
        p = (c * len(first)) // n_ch % len(first)
        r = topo.nic_of(first[p]) if topo.rails else 0
        chains = [m[p % len(m):] + m[:p % len(m)] for m in lay.by_node]
        return chains, r
    rails = group_rails(topo, lay.by_node[0])
    r = rails[c % len(rails)]
    if lay.ppn == 1:  # one GPU per domain (a DP group across nodes): nothing to rotate
        return list(lay.by_node), r
    return [_rotate_to_rail(topo, members, r) for members in lay.by_node], r


def _mesh_ring_orders(topo: TopologyView, lay: Layout, n_ch: int) -> list[tuple[tuple[int, ...], int | None]]:
    """Rings over full-mesh nodes (see :func:`_ring_orders`); the rail is None: each inter-node
    hop leaves through the NIC of the GPU that sends it."""
    ends = [nic_ends(topo, m) for m in lay.by_node]
    if all(1 < len(e) < len(m) for e, m in zip(ends, lay.by_node)):
        return _cross_nic_ring_orders(topo, lay, n_ch, ends)
    node_paths = [_mesh_node_paths(m) for m in lay.by_node]
    out: list[tuple[tuple[int, ...], int | None]] = []
    for c in range(n_ch):
        local = c % lay.ppn
        order: tuple[int, ...] = ()
        for members, paths in zip(lay.by_node, node_paths):
            chain = _mesh_chain(paths, members[local], c)
            order += chain
            local = members.index(chain[-1])
        out.append((order, None))
    return out


def _cross_nic_ring_orders(topo: TopologyView, lay: Layout, n_ch: int,
                           ends: list[tuple[int, ...]]) -> list[tuple[tuple[int, ...], int | None]]:
    """Rings over full-mesh nodes whose NICs each have one local GPU, fewer than the GPUs (ALCF
    Polaris: 4 A100, 2 Slingshot NICs, one beside GPU 1 and one beside GPU 3).

    A channel can only enter a node at a NIC's local GPU and leave at another NIC's (NCCL's
    ring search, ``NCCL_CROSS_NIC``: "NET n -> GPU a -> .. -> GPU x -> NET m"), so every NIC
    carries one channel in and another out, and the node's other GPUs are on the NVLink
    chain between them. Channel c enters the first node through NIC c mod k, leaves through the
    next NIC, and enters the next node at the same NIC's GPU (NCCL 2.19+ ``ncclTopoPostset``
    exchanges the rings of channel pairs on odd nodes "to avoid crossing rails"; NCCL 2.18
    crosses rails instead, which loads the NICs the same way); the GPUs between take the
    remaining members in an order that turns with the channel, spreading the NVLink hops.
    Measured: NCCL 2.20.5 on 2 Polaris nodes logs rings 0 2 3 | 7 6 4 5 | 1 and 0 1 | 5 4 6 7 |
    3 2 over NIC 3 (GPU 1) and NIC 1 (GPU 3) (argonne-lcf/alcf-nccl-tests, pytests/VAE results).
    """
    from itertools import permutations

    out: list[tuple[tuple[int, ...], int | None]] = []
    k = len(ends[0])
    for c in range(n_ch):
        pos = c % k  # the position, in NIC order, of the NIC the channel enters the node through
        order: tuple[int, ...] = ()
        for members, e in zip(lay.by_node, ends):
            entry, exit_ = e[pos % len(e)], e[(pos + 1) % len(e)]
            middle = [g for g in members if g not in (entry, exit_)]
            perms = list(permutations(middle)) if len(middle) <= 5 else [tuple(middle)]
            order += (entry, *perms[(c // k) % len(perms)], exit_)
            pos += 1
        out.append((order, None))
    return out


def ring_pattern(topo: TopologyView, lay: Layout, n_ch: int, closed: bool = True,
                 cache: dict | None = None) -> Pattern:
    """Every channel's ring hops, routed in one :meth:`TopologyView.route_matrix` call (the rows
    equal ``route(a, b, rail)``; a DP ring over 784 nodes has ~37k hops, which one by one cost
    more than the rest of the plan), merged by route in hop order (:func:`_merge_rows`).

    ``cache`` (the cost model's, one per topology) keeps the distinct routes of each set of
    rings: a DP group of one GPU per node runs every channel on the same ring and rail, so its
    patterns at 1 and 2 channels (two message sizes) differ only in the counts per route, and
    route and merge their hops once."""
    rings = _ring_orders(topo, lay, n_ch)
    per_ring = n_ch / len(rings)  # a channel split over several ring orders (full mesh)
    # Channels that run the same ring on the same rail (every channel of a DP group of one GPU
    # per node: its one rail) are routed once, each of its hops counted once per such channel.
    times: dict[tuple[tuple[int, ...], int | None], int] = {}
    for ring in rings:
        times[ring] = times.get(ring, 0) + 1
    src: list[int] = []
    dst: list[int] = []
    rails: list[int] = []
    reps: list[int] = []
    for (order, rail), k in times.items():
        if not closed:  # broadcast: open chain starting at the root
            i0 = order.index(lay.gpus[0])
            order = order[i0:] + order[:i0]
        hops = len(order) if closed else len(order) - 1
        src += order[:hops]
        dst += (order[1:] + order[:1])[:hops]
        # an inter-domain hop leaves and enters through the ring's rail, else the sender's NIC
        rails += [rail] * hops if rail is not None else [topo.nic_of(a) if topo.rails else 0 for a in order[:hops]]
        reps += [k] * hops
    if not src:
        return []
    key = ("ring routes", closed, lay.gpus[0], tuple(times))
    routed = None if cache is None else cache.get(key)
    if routed is None:
        m = topo.route_matrix(src, dst, rails)
        routed = _distinct_rows(m.links, m.n_links)
        if cache is not None:
            cache[key] = routed
    return _weighted_routes(routed, per_ring / n_ch, per_ring, np.asarray(reps, dtype=np.int64))


def _merge_rows(rows: np.ndarray, n_links: np.ndarray, w: float, mult: float, reps: np.ndarray) -> Pattern:
    """Hops with identical routes merged, each hop (row of ``rows``, padded with -1) adding
    ``w`` to its route's weight and ``mult`` to its channel-hops ``reps`` times (once per
    channel that runs it), in order of first appearance; routes over no link dropped. The same
    numbers as adding hop by hop, channel by channel, into a dict keyed by route (the weights of
    a route of c hops are ``w`` summed c times left to right: a running sum, read at c), with
    one ``np.unique`` over the rows (as bytes) instead of a tuple per hop (a ring over 784
    nodes has ~37k hops; its distinct routes are what the pattern holds)."""
    if not rows.size:
        return []
    return _weighted_routes(_distinct_rows(rows, n_links), w, mult, reps)


def _distinct_rows(rows: np.ndarray, n_links: np.ndarray) -> tuple[list[tuple[int, ...]], np.ndarray]:
    """(the distinct routes of ``rows`` as link tuples, in order of first appearance, empty ones
    included; each row's number among them): :func:`_merge_rows` without the weights."""
    rows = np.ascontiguousarray(rows)
    as_bytes = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()
    _, first, inverse = np.unique(as_bytes, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    position = np.empty(order.size, dtype=np.int64)
    position[order] = np.arange(order.size, dtype=np.int64)
    routes = [tuple(row[:k]) for row, k in zip(rows[first[order]].tolist(), n_links[first[order]].tolist())]
    return routes, position[inverse.reshape(-1)]


def _weighted_routes(routed: tuple[list[tuple[int, ...]], np.ndarray], w: float, mult: float,
                     reps: np.ndarray) -> Pattern:
    """The pattern of :func:`_merge_rows` from :func:`_distinct_rows`' routes and rows."""
    routes, hop_route = routed
    counts = np.bincount(hop_route, weights=reps, minlength=len(routes)).astype(np.int64)
    running_w = np.cumsum(np.full(int(counts.max()), w)).tolist()  # (np.cumsum adds in order)
    running_m = np.cumsum(np.full(int(counts.max()), mult)).tolist()
    return [(links, running_w[c - 1], running_m[c - 1]) for links, c in zip(routes, counts.tolist()) if links]


def _binary_tree_edges(k: int, mirrored: bool) -> list[tuple[int, int]]:
    """(child, parent) position pairs of a heap-ordered binary tree over k positions; the
    mirrored tree numbers positions from the other end, so leaves of one are inner nodes of the
    other (the double binary tree's complementarity, approximately)."""
    pos = list(range(k))[::-1] if mirrored else list(range(k))
    return [(pos[i], pos[(i - 1) // 2]) for i in range(1, k)]


def tree_pattern(topo: TopologyView, lay: Layout, n_ch: int) -> Pattern:
    """The tree's flows over ``n_ch`` graph channels. Each graph channel runs both trees of the
    double binary tree, half its bytes on each: NCCL gives graph channel c the first tree and its
    duplicate, channel c + nChannels, the second, on the same intra-node chain and NIC (connect.cc
    connectTrees, ``channel1 = channel0 + nChannels``, then ncclTopoPostset doubles the channels:
    v2.8.4-1 lines 137-160 and 267, the same in v2.30.7-1), so each NIC carries one channel of each
    tree and a node's inner-node traffic is spread over all its NICs."""
    acc: dict[tuple[int, ...], list[float]] = defaultdict(lambda: [0.0, 0])

    def add(a: int, b: int, rail: int | None, share: float = 1.0) -> None:
        for s, d in ((a, b), (b, a)):  # reduce up and broadcast down, pipelined
            e = acc[topo.route(s, d, rail).links]
            e[0] += share / n_ch
            e[1] += share

    # On a full mesh each channel's intra-node chain is one of the balanced Hamiltonian paths
    # from its rail's GPU, so the channels' chains load every peer link alike (as the rings).
    mesh = topo.profile.node.scale_up.kind == "mesh" and lay.ppn > 2
    node_paths = [_mesh_node_paths(m) for m in lay.by_node] if mesh else []
    for c in range(n_ch):
        chains, r = _channel_chains(topo, lay, c, n_ch)
        if mesh:
            chains = [_mesh_chain(paths, chain[0], c) for paths, chain in zip(node_paths, chains)]
        for chain in chains:
            for i in range(len(chain) - 1):
                add(chain[i + 1], chain[i], None)
        for mirrored in (False, True):  # the channel and its duplicate: one tree each
            for child, parent in _binary_tree_edges(len(chains), mirrored):
                add(chains[child][0], chains[parent][0], r, 0.5)
    return _merge(acc)


def nvls_intra(topo: TopologyView, lay: Layout, op: str) -> Pattern:
    """Per-GPU up/down link loads of the in-switch reduction, as multiples of S; each flow's cap
    multiplier makes a cap of the switch's reduction rate bind at ``(k - 1)/k x S / rate``
    (:func:`simulator.costs.nvls_reduce.flow_multiplier`)."""
    out: Pattern = []
    for members in lay.by_node:
        k = len(members)
        up_w, down_w = {"allreduce": (1 + 1 / k, 1 + 1 / k), "allgather": (1 / k, 1.0),
                        "reducescatter": (1.0, 1 / k)}[op]
        up_m, down_m = (nvls_reduce.flow_multiplier(op, w, k) for w in (up_w, down_w))
        routes = topo.nvls_routes(members)
        out += [((u,), up_w, up_m) for u in routes.up] + [((d,), down_w, down_m) for d in routes.down]
    return out


def nvls_tree_inter(topo: TopologyView, lay: Layout) -> Pattern:
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


def _direct_sends(lay: Layout) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(src, dst, weight) of every All-to-All send, weight in units of the per-rank buffer S.

    Up to 128 ranks every rank sends S/n to every other. Larger groups send the inter-node part
    rail-aligned: rank i of a node hands everything bound for another node to that node's GPU
    of the same local index (PXN-style), which forwards it inside the node.
    """
    return tuple(np.concatenate(parts) for parts in zip(*_direct_send_chunks(lay)))  # type: ignore[return-value]


def _direct_send_chunks(lay: Layout) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """:func:`_direct_sends` in chunks of about :data:`ROUTE_CHUNK` sends where every node holds
    k members and the group is over 128 ranks (blocks of source nodes, :func:`_uniform_chunk`),
    so that an 8,192-rank group's 8.4 million sends are never all held at once; else one chunk."""
    n = len(lay.gpus)
    exact = n <= 128
    sizes = {len(m) for m in lay.by_node}
    if not exact and len(sizes) == 1:
        table = np.asarray(lay.by_node, dtype=np.int64)  # (nodes, k)
        nodes, k = table.shape
        step = max(1, ROUTE_CHUNK // ((nodes - 1) * k + k * (k - 1)))
        for a0 in range(0, nodes, step):
            yield _uniform_chunk(table, np.arange(a0, min(a0 + step, nodes)), n)
        return
    src, dst, weight = [], [], []
    for members in lay.by_node:
        here = np.asarray(members, dtype=np.int64)
        for other in lay.by_node:
            there = np.asarray(other, dtype=np.int64)
            if other is members or exact:
                s, d = np.repeat(here, there.size), np.tile(there, here.size)
                keep = s != d
                src.append(s[keep])
                dst.append(d[keep])
                weight.append(np.full(int(keep.sum()), 1.0 / n))
            else:
                src.append(here)
                dst.append(there[np.arange(here.size) % there.size])
                weight.append(np.full(here.size, there.size / n))
    yield np.concatenate(src), np.concatenate(dst), np.concatenate(weight)


def _uniform_chunk(table: np.ndarray, a: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The sends of source nodes ``a`` when every node holds k members (``table``: members by
    node): member i of node a to member i of every other node b (weight k/n; the rail-aligned
    inter-node part, b ascending), then every ordered pair inside each node a (weight 1/n)."""
    nodes, k = table.shape
    r = np.tile(np.repeat(np.arange(nodes - 1, dtype=np.int64), k), a.size)
    src_node = np.repeat(a, (nodes - 1) * k)
    dst_node = r + (r >= src_node)  # every node but the source's, ascending
    lane = np.tile(np.arange(k, dtype=np.int64), a.size * (nodes - 1))
    ii, jj = np.nonzero(~np.eye(k, dtype=bool))
    rows = table[a]
    src = np.concatenate([table[src_node, lane], rows[:, ii].ravel()])
    dst = np.concatenate([table[dst_node, lane], rows[:, jj].ravel()])
    weight = np.concatenate([np.full(src_node.size, k / n), np.full(a.size * ii.size, 1.0 / n)])
    return src, dst, weight


def direct_pattern(topo: TopologyView, lay: Layout) -> Pattern:
    """All-to-All as flows: sends with identical routes merged; very large patterns are
    aggregated into one flow per link (the same link loads). Routes are looked up in chunks of
    :data:`ROUTE_CHUNK` sends, so memory stays bounded for thousands of ranks."""
    chunks = _direct_send_chunks(lay)
    src, dst, weight = next(chunks)
    more = next(chunks, None)
    if more is not None or src.size > ROUTE_CHUNK:
        rest = chain([(src, dst, weight)], [] if more is None else [more], chunks)
        return _direct_pattern_chunked(topo, rest)
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


def _direct_pattern_chunked(topo: TopologyView,
                            sends: Iterable[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> Pattern:
    """:func:`direct_pattern` for more than ROUTE_CHUNK sends (``sends``: chunks of (src, dst,
    weight), each looked up ROUTE_CHUNK at a time): the distinct routes of each chunk
    are merged with those of the chunks before (weights summed per chunk, then across chunks)
    while there are at most MAX_FLOWS_PER_PATTERN of them; the link loads are summed chunk by
    chunk for when there are more."""
    w_link = np.zeros(topo.n_links)
    m_link = np.zeros(topo.n_links, dtype=np.int64)
    merged: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    per_link = False
    for src, dst, weight, sl in ((src, dst, weight, slice(c, c + ROUTE_CHUNK)) for src, dst, weight in sends
                                 for c in range(0, src.size, ROUTE_CHUNK)):
        routes = topo.route_matrix(src[sl], dst[sl])
        pair, link = routes.entries()
        w_link += np.bincount(link, weights=weight[sl][pair], minlength=topo.n_links)
        m_link += np.bincount(link, minlength=topo.n_links)
        if per_link:
            continue
        # Routes that differ in their first or last link are distinct rows: when those pairs
        # alone are too many, skip sorting whole rows.
        first = routes.links[:, 0]
        last = routes.links[np.arange(len(routes)), np.maximum(routes.n_links - 1, 0)]
        if np.unique(first * topo.n_links + last).size > MAX_FLOWS_PER_PATTERN:
            per_link, merged = True, None
            continue
        rows, inverse = np.unique(routes.links, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        w = np.bincount(inverse, weights=weight[sl], minlength=len(rows))
        m = np.bincount(inverse, minlength=len(rows))
        if merged is not None:
            rows, inverse = np.unique(np.concatenate([merged[0], rows]), axis=0, return_inverse=True)
            inverse = inverse.reshape(-1)
            w = np.bincount(inverse, weights=np.concatenate([merged[1], w]), minlength=len(rows))
            m = np.bincount(inverse, weights=np.concatenate([merged[2], m]), minlength=len(rows)).astype(np.int64)
        merged = (rows, w, m)
        if len(rows) > MAX_FLOWS_PER_PATTERN:
            per_link, merged = True, None
    if merged is not None:
        rows, w, m = merged
        return [(tuple(r[r >= 0].tolist()), float(x), int(k)) for r, x, k in zip(rows, w, m) if r[0] >= 0]
    return [((int(l),), float(w_link[l]), int(m_link[l])) for l in np.flatnonzero(m_link)]


def p2p_pattern(topo: TopologyView, lay: Layout) -> Pattern:
    n = len(lay.gpus)
    acc: dict[tuple[int, ...], list[float]] = defaultdict(lambda: [0.0, 0])
    for i, src in enumerate(lay.gpus):
        dst = lay.gpus[(i + 1) % n]
        e = acc[topo.route(src, dst).links]
        e[0] += 1.0
        e[1] += 1
    return _merge(acc)


def cached_pattern(cache: dict, key: tuple, build: Callable[[], Pattern]) -> Pattern:
    """``cache[key]``, built on first use (``cache``: the cost model's, one per topology)."""
    if key not in cache:
        cache[key] = build()
    return cache[key]


def sorted_distinct(ids: np.ndarray) -> np.ndarray:
    """``np.unique(ids)`` of integer ids, by one sort: numpy 2's ``np.unique`` without
    ``return_*`` goes through a hash table, which on link ids is ~25 times slower than sorting
    (numpy 2.4: 1 ms against 0.04 ms for 5,000 ids; 14 ms against 0.6 ms for 50,000)."""
    out = np.sort(ids, axis=None)
    if out.size > 1:
        keep = np.empty(out.size, dtype=bool)
        keep[0] = True
        np.not_equal(out[1:], out[:-1], out=keep[1:])
        out = out[keep]
    return out


def link_loads(links: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct links of ``links``, sorted; each one's summed ``weights``): sized by the
    entries, not by the fabric (a bincount over link ids is as long as the cluster's ~800k
    links at 100k GPUs). The sums add each link's entries in order, as such a bincount does."""
    used, inverse = np.unique(links, return_inverse=True)
    return used, np.bincount(inverse.reshape(-1), weights=weights, minlength=used.size)


class PatternArrays:
    """A pattern's flows (those with weight > 0) as arrays, for the closed-form phase time:
    the links of every flow end to end (``links``), the flow each entry belongs to
    (``flow_of_link``), and the flows' weights ``w`` and channel-hop counts ``m``. Built once per
    pattern; scaling them by a size is then a few array operations instead of a Python loop.
    ``unit_load`` (the bytes each link carries per unit of volume, as the links that carry any
    and their loads) is computed on first use: a phase that scales one pattern loads its links
    by ``volume × unit_load``, so its closed-form time needs no pass over the flows' links."""

    __slots__ = ("pattern", "flow_links", "links", "flow_of_link", "w", "m", "_unit_load")

    pattern: Pattern | None  # None for the arrays of joined phases, which no cache holds

    def __init__(self, pattern: Pattern | None) -> None:
        self._unit_load: tuple[np.ndarray, np.ndarray] | None = None
        if pattern is None:  # filled in by join_phases
            self.pattern = None
            return
        kept = [flow for flow in pattern if flow[1] > 0]
        self.pattern = pattern  # held so that the id() keying this in a cache stays unique
        self.flow_links = [links for links, _, _ in kept]
        lengths = list(map(len, self.flow_links))
        self.links = np.fromiter(chain.from_iterable(self.flow_links), dtype=np.int64, count=sum(lengths))
        self.flow_of_link = np.repeat(np.arange(len(kept), dtype=np.int64), lengths)
        self.w = np.array([w for _, w, _ in kept], dtype=np.float64)
        self.m = np.array([m for _, _, m in kept], dtype=np.float64)

    @property
    def unit_load(self) -> tuple[np.ndarray, np.ndarray]:
        """(links, load): every link some flow crosses, and the summed weight of its flows."""
        if self._unit_load is None:
            self._unit_load = link_loads(self.links, self.w[self.flow_of_link])
        return self._unit_load


def pattern_arrays(cache: dict, pattern: Pattern) -> PatternArrays:
    """The arrays of ``pattern``, built on first use (``cache``: the cost model's)."""
    key = ("arrays", id(pattern))
    got = cache.get(key)
    if got is None or got.pattern is not pattern:
        got = cache[key] = PatternArrays(pattern)
    return got


class Phase(Sequence[Flow]):
    """The flows of one phase, built from a pattern, held as arrays: ``arrays`` (the pattern's
    links), ``nbytes`` and ``caps`` (each flow's wire bytes and rate cap, ``inf`` for none).
    The closed-form time (:func:`simulator.costs.collectives.phase_time_s`) reads the arrays;
    the :class:`Flow` objects the FlowNetwork and the reports walk are made on first access
    (a 1,024-rank ring has tens of thousands, and pricing a call in closed form needs none).
    ``scale``: when the phase is one pattern scaled by a volume, that volume (``nbytes ==
    arrays.w × scale``), so the link loads are ``scale × arrays.unit_load``; None for joined
    phases. ``flow_caps``: each Flow's ``rate_cap_Bps`` as built (NaN for None; None: no flow
    has a cap). Phases are joined with :func:`join_phases`; otherwise a Phase behaves as the
    tuple of its flows (indexing, iteration, ``len``, ``==``, ``+``)."""

    __slots__ = ("arrays", "nbytes", "caps", "scale", "flow_caps", "_flows")

    def __init__(self, arrays: PatternArrays, nbytes: np.ndarray, caps: np.ndarray, *,
                 flow_caps: np.ndarray | None, scale: float | None = None) -> None:
        self.arrays, self.nbytes, self.caps = arrays, nbytes, caps
        self.flow_caps, self.scale = flow_caps, scale
        self._flows: tuple[Flow, ...] | None = None

    @property
    def flows(self) -> tuple[Flow, ...]:
        if self._flows is None:
            if self.flow_caps is None:
                self._flows = tuple(map(Flow, self.arrays.flow_links, self.nbytes.tolist()))
            else:
                caps: list = self.flow_caps.tolist()
                missing = np.isnan(self.flow_caps)
                if missing.any():
                    for i in np.flatnonzero(missing).tolist():
                        caps[i] = None
                self._flows = tuple(map(Flow, self.arrays.flow_links, self.nbytes.tolist(), caps))
        return self._flows

    def __len__(self) -> int:
        return int(self.nbytes.size)

    def __getitem__(self, i):
        return self.flows[i]

    def __iter__(self):
        return iter(self.flows)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Phase):
            other = other.flows
        return isinstance(other, tuple) and self.flows == other

    def __hash__(self) -> int:
        return hash(self.flows)

    def __add__(self, other: Sequence[Flow]) -> tuple[Flow, ...]:
        return self.flows + tuple(other)

    def __radd__(self, other: Sequence[Flow]) -> tuple[Flow, ...]:
        return tuple(other) + self.flows

    def __repr__(self) -> str:
        return f"Phase({len(self)} flows)"

    @property
    def wire_bytes(self) -> float:
        return float(self.nbytes.sum())


def make_phase(arrays: PatternArrays, nbytes: np.ndarray, caps: np.ndarray, flow_caps: np.ndarray | None,
               scale: float | None = None) -> Phase:
    """A :class:`Phase` (``caps``: the closed form's, ``inf`` where uncapped; ``flow_caps``: the
    flows' own, NaN for None, None when no flow has one)."""
    return Phase(arrays, nbytes, caps, flow_caps=flow_caps, scale=scale)


def join_phases(a: Sequence[Flow], b: Sequence[Flow]) -> Sequence[Flow]:
    """The flows of ``a`` then those of ``b`` as one phase (NVLS-tree's intra- and inter-node
    flows, a hierarchical step's rings): a :class:`Phase` with both one's arrays when both are
    Phases (or one is empty), else a plain tuple."""
    if not a or not b:
        return b if not a else a
    if not (isinstance(a, Phase) and isinstance(b, Phase)):
        return tuple(a) + tuple(b)
    arrays = PatternArrays(None)
    arrays.flow_links = a.arrays.flow_links + b.arrays.flow_links
    arrays.links = np.concatenate((a.arrays.links, b.arrays.links))
    arrays.flow_of_link = np.concatenate((a.arrays.flow_of_link, b.arrays.flow_of_link + len(a)))
    arrays.w = np.concatenate((a.arrays.w, b.arrays.w))
    arrays.m = np.concatenate((a.arrays.m, b.arrays.m))
    if a.flow_caps is None and b.flow_caps is None:
        flow_caps = None
    else:
        flow_caps = np.concatenate([p.flow_caps if p.flow_caps is not None else np.full(len(p), np.nan) for p in (a, b)])
    return make_phase(arrays, np.concatenate((a.nbytes, b.nbytes)), np.concatenate((a.caps, b.caps)), flow_caps)


def scaled_flows(pattern: Pattern, volume: float, cap_per_channel: float | None,
                 cache: dict | None = None) -> Sequence[Flow]:
    """The pattern's flows for a per-rank ``volume``; with the cost model's ``cache``, a
    :class:`Phase` (arrays, with the Flow objects made when first walked: the same numbers, the
    array products being the same IEEE operations as the per-flow ones)."""
    if volume <= 0:
        return ()
    if cache is None:
        return tuple(Flow(links, w * volume, None if cap_per_channel is None else m * cap_per_channel)
                     for links, w, m in pattern if w > 0)
    a = pattern_arrays(cache, pattern)
    nbytes = a.w * volume
    if cap_per_channel is None:
        return make_phase(a, nbytes, np.full(a.w.size, np.inf), None, volume)
    caps = a.m * cap_per_channel
    return make_phase(a, nbytes, np.where(caps == 0, np.inf, caps), caps, volume)

"""Route lookup tables of a built :class:`~simulator.hardware.topology.Topology`, and the ECMP
hash that picks among equal-cost paths.

``RouteTables`` turns the topology's link ids into per-GPU, per-node and per-leaf tables once,
so that ``Topology.route`` concatenates cached pieces and ``Topology.route_matrix`` computes
100k+ routes in a few numpy passes; both give the same links, latency and link class.

The tables are a cache of the fabric graph's routes: a route is a shortest path of the graph
(GPU, host, NIC, leaf, [spines or global links], leaf, NIC, host, GPU), and where there are
several equal-cost switch paths the ECMP hash of the GPU pair picks one of them, sorted by link
id. Trees (rail_fat_tree, fat_tree) have their switch paths in closed form (one per spine);
any other fabric (dragonfly) gives its switches' links as a graph (``FabricLinks.switch_links``)
and its switch paths are found on that graph with networkx, once per leaf pair, and kept
(tests/unit/test_fabric_graph.py checks both against the whole graph).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Hashable

from numpy.typing import ArrayLike

import numpy as np

from simulator.errors import InputError
from simulator.hardware.routes import LINK_CLASSES, MAX_ROUTE_LINKS, LinkClass, RouteMatrix


@dataclass(frozen=True)
class FabricLinks:
    """The link ids of a built cluster, by the role each link plays: what ``Topology`` hands to
    :meth:`RouteTables.build` (a plain record, so the tables never read the topology itself).

    Keys: ``scale_up[(gpu, peer)]`` is a mesh link (``peer = -1``: the GPU→switch link of an
    NVSwitch), ``switch_down[gpu]`` the switch→GPU link; ``pcie_up[gpu]``/``pcie_down[gpu]``
    GPU→host and host→GPU; ``nic_pcie[(node, rail)] = (host→NIC, NIC→host)``,
    ``nic_leaf[(node, rail)] = (NIC→leaf, leaf→NIC)``, ``leaf_spine[(unit, leaf rail, spine)] =
    (leaf→spine, spine→leaf)``. ``nic_leaf`` is empty when there is no scale-out fabric.
    """

    profile_name: str
    nodes: int
    gpus_per_node: int
    rails: int
    domain_gpus: int  # GPUs of one NVLink domain (gpus_per_node unless it spans nodes): routes inside it are scale-up
    units: int
    leaf_rails: int  # 1 for a plain fat tree (one leaf per unit), else one leaf per rail
    nodes_per_unit: int
    spines: int
    scale_up_kind: str  # nvswitch | mesh | none
    scale_out_kind: str  # rail_fat_tree | fat_tree | none
    latency_s: np.ndarray  # per link id
    scale_up: dict[tuple[int, int], int]
    switch_down: dict[int, int]
    pcie_up: list[int]
    pcie_down: list[int]
    nic_pcie: dict[tuple[int, int], tuple[int, int]]
    nic_leaf: dict[tuple[int, int], tuple[int, int]]
    leaf_spine: dict[tuple[int, int, int], tuple[int, int]]
    # Switch-to-switch links of a fabric routed on its graph (dragonfly): (from, to) -> link id,
    # leaves named by their leaf index (unit * leaf_rails + rail), other switches by any name.
    switch_links: dict[tuple[Hashable, Hashable], int] = field(default_factory=dict)
    # Per local GPU, the rail its own traffic uses (HardwareProfile.gpu_nics); () = GPU i of a
    # node uses NIC i*rails//gpus.
    gpu_nics: tuple[int, ...] = ()

    @property
    def n_gpus(self) -> int:
        return self.nodes * self.gpus_per_node

    def nic_of(self, gpu: int) -> int:
        """The rail a GPU sends through by default (``gpu_nics``, else GPU i of a node uses NIC
        i*rails//gpus)."""
        local = gpu % self.gpus_per_node
        return self.gpu_nics[local] if self.gpu_nics else local * self.rails // self.gpus_per_node


def _ecmp(a: int, b: int, buckets: int) -> int:
    """Deterministic ECMP hash of a (source, destination) GPU pair (splitmix64 finaliser)."""
    h = (a * 0x9E3779B97F4A7C15 + b * 0xC2B2AE3D27D4EB4F + 0x165667B19E3779F9) & 0xFFFFFFFFFFFFFFFF
    h ^= h >> 30
    h = (h * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    h ^= h >> 27
    h = (h * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    h ^= h >> 31
    return h % buckets


_U64 = np.uint64


def _ecmp_many(a: np.ndarray, b: np.ndarray, buckets: int) -> np.ndarray:
    """:func:`_ecmp` over arrays (uint64 arithmetic wraps modulo 2**64 exactly like the masks)."""
    with np.errstate(over="ignore"):
        h = a.astype(_U64) * _U64(0x9E3779B97F4A7C15) + b.astype(_U64) * _U64(0xC2B2AE3D27D4EB4F) + _U64(0x165667B19E3779F9)
        h ^= h >> _U64(30)
        h *= _U64(0xBF58476D1CE4E5B9)
        h ^= h >> _U64(27)
        h *= _U64(0x94D049BB133111EB)
        h ^= h >> _U64(31)
    return (h % _U64(buckets)).astype(np.int64)


class RouteTables:
    """Per-GPU, per-node and per-leaf link tables, so that a route is a concatenation of cached
    pieces (scalar path: Python tuples) or a few fancy-indexing passes (bulk path: arrays).

    A cross-node route is ``up(src, rail) + [spine hop] + down(dst, rail)`` where
    ``up`` = GPU→host, host→NIC, NIC→leaf and ``down`` = leaf→NIC, NIC→host, host→GPU.
    """

    def __init__(self, fabric: FabricLinks) -> None:
        self.fabric = fabric
        self.gpn, self.rails = fabric.gpus_per_node, fabric.rails
        self.dom = fabric.domain_gpus
        self.latency: list[float] = []
        self.intra_class: LinkClass = "nvlink"
        self.su_kind = "none"
        self.su_up: list[int] = []
        self.su_down: list[int] = []
        self.mesh: dict[tuple[int, int], int] = {}
        self.pcie_up: list[int] = []
        self.pcie_down: list[int] = []
        self.nic_of: list[int] = []
        self.nic_out: list[list[tuple[int, int]]] = []  # [node][rail] -> (host→NIC, NIC→leaf)
        self.nic_in: list[list[tuple[int, int]]] = []  # [node][rail] -> (leaf→NIC, NIC→host)
        self.leaf: list[list[int]] = []  # [node][rail] -> leaf index
        self.spine_up: list[list[int]] = []  # [leaf][spine] -> leaf→spine
        self.spine_down: list[list[int]] = []  # [leaf][spine] -> spine→leaf
        self.up_own: list[tuple[int, int, int]] = []  # [gpu] -> GPU→host, host→NIC, NIC→leaf (own rail)
        self.down_own: list[tuple[int, int, int]] = []  # [gpu] -> leaf→NIC, NIC→host, host→GPU
        self.spines = 0
        self.a: dict[str, np.ndarray] = {}
        self.graph_routed = bool(fabric.switch_links)
        self._switch_paths: dict[tuple[int, int], np.ndarray] = {}  # (leaf, leaf) -> (paths, links)
        self._graph: Any = None  # the switch graph (networkx.DiGraph) of a graph-routed fabric, built on first use

    @classmethod
    def build(cls, topo: FabricLinks) -> "RouteTables":
        t = cls(topo)
        gpn, n = topo.gpus_per_node, topo.n_gpus
        t.latency = topo.latency_s.tolist()
        t.su_kind = topo.scale_up_kind
        t.intra_class = "nvlink" if t.su_kind in ("nvswitch", "mesh") else "pcie"
        if t.su_kind == "nvswitch":
            t.su_up = [topo.scale_up[(g, -1)] for g in range(n)]
            t.su_down = [topo.switch_down[g] for g in range(n)]
        t.mesh = topo.scale_up if t.su_kind == "mesh" else {}
        t.pcie_up, t.pcie_down = list(topo.pcie_up), list(topo.pcie_down)
        t.nic_of = [topo.nic_of(g) for g in range(n)]
        a = t.a
        a["su_up"] = np.asarray(t.su_up, dtype=np.int64)
        a["su_down"] = np.asarray(t.su_down, dtype=np.int64)
        a["pcie_up"] = np.asarray(t.pcie_up, dtype=np.int64)
        a["pcie_down"] = np.asarray(t.pcie_down, dtype=np.int64)
        a["nic_of"] = np.asarray(t.nic_of, dtype=np.int64)
        if t.su_kind == "mesh":
            mesh = np.full((n, gpn), -1, dtype=np.int64)
            for (g, peer), link in topo.scale_up.items():
                mesh[g, peer % gpn] = link
            a["mesh"] = mesh
        a["latency"] = topo.latency_s
        if topo.nic_leaf:  # a scale-out fabric exists
            leaf_rails, spines = topo.leaf_rails, topo.spines
            t.nic_out = [[(topo.nic_pcie[(nd, r)][0], topo.nic_leaf[(nd, r)][0]) for r in range(topo.rails)] for nd in range(topo.nodes)]
            t.nic_in = [[(topo.nic_leaf[(nd, r)][1], topo.nic_pcie[(nd, r)][1]) for r in range(topo.rails)] for nd in range(topo.nodes)]
            t.leaf = [[(nd // topo.nodes_per_unit) * leaf_rails + (0 if leaf_rails == 1 else r) for r in range(topo.rails)]
                      for nd in range(topo.nodes)]
            t.spines = spines
            if topo.leaf_spine:
                n_leaves = topo.units * leaf_rails
                t.spine_up = [[topo.leaf_spine[(lf // leaf_rails, lf % leaf_rails, s)][0] for s in range(spines)] for lf in range(n_leaves)]
                t.spine_down = [[topo.leaf_spine[(lf // leaf_rails, lf % leaf_rails, s)][1] for s in range(spines)] for lf in range(n_leaves)]
            # GPU→leaf and leaf→GPU pieces through each GPU's own rail (the default route)
            t.up_own = [(t.pcie_up[g], *t.nic_out[g // gpn][t.nic_of[g]]) for g in range(n)]
            t.down_own = [(*t.nic_in[g // gpn][t.nic_of[g]], t.pcie_down[g]) for g in range(n)]
            a["nic_out"] = np.asarray(t.nic_out, dtype=np.int64).reshape(topo.nodes, topo.rails, 2)
            a["nic_in"] = np.asarray(t.nic_in, dtype=np.int64).reshape(topo.nodes, topo.rails, 2)
            a["leaf"] = np.asarray(t.leaf, dtype=np.int64).reshape(topo.nodes, topo.rails)
            a["spine_up"] = np.asarray(t.spine_up, dtype=np.int64).reshape(-1, max(1, spines))
            a["spine_down"] = np.asarray(t.spine_down, dtype=np.int64).reshape(-1, max(1, spines))
        return t

    # ------------------------------------------------------------ checks
    def check_gpu(self, gpu: int) -> None:
        f = self.fabric
        if not 0 <= gpu < f.n_gpus:
            raise InputError(f"GPU {gpu} is outside this cluster of {f.n_gpus} GPUs ({f.nodes} nodes x {f.gpus_per_node})")

    def check_rail(self, rail: int) -> None:
        if self.rails == 0:
            raise InputError(f"profile {self.fabric.profile_name!r} has no NICs (node.nics.count: 0), so GPUs on different nodes cannot communicate")
        if not 0 <= rail < self.rails:
            raise InputError(f"rail {rail} does not exist; this node has {self.rails} NIC rail(s)")

    # ------------------------------------------------------------ scalar pieces
    def intra(self, src: int, dst: int) -> tuple[int, ...]:
        if self.su_kind == "nvswitch":
            return (self.su_up[src], self.su_down[dst])
        if self.su_kind == "mesh":
            return (self.mesh[(src, dst)],)
        return (self.pcie_up[src], self.pcie_down[dst])

    def inter(self, src: int, dst: int, rail: int | None) -> tuple[int, ...]:
        if rail is None:
            if self.rails == 0:
                self.check_rail(0)
            up, down = self.up_own[src], self.down_own[dst]
            rs, rd = self.nic_of[src], self.nic_of[dst]
        else:
            self.check_rail(rail)
            rs = rd = rail
            up = (self.pcie_up[src], *self.nic_out[src // self.gpn][rail])
            down = (*self.nic_in[dst // self.gpn][rail], self.pcie_down[dst])
        ls, ld = self.leaf[src // self.gpn][rs], self.leaf[dst // self.gpn][rd]
        if ls == ld:
            return up + down
        if self.graph_routed:
            paths = self.switch_paths(ls, ld)
            return up + tuple(paths[_ecmp(src, dst, len(paths))].tolist()) + down
        spine = _ecmp(src, dst, self.spines)
        return up + (self.spine_up[ls][spine], self.spine_down[ld][spine]) + down

    def switch_paths(self, ls: int, ld: int) -> np.ndarray:
        """The equal-cost shortest switch paths from leaf ``ls`` to leaf ``ld`` of a graph-routed
        fabric, as an array (paths × links) of link ids, sorted: found on the switch graph once
        per leaf pair and kept."""
        key = (ls, ld)
        got = self._switch_paths.get(key)
        if got is None:
            got = self._switch_paths[key] = shortest_switch_paths(self._switch_graph, ls, ld)
        return got

    @property
    def _switch_graph(self) -> Any:
        if self._graph is None:
            import networkx as nx

            self._graph = nx.DiGraph()
            self._graph.add_edges_from((u, v, {"link": link}) for (u, v), link in self.fabric.switch_links.items())
        return self._graph

    # ------------------------------------------------------------ bulk
    def matrix(self, src: ArrayLike, dst: ArrayLike, rail: ArrayLike | None) -> RouteMatrix:
        s, d = np.broadcast_arrays(np.asarray(src, dtype=np.int64).ravel(), np.asarray(dst, dtype=np.int64).ravel())
        n = s.size
        for arr in (s, d):
            bad = (arr < 0) | (arr >= self.fabric.n_gpus)
            if bad.any():
                self.check_gpu(int(arr[np.argmax(bad)]))
        a = self.a
        links = np.full((n, MAX_ROUTE_LINKS), -1, dtype=np.int64)
        cls = np.zeros(n, dtype=np.int8)
        ns, nd = s // self.gpn, d // self.gpn
        cross = (s // self.dom) != (d // self.dom)
        intra = ~cross & (s != d)
        i = np.flatnonzero(intra)
        if i.size:
            si, di = s[i], d[i]
            if self.su_kind == "nvswitch":
                links[i, 0], links[i, 1] = a["su_up"][si], a["su_down"][di]
            elif self.su_kind == "mesh":
                links[i, 0] = a["mesh"][si, di % self.gpn]
            else:
                links[i, 0], links[i, 1] = a["pcie_up"][si], a["pcie_down"][di]
                cls[i] = LINK_CLASSES.index("pcie")
        x = np.flatnonzero(cross)
        if x.size:
            self._inter_many(links, x, s[x], d[x], ns[x], nd[x], rail, n)
            cls[x] = LINK_CLASSES.index("net")
        valid = links >= 0
        lat = np.zeros(n)
        lat_of = a["latency"]
        for col in range(MAX_ROUTE_LINKS):  # left to right, as Python's sum() in route()
            v = valid[:, col]
            if not v.any():
                break
            lat += np.where(v, lat_of[np.where(v, links[:, col], 0)], 0.0)
        return RouteMatrix(links, valid.sum(axis=1).astype(np.int64), lat, cls)

    def _inter_many(self, links: np.ndarray, x: np.ndarray, s: np.ndarray, d: np.ndarray,
                    ns: np.ndarray, nd: np.ndarray, rail: ArrayLike | None, n: int) -> None:
        a = self.a
        if self.rails == 0:
            self.check_rail(0)
        if rail is None:
            rs, rd = a["nic_of"][s], a["nic_of"][d]
        else:
            r = np.broadcast_to(np.asarray(rail, dtype=np.int64).ravel(), (n,))[x] if np.ndim(rail) else np.full(x.size, int(np.asarray(rail)))
            bad = (r < 0) | (r >= self.rails)
            if bad.any():
                self.check_rail(int(r[np.argmax(bad)]))
            rs = rd = r
        ls, ld = a["leaf"][ns, rs], a["leaf"][nd, rd]
        links[x, 0] = a["pcie_up"][s]
        links[x, 1:3] = a["nic_out"][ns, rs]
        cross = ls != ld
        base = 3 + 2 * cross.astype(np.int64)
        c = np.flatnonzero(cross)
        if c.size and self.graph_routed:
            base = self._graph_hops(links, x, c, s, d, ls, ld)
        elif c.size:
            spine = _ecmp_many(s[c], d[c], self.spines)
            links[x[c], 3] = a["spine_up"][ls[c], spine]
            links[x[c], 4] = a["spine_down"][ld[c], spine]
        down = a["nic_in"][nd, rd]
        links[x, base] = down[:, 0]
        links[x, base + 1] = down[:, 1]
        links[x, base + 2] = a["pcie_down"][d]

    def _graph_hops(self, links: np.ndarray, x: np.ndarray, c: np.ndarray, s: np.ndarray, d: np.ndarray,
                    ls: np.ndarray, ld: np.ndarray) -> np.ndarray:
        """Fill the switch part of the cross-leaf rows ``c`` (of the pairs ``x``) from the graph's
        paths, leaf pair by leaf pair; returns each row's column of its first leaf→NIC link."""
        base = np.full(x.size, 3, dtype=np.int64)
        pairs, inverse = np.unique(np.stack([ls[c], ld[c]], axis=1), axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        for k, (a_leaf, b_leaf) in enumerate(pairs.tolist()):
            rows = c[inverse == k]
            paths = self.switch_paths(a_leaf, b_leaf)
            n_paths, hops = paths.shape
            if 3 + hops + 3 > MAX_ROUTE_LINKS:
                raise InputError(f"profile {self.fabric.profile_name!r}: a route crosses {hops} switch links, more "
                                 f"than the {MAX_ROUTE_LINKS - 6} a route can hold")
            pick = _ecmp_many(s[rows], d[rows], n_paths) if n_paths > 1 else np.zeros(rows.size, dtype=np.int64)
            links[x[rows], 3:3 + hops] = paths[pick]
            base[rows] = 3 + hops
        return base


def shortest_switch_paths(graph: Any, source: Hashable, target: Hashable) -> np.ndarray:
    """Every shortest path from switch ``source`` to switch ``target`` of a switch graph (edges
    carry their ``link`` id) as link ids, one row per path, rows sorted: the equal-cost set ECMP
    spreads flows over. InputError when the fabric does not join them."""
    import networkx as nx

    try:
        vertex_paths = list(nx.all_shortest_paths(graph, source, target))
    except (nx.NetworkXNoPath, nx.NodeNotFound):
        raise InputError(f"the fabric graph has no path from switch {source!r} to switch {target!r}") from None
    rows = sorted(tuple(graph.edges[u, v]["link"] for u, v in zip(p, p[1:])) for p in vertex_paths)
    return np.asarray(rows, dtype=np.int64).reshape(len(rows), -1)

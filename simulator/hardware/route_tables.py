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

    Arrays of link ids, indexed by what the link belongs to: ``su_up[gpu]``/``su_down[gpu]`` the
    GPU→switch and switch→GPU links of an NVSwitch, ``mesh[gpu, local peer]`` a mesh link (-1 on
    the diagonal); ``pcie_up[gpu]``/``pcie_down[gpu]`` GPU→host and host→GPU; ``nic_pcie[node,
    rail] = (host→NIC, NIC→host)``, ``nic_leaf[node, rail] = (NIC→leaf, leaf→NIC)``,
    ``leaf_spine[unit, leaf rail, spine] = (leaf→spine, spine→leaf)``. ``nic_leaf`` is empty
    when there is no scale-out fabric, ``leaf_spine`` when there is no spine layer.
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
    su_up: np.ndarray  # [gpu] (nvswitch)
    su_down: np.ndarray  # [gpu] (nvswitch)
    mesh: np.ndarray  # [gpu, local peer] (mesh)
    pcie_up: np.ndarray  # [gpu]
    pcie_down: np.ndarray  # [gpu]
    nic_pcie: np.ndarray  # [node, rail, 2]
    nic_leaf: np.ndarray  # [node, rail, 2]
    leaf_spine: np.ndarray  # [unit, leaf rail, spine, 2]
    # Switch-to-switch links of a fabric routed on its graph (dragonfly): (from, to) -> link id,
    # leaves named by their leaf index (unit * leaf_rails + rail), other switches by any name.
    switch_links: dict[tuple[Hashable, Hashable], int] = field(default_factory=dict)
    # Per local GPU, the rail its own traffic uses (HardwareProfile.gpu_nics); () = GPU i of a
    # node uses NIC i*rails//gpus.
    gpu_nics: tuple[int, ...] = ()
    # [gpu] -> (its CPU→the NIC's CPU, back): the CPU-interconnect crossing of a GPU whose path to
    # its NIC is of type sys, -1 for the others; empty when no GPU has one (Topology._build_sys).
    sys: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int64))

    @property
    def n_gpus(self) -> int:
        return self.nodes * self.gpus_per_node

    def nic_of(self, gpu: int) -> int:
        """The rail a GPU sends through by default (``gpu_nics``, else GPU i of a node uses NIC
        i*rails//gpus)."""
        local = gpu % self.gpus_per_node
        return self.gpu_nics[local] if self.gpu_nics else local * self.rails // self.gpus_per_node

    def nic_of_all(self) -> np.ndarray:
        """:meth:`nic_of` of every GPU, as an array."""
        local = np.arange(self.n_gpus, dtype=np.int64) % self.gpus_per_node
        if self.gpu_nics:
            return np.asarray(self.gpu_nics, dtype=np.int64)[local]
        return local * self.rails // self.gpus_per_node


def _insert_sys(links: np.ndarray, rows: np.ndarray, col: np.ndarray | int, link: np.ndarray) -> None:
    """Insert ``link`` (per row; -1: nothing) at column ``col`` (per row) of ``links[rows]``, moving
    the links from there one column right (the last column must be free)."""
    keep = link >= 0
    if not keep.any():
        return
    r, c, v = rows[keep], np.broadcast_to(col, rows.shape)[keep], link[keep]
    if (links[r, -1] >= 0).any():
        raise InputError(f"a route crossing the CPU interconnect needs more than {MAX_ROUTE_LINKS} links")
    for k in np.unique(c).tolist():
        rr = r[c == k]
        links[rr, k + 1:] = links[rr, k:-1]
        links[rr, k] = v[c == k]


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
        self.intra_class: LinkClass = "nvlink"
        self.su_kind = "none"
        self.spines = 0
        self.a: dict[str, np.ndarray] = {}
        self.graph_routed = bool(fabric.switch_links)
        self._switch_paths: dict[tuple[int, int], np.ndarray] = {}  # (leaf, leaf) -> (paths, links)
        self._graph: Any = None  # the switch graph (networkx.DiGraph) of a graph-routed fabric, built on first use
        self.has_sys = False  # some GPU's network route crosses the CPU interconnect (FabricLinks.sys)

    @classmethod
    def build(cls, topo: FabricLinks) -> "RouteTables":
        """The bulk path's arrays, read off the fabric's id arrays with numpy; the scalar path's
        Python tables below are made from them on the first scalar route (a replay that routes
        in bulk never pays one Python object per GPU and link)."""
        t = cls(topo)
        t.su_kind = topo.scale_up_kind
        t.intra_class = "nvlink" if t.su_kind in ("nvswitch", "mesh") else "pcie"
        a = t.a
        a["su_up"] = np.asarray(topo.su_up if t.su_kind == "nvswitch" else (), dtype=np.int64)
        a["su_down"] = np.asarray(topo.su_down if t.su_kind == "nvswitch" else (), dtype=np.int64)
        a["pcie_up"] = np.asarray(topo.pcie_up, dtype=np.int64)
        a["pcie_down"] = np.asarray(topo.pcie_down, dtype=np.int64)
        a["nic_of"] = topo.nic_of_all()
        if t.su_kind == "mesh":
            a["mesh"] = np.asarray(topo.mesh, dtype=np.int64)
        a["latency"] = topo.latency_s
        t.has_sys = bool(topo.sys.size)
        if t.has_sys:
            a["sys_out"] = np.ascontiguousarray(topo.sys[:, 0])
            a["sys_in"] = np.ascontiguousarray(topo.sys[:, 1])
        if topo.nic_leaf.size:  # a scale-out fabric exists
            leaf_rails, spines, nodes, rails = topo.leaf_rails, topo.spines, topo.nodes, topo.rails
            unit = np.arange(nodes, dtype=np.int64)[:, None] // topo.nodes_per_unit
            leaf = unit * leaf_rails + (0 if leaf_rails == 1 else np.arange(rails, dtype=np.int64)[None, :])
            a["nic_out"] = np.stack([topo.nic_pcie[:, :, 0], topo.nic_leaf[:, :, 0]], axis=-1)
            a["nic_in"] = np.stack([topo.nic_leaf[:, :, 1], topo.nic_pcie[:, :, 1]], axis=-1)
            a["leaf"] = np.broadcast_to(leaf, (nodes, rails)).astype(np.int64)
            t.spines = spines
            by_leaf = (topo.leaf_spine.reshape(-1, spines, 2) if topo.leaf_spine.size
                       else np.zeros((0, max(1, spines), 2), dtype=np.int64))
            a["spine_up"] = np.ascontiguousarray(by_leaf[:, :, 0])
            a["spine_down"] = np.ascontiguousarray(by_leaf[:, :, 1])
        return t

    # ------------------------------------------------------------ scalar lookups
    # The scalar path reads the arrays one element at a time (``ndarray.item``: a Python int),
    # not from lists of every GPU's or node's links made on the first route: those cost in
    # proportion to the cluster (~100k entries each at 100k GPUs) for the few routes a plan
    # looks up one by one.
    def _at(self, key: str, *index: int) -> int:
        return self.a[key].item(*index)

    def su_up(self, gpu: int) -> int:
        return self._at("su_up", gpu)

    def su_down(self, gpu: int) -> int:
        return self._at("su_down", gpu)

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
        at = self._at
        if self.su_kind == "nvswitch":
            return (at("su_up", src), at("su_down", dst))
        if self.su_kind == "mesh":
            return (at("mesh", src, dst % self.gpn),)
        return (at("pcie_up", src), at("pcie_down", dst))

    def inter(self, src: int, dst: int, rail: int | None) -> tuple[int, ...]:
        at = self._at
        if rail is None:
            if self.rails == 0:
                self.check_rail(0)
            rs, rd = at("nic_of", src), at("nic_of", dst)
        else:
            self.check_rail(rail)
            rs = rd = rail
        ns, nd = src // self.gpn, dst // self.gpn
        # nic_out / nic_in: [node, rail] -> (host→NIC, NIC→leaf) / (leaf→NIC, NIC→host)
        up = (at("pcie_up", src), *self._sys_hop("sys_out", src), at("nic_out", ns, rs, 0), at("nic_out", ns, rs, 1))
        down = (at("nic_in", nd, rd, 0), at("nic_in", nd, rd, 1), *self._sys_hop("sys_in", dst), at("pcie_down", dst))
        ls, ld = at("leaf", ns, rs), at("leaf", nd, rd)
        if ls == ld:
            return up + down
        if self.graph_routed:
            paths = self.switch_paths(ls, ld)
            return up + tuple(paths[_ecmp(src, dst, len(paths))].tolist()) + down
        spine = _ecmp(src, dst, self.spines)
        return up + (at("spine_up", ls, spine), at("spine_down", ld, spine)) + down

    def _sys_hop(self, key: str, gpu: int) -> tuple[int, ...]:
        """The CPU-interconnect link of ``gpu``'s network route in direction ``key`` (sys_out /
        sys_in), or none."""
        if not self.has_sys:
            return ()
        link = self._at(key, gpu)
        return (link,) if link >= 0 else ()

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
        if self.has_sys:
            _insert_sys(links, x, base + 2, a["sys_in"][d])  # before host→GPU (the later column first)
            _insert_sys(links, x, np.ones(x.size, dtype=np.int64), a["sys_out"][s])  # after GPU→host

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

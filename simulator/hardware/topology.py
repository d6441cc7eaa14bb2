"""The cluster as a directed graph of links, and the route a flow between two GPUs takes.

Vertices (names as in docs/architecture.md):

- ``gpu{g}``     GPU g (global, node-major: node ``g // gpus_per_node``)
- ``nvsw{n}``    one logical NVSwitch per node (kind nvswitch): each GPU has one up and one down
                 link of its aggregate NVLink bandwidth (300/450/900 GB/s per direction)
- ``host{n}``    the node's PCIe root complex / host bridge; every GPU and every NIC hangs off it
                 with its own PCIe link, so GPU→NIC traffic and PCIe peer traffic share the GPU's
                 x16 uplink as they do in hardware
- ``nic{n}.{r}`` NIC of rail r on node n
- ``leaf{u}.{r}`` leaf switch of rail r in scalable unit u (``fat_tree``: one leaf per unit, r=0)
- ``spine{s}``   spine switches, shared by all units and rails

Each direction of each link is one edge with attribute ``link`` (its id); capacities are raw
line/link rates in bytes/s. Protocol overheads and achievable fractions (``efficiency`` fields of
the profile) belong to the costs layer, not here.

Latency accounting: a route's latency is the sum of its links' latencies. A scale-up hop costs
``scale_up.latency_us`` GPU-to-GPU (split over the up and down link for a switch); a PCIe link
costs half of ``pcie.latency_us``; NIC→leaf and leaf→NIC links carry half the NIC latency and a
cable each, and every link leaving a switch carries one switch-hop latency.

The rail-optimised fabric follows the DGX SuperPOD reference architecture (HARDWARE.md §3a,
SP-H100): "Traffic per rail ... always one hop away from the other 31 nodes in a SU. Traffic
between nodes, or between rails, traverses the spine layer."
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Literal

from numpy.typing import ArrayLike

import networkx as nx
import numpy as np

from simulator import units
from simulator.config.hardware import HardwareProfile
from simulator.errors import InputError

LinkClass = Literal["nvlink", "pcie", "net"]
LinkKind = Literal["nvlink", "xgmi", "pcie", "nic", "net"]


@dataclass(frozen=True, slots=True)
class Route:
    """The links a flow from one GPU to another crosses, in order.

    ``link_class`` is NCCL's link class for the tuner's latency tables: ``nvlink`` (NVLink or
    xGMI), ``pcie`` (peer-to-peer over PCIe) or ``net`` (through NICs).
    """

    links: tuple[int, ...]
    latency_s: float
    link_class: LinkClass


@dataclass(frozen=True, slots=True)
class NvlsRoutes:
    """Links used by an NVLS (NVLink SHARP) multicast reduction inside one node.

    ``up[i]`` is the GPU→switch link of ``gpus[i]``, ``down[i]`` its switch→GPU link. In NVLS
    every member pushes its data up once and receives the reduced result down once, so the
    switch, not the GPUs, does the reduction.
    """

    gpus: tuple[int, ...]
    up: tuple[int, ...]
    down: tuple[int, ...]
    latency_s: float


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


LINK_CLASSES: tuple[LinkClass, ...] = ("nvlink", "pcie", "net")
MAX_ROUTE_LINKS = 8  # GPU→host→NIC→leaf→spine→leaf→NIC→host→GPU


@dataclass(frozen=True)
class RouteMatrix:
    """Many routes as arrays: row i is the route of pair i.

    ``links[i, :n_links[i]]`` are its link ids in order (the rest of the row is -1),
    ``latency_s[i]`` its latency, ``link_class[i]`` an index into :data:`LINK_CLASSES`.
    ``entries()`` gives the (pair, link) incidences, the form ``np.bincount`` and
    ``FlowNetwork.transfer_arrays`` take.
    """

    links: np.ndarray  # int64 (n, MAX_ROUTE_LINKS), -1 padded
    n_links: np.ndarray  # int64 (n,)
    latency_s: np.ndarray  # float64 (n,)
    link_class: np.ndarray  # int8 (n,)

    def __len__(self) -> int:
        return int(self.n_links.size)

    def entries(self) -> tuple[np.ndarray, np.ndarray]:
        """``(pair_of_entry, link_of_entry)``, grouped by pair, links in route order."""
        valid = self.links >= 0
        pair = np.broadcast_to(np.arange(len(self))[:, None], self.links.shape)[valid]
        return pair, self.links[valid]

    def link_loads(self, weights: ArrayLike, n_links: int) -> np.ndarray:
        """Sum over pairs of ``weights[i]`` on every link pair i crosses (length ``n_links``)."""
        pair, link = self.entries()
        w = np.broadcast_to(np.asarray(weights, dtype=np.float64), (len(self),))
        return np.bincount(link, weights=w[pair], minlength=n_links)

    def to_routes(self) -> list[Route]:
        rows, counts = self.links.tolist(), self.n_links.tolist()
        lat, cls = self.latency_s.tolist(), self.link_class.tolist()
        return [Route(tuple(r[:k]), x, LINK_CLASSES[c]) for r, k, x, c in zip(rows, counts, lat, cls)]


class _RouteTables:
    """Per-GPU, per-node and per-leaf link tables, so that a route is a concatenation of cached
    pieces (scalar path: Python tuples) or a few fancy-indexing passes (bulk path: arrays).

    A cross-node route is ``up(src, rail) + [spine hop] + down(dst, rail)`` where
    ``up`` = GPU→host, host→NIC, NIC→leaf and ``down`` = leaf→NIC, NIC→host, host→GPU.
    """

    def __init__(self) -> None:
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

    @classmethod
    def build(cls, topo: "Topology") -> "_RouteTables":
        t = cls()
        gpn, n = topo.gpus_per_node, topo.n_gpus
        t.gpn, t.rails = gpn, topo.rails
        t.latency = topo.latency_s.tolist()
        t.su_kind = topo.profile.node.scale_up.kind
        t.intra_class = "nvlink" if t.su_kind in ("nvswitch", "mesh") else "pcie"
        if t.su_kind == "nvswitch":
            t.su_up = [topo._scale_up[(g, -1)] for g in range(n)]
            t.su_down = [topo._switch_down[g] for g in range(n)]
        t.mesh = topo._scale_up if t.su_kind == "mesh" else {}
        t.pcie_up, t.pcie_down = list(topo._pcie_up), list(topo._pcie_down)
        t.nic_of = [topo.nic_of(g) for g in range(n)]
        a = t.a
        a["su_up"] = np.asarray(t.su_up, dtype=np.int64)
        a["su_down"] = np.asarray(t.su_down, dtype=np.int64)
        a["pcie_up"] = np.asarray(t.pcie_up, dtype=np.int64)
        a["pcie_down"] = np.asarray(t.pcie_down, dtype=np.int64)
        a["nic_of"] = np.asarray(t.nic_of, dtype=np.int64)
        if t.su_kind == "mesh":
            mesh = np.full((n, gpn), -1, dtype=np.int64)
            for (g, peer), link in topo._scale_up.items():
                mesh[g, peer % gpn] = link
            a["mesh"] = mesh
        a["latency"] = topo.latency_s
        if topo._nic_leaf:  # a scale-out fabric exists
            so = topo.profile.scale_out
            leaf_rails = topo._leaf_rails
            t.nic_out = [[(topo._nic_pcie[(nd, r)][0], topo._nic_leaf[(nd, r)][0]) for r in range(topo.rails)] for nd in range(topo.nodes)]
            t.nic_in = [[(topo._nic_leaf[(nd, r)][1], topo._nic_pcie[(nd, r)][1]) for r in range(topo.rails)] for nd in range(topo.nodes)]
            t.leaf = [[(nd // so.nodes_per_unit) * leaf_rails + (0 if so.kind == "fat_tree" else r) for r in range(topo.rails)]
                      for nd in range(topo.nodes)]
            t.spines = so.spines
            if topo._leaf_spine:
                n_leaves = topo.units * leaf_rails
                t.spine_up = [[topo._leaf_spine[(lf // leaf_rails, lf % leaf_rails, s)][0] for s in range(so.spines)] for lf in range(n_leaves)]
                t.spine_down = [[topo._leaf_spine[(lf // leaf_rails, lf % leaf_rails, s)][1] for s in range(so.spines)] for lf in range(n_leaves)]
            # GPU→leaf and leaf→GPU pieces through each GPU's own rail (the default route)
            t.up_own = [(t.pcie_up[g], *t.nic_out[g // gpn][t.nic_of[g]]) for g in range(n)]
            t.down_own = [(*t.nic_in[g // gpn][t.nic_of[g]], t.pcie_down[g]) for g in range(n)]
            a["nic_out"] = np.asarray(t.nic_out, dtype=np.int64).reshape(topo.nodes, topo.rails, 2)
            a["nic_in"] = np.asarray(t.nic_in, dtype=np.int64).reshape(topo.nodes, topo.rails, 2)
            a["leaf"] = np.asarray(t.leaf, dtype=np.int64).reshape(topo.nodes, topo.rails)
            a["spine_up"] = np.asarray(t.spine_up, dtype=np.int64).reshape(-1, max(1, so.spines))
            a["spine_down"] = np.asarray(t.spine_down, dtype=np.int64).reshape(-1, max(1, so.spines))
        return t

    # ------------------------------------------------------------ scalar pieces
    def intra(self, src: int, dst: int) -> tuple[int, ...]:
        if self.su_kind == "nvswitch":
            return (self.su_up[src], self.su_down[dst])
        if self.su_kind == "mesh":
            return (self.mesh[(src, dst)],)
        return (self.pcie_up[src], self.pcie_down[dst])

    def inter(self, src: int, dst: int, rail: int | None, topo: "Topology") -> tuple[int, ...]:
        if rail is None:
            if self.rails == 0:
                topo._check_rail(0)
            up, down = self.up_own[src], self.down_own[dst]
            rs, rd = self.nic_of[src], self.nic_of[dst]
        else:
            topo._check_rail(rail)
            rs = rd = rail
            up = (self.pcie_up[src], *self.nic_out[src // self.gpn][rail])
            down = (*self.nic_in[dst // self.gpn][rail], self.pcie_down[dst])
        ls, ld = self.leaf[src // self.gpn][rs], self.leaf[dst // self.gpn][rd]
        if ls == ld:
            return up + down
        spine = _ecmp(src, dst, self.spines)
        return up + (self.spine_up[ls][spine], self.spine_down[ld][spine]) + down

    # ------------------------------------------------------------ bulk
    def matrix(self, topo: "Topology", src: ArrayLike, dst: ArrayLike, rail: ArrayLike | None) -> RouteMatrix:
        s, d = np.broadcast_arrays(np.asarray(src, dtype=np.int64).ravel(), np.asarray(dst, dtype=np.int64).ravel())
        n = s.size
        for arr in (s, d):
            bad = (arr < 0) | (arr >= topo.n_gpus)
            if bad.any():
                topo._check_gpu(int(arr[np.argmax(bad)]))
        a = self.a
        links = np.full((n, MAX_ROUTE_LINKS), -1, dtype=np.int64)
        cls = np.zeros(n, dtype=np.int8)
        ns, nd = s // self.gpn, d // self.gpn
        intra = (ns == nd) & (s != d)
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
        x = np.flatnonzero(ns != nd)
        if x.size:
            self._inter_many(topo, links, x, s[x], d[x], ns[x], nd[x], rail, n)
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

    def _inter_many(self, topo: "Topology", links: np.ndarray, x: np.ndarray, s: np.ndarray, d: np.ndarray,
                    ns: np.ndarray, nd: np.ndarray, rail: ArrayLike | None, n: int) -> None:
        a = self.a
        if self.rails == 0:
            topo._check_rail(0)
        if rail is None:
            rs, rd = a["nic_of"][s], a["nic_of"][d]
        else:
            r = np.broadcast_to(np.asarray(rail, dtype=np.int64).ravel(), (n,))[x] if np.ndim(rail) else np.full(x.size, int(rail))
            bad = (r < 0) | (r >= self.rails)
            if bad.any():
                topo._check_rail(int(r[np.argmax(bad)]))
            rs = rd = r
        ls, ld = a["leaf"][ns, rs], a["leaf"][nd, rd]
        links[x, 0] = a["pcie_up"][s]
        links[x, 1:3] = a["nic_out"][ns, rs]
        cross = ls != ld
        base = 3 + 2 * cross.astype(np.int64)
        c = np.flatnonzero(cross)
        if c.size:
            spine = _ecmp_many(s[c], d[c], self.spines)
            links[x[c], 3] = a["spine_up"][ls[c], spine]
            links[x[c], 4] = a["spine_down"][ld[c], spine]
        down = a["nic_in"][nd, rd]
        links[x, base] = down[:, 0]
        links[x, base + 1] = down[:, 1]
        links[x, base + 2] = a["pcie_down"][d]


class _LinkTable:
    """Accumulates link directions while the cluster is built (the graph is made from it lazily)."""

    def __init__(self) -> None:
        self.edges: list[tuple[str, str, int, str, float, float]] = []
        self.capacity: list[float] = []
        self.latency: list[float] = []
        self.kind: list[str] = []

    def add(self, u: str, v: str, capacity_Bps: float, latency_s: float, kind: str) -> int:
        link = len(self.capacity)
        self.capacity.append(capacity_Bps)
        self.latency.append(latency_s)
        self.kind.append(kind)
        self.edges.append((u, v, link, kind, capacity_Bps, latency_s))
        return link

    def add_pair(self, u: str, v: str, capacity_Bps: float, latency_s: float, kind: str) -> tuple[int, int]:
        """Both directions of one cable; returns (u→v, v→u)."""
        return self.add(u, v, capacity_Bps, latency_s, kind), self.add(v, u, capacity_Bps, latency_s, kind)

    def to_graph(self) -> nx.DiGraph:
        graph = nx.DiGraph()
        graph.add_edges_from(
            (u, v, {"link": link, "kind": kind, "capacity_Bps": cap, "latency_s": lat})
            for u, v, link, kind, cap, lat in self.edges
        )
        return graph


class Topology:
    """A built cluster: graph, per-link arrays, placement and (cached) routes.

    Build with :func:`build_topology`; the constructor is internal.
    """

    def __init__(self, profile: HardwareProfile, nodes: int) -> None:
        node = profile.node
        self.profile = profile
        self.nodes = nodes
        self.gpus_per_node = node.gpus
        self.n_gpus = nodes * node.gpus
        # NIC rails: fewer NICs than GPUs -> GPU i uses NIC i*nics//gpus; more NICs than GPUs
        # (AWS p5: 32 EFA for 8 GPUs) -> aggregated into one logical NIC per GPU.
        count = node.nics.count
        self.rails = min(count, node.gpus)
        self.nic_Bps = units.Gbps(node.nics.Gbps) * (count / node.gpus if count > node.gpus else 1.0)
        self._route_cache: dict[tuple[int, int, int | None], Route] = {}

        t = _LinkTable()
        self._scale_up: dict[tuple[int, int], int] = {}  # (gpu, peer or -1 for switch) -> link
        self._switch_down: dict[int, int] = {}  # gpu -> switch→gpu link
        self._pcie_up: list[int] = []  # gpu -> host link
        self._pcie_down: list[int] = []
        self._nic_pcie: dict[tuple[int, int], tuple[int, int]] = {}  # (node, rail) -> (host→nic, nic→host)
        self._nic_leaf: dict[tuple[int, int], tuple[int, int]] = {}  # (node, rail) -> (nic→leaf, leaf→nic)
        self._leaf_spine: dict[tuple[int, int, int], tuple[int, int]] = {}  # (unit, rail, spine) -> (up, down)
        self._build_scale_up(t)
        self._build_pcie(t)
        self._build_scale_out(t)

        self._links = t
        self.capacity_Bps = np.asarray(t.capacity, dtype=np.float64)
        self.latency_s = np.asarray(t.latency, dtype=np.float64)
        self.kind: list[str] = t.kind
        self._tables = _RouteTables.build(self)

    @cached_property
    def graph(self) -> nx.DiGraph:
        """The link graph (built on first use: routing reads the precomputed tables instead)."""
        return self._links.to_graph()

    # ---------------------------------------------------------------- building
    def _build_scale_up(self, t: _LinkTable) -> None:
        su = self.profile.node.scale_up
        bw = units.GBps(su.link_GBps)
        lat = units.us(su.latency_us)
        if su.kind == "nvswitch":
            for g in range(self.n_gpus):
                sw = f"nvsw{self.node_of(g)}"
                up, down = t.add_pair(f"gpu{g}", sw, bw, lat / 2, "nvlink")
                self._scale_up[(g, -1)] = up
                self._switch_down[g] = down
        elif su.kind == "mesh":
            kind = "xgmi" if self.profile.gpu.arch == "cdna3" else "nvlink"
            for n in range(self.nodes):
                base = n * self.gpus_per_node
                for i in range(self.gpus_per_node):
                    for j in range(self.gpus_per_node):
                        if i != j:
                            self._scale_up[(base + i, base + j)] = t.add(f"gpu{base + i}", f"gpu{base + j}", bw, lat, kind)

    def _build_pcie(self, t: _LinkTable) -> None:
        pcie = self.profile.node.pcie
        bw = units.GBps(pcie.GBps)
        half = units.us(pcie.latency_us) / 2
        for g in range(self.n_gpus):
            up, down = t.add_pair(f"gpu{g}", f"host{self.node_of(g)}", bw, half, "pcie")
            self._pcie_up.append(up)
            self._pcie_down.append(down)
        for n in range(self.nodes):
            for r in range(self.rails):
                # An aggregated NIC (several adapters per GPU) has several PCIe links too.
                nic_pcie = max(bw, self.nic_Bps) if self.profile.node.nics.count > self.gpus_per_node else bw
                self._nic_pcie[(n, r)] = t.add_pair(f"host{n}", f"nic{n}.{r}", nic_pcie, half, "pcie")

    def _build_scale_out(self, t: _LinkTable) -> None:
        so = self.profile.scale_out
        if so.kind == "none":
            return
        nic_lat = units.us(self.profile.node.nics.latency_us) / 2
        cable = units.us(so.cable_latency_us)
        hop = units.us(so.switch_latency_us)
        for n in range(self.nodes):
            for r in range(self.rails):
                leaf = self._leaf_name(n, r)
                self._nic_leaf[(n, r)] = (
                    t.add(f"nic{n}.{r}", leaf, self.nic_Bps, nic_lat + cable, "nic"),
                    t.add(leaf, f"nic{n}.{r}", self.nic_Bps, hop + cable + nic_lat, "nic"),
                )
        if not self._needs_spine_layer():
            return
        # Each leaf's uplink bandwidth = its downlink bandwidth / oversubscription, spread evenly
        # over the spines. Downlinks per leaf: one per node of the unit (per rail), or every
        # rail of every node for a non-rail fat tree.
        ports_down = so.nodes_per_unit * (self.rails if so.kind == "fat_tree" else 1)
        uplink = ports_down * self.nic_Bps / so.oversubscription / so.spines
        for u in range(self.units):
            for r in range(self._leaf_rails):
                leaf = f"leaf{u}.{r}"
                for s in range(so.spines):
                    self._leaf_spine[(u, r, s)] = (
                        t.add(leaf, f"spine{s}", uplink, hop + cable, "net"),
                        t.add(f"spine{s}", leaf, uplink, hop + cable, "net"),
                    )

    def _needs_spine_layer(self) -> bool:
        return self.units > 1 or self._leaf_rails > 1

    @cached_property
    def units(self) -> int:
        """Scalable units (leaf groups) the nodes occupy."""
        per = self.profile.scale_out.nodes_per_unit
        return -(-self.nodes // per)

    @cached_property
    def _leaf_rails(self) -> int:
        return 1 if self.profile.scale_out.kind == "fat_tree" else self.rails

    def _leaf_name(self, node: int, rail: int) -> str:
        u = node // self.profile.scale_out.nodes_per_unit
        return f"leaf{u}.{rail if self.profile.scale_out.kind != 'fat_tree' else 0}"

    # ---------------------------------------------------------------- placement
    def node_of(self, gpu: int) -> int:
        return gpu // self.gpus_per_node

    def local_of(self, gpu: int) -> int:
        return gpu % self.gpus_per_node

    def nic_of(self, gpu: int) -> int:
        """The rail (NIC index in its node) a GPU sends through by default."""
        return self.local_of(gpu) * self.rails // self.gpus_per_node

    def unit_of(self, gpu: int) -> int:
        return self.node_of(gpu) // self.profile.scale_out.nodes_per_unit

    @property
    def n_links(self) -> int:
        return len(self.kind)

    # ---------------------------------------------------------------- routes
    def route(self, src: int, dst: int, rail: int | None = None) -> Route:
        """Links from GPU ``src`` to GPU ``dst``; across nodes through NIC ``rail`` at both ends
        (default: each GPU's own rail), crossing a spine chosen by ECMP hash when needed."""
        key = (src, dst, rail)
        cached = self._route_cache.get(key)
        if cached is None:
            cached = self._route_cache[key] = self._compute_route(src, dst, rail)
        return cached

    def routes_many(self, src: ArrayLike, dst: ArrayLike, rail: ArrayLike | None = None) -> list[Route]:
        """``[route(s, d, rail) for s, d in zip(src, dst)]`` computed in bulk (equal Routes,
        bypassing the per-pair cache). ``rail``: None, one rail, or one per pair."""
        return self.route_matrix(src, dst, rail).to_routes()

    def route_matrix(self, src: ArrayLike, dst: ArrayLike, rail: ArrayLike | None = None) -> RouteMatrix:
        """Routes of many (src, dst) pairs at once as arrays (see :class:`RouteMatrix`).

        ``src``, ``dst`` (and ``rail`` when given per pair) broadcast against each other. Row i
        holds the same links, latency and link class as ``route(src[i], dst[i], rail)``; cost is
        a few numpy passes, so 100k+ pairs take milliseconds.
        """
        return self._tables.matrix(self, src, dst, rail)

    def _check_gpu(self, gpu: int) -> None:
        if not 0 <= gpu < self.n_gpus:
            raise InputError(f"GPU {gpu} is outside this cluster of {self.n_gpus} GPUs ({self.nodes} nodes x {self.gpus_per_node})")

    def _check_rail(self, rail: int) -> None:
        if self.rails == 0:
            raise InputError(f"profile {self.profile.name!r} has no NICs (node.nics.count: 0), so GPUs on different nodes cannot communicate")
        if not 0 <= rail < self.rails:
            raise InputError(f"rail {rail} does not exist; this node has {self.rails} NIC rail(s)")

    def _compute_route(self, src: int, dst: int, rail: int | None) -> Route:
        if not (0 <= src < self.n_gpus and 0 <= dst < self.n_gpus):
            self._check_gpu(src)
            self._check_gpu(dst)
        if src == dst:
            return Route((), 0.0, "nvlink")
        tab = self._tables
        if src // self.gpus_per_node == dst // self.gpus_per_node:
            links = tab.intra(src, dst)
            cls = tab.intra_class
        else:
            links = tab.inter(src, dst, rail, self)
            cls = "net"
        # Python's left-to-right sum, as route_matrix accumulates column by column.
        return Route(links, float(sum(map(tab.latency.__getitem__, links))), cls)

    def nvls_routes(self, gpus: tuple[int, ...] | list[int]) -> NvlsRoutes:
        """Up and down links of an NVLS reduction among ``gpus`` (all on one NVLS-capable node)."""
        su = self.profile.node.scale_up
        if not su.nvls:
            raise InputError(f"profile {self.profile.name!r} has no NVLS (node.scale_up.nvls is false)", field="algorithm")
        members = tuple(gpus)
        for g in members:
            self._check_gpu(g)
        if len({self.node_of(g) for g in members}) > 1:
            raise InputError("NVLS reduces inside one NVSwitch domain; these GPUs span several nodes", field="algorithm")
        up = tuple(self._tables.su_up[g] for g in members)
        down = tuple(self._tables.su_down[g] for g in members)
        return NvlsRoutes(members, up, down, units.us(su.latency_us))

    def __repr__(self) -> str:
        return f"Topology({self.profile.name!r}, nodes={self.nodes}, gpus={self.n_gpus}, links={self.n_links})"


def build_topology(profile: HardwareProfile, nodes: int) -> Topology:
    """Build the link graph of ``nodes`` nodes of ``profile``.

    Raises InputError when the request cannot describe a cluster (nodes < 1, several nodes but
    no scale-out fabric or no NICs, several GPUs per node but no scale-up fabric).
    """
    if isinstance(nodes, bool) or not isinstance(nodes, (int, np.integer)) or nodes < 1:
        raise InputError(f"expected a whole number of nodes >= 1, got {nodes!r}", field="nodes")
    node = profile.node
    if node.scale_up.kind == "none" and node.gpus > 1:
        raise InputError(
            f"{node.gpus} GPUs per node need a scale-up fabric; kind 'none' is only for one GPU per node",
            source=profile.name, field="node.scale_up.kind",
        )
    if nodes > 1 and profile.scale_out.kind == "none":
        raise InputError(f"{nodes} nodes need a scale-out fabric, but the profile says none", source=profile.name, field="scale_out.kind")
    if nodes > 1 and node.nics.count == 0:
        raise InputError(f"{nodes} nodes need NICs, but the profile has none", source=profile.name, field="node.nics.count")
    return Topology(profile, int(nodes))

"""The cluster as a directed graph of links, and the route a flow between two GPUs takes.

Vertices (names as in docs/architecture.md):

- ``gpu{g}``     GPU g (global, node-major: node ``g // gpus_per_node``)
- ``nvsw{d}``    one logical NVSwitch per NVLink domain (kind nvswitch): each GPU has one up and
                 one down link of its aggregate NVLink bandwidth (300/450/900 GB/s per direction).
                 The domain is the node, or with ``scale_up.domain_gpus`` a run of consecutive
                 nodes (a GB200 NVL72 rack: 18 trays of 4 GPUs on the rack's NVLink switch trays)
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

from functools import cached_property
from typing import Hashable, Literal, Sequence

from numpy.typing import ArrayLike

import networkx as nx
import numpy as np

from simulator import units
from simulator.config.hardware import HardwareProfile
from simulator.errors import InputError
from simulator.hardware.route_tables import FabricLinks, RouteTables
from simulator.hardware.routes import NvlsRoutes, Route, RouteMatrix

LinkKind = Literal["nvlink", "xgmi", "pcie", "nic", "net"]


class _LinkTable:
    """Accumulates link directions while the cluster is built (the graph is made from it lazily)."""

    def __init__(self) -> None:
        # one record per link direction, its id its position (a 100k-GPU fabric adds ~800k:
        # one append each, the per-field lists are read off once the table is complete)
        self.edges: list[tuple[str, str, int, str, float, float]] = []

    def add(self, u: str, v: str, capacity_Bps: float, latency_s: float, kind: str) -> int:
        link = len(self.edges)
        self.edges.append((u, v, link, kind, capacity_Bps, latency_s))
        return link

    @property
    def capacity(self) -> list[float]:
        return [e[4] for e in self.edges]

    @property
    def latency(self) -> list[float]:
        return [e[5] for e in self.edges]

    @property
    def kind(self) -> list[str]:
        return [e[3] for e in self.edges]

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
        self.domain_gpus = profile.nvlink_domain_gpus
        # NIC rails: fewer NICs than GPUs -> GPU i uses NIC i*nics//gpus, or the NIC the profile's
        # node.nics.local_gpus gives it (HardwareProfile.gpu_nics); more NICs than GPUs
        # (AWS p5: 32 EFA for 8 GPUs) -> aggregated into one logical NIC per GPU.
        count = node.nics.count
        self.rails = min(count, node.gpus)
        self.nic_Bps = node.nics.Bps * (count / node.gpus if count > node.gpus else 1.0)
        self._route_cache: dict[tuple[int, int, int | None], Route] = {}

        t = _LinkTable()
        self._scale_up: dict[tuple[int, int], int] = {}  # (gpu, peer or -1 for switch) -> link
        self._switch_down: dict[int, int] = {}  # gpu -> switch→gpu link
        self._pcie_up: list[int] = []  # gpu -> host link
        self._pcie_down: list[int] = []
        self._nic_pcie: dict[tuple[int, int], tuple[int, int]] = {}  # (node, rail) -> (host→nic, nic→host)
        self._nic_leaf: dict[tuple[int, int], tuple[int, int]] = {}  # (node, rail) -> (nic→leaf, leaf→nic)
        self._leaf_spine: dict[tuple[int, int, int], tuple[int, int]] = {}  # (unit, rail, spine) -> (up, down)
        self._global: dict[tuple[Hashable, Hashable], int] = {}  # dragonfly: (group, group) -> link
        self._build_scale_up(t)
        self._build_pcie(t)
        self._build_scale_out(t)

        self._links = t
        self.capacity_Bps = np.asarray(t.capacity, dtype=np.float64)
        self.latency_s = np.asarray(t.latency, dtype=np.float64)
        self.kind: list[str] = t.kind
        so = profile.scale_out
        self._tables = RouteTables.build(FabricLinks(
            profile_name=profile.name, nodes=nodes, gpus_per_node=self.gpus_per_node, rails=self.rails,
            domain_gpus=self.domain_gpus,
            units=self.units, leaf_rails=self._leaf_rails, nodes_per_unit=so.nodes_per_unit, spines=so.spines,
            scale_up_kind=node.scale_up.kind, scale_out_kind=so.kind, latency_s=self.latency_s,
            scale_up=self._scale_up, switch_down=self._switch_down, pcie_up=self._pcie_up, pcie_down=self._pcie_down,
            nic_pcie=self._nic_pcie, nic_leaf=self._nic_leaf, leaf_spine=self._leaf_spine,
            switch_links=self._global, gpu_nics=profile.gpu_nics if self.rails else (),
        ))

    @cached_property
    def graph(self) -> nx.DiGraph:
        """The link graph (built on first use: routing reads the precomputed tables instead)."""
        return self._links.to_graph()

    # ---------------------------------------------------------------- building
    def _build_scale_up(self, t: _LinkTable) -> None:
        su = self.profile.node.scale_up
        bw = su.link_Bps
        lat = units.us(su.latency_us)
        if su.kind == "nvswitch":
            for g in range(self.n_gpus):
                sw = f"nvsw{self.domain_of(g)}"
                up, down = t.add_pair(f"gpu{g}", sw, bw, lat / 2, "nvlink")
                self._scale_up[(g, -1)] = up
                self._switch_down[g] = down
        elif su.kind == "mesh":
            kind = "xgmi" if self.profile.gpu.arch in ("cdna3", "cdna4") else "nvlink"
            for n in range(self.nodes):
                base = n * self.gpus_per_node
                for i in range(self.gpus_per_node):
                    for j in range(self.gpus_per_node):
                        if i != j:
                            self._scale_up[(base + i, base + j)] = t.add(f"gpu{base + i}", f"gpu{base + j}", bw, lat, kind)

    def _build_pcie(self, t: _LinkTable) -> None:
        pcie = self.profile.node.pcie
        bw = pcie.Bps
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
        if so.kind == "dragonfly":
            self._build_global_links(t)
            return
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

    def _build_global_links(self, t: _LinkTable) -> None:
        """Dragonfly: a direct link each way between every pair of groups, each carrying the
        group's injection bandwidth / oversubscription spread over the other groups (the global
        links of one group pair, aggregated). Routes across groups are minimal paths of the graph
        these links form (``RouteTables``: computed from the graph, kept as a table)."""
        so = self.profile.scale_out
        if self.units < 2:
            return
        inject = so.nodes_per_unit * self.rails * self.nic_Bps
        bw = inject / so.oversubscription / (self.units - 1)
        lat = units.us(so.switch_latency_us) + units.us(so.cable_latency_us)
        for u in range(self.units):
            for v in range(self.units):
                if u != v:
                    self._global[(u, v)] = t.add(f"leaf{u}.0", f"leaf{v}.0", bw, lat, "net")

    def _needs_spine_layer(self) -> bool:
        return self.units > 1 or self._leaf_rails > 1

    @cached_property
    def units(self) -> int:
        """Scalable units (leaf groups) the nodes occupy."""
        per = self.profile.scale_out.nodes_per_unit
        return -(-self.nodes // per)

    @cached_property
    def _leaf_rails(self) -> int:
        return 1 if self.profile.scale_out.kind in ("fat_tree", "dragonfly") else self.rails

    def _leaf_name(self, node: int, rail: int) -> str:
        u = node // self.profile.scale_out.nodes_per_unit
        return f"leaf{u}.{rail if self._leaf_rails > 1 else 0}"

    # ---------------------------------------------------------------- placement
    def node_of(self, gpu: int) -> int:
        return gpu // self.gpus_per_node

    def local_of(self, gpu: int) -> int:
        return gpu % self.gpus_per_node

    def domain_of(self, gpu: int) -> int:
        """The NVLink domain of a GPU: its node, unless the profile's domain spans nodes
        (``node.scale_up.domain_gpus``). What NCCL calls a node: with MNNVL the clique."""
        return gpu // self.domain_gpus

    @property
    def domains(self) -> int:
        """NVLink domains the cluster has (the last one partial when the nodes do not fill it)."""
        return -(-self.n_gpus // self.domain_gpus)

    def nic_of(self, gpu: int) -> int:
        """The rail (NIC index in its node) a GPU sends through by default: its own NIC, as
        NCCL's ``ncclTopoGetLocalNet`` picks it (``HardwareProfile.gpu_nics``)."""
        return self._gpu_nics[self.local_of(gpu)] if self.rails else 0

    @cached_property
    def _gpu_nics(self) -> tuple[int, ...]:
        return self.profile.gpu_nics

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
        return self._tables.matrix(src, dst, rail)

    def _check_gpu(self, gpu: int) -> None:
        self._tables.check_gpu(gpu)

    def _compute_route(self, src: int, dst: int, rail: int | None) -> Route:
        if not (0 <= src < self.n_gpus and 0 <= dst < self.n_gpus):
            self._check_gpu(src)
            self._check_gpu(dst)
        if src == dst:
            return Route((), 0.0, "nvlink")
        tab = self._tables
        if src // self.domain_gpus == dst // self.domain_gpus:
            links = tab.intra(src, dst)
            cls = tab.intra_class
        else:
            links = tab.inter(src, dst, rail)
            cls = "net"
        # Python's left-to-right sum, as route_matrix accumulates column by column.
        return Route(links, float(sum(map(tab.latency.__getitem__, links))), cls)

    def nvls_routes(self, gpus: Sequence[int]) -> NvlsRoutes:
        """Up and down links of an NVLS reduction among ``gpus`` (all in one NVLS-capable NVLink
        domain: one node, or one multi-node domain such as an NVL72 rack)."""
        su = self.profile.node.scale_up
        if not su.nvls:
            raise InputError(f"profile {self.profile.name!r} has no NVLS (node.scale_up.nvls is false)", field="algorithm")
        members = tuple(gpus)
        for g in members:
            self._check_gpu(g)
        if len({self.domain_of(g) for g in members}) > 1:
            raise InputError("NVLS reduces inside one NVSwitch domain; these GPUs span several", field="algorithm")
        up = tuple(self._tables.su_up[g] for g in members)
        down = tuple(self._tables.su_down[g] for g in members)
        return NvlsRoutes(members, up, down, units.us(su.latency_us))

    def __repr__(self) -> str:
        domain = f", domain_gpus={self.domain_gpus}" if self.domain_gpus != self.gpus_per_node else ""
        return f"Topology({self.profile.name!r}, nodes={self.nodes}, gpus={self.n_gpus}{domain}, links={self.n_links})"


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

"""The cluster as a directed graph of links, and the route a flow between two GPUs takes.

Vertices (names as in docs/architecture.md):

- ``gpu{g}``     GPU g (global, node-major: node ``g // gpus_per_node``)
- ``nvsw{d}``    one logical NVSwitch per NVLink domain (kind nvswitch): each GPU has one up and
                 one down link of its aggregate NVLink bandwidth (300/450/900 GB/s per direction).
                 The domain is the node, or with ``scale_up.domain_gpus`` a run of consecutive
                 nodes (a GB200 NVL72 rack: 18 trays of 4 GPUs on the rack's NVLink switch trays)
- ``host{n}``    the node's PCIe root complex / host bridge; every GPU and every NIC hangs off it
                 with its own PCIe link, so GPU→NIC traffic and PCIe peer traffic share the GPU's
                 x16 uplink as they do in hardware; a GPU that reaches its NIC through the host
                 bridge with GPUDirect RDMA (path phb) has that link at ``pcie.phb_p2p_GBps``, where
                 the profile gives the root complex's peer-to-peer rate
- ``sys{g}``     the CPU (NUMA domain) GPU g hangs off, where its path to its NIC is of type sys
                 (``HardwareProfile.gpu_nic_paths``): its traffic to and from the network also
                 crosses the CPU interconnect between that domain and the NIC's (``host{n}``), one
                 link each way per such GPU at ``HardwareProfile.sys_link_GBps``
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

from bisect import bisect_right
from functools import cached_property
from typing import Callable, Hashable, Iterable, Iterator, Literal, Sequence

from numpy.typing import ArrayLike

import networkx as nx
import numpy as np

from simulator import units
from simulator.config.gdr import host_staged_gpus
from simulator.config.hardware import HardwareProfile
from simulator.errors import InputError
from simulator.hardware.route_tables import FabricLinks, RouteTables
from simulator.hardware.routes import NvlsRoutes, Route, RouteMatrix

LinkKind = Literal["nvlink", "xgmi", "pcie", "nic", "net", "sys"]


class _LinkTable:
    """Accumulates link directions while the cluster is built, a block of like links at a time.

    A block is a run of consecutive link ids of one kind whose capacities, latencies and endpoint
    names follow from arithmetic on the id; its endpoint names are made only when the graph is
    (lazily), so a 100k-GPU fabric (~800k link directions) costs a few numpy passes, not one
    Python record per link. Link ids are positions, in the order the blocks are added.
    """

    def __init__(self) -> None:
        self.n = 0
        self._capacity: list[np.ndarray] = []
        self._latency: list[np.ndarray] = []
        self._kind: list[str] = []
        self._names: list[Callable[[], Iterable[tuple[str, str]]]] = []

    def add_block(self, count: int, capacity_Bps: ArrayLike, latency_s: ArrayLike, kind: str,
                  names: Callable[[], Iterable[tuple[str, str]]]) -> np.ndarray:
        """``count`` link directions with ids ``n .. n + count - 1`` (returned); ``capacity_Bps``
        and ``latency_s`` are one value or one per link, ``names()`` yields each link's (u, v)
        in id order."""
        ids = np.arange(self.n, self.n + count, dtype=np.int64)
        self.n += count
        self._capacity.append(np.broadcast_to(np.asarray(capacity_Bps, dtype=np.float64), (count,)))
        self._latency.append(np.broadcast_to(np.asarray(latency_s, dtype=np.float64), (count,)))
        self._kind.append(kind)
        self._names.append(names)
        return ids

    def _cat(self, parts: list[np.ndarray]) -> np.ndarray:
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.float64)

    @property
    def capacity(self) -> np.ndarray:
        return self._cat(self._capacity)

    @property
    def latency(self) -> np.ndarray:
        return self._cat(self._latency)

    @property
    def kind(self) -> list[str]:
        out: list[str] = []
        for kind, cap in zip(self._kind, self._capacity):
            out += [kind] * cap.size
        return out

    @property
    def kind_runs(self) -> tuple[tuple[str, int], ...]:
        """:attr:`kind` as runs of (kind, link count) in id order, one per block: what a
        per-kind array over every link is built from with one ``np.repeat``."""
        return tuple((kind, int(cap.size)) for kind, cap in zip(self._kind, self._capacity))

    @cached_property
    def edges(self) -> list[tuple[str, str, int, str, float, float]]:
        """(u, v, link, kind, capacity, latency) of every link direction, indexed by link id
        (made on first use, once the cluster is built)."""
        out: list[tuple[str, str, int, str, float, float]] = []
        for kind, cap, lat, names in zip(self._kind, self._capacity, self._latency, self._names):
            first = len(out)
            out += [(u, v, link, kind, c, l)
                    for link, (u, v), c, l in zip(range(first, first + cap.size), names(), cap.tolist(), lat.tolist())]
        return out

    def to_graph(self) -> nx.DiGraph:
        graph = nx.DiGraph()
        graph.add_edges_from(
            (u, v, {"link": link, "kind": kind, "capacity_Bps": cap, "latency_s": lat})
            for u, v, link, kind, cap, lat in self.edges
        )
        return graph


def _pairs(names: Callable[[], Iterable[tuple[str, str]]]) -> Callable[[], Iterator[tuple[str, str]]]:
    """Both directions of each cable ``names()`` yields: (u, v) then (v, u)."""
    def both() -> Iterator[tuple[str, str]]:
        for u, v in names():
            yield u, v
            yield v, u
    return both


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
        # Link ids by role (arrays indexed arithmetically; -1 where a link does not exist):
        self._su_up = np.zeros(0, dtype=np.int64)  # [gpu] -> GPU→switch link (nvswitch)
        self._su_down = np.zeros(0, dtype=np.int64)  # [gpu] -> switch→GPU link (nvswitch)
        self._mesh = np.zeros((0, 0), dtype=np.int64)  # [gpu, local peer] -> direct link (mesh)
        self._pcie_up = np.zeros(0, dtype=np.int64)  # [gpu] -> GPU→host
        self._pcie_down = np.zeros(0, dtype=np.int64)  # [gpu] -> host→GPU
        self._nic_pcie = np.zeros((nodes, self.rails, 2), dtype=np.int64)  # [node, rail] -> (host→NIC, NIC→host)
        self._nic_leaf = np.zeros((0, self.rails, 2), dtype=np.int64)  # [node, rail] -> (NIC→leaf, leaf→NIC)
        self._leaf_spine = np.zeros((0, 0, 0, 2), dtype=np.int64)  # [unit, leaf rail, spine] -> (up, down)
        self._global: dict[tuple[Hashable, Hashable], int] = {}  # dragonfly: (group, group) -> link
        self._sys = np.zeros((0, 2), dtype=np.int64)  # [gpu] -> (GPU's CPU→NIC's CPU, back); -1 without
        self._build_scale_up(t)
        self._build_pcie(t)
        self._build_scale_out(t)
        self._build_sys(t)  # last: the other links keep their ids whether a profile has sys paths or not

        self._links = t
        self.capacity_Bps = t.capacity
        self.latency_s = t.latency
        self.kind_runs = t.kind_runs
        self._kind_ends = np.cumsum([n for _, n in self.kind_runs]).tolist()  # where each run ends
        so = profile.scale_out
        self._tables = RouteTables.build(FabricLinks(
            profile_name=profile.name, nodes=nodes, gpus_per_node=self.gpus_per_node, rails=self.rails,
            domain_gpus=self.domain_gpus,
            units=self.units, leaf_rails=self._leaf_rails, nodes_per_unit=so.nodes_per_unit, spines=so.spines,
            scale_up_kind=node.scale_up.kind, scale_out_kind=so.kind, latency_s=self.latency_s,
            su_up=self._su_up, su_down=self._su_down, mesh=self._mesh, pcie_up=self._pcie_up, pcie_down=self._pcie_down,
            nic_pcie=self._nic_pcie, nic_leaf=self._nic_leaf, leaf_spine=self._leaf_spine,
            switch_links=self._global, gpu_nics=profile.gpu_nics if self.rails else (), sys=self._sys,
        ))

    @cached_property
    def graph(self) -> nx.DiGraph:
        """The link graph (built on first use: routing reads the precomputed tables instead)."""
        return self._links.to_graph()

    # ---------------------------------------------------------------- building
    # Each builder adds its links in blocks whose ids follow the loops in its names() (the
    # order the links were always numbered in), so the ids by role are reshaped aranges.
    def _build_scale_up(self, t: _LinkTable) -> None:
        su = self.profile.node.scale_up
        bw = su.link_Bps
        lat = units.us(su.latency_us)
        n, dom, gpn = self.n_gpus, self.domain_gpus, self.gpus_per_node
        if su.kind == "nvswitch":
            ids = t.add_block(2 * n, bw, lat / 2, "nvlink",
                              _pairs(lambda: ((f"gpu{g}", f"nvsw{g // dom}") for g in range(n)))).reshape(n, 2)
            self._su_up, self._su_down = ids[:, 0], ids[:, 1]
        elif su.kind == "mesh":
            kind = "xgmi" if self.profile.gpu.arch in ("cdna3", "cdna4") else "nvlink"

            def names() -> Iterator[tuple[str, str]]:
                for nd in range(self.nodes):
                    base = nd * gpn
                    for i in range(gpn):
                        for j in range(gpn):
                            if i != j:
                                yield f"gpu{base + i}", f"gpu{base + j}"
            off_diag = np.tile(~np.eye(gpn, dtype=bool), (self.nodes, 1))  # [gpu, local peer]: peer != gpu
            self._mesh = np.full((n, gpn), -1, dtype=np.int64)
            self._mesh[off_diag] = t.add_block(n * (gpn - 1), bw, lat, kind, names)

    def _build_pcie(self, t: _LinkTable) -> None:
        pcie = self.profile.node.pcie
        bw = pcie.Bps
        half = units.us(pcie.latency_us) / 2
        n, gpn, rails = self.n_gpus, self.gpus_per_node, self.rails
        sys = set(self._sys_local)  # such a GPU's PCIe link ends at its own CPU (NUMA domain): _build_sys
        # a GPU on path phb with GPUDirect: its link at the host bridge's peer-to-peer rate, each way
        p2p = set(self._phb_p2p_local)
        p2p_bw = min(bw, units.GBps(pcie.phb_p2p_GBps)) if pcie.phb_p2p_GBps is not None else bw
        gpu_bw = [p2p_bw if g % gpn in p2p else bw for g in range(n) for _ in range(2)]
        ids = t.add_block(2 * n, gpu_bw, half, "pcie", _pairs(lambda: (
            (f"gpu{g}", f"sys{g}" if g % gpn in sys else f"host{g // gpn}") for g in range(n))))
        self._pcie_up, self._pcie_down = ids[0::2], ids[1::2]
        # An aggregated NIC (several adapters per GPU) has several PCIe links too.
        nic_pcie = max(bw, self.nic_Bps) if self.profile.node.nics.count > gpn else bw
        self._nic_pcie = t.add_block(
            2 * self.nodes * rails, nic_pcie, half, "pcie",
            _pairs(lambda: ((f"host{nd}", f"nic{nd}.{r}") for nd in range(self.nodes) for r in range(rails))),
        ).reshape(self.nodes, rails, 2)

    @cached_property
    def _phb_p2p_local(self) -> tuple[int, ...]:
        """The local GPUs whose PCIe link carries their network traffic peer to peer through the
        CPU's host bridge, where the profile gives that rate (``pcie.phb_p2p_GBps``) and the link
        carries nothing else: nodes whose GPUs talk among themselves over NVLink or xGMI, as
        ``_sys_local``. NCCL runs GPUDirect RDMA over a path of type phb when the node has it and
        ``NCCL_NET_GDR_LEVEL`` is PHB or farther (``config/gdr.host_staged_gpus``); otherwise the
        traffic is staged through host memory and is no peer-to-peer transfer."""
        if self.profile.node.pcie.phb_p2p_GBps is None or not self._gpus_reach_nics_over_pcie:
            return ()
        staged = host_staged_gpus(self.profile)
        return tuple(i for i, p in enumerate(self.profile.gpu_nic_paths) if p == "phb" and not staged[i])

    @cached_property
    def _gpus_reach_nics_over_pcie(self) -> bool:
        """A scale-out fabric, and GPUs that talk among themselves over NVLink or xGMI, so that a
        GPU's PCIe link carries its network traffic only."""
        return bool(self.rails) and self.profile.scale_out.kind != "none" and \
            self.profile.node.scale_up.kind in ("nvswitch", "mesh")

    @cached_property
    def _sys_local(self) -> tuple[int, ...]:
        """The local GPUs whose path to their NIC is of type sys, where their crossing is modelled:
        nodes with a scale-out fabric whose GPUs talk among themselves over NVLink or xGMI (on a
        PCIe-only node the peer routes would cross it too; not modelled)."""
        if not self._gpus_reach_nics_over_pcie:
            return ()
        return tuple(i for i, p in enumerate(self.profile.gpu_nic_paths) if p == "sys")

    def _build_sys(self, t: _LinkTable) -> None:
        """The CPU-interconnect crossing of every GPU whose path to its NIC is of type sys (ALCF
        Polaris: GPUs 0 and 2, each on its own NUMA domain of the EPYC, a domain away from either
        NIC): its network sends and receives go between its domain and the NIC's, whether through
        host memory (NCCL stages them there when the path is beyond NCCL_NET_GDR_LEVEL,
        config/gdr.py) or by GPUDirect, so the cross-node route of such a GPU carries one more link
        each way (route_tables). No such GPU, no links."""
        local = self._sys_local
        if not local:
            return
        gpn = self.gpus_per_node
        gpus = [nd * gpn + i for nd in range(self.nodes) for i in local]
        ids = t.add_block(2 * len(gpus), units.GBps(self.profile.sys_link_GBps), 0.0, "sys",
                          _pairs(lambda: ((f"sys{g}", f"host{g // gpn}") for g in gpus))).reshape(-1, 2)
        self._sys = np.full((self.n_gpus, 2), -1, dtype=np.int64)
        self._sys[np.asarray(gpus, dtype=np.int64)] = ids

    def _build_scale_out(self, t: _LinkTable) -> None:
        so = self.profile.scale_out
        if so.kind == "none":
            return
        nic_lat = units.us(self.profile.node.nics.latency_us) / 2
        cable = units.us(so.cable_latency_us)
        hop = units.us(so.switch_latency_us)
        rails = self.rails

        def nic_names() -> Iterator[tuple[str, str]]:
            for nd in range(self.nodes):
                for r in range(rails):
                    leaf = self._leaf_name(nd, r)
                    yield f"nic{nd}.{r}", leaf
                    yield leaf, f"nic{nd}.{r}"
        count = self.nodes * rails
        self._nic_leaf = t.add_block(
            2 * count, self.nic_Bps, np.tile([nic_lat + cable, hop + cable + nic_lat], count), "nic", nic_names,
        ).reshape(self.nodes, rails, 2)
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
        self._leaf_spine = t.add_block(
            2 * self.units * self._leaf_rails * so.spines, uplink, hop + cable, "net",
            _pairs(lambda: ((f"leaf{u}.{r}", f"spine{s}") for u in range(self.units)
                            for r in range(self._leaf_rails) for s in range(so.spines))),
        ).reshape(self.units, self._leaf_rails, so.spines, 2)

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
        pairs = [(u, v) for u in range(self.units) for v in range(self.units) if u != v]
        ids = t.add_block(len(pairs), bw, lat, "net", lambda: ((f"leaf{u}.0", f"leaf{v}.0") for u, v in pairs))
        self._global = dict(zip(pairs, ids.tolist()))

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

    @cached_property
    def kind(self) -> list[str]:
        """Per link id its kind (made on first use: ~800k entries at 100k GPUs, where a plan
        needs :meth:`kind_of` a few links)."""
        return self._links.kind

    def kind_of(self, link: int) -> str:
        """The kind of one link (``kind[link]``), found in :attr:`kind_runs`."""
        return self.kind_runs[bisect_right(self._kind_ends, link)][0]

    @property
    def n_links(self) -> int:
        return int(self.capacity_Bps.size)

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
        # Python's left-to-right sum, as route_matrix accumulates column by column; read from the
        # array (``item``: a Python float), not from a list of every link's latency made on the
        # first route (~800k at 100k GPUs).
        return Route(links, float(sum(map(tab.a["latency"].item, links))), cls)

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
        up = tuple(self._tables.su_up(g) for g in members)
        down = tuple(self._tables.su_down(g) for g in members)
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

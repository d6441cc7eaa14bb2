"""NCCL's own cost model, used to choose an algorithm and protocol the way NCCL does.

The constants and formulas follow NCCL 2.30.7 ``src/graph/tuning.cc`` (``ncclTopoTuneModel``)
and ``src/enqueue.cc`` (``topoGetAlgoInfo``) as paraphrased in ``docs/reference/NCCL-COST-MODEL.md``
(§1 latencies, §2 bandwidths and caps, §3 selection, §4 channels). Units inside this module
follow NCCL's tables: microseconds and GB/s; the public helpers that leave the module convert to
SI where their names say so.

NCCL's graph search (``search.cc``) is not reproduced; :func:`graph_from_profile` derives the
three numbers the tuner needs from it (channels, per-channel intra/inter bandwidth) from the
profile's datasheet figures with NCCL's per-link nominal bandwidths and speed lists.

Every constant can be overridden from a profile's ``nccl:`` mapping (:data:`OVERRIDE_KEYS`;
``clustersim calibrate`` writes them). The overrides time the chosen algorithm; the choice itself
is made as NCCL makes it, with the built-in tables (:func:`selection_context`), because a fitted
latency or efficiency describes the hardware, which NCCL's tuner does not measure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Literal, Mapping

from simulator.errors import InputError

Algo = Literal["tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"]
Proto = Literal["ll", "ll128", "simple"]
LinkClass = Literal["nvlink", "pci", "net"]
ArchRow = Literal["volta", "ampere", "hopper", "blackwell"]

ALGOS: tuple[str, ...] = ("tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat")
PROTOS: tuple[str, ...] = ("ll", "ll128", "simple")
TUNED_COLLECTIVES = ("allreduce", "allgather", "reducescatter", "broadcast")

# --- §1 latency tables (us) -----------------------------------------------------------------

BASE_LATENCY_US: dict[str, tuple[float, float, float]] = {  # (LL, LL128, Simple)
    "tree": (6.8, 14.0, 8.4),
    "ring": (6.6, 14.0, 8.4),
    "collnet_direct": (0.0, 0.0, 0.0),
    "collnet_chain": (0.0, 0.0, 0.0),
    "nvls": (0.0, 0.0, 0.0),
    "nvls_tree": (0.0, 0.0, 0.0),
    "pat": (8.0, 8.0, 8.0),
}

HW_LATENCY_US: dict[str, dict[str, tuple[float, float, float]]] = {
    "nvlink": {
        "tree": (0.6, 1.25, 4.0), "ring": (0.6, 1.9, 3.4), "collnet_direct": (0, 0, 3.7),
        "collnet_chain": (0, 0, 2.8), "nvls": (0, 0, 25.0), "nvls_tree": (0, 0, 25.0), "pat": (0, 0, 4.0),
    },
    "pci": {
        "tree": (1.0, 1.9, 4.0), "ring": (1.0, 2.5, 5.7), "collnet_direct": (0, 0, 3.7),
        "collnet_chain": (0, 0, 2.8), "nvls": (0, 0, 0.0), "nvls_tree": (0, 0, 0.0), "pat": (0, 0, 4.0),
    },
    "net": {
        "tree": (5.0, 8.5, 14.0), "ring": (2.7, 4.0, 14.0), "collnet_direct": (0, 0, 31.0),
        "collnet_chain": (0, 0, 30.0), "nvls": (0, 0, 18.0), "nvls_tree": (0, 0, 20.9), "pat": (0, 0, 14.0),
    },
}

# --- §2 caps (GB/s); columns: 1 node, 2 nodes, >2 nodes -----------------------------------

LL_MAX_BW_1NODE: dict[str, float] = {"volta": 39.0, "ampere": 87.7, "hopper": 141.0, "blackwell": 282.0}
LL_MAX_BW_MULTINODE: dict[str, tuple[float, float]] = {"intel": (39.0, 20.4), "amd": (22.5, 19.0)}
PER_CH_MAX_RING_LL128_BW = {"volta": (20, 20, 20), "ampere": (20, 20, 20), "hopper": (36.7, 36.7, 36.7),
                            "blackwell": (40, 40, 40)}
PER_CH_MAX_TREE_LL128_BW = {"volta": (20, 20, 20), "ampere": (20, 20, 20), "hopper": (36.7, 36.7, 29.0),
                            "blackwell": (55.6, 31.67, 20.0)}
PER_CH_MAX_TREE_BW = {"volta": (26.5, 18.5, 10.0), "ampere": (24.0, 23.6, 17.8), "hopper": (38.7, 41.4, 36.0),
                      "blackwell": (70.0, 42.8, 24.0)}
PER_CH_MAX_NVLS_TREE_BW = {"volta": (26.5, 18.5, 10.0), "ampere": (24.0, 23.6, 17.8), "hopper": (0, 57.7, 45.5),
                           "blackwell": (0, 96.0, 80.0)}
NVLS_EFFICIENCY = {"volta": 0.0, "ampere": 0.0, "hopper": 0.85, "blackwell": 0.74}

# Tree AllReduce correction, index log2(nBytes/64), 64 B .. 512 MiB (§2 "Tree correction").
TREE_CORRECTION: dict[str, tuple[float, ...]] = {
    "ll": (1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0),
    "ll128": (1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0),
    "simple": (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9),
}

# NCCL topo.h per-link NVLink nominal bandwidth (GB/s) and graph-search speed lists (search.cc).
NVLINK_PER_LINK_BW = {"volta": 20.0, "ampere": 20.0, "hopper": 20.6, "blackwell": 40.1}
XGMI_WIDTH_CDNA3_GBPS = 48.0  # RCCL topo.h GFX94X_XGMI_WIDTH: one MI300X xGMI link as RCCL rates it
SPEEDS_INTRA = {
    "ampere": (40, 30, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3),
    "hopper": (60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3),
    "blackwell": (90, 80, 70, 60, 50, 45, 40, 30, 24, 20, 19, 18),
}
SPEEDS_INTER = {
    "ampere": (48, 30, 28, 24, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3, 2.4, 1.2, 0.24, 0.12),
    "hopper": (48, 45, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12),
    "blackwell": (96, 86, 80, 48, 45.1, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12),
}
MAX_CHANNELS = 32  # NCCL MAXCHANNELS; graph search keeps at most half before duplication
NVLS_CHANNELS = {"hopper": 16, "blackwell": 24}  # NCCL_NVLS_NCHANNELS defaults
MAX_THREADS = {"ll": 512, "ll128": 640, "simple": 512}  # §4
THREAD_THRESHOLD = {"ll": 8, "ll128": 8, "simple": 64}  # bytes per thread (§4)


@dataclass(frozen=True)
class TunerConstants:
    """The overridable constants (NCCL ``ncclTunerConstants``), with the 2.30.7 defaults."""

    base_latency_us: Mapping[str, tuple[float, float, float]] = field(default_factory=lambda: dict(BASE_LATENCY_US))
    hw_latency_us: Mapping[str, Mapping[str, tuple[float, float, float]]] = field(
        default_factory=lambda: {k: dict(v) for k, v in HW_LATENCY_US.items()})
    net_overhead_us: float | None = None  # None: 1.0 (Intel/ARM hosts), 2.0 (AMD hosts)
    nvls_efficiency: float | None = None  # None: the per-arch table
    ll_max_bw_GBps: float | None = None  # None: the caps table
    n_channels: int | None = None  # graph overrides (None: derived from the profile)
    bw_intra_GBps: float | None = None
    bw_inter_GBps: float | None = None
    nvls_channels: int | None = None
    # Calibration knobs (defaults leave NCCL's model unchanged):
    # the net plugin's per-message latency (NCCL ``latencyInter``, from the NIC's ``latency``
    # property; NCCL's IB/socket transports report 0, AWS's EFA plugin does not), added once per
    # inter-node hop and twice for Simple (GDR flush), NCCL-COST-MODEL.md §1.
    net_latency_us: float = 0.0
    # Achievable fraction of the per-channel rate per protocol (LL, LL128, Simple), relative to
    # NCCL's caps: flag polling and line packing cost more on some GPUs/links than the tuner's
    # constants assume. Applied to the wire traffic of ring/tree collectives by
    # :mod:`simulator.costs.collectives`; NCCL's own tuner does not know it, so selection ignores it.
    proto_efficiency: tuple[float, float, float] = (1.0, 1.0, 1.0)
    # The same, for communicators that span nodes (``proto_efficiency.net.<proto>``): LL and LL128
    # across a NIC go through the proxy and the NIC's RDMA writes of flag-carrying lines, a path
    # whose cost has nothing to do with the NVLink one (measured: LL over IB/Slingshot at an eighth
    # to a half of NCCL's estimate while the same GPUs' NVLink LL matches it, data/nccl/ a100pcie_*,
    # gh200x*). The slowest hop of a multi-node ring or tree is the network one, so the whole
    # communicator runs at this rate.
    net_proto_efficiency: tuple[float, float, float] = (1.0, 1.0, 1.0)
    # Achievable fraction of the links for point-to-point traffic (All-to-All, SendRecv): NCCL's
    # p2p path runs its own channel and chunk sizes, not the collective ring's.
    p2p_efficiency: float = 1.0


OVERRIDE_KEYS = (
    "base_latency_us.<algo>.<proto>", "hw_latency_us.<nvlink|pci|net>.<algo>.<proto>", "net_overhead_us",
    "nvls_efficiency", "ll_max_bw_GBps", "n_channels", "bw_intra_GBps", "bw_inter_GBps", "nvls_channels",
    "net_latency_us", "proto_efficiency.<ll|ll128|simple>", "proto_efficiency.net.<ll|ll128|simple>",
    "p2p_efficiency",
)


def constants_from_overrides(overrides: Mapping[str, float], source: str | None = None) -> TunerConstants:
    """Apply a profile's flat ``nccl:`` mapping, e.g. ``{"hw_latency_us.net.ring.simple": 10}``.

    Keys of other layers (anything outside :data:`OVERRIDE_KEYS`) are ignored so the same mapping
    can carry knobs of other cost modules; a malformed key of ours raises InputError.
    """
    c = TunerConstants()
    base = {k: list(v) for k, v in c.base_latency_us.items()}
    hw = {lk: {a: list(v) for a, v in row.items()} for lk, row in c.hw_latency_us.items()}
    scalars: dict[str, float] = {}
    proto_eff = list(c.proto_efficiency)
    net_proto_eff = list(c.net_proto_efficiency)
    for key, value in overrides.items():
        parts = key.split(".")
        where = f"nccl.{key}"
        if parts[0] == "base_latency_us":
            if len(parts) != 3 or parts[1] not in base or parts[2] not in PROTOS:
                raise InputError(f"expected base_latency_us.<{'|'.join(ALGOS)}>.<ll|ll128|simple>", source=source, field=where)
            base[parts[1]][PROTOS.index(parts[2])] = float(value)
        elif parts[0] == "hw_latency_us":
            if len(parts) != 4 or parts[1] not in hw or parts[2] not in ALGOS or parts[3] not in PROTOS:
                raise InputError("expected hw_latency_us.<nvlink|pci|net>.<algo>.<ll|ll128|simple>", source=source, field=where)
            hw[parts[1]][parts[2]][PROTOS.index(parts[3])] = float(value)
        elif parts[0] == "proto_efficiency":
            proto, table = (parts[-1], net_proto_eff) if len(parts) == 3 and parts[1] == "net" else (parts[1], proto_eff)
            if len(parts) not in (2, 3) or (len(parts) == 3 and parts[1] != "net") or proto not in PROTOS \
                    or not 0 < float(value) <= 1:
                raise InputError("expected proto_efficiency.<ll|ll128|simple> or proto_efficiency.net.<ll|ll128|simple> "
                                 "in (0, 1]", source=source, field=where)
            table[PROTOS.index(proto)] = float(value)
        elif key == "p2p_efficiency":
            if not 0 < float(value) <= 1:
                raise InputError(f"expected a fraction in (0, 1], got {value!r}", source=source, field=where)
            scalars[key] = float(value)
        elif key == "net_latency_us":
            if float(value) < 0:
                raise InputError(f"expected a latency >= 0 us, got {value!r}", source=source, field=where)
            scalars[key] = float(value)
        elif key in ("net_overhead_us", "nvls_efficiency", "ll_max_bw_GBps", "bw_intra_GBps", "bw_inter_GBps"):
            scalars[key] = float(value)
        elif key in ("n_channels", "nvls_channels"):
            if int(value) != value or value < 1:
                raise InputError(f"expected a positive whole number, got {value!r}", source=source, field=where)
            scalars[key] = int(value)
    return replace(
        c,
        base_latency_us={k: tuple(v) for k, v in base.items()},  # type: ignore[misc]
        hw_latency_us={lk: {a: tuple(v) for a, v in row.items()} for lk, row in hw.items()},  # type: ignore[misc]
        proto_efficiency=tuple(proto_eff),  # type: ignore[arg-type]
        net_proto_efficiency=tuple(net_proto_eff),  # type: ignore[arg-type]
        **scalars,  # type: ignore[arg-type]
    )


@dataclass(frozen=True)
class TunerGraph:
    """What NCCL's graph search hands the tuner: channels and per-channel GB/s."""

    n_channels: int
    bw_intra_GBps: float
    bw_inter_GBps: float
    nvls_channels: int
    tree_bw_intra_GBps: float | None = None  # the tree graph's bwIntra (None: as the ring's)
    nvls_intra_total_GBps: float | None = None  # the NVLS graph's NVLink total (None: ring nCh × bwIntra)

    @property
    def tree_intra_GBps(self) -> float:
        return self.bw_intra_GBps if self.tree_bw_intra_GBps is None else self.tree_bw_intra_GBps


@dataclass(frozen=True)
class TunerContext:
    """One communicator as the tuner sees it."""

    arch: ArchRow
    n_ranks: int
    n_nodes: int
    intra_link: LinkClass  # "nvlink" or "pci"
    cpu_vendor: str
    nvls_supported: bool  # the NVSwitch does in-switch reduction (profile.node.scale_up.nvls)
    graph: TunerGraph
    constants: TunerConstants = TunerConstants()

    @property
    def ppn(self) -> int:
        return self.n_ranks // self.n_nodes

    @property
    def scale(self) -> int:
        """Column of the caps tables: 0 = 1 node, 1 = 2 nodes, 2 = more."""
        return 0 if self.n_nodes == 1 else (1 if self.n_nodes == 2 else 2)


def _arch_row(arch: str) -> ArchRow:
    # RCCL on CDNA3 has its own tables; the Ampere row is the closest NCCL analogue (no NVLS).
    return {"volta": "volta", "ampere": "ampere", "hopper": "hopper", "blackwell": "blackwell"}.get(arch, "ampere")  # type: ignore[return-value]


def _pick_speed(total: float, speeds: tuple[float, ...], min_channels: int = 1) -> tuple[int, float]:
    """Fastest per-channel speed from NCCL's list that fits at least `min_channels` channels."""
    for s in speeds:
        n = int(total // s)
        if n >= min_channels:
            return min(n, MAX_CHANNELS // 2), float(s)
    return 1, float(speeds[-1])


def graph_from_profile(profile, n_ranks: int, n_nodes: int) -> TunerGraph:
    """Approximate NCCL's ring graph for this communicator from the profile's datasheet numbers.

    Intra-node total = NCCL's nominal per-link NVLink bandwidth × links (topo.h), or the PCIe /
    xGMI figure; across nodes one channel per NIC (up to MAXCHANNELS/2; a GPU with several NICs
    behind its PCIe switch, as the 4 EFA devices per H100 of AWS p5, drives each on its own
    channel) at the fastest listed speed the NIC carries.
    Channel duplication as in tuning.cc (bwIntra ≥ 25 → 2× channels at half the speed).
    """
    arch = _arch_row(profile.gpu.arch)
    su = profile.node.scale_up
    ppn = max(1, n_ranks // max(1, n_nodes))
    row = arch if arch in SPEEDS_INTRA else "ampere"
    if su.kind == "nvswitch":
        intra_total = NVLINK_PER_LINK_BW[arch] * su.links_per_gpu
    elif su.kind == "mesh":
        intra_total = _mesh_peer_GBps(profile) * max(1, ppn - 1)
    else:  # pcie / none: NCCL's PCI model width × rate / 80 ≈ 0.75 of the per-direction figure
        intra_total = 0.75 * profile.node.pcie.GBps
    if n_nodes <= 1:
        n_ch, bw = _pick_speed(intra_total, SPEEDS_INTRA[row])
        bw_inter = bw
    else:
        nic_GBps = profile.node.nics.Gbps / 8.0
        nics = max(1, min(profile.node.nics.count, MAX_CHANNELS // 2) if profile.node.nics.count else 1)
        bw = next((float(s) for s in SPEEDS_INTER[row] if s <= nic_GBps), SPEEDS_INTER[row][-1])
        n_ch = nics
        if n_ch * bw > intra_total and ppn > 1:  # the intra-node chain cannot feed every NIC at full speed
            bw = next((float(s) for s in SPEEDS_INTER[row] if n_ch * s <= intra_total), bw)
        bw_inter = bw
    tree_bw = _tree_bw_intra(bw, n_ch, intra_total, SPEEDS_INTER[row]) if n_nodes == 2 else bw
    if bw >= 25 and not (arch in ("hopper", "blackwell") and bw < 50 and n_ch > 4):
        n_ch, bw, bw_inter, tree_bw = min(2 * n_ch, MAX_CHANNELS), bw / 2, bw_inter / 2, tree_bw / 2
    nvls_ch = NVLS_CHANNELS.get(arch, 0)
    # NVLS has its own graph, searched over NVLink only: on several nodes its intra-node rate is
    # not the NIC-bound ring graph's (NCCL search.cc, NCCL_TOPO_PATTERN_NVLS).
    nvls_ch_1node, nvls_bw_1node = _pick_speed(intra_total, SPEEDS_INTRA[row])
    nvls_total = nvls_ch_1node * nvls_bw_1node if su.nvls else None
    return TunerGraph(n_ch, bw, bw_inter, nvls_ch, tree_bw, nvls_total)


def _tree_bw_intra(bw_inter: float, n_ch: int, intra_total: float, speeds: tuple[float, ...]) -> float:
    """The tree graph's bwIntra on two nodes.

    NCCL ``search.cc`` (``ncclTopoCompute``, pass 2, "increase bwIntra for trees (2 nodes or
    collnet)") raises a tree graph's bwIntra one speed step at a time, keeping bwInter, while
    the intra-node chain still fits and bwIntra < 2 × bwInter; ``tuning.cc`` then rates Tree on
    ≤ 2 nodes with bwIntra. On two nodes each tree crosses the network once per direction, so a
    tree moves S per NIC direction where a ring moves 2(n-1)/n·S: this is why NCCL picks Tree
    for large AllReduce on two nodes of 4 GH200 (data/nccl/gh200x8_allreduce_2node_alps_slingshot.csv
    peaks at 158 GB/s busbw, above the 100 GB/s of the node's four 200 Gb/s NICs that bound any ring).
    """
    best = bw_inter
    for s in sorted(speeds):
        if bw_inter < s <= 2 * bw_inter and n_ch * s <= intra_total:
            best = s
    return float(best)


def _mesh_peer_GBps(profile) -> float:
    """Per-direction bandwidth NCCL/RCCL's topology assigns to one GPU pair of a full mesh.

    NVLink: NCCL's nominal per-link bandwidth (topo.h, 20.6 GB/s on SM90) × the links to that
    peer (links_per_gpu spread evenly over the other GPUs: 18 / 3 = 6 on a 4-GH200 node). xGMI
    (CDNA3): RCCL ``topo.h`` ``GFX94X_XGMI_WIDTH`` = 48 GB/s per link, one link per peer on MI300X.
    Other architectures: the profile's datasheet figure.
    """
    su, gpu = profile.node.scale_up, profile.gpu
    peers = max(1, profile.node.gpus - 1)
    if gpu.arch in NVLINK_PER_LINK_BW and su.links_per_gpu:
        return NVLINK_PER_LINK_BW[gpu.arch] * max(1, su.links_per_gpu // peers)
    if gpu.arch == "cdna3":
        return XGMI_WIDTH_CDNA3_GBPS * max(1, su.links_per_gpu // peers)
    return su.link_GBps


def context_from_profile(profile, n_ranks: int, n_nodes: int) -> TunerContext:
    """Build the tuner's view of a communicator of `n_ranks` GPUs spread over `n_nodes` nodes."""
    constants = constants_from_overrides(profile.nccl, source=f"profile {profile.name}")
    g = graph_from_profile(profile, n_ranks, n_nodes)
    g = TunerGraph(
        constants.n_channels or g.n_channels,
        constants.bw_intra_GBps or g.bw_intra_GBps,
        constants.bw_inter_GBps or g.bw_inter_GBps,
        constants.nvls_channels or g.nvls_channels,
        constants.bw_intra_GBps or g.tree_bw_intra_GBps,
        g.nvls_intra_total_GBps,
    )
    kind = profile.node.scale_up.kind
    return TunerContext(
        arch=_arch_row(profile.gpu.arch),
        n_ranks=n_ranks,
        n_nodes=n_nodes,
        intra_link="nvlink" if kind in ("nvswitch", "mesh") else "pci",
        cpu_vendor=profile.node.cpu_vendor,
        nvls_supported=bool(profile.node.scale_up.nvls) and profile.gpu.arch in ("hopper", "blackwell"),
        graph=g,
        constants=constants,
    )


# --- §1 latency ----------------------------------------------------------------------------

def _nsteps(coll: str, n: int) -> int:
    return {"allreduce": 2 * (n - 1), "allgather": n - 1, "reducescatter": n - 1}.get(coll, n)


def _net_overhead_us(ctx: TunerContext, proto: str) -> float:
    c = ctx.constants.net_overhead_us
    base = c if c is not None else (2.0 if ctx.cpu_vendor == "amd" else 1.0)
    return base * (3 if proto == "simple" else 1)


def net_plugin_latency_us(ctx: TunerContext, proto: str) -> float:
    """The net plugin's ``latencyInter`` as NCCL adds it to one inter-node hop: once, and once
    more for Simple (the GDR flush), NCCL-COST-MODEL.md §1."""
    lat = ctx.constants.net_latency_us
    return lat * (2 if proto == "simple" else 1)


def latency_us(ctx: TunerContext, coll: str, algo: str, proto: str) -> float:
    """NCCL's per-call latency term for (collective, algorithm, protocol), microseconds."""
    p = PROTOS.index(proto)
    k = ctx.constants
    base = k.base_latency_us[algo][p]
    intra = k.hw_latency_us[ctx.intra_link][algo][p]
    inter_algo = "tree" if ctx.ppn == 1 and ctx.n_nodes > 1 else algo
    inter = k.hw_latency_us["net"][inter_algo][p] + net_plugin_latency_us(ctx, proto)
    n, nodes = ctx.n_ranks, ctx.n_nodes
    log2n = int(math.log2(nodes)) if nodes > 0 else 0
    if algo == "ring":
        if coll in ("allreduce", "allgather", "reducescatter"):
            nsteps = _nsteps(coll, n)
            inter_steps = 0 if nodes == 1 else (2 * (nodes - 1) if coll == "allreduce" else nodes - 1)
            net_oh = _net_overhead_us(ctx, proto) if nodes > 1 else 0.0
            return base + (nsteps - inter_steps) * max(intra, net_oh) + inter_steps * inter
        hop = inter if nodes > 1 else intra
        return base + hop  # broadcast: every channel shares the ring order
    if algo == "tree":
        return base + 2 * ((ctx.ppn - 1) * intra + log2n * inter)
    if algo == "collnet_direct":
        return 2 * (min(1, ctx.ppn - 1) * intra + 0.4 * (ctx.ppn - 1)) + inter
    if algo == "collnet_chain":
        return 2 * (ctx.ppn - 1) * intra + inter
    if algo == "nvls":
        return intra + (inter if nodes > 1 else 0.0)
    if algo == "nvls_tree":
        return intra + 2 * log2n * inter
    if algo == "pat":
        return 8.0 + log2n * inter / 3.5 + 2.8 * n
    raise ValueError(f"unknown algorithm {algo!r}")


# --- §2 bandwidth --------------------------------------------------------------------------

def proto_efficiency(ctx: TunerContext, proto: str) -> float:
    """The calibrated achievable fraction of `proto`'s rate on this communicator: the network
    one when it spans nodes, else the intra-node one (1.0 unless calibrated)."""
    table = ctx.constants.net_proto_efficiency if ctx.n_nodes > 1 else ctx.constants.proto_efficiency
    return table[PROTOS.index(proto)]


def ll_max_bw_GBps(ctx: TunerContext) -> float:
    if ctx.constants.ll_max_bw_GBps is not None:
        return ctx.constants.ll_max_bw_GBps
    if ctx.n_nodes == 1:
        return LL_MAX_BW_1NODE[ctx.arch]
    if ctx.arch in ("hopper", "blackwell"):
        row = {"hopper": (45.0, 35.0), "blackwell": (90.0, 70.0)}[ctx.arch]
    else:
        row = LL_MAX_BW_MULTINODE["amd" if ctx.cpu_vendor == "amd" else "intel"]
    return row[0] if ctx.n_nodes == 2 else row[1]


def nvls_efficiency(ctx: TunerContext) -> float:
    e = ctx.constants.nvls_efficiency
    return e if e is not None else NVLS_EFFICIENCY[ctx.arch]


def enabled(ctx: TunerContext, coll: str, algo: str, proto: str) -> bool:
    """NCCL's default enablement rules (§3) for this communicator."""
    if coll == "broadcast" and algo != "ring":
        return False
    if coll in ("allgather", "reducescatter") and algo not in ("ring", "pat", "nvls", "collnet_direct"):
        return False
    if coll == "allreduce" and algo == "pat":
        return False
    if algo in ("collnet_direct", "collnet_chain"):
        return False  # needs SHARP/CollNet, which no bundled profile models
    if algo in ("nvls", "nvls_tree"):
        if proto != "simple" or not ctx.nvls_supported or nvls_efficiency(ctx) == 0:
            return False
        if algo == "nvls_tree" and ctx.n_nodes == 1:
            return False
        if algo == "nvls" and ctx.n_nodes > 1:
            return False  # multi-node NVLS needs CollNet; NVLSTree covers that case
        if coll != "allreduce" and (ctx.n_nodes > 1 or ctx.ppn > 32):
            return False
    if algo == "pat" and (proto != "simple" or ctx.ppn != 1):
        return False
    if algo == "tree" and ctx.n_nodes == 1 and coll != "allreduce":
        return False
    if proto == "ll128" and ctx.intra_link == "pci" and ctx.n_ranks > ctx.n_nodes:
        return False  # LL128 needs an NVLink path inside the node
    return ctx.n_ranks > 1


def algo_bandwidth_GBps(ctx: TunerContext, coll: str, algo: str, proto: str) -> float:
    """NCCL's algorithm bandwidth (``comm->bandwidths``) in GB/s; 0 when disabled."""
    if not enabled(ctx, coll, algo, proto):
        return 0.0
    g, s, n = ctx.graph, ctx.scale, ctx.n_ranks
    n_ch = g.n_channels
    per_ch = g.bw_intra_GBps if ctx.n_nodes <= 2 else g.bw_inter_GBps
    if algo == "tree" and ctx.n_nodes <= 2:
        per_ch = g.tree_intra_GBps
    if algo in ("nvls", "nvls_tree"):
        n_ch = g.nvls_channels
        total = g.nvls_intra_total_GBps if g.nvls_intra_total_GBps is not None else g.n_channels * g.bw_intra_GBps
        intra = (total / n_ch) * nvls_efficiency(ctx) * (n_ch - 1) / n_ch
        intra *= 2 if coll == "allreduce" else (ctx.ppn - 1) / ctx.ppn
        inter = g.bw_inter_GBps * (2 if algo == "nvls_tree" and ctx.n_nodes <= 2 else 1) if ctx.n_nodes > 1 else math.inf
        per_ch = min(intra, inter)
        if algo == "nvls_tree":
            per_ch = min(per_ch, PER_CH_MAX_NVLS_TREE_BW[ctx.arch][s])
    bus = n_ch * per_ch
    if algo == "ring" and proto == "ll":
        bus = min(ll_max_bw_GBps(ctx), 0.5 * bus)
    elif algo == "ring" and proto == "ll128":
        bus = min(0.92 * bus, n_ch * PER_CH_MAX_RING_LL128_BW[ctx.arch][s])
    elif algo == "tree" and coll == "allreduce":
        bus = min(0.92 * bus, n_ch * PER_CH_MAX_TREE_BW[ctx.arch][s])
        if proto == "ll":
            bus = min(bus / 3.8, ll_max_bw_GBps(ctx))
        elif proto == "ll128":
            bus = min(bus * (7 / 9 if ctx.n_nodes == 1 else 120 / 128), n_ch * PER_CH_MAX_TREE_LL128_BW[ctx.arch][s])
    elif algo == "pat":
        bus *= 0.75
    if algo in ("ring", "nvls", "nvls_tree"):
        if algo == "ring" or coll == "allreduce":
            steps = _nsteps(coll, n) if coll in ("allreduce", "allgather", "reducescatter") else n
            return bus * (n / steps if coll != "broadcast" else 1.0)
        return bus  # NVLS AllGather/ReduceScatter are not converted
    if algo == "tree":
        return bus * 0.5
    return bus


def predict_us(ctx: TunerContext, coll: str, algo: str, proto: str, nbytes: int) -> float:
    """NCCL's predicted time (§3) for one call of `nbytes` (nccl-tests size convention)."""
    bw = algo_bandwidth_GBps(ctx, coll, algo, proto)
    if bw <= 0:
        return math.inf
    lat = latency_us(ctx, coll, algo, proto)
    if algo == "ring" and proto == "simple" and coll == "allreduce" and ctx.n_nodes > 1:
        if nbytes / (ctx.graph.n_channels * ctx.n_ranks) >= 64:
            lat *= 1.4 if ctx.arch != "volta" else 1.9
    if algo == "tree" and coll == "allreduce":
        bw *= tree_correction(proto, nbytes)
    return lat + nbytes / (1000.0 * bw)


def tree_correction(proto: str, nbytes: int) -> float:
    """NCCL's size-dependent Tree AllReduce bandwidth factor (index log2(nBytes/64), 0..22)."""
    idx = int(math.log2(nbytes / 64)) if nbytes >= 64 else 0
    return TREE_CORRECTION[proto][idx] if idx <= 22 else 1.0


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
    k = ctx.constants
    known = TunerConstants(net_overhead_us=k.net_overhead_us, net_latency_us=k.net_latency_us)
    return ctx if k == known else replace(ctx, constants=known)


def select(ctx: TunerContext, coll: str, nbytes: int, algo: str | None = None,
           proto: str | None = None) -> tuple[str, str]:
    """The (algorithm, protocol) NCCL would run: argmin of :func:`predict_us` on the
    :func:`selection_context` over the enabled combinations, restricted to `algo`/`proto` where
    pinned (like NCCL_ALGO / NCCL_PROTO).

    Raises ValueError when the pins leave nothing enabled.
    """
    ctx = selection_context(ctx)
    best: tuple[float, str, str] | None = None
    for a in ALGOS:
        if algo is not None and a != algo:
            continue
        for p in PROTOS:
            if proto is not None and p != proto:
                continue
            t = predict_us(ctx, coll, a, p, max(1, nbytes))
            if t < math.inf and (best is None or t < best[0]):
                best = (t, a, p)
    if best is None:
        raise ValueError(f"no enabled algorithm/protocol for {coll} with algo={algo} proto={proto}")
    return best[1], best[2]


def channels_used(ctx: TunerContext, algo: str, proto: str, nbytes: int) -> int:
    """Channels one call actually launches (§4): fewer for small messages."""
    if algo in ("nvls", "nvls_tree"):
        return ctx.graph.nvls_channels
    nc = ctx.graph.n_channels
    nt = MAX_THREADS[proto]
    thr = THREAD_THRESHOLD[proto] * (ctx.n_ranks if (algo == "ring" and proto == "ll") else 1)
    while nc > 1 and nbytes < nc * nt * thr:
        nc -= 1
    return nc


def channel_bw_GBps(ctx: TunerContext, algo: str, proto: str, nbytes: int | None = None) -> float:
    """Payload bandwidth one channel can drive (GB/s): the graph's per-channel speed, capped by
    the protocol's per-channel maxima (LL: llMaxBw spread over the channels).

    Tree AllReduce channels run at NCCL's own tree estimate (its algorithm bandwidth, with the
    size correction when `nbytes` is given) divided over the channels: the tuner's constants
    encode how far a pipelined chain+tree falls short of the links, which a fluid model of the
    links alone would not see.
    """
    g = ctx.graph
    if algo == "tree":
        bw = algo_bandwidth_GBps(ctx, "allreduce", "tree", proto)
        if nbytes is not None:
            bw *= tree_correction(proto, nbytes)
        if bw > 0:
            return bw / g.n_channels
    per_ch = g.bw_intra_GBps if ctx.n_nodes <= 2 else g.bw_inter_GBps
    if proto == "ll":
        return min(0.5 * per_ch, ll_max_bw_GBps(ctx) / g.n_channels)
    if proto == "ll128":
        table = PER_CH_MAX_TREE_LL128_BW if algo == "tree" else PER_CH_MAX_RING_LL128_BW
        return min(per_ch * 120 / 128, table[ctx.arch][ctx.scale])
    return per_ch

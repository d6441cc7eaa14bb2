"""NCCL's tuner constants (NCCL 2.30.7 ``src/graph/tuning.cc``, paraphrased in
``docs/reference/NCCL-COST-MODEL.md`` §1-§4) and the ``nccl:`` overrides of a profile.

The tables below are 2.30.7's; the latency tables and the caps that moved between releases are
read per release from :mod:`simulator.costs.nccl_versions` (``nccl.version`` of a profile).

Units follow NCCL's tables: microseconds and GB/s. :mod:`simulator.costs.nccl_tuner` is the
cost model that reads them; :mod:`simulator.costs.nccl_graph` the communicator they apply to.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Literal, Mapping

from simulator.config.nccl_overrides import ALGOS, PROTO_EFFICIENCY_ALGOS, PROTOS  # noqa: F401 - re-exported
from simulator.config.nccl_overrides import version_key
from simulator.costs.nccl_versions import NEWEST, NcclTables, tables_for
from simulator.errors import InputError

Algo = Literal["tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"]
Proto = Literal["ll", "ll128", "simple"]
LinkClass = Literal["nvlink", "pci", "net"]
ArchRow = Literal["volta", "ampere", "hopper", "blackwell"]

TUNED_COLLECTIVES = ("allreduce", "allgather", "reducescatter", "broadcast")

# --- §1 latency tables (us) and §2 caps (GB/s; columns: 1 node, 2 nodes, >2 nodes) ------------
# NCCL 2.30.7's, from the per-release tables (costs/nccl_versions.py): (LL, LL128, Simple) per
# algorithm; per link class (nvlink/pci/net) for the hop latencies; per GPU row for the caps.

_NEWEST_TABLES = tables_for(NEWEST)
BASE_LATENCY_US: dict[str, tuple[float, float, float]] = dict(_NEWEST_TABLES.base_latency_us)
HW_LATENCY_US: dict[str, dict[str, tuple[float, float, float]]] = {
    link: dict(row) for link, row in _NEWEST_TABLES.hw_latency_us.items()}
LL_MAX_BW_1NODE: dict[str, float] = {arch: row[0] for arch, row in _NEWEST_TABLES.ll_max_bw.items()}
# Multi-node llMaxBw rows by host CPU (NCCL's Volta/Ampere rows), the same in every release read.
LL_MAX_BW_MULTINODE: dict[str, tuple[float, float]] = {"intel": (39.0, 20.4), "amd": (22.5, 19.0)}
PER_CH_MAX_RING_LL128_BW = dict(_NEWEST_TABLES.per_ch_max_ring_ll128)
PER_CH_MAX_TREE_LL128_BW = dict(_NEWEST_TABLES.per_ch_max_tree_ll128)
PER_CH_MAX_TREE_BW = dict(_NEWEST_TABLES.per_ch_max_tree)
PER_CH_MAX_NVLS_TREE_BW = {"volta": (26.5, 18.5, 10.0), "ampere": (24.0, 23.6, 17.8), "hopper": (0, 57.7, 45.5),
                           "blackwell": (0, 96.0, 80.0)}
# Tree busBw factor when the tree graph is NCCL_TOPO_PATTERN_TREE rather than BALANCED_TREE
# (tuning.cc "graphs[a]->pattern == NCCL_TOPO_PATTERN_TREE) busBw *= .85", every release from 2.18.3).
SIMPLE_TREE_FACTOR = 0.85
NVLS_EFFICIENCY = {"volta": 0.0, "ampere": 0.0, "hopper": 0.85, "blackwell": 0.74}
# What one NVLink step of a ring or tree costs beyond NCCL's ``hwLat[NVLINK]`` on each GPU generation,
# us. NCCL's NVLink row (0.6 / 1.25-1.9 / 3.4-4 us for LL / LL128 / Simple) is one table for every
# GPU (tuning.cc, unchanged from 2.18 to 2.30), and Hopper runs to it: 2 x 8 H100 Tree/LL at 16-128 B
# takes 25 us, NCCL's 6.8 + 2 x (7 x 0.6 + 5) (data/nccl/h100x16_allreduce_2node_xe9680_ib.csv).
# Blackwell's NVLink 5 crossing is slower: the same 8-byte AllReduce with NCCL 2.27's symmetric-memory
# kernels, whose small-size path is a single exchange over NVLink, takes ~3.0 us on 8 x B200 and
# ~2.3 us on 8 x H200/H800 under the same tuning (NVIDIA/nccl issue #1940, 2025-12-12): 0.7 us more per
# crossing, on a one-switch HGX B200 board as on an NVL72 rack. NCCL does not know it (its choice
# ignores it); a ring or tree pays it once per NVLink step. Measured on 2 x 64 GB200 over two NVL72
# racks: Tree/LL's 126 NVLink steps take ~185 us where NCCL's table gives 92 us
# (data/nccl/gb200x128_allreduce_2rack_oci_nvl72_roce.csv: 8 B-64 KiB predicted 112 -> 201 us with
# RoCE's deployed hop extra, measured 182-204 us).
NVLINK_HOP_EXTRA_US = {"volta": 0.0, "ampere": 0.0, "hopper": 0.0, "blackwell": 0.7}

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
MAX_CHANNELS = 32  # NCCL MAXCHANNELS up to 2.24 (max_channels: the release's); the graph search keeps half
# NCCL's MAXCHANNELS per release (src/include/device.h): 32 up to v2.24.3-1, 64 from v2.25.1-1. It bounds
# the ring graph's search (``ringGraph->maxChannels = MAXCHANNELS/2``, src/init.cc of every tag from
# v2.19.3-1 to v2.27.7-1, unchanged), the duplicated channels of ``ncclTopoPostset`` (src/graph/connect.cc:
# ``std::min(MAXCHANNELS, nChannels*2)``) and the p2p channels. (release, MAXCHANNELS from that release)
MAX_CHANNELS_FROM: tuple[tuple[str, int], ...] = (("2.25.1", 64),)


def max_channels(version: str | None, library: str = "nccl") -> int:
    """NCCL's ``MAXCHANNELS`` in release `version` (None: the newest encoded release). RCCL keeps
    :data:`MAX_CHANNELS` here: its own limit is not modelled (its graph rules are NCCL's as the
    model reads them), so an RCCL release numbered 2.25 or later does not change channel counts."""
    if library != "nccl":
        return MAX_CHANNELS
    release = version or NEWEST
    key = version_key(release)
    if release.strip().count(".") == 1:  # "2.25": one of its patch releases, the latest encoded rule
        key = (key[0], key[1], 1 << 30)
    limit = MAX_CHANNELS
    for release, value in MAX_CHANNELS_FROM:
        if key >= version_key(release):
            limit = value
    return limit


# NCCL_NVLS_NCHANNELS defaults (src/transport/nvls.cc ncclNvlsInit): NVLS_NCHANNELS_SM90 16 on
# Hopper, NVLS_NCHANNELS_SM100 32 on Blackwell (v2.25.1-1 .. v2.26.x); from v2.27.3-1 a Blackwell
# communicator inside one node or one MNNVL clique gets NVLS_NCHANNELS_SM100_NVL 24 ("Use a reduced
# number of channels for single node/MNNVL domain on Blackwell"), one spanning domains keeps 32.
NVLS_CHANNELS = {"hopper": 16, "blackwell": 32}
NVLS_CHANNELS_ONE_DOMAIN = {"blackwell": 24}
NVLS_ONE_DOMAIN_FROM = "2.27.3"
NVLS_MAX_ARITY = 32  # NCCL_MAX_NVLS_ARITY (src/include/device.h): the most NVLS heads per node
MAX_THREADS = {"ll": 512, "ll128": 640, "simple": 512}  # §4
THREAD_THRESHOLD = {"ll": 8, "ll128": 8, "simple": 64}  # bytes per thread (§4)

# Point-to-point channels (NCCL src/init.cc computeBuffSizes, src/graph/paths.cc, src/enqueue.cc
# addP2pToPlan): the chunk one channel moves per step by transport, the bandwidth NCCL plans per
# network channel, the p2p operations one channel runs per work batch, the LL threshold per channel.
P2P_NVL_CHUNK_BYTES = 1 << 19  # NCCL_P2P_NVL_CHUNKSIZE: every peer on NVLink, one node
P2P_NET_CHUNK_BYTES = 1 << 17  # NCCL_P2P_NET_CHUNKSIZE: any communicator spanning nodes
P2P_PCI_CHUNK_BYTES = 1 << 17  # NCCL_P2P_PCI_CHUNKSIZE: otherwise
P2P_PER_CHANNEL_NET_GBPS = 14.0  # NCCL_P2P_PER_CHANNEL_NET_BW
P2P_PER_BATCH = 8  # NCCL_MAX_DEV_WORK_P2P_PER_BATCH
P2P_LL_THRESHOLD = 16384  # NCCL_P2P_LL_THRESHOLD: bytes per channel up to which a send/recv runs LL


def _unit_per_algo() -> dict[str, tuple[float, float, float]]:
    return {a: (1.0, 1.0, 1.0) for a in PROTO_EFFICIENCY_ALGOS}


@dataclass(frozen=True)
class TunerConstants:
    """The overridable constants (NCCL ``ncclTunerConstants``), with the 2.30.7 defaults;
    :meth:`for_version` gives another release's (``nccl_version``)."""

    # The NCCL release whose tables (latencies, LL/LL128/Tree caps, PAT) NCCL's tuner uses,
    # as far as the profile's own values below do not replace them.
    nccl_version: str = NEWEST
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
    # NCCL_MIN_NCHANNELS / NCCL_MIN_CTAS: the fewest channels (CTAs) a ring or tree call runs on
    # (``ncclTopoPostset``, src/graph/connect.cc of v2.26.2-1 lines 478-485: the graph's channels are
    # copied up to it after their duplication); NCCL's tuner does not see it (it rates the graph's
    # channels), the kernel does: nccl_tuner.ring_ctas_per_channel. None: NCCL's default (no floor).
    min_channels: int | None = None
    # Calibration knobs (defaults leave NCCL's model unchanged):
    # the net plugin's per-message latency (NCCL ``latencyInter``, from the NIC's ``latency``
    # property; NCCL's IB/socket transports report 0, AWS's EFA plugin does not), added once per
    # inter-node hop and twice for Simple (GDR flush), NCCL-COST-MODEL.md §1.
    net_latency_us: float = 0.0
    # What the net plugin *reports* as its latency, when that is a hard-coded tuning figure rather
    # than the hop's time (aws-ofi-nccl's 75 us on EFA, costs/transports.py): NCCL's choice adds it
    # as it adds ``net_latency_us``; the time does not. None: NCCL sees ``net_latency_us``.
    reported_net_latency_us: float | None = None
    # What one inter-node hop costs on a deployed fabric beyond NCCL's ``hwLat[NET]`` (the
    # transport's software path: proxy progress, verbs/libfabric, the plugin), added to every
    # inter-node hop's time like a fitted hop latency; NCCL does not know it, so selection ignores
    # it. Defaults per transport: :mod:`simulator.costs.deployed` (fitted on data/nccl).
    net_hop_extra_us: float = 0.0
    # What one call that crosses the network costs beyond NCCL's tables and the per-hop extra,
    # once per call whatever its algorithm and protocol (us). NCCL does not know it, so selection
    # ignores it. 0 unless a calibration on sweeps of one node count wrote it: there the rows
    # cannot split a per-call cost into per-hop and per-call shares, and a cost common to every
    # measured (algorithm, protocol) is this one number (calibration/fit.py, "Identifiability").
    net_call_extra_us: float = 0.0
    # What one NVLink step of a ring or tree costs beyond NCCL's NVLink hop latency on this GPU
    # generation (us; NVLINK_HOP_EXTRA_US). None: not given, i.e. 0 here and the table's value for
    # the profile's GPU in nccl_graph.context_from_profile. NCCL does not know it, so selection
    # ignores it.
    nvlink_hop_extra_us: float | None = None
    # What one network message costs where the transport's message protocol runs in host
    # software (``TransportStack.host_messages``: EFA's SENDRECV path, GPUDirect-TCPXO, Slingshot's
    # CXI alt_read rendezvous), paid once per message a channel of a Simple ring or tree sends, or
    # a rank sends in a Simple All-to-All/SendRecv across nodes (costs/net_messages.py); 0 elsewhere.
    # NCCL does not know it, so selection ignores it. Default: :mod:`simulator.costs.deployed`.
    net_message_us: float = 0.0
    # What one network message of a Simple send from GPU memory costs beyond ``net_message_us``
    # where the provider sends it as an inject (``TransportStack.inject_max_bytes``: libfabric CXI's
    # IDC, whose payload the host first copies out of the GPU; costs/transports.py), paid per such
    # message a rank sends in an All-to-All or SendRecv across nodes (costs/net_messages.py
    # ``p2p_messages`` at_most); 0 elsewhere. NCCL does not know it. Default: :mod:`simulator.costs.deployed`.
    net_inject_copy_us: float = 0.0
    # What each remote peer of an All-to-All beyond the first costs the rank's proxy in order: it
    # posts every remote peer's receive and send through the network plugin one after the other,
    # while NCCL's kernel runs the peers' rounds side by side (costs/nccl_p2p.py); 0 where the
    # transport's messages are priced one by one instead (``net_message_us``). NCCL does not know
    # it, so selection ignores it. Default: :mod:`simulator.costs.deployed`.
    p2p_peer_us: float = 0.0
    # Achievable fraction of the per-channel rate per protocol (LL, LL128, Simple), relative to
    # NCCL's caps, per algorithm (ring, tree: ``proto_efficiency.<algo>.<proto>``; the key without
    # the algorithm sets both): flag polling and line packing cost more on some GPUs/links than the
    # tuner's constants assume, and a ring's step-by-step pipeline and a tree's reduce-then-broadcast
    # over a chain lose different shares of it. Applied to the wire traffic of ring/tree
    # collectives by :mod:`simulator.costs.collectives`; NCCL's own tuner does not know it, so
    # selection ignores it.
    proto_efficiency: Mapping[str, tuple[float, float, float]] = field(default_factory=lambda: _unit_per_algo())
    # The same, for communicators that span nodes (``proto_efficiency.net.[<algo>.]<proto>``): LL and
    # LL128 across a NIC go through the proxy and the NIC's RDMA writes of flag-carrying lines, a
    # path whose cost has nothing to do with the NVLink one (measured: LL over IB/Slingshot at an
    # eighth to a half of NCCL's estimate while the same GPUs' NVLink LL matches it, data/nccl/
    # a100pcie_*, gh200x*). The slowest hop of a multi-node ring or tree is the network one, so the
    # whole communicator runs at this rate (a ring's LL128: what its CTAs move, collectives.channel_fraction). Ring and tree differ here most: on 2 x 8 A100 over IB
    # the AllGather's ring LL reaches ~0.3 of NCCL's LL rate and the AllReduce's tree LL ~0.125
    # (data/nccl/a100x16_*_2node_dgx_ib.csv, docs/validation-calibration.md).
    net_proto_efficiency: Mapping[str, tuple[float, float, float]] = field(default_factory=lambda: _unit_per_algo())
    # What one channel of LL carries across nodes, GB/s of payload, per algorithm (ring, tree:
    # ``net_ll_channel_GBps.<algo>``; the key without the algorithm sets both). None (the key at
    # 0): NCCL's own rate. LL lines bound for the network go through a buffer in host memory, whatever GPUDirect
    # offers: net.cc places the send side's LL buffer in host memory ("p!= NCCL_PROTO_LL &&
    # resources->useGdr", src/transport/net.cc of v2.16.5-1 line 545; the same test in v2.8.4-1 and
    # v2.22.3-1), the channel's CTA fills it with 16-byte flag-carrying stores over PCIe, and the proxy
    # reads every line's flags before it posts the send (line 896: "Check whether all lines are
    # ready"). What a channel moves is that store-and-scan path's, not a share of the links' rate:
    # measured, 0.6-1.1 GB/s per graph channel both on one A100 per node (Ring/LL, 4-64 KiB,
    # data/nccl/a100pcie_x2_allreduce_2node_ib_linear1k.csv) and on 8 per node (Tree/LL, 2-32 KiB,
    # a100x16_allreduce_2node_dgx_ib.csv, a100x16_allreduce_2node_abci.csv), where NCCL's rates
    # differ 4-8x. Default per transport: :mod:`simulator.costs.deployed`; NCCL does not know it, so
    # selection ignores it.
    net_ll_channel_GBps: Mapping[str, float | None] = field(default_factory=lambda: {"ring": None, "tree": None})
    # Achievable fraction of the links where NCCL's p2p path does more than the channel model
    # (p2p_channel_GBps) says: All-to-All, whose peers share channels (up to 8 operations per
    # channel, and "we lose the sync warp, hence a bit of bandwidth", enqueue.cc), and SendRecv
    # across nodes, sent in network chunks halved or quartered below 8 chunks (addP2pToPlan).
    # A single SendRecv inside a node runs at its channels' rate: the H100 sweep matches the
    # datasheet within 1% median (data/nccl/h100x8_sendrecv_1node.csv) while All-to-All on the
    # same node runs 5% below it (h100x8_alltoall_1node.csv).
    p2p_efficiency: float = 1.0
    # What one p2p channel (one CTA copying over NVLink) carries, GB/s. None: NCCL's nominal
    # per-link NVLink bandwidth of the architecture, which NCCL's own channel count assumes (two
    # channels per link, paths.cc ncclTopoGetNchannels) and which the H100 SendRecv sweep shows:
    # 4 channels carry 79-82 GB/s at 32-64 MiB, 19.9-20.4 GB/s each (data/nccl/h100x8_sendrecv_1node.csv).
    p2p_channel_GBps: float | None = None

    @classmethod
    def for_version(cls, version: str | None = None, **values: Any) -> "TunerConstants":
        """The defaults of NCCL release `version` (None: the newest encoded), with `values`."""
        t = tables_for(version)
        return cls(nccl_version=version or NEWEST, base_latency_us=dict(t.base_latency_us),
                   hw_latency_us={k: dict(v) for k, v in t.hw_latency_us.items()}, **values)

    @cached_property
    def tables(self) -> NcclTables:
        """The release tables of :attr:`nccl_version` (caps, PAT, the rules that changed)."""
        return tables_for(self.nccl_version)

    @cached_property
    def for_selection(self) -> "TunerConstants":
        """What NCCL's tuner itself knows when it chooses: the built-in tables of its release
        plus the net plugin's reported ``latencyInter`` and the host's net overhead (this object
        when nothing else was overridden). Computed once per constants object: selection is a
        hot path."""
        reported = self.reported_net_latency_us
        known = TunerConstants.for_version(self.nccl_version, net_overhead_us=self.net_overhead_us,
                                           net_latency_us=self.net_latency_us if reported is None else reported,
                                           reported_net_latency_us=reported)
        return self if self == known else known


OVERRIDE_KEYS = (
    "base_latency_us.<algo>.<proto>", "hw_latency_us.<nvlink|pci|net>.<algo>.<proto>", "net_overhead_us",
    "nvls_efficiency", "ll_max_bw_GBps", "n_channels", "bw_intra_GBps", "bw_inter_GBps", "nvls_channels",
    "min_channels", "net_latency_us", "net_hop_extra_us", "net_call_extra_us", "net_message_us", "net_inject_copy_us",
    "p2p_peer_us", "nvlink_hop_extra_us", "proto_efficiency.<ll|ll128|simple>", "proto_efficiency.net.<ll|ll128|simple>",
    "proto_efficiency.<ring|tree>.<ll|ll128|simple>", "proto_efficiency.net.<ring|tree>.<ll|ll128|simple>",
    "p2p_efficiency", "p2p_channel_GBps", "net_ll_channel_GBps", "net_ll_channel_GBps.<ring|tree>",
)


def constants_from_overrides(overrides: Mapping[str, float], source: str | None = None,
                             version: str | None = None, under: Mapping[str, float] | None = None) -> TunerConstants:
    """Apply a profile's flat ``nccl:`` mapping, e.g. ``{"hw_latency_us.net.ring.simple": 10}``,
    onto the tables of NCCL release `version` (None: the newest encoded).

    ``under``: a mapping applied first, which `overrides` refine (the transport's deployed
    constants under a calibrated profile's keys, :func:`simulator.costs.nccl_graph.context_from_profile`).
    Within each mapping a key for every algorithm (``proto_efficiency.net.ll``) applies before an
    algorithm's own (``proto_efficiency.net.ring.ll``), whatever their order, so the more specific
    key wins; a key of `overrides` wins over any of `under`.

    Keys of other layers (anything outside :data:`OVERRIDE_KEYS`) are ignored so the same mapping
    can carry knobs of other cost modules; a malformed key of ours raises InputError.
    """
    c = TunerConstants.for_version(version)
    base = {k: list(v) for k, v in c.base_latency_us.items()}
    hw = {lk: {a: list(v) for a, v in row.items()} for lk, row in c.hw_latency_us.items()}
    scalars: dict[str, Any] = {}  # each value checked against its field below
    proto_eff = {a: list(v) for a, v in c.proto_efficiency.items()}
    net_proto_eff = {a: list(v) for a, v in c.net_proto_efficiency.items()}
    net_ll = dict(c.net_ll_channel_GBps)
    layers = ([under] if under else []) + [overrides]
    for key, value in ((k, v) for layer in layers for k, v in sorted(layer.items(), key=_generic_first)):
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
            rest = parts[1:]
            table = net_proto_eff if rest[:1] == ["net"] else proto_eff
            rest = rest[1:] if rest[:1] == ["net"] else rest
            algos = [rest[0]] if len(rest) == 2 and rest[0] in PROTO_EFFICIENCY_ALGOS else list(PROTO_EFFICIENCY_ALGOS)
            if len(rest) not in (1, 2) or (len(rest) == 2 and rest[0] not in PROTO_EFFICIENCY_ALGOS) \
                    or rest[-1] not in PROTOS or not 0 < float(value) <= 1:
                raise InputError("expected proto_efficiency[.net][.<ring|tree>].<ll|ll128|simple> in (0, 1]",
                                 source=source, field=where)
            for a in algos:
                table[a][PROTOS.index(rest[-1])] = float(value)
        elif parts[0] == "net_ll_channel_GBps":
            if len(parts) > 2 or (len(parts) == 2 and parts[1] not in PROTO_EFFICIENCY_ALGOS) or float(value) < 0:
                raise InputError("expected net_ll_channel_GBps[.<ring|tree>] >= 0 GB/s (0: NCCL's own rate)",
                                 source=source, field=where)
            for a in ([parts[1]] if len(parts) == 2 else list(PROTO_EFFICIENCY_ALGOS)):
                net_ll[a] = float(value) if float(value) > 0 else None
        elif key == "p2p_efficiency":
            if not 0 < float(value) <= 1:
                raise InputError(f"expected a fraction in (0, 1], got {value!r}", source=source, field=where)
            scalars[key] = float(value)
        elif key == "p2p_channel_GBps":
            if not float(value) > 0:
                raise InputError(f"expected a bandwidth > 0 GB/s, got {value!r}", source=source, field=where)
            scalars[key] = float(value)
        elif key in ("net_latency_us", "net_hop_extra_us", "net_call_extra_us", "net_message_us", "net_inject_copy_us",
                     "p2p_peer_us", "nvlink_hop_extra_us"):
            if float(value) < 0:
                raise InputError(f"expected a latency >= 0 us, got {value!r}", source=source, field=where)
            scalars[key] = float(value)
        elif key in ("net_overhead_us", "nvls_efficiency", "ll_max_bw_GBps", "bw_intra_GBps", "bw_inter_GBps"):
            scalars[key] = float(value)
        elif key in ("n_channels", "nvls_channels", "min_channels"):
            if int(value) != value or value < 1:
                raise InputError(f"expected a positive whole number, got {value!r}", source=source, field=where)
            scalars[key] = int(value)
    return replace(
        c,
        base_latency_us={k: _per_protocol(v) for k, v in base.items()},
        hw_latency_us={lk: {a: _per_protocol(v) for a, v in row.items()} for lk, row in hw.items()},
        proto_efficiency={a: _per_protocol(v) for a, v in proto_eff.items()},
        net_proto_efficiency={a: _per_protocol(v) for a, v in net_proto_eff.items()},
        net_ll_channel_GBps=net_ll,
        **scalars,
    )


def _generic_first(item: tuple[str, Any]) -> tuple[int, str]:
    """Sort key: a protocol efficiency for every algorithm before an algorithm's own (stable
    otherwise), so that ``proto_efficiency.net.ring.ll`` refines ``proto_efficiency.net.ll``."""
    parts = item[0].split(".")
    specific = (parts[0] == "proto_efficiency" and any(p in PROTO_EFFICIENCY_ALGOS for p in parts[1:-1])) \
        or (parts[0] == "net_ll_channel_GBps" and len(parts) == 2)
    return (1 if specific else 0), ""


def _per_protocol(values: list[float]) -> tuple[float, float, float]:
    """One value per protocol, in PROTOS order (LL, LL128, Simple)."""
    ll, ll128, simple = values
    return ll, ll128, simple

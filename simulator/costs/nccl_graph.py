"""The communicator as NCCL's tuner sees it: the three numbers NCCL's graph search
(``search.cc``, not reproduced) hands the tuner, channels and per-channel intra/inter bandwidth,
derived from the profile's datasheet figures with NCCL's per-link nominal bandwidths and speed
lists, plus the architecture row, link class and constants of the tables.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from simulator.config.nccl_overrides import scoped, version_key
from simulator.costs import net_messages
from simulator.config.gdr import nccl_path_type, uses_gdr
from simulator.costs.deployed import deployed_overrides
from simulator.costs.transports import DEFAULT as DEFAULT_STACK
from simulator.costs.transports import TransportStack, stack_for_profile
from simulator.costs.nccl_constants import (
    MAX_CHANNELS, NVLINK_HOP_EXTRA_US, NVLINK_PER_LINK_BW, NVLS_CHANNELS, NVLS_CHANNELS_ONE_DOMAIN, NVLS_MAX_ARITY,
    NVLS_ONE_DOMAIN_FROM, P2P_NET_CHUNK_BYTES, P2P_NVL_CHUNK_BYTES, P2P_PCI_CHUNK_BYTES, P2P_PER_BATCH,
    P2P_PER_CHANNEL_NET_GBPS, SPEEDS_INTER, SPEEDS_INTRA, XGMI_WIDTH_CDNA3_GBPS, ArchRow, LinkClass, TunerConstants,
    constants_from_overrides, max_channels,
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
    p2p_channels: int = 1  # p2pnChannels: channels send/recv may use
    p2p_channels_per_peer: int = 1  # p2pnChannelsPerPeer: the most one send or receive is split over
    p2p_chunk_bytes: int = P2P_PCI_CHUNK_BYTES  # p2pChunkSize
    # (nChannelsMin, nChannelsMax) over which the communicator's NCCL release splits one send to a peer
    # on another node (p2p_split_channels; net_messages.p2p_parts)
    p2p_split: tuple[int, int] = (1, 1)
    # The tree graph is NCCL_TOPO_PATTERN_TREE (one NIC per chain, both directions), not the
    # BALANCED_TREE NCCL searches first: NCCL's tuner then rates Tree × 0.85 (simple_tree_pattern).
    simple_tree: bool = False
    # NCCL's NVLS *search* graph across nodes (what its tuner rates NVLS/NVLSTree with: one channel per
    # head, nvls_graph): channels, bwIntra, bwInter; None on one node (the runtime channels' share above)
    nvls_graph: tuple[int, float, float] | None = None
    # The release's MAXCHANNELS (nccl_constants.max_channels): the most channels the communicator runs
    # after ncclTopoPostset's duplication; the ring graph's search keeps half of it.
    max_channels: int = MAX_CHANNELS

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
    # NCCL_ALGO / NCCL_PROTO / NCCL_NVLS_ENABLE as the scale-out transport's stack sets them
    stack: TransportStack = DEFAULT_STACK
    # The collective library whose tuner chooses: "nccl", or "rccl" on AMD GPUs (costs/rccl_tuner.py)
    library: str = "nccl"
    # RCCL only: the RCCL release whose tuning tables choose (profile nccl.version; None: the newest
    # encoded, costs/rccl_tuner.py tables_for) and the GPU architecture they are keyed by (cdna3, cdna4)
    rccl_release: str | None = None
    gpu_arch: str = ""
    # The graphs' GPU-to-NIC PCIe path (typeInter; profile node.nics.gpu_path, as the release types it:
    # config/gdr.py nccl_path_type): LL128 across nodes needs it no farther than PXB (from 2.27 P2C on
    # Hopper and later; nccl_tuner.enabled)
    net_path: str = "pxb"
    # NCCL flushes every Simple receive from the network (GPUDirect RDMA on a GPU that needs it):
    # the proxy's third operation per message (costs/net_messages.py gdr_flush)
    gdr_flush: bool = False
    # NCCL sends from GPU memory (GPUDirect RDMA read: config/gdr.py uses_gdr): a Simple p2p send the
    # provider injects must first be copied out of it (costs/collectives.py p2p_inject_copies)
    gdr_send: bool = False
    # A tuner plugin the runs load whose choice replaces NCCL's where it has one (profile
    # nccl.tuner_plugin, e.g. "aws-ofi-nccl-1.16:p5.48xlarge": costs/aws_ofi_tuner.py); None: NCCL's own
    tuner_plugin: str | None = None

    @property
    def ppn(self) -> int:
        return self.n_ranks // self.n_nodes

    @property
    def scale(self) -> int:
        """Column of the caps tables: 0 = 1 node, 1 = 2 nodes, 2 = more."""
        return 0 if self.n_nodes == 1 else (1 if self.n_nodes == 2 else 2)


def arch_row(arch: str) -> ArchRow:
    # RCCL on CDNA3 has its own tables; the Ampere row is the closest NCCL analogue (no NVLS).
    return _ARCH_ROWS.get(arch, "ampere")


_ARCH_ROWS: dict[str, ArchRow] = {"volta": "volta", "ampere": "ampere", "hopper": "hopper", "blackwell": "blackwell"}


def _pick_speed(total: float, speeds: tuple[float, ...], min_channels: int = 1,
                limit: int = MAX_CHANNELS) -> tuple[int, float]:
    """Fastest per-channel speed from NCCL's list that fits at least `min_channels` channels
    (at most half the release's MAXCHANNELS, `limit`)."""
    for s in speeds:
        n = int(total // s)
        if n >= min_channels:
            return min(n, limit // 2), float(s)
    return 1, float(speeds[-1])


def _chain_bound(nics: int, nic_speed: float, chain_total: float, speeds: tuple[float, ...]) -> tuple[int, float]:
    """Channels and speed of a ring graph whose intra-node chains cannot feed one channel per NIC at the
    NIC's speed: NCCL's search (``search.cc`` ``ncclTopoCompute``) starts at the fastest listed speed and
    keeps a slower one only for more bandwidth in all (``nChannels x bw``), so at each speed the chains
    carry ``chain_total // speed`` channels (at most one per NIC) and the fastest speed of the largest
    total wins. (Taking every NIC at the fastest speed they all fit gives the same total where the cap of
    channels is the NICs; where MAXCHANNELS lets more NICs in than the chains can feed, as from 2.25 on an
    MNNVL domain, it would trade speed for channels the search does not.)"""
    best = (0.0, 1, nic_speed)
    for s in speeds:
        if s > nic_speed:
            continue
        n = min(nics, int(chain_total // s))
        if n >= 1 and n * s > best[0] + 1e-9:
            best = (n * s, n, float(s))
    return (best[1], best[2]) if best[0] > 0 else (nics, nic_speed)


def graph_from_profile(profile, n_ranks: int, n_nodes: int) -> TunerGraph:
    """Approximate NCCL's ring graph for this communicator from the profile's datasheet numbers.

    Intra-node total = NCCL's nominal per-link NVLink bandwidth × links (topo.h), or the PCIe /
    xGMI figure; across nodes one channel per network device NCCL sees (:func:`net_devices`: the 4 EFA
    devices per H100 of AWS p5 are one device of 4 rails; up to MAXCHANNELS/2 of the profile's release:
    16 up to 2.24, 32 from 2.25, nccl_constants.max_channels) at the fastest listed speed the device
    carries, fewer where the intra-node chains cannot feed them all (:func:`_chain_bound`).
    Channel duplication as in tuning.cc (bwIntra ≥ 25 → 2× channels at half the speed).
    """
    arch = arch_row(profile.gpu.arch)
    su = profile.node.scale_up
    ppn = max(1, n_ranks // max(1, n_nodes))
    row = arch if arch in SPEEDS_INTRA else "ampere"
    limit = max_channels(profile.nccl_version, profile.collective_library)
    if su.kind == "nvswitch":
        intra_total = NVLINK_PER_LINK_BW[arch] * su.links_per_gpu
    elif su.kind == "mesh":
        intra_total = mesh_peer_GBps(profile) * max(1, ppn - 1)
    else:  # pcie / none: NCCL's PCI model width × rate / 80 ≈ 0.75 of the per-direction figure
        intra_total = 0.75 * profile.node.pcie.GBps
    if n_nodes <= 1:
        n_ch, bw = _pick_speed(intra_total, SPEEDS_INTRA[row], limit=limit)
        bw_inter = bw
    else:
        devices, nic_GBps = net_devices(profile)
        # NICs of one NCCL node: the NVLink domain's (all of an MNNVL rack's trays, whose
        # topologies NCCL fuses into one: init.cc "XML topo fusion", MNNVL clique support).
        domain_nics = devices * profile.nodes_per_domain
        nics = max(1, min(domain_nics, limit // 2, reachable_nics(profile, ppn)) if domain_nics else 1)
        bw = next((float(s) for s in SPEEDS_INTER[row] if s <= nic_GBps), SPEEDS_INTER[row][-1])
        n_ch = nics
        # The intra-node chains must feed every NIC. Through a switch all channels share the
        # GPU's total; on a full mesh each channel's chain is its own Hamiltonian path, so the
        # ppn(ppn-1) peer links each carry n_ch/ppn channels (flow_patterns.hamiltonian_paths).
        # Through a switch a ring enters a node at one GPU and leaves at another: ppn - 1 of its
        # ppn GPUs send it on over NVLink, so a GPU's link carries (ppn - 1)/ppn of the channels
        # (search.cc ncclTopoFollowPath charges each GPU-to-GPU hop): 8 x 48 GB/s on 8 x 400 Gb/s
        # H100 nodes (NCCL's "Pattern 4, ..., nChannels 8, bw 48.000000/48.000000" there).
        chain_total = mesh_peer_GBps(profile) * ppn if su.kind == "mesh" else intra_total * ppn / max(1, ppn - 1)
        if n_ch * bw > chain_total and ppn > 1:
            n_ch, bw = _chain_bound(n_ch, bw, chain_total, SPEEDS_INTER[row])
        bw_inter = bw
    tree_bw = tree_bw_intra(bw, n_ch, intra_total, SPEEDS_INTER[row]) if n_nodes == 2 else bw
    if bw >= 25 and not (arch in ("hopper", "blackwell") and bw < 50 and n_ch > 4):
        n_ch, bw, bw_inter, tree_bw = min(2 * n_ch, limit), bw / 2, bw_inter / 2, tree_bw / 2
    nvls_ch = nvls_channel_count(arch, profile.nccl_version, n_nodes)
    # NVLS has its own graph, searched over NVLink only: on several nodes its intra-node rate is
    # not the NIC-bound ring graph's (NCCL search.cc, NCCL_TOPO_PATTERN_NVLS).
    nvls_ch_1node, nvls_bw_1node = _pick_speed(intra_total, SPEEDS_INTRA[row], limit=limit)
    nvls_total = nvls_ch_1node * nvls_bw_1node if su.nvls else None
    p2p, per_peer, chunk = p2p_channels(profile, n_ranks, n_nodes, n_ch, limit)
    split = p2p_split_channels(profile, n_ranks, n_nodes, p2p, per_peer)
    search = nvls_graph(profile, ppn, n_nodes, intra_total) if su.nvls else None
    return TunerGraph(n_ch, bw, bw_inter, nvls_ch, tree_bw, nvls_total, p2p, per_peer, chunk, split,
                      simple_tree_pattern(profile, ppn, n_nodes), search, limit)


def nvls_channel_count(arch: str, version: str | None, n_domains: int) -> int:
    """NCCL's runtime NVLS channels (``nvlsChannels``, nvls.cc ``ncclNvlsInit``; nccl_constants.NVLS_CHANNELS):
    32 on Blackwell, 24 from 2.27.3 when the communicator stays in one node or MNNVL clique
    (``n_domains`` = 1; ``version`` None = the newest release's rule)."""
    one_domain = NVLS_CHANNELS_ONE_DOMAIN.get(arch)
    newer = version is None or version_key(version) >= version_key(NVLS_ONE_DOMAIN_FROM)
    if one_domain is not None and n_domains <= 1 and newer:
        return one_domain
    return NVLS_CHANNELS.get(arch, 0)


def nvls_graph(profile, ppn: int, n_nodes: int, intra_total: float) -> tuple[int, float, float] | None:
    """NCCL's NVLS search graph across nodes: (channels, bwIntra, bwInter) GB/s, which its tuner rates
    NVLS and NVLSTree with (``tuning.cc``: ``graphs[a]->nChannels * bw``), not the runtime
    ``nvlsChannels`` (16 on Hopper) that split the data (NVIDIA/nccl#1041: "Search channels and
    execution channels are not the same ... for NVLSTree, NVLS, or CollnetDirect, they are completely
    decorrelated"). ``search.cc`` (v2.26.2-1): one channel per GPU and its NIC, the heads (line 975,
    ``maxChannels = min(NCCL_MAX_NVLS_ARITY, nGPUs)``); each channel pulls bwIntra from the NVSwitch
    to every GPU and twice to its head (``ncclTopoSearchTryNvls``), so ``(heads + 1) x bwIntra``
    fits the GPU's NVLink; pass 2 raises bwInter while it stays below twice bwIntra and the NIC
    carries it (lines 1112-1115). 8-GPU H100 nodes with 8 x 400 Gb/s NICs: 8 channels, 40 / 48 GB/s
    (NVIDIA/nccl#1197 prints "Pattern 5, crossNic 0, nChannels 8, bw 40.000000/60.000000" for faster
    NICs). None on one node or without exactly one NIC per GPU."""
    if n_nodes <= 1 or profile.node.scale_up.kind != "nvswitch":
        return None
    devices, device_GBps = net_devices(profile)
    if (devices or 0) != profile.node.gpus:
        # one network device per GPU is what the search pairs with a head (AWS p5's four EFA devices per
        # H100 are one device of four rails to NCCL: net_devices); otherwise keep the runtime channels' share
        return None
    row = arch_row(profile.gpu.arch)
    speeds = SPEEDS_INTER[row if row in SPEEDS_INTER else "ampere"]
    heads = min(ppn, NVLS_MAX_ARITY, reachable_nics(profile, ppn))
    if heads < 1:
        return None
    bw_intra = next((float(s) for s in speeds if (heads + 1) * s <= intra_total), float(speeds[-1]))
    nic = device_GBps
    bw_inter = next((float(s) for s in speeds if s <= nic and s < 2 * bw_intra), bw_intra)
    return heads, bw_intra, max(bw_intra, bw_inter)


# The first release whose IB plugin merges the ports of one NIC into one network device.
MERGED_PORTS_FROM = "2.20.3"


def net_devices(profile) -> tuple[int, float]:
    """The network devices NCCL's graph sees on a node: (count, GB/s each).

    A NIC with several ports (``nics.ports``) is one PCI device in NCCL's topology in every
    release ("merge multi-port NICs into one PCI device", ``topo.cc``), but up to 2.19 the IB
    plugin lists each port as its own network device of the port's speed (``net_ib.cc`` of
    v2.19.3-1: one ``ncclIbDevs`` entry per active port), so the graph search gives each port
    its channels at the port's rate. v2.20.3-1 merges a NIC's ports into one device of their summed
    speed (``NCCL_IB_MERGE_NICS``, default 1: ``ncclIbMergedDevs``). Oracle's A100 shapes carry
    8 dual-port ConnectX-6 Dx, 2 x 100 Gb/s each, listed as two ``net`` entries per ``nic`` in the
    topology file their NCCL runs read (oracle-quickstart/oci-hpc-oke
    manifests/topology/BM.GPU.A100-v2.8.xml).

    A plugin that groups the NICs next to each GPU as rails of one device (aws-ofi-nccl's RDMA
    protocol on AWS p5: ``TransportStack.rail_groups``) shows NCCL one device per GPU at the rails'
    summed speed: 8 of 4 x 100 Gb/s on a p5.48xlarge, as its NCCL logs print (costs/transports.py)."""
    nics = profile.node.nics
    ports = nics.ports
    version = profile.nccl_version
    if ports > 1 and version is not None and version_key(version) < version_key(MERGED_PORTS_FROM):
        return nics.count * ports, nics.GBps / ports
    gpus = max(1, profile.node.gpus)
    if nics.count > gpus and nics.count % gpus == 0 and stack_for_profile(profile).rail_groups:
        rails = nics.count // gpus  # one device per GPU, its NICs as rails (transports.py "rail groups")
        return gpus, nics.GBps * rails
    return nics.count, nics.GBps


def reachable_nics(profile, ppn: int) -> int:
    """NICs that a communicator with `ppn` ranks per node can give ring channels: its GPUs' own.

    NCCL builds each node's topology from the communicator's GPUs only (with every NIC of the
    node), and its graph search charges a channel's bandwidth to every link on the GPU-to-NIC path
    (``search.cc`` ``ncclTopoFollowPath``). A NIC that is not the GPU's own is reached through that
    GPU's PCIe link too, so a rank's channels share one PCIe link whichever NICs they pick: one GPU
    per node fills its link with its own NIC (``ncclTopoSelectNets`` lists the GPU's closest NICs
    first), and PXN, which reaches another GPU's NIC over NVLink, needs that GPU in the
    communicator. So a rank drives its own NICs (``nics.count / gpus``, at least one), and the
    graph has ``ppn`` times that many channels before ``ncclTopoDupChannels``. Measured on one
    10-node H100 cluster (data/nccl/h100x{10,20,40}_*_10node_xxrjun_ib_*pernode.csv): 1, 2 and 4
    GPUs per node reach 48.7-49.2 GB/s busbw per GPU on AllReduce, AllGather and ReduceScatter,
    one 400 Gb/s NIC each; 8 channels at 48 GB/s for one GPU would rate a ring 8x that.
    """
    gpus = max(1, profile.node.gpus)
    per_gpu = max(1, net_devices(profile)[0] // gpus)
    return max(1, ppn) * per_gpu


def simple_tree_pattern(profile, ppn: int, n_nodes: int) -> bool:
    """Whether NCCL's tree graph across nodes ends as NCCL_TOPO_PATTERN_TREE.

    ``search.cc`` (``ncclTopoCompute``) searches a BALANCED_TREE first: its first two GPUs each
    carry half the channel to one NIC, so two GPUs must reach that NIC at the path type of the
    current pass, which starts at the closest (PIX). Where no two GPUs share a NIC that closely,
    each pass on a GPU of compute capability >= 9.0 first "tries a simpler tree" (pattern TREE: one
    GPU to and from the NIC) before relaxing the path types, and that is what it finds; one GPU
    per node is a TREE by construction (``ngpus == 1``). Modelled from the profile: one GPU per
    node, or Hopper/Blackwell with a NIC (or more) per GPU, the GPU's own (NVIDIA DGX/HGX H100,
    GH200, GB200 trays, AWS p5). On a shared-NIC node (DGX A100: 2 GPUs per HCA's PCIe switch) or
    before Hopper the balanced tree stands.
    """
    if n_nodes <= 1:
        return False
    if ppn == 1:
        return True
    nics = profile.node.nics
    return arch_row(profile.gpu.arch) in ("hopper", "blackwell") and (nics.count or 0) >= profile.node.gpus


def _pow2_up(n: int) -> int:
    return 1 << max(0, math.ceil(math.log2(max(1, n))))


def p2p_channels(profile, n_ranks: int, n_nodes: int, coll_channels: int,
                 limit: int = MAX_CHANNELS) -> tuple[int, int, int]:
    """NCCL's point-to-point channels of a communicator: (p2pnChannels, p2pnChannelsPerPeer,
    p2pChunkSize).

    ``ncclTopoPostset`` duplicates every ring and tree, so the communicator has twice the graph's
    channels, and p2p may use all of them, rounded up to a power of two. A peer gets two channels
    per NVLink to it (two over PCIe), or over the network one per local NIC and enough at
    ``P2P_PER_CHANNEL_NET_BW`` to fill them (``ncclTopoGetNchannels``); the communicator keeps the
    minimum over its peers, and across nodes halves it until one round of all peers fits the
    channels, 8 operations per channel (``ncclTopoComputeP2pChannels``). The chunk is the NVLink
    one on an all-NVLink node, the network one across nodes (``computeBuffSizes``).
    """
    su = profile.node.scale_up
    arch = arch_row(profile.gpu.arch)
    ppn = max(1, n_ranks // max(1, n_nodes))
    p2p = _pow2_up(min(limit, 2 * coll_channels))
    nvlink = su.kind == "nvswitch" or (su.kind == "mesh" and profile.gpu.arch in NVLINK_PER_LINK_BW)
    peers: list[int] = []
    if ppn > 1:
        if nvlink and su.kind == "nvswitch":
            peers.append(2 * max(1, su.links_per_gpu or 1))
        elif nvlink:
            peers.append(2 * max(1, round(mesh_peer_GBps(profile) / NVLINK_PER_LINK_BW[arch])))
        else:
            peers.append(2)
    if n_nodes > 1:
        devices, device_GBps = net_devices(profile)
        local = max(1, (devices or 1) // profile.node.gpus)
        peers.append(max(local, math.ceil(local * device_GBps / P2P_PER_CHANNEL_NET_GBPS)))
    per_peer = _pow2_up(min(peers)) if peers else 1
    if n_nodes > 1:
        while per_peer * math.ceil(n_ranks / P2P_PER_BATCH) > p2p and per_peer > 1:
            per_peer //= 2
        chunk = P2P_NET_CHUNK_BYTES * (2 if profile.node.cpu_vendor == "arm" and arch == "blackwell" else 1)
    else:
        per_peer = min(p2p, per_peer)
        chunk = P2P_NVL_CHUNK_BYTES if nvlink else P2P_PCI_CHUNK_BYTES
    return p2p, per_peer, chunk


# Releases whose p2p channel rules differ from the newest's (p2p_split_channels): NCCL_NCHANNELS_PER_NET_PEER
# defaults to 2 up to 2.19 and to -1 (derived) from 2.20 (src/graph/paths.cc v2.19.3-1 line 669, v2.20.5-1
# line 687), and scheduleP2pTasksToPlan halves nChannelsMin across nodes too from 2.20 (v2.18.5-1: one node only).
# The derived rule (two per net peer, halved while 2 x nRanks > 4 x p2pnChannels, at least the NICs the GPU
# needs) stands unchanged through v2.28.9-1 (paths.cc lines 836-851); v2.29.2-1 replaces it with one channel
# per NIC and enough at NCCL_P2P_PER_CHANNEL_NET_BW (14 GB/s) to fill them (paths.cc lines 823-853) and only
# then halves p2pnChannelsPerPeer while a round of ceil(nRanks / NCCL_MAX_DEV_WORK_P2P_PER_BATCH) peers
# overflows p2pnChannels (ncclTopoComputeP2pChannels; v2.28.9-1 keeps min(perPeer, p2pnChannels)).
P2P_DERIVED_NET_PEER_FROM = (2, 20, 0)
P2P_PER_BATCH_FROM = (2, 29, 0)  # the per-peer channels p2p_channels models
def p2p_split_channels(profile, n_ranks: int, n_nodes: int, p2p: int, per_peer: int) -> tuple[int, int]:
    """(nChannelsMin, nChannelsMax) of ``scheduleP2pTasksToPlan`` across nodes in the profile's NCCL
    release: what one send to a peer on another node is split over (net_messages.p2p_parts).

    ``nChannelsMax`` is ``p2pnChannelsPerPeer``: the least of ``p2pnChannels`` and every peer's
    channels, rounded up to a power of two (``ncclTopoComputeP2pChannels``). A local peer has two or
    more (NVLink, PCI), so across nodes the network peer's count binds: up to 2.19
    ``NCCL_NCHANNELS_PER_NET_PEER`` (2); from 2.20 to 2.28 two, halved while ``2 x nRanks`` exceeds four
    operations per p2p channel, but at least the GPU's local NICs (``src/graph/paths.cc`` v2.21.5-1
    lines 714-726, v2.28.9-1 lines 836-851); from 2.29 :func:`p2p_channels`'. ``nChannelsMin`` starts there and, from 2.20 (on
    one node only before), halves while one round of all ranks overflows ``p2pnChannels``
    (``src/enqueue.cc`` v2.21.5-1 line 904; v2.18.5-1 lines 631-637). On one node: (per_peer, per_peer)."""
    if n_nodes <= 1:
        return per_peer, per_peer
    version = profile.nccl_version
    rel = (99, 0, 0) if version is None else version_key(version)
    n_max = per_peer
    if rel < P2P_PER_BATCH_FROM:
        net = 2
        if rel >= P2P_DERIVED_NET_PEER_FROM:
            devices, _ = net_devices(profile)
            while net * n_ranks > p2p * 4 and net > 1:
                net //= 2
            net = max(max(1, (devices or 1) // profile.node.gpus), net)
        n_max = _pow2_up(min(p2p, net))
    n_min = p2p_channels_min(n_max, n_ranks, p2p) if rel >= P2P_DERIVED_NET_PEER_FROM else n_max
    return n_min, n_max


def p2p_channels_min(per_peer: int, n_ranks: int, p2p: int) -> int:
    """``nChannelsMin`` of ``scheduleP2pTasksToPlan``: ``per_peer`` channels, halved while one round
    of all ranks (``per_peer x nRanks``) overflows the ``p2p`` channels (``src/enqueue.cc`` v2.21.5-1
    line 904), at least one."""
    n_min = per_peer
    while n_min * n_ranks > p2p and n_min > 1:
        n_min //= 2
    return n_min


def tree_bw_intra(bw_inter: float, n_ch: int, intra_total: float, speeds: tuple[float, ...]) -> float:
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


def mesh_peer_GBps(profile) -> float:
    """Per-direction bandwidth NCCL/RCCL's topology assigns to one GPU pair of a full mesh.

    NVLink: NCCL's nominal per-link bandwidth (topo.h, 20.6 GB/s on SM90) × the links to that
    peer (links_per_gpu spread evenly over the other GPUs: 18 / 3 = 6 on a 4-GH200 node). xGMI
    (CDNA3, CDNA4): RCCL ``topo.h`` ``GFX94X_XGMI_WIDTH`` / ``GFX95X_XGMI_WIDTH`` = 48 GB/s per link,
    one link per peer on MI300X and MI355X.
    Other architectures: the profile's datasheet figure.
    """
    su, gpu = profile.node.scale_up, profile.gpu
    peers = max(1, profile.node.gpus - 1)
    if gpu.arch in NVLINK_PER_LINK_BW and su.links_per_gpu:
        return NVLINK_PER_LINK_BW[gpu.arch] * max(1, su.links_per_gpu // peers)
    if gpu.arch in ("cdna3", "cdna4"):
        return XGMI_WIDTH_CDNA3_GBPS * max(1, su.links_per_gpu // peers)
    return su.link_GBps


def context_from_profile(profile, n_ranks: int, n_nodes: int, scope: str | None = None) -> TunerContext:
    """Build the tuner's view of a communicator of `n_ranks` GPUs spread over `n_nodes` nodes,
    for the patterns of ``scope`` (``coll``: ring/tree/NVLS, ``p2p``: All-to-All and sends;
    None: the profile's unscoped ``nccl:`` keys only)."""
    # Every profile starts from its transport's deployed-fabric constants (costs/deployed.py);
    # its own nccl: values for this pattern scope (calibrated) refine them key by key.
    # An AMD profile's nccl.version names the RCCL release: its own tuner's tables (costs/rccl_tuner.py)
    # choose, and the time keeps the newest NCCL tables, as for an RCCL profile that names none.
    rccl = profile.collective_library == "rccl"
    constants = constants_from_overrides(scoped(profile.nccl_overrides, scope), source=f"profile {profile.name}",
                                         version=None if rccl else profile.nccl_version,
                                         under=deployed_overrides(profile))
    # The transport's plugin and environment (costs/transports.py): what NCCL is told, not fitted.
    stack = stack_for_profile(profile)
    if stack.reported_latency_us:
        constants = replace(constants, reported_net_latency_us=stack.reported_latency_us)
    if constants.nvlink_hop_extra_us is None:  # the GPU generation's NVLink crossing (nccl_constants)
        constants = replace(constants, nvlink_hop_extra_us=NVLINK_HOP_EXTRA_US.get(arch_row(profile.gpu.arch), 0.0))
    g = graph_from_profile(profile, n_ranks, n_nodes)
    g = replace(
        g,
        n_channels=constants.n_channels or g.n_channels,
        bw_intra_GBps=constants.bw_intra_GBps or g.bw_intra_GBps,
        bw_inter_GBps=constants.bw_inter_GBps or g.bw_inter_GBps,
        nvls_channels=constants.nvls_channels or g.nvls_channels,
        tree_bw_intra_GBps=constants.bw_intra_GBps or g.tree_bw_intra_GBps,
    )
    kind = profile.node.scale_up.kind
    release = version_key(constants.nccl_version)
    return TunerContext(
        arch=arch_row(profile.gpu.arch),
        n_ranks=n_ranks,
        n_nodes=n_nodes,
        intra_link="nvlink" if kind in ("nvswitch", "mesh") else "pci",
        cpu_vendor=profile.node.cpu_vendor,
        nvls_supported=profile.nvls_available,
        graph=g,
        constants=constants,
        stack=stack,
        library=profile.collective_library,
        rccl_release=profile.nccl_version if rccl else None,
        gpu_arch=profile.gpu.arch,
        # as the release types it (a Grace superchip's C2C path is PHB before 2.27: config/gdr.py)
        net_path=nccl_path_type(profile.node.nics.gpu_path, release),
        # the rings' and trees' GPUs (at nics.gpu_path from their NICs) run GPUDirect per NCCL's rule
        gdr_flush=net_messages.gdr_flush(profile.gpu.arch, release,
                                         uses_gdr(profile.node.nics.gpu_path, profile.node.nics.gdr_level,
                                                  gpu_direct=profile.node.nics.gpu_direct, release=release)),
        gdr_send=uses_gdr(profile.node.nics.gpu_path, profile.node.nics.gdr_level, read=True,
                          gpu_direct=profile.node.nics.gpu_direct, release=release),
        tuner_plugin=None if rccl else profile.nccl_tuner_plugin,
    )

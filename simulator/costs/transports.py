"""What each scale-out transport's deployed software stack tells NCCL, before any data is fitted.

A transport is not only a wire: NCCL reaches the NIC through a net plugin, and the plugin (or the
environment its vendor ships with it) decides part of what NCCL's tuner may choose:

* ``reported_latency_us``: the plugin's ``ncclNetProperties_t.latency``. NCCL adds it to every
  inter-node hop of its own cost model (``graph->latencyInter``, twice for Simple: the flush;
  ``src/graph/tuning.cc``), so it moves NCCL's *choice* of algorithm and protocol. It is a
  tuning figure the plugin hard-codes, not a measured hop time, so it changes no time here: the
  time of a hop is the tuner's table plus the deployed constants of
  :mod:`simulator.costs.deployed`.
* ``protocols`` / ``algorithms`` / ``nvls``: ``NCCL_PROTO``, ``NCCL_ALGO`` and
  ``NCCL_NVLS_ENABLE`` as the plugin sets them at init or its vendor's environment profile
  requires them. They apply to every communicator of the process (NCCL reads them once).

Sources, per transport:

* ``tcpxo`` (Google Cloud A3 Mega, GPUDirect-TCPXO): the plugin reports ``latency = 0``
  (google/nccl-plugin-gpudirect-tcpxo ``tcpdirect_plugin/fastrak_offload/nccl_shim.cc``); its
  environment profile, enforced by the plugin's guest config checker, sets ``NCCL_ALGO=Ring,Tree``,
  ``NCCL_PROTO=Simple`` and ``NCCL_NVLS_ENABLE=0`` in every release from May 2024 to Feb 2025
  (GoogleCloudPlatform/container-engine-accelerators ``gpudirect-tcpxo/README.md``; NCCL 2.21.5;
  still the ``nccl-env-profile-simple.sh`` of the plugin today). LL needs the receiver to see
  8-byte flag+data stores land in order, which data staged through the TCP receive path's
  bounce buffers does not give; LL128 and NVLSTree became defaults only in 2025 (plugin v1.0.9
  and v1.0.12). So a TCPXO call pays Simple's latency even at 8 bytes: NCCL 2.21.5's Ring/Simple
  on 2 x 8 H100 is ~130 us, the ~123 us floor the A3 Mega sweep shows.
* ``efa`` (AWS, aws-ofi-nccl): ``src/platform-aws.c`` of aws-ofi-nccl v1.9.2-aws (the release of
  the bundled p5 sweep, data/nccl/h100x16_allreduce_2node_awsp5_efa.csv, whose log prints "NET/OFI
  Internode latency set at 75.0 us") reports ``latency = 75.0`` us on p4d/p4de/p5 (150 on
  instance types it does not list, "for historical reasons"); on p5 with the RDMA protocol it
  skips the check that would force ``NCCL_PROTO=simple``, so LL and LL128 stay enabled, and it
  leaves NVLS on for NCCL >= 2.18.5. NCCL's estimate of a Tree over two p5 nodes thus counts
  75 us more per hop (150 for Simple), which keeps Tree/LL128 up to 64 MiB where NCCL's own
  constants would switch to NVLSTree at 8 MiB: what the sweep shows.
  Which of the plugin's two protocols runs depends on the instance (``src/nccl_ofi_net.c`` of
  v1.8.1-aws, the release of the bundled p4de sweep's container): RDMA when the process sees fewer
  GPUs than EFA devices (p5: 8 GPUs, 32 devices), else SENDRECV (p4d/p4de: 8 GPUs, 4 devices). With
  SENDRECV the plugin asks the EFA endpoint for in-order aligned 128-byte delivery, which EFA does
  not give, and sets ``NCCL_PROTO=simple`` (``platform-aws.c`` ``configure_nccl_proto``; logs print
  "Setting FI_OPT_EFA_SENDRECV_IN_ORDER_ALIGNED_128_BYTES not supported. Setting NCCL_PROTO to
  simple"). So a p4de call pays Simple's latency at every size: NCCL 2.20's Tree/Simple over two
  p4de nodes, the ~161 us floor of data/nccl/a100x16_allreduce_2node_awsp4de_efa.csv, where LL's
  would be ~105 us.
* ``efa`` under NCCL <= 2.11 (the bundled p4d sweep of Feb 2021,
  data/nccl/a100x16_allreduce_2node_awsp4d_nccl283_efa_ringalgo.csv, NCCL 2.8.3): NCCL's net API
  of those releases (``ncclNetProperties_v4_t``, ``src/include/nccl_net.h`` v2.8.4-1 to v2.11.4-1)
  has no latency field, so no plugin latency reaches the tuner; ``float latency`` appears in
  v2.12.7-1. The plugin of that time (aws/aws-ofi-nccl, ``aws`` branch at d733e02, 2021-02-22,
  v1.1.1 + 3) has one protocol, ``fi_tsend`` tagged sends on an ``FI_EP_RDM`` endpoint (the
  provider's host-side message protocols, as SENDRECV later), and sets only ``NCCL_TOPO_FILE``
  and ``RDMAV_FORK_SAFE``: ``NCCL_PROTO=simple`` is set from f62e405 (2023-01-25, "Configure
  NCCL and Libfabric for AWS during init"), a reported latency from d087749 (2022-01-24). So a
  NCCL <= 2.11 run on EFA keeps LL and LL128 and pays the per-message host cost.
  That cost is paid in the sending rank's own process (the provider's progress runs in the proxy
  thread that posts the send), so the messages that queue behind each other are those of the
  channels crossing the node boundary at that rank (``messages_per_crossing_rank``;
  ``collectives.channels_per_crossing_rank``). The run's log (aws-samples/aws-efa-eks README at
  1a3c504) shows where they cross: 8 channels, rings 0-3 leaving each node at four different GPUs
  through four EFA devices (1->8 and 9->0 via NET/0, 3->10 via NET/1, 5->12 via NET/2, 7->14 via
  NET/3), channels 4-7 repeating them; NCCL 2.8 has no PXN (2.12) to route one GPU's sends
  through another's NIC. So a crossing rank serves one channel's messages up to 4 launched
  channels and two from 5: its Ring/LL rows at 64, 128 and 256 KiB, which launch 1, 2 and 4
  channels, take 274, 294 and 305 us, where a chain over every launched channel (Slingshot's
  measured count) would grow 4x, and its Ring/LL128 rows at 0.5-1 MiB (8 launched) queue two
  channels' messages, 60 per call. (A Simple ring's count, taken over the graph's channels, already
  is a crossing rank's: each graph channel carries the data of its two launched ones.)
  The EFA provider of that time (libfabric v1.11.1-v1.13.2, ``prov/efa/src/rxr/rxr_msg.c``
  ``rxr_msg_post_cuda_rtm``: "Currently cuda data must be sent using read message protocol"; the
  EFA installer of Feb 2021 ships 1.11) sends every message from GPU memory, whatever its size,
  with its read message protocol: the sender posts an RTM packet, the receiver's progress matches
  it and issues the RDMA read of the payload (``rxr_read.c`` ``rxr_read_post``), then sends an EOR
  packet back, on which the send completes. Under GPUDirect RDMA (the log's "GDRDMA" on every
  network channel) NCCL 2.8 places the LL128 and Simple buffers of a network connection in GPU
  memory and LL's send buffer in host memory (``src/transport/net.cc`` v2.8.3-1 ``netSendSetup``,
  ``protoLoc``), and its proxy sends an LL128 step only once the GPU has written all of it
  (``netSendProxy`` waits for the tail the LL128 primitives bump per step). So an LL128 message's
  payload moves inside its host round, as under CXI's alt_read (``payload_in_host_round``: the
  chain adds to the bytes, ``collectives.messages_overlap``), and LL's (host memory, at most
  64 KiB: the provider's eager and medium protocols) keeps the overlapped chain. Measured: the
  Ring/LL128 rows from 2 to 32 MiB take ~400-490 us plus 76-85 us per MiB, the chain of 60
  messages (480 us at 8 us) plus the bytes, where an overlapped chain would leave the bytes alone
  (+37% to +110% at 2-32 MiB; -17% to +46% with the chain added). Their byte rate, ~24 GB/s busbw (6.2 GB/s of
  LL128 lines per EFA device, 0.62 of what the Ring/Simple rows from 128 MiB carry per device), and
  the 0.5-1 MiB rows (410 and 484 us, under the 60 messages plus their bytes) are not explained by
  a source here.
* ``rail_groups`` (``efa`` with the RDMA protocol): aws-ofi-nccl groups the EFA devices nearest each
  GPU into one network device whose rails they are, and reports its speed as the first rail's times the
  rails (``nccl_ofi_rdma.c`` ``get_properties``: "Scale speed by the total number of rails", from
  v1.7.0-aws; ``props->port_speed *= plugin->topo->max_group_size`` in v1.16.3). NCCL's graph search
  thus sees 8 devices of 4 x 100 Gb/s on a p5.48xlarge, not 32 of 100 Gb/s. The bundled p5 log
  (KeitaW/p5-nccl-test-2024-07-19 ``nccl-test-output-v2.22.3-1.log``, NCCL 2.22.3, aws-ofi-nccl
  1.9.2-aws) shows it: "NIC group 0 device #0..#3" for each of 8 groups, every network connection via
  ``NET/AWS Libfabric/0`` .. ``/7``, 8 rings (channels 8-15 repeat 0-7) and "16 coll channels, ... 16
  p2p channels, 2 p2p channels per peer" on every rank (``nccl_graph.net_devices``).
* ``host_messages`` / ``buff_bytes``: whether the transport's message protocol runs in host
  software, so that every network message of a call costs a fixed time beyond its bytes
  (:mod:`simulator.costs.net_messages`; the time is the deployed ``net_message_us``), and the
  ``NCCL_BUFFSIZE`` its required environment sets, which sizes those messages. aws-ofi-nccl's
  SENDRECV protocol sends each NCCL message as a libfabric tagged send on the EFA RDM endpoint,
  whose message protocols (eager, runting and long read for GPU buffers: the RTM, the receiver's
  RDMA read, the EOR back) are implemented by the provider on the host over EFA's SRD datagrams
  (libfabric ``prov/efa``, "EFA RDM Communication Protocol"); its RDMA protocol (p5) instead
  writes each message with one ``fi_write``. GPUDirect-TCPXO moves every message as TCP segments
  of an offloaded flow that the receiving NCCL kernel unpacks from bounce-buffer pages (the plugin
  reports ``netDeviceType`` HOST with ``NCCL_NET_DEVICE_UNPACK_VERSION``, ``maxRecvs = 1``;
  ``nccl_shim.cc``). TCPXO's environment requires ``NCCL_BUFFSIZE=8388608``
  (``nccl-env-profile*.sh``), so its Tree/Simple chunk is 1 MiB from NCCL 2.20
  (costs/net_messages.py). aws-ofi-nccl sets no buffer size: the EFA stack keeps NCCL's default
  4 MiB (the bundled p4de sweep predates the sbatch that added ``NCCL_BUFFSIZE=8388608``:
  data/nccl/a100x16_allreduce_2node_awsp4de_efa.csv header). NCCL's IB verbs transport
  posts one RDMA write per message from the proxy, whose per-message cost the deployed hop
  extra already covers.
* ``slingshot`` with the CXI provider's ``alt_read`` rendezvous (``FI_CXI_RDZV_PROTO=alt_read``,
  profile ``node.nics.rdzv_proto``; ALCF's recommended setup on Polaris and Sirius, with
  ``FI_CXI_RX_MATCH_MODE=software``): aws-ofi-nccl sends each NCCL message as a tagged send; above
  ``FI_CXI_RDZV_THRESHOLD + FI_CXI_RDZV_GET_MIN`` (2048 + 2049 bytes by default in the 2024 releases
  these systems ran: libfabric ``prov/cxi/include/cxip.h`` ``CXIP_RDZV_THRESHOLD``, ``cxip_info.c``;
  16384 + 2049 since commit c4a6ff3 of June 2025) the CXI provider runs its rendezvous protocol, in
  which NCCL's Simple messages (1 MiB ring slices, 32-128 KiB p2p chunks) always fall, and the target
  pulls the payload with a Get. Matched in software, that Get is issued by the provider's progress
  on the receiver's host, and with ``alt_read`` it is a *restricted* Get whose completion the
  target announces with a zero-byte done-notify message back to the source, the send completing
  only then (``cxip_msg_hpc.c``: ``cxip_rdzv_done_notify``, "used when restricted get DMA
  (CXIP_RDZV_PROTO_ALT_READ) is used to transfer non-eager data"). Each NCCL message thus costs
  host-software rounds at both ends beyond its bytes: ``host_messages`` (a Simple receive into an A100
  is flushed besides, one more read through the NIC: ``net_messages.gdr_flush``). The default protocol
  (CSCS Alps) has no done-notify, and its 2-512 node sweeps show no such cost (their Simple rings
  reach 0.92 of the NICs' line rate at 4 GiB, where ~2,000 messages per channel would each show).
* ``eager_max_bytes`` (``slingshot``, either rendezvous protocol): libfabric's CXI provider sends a
  message of at most ``FI_CXI_RDZV_THRESHOLD + FI_CXI_RDZV_GET_MIN`` bytes (2048 + 2049 in the
  releases these sweeps ran) eagerly into the target's request buffers, and a larger one by
  rendezvous (the target's Get of the payload, software-issued with ``FI_CXI_RX_MATCH_MODE=software``,
  the setting of both Alps and Polaris). The deployed per-hop extra of Slingshot
  (:mod:`simulator.costs.deployed`) is that rendezvous, so a ring or tree call whose network messages
  (a channel's share of one step, times the protocol's wire factor: ``net_messages.coll_message_bytes``)
  stay within the eager limit does not pay it: NCCL's own Tree/LL estimate is the measured floor of
  2-512 GH200 nodes from 8 B to 2 KiB (18.3 us measured, 20.4 estimated, on 2 nodes), and each hop
  costs ~15-35 us more from 8 KiB on (data/nccl/gh200x*_alps_slingshot.csv). An All-to-All's or
  SendRecv's rendezvous to different peers overlap, so they pay none per peer; what is serial
  there is the proxy's host cost per message (``host_messages``).
  With ``alt_read`` the host cost per message covers LL's and LL128's messages too (one per step
  slot and launched channel, ``net_messages.ll_messages_per_channel``, ``nccl_tuner.launched_channels``):
  a Ring/LL AllGather on Polaris takes ~7.9 us per ring step and launched channel at 8, 256 and 540
  nodes, whatever share of the steps crosses the network, and the same whether a step's message
  (up to 64 KiB of LL lines) is below or above the eager limit: a Ring/LL call's messages pay that
  host cost and no rendezvous round besides (``collectives.messages_overlap``).
* ``inject_max_bytes`` (``slingshot``, either rendezvous protocol): the CXI provider sends a message
  of 1 to ``CXIP_INJECT_SIZE`` bytes as an IDC (immediate data command: the payload written into the
  command queue by the host) rather than as a DMA the NIC reads from the buffer: ``_cxip_send_req``
  (libfabric ``prov/cxi/src/cxip_msg_hpc.c``; ``cxip_msg.c`` at the provider's upstreaming, fd950a5a3,
  Jan 2024) takes the IDC path where ``cxip_send_eager_idc`` holds (``len <= CXIP_INJECT_SIZE`` and
  ``FI_CXI_DISABLE_NON_INJECT_MSG_IDC`` unset, its default), a zero-byte send the eager DMA path.
  ``CXIP_INJECT_SIZE`` is ``C_MAX_IDC_PAYLOAD_UNR`` (``prov/cxi/include/cxip.h``), 192 bytes
  (HewlettPackard/shs-cassini-headers ``include/cassini_user_defs.h``). With ``FI_HMEM`` (GPU buffers, as
  aws-ofi-nccl opens the endpoint) ``cxip_send_buf_init`` first copies the payload out of the buffer
  into a host bounce buffer (``cxip_txc_copy_from_hmem``: "a bounce buffer is needed if FI_HMEM is being
  used"): from GPU memory a CUDA copy (or a CPU read through a device mapping), made by the sending
  proxy's thread before the command is written, where a larger eager or rendezvous send only
  registers the buffer (MR cache) and lets the NIC read it. NCCL's network p2p runs Simple
  (``net_messages``: no LL buffers for it) from GPU memory wherever GPUDirect RDMA serves the send
  (``src/transport/net.cc`` v2.18.5-1 ``sendProxySetup``: the shared p2p Simple buffer is GPU memory
  under GPUDirect, line 624), so every send of 1-192 bytes to a peer on another node pays that copy on
  top of its message (``collectives.p2p_inject_copies``; the copy's time is the deployed
  ``net_inject_copy_us``). LL's network sends come from a host-memory buffer (line 607: LL's send
  buffer is never GPUDirect), whose copy is a ``memcpy``, and a Simple ring's or tree's messages are
  far above 192 bytes. (The code cited is the upstream provider's; the HPE build the sweeps ran,
  libfabric 1.15.2.0, predates its upstreaming and is not public, and the step below confirms the
  same path.) Measured on Polaris and Sirius (A100, NCCL 2.18 and 2.21.5, libfabric
  1.15.2.0): an All-to-All costs 21-23 us per remote peer with at most 128 bytes a peer and 9.4-10.2 us
  with 240 bytes or more, the step between 128 and 240 bytes a peer at every scale (8, 32, 1,024 and
  2,160 ranks: 1,024 ranks take 23.4 ms at 128 KiB and 10.4 ms at 256 KiB), and zero bytes cost the
  least (data/nccl/a100x*_alltoall_*_{polaris,sirius*}_slingshot.csv).
* ``infiniband``, ``roce`` (NCCL's own IB verbs transport, ``net_ib.cc``: latency 0),
  ``slingshot`` with the default rendezvous (aws-ofi-nccl over the libfabric CXI provider: the
  AWS platform file is not built, so the reported latency stays 0), ``omnipath``: NCCL's defaults.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.config.nccl_overrides import ALGOS, PROTOS
from simulator.costs.net_messages import DEFAULT_BUFF_BYTES


@dataclass(frozen=True)
class TransportStack:
    """What a transport's net plugin and its required environment tell NCCL."""

    reported_latency_us: float = 0.0  # ncclNetProperties_t.latency: NCCL's choice only
    protocols: tuple[str, ...] = PROTOS  # NCCL_PROTO
    algorithms: tuple[str, ...] = ALGOS  # NCCL_ALGO
    nvls: bool = True  # NCCL_NVLS_ENABLE
    host_messages: bool = False  # each network message costs a fixed time (costs/net_messages.py)
    buff_bytes: int = DEFAULT_BUFF_BYTES  # NCCL_BUFFSIZE
    # The largest message the provider sends eagerly (0: no such limit modelled): the deployed
    # per-hop extra is the cost of the rendezvous above it (libfabric CXI; module docstring).
    eager_max_bytes: int = 0
    # Each message's payload moves inside its host round (a software-issued Get: CXI alt_read; the
    # EFA read message protocol of libfabric <= 1.13 for GPU memory), so a pipelined Tree/Simple call's
    # and a Ring/LL128 call's per-message time adds to their bytes (collectives.messages_overlap)
    payload_in_host_round: bool = False
    # The rank's proxy serves the messages of the channels whose network sends are its own, not
    # every launched channel's: a ring's host messages count per channel of one crossing rank
    # (collectives.channels_per_crossing_rank; module docstring, "NCCL <= 2.11 on EFA").
    messages_per_crossing_rank: bool = False
    # The largest send the provider injects (its payload copied by the host into the command: a
    # copy out of GPU memory for NCCL's Simple p2p sends; module docstring); 0: none modelled.
    inject_max_bytes: int = 0
    # The plugin shows NCCL one network device per GPU, the NICs next to it as rails of that device,
    # at their summed speed (aws-ofi-nccl's RDMA protocol; module docstring, "rail groups"), not
    # each NIC as a device of its own: NCCL's graph search gives that GPU's channels one device.
    rail_groups: bool = False
    source: str = "NCCL's defaults (the plugin reports no latency and sets nothing)"

    def allows(self, algo: str, proto: str) -> bool:
        if algo in ("nvls", "nvls_tree") and not self.nvls:
            return False
        return algo in self.algorithms and proto in self.protocols


DEFAULT = TransportStack()

# libfabric CXI's eager limit: FI_CXI_RDZV_THRESHOLD + FI_CXI_RDZV_GET_MIN (module docstring).
CXI_EAGER_MAX_BYTES = 2048 + 2049
# libfabric CXI's inject size: CXIP_INJECT_SIZE = C_MAX_IDC_PAYLOAD_UNR (module docstring).
CXI_INJECT_MAX_BYTES = 192

STACKS: dict[str, TransportStack] = {
    "slingshot": TransportStack(
        eager_max_bytes=CXI_EAGER_MAX_BYTES, inject_max_bytes=CXI_INJECT_MAX_BYTES,
        source="aws-ofi-nccl over libfabric CXI: reports latency 0 and sets nothing; messages above the provider's "
               "eager limit run its rendezvous (prov/cxi)"),

    "efa": TransportStack(
        reported_latency_us=75.0, rail_groups=True,
        source="aws-ofi-nccl v1.9.2-aws src/platform-aws.c: p5.48xlarge latency 75.0 us, RDMA protocol, "
               "NCCL_PROTO left unset on p5; src/nccl_ofi_rdma.c: one device per GPU of its EFA rails, "
               "port_speed x num_rails"),
    "tcpxo": TransportStack(
        protocols=("simple",), algorithms=("ring", "tree"), nvls=False, host_messages=True, buff_bytes=8 << 20,
        source="container-engine-accelerators gpudirect-tcpxo/README.md (May 2024-Feb 2025 releases) and "
               "nccl-plugin-gpudirect-tcpxo nccl-env-profile-simple.sh: NCCL_ALGO=Ring,Tree, NCCL_PROTO=Simple, "
               "NCCL_NVLS_ENABLE=0; nccl_shim.cc reports latency 0"),
}


# aws-ofi-nccl's SENDRECV protocol (fewer EFA devices than GPUs): Simple only (module docstring).
EFA_SENDRECV = TransportStack(
    reported_latency_us=75.0, protocols=("simple",), host_messages=True,
    source="aws-ofi-nccl v1.8.1-aws src/nccl_ofi_net.c (SENDRECV unless GPUs < EFA devices) and "
           "src/platform-aws.c configure_nccl_proto: no in-order 128-byte delivery, NCCL_PROTO=simple; "
           "latency 75.0 us on p4d/p4de")


# aws-ofi-nccl as it ran under NCCL <= 2.11 (module docstring, "NCCL <= 2.11 on EFA"): tagged sends on the
# RDM endpoint (a host cost per message, as SENDRECV), no NCCL_PROTO set, no latency NCCL could read.
EFA_NET_V4 = TransportStack(
    host_messages=True, messages_per_crossing_rank=True, payload_in_host_round=True,
    source="aws-ofi-nccl aws branch of Feb 2021 (d733e02, v1.1.1+): fi_tsend on FI_EP_RDM, sets only NCCL_TOPO_FILE "
           "and RDMAV_FORK_SAFE; NCCL v2.8.4-1-v2.11.4-1 nccl_net.h: ncclNetProperties_v4_t has no latency field; "
           "libfabric v1.11.1 prov/efa rxr_msg.c: GPU-memory messages by the read message protocol")

# The first NCCL release whose net API carries a plugin-reported latency (nccl_net.h v2.12.7-1).
NET_LATENCY_SINCE = "2.12"


# Slingshot with FI_CXI_RDZV_PROTO=alt_read: a host cost per network message (module docstring).
SLINGSHOT_ALT_READ = TransportStack(
    host_messages=True, eager_max_bytes=CXI_EAGER_MAX_BYTES, payload_in_host_round=True,
    inject_max_bytes=CXI_INJECT_MAX_BYTES,
    source="libfabric prov/cxi cxip_msg_hpc.c: alt_read rendezvous, a software-issued restricted Get per message "
           "and a done-notify back to the source (FI_CXI_RDZV_PROTO=alt_read, FI_CXI_RX_MATCH_MODE=software)")


def stack_for(transport: str) -> TransportStack:
    """The deployed software stack of a scale-out transport (NCCL's defaults when none is known)."""
    return STACKS.get(transport, DEFAULT)


def stack_for_profile(profile) -> TransportStack:
    """The stack of the profile's transport on its nodes: on EFA, the plugin's protocol follows
    the ratio of GPUs to EFA devices; on Slingshot, the CXI provider's rendezvous protocol
    (module docstring)."""
    nics = profile.node.nics
    if nics.transport == "efa" and STACKS.get("efa") is not None and _before_net_latency(profile.nccl_version):
        return EFA_NET_V4
    if nics.transport == "efa" and STACKS.get("efa") is not None and nics.count <= profile.node.gpus:
        return EFA_SENDRECV
    if nics.transport == "slingshot" and nics.rdzv_proto == "alt_read":
        return SLINGSHOT_ALT_READ
    return stack_for(nics.transport)


def _before_net_latency(version: str | None) -> bool:
    """Whether NCCL release ``version`` predates the net API that carries a plugin's latency
    (None: the newest encoded release, which does not)."""
    from simulator.config.nccl_overrides import version_key

    return version is not None and version_key(version) < version_key(NET_LATENCY_SINCE)

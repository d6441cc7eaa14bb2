"""What NCCL delivers over each scale-out transport on deployed clusters, beyond the datasheet.

NCCL's tuner constants describe a well-tuned fabric: ``hwLat[NET]`` per hop and the protocols'
full rates. Measured nccl-tests sweeps of deployed clusters (data/nccl/) run slower than that
between the latency floor and the bandwidth plateau, and by how much depends on the transport
(the software path of verbs, libfabric/CXI, SRD, TCPXO), not on the GPU. Two time-only
constants per transport capture it, both known to the model already as calibration knobs
(:class:`~simulator.costs.nccl_constants.TunerConstants`):

* ``net_hop_extra_us``: added per network crossing of a call's critical path: a tree's hops
  across nodes, and a ring's crossings of the chain one chunk runs through
  (:func:`~simulator.costs.nccl_tuner.ring_net_crossings`: ``2 x nodes`` for an AllReduce on
  nodes of 3+ ranks, where NCCL's tuner counts ``2(nodes - 1)`` inter-node steps). Paid per
  tuner step, the 2-node rings (whose chains cross twice as often as NCCL counts) held the
  fitted extra at 15-30 us, pricing every 2-node tree/LL floor at ~1.5-4x the measured one
  (oci-a100: 65 us predicted, 37 measured); per crossing RoCE's is 7 us and InfiniBand's 3;
  held out, 6 fewer of the issue's targets are missed (docs/validation-collectives.md);
* ``net_ll_channel_GBps.<ring|tree>``: what one channel of LL carries across nodes (GB/s of
  payload): LL lines bound for the network are stored by the channel's CTA into a host-memory
  buffer and scanned by the proxy line by line before the send is posted (``net.cc``; the
  constant's comment in :class:`~simulator.costs.nccl_constants.TunerConstants`), a path whose
  rate per channel does not scale with the links NCCL rates LL from. Measured, one A100 per node
  (Ring/LL) and eight per node (Tree/LL) run at 0.6-1.1 GB/s per graph channel where NCCL's rates
  differ 4-8x (tests/unit/test_net_ll_channel.py); as a fraction of NCCL's rate
  (``proto_efficiency.net.<ring|tree>.ll``, what this replaced) the one-GPU-per-node system set
  InfiniBand's at x 0.125-0.25, which priced the eight-GPU system's Tree/LL at 1.5-2x its measured
  time held out (sophia-a100: 24.0% over all sizes, 22.2% with the rate). Since the fit keeps NCCL's
  own value wherever a departure buys less than a point of its objective
  (:func:`simulator.calibration.deployed_fit.parsimonious`), no row fitted on every system sets a
  rate: with the other constants fitted, no transport's systems gain a point from one
  (2026-12-02); held out, xe9680-h100's InfiniBand row keeps 0.35 GB/s per tree channel;
* ``proto_efficiency.net.<ring|tree>.ll128``: the achievable fraction of LL128's rate on a
  communicator that spans nodes (its flags cross the NIC as RDMA writes), per algorithm: a ring's
  step-by-step pipeline and a tree's reduce-then-broadcast may lose different shares of it.
  Simple has none: what the NIC path delivers of the links is the
  profile's ``node.nics.efficiency``, which every pattern's bytes share (All-to-All and SendRecv
  too); a deployed Simple factor on ring and tree alone would give one NIC two rates, and a
  calibration fitting the links' efficiency on rings would carry the difference to an
  All-to-All. (Fitted as a third number it took 0.95 on InfiniBand and 1 elsewhere, and the
  leave-one-system-out means were 15.3% / 13.7% / 32.5% instead of 15.1% / 13.5% / 32.3%,
  2026-12-02.)

A third kind of constant belongs to a class of transports rather than to one:

* ``net_message_us``: what one network message costs where the transport's message protocol runs
  in host software (``TransportStack.host_messages``: aws-ofi-nccl's SENDRECV protocol on EFA,
  GPUDirect-TCPXO, Slingshot with the CXI provider's ``alt_read`` rendezvous;
  :mod:`simulator.costs.transports`), paid once per message a channel of a Simple ring or tree
  sends, and per message a rank's proxy handles in an All-to-All or SendRecv across nodes
  (:mod:`simulator.costs.net_messages`). One value per message class (:func:`message_class`):
  the libfabric CXI rendezvous (a software-issued Get and a done-notify per message) is its own,
  fitted on its systems (Polaris and its testbed Sirius, each scored with the other's value);
  the host protocol stacks of EFA's SENDRECV path and TCPXO share another, fitted on their
  systems (each is the only system of its transport here, so a value per transport could not be
  scored on a system it was not fitted on). A class without another system takes the value
  pooled over every host-message system. Every row carries its class's value and it acts only
  on those stacks.
* ``net_inject_copy_us``: what copying a send's payload out of GPU memory costs where the provider
  injects it (``TransportStack.inject_max_bytes``: libfabric CXI's IDC sends of 1-192 bytes, which
  NCCL's Simple p2p sends from GPU memory under GPUDirect RDMA; :mod:`simulator.costs.transports`),
  paid once per such message a rank's proxy sends in an All-to-All or SendRecv across nodes, beside
  its ``net_message_us`` (:func:`simulator.costs.collectives.p2p_inject_copies`). Fitted per message
  class with the per-message cost, as a pair (a class whose rows inject nothing keeps 0): on Polaris
  and Sirius 12 us, where the All-to-Alls step by 10.8-13.4 us per remote peer between 128 and 240-256
  bytes a peer at 8 to 2,160 ranks (tests/unit/test_net_messages.py).

One constant is shared by every transport whose messages are not priced one by one:

* ``p2p_peer_us``: what each remote peer of an NCCL All-to-All beyond the first adds in order.
  NCCL's kernel runs the rounds to one node's peers together and different nodes' batches on
  different channels (:mod:`simulator.costs.nccl_p2p`), so the network hops overlap, but one proxy
  thread per GPU posts and progresses every remote peer's receive and send. Fitted
  (:func:`simulator.calibration.deployed_fit.fit_peer_cost`) on the All-to-Alls across nodes of
  sophia-a100 (2 x 8 A100, 56-59 us at 64 B-16 KiB) and xxrjun-h100 (10 x 8 H100, ~300 us beyond
  the bytes at 32 MiB): 7 us; each of them is scored with the value fitted on the other (12 us on
  xxrjun-h100 alone, 7 on sophia-a100 alone), and the p5 All-to-Alls of aws-p5-hyperpod with 7
  (``PEER_FIT_EXCLUDED``: their plateau gap would be read as latency). One value for all transports:
  two systems cannot score a value per transport on a system it was not fitted on.

They change the time of what NCCL chooses, never the choice (NCCL does not know them). What the
transport's plugin and its required environment tell NCCL (a reported latency, ``NCCL_PROTO``,
``NCCL_ALGO``) is not fitted: it is read from their sources (:mod:`simulator.costs.transports`)
and applies before these constants are fitted. The
values are fitted by :mod:`simulator.calibration.deployed_fit` on the measured multi-node sweeps
of each transport (median |busbw error| at sizes >= 1 MiB, pooled over the transport's systems);
``python -m simulator.calibration.deployed_fit`` prints the fit and the leave-one-system-out
scores, and ``tests/validation/test_deployed_defaults.py`` checks this table against the fit. A
transport without measured systems uses the pooled fit over all of them (``"other"``).

They are the defaults of every profile of the transport, and a profile's own ``nccl:`` values
(what ``clustersim calibrate`` fits) refine them key by key: a calibration that measured ring LL
(``nccl.coll.proto_efficiency.net.ring.ll``) leaves tree LL at its deployed value, and one that
measured the network's hops fits ``net_hop_extra_us`` itself, starting from the value here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DeployedNet:
    """Time-only constants of one transport as deployed (see the module docstring)."""

    net_hop_extra_us: float
    # Per algorithm across nodes: (LL's rate per channel in GB/s, 0 for NCCL's own; LL128's
    # achievable fraction of NCCL's rate).
    ring: tuple[float, float]
    tree: tuple[float, float]
    fitted_on: str  # the systems (data/nccl families) the values were fitted on
    message_us: float = 0.0  # net_message_us: host-message transports only (module docstring)
    inject_copy_us: float = 0.0  # net_inject_copy_us: transports that inject small sends (module docstring)
    peer_us: float = 0.0  # p2p_peer_us: what each remote peer of an All-to-All adds in order (module docstring)

    def overrides(self) -> dict[str, float]:
        out: dict[str, float] = {"net_hop_extra_us": self.net_hop_extra_us, "net_message_us": self.message_us,
                                 "net_inject_copy_us": self.inject_copy_us, "p2p_peer_us": self.peer_us}
        for algo, (ll_GBps, ll128) in (("ring", self.ring), ("tree", self.tree)):
            out[f"net_ll_channel_GBps.{algo}"] = ll_GBps  # 0: NCCL's own rate
            out[f"proto_efficiency.net.{algo}.ll128"] = ll128
        return out


NEUTRAL = DeployedNet(0.0, (0.0, 1.0), (0.0, 1.0), "nothing (NCCL's own constants)")

# Fitted by simulator.calibration.deployed_fit on every system of data/nccl (the hop extra per network
# crossing: nccl_tuner.ring_net_crossings), each sweep timed with the
# tuner tables of the NCCL release its header names (sweep_prediction.sweep_release: the release is
# an input of the run, not a fitted constant; with 2.30.7's tables for every sweep RoCE's tree LL128
# came out x 0.6, with each sweep's own release x 1); how each value does
# on a system it was not fitted on is the headline (leave-one-system-out) table of
# docs/validation-collectives.md. Rows are keyed by transport, and by transport and library for
# RCCL (deployed_key). The InfiniBand row rests on eight systems (2 x 1 A100-PCIe, 2 x 8 DGX A100,
# 2 x 8 H100 Dell XE9680; 2 x 8 Azure NDm A100 v4, 4 x 8 H100 VMs of nccl-tests issue #309, 2 x 8 Nebius
# H100, 2 x 8 Lambda B200; Together AI's B200 SendRecv rings of 2, 8 and 64 nodes; the 10 x 8 H100 cluster
# and the bare-metal issue clusters are scored, not fitted: deployed_fit.FIT_EXCLUDED). With Together's
# p2p rows (1-16 KiB at 23-35 us, p2p/LL) the row went from 3 us, LL128 x 0.9 / x 0.9 to 5 us, x 1 / x 0.6,
# the table every other InfiniBand system's held-out fit already gave (2026-12-03): held out, the mean over
# the 33 systems of before (AAC10 aside) of the median >= 1 MiB / |signed| / all sizes went 9.6% / 7.1% /
# 11.6% -> 9.0% / 6.4% / 11.6% (lambda-b200 8.4% / +8.4% / 8.9% -> 6.8% / +6.8% / 12.9%; abci-a100,
# issue309-h100, xxrjun-h100, gb200-nvl72 scored with it). With the four cloud and VM clusters the row went from 3 us, LL128
# x 1 / x 1 to 3 us, x 0.9 / x 0.9 (the Azure A100's Tree/LL128 at 256 KiB-8 MiB runs 14-31% below NCCL's
# rate, as the A100 NVSwitch node's LL128 does: data/nccl/INDEX.md), RCCL over RoCE's hop extra 15 -> 7 us
# and the pooled row's 15 -> 10 us (the pooled score of the larger corpus); held out, the mean over the
# 27 systems of before (AAC10 aside) of the median >= 1 MiB / |signed| / all sizes went 10.9% / 8.0% /
# 12.1% -> 10.4% / 7.4% / 11.6% (2026-12-03); EFA on three (2 x 8 A100
# p4de, two 2 x 8 H100 p5 clusters); Slingshot on three (Alps GH200, 2-512 nodes; Polaris A100,
# 2-540 nodes; its testbed Sirius; no LL128 runs across any of them: the A100 nodes reach their NICs through the
# CPU's host bridge, and so do the GH200s under the NCCL 2.23.4 of the Alps sweeps, which types the C2C path PHB
# (node.nics.gpu_path p2c, config/gdr.py), so Slingshot's LL128 columns take the fit pooled over every system:
# deployed_fit.unexercised_columns. Timed as Tree/LL128, the Alps rows of 4-256 MiB had set the pooled tree LL128
# at x 0.7, which InfiniBand's row (whose systems run none) carried: now x 1); NCCL over RoCE on four (2 x 8 OCI A100 and H100; 2 x 8 Google
# Cloud A3 Ultra H200; 2 x 64 OCI GB200 over two NVL72 racks, fitted since its NVLink chain is priced at
# Blackwell's NVLink step, nccl_constants.NVLINK_HOP_EXTRA_US); RCCL over RoCE on two (AMD AAC11 MI325X, AAC14 MI355X; AAC10 is scored, not
# fitted). Fitted as one RoCE row, NCCL's and RCCL's systems pulled it apart (LL128 x 0.6 for
# both, while RCCL ran no LL128 across nodes; RCCL 2.26+ runs it on gfx950 (MI355X): costs/rccl_tuner.py).
# A ring's LL128 fraction scales what its CTAs move, not the NIC's share (collectives.channel_fraction): with
# it Slingshot's ring LL128 came out x 0.8 while the GH200 rows were timed as LL128 (they run none: above) and
# RoCE's x 0.9 no longer caps the 128 x 8 H100 rings that run four CTAs per NIC (nccl-tests issue #322).
# With NCCL's channel cap per release (nccl_constants.max_channels: 32, 64 from 2.25) and NCCL's search
# trimming channels the NVLink chains cannot feed (nccl_graph._chain_bound), InfiniBand's tree LL128 went
# x 0.6 -> x 1, a near tie in the fit (2026-12-04; held-out figures in docs/validation-collectives.md).
# Across nodes Tree/LL128 then runs at NCCL's rate on sophia-a100 and crusoe-a100 and takes 19-26% longer on
# azure-ndmv4 at 1-8 MiB (abci-a100 up to 46%, the per-call cost of its 2.8.4 stack); queue pairs per connection, tree
# channels, PCIe affinity / GPUDirect and the NCCL release were read in NCCL's source for a mechanism and none
# separates them (data/nccl/INDEX.md, note "Tree/LL128 across InfiniBand nodes"), so no rule is modelled.
# The per-message cost of host-message transports (net_message_us), per message class
# (message_class): the host protocol stacks (EFA over aws-ofi-nccl's SENDRECV protocol on aws-p4de,
# GPUDirect-TCPXO on gcp-a3-mega) fitted on those two systems; Slingshot's CXI alt_read rendezvous
# on Polaris and Sirius. Held out, each system is predicted with the value fitted on the others
# of its class, with every host-message system pooled at half weight (deployed_fit.fit_table;
# docs/validation-collectives.md). Every row carries its class's value; it acts only where the
# stack has host_messages (costs/transports.py).
# Slingshot's hop extra is paid only by calls whose messages exceed the CXI provider's eager limit
# (costs/transports.py eager_max_bytes), and its alt_read stack's message cost by LL's messages too.
# A message whose receive NCCL flushes (GPUDirect on A100: p4de, Polaris, Sirius) counts 3/2 of the
# value, its send and receive plus the plugin's flush read (costs/net_messages.py gdr_flush): with it the
# CXI class went 9 -> 8 us per message (Slingshot's LL128 columns, then fitted on GH200 rows timed as LL128, moved too). The host class
# (9 -> 8 us) no longer moves its own systems (p4de's and TCPXO's messages overlap the bytes of their
# Tree/Simple chunks: collectives.messages_overlap), so it follows the pooled Polaris and Sirius.
# The proxy's cost per remote All-to-All peer beyond the first (p2p_peer_us, module docstring), every row:
# fitted with the rows (an All-to-All timed without it had pulled InfiniBand's hop extra from 5 to 7 us),
# then again on them.
MESSAGE_US = 8.0
CXI_MESSAGE_US = 8.0
CXI_INJECT_COPY_US = 12.0
PEER_US = 7.0
DEPLOYED: dict[str, DeployedNet] = {
    "efa": DeployedNet(40, (0, 1), (0, 0.9), "aws-p4de, aws-p5, aws-p5-samples", MESSAGE_US, peer_us=PEER_US),
    "infiniband": DeployedNet(5, (0, 1), (0, 1), "a100-pcie, azure-ndmv4, issue309vm-h100, lambda-b200, "
                                                   "nebius-h100, sophia-a100, together-b200, xe9680-h100",
                              MESSAGE_US, peer_us=PEER_US),
    "roce": DeployedNet(7, (0, 0.9), (0, 0.9), "gcp-a3-ultra, oci-a100, oci-gb200, oci-h100", MESSAGE_US,
                        peer_us=PEER_US),
    "roce/rccl": DeployedNet(15, (0, 1), (0, 1), "aac11-mi325x, mi355x", MESSAGE_US, peer_us=PEER_US),
    "slingshot": DeployedNet(15, (0, 1), (0, 1), "gh200-alps, polaris-a100, sirius-a100", CXI_MESSAGE_US,
                             CXI_INJECT_COPY_US, PEER_US),
    "other": DeployedNet(10, (0, 1), (0, 1), "all of a100-pcie, aac11-mi325x, aws-p4de, aws-p5, aws-p5-samples, "
                                             "azure-ndmv4, gcp-a3-ultra, gh200-alps, issue309vm-h100, lambda-b200, "
                                             "mi355x, nebius-h100, oci-a100, oci-gb200, oci-h100, polaris-a100, "
                                             "sirius-a100, sophia-a100, together-b200, xe9680-h100", MESSAGE_US,
                         peer_us=PEER_US),
}


# Message classes (net_message_us): transports whose per-message host cost comes from one mechanism.
MESSAGE_CLASSES = {"slingshot": "cxi"}


def message_class(key: str) -> str:
    """The message class of a deployed row (:data:`MESSAGE_CLASSES`; ``host`` otherwise)."""
    return MESSAGE_CLASSES.get(key.split("/")[0], "host")


def deployed_key(profile) -> str:
    """The row of a profile: its scale-out transport, and the collective library when it is not
    NCCL (``roce/rccl``): RCCL's proxy, its network plugins and its kernels are another software
    path over the same wire, so NCCL's and RCCL's systems on one transport are fitted apart."""
    transport = profile.node.nics.transport
    library = profile.collective_library
    return transport if library == "nccl" else f"{transport}/{library}"


def deployed_for(key: str, table: dict[str, DeployedNet] | None = None) -> DeployedNet:
    """The deployed constants of a row (:func:`deployed_key`; the pooled ``other`` row when it
    has none)."""
    t = DEPLOYED if table is None else table
    return t.get(key) or t.get("other") or NEUTRAL


def deployed_overrides(profile, table: dict[str, DeployedNet] | None = None) -> dict[str, float]:
    """The ``nccl:`` keys the profile's transport and library contribute by default."""
    return deployed_for(deployed_key(profile), table).overrides()

"""NCCL's cost model: the worked numbers of docs/reference/NCCL-COST-MODEL.md §1 and the selection rules."""

from __future__ import annotations

from dataclasses import replace

import pytest

from simulator.costs import nccl_constants as k
from simulator.costs import nccl_graph as g
from simulator.costs import nccl_tuner as t
from simulator.errors import InputError


def _ctx(arch="hopper", n=8, nodes=1, nvls=True, link="nvlink", graph=None, **const) -> g.TunerContext:
    graph = graph or g.TunerGraph(n_channels=12, bw_intra_GBps=30.0, bw_inter_GBps=30.0, nvls_channels=16)
    return g.TunerContext(arch=arch, n_ranks=n, n_nodes=nodes, intra_link=link, cpu_vendor="intel",
                          nvls_supported=nvls, graph=graph, constants=k.TunerConstants(**const))


@pytest.mark.parametrize("algo,proto,expected", [
    ("ring", "ll", 15.0), ("ring", "ll128", 40.6), ("ring", "simple", 56.0),
    ("tree", "ll", 15.2), ("nvls", "simple", 25.0),
])
def test_worked_latencies_allreduce_8_gpus(algo, proto, expected):
    assert t.latency_us(_ctx(), "allreduce", algo, proto) == pytest.approx(expected, abs=1e-9)


def test_worked_latency_allgather_ring_ll():
    assert t.latency_us(_ctx(), "allgather", "ring", "ll") == pytest.approx(10.8)


def test_ring_latency_grows_with_inter_node_steps():
    # 16 ranks on 2 nodes: 30 steps, 2 of them on the network (2.7 us each for LL),
    # the other 28 at max(0.6 NVLink, 1.0 net overhead).
    ctx = _ctx(n=16, nodes=2)
    assert t.latency_us(ctx, "allreduce", "ring", "ll") == pytest.approx(6.6 + 28 * 1.0 + 2 * 2.7)


@pytest.mark.parametrize("nsteps,ppn,inter_steps,expected", [
    (30, 8, 2, 4),    # AllReduce, 2 x 8: a chunk's 30 steps run the ring almost twice, leaving each node twice
    (15, 8, 1, 2),    # AllGather, 2 x 8: 15 steps from just before a node boundary cross both boundaries
    (14, 4, 2, 4),    # AllReduce, 2 x 4 (Alps, Polaris)
    (30, 2, 14, 15),  # AllReduce, 8 x 2: ceil(30 / 2)
    (158, 8, 18, 20), # AllReduce, 10 x 8: 2 x nodes
    (2, 1, 4, 4),     # one rank per node keeps NCCL's count (modelled apart)
])
def test_ring_net_crossings_closed_form(nsteps, ppn, inter_steps, expected):
    assert t.ring_net_crossings(nsteps, ppn, inter_steps) == expected


def test_deployed_hop_extra_is_paid_per_ring_crossing_not_per_tuner_step():
    """NCCL's own latency keeps its inter-node step count (1 for a 2-node AllGather, 2 for an
    AllReduce from 2.23); the deployed per-hop extra is paid per crossing of the critical chain
    (2 and 4: ring_net_crossings)."""
    for coll, tuner_steps, crossings in (("allgather", 1, 2), ("allreduce", 2, 4)):
        base = t.latency_us(_ctx(n=16, nodes=2), coll, "ring", "ll")
        extra = t.latency_us(_ctx(n=16, nodes=2, net_hop_extra_us=10.0), coll, "ring", "ll")
        assert extra - base == pytest.approx(10.0 * crossings) and crossings > tuner_steps
    tree = t.latency_us(_ctx(n=16, nodes=2, net_hop_extra_us=10.0), "allreduce", "tree", "ll")
    assert tree - t.latency_us(_ctx(n=16, nodes=2), "allreduce", "tree", "ll") == pytest.approx(20.0)


def test_blackwell_nvlink_step_pays_its_extra_crossing_latency_in_time_not_in_choice():
    """NCCL's NVLink hop latency is one table for every GPU; a Blackwell NVLink crossing costs
    0.7 us more (NVIDIA/nccl issue #1940: 8-byte AllReduce 3.0 us on 8 x B200, 2.3 us on Hopper).
    2 x 64 GB200 over two NVL72 racks, Tree/LL: 2 x 63 NVLink steps, 6.8 + 2 (63 x 1.3 + 5) =
    180.4 us (NCCL's 92.4 us); measured 182-204 us at 8 B-64 KiB with RoCE's two 10 us crossings
    (data/nccl/gb200x128_allreduce_2rack_oci_nvl72_roce.csv). Hopper and NCCL's choice keep the table."""
    from simulator.config.hardware import load_profile
    assert g.context_from_profile(load_profile("gb200-nvl72"), 72, 1).constants.nvlink_hop_extra_us == 0.7
    assert g.context_from_profile(load_profile("dgx-h100"), 8, 1).constants.nvlink_hop_extra_us == 0.0
    extra = k.NVLINK_HOP_EXTRA_US["blackwell"]
    bw = _ctx(arch="blackwell", n=128, nodes=2, nvlink_hop_extra_us=extra)
    assert t.latency_us(bw, "allreduce", "tree", "ll") == pytest.approx(6.8 + 2 * (63 * 1.3 + 5.0))
    assert t.latency_us(t.selection_context(bw), "allreduce", "tree", "ll") == pytest.approx(92.4)
    assert t.latency_us(_ctx(n=128, nodes=2), "allreduce", "tree", "ll") == pytest.approx(92.4)
    # a one-rack ring: 2 x 71 NVLink steps, each 0.7 us more; NVLS (the switch's own op) unchanged
    rack = _ctx(arch="blackwell", n=72, nvlink_hop_extra_us=extra)
    assert t.latency_us(rack, "allreduce", "ring", "simple") == pytest.approx(8.4 + 142 * (3.4 + 0.7))
    assert t.latency_us(rack, "allreduce", "nvls", "simple") == t.latency_us(_ctx(n=72), "allreduce", "nvls", "simple")
    # over PCIe no NVLink step; a profile's own value replaces the table's
    assert t.latency_us(_ctx(arch="blackwell", link="pci", nvlink_hop_extra_us=extra), "allreduce", "ring", "ll") == \
        t.latency_us(_ctx(link="pci"), "allreduce", "ring", "ll")


def test_selection_tiny_is_ll_and_large_is_nvls_on_h100():
    ctx = _ctx()
    assert t.select(ctx, "allreduce", 8)[1] == "ll"
    assert t.select(ctx, "allreduce", 8 << 30) == ("nvls", "simple")
    assert t.select(ctx, "allgather", 8)[1] == "ll"
    assert t.select(ctx, "allgather", 8 << 30)[1] == "simple"


def test_nvls_disabled_on_ampere():
    ctx = _ctx(arch="ampere", nvls=False)
    assert not t.enabled(ctx, "allreduce", "nvls", "simple")
    assert t.algo_bandwidth_GBps(ctx, "allreduce", "nvls", "simple") == 0
    assert t.select(ctx, "allreduce", 8 << 30)[0] != "nvls"
    with pytest.raises(ValueError):
        t.select(ctx, "allreduce", 1 << 20, algo="nvls")


def test_ring_bandwidth_conversions():
    ctx = _ctx()
    bus = 12 * 30.0
    assert t.algo_bandwidth_GBps(ctx, "allreduce", "ring", "simple") == pytest.approx(bus * 8 / 14)
    assert t.algo_bandwidth_GBps(ctx, "allgather", "ring", "simple") == pytest.approx(bus * 8 / 7)
    # LL: half the line carries flags, capped by llMaxBw (Hopper, 1 node: 141 GB/s)
    assert t.algo_bandwidth_GBps(ctx, "allreduce", "ring", "ll") == pytest.approx(min(141.0, bus / 2) * 8 / 14)
    assert t.algo_bandwidth_GBps(ctx, "allreduce", "ring", "ll128") == pytest.approx(min(0.92 * bus, 12 * 36.7) * 8 / 14)


def test_predicted_time_is_latency_plus_bytes_over_bw():
    ctx = _ctx()
    nbytes = 1 << 26
    bw = t.algo_bandwidth_GBps(ctx, "allgather", "ring", "simple")
    assert t.predict_us(ctx, "allgather", "ring", "simple", nbytes) == pytest.approx(
        t.latency_us(ctx, "allgather", "ring", "simple") + nbytes / (1000 * bw))


def test_tree_correction_applies_to_tree_allreduce():
    ctx = _ctx(arch="ampere", n=16, nodes=2, nvls=False)
    nbytes = 1 << 17  # index log2(2^17/64) = 11 → Simple factor 0.5
    bw = t.algo_bandwidth_GBps(ctx, "allreduce", "tree", "simple") * 0.5
    lat = t.latency_us(ctx, "allreduce", "tree", "simple")
    assert t.predict_us(ctx, "allreduce", "tree", "simple", nbytes) == pytest.approx(lat + nbytes / (1000 * bw))


def test_overrides_replace_constants_and_reject_bad_keys():
    c = k.constants_from_overrides({"base_latency_us.ring.ll": 1.0, "hw_latency_us.nvlink.ring.ll": 0.1,
                                    "nvls_efficiency": 0.5, "unrelated_knob": 3.0})
    ctx = g.TunerContext("hopper", 8, 1, "nvlink", "intel", True, _ctx().graph, c)
    assert t.latency_us(ctx, "allreduce", "ring", "ll") == pytest.approx(1.0 + 14 * 0.1)
    assert t.nvls_efficiency(ctx) == 0.5
    with pytest.raises(InputError, match="nccl.base_latency_us.ring.fast"):
        k.constants_from_overrides({"base_latency_us.ring.fast": 1.0})


def test_channels_shrink_for_small_messages():
    ctx = _ctx()
    assert t.channels_used(ctx, "ring", "simple", 1 << 30) == 12
    assert t.channels_used(ctx, "ring", "simple", 1024) == 1
    assert t.channels_used(ctx, "ring", "simple", 5 * 512 * 64) == 5


def test_a100_node_runs_every_channel_from_one_mib_and_ll128_up_to_16_mib():
    """One DGX A100 (8 ranks): 12 graph channels at 20 GB/s (6 x 40 GB/s fill 12 NVLinks x 20, then halved and
    doubled, search.cc), run as 24 CTAs; enqueue.cc (v2.30.7-1, lines 2091-2096) drops a channel only while
    nBytes < nc x nt x threadThreshold, i.e. below 24 x 640 x 8 B for LL128 and 24 x 512 x 64 B for Simple,
    so no medium size (8-32 MiB, data/nccl/INDEX.md) runs fewer channels. NCCL's 2.30.7 tables pick
    Ring/LL128 at 4-16 MiB (1.9 us per NVLink step: 14 + 14 x 1.9 = 40.6 us) and Ring/Simple from 32 MiB."""
    from simulator.config.hardware import load_profile

    ctx = g.context_from_profile(load_profile("dgx-a100"), 8, 1, "coll")
    assert (ctx.graph.n_channels, ctx.graph.bw_intra_GBps) == (12, 20.0)
    for proto, first_full in (("ll128", 24 * 640 * 8), ("simple", 24 * 512 * 64)):
        assert t.launched_channels(ctx, "ring", proto, first_full) == 24
        assert t.launched_channels(ctx, "ring", proto, first_full - 1) == 23
        assert all(t.launched_channels(ctx, "ring", proto, m << 20) == 24 for m in (1, 8, 16, 32))
    assert t.latency_us(ctx, "allreduce", "ring", "ll128") == pytest.approx(14 + 14 * 1.9)
    assert [t.select(ctx, "allreduce", m << 20) for m in (4, 8, 16, 32)] == [("ring", "ll128")] * 3 + [("ring", "simple")]


def test_tree_graph_bw_intra_doubles_on_two_nodes_only():
    # search.cc pass 2 raises a tree graph's bwIntra up to 2 × bwInter (next listed speed that fits).
    speeds = k.SPEEDS_INTER["hopper"]
    assert g.tree_bw_intra(24.0, 4, 1000.0, speeds) == 48.0
    assert g.tree_bw_intra(24.0, 4, 4 * 40.0, speeds) == 40.0  # the intra-node chain caps it
    assert g.tree_bw_intra(24.0, 4, 4 * 24.0, speeds) == 24.0


def test_two_node_tree_beats_ring_when_tree_intra_is_doubled():
    graph = g.TunerGraph(n_channels=4, bw_intra_GBps=24.0, bw_inter_GBps=24.0, nvls_channels=16, tree_bw_intra_GBps=48.0)
    ctx = _ctx(n=8, nodes=2, nvls=False, graph=graph)
    # ring: 4 × 24 × n/(2(n-1)); tree: min(0.92 × 4 × 48, 4 × 41.4) × 0.5 (NCCL-COST-MODEL.md §2)
    assert t.algo_bandwidth_GBps(ctx, "allreduce", "ring", "simple") == pytest.approx(96 * 8 / 14)
    assert t.algo_bandwidth_GBps(ctx, "allreduce", "tree", "simple") == pytest.approx(min(0.92 * 192, 4 * 41.4) / 2)
    assert t.select(ctx, "allreduce", 1 << 30) == ("tree", "simple")
    three = _ctx(n=12, nodes=3, nvls=False, graph=graph)  # > 2 nodes: bwInter, no doubling
    assert t.algo_bandwidth_GBps(three, "allreduce", "tree", "simple") == pytest.approx(min(0.92 * 96, 4 * 36.0) / 2)


def test_multi_node_graph_uses_one_channel_per_network_device_and_nvls_keeps_nvlink_rate():
    """AWS p5: aws-ofi-nccl's RDMA protocol shows NCCL one device per GPU, its 4 EFA devices as rails at
    4 x 100 Gb/s (transports.py "rail groups"). The bundled 2.22.3 log prints it: connections via
    NET/AWS Libfabric/0..7, 8 rings, "16 coll channels, ... 16 p2p channels, 2 p2p channels per peer"."""
    from simulator.config.hardware import load_profile

    p5 = load_profile("aws-p5")
    assert g.net_devices(p5) == (8, 50.0)
    at_2223 = p5.model_copy(update={"nccl": {**p5.nccl, "version": "2.22.3"}})
    g2 = g.graph_from_profile(at_2223, 16, 2)
    assert (g2.n_channels, g2.bw_inter_GBps) == (8, 48.0)  # one channel per device, 48 <= 50 GB/s
    ctx = g.context_from_profile(at_2223, 16, 2)
    assert t.launched_channels(ctx, "ring", "simple", 1 << 30) == 16  # "16 coll channels"
    assert (g2.p2p_channels, g2.p2p_split[1]) == (16, 2)  # "16 p2p channels, 2 p2p channels per peer"
    g1 = g.graph_from_profile(p5, 8, 1)
    assert g2.nvls_intra_total_GBps == pytest.approx(g1.n_channels * g1.bw_intra_GBps)


@pytest.mark.parametrize("version,cap", [("2.18.3", 32), ("2.24.3", 32), ("2.25", 64), ("2.25.1", 64), ("2.27.7", 64),
                                         (None, 64)])
def test_ring_graph_channels_follow_the_release_maxchannels(version, cap):
    """MAXCHANNELS (src/include/device.h) is 32 up to v2.24.3-1 and 64 from v2.25.1-1; the ring graph's
    search keeps half (init.cc ``ringGraph->maxChannels = MAXCHANNELS/2``) and the communicator at most
    all of it after duplication (connect.cc ``min(MAXCHANNELS, 2 nChannels)``). A node with 32 NICs of
    100 Gb/s each seen by NCCL as its own device (InfiniBand here: no rail groups) gets min(32, cap/2)
    graph channels at 12 GB/s, and launches twice that. RCCL keeps 32."""
    from simulator.config.hardware import load_profile

    assert k.max_channels(version) == cap
    assert k.max_channels(version, "rccl") == 32
    h100 = load_profile("dgx-h100")
    nics = h100.node.nics.model_copy(update={"count": 32, "Gbps": 100})
    prof = h100.model_copy(update={"node": h100.node.model_copy(update={"nics": nics})})
    if version is not None:
        prof = prof.model_copy(update={"nccl": {**prof.nccl, "version": version}})
    gr = g.graph_from_profile(prof, 16, 2)
    assert (gr.n_channels, gr.bw_inter_GBps, gr.max_channels) == (cap // 2, 12.0, cap)
    ctx = g.context_from_profile(prof, 16, 2)
    assert t.launched_channels(ctx, "ring", "simple", 1 << 30) == cap
    assert gr.p2p_channels == cap  # a power of two of min(MAXCHANNELS, 2 x graph channels)


def test_nvls_search_graph_is_one_channel_per_head():
    """NCCL's tuner rates NVLS/NVLSTree on the NVLS search graph (search.cc: one channel per GPU and its
    NIC; the NVSwitch feeds every GPU once and the head twice per channel, so 9 x bwIntra fits 18 x 20.6
    GB/s: 40; bwInter raised to the NIC's 48), not on the 16 runtime channels: 8 x min(40 x 0.85 x 7/8
    x 2, 48, 45.5) = 364 GB/s busBw on 8 H100 nodes, x 64/126 in algorithm bandwidth; on one node as
    before. AWS p5's four EFA devices per GPU are one network device to NCCL (rail groups): the same graph.
    With several devices per GPU the model keeps the runtime channels' share."""
    from simulator.config.hardware import load_profile

    h100 = load_profile("dgx-h100")
    assert g.graph_from_profile(h100, 64, 8).nvls_graph == (8, 40.0, 48.0)
    assert g.graph_from_profile(h100, 8, 1).nvls_graph is None
    assert g.graph_from_profile(load_profile("aws-p5"), 16, 2).nvls_graph == (8, 40.0, 48.0)
    ctx = g.context_from_profile(h100, 64, 8)
    assert t.algo_bandwidth_GBps(ctx, "allreduce", "nvls_tree", "simple") == pytest.approx(8 * 45.5 * 64 / 126)
    assert t.algo_bandwidth_GBps(ctx, "allreduce", "ring", "simple") == pytest.approx(8 * 48 * 64 / 126)


def test_graph_gives_a_rank_its_own_nics_only():
    """NCCL's graph charges every channel to the rank's GPU-to-NIC path (search.cc), so a
    communicator with one H100 per node rings through that GPU's one 400 Gb/s NIC: one channel at
    48 GB/s, duplicated into 2 x 24 (ncclTopoDupChannels), 48 GB/s in all, not 8 NICs' worth."""
    from simulator.config.hardware import load_profile

    h100 = load_profile("dgx-h100")
    assert g.reachable_nics(h100, 1) == 1 and g.reachable_nics(h100, 8) == 8
    for ppn, n_ch in ((1, 2), (2, 4), (4, 8)):
        gr = g.graph_from_profile(h100, 10 * ppn, 10)
        assert (gr.n_channels, gr.bw_inter_GBps) == (n_ch, 24.0)
        assert gr.n_channels * gr.bw_inter_GBps == pytest.approx(48.0 * ppn)
    full = g.graph_from_profile(h100, 80, 10)  # a full node keeps one channel per NIC, at the NIC's 48
    assert (full.n_channels, full.bw_inter_GBps) == (8, 48.0)
    p5 = load_profile("aws-p5")  # 4 EFA rails per GPU, one device: one rank per node drives its 400 Gb/s
    one = g.graph_from_profile(p5, 2, 2)
    assert (one.n_channels, one.bw_inter_GBps) == (2, 24.0)


def test_one_rank_per_node_has_no_nvls():
    """ncclNvlsInit (nvls.cc) leaves NVLS off with fewer than two GPUs in the node's topology."""
    from simulator.config.hardware import load_profile

    h100 = load_profile("dgx-h100")
    one = g.context_from_profile(h100, 10, 10)
    two = g.context_from_profile(h100, 20, 10)
    assert not t.enabled(one, "allreduce", "nvls_tree", "simple")
    assert t.enabled(two, "allreduce", "nvls_tree", "simple")
    assert t.select(one, "allreduce", 1 << 30)[0] == "ring"


def test_mesh_graph_rates_peers_as_nccl_and_rccl_do():
    from simulator.config.hardware import load_profile

    gh = load_profile("gh200-alps")  # 18 NVLinks over 3 peers = 6 per peer × 20.6 GB/s
    assert g.mesh_peer_GBps(gh) == pytest.approx(6 * 20.6)
    mi = load_profile("mi300x")  # RCCL GFX94X_XGMI_WIDTH 48 GB/s, one link per peer
    assert g.mesh_peer_GBps(mi) == pytest.approx(48.0)


def test_selection_uses_nccls_tables_not_calibrated_values():
    """A fitted latency times the chosen algorithm; NCCL still chooses with its built-in tables."""
    plain = _ctx(n=16, nodes=2)
    slow_ll = k.constants_from_overrides({"hw_latency_us.net.tree.ll": 500.0, "hw_latency_us.net.ring.ll": 500.0,
                                          "ll_max_bw_GBps": 1.0, "nvls_efficiency": 0.1})
    calibrated = g.TunerContext("hopper", 16, 2, "nvlink", "intel", True, plain.graph, slow_ll)
    for nbytes in (64, 4096, 1 << 16, 1 << 22, 1 << 30):
        assert t.select(calibrated, "allreduce", nbytes) == t.select(plain, "allreduce", nbytes)
    # ... while the time of an LL algorithm is the calibrated one
    assert t.predict_us(calibrated, "allreduce", "tree", "ll", 64) > t.predict_us(plain, "allreduce", "tree", "ll", 64) + 900
    assert t.selection_context(plain) is plain


def test_selection_sees_the_net_plugins_reported_latency():
    """``latencyInter`` is reported by the net plugin, so NCCL's choice does account for it."""
    ctx = g.TunerContext("hopper", 16, 2, "nvlink", "intel", True, _ctx().graph,
                         k.constants_from_overrides({"net_latency_us": 40.0, "hw_latency_us.net.ring.ll": 9.0}))
    sel = t.selection_context(ctx)
    assert sel.constants.net_latency_us == 40.0
    assert sel.constants.hw_latency_us["net"]["ring"] == k.HW_LATENCY_US["net"]["ring"]
    best = min((t.predict_us(sel, "allreduce", a, p, 4096), a, p) for a in k.ALGOS for p in k.PROTOS)
    assert t.select(ctx, "allreduce", 4096) == best[1:]


# --- point-to-point channels (NCCL paths.cc ncclTopoComputeP2pChannels, enqueue.cc addP2pToPlan) ---

def _p2p_ctx(profile: str, n: int, nodes: int) -> g.TunerContext:
    from simulator.config.hardware import load_profile

    return g.context_from_profile(load_profile(profile), n, nodes)


def test_p2p_channels_of_a_dgx_h100_node():
    """12 ring channels duplicated by ncclTopoPostset = 24, rounded up to 32 p2p channels; a peer
    behind 18 NVLinks gets 2 × 18 = 36, rounded up to 64 and capped at 32; NVLink chunk 512 KiB."""
    ctx = _p2p_ctx("dgx-h100", 8, 1)
    assert (ctx.graph.p2p_channels, ctx.graph.p2p_channels_per_peer, ctx.graph.p2p_chunk_bytes) == (32, 32, 512 * 1024)


@pytest.mark.parametrize("mib,channels", [(1, 4), (32, 4), (64, 4), (128, 8), (256, 16), (512, 32), (4096, 32)])
def test_p2p_channels_grow_with_the_send(mib, channels):
    """8 ranks: nChannelsMin = 32 halved until 8 × it ≤ 32 → 4; parts up to 32 chunks (16 MiB),
    then the count doubles: 128 MiB / 8 = 16 MiB per part."""
    assert t.p2p_channels_used(_p2p_ctx("dgx-h100", 8, 1), mib * 2**20) == channels


def test_p2p_channels_of_a_pair_and_of_small_sends():
    pair = _p2p_ctx("dgx-h100", 2, 1)  # nChannelsMin = 32 / 2 = 16
    assert t.p2p_channels_used(pair, 64 * 2**20) == 16
    assert t.p2p_channels_used(pair, 100 * 1024) == 2  # one channel per 64 KiB (chunk / 8) at least
    # LL while a send carries <= 16 KiB per channel (NCCL_P2P_LL_THRESHOLD): 32 KiB is 1 channel
    assert t.p2p_protocol(pair, 16 * 1024) == "ll"
    assert t.p2p_protocol(pair, 32 * 1024) == "simple"
    assert t.p2p_protocol(pair, 4 * 2**20) == "simple"


def test_p2p_channels_across_nodes_follow_the_nics():
    """One 400 Gb/s NIC per H100: max(1 NIC, ceil(50 / 14 GB/s)) = 4 channels per network peer;
    parts stay within one 128 KiB network chunk, so large sends use all 4."""
    ctx = _p2p_ctx("dgx-h100", 16, 2)
    assert (ctx.graph.p2p_channels_per_peer, ctx.graph.p2p_chunk_bytes) == (4, 128 * 1024)
    assert t.p2p_channels_used(ctx, 64 * 2**20) == 4
    assert t.p2p_channel_GBps(ctx, "net") == 14.0
    assert t.p2p_channel_GBps(ctx, "nvlink") == pytest.approx(20.6)
    assert t.p2p_channel_GBps(ctx, "other") is None


@pytest.mark.parametrize("version,split,big,small", [
    ("2.29.2", (1, 4), 4, 1), ("2.28.9", (1, 2), 2, 1), ("2.22.3", (1, 2), 2, 1), ("2.21.5", (1, 2), 2, 1),
    ("2.19.3", (2, 2), 2, 2), ("2.18.3", (2, 2), 2, 2)])
def test_p2p_channels_across_nodes_follow_the_release(version, split, big, small):
    """2 x 8 H100, one 400 Gb/s NIC per GPU, p2pnChannels 16. nChannelsMax (paths.cc): from 2.29.2
    max(1 NIC, ceil(50 / NCCL_P2P_PER_CHANNEL_NET_BW 14)) = 4, 4 x ceil(16 / 8) = 8 <= 16 keeps it;
    2.20 to 2.28.9 the derived NCCL_NCHANNELS_PER_NET_PEER: 2, kept while 2 x 16 <= 4 x 16, at least
    the 1 NIC; up to 2.19 the default 2. nChannelsMin (enqueue.cc): halved while x 16 > 16 from 2.20,
    not across nodes before. A 64 MiB send takes nChannelsMax channels, a 100 KiB one min(nChannelsMin,
    ceil(100 KiB / 64 KiB)). Before, every release from 2.22 took 2.29.2's four channels."""
    from simulator.config.hardware import load_profile

    p = load_profile("dgx-h100")
    ctx = g.context_from_profile(p.model_copy(update={"nccl": {**p.nccl, "version": version}}), 16, 2, "p2p")
    assert ctx.graph.p2p_channels == 16
    assert ctx.graph.p2p_split == split
    assert t.p2p_channels_used(ctx, 64 * 2**20) == big
    assert t.p2p_channels_used(ctx, 100 * 1024) == small


def test_p2p_channel_rate_is_calibratable():
    ctx = g.TunerContext("hopper", 8, 1, "nvlink", "intel", True, _p2p_ctx("dgx-h100", 8, 1).graph,
                         k.constants_from_overrides({"p2p_channel_GBps": 25.0}))
    assert t.p2p_channel_GBps(ctx, "nvlink") == 25.0


@pytest.mark.parametrize("path,ll128_across_nodes", [("pix", True), ("pxb", True), ("phb", False), ("sys", False)])
def test_ll128_across_nodes_needs_the_nic_no_farther_than_pxb(path, ll128_across_nodes):
    """tuning.cc: LL128 is enabled only where the graphs' typeInter <= PATH_PXB (Hopper: <= PXN,
    still closer than PHB); a GPU that reaches its NIC through the CPU's host bridge runs Ring and
    Tree with LL and Simple only across nodes. Inside one node the NIC path does not matter."""
    from dataclasses import replace

    for arch in ("ampere", "hopper"):
        multi = replace(_ctx(arch=arch, n=16, nodes=2, nvls=False), net_path=path)
        one = replace(_ctx(arch=arch, n=8, nodes=1, nvls=False), net_path=path)
        for algo in ("ring", "tree"):
            assert t.enabled(multi, "allreduce", algo, "ll128") is ll128_across_nodes
            assert (t.algo_bandwidth_GBps(multi, "allreduce", algo, "ll128") > 0) is ll128_across_nodes
            assert t.enabled(multi, "allreduce", algo, "ll") and t.enabled(multi, "allreduce", algo, "simple")
        assert t.enabled(one, "allreduce", "ring", "ll128")
        if not ll128_across_nodes:
            assert all(t.select(multi, "allreduce", 2 ** e)[1] != "ll128" for e in range(3, 31))


def test_profile_gpu_path_reaches_the_tuner():
    from simulator.config.hardware import load_profile

    assert g.context_from_profile(load_profile("polaris-a100"), 8, 2, "coll").net_path == "phb"
    assert g.context_from_profile(load_profile("dgx-a100"), 16, 2, "coll").net_path == "pxb"


@pytest.mark.parametrize("version,ll128_across_nodes", [("2.23.4", False), ("2.26.2", False), ("2.27.3", True),
                                                         (None, True)])
def test_gh200_runs_ll128_across_nodes_from_nccl_2_27(version, ll128_across_nodes):
    """A GH200 reaches its Slingshot NIC over C2C and the Grace CPU's PCIe (gh200-alps: gpu_path p2c). NCCL
    types that path PHB until 2.26 (topo.cc adds C2C as an NVLink to the CPU; paths.cc: through the CPU's
    PCIe is PHB), above the PXN that tuning.cc allows LL128 to on compute capability 9.0; v2.27.3-1 types it
    P2C and allows LL128 up to P2C (NCCL_LL128_C2C, default 1). Inside one node LL128 stays either way."""
    from simulator.config.hardware import load_profile

    p = load_profile("gh200-alps")
    assert p.node.nics.gpu_path == "p2c"
    if version is not None:
        p = p.model_copy(update={"nccl": {**p.nccl, "version": version}})
    multi = g.context_from_profile(p, 512, 128, "coll")
    assert multi.net_path == ("p2c" if ll128_across_nodes else "phb")
    for algo in ("ring", "tree"):
        assert t.enabled(multi, "allreduce", algo, "ll128") is ll128_across_nodes
    assert t.enabled(g.context_from_profile(p, 4, 1, "coll"), "allreduce", "ring", "ll128")
    # the choice at 8 MiB on 128 nodes: Tree/Simple where LL128 is off, Tree/LL128 where it is on
    assert t.select(multi, "allreduce", 8 << 20) == ("tree", "ll128" if ll128_across_nodes else "simple")
    # an Ampere GPU has no C2C: the rule is Hopper's and Blackwell's
    assert not t.enabled(replace(multi, arch="ampere"), "allreduce", "tree", "ll128")


def test_tree_pattern_graph_rates_tree_by_085_for_the_choice_only():
    """tuning.cc: ``graphs[TREE]->pattern == NCCL_TOPO_PATTERN_TREE`` → Tree busBw × 0.85 (every
    protocol, after the LL/LL128 caps); the tree's channels still carry the un-derated estimate."""
    base = g.TunerGraph(n_channels=4, bw_intra_GBps=24.0, bw_inter_GBps=24.0, nvls_channels=16)
    simple = g.TunerGraph(n_channels=4, bw_intra_GBps=24.0, bw_inter_GBps=24.0, nvls_channels=16, simple_tree=True)
    for proto in ("ll", "ll128", "simple"):
        balanced = t.algo_bandwidth_GBps(_ctx(n=16, nodes=4, nvls=False, graph=base), "allreduce", "tree", proto)
        ctx = _ctx(n=16, nodes=4, nvls=False, graph=simple)
        assert t.algo_bandwidth_GBps(ctx, "allreduce", "tree", proto) == pytest.approx(0.85 * balanced)
        assert t.algo_bandwidth_GBps(ctx, "allreduce", "tree", proto, tree_pattern=False) == pytest.approx(balanced)
        assert t.channel_bw_GBps(ctx, "tree", proto) == pytest.approx(balanced / 4)
        # Ring is not touched
        assert t.algo_bandwidth_GBps(ctx, "allreduce", "ring", proto) == \
            t.algo_bandwidth_GBps(_ctx(n=16, nodes=4, nvls=False, graph=base), "allreduce", "ring", proto)


@pytest.mark.parametrize("profile,ranks,nodes,expected", [
    ("gh200-alps", 512, 128, True),  # one Slingshot NIC per GH200: no NIC two GPUs share
    ("dgx-h100", 16, 2, True),  # one CX-7 per H100
    ("aws-p5", 16, 2, True),  # four EFA per H100
    ("dgx-a100", 16, 2, False),  # Ampere: no "simpler tree" pass; balanced tree over shared HCAs
    ("abci-a100", 16, 2, False),  # 2 A100 per HCA
    ("a100-pcie", 2, 2, True),  # one GPU per node: ngpus == 1 is a TREE
    ("gh200-alps", 4, 1, False),  # one node: no network, the balanced search stands
])
def test_simple_tree_pattern_from_the_profile(profile, ranks, nodes, expected):
    from simulator.config.hardware import load_profile

    assert g.graph_from_profile(load_profile(profile), ranks, nodes).simple_tree is expected


def test_a_simple_ring_channel_is_two_ctas_at_the_p2p_channel_rate():
    """ncclTopoPostset runs every graph channel as two CTAs (connect.cc "nChannels*2"), and one CTA
    moves what one p2p channel moves: 20.6 GB/s on Hopper. Across nodes a DGX H100's graph channel
    (one per 400 Gb/s NIC) is rated 48 GB/s, which its two CTAs cannot reach: 2 x 20.6 = 41.2.
    Inside a node (12 channels at 30) and for LL128 (NCCL's own per-channel table) nothing changes."""
    two_nodes = _p2p_ctx("dgx-h100", 16, 2)
    assert (two_nodes.graph.n_channels, two_nodes.graph.bw_intra_GBps) == (8, 48.0)
    assert t.channel_bw_GBps(two_nodes, "ring", "simple") == pytest.approx(2 * 20.6)
    one_node = _p2p_ctx("dgx-h100", 8, 1)
    assert t.channel_bw_GBps(one_node, "ring", "simple") == pytest.approx(30.0)
    # the CTA's rate is the profile's p2p channel rate when calibrated
    calibrated = g.TunerContext("hopper", 16, 2, "nvlink", "intel", True, two_nodes.graph,
                                k.constants_from_overrides({"p2p_channel_GBps": 18.0}))
    assert t.channel_bw_GBps(calibrated, "ring", "simple") == pytest.approx(36.0)
    assert t.channel_bw_GBps(calibrated, "ring", "ll128") == t.channel_bw_GBps(two_nodes, "ring", "ll128")
    # RCCL's kernels are not NCCL's CTAs: no such limit
    mi300x = _p2p_ctx("mi300x", 16, 2)
    assert t.ring_cta_GBps(mi300x) is None


@pytest.mark.parametrize("profile", ["mi300x", "mi355x"])
def test_rccl_one_node_ring_is_not_paced_at_the_graph_speed(profile):
    """RCCL rates every xGMI link at 48 GB/s (topo.h GFX94X_XGMI_WIDTH = GFX95X_XGMI_WIDTH), so the
    graph of an 8-GPU node is the same on MI300X and MI355X (7 x 48 = 336, picked as 16 channels x 20
    from the speed list): a tuner number, not a channel's pace. On one node a Simple ring's channels
    are unbounded (the xGMI links bound the ring); its LL keeps the graph's rate, and across nodes
    the graph's speed is the NIC's and stays the cap."""
    one = _p2p_ctx(profile, 8, 1)
    assert (one.graph.n_channels, one.graph.bw_intra_GBps) == (16, 20.0)
    assert t.rccl_ring_unpaced(one, "ring")
    assert t.channel_bw_GBps(one, "ring", "simple") == float("inf")
    assert t.channel_bw_GBps(one, "ring", "ll") <= one.graph.bw_intra_GBps
    two = _p2p_ctx(profile, 16, 2)
    assert not t.rccl_ring_unpaced(two, "ring")
    assert t.channel_bw_GBps(two, "ring", "simple") == pytest.approx(two.graph.bw_intra_GBps)
    # NCCL's one-node rings keep their graph's speed (NCCL's CTAs: ring_cta_GBps)
    assert not t.rccl_ring_unpaced(_p2p_ctx("dgx-h100", 8, 1), "ring")


@pytest.mark.parametrize("version,devices,choice", [
    ("2.19.3", (16, 12.5), ("tree", "simple")),  # each 100 Gb/s port a device: 16 channels at 12 GB/s
    ("2.20.3", (8, 25.0), ("ring", "simple")),   # IB_MERGE_NICS: one 200 Gb/s device per NIC
    ("2.29.3", (8, 25.0), ("ring", "simple")),
])
def test_nccl_before_2_20_gives_each_port_of_a_dual_port_nic_its_own_channels(version, devices, choice):
    """Oracle's A100 nodes: 8 dual-port ConnectX-6 Dx, 2 x 100 Gb/s (oci-hpc-oke's topology file lists two
    ``net`` per ``nic``). NCCL 2.19's IB plugin makes each port a network device, 2.20's merges them
    (net_ib.cc IB_MERGE_NICS). With 16 ports the 2-node graph has 16 channels at 12 GB/s and Tree
    outrates Ring at 1-8 GiB: the NCCL 2.19.3 sweep reaches 219-238 GB/s busbw there, above the
    8 x 200 Gb/s x 0.95 = 190 GB/s that bounds any ring across two nodes, where the pinned Ring of
    NCCL 2.29.3 on the same NICs measures 185-189 (data/nccl/a100x16_allreduce_2node_oci_*)."""
    from simulator.config.hardware import load_profile
    p = load_profile("dgx-a100")
    nics = p.node.nics.model_copy(update={"ports": 2, "transport": "roce"})
    oci = p.model_copy(update={"node": p.node.model_copy(update={"nics": nics}), "nccl": {"version": version}})
    assert g.net_devices(oci) == devices
    ctx = g.context_from_profile(oci, 16, 2)
    assert (ctx.graph.n_channels, ctx.graph.bw_inter_GBps) == (devices[0], 24.0 if devices[0] == 8 else 12.0)
    assert t.select(ctx, "allreduce", 8 << 30) == choice
    # a single-port NIC is one device in every release
    single = p.model_copy(update={"nccl": {"version": version}})
    assert g.net_devices(single) == (8, 25.0)


def test_a_channel_floor_runs_each_graph_channel_on_more_ctas():
    """NCCL_MIN_NCHANNELS=32 (``min_channels``) on 8 graph channels of 2 x 8 H100: ncclTopoPostset copies
    the duplicated 16 rings up to 32, four CTAs per graph channel. A Simple channel then runs at its
    graph rate (48 < 4 x 20.6) and an LL128 one at its wire share, 48 x 120/128 = 45 GB/s, instead of
    NCCL's per-channel LL128 cap for two CTAs (36.7); NCCL's own rating (the choice) is unchanged."""
    two_nodes = _p2p_ctx("dgx-h100", 16, 2)
    floor = replace(two_nodes, constants=replace(two_nodes.constants, min_channels=32))
    assert t.ring_ctas_per_channel(two_nodes) == 2 and t.ring_ctas_per_channel(floor) == 4
    assert t.channel_bw_GBps(two_nodes, "ring", "ll128") == pytest.approx(36.7)
    assert t.channel_bw_GBps(floor, "ring", "ll128") == pytest.approx(48 * 120 / 128)
    assert t.channel_bw_GBps(floor, "ring", "simple") == pytest.approx(48.0)
    assert t.algo_bandwidth_GBps(t.selection_context(floor), "allreduce", "ring", "ll128") == \
        t.algo_bandwidth_GBps(two_nodes, "allreduce", "ring", "ll128")
    # a floor below the duplicated rings changes nothing; above MAXCHANNELS (64 from 2.25) it stops there
    assert t.ring_ctas_per_channel(replace(floor, constants=replace(floor.constants, min_channels=8))) == 2
    assert t.ring_ctas_per_channel(replace(floor, constants=replace(floor.constants, min_channels=128))) == 8
    old = replace(floor, graph=replace(floor.graph, max_channels=32))  # MAXCHANNELS 32: up to v2.24.3-1
    assert t.ring_ctas_per_channel(replace(old, constants=replace(old.constants, min_channels=64))) == 4


def test_the_networks_ll128_fraction_slows_a_rings_ctas_not_its_nic_share():
    """A ring's LL128 rate across nodes is min(the graph's 48 x 120/128 = 45 GB/s NIC share, CTAs x
    NCCL's LL128 cap); the network's LL128 fraction (``ll128_fraction``, collectives.channel_fraction)
    scales the CTAs' part. Two CTAs per graph channel (36.7 GB/s) run at x 0.9 of it (33.0); four (the
    NCCL_MIN_NCHANNELS=32 floor, 73.4 GB/s) stay at the NIC share until the fraction is below
    45 / 73.4 = 0.61. On the bundled 128 x 8 H100 RoCE sweep (nccl-tests issue #322) that is the
    measured 364-367 GB/s busbw at 8-16 GiB against 8 x 45 x 0.9 = 324 with the fraction on the bytes."""
    two_nodes = _p2p_ctx("dgx-h100", 16, 2)
    floor = replace(two_nodes, constants=replace(two_nodes.constants, min_channels=32))
    assert t.channel_bw_GBps(two_nodes, "ring", "ll128", ll128_fraction=0.9) == pytest.approx(0.9 * 36.7)
    for fraction in (1.0, 0.9, 0.7, 0.62):
        assert t.channel_bw_GBps(floor, "ring", "ll128", ll128_fraction=fraction) == pytest.approx(48 * 120 / 128)
    assert t.channel_bw_GBps(floor, "ring", "ll128", ll128_fraction=0.5) == pytest.approx(0.5 * 2 * 36.7)
    assert t.channel_bw_GBps(floor, "ring", "simple", ll128_fraction=0.5) == pytest.approx(48.0)


@pytest.mark.parametrize("arch,version,domains,expected", [
    ("hopper", None, 1, 16), ("hopper", "2.26.2", 2, 16),  # NVLS_NCHANNELS_SM90
    ("blackwell", "2.25.1", 1, 32), ("blackwell", "2.26.2", 1, 32),  # NVLS_NCHANNELS_SM100, any communicator
    ("blackwell", "2.27.7", 1, 24), ("blackwell", None, 1, 24),  # from 2.27.3: SM100_NVL inside one node/clique
    ("blackwell", "2.27.7", 2, 32), ("blackwell", "2.29.2", 20, 32),  # spanning domains keeps SM100
])
def test_nvls_channels_follow_nvls_cc_by_release_and_domain(arch, version, domains, expected):
    """nvls.cc ncclNvlsInit of v2.26.2-1 (32 on compCap >= 100) and v2.27.7-1 (24 inside one clique)."""
    assert g.nvls_channel_count(arch, version, domains) == expected

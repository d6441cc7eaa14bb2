"""Collectives as flows: closed forms on simple topologies, conservation of wire volume,
contention on a shared NIC, and agreement between the event-driven and closed-form timings."""

from __future__ import annotations

import pytest

from simulator.config.hardware import HardwareProfile
from simulator.costs import nccl_graph, nccl_tuner, nvls_pipeline
from simulator.costs.collectives import (
    effective_capacity_Bps, phase_time_s, plan_collective,
)
from simulator.costs.deployed import NEUTRAL
from simulator.errors import InputError
from simulator.hardware.topology import build_topology
from simulator.costs.model import CostModel
from simulator.replay.single_collective import simulate_plans, time_collective as _time_collective


def time_collective(op, gpus, size, topo, algo=None, proto=None, **kw):
    return _time_collective(op, gpus, size, CostModel(topo, algo, proto), **kw)


def closed_form_time(op, gpus, size, topo, algo=None, proto=None):
    costs = CostModel(topo, algo, proto)
    return costs.time_alone_s(costs.plan(op, gpus, size))

LINK_GBPS = 100.0
NIC_GBPS = 400.0  # 50 GB/s


def _profile(gpus=4, nics=4, nvls=False, su_eff=1.0, nic_eff=1.0, arch="hopper") -> HardwareProfile:
    return HardwareProfile.model_validate({
        "name": "toy",
        "gpu": {"name": "toy", "arch": arch, "sms": 100, "bf16_TFLOPS": 100, "fp16_TFLOPS": 100, "fp32_TFLOPS": 10,
                "hbm_GiB": 80, "hbm_GBps": 2000, "gemm_efficiency": [{"flops": 1e9, "efficiency": 0.5}]},
        "node": {"gpus": gpus,
                 # 10 NVLinks at NCCL's 20.6 GB/s give the tuner 6 channels x 30 GB/s = 180 GB/s, above
                 # the 100 GB/s link, so the link (not the per-channel cap) bounds Simple rings.
                 "scale_up": {"kind": "nvswitch", "link_GBps": LINK_GBPS, "links_per_gpu": 10, "latency_us": 0.5,
                              "nvls": nvls, "efficiency": su_eff},
                 "pcie": {"gen": 5, "GBps": 200, "latency_us": 1.0},
                 "nics": {"count": nics, "Gbps": NIC_GBPS, "latency_us": 1.0, "efficiency": nic_eff}},
        # NCCL's own constants, not a deployed fabric's (costs/deployed.py): the closed forms here
        # are of the structure, and the deployed protocol efficiencies add wire bytes by design.
        "nccl": NEUTRAL.overrides(),
    })


def _latency(op, topo, n, nodes, algo, proto):
    ctx = nccl_graph.context_from_profile(topo.profile, n, nodes)
    return nccl_tuner.latency_us(ctx, op, algo, proto) * 1e-6


@pytest.mark.parametrize("n", [2, 4])
def test_ring_allgather_one_switch_closed_form(n):
    topo = build_topology(_profile(), 1)
    size = 64 << 20
    r = time_collective("allgather", list(range(n)), size, topo, "ring", "simple")
    expected = _latency("allgather", topo, n, 1, "ring", "simple") + (n - 1) / n * size / (LINK_GBPS * 1e9)
    assert r.time_s == pytest.approx(expected, rel=1e-6)
    assert r.algorithm == "ring" and r.protocol == "simple"


def test_link_efficiency_scales_the_bandwidth_term():
    size = 64 << 20
    t1 = time_collective("allgather", [0, 1, 2, 3], size, build_topology(_profile(su_eff=1.0), 1), "ring", "simple")
    t2 = time_collective("allgather", [0, 1, 2, 3], size, build_topology(_profile(su_eff=0.5), 1), "ring", "simple")
    lat = _latency("allgather", build_topology(_profile(), 1), 4, 1, "ring", "simple")
    assert (t2.time_s - lat) == pytest.approx(2 * (t1.time_s - lat), rel=1e-6)


def test_ll_protocol_moves_twice_the_bytes():
    topo = build_topology(_profile(), 1)
    size = 1 << 20
    simple = plan_collective("allreduce", [0, 1, 2, 3], size, topo, algo="ring", proto="simple")
    ll = plan_collective("allreduce", [0, 1, 2, 3], size, topo, algo="ring", proto="ll")
    ll128 = plan_collective("allreduce", [0, 1, 2, 3], size, topo, algo="ring", proto="ll128")
    assert ll.wire_bytes == pytest.approx(2 * simple.wire_bytes)
    assert ll128.wire_bytes == pytest.approx(128 / 120 * simple.wire_bytes)


@pytest.mark.parametrize("op,per_rank", [
    ("allgather", lambda n, s: (n - 1) / n * s),
    ("reducescatter", lambda n, s: (n - 1) / n * s),
    ("allreduce", lambda n, s: 2 * (n - 1) / n * s),
    ("alltoall", lambda n, s: (n - 1) / n * s),
    ("sendrecv", lambda n, s: s),
])
@pytest.mark.parametrize("nodes", [1, 2])
def test_conservation_of_wire_volume(op, per_rank, nodes):
    topo = build_topology(_profile(), nodes)
    n = 4 * nodes
    size = 3 << 20
    algo = {"alltoall": "direct", "sendrecv": "p2p"}.get(op, "ring")
    plan = plan_collective(op, list(range(n)), size, topo, algo=algo, proto="simple")
    assert plan.wire_bytes == pytest.approx(n * per_rank(n, size), rel=1e-9)


def test_broadcast_chain_moves_size_per_hop():
    topo = build_topology(_profile(), 2)
    plan = plan_collective("broadcast", list(range(8)), 1 << 20, topo, proto="simple")
    assert plan.wire_bytes == pytest.approx(7 * (1 << 20))


def test_nvls_allreduce_link_loads():
    topo = build_topology(_profile(nvls=True), 1)
    size = 256 << 20
    plan = plan_collective("allreduce", [0, 1, 2, 3], size, topo, algo="nvls")
    ctx = nccl_graph.context_from_profile(topo.profile, 4, 1)
    eff = nccl_tuner.nvls_efficiency(ctx)
    # the chunk pipeline's fill: two more rounds of channels x 4 heads chunks (costs/nvls_pipeline.py)
    fill = nvls_pipeline.nvls_fill_factor(size, plan.channels * 4)
    assert fill > 1
    # each GPU pushes S (reduce reads) + S/n (its reduced shard) up, and receives the same down
    assert plan.wire_bytes == pytest.approx(8 * (1 + 1 / 4) * size / eff * fill)
    r = time_collective("allreduce", [0, 1, 2, 3], size, topo, "nvls")
    assert r.time_s == pytest.approx(25e-6 + (1 + 1 / 4) * size / eff * fill / (LINK_GBPS * 1e9), rel=1e-6)


def test_nvls_rejected_without_in_switch_reduction():
    topo = build_topology(_profile(nvls=False), 1)
    with pytest.raises(InputError, match="nvls needs an NVSwitch"):
        plan_collective("allreduce", [0, 1, 2, 3], 1 << 20, topo, algo="nvls")


def test_two_collectives_sharing_a_nic_take_twice_as_long():
    # One NIC per node: both groups cross it. At 90% efficiency the NIC (45 GB/s), not NCCL's
    # per-channel speed for a 50 GB/s NIC (48 GB/s), bounds the flows.
    topo = build_topology(_profile(gpus=2, nics=1, nic_eff=0.9), 2)
    size = 256 << 20
    a = plan_collective("allgather", [0, 2], size, topo, algo="ring", proto="simple")
    b = plan_collective("allgather", [1, 3], size, topo, algo="ring", proto="simple")
    alone = simulate_plans([a], CostModel(topo))[0] - a.latency_s
    together = simulate_plans([a, b], CostModel(topo))
    assert alone == pytest.approx(0.5 * size / (0.9 * NIC_GBPS / 8 * 1e9), rel=1e-6)
    for t, plan in zip(together, (a, b)):
        assert t - plan.latency_s == pytest.approx(2 * alone, rel=0.02)


def test_collectives_on_different_rails_do_not_slow_each_other():
    topo = build_topology(_profile(gpus=2, nics=2), 2)
    size = 256 << 20
    a = plan_collective("allgather", [0, 2], size, topo, algo="ring", proto="simple")
    b = plan_collective("allgather", [1, 3], size, topo, algo="ring", proto="simple")
    alone = simulate_plans([a], CostModel(topo))[0]
    assert simulate_plans([a, b], CostModel(topo))[0] == pytest.approx(alone, rel=1e-6)


def _with_nvlink(profile: HardwareProfile, link_GBps: float) -> HardwareProfile:
    # enough NCCL-nominal links that the per-channel speed never binds before the link does
    su = profile.node.scale_up.model_copy(update={"link_GBps": link_GBps, "links_per_gpu": int(link_GBps // 10)})
    return profile.model_copy(update={"node": profile.node.model_copy(update={"scale_up": su})})


def test_hierarchical_allreduce_is_bound_by_the_nic():
    # NVLink 400 GB/s per GPU, 4 NICs of 45 GB/s achievable per node.
    topo = build_topology(_with_nvlink(_profile(nic_eff=0.9), 4 * LINK_GBPS), 2)
    size = 512 << 20
    plan = plan_collective("allreduce", list(range(8)), size, topo, algo="hierarchical", proto="simple")
    cap = effective_capacity_Bps(topo)
    intra_rs, inter, intra_ag = (phase_time_s(p, cap) for p in plan.phases)
    # inter-node ring AllReduce of the 1/4 shard between 2 nodes on each rail: 2(M-1)/M * S/4 per NIC
    assert inter == pytest.approx(2 * 1 / 2 * size / 4 / (0.9 * NIC_GBPS / 8 * 1e9), rel=1e-6)
    assert intra_rs == pytest.approx(3 / 4 * size / (4 * LINK_GBPS * 1e9), rel=1e-6)
    assert inter > intra_rs + intra_ag
    # doubling NVLink leaves the NIC phase unchanged; halving the NIC doubles it
    fast = build_topology(_with_nvlink(_profile(nic_eff=0.9), 8 * LINK_GBPS), 2)
    plan2 = plan_collective("allreduce", list(range(8)), size, fast, algo="hierarchical", proto="simple")
    assert phase_time_s(plan2.phases[1], effective_capacity_Bps(fast)) == pytest.approx(inter, rel=1e-6)
    slow = build_topology(_with_nvlink(_profile(nic_eff=0.45), 4 * LINK_GBPS), 2)
    plan3 = plan_collective("allreduce", list(range(8)), size, slow, algo="hierarchical", proto="simple")
    assert phase_time_s(plan3.phases[1], effective_capacity_Bps(slow)) == pytest.approx(2 * inter, rel=1e-6)


@pytest.mark.parametrize("op", ["allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "sendrecv"])
def test_event_driven_and_closed_form_agree(op):
    topo = build_topology(_profile(nvls=True), 2)
    for size in (4096, 1 << 20, 64 << 20):
        r = time_collective(op, list(range(8)), size, topo, event_driven=True)
        assert r.time_s == pytest.approx(closed_form_time(op, list(range(8)), size, topo), rel=1e-6)


def test_large_ring_event_driven_matches_closed_form():
    topo = build_topology(_profile(), 16)  # 64 ranks, 4 rails: hundreds of flows
    for op in ("allreduce", "allgather"):
        ev = time_collective(op, list(range(64)), 32 << 20, topo, event_driven=True)
        cf = time_collective(op, list(range(64)), 32 << 20, topo, event_driven=False)
        assert ev.time_s == pytest.approx(cf.time_s, rel=1e-6)


def test_ring_flows_are_merged_across_channels():
    topo = build_topology(_profile(), 1)
    plan = plan_collective("allgather", [0, 1, 2, 3], 1 << 30, topo, algo="ring", proto="simple")
    assert plan.channels > 1
    assert plan.n_flows == 4  # one merged flow per ring hop, not one per channel-hop


def test_tuner_choice_follows_size():
    topo = build_topology(_profile(nvls=True), 1)
    assert plan_collective("allreduce", [0, 1, 2, 3], 64, topo).protocol == "ll"
    assert plan_collective("allreduce", [0, 1, 2, 3], 1 << 30, topo).algorithm == "nvls"


def test_bad_groups_are_input_errors():
    topo = build_topology(_profile(), 1)
    with pytest.raises(InputError, match="twice"):
        plan_collective("allgather", [0, 0], 1024, topo)
    with pytest.raises(InputError, match="outside"):
        plan_collective("allgather", [0, 9], 1024, topo)
    with pytest.raises(InputError, match="unknown collective"):
        plan_collective("allmagic", [0, 1], 1024, topo)
    with pytest.raises(InputError, match="does not implement"):
        plan_collective("allgather", [0, 1], 1024, topo, algo="tree")


# ------------------------------------------------------------------ full-mesh rings (MI300X, GH200)

@pytest.mark.parametrize("n", [3, 4, 5, 6, 7, 8])
def test_mesh_ring_orders_load_every_peer_link_equally(n):
    from collections import Counter

    from simulator.costs.flow_patterns import hamiltonian_decomposition

    cycles = hamiltonian_decomposition(n)
    arcs = Counter()
    for c in cycles:
        assert sorted(c) == list(range(n))  # a ring visits every GPU once
        arcs.update((c[i], c[(i + 1) % n]) for i in range(n))
    assert len(arcs) == n * (n - 1)  # every ordered pair is used ...
    assert len(set(arcs.values())) == 1  # ... equally often


def _mesh_profile(gpus: int, link_GBps: float) -> HardwareProfile:
    return HardwareProfile.model_validate({
        "name": "toy-mesh",
        "gpu": {"name": "toy", "arch": "cdna3", "sms": 100, "bf16_TFLOPS": 100, "fp16_TFLOPS": 100, "fp32_TFLOPS": 10,
                "hbm_GiB": 80, "hbm_GBps": 2000, "gemm_efficiency": [{"flops": 1e9, "efficiency": 0.5}]},
        "node": {"gpus": gpus,
                 "scale_up": {"kind": "mesh", "link_GBps": link_GBps, "links_per_gpu": gpus - 1, "latency_us": 0.5,
                              "efficiency": 1.0},
                 "pcie": {"gen": 5, "GBps": 64, "latency_us": 1.0},
                 "nics": {"count": gpus, "Gbps": 400, "latency_us": 1.0, "efficiency": 1.0}},
    })


def test_mesh_ring_allreduce_uses_all_peer_links():
    # 8 GPUs, 7 links of 20 GB/s each per direction (below RCCL's 48 GB/s per-link rating, so
    # the links, not the per-channel cap, bound Simple): a ring AllReduce moves 2(n-1)/n·S per
    # rank, spread evenly over 7 links -> time = 2(n-1)/n·S / (7 × 20 GB/s).
    topo = build_topology(_mesh_profile(8, 20.0), 1)
    size = 1 << 30
    plan = plan_collective("allreduce", list(range(8)), size, topo, algo="ring", proto="simple")
    expected = plan.latency_s + 2 * 7 / 8 * size / (7 * 20e9)
    assert closed_form_time("allreduce", list(range(8)), size, topo, algo="ring", proto="simple") == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("n", [3, 4, 5, 6, 7, 8, 9, 12, 16])
def test_mesh_paths_load_every_peer_link_equally_and_start_everywhere(n):
    from collections import Counter

    from simulator.costs.flow_patterns import hamiltonian_paths

    paths = hamiltonian_paths(n)
    arcs = Counter()
    for p in paths:
        assert sorted(p) == list(range(n))  # a chain visits every GPU of the node once
        arcs.update(zip(p, p[1:]))
    assert len(arcs) == n * (n - 1) and len(set(arcs.values())) == 1
    assert len(set(Counter(p[0] for p in paths).values())) == 1  # every GPU starts as many chains
    assert len({p[0] for p in paths}) == n


def _mesh_cluster_profile(gpus: int, link_GBps: float) -> HardwareProfile:
    data = _mesh_profile(gpus, link_GBps).model_dump()
    data["scale_out"] = {"kind": "rail_fat_tree", "nodes_per_unit": 32, "spines": 4, "oversubscription": 1.0,
                         "switch_latency_us": 0.3, "cable_latency_us": 0.05}
    data["nccl"] = NEUTRAL.overrides()  # the structure's closed form, not a deployed fabric's efficiencies
    return HardwareProfile.model_validate(data)


@pytest.mark.parametrize("nodes", [2, 3])
def test_multinode_mesh_ring_uses_every_peer_link(nodes):
    # Across nodes each channel enters a node at one GPU and leaves from another; on a full mesh
    # the channels' chains are balanced Hamiltonian paths, so the 56 peer links of an 8-GPU node
    # carry equal shares. 16 channels over 8 NICs of 50 GB/s (400 GB/s a node) and 56 links of
    # 20 GB/s: each link carries 2 of the 16 channel hops, so the links bound the ring at
    # 8 × 20 GB/s of busbw: time = 2(n-1)/n·S / (8 × 20 GB/s). (Chains in local order put all
    # 16 channels on the 7 links i -> i+1: 20 GB/s of busbw in all.)
    topo = build_topology(_mesh_cluster_profile(8, 20.0), nodes)
    gpus = list(range(8 * nodes))
    n, size = len(gpus), 1 << 30
    plan = plan_collective("allreduce", gpus, size, topo, algo="ring", proto="simple")
    assert plan.channels % 8 == 0
    expected = plan.latency_s + 2 * (n - 1) / n * size / (8 * 20e9)
    assert closed_form_time("allreduce", gpus, size, topo, algo="ring", proto="simple") == pytest.approx(expected, rel=1e-6)
    load = {}
    for f in plan.phases[0]:
        for link in f.links:
            load[link] = load.get(link, 0.0) + f.nbytes
    xgmi = [load.get(i, 0.0) for i, k in enumerate(topo.kind) if k == "xgmi"]
    assert len(xgmi) == 56 * nodes and min(xgmi) == pytest.approx(max(xgmi), rel=1e-9) and min(xgmi) > 0


def test_multinode_mesh_tree_chains_spread_over_peer_links():
    topo = build_topology(_mesh_cluster_profile(8, 20.0), 2)
    plan = plan_collective("allreduce", list(range(16)), 1 << 24, topo, algo="tree", proto="simple")
    used = {link for f in plan.phases[0] for link in f.links if topo.kind[link] == "xgmi"}
    assert len(used) == 2 * 56  # each channel's chain is another path: every peer link is used


def test_mi300x_two_node_allreduce_reaches_nic_level_busbw():
    # Measured 2 x 8 MI300X rccl-tests AllReduce plateaus at 357-369 GB/s busbw (issue data,
    # about the 8 x 400 Gb/s NICs); the profile's links bound it at 8 x 64 GB/s x 0.69 = 353 GB/s.
    from simulator.config.hardware import load_profile

    topo = build_topology(load_profile("mi300x"), 2)
    r = time_collective("allreduce", list(range(16)), 8 << 30, topo)
    assert r.algorithm == "ring"
    assert 330e9 < r.busbw <= 8 * 64e9 * 0.69


@pytest.mark.parametrize("ranks", [256, 512])
def test_all_to_all_sends_looked_up_in_chunks_give_the_same_flows(ranks, monkeypatch):
    """Above 128 ranks the All-to-All's sends are made and routed in blocks of source nodes
    (flow_patterns._direct_send_chunks): with chunks far smaller than the group, the pattern
    (routes merged, weights and channel-hops summed) must be the one built from all sends at
    once, to float round-off in the summed weights."""
    from simulator.config.hardware import load_profile
    from simulator.costs import flow_patterns as fp

    topo = build_topology(load_profile("dgx-h100"), ranks // 8)
    lay = fp.layout(topo, list(range(ranks)))
    whole = {links: (w, m) for links, w, m in fp.direct_pattern(topo, lay)}
    monkeypatch.setattr(fp, "ROUTE_CHUNK", 3000)
    assert len(list(fp._direct_send_chunks(lay))) > 1
    chunked = {links: (w, m) for links, w, m in fp.direct_pattern(topo, lay)}
    assert chunked.keys() == whole.keys()
    for links, (w, m) in whole.items():
        assert chunked[links][0] == pytest.approx(w, rel=1e-12) and chunked[links][1] == m


def test_tree_graph_channel_runs_both_trees_through_its_nic():
    """NCCL gives graph channel c the first tree of the double binary tree and its duplicate,
    channel c + nChannels, the second, on the same NIC (connect.cc connectTrees, v2.8.4-1 and
    v2.30.7-1): every NIC of a node carries one channel of each tree, so a node that is inner in
    one tree and a leaf in the other loads its NICs alike. On ABCI's nodes (4 HCAs, 8 GPUs) over
    16 nodes every node's four NIC->switch links carry the same bytes, and a node's total is
    what its two trees send: (1 + 2) / 2 + 1 / 2 = 2 buffers for an inner node with two children
    (position 1 of the first tree, a leaf of the mirrored one)."""
    from simulator.config.hardware import load_profile

    nodes, size = 16, 1 << 26
    topo = build_topology(load_profile("abci-a100"), nodes)
    plan = plan_collective("allreduce", list(range(8 * nodes)), size, topo, algo="tree", proto="simple")
    load: dict[int, float] = {}
    for f in plan.phases[0]:
        for link in f.links:
            load[link] = load.get(link, 0.0) + f.nbytes
    nic_out = {u: d["link"] for u, v, d in topo.graph.edges(data=True) if u.startswith("nic") and v.startswith("leaf")}
    for node in range(nodes):
        out = [load.get(nic_out[f"nic{node}.{r}"], 0.0) for r in range(4)]
        assert min(out) == pytest.approx(max(out), rel=1e-9) and min(out) > 0
    assert sum(load.get(nic_out[f"nic1.{r}"], 0.0) for r in range(4)) == pytest.approx(2 * size, rel=1e-9)

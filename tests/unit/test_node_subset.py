"""A scenario's ``gpus_per_node``: the first N GPUs of every node (config/node_subset.py).

Checked: bad values exit 2 naming the file, the field and the expectation; a ring AllReduce on 2
and 4 GPUs of an NVSwitch node has its closed form; a mesh node used as 4 of 8 GPUs keeps each
peer link's bandwidth and loses the links to the unused peers; the used GPUs keep their own NICs;
N = all GPUs is the default scenario; memory per GPU does not depend on how the GPUs are spread.
"""

from __future__ import annotations

import json

import pytest

from simulator.cli import main
from simulator.config.hardware import available_profiles, load_profile
from simulator.config.node_subset import first_gpus
from simulator.config.scenario import load_scenario
from simulator.costs.model import CostModel
from simulator.costs.nccl_graph import graph_from_profile, mesh_peer_GBps
from simulator.hardware.topology import build_topology
from simulator.replay.single_collective import time_collective
from simulator.schedule.memory import memory_per_gpu
from simulator.simulation import simulate_scenario
from tests.unit.scenario_files import write_scenario

SCENARIO = {"name": "sub", "hardware": "dgx-a100", "nodes": 1,
            "model": {"preset": "llama2-7b", "seq_len": 2048},
            "training": {"micro_batch": 1, "global_batch": 8, "recompute": "none"},
            "parallel": {"tp": 2}}


def _write(tmp_path, **top) -> str:
    return write_scenario(tmp_path, SCENARIO, **top)


@pytest.mark.parametrize("value,expected", [
    (9, "gpus_per_node: expected 1 <= gpus_per_node <= 8 (the GPUs of a dgx-a100 node), got 9"),
    (0, "gpus_per_node: Input should be greater than or equal to 1"),
    ("two", "gpus_per_node: Input should be a valid integer"),
    (True, "gpus_per_node: Input should be a valid integer"),
])
def test_bad_value_exits_2_naming_file_and_field(tmp_path, capsys, value, expected):
    path = _write(tmp_path, gpus_per_node=value)
    assert main(["check", path]) == 2
    err = capsys.readouterr().err
    assert f"{path}: {expected}" in err
    assert "Traceback" not in err


def test_plan_must_divide_nodes_times_n(tmp_path, capsys):
    path = _write(tmp_path, nodes=2, gpus_per_node=2, parallel_tp=8)
    assert main(["check", path]) == 2
    assert (f"{path}: parallel.tp: tp=8 does not divide 4 GPUs (nodes=2 x gpus_per_node=2)"
            in capsys.readouterr().err)


@pytest.mark.parametrize("n", [2, 4])
def test_ring_allreduce_on_n_gpus_of_an_nvswitch_node_closed_form(tmp_path, n):
    """Each GPU keeps its 300 GB/s into the switches: a ring moves 2(n-1)/n of the buffer through
    every GPU's link after the plan's latency, at the link's achievable rate (the profile's
    efficiency, measured on the whole 8-GPU board) scaled by the CTAs' memory accesses per busbw
    byte on n of its GPUs against 8 (costs/ring_work.py: (3n-2)/(n-1), Ampere's P2P reads)."""
    scn = load_scenario(_write(tmp_path, gpus_per_node=n, parallel_tp=n))
    assert (scn.n_gpus, scn.gpus_per_node, scn.dp) == (n, n, 1)
    costs = CostModel(build_topology(scn.profile, scn.nodes), "ring", "simple")
    size = 1 << 30
    gpus = list(range(n))
    plan = costs.plan("allreduce", gpus, size)
    su = scn.profile.node.scale_up
    assert (su.link_GBps, scn.profile.node.nics.count) == (300.0, n)
    assert scn.profile.node.physical_gpus == 8
    accesses = {2: 4.0, 4: 10 / 3, 8: 22 / 7}  # (3n-2)/(n-1)
    expected = plan.latency_s + 2 * (n - 1) / n * size / (300e9 * su.efficiency * accesses[8] / accesses[n])
    assert time_collective("allreduce", gpus, size, costs).time_s == pytest.approx(expected, rel=1e-9)
    # the same ring on the first n GPUs of the whole node
    whole = CostModel(build_topology(load_profile("dgx-a100"), 1), "ring", "simple")
    assert time_collective("allreduce", gpus, size, whole).time_s == pytest.approx(expected, rel=1e-9)


def test_mesh_node_used_as_4_of_8_gpus():
    """MI300X: one 64 GB/s xGMI link to each peer; 4 of 8 GPUs keep 3 links each, at that rate."""
    full = load_profile("mi300x")
    sub = first_gpus(full, 4)
    assert (sub.node.gpus, sub.node.scale_up.links_per_gpu, sub.node.scale_up.link_GBps) == (4, 3, 64.0)
    topo = build_topology(sub, 1)
    xgmi = [i for i, kind in enumerate(topo.kind) if kind == "xgmi"]
    assert len(xgmi) == 4 * 3  # one link each way per pair of used GPUs
    assert set(topo.capacity_Bps[xgmi].tolist()) == {64e9}
    for a in range(4):
        for b in range(4):
            if a != b:
                (link,) = topo.route(a, b).links
                assert topo.kind_of(link) == "xgmi" and topo.capacity_Bps[link] == 64e9
    # RCCL's per-peer figure is unchanged, the ring's intra-node total is 3 peers' worth
    assert mesh_peer_GBps(sub) == mesh_peer_GBps(full) == 48.0
    assert graph_from_profile(sub, 4, 1).n_channels == graph_from_profile(full, 4, 1).n_channels
    # a collective on the 4 used GPUs times as on the first 4 GPUs of the whole node
    whole = CostModel(build_topology(full, 1))
    part = CostModel(build_topology(sub, 1))
    for op in ("allreduce", "allgather", "alltoall"):
        assert time_collective(op, range(4), 1 << 26, part).time_s == pytest.approx(
            time_collective(op, range(4), 1 << 26, whole).time_s, rel=1e-12)


@pytest.mark.parametrize("name", available_profiles())
def test_used_gpus_keep_their_own_nics(name):
    """Every used GPU sends through the NIC it has on the whole node, and two used GPUs share a
    NIC exactly when they share it there; NICs of unused GPUs are gone."""
    full = load_profile(name)
    for n in range(1, full.node.gpus + 1):
        sub = first_gpus(full, n)
        own, got = full.gpu_nics[:n], sub.gpu_nics
        assert len(set(got)) == len(set(own))
        assert all((got[i] == got[j]) == (own[i] == own[j]) for i in range(n) for j in range(n))
        if full.node.nics.count > full.node.gpus:  # several NICs per GPU: the used GPUs' share
            assert sub.node.nics.count / n == full.node.nics.count / full.node.gpus


def test_two_of_eight_gpus_on_two_nodes_use_two_rails():
    sub = first_gpus(load_profile("dgx-h100"), 2)
    topo = build_topology(sub, 2)
    assert (topo.n_gpus, topo.rails) == (4, 2)
    assert [topo.nic_of(g) for g in range(4)] == [0, 1, 0, 1]
    assert [topo.node_of(g) for g in range(4)] == [0, 0, 1, 1]


def test_all_gpus_is_the_default_scenario(tmp_path):
    plain = load_scenario(_write(tmp_path, parallel_tp=8))
    explicit = load_scenario(_write(tmp_path, gpus_per_node=8, parallel_tp=8))
    assert explicit.profile == plain.profile
    a, b = simulate_scenario(plain).report.to_dict(), simulate_scenario(explicit).report.to_dict()
    for doc in (a, b):
        doc.pop("meta", None)
        doc.get("inputs", {}).pop("scenario", None)
        doc.get("inputs", {}).pop("gpus_per_node", None)
    assert a == b


def test_memory_per_gpu_does_not_depend_on_gpus_per_node(tmp_path):
    """The same 8 GPUs and plan (tp=2, dp=4, ZeRO-1) as 1 x 8, 2 x 4 and 4 x 2: the same bytes per GPU."""
    totals = []
    for nodes, n in ((1, 8), (2, 4), (4, 2)):
        scn = load_scenario(_write(tmp_path, nodes=nodes, gpus_per_node=n, parallel_zero=1))
        assert (scn.n_gpus, scn.dp) == (8, 4)
        totals.append(memory_per_gpu(scn))
    assert totals[0].total > 0
    assert totals[1] == totals[0] and totals[2] == totals[0]


def test_sweep_keeps_tp_inside_the_used_gpus(tmp_path):
    """Two nodes of 4 used GPUs: TP stays within the 4 GPUs of a node, the plans cover 8 GPUs."""
    from simulator.sweep.plans import enumerate_plans

    scn = load_scenario(_write(tmp_path, nodes=2, gpus_per_node=4, parallel_tp=1))
    plans = enumerate_plans(scn)
    assert {c.parallel.tp for c in plans} == {1, 2, 4}
    assert all(8 % (c.parallel.tp * c.parallel.pp) == 0 for c in plans)


def test_collective_gpus_per_node_is_the_scenario_key(tmp_path):
    """`collective --gpus-per-node 2 --ranks 4` times the ring on the node a scenario's
    ``gpus_per_node: 2`` builds: two nodes of two GPUs each."""
    out = tmp_path / "c.json"
    assert main(["collective", "--hardware", "dgx-a100", "--op", "allreduce", "--ranks", "4", "--gpus-per-node", "2",
                 "--algo", "ring", "--proto", "simple", "-b", "1G", "-e", "1G", "--json", str(out)]) == 0
    row = json.loads(out.read_text())["rows"][0]
    costs = CostModel(build_topology(first_gpus(load_profile("dgx-a100"), 2), 2), "ring", "simple")
    assert row["time_us"] == pytest.approx(time_collective("allreduce", range(4), 1 << 30, costs).time_s * 1e6,
                                           rel=1e-9)


def test_gpus_sharing_a_nic_keep_sharing_it():
    """AWS p4de: one 100 Gb/s EFA per pair of A100s; the first 2 GPUs of a node have one NIC."""
    sub = first_gpus(load_profile("aws-p4de"), 2)
    topo = build_topology(sub, 2)
    assert (sub.node.nics.count, topo.rails) == (1, 1)
    assert [topo.nic_of(g) for g in range(4)] == [0, 0, 0, 0]
    # one ring channel per NIC the used GPUs have, as on the whole node (4 NICs, 4 channels)
    full = load_profile("aws-p4de")
    assert [graph_from_profile(first_gpus(full, n), 2 * n, 2).n_channels for n in (2, 4, 8)] == [1, 2, 4]

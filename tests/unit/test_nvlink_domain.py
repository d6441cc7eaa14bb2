"""NVLink domains spanning nodes (MNNVL; GB200 NVL72): routes inside a rack are NVLink through
the rack's switch, routes between racks go through the NICs, and NCCL's view (the tuner's
node) is the domain. Every existing profile keeps the node as its domain."""

from __future__ import annotations

import pytest

from simulator.config.hardware import apply_overlay, available_profiles, load_profile
from simulator.costs.collectives import plan_collective
from simulator.costs.flow_patterns import layout
from simulator.costs.model import CostModel
from simulator.errors import InputError
from simulator.hardware.topology import build_topology
from simulator.replay.single_collective import time_collective

GiB = 1 << 30


@pytest.fixture(scope="module")
def two_racks():
    return build_topology(load_profile("gb200-nvl72"), 36)  # 36 trays x 4 GPUs = 2 racks


def test_the_rack_is_one_domain(two_racks):
    t = two_racks
    assert (t.n_gpus, t.gpus_per_node, t.domain_gpus, t.domains) == (144, 4, 72, 2)
    assert [t.domain_of(g) for g in (0, 71, 72, 143)] == [0, 0, 1, 1]
    assert [t.node_of(g) for g in (0, 3, 4, 71, 72)] == [0, 0, 1, 17, 18]
    # One switch vertex per rack, every GPU of the rack on it.
    switches = {v for v in t.graph if v.startswith("nvsw")}
    assert switches == {"nvsw0", "nvsw1"}
    assert t.graph.in_degree("nvsw0") == 72


def test_routes_inside_a_rack_cross_trays_on_nvlink(two_racks):
    t = two_racks
    r = t.route(0, 71)  # tray 0 to tray 17
    assert r.link_class == "nvlink"
    assert [t.kind[link] for link in r.links] == ["nvlink", "nvlink"]
    assert t.route(0, 5).links == (t.route(0, 71).links[0], t.route(1, 5).links[1])
    # Across racks: GPU -> host -> NIC -> leaf [-> spine -> leaf] -> NIC -> host -> GPU.
    x = t.route(0, 72)
    assert x.link_class == "net" and "nic" in {t.kind[link] for link in x.links}
    # The bulk path gives the same routes.
    import numpy as np

    src, dst = np.array([0, 0, 3, 70]), np.array([71, 72, 140, 1])
    assert t.route_matrix(src, dst).to_routes() == [t.route(int(s), int(d)) for s, d in zip(src, dst)]


def test_nvls_spans_the_rack_not_two(two_racks):
    r = two_racks.nvls_routes(range(72))
    assert len(r.up) == 72
    with pytest.raises(InputError):
        two_racks.nvls_routes(range(64, 80))


def test_every_other_profile_keeps_the_node_as_its_domain():
    for name in available_profiles():
        p = load_profile(name)
        if name in ("gb200-nvl72", "gb300-nvl72"):
            continue
        t = build_topology(p, 2)
        assert p.nvlink_domain_gpus == p.node.gpus
        assert all(t.domain_of(g) == t.node_of(g) for g in range(t.n_gpus))


def test_a_domain_must_be_whole_nodes_on_a_switch():
    p = load_profile("gb200-nvl72")
    with pytest.raises(InputError, match="domain_gpus"):
        apply_overlay(p, {"node": {"scale_up": {"domain_gpus": 70}}})
    mesh = load_profile("gh200-alps")
    with pytest.raises(InputError, match="nvswitch"):
        apply_overlay(mesh, {"node": {"scale_up": {"domain_gpus": 8}}})


def test_the_tuner_sees_one_node_per_rack(two_racks):
    costs = CostModel(two_racks)
    rack = list(range(72))
    lay = layout(two_racks, rack)
    assert len(lay.by_node) == 1 and lay.ppn == 72
    plan = costs.plan("allreduce", rack, 4 * GiB)
    assert plan.algorithm == "nvls"  # NCCL's default with NVLS: in-switch reduction over 72 ranks
    both = costs.plan("allreduce", list(range(144)), 4 * GiB)
    assert both.algorithm == "nvls_tree"


def test_ring_channels_leave_a_rack_through_different_nics(two_racks):
    """Across racks NCCL's graph sees one node with 72 NICs: channel c enters at GPU c*72/n_ch, so
    each channel's inter-rack hop has a NIC of its own (a node-local rail choice would put all
    of them on tray 0's four NICs)."""
    t = two_racks
    plan = plan_collective("allreduce", list(range(144)), 4 * GiB, t, algo="ring", proto="simple")
    loads: dict[int, float] = {}
    for f in plan.phases[0]:
        for link in f.links:
            if t.kind[link] == "nic":
                loads[link] = loads.get(link, 0.0) + f.nbytes
    assert plan.channels >= 8
    # 2 racks x n_ch channels x 2 directions (NIC->leaf and leaf->NIC) distinct NIC links.
    assert len(loads) == 2 * 2 * plan.channels
    assert len(set(loads.values())) == 1  # every one carries the same bytes


def test_one_rack_ring_is_as_fast_as_its_nvlink(two_racks):
    """A ring over the 72 GPUs of one rack moves 2(n-1)/n x S through every GPU's NVLink port
    (0.83 x 900 GB/s), capped by NCCL's channels (16 x 45 GB/s): busbw = min of the two."""
    costs = CostModel(two_racks)
    r = time_collective("allreduce", list(range(72)), 16 * GiB, costs, algo="ring", proto="simple")
    plan = costs.plan("allreduce", list(range(72)), 16 * GiB, algo="ring", proto="simple")
    flow_s = r.time_s - plan.latency_s
    busbw = 2 * 71 / 72 * 16 * GiB / flow_s
    assert busbw == pytest.approx(min(0.83 * 900e9, 16 * 45e9), rel=1e-6)

"""Topology: placement, routes through the fabric, and link capacities from the profile numbers.

Expected capacities are recomputed here from the profile's datasheet fields (GB/s, Gb/s), and the
expected paths from the rail-optimised fat-tree rules (SP-H100: same rail in one unit = one leaf
hop; other rails or other units cross a spine).
"""

from __future__ import annotations

import pytest

from simulator.config.hardware import load_profile
from simulator.errors import InputError
from simulator.hardware import Route, build_topology


def _h100(**scale_out):
    p = load_profile("dgx-h100")
    if scale_out:
        p = p.model_copy(update={"scale_out": p.scale_out.model_copy(update=scale_out)})
    return p


def _vertices(topo, route: Route) -> list[str]:
    """The vertex path a route's links trace in the graph (asserting the links are contiguous)."""
    by_id = {d["link"]: (u, v) for u, v, d in topo.graph.edges(data=True)}
    path = [by_id[route.links[0]][0]]
    for link in route.links:
        u, v = by_id[link]
        assert u == path[-1], f"link {link} ({u}->{v}) does not continue the path {path}"
        path.append(v)
    return path


def test_counts_and_placement():
    t = build_topology(_h100(), 3)
    assert (t.nodes, t.gpus_per_node, t.n_gpus) == (3, 8, 24)
    gpus = [v for v in t.graph.nodes if v.startswith("gpu")]
    assert len(gpus) == 24
    assert [t.node_of(g) for g in (0, 7, 8, 23)] == [0, 0, 1, 2]
    assert [t.local_of(g) for g in (0, 7, 8, 23)] == [0, 7, 0, 7]
    # one edge per link id, arrays aligned with the link ids
    assert t.graph.number_of_edges() == t.n_links == len(t.capacity_Bps) == len(t.latency_s) == len(t.kind)
    assert sorted(d["link"] for _, _, d in t.graph.edges(data=True)) == list(range(t.n_links))


def test_intra_node_nvswitch_is_one_switch_hop_at_per_gpu_nvlink_bandwidth():
    p = _h100()
    t = build_topology(p, 2)
    r = t.route(1, 6)
    assert r.link_class == "nvlink"
    assert _vertices(t, r) == ["gpu1", "nvsw0", "gpu6"]
    assert all(t.capacity_Bps[link] == p.node.scale_up.link_GBps * 1e9 for link in r.links)
    assert t.capacity_Bps[r.links[0]] == 450e9  # 18 NVLink4 links x 25 GB/s (HARDWARE.md §1c)
    assert r.latency_s == pytest.approx(p.node.scale_up.latency_us * 1e-6)


def test_xgmi_mesh_is_a_direct_peer_link():
    p = load_profile("mi300x")
    t = build_topology(p, 1)
    r = t.route(2, 5)
    assert _vertices(t, r) == ["gpu2", "gpu5"]
    assert t.kind[r.links[0]] == "xgmi" and r.link_class == "nvlink"
    assert t.capacity_Bps[r.links[0]] == 64e9
    # 7 peers x 64 GB/s = 448 GB/s all-to-all per GPU (HARDWARE.md §1c)
    out = sum(t.capacity_Bps[d["link"]] for _, _, d in t.graph.out_edges("gpu0", data=True) if d["kind"] == "xgmi")
    assert out == pytest.approx(448e9)


def test_pcie_node_goes_through_the_host_bridge():
    p = load_profile("a100-pcie")
    t = build_topology(p, 1)
    r = t.route(0, 1)
    assert r.link_class == "pcie"
    assert _vertices(t, r) == ["gpu0", "host0", "gpu1"]
    assert all(t.capacity_Bps[link] == p.node.pcie.GBps * 1e9 for link in r.links)


def test_same_rail_same_unit_is_one_leaf_hop():
    p = _h100()
    t = build_topology(p, 4)
    r = t.route(3, 2 * 8 + 3)  # local 3 of node 0 -> local 3 of node 2
    assert r.link_class == "net"
    path = _vertices(t, r)
    assert path == ["gpu3", "host0", "nic0.3", "leaf0.3", "nic2.3", "host2", "gpu19"]
    assert not any(v.startswith("spine") for v in path)
    nic = p.node.nics.Gbps * 1e9 / 8
    assert t.capacity_Bps[r.links[2]] == nic == 50e9
    # latency closed form: one PCIe traversal (GPU->host->NIC) each side, the NIC latency, one
    # switch hop and two cables
    so = p.scale_out
    expected = (2 * p.node.pcie.latency_us + p.node.nics.latency_us + so.switch_latency_us + 2 * so.cable_latency_us) * 1e-6
    assert r.latency_s == pytest.approx(expected)


def test_cross_rail_and_cross_unit_traffic_crosses_a_spine():
    p = _h100(nodes_per_unit=2)
    t = build_topology(p, 4)
    cross_rail = _vertices(t, t.route(0, 8 + 1))  # node 0 rail 0 -> node 1 rail 1, same unit
    assert cross_rail[3] == "leaf0.0" and cross_rail[4].startswith("spine") and cross_rail[5] == "leaf0.1"
    cross_unit = _vertices(t, t.route(0, 2 * 8))  # node 0 -> node 2: other unit, same rail
    assert cross_unit[3] == "leaf0.0" and cross_unit[4].startswith("spine") and cross_unit[5] == "leaf1.0"
    assert len(t.route(0, 16).links) == 8


def test_explicit_rail_is_used_at_both_ends():
    t = build_topology(_h100(), 2)
    path = _vertices(t, t.route(0, 8 + 5, rail=2))
    assert "nic0.2" in path and "nic1.2" in path and not any(v.startswith("spine") for v in path)
    with pytest.raises(InputError):
        t.route(0, 9, rail=8)


def test_ecmp_is_deterministic_and_spreads_over_spines():
    p = _h100(nodes_per_unit=1)
    a, b = build_topology(p, 4), build_topology(p, 4)
    spines = set()
    for src in range(8):
        for dst in range(8, 32):
            pa, pb = _vertices(a, a.route(src, dst)), _vertices(b, b.route(src, dst))
            assert pa == pb
            spines.add(pa[4])
    assert spines == {f"spine{s}" for s in range(p.scale_out.spines)}


def test_leaf_uplinks_carry_downlink_bandwidth_over_oversubscription():
    for over in (1.0, 2.0):
        p = _h100(nodes_per_unit=4, oversubscription=over)
        t = build_topology(p, 8)
        up = t.route(0, 4 * 8).links[3]  # leaf0.0 -> spine
        nic = 400e9 / 8
        assert t.kind[up] == "net"
        assert t.capacity_Bps[up] == pytest.approx(4 * nic / over / p.scale_out.spines)


def test_nic_sharing_and_aggregation():
    abci = build_topology(load_profile("abci-a100"), 2)  # 4 HCAs for 8 GPUs
    assert [abci.nic_of(g) for g in range(8)] == [0, 0, 1, 1, 2, 2, 3, 3]
    assert "nic0.0" in _vertices(abci, abci.route(1, 9))
    p5 = build_topology(load_profile("aws-p5"), 2)  # 32 x 100 Gb/s EFA -> 8 logical 400 Gb/s NICs
    assert p5.rails == 8
    nic_link = p5.route(0, 8).links[2]
    assert p5.kind[nic_link] == "nic"
    assert p5.capacity_Bps[nic_link] == pytest.approx(32 * 100e9 / 8 / 8)


def test_routes_are_cached():
    t = build_topology(_h100(), 2)
    assert t.route(0, 9) is t.route(0, 9)
    assert t.route(4, 4).links == ()


def test_nvls_routes_are_the_switch_up_and_down_links():
    t = build_topology(_h100(), 1)
    n = t.nvls_routes([0, 3, 5])
    assert n.up == tuple(t.route(g, (g + 1) % 8).links[0] for g in (0, 3, 5))
    assert n.down == tuple(t.route((g + 1) % 8, g).links[1] for g in (0, 3, 5))
    with pytest.raises(InputError):
        build_topology(load_profile("dgx-a100"), 1).nvls_routes([0, 1])
    with pytest.raises(InputError):
        build_topology(_h100(), 2).nvls_routes([0, 8])


@pytest.mark.parametrize("nodes", [0, -1, 1.5, True, "2"])
def test_bad_node_count_is_an_input_error(nodes):
    with pytest.raises(InputError, match="nodes"):
        build_topology(_h100(), nodes)


def test_gpu_outside_the_cluster_is_an_input_error():
    t = build_topology(_h100(), 1)
    with pytest.raises(InputError, match="outside"):
        t.route(0, 8)


def test_multi_node_without_nics_is_an_input_error():
    p = _h100()
    p = p.model_copy(update={"node": p.node.model_copy(update={"nics": p.node.nics.model_copy(update={"count": 0})})})
    build_topology(p, 1)
    with pytest.raises(InputError, match="nics"):
        build_topology(p, 2)


def test_every_bundled_profile_builds_and_routes():
    from simulator.config.hardware import available_profiles

    for name in available_profiles():
        t = build_topology(load_profile(name), 3)
        last = t.n_gpus - 1
        for src, dst in ((0, 1 % t.n_gpus), (0, last)):
            r = t.route(src, dst)
            if src != dst:
                assert _vertices(t, r)[0] == f"gpu{src}" and _vertices(t, r)[-1] == f"gpu{dst}"


# ---------------------------------------------------------------- bulk routes


@pytest.mark.parametrize("name,nodes", [("dgx-h100", 4), ("mi300x", 3), ("a100-pcie", 2), ("abci-a100", 3), ("aws-p5", 2)])
def test_route_matrix_rows_equal_the_scalar_routes(name, nodes):
    import numpy as np

    p = load_profile(name)
    if name == "dgx-h100":
        p = _h100(nodes_per_unit=2)  # cross-unit pairs cross a spine
    t = build_topology(p, nodes)
    src, dst = (a.ravel() for a in np.meshgrid(np.arange(t.n_gpus), np.arange(t.n_gpus), indexing="ij"))
    for rail in [None, *range(t.rails)]:
        bulk = t.routes_many(src, dst, rail)
        assert bulk == [t.route(int(s), int(d), rail) for s, d in zip(src, dst)]
    # a rail per pair
    rails = np.arange(src.size) % max(1, t.rails)
    assert t.routes_many(src, dst, rails) == [t.route(int(s), int(d), int(r)) for s, d, r in zip(src, dst, rails)]


def test_route_matrix_entries_and_link_loads_conserve_bytes():
    import numpy as np

    t = build_topology(_h100(nodes_per_unit=1), 4)
    src = np.arange(t.n_gpus)
    dst = (src + 9) % t.n_gpus
    m = t.route_matrix(src, dst)
    pair, link = m.entries()
    assert len(pair) == int(m.n_links.sum()) == sum(len(t.route(int(s), int(d)).links) for s, d in zip(src, dst))
    w = np.arange(1.0, t.n_gpus + 1)
    loads = m.link_loads(w, t.n_links)
    # every byte is counted once per link it crosses
    assert loads.sum() == pytest.approx(float((w * m.n_links).sum()))
    assert loads[t.route(0, 9).links[0]] == pytest.approx(w[0])  # GPU0's PCIe uplink carries only its own flow


def test_vectorised_ecmp_hash_matches_the_scalar_one():
    import numpy as np

    from simulator.hardware.route_tables import _ecmp, _ecmp_many

    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 1 << 20, 2000), rng.integers(0, 1 << 20, 2000)
    for buckets in (1, 7, 32):
        assert _ecmp_many(a, b, buckets).tolist() == [_ecmp(int(x), int(y), buckets) for x, y in zip(a, b)]


def test_route_matrix_rejects_bad_gpus_and_rails():
    t = build_topology(_h100(), 2)
    with pytest.raises(InputError, match="outside"):
        t.route_matrix([0, 1], [3, 16])
    with pytest.raises(InputError, match="rail"):
        t.route_matrix([0], [9], rail=8)
    assert t.route_matrix([5], [5]).n_links.tolist() == [0]

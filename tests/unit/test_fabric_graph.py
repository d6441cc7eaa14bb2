"""Routes are the fabric graph's: every route is a path of ``Topology.graph``, its switch part one
of the equal-cost shortest switch paths, picked by the ECMP hash; the tree tables (closed form)
and the dragonfly's graph search give the same answer as a search of the whole graph."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from simulator.config.hardware import apply_overlay, load_profile
from simulator.costs.collectives import plan_collective
from simulator.hardware.route_tables import _ecmp, shortest_switch_paths
from simulator.hardware.topology import build_topology


def _switch_graph(topo) -> nx.DiGraph:
    g = topo.graph
    return g.subgraph(v for v in g if v.startswith(("leaf", "spine")))


def _vertices(topo, links):
    ends = {d["link"]: (u, v) for u, v, d in topo.graph.edges(data=True)}
    return [ends[link] for link in links]


@pytest.mark.parametrize("profile,nodes", [("dgx-h100", 64), ("gh200-alps", 40)])
def test_tree_tables_are_the_graph_shortest_paths(profile, nodes):
    """Across scalable units a route goes leaf -> spine -> leaf; the spine the table gives is the
    ECMP pick among the graph's equal-cost switch paths, sorted by link id."""
    t = build_topology(load_profile(profile), nodes)
    sw = _switch_graph(t)
    rng = np.random.default_rng(0)
    checked = 0
    for src, dst in rng.integers(0, t.n_gpus, size=(300, 2)).tolist():
        if t.node_of(src) == t.node_of(dst):
            continue
        route = t.route(src, dst)
        hops = _vertices(t, route.links)
        assert hops[0][0] == f"gpu{src}" and hops[-1][1] == f"gpu{dst}"
        assert all(a[1] == b[0] for a, b in zip(hops, hops[1:]))  # a path of the graph
        leaves = [i for i, (u, v) in enumerate(hops) if u.startswith("leaf")]
        first = next(i for i, (u, v) in enumerate(hops) if v.startswith("leaf"))
        ls, ld = hops[first][1], hops[leaves[-1]][0]
        if ls == ld:
            continue
        paths = shortest_switch_paths(sw, ls, ld)
        assert tuple(route.links[first + 1:leaves[-1]]) == tuple(paths[_ecmp(src, dst, len(paths))].tolist())
        checked += 1
    assert checked > 50


@pytest.fixture(scope="module")
def dragonfly():
    p = apply_overlay(load_profile("gh200-alps"), {"scale_out": {"kind": "dragonfly", "nodes_per_unit": 4,
                                                                 "oversubscription": 2.0}})
    return build_topology(p, 16)  # 4 groups of 4 nodes of 4 GPUs


def test_dragonfly_routes_cross_one_global_link(dragonfly):
    t = dragonfly
    for src, dst in ((0, 63), (5, 20), (17, 3)):
        r = t.route(src, dst)
        kinds = [t.kind[link] for link in r.links]
        assert kinds.count("net") == 1 and r.link_class == "net"
        (u, v), = [e for e in _vertices(t, r.links) if e[0].startswith("leaf") and e[1].startswith("leaf")]
        assert (u, v) == (f"leaf{t.node_of(src) // 4}.0", f"leaf{t.node_of(dst) // 4}.0")
    # Inside a group: NIC -> the group's switch -> NIC, no global link.
    assert "net" not in [t.kind[link] for link in t.route(0, 12).links]
    src = np.arange(64)
    dst = (src * 7 + 5) % 64
    assert t.route_matrix(src, dst).to_routes() == [t.route(int(a), int(b)) for a, b in zip(src, dst)]


def test_dragonfly_global_links_carry_the_tapered_injection(dragonfly):
    """A group injects 4 nodes x 4 NICs x 200 Gb/s; over oversubscription 2 and the 3 other
    groups, each group pair's global link carries 400 Gb/s x 4 x 4 / 2 / 3 each way."""
    t = dragonfly
    net = [i for i, k in enumerate(t.kind) if k == "net"]
    assert len(net) == 4 * 3
    assert t.capacity_Bps[net] == pytest.approx(np.full(12, 4 * 4 * 200e9 / 8 / 2 / 3))


def test_an_all_to_all_loads_every_global_link_alike(dragonfly):
    t = dragonfly
    plan = plan_collective("alltoall", list(range(64)), 64 << 20, t)
    load: dict[int, float] = {}
    for f in plan.phases[0]:
        for link in f.links:
            if t.kind[link] == "net":
                load[link] = load.get(link, 0.0) + f.nbytes
    assert len(load) == 12
    # Each of a group's 16 GPUs sends S/64 to each of another group's 16, on the one global link
    # of that group pair: 256 sends of the 64 x 63 the plan carries (at its wire inflation).
    size = 64 << 20
    per_send = plan.wire_bytes / (64 * 63)
    values = np.array(list(load.values()))
    assert values == pytest.approx(np.full(12, 256 * per_send))
    assert per_send >= size / 64

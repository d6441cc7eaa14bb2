"""A data-parallel ring over hundreds of nodes costs the same to plan and replay as one over a
few: its pattern is merged with one ``np.unique`` over the hops' routes, a phase none of whose
links two flows cross is decomposed as arrays (``solo_phases.LoneComponents``: every flow a
component alone), and a phase scaled from another shares its components
(``ScaledComponents``). Each must give exactly what the explicit per-hop, per-component path
gives; these tests compare them on small fabrics, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from simulator.config.hardware import load_profile
from simulator.costs import flow_patterns as fp
from simulator.costs.collectives import effective_capacity_Bps, plan_collective
from simulator.hardware import build_topology
from simulator.replay.flow_records import checked_flows
from simulator.replay.solo_phases import (Component, LoneComponents, PhaseShapes, ScaledComponents, _decompose,
                                          _flow_table, phase_shape)
from tests.unit.test_solo_phases import _same


def _explicit_ring(topo, lay, n_ch, closed=True):
    """ring_pattern hop by hop: every channel's hops routed one by one with ``Topology.route``
    and added into a dict keyed by route, in hop order."""
    acc: dict[tuple[int, ...], list[float]] = {}
    rings = fp._ring_orders(topo, lay, n_ch)
    per_ring = n_ch / len(rings)
    for order, rail in rings:
        if not closed:
            i0 = order.index(lay.gpus[0])
            order = order[i0:] + order[:i0]
        hops = len(order) if closed else len(order) - 1
        for a, b in zip(order[:hops], (order[1:] + order[:1])[:hops]):
            r = rail if rail is not None else (topo.nic_of(a) if topo.rails else 0)
            e = acc.setdefault(topo.route(a, b, r).links, [0.0, 0])
            e[0] += per_ring / n_ch
            e[1] += per_ring
    return [(links, w, m) for links, (w, m) in acc.items() if links]


def _dp_group(nodes, stride, gpn=8, local=0):
    return [n * gpn + local for n in range(0, nodes, stride)]


@pytest.mark.parametrize("profile,nodes,group,n_ch,closed", [
    ("dgx-h100", 96, _dp_group(96, 2), 1, True),  # one GPU a node over three units: spine hops
    ("dgx-h100", 96, _dp_group(96, 3, local=5), 2, True),
    ("dgx-h100", 96, _dp_group(96, 4), 12, False),  # a broadcast chain
    ("dgx-h100", 4, list(range(32)), 16, True),  # whole nodes: rings rotated to each rail
    ("dgx-h100", 2, list(range(8)), 12, True),  # one node
    ("mi300x", 4, list(range(32)), 8, True),  # full-mesh nodes: Hamiltonian paths
    ("polaris-a100", 4, list(range(16)), 4, True),  # cross-NIC rings
    ("gb200-nvl72", 36, list(range(0, 144, 2)), 16, True),  # NVLink domains of 18 nodes
])
def test_ring_pattern_equals_the_hops_routed_one_by_one(profile, nodes, group, n_ch, closed):
    topo = build_topology(load_profile(profile), nodes)
    lay = fp.layout(topo, group)
    got = fp.ring_pattern(topo, lay, n_ch, closed)
    want = _explicit_ring(topo, lay, n_ch, closed)
    assert got == want  # same routes, same order, same float sums
    assert [type(x) for _, w, m in got for x in (w, m)] == [float] * (2 * len(got))


@pytest.mark.parametrize("profile", ["dgx-h100", "mi300x", "a100-pcie", "gb200-nvl72"])
def test_effective_capacity_by_runs_equals_link_by_link(profile):
    topo = build_topology(load_profile(profile), 36 if profile == "gb200-nvl72" else 4)
    node = topo.profile.node
    su, nic = node.scale_up.efficiency, node.nics.efficiency
    table = {"nvlink": su, "xgmi": su, "pcie": su if node.scale_up.kind == "pcie" else nic, "nic": nic, "net": nic}
    want = np.asarray(topo.capacity_Bps) * np.array([table.get(k, 1.0) for k in topo.kind])
    assert sum(n for _, n in topo.kind_runs) == topo.n_links == len(topo.kind)
    assert [topo.kind_of(link) for link in range(topo.n_links)] == topo.kind
    assert np.array_equal(effective_capacity_Bps(topo), want)


@pytest.fixture(scope="module")
def fabric():
    """96 DGX H100 over three scalable units: a DP ring of one GPU per node crosses spines."""
    topo = build_topology(load_profile("dgx-h100"), 96)
    return topo, effective_capacity_Bps(topo)


def _same_shape(a, b):
    assert len(a.components) == len(b.components)
    for x, y in zip(a.components, b.components):
        assert (x.flows, x.links, x.duration, x.scale) == (y.flows, y.links, y.duration, y.scale)
        assert [(s.t, s.alive, s.rem, s.rate) for s in x.segments] == [(s.t, s.alive, s.rem, s.rate) for s in y.segments]
    for name in ("links", "component_of_link", "entry_comp", "comp_bytes", "comp_flows", "flow_ptr", "flow_links",
                 "flow_bytes", "sizes", "caps", "comp_durations"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and np.array_equal(x, y), name
    assert (a.linkless, a.duration, a.total_bytes, a.specs) == (b.linkless, b.duration, b.total_bytes, b.specs)
    for x, y in zip(a.link_totals(), b.link_totals()):
        assert np.array_equal(x, y)


@pytest.mark.parametrize("op,size", [("reducescatter", 96 << 20), ("allgather", 3 << 20), ("allreduce", 1 << 30)])
def test_lone_components_equal_the_union_find(fabric, op, size):
    """A DP ring's phase has no link two flows cross: decomposed as arrays it is, component by
    component and bit for bit, what the union-find and per-component loop give."""
    topo, cap = fabric
    plan = plan_collective(op, _dp_group(96, 2), size, topo, algo="ring")
    phase = plan.phases[0]
    fast = phase_shape(phase, cap, cap.tolist())
    assert isinstance(fast.components, LoneComponents) and len(fast.components) == len(phase)
    slow = _decompose(*_flow_table(phase, cap.size), cap, cap.tolist(), lone=False)
    assert isinstance(slow.components, list)
    _same_shape(fast, slow)


def test_a_scaled_shape_equals_its_components_scaled_one_by_one(fabric):
    topo, cap = fabric
    small, big = (plan_collective("reducescatter", _dp_group(96, 2), size, topo, algo="ring", proto="simple").phases[0]
                  for size in (8 << 20, 40 << 20))
    shapes = PhaseShapes(cap, cap.tolist())
    base = shapes.get(small)
    got = shapes.get(big)
    assert isinstance(got.components, ScaledComponents)
    k = float(got.sizes[0] / base.sizes[0])
    want = [Component(c.flows, c.links, c.duration * k, c.segments, c.scale * k) for c in base.components]
    assert [(c.flows, c.links, c.duration, c.scale) for c in got.components] == \
        [(c.flows, c.links, c.duration, c.scale) for c in want]
    assert got.duration == max(c.duration for c in want)
    assert np.array_equal(got.comp_durations, [c.duration for c in want])
    assert got.components[3].segments is base.components[3].segments  # shared, not copied
    want_specs = checked_flows(big, cap.size)  # the flows, checked one by one
    assert list(got.specs) == want_specs == [got.specs[i] for i in range(len(got.specs))]


def test_a_long_ring_met_partway_moves_as_flow_by_flow(fabric):
    """A ring over 48 nodes runs as one block of lone components; a send/recv on one of its
    NICs and a second ring on the same rails (other nodes, shared spines) break some of them
    midway: finish times and link bytes as when every flow goes on the network one by one."""
    topo, _ = fabric
    ring = plan_collective("reducescatter", _dp_group(96, 2), 64 << 20, topo, algo="ring", proto="simple")
    other = plan_collective("allgather", [g + 8 for g in _dp_group(96, 2)], 32 << 20, topo, algo="ring",
                            proto="simple")
    p2p = plan_collective("sendrecv", [0, 16], 16 << 20, topo)
    _, net, _ = _same(topo, [("ring", 0.0, ring.phases, 2), ("p2p", 2e-4, p2p.phases, 1),
                             ("other", 5e-4, other.phases, 1)])
    assert net.stats.components_broken >= 1


def test_link_owners_as_arrays_answer_as_the_claims_do():
    """LinkOwners (link_owners' answer) reads as the dict of claims, and owned_by answers as
    asking every link of a plan in turn."""
    from simulator.replay.exclusive_links import _SHARED, _claim

    rng = np.random.default_rng(3)
    owners = [("dp", (0, 8)), ("dp", (1, 9)), ("p2p", 0, 8), ("tp", (0, 1))]
    links = [np.unique(rng.integers(0, 60, size)) for size in (30, 25, 4, 10)]
    got = _claim(owners, links)
    want: dict = {}
    for owner, ls in zip(owners, links):
        for link in ls.tolist():
            held = want.get(link)
            want[link] = owner if held is None or held == owner else _SHARED
    assert dict(got.items()) == want and len(got) == len(want)
    for owner, ls in zip(owners + [("dp", (2, 10))], links + [links[0]]):
        for subset in (ls, ls[:3], ls[ls % 2 == 0], np.zeros(0, dtype=np.int64), np.array([99])):
            assert got.owned_by(subset, owner) == all(want.get(link) == owner for link in subset.tolist())

"""FlowNetwork.transfer_phase (components timed in closed form while alone) must give the times
transfer_many gives flow by flow: a ring alone, a ring that a co-user meets partway, rings
meeting each other, and the bytes each link carried."""

from __future__ import annotations

import numpy as np
import pytest
import simpy

from simulator.config.hardware import load_profile
from simulator.costs.collectives import effective_capacity_Bps, plan_collective
from simulator.hardware import build_topology
from simulator.replay.links import FlowNetwork
from simulator.replay.solo_phases import phase_shape


@pytest.fixture(scope="module")
def topo():
    return build_topology(load_profile("dgx-h100"), 2)


def _run(topo, jobs, phased: bool):
    """jobs: (name, start, phases (tuples of flows), repeat); each job runs its phases in order
    ``repeat`` times. Returns end times, link bytes at the end, and the network."""
    env = simpy.Environment()
    net = FlowNetwork(env, effective_capacity_Bps(topo))
    done: dict[str, float] = {}

    def proc(name, t0, phases, repeat):
        yield env.timeout(t0)
        for _ in range(repeat):
            for phase in phases:
                yield net.transfer_phase(phase) if phased else net.transfer_many(phase)
        done[name] = env.now

    for job in jobs:
        env.process(proc(*job))
    env.run()
    return done, net.link_bytes, net


def _same(topo, jobs):
    fast, fast_links, fast_net = _run(topo, jobs, True)
    slow, slow_links, slow_net = _run(topo, jobs, False)
    assert fast.keys() == slow.keys()
    for k in slow:
        assert fast[k] == pytest.approx(slow[k], rel=1e-9), k
    assert fast_links == pytest.approx(slow_links, rel=1e-9)
    assert fast_net.stats.bytes_delivered == pytest.approx(slow_net.stats.bytes_delivered, rel=1e-12)
    assert fast_net.stats.flows_finished == slow_net.stats.flows_finished
    return fast, fast_net, slow_net


def test_a_ring_on_two_nodes_alone_is_never_water_filled(topo):
    plan = plan_collective("allgather", list(range(16)), 64 << 20, topo, algo="ring", proto="simple")
    shape = phase_shape(plan.phases[0], effective_capacity_Bps(topo), effective_capacity_Bps(topo).tolist())
    assert len(shape.components) > 1  # hops on separate links: separate components
    fast, fast_net, slow_net = _same(topo, [("ring", 0.0, plan.phases, 3)])
    assert slow_net.stats.recomputes == 3
    assert fast_net.stats.recomputes == 0  # nothing was water-filled: every component ran alone


def test_a_ring_met_partway_by_an_asymmetric_co_user(topo):
    """A send/recv from GPU 0 to GPU 8 crosses the NIC hop of the ring halfway through it: that
    component goes back to flow-by-flow with the bytes it had left."""
    ring = plan_collective("reducescatter", list(range(16)), 256 << 20, topo, algo="ring", proto="simple")
    t_ring = _run(topo, [("ring", 0.0, ring.phases, 1)], False)[0]["ring"]
    p2p = plan_collective("sendrecv", [0, 8], 64 << 20, topo)
    for start in (0.0, 0.3 * t_ring, 0.7 * t_ring, 2 * t_ring):
        _, net, _ = _same(topo, [("ring", 0.0, ring.phases, 2), ("p2p", start, p2p.phases, 1)])
        assert net.stats.components_broken >= 1


def test_two_rings_sharing_links_and_a_tp_group(topo):
    """A DP ring over the even GPUs of both nodes, a TP AllReduce inside node 0 started later,
    and a second DP ring over the odd GPUs: components meet and are broken at various instants."""
    dp_even = plan_collective("allgather", list(range(0, 16, 2)), 32 << 20, topo, algo="ring", proto="simple")
    dp_odd = plan_collective("allgather", list(range(1, 16, 2)), 48 << 20, topo, algo="ring", proto="simple")
    tp = plan_collective("allreduce", list(range(8)), 16 << 20, topo, algo="ring", proto="simple")
    t = _run(topo, [("x", 0.0, dp_even.phases, 1)], False)[0]["x"]
    _, net, _ = _same(topo, [("even", 0.0, dp_even.phases, 3), ("tp", 0.25 * t, tp.phases, 4),
                             ("odd", 1.5 * t, dp_odd.phases, 2)])
    assert net.stats.components_broken >= 2


def test_components_of_a_phase_do_not_share_links(topo):
    plan = plan_collective("alltoall", list(range(16)), 16 << 20, topo)
    cap = effective_capacity_Bps(topo)
    shape = phase_shape(plan.phases[0], cap, cap.tolist())
    assert sum(len(c.flows) for c in shape.components) == len(plan.phases[0])
    owner = {}
    for k, comp in enumerate(shape.components):
        for link in comp.links:
            assert owner.setdefault(link, k) == k
    assert np.all(np.diff(shape.links) > 0)
    _same(topo, [("a2a", 0.0, plan.phases, 2)])


@pytest.mark.parametrize("arrive", [0.0, 0.3, 0.7, 1.5])
def test_a_reserved_phase_handed_over_midway_moves_as_if_it_had_run_on_the_network(topo, arrive):
    """A holder reserves a ring's links and times the ring in closed form outside the network
    (FlowNetwork.reserve). A co-user arriving at ``arrive`` x the ring's time alone calls the
    holder back, which hands the ring over started at its own start (transfer_phase(t0=...)):
    both then end when they end with the ring on the network from the start."""
    ring = plan_collective("allgather", list(range(16)), 64 << 20, topo, algo="ring", proto="simple").phases[0]
    other = plan_collective("allreduce", [0, 8], 32 << 20, topo, algo="ring", proto="simple").phases[0]
    cap = effective_capacity_Bps(topo)
    alone = phase_shape(ring, cap, cap.tolist()).duration
    t1 = 1e-4 + arrive * alone

    def run(reserved: bool):
        env = simpy.Environment()
        net = FlowNetwork(env, cap)
        done: dict[str, float] = {}
        links = phase_shape(ring, cap, cap.tolist()).links
        handed: list[simpy.Event] = []

        def on_reserved(holders, hit):
            assert set(holders.tolist()) == {7} and set(hit.tolist()) <= set(links.tolist())
            net.release(7, links)
            if env.now < 1e-4 + alone:
                handed.append(net.transfer_phase(ring, t0=1e-4))

        def holder():
            yield env.timeout(1e-4)
            if not reserved:
                yield net.transfer_phase(ring)
            else:
                assert net.idle(links)
                net.reserve(7, links)
                assert not net.idle(links)
                yield env.timeout(alone)
                if handed:  # handed over midway: the network has the rest
                    yield handed[0]
            done["ring"] = env.now

        def co_user():
            yield env.timeout(t1)
            yield net.transfer_phase(other)
            done["other"] = env.now

        net.on_reserved = on_reserved
        env.process(holder())
        env.process(co_user())
        env.run()
        return done

    held, plain = run(True), run(False)
    assert held["other"] == pytest.approx(plain["other"], rel=1e-9)
    assert held["ring"] == pytest.approx(plain["ring"], rel=1e-9)
    if arrive < 1:
        assert plain["ring"] > 1e-4 + alone * (1 + 1e-6)  # the co-user did slow the ring


def test_a_phase_scaled_from_one_already_decomposed_has_the_shape_worked_out_afresh(topo):
    """Plans of one collective at several sizes are one pattern scaled: the second size's shape
    is the first's scaled (PhaseShapes), with the times a fresh decomposition gives, and a ring
    met partway by another collective ends as it does flow by flow."""
    from simulator.replay.solo_phases import PhaseShapes

    cap = effective_capacity_Bps(topo)
    small, big = (plan_collective("reducescatter", list(range(16)), size, topo, algo="ring", proto="simple").phases[0]
                  for size in (8 << 20, 24 << 20))
    shapes = PhaseShapes(cap, cap.tolist())
    shapes.get(small)
    got, fresh = shapes.get(big), phase_shape(big, cap, cap.tolist())
    assert got.components[0].flows is shapes.get(small).components[0].flows  # scaled, not redone
    assert got.duration == pytest.approx(fresh.duration, rel=1e-12)
    for a, b in zip(got.components, fresh.components):
        assert a.duration == pytest.approx(b.duration, rel=1e-12)
        left_a, left_b = a.remaining(0.4 * b.duration), b.remaining(0.4 * b.duration)
        assert [i for i, _ in left_a] == [i for i, _ in left_b]
        assert [r for _, r in left_a] == pytest.approx([r for _, r in left_b], rel=1e-12)
    assert got.total_bytes == pytest.approx(fresh.total_bytes, rel=1e-12)
    other = plan_collective("allreduce", [0, 8], 32 << 20, topo, algo="ring", proto="simple").phases[0]
    _same(topo, [("small", 0.0, (small,), 1), ("big", 0.0, (big,), 2), ("other", 1e-4, (other,), 1)])


@pytest.mark.parametrize("large", [512, 8])
@pytest.mark.parametrize("arrive", [0.0, 0.4])
def test_an_all_to_all_met_by_asymmetric_co_users_moves_as_flow_by_flow(topo, large, arrive, monkeypatch):
    """An All-to-All over both nodes goes on the network as classes of flows with equal bytes
    (FlowNetwork._materialize) when a send/recv and a second, smaller All-to-All meet it: the
    classes split wherever the members' max-min rates differ, and every finish time and link
    byte count must be those of the same flows started one by one (transfer_many), through the
    plain-Python and the vectorised (``large``: LARGE_COMPONENT_FLOWS) rate paths."""
    import simulator.replay.links as links_module

    monkeypatch.setattr(links_module, "LARGE_COMPONENT_FLOWS", large)
    a2a = plan_collective("alltoall", list(range(16)), 64 << 20, topo)
    half = plan_collective("alltoall", [0, 1, 2, 8, 9], 16 << 20, topo)
    p2p = plan_collective("sendrecv", [3, 12], 32 << 20, topo)
    t = _run(topo, [("x", 0.0, a2a.phases, 1)], False)[0]["x"]
    _, fast, _ = _same(topo, [("a2a", 0.0, a2a.phases, 2), ("p2p", arrive * t, p2p.phases, 1),
                              ("half", 0.3 * t, half.phases, 2)])
    assert fast.stats.components_broken >= 1
    if large == 8:  # some large recomputes were exact class by class, some had to split classes
        assert 1 <= fast.stats.class_level < fast.stats.recomputes


@pytest.mark.parametrize("seed", range(6))
def test_a_few_flows_group_into_the_classes_numpy_groups_them_into(seed, monkeypatch):
    """PhaseShape.classes groups up to SMALL_CLASSES flows in plain Python (a DP ring hop's two
    channels broken by a TP collective): the same classes (size, bytes left, cap, members in the
    same order) as the numpy grouping of any number of flows, with ties, mixed sizes and caps."""
    import simulator.replay.solo_phases as sp

    rng = np.random.default_rng(seed)
    n_links = 12
    cap = np.full(n_links, 100e9)
    phase = [(tuple(sorted(rng.choice(n_links, size=2, replace=False).tolist())),
              float(rng.choice([1e6, 2e6])), float(rng.choice([np.inf, 5e9]))) for _ in range(10)]
    shape = phase_shape(phase, cap, cap.tolist())
    idx = np.sort(rng.choice(len(shape.specs), size=int(rng.integers(9, 11)), replace=False)).astype(np.int64)
    rem = rng.choice([0.0, 7e5], size=idx.size)  # 8 (size, left, cap) for 9-10 flows: some tie

    def fields(classes):
        return [(c.size, c.rem, c.cap, None if c.ptr is None else (c.ptr.tolist(), c.links.tolist()),
                 c.links if c.ptr is None else None) for c in classes]

    few = shape.classes(idx, rem)
    monkeypatch.setattr(sp, "SMALL_CLASSES", 0)
    assert fields(few) == fields(shape.classes(idx, rem))
    assert any(c.ptr is not None for c in few)


def test_component_at_a_link_is_the_sorted_table_lookup(topo):
    """PhaseShape.component_at (what FlowNetwork._break asks per link a newcomer meets) is
    component_of_link at the link's place in the sorted links, for every link of a ring."""
    members = list(range(16))
    plan = plan_collective("allreduce", members, 64 << 20, topo)
    cap = effective_capacity_Bps(topo)
    shape = phase_shape(plan.phases[0], cap, cap.tolist())
    assert len(shape.components) > 1
    for link in shape.links.tolist():
        assert shape.component_at(link) == shape.component_of_link[np.searchsorted(shape.links, link)]

"""FlowNetwork: closed forms of fluid max-min sharing.

Expected times are worked out by hand from sizes and capacities; the random cases compare the
vectorised water-filling against a plain one-level-at-a-time reference written here.
"""

from __future__ import annotations

import numpy as np
import pytest
import simpy

from simulator.replay.fair_share import fair_rates, max_min_rates
from simulator.replay.links import FlowNetwork

GB = 1e9


def _run(capacity, starts, network: type[FlowNetwork] = FlowNetwork):
    """starts: list of (name, start_time, links, nbytes, cap); returns finish times and the net."""
    env = simpy.Environment()
    net = network(env, np.asarray(capacity, dtype=float))
    done: dict[str, float] = {}

    def proc(name, t0, links, nbytes, cap):
        yield env.timeout(t0)
        yield net.transfer(links, nbytes, cap)
        done[name] = env.now

    for s in starts:
        env.process(proc(*s))
    env.run()
    return done, net


def test_one_flow_takes_size_over_bandwidth():
    done, _ = _run([25 * GB], [("a", 0.0, [0], 1e9, None)])
    assert done["a"] == pytest.approx(1e9 / 25e9, rel=1e-12)


def test_bottleneck_is_the_slowest_link_of_the_route():
    done, _ = _run([100 * GB, 10 * GB, 50 * GB], [("a", 0.0, [0, 1, 2], 5e8, None)])
    assert done["a"] == pytest.approx(5e8 / 10e9)


def test_two_flows_on_one_link_each_get_half_and_take_twice_as_long():
    size, bw = 2e8, 50 * GB
    done, net = _run([bw], [("a", 0.0, [0], size, None), ("b", 0.0, [0], size, None)])
    assert done["a"] == done["b"] == pytest.approx(2 * size / bw)
    # they finish together: one completion event after the start event
    assert net.stats.events == 2


def test_flows_on_different_rails_do_not_slow_each_other():
    from simulator.config.hardware import load_profile
    from simulator.hardware import build_topology

    topo = build_topology(load_profile("dgx-h100"), 2)
    nic = 400e9 / 8  # NDR line rate, the route's bottleneck
    size = 1e8
    rails = [("r0", 0.0, topo.route(0, 8).links, size, None), ("r1", 0.0, topo.route(1, 9).links, size, None)]
    done, _ = _run(topo.capacity_Bps, rails)
    assert done["r0"] == done["r1"] == pytest.approx(size / nic)
    same = [("a", 0.0, topo.route(0, 8).links, size, None), ("b", 0.0, topo.route(0, 9, rail=0).links, size, None)]
    done, _ = _run(topo.capacity_Bps, same)
    assert done["a"] == done["b"] == pytest.approx(2 * size / nic)


def test_textbook_max_min_three_flows_two_links():
    # Link A (1 unit), link B (2 units); f1 on A, f2 on A and B, f3 on B. Max-min: A is the
    # bottleneck of f1, f2 at 1/2 each; f3 takes what B has left, 2 - 1/2 = 3/2.
    rates = fair_rates([[0], [0, 1], [1]], np.array([1.0, 2.0]))
    assert rates == pytest.approx([0.5, 0.5, 1.5])
    # Same in simulated time: f1, f2 (1 byte each) end at t=2; f3 (6 bytes) has moved 3 by then and
    # runs alone at 2 for the remaining 3 bytes: t = 2 + 1.5 = 3.5.
    done, _ = _run([1.0, 2.0], [("f1", 0, [0], 1.0, None), ("f2", 0, [0, 1], 1.0, None), ("f3", 0, [1], 6.0, None)])
    assert done["f1"] == pytest.approx(2.0) and done["f2"] == pytest.approx(2.0)
    assert done["f3"] == pytest.approx(3.5)


def test_rate_cap_is_honoured_and_the_rest_goes_to_others():
    # cap 10 on a 100 link: the capped flow gets 10, the other 90
    assert fair_rates([[0], [0]], np.array([100.0]), [10.0, None]) == pytest.approx([10.0, 90.0])
    done, _ = _run([100.0], [("capped", 0, [0], 50.0, 10.0), ("free", 0, [0], 90.0, None)])
    assert done["free"] == pytest.approx(1.0)
    assert done["capped"] == pytest.approx(5.0)


def test_a_flow_added_midway_reshares():
    # a (100 B) alone at 10 B/s for 5 s (50 B left); b (30 B) joins: 5 B/s each; b ends at 5+6=11
    # with a at 50-30=20 B left, alone again: 11 + 2 = 13.
    done, _ = _run([10.0], [("a", 0, [0], 100.0, None), ("b", 5, [0], 30.0, None)])
    assert done["b"] == pytest.approx(11.0)
    assert done["a"] == pytest.approx(13.0)


def test_conservation_bytes_delivered_equal_bytes_sent():
    rng = np.random.default_rng(7)
    cap = rng.uniform(1, 10, size=6)
    starts = []
    for i in range(40):
        links = list(rng.choice(6, size=rng.integers(1, 4), replace=False))
        starts.append((f"f{i}", float(rng.uniform(0, 3)), links, float(rng.uniform(1, 20)), None))
    done, net = _run(cap, starts)
    total = sum(s[3] for s in starts)
    assert len(done) == 40
    assert net.stats.bytes_delivered == pytest.approx(total, rel=1e-9)
    per_link = np.zeros(6)
    for _, _, links, nbytes, _ in starts:
        per_link[links] += nbytes
    assert net.link_bytes == pytest.approx(per_link, rel=1e-9)
    # no flow can beat its bottleneck link running alone
    for name, t0, links, nbytes, _ in starts:
        assert done[name] - t0 >= nbytes / cap[links].min() * (1 - 1e-9)


def test_transfer_many_fires_when_all_have_finished_with_one_recompute_per_batch():
    env = simpy.Environment()
    net = FlowNetwork(env, [10.0, 10.0])
    ev = net.transfer_many([([0], 10.0), ([1], 30.0), ([0, 1], 0.0)])
    env.run(ev)
    # flow 1 (10 B) shares link 0 with nobody (the zero-byte flow finished at once): 1 s;
    # flow 2 (30 B) alone on link 1: 3 s.
    assert env.now == pytest.approx(3.0)
    assert net.stats.recomputes == 2  # the batch start, then after the first completion
    assert net.stats.flows_started == 2


def test_zero_byte_and_empty_batches_finish_immediately():
    env = simpy.Environment()
    net = FlowNetwork(env, [1.0])
    assert net.transfer([0], 0).triggered
    assert net.transfer_many([]).triggered
    assert net.transfer([], 5.0).triggered  # no link, no cap: unbounded rate
    env.run()
    assert env.now == 0


def test_objects_with_flow_fields_are_accepted():
    from dataclasses import dataclass

    @dataclass(frozen=True)
    class Flow:
        links: tuple[int, ...]
        nbytes: float
        rate_cap_Bps: float | None = None

    env = simpy.Environment()
    net = FlowNetwork(env, [8.0])
    env.run(net.transfer_many([Flow((0,), 8.0), Flow((0,), 8.0, 2.0)]))
    # capped flow at 2, other at 6: 8/6 s, then the capped flow alone (still capped): 8 - 2*4/3
    assert env.now == pytest.approx(4.0)


def test_symmetric_collective_phase_is_one_completion_event():
    # a ring step on 64 GPUs: every GPU sends to its successor over its own link
    env = simpy.Environment()
    net = FlowNetwork(env, np.full(64, 100.0))
    env.run(net.transfer_many([([i], 50.0) for i in range(64)]))
    assert env.now == pytest.approx(0.5)
    assert net.stats.events == 2


def test_bad_inputs_are_rejected():
    env = simpy.Environment()
    with pytest.raises(ValueError):
        FlowNetwork(env, [1.0, 0.0])
    net = FlowNetwork(env, [1.0])
    with pytest.raises(ValueError):
        net.transfer([3], 1.0)
    with pytest.raises(ValueError):
        net.transfer([0], -1.0)
    with pytest.raises(ValueError):
        net.transfer([0], 1.0, 0.0)


def _reference_max_min(routes, capacity, caps):
    """Textbook progressive filling, one level at a time, in plain Python."""
    n = len(routes)
    rate = [0.0] * n
    frozen = [False] * n
    residual = list(capacity)
    while not all(frozen):
        levels = []
        for link in range(len(capacity)):
            users = [f for f in range(n) if not frozen[f] and link in routes[f]]
            if users:
                levels.append(residual[link] / len(users))
        levels += [caps[f] for f in range(n) if not frozen[f]]
        level = min(levels)
        for f in range(n):
            if frozen[f]:
                continue
            tight = caps[f] <= level * (1 + 1e-12) or any(
                residual[l] / sum(1 for g in range(n) if not frozen[g] and l in routes[g]) <= level * (1 + 1e-12)
                for l in routes[f]
            )
            if tight:
                rate[f] = min(level, caps[f])
        for f in range(n):
            if not frozen[f] and rate[f] > 0:
                frozen[f] = True
                for l in routes[f]:
                    residual[l] -= rate[f]
    return rate


@pytest.mark.parametrize("seed", range(25))
def test_vectorised_water_filling_matches_the_reference(seed):
    rng = np.random.default_rng(seed)
    n_links, n_flows = int(rng.integers(2, 9)), int(rng.integers(1, 25))
    capacity = rng.uniform(1, 10, size=n_links)
    routes = [sorted(rng.choice(n_links, size=rng.integers(1, min(4, n_links) + 1), replace=False).tolist()) for _ in range(n_flows)]
    caps = [float(rng.uniform(0.2, 5)) if rng.random() < 0.3 else float("inf") for _ in range(n_flows)]
    expected = _reference_max_min(routes, capacity.tolist(), caps)
    e_flow = np.repeat(np.arange(n_flows), [len(r) for r in routes])
    e_link = np.array([l for r in routes for l in r])
    got = max_min_rates(e_flow, e_link, n_flows, capacity, np.array(caps))
    assert got == pytest.approx(expected, rel=1e-9)
    # feasibility: no link over capacity
    load = np.bincount(e_link, weights=got[e_flow], minlength=n_links)
    assert np.all(load <= capacity * (1 + 1e-9))


@pytest.mark.parametrize("seed", range(25))
def test_plain_python_water_filling_for_small_components_matches_the_reference(seed):
    from simulator.replay.fair_share import max_min_rates_small

    rng = np.random.default_rng(100 + seed)
    n_links, n_flows = int(rng.integers(2, 9)), int(rng.integers(1, 25))
    capacity = rng.uniform(1, 10, size=n_links)
    routes = [sorted(rng.choice(n_links, size=rng.integers(1, min(4, n_links) + 1), replace=False).tolist()) for _ in range(n_flows)]
    caps = [float(rng.uniform(0.2, 5)) if rng.random() < 0.3 else float("inf") for _ in range(n_flows)]
    expected = _reference_max_min(routes, capacity.tolist(), caps)
    e_flow = [f for f, r in enumerate(routes) for _ in r]
    e_link = [l for r in routes for l in r]
    assert max_min_rates_small(e_flow, e_link, n_flows, capacity, caps) == pytest.approx(expected, rel=1e-9)


def _reference_finish_times(capacity, starts):
    """Fluid simulation from scratch: after every start or finish, max-min rates of ALL active
    flows (fair_rates, checked against the textbook above); returns each flow's finish time."""
    pending = sorted(starts, key=lambda s: s[1])
    active: dict[str, list] = {}  # name -> [links, remaining, cap]
    now, done = 0.0, {}
    while pending or active:
        names = list(active)
        rates = fair_rates([active[n][0] for n in names], np.asarray(capacity), [active[n][2] for n in names]) if names else []
        t_finish = min((active[n][1] / r for n, r in zip(names, rates)), default=np.inf)
        t_start = pending[0][1] - now if pending else np.inf
        dt = min(t_finish, t_start)
        for n, r in zip(names, rates):
            active[n][1] -= r * dt
        now += dt
        for n in names:
            if active[n][1] <= 1e-9 * max(1.0, now):
                done[n] = now
                del active[n]
        while pending and pending[0][1] <= now:
            name, _, links, nbytes, cap = pending.pop(0)
            active[name] = [links, nbytes, cap]
    return done


@pytest.mark.parametrize("seed", range(8))
def test_incremental_rates_match_recomputing_every_flow(seed):
    """Only flows connected to a change get new rates; the finish times must equal a simulation
    that recomputes every active flow at every event. Two disjoint link clusters (like NVLink vs
    the NICs) plus flows that bridge them exercise components merging and splitting."""
    rng = np.random.default_rng(seed)
    cap = rng.uniform(5, 50, size=10)
    starts = []
    for i in range(30):
        cluster = [0, 1, 2, 3, 4] if rng.random() < 0.45 else [5, 6, 7, 8, 9]
        links = sorted(rng.choice(cluster, size=rng.integers(1, 3), replace=False).tolist())
        if rng.random() < 0.1:
            links = sorted({*links, int(rng.integers(0, 10))})
        c = float(rng.uniform(2, 10)) if rng.random() < 0.2 else None
        starts.append((f"f{i}", float(rng.uniform(0, 4)), links, float(rng.uniform(1, 30)), c))
    done, net = _run(cap, starts)
    want = _reference_finish_times(cap, starts)
    assert done.keys() == want.keys()
    for name in want:
        assert done[name] == pytest.approx(want[name], rel=1e-7)
    assert net.active_flows == 0 and net.stats.flows_finished == 30


@pytest.mark.parametrize("seed", range(4))
def test_vectorised_path_for_large_components_gives_the_same_finish_times(seed, monkeypatch):
    """Components over LARGE_COMPONENT_FLOWS are re-shared over all flows with numpy; shrink the
    threshold so that path, its bookkeeping of starts and finishes, and switches between the two
    paths all run on a small case."""
    import simulator.replay.links as links_module

    monkeypatch.setattr(links_module, "LARGE_COMPONENT_FLOWS", 3)
    rng = np.random.default_rng(50 + seed)
    cap = rng.uniform(5, 50, size=10)
    starts = []
    for i in range(40):
        cluster = [0, 1, 2, 3, 4] if rng.random() < 0.5 else [5, 6, 7, 8, 9]
        links = sorted(rng.choice(cluster, size=rng.integers(1, 3), replace=False).tolist())
        c = float(rng.uniform(2, 10)) if rng.random() < 0.2 else None
        starts.append((f"f{i}", float(rng.uniform(0, 4)), links, float(rng.uniform(1, 30)), c))
    done, net = _run(cap, starts)
    want = _reference_finish_times(cap, starts)
    for name in want:
        assert done[name] == pytest.approx(want[name], rel=1e-7)
    assert net._mirror is not None  # the vectorised path did run


def test_water_filling_on_a_large_fabric_equals_it_on_the_links_used():
    """A few flows on a fabric of many links: the links they cross are renumbered, and the rates
    must be exactly those computed over a capacity table of just those links."""
    rng = np.random.default_rng(7)
    used = rng.choice(100_000, size=300, replace=False)
    cap_big = np.full(100_000, 1e9)
    cap_big[used] = rng.choice([50e9, 100e9, 450e9], size=used.size)
    e_flow = np.repeat(np.arange(200), 3)
    k = rng.integers(0, used.size, size=e_flow.size)
    big = max_min_rates(e_flow, used[k], 200, cap_big)
    small = max_min_rates(e_flow, k, 200, cap_big[used])
    assert np.array_equal(big, small)


@pytest.mark.parametrize("ids", [[], [3], [0, 0, 1, 4, 4, 4, 9], [5, 2, 2, 7, 0], [1, 1, 1]])
def test_distinct_ids_are_numpys_unique(ids):
    """_distinct skips np.unique's sort for ids already in order; either way it is np.unique."""
    from simulator.replay.links import _distinct

    a = np.asarray(ids, dtype=np.int64)
    assert _distinct(a).tolist() == np.unique(a).tolist()


def _class_case(co_user_links, monkeypatch):
    """A phase of four equal flows, each over one of four 10 B/s links and a shared 100 B/s one
    (so that they form one component), met by single flows on ``co_user_links``: the phase goes
    on the network as one class of four members. Returns the network after the rate
    computation, its flows (classes), and the rates the plain per-flow solver gives."""
    import simulator.replay.links as links_module

    monkeypatch.setattr(links_module, "LARGE_COMPONENT_FLOWS", 1)  # the vectorised, class-level path
    cap = np.array([10.0, 10.0, 10.0, 10.0, 100.0])
    env = simpy.Environment()
    net = FlowNetwork(env, cap)
    phase = [((k, 4), 100.0) for k in range(4)]
    for link in co_user_links:
        net.transfer((link,), 100.0)
    net.transfer_phase(phase)
    env.run(until=1e-9)
    members = [f for f in net._flows.values()]
    routes = [(k, 4) for k in range(4)] + [(link,) for link in co_user_links]
    return net, members, np.sort(fair_rates(routes, cap))


def test_class_of_interchangeable_flows_is_solved_once_with_the_per_flow_rates(monkeypatch):
    """Every member shares its link with one other flow: the members are interchangeable, the
    class-level water-filling (weighted entries) is exact, and the class stays whole."""
    net, flows, want = _class_case([0, 1, 2, 3], monkeypatch)
    assert np.array_equal(np.sort(net.rates()), want)  # all 5 B/s
    assert net.stats.class_level >= 1
    assert sorted(f.n for f in flows) == [1, 1, 1, 1, 4]


def test_class_whose_members_see_different_loads_is_split_to_the_per_flow_rates(monkeypatch):
    """One co-user on link 0 only: the class-level answer (every member at link 0's share,
    5 B/s) leaves the members on links 1-3 without a bottleneck, so it must be rejected and the
    class split: the member on link 0 gets 5 B/s, the other three 10 B/s, as flow by flow."""
    net, flows, want = _class_case([0], monkeypatch)
    assert list(want) == [5.0, 5.0, 10.0, 10.0, 10.0]
    assert np.array_equal(np.sort(net.rates()), want)
    assert net.stats.class_level == 0
    assert sorted(f.n for f in flows) == [1, 1, 3]


def test_weighted_entries_are_the_flows_they_stand_for():
    """max_min_rates with an entry of weight k is the same allocation as k copies of the flow
    over those links (random classes of interchangeable copies)."""
    rng = np.random.default_rng(3)
    cap = rng.uniform(5, 50, size=12)
    n = 15
    routes = [sorted(rng.choice(12, size=rng.integers(1, 4), replace=False).tolist()) for _ in range(n)]
    copies = rng.integers(1, 5, size=n)
    e_flow = np.repeat(np.arange(n), [len(r) for r in routes])
    e_link = np.concatenate([np.asarray(r) for r in routes])
    weighted = max_min_rates(e_flow, e_link, n, cap, weight_of_entry=copies[e_flow].astype(float))
    expanded = fair_rates([r for r, c in zip(routes, copies) for _ in range(c)], cap)
    assert np.allclose(np.repeat(weighted, copies), expanded, rtol=1e-12)


def test_class_level_outcome_is_reused_only_for_the_same_classes_and_co_users(monkeypatch):
    """The same phase (hence the same class tables) meets interchangeable co-users, then a
    co-user on link 0 alone, then the interchangeable ones again: the second meeting must not
    take the first one's outcome (its members on links 1-3 would be held at 5 B/s instead of
    10 B/s, as flow by flow), and the third takes the first's stored outcome."""
    import simulator.replay.links as links_module

    monkeypatch.setattr(links_module, "LARGE_COMPONENT_FLOWS", 1)
    cap = np.array([10.0, 10.0, 10.0, 10.0, 100.0])
    env = simpy.Environment()
    net = FlowNetwork(env, cap)
    phase = [((k, 4), 100.0) for k in range(4)]
    seen: list[tuple[list[float], int]] = []

    def meeting(co_user_links):
        for link in co_user_links:
            net.transfer((link,), 100.0)
        done = net.transfer_phase(phase)
        yield env.timeout(1e-9)
        seen.append((sorted(net.rates().tolist()), len(net._class_level_known)))
        yield done
        yield env.timeout(100.0)  # the co-users have finished too

    def run():
        for co_users in ([0, 1, 2, 3], [0], [0, 1, 2, 3]):
            yield from meeting(co_users)

    env.process(run())
    env.run()
    assert seen[0][0] == [5.0] * 8
    assert seen[1][0] == [5.0, 5.0, 10.0, 10.0, 10.0]
    assert seen[2][0] == [5.0] * 8
    assert seen[2][1] == seen[1][1]  # nothing new stored: the first meeting's outcome served


def test_a_component_that_recurs_is_solved_once_with_the_same_rates(monkeypatch):
    """A TP ring meeting a DP flow on one NVLink port, again and again (one micro-batch after
    another): the component's max-min rates are worked out once and kept by its routes and caps
    (FlowNetwork._component_rates). Finish times by hand: the DP flow is held at 10 GB/s by its
    NIC (link 2), the TP flow gets the rest of the 100 GB/s port (link 0), 90 GB/s; and they are
    those of a network that solves every time."""
    import simulator.replay.links as links_module

    calls = []
    solve = links_module.max_min_rates_small

    def counted(*args):
        calls.append(1)
        return solve(*args)

    cap = [100 * GB, 300 * GB, 10 * GB]
    starts = []
    for k in range(5):  # DP 0.1 GB over port + NIC, TP 0.9 GB over port + its peer's port
        t = 0.5 * k
        starts += [(f"dp{k}", t, [0, 2], 1e8, None), (f"tp{k}", t, [0, 1], 9e8, None)]
    monkeypatch.setattr(links_module, "max_min_rates_small", counted)
    done, net = _run(cap, starts)
    assert len(calls) == 1  # five meetings, one solve
    for k in range(5):
        assert done[f"dp{k}"] == pytest.approx(0.5 * k + 1e8 / (10 * GB), rel=1e-12)
        assert done[f"tp{k}"] == pytest.approx(0.5 * k + 9e8 / (90 * GB), rel=1e-12)

    class Forgetful(FlowNetwork):
        def _component_rates(self, routes, caps):
            self._component_known.clear()
            return super()._component_rates(routes, caps)

    fresh, _ = _run(cap, starts, Forgetful)
    assert len(calls) == 6 and fresh == done


def test_networks_on_one_capacity_array_share_phase_times_until_it_changes():
    """Two networks on the same capacity array (a fold's two reduced replays) share what
    depends on the capacities alone (links._known_for): a phase's time alone is worked out
    once. Changed in place, the array is another fabric: the next network works it out again,
    on the new capacities (2 GB over a 10 GB/s link, then 20 GB/s: 0.2 s, then 0.1 s)."""
    from simulator.costs.collectives import Flow

    cap = np.array([10 * GB, 10 * GB])
    phase = (Flow((0,), 2 * GB),)
    a = FlowNetwork(simpy.Environment(), cap)
    assert a.phase_duration(phase) == pytest.approx(0.2)
    b = FlowNetwork(simpy.Environment(), cap)
    assert b._shapes is a._shapes
    cap[0] = 20 * GB
    c = FlowNetwork(simpy.Environment(), cap)
    assert c._shapes is not a._shapes
    assert c.phase_duration(phase) == pytest.approx(0.1)

"""FlowNetwork.beside: a TP collective on the NVLink that a DP ring's hop also crosses, timed in
closed form on the capacity the hop (at its per-channel cap) leaves, must end when the same
flows end on the flow-by-flow network (max-min over both), and the ring must be unaffected;
handed over midway (traffic arriving, or the ring's rates changing), the rest must move as on
the network."""

from __future__ import annotations

import numpy as np
import pytest
import simpy

from simulator.config.hardware import load_profile
from simulator.costs.collectives import effective_capacity_Bps, plan_collective
from simulator.costs.flow_patterns import Flow
from simulator.hardware import build_topology
from simulator.replay.fair_share import fair_rates, is_max_min
from simulator.replay.links import FlowNetwork

T1 = 1e-4  # when the TP collective starts, the DP ring running since 0


@pytest.fixture(scope="module")
def topo():
    return build_topology(load_profile("dgx-a100"), 2)


def _plans(topo, dp_bytes: int):
    dp = plan_collective("reducescatter", [0, 4, 8, 12], dp_bytes, topo, algo="ring", proto="simple").phases[0]
    tp = plan_collective("allgather", [0, 1, 2, 3], 16 << 20, topo, algo="ring", proto="simple").phases[0]
    return dp, tp


def _flow_by_flow(topo, dp, tp, other=None, t_other=0.0):
    """End times of the ring (from 0), the TP phase (from T1) and ``other`` (from t_other), every
    flow on the network (transfer_many: no closed form anywhere)."""
    env = simpy.Environment()
    net = FlowNetwork(env, effective_capacity_Bps(topo))
    done: dict[str, float] = {}

    def job(name, t0, phase):
        yield env.timeout(t0)
        yield net.transfer_many(phase)
        done[name] = env.now

    env.process(job("dp", 0.0, dp))
    env.process(job("tp", T1, tp))
    if other is not None:
        env.process(job("other", t_other, other))
    env.run()
    return done


def _beside(topo, dp, tp, other=None, t_other=0.0, expire=True):
    """The same, the ring as a phase block and the TP phase timed beside it (FlowNetwork.beside)
    while it holds its links reserved; called back by ``other`` or at ``Beside.until``, it is
    handed over with resume_phase. Returns the end times and the Beside."""
    env = simpy.Environment()
    net = FlowNetwork(env, effective_capacity_Bps(topo))
    done: dict[str, float] = {}
    got = {}
    handed: list[simpy.Event] = []

    over = env.event()

    def hand_over(*_):
        b = got["b"]
        net.release(1, b.links)
        if env.now < T1 + b.duration and not handed:
            handed.append(net.resume_phase(b.shapes[0], T1))
            over.succeed()

    net.on_reserved = hand_over

    def dp_job():
        yield net.transfer_phase(dp)
        done["dp"] = env.now

    def tp_job():
        yield env.timeout(T1)
        b = got["b"] = net.beside([tp], net._shape(tp).links)
        assert b is not None
        net.reserve(1, b.links)
        if expire and b.until < T1 + b.duration:
            env.timeout(b.until - env.now).callbacks.append(hand_over)
        yield env.any_of([env.timeout(b.duration), over])
        if handed:
            yield handed[0]
        else:
            net.release(1, b.links)
        done["tp"] = env.now

    def other_job():
        yield env.timeout(t_other)
        yield net.transfer_phase(other)
        done["other"] = env.now

    env.process(dp_job())
    env.process(tp_job())
    if other is not None:
        env.process(other_job())
    env.run()
    return done, got["b"]


def test_a_tp_collective_beside_a_capped_dp_hop_ends_as_on_the_network(topo):
    dp, tp = _plans(topo, 256 << 20)
    plain = _flow_by_flow(topo, dp, tp)
    held, b = _beside(topo, dp, tp)
    assert T1 + b.duration < b.until  # the ring's hop runs at its cap throughout
    assert held["tp"] == pytest.approx(plain["tp"], rel=1e-12)
    assert held["dp"] == pytest.approx(plain["dp"], rel=1e-12)
    # the hop did slow the TP collective: it is not its time alone
    cap = effective_capacity_Bps(topo)
    net = FlowNetwork(simpy.Environment(), cap)
    assert b.duration > net.phase_duration(tp) * 1.05
    # and the ring did not move: its end is its time alone
    assert plain["dp"] == pytest.approx(net.phase_duration(dp), rel=1e-12)


@pytest.mark.parametrize("arrive", [0.2, 0.6])
def test_handed_over_when_traffic_arrives_it_moves_on_as_on_the_network(topo, arrive):
    """An uncapped transfer over one of the TP ring's NVLink hops arrives partway: the TP phase
    goes on the network with the bytes its closed form left it, and shares that hop."""
    dp, tp = _plans(topo, 256 << 20)
    other = (Flow(tuple(next(iter(tp)).links), 4e6),)
    _, b = _beside(topo, dp, tp)
    t_other = T1 + arrive * b.duration
    plain = _flow_by_flow(topo, dp, tp, other, t_other)
    held, _ = _beside(topo, dp, tp, other, t_other)
    for k in plain:
        assert held[k] == pytest.approx(plain[k], rel=1e-9), k
    assert plain["tp"] > T1 + b.duration * (1 + 1e-6)  # the newcomer did slow it


def test_handed_over_when_the_dp_hop_ends_it_speeds_up_as_on_the_network(topo):
    """A ring short enough to end during the TP phase: at Beside.until the TP phase goes on the
    network, which gives it the whole NVLink from then on."""
    dp, tp = _plans(topo, 8 << 20)
    plain = _flow_by_flow(topo, dp, tp)
    held, b = _beside(topo, dp, tp)
    assert T1 < b.until < T1 + b.duration
    assert held["tp"] == pytest.approx(plain["tp"], rel=1e-9)
    assert held["tp"] < T1 + b.duration  # it did speed up


def test_no_closed_form_beside_traffic_that_would_yield_to_it(topo):
    """Uncapped flows on the NVLink take the whole link alone: beside a TP collective they would
    share it, so their rates are not fixed and beside() refuses."""
    env = simpy.Environment()
    net = FlowNetwork(env, effective_capacity_Bps(topo))
    _, tp = _plans(topo, 1 << 20)
    links = net._shape(tp).links
    net.transfer_phase((Flow(tuple(next(iter(tp)).links), 1e9),))

    def probe():
        yield env.timeout(1e-5)
        assert net.beside([tp], links) is None

    env.process(probe())
    env.run()


def test_is_max_min_accepts_the_water_filling_and_nothing_else():
    rng = np.random.default_rng(3)
    for _ in range(50):
        n_links = 6
        cap = rng.uniform(1.0, 10.0, n_links)
        routes = [tuple(sorted(rng.choice(n_links, rng.integers(1, 4), replace=False).tolist())) for _ in range(5)]
        caps = [float(c) if rng.random() < 0.4 else float("inf") for c in rng.uniform(0.5, 5.0, 5)]
        rates = fair_rates(routes, cap, [None if c == float("inf") else c for c in caps]).tolist()
        assert is_max_min(routes, caps, rates, cap)
        k = int(rng.integers(5))
        for factor in (0.99, 1.01):
            bent = list(rates)
            bent[k] *= factor
            assert not is_max_min(routes, caps, bent, cap)

"""Send/recv flows run by their time alone (replay/sendrecv.py) are exact: a send/recv whose
links are idle holds them reserved and ends by its closed form (its cap or its slowest link);
traffic that arrives on one of those links hands its flows to the network with the bytes they
have left. Checked against the network's own flow-by-flow timing, on a closed form and on whole
schedules where send/recv meets other traffic (pipeline sends beside DP rings on shared NVLink,
a CP ring, TP ring exchange)."""

from __future__ import annotations

import pytest
import simpy

from simulator.costs.model import CostModel
from simulator.hardware.topology import build_topology
from simulator.replay.engine import Replayer, replay
from simulator.replay.links import ABS_TOL_S, REL_TOL, FlowNetwork
from simulator.replay.sendrecv import SendRecv, alone_of
from simulator.schedule.build import build_schedule
from tests.unit.test_compute_blocks import _same_timelines
from tests.unit.test_schedule_invariants import make  # noqa: F401 - the fixture


def test_alone_is_each_flows_cap_or_slowest_link():
    capacity = [100.0, 50.0, 200.0, 400.0]
    got = alone_of((((0, 1), 1000.0, None), ((2,), 1000.0, 40.0)), capacity)
    assert got is not None
    assert got.rates == (50.0, 40.0) and got.ends == (20.0, 25.0) and got.duration == 25.0
    assert got.links.tolist() == [0, 1, 2]
    # flows that share a link, or cross one twice, share its capacity: the network times them
    assert alone_of((((0, 1), 1.0, None), ((1, 2), 1.0, None)), capacity) is None
    assert alone_of((((0, 0), 1.0, None),), capacity) is None
    assert alone_of((((), 1.0, 10.0),), capacity) is None


def _sendrecv(net: FlowNetwork, env: simpy.Environment, topology) -> SendRecv:
    ids = iter(range(1_000_000))
    sr = SendRecv(env, net, {}, None, costs=CostModel(topology, None, None), route=lambda s, d: None,
                  comm_started=lambda R, d: None, holder=lambda: next(ids))

    def on_reserved(holders, links):
        now = env.now
        for h in set(holders.tolist()):
            sr.hand_back(h, now, now + REL_TOL * now + ABS_TOL_S)
    net.on_reserved = on_reserved
    return sr


def test_a_flow_that_arrives_shares_the_link_as_on_the_network():
    """A send of 8 MB alone on a link, then at 1/4 of its time a flow of 4 MB on that link: the
    two share it from then on, as two flows started on the network at those moments do."""
    topology = build_topology(_profile(), 1)
    link = 0
    cap = float(CostModel(topology, None, None).capacity_Bps[link])
    ends = {}
    for held in (True, False):
        env = simpy.Environment()
        net = FlowNetwork(env, CostModel(topology, None, None).capacity_Bps)
        sr = _sendrecv(net, env, topology)
        flows = (((link,), 8e6, None),)
        first = sr._start(flows) if held else net.transfer_many(flows)
        first.callbacks.append(lambda _ev, k=held: ends.setdefault((k, "send"), env.now))

        def later(_ev, k=held):
            net.transfer((link,), 4e6).callbacks.append(lambda _e: ends.setdefault((k, "newcomer"), env.now))
        env.timeout(0.25 * 8e6 / cap).callbacks.append(later)
        env.run()
        if held:
            assert sr.held == 1 and sr.handed_back == 1 and not sr.holds
    # closed form: 2 MB alone, then 6 MB and 4 MB at cap/2 each: the newcomer ends after 8 MB
    # more on the link, the send 2 MB later
    assert ends[(False, "newcomer")] == pytest.approx((2e6 + 8e6) / cap, rel=1e-12)
    assert ends[(False, "send")] == pytest.approx((2e6 + 8e6 + 2e6) / cap, rel=1e-12)
    for who in ("send", "newcomer"):
        assert ends[(True, who)] == pytest.approx(ends[(False, who)], rel=1e-12)


def _profile():
    from tests.unit.replay_fixtures import make_profile
    return make_profile(4, 0.0)


PLANS = {  # 2 nodes
    "1f1b_tp_dp": {"tp": 2, "sequence_parallel": True, "pp": 2, "zero": 1},
    # the pipeline's sends meet the DP rings' traffic on the links they cross: called back
    "interleaved": {"pp": 2, "pp_schedule": "interleaved", "vp": 2, "tp": 2, "sequence_parallel": True},
    "tp_ring_exchange": {"tp": 4, "sequence_parallel": True, "tp_overlap": "ring_exchange", "pp": 2},
    "cp_ring": {"cp": 4, "cp_comm": "ring"},
}


@pytest.mark.parametrize("plan", sorted(PLANS))
def test_whole_steps_are_the_network_s(make, plan):  # noqa: F811 - the fixture
    """Every op starts and ends as in the replay with no flow timed alone (send/recv, collectives
    and compute blocks all on the network), and some send/recv were held, some called back."""
    scn = make(PLANS[plan], nodes=2, training={"global_batch": 8, "recompute": "full"})
    sched = build_schedule(scn)
    t = build_topology(scn.profile, scn.nodes)
    fast = replay(sched, t, symmetric=False)
    slow = replay(sched, t, symmetric=False, exclusive_fast_path=False)
    assert fast.step_time_s == pytest.approx(slow.step_time_s, rel=1e-12)
    _same_timelines(fast, slow)
    rp = Replayer(sched, CostModel(t, None, None), list(range(scn.n_gpus)), network_factory=FlowNetwork)
    rp.run()
    assert rp.sendrecv.held > 0 and not rp.sendrecv.holds
    if plan == "interleaved":
        assert rp.sendrecv.handed_back > 0

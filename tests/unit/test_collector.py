"""The garbage collector kept off a simulation's long-lived objects (replay/collector.py): the
schedule is out of the collector from the moment it is built, and a finished replay holds no
reference cycle, so nothing a replay made waits for a collection to be freed. Results never
depend on it (the collector frees only unreachable objects)."""

from __future__ import annotations

import gc
import weakref

import simulator.replay.engine as engine
from simulator.costs.model import CostModel
from simulator.replay.links import FlowNetwork
from simulator.simulation import simulate_scenario
from tests.unit.test_schedule_invariants import make  # noqa: F401 - the fixture

PLAN = {"tp": 2, "sequence_parallel": True, "pp": 2, "zero": 1}


def test_the_schedule_is_frozen_as_built(make, monkeypatch):  # noqa: F811 - the fixture
    """simulate_scenario builds the schedule inside the collector's spare, frozen as built: when
    the replay starts, every op of it is already out of the collector, so no collection scans
    them between the build and the replay (the first collection after a build with the
    collector off used to scan them all: 0.4-0.8 CPU s for a deep GPT-3 175B plan). Afterwards
    the collector is as it was."""
    seen = {}
    replay = engine.replay

    def spy(schedule, *args, **kwargs):
        seen["frozen"], seen["ops"] = gc.get_freeze_count(), schedule.n_ops
        return replay(schedule, *args, **kwargs)

    monkeypatch.setattr(engine, "replay", spy)
    before = (gc.get_threshold(), gc.get_freeze_count(), gc.isenabled())
    sim = simulate_scenario(make(PLAN), fold=False)
    assert seen["frozen"] >= seen["ops"] > 0
    assert (gc.get_threshold(), gc.get_freeze_count(), gc.isenabled()) == before
    assert sim.report.step_time_s > 0


def test_a_finished_replay_is_freed_without_a_collection(make):  # noqa: F811 - the fixture
    """Once run, a Replayer is in no reference cycle (the network's and the send/recv's
    callbacks into it are dropped): its last reference gone, it is freed at once, with the
    collector off."""
    from simulator.hardware.topology import build_topology
    from simulator.schedule.build import build_schedule

    scn = make(PLAN)
    schedule = build_schedule(scn)
    costs = CostModel(build_topology(scn.profile, scn.nodes))
    rp = engine.Replayer(schedule, costs, list(range(scn.n_gpus)), network_factory=FlowNetwork)
    rp.run()
    assert rp.ranks[0].n_done == len(rp.ranks[0].table.program)
    gone = weakref.ref(rp)
    gc.disable()
    try:
        del rp
        assert gone() is None
    finally:
        gc.enable()

"""Simulated step times shared between processes (simulator/e2e_validation/shared.py and
``scoring.share_simulations``): the test files of one xdist run simulate each row once between
their workers."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

from simulator.e2e_validation import scoring, sources
from simulator.e2e_validation.shared import SharedSimulations


def _case(i: int) -> sources.Case:
    scenario = {"hardware": "dgx-h100", "model": {"seq_len": 1024}, "training": {"global_batch": 8}, "row": i}
    return sources.Case("src", f"row {i}", scenario, "step_time_s", measured=1.0, n_gpus=8)


@pytest.fixture()
def shared(tmp_path, monkeypatch) -> SharedSimulations:
    """Sharing through a folder of its own, with an empty in-process cache and a counted fake simulation."""
    monkeypatch.setattr(scoring, "_SIMULATED", {})
    monkeypatch.setattr(scoring, "_SHARED", None)
    monkeypatch.setattr(scoring, "_POLL_S", 0.01)
    scoring.share_simulations(tmp_path)
    assert scoring._SHARED is not None
    return scoring._SHARED


def _counted(monkeypatch) -> list[str]:
    ran: list[str] = []

    def fake(case: sources.Case, hardware: scoring.Hardware) -> scoring._Simulated:
        ran.append(case.label)
        return scoring._Simulated(0.1 + case.scenario["row"] / 3, 0.4, 0.0)

    monkeypatch.setattr(scoring, "_simulate", fake)
    return ran


def test_a_key_is_claimed_by_one_holder_and_its_values_round_trip(tmp_path):
    a, b = SharedSimulations(tmp_path), SharedSimulations(tmp_path)
    assert a.get("k") is None
    assert a.claim("k") and not b.claim("k") and b.held("k")
    values = {"step_time_s": 1 / 3, "mfu": 0.1 + 0.2, "wall_s": 1e-300}
    a.put("k", values)
    assert b.get("k") == values  # bit for bit: JSON writes a float's shortest round-trip repr
    assert not b.held("k") and b.claim("k")
    b.release("k")
    assert a.claim("k")  # released without a record: the next claimant simulates it


def test_a_lock_of_a_process_that_ended_is_taken_over(tmp_path):
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                           check=True)
    store = SharedSimulations(tmp_path)
    store._path("k", ".lock").write_text(ended.stdout.strip())
    assert not store.held("k") and store.claim("k")
    assert store._path("k", ".lock").read_text() == str(os.getpid())


def test_stored_rows_are_read_and_the_rest_simulated_once(shared, monkeypatch):
    """A row another process stored is read, not simulated; the others are simulated here, once,
    stored for the other processes, and scored in the order asked."""
    ran = _counted(monkeypatch)
    cs = [_case(i) for i in range(3)]
    other = SharedSimulations(shared.directory)
    k1 = scoring._simulation_key(cs[1], None)
    assert other.claim(k1)
    other.put(k1, {"step_time_s": 2.5, "mfu": 0.5, "wall_s": 9.0})
    results = scoring.simulate_many([(c, None) for c in cs + cs[:1]])
    assert sorted(ran) == ["row 0", "row 2"]
    assert [r.step_time_s for r in results] == [0.1, 2.5, 0.1 + 2 / 3, 0.1]
    assert [r.case.label for r in results] == ["row 0", "row 1", "row 2", "row 0"]
    assert other.get(scoring._simulation_key(cs[2], None)) == {"step_time_s": 0.1 + 2 / 3, "mfu": 0.4, "wall_s": 0.0}


def test_a_row_held_by_another_process_is_waited_for(shared, monkeypatch):
    ran = _counted(monkeypatch)
    c0, c1 = _case(0), _case(1)
    other = SharedSimulations(shared.directory)
    k1 = scoring._simulation_key(c1, None)
    assert other.claim(k1)  # held by a live process (this one's id: the check is by id)
    timer = threading.Timer(0.2, other.put, (k1, {"step_time_s": 7.0, "mfu": 0.3, "wall_s": 1.0}))
    timer.start()
    try:
        results = scoring.simulate_many([(c0, None), (c1, None)])
    finally:
        timer.join()
    assert ran == ["row 0"]
    assert [r.step_time_s for r in results] == [0.1, 7.0]


def test_a_row_stored_between_the_look_and_the_claim_is_read_not_simulated(shared, monkeypatch):
    """The holder can store a row and release it after this process looked for the row and before
    it claims it: the claim then succeeds, and the stored values, not a second simulation, give it
    (the waiting test above met this under load)."""
    ran = _counted(monkeypatch)
    c = _case(0)
    key = scoring._simulation_key(c, None)
    other = SharedSimulations(shared.directory)
    assert other.claim(key)
    claim = SharedSimulations.claim

    def claim_once_the_holder_is_done(self: SharedSimulations, k: str) -> bool:
        if other.held(k):
            other.put(k, {"step_time_s": 7.0, "mfu": 0.3, "wall_s": 1.0})
        return claim(self, k)

    monkeypatch.setattr(SharedSimulations, "claim", claim_once_the_holder_is_done)
    assert scoring.run_case(c).step_time_s == 7.0
    assert ran == [] and not shared.held(key)


def test_a_failed_simulation_releases_its_row(shared, monkeypatch):
    def fails(case: sources.Case, hardware: scoring.Hardware) -> scoring._Simulated:
        raise ValueError("no such plan")

    monkeypatch.setattr(scoring, "_simulate", fails)
    c = _case(0)
    with pytest.raises(ValueError, match="no such plan"):
        scoring.run_case(c)
    key = scoring._simulation_key(c, None)
    assert shared.get(key) is None and not shared.held(key)


def test_without_sharing_each_row_is_simulated_once_and_scored_as_soon_as_it_is_done(monkeypatch):
    """The same loop without a folder: rows in the order asked, a repeated row simulated once, and
    the first result out before the second row is simulated (the progress lines of a serial run)."""
    monkeypatch.setattr(scoring, "_SIMULATED", {})
    monkeypatch.setattr(scoring, "_SHARED", None)
    ran = _counted(monkeypatch)
    cs = [_case(i) for i in range(3)]
    results = scoring.scored_in_order([(c, None) for c in cs + cs[1:2]])
    first = next(results)
    assert (first.case.label, ran) == ("row 0", ["row 0"])
    rest = list(results)
    assert ran == ["row 0", "row 1", "row 2"]
    assert [r.step_time_s for r in [first, *rest]] == [0.1, 0.1 + 1 / 3, 0.1 + 2 / 3, 0.1 + 1 / 3]


def test_rows_whose_scenarios_differ_only_in_name_are_one_simulation(monkeypatch):
    """Two printed rows of one run (MLPerf's GPT-3 on Eos and Azure's copy of its plan) build
    scenarios that differ in ``name`` only: simulated once, each scored against its own value.
    Anything else that differs (here the measured value's row, a scenario key) is simulated apart."""
    monkeypatch.setattr(scoring, "_SIMULATED", {})
    monkeypatch.setattr(scoring, "_SHARED", None)
    ran = _counted(monkeypatch)
    a, other = _case(1), _case(2)
    b = sources.Case("src", "row 1 (copy)", {**a.scenario, "name": "copy"}, "step_time_s", measured=2.0, n_gpus=8)
    assert scoring._simulation_key(a, None) == scoring._simulation_key(b, None) != scoring._simulation_key(other, None)
    results = scoring.simulate_many([(a, None), (b, None), (other, None)])
    assert ran == ["row 1", "row 2"]
    assert results[0].step_time_s == results[1].step_time_s and results[1].case.label == "row 1 (copy)"
    assert results[0].error != results[1].error  # each against its own measurement

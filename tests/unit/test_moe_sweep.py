"""Sweeps and plan labels cover expert parallelism: ep, etp and the token dispatcher."""

from simulator.config.scenario import load_scenario
from simulator.report.labels import plan_label
from simulator.sweep.plans import SweepBounds, check_candidate, enumerate_plans


def test_sweep_enumerates_ep_and_dispatchers_for_an_moe_model():
    scn = load_scenario("scenarios/qwen3-30b-a3b-ep8-h100.yaml")
    bounds = SweepBounds(fixed={"tp": 1, "pp": 1, "zero": 1, "micro_batch": 1}, vary=frozenset({"moe_dispatcher"}))
    cands = enumerate_plans(scn, bounds)
    eps = sorted({c.parallel.ep for c in cands})
    assert eps == [1, 2, 4, 8]  # divisors of 128 experts that fit 8 ranks (tp x cp x dp = 8)
    by_ep = {ep: sorted(c.parallel.moe_dispatcher for c in cands if c.parallel.ep == ep) for ep in eps}
    assert by_ep[1] == ["alltoall"]  # no dispatch without EP: the knob is not varied
    assert by_ep[8] == ["allgather", "alltoall", "deepep"]
    assert all(check_candidate(scn, c)[0] is not None for c in cands)


def test_sweep_of_a_dense_model_keeps_ep_at_one(tmp_path):
    scn = load_scenario("scenarios/quickstart.yaml")
    cands = enumerate_plans(scn, SweepBounds(fixed={"pp": 1, "zero": 0, "micro_batch": 1}))
    assert {c.parallel.ep for c in cands} == {1} and {c.parallel.etp for c in cands} == {None}


def test_fixed_etp_and_label():
    scn = load_scenario("scenarios/qwen3-30b-a3b-ep8-h100.yaml")
    cands = enumerate_plans(scn, SweepBounds(fixed={"tp": 2, "pp": 1, "zero": 1, "micro_batch": 1, "ep": 4, "etp": 1}))
    assert cands and all(c.parallel.etp == 1 and c.parallel.ep == 4 for c in cands)
    c = cands[0]
    assert "ep4 etp1" in plan_label(c.parallel, 4, 1)

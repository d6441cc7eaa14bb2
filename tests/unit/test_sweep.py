"""Plan enumeration, pruning and ranking (simulator/sweep/).

Most tests inject a stand-in simulator so they check the sweep's own logic (which plans are
tried, which are pruned and why, the order) without replaying; the known-winner test replays
two real plans and checks the ranking against a volume argument derived here.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from simulator.config.parallelism import Parallel
from simulator.config.scenario import build_scenario
from simulator.errors import InputError
from simulator.report.summary import Breakdown, Report
from simulator.schedule.flops import param_count
from simulator.sweep.plans import LONG_SEQUENCE, Candidate, SweepBounds, enumerate_plans
from simulator.sweep.run import run_plans, sweep_json

GPUS_PER_NODE = 8  # dgx-h100


def scenario(nodes: int = 1, **model):
    """A small GPT-like model on DGX H100 nodes; `model` overrides its shape."""
    shape = dict(layers=4, hidden=2048, heads=16, kv_heads=8, vocab=51200, mlp="gelu", seq_len=2048,
                 tied_embeddings=True)
    shape.update(model)
    return build_scenario(dict(name="tiny", hardware="dgx-h100", nodes=nodes, model=shape,
                               training=dict(micro_batch=1, global_batch=32)))


def fake_report(step: float) -> Report:
    return Report(scenario="tiny", step_time_s=step, tokens_per_s=1.0 / step, mfu=0.0,
                  breakdown_s=Breakdown(step, {}, 0.0), comm_bytes_per_gpu={}, memory_gib_per_gpu={},
                  fits_in_memory=True, sim={})


def step_by_plan(scn) -> SimpleNamespace:
    """Stand-in simulator with a known ordering: the step time grows with tp, then pp, then zero."""
    p = scn.parallel
    return SimpleNamespace(report=fake_report(1.0 + p.tp + 0.1 * p.pp + 0.01 * p.zero + 0.001 * scn.training.micro_batch))


def never_called(scn):
    raise AssertionError(f"plan {scn.parallel} should have been pruned before simulation")


# --- enumeration --------------------------------------------------------------------------

def test_enumeration_respects_divisibility_and_is_deduplicated():
    scn = scenario(nodes=2, heads=24, kv_heads=6, hidden=3072)  # 16 GPUs; heads/kv admit tp 1, 2 (not 4, 8)
    plans = enumerate_plans(scn)
    assert plans
    n = scn.n_gpus
    assert {c.parallel.tp for c in plans} == {d for d in (1, 2, 4, 8) if 24 % d == 0 and 6 % d == 0}
    for c in plans:
        p = c.parallel
        assert n % (p.tp * p.pp * p.cp * p.ulysses) == 0
        assert p.pp <= scn.model.layers
        assert p.sequence_parallel == (p.tp > 1)
        assert (p.cp, p.ulysses) == (1, 1)  # short sequence: no context parallelism by default
        shard = n // (p.tp * p.pp)
        if shard == 1:
            assert p.zero == 0  # ZeRO over one rank is plain DP: not listed four times
    assert len({c.key for c in plans}) == len(plans)


def test_tensor_parallel_is_swept_over_the_nvlink_domain():
    """On GB200 NVL72 (4-GPU trays, 72-GPU NVLink domain) TP 8 spans two trays on NVLink: the
    sweep offers the divisors of the domain that the heads allow, not only those of a tray."""
    scn = build_scenario(dict(name="nvl72", hardware="gb200-nvl72", nodes=18, model=dict(
        layers=4, hidden=2048, heads=16, kv_heads=8, vocab=51200, mlp="gelu", seq_len=2048, tied_embeddings=True),
        training=dict(micro_batch=1, global_batch=72)))
    assert {c.parallel.tp for c in enumerate_plans(scn)} == {1, 2, 4, 8}  # 72's divisors that divide 16 and 8


def test_zero_stages_collapse_without_a_sharding_group():
    plans = enumerate_plans(scenario(), SweepBounds(fixed={"tp": 8}))  # dp = 1 on one node
    assert [c.parallel.zero for c in plans] == [0]


def test_bounds_fix_and_cap_axes():
    scn = scenario(nodes=2)
    fixed = enumerate_plans(scn, SweepBounds(fixed={"tp": 2, "zero": 1}))
    assert fixed and {(c.parallel.tp, c.parallel.zero) for c in fixed} == {(2, 1)}
    capped = enumerate_plans(scn, SweepBounds(maximum={"pp": 2, "micro_batch": 4}))
    assert {c.parallel.pp for c in capped} == {1, 2}
    assert {c.micro_batch for c in capped} == {1, 2, 4}
    dp2 = enumerate_plans(scn, SweepBounds(fixed={"dp": 2}))
    assert dp2 and all(scn.n_gpus // (c.parallel.tp * c.parallel.pp) == 2 for c in dp2)


def test_context_parallel_is_swept_for_long_sequences_or_when_asked():
    long = scenario(seq_len=LONG_SEQUENCE)
    plans = enumerate_plans(long)
    assert {c.parallel.cp for c in plans} == {1, 2, 4, 8}
    assert {c.parallel.ulysses for c in plans} == {1, 2, 4, 8}
    assert not any(c.parallel.cp > 1 and c.parallel.ulysses > 1 for c in plans)
    short = enumerate_plans(scenario(), SweepBounds(maximum={"cp": 2}))
    assert {c.parallel.cp for c in short} == {1, 2}


def test_interleaved_schedule_only_with_pipeline_stages():
    plans = enumerate_plans(scenario(), SweepBounds(maximum={"vp": 2}))
    assert any(c.parallel.vp == 2 for c in plans)
    for c in plans:
        p = c.parallel
        assert (p.pp_schedule == "interleaved") == (p.vp > 1)
        assert p.vp == 1 or p.pp > 1


@pytest.mark.parametrize("bounds", [dict(fixed={"tq": 2}), dict(maximum={"zero": -1}), dict(fixed={"zero": 4})])
def test_bad_bounds_are_input_errors(bounds):
    with pytest.raises(InputError):
        SweepBounds(**bounds)


# --- pruning and ranking ------------------------------------------------------------------

def test_ranking_is_sorted_and_best_is_the_fastest_feasible():
    scn = scenario()
    result = run_plans(scn, enumerate_plans(scn), step_by_plan)
    times = [r.step_time_s for r in result.plans if r.simulated]
    assert len(times) >= 4 and times == sorted(times)
    first = result.plans[0]
    assert result.best is first and first.simulated and first.fits_in_memory
    # the stand-in makes the smallest tp, pp, zero and micro-batch fastest among valid plans
    assert (first.candidate.parallel.tp, first.candidate.parallel.pp) == (1, 1)
    # every plan after the simulated ones carries a reason
    assert all(r.reason for r in result.plans if not r.simulated)


def test_plan_breaking_a_model_rule_carries_its_reason():
    scn = scenario(heads=12, kv_heads=12, hidden=1536)
    bad = Candidate(Parallel(tp=8, sequence_parallel=True), 1)
    good = Candidate(Parallel(tp=4, sequence_parallel=True), 1)
    result = run_plans(scn, [bad, good], step_by_plan)
    row = next(r for r in result.plans if r.candidate == bad)
    assert not row.simulated and not row.fits_in_memory and row.memory_gib_per_gpu is None
    assert row.reason.startswith("parallel.tp:") and "heads=12" in row.reason
    assert result.plans[-1] is row and result.best.candidate == good


def test_plan_that_does_not_fit_is_reported_with_memory_and_not_simulated():
    # A 70B-class shape replicated on every GPU (tp=1, pp=1, no ZeRO): 16 bytes of model state per
    # parameter alone exceed the 80 GiB of an H100.
    scn = scenario(layers=80, hidden=8192, heads=64, kv_heads=8, ffn_hidden=28672, mlp="swiglu",
                   seq_len=1024, vocab=128256, tied_embeddings=False)
    states_gib = 16 * param_count(scn.model) / 2**30
    assert states_gib > scn.profile.gpu.hbm_GiB
    plan = Candidate(Parallel(), 1)
    result = run_plans(scn, [plan], never_called)
    (row,) = result.plans
    assert not row.fits_in_memory and not row.simulated and result.best is None
    assert row.memory_gib_per_gpu["total"] >= states_gib * (1 - 1e-9)
    assert "does not fit" in row.reason
    doc = sweep_json(result)["plans"][0]
    assert doc["fits_in_memory"] is False and doc["step_time_s"] is None
    assert doc["memory_gib_per_gpu"] == pytest.approx(row.memory_gib_per_gpu["total"])


def test_max_plans_limits_what_is_simulated():
    scn = scenario()
    plans = enumerate_plans(scn)
    result = run_plans(scn, plans, step_by_plan, max_plans=2)
    assert sum(r.simulated for r in result.plans) == 2
    skipped = [r for r in result.plans if "--max-plans" in r.reason]
    assert skipped and all(not r.simulated and r.fits_in_memory for r in skipped)


def test_json_has_the_design_keys():
    scn = scenario()
    doc = sweep_json(run_plans(scn, enumerate_plans(scn, SweepBounds(fixed={"tp": 2})), step_by_plan))
    assert {"plans", "best"} <= set(doc)
    for plan in doc["plans"]:
        assert {"parallel", "step_time_s", "fits_in_memory", "memory_gib_per_gpu", "reason"} <= set(plan)
        assert {"tp", "pp", "cp", "ulysses", "dp", "zero", "micro_batch"} <= set(plan["parallel"])
    assert doc["best"]["parallel"] == doc["plans"][0]["parallel"]
    assert doc["best"]["step_time_s"] == doc["plans"][0]["step_time_s"]


# --- a known winner, replayed ----------------------------------------------------------------

def test_data_parallel_zero1_beats_tp8_for_a_small_model_on_one_node():
    """One DGX H100 node, a 0.3B GPT (4 layers, h=2048), 32 sequences of 2048 tokens per step.

    Both plans do the same FLOPs per GPU. Per GPU and step, TP8 with sequence parallelism moves at
    least 8 collectives of 2·s·b·h bytes (2 AllGather + 2 ReduceScatter forward, as many
    backward) per layer and micro-batch: 16·T·L·h bytes for T tokens, none of it hidden
    (tp_overlap none). DP8 with ZeRO-1 moves one ReduceScatter of bf16 gradients and one
    AllGather of bf16 parameters: 4·P bytes, partly overlapped with backward. Both run on
    NVLink, so TP8 moves several times the bytes and must be slower; its GEMMs are also 8x
    smaller, which only lowers their efficiency further.
    """
    from simulator.simulation import simulate_scenario

    scn = scenario()
    m = scn.model
    tokens = scn.tokens_per_step
    tp_bytes = 16 * tokens * m.layers * m.hidden
    dp_bytes = 4 * param_count(m)
    assert tp_bytes / dp_bytes > 5  # the volume argument (here ~7x)

    tp8 = Candidate(Parallel(tp=8, sequence_parallel=True), 1)
    dp8 = Candidate(Parallel(zero=1), 1)
    # both replayed (the lower bound alone already rules tp8 out: its TP collectives sit between kernels)
    result = run_plans(scn, [tp8, dp8], simulate_scenario, prune=False)
    assert [r.candidate for r in result.plans] == [dp8, tp8]
    assert result.best.candidate == dp8 and result.best.dp == 8
    fast, slow = result.plans
    # the replay moves at least the analytic volumes
    tp_moved = slow.report.comm_bytes_per_gpu["allgather"] + slow.report.comm_bytes_per_gpu["reducescatter"]
    dp_moved = fast.report.comm_bytes_per_gpu["allgather"] + fast.report.comm_bytes_per_gpu["reducescatter"]
    assert tp_moved >= tp_bytes
    assert dp_moved == pytest.approx(dp_bytes, rel=0.01)
    # and the difference is exposed communication, not compute
    exposed = lambda r: sum(r.report.breakdown_s.exposed_comm.values())  # noqa: E731
    assert exposed(slow) > exposed(fast)


def test_parallel_jobs_give_the_same_ranking():
    from simulator.simulation import simulate_scenario

    scn = scenario(layers=2)
    plans = enumerate_plans(scn, SweepBounds(fixed={"pp": 1, "zero": 1}))
    # unpruned: which plans pruning skips depends on which finished first (run.py), the figures not
    serial = run_plans(scn, plans, simulate_scenario, jobs=1, prune=False)
    parallel = run_plans(scn, plans, simulate_scenario, jobs=2, prune=False)
    assert [r.label for r in serial.plans] == [r.label for r in parallel.plans]
    assert [r.step_time_s for r in serial.plans] == pytest.approx([r.step_time_s for r in parallel.plans])


def test_tuned_userbuffers_methods_follow_the_overlap_mode_they_override():
    """A scenario with a tuned configuration's per-GEMM methods (tp_overlap_methods, which only
    te_default's table takes) sweeps every plan: the candidates that keep te_default keep the
    methods, those under another mode or without TP drop them instead of failing validation."""
    base = build_scenario(dict(name="tiny", hardware="dgx-h100", nodes=2,
                               model=dict(layers=4, hidden=2048, heads=16, kv_heads=8, vocab=51200, mlp="gelu",
                                          seq_len=2048, tied_embeddings=True),
                               training=dict(micro_batch=1, global_batch=32),
                               parallel=dict(tp=8, sequence_parallel=True, tp_overlap="te_default",
                                             tp_overlap_methods={"fc1_dgrad": "pipeline"})))
    plans = enumerate_plans(base)
    modes = {c.parallel.tp_overlap for c in plans}
    assert "te_default" in modes and len(modes) > 1
    for c in plans:
        want = {"fc1_dgrad": "pipeline"} if c.parallel.tp_overlap == "te_default" else {}
        assert c.parallel.tp_overlap_methods == want, c.parallel

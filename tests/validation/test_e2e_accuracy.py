"""End-to-end accuracy of the step-time simulator against published training runs.

The tolerances restate the medians of docs/validation-e2e.md with a few points of margin. They
document the present accuracy (the simulator is optimistic on every source, see the doc's
findings); tighten them when the compute model improves, loosen them only with a reason.
"""

from __future__ import annotations

import statistics

import pytest

from simulator import e2e_validation as e2e


def _by_source(key: str) -> list[e2e.Case]:
    return [c for c in e2e.cases() if c.source == key]


def test_megatron_flop_formula_reproduces_the_readme_tflops():
    """Eq. 3 of arXiv:2104.04473 with the recompute factor turns the README's 1.076 s for the
    1.2B model (1 A100, batch 16, seq 1024) into its printed 149.8 TFLOP/s, which is how we know
    the 2020 runs recomputed activations."""
    f = e2e.megatron_flops_per_step(layers=24, hidden=1920, vocab=51200, seq=1024, batch=16, recompute=True)
    assert f / 1.076 / 1e12 == pytest.approx(149.8, rel=0.005)
    # without recompute, three quarters of the GEMM work (the V/12lh term replaces V/16lh)
    g = e2e.megatron_flops_per_step(layers=24, hidden=1920, vocab=51200, seq=1024, batch=16, recompute=False)
    assert 0.74 < g / f < 0.78


def test_every_case_is_a_consistent_plan_of_a_modelled_precision():
    cs = e2e.cases()
    assert 20 <= len(cs) <= 40
    for c in cs:
        p, t = c.scenario["parallel"], c.scenario["training"]
        mp = p.get("tp", 1) * p.get("pp", 1) * p.get("cp", 1)
        assert c.n_gpus % mp == 0 and c.n_gpus == 8 * c.scenario["nodes"], c.label
        assert t["dtype"] in ("bf16", "fp16"), c.label
        assert t["global_batch"] % (t["micro_batch"] * (c.n_gpus // mp)) == 0, c.label


def test_error_sign_convention():
    """Positive error = simulator predicts more throughput than measured, for both kinds of metric."""
    step = e2e.Case("x", "x", {}, "step_time_s", measured=2.0, n_gpus=8)
    assert e2e.speed_error(step, 1.0) == pytest.approx(1.0)
    tput = e2e.Case("x", "x", {}, "tokens_per_s_per_gpu", measured=100.0, n_gpus=8)
    assert e2e.speed_error(tput, 150.0) == pytest.approx(0.5)


def test_megatron_2020_median_error():
    """Five fast runs (a few seconds together). Doc: median +64.2% (optimistic)."""
    rs = list(e2e.run_cases(_by_source("megatron2020")))
    med = statistics.median(r.error for r in rs)
    assert 0.58 <= med <= 0.70
    assert all(r.error > 0 for r in rs)  # the simulator is optimistic on every row


def test_mpt_small_models_on_a100():
    """MPT-1B and -3B on 8 A100-80GB (FSDP, no recompute): a modern stack; the error stays
    as in the doc (+32.3% and +28.6%) within a few points."""
    rs = [r for r in e2e.run_cases([c for c in _by_source("mpt")
                                     if "A100" in c.label and c.label.split()[0] in ("MPT-1b", "MPT-3b")])]
    assert len(rs) == 2
    for r in rs:
        assert 0.22 <= r.error <= 0.38, (r.case.label, r.error)


@pytest.mark.slow
def test_overall_median_error():
    """All 40 rows (about 4 minutes). Doc: overall median |error| 37.2%; Megatron-Core 2024
    10.6%, BLOOM 50.3%."""
    results = list(e2e.run_cases(e2e.cases()))
    assert 0.32 <= e2e.median_abs_error(results) <= 0.43
    by = {k: [r for r in results if r.case.source == k] for k in ("mcore2024", "bloom")}
    assert e2e.median_abs_error(by["mcore2024"]) <= 0.15
    assert 0.44 <= e2e.median_abs_error(by["bloom"]) <= 0.56

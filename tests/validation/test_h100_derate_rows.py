"""What sets the dgx-h100 GEMM derate (findings: "What sets the H100 GEMM derate").

The five 8-GPU BF16 fitting rows (llm-foundry MPT-1B/7B/13B/30B, FlagPerf Llama-3 8B) all come
out a fifth to a third optimistic with the GEMM curve at the MAMF plateau (derate 1.0), while
NVIDIA's held-out 8B run (dgxc v25.04, NeMo 25.02) is within ~10% of it: the derate absorbs a
loss shared by the 2023-24 stacks, not the GEMM rate of a tuned stack. These bounds pin that gap
so that a mechanism which closes it shows up here."""

from __future__ import annotations

import pytest

from simulator.e2e_validation import loso, scoring, sources
from simulator.e2e_validation.gemm_fit import gemm_scaled


def _at_mamf_plateau(case: sources.Case) -> float:
    """The row's error with dgx-h100's GEMM curve divided by its committed derate."""
    return scoring.run_case(case, gemm_scaled("dgx-h100", 1 / loso.fitted_derate("dgx-h100"))).error


def _h100_8gpu_bf16(key: str) -> list[sources.Case]:
    return [c for c in sources.cases([s for s in sources.SOURCES if s.key == key])
            if c.n_gpus == 8 and c.scenario["hardware"] == "dgx-h100" and c.scenario["training"]["dtype"] == "bf16"]


def test_the_fitting_rows_are_a_fifth_to_a_third_optimistic_at_the_mamf_plateau():
    """At derate 1.0: MPT-30B +27.8%, -13B +27.7%, -7B +26.5%, -1B +23.7%, FlagPerf +33.7%."""
    fit = [c for c in sources.cases(sources.SOURCES) if sources.is_fit_case(c) and c.scenario["hardware"] == "dgx-h100"]
    assert sorted(c.source for c in fit) == ["flagperf", "mpt", "mpt", "mpt", "mpt"]
    errors = [_at_mamf_plateau(c) for c in fit]
    assert all(0.20 < e < 0.37 for e in errors), errors


@pytest.mark.parametrize("key", ["dgxc_llama"])
def test_nvidias_held_out_8b_run_needs_almost_the_plateau(key):
    """dgxc v25.04 Llama 3.1 8B BF16 on 8 H100 (TP1 CP2): +10.1% at derate 1.0, so the GEMM
    rate it implies is ~0.87-0.9 of MAMF against the fitting rows' ~0.70."""
    rows = _h100_8gpu_bf16(key)
    assert len(rows) == 1
    assert 0.0 < _at_mamf_plateau(rows[0]) < 0.14

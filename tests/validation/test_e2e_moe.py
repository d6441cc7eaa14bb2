"""The Mixture-of-Experts rows of the e2e validation: the printed plans are rebuilt exactly, and
the simulated step times stay within the errors docs/validation-e2e.md reports."""

from __future__ import annotations

import statistics

import pytest

from simulator.e2e_validation import scoring, sources
from simulator.e2e_validation.moe_sources import uneven_virtual_stages


def _moe_cases() -> list[sources.Case]:
    return [c for c in sources.cases() if c.source == "automodel_moe"]


def test_automodel_moe_rows_build_the_printed_plans():
    """Five rows up to 256 GPUs (Nemotron-3 hybrids and the 1,024-GPU row left out), EP as printed
    (or the config's for GPT-OSS), GPUs = PP x DP, FSDP2 with DeepEP and the balanced gate."""
    cs = _moe_cases()
    assert [c.scenario["model"]["preset"] for c in cs] == ["deepseek-v3", "kimi-k2", "qwen3-30b-a3b",
                                                           "gpt-oss-20b", "gpt-oss-120b"]
    assert [c.scenario["parallel"]["ep"] for c in cs] == [64, 32, 8, 8, 64]
    for c in cs:
        p, t = c.scenario["parallel"], c.scenario["training"]
        assert p["zero"] == 3 and p["zero3_impl"] == "fsdp2" and p["moe_dispatcher"] == "deepep"
        assert t["moe_routing"] == "round_robin" and t["dtype"] == "bf16"
        assert not sources.is_fit_case(c)
        if p.get("vp", 1) > 1:
            assert len(p["pp_layers"]) == p["pp"] * p["vp"] and sum(p["pp_layers"]) == 61
    # GA pipeline passes per step where the table pipelines: Kimi-K2 GA=2, DeepSeek-V3 (256 GPUs) GA=1
    assert [c.scenario["parallel"].get("pp_flushes", 1) for c in cs] == [1, 2, 1, 1, 1]


def test_uneven_virtual_stages():
    assert uneven_virtual_stages(61, 32) == (1,) + (2,) * 29 + (1, 1)
    assert uneven_virtual_stages(8, 4) == (2, 2, 2, 2)


@pytest.mark.slow
def test_automodel_moe_errors():
    """Doc: DeepSeek-V3 256 GPUs -0.0%, Kimi-K2 +4.5% (its two pipeline passes), Qwen3-30B -14.0%,
    GPT-OSS-20B +17.6%, GPT-OSS-120B +22.5%; median |error| 14.0%, signed +4.5% (the issue's target
    is 12% / 8%)."""
    results = list(scoring.run_cases(_moe_cases(), jobs=2))
    errors = [r.error for r in results]
    assert all(-0.2 <= e <= 0.3 for e in errors), errors
    assert scoring.median_abs_error(results) <= 0.15
    assert abs(statistics.median(errors)) <= 0.08

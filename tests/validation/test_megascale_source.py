"""MegaScale's Megatron-LM baseline (arXiv:2402.15627 Table 2, source ``megascale``): the table is
consistent as transcribed, the rows build the plan the paper prints, are held out, and score as the
page says."""

from __future__ import annotations

import statistics

import pytest

from simulator.config.scenario import build_scenario
from simulator.e2e_validation import scoring, sources
from simulator.e2e_validation.megascale_sources import is_megatron_row, megascale
from simulator.e2e_validation.rows import parse_int, read_rows

A100_PEAK = 312e12


def _rows() -> list[dict[str, str]]:
    return read_rows(sources.DATA_DIR / "megascale_table2.csv")


def _by_config() -> dict[tuple[int, bool], dict[str, float]]:
    out: dict[tuple[int, bool], dict[str, float]] = {}
    for r in _rows():
        cfg = out.setdefault((parse_int(r["num_gpus"]), is_megatron_row(r)), {"gb": parse_int(r["global_batch"])})
        cfg[r["metric"]] = float(r["value"])
    return out


def test_table2_is_consistent_as_transcribed():
    """16 configurations x 5 metrics; TP x PP x DP = GPUs; Throughput = batch x 2,048 / Iteration
    Time within 0.5% and 300B tokens / Throughput = Training Time within 0.2% on every row; on the
    Megatron-LM rows the MFU column is PaLM's count, 6N + 12 L H S a token with N = 96 x 12 x
    12,288^2 + 64,000 x 12,288, over 312 TFLOP/s, within 0.2 points (53.0% at 256 GPUs, 41.2% at
    12,288)."""
    rows = _rows()
    assert len(rows) == 80
    for r in rows:
        assert parse_int(r["tp"]) * parse_int(r["pp"]) * parse_int(r["dp"]) == parse_int(r["num_gpus"])
    per_token = 6 * (96 * 12 * 12288**2 + 64000 * 12288) + 12 * 96 * 12288 * 2048
    cfgs = _by_config()
    assert len(cfgs) == 16
    for (n, megatron), c in cfgs.items():
        tokens = c["gb"] * 2048
        assert tokens / c["step_time_s"] == pytest.approx(c["tokens_per_s_total"], rel=5e-3)
        assert 300e9 / c["tokens_per_s_total"] / 86400 == pytest.approx(c["training_days_300B_tokens"], rel=2e-3)
        if megatron:
            mfu = 100 * tokens * per_token / (n * A100_PEAK * c["step_time_s"])
            assert mfu == pytest.approx(c["mfu"], abs=0.2)


def test_rows_build_the_papers_plan_held_out():
    """The eight Megatron-LM rows are scored, none of MegaScale's; TP 8, PP 8, six virtual stages
    (sec. 6.1), bf16 with fp32 gradients AllReduced after the backward, micro-batch 1, selective
    recompute with sequence parallelism; DP = GPUs / 64 and the micro-batches per pipeline fall with
    it at a fixed batch (192 -> 48 at 768 sequences, 128 -> 32 at 6,144)."""
    cs = megascale(_rows())
    assert [c.n_gpus for c in cs] == [256, 512, 768, 1024, 3072, 6144, 8192, 12288]
    assert "megascale" in sources.HELD_OUT_SOURCES and [s.key for s in sources.SOURCES].count("megascale") == 1
    micro = []
    for c in cs:
        build_scenario(c.scenario)
        p, t = c.scenario["parallel"], c.scenario["training"]
        assert not sources.is_fit_case(c) and c.metric == "step_time_s"
        assert (p["tp"], p["pp"], p["vp"], p["zero"]) == (8, 8, 6, 0) and p["sequence_parallel"]
        assert p["grad_reduce_dtype"] == "fp32" and not p["overlap_grad_reduce"]
        assert (t["dtype"], t["recompute"], t["micro_batch"]) == ("bf16", "selective", 1)
        micro.append(t["global_batch"] // (c.n_gpus // 64))
    assert micro == [192, 96, 64, 48, 128, 64, 48, 32]


@pytest.mark.slow
def test_held_out_error_and_dp_scaling():
    """Held out (about 100 s of simulation): -6.0, -3.3, +1.0, +2.5% at 768 sequences on 256-1,024
    GPUs and +0.2, -2.4, +4.7, +4.0% at 6,144 on 3,072-12,288 (positive: the simulator faster);
    median |error| 2.9%, signed +0.6%. The error drifts with DP by +8.5 and +3.8 points across each group, not the
    +20 points of a model that exposes a cost growing with DP at a fixed batch."""
    res = list(scoring.run_cases(megascale(_rows())))
    errs = [r.error for r in res]
    assert all(abs(e) <= 0.08 for e in errs), errs
    assert statistics.median(abs(e) for e in errs) <= 0.04
    for group in (errs[:4], errs[4:]):
        assert group[-1] - group[0] <= 0.10, errs
    # the strong-scaling speedup across each group: measured 3.36 and 3.39
    for a, b in ((res[0], res[3]), (res[4], res[7])):
        measured = a.case.measured / b.case.measured
        assert a.predicted / b.predicted == pytest.approx(measured, rel=0.10)

"""NVIDIA's MLPerf Training v3.1 GPT-3 175B submissions (source ``mlperf_gpt3``): the transcription
is consistent with the logs' batch bookkeeping, the rows build the submission's plan, are held out,
and score as the page's findings say."""

from __future__ import annotations

import pytest

from simulator.config.scenario import build_scenario
from simulator.e2e_validation import scoring, sources
from simulator.e2e_validation.mlperf_sources import MLPERF_V30_UB, MLPERF_V31_UB, mlperf_gpt3, mlperf_gpt3_v30
from simulator.e2e_validation.rows import parse_int, read_rows


def _rows() -> list[dict[str, str]]:
    return read_rows(sources.DATA_DIR / "mlperf_v31_gpt3_h100.csv")


def _rows_v30() -> list[dict[str, str]]:
    return read_rows(sources.DATA_DIR / "mlperf_v30_gpt3_h100.csv")


def test_logged_batch_bookkeeping_and_plan():
    """v3.1: seven Eos systems (64-1,344 DGX H100 nodes) and Azure's 1,344 ND H100 v5 VMs; v3.0: NVIDIA's
    64 and 96 DGX H100 nodes and CoreWeave's 96-448 HGX H100 nodes. TP x PP x DP = GPUs; the logged
    gradient_accumulation_steps (micro-batches per pipeline at micro-batch 1) x DP = the logged
    global batch; the value lies within the three per-run medians (to 0.2%)."""
    rows = _rows()
    assert [parse_int(r["num_gpus"]) for r in rows] == [512, 768, 4096, 6144, 8192, 10240, 10752, 10752]
    assert [parse_int(r["num_gpus"]) for r in _rows_v30()] == [512, 768, 768, 1536, 3584]
    for r in rows + _rows_v30():
        n, tp, pp, dp = (parse_int(r[k]) for k in ("num_gpus", "tp", "pp", "dp"))
        assert (tp, pp, parse_int(r["vp"]), parse_int(r["micro_batch"])) == (4, 8, 12, 1) and tp * pp * dp == n
        ga = parse_int(r["notes"].split("gradient_accumulation_steps ", 1)[1].split()[0])
        assert ga * dp == parse_int(r["global_batch"])
        runs = [float(x) for x in r["notes"].split("per-run medians ", 1)[1].split()[0].split("/")]
        assert min(runs) * 0.998 <= float(r["value"]) <= max(runs) * 1.002


def test_rows_build_the_submission_plan_held_out():
    """FP8 delayed scaling, interleaved 1F1B over 12 virtual stages with overlapped exchanges,
    sequence parallelism with the submission's Userbuffers SM counts, the distributed optimizer,
    no recompute, no dropout, the vocabulary padded to 50,688 at TP 4; no row fits anything."""
    cs = mlperf_gpt3(_rows()) + mlperf_gpt3_v30(_rows_v30())
    assert [c.source for c in cs] == ["mlperf_gpt3"] * 8 + ["mlperf_gpt3_v30"] * 5
    for key in ("mlperf_gpt3", "mlperf_gpt3_v30"):
        assert key in sources.HELD_OUT_SOURCES and [s.key for s in sources.SOURCES].count(key) == 1
    assert len({c.label for c in cs if c.source == "mlperf_gpt3"}) == 8
    for c in cs:
        build_scenario(c.scenario)
        p, t = c.scenario["parallel"], c.scenario["training"]
        assert not sources.is_fit_case(c) and c.metric == "step_time_s" and c.scenario["hardware"] == "dgx-h100"
        assert (p["tp"], p["pp"], p["vp"], p["pp_schedule"], p["zero"]) == (4, 8, 12, "interleaved", 1)
        assert p["sequence_parallel"] and p["overlap_p2p_comm"] and p["overlap_param_gather"]
        assert p["tp_overlap_gemm_sms"] == (MLPERF_V30_UB if c.source == "mlperf_gpt3_v30" else MLPERF_V31_UB)
        assert (t["dtype"], t["fp8_recipe"], t["recompute"], t["dropout"]) == ("fp8", "delayed", "none", False)
        assert c.scenario["model"]["vocab"] == 50688


@pytest.mark.slow
def test_held_out_errors_are_within_seven_percent():
    """Held out (20-80 CPU s of simulation per row): -2.8, -2.6, -2.6, -2.1, -2.3, -3.9, -3.5% on
    Eos and -1.7% on Azure's VMs, whose plan is Eos' largest (positive: the simulator faster), since
    the H100 derate was refitted (0.693 -> 0.720) once MPT's FlashAttention-1 ran at FA1's own H100
    rate; -6.1, -5.9, -5.7, -5.2, -5.3, -6.6, -6.2, -4.5% before, with TransformerEngine's FP8 casts
    priced (schedule/fp8.py); -3.0, -2.8, -2.8, -2.3, -2.4, -4.0,
    -3.6, -1.8% before them, with the output layer in BF16 as Megatron-Core runs it; -1.4, -1.2, -1.4, -0.9, -1.0, -2.8, -2.4,
    -0.6% while it was priced in FP8; -0.7, -0.5, -0.7, -0.2, -0.3, -2.2, -1.8, +0.0% before the attention backward's per-CTA cost on
    Hopper (dgx-h100 bwd_cta_overhead_tiles, costs/attention_shape.py: the 2K-token cuDNN backward
    7% slower), and +0.6, +0.8, +0.5, +1.0, +0.9, -1.0, -0.6, +1.3% before the fp8 GEMM tile's
    fixed cost was counted in bf16 time (costs/gemm_shape.py k_overhead)."""
    errs = [r.error for r in scoring.run_cases(mlperf_gpt3(_rows()))]
    assert len(errs) == 8 and all(-0.05 <= e <= -0.01 for e in errs), errs


@pytest.mark.slow
def test_v30_rows_are_pinned_optimistic():
    """v3.0, held out (10-40 CPU s per row): +4.3, +4.7% on NVIDIA's DGX H100 and +6.2, +7.1, +9.0% on
    CoreWeave's HGX H100, growing with DP, since the H100 derate's refit (0.693 -> 0.720; +0.7, +1.1,
    +2.6, +3.4, +5.5% before), with TransformerEngine's FP8 casts priced (+4.0, +4.4,
    +5.9, +6.7, +8.7% before them, with the output layer in BF16; +5.7, +6.1, +7.7, +8.5,
    +10.4% while it was priced in FP8; +6.4 .. +11.1% before the attention backward's per-CTA
    cost on Hopper, +7.8 .. +12.5% before the fp8 GEMM tile's fixed cost was counted in bf16 time);
    the same plan ran 8.5% longer than in v3.1, of which the model describes 1.9% (the page's
    findings). Pinned, not closed."""
    errs = [r.error for r in scoring.run_cases(mlperf_gpt3_v30(_rows_v30()))]
    assert len(errs) == 5 and all(0.02 <= e <= 0.11 for e in errs), errs
    assert errs[2] < errs[3] < errs[4]

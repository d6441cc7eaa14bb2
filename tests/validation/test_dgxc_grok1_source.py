"""dgxc-benchmarking's Grok-1 314B H100 tables (source ``dgxc_grok1``): the tables are consistent as
transcribed, the rows build the recipe's plan and settings, are held out, and score as the page
says."""

from __future__ import annotations

import statistics

import pytest

from simulator.config.scenario import build_scenario
from simulator.e2e_validation import scoring, sources
from simulator.e2e_validation.dgxc_grok1_sources import dgxc_grok1
from simulator.e2e_validation.rows import parse_int, read_rows

PEAK = {"bf16": 989e12, "fp8": 1979e12}  # the README's H100 peaks
# configure.sh per GPU count: layers, sequence, PP, VP, CP, EP, GBS (TP 4 everywhere)
PLANS = {8: (2, 4096, 1, 1, 1, 2, 1024), 16: (4, 4096, 1, 1, 1, 4, 1024), 32: (4, 4096, 1, 1, 1, 8, 1024),
         64: (8, 8192, 1, 1, 2, 8, 1024), 128: (16, 8192, 2, 8, 2, 8, 1024), 256: (32, 8192, 4, 8, 2, 8, 1024),
         512: (64, 8192, 8, 8, 2, 8, 1024), 1024: (64, 8192, 8, 8, 2, 8, 2048), 2048: (64, 8192, 8, 8, 2, 8, 4096)}
# The one cell whose tokens/s and MFU give another step (17.10 s) than the printed 17.01 s (flagged).
ODD = "dgxc-benchmarking-nemo24.12-grok1-314b-fp8-1024"


def _rows() -> list[dict[str, str]]:
    return read_rows(sources.DATA_DIR / "dgxc_grok1_314b_h100.csv")


def test_tables_are_consistent_as_transcribed():
    """Two containers x two precisions x 8-2,048 GPUs = 36 runs x 3 metrics, each on the plan
    configure.sh gives its node count (TP x PP x CP x DP = GPUs); every tokens/s is seq x GBS / step
    within 0.1% and every full-model MFU the README's 4.27e15 FLOPs per sequence over the peak within
    1%, except the flagged cell, whose tokens/s and MFU agree with each other on a 17.10 s step."""
    rows = _rows()
    assert len(rows) == 108
    runs: dict[str, dict[str, float]] = {}
    for r in rows:
        n = parse_int(r["num_gpus"])
        layers, seq, pp, vp, cp, ep, gbs = PLANS[n]
        tp, dp = parse_int(r["tp"]), parse_int(r["dp"])
        assert (parse_int(r["layers"]), parse_int(r["seq_len"]), parse_int(r["pp"]), parse_int(r["vp"], 1),
                parse_int(r["cp"]), parse_int(r["ep"]), parse_int(r["global_batch"])) == (layers, seq, pp, vp, cp, ep, gbs)
        assert tp == 4 and tp * pp * cp * dp == n and (dp * cp) % ep == 0
        runs.setdefault(r["source_id"], {"n": n, "gbs": gbs, "seq": seq, "peak": PEAK[r["source_id"].split("-")[-2]]})[
            r["metric"]] = float(r["value"])
    assert len(runs) == 36
    for sid, run in runs.items():
        step = 17.10 if sid == ODD else run["step_time_s"]
        assert run["seq"] * run["gbs"] / step == pytest.approx(run["tokens_per_s_total"], rel=1e-3), sid
        if run["n"] >= 512:
            mfu = 100 * run["gbs"] * 4.27e15 / step / run["n"] / run["peak"]
            assert mfu == pytest.approx(run["mfu"], rel=1e-2), sid
    assert runs[ODD]["step_time_s"] == 17.01


def test_rows_build_the_recipe_plan_held_out():
    """Twenty runs scored (8-128 GPUs, both containers and precisions), none in the fitting subset;
    TP 4 with sequence parallelism and TE's default TP overlap, the experts tensor-parallel over TP,
    the alltoall dispatcher with BF16 exchanges, capacity factor 1.0, PP 2 interleaved with 8 virtual
    stages and overlapped exchanges on 128 GPUs, Grok-1's shape (8 experts,
    top-2, 8 query groups, FFN 32,768) with the vocabulary padded to 128,512; the distributed
    optimizer with both overlaps in bf16, no NaN check, averaging in the collective; no recompute,
    dropout 0, flash-attn 2, the aux-loss router; FP8 with delayed scaling, fp8 parameters and the
    output layer in BF16."""
    cs = dgxc_grok1(_rows())
    assert len(cs) == 20
    assert "dgxc_grok1" in sources.HELD_OUT_SOURCES and [s.key for s in sources.SOURCES].count("dgxc_grok1") == 1
    assert sorted({c.n_gpus for c in cs}) == [8, 16, 32, 64, 128]
    for c in cs:
        scn = build_scenario(c.scenario)
        p, t, m = c.scenario["parallel"], c.scenario["training"], c.scenario["model"]
        layers, seq, pp, vp, cp, ep, gbs = PLANS[c.n_gpus]
        assert not sources.is_fit_case(c) and c.metric == "step_time_s"
        assert (p["tp"], p["pp"], p["cp"], p["ep"], p.get("etp")) == (4, pp, cp, ep, None) and scn.parallel.expert_tp == 4
        assert (p.get("vp", 1), p.get("pp_schedule"), p.get("overlap_p2p_comm")) == (
            (8, "interleaved", True) if pp > 1 else (1, None, None))
        assert (p["sequence_parallel"], p["tp_overlap"], "tp_overlap_gemm_sms" in p) == (True, "te_default", False)
        assert (p["moe_dispatcher"], p["moe_dispatch_dtype"]) == ("alltoall", "bf16")
        assert (p["zero"], p["overlap_param_gather"], p["overlap_grad_reduce"], p["grad_reduce_dtype"]) == (
            1, True, True, "bf16")
        assert (p["ddp_grad_check"], p["ddp_grad_scaling"]) == ("none", "collective")
        assert (m["layers"], m["seq_len"], m["experts"], m["top_k"], m["kv_heads"], m["moe_ffn_hidden"], m["vocab"],
                m["capacity_factor"]) == (layers, seq, 8, 2, 8, 32768, 128512, 1.0)
        assert (t["recompute"], t["micro_batch"], t["global_batch"], t["attention"], t["dropout"]) == (
            "none", 1, gbs, "flash2", False)
        assert t["moe_router_kernels"] == ["aux_loss"] and scn.n_micro == gbs // (c.n_gpus // (4 * pp * cp))
        if t["dtype"] == "fp8":
            assert (t["fp8_recipe"], t["fp8_param_gather"], scn.training.fp8_output_layer) == ("delayed", True, False)


@pytest.mark.slow
def test_held_out_error():
    """Held out (about 10 CPU seconds). BF16 reads -3.4..+1.5%, FP8 -0.3..+9.9%; median |error| 3.0%
    (-1.0..-6.4% and -3.2..+6.9% before the H100 derate was refitted, 0.693 -> 0.720, once MPT's
    FlashAttention-1 ran at FA1's own H100 rate). Tolerances from that: BF16 within -9%..+3%, FP8
    within -6%..+12%, median <= 6%. The output layer in FP8 (``fp8_output_layer``, what the model
    priced before) makes the 2-layer FP8 proxy on 8 GPUs, whose 128K-vocabulary head is a fifth of
    the step, read +16% or more (the fix is what moves it)."""
    cs = dgxc_grok1(_rows())
    res = list(scoring.run_cases(cs))
    bf16 = [r.error for r in res if r.case.scenario["training"]["dtype"] == "bf16"]
    fp8 = [r.error for r in res if r.case.scenario["training"]["dtype"] == "fp8"]
    assert all(-0.09 <= e <= 0.03 for e in bf16), bf16
    assert all(-0.06 <= e <= 0.12 for e in fp8), fp8
    assert statistics.median(abs(r.error) for r in res) <= 0.06
    proxy = next(c for c in cs if c.n_gpus == 8 and c.scenario["training"]["dtype"] == "fp8" and "24.12" in c.label)
    head8 = dict(proxy.scenario, training=dict(proxy.scenario["training"], fp8_output_layer=True))
    old = next(iter(scoring.run_cases([sources.Case(proxy.source, proxy.label + " head fp8", head8, proxy.metric,
                                                    proxy.measured, proxy.n_gpus)])))
    assert old.error >= 0.16

"""dgxc-benchmarking's Nemotron-H 56B H100 table (source ``dgxc_nemotronh``): the table is consistent
as transcribed, the rows build the recipe's hybrid model and plan, are held out, and score as the
page says."""

from __future__ import annotations

import statistics

import pytest

from simulator.config.scenario import build_scenario
from simulator.e2e_validation import scoring, sources
from simulator.e2e_validation.dgxc_nemotronh_sources import NEMOTRON_H_56B_PATTERN, dgxc_nemotronh
from simulator.e2e_validation.rows import parse_int, read_rows

SEQ = 8192


def _rows() -> list[dict[str, str]]:
    return read_rows(sources.DATA_DIR / "dgxc_nemotronh_56b_h100.csv")


def test_table_is_consistent_as_transcribed():
    """Seven runs (32-2,048 GPUs) x 3 metrics: TP 8 x DP = GPUs, GBS = 3 per GPU (launch.sh), 24
    micro-batches per data-parallel rank; every tokens/s is 8,192 x GBS / step within 0.1% and every
    MFU the README's 2.816e15 FLOPs per sequence over the FP8 peak (1,979 TFLOP/s) within 0.5%."""
    rows = _rows()
    assert len(rows) == 21
    runs: dict[str, dict[str, float]] = {}
    for r in rows:
        n, gbs, tp, dp = (parse_int(r[k]) for k in ("num_gpus", "global_batch", "tp", "dp"))
        assert tp == 8 and tp * dp == n and gbs == 3 * n and gbs // dp == 24
        runs.setdefault(r["source_id"], {"n": n, "gbs": gbs})[r["metric"]] = float(r["value"])
    assert sorted(int(run["n"]) for run in runs.values()) == [32, 64, 128, 256, 512, 1024, 2048]
    for run in runs.values():
        assert SEQ * run["gbs"] / run["step_time_s"] == pytest.approx(run["tokens_per_s_total"], rel=1e-3)
        assert 100 * run["gbs"] * 2.816e15 / run["step_time_s"] / run["n"] / 1979e12 == pytest.approx(run["mfu"], rel=5e-3)


def test_rows_build_the_recipe_model_held_out():
    """Every run scored, none fitting; NemotronHConfig56B's pattern (54 M, 10 *, 54 -), Mamba2 of 256
    heads x 64 with state 256 and 8 groups split over TP 8, no position embedding, squared-ReLU
    (two-matrix) MLP, the NullTokenizer's 131,073 entries padded to 132,096; TP 8 with sequence
    parallelism and no TP overlap; the distributed optimizer with the gradient ReduceScatter
    overlapped in bf16 and the parameter AllGather not, Megatron-Core 0.12's isnan/isinf bucket
    check and buffer scaling; FP8 delayed with fp8 parameters, the output layer in BF16; flash-attn
    2, TE cross-entropy, dropout 0, no recompute."""
    cs = dgxc_nemotronh(_rows())
    assert len(cs) == 7 and "dgxc_nemotronh" in sources.HELD_OUT_SOURCES
    assert (NEMOTRON_H_56B_PATTERN.count("M"), NEMOTRON_H_56B_PATTERN.count("*"), NEMOTRON_H_56B_PATTERN.count("-")) == (
        54, 10, 54)
    for c in cs:
        scn = build_scenario(c.scenario)
        m, p, t = c.scenario["model"], c.scenario["parallel"], c.scenario["training"]
        assert not sources.is_fit_case(c) and c.metric == "step_time_s"
        assert (m["layers"], m["layer_pattern"], m["mamba_heads"], m["mamba_state"], m["mamba_groups"]) == (
            118, NEMOTRON_H_56B_PATTERN, 256, 256, 8)
        assert (m["position_embedding"], m["mlp"], m["vocab"], m["tied_embeddings"]) == ("none", "squared_relu", 132096, False)
        assert (p["tp"], p["pp"], p["sequence_parallel"], "tp_overlap" in p) == (8, 1, True, False)
        assert (p["zero"], p["overlap_grad_reduce"], p["overlap_param_gather"], p["grad_reduce_dtype"]) == (
            1, True, False, "bf16")
        assert (p["ddp_grad_check"], p["ddp_grad_scaling"]) == ("nan_inf", "buffer")
        assert (t["dtype"], t["fp8_recipe"], t["fp8_param_gather"], scn.training.fp8_output_layer) == (
            "fp8", "delayed", True, False)
        assert (t["attention"], t["cross_entropy"], t["dropout"], t["recompute"]) == ("flash2", "fused", False, "none")
        assert scn.n_micro == 24


@pytest.mark.slow
def test_held_out_error():
    """Held out (about 3 CPU seconds): the model is optimistic on every run, +5.0% to +10.3%
    (median 7.9%; 12.6% before TransformerEngine's FP8 casts were priced, 15.1% before NeMo's eager
    squared ReLU): the simulated step is 14.32-14.47 s at every size where 15.06-15.89 s were
    measured (the measured step grows by 4% from 32 to 2,048 GPUs, the simulated by 1.0%). What is
    left is bounded in the page's findings. +7.9% to +13.4% (median 10.9%) since the H100 derate was
    refitted (0.693 -> 0.720) once MPT's FlashAttention-1 ran at FA1's own H100 rate. Pinned: every row
    within +5%..+16%, the median within 8-13%, the simulated step within 2% across the sizes."""
    res = list(scoring.run_cases(dgxc_nemotronh(_rows())))
    errs = [r.error for r in res]
    assert all(0.05 <= e <= 0.16 for e in errs), errs
    assert 0.08 <= statistics.median(errs) <= 0.13
    steps = [r.step_time_s for r in res]
    assert max(steps) / min(steps) < 1.02


def test_the_bundled_scenario_is_the_32_gpu_row():
    """scenarios/nemotron-h-56b-fp8-tp8-h100.yaml, written as a user would, is the 32-GPU row the
    page scores: the same step time to the float rounding."""
    from simulator.config.scenario import load_scenario
    from simulator.simulation import simulate_scenario
    from tests.golden.regenerate import SCENARIOS

    (case,) = [c for c in dgxc_nemotronh(_rows()) if c.n_gpus == 32]
    bundled = simulate_scenario(load_scenario(SCENARIOS / "nemotron-h-56b-fp8-tp8-h100.yaml"))
    assert bundled.report.step_time_s == pytest.approx(scoring.run_case(case).step_time_s, rel=1e-9)

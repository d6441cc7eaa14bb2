"""dgxc-benchmarking v25.04's Llama 3.1 H100 tables (source ``dgxc_llama``): the tables are
consistent as transcribed, the rows build the launch script's plans, are held out, and score as
the page says."""

from __future__ import annotations

import statistics

import pytest

from simulator.config.scenario import build_scenario
from simulator.e2e_validation import scoring, sources
from simulator.e2e_validation.dgxc_llama_sources import dgxc_llama
from simulator.e2e_validation.rows import parse_int, read_rows

SEQ = 8192
PEAK = {"bf16": 989e12, "fp8": 1979e12}  # the README's H100 peaks


def _rows() -> list[dict[str, str]]:
    return read_rows(sources.DATA_DIR / "dgxc_llama31_h100.csv")


def _readme_model_flops(r: dict[str, str]) -> float:
    """Model FLOPs per sample as the README's Notes count them: s (12 l h^2 (1 + g/a + s/h)
    + 18 l f h + 6 V h)."""
    l_, h, a, g, f, v = (parse_int(r[k]) for k in ("layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab"))
    return SEQ * (12 * l_ * h * h * (1 + g / a + SEQ / h) + 18 * l_ * f * h + 6 * v * h)


def test_tables_are_consistent_as_transcribed():
    """34 runs x 3 metrics. TP x PP x CP x DP = GPUs; the global batch follows the launch script
    (8B: 16 per GPU, 70B: 2, 405B: one per two GPUs, the proxies 64, 64 and 128); every printed
    tokens/s is 8,192 x GBS / step time within 0.2% and every MFU the README's model FLOPs over the
    precision's peak within 1% (8B BF16 on 8 GPUs: 128 x 4.74e14 / 12.27 s / 8 / 989e12 = 62.5%;
    its model FLOPs per sample are the README's worked 4.74e14)."""
    rows = _rows()
    assert len(rows) == 102
    by_run: dict[str, dict[str, float]] = {}
    for r in rows:
        n, gbs = parse_int(r["num_gpus"]), parse_int(r["global_batch"])
        assert parse_int(r["tp"]) * parse_int(r["pp"]) * parse_int(r["cp"]) * parse_int(r["dp"]) == n
        size, dtype = r["source_id"].split("-")[-3:-1]
        proxy = {32: 64, 64: 64, 128: 128}.get(n) if size == "405b" else None
        assert gbs == (proxy or {"8b": 16 * n, "70b": 2 * n, "405b": n // 2}[size])
        run = by_run.setdefault(r["source_id"], {"gbs": gbs, "n": n, "flops": _readme_model_flops(r),
                                                 "peak": PEAK[dtype]})
        run[r["metric"]] = float(r["value"])
    assert len(by_run) == 34
    assert by_run["dgxc-benchmarking-v25.04-llama3.1-8b-bf16-8"]["flops"] == pytest.approx(4.74e14, rel=2e-3)
    for run in by_run.values():
        assert SEQ * run["gbs"] / run["step_time_s"] == pytest.approx(run["tokens_per_s_total"], rel=2e-3)
        mfu = 100 * run["gbs"] * run["flops"] / run["step_time_s"] / run["n"] / run["peak"]
        assert mfu == pytest.approx(run["mfu"], rel=1e-2)


def test_rows_build_the_launch_scripts_plan_held_out():
    """17 runs scored, none in the fitting subset (the single-node 8B rows included); the plans of
    ``llama31_auto_configs``; the NeMo 2.0 recipe's distributed optimizer with both overlaps and
    bf16 gradient reduction, no recompute, micro-batch 1; TE TP overlap with sequence parallelism
    for 70B and 405B only; the 405B pipeline split with the embedding and the loss as one layer
    each (30 layers on PP 4 x VP 8: no layer in the first and the last virtual stage, one in each
    of the other 30); FP8 with delayed scaling and fp8 parameter AllGather."""
    cs = dgxc_llama(_rows())
    assert len(cs) == 17
    assert "dgxc_llama" in sources.HELD_OUT_SOURCES and [s.key for s in sources.SOURCES].count("dgxc_llama") == 1
    for c in cs:
        build_scenario(c.scenario)
        p, t = c.scenario["parallel"], c.scenario["training"]
        assert not sources.is_fit_case(c) and c.metric == "step_time_s"
        assert (p["zero"], p["overlap_grad_reduce"], p["overlap_param_gather"], p["grad_reduce_dtype"]) == (
            1, True, True, "bf16")
        assert (t["recompute"], t["micro_batch"]) == ("none", 1)
        assert p.get("tp_overlap", "none") == ("none" if p["tp"] == 1 else "te_default")
        assert p.get("sequence_parallel", False) == (p["tp"] > 1)
        # NeMo's userbuffers_*_h100_h8192_tp4 / h16384_tp8_cp2 configurations: the bulk overlaps
        # with set_sm_margin False (no SM withheld), the pipelined proj/fc2 fprop with their num_sm
        ub = p.get("tp_overlap_gemm_sms", {})
        if p["tp"] == 1:
            assert ub == {}
        else:
            assert [ub[g] for g in ("qkv_dgrad", "qkv_wgrad", "fc1_dgrad", "fc1_wgrad", "proj_fprop")] == [0] * 4 + [24]
            assert ub["fc2_fprop"] == (8 if p["tp"] == 8 else 16)
        if t["dtype"] == "fp8":
            assert (t["fp8_recipe"], t["fp8_param_gather"]) == ("delayed", True)
    plans = {(c.scenario["model"]["layers"], c.n_gpus, c.scenario["training"]["dtype"]):
             (c.scenario["parallel"]["tp"], c.scenario["parallel"]["pp"], c.scenario["parallel"].get("vp", 1),
              c.scenario["parallel"]["cp"]) for c in cs}
    assert plans[(32, 8, "bf16")] == (1, 1, 1, 2)
    assert plans[(80, 64, "fp8")] == plans[(80, 2048, "fp8")] == (4, 8, 5, 1)
    assert plans[(80, 64, "bf16")] == plans[(80, 2048, "bf16")] == (4, 4, 5, 2)
    assert plans[(8, 32, "bf16")] == plans[(8, 32, "fp8")] == (8, 1, 1, 2)
    assert plans[(30, 64, "bf16")] == (8, 4, 8, 2)
    proxy = next(c for c in cs if c.scenario["model"]["layers"] == 30)
    assert proxy.scenario["parallel"]["pp_layers"] == [0] + [1] * 30 + [0]


@pytest.mark.slow
def test_held_out_error():
    """Held out (about 70 CPU seconds of simulation). The model is pessimistic on every row, as on
    the dgxc Nemotron-4 rows (the page's findings): 8B BF16 -14.2% to -14.6% on 8-128 GPUs, 8B FP8
    -9.9% to -11.9%, 70B BF16 -10.0% on 64 and on 2,048 GPUs, 70B FP8 -14.9% on 64 and -12.8% on
    2,048, the 405B proxy on 32 GPUs -7.2% (BF16) and -9.8% (FP8), the 405B proxy in BF16 on 64
    -4.9%: median |error| 11.7%, signed -11.7%, with the output layer in BF16 as Megatron-Core runs
    it and TransformerEngine's FP8 casts priced (9.8% before the casts). Tolerances from that:
    median |error| <= 12.5%, every row within -17%..+5%. The 8B plan is compute-bound (exposed
    communication < 10 ms of 14.4 s), so its BF16/FP8 step ratio isolates the two precisions'
    compute: 1.315 measured, 1.358 simulated (1.415 before the casts); asserted 0-5% above the
    measured one. The 405B proxy's (h = 16,384, TP 8, 32 GPUs) is 1.530 measured and 1.487
    simulated (1.526 before the casts: at TP 8 each rank transposes the gathered inputs and output
    gradients whole, while its GEMMs shrink by 8): asserted within 4%."""
    res = list(scoring.run_cases(dgxc_llama(_rows())))
    errs = [r.error for r in res]
    assert statistics.median(abs(e) for e in errs) <= 0.125, errs
    assert all(-0.17 <= e <= 0.05 for e in errs), errs
    eight = {r.case.scenario["training"]["dtype"]: r for r in res if r.case.n_gpus == 8}
    measured = eight["bf16"].case.measured / eight["fp8"].case.measured
    assert measured == pytest.approx(12.27 / 9.33)
    simulated = eight["bf16"].step_time_s / eight["fp8"].step_time_s
    assert measured <= simulated <= 1.05 * measured
    proxy = {r.case.scenario["training"]["dtype"]: r for r in res
             if r.case.n_gpus == 32 and r.case.scenario["model"]["hidden"] == 16384}
    measured = proxy["bf16"].case.measured / proxy["fp8"].case.measured
    assert measured == pytest.approx(5.4 / 3.53)
    assert proxy["bf16"].step_time_s / proxy["fp8"].step_time_s == pytest.approx(measured, rel=0.04)

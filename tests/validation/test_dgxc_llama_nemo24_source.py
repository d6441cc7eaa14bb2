"""dgxc-benchmarking v24.11.1 and v25.02's Llama 3.1 H100 tables (source ``dgxc_llama_nemo24``):
the tables are consistent as transcribed, the 8B rows build the v25.04 plan on NeMo 1.0's
launcher configuration, are held out, and score against the measured steps within stated bounds."""

from __future__ import annotations

import statistics

import pytest

from simulator.config.scenario import build_scenario
from simulator.e2e_validation import scoring, sources
from simulator.e2e_validation.dgxc_llama_sources import dgxc_llama_case, dgxc_llama_nemo24
from simulator.e2e_validation.rows import parse_int, read_rows

SEQ = 8192
# The one run whose printed tokens/s does not follow from its printed step (module data header):
# 8192 x 4096 / 14.98 s = 2,239,949 against 2,248,957 printed, the 1,024-GPU neighbour's 14.92 s.
TYPO = "dgxc-benchmarking-v24.11.1-llama3.1-70b-bf16-2048"


def _rows() -> list[dict[str, str]]:
    return read_rows(sources.DATA_DIR / "dgxc_llama31_h100_nemo24.csv")


def _runs() -> dict[str, dict[str, float]]:
    runs: dict[str, dict[str, float]] = {}
    for r in _rows():
        run = runs.setdefault(r["source_id"], {"n": parse_int(r["num_gpus"]), "gbs": parse_int(r["global_batch"])})
        run[r["metric"]] = float(r["value"])
    return runs


# configure.sh's 405B runs by GPU count: (layers, PP, VP, global batch); from 576 GPUs the whole
# model at GBS 252 x GPUs / 576.
PLANS_405B = {32: (7, 1, 1, 126), 96: (21, 3, 7, 126), 192: (42, 3, 7, 252), 576: (126, 9, 7, 252),
              1152: (126, 9, 7, 504), 2304: (126, 9, 7, 1008)}


def test_tables_are_consistent_as_transcribed():
    """Two releases x (8B at 8-128 GPUs + 70B at 64-2,048 + 405B at 32-2,304) x two precisions = 68
    runs, each a step time and a tokens/s. TP x PP x CP x DP = GPUs, the global batch that
    configure.sh sets (8B: 16 per GPU, 70B: 2; 405B and its proxies: ``PLANS_405B``), the plans of
    the tables' headers (8B TP 1 CP 2; 70B TP 4 PP 4 CP 2 VP 5; 405B TP 8 CP 2 with the proxies'
    layers, PP and VP), 63 micro-batches per 405B pipeline, and every printed tokens/s is 8,192 x
    GBS / step time within 0.2%, but the one run kept as printed (0.4% apart)."""
    rows = _rows()
    assert len(rows) == 136
    for r in rows:
        n, gbs = parse_int(r["num_gpus"]), parse_int(r["global_batch"])
        tp, pp, cp, vp = (parse_int(r[k], 1) for k in ("tp", "pp", "cp", "vp"))
        dp = parse_int(r["dp"])
        assert tp * pp * cp * dp == n
        size = r["source_id"].split("-")[-3]
        if size == "405b":
            assert (parse_int(r["layers"]), pp, vp, gbs) == PLANS_405B[n]
            assert (tp, cp, gbs // dp, r["kv_heads"], r["vocab"]) == (8, 2, 63, "16", "50257")
            continue
        assert gbs == {"8b": 16, "70b": 2}[size] * n
        assert (tp, pp, cp, vp) == {"8b": (1, 1, 2, 1), "70b": (4, 4, 2, 5)}[size]
    runs = _runs()
    assert len(runs) == 68
    for sid, run in runs.items():
        tokens = SEQ * run["gbs"] / run["step_time_s"]
        assert tokens == pytest.approx(run["tokens_per_s_total"], rel=5e-3 if sid == TYPO else 2e-3)
    assert SEQ * 4096 / runs[TYPO]["tokens_per_s_total"] == pytest.approx(14.92, abs=0.005)


def test_rows_build_the_v25_04_plans_on_nemo1_held_out():
    """36 runs scored (the 8B tables of both releases, the 70B tables' 64- and 2,048-GPU runs, the
    405B proxies on 32 and 96 GPUs), none in the fitting subset (the single-node rows included); 8B
    TP 1, CP 2, 32 micro-batches; 405B TP 8 with sequence parallelism, CP 2, 63 micro-batches, 7
    layers without pipeline or 21 at PP 3 x VP 7 split evenly (no ``pp_layers``), 16 query groups,
    the GPT-2 vocabulary padded to 51,200, the yaml's userbuffers SM counts (proj_fprop 24, fc2_fprop
    8 withheld); 70B TP 4 with
    sequence parallelism, PP 4 x VP 5 interleaved, CP 2, 64 micro-batches, in BF16 and FP8 alike,
    TE's TP overlap at the yaml's userbuffers SM counts (the bulk overlaps on every SM, proj_fprop
    24 and fc2_fprop 16 withheld); micro-batch 1, no recompute; Apex's distributed_fused_adam as
    the distributed optimizer's communication with both overlaps in bf16 and none of Megatron-Core
    DDP's bucket passes; FP8 hybrid with delayed scaling and fp8 parameters. Apart from those
    passes each scenario is what the v25.04 builder makes of the row."""
    rows = _rows()
    cs = dgxc_llama_nemo24(rows)
    picked = [r for r in rows if r["metric"] == "step_time_s"
              and (r["layers"] in ("32", "7", "21") or (r["layers"] == "80" and r["num_gpus"] in ("64", "2048")))]
    assert len(cs) == len(picked) == 36
    assert "dgxc_llama_nemo24" in sources.HELD_OUT_SOURCES
    assert [s.key for s in sources.SOURCES].count("dgxc_llama_nemo24") == 1
    strip = lambda par: {k: v for k, v in par.items() if not k.startswith("ddp_")}  # noqa: E731
    for r, c in zip(picked, cs):
        build_scenario(c.scenario)
        p, t = c.scenario["parallel"], c.scenario["training"]
        assert not sources.is_fit_case(c) and c.metric == "step_time_s" and c.measured == float(r["value"])
        assert (p["zero"], t["micro_batch"], t["recompute"]) == (1, 1, "none")
        m = c.scenario["model"]
        if m["layers"] == 32:
            assert (p["tp"], p["pp"], p["cp"], t["global_batch"]) == (1, 1, 2, 16 * c.n_gpus)
            assert p.get("tp_overlap", "none") == "none"
        elif m["layers"] in (7, 21):
            assert (p["tp"], p["pp"], p.get("vp", 1), p["cp"]) == ((8, 1, 1, 2) if m["layers"] == 7 else (8, 3, 7, 2))
            assert t["global_batch"] == 126 and "pp_layers" not in p
            assert (m["hidden"], m["kv_heads"], m["ffn_hidden"], m["vocab"]) == (16384, 16, 53248, 51200)
            assert (p["sequence_parallel"], p["tp_overlap"]) == (True, "te_default")
            assert p["tp_overlap_gemm_sms"] == dict(qkv_dgrad=0, qkv_wgrad=0, fc1_dgrad=0, fc1_wgrad=0,
                                                    proj_fprop=24, fc2_fprop=8)
        else:
            assert (p["tp"], p["pp"], p["vp"], p["cp"], t["global_batch"]) == (4, 4, 5, 2, 2 * c.n_gpus)
            assert (p["sequence_parallel"], p["pp_schedule"], p["tp_overlap"]) == (True, "interleaved", "te_default")
            assert p["tp_overlap_gemm_sms"] == dict(qkv_dgrad=0, qkv_wgrad=0, fc1_dgrad=0, fc1_wgrad=0,
                                                    proj_fprop=24, fc2_fprop=16)
        assert (p["overlap_grad_reduce"], p["overlap_param_gather"], p["grad_reduce_dtype"]) == (True, True, "bf16")
        assert "ddp_grad_check" not in p and "ddp_grad_scaling" not in p
        if t["dtype"] == "fp8":
            assert (t["fp8_recipe"], t["fp8_param_gather"]) == ("delayed", True)
        twin = dgxc_llama_case(r, embedding_loss_split=False).scenario
        assert strip(twin["parallel"]) == p and twin["training"] == t
        assert twin["model"] == m  # the same model, its vocabulary padded to 128 x TP by both NeMo generations


@pytest.mark.slow
def test_held_out_error_and_the_containers():
    """Held out (about 35 CPU seconds). Three containers ran the 8B plan: measured on 8 GPUs, BF16
    12.91 s (nemo:24.09), 12.78 s (24.12), 12.27 s (25.02.01, source ``dgxc_llama``); FP8 9.67,
    9.44 and 9.33 s; the 70B BF16 plan on 64 GPUs 14.72, 14.61 and 14.66 s. The model does not see
    the container: one prediction per model and precision (8B 14.47 s and 10.59 s, 70B 16.34-16.35 s
    and 11.18-11.20 s), so the BF16 rows read -9.1% to -11.7% (8B) and -8.4% to -10.6% (70B on 64
    and 2,048 GPUs), the FP8 rows -7.2% to -10.8% (8B) and -6.4% to +1.7% (70B: 11.01 and 10.46 s
    measured on 64 GPUs, 11.39 and 10.99 s on 2,048, where the model adds 0.2%); median |error|
    9.2%. Before the H100 derate was refitted (0.706 -> 0.693) when each kernel came to pay the GPU's
    measured gap, not the host's launch: 14.37 s, 10.59 s, 16.28 s and 11.25-11.28 s, median 8.9%.
    The FP8 predictions carry the output layer in BF16, as Megatron-Core runs it, and
    TransformerEngine's casts (10.15 s and 10.85-10.87 s, FP8 rows -3.3% to -7.0% and -3.6% to
    +4.8%, median 7.4%, before the casts were priced). Tolerances from that: every BF16 row within
    -13%..-6%, every FP8 row within -12%..+3%, median |error| <= 9.5%, and the predictions of one
    model and precision within 0.5% of each other across GPU counts and containers.

    Since the H100 derate was refitted (0.693 -> 0.720) once MPT's FlashAttention-1 ran at FA1's own H100
    rate: 8B 14.06 s and 10.34 s, 70B 15.82-15.83 s and 10.88-10.90 s; BF16 -6.4% to -9.1% (8B) and
    -5.4% to -7.7% (70B), FP8 -5.0% to -8.7% (8B) and -3.8% to +4.5% (70B); median |error| 6.5%; the
    405B proxies 9.375 / 9.367 s (BF16) and 6.141 / 6.121 s (FP8), -4.0% to -8.0%, the 7-layer step
    ratio 1.527. Tolerances now: BF16 within -11%..-3%, FP8 within -11%..+6%, 405B within -10%..-3%,
    median |error| <= 8%.

    The 405B proxies (7 layers on 32 GPUs, 21 at PP 3 x VP 7 on 96): BF16 8.85 / 9.00 s and 8.75 /
    8.87 s measured (nemo:24.09 / 24.12) against 9.70 and 9.69 s simulated (-7.2% to -9.7%), FP8
    5.80 / 5.75 s and 5.71 / 5.63 s against 6.32 and 6.31 s (-8.3% to -10.7%; 6.15 and 6.13 s
    before the casts). Bounds: every 405B row within -11.5%..-5% in both precisions, and the
    simulated BF16/FP8 step ratio of the 7-layer proxy (1.533; 1.521 before the refit, 1.56 before
    the casts) within 2% of the lower of the measured ones (1.526 and 1.565), below the higher."""
    res = list(scoring.run_cases(dgxc_llama_nemo24(_rows())))
    groups: dict[tuple[int, str], list] = {}
    for r in res:
        groups.setdefault((r.case.scenario["model"]["layers"], r.case.scenario["training"]["dtype"]), []).append(r)
    assert sorted(groups) == [(7, "bf16"), (7, "fp8"), (21, "bf16"), (21, "fp8"), (32, "bf16"), (32, "fp8"),
                              (80, "bf16"), (80, "fp8")]
    big = [r.error for (layers, _), rs in groups.items() for r in rs if layers in (7, 21)]
    assert len(big) == 8 and all(-0.10 <= e <= -0.03 for e in big), big
    measured = sorted(b.case.measured / f.case.measured for b, f in zip(groups[(7, "bf16")], groups[(7, "fp8")]))
    assert 0.98 * measured[0] < groups[(7, "bf16")][0].step_time_s / groups[(7, "fp8")][0].step_time_s \
        < min(1.02 * measured[0], measured[1])
    bf16 = [r.error for (_, dtype), rs in groups.items() for r in rs if dtype == "bf16"]
    fp8 = [r.error for (_, dtype), rs in groups.items() for r in rs if dtype == "fp8"]
    assert all(-0.11 <= e <= -0.03 for e in bf16), bf16
    assert all(-0.11 <= e <= 0.06 for e in fp8), fp8
    assert statistics.median(abs(r.error) for r in res) <= 0.08
    for rs in groups.values():
        steps = [r.step_time_s for r in rs]
        assert max(steps) / min(steps) < 1.005
    eight = sorted(r.case.measured for r in groups[(32, "bf16")] if r.case.n_gpus == 8)
    assert eight == [12.78, 12.91]

"""NeMo 25.02's DGX-B200 pre-training rows (source ``nemo2502_b200``): the table is consistent as
transcribed, its 8B and 70B rows build the NeMo 2.2 performance recipes' plans, the 8B one is a
dgx-b200 fitting row, and the B200 derate is refitted without each of its three sources."""

from __future__ import annotations

import pytest

from simulator.config.scenario import build_scenario
from simulator.e2e_validation import sources
from simulator.e2e_validation.nemo_b200_sources import nemo_b200
from simulator.e2e_validation.rows import parse_int, read_rows

SEQ = 8192


def _rows() -> list[dict[str, str]]:
    return read_rows(sources.DATA_DIR / "nemo_perf_summary_25.02_b200.csv")


def _full_score_flops_per_token(r: dict[str, str]) -> float:
    """Model FLOPs per token with the whole score matrix (NeMo 2.0's count): Megatron's causal
    12 l h^2 (1 + g/a + s/2h) + 18 l f h + 6 V h with s/2h replaced by s/h."""
    l_, h, a, g, f, v = (parse_int(r[k]) for k in ("layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab"))
    return 12 * l_ * h * h * (1 + g / a + SEQ / h) + 18 * l_ * f * h + 6 * v * h


def test_table_is_consistent_as_transcribed():
    """Three runs x 2 metrics. TP x PP x CP x DP = GPUs and the page's GA = GBS / (MBS x DP);
    the printed model TFLOP/s over tokens/s is the full-score-matrix count per token: 8B 57.9
    GFLOP (1,506 TFLOP/s = 26,006 x 57.9e9) and 70B 481 within 0.2%, 405B 2,625 against the
    printed 2,653 (1.0%)."""
    rows = _rows()
    assert len(rows) == 6
    runs: dict[str, dict[str, float]] = {}
    for r in rows:
        n, tp, pp, cp, dp = (parse_int(r[k]) for k in ("num_gpus", "tp", "pp", "cp", "dp"))
        assert tp * pp * cp * dp == n
        ga = int(r["notes"].split("GA=", 1)[1].split(";")[0])
        assert ga * parse_int(r["micro_batch"]) * dp == parse_int(r["global_batch"])
        run = runs.setdefault(r["model_name"], {"flops": _full_score_flops_per_token(r)})
        run[r["metric"]] = float(r["value"])
    assert runs["LLAMA3-8B"]["flops"] == pytest.approx(57.9e9, rel=1e-3)
    for name, tol in (("LLAMA3-8B", 2e-3), ("LLAMA3-70B", 2e-3), ("LLAMA3-405B", 1.2e-2)):
        run = runs[name]
        assert run["tokens_per_s_per_gpu"] * run["flops"] / 1e12 == pytest.approx(run["model_tflops_per_gpu"], rel=tol)


def test_rows_build_the_recipes_plans():
    """Two runs built, both FP8 with delayed scaling and FP8 parameter AllGather, the distributed
    optimizer with both overlaps and bf16 gradient reduction, no recompute, no dropout. 8B: one
    node, TP 1, PP 1, CP 1, DP 8, micro-batch 2, global batch 128, no TP overlap; one node in
    per-tensor FP8 on dgx-b200, so a fitting row. 70B: 64 GPUs, TP 2 with sequence parallelism, PP
    4 x VP 5, CP 2 (p2p), DP 4, micro-batch 1, global batch 128, TE's TP overlap with the B200
    userbuffers configuration's SMs (bulk overlaps on every SM, one SM for the two forward
    ReduceScatters); held out."""
    eight, seventy = nemo_b200(_rows())
    for c in (eight, seventy):
        build_scenario(c.scenario)
        p, t = c.scenario["parallel"], c.scenario["training"]
        assert (c.scenario["hardware"], c.metric) == ("dgx-b200", "tokens_per_s_per_gpu")
        assert (p["zero"], p["overlap_grad_reduce"], p["grad_reduce_dtype"]) == (1, True, "bf16")
        assert (t["dtype"], t["fp8_recipe"], t["fp8_param_gather"], t["recompute"], t["dropout"]) == (
            "fp8", "delayed", True, "none", False)
        assert c.scenario["model"]["vocab"] == 128256
    p, t = eight.scenario["parallel"], eight.scenario["training"]
    assert (eight.n_gpus, eight.measured) == (8, 26006)
    assert (p["tp"], p["pp"], p["cp"], t["micro_batch"], t["global_batch"]) == (1, 1, 1, 2, 128)
    assert p.get("tp_overlap", "none") == "none"
    p, t = seventy.scenario["parallel"], seventy.scenario["training"]
    assert (seventy.n_gpus, seventy.measured) == (64, 3062)
    assert (p["tp"], p["pp"], p["vp"], p["cp"], t["micro_batch"], t["global_batch"]) == (2, 4, 5, 2, 1, 128)
    assert (p["tp_overlap"], p["sequence_parallel"], p.get("cp_comm", "p2p")) == ("te_default", True, "p2p")
    assert p["tp_overlap_gemm_sms"] == dict(qkv_dgrad=0, qkv_wgrad=0, fc1_dgrad=0, fc1_wgrad=0)
    assert p["tp_overlap_methods"] == dict(proj_fprop="ring_exchange", fc2_fprop="ring_exchange")
    assert sources.is_fit_case(eight) and not sources.is_fit_case(seventy)
    assert "nemo2502_b200" not in sources.HELD_OUT_SOURCES


def test_b200_fitting_rows():
    """The dgx-b200 derate is fitted on SimuMax's 31 single-node BF16 Megatron-LM runs and three
    single-node per-tensor FP8 rows of three sources: NeMo 25.04's long-context 32K row (context
    parallel 2), Megatron-Bridge 25.11's 8B FP8-CS row and NeMo 25.02's 8B row. Not fitting rows:
    the MXFP8 value of the same Bridge 8B run (its block-scaled GEMMs carry their own factor) and
    Megatron-Bridge's MoE rows (held out)."""
    fit = [c for c in sources.cases() if sources.is_fit_case(c) and c.scenario["hardware"] == "dgx-b200"]
    fp8 = [c for c in fit if c.scenario["training"]["dtype"] == "fp8"]
    assert sorted((c.source, c.scenario["training"].get("fp8_recipe", "delayed")) for c in fp8) == [
        ("bridge_dense", "current"), ("nemo2502_b200", "delayed"), ("nemo_cp", "delayed")]
    assert sorted({c.source for c in fit if c not in fp8}) == ["simumax_b200"] and len(fit) == 34
    bridge_8b = [c for c in sources.cases([s for s in sources.SOURCES if s.key == "bridge_dense"])
                 if c.n_gpus == 8 and c.scenario["hardware"] == "dgx-b200"]
    assert sorted(sources.is_fit_case(c) for c in bridge_8b) == [False, True]
    assert not any(sources.is_fit_case(c) for c in bridge_8b if c.scenario["training"]["fp8_recipe"] == "mxfp8")


@pytest.mark.slow
def test_b200_derate_is_refitted_without_each_source():
    """The 34 B200 fitting rows (a few CPU seconds a pass). At the committed x 0.539 the three FP8 rows
    read +1.1% (NeMo 25.04, 32K, CP 2), +2.3% (NeMo 25.02, 8K) and -13.1% (Megatron-Bridge 25.11,
    8K) with the output layer in BF16, as Megatron-Core runs it, and TransformerEngine's FP8 casts
    priced (+2.8%, +5.2%, -10.8% before the casts; +5.7%, +10.1%, -6.6% while the head was also
    priced in FP8), and the fit on all 34 is x 1.000 of the committed curve. Held out, each FP8
    source takes the derate fitted on the other 33 rows (x 1.00: SimuMax's 31 set it), SimuMax the
    one fitted on the three FP8 rows (0.527, x 0.977; 0.531 at x 0.544 before each kernel paid the
    GPU's measured gap, not the host's launch; 0.513, x 0.942 before the casts; 0.481,
    x 0.883 with the head in FP8 too); never H100's borrowed one. Tolerances: 1.5 points on the
    errors, 0.01 on the scales."""
    from simulator.e2e_validation import loso, scoring
    from simulator.e2e_validation.gemm_fit import fit_gemm_scale

    fit = [c for c in sources.cases() if sources.is_fit_case(c) and c.scenario["hardware"] == "dgx-b200"]
    results = list(scoring.run_cases(fit))
    err = {r.case.source: r.error for r in results if r.case.source != "simumax_b200"}
    assert err == pytest.approx({"nemo_cp": 0.011, "nemo2502_b200": 0.025, "bridge_dense": -0.132}, abs=0.015)
    held = loso.leave_one_source_out(results)
    scale = {h.result.case.source: h.refit.scale for h in held}
    assert scale == pytest.approx({"nemo_cp": 1.0, "bridge_dense": 1.0, "nemo2502_b200": 1.0, "simumax_b200": 0.977},
                                  abs=0.01)
    rows = {h.result.case.source: h.refit.rows for h in held}
    assert rows == {"nemo_cp": 33, "bridge_dense": 33, "nemo2502_b200": 33, "simumax_b200": 3}
    assert all(h.refit.how.startswith("refitted") for h in held)
    # the bisection of `--fit-gemm` from the committed curve's neighbourhood: three halvings of
    # [0.97, 1.03] place the fit within 0.0075, inside the tolerance, and a fit outside the bracket
    # ends at its edge and fails (ten halvings of [0.4, 1.2] simulated the 34 rows ten times)
    assert fit_gemm_scale("dgx-b200", fit, lo=0.97, hi=1.03, iters=3)[0] == pytest.approx(1.0, abs=0.01)


@pytest.mark.slow
def test_70b_row_error():
    """The 70B run on 64 B200 (about 11 CPU seconds): -1.9% at the committed x 0.539 with the output
    layer in BF16 (-2.1% at x 0.544, before each kernel paid the GPU's measured gap; +1.9% while the
    output layer was priced in FP8; -6.6% at the x 0.479 fitted on the FP8 rows alone), the same held
    out (x 1.000 of the curve, fitted on the other sources' B200 rows); within 2 points."""
    from simulator.e2e_validation import scoring
    from simulator.e2e_validation.gemm_fit import gemm_scaled

    (c,) = [c for c in nemo_b200(_rows()) if c.n_gpus == 64]
    assert scoring.run_case(c).error == pytest.approx(-0.019, abs=0.02)
    assert scoring.run_case(c, gemm_scaled("dgx-b200", 1.0001)).error == pytest.approx(-0.019, abs=0.02)

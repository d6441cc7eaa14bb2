"""Megatron-Bridge 25.11's dense Llama rows (source ``bridge_dense``): the table is consistent as
transcribed, the rows build the v0.2.0 recipes' plans, are held out, and score as the page says."""

from __future__ import annotations

import statistics

import pytest

from simulator.config.scenario import build_scenario
from simulator.e2e_validation import scoring, sources
from simulator.e2e_validation.bridge_dense_sources import bridge_dense, bridge_dense_all
from simulator.e2e_validation.rows import parse_int, read_rows

SEQ = 8192


def _rows() -> list[dict[str, str]]:
    return read_rows(sources.DATA_DIR / "megatron_bridge_perf_summary_dense.csv")


def _causal_model_flops_per_token(r: dict[str, str]) -> float:
    """Megatron-Core's model FLOPs per token with the causal half of the score matrix:
    12 l h^2 (1 + g/a + s/2h) + 18 l f h + 6 V h (SwiGLU, GQA, untied head)."""
    l_, h, a, g, f, v = (parse_int(r[k]) for k in ("layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab"))
    return 12 * l_ * h * h * (1 + g / a + SEQ / (2 * h)) + 18 * l_ * f * h + 6 * v * h


def test_table_is_consistent_as_transcribed():
    """Nine runs x 2 metrics (the GB200 8B pair added later). TP x PP x CP x DP = GPUs, and the page's GA = GBS / (MBS x DP);
    every printed Model TFLOP/s/GPU is the printed tokens/s/GPU times Megatron's causal model
    FLOPs per token within 1% (Llama 3 8B: 51.5 GFLOP, 70B: 449, 405B: 2,524; 744 TFLOP/s =
    14,451 x 51.5e9 for the H100 8B row)."""
    rows = _rows()
    assert len(rows) == 18
    runs: dict[tuple[str, ...], dict[str, float]] = {}
    for r in rows:
        n, tp, pp, cp, dp = (parse_int(r[k]) for k in ("num_gpus", "tp", "pp", "cp", "dp"))
        assert tp * pp * cp * dp == n
        ga = int(r["notes"].split("GA=", 1)[1].split(";")[0])
        assert ga * parse_int(r["micro_batch"]) * dp == parse_int(r["global_batch"])
        prec = r["notes"].split("prec=", 1)[1].split(";")[0]
        run = runs.setdefault((r["model_name"], r["gpu"], prec), {"flops": _causal_model_flops_per_token(r)})
        run[r["metric"]] = float(r["value"])
    assert len(runs) == 9
    assert runs[("LLAMA3_8B", "H100-SXM (DGX-H100)", "FP8-CS")]["flops"] == pytest.approx(51.5e9, rel=1e-3)
    for run in runs.values():
        assert run["tokens_per_s_per_gpu"] * run["flops"] / 1e12 == pytest.approx(run["model_tflops_per_gpu"], rel=1e-2)


def test_rows_build_the_recipes_plan_held_out():
    """Eight runs built, six scored, one in the fitting subset: 8B on one B200 node in FP8-CS (the
    dgx-b200 derate is fitted on single-node per-tensor FP8 rows; the MXFP8 value of the same run
    is not, its block-scaled GEMMs carry their own factor); the distributed optimizer with both overlaps and bf16 gradient reduction, no
    recompute, TE's fused cross-entropy; TE TP overlap with sequence parallelism where TP > 1, with
    the SMs of the userbuffers configurations (every SM for the bulk overlaps, one withheld for the
    ring-exchange ReduceScatters);
    FP8 current scaling or MXFP8 with FP8 parameter AllGather, whose overlap the 405B MXFP8 recipe
    turns off; 405B's pipeline split with the embedding and the loss as one layer each (126 + 2
    layers over 64 virtual stages: one layer in the first and the last, two in the others); the
    vocabulary padded to a multiple of 128 x TP."""
    built, scored = bridge_dense_all(_rows()), bridge_dense(_rows())
    assert len(built) == 8 and len(scored) == 6
    assert {c.label for c in scored} < {c.label for c in built}
    assert "bridge_dense" not in sources.HELD_OUT_SOURCES and [s.key for s in sources.SOURCES].count("bridge_dense") == 1
    assert [c.label for c in built if sources.is_fit_case(c)] == ["LLAMA3_8B B200 FP8-CS tp1 pp1 dp8 mbs2 8 GPUs"]
    for c in built:
        build_scenario(c.scenario)
        p, t, m = c.scenario["parallel"], c.scenario["training"], c.scenario["model"]
        assert c.metric == "tokens_per_s_per_gpu"
        assert (p["zero"], p["overlap_grad_reduce"], p["grad_reduce_dtype"]) == (1, True, "bf16")
        mx405 = t["fp8_recipe"] == "mxfp8" and m["layers"] == 126
        assert p["overlap_param_gather"] is not mx405
        assert (t["recompute"], t["cross_entropy"], t["dtype"], t["fp8_param_gather"]) == ("none", "fused", "fp8", True)
        assert t["fp8_recipe"] in ("current", "mxfp8")
        assert p.get("tp_overlap", "none") == ("none" if p["tp"] == 1 else "te_default")
        # userbuffers_fp8_*: bulk overlaps on every SM, the two forward ReduceScatters by ring exchange
        assert p.get("tp_overlap_gemm_sms", {}) == ({} if p["tp"] == 1 else dict(
            qkv_dgrad=0, qkv_wgrad=0, fc1_dgrad=0, fc1_wgrad=0))
        assert p.get("tp_overlap_methods", {}) == ({} if p["tp"] == 1 else dict(
            proj_fprop="ring_exchange", fc2_fprop="ring_exchange"))
        assert p.get("sequence_parallel", False) == (p["tp"] > 1)
        assert m["vocab"] % (128 * p["tp"]) == 0 and 0 <= m["vocab"] - 128256 < 128 * p["tp"]
        if m["layers"] == 126:
            assert p["pp_layers"] == [1] + [2] * 62 + [1]
    plans = {(c.scenario["model"]["layers"], c.scenario["hardware"], c.n_gpus):
             (c.scenario["parallel"]["tp"], c.scenario["parallel"]["pp"], c.scenario["parallel"].get("vp", 1),
              c.scenario["parallel"]["cp"], c.scenario["training"]["micro_batch"], c.scenario["training"]["global_batch"])
             for c in built}
    assert plans == {(80, "dgx-h100", 64): (4, 8, 5, 1, 1, 128), (126, "dgx-h100", 1024): (8, 8, 8, 2, 1, 512),
                     (32, "dgx-b200", 8): (1, 1, 1, 1, 2, 128), (126, "dgx-b200", 128): (4, 8, 8, 2, 1, 64),
                     (32, "gb200-nvl72", 8): (1, 1, 1, 1, 2, 128)}
    # GB200: two trays of four GPUs
    assert {c.scenario["nodes"] for c in built if c.scenario["hardware"] == "gb200-nvl72"} == {2}


@pytest.mark.slow
def test_held_out_error():
    """The scored rows, held out (about 20 CPU seconds of simulation). The model is pessimistic on
    every row, as on the other NVIDIA-tuned FP8 sources (dgxc_llama, the page's findings): 8B on 8
    B200 -13.1% (FP8-CS) and -11.4% (MXFP8), 70B on 64 H100 -11.5%, 405B on 128 B200 -10.8% (70B and
    405B with the SMs of the recipes' userbuffers configurations, UB_BRIDGE_FP8), with
    TransformerEngine's FP8 casts priced (-10.8%, -9.1%, -8.0%, -10.9%, median 9.9%, before them);
    median |error| 11.5%, signed -11.5% (-13.2%, -11.2%, -11.3%, -11.6% with the host's 4 us launch
    on every kernel, before the GPU's measured gap and the derates' refit; -6.6%, -4.9%, -2.4%,
    -9.9%, median 5.8%, while the output layer was also priced in FP8: Megatron-Core runs it in
    BF16, the findings on Grok-1). The B200 rows run on dgx-b200's derate, 0.539 (0.544 before each
    kernel paid the GPU's measured gap) since SimuMax's BF16 B200 runs
    joined its fitting rows (at the 0.479 fitted on the three FP8 rows alone they read -14.6%,
    -13.2% and -18.7%; 0.524 -> 0.479 when the overlap slowdown became while-concurrent moved them
    by -5 points); held out, this source is scored at 0.538, fitted on the other 33 rows. Tolerances
    from that: median |error| <= 12%, every row within -15%..+3%. The 8B plan is compute-bound (exposed communication < 5 ms of a 4.7 s step), so
    its MXFP8/FP8-CS throughput ratio isolates the two recipes' compute: measured 0.964 (MXFP8
    slower), simulated 0.981 with MXFP8's GEMMs at the block-scaled kernel's published rate
    (costs/compute.py BLOCK_SCALED_GEMM_TIME, a B300 kernel measurement, not fitted here; 1.015
    with them at the per-tensor FP8 rate). The pin: the simulated ratio lies 0-3% above the
    measured one (2.0% now, 2.3% before the GPU's measured gap, 1.6% before the casts; 5.3% before the
    block-scaled rate). The GB200 8B pair (the same recipe on two trays of a GB200 NVL72 rack, added
    later): -10.7% (FP8-CS) and -7.1% (MXFP8), its MXFP8/FP8-CS ratio 0.945 measured, 4.0% above it
    simulated (pinned within 0-5%); median |error| of the six rows 10.8% held out.
    """
    res = list(scoring.run_cases(bridge_dense(_rows())))
    errs = [r.error for r in res]
    assert statistics.median(abs(e) for e in errs) <= 0.12, errs
    assert all(-0.15 <= e <= 0.03 for e in errs), errs
    for hw, printed, pin in (("dgx-b200", 29521 / 30624, 1.03), ("gb200-nvl72", 29789 / 31508, 1.05)):
        eight = {r.case.scenario["training"]["fp8_recipe"]: r for r in res
                 if r.case.n_gpus == 8 and r.case.scenario["hardware"] == hw}
        measured = eight["mxfp8"].case.measured / eight["current"].case.measured
        assert measured == pytest.approx(printed)
        assert 1.0 <= eight["mxfp8"].predicted / eight["current"].predicted / measured <= pin, hw


@pytest.mark.slow
def test_rows_built_for_the_findings():
    """The two runs built but not scored for run time (about 60 CPU seconds): 405B on 1,024 H100
    (TP 8, PP 8 x VP 8, CP 2, DP 8) +2.7% (-1.5% with TE's default SMs in place of the userbuffers
    configuration's), and the MXFP8 value of the 405B plan on 128 B200 -8.2% since dgx-b200's
    derate is fitted on BF16 B200 rows too (x 0.544; -17.2% at the x 0.480 of its FP8 rows, -20.6%
    with TE's default SMs) (before those SMs: -14.7% with dgx-b200's derate before its refit, -11.1%
    with MXFP8's GEMMs at the per-tensor FP8 rate; its MXFP8/FP8-CS ratio is 0.961 simulated against
    0.944 measured, 1.002 before); asserted within 5 points of those."""
    scored = {c.label for c in bridge_dense(_rows())}
    res = {r.case.label: r.error for r in scoring.run_cases([c for c in bridge_dense_all(_rows())
                                                              if c.label not in scored])}
    assert len(res) == 2
    h100 = next(e for k, e in res.items() if "1024 GPUs" in k)
    b200 = next(e for k, e in res.items() if "MXFP8" in k)
    assert h100 == pytest.approx(0.027, abs=0.05) and b200 == pytest.approx(-0.082, abs=0.05)


def test_llama3_70b_h100_plan_fits_the_gpus_it_ran_on():
    """The 70B run (64 H100 80 GB, TP4 PP8 VP5 DP2, FP8-CS, MBS 1, GBS 128) ran, so its plan must
    fit. The first pipeline stage holds the most: model states of its 2.40e9 parameters (bf16
    weights 2 B, bf16 gradient buffer 2 B, fp32 master and Adam moments 12 B over DP 2) and the
    activations of (pp − 1)·2 + (vp − 1)·pp + 1 = 47 chunk-micro-batches of 80 / 40 = 2 layers
    each. Per layer and micro-batch, with s·b·h = 8192·8192 elements, f = 28672, TP 4 and
    sequence parallelism, no dropout (p = 0) and TE saving the four GEMM inputs in FP8: bf16 norm
    inputs 4 sbh, FP8 QKV and FC1 inputs 2 sbh, Q 2 sbh, K and V 4 sbh·8/64, the attention output
    2 sbh and the projection's FP8 copy 1 sbh, FC1's output 4 sbf and FC2's FP8 input 1 sbf,
    all over 4: 486.5 MB. The expected device total is those plus 10% fragmentation of the
    activations, the workspaces, a 0.5 GiB CUDA context and NCCL's buffers: 69-72 GiB, with
    the activations 94 × 486.5 MB = 42.6 GiB."""
    from simulator.schedule.memory import estimate_memory, memory_per_gpu
    from simulator.units import GiB

    (case,) = [c for c in bridge_dense(_rows()) if c.label.startswith("LLAMA3_70B")]
    scn = build_scenario(case.scenario, source="test")
    mem = memory_per_gpu(scn)
    assert mem.fits and mem.stage == 0
    sbh, sbf, t = 8192 * 8192, 8192 * 28672, 4
    per_layer = (4 * sbh + 2 * sbh + 2 * sbh + 4 * sbh * 8 / 64 + 2 * sbh + sbh + 4 * sbf + sbf) / t
    assert estimate_memory(scn, 0).activations == pytest.approx(47 * 2 * per_layer, rel=1e-9)
    assert 69 * GiB < mem.total < 72 * GiB

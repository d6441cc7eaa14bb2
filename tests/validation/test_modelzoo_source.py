"""The Megatron-Core MoE team's Qwen3-235B-A22B runs (source ``modelzoo_qwen3``): the table's own
arithmetic, the plans its launch lines set, what is left out and why, and the held-out errors."""

from __future__ import annotations

import statistics

import pytest

from simulator.e2e_validation import loso, scoring, sources
from simulator.e2e_validation.modelzoo_sources import (
    megatron_lm_dsv3_gb200,
    modelzoo_case,
    modelzoo_mixtral,
    modelzoo_qwen3,
    skip_reason,
)
from simulator.e2e_validation.moe_sources import stages_with_embedding_and_loss
from simulator.e2e_validation.rows import parse_int, read_rows


def _rows() -> list[dict[str, str]]:
    return read_rows(sources.DATA_DIR / "megatron_moe_modelzoo_qwen3.csv")


def _mixtral_rows() -> list[dict[str, str]]:
    return read_rows(sources.DATA_DIR / "megatron_moe_modelzoo_mixtral.csv")


def _causal_flops_per_token(seq: int) -> int:
    """Qwen3-235B-A22B by hand, Megatron-LM's causal count: 94 layers of the q/k/v/o projections
    (q = 64 x 128, kv = 4 x 128 on a hidden of 4,096), the causal core over half the score matrix
    and 8 routed SwiGLU experts of 1,536; the LM head of 151,936; 3 x forward, 2 FLOPs a multiply-add."""
    h, q, kv = 4096, 64 * 128, 4 * 128
    layer = 2 * (h * (q + 2 * kv) + q * h) + 2 * seq * q + 8 * 3 * 2 * h * 1536
    return 3 * (94 * layer + 2 * h * 151936)


def test_printed_tflops_are_the_causal_count_of_the_printed_step_times():
    """Step time x printed TF/GPU x 256 / (2,048 x 4,096 tokens) is 148.0 GFLOP per token on all
    five H100 plans (the printed TF rounded to 3 digits: within 0.6%), which fixes the convention the
    long-context and GB200 tables print."""
    h100 = [r for r in _rows() if r["metric"] == "step_time_s" and r["model_name"] == "Qwen3-235B-A22B"]
    assert len(h100) == 5
    per_token = _causal_flops_per_token(4096)
    assert per_token == pytest.approx(148.03e9, rel=1e-4)
    assert scoring.megatron_moe_model_flops({"preset": "qwen3-235b-a22b", "seq_len": 4096}, 1) == \
        pytest.approx(4096 * per_token, rel=1e-12)
    for r in h100:
        tf = float(r["notes"].split("per GPU TF=")[1].split(";")[0])
        tokens = parse_int(r["global_batch"]) * parse_int(r["seq_len"])
        assert tf * 1e12 * float(r["value"]) * 256 / tokens == pytest.approx(per_token, rel=0.006)
    # the attention core grows with the sequence: 16K tokens, 204.9 GFLOP a token
    assert scoring.megatron_moe_model_flops({"preset": "qwen3-235b-a22b", "seq_len": 16384}, 1) == \
        pytest.approx(16384 * _causal_flops_per_token(16384), rel=1e-12)


def test_cases_build_the_launch_lines_plans():
    cs = modelzoo_qwen3(_rows())
    assert len(cs) == 9 and all(c.source == "modelzoo_qwen3" and not sources.is_fit_case(c) for c in cs)
    plans = [(p["tp"], p["pp"], p.get("vp", 1), p["cp"], p["ep"]) for p in (c.scenario["parallel"] for c in cs)]
    assert plans == [(2, 8, 4, 1, 32), (2, 8, 4, 1, 32), (2, 1, 1, 1, 8), (4, 8, 4, 1, 8),
                     (4, 8, 4, 1, 8), (4, 8, 4, 2, 8), (4, 8, 4, 4, 8), (1, 8, 1, 1, 8), (1, 4, 1, 1, 32)]
    for c in cs:
        p, t = c.scenario["parallel"], c.scenario["training"]
        assert p["grad_reduce_dtype"] == "fp32" and "tp_overlap" not in p
        assert (t["dtype"], t.get("fp8_recipe")) == (("fp8", "mxfp8") if c.scenario["hardware"] == "gb300-nvl72"
                                                     else ("bf16", None))
        assert t["moe_router_kernels"] == ["random_logits", "aux_loss"] and c.scenario["model"]["vocab"] == 151936
    assert [c.scenario["parallel"]["moe_dispatcher"] for c in cs] == ["deepep"] * 9
    assert [c.scenario["parallel"].get("overlap_moe_expert_parallel_comm", False) for c in cs] == \
        [False, True] + [False] * 7
    fsdp = cs[2].scenario
    assert (fsdp["parallel"]["zero"], fsdp["parallel"]["zero3_impl"], fsdp["training"]["recompute"]) == \
        (3, "fsdp2", "full")
    assert fsdp["parallel"]["gradient_accumulation_fusion"] is False and fsdp["training"]["micro_batch"] == 4
    # one layer per virtual stage at PP 32 x VP 3 (built, not scored for run time): the embedding and
    # the loss alone on the ends
    pp32 = modelzoo_case(next(r for r in _rows() if r["pp"] == "32"), 0).scenario
    assert pp32["parallel"]["pp_layers"] == [0] + [1] * 94 + [0] and pp32["parallel"]["moe_dispatcher"] == "alltoall"
    assert stages_with_embedding_and_loss(94, 96) == (0,) + (1,) * 94 + (0,)
    assert [c.scenario["training"].get("recompute_modules") for c in cs[4:7]] == [["layernorm", "moe"]] * 3
    assert [c.scenario["model"]["seq_len"] for c in cs[4:7]] == [16384, 32768, 65536]
    assert [c.metric for c in cs] == ["step_time_s"] * 4 + ["megatron_moe_model_tflops"] * 5
    gb300 = cs[8].scenario  # MXFP8, micro-batch 2, 64 trays in Slurm segments of 8
    assert (gb300["hardware"], gb300["nodes"], gb300["nodes_per_nvlink_domain"], gb300["training"]["micro_batch"]) == \
        ("gb300-nvl72", 64, 8, 2)
    gb200 = cs[7].scenario
    assert gb200["hardware"] == "gb200-nvl72" and gb200["nodes"] == 64 and gb200["nodes_per_nvlink_domain"] == 2
    assert gb200["parallel"]["moe_deepep_backend"] == "hybridep" and gb200["parallel"]["moe_deepep_sms"] == 32
    assert gb200["training"]["cuda_graph_scope"] == ["attn", "moe_router", "moe_preprocess"]
    assert loso.REGIMES["NVIDIA-tuned stacks on H100 (Megatron-Core, NeMo, Megatron-Bridge, dgxc)"](cs[0])


def test_rows_left_out_say_why():
    reasons = [skip_reason(r) for r in _rows()]
    assert sum(r is None for r in reasons) == 9
    left = [r for r in reasons if r is not None]
    assert sum(r.startswith("learned routing") for r in left) == 4  # the dropless values
    assert sum(r.startswith("no profile") for r in left) == 0  # GB300 runs on gb300-nvl72
    assert sum(r.startswith("no preset") for r in left) == 1  # Qwen3-Next
    assert sum("offloading" in r for r in left) == 1  # the GB200 MXFP8 run
    # PP 32 x VP 3 (31 CPU s), CP 8 at 131,072 tokens (54) and GB300's PP 4 x VP 12 at CP 4 and 131,072 (49)
    assert sum(r.startswith("run time") for r in left) == 3


@pytest.mark.slow
def test_held_out_errors():
    """Doc, when this was written: step time -5.2% (EP 32), +8.3% (EP 32 with the combined-1F1B
    overlap), -13.7% (Megatron-FSDP), +59.7% (TP 4: the measured step is 1.6 times the one
    predicted at 4,096 tokens, where the same TP 4 x PP 8 x VP 4 x EP 8 plan at 16K tokens is
    +0.9%); long context at 16K, 32K and 64K (CP 1, 2, 4) +0.9%, -2.8%, -6.0%; GB200 BF16 -21.0%;
    GB300 MXFP8 -13.7%. Median |error| 8.3%, signed -5.2%: within the issue's 12% for a source.
    (Not scored for run time: PP 32 x VP 3 +17.5%, CP 8 at 128K -7.1%.)"""
    results = list(scoring.run_cases(modelzoo_qwen3(_rows())))
    errors = [r.error for r in results]
    assert errors[:3] == pytest.approx([-0.052, 0.083, -0.137], abs=0.03)
    assert 0.4 <= errors[3] <= 0.8
    assert errors[4:7] == pytest.approx([0.009, -0.028, -0.060], abs=0.03)
    assert -0.3 <= errors[7] <= -0.12
    assert errors[8] == pytest.approx(-0.137, abs=0.03)
    assert scoring.median_abs_error(results) <= 0.12
    assert abs(statistics.median(errors)) <= 0.06


def test_mixtral_flop_count_and_plan():
    """Mixtral 8x22B by hand in the same count: 56 layers of projections with 8 of 48 key-value heads
    of 128 on a hidden of 6,144, the causal core and 2 routed SwiGLU experts of 16,384, the LM head
    of 32,768: 242.3 GFLOP a token. The script's plan: TP 2 x PP 8 x VP 7 (one layer a virtual stage,
    no embedding or loss accounting), EP 8 alltoall, TE's TP overlap in BF16 only; blockwise FP8 with
    FP8 parameter gathers and bf16 Adam moments. The dropless and token-drop values are not scored."""
    h, q, kv, seq = 6144, 48 * 128, 8 * 128, 4096
    layer = 2 * (h * (q + 2 * kv) + q * h) + 2 * seq * q + 2 * 3 * 2 * h * 16384
    per_token = 3 * (56 * layer + 2 * h * 32768)
    assert per_token == pytest.approx(242.3e9, rel=1e-3)
    assert scoring.megatron_moe_model_flops({"preset": "mixtral-8x22b", "seq_len": seq}, 1) == \
        pytest.approx(seq * per_token, rel=1e-12)
    rows = _mixtral_rows()
    assert [skip_reason(r) is None for r in rows] == [False, True, True, False]
    bf16, fp8 = modelzoo_mixtral(rows)
    for c in (bf16, fp8):
        p = c.scenario["parallel"]
        assert (p["tp"], p["pp"], p["vp"], p["ep"], p["moe_dispatcher"], c.n_gpus) == (2, 8, 7, 8, "alltoall", 128)
        assert "pp_layers" not in p and p["grad_reduce_dtype"] == "fp32" and c.source == "modelzoo_mixtral"
    assert bf16.scenario["parallel"]["tp_overlap"] == "te_default" and bf16.scenario["training"]["dtype"] == "bf16"
    t = fp8.scenario["training"]
    assert "tp_overlap" not in fp8.scenario["parallel"]
    assert (t["dtype"], t["fp8_recipe"], t["fp8_param_gather"], t["optimizer_state_dtype"]) == ("fp8", "blockwise", True, "bf16")


@pytest.mark.slow
def test_mixtral_held_out_errors():
    """Doc, when this was written: BF16 -3.8%, blockwise FP8 +0.1% (+14.3% while its block-scaled
    GEMMs were priced as per-tensor FP8 ones; costs/compute.py BLOCK_SCALED_GEMM_TIME, a Hopper
    kernel measurement of TransformerEngine's GEMM profiling guide, not fitted here)."""
    errors = [r.error for r in scoring.run_cases(modelzoo_mixtral(_mixtral_rows()))]
    assert errors == pytest.approx([-0.038, 0.001], abs=0.03)


def test_mla_flop_count_is_the_one_megatron_bridge_prints():
    """Megatron-LM's count for multi-latent attention, checked on the page that prints both numbers:
    Megatron-Bridge 26.04.01's DeepSeek-V3 rows (one MTP layer) give model TFLOP/s/GPU over
    tokens/s/GPU of 259.9 (GB200: 1,106 / 4,256) and 259.6 (B200: 864 / 3,328) GFLOP a token; the
    count gives 260.0. Without the MTP layer, as the GB200 write-up ran it: 249.8."""
    per_token = scoring.megatron_moe_model_flops({"preset": "deepseek-v3", "seq_len": 4096, "mtp_layers": 1}, 1) / 4096
    bridge = [r for r in read_rows(sources.DATA_DIR / "megatron_bridge_perf_summary_moe.csv")
              if r["model_name"] == "DeepSeekV3"]
    assert len(bridge) == 2
    for r in bridge:
        tflops = float(r["notes"].split("model TFLOP/s/GPU=")[1].split(";")[0])
        assert per_token == pytest.approx(tflops * 1e12 / float(r["value"]), rel=0.002)
    assert scoring.megatron_moe_model_flops({"preset": "deepseek-v3", "seq_len": 4096}, 1) / 4096 == \
        pytest.approx(249.8e9, rel=1e-3)


def test_dsv3_gb200_plan():
    """The reproduce guide's launch: layout "Et|(tt|)*30L" (32 virtual stages: the embedding and one
    layer, 30 of two, the loss alone), EP 32 over HybridEP on 32 SMs inside racks of 8 trays, MXFP8
    with FP8 parameter gathers and bf16 moments, partial CUDA graphs."""
    (c,) = megatron_lm_dsv3_gb200(read_rows(sources.DATA_DIR / "megatron_lm_dsv3_gb200.csv"))
    p, t = c.scenario["parallel"], c.scenario["training"]
    assert p["pp_layers"] == [1] + [2] * 30 + [0] and (p["pp"], p["vp"], p["ep"]) == (8, 4, 32)
    assert c.scenario["nodes_per_nvlink_domain"] == 8 and p["moe_deepep_backend"] == "hybridep"
    assert (t["fp8_recipe"], t["fp8_param_gather"], t["optimizer_state_dtype"]) == ("mxfp8", True, "bf16")
    assert t["recompute_modules"] == ["moe_act"] and c.metric == "megatron_moe_model_tflops"


@pytest.mark.slow
def test_dsv3_gb200_held_out_error():
    """Doc, when this was written: +4.6% (1,014 TFLOP/s/GPU predicted against 970)."""
    (r,) = scoring.run_cases(megatron_lm_dsv3_gb200(read_rows(sources.DATA_DIR / "megatron_lm_dsv3_gb200.csv")))
    assert r.error == pytest.approx(0.046, abs=0.03)

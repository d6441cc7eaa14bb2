"""Megatron-Bridge's Nemotron 3 Nano 4B verification card (source ``bridge_card_hybrid``): the card's
arithmetic against Megatron-LM's hybrid FLOP count, the recipe's hybrid model and plan, held out, and
its error as the page's findings give it."""

from __future__ import annotations

import pytest

from simulator.config.scenario import build_scenario
from simulator.e2e_validation import loso, scoring, sources
from simulator.e2e_validation.bridge_card_sources import bridge_card_hybrid
from simulator.e2e_validation.rows import parse_int, read_rows

PATTERN = "M-M-M-MM-M-M*-M-M*-M-M-M*-M-M-MM*-MMM-M-M-"


def _rows() -> list[dict[str, str]]:
    return read_rows(sources.DATA_DIR / "megatron_bridge_nemotron3_nano_4b_card_h100.csv")


def _hybrid_flops_per_token(h: int, seq: int, vocab: int) -> float:
    """Megatron-LM's ``hybrid_flops`` (megatron/training/training.py) per token: 3 x forward of the 4
    attention blocks (40 heads, 8 groups, kv_channels 128: QKV and projection, then QK^T and PV with
    the causal half), 17 MLP blocks (expansion 12,544 / h, not gated) and 21 Mamba2 mixers as that
    function counts them (d_in = 2h, state 128, 8 groups, 96 heads: in_proj, 7 d_in N for the scan,
    out_proj), plus the logits."""
    p = 128 * 40 / h
    attn = 4 * h * p * (h + h * 8 / 40) + 2 * seq * h * p
    mlp = 4 * (12544 / h) * h * h
    d_in = 2 * h
    mamba = 2 * h * (2 * d_in + 2 * 8 * 128 + 96) + 7 * d_in * 128 + 2 * d_in * h
    return 3 * (4 * attn + 17 * mlp + 21 * mamba + 2 * h * vocab)


def test_card_arithmetic():
    """tokens/s/GPU = GBS x seq / step / GPUs within 0.01%, and the model TFLOP/s x step x GPUs / tokens
    is Megatron-LM's hybrid count (20.56 GFLOP per token) within 0.01%; 128 micro-batches per replica."""
    rows = {r["metric"]: r for r in _rows()}
    r = rows["step_time_s"]
    n, gb, mb, seq = (parse_int(r[k]) for k in ("num_gpus", "global_batch", "micro_batch", "seq_len"))
    assert parse_int(r["dp"]) == n == 8 and gb // (mb * n) == 128
    step = float(r["value"])
    assert gb * seq / step / n == pytest.approx(float(rows["tokens_per_s_per_gpu"]["value"]), rel=1e-4)
    per_token = float(rows["model_tflops_per_gpu"]["value"]) * 1e12 * step * n / (gb * seq)
    assert per_token == pytest.approx(_hybrid_flops_per_token(3136, seq, 131072), rel=1e-4)


def test_the_case_builds_the_recipes_hybrid_model_and_plan_held_out():
    """The recipe's 42 blocks (21 M, 4 *, 17 -), Mamba2 of 96 heads x 80 with state 128 and 8 groups in
    chunks of 256, kv_channels 128, no position embedding, untied head, the squared-ReLU MLP as the
    two-matrix kind; DP 8 with the distributed optimizer and both overlaps, bf16 reduction, the nan/inf
    check; Megatron's native fused cross-entropy; held out, and in the NVIDIA-tuned H100 regime."""
    (c,) = bridge_card_hybrid(_rows())
    p, t, m = c.scenario["parallel"], c.scenario["training"], c.scenario["model"]
    assert (m["layer_pattern"], m["layers"]) == (PATTERN, 42)
    assert (PATTERN.count("M"), PATTERN.count("*"), PATTERN.count("-")) == (21, 4, 17)
    assert (m["mamba_heads"], m["mamba_head_dim"], m["mamba_state"], m["mamba_groups"], m["mamba_chunk"]) == (
        96, 80, 128, 8, 256)
    assert (m["hidden"], m["head_dim"], m["kv_heads"], m["ffn_hidden"], m["mlp"]) == (3136, 128, 8, 12544, "squared_relu")
    assert (m["position_embedding"], m["tied_embeddings"], m["vocab"]) == ("none", False, 131072)
    assert (p["tp"], p["pp"], p["cp"], p["zero"], p["overlap_param_gather"], p["overlap_grad_reduce"]) == \
        (1, 1, 1, 1, True, True)
    assert p["grad_reduce_dtype"] == "bf16" and p["ddp_grad_check"] == "nan_inf"
    assert (t["micro_batch"], t["global_batch"], t["recompute"], t["dtype"]) == (1, 1024, "none", "bf16")
    assert t["cross_entropy"] == "vocab_parallel" and t["dropout"] is False
    scn = build_scenario(c.scenario)
    assert scn.n_micro == 128
    assert c.scenario["hardware"] == "dgx-h100" and not sources.is_fit_case(c)
    assert loso.REGIMES["NVIDIA-tuned stacks on H100 (Megatron-Core, NeMo, Megatron-Bridge, dgxc)"](c)


@pytest.mark.slow
def test_error():
    """Findings: -4.9% (28.15 s predicted against 26.78 s), pessimistic as NVIDIA's other BF16 H100
    rows are, where the FP8 Nemotron-H 56B rows at TP 8 read +12..+18%; -2.2% (27.39 s) since the H100
    derate was refitted (0.693 -> 0.720) once MPT's FlashAttention-1 ran at FA1's own H100 rate."""
    (r,) = scoring.run_cases(bridge_card_hybrid(_rows()))
    assert r.error == pytest.approx(-0.022, abs=0.006)

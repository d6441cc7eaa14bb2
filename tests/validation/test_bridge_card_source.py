"""Megatron-Bridge's Qwen3-8B verification card (source ``bridge_card``): the row's arithmetic, the
plan the recipe sets, held out, and its error as the page's findings give it."""

from __future__ import annotations

import pytest

from simulator.e2e_validation import loso, scoring, sources
from simulator.e2e_validation.bridge_card_sources import bridge_card
from simulator.e2e_validation.rows import parse_int, read_rows


def _rows() -> list[dict[str, str]]:
    return read_rows(sources.DATA_DIR / "megatron_bridge_qwen3_8b_card_h100.csv")


def _megatron_flops_per_token(layers: int, h: int, kv: int, head_dim: int, ffn: int, vocab: int, seq: int) -> int:
    """Megatron-Core's model FLOPs per token with a causal score matrix: 3 x forward (QKV with GQA,
    projection, SwiGLU, QK^T and PV over half the sequence, the LM head)."""
    per_layer = 2 * h * (h + 2 * kv * head_dim) + 2 * h * h + 6 * h * ffn + 2 * seq * h
    return 3 * (layers * per_layer + 2 * h * vocab)


def test_card_arithmetic():
    """The card's model TFLOP/s x step x GPUs / tokens is Megatron's causal count (49.03 GFLOP per
    token) within 0.01%; 64 micro-batches per replica."""
    rows = {r["metric"]: r for r in _rows()}
    r = rows["step_time_s"]
    n, gb, mb, seq = (parse_int(r[k]) for k in ("num_gpus", "global_batch", "micro_batch", "seq_len"))
    assert parse_int(r["dp"]) == n == 16 and gb // (mb * n) == 64
    step, tflops = float(r["value"]), float(rows["model_tflops_per_gpu"]["value"])
    per_token = _megatron_flops_per_token(36, 4096, 8, 128, 12288, 151936, seq)
    assert tflops * 1e12 * step * n / (gb * seq) == pytest.approx(per_token, rel=1e-4)


def test_the_case_builds_the_recipes_plan_held_out():
    (c,) = bridge_card(_rows())
    p, t, m = c.scenario["parallel"], c.scenario["training"], c.scenario["model"]
    assert (p["tp"], p["pp"], p["cp"], p["zero"], p["overlap_param_gather"], p["overlap_grad_reduce"]) == \
        (1, 1, 1, 1, True, True)
    assert p["grad_reduce_dtype"] == "bf16" and p["ddp_grad_check"] == "nan_inf"
    assert (t["micro_batch"], t["global_batch"], t["recompute"], t["dtype"]) == (1, 1024, "none", "bf16")
    assert t["cross_entropy"] == "fused" and t["dropout"] is False and t["fused_kernels"]
    assert m["qk_norm"] and m["head_dim"] == 128 and m["kv_heads"] == 8 and not m["tied_embeddings"]
    assert c.scenario["hardware"] == "dgx-h100" and not sources.is_fit_case(c)
    assert loso.REGIMES["NVIDIA-tuned stacks on H100 (Megatron-Core, NeMo, Megatron-Bridge, dgxc)"](c)


@pytest.mark.slow
def test_error():
    """Findings: -6.5% (26.05 s predicted against 24.36 s), the sign of NVIDIA's other BF16 H100 rows;
    -7.6% (26.37 s) since the H100 derate was refitted (0.706 -> 0.693) when each kernel came to pay
    the GPU's measured gap, not the host's launch: its GEMMs are large, its kernels few; -4.6% (25.54 s)
    since the refit (0.693 -> 0.720) once MPT's FlashAttention-1 ran at FA1's own H100 rate."""
    (r,) = scoring.run_cases(bridge_card(_rows()))
    assert r.error == pytest.approx(-0.046, abs=0.006)

"""MoE and MLA shapes: parameter counts against the model cards, FLOPs against Megatron-Core."""

import pytest
from pydantic import ValidationError

from simulator.config.workload import Model
from simulator.schedule.flops import (active_param_count, attention_params, embedding_params, megatron_flops_per_step,
                                      model_flops_per_token, param_count, step_flops)


def preset(name, **kw):
    return Model.model_validate({"preset": name, **kw})


# (preset, total, active, whether the card's active count includes the input embedding, rel. tolerance)
CARDS = [
    ("mixtral-8x7b", 46.7e9, 12.9e9, True, 0.01),  # arXiv:2401.04088 §2: 47B total, 13B active; HF card 46.7B
    ("mixtral-8x22b", 141e9, 39e9, True, 0.01),  # mistral.ai/news/mixtral-8x22b: 141B, 39B active
    ("deepseek-v2-lite", 15.7e9, 2.4e9, False, 0.025),  # arXiv:2405.04434 App. B: 15.7B, 2.4B activated
    ("deepseek-v3", 671e9, 37e9, False, 0.015),  # arXiv:2412.19437 abstract: 671B, 37B activated (MTP excluded)
    ("kimi-k2", 1.04e12, 32e9, False, 0.015),  # moonshotai/Kimi-K2 card: 1T total (1.04T), 32B activated
    ("qwen3-30b-a3b", 30.5e9, 3.3e9, True, 0.02),  # Qwen/Qwen3-30B-A3B card: 30.5B, 3.3B activated
    ("qwen3-235b-a22b", 235e9, 22e9, True, 0.01),  # Qwen/Qwen3-235B-A22B card: 235B, 22B activated
    ("gpt-oss-120b", 116.83e9, 5.13e9, False, 0.003),  # arXiv:2508.10925 Table 1 (ours omits biases, sinks)
    ("gpt-oss-20b", 20.91e9, 3.61e9, False, 0.003),
]


@pytest.mark.parametrize("name,total,active,with_emb,tol", CARDS)
def test_model_card_parameter_counts(name, total, active, with_emb, tol):
    m = preset(name)
    assert param_count(m) == pytest.approx(total, rel=tol)
    assert active_param_count(m, input_embedding=with_emb) == pytest.approx(active, rel=max(tol, 0.02))


def test_deepseek_v3_attention_is_mla_closed_form():
    """MLA weights per layer (arXiv:2405.04434 eqs. 9-18 with V3's ranks): W_DQ h·1536, q norm,
    W_UQ/W_QR 1536·128·192, W_DKV/W_KR h·(512+64), kv norm, W_UK/W_UV 512·128·256, W_O 128·128·h."""
    m = preset("deepseek-v3")
    h = 7168
    expected = h * 1536 + 1536 + 1536 * 128 * 192 + h * 576 + 512 + 512 * 128 * 256 + 128 * 128 * h
    assert attention_params(m) == expected
    assert attention_params(m) == 187_107_328  # 0.187B per layer, as the DeepSeek-V3 checkpoint's attention tensors


def test_dense_model_unchanged_by_moe_keys():
    """A model with no experts has as many active as total parameters."""
    m = preset("llama3-8b")
    assert active_param_count(m) == param_count(m)


@pytest.mark.parametrize("name", ["mixtral-8x7b", "deepseek-v3", "qwen3-30b-a3b", "gpt-oss-120b", "deepseek-v2-lite"])
def test_model_flops_match_megatron_num_floating_point_operations(name):
    """6·N_active + attention (full score matrix) equals Megatron-Core's count (which halves the
    score matrix for the causal mask) once its causal half is added back and the router GEMM and
    norms, which it omits, are removed."""
    m = preset(name)
    s = m.seq_len
    ours = model_flops_per_token(m)
    router = 6 * m.hidden * m.experts * m.moe_layers
    half_scores = 6 * m.layers * s * m.heads * (m.qk_head_dim + m.v_head_dim) / 2
    megatron = megatron_flops_per_step(m, batch=1) / s
    assert ours - router - half_scores == pytest.approx(megatron, rel=2e-4)


def test_megatron_flops_deepseek_v3_by_hand():
    """DeepSeek-V3 at seq 4096, one sequence, no MTP: the terms of ``transformer_flops`` summed by hand."""
    h, a, s, V = 7168, 128, 4096, 129280
    q = 1536 * (h + a * 192 + 1)
    kv = 512 * (h + a * 256 + 1) + h * 64
    attn = 6 * (q + kv + a * 128 * h + s * a * 192 / 2 + s * a * 128 / 2)
    mlp = 6 * h * (18432 * 3 * 3 + (2048 * 8 * 3 + 2048 * 3) * 58)
    expected = s * (mlp + 61 * attn + 6 * h * V)
    assert megatron_flops_per_step(preset("deepseek-v3"), 1) == pytest.approx(expected, rel=1e-12)


def test_moe_step_flops_are_six_active_n():
    """Hardware FLOPs of an MoE step follow 6·N_active·tokens (+ causal attention), not 6·N_total."""
    m = preset("qwen3-30b-a3b")
    tokens = 2 * m.seq_len
    six_n = 6 * (active_param_count(m) - embedding_params(m)) * tokens
    # forward 4·s·a·d per token over half the scores, backward 2.5 times that (FlashAttention-2)
    causal_scores = 4 * (1 + 2.5) * m.layers * m.heads * m.head_dim * m.seq_len * tokens * 0.5
    assert step_flops(m, tokens, m.seq_len) == pytest.approx(six_n + causal_scores, rel=0.01)
    assert step_flops(m, tokens, m.seq_len) < 0.2 * 6 * param_count(m) * tokens


@pytest.mark.parametrize("bad,needle", [
    ({"top_k": 9}, "top_k=9 exceeds experts=8"),
    ({"first_dense_layers": 32}, "leaves no MoE layer"),
])
def test_bad_moe_keys(bad, needle):
    with pytest.raises(ValidationError, match=needle):
        preset("mixtral-8x7b", **bad)


def test_moe_keys_need_experts():
    with pytest.raises(ValidationError, match="needs experts > 0"):
        preset("llama3-8b", top_k=2)
    with pytest.raises(ValidationError, match="kv_lora_rank"):
        preset("llama3-8b", q_lora_rank=64)


def test_head_dim_may_differ_from_hidden_over_heads():
    m = preset("qwen3-30b-a3b")
    assert m.head_dim == 128 and m.hidden // m.heads == 64

"""Model math against published parameter counts and the 6·N·tokens rule."""

import pytest

from simulator.config.workload import PRESETS, Model
from simulator.schedule.flops import (layer_flops, layer_params, logits_flops, model_flops_per_token, param_count,
                                      step_flops)


def preset(name, **kw):
    return Model.model_validate({"preset": name, **kw})


@pytest.mark.parametrize("name,published", [
    ("llama3-8b", 8.03e9), ("llama3-70b", 70.6e9), ("llama3-405b", 405.8e9), ("gpt3-175b", 175e9),
    ("llama2-7b", 6.74e9), ("llama2-70b", 69.0e9),
])
def test_published_parameter_counts(name, published):
    assert param_count(preset(name)) == pytest.approx(published, rel=0.01)


@pytest.mark.parametrize("name,billions", [("gpt-1.7b", 1.7), ("gpt-18b", 18.4), ("gpt-145b", 145.6),
                                           ("gpt-530b", 529.6), ("gpt-1t", 1008.0)])
def test_megatron_table1_counts(name, billions):
    """arXiv:2104.04473 eq. 2: P = 12·l·h²·(1 + 13/(12h) + (V + s)/(12·l·h))."""
    m = preset(name)
    l, h, V, s = m.layers, m.hidden, m.vocab, m.seq_len
    closed = 12 * l * h * h * (1 + 13 / (12 * h) + (V + s) / (12 * l * h))
    assert param_count(m) == pytest.approx(closed, rel=0.003)  # we omit biases (13/12h ≈ 0.1%)
    assert param_count(m) / 1e9 == pytest.approx(billions, rel=0.03)  # the table rounds


@pytest.mark.parametrize("name", ["gpt3-175b", "llama3-8b", "llama3-70b", "llama2-7b"])
def test_six_n_per_token(name):
    """Hardware FLOPs of a step (no recompute) are 6·N·tokens plus attention, within a few %."""
    m = preset(name)
    tokens = 4 * m.seq_len
    six_n = 6 * param_count(m) * tokens
    attn = 12 * m.layers * m.hidden * m.seq_len * tokens * 0.5  # causal half of the score matrix
    assert step_flops(m, tokens, m.seq_len) == pytest.approx(six_n + attn, rel=0.05)


def test_model_flops_equal_megatron_eq3_for_gpt():
    """Megatron eq. 3 without the recompute pass, per token: 72·l·h²·(1 + s/6h + V/12lh)."""
    m = preset("gpt3-175b")
    l, h, V, s = m.layers, m.hidden, m.vocab, m.seq_len
    eq3 = 72 * l * h * h * (1 + s / (6 * h) + V / (12 * l * h))
    assert model_flops_per_token(m) == pytest.approx(eq3, rel=0.002)


def test_gqa_swiglu_op_counts():
    m = Model(layers=1, hidden=64, heads=8, kv_heads=2, ffn_hidden=96, vocab=10, mlp="swiglu", seq_len=16)
    lf = layer_flops(m, tokens=16, seq=16)
    assert lf.qkv == 2 * 16 * 64 * (64 + 2 * 16)
    assert lf.mlp == 3 * 2 * 16 * 64 * 96
    assert lf.out_proj == 2 * 16 * 64 * 64
    assert lf.attention == 4 * 16 * 16 * 64
    assert lf.backward == 2 * (lf.qkv + lf.mlp + lf.out_proj) + 2.5 * lf.attention
    assert logits_flops(m, 16) == 2 * 16 * 64 * 10
    assert layer_params(m) == 64 * 96 + 64 * 64 + 3 * 64 * 96 + 2 * 64


def test_recompute_adds_forward():
    m = preset("llama3-8b")
    base = step_flops(m, 8192, 8192, "none")
    lf = layer_flops(m, 8192, 8192, (8192 + 1) / (2 * 8192))
    assert step_flops(m, 8192, 8192, "full") - base == pytest.approx(m.layers * lf.forward)
    assert step_flops(m, 8192, 8192, "selective") - base == pytest.approx(m.layers * lf.attention)


def test_every_preset_is_valid():
    for name in PRESETS:
        assert param_count(preset(name)) > 1e9

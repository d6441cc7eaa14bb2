"""One Megatron-Core MoE layer on 8 H100 against NVIDIA's CI baselines of it
(data/kernels/megatron_moe_layer_h100.csv; simulator/calibration/moe_layer.py): in BF16 the model's
layer is the measured one within about a tenth, forward and backward, under all three dispatchers;
with block-scaled FP8 (its GEMMs at the block-scaled rate of another benchmark) about a tenth short,
the model's FP8 gain over BF16 still larger than NVIDIA measured."""

from __future__ import annotations

import statistics

import pytest

from simulator.calibration import moe_layer as ml


@pytest.fixture(scope="module")
def rows() -> list[ml.Measurement]:
    return ml.load()


def _pair(rows: list[ml.Measurement], m: ml.Measurement) -> ml.Measurement:
    """The same proxy and dispatcher in the other precision."""
    return next(o for o in rows if (o.proxy, o.dispatcher) == (m.proxy, m.dispatcher) and o.precision != m.precision)


def test_table_is_every_proxy_dispatcher_and_precision_once(rows):
    assert len(rows) == 12
    assert {(m.proxy, m.dispatcher, m.precision) for m in rows} == {
        (p, d, q) for p in ml.PROXIES for d in ml.DISPATCHERS for q in ("bf16", "fp8")}
    assert all(m.case == f"{m.proxy}_{m.dispatcher}_tp1ep8_{m.precision}" for m in rows)
    # the backward of every case is longer than its forward (twice the expert GEMMs) but not twice
    # as long, and every forward takes 3-8 ms: more than its 1.92 TFLOP of expert GEMMs at the H100's
    # BF16 peak (1.9 ms), less than at a quarter of it
    assert all(m.forward_ms < m.backward_ms < 2.0 * m.forward_ms for m in rows)
    assert all(ml.expert_flops(m.proxy) / 989e12 * 1e3 < 3.0 < m.forward_ms < 8.0 for m in rows)


def test_expert_flops_closed_form():
    """4,096 tokens x top-k rows through an up and a down projection of hidden x ffn, 2 FLOPs a
    multiply-add: Mixtral's proxy 2·4096·2·2·4096·14336 and DeepSeek's 2·4096·8·2·7168·2048, the same
    1.92 TFLOP a rank (DeepSeek's expert, 7,168 x 2,048, is a quarter of Mixtral's, 4,096 x 14,336,
    and each token goes to four times as many)."""
    assert ml.expert_flops("mixtral") == 2 * 4096 * 2 * 2 * 4096 * 14336 == pytest.approx(1.924e12, rel=1e-3)
    assert ml.expert_flops("deepseek") == 2 * 4096 * 8 * 2 * 7168 * 2048 == pytest.approx(1.924e12, rel=1e-3)


def test_measured_fp8_gains_little_on_the_layer(rows):
    """NVIDIA's block-scaled FP8 layer takes 0.85-1.07 of its BF16 layer's time (the DeepSeek proxy's
    forward under alltoall and DeepEP is slower in FP8), far from the halved GEMM time FP8 promises."""
    ratios = [m.measured_ms(p) / _pair(rows, m).measured_ms(p) for m in rows if m.precision == "fp8" for p in ml.PASSES]
    assert 0.84 < min(ratios) and max(ratios) < 1.08
    assert statistics.median(ratios) == pytest.approx(0.87, abs=0.03)


def test_bf16_layer_is_the_models(rows):
    """Modelled over measured time of the six BF16 cases, forward and backward: 0.89-1.05."""
    ratios = [ml.ratio(m, p) for m in rows if m.precision == "bf16" for p in ml.PASSES]
    assert len(ratios) == 12
    assert 0.85 < min(ratios) and max(ratios) < 1.10
    assert statistics.median(ratios) == pytest.approx(0.98, abs=0.04)


def test_block_scaled_fp8_layer_held_out(rows):
    """FP8 with 1x128 / 128x128 scales, its GEMMs at the block-scaled rate measured on another
    benchmark (``costs/compute.py`` ``BLOCK_SCALED_GEMM_TIME``, TransformerEngine's GEMM profiling
    guide on an H200 NVL; nothing here fitted): modelled over measured 0.81-1.00, median about 0.89
    (0.71-0.91, median 0.78, with the GEMMs at the per-tensor rate). What is left is still a larger
    gain over BF16 than NVIDIA measured, in every case and pass."""
    fp8 = [m for m in rows if m.precision == "fp8"]
    ratios = [ml.ratio(m, p) for m in fp8 for p in ml.PASSES]
    assert 0.78 < min(ratios) and max(ratios) < 1.03
    assert statistics.median(ratios) == pytest.approx(0.89, abs=0.03)
    for m in fp8:
        bf16 = _pair(rows, m)
        for p in ml.PASSES:
            modelled = ml.modelled_ms(m.proxy, m.dispatcher, "fp8")[p] / ml.modelled_ms(bf16.proxy, bf16.dispatcher, "bf16")[p]
            assert modelled < m.measured_ms(p) / bf16.measured_ms(p), (m.case, p)

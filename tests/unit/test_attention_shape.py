"""Fused-attention efficiency by kernel shape (costs/attention_shape.py): closed forms of the
tiling, and agreement with FlashAttention-3's published forward curves on H100."""

from __future__ import annotations

import pytest

from simulator.config.hardware import load_profile
from simulator.costs.attention_shape import (
    REF_SEQ, TILE, TILING, head_dim_efficiency, shape_factor, tile_efficiency)
from simulator.costs.compute import compute_time
from simulator.schedule.attention import attention_flops, causal_fraction_diagonal
from simulator.schedule.ir import ComputeOp, Tag

SEQS = (512, 1024, 2048, 4096, 8192, 16384)
# arXiv:2407.08608 Fig. 5, FA3 forward on H100 SXM5, head dim 128, TFLOP/s (HARDWARE.md §4)
FA3_NON_CAUSAL = (467, 565, 625, 638, 646, 648)
FA3_CAUSAL = (292, 423, 521, 579, 602, 616)
FA2_NON_CAUSAL = (309, 350, 362, 368, 370, 370)  # FlashAttention-2 in the same figure
FA2_CAUSAL = (191, 260, 298, 319, 333, 335)
C0 = TILING["flash3"].cta_overhead_tiles


def test_reference_shape_keeps_the_profile_figure():
    for causal in (False, True):
        assert shape_factor(REF_SEQ, REF_SEQ, causal, 128) == pytest.approx(1.0)


def test_non_causal_ctas_pay_a_fixed_cost():
    # one key tile per CTA: 1 tile of work in 1 + c0 tiles of time
    assert tile_efficiency(TILE, TILE, False) == pytest.approx(1 / (1 + C0))
    # a partial last tile is computed whole: 1.5 tiles credited, 2 computed
    assert tile_efficiency(TILE, TILE + TILE // 2, False) == pytest.approx(1.5 / (2 + C0))


def test_causal_diagonal_tiles_are_computed_whole():
    # s = 4 tiles: a CTA computes (4 + 1) / 2 tiles on average; the FLOP count credits the lower
    # triangle, (s + 1) / 2 keys per query row
    s = 4 * TILE
    credited = s * causal_fraction_diagonal(s) / TILE
    assert tile_efficiency(s, s, True) == pytest.approx(credited / (2.5 + C0))


def test_bottom_right_causal_sees_the_whole_prefix():
    # a query chunk of 2 tiles after a 6-tile prefix (CP all_gather, the last chunk): 6 + 1.5
    # tiles computed per CTA, 6 + (2T + 1) / 2T credited
    s_q, s_k = 2 * TILE, 8 * TILE
    credited = 6 + (s_q + 1) / 2 / TILE
    assert tile_efficiency(s_q, s_k, True) == pytest.approx(credited / (6 + 1.5 + C0))


@pytest.mark.parametrize("kernel, causal, published", [
    ("flash3", False, FA3_NON_CAUSAL), ("flash3", True, FA3_CAUSAL),
    ("flash2", False, FA2_NON_CAUSAL), ("flash2", True, FA2_CAUSAL)])
def test_follows_published_forward_curves(kernel, causal, published):
    """Each point of the published d=128 curve from the 16K point and the shape factor: within
    10% (FA3's 512-token causal point, 9% above, is the furthest)."""
    ref = published[-1]
    for s, measured in zip(SEQS, published):
        predicted = ref * shape_factor(s, s, causal, 128, kernel)
        assert predicted == pytest.approx(measured, rel=0.10), (s, predicted, measured)


def test_head_dim_follows_published_plateaus():
    # FA3 non-causal forward at 16K: d=64 497, d=128 648, d=256 756 TFLOP/s; FA2 d=64 324, d=128 370
    assert shape_factor(REF_SEQ, REF_SEQ, False, 64, "flash3") == pytest.approx(497 / 648, rel=0.02)
    assert shape_factor(REF_SEQ, REF_SEQ, False, 256, "flash3") == pytest.approx(756 / 648, rel=0.02)
    assert shape_factor(REF_SEQ, REF_SEQ, False, 64, "flash2") == pytest.approx(324 / 370, rel=0.02)
    assert head_dim_efficiency(128) / head_dim_efficiency(64) == pytest.approx((128 / 184) / (64 / 120))


def _attention_op(seq: int, shape: bool) -> ComputeOp:
    frac = causal_fraction_diagonal(seq)
    return ComputeOp(name="attn", kind="attention", flops=attention_flops(8, 32, seq, seq, 128, frac),
                     causal_fraction=frac, tag=Tag("fwd", 0, 0),
                     attention_shape=(seq, seq, 128, True) if shape else None)


def test_compute_time_applies_the_factor():
    gpu = load_profile("dgx-h100").gpu.model_copy(update={"kernel_gap_us": 0.0})
    for seq in (1024, REF_SEQ, 65536):
        plain = compute_time(_attention_op(seq, False), gpu)
        shaped = compute_time(_attention_op(seq, True), gpu)  # "" runs the default, flash3 on H100
        assert shaped == pytest.approx(plain / shape_factor(seq, seq, True, 128, "flash3"), rel=1e-9)

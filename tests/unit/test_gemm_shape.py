"""GEMM efficiency by shape (simulator/costs/gemm_shape.py): the fit to XLA's measured sm_90
table, wave quantisation in closed form, the plateau it is anchored to, and how compute_time
uses it."""

from __future__ import annotations

import math
import statistics

import pytest

from simulator.config.hardware import load_profile
from simulator.costs import gemm_shape as gs
from simulator.costs.compute import compute_time, gemm_efficiency, gemm_op_efficiency
from simulator.schedule.ir import ComputeOp

H100_PEAK = 989.4e12
H100_SMS = 132
# XLA's default GEMM perf table, key sm_90, bf16 (docs/reference/HARDWARE.md §1e):
# (batch, m, n, k, measured TFLOP/s).
XLA_SM90 = [
    (1, 512, 256, 256, 11.5), (1, 256, 256, 1024, 19.5), (1, 512, 512, 1024, 71.2), (1, 1024, 1024, 256, 82.0),
    (1, 512, 512, 2048, 114.7), (1, 1024, 1024, 2048, 350.0), (1, 1024, 1024, 4096, 470.1),
    (1, 2048, 2048, 2048, 632.0), (1, 2048, 2048, 4096, 738.0), (1, 4096, 4096, 256, 392.2),
    (1, 4096, 4096, 512, 543.1), (1, 4096, 4096, 1024, 677.4), (1, 4096, 4096, 2048, 738.7),
    (1, 4096, 4096, 4096, 783.3), (2, 4096, 4096, 4096, 807.7), (4, 4096, 2048, 4096, 808.7),
    (1, 256, 4096, 256, 78.0), (1, 256, 4096, 512, 138.1), (1, 256, 4096, 2048, 324.6),
    (1, 256, 4096, 4096, 412.0), (1, 512, 4096, 4096, 644.1), (1, 4096, 1024, 4096, 738.5)]


def test_reproduces_the_xla_sm90_table():
    errors = []
    for b, m, n, k, tflops in XLA_SM90:
        eff = gs.model_efficiency(m, n, k, b, H100_SMS, H100_PEAK, gs.XLA_MAINLOOP_FRACTION)
        errors.append(eff / (tflops * 1e12 / H100_PEAK) - 1.0)
    assert statistics.median(abs(e) for e in errors) < 0.03  # 2.1% when fitted
    assert max(abs(e) for e in errors) < 0.08  # 7.2% (1024x1024x4096)


def test_one_full_wave_in_closed_form():
    """132 tiles of 128x256 on 132 SMs: one wave of 2·128·256·(k + K_OVERHEAD) FLOPs per SM."""
    m, n, k = 128 * 12, 256 * 11, 8192
    sm_flops, ml = H100_PEAK / H100_SMS, 0.9
    expected = 2.0 * 128 * 256 * (k + gs.K_OVERHEAD) / (sm_flops * ml) + gs.FIXED_US * 1e-6
    assert gs.kernel_seconds(m, n, k, 1, H100_SMS, sm_flops, ml) == pytest.approx(expected, rel=1e-12)
    # the same grid on half the SMs (communication kernels hold the rest) takes two waves
    two = 2 * (expected - gs.FIXED_US * 1e-6) + gs.FIXED_US * 1e-6
    assert gs.kernel_seconds(m, n, k, 1, H100_SMS, sm_flops, ml, sms_available=66) == pytest.approx(two, rel=1e-12)


def test_wave_quantisation_step():
    """One more row of tiles than fills the SMs: the grid needs a second (partly empty) wave,
    or smaller tiles; either way the time jumps, though the FLOPs grow by 1/12."""
    n, k, sm_flops = 256 * 11, 8192, H100_PEAK / H100_SMS
    full = gs.kernel_seconds(128 * 12, n, k, 1, H100_SMS, sm_flops, 0.9)
    over = gs.kernel_seconds(128 * 13, n, k, 1, H100_SMS, sm_flops, 0.9)
    assert over / full > 1.4  # 3 waves of 128x128 tiles (1.5x work at 0.974) is the best pick


def test_skinny_k_costs_the_tile_overhead():
    """With the m×n grid fixed, time per unit of k is constant: t(k) ∝ k + K_OVERHEAD."""
    sm_flops = H100_PEAK / H100_SMS
    t = [gs.kernel_seconds(8192, 8192, k, 1, H100_SMS, sm_flops, 0.9) - gs.FIXED_US * 1e-6 for k in (768, 3072)]
    assert t[1] / t[0] == pytest.approx((3072 + gs.K_OVERHEAD) / (768 + gs.K_OVERHEAD), rel=1e-12)


@pytest.mark.parametrize("profile", ["dgx-h100", "dgx-a100", "dgx-b200"])
def test_anchored_to_the_profile_plateau(profile):
    """At the reference shape the model returns the top of the profile's curve exactly; a hidden
    768 model's k = 768 GEMMs run below it by about the tile overhead k/(k + K_OVERHEAD)."""
    gpu = load_profile(profile).gpu
    plateau = gpu.gemm_efficiency[-1].efficiency
    m, n, k = gs.REFERENCE_SHAPE
    assert gs.shape_efficiency(m, n, k, 1, gpu.sms, gpu.peak_flops("bf16"), plateau) == pytest.approx(plateau, rel=1e-9)
    small = gs.shape_efficiency(65536, 3072, 768, 1, gpu.sms, gpu.peak_flops("bf16"), plateau)
    big = gs.shape_efficiency(65536, 3072, 8192, 1, gpu.sms, gpu.peak_flops("bf16"), plateau)
    assert small / big == pytest.approx((768 / (768 + gs.K_OVERHEAD)) / (8192 / (8192 + gs.K_OVERHEAD)), rel=0.02)


def test_compute_time_counts_waves_on_the_sms_left():
    """A shaped GEMM with sm_fraction < 1 is not divided by it again: one wave that still fits
    on the SMs left takes the same time as on all of them."""
    gpu = load_profile("dgx-h100").gpu
    m, n, k = 128 * 4, 256 * 14, 7168  # 56 tiles: one wave on 132 or on 116 SMs
    full = ComputeOp(name="g", kind="gemm", flops=2.0 * m * n * k, gemm=(m, n, k))
    shared = ComputeOp(name="g", kind="gemm", flops=2.0 * m * n * k, gemm=(m, n, k), sm_fraction=116 / 132)
    assert compute_time(shared, gpu) == pytest.approx(compute_time(full, gpu), rel=1e-12)
    # a GEMM without a shape keeps the curve and the division by sm_fraction
    flat = ComputeOp(name="g", kind="gemm", flops=2.0 * m * n * k, sm_fraction=0.5)
    expected = 2.0 * m * n * k / (gpu.peak_flops("bf16") * gemm_efficiency(gpu, 2.0 * m * n * k) * 0.5)
    assert compute_time(flat, gpu) == pytest.approx(expected + gpu.kernel_gap_us * 1e-6, rel=1e-9)


def test_batched_kernels_fill_more_waves():
    """A kernel computing a batch of products counts all their tiles (flops / 2mnk of them)."""
    gpu = load_profile("dgx-h100").gpu
    m, n, k = 1024, 1024, 4096
    one = ComputeOp(name="g", kind="gemm", flops=2.0 * m * n * k, gemm=(m, n, k))
    four = ComputeOp(name="g", kind="gemm", flops=4 * 2.0 * m * n * k, gemm=(m, n, k))
    assert gemm_op_efficiency(four, gpu) > 1.5 * gemm_op_efficiency(one, gpu)  # small tiles no longer needed
    assert math.isclose(gemm_op_efficiency(four, gpu), gs.shape_efficiency(
        m, n, k, 4, gpu.sms, gpu.peak_flops("bf16"), gpu.gemm_efficiency[-1].efficiency))


def test_compute_times_tells_permuted_shapes_apart():
    """fprop, dgrad and wgrad of one layer have the same FLOPs and bytes but different shapes:
    the per-program memo must not hand one's time to the others."""
    from simulator.costs.compute import compute_times

    gpu = load_profile("dgx-a100").gpu
    shapes = [(81920, 3072, 768), (81920, 768, 3072), (768, 3072, 81920)]
    io = lambda m, n, k: 2.0 * (m * k + k * n + m * n)
    ops = [ComputeOp(name=f"g{i}", kind="gemm", flops=2.0 * m * n * k, hbm_bytes=io(m, n, k), gemm=(m, n, k))
           for i, (m, n, k) in enumerate(shapes)]
    assert len({op.hbm_bytes for op in ops}) == 1 and len({op.flops for op in ops}) == 1
    assert compute_times(ops, gpu) == [compute_time(op, gpu) for op in ops]
    assert compute_times(ops, gpu)[0] > compute_times(ops, gpu)[1]  # k = 768 pays the tile overhead most


def test_concurrent_chunks_share_waves():
    """Three m/8 chunks on TE's round-robin streams: their blocks fill each other's last wave,
    so each is priced as a third of the three-chunk grid."""
    gpu = load_profile("dgx-h100").gpu
    m, n, k = 512, 4608, 12288
    alone = ComputeOp(name="g", kind="gemm", flops=2.0 * m * n * k, gemm=(m, n, k))
    shared = ComputeOp(name="g", kind="gemm", flops=2.0 * m * n * k, gemm=(m, n, k), concurrent=3)
    expected = gs.shape_efficiency(m, n, k, 3, gpu.sms, gpu.peak_flops("bf16"), gpu.gemm_efficiency[-1].efficiency)
    assert gemm_op_efficiency(shared, gpu) == pytest.approx(expected, rel=1e-12)
    assert gemm_op_efficiency(shared, gpu) > gemm_op_efficiency(alone, gpu)


def test_a100_pcie_borrows_the_a100_training_derate():
    """a100-pcie has no training row to fit on: its plateau is its own MAMF fraction (252.9 of
    312 TFLOP/s, HARDWARE.md §1d) × the derate fitted for dgx-a100, the same silicon."""
    from simulator.e2e_validation.loso import fitted_derate

    pcie = load_profile("a100-pcie").gpu
    assert fitted_derate("a100-pcie") == fitted_derate("dgx-a100")
    assert pcie.gemm_efficiency[-1].efficiency == pytest.approx(252.9 / 312 * fitted_derate("dgx-a100"), abs=1e-3)

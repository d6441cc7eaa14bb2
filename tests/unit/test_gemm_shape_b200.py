"""The B200 GEMM model against XLA's measured sm_100 table (data/kernels/xla_sm100_gemm.csv;
simulator/calibration/gemm_table.py): the shape model fitted on sm_90 reproduces B200 shapes,
the dgx-b200 curve is the table's, its plateau and fp8 factor agree with the table, and the
kernels explain only a small part of the gap between the B200 and H100 training derates."""

from __future__ import annotations

import statistics

import pytest

from simulator.calibration import gemm_table as gt
from simulator.config.hardware import load_profile
from simulator.costs import gemm_shape as gs
from simulator.e2e_validation.loso import fitted_derate

H100_MAMF = 794.5 / 989.4  # HARDWARE.md §1d
B200_MAMF = 1745.0 / 2250.0
B200_MAMF_FP8 = 3432.5 / 4500.0


@pytest.fixture(scope="module")
def table() -> list[gt.TablePoint]:
    return gt.load()


def test_table_rows(table):
    """125 shapes, every side in 256..4096; FLOP/s below each dtype's dense peak."""
    assert len(table) == 125
    assert {p.m for p in table} == {p.n for p in table} == {p.k for p in table} == {256, 512, 1024, 2048, 4096}
    for p in table:
        for dtype, tflops in p.tflops.items():
            assert 0 < tflops < gt.PEAK_TFLOPS[dtype]


@pytest.mark.parametrize("dtype,median_max", [("bf16", 0.02), ("fp8_e4m3_e4m3", 0.025)])
def test_sm90_shape_model_reproduces_the_sm100_table(table, dtype, median_max):
    """Constants fitted on the sm_90 table only, 148 SMs, one k-loop rate from the table: the
    20 shapes of >= 1e10 FLOPs at median |error| 1.4% (bf16) and 1.6% (fp8)."""
    ml = gt.fit_mainloop(table, dtype)
    big = [abs(e) for e in gt.errors(table, dtype, ml, gt.MIN_FLOPS)]
    assert len(big) == 20
    assert statistics.median(big) < median_max
    assert max(big) < 0.20  # 4096x4096x512, short k over 4096x4096: +15% (bf16), +19% (fp8)


def test_fp8_mid_shapes_pay_more_than_the_sm90_tile_overhead(table):
    """Down to 1e9 FLOPs the bf16 table stays within 3% (median) but fp8 does not (6.8%): an fp8
    k-step is half a bf16 one on B200, so a prologue/epilogue of fixed time is more k-steps than
    the sm_90-fitted K_OVERHEAD. Pinned as a known gap of the shape model, not fitted."""
    mid = {d: statistics.median(abs(e) for e in gt.errors(table, d, gt.fit_mainloop(table, d), 1e9))
           for d in ("bf16", "fp8_e4m3_e4m3")}
    assert mid["bf16"] < 0.03
    assert 0.05 < mid["fp8_e4m3_e4m3"] < 0.09


def test_profile_curve_is_the_sm100_table():
    """Below the plateau, each point is the table's bf16 TFLOP/s at its shape / 2250 x the derate."""
    gpu = load_profile("dgx-b200").gpu
    derate = fitted_derate("dgx-b200")
    by_shape = {(p.m, p.n, p.k): p.tflops["bf16"] for p in gt.load()}
    shapes = [(512, 256, 256), (512, 512, 1024), (1024, 1024, 2048), (1024, 1024, 4096), (2048, 2048, 2048),
              (2048, 2048, 4096), (4096, 4096, 4096)]
    for point, (m, n, k) in zip(gpu.gemm_efficiency, shapes):
        assert point.flops == pytest.approx(2.0 * m * n * k, rel=0.01)
        assert point.efficiency == pytest.approx(by_shape[(m, n, k)] / 2250.0 * derate, abs=6e-4)


def test_plateau_is_mamf_and_the_table_agrees(table):
    """The curve's top is MAMF's 77.6% x the derate; the table, extrapolated by the shape model
    to the reference shape, gives 75.5%: within 3% of MAMF."""
    gpu = load_profile("dgx-b200").gpu
    assert gpu.gemm_efficiency[-1].efficiency == pytest.approx(B200_MAMF * fitted_derate("dgx-b200"), abs=1e-3)
    extrapolated = gt.reference_efficiency("bf16", gt.fit_mainloop(table, "bf16"))
    assert extrapolated == pytest.approx(B200_MAMF, rel=0.03)


def test_fp8_over_bf16_ratio(table):
    """fp8_gemm_efficiency_scale (MAMF 76.3/77.6) against the table's own ratio of fractions of
    peak at its largest shape (0.976)."""
    gpu = load_profile("dgx-b200").gpu
    assert gpu.fp8_gemm_efficiency_scale == pytest.approx(B200_MAMF_FP8 / B200_MAMF, abs=1e-3)
    top = gt.largest(table)
    ratio = (top.tflops["fp8_e4m3_e4m3"] / 4500.0) / (top.tflops["bf16"] / 2250.0)
    assert ratio == pytest.approx(gpu.fp8_gemm_efficiency_scale, abs=0.015)


def test_kernels_explain_little_of_the_b200_derate_gap(table):
    """Table over MAMF at the reference shape: B200 0.973, H100 1.052 (the sm_90 table's mainloop
    0.893): unsearched B200 GEMMs sit 7.5% lower against MAMF than H100's. The fitted derates
    differ by 31% (0.479 vs 0.698): most of that gap is not in the GEMM kernels. Pinned."""
    b200 = gt.reference_efficiency("bf16", gt.fit_mainloop(table, "bf16")) / B200_MAMF
    m, n, k = gs.REFERENCE_SHAPE
    h100 = gs.model_efficiency(m, n, k, 1, 132, 989.4e12, gs.XLA_MAINLOOP_FRACTION) / H100_MAMF
    kernel_ratio = b200 / h100
    derate_ratio = fitted_derate("dgx-b200") / fitted_derate("dgx-h100")
    assert kernel_ratio == pytest.approx(0.925, abs=0.01)
    assert derate_ratio < kernel_ratio - 0.15

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


def test_fp8_tile_overhead_is_the_bf16_time(table, monkeypatch):
    """A tile's prologue and epilogue take the bf16 kernel's time, so an fp8 GEMM (k-steps at twice
    the rate) pays twice the k-steps (gemm_shape.k_overhead, the data sheet's 4500/2250, nothing
    fitted). Down to 1e9 FLOPs the fp8 shapes read 4.6% median |error| (signed +3.3%) against 6.8%
    (+6.4%) with the overhead counted in fp8 k-steps; bf16 stays within 3%, the large fp8 shapes
    within 2.5%."""
    assert gt.step_ratio("fp8_e4m3_e4m3") == 2.0 and gt.step_ratio("bf16") == 1.0
    assert gs.k_overhead(2.0) == 2 * gs.K_OVERHEAD

    def mid(d: str) -> tuple[float, float]:
        errs = gt.errors(table, d, gt.fit_mainloop(table, d), 1e9)
        return statistics.median(abs(e) for e in errs), statistics.median(errs)

    assert mid("bf16")[0] < 0.03
    fixed_time = mid("fp8_e4m3_e4m3")
    assert 0.03 < fixed_time[0] < 0.055 and 0.0 < fixed_time[1] < 0.045
    monkeypatch.setattr(gt, "step_ratio", lambda dtype: 1.0)  # the overhead in fp8 k-steps
    fixed_steps = mid("fp8_e4m3_e4m3")
    assert 0.05 < fixed_steps[0] < 0.09 and fixed_steps[1] > 0.055


def test_fp8_gemm_pays_the_doubled_overhead():
    """Closed form on H100 (132 SMs): 132 tiles of 128x256 are one wave, so the kernel takes
    2·128·256·(k + overhead) FLOPs per SM at the k-loop rate, overhead 167 bf16 steps, 334 fp8."""
    sms, peak = 132, 1979e12
    t = gs.kernel_seconds(128 * 12, 256 * 11, 768, 1, sms, peak / sms, 1.0, step_ratio=2.0)
    assert t == pytest.approx(2 * 128 * 256 * (768 + 2 * gs.K_OVERHEAD) / (peak / sms) + gs.FIXED_US * 1e-6)


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
    differ by 25% (0.539 vs 0.720): the kernels explain under a third of that gap, the rest is not in the
    GEMM kernels. Pinned."""
    b200 = gt.reference_efficiency("bf16", gt.fit_mainloop(table, "bf16")) / B200_MAMF
    m, n, k = gs.REFERENCE_SHAPE
    h100 = gs.model_efficiency(m, n, k, 1, 132, 989.4e12, gs.XLA_MAINLOOP_FRACTION) / H100_MAMF
    kernel_ratio = b200 / h100
    derate_ratio = fitted_derate("dgx-b200") / fitted_derate("dgx-h100")
    assert kernel_ratio == pytest.approx(0.925, abs=0.01)
    assert derate_ratio < kernel_ratio - 0.12

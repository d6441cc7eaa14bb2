"""Latency/bandwidth and GEMM-efficiency fits on synthetic data with known answers and on the
reconstructed real sweeps."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from simulator.calibration.kineto import GemmEvent, parse_kineto_trace
from simulator.calibration.nccl_log import Sweep, parse_nccl_log
from simulator.calibration.nccl_log_writer import make_row
from simulator.calibration.sweep_fit import fit_alpha_beta, fit_gemm_efficiency, fit_sweep

FIX = Path(__file__).resolve().parents[1] / "fixtures"


def test_alpha_beta_recovers_known_line_despite_outliers():
    alpha, bw = 25e-6, 150e9
    sizes = [2.0 ** k for k in range(10, 34)]
    times = [alpha + s / bw for s in sizes]
    times[5] *= 3.0  # a protocol-switch bump
    times[17] *= 0.5
    a, g, w = fit_alpha_beta(sizes, times)
    assert a == pytest.approx(alpha, rel=0.02)
    assert 1 / g == pytest.approx(bw, rel=0.02)
    assert w[5] < 0.5 and w[17] < 0.5


def test_alpha_beta_needs_two_sizes():
    with pytest.raises(ValueError):
        fit_alpha_beta([1024, 1024], [1e-5, 1e-5])


def test_fit_sweep_busbw_uses_nccl_tests_factor():
    n, alpha, bw = 8, 30e-6, 200e9
    rows = tuple(make_row("allreduce", s, "float", alpha + s / bw, n) for s in (2 ** k for k in range(12, 31)))
    sweep = Sweep(op="allreduce", nranks=n, ngpus=1, devices=(), rows=rows, nccl_version=None, source="x",
                  first_line=0)
    fit = fit_sweep(sweep)
    assert fit.latency_s == pytest.approx(alpha, rel=1e-3)
    assert fit.algbw_Bps == pytest.approx(bw, rel=1e-3)
    assert fit.busbw_Bps == pytest.approx(bw * 2 * (n - 1) / n, rel=1e-3)
    assert fit.time_s(1 << 20) == pytest.approx(alpha + (1 << 20) / bw, rel=1e-3)


def test_fit_real_h100_ring_allgather():
    """NCCL_ALGO=RING AllGather on 8 H100s (together-nccl-tests): the fitted bus bandwidth
    matches the plateau the log shows at the largest sizes, and the latency the smallest ones."""
    (sweep,) = parse_nccl_log(FIX / "nccl_logs" / "h100x8_allgather_1node_full_ringalgo.txt")
    fit = fit_sweep(sweep, min_size=1)
    largest = max(sweep.measured(), key=lambda r: r.size_bytes)
    assert fit.busbw_Bps == pytest.approx(largest.busbw * 1e9, rel=0.10)
    smallest = min((r for r in sweep.measured() if r.size_bytes > 0), key=lambda r: r.size_bytes)
    assert fit.latency_s == pytest.approx(smallest.time_s, rel=0.5)
    assert fit.median_rel_error < 0.25


def test_gemm_efficiency_from_trace():
    t = parse_kineto_trace(FIX / "kineto" / "gpu_style_trace.json")
    peak = 989e12  # H100 SXM dense bf16
    pts = fit_gemm_efficiency(t.gemms, peak, bins_per_decade=4)
    want = sorted(((g.flops, g.flops / g.duration_s / peak) for g in t.gemms))
    # 2^35 and 2^36 FLOPs fall in different quarter-decade bins; the two 2^35 GEMMs share one
    assert [p.samples for p in pts] == [2, 1]
    assert pts[0].efficiency == pytest.approx(np.median([e for f, e in want if f == 2 ** 35]))
    assert pts[1].flops == pytest.approx(2 ** 36) and pts[1].efficiency == pytest.approx(want[-1][1])
    assert all(0 < p.efficiency <= 1 for p in pts)


def test_gemm_efficiency_caps_at_one_and_skips_unshaped():
    g = [GemmEvent("k", "aten::mm", 1024, 1024, 1024, 1, "bfloat16", 0.0, 1e-9),
         GemmEvent("k", None, None, None, None, 1, None, 0.0, 1e-3)]
    (p,) = fit_gemm_efficiency(g, 1e12)
    assert p.efficiency == 1.0 and p.samples == 1

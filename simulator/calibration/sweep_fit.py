"""Fits that need only measurements: a latency + bandwidth line through one collective sweep,
and a size-dependent GEMM-efficiency curve through measured GEMM kernels.

Latency/bandwidth: the alpha-beta model ``t(S) = alpha + S / B_alg`` (Hockney; the form NCCL's
tuner uses per algorithm/protocol, NCCL-COST-MODEL.md), fitted by iteratively reweighted least
squares on *relative* time error (sizes span many decades, so absolute residuals would let the
largest sizes decide everything) with Huber weights, so a few outliers (a protocol switch, a
noisy point) do not drag the line. Bus bandwidth is ``B_alg`` times the nccl-tests factor.
Which link class, algorithm and protocol a sweep exercised is the collective model's call
(simulator/costs); this module fits whatever rows it is given.

GEMM efficiency: achieved FLOP/s over the dtype's peak, median per log-spaced FLOP bin, as the
``(flops, efficiency)`` points of ``GPU.gemm_efficiency`` (config/hardware.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from simulator.calibration.kineto import GemmEvent
from simulator.calibration.nccl_log import Sweep, SweepRow
from simulator.costs.collectives import busbw_factor


@dataclass(frozen=True)
class LatencyBandwidth:
    """``t = latency_s + size / algbw_Bps``; ``busbw_Bps`` uses the nccl-tests factor."""

    latency_s: float
    algbw_Bps: float
    busbw_Bps: float
    points: int
    median_rel_error: float  # |fit - measured| / measured over the points used
    outliers: int  # points whose Huber weight ended below 0.5

    def time_s(self, size_bytes: float) -> float:
        return self.latency_s + size_bytes / self.algbw_Bps


def _huber_weights(r: np.ndarray, k: float) -> np.ndarray:
    a = np.abs(r)
    return np.where(a <= k, 1.0, k / np.maximum(a, 1e-300))


def fit_alpha_beta(sizes: Sequence[float], times: Sequence[float], *, huber_k: float = 0.05,
                   iterations: int = 50) -> tuple[float, float, np.ndarray]:
    """Robust fit of ``t = alpha + gamma * S`` (gamma = 1/bandwidth), both >= 0.
    Returns (alpha, gamma, final weights)."""
    S = np.asarray(sizes, dtype=float)
    t = np.asarray(times, dtype=float)
    if len(S) < 2 or np.ptp(S) == 0:
        raise ValueError("need at least two distinct sizes to fit latency and bandwidth")
    w = np.ones_like(t)
    alpha = gamma = 0.0
    for _ in range(iterations):
        sw = w / t  # rows scaled so the residual is relative error
        A = np.column_stack([sw, S * sw])
        b = t * sw
        (alpha, gamma), *_ = np.linalg.lstsq(A, b, rcond=None)
        if alpha < 0:  # the constrained optimum sits on alpha = 0
            alpha = 0.0
            gamma = float(np.sum(sw * sw * S * t) / np.sum((S * sw) ** 2))
        if gamma <= 0:  # flat curve: latency only
            gamma = 1e-300
            alpha = float(np.sum(sw * sw * t) / np.sum(sw * sw))
        rel = (alpha + gamma * S - t) / t
        new_w = _huber_weights(rel, huber_k)
        if np.allclose(new_w, w, atol=1e-9):
            break
        w = new_w
    return float(alpha), float(gamma), w


def fit_sweep(sweep: Sweep, *, rows: Iterable[SweepRow] | None = None, min_size: int = 1) -> LatencyBandwidth:
    """Latency and bandwidth of one measured sweep (its ``measured()`` rows unless given)."""
    use = [r for r in (rows if rows is not None else sweep.measured()) if r.size_bytes >= min_size and r.time_us > 0]
    sizes = [r.size_bytes for r in use]
    times = [r.time_s for r in use]
    alpha, gamma, w = fit_alpha_beta(sizes, times)
    algbw = 1.0 / gamma
    pred = alpha + gamma * np.asarray(sizes, dtype=float)
    rel = np.abs(pred - np.asarray(times)) / np.asarray(times)
    return LatencyBandwidth(latency_s=alpha, algbw_Bps=algbw, busbw_Bps=algbw * busbw_factor(sweep.op, sweep.nranks),
                            points=len(use), median_rel_error=float(np.median(rel)), outliers=int(np.sum(w < 0.5)))


@dataclass(frozen=True)
class EfficiencyPoint:
    flops: float
    efficiency: float
    samples: int


def fit_gemm_efficiency(gemms: Iterable[GemmEvent], peak_flops: float, *, bins_per_decade: int = 4,
                        min_samples: int = 1) -> list[EfficiencyPoint]:
    """Median achieved/peak per log10-FLOP bin, as strictly increasing points (capped at 1).
    GEMMs without a shape or duration are skipped."""
    if peak_flops <= 0:
        raise ValueError("peak_flops must be positive")
    bins: dict[int, list[tuple[float, float]]] = {}
    for g in gemms:
        f = g.flops
        if f is None or f <= 0 or g.duration_s <= 0:
            continue
        key = math.floor(math.log10(f) * bins_per_decade)
        bins.setdefault(key, []).append((f, f / g.duration_s / peak_flops))
    points = []
    for key in sorted(bins):
        samples = bins[key]
        if len(samples) < min_samples:
            continue
        flops = float(np.exp(np.median(np.log([f for f, _ in samples]))))
        eff = float(min(1.0, np.median([e for _, e in samples])))
        points.append(EfficiencyPoint(flops=flops, efficiency=eff, samples=len(samples)))
    return points

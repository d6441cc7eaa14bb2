"""Fitting the GEMM training derate of a profile on the single-node rows (``--fit-gemm``)."""

from __future__ import annotations

import statistics

from simulator.config.hardware import HardwareProfile, apply_overlay, load_profile
from simulator.e2e_validation.scoring import Result, run_case
from simulator.e2e_validation.sources import Case


def gemm_scaled(profile: str, scale: float) -> HardwareProfile:
    """The profile with its GEMM curve × `scale` (each point capped at 1)."""
    base = load_profile(profile)
    pts = [dict(flops=p.flops, efficiency=min(1.0, p.efficiency * scale)) for p in base.gpu.gemm_efficiency]
    return apply_overlay(base, {"gpu": {"gemm_efficiency": pts}}, source=f"{profile} with its GEMM curve x {scale:g}")


def fit_gemm_scale(profile: str, fit_cases: list[Case], lo: float = 0.4, hi: float = 1.2,
                   iters: int = 10) -> tuple[float, list[Result]]:
    """The factor on `profile`'s GEMM curve that makes the median signed error of `fit_cases`
    zero (bisection; the error falls monotonically as GEMMs slow down)."""
    results: list[Result] = []
    for _ in range(iters):
        mid = (lo + hi) / 2
        hw = gemm_scaled(profile, mid)
        results = [run_case(c, hw) for c in fit_cases]
        if statistics.median(r.error for r in results) > 0:
            hi = mid
        else:
            lo = mid
    return (lo + hi) / 2, results

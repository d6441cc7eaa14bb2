"""Fit a profile's GEMM model to measured GEMM kernels: the bf16 efficiency curve
(``gpu.gemm_efficiency``, achieved fraction of peak by FLOPs per kernel) and the fp8 factor on it
(``gpu.fp8_gemm_efficiency_scale``), as :func:`simulator.costs.compute.gemm_efficiency` reads them.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Iterable

import numpy as np

from simulator.calibration.kineto import GemmEvent, dtype_alias
from simulator.calibration.sweep_fit import fit_gemm_efficiency
from simulator.config.hardware import GemmPoint, HardwareProfile
from simulator.costs.compute import gemm_efficiency


@dataclass(frozen=True)
class GemmFit:
    points: list[dict[str, float]]  # gpu.gemm_efficiency entries
    samples: int
    warnings: list[str]


def fit_gemm_curve(gemms: Iterable[GemmEvent], profile: HardwareProfile, *, dtype: str = "bf16",
                   min_samples: int = 1, min_bins: int = 2) -> GemmFit:
    """``gpu.gemm_efficiency`` points from measured GEMM kernels of one dtype (median achieved /
    peak per log-FLOP bin, :func:`fit_gemm_efficiency`), made monotone in FLOPs as the curve's
    interpolation assumes (larger GEMMs fill the SMs at least as well). Fewer than `min_bins`
    bins: no curve, a warning, the datasheet curve stays."""
    use = [g for g in gemms if dtype_alias(g.dtype) in (dtype, None)]
    pts = fit_gemm_efficiency(use, profile.gpu.peak_flops(dtype), min_samples=min_samples)
    n = sum(p.samples for p in pts)
    if len(pts) < min_bins:
        return GemmFit([], n, [f"gpu.gemm_efficiency: {n} measured {dtype} GEMM kernel(s) in {len(pts)} size bin(s) "
                               f"(need {min_bins}); left at the datasheet curve"])
    effs = np.maximum.accumulate([min(1.0, max(p.efficiency, 1e-4)) for p in pts])
    return GemmFit([{"flops": float(f"{p.flops:.4g}"), "efficiency": round(float(e), 4)} for p, e in zip(pts, effs)], n, [])


def fit_fp8_scale(gemms: Iterable[GemmEvent], profile: HardwareProfile,
                  curve: list[dict[str, float]] | None = None) -> tuple[float | None, int, list[str]]:
    """``gpu.fp8_gemm_efficiency_scale``: the median over measured fp8 GEMMs of their achieved
    fraction of the fp8 peak over the bf16 curve's fraction at the same FLOPs (`curve`, else the
    profile's). (value or None, kernels used, warnings)."""
    fp8 = [(flops, g.duration_s) for g in gemms
           if dtype_alias(g.dtype) == "fp8" and (flops := g.flops) and g.duration_s > 0]
    if not fp8:
        return None, 0, []
    if profile.gpu.fp8_TFLOPS is None:
        return None, 0, [f"gpu.fp8_gemm_efficiency_scale: {profile.name} has no fp8 peak; {len(fp8)} fp8 GEMM(s) ignored"]
    gpu = profile.gpu
    if curve:
        gpu = gpu.model_copy(update={"gemm_efficiency": [GemmPoint(**p) for p in curve]})
    peak = gpu.peak_flops("fp8")
    ratios = [flops / dur / peak / gemm_efficiency(gpu, flops, "bf16") for flops, dur in fp8]
    value = statistics.median(ratios)
    warnings = []
    if value > 1.5:
        warnings.append(f"gpu.fp8_gemm_efficiency_scale: measured {value:.2f}, above the profile's bound 1.5; capped")
    return round(min(value, 1.5), 4), len(fp8), warnings

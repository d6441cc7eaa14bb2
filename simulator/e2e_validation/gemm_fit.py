"""Fitting the GEMM training derate of a profile on the single-node rows (``--fit-gemm``)."""

from __future__ import annotations

import statistics
from pathlib import Path

from simulator.e2e_validation.scoring import Result, run_case
from simulator.e2e_validation.sources import Case


def gemm_scale_overlay(profile: str, scale: float, folder: Path) -> Path:
    """A profile overlay whose GEMM curve is the base profile's × `scale` (capped at 1)."""
    import yaml

    from simulator.config.hardware import load_profile

    base = load_profile(profile)
    pts = [dict(flops=p.flops, efficiency=min(1.0, p.efficiency * scale)) for p in base.gpu.gemm_efficiency]
    path = folder / f"{Path(profile).stem}-gemm{scale:.6f}.yaml"
    path.write_text(yaml.safe_dump(dict(base=profile, gpu=dict(gemm_efficiency=pts))))
    return path


def fit_gemm_scale(profile: str, fit_cases: list[Case], lo: float = 0.4, hi: float = 1.2,
                   iters: int = 10) -> tuple[float, list[Result]]:
    """The factor on `profile`'s GEMM curve that makes the median signed error of `fit_cases`
    zero (bisection; the error falls monotonically as GEMMs slow down)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        results: list[Result] = []
        for _ in range(iters):
            mid = (lo + hi) / 2
            hw = str(gemm_scale_overlay(profile, mid, Path(tmp)))
            results = [run_case(c, hw) for c in fit_cases]
            if statistics.median(r.error for r in results) > 0:
                hi = mid
            else:
                lo = mid
        return (lo + hi) / 2, results

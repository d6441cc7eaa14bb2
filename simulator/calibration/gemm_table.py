"""Score the GEMM shape model (:mod:`simulator.costs.gemm_shape`) on a GPU it was not fitted on:
XLA's measured ``sm_100`` GEMM table (B200-class, ``data/kernels/xla_sm100_gemm.csv``).

The shape model's constants (tile set, per-tile overhead, per-kernel cost) were fitted on XLA's
``sm_90`` bf16 table alone (docs/reference/HARDWARE.md §1e). On ``sm_100`` they are used as they
are, with the B200's 148 SMs and its dense peak (2250 TFLOP/s bf16, 4500 fp8); the one number
read off the table is the k-loop rate (``mainloop``, a fraction of peak), set so that the
table's large GEMMs (``MIN_FLOPS`` and up, the top of the table where a profile's plateau is
read) have a median signed error of zero (:func:`fit_mainloop`). What that tests:

* the shape of B200 GEMM efficiency (wave and tile quantisation on 148 SMs, the per-tile and
  per-kernel costs) with constants from another GPU (:func:`errors`);
* the plateau a profile states for B200 (MAMF's 77.6%, HARDWARE.md §1d, at the shape model's
  ``REFERENCE_SHAPE``) against the table's, extrapolated by the model
  (:func:`reference_efficiency`);
* the fp8/bf16 ratio (``fp8_gemm_efficiency_scale``, MAMF's 76.3/77.6) against the table's at
  its largest shape.

The same extrapolation on XLA's ``sm_90`` table (mainloop ``XLA_MAINLOOP_FRACTION``) lands 5% above
H100's MAMF plateau; on ``sm_100`` it lands 2-3% below B200's: where ordinary (unsearched) GEMM
shapes sit relative to MAMF's best one differs by ~7% between the two GPUs, which is what the
kernels can say about a difference between the two GPUs' training derates.

``python -m simulator.calibration.gemm_table`` prints the fits.
"""

from __future__ import annotations

import csv
import statistics
from dataclasses import dataclass

from simulator.costs import gemm_shape as gs
from simulator.files import bundled_dir

DATA = bundled_dir("data/kernels") / "xla_sm100_gemm.csv"
B200_SMS = 148
PEAK_TFLOPS = {"bf16": 2250.0, "fp8_e4m3_e4m3": 4500.0, "fp8_e4m3_e5m2": 4500.0, "fp8_e5m2_e4m3": 4500.0}
MIN_FLOPS = 1e10  # the table's large GEMMs: 20 of its 125 shapes (2·m·n·k ≥ 1e10)


@dataclass(frozen=True)
class TablePoint:
    """One measured GEMM of the table: C[m,n] = A[m,k]·B[k,n], ``b`` of them, at ``tflops``."""

    b: int
    m: int
    n: int
    k: int
    tflops: dict[str, float]

    @property
    def flops(self) -> float:
        return 2.0 * self.b * self.m * self.n * self.k


def load(path=DATA) -> list[TablePoint]:
    """The table's rows (FLOP/s in the file, TFLOP/s here)."""
    lines = [line for line in path.read_text().splitlines() if line and not line.startswith("#")]
    out = []
    for row in csv.DictReader(lines):
        out.append(TablePoint(int(row["b"]), int(row["m"]), int(row["n"]), int(row["k"]),
                              {key: float(row[key]) / 1e12 for key in PEAK_TFLOPS}))
    return out


def errors(points: list[TablePoint], dtype: str, mainloop: float, min_flops: float = 0.0) -> list[float]:
    """Model / measured - 1 for every point of at least ``min_flops``."""
    peak = PEAK_TFLOPS[dtype] * 1e12
    ratio = step_ratio(dtype)
    return [gs.model_efficiency(p.m, p.n, p.k, p.b, B200_SMS, peak, mainloop, step_ratio=ratio)
            / (p.tflops[dtype] * 1e12 / peak) - 1.0
            for p in points if p.flops >= min_flops]


def step_ratio(dtype: str) -> float:
    """The dtype's peak over the bf16 peak: how many of its k-steps a tile's fixed prologue and
    epilogue take per bf16 step (``gemm_shape.k_overhead``)."""
    return PEAK_TFLOPS[dtype] / PEAK_TFLOPS["bf16"]


def fit_mainloop(points: list[TablePoint], dtype: str, min_flops: float = MIN_FLOPS) -> float:
    """The k-loop rate at which the median signed error over points of ``min_flops`` and up is
    zero (bisection: the model's efficiency rises with the rate)."""
    lo, hi = 0.3, 1.2
    for _ in range(50):
        mid = (lo + hi) / 2
        if statistics.median(errors(points, dtype, mid, min_flops)) > 0:
            hi = mid
        else:
            lo = mid
    return (lo + hi) / 2


def reference_efficiency(dtype: str, mainloop: float) -> float:
    """The model's fraction of peak at ``REFERENCE_SHAPE`` (where a profile's plateau is stated)."""
    m, n, k = gs.REFERENCE_SHAPE
    return gs.model_efficiency(m, n, k, 1, B200_SMS, PEAK_TFLOPS[dtype] * 1e12, mainloop,
                               step_ratio=step_ratio(dtype))


def largest(points: list[TablePoint]) -> TablePoint:
    return max(points, key=lambda p: p.flops)


def table_over_mamf(profile: str, training_derate: float) -> float | None:
    """What an XLA-measured (unsearched) GEMM reaches at ``REFERENCE_SHAPE``, extrapolated by the
    shape model from the profile's GPU's XLA table, over the profile's MAMF-shape plateau (its curve's
    top / ``training_derate``, the derate its header states). dgx-h100: the sm_90 table's k-loop
    rate ``XLA_MAINLOOP_FRACTION`` (HARDWARE.md §1e); dgx-b200: the sm_100 table's
    (:func:`fit_mainloop`, bf16). None for other profiles (no XLA table for their GPU here)."""
    from simulator.config.hardware import load_profile

    m, n, k = gs.REFERENCE_SHAPE
    if profile == "dgx-h100":
        table = gs.model_efficiency(m, n, k, 1, 132, 989.4e12, gs.XLA_MAINLOOP_FRACTION)
    elif profile == "dgx-b200":
        table = reference_efficiency("bf16", fit_mainloop(load(), "bf16"))
    else:
        return None
    gpu = load_profile(profile).gpu
    return table / (gpu.gemm_efficiency[-1].efficiency / training_derate)


def main() -> None:
    pts = load()
    print(f"{DATA.name}: {len(pts)} shapes; shape model of costs/gemm_shape.py (fitted on sm_90) on {B200_SMS} SMs")
    for dtype in PEAK_TFLOPS:
        ml = fit_mainloop(pts, dtype)
        big = [abs(e) for e in errors(pts, dtype, ml, MIN_FLOPS)]
        mid = [abs(e) for e in errors(pts, dtype, ml, 1e9)]
        print(f"  {dtype:14s} mainloop {ml:.3f}  |err| >= {MIN_FLOPS:.0e} FLOPs: median {statistics.median(big):.1%} "
              f"max {max(big):.1%} ({len(big)})  >= 1e9: median {statistics.median(mid):.1%} max {max(mid):.1%} "
              f"({len(mid)})  at {gs.REFERENCE_SHAPE}: {reference_efficiency(dtype, ml):.3f} of peak")
    top = largest(pts)
    ratio = (top.tflops["fp8_e4m3_e4m3"] / 4500.0) / (top.tflops["bf16"] / 2250.0)
    print(f"  fp8/bf16 fraction of peak at {top.m}x{top.n}x{top.k}: {ratio:.3f}")


if __name__ == "__main__":
    main()

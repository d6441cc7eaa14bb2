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

**H200, cuBLAS** (``data/kernels/h200_gemm_cublas.csv``, measured by this project with
``benchmarks/measure_reference_kernels.py``): the same grid on sm_90 again, through cuBLAS 13.1 instead of
XLA, in bf16 and fp8, timed by CUDA-graph replay. Two numbers are read off it, the k-loop rate and
the per-kernel fixed cost, and the rest of the model (tile set, tile rates, ``K_OVERHEAD``, the fp8 overhead in bf16
time) is scored as fitted on XLA's sm_90 table (:func:`h200_fit`): the 125 shapes come out at a
median |error| of 4.3% (bf16), 5.3% (fp8) and 3.0% (fp8 with fast accumulation), with a fixed
cost of 2.0-2.5 µs per kernel against the 5.23 µs of XLA's timings. XLA's are kernel durations
(``xla/tools/matmul_perf_table_gen.cc`` times each dot with the profiler's kernel tracer, the
median kernel time), so no launch gap is in them either; the difference is the kernels XLA picks
for small dots on its unnamed sm_90 part (the eager stream's gap on this H200 is 0.7-1.3 µs per
kernel, ``data/kernels/h200_launch_gap.csv``). The training shapes, run
after the grid under sustained load, sit at 666-692 TFLOP/s in bf16 (67-70% of the datasheet
peak; nvidia-smi read 1410 MHz at the 700 W limit just after): between the MAMF-shape plateau
(80.3%, short bursts) and the dgx-h100 curve's top (57.8%, that plateau × the training derate),
so the sustained clock accounts for about half of the derate (:func:`h200_sustained`).

``python -m simulator.calibration.gemm_table`` prints the fits.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from functools import lru_cache

from simulator.config.hardware import GPU, load_profile
from simulator.costs import gemm_shape as gs
from simulator.files import bundled_dir, read_commented_csv

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
    return [TablePoint(int(row["b"]), int(row["m"]), int(row["n"]), int(row["k"]),
                       {key: float(row[key]) / 1e12 for key in PEAK_TFLOPS})
            for row in read_commented_csv(path)]


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


H200_DATA = bundled_dir("data/kernels") / "h200_gemm_cublas.csv"
H200_PROFILE = "dgx-h200"  # the table's GPU: its SM count and dense peaks (the H100's)
H200_DTYPES = ("bf16", "fp8_e4m3", "fp8_e4m3_fastacc")


@lru_cache(maxsize=1)
def _h200_gpu() -> GPU:
    return load_profile(H200_PROFILE).gpu


def h200_peak_flops(dtype: str) -> float:
    """The dense peak of the table's ``dtype`` (its fp8 rows: the profile's fp8 peak)."""
    return float(_h200_gpu().peak_flops("bf16" if dtype == "bf16" else "fp8"))


@dataclass(frozen=True)
class TimedGemm:
    """One GEMM of the H200 table: dtype, shape and seconds per kernel."""

    dtype: str
    m: int
    n: int
    k: int
    seconds: float

    @property
    def flops(self) -> float:
        return 2.0 * self.m * self.n * self.k

    @property
    def on_grid(self) -> bool:
        """One of XLA's grid shapes (every side 256-4096), not a training shape."""
        return max(self.m, self.n, self.k) <= 4096


def load_h200(path=H200_DATA) -> list[TimedGemm]:
    """The measured cuBLAS GEMMs of one H200 (seconds per GEMM)."""
    return [TimedGemm(r["dtype"], int(r["m"]), int(r["n"]), int(r["k"]), float(r["ms"]) * 1e-3)
            for r in read_commented_csv(path)]


@dataclass(frozen=True)
class H200Fit:
    dtype: str
    mainloop: float
    fixed_us: float
    errors: tuple[float, ...]  # model / measured time − 1, per grid shape

    @property
    def median_abs(self) -> float:
        return statistics.median(abs(e) for e in self.errors)


def _unit_times(points: list[TimedGemm], step: float) -> list[float]:
    """Each shape's kernel time at a k-loop rate of 1 and no fixed cost (time = this / rate + fixed)."""
    sms, peak = _h200_gpu().sms, h200_peak_flops(points[0].dtype)
    return [gs.kernel_seconds(p.m, p.n, p.k, 1, sms, peak / sms, 1.0, step_ratio=step)
            - gs.FIXED_US * 1e-6 for p in points]


def h200_fit(points: list[TimedGemm], dtype: str, step: float | None = None) -> H200Fit:
    """The k-loop rate and per-kernel fixed cost that minimise the median |time error| over the
    grid's shapes of ``dtype``, the rest of the shape model as fitted on XLA's sm_90 table;
    ``step``: the dtype's peak over bf16's (2 for fp8, :func:`gemm_shape.k_overhead`)."""
    grid = [p for p in points if p.dtype == dtype and p.on_grid]
    unit = _unit_times(grid, step if step is not None else h200_peak_flops(dtype) / h200_peak_flops("bf16"))

    def errs(rate: float, fixed_us: float) -> list[float]:
        return [(u / rate + fixed_us * 1e-6) / p.seconds - 1.0 for u, p in zip(unit, grid)]

    def rate_for(fixed_us: float) -> float:  # median signed error zero (bisection)
        lo, hi = 0.3, 1.5
        for _ in range(40):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if statistics.median(errs(mid, fixed_us)) > 0 else (lo, mid)
        return (lo + hi) / 2

    best = min(((statistics.median(map(abs, errs(rate_for(f), f))), f) for f in (x * 0.1 for x in range(61))))
    fixed = best[1]
    rate = rate_for(fixed)
    return H200Fit(dtype, rate, fixed, tuple(errs(rate, fixed)))


def h200_sustained(points: list[TimedGemm], dtype: str = "bf16") -> list[float]:
    """Fraction of the datasheet peak each training shape (run under sustained load) reaches."""
    peak = h200_peak_flops(dtype)
    return [p.flops / p.seconds / peak for p in points if p.dtype == dtype and not p.on_grid]


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
    h200 = load_h200()
    print(f"{H200_DATA.name}: {len(h200)} GEMMs; the sm_90 shape model with a k-loop rate and fixed cost read off the grid")
    for dtype in H200_DTYPES:
        f = h200_fit(h200, dtype)
        print(f"  {dtype:17s} mainloop {f.mainloop:.3f}  fixed {f.fixed_us:.1f} us  grid |err| median "
              f"{f.median_abs:.1%} max {max(map(abs, f.errors)):.1%} ({len(f.errors)})  sustained training shapes "
              f"{min(h200_sustained(h200, dtype)):.3f}-{max(h200_sustained(h200, dtype)):.3f} of peak")


if __name__ == "__main__":
    main()

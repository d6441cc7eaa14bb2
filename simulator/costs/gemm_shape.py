"""GEMM efficiency by shape: tile and wave quantisation on the SM count, the k-loop's fixed cost
per tile, and a fixed cost per kernel.

cuBLAS and CUTLASS cut the m×n output of a GEMM into tiles (128×256, 128×128, 64×128, ...);
each thread block computes one tile by looping over k, and the blocks run in *waves* of one
block per SM. The last wave of a grid whose tile count is not a multiple of the SM count runs
partly empty (wave quantisation), and a tile that overhangs m or n computes padding (tile
quantisation): NVIDIA, *Matrix Multiplication Background User's Guide* (Deep Learning
Performance documentation, "Tile quantization" and "Wave quantization", with A100's 108 SMs).
Every tile also pays a prologue (filling the shared-memory pipeline) and an epilogue (writing
C), equivalent to ``K_OVERHEAD`` more steps of k, so skinny-k GEMMs (k = hidden 768-2048 of a
small model) run well below the plateau even with millions of tiles. A kernel finally pays
``FIXED_US`` of ramp and drain that no tile hides. The library picks the tile that finishes
first; smaller tiles reuse less data per byte loaded and run their k-loop at
``TILE_EFFICIENCY`` of the large tile's rate.

The prologue and epilogue take a fixed *time* per tile, not a fixed number of k-steps: the
epilogue writes the tile's C in the output dtype (bf16 for TransformerEngine's fp8 GEMMs too) and
the prologue's pipeline stages hold the same bytes whatever the input precision. An fp8 k-step
runs at twice the bf16 rate on the same SMs (H100 1979 / 989 TFLOP/s, B200 4500 / 2250), so the
same overhead is twice as many fp8 k-steps: :func:`k_overhead` scales ``K_OVERHEAD`` by the
GPU's peak in the GEMM's dtype over its bf16 peak (no constant added; the ratio is the data
sheet's). XLA's measured ``sm_100`` table (data/kernels/xla_sm100_gemm.csv) says so: with the
sm_90-fitted ``K_OVERHEAD`` in fp8 k-steps its fp8 shapes of 1e9-1e10 FLOPs read 6.8% median
|error| (signed +6.4%: the model too fast) against 2.5% for bf16; with the overhead in bf16 time
4.6% (signed +3.3%), the large shapes unchanged (1.6% -> 1.1%); ``tests/unit/test_gemm_shape_b200.py``.

The constants are fitted once on the 22 bf16 points of XLA's measured ``sm_90`` GEMM table
(docs/reference/HARDWARE.md §1e: square, skinny-m and skinny-k shapes from 512×256×256 to
2×4096³): median |error| 2.1%, max 7.2% (tests/unit/test_gemm_shape.py checks it, and a
leave-one-point-out refit, so the constants are scored on points they were not fitted on).
They describe the kernel design (tile sizes, pipeline depth), not a GPU: other GPUs use them
with their own SM count and peak. The fitted mainloop fraction of that table (0.893, at the
table's clocks) is *not* used by the simulator: each profile's plateau (its ``gemm_efficiency``
curve's top, the MAMF measurement under sustained load × the training derate) sets the level,
and the shape model only redistributes it (:func:`shape_efficiency`).

The memory-bound regime of a skinny GEMM (m of a few hundred rows at large n·k, where the weight
read dominates) is not in this module: ``costs.compute`` takes max(arithmetic, HBM) time with
the op's ``hbm_bytes``.
"""

from __future__ import annotations

import math
from functools import lru_cache

# (tile m, tile n, k-loop rate relative to the 128x256 tile). Fitted on the XLA sm_90 table.
TILES: tuple[tuple[int, int, float], ...] = (
    (128, 256, 1.0), (256, 128, 1.0), (128, 128, 0.974), (64, 128, 0.722), (128, 64, 0.722), (64, 64, 0.700))
K_OVERHEAD = 167.0  # prologue + epilogue of one tile, in steps of k
FIXED_US = 5.23  # ramp and drain of one kernel that no tile hides, microseconds
XLA_MAINLOOP_FRACTION = 0.893  # the table's k-loop rate as a fraction of peak (documentation and tests only)
# The shape a profile's plateau describes: a large square GEMM (MAMF's best shapes and the top of
# the bundled curves are GEMMs of 1e11-1e12 FLOPs, well past the quantisation steps).
REFERENCE_SHAPE = (8192, 8192, 8192)


def k_overhead(step_ratio: float = 1.0) -> float:
    """A tile's prologue and epilogue in k-steps of a GEMM whose k-loop runs ``step_ratio`` times
    the bf16 rate on the same SMs (its dtype's peak over the bf16 peak: 2 for fp8): the fixed time
    of ``K_OVERHEAD`` bf16 steps (module docstring)."""
    return K_OVERHEAD * max(step_ratio, 1.0)


def kernel_seconds(m: int, n: int, k: int, batch: int, sms: int, sm_flops: float, mainloop: float,
                   sms_available: int | None = None, step_ratio: float = 1.0) -> float:
    """Seconds of one GEMM kernel (``batch`` independent m×n×k products in one grid) on a GPU
    whose SMs each do ``sm_flops`` FLOP/s at peak and run the k-loop at ``mainloop`` of it;
    ``sms_available`` SMs take blocks (fewer when communication kernels hold some);
    ``step_ratio``: the dtype's peak over the bf16 peak (:func:`k_overhead`)."""
    slots = max(1, sms if sms_available is None else sms_available)
    overhead = k_overhead(step_ratio)
    best = math.inf
    for tm, tn, rate in TILES:
        tiles = batch * math.ceil(m / tm) * math.ceil(n / tn)
        waves = math.ceil(tiles / slots)
        best = min(best, waves * 2.0 * tm * tn * (k + overhead) / (sm_flops * mainloop * rate))
    return best + FIXED_US * 1e-6


def model_efficiency(m: int, n: int, k: int, batch: int, sms: int, peak_flops: float, mainloop: float,
                     sms_available: int | None = None, step_ratio: float = 1.0) -> float:
    """Fraction of ``peak_flops`` the GEMM reaches (2·batch·m·n·k FLOPs over its kernel time)."""
    t = kernel_seconds(m, n, k, batch, sms, peak_flops / sms, mainloop, sms_available, step_ratio)
    return 2.0 * batch * m * n * k / (peak_flops * t)


@lru_cache(maxsize=256)
def mainloop_for_plateau(plateau: float, sms: int, peak_flops: float, step_ratio: float = 1.0) -> float:
    """The k-loop fraction at which :data:`REFERENCE_SHAPE` reaches ``plateau`` of peak (closed
    form: the reference's time is waves·A/mainloop + FIXED_US)."""
    m, n, k = REFERENCE_SHAPE
    flops = 2.0 * m * n * k
    t_target = flops / (peak_flops * plateau)
    # the unit-mainloop time minus the fixed cost, scaled: t(ml) = t1/ml + fixed
    t1 = kernel_seconds(m, n, k, 1, sms, peak_flops / sms, 1.0, step_ratio=step_ratio) - FIXED_US * 1e-6
    return t1 / max(t_target - FIXED_US * 1e-6, 1e-12)


def shape_efficiency(m: int, n: int, k: int, batch: int, sms: int, peak_flops: float, plateau: float,
                     sm_fraction: float = 1.0, step_ratio: float = 1.0) -> float:
    """Fraction of peak of an m×n×k GEMM (``batch`` of them in one kernel) on a GPU whose large
    square GEMMs reach ``plateau``; with ``sm_fraction`` < 1 only that share of the SMs takes
    blocks (the waves are counted on them); ``step_ratio``: the dtype's peak over the bf16 peak
    (:func:`k_overhead`)."""
    mainloop = mainloop_for_plateau(round(plateau, 9), sms, peak_flops, step_ratio)
    avail = max(1, int(sms * sm_fraction + 1e-9))
    return model_efficiency(m, n, k, batch, sms, peak_flops, mainloop, avail, step_ratio)

"""How a fused attention kernel's efficiency moves with its shape: sequence lengths, causal
masking and head dimension, relative to the long-sequence figure a profile gives.

A profile's ``gpu.attention_efficiency[kernel]`` is the fraction of peak of a *long* kernel:
the published figures it comes from are the plateau of a benchmark sweep (FlashAttention-3,
arXiv:2407.08608 Fig. 5, and cuDNN's sweeps reach it at 8K-16K tokens; FlashAttention-2's
"up to 73%"). A kernel of another shape reaches that figure times :func:`shape_factor`, from
how FlashAttention-2/3 and cuDNN's flash kernels tile the work (FA2 paper §3.3, FA3 §3):

* one thread block (CTA) per query tile of ``TILE`` rows, per head and sequence, loops over
  the key/value tiles. Besides that loop each CTA pays a fixed cost (load Q, fill the
  load/MMA pipeline, rescale and write O and the LSE), c0 key tiles' worth.
  So a CTA over n key tiles runs at n / (n + c0) of the loop's rate: short sequences are slow.
* causal masking skips whole tiles above the diagonal, but the tiles *on* it are computed in
  full and masked: a CTA computes (n + 1) / 2 tiles on average where the FLOP count (the lower
  triangle, ``causal_fraction_diagonal``) credits about n / 2.
* a sliding window of W keys (Mistral, GPT-OSS, Gemma) skips the tiles below the band as well:
  a query tile computes every key tile its rows' windows touch, the two edge tiles whole, so a
  128-key window computes two tiles for one credited (:func:`_window_tiles`; the FLOP count is
  the band's, ``schedule.attention.window_fraction``).
* the softmax between the two GEMMs (exp, row max and sum, rescaling) costs the same per score
  whatever the head dimension d, while the GEMMs cost ∝ d: the tensor cores are busy
  d / (d + e) of the time. FA3 §3.2 names the exponential as the bottleneck it overlaps, which
  is why the figure still rises with d on Hopper.

c0 and e are properties of a kernel generation's tiling (``TILING``, read off FA3's published
forward curves); the profile's number carries what differs between GPUs, and where a GPU's
kernels lose more at short lengths, its own c0 (``cta_overhead_tiles``: cuDNN on Blackwell, 4.8
tiles forward and 3.6 backward, read off the GB200 and GB300 sweeps; calibration/attention_bench.py). The factor is 1 at the
reference shape (``REF_SEQ`` tokens, d = ``REF_HEAD_DIM``, the same masking), so long-sequence
kernels keep the profile's figure.

The backward kernel has a larger fixed cost per CTA. FA2's backward (FA2 paper §3.2) gives each
CTA a key/value tile and loops over the query tiles: before the loop it loads K and V, after it
writes dK and dV from fp32 accumulators, and two memory-bound kernels run per token besides it
(the row sums of dO∘O before, the fp32 dQ accumulator cast back after), a cost that weighs like
a fixed number of tiles per CTA. On Hopper this project's H200 sweeps
(data/kernels/h200_attention_sdpa.csv, 512-32K tokens) put it at 3.0 tiles for PyTorch's
FlashAttention-2 and 2.7 for cuDNN's kernel (d = 128; against the forward's 0.8 and 1.5), and
cudnn-frontend's own H200 rows at 4K-8K agree (FlashAttention-2's backward 7.6% → 3.4% median
|error| held out). FlashAttention-2's A100 sweep does not show it (its forward-plus-backward
curve fits the forward's c0 at 4.9% and c0 = 3.0 at 8.2%), so the backward figure is the
profile's (``AttentionEfficiency.bwd_cta_overhead_tiles``, set on the Hopper profiles), the
forward's c0 where the profile gives none; ``calibration/attention_bench.py`` scores both.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

TILE = 128  # query and key/value tile edge of FA2/FA3/cuDNN's kernels at head dim 128 (FA3 §3.1)


@dataclass(frozen=True)
class Tiling:
    """What a kernel generation's tiling costs besides its tensor-core loop.

    ``cta_overhead_tiles``: the fixed cost of one CTA, in key/value tiles of its loop.
    ``softmax_head_dim``: the non-GEMM work per score, in head-dim units (d / (d + this) is the
    tensor cores' share)."""

    cta_overhead_tiles: float
    softmax_head_dim: float


# Read off FA3 Fig. 5 (H100, forward; HARDWARE.md §4). flash3 (FA3 / cuDNN-class): c0 = 1.5 from
# its d=128 causal and non-causal curves, 512-16K tokens (the pipelined, warp-specialised loop
# makes a tile short, so prologue and epilogue weigh more); the softmax share from its non-causal
# plateaus at d = 64, 128, 256 (497, 648, 756 TFLOP/s: d / (d + 56) gives 0.77 and 1.18 of the
# d=128 value). flash2: c0 = 0.8 from FA2's curves in the same figure, the softmax share from its
# d=64 and d=128 plateaus (324, 370: d / (d + 21) gives 0.88; at d=256 register pressure lowers
# FA2 below the model). flash1 (flash-attn 1.x and the Triton port llm-foundry runs: one CTA per
# 128-row query block over 128-key blocks, unpipelined): FA2's values. The FA2 paper's A100 and
# H100 figures time FA1 (and its Triton port on A100) forward + backward at 512-16K tokens
# (data/kernels/flashattention1_triton_fwd_bwd.csv): c0 = 0.8 follows every length curve (median
# 2.1%); their head dims disagree (FA1 faster at d=64 than at 128, the Triton port level), so the
# softmax share stays FA2's, an assumption.
TILING = {"flash3": Tiling(1.5, 56.0), "flash2": Tiling(0.8, 21.0), "flash1": Tiling(0.8, 21.0)}
REF_SEQ = 16384  # the shape a profile's attention efficiency stands for: a long square kernel
REF_HEAD_DIM = 128


def _tiling(kernel: str) -> Tiling:
    return TILING.get(kernel, TILING["flash3"])


def _window_tiles(s_q: int, s_k: int, window: int) -> tuple[float, float]:
    """(credited, computed) key/value tiles summed over the query tiles of a causal kernel whose
    query row r (bottom-right aligned, key index r + s_k − s_q) sees only the ``window`` keys up
    to and including its own: a query tile computes every key tile its rows' windows touch, the
    two ends partial and masked, and skips the rest (FA2's ``window_size``, cuDNN's
    ``sliding_window_length``, TE's ``window_size = (W − 1, 0)``)."""
    prefix = s_k - s_q
    credited = computed = 0.0
    for j in range(math.ceil(s_q / TILE)):
        first, last = j * TILE, min((j + 1) * TILE, s_q) - 1  # query rows of this tile
        lo = max(0, first + prefix - window + 1)  # the first key any of its rows sees
        computed += (last + prefix) // TILE - lo // TILE + 1
        # keys per row: min(r + prefix + 1, window), a run rising by one up to the window, then flat
        full = min(max(first, window - prefix - 1), last + 1)  # rows from here on see all W keys
        n = full - first
        credited += n * (first + full - 1) / 2 + n * (prefix + 1) + (last + 1 - full) * window
    return credited / TILE ** 2, computed


def tile_efficiency(s_q: int, s_k: int, causal: bool, kernel: str = "flash3",
                    cta_overhead: float | None = None, window: int = 0) -> float:
    """Credited over computed work of one kernel, in key/value tiles per CTA.

    Non-causal: s_k / T credited, ⌈s_k / T⌉ computed, plus the CTA's fixed cost. Causal with the
    mask aligned to the bottom right (FA2 ≥ 2.1, cuDNN, TE; the same as top-left when
    s_q = s_k): a query tile j of n_q sees the s_k − s_q keys before the query block and its own
    causal prefix; credited: the lower triangle's (s_k − s_q) + (s_q + 1) / 2 keys per query row,
    computed: (s_k − s_q) / T + (n_q + 1) / 2 tiles per CTA on average. ``cta_overhead``: the
    CTA's fixed cost in tiles, when not the kernel generation's (a backward's, module docstring)."""
    if s_q <= 0 or s_k <= 0:
        return 1.0
    c0 = _tiling(kernel).cta_overhead_tiles if cta_overhead is None else cta_overhead
    s_q = min(s_q, s_k) if causal else s_q
    if causal and 0 < window < s_k:
        credited, computed = _window_tiles(s_q, s_k, window)
        return credited / (computed + math.ceil(s_q / TILE) * c0)
    if not causal:
        credited = s_k / TILE
        computed = float(math.ceil(s_k / TILE))
    else:
        prefix = s_k - s_q
        n_q = math.ceil(s_q / TILE)
        credited = (prefix + (s_q + 1) / 2) / TILE
        computed = prefix / TILE + (n_q + 1) / 2
    return credited / (computed + c0)


def head_dim_efficiency(head_dim: float, kernel: str = "flash3") -> float:
    """Share of a score tile's time the tensor cores work: d / (d + softmax_head_dim)."""
    return head_dim / (head_dim + _tiling(kernel).softmax_head_dim)


def shape_factor(s_q: int, s_k: int, causal: bool, head_dim: float, kernel: str = "flash3",
                 cta_overhead: float | None = None, window: int = 0) -> float:
    """The profile's efficiency of ``kernel`` (flash1 | flash2 | flash3) is multiplied by this for
    a kernel of this shape (1 at ``REF_SEQ`` × ``REF_SEQ``, d = ``REF_HEAD_DIM``, same masking);
    ``cta_overhead``: a fixed cost per CTA other than the kernel generation's (in tiles);
    ``window``: the keys a causal query row sees, itself included (sliding-window attention; 0:
    its whole prefix), against the full causal reference, as its FLOPs are counted on the window."""
    ref = tile_efficiency(REF_SEQ, REF_SEQ, causal, kernel, cta_overhead) * head_dim_efficiency(REF_HEAD_DIM, kernel)
    return (tile_efficiency(s_q, s_k, causal, kernel, cta_overhead, window)
            * head_dim_efficiency(head_dim, kernel) / ref)

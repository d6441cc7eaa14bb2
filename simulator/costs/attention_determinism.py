"""What a deterministic fused-attention backward costs over the default one (``training.deterministic``).

The default FlashAttention-2 backward (Dao-AILab/flash-attention ``csrc/flash_attn``, the
``run_flash_bwd_seqk_parallel`` launch of ``src/flash_bwd_launch_template.h`` @0251105a) runs one
thread block (CTA) per key/value block of ``kBlockN`` keys, per head and sequence, and adds each
CTA's share of dQ into one fp32 buffer with ``atomicAdd``: the order of those adds, so dQ, changes
from run to run. Its deterministic path (flash-attn >= 2.4.1, ``deterministic=True``; what
TransformerEngine runs on Ampere when ``NVTE_ALLOW_NONDETERMINISTIC_ALGO=0``, since its cuDNN
backend is non-deterministic below sm90: ``get_attention_backend``, "Filter: Determinism") keeps the
same per-block work but launches only ``nsplits = ceil(SMs / (batch x heads))`` CTAs per head and
sequence, CTA j looping over key blocks j, j + nsplits, ...; each adds into a dQ buffer of its own
(``dq_accum``, ``nsplits`` fp32 copies zeroed by ``torch::zeros``, ``flash_api.cpp``), which
``convert_dQ`` sums at the end. Two costs follow, both from the launch code:

* **load balance.** With causal masking key block k meets ``ceil(s_q / kBlockM) - k·kBlockN/kBlockM``
  query blocks, so the few long CTAs of the deterministic grid are unequal, and one CTA a SM (the
  kernel's 144 KB of shared memory at head dim 128) leaves a second, partly filled wave when
  ``nsplits x batch x heads`` exceeds the SMs. :func:`grid_slowdown` is the makespan of the
  deterministic grid over that of the default one, both list-scheduled in launch order on the SMs.
* **the split dQ buffers.** ``nsplits - 1`` more fp32 copies of dQ are zeroed and read back
  (:func:`dq_accum_extra_bytes`).

Checked against the one published pair on one shape (``tests/unit/test_attention_determinism.py``):
flash-attn PR #1893 (H100, head dim 128, causal, seq 8,192, 16 heads, batch 2) measures the
deterministic FA2 backward at 8.279 ms (166.0 TFLOP/s) beside a forward of 306.2 TFLOP/s; cuDNN's
H200 sweep (``data/kernels/cudnn_sdpa_benchmarks.csv``, same shape) measures PyTorch's FA2 at
325.1 forward and 277.4 TFLOP/s backward. Scaled by the forwards' ratio, the default backward on
that H100 runs at 260.9 TFLOP/s: a slowdown of 1.57, where :func:`grid_slowdown` gives 1.56.

cuDNN's deterministic backward on Hopper (what TransformerEngine keeps on sm90: cudnn-frontend
``scaled_dot_product_flash_attention.h`` forces its dP-workspace decomposition, a workspace of
``b·h·s_q·s_kv·2`` bytes) has no published timing beside the default one, so it is not priced:
the flash3-class kernels keep their default cost on Hopper. On Blackwell cuDNN's deterministic
algorithm (cuDNN >= 9.18.1, no dropout or bias; with dropout TransformerEngine runs FlashAttention-2
instead, schedule/attention.py ``resolve_kernel``) is timed beside the default one in cuDNN's own
benchmark: :func:`cudnn_blackwell_slowdown`.
"""

from __future__ import annotations

import heapq
import math
from functools import lru_cache

# FlashAttention-2 backward tiles (kBlockM query rows, kBlockN keys) by head dimension, on a GPU
# with >= 144 KB of shared memory a block (A100, H100): run_mha_bwd_hdim{32..256} of
# flash_bwd_launch_template.h. Each is one resident CTA a SM (its kSmemSize1colblock).
_FA2_BWD_TILES = ((64, 128, 128), (128, 64, 128), (256, 64, 64))  # (max head dim, kBlockM, kBlockN)
PRICED_KERNELS = frozenset({"flash2"})

# cuDNN's deterministic fused-attention backward on Blackwell over its default one, timed pair by
# pair in one container (cuDNN 9.22.0 on GB200 and GB300: data/kernels/cudnn_sdpa_deterministic_bwd_blackwell.csv,
# tests/unit/test_cudnn_deterministic_bwd.py recomputes these medians). In BF16 with equal query and value
# head dims the deterministic algorithm costs by head dim and mask: 128 causal x 1.13 (10 pairs, 1.09-1.16),
# 128 unmasked x 1.20 (30 pairs, 1.10-1.29), 64 (sliding window, causal) x 1.28 (10 pairs, 1.27-1.31). MLA's
# 192 / 128 heads and every FP8 and MXFP8 pair run at their default cost (0.94-1.05), as if their default
# backward were the deterministic one already (TransformerEngine notes that cudnn-frontend forces the
# deterministic algorithm for head dim 256, which has no pair here, so it is priced at 1 too).
CUDNN_BLACKWELL_DETERMINISTIC = {(64, True): 1.28, (64, False): 1.28, (128, True): 1.13, (128, False): 1.20}


def cudnn_blackwell_slowdown(head_dim: int, causal: bool, dtype: str) -> float:
    """Deterministic over default time of cuDNN's fused-attention backward on Blackwell
    (:data:`CUDNN_BLACKWELL_DETERMINISTIC`): a 16-bit backward of head dim up to 128 at the measured
    ratio of the nearest measured head dim not below it (64 or 128), anything larger and FP8 at 1."""
    if dtype not in ("bf16", "fp16") or head_dim > 128:
        return 1.0
    return CUDNN_BLACKWELL_DETERMINISTIC[(64 if head_dim <= 64 else 128, causal)]


def fa2_bwd_tiles(head_dim: int) -> tuple[int, int]:
    """(kBlockM, kBlockN) of FlashAttention-2's backward at this head dimension."""
    for max_d, bm, bn in _FA2_BWD_TILES:
        if head_dim <= max_d:
            return bm, bn
    return _FA2_BWD_TILES[-1][1:]


def key_block_work(s_q: int, s_k: int, causal: bool, head_dim: int, window: int = 0) -> list[int]:
    """Query blocks each key block's CTA iterates over (its work, in query-block steps).

    Causal masking aligned to the bottom right, as flash-attn >= 2.1: key block k starts at query
    block ``(k·kBlockN - (s_k - s_q)) // kBlockM``. With a sliding window of W keys (flash-attn's
    ``window_size = (W - 1, 0)``) it also ends, at the block of the last query row that still sees
    its last key, ``(k + 1)·kBlockN - 1 - (s_k - s_q) + W - 1``."""
    bm, bn = fa2_bwd_tiles(head_dim)
    n_m, n_n = math.ceil(s_q / bm), math.ceil(s_k / bn)
    if not causal:
        return [n_m] * n_n
    prefix = s_k - s_q
    first = [max(0, (k * bn - prefix) // bm) for k in range(n_n)]
    if not 0 < window < s_k:
        return [max(0, n_m - f) for f in first]
    last = [min(n_m - 1, ((k + 1) * bn - 2 - prefix + window) // bm) for k in range(n_n)]
    return [max(0, b - f + 1) for f, b in zip(first, last)]


def _makespan(durations: list[int], sms: int) -> int:
    """Finish time of CTAs launched in order, each on the SM that frees first (one CTA a SM)."""
    free = [0] * min(sms, len(durations))
    for d in durations:
        heapq.heappush(free, heapq.heappop(free) + d)
    return max(free, default=0)


def nsplits(batch_heads: int, sms: int) -> int:
    """CTAs per head and sequence of the deterministic grid: ceil(SMs / (batch x heads))."""
    return max(1, math.ceil(sms / max(batch_heads, 1)))


@lru_cache(maxsize=4096)
def grid_slowdown(batch_heads: int, s_q: int, s_k: int, causal: bool, head_dim: int, sms: int,
                  window: int = 0) -> float:
    """Deterministic over default FlashAttention-2 backward time for ``batch_heads`` (sequences x
    query heads on the GPU) of this shape: the two grids' makespans (module docstring)."""
    work = key_block_work(s_q, s_k, causal, head_dim, window)
    if batch_heads <= 0 or not any(work):
        return 1.0
    g = nsplits(batch_heads, sms)
    det = [sum(work[j::g]) for j in range(g)] * batch_heads
    default = work * batch_heads
    return _makespan(det, sms) / _makespan(default, sms)


def dq_accum_extra_bytes(batch_heads: int, s_q: int, head_dim: int, sms: int) -> float:
    """HBM bytes the deterministic path moves beyond the default one: ``nsplits - 1`` more fp32
    dQ copies (seq rounded to 128, head dim to 32, as ``flash_api.cpp`` allocates them), each
    zeroed once and read once by ``convert_dQ``."""
    s_round = math.ceil(s_q / 128) * 128
    d_round = math.ceil(head_dim / 32) * 32
    return 2.0 * (nsplits(batch_heads, sms) - 1) * batch_heads * s_round * d_round * 4

"""An analytical lower bound on a plan's step time, to skip plans that cannot beat the best one
simulated so far without replaying them.

The bound is compute at the best rate the profile allows plus the pipeline bubble no schedule
avoids; every approximation errs low, so a plan is only skipped when its replay could not have
been faster than the best:

* **Compute per micro-batch on pipeline stage j**, ``T(j)``: the stage's layers' GEMM FLOPs
  (forward, ``BWD_GEMM_FACTOR`` x forward for dgrad + wgrad, the recomputed forward under
  ``recompute: full``) over the dtype's dense peak x the *highest* point of the profile's GEMM
  efficiency curve, plus attention FLOPs (forward, ``FLASH_BWD_FACTOR`` x for backward, the
  recomputed forward under selective or full recompute) over the 16-bit peak x the highest
  GEMM efficiency or attention efficiency times its kernel shape factor at the full sequence
  (``costs.attention_shape``; shorter chunks only lower it); the last stage adds the LM head
  (3 x the logits GEMM). The work of one micro-batch on a stage is split over tp x cp x ulysses GPUs, so it is divided by that
  product (perfect balance, no communication). Attention is counted with the diagonal causal
  fraction and a 10% margin: context-parallel schedules split the causal triangle in blocks
  whose sum can be slightly smaller. Memory-bound kernels, launch gaps, communication and the
  optimizer step are left out (all >= 0).
* **Bubble**: stage j cannot start its first forward before stages 0..j-1 ran their first
  forward chunk, and the step cannot end before those stages ran the backward of the last
  micro-batch after stage j's: with ``vp`` chunks per stage, ``sum_{i<j} T(i) / vp``
  (Narayanan et al. 2021, arXiv:2104.04473 §2.2: the 1F1B bubble (p-1)/vp of a micro-batch's
  time). So ``step >= max_j (m x T(j) + sum_{i<j} T(i) / vp)`` with m micro-batches per step.

``tests/unit/test_sweep_bound.py`` checks the bound stays below the simulated step time over
sweeps of several scenarios; the sweep reports how many plans it pruned.
"""

from __future__ import annotations

from simulator.config.scenario import Scenario
from simulator.costs.attention_shape import shape_factor
from simulator.schedule.attention import FLASH_BWD_FACTOR, causal_fraction_diagonal
from simulator.schedule.flops import BWD_GEMM_FACTOR, attention_core_dim, layer_flops, logits_flops
from simulator.schedule.shapes import RankShapes

ATTENTION_MARGIN = 0.9


def _rates(scn: Scenario) -> tuple[float, float]:
    """Best achievable FLOP/s of GEMMs (training dtype) and of attention (16-bit)."""
    gpu = scn.profile.gpu
    dtype = scn.training.dtype
    best_gemm = max(p.efficiency for p in gpu.gemm_efficiency)
    if dtype == "fp8":
        best_gemm = min(1.0, best_gemm * gpu.fp8_gemm_efficiency_scale)
    seq, d = scn.model.seq_len, attention_core_dim(scn.model)
    # a fused kernel reaches its figure times its shape factor; its kernels are at most seq long,
    # causal or not (context-parallel steps run unmasked chunks), and the factor grows with length
    best_attn = max([best_gemm] + [max(e.fwd, e.bwd) * max(shape_factor(seq, seq, causal, d, k) for causal in (True, False))
                                   for k, e in gpu.attention_efficiency.items()])
    attn_dtype = "bf16" if dtype == "fp8" else dtype
    return gpu.peak_flops(dtype) * best_gemm, gpu.peak_flops(attn_dtype) * min(best_attn, 1.0)


def stage_compute_lower_bounds(scn: Scenario) -> list[float]:
    """``T(j)``: seconds of compute per micro-batch on each pipeline stage, at the best rates."""
    m, t = scn.model, scn.training
    tokens = t.micro_batch * m.seq_len
    lf = layer_flops(m, tokens, m.seq_len, causal_fraction_diagonal(m.seq_len))
    recompute = t.recompute
    gemm = lf.gemms * (1 + BWD_GEMM_FACTOR + (1 if recompute == "full" else 0))
    attn = ATTENTION_MARGIN * lf.attention * (1 + FLASH_BWD_FACTOR + (1 if recompute in ("selective", "full") else 0))
    gemm_rate, attn_rate = _rates(scn)
    per_layer = gemm / gemm_rate + attn / attn_rate
    shard = RankShapes.of(scn).layer_split
    stages = list(scn.stage_layers)
    out = [n * per_layer / shard for n in stages]
    out[-1] += 3 * logits_flops(m, tokens) / gemm_rate / shard
    return out


def step_lower_bound(scn: Scenario) -> float:
    """Seconds no replay of this plan can beat (module docstring)."""
    T = stage_compute_lower_bounds(scn)
    micro = scn.n_micro
    vp = max(scn.parallel.vp, 1)
    best, before = 0.0, 0.0
    for tj in T:
        best = max(best, micro * tj + before / vp)
        before += tj
    return best

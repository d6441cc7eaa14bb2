"""Fit the fused-attention efficiencies of a profile (``gpu.attention_efficiency``) to measured
attention kernels of a PyTorch profiler trace.

The compute model prices a fused attention kernel as its *computed* FLOPs (causal masking
removes the upper triangle, :func:`simulator.schedule.attention.causal_fraction_diagonal`) over
the kernel generation's achieved fraction of the dense bf16/fp16 peak, forward and backward
apart (the backward does 2.5× the forward's matmul FLOPs, FlashAttention-2 paper §3.1). The
fitted value is therefore the median over the measured kernels of

    computed FLOPs / (duration × peak),

per kernel generation and direction, divided by what the kernel's shape costs against a long
sequence (``costs.attention_shape.shape_factor``: a short or small-head-dim kernel runs below the
profile's figure, which stands for a long one). The generation comes from the kernel's name: FlashAttention-2
(``flash_fwd_kernel``, PyTorch's ``pytorch_flash::``) is ``flash2``; the Hopper-class kernels
(FlashAttention-3's ``FlashAttnFwdSm90``, cuDNN's fused ``sdpa ... sm90`` kernels, what
TransformerEngine runs) are ``flash3``. Memory-efficient (CUTLASS ``fmha_cutlass``) kernels have
no entry in the profiles and are reported, not fitted. A trace does not record whether the mask
was causal; the caller says (LLM training is, ``causal=True``); a kernel table's rows do say.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from typing import Any, Iterable

from simulator.calibration.kineto import AttentionEvent, dtype_alias
from simulator.config.hardware import HardwareProfile
from simulator.costs.attention_shape import shape_factor
from simulator.schedule.attention import causal_fraction_diagonal

_HOPPER_CLASS = re.compile(r"sm9\d|sm1\d\d|wgmma|cudnn|FlashAttn\w*Sm9", re.IGNORECASE)
_FLASH2 = re.compile(r"flash_(fwd|bwd)|pytorch_flash|flash::", re.IGNORECASE)
_FLASH1 = re.compile(r"fmha_(fwd|bwd)\w*_loop", re.IGNORECASE)  # flash-attn 1.x's CUDA kernels


def kernel_generation(name: str) -> str | None:
    """``flash3`` (Hopper-class fused kernels), ``flash2``, ``flash1`` (flash-attn 1.x's
    ``fmha_fwd_loop`` / ``fmha_bwd_*_loop`` kernels), or None (not a kernel the profiles price).
    A kernel table's rows carry the generation itself as the name."""
    if name in ("flash1", "flash2", "flash3"):
        return name
    low = name.lower()
    if "fmha_cutlass" in low:
        return None  # memory-efficient attention (xFormers / PyTorch's efficient SDPA backend)
    if _HOPPER_CLASS.search(name) and any(word in low for word in ("flash", "sdpa", "fmha", "attn")):
        return "flash3"
    if _FLASH2.search(name):
        return "flash2"
    if _FLASH1.search(name):
        return "flash1"
    return None


@dataclass
class AttentionFit:
    overlay: dict[str, Any]  # {"flash2": {"fwd": 0.41, "bwd": 0.33}, ...} for gpu.attention_efficiency
    samples: dict[tuple[str, str], int] = field(default_factory=dict)  # (kernel, fwd|bwd) -> kernels used
    warnings: list[str] = field(default_factory=list)


def computed_fraction(a: AttentionEvent, causal: bool) -> float:
    """Fraction of the s_q × s_k score matrix a kernel computes."""
    if causal and a.seq_q == a.seq_k and a.seq_q:
        return causal_fraction_diagonal(a.seq_q)
    return 1.0


def reference_factor(a: AttentionEvent, causal: bool, kernel: str, cta_overhead: float | None = None) -> float:
    """What the kernel's shape costs against the long-sequence figure the profile holds
    (costs.attention_shape.shape_factor, with a backward's per-CTA cost ``cta_overhead`` where
    the profile gives one); 1 when the trace does not give the shape."""
    if not (a.seq_q and a.seq_k and a.head_dim):
        return 1.0
    return shape_factor(a.seq_q, a.seq_k, causal and a.seq_q <= a.seq_k, a.head_dim, kernel, cta_overhead)


def fit_attention_efficiency(events: Iterable[AttentionEvent], profile: HardwareProfile, *,
                             causal: bool = True, min_samples: int = 1) -> AttentionFit:
    """Median achieved fraction of peak per (kernel generation, direction); see the module docstring."""
    measured: dict[tuple[str, str], list[float]] = {}
    fit = AttentionFit({})
    unknown: set[str] = set()
    for a in events:
        if a.flops is None or a.duration_s <= 0:
            continue
        kernel = kernel_generation(a.name)
        if kernel is None:
            unknown.add(a.name[:60])
            continue
        dtype = dtype_alias(a.dtype)
        peak = profile.gpu.peak_flops(dtype if dtype in ("bf16", "fp16") else "bf16")
        mask = a.causal if a.causal is not None else causal
        c0 = profile.gpu.attention_cta_overhead(kernel, a.backward)
        frac = a.flops * computed_fraction(a, mask) / (a.duration_s * peak) / reference_factor(a, mask, kernel, c0)
        measured.setdefault((kernel, "bwd" if a.backward else "fwd"), []).append(frac)
    for name in sorted(unknown):
        fit.warnings.append(f"gpu.attention_efficiency: kernel {name!r} is not a FlashAttention-2 or Hopper-class "
                            "fused kernel the profiles price; not fitted")
    known = profile.gpu.attention_efficiency
    for kernel in sorted({k for k, _ in measured}):
        entry: dict[str, float] = {}
        for direction in ("fwd", "bwd"):
            vals = measured.get((kernel, direction), [])
            if len(vals) < min_samples or not vals:
                fit.warnings.append(f"gpu.attention_efficiency.{kernel}.{direction}: no measured {direction} kernel; "
                                    + ("left at the datasheet value" if kernel in known else "not fitted"))
                continue
            value = statistics.median(vals)
            if value > 1.0:
                fit.warnings.append(f"gpu.attention_efficiency.{kernel}.{direction}: the kernels ran at {value:.2f}× the "
                                    f"peak on the FLOPs a {'causal' if causal else 'full'} mask computes, so they did less "
                                    "work than that; check --attention-mask (capped at 1)")
            entry[direction] = round(min(1.0, value), 4)
            fit.samples[(kernel, direction)] = len(vals)
        if kernel not in known and len(entry) < 2:
            fit.warnings.append(f"gpu.attention_efficiency.{kernel}: {profile.name} has no {kernel} entry and the "
                                "trace measures only one direction; not added")
            continue
        if entry:
            fit.overlay[kernel] = entry
    return fit

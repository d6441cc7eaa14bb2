"""How long a compute kernel takes on one GPU: a roofline with calibratable efficiencies.

A kernel is bounded by arithmetic (FLOPs / achieved FLOP/s) or by memory traffic
(HBM bytes / achieved bytes/s), whichever is slower, and the next kernel of its stream starts
a fixed gap after it. Achieved FLOP/s is the dense tensor-core peak for the op's dtype times an
efficiency:

* GEMMs with a shape (``op.gemm``, every GEMM the schedule builds): the profile's plateau (the
  top of its ``gpu.gemm_efficiency`` curve) redistributed by shape (``costs.gemm_shape``: tile
  and wave quantisation on the SM count, the per-tile prologue/epilogue that makes skinny-k
  GEMMs slow, a fixed cost per kernel); the waves are counted on the SMs left to the GEMM when
  communication kernels hold some (``sm_fraction``); a batched GEMM (the score and context GEMMs
  of unfused attention, one per head) is its per-head shape with the batch in the wave count.
  GEMMs built without a shape read the curve itself: points of (flops per kernel, efficiency),
  interpolated linearly in log(flops). fp8 GEMMs use the fp8 peak and the bf16 values scaled
  by ``fp8_gemm_efficiency_scale``. An fp8 GEMM whose operands are block-scaled
  (``op.scaling``: ``"mxfp8"``, or ``"blockwise"``, 1x128 / 128x128) takes
  :data:`BLOCK_SCALED_GEMM_TIME` times as long as the same GEMM with per-tensor scales.
* fused attention: the profile's ``gpu.attention_efficiency[kernel].fwd`` or ``.bwd`` for the
  op's kernel generation (``attention_kernel``: flash2, flash3; empty = the GPU's default).
  Kept apart from the GEMM curve on purpose: the same GPU runs FlashAttention-2 at ~35% of H100
  peak and FlashAttention-3 / cuDNN at ~60-75% (arXiv:2407.08608 abstract), so folding attention
  into a GEMM derate makes the derate stack-specific. The op's ``flops`` already count only the
  computed part of the score matrix (causal masking, or the band of a sliding window). That figure is a long kernel's; an op with
  an ``attention_shape`` reaches it times ``costs.attention_shape.shape_factor`` (the per-CTA
  fixed cost, whole causal tiles on the diagonal, the two partial tiles at each end of a sliding
  window's band (``attention_window``), the softmax's share at its head dimension).
  A FlashAttention-2 backward that runs its deterministic algorithm (``deterministic_heads``) is
  stretched by its smaller grid and pays its split dQ buffers (``costs.attention_determinism``);
  cuDNN's deterministic backward on Blackwell takes its measured ratio to the default one.
  A kernel that applies the attention dropout itself (``attention_dropout``) adds its Philox
  draws, a time per computed score element and pass (``costs.attention_dropout``).
* scan (the Mamba2 SSD chunked-scan kernels, :mod:`simulator.schedule.mamba`): their
  tensor-core FLOPs at :data:`SSD_SCAN_EFFICIENCY` of the bf16 peak, or their ``hbm_bytes`` at
  ``hbm_Bps × hbm_efficiency``, whichever is slower.
* everything else (elementwise, norm, copy, optimizer, embedding, loss) is memory-bound:
  ``hbm_bytes`` over the bandwidth its kernel class reaches plus a ramp per kernel
  (``costs.memory_bound``: streaming kernels at 0.90 of ``hbm_Bps × hbm_efficiency``, PyTorch's
  native norm kernels, ``impl: eager``, at 0.64, both measured on published kernel timings);
  attention is always in bf16/fp16 even in fp8 runs. A GEMM or attention kernel that is
  memory-bound (a skinny GEMM's weight read) streams at ``hbm_Bps × hbm_efficiency``.
* PyTorch's deterministic fill (``fill_bytes`` in ``fill_kernels`` kernels,
  ``schedule/deterministic_fill.py``): a streaming write of those bytes before the op, each fill
  kernel with its gap.
* host: no kernel, the issuing CPU thread's work the GPU waits for (DeepSpeed ZeRO-3 of 2021
  loops over the ranks in Python and PyTorch launches one copy per rank): ``count`` steps of
  ``host_us`` (the host's ``kernel_launch_us`` when 0), never slowed by concurrent communication.

Each of the ``count`` kernels then pays ``kernel_gap_us`` on top: the GPU's gap between
back-to-back kernels of a stream the host keeps fed (measured on H200,
``config.hardware.KERNEL_GAP_US``), less ``CUDA_GRAPH_GAP_SAVING_US`` for a kernel replayed from
a CUDA graph (``op.cuda_graph``, measured the same way). Where the host falls behind, its issue queue (``costs.host``)
sets the pace instead. ``sm_fraction`` < 1 scales arithmetic throughput (communication kernels hold SMs, as in TransformerEngine's pipelined
overlap); ``overlapped`` stretches the kernel by ``1 + overlap_slowdown`` for SM and HBM
contention with a concurrent collective over its whole length. The replay charges that rate
only while communication runs beside the kernel (``replay/engine.py``, ``_retime``): a kernel of
c seconds overlapped for o seconds takes ``c + o s/(1+s)``.
"""

from __future__ import annotations

import math
from typing import Sequence

from simulator.config.hardware import CUDA_GRAPH_GAP_SAVING_US, GPU
from simulator.costs import attention_determinism, attention_dropout
from simulator.costs.attention_shape import shape_factor
from simulator.costs.gemm_shape import shape_efficiency
from simulator.costs.memory_bound import kernel_class, memory_time
from simulator.schedule import fp8
from simulator.schedule.attention import FLASH_BWD_FACTOR
from simulator.schedule.ir import ComputeOp, Op

# Fraction of the bf16 dense peak the Mamba2 SSD scan kernels reach: TileLang's published
# benchmark of the chunk-scan forward kernel (tile-ai/tilelang benchmark/mamba2/README.md @be9c08f6:
# 8 x 16,384 tokens, 80 heads of 64, state 128, chunk 256) measures 135.7 TFLOP/s on an H800 SXM,
# whose bf16 dense peak is the H100 SXM's 989 TFLOP/s: 0.137. That is the largest of the scan's
# kernels and an autotuned one (the same page compares it with mamba_ssm's Triton kernels), so it
# bounds the others from above; at state 128 the kernels are memory-bound on their fp32 chunk states
# (schedule/mamba.py ssd_bytes) and the bound rarely binds.
SSD_SCAN_EFFICIENCY = 135.7 / 989.0


def _hopper_cast_bytes(recipe: str) -> float:
    """HBM bytes per element of a BF16 operand's quantisation on Hopper as ``schedule/fp8.py``
    prices it (the cast and what the recipe adds: 4.0625 for ``blockwise``, 6 for ``current``)."""
    return fp8.cast_bytes_per_element("cast", recipe, 2, "hopper", 1) + fp8.extra_bytes_per_element(recipe, 2)


# Time of an MXFP8 GEMM (1x32 blocks, E8M0 scales) over the same GEMM in per-tensor FP8 on
# Blackwell, the kernel's own cost with its operands quantised beforehand: TransformerEngine's
# GEMM profiling guide (docs/examples/gemm_profiling/gemm_profiling.rst, added in NVIDIA/
# TransformerEngine@1609c890e, 2026-06-01; benchmarks/gemm/benchmark_gemm.py --pre-quantize, CUDA
# events, 100 iterations) times the twelve GEMMs of a layer of hidden 4,096, FFN 16,384 at
# M = 15,872 tokens on a B300 SXM: 7.161 ms per layer in MXFP8 against 6.812 ms in FP8 current
# scaling (fprop 2.365 / 2.158, dgrad 2.397 / 2.329, wgrad 2.400 / 2.325). What the ratio holds:
# cuBLASLt's block-scaled kernel (the scale factors read beside each k-tile of both operands) and,
# since the benchmark's pre-quantised tensors keep TE's compact scale layout (MXFP8Quantizer's
# optimize_for_gemm defaults to False), the two scale-swizzling kernels TE's generic_gemm runs
# before each MXFP8 GEMM (pytorch/csrc/extensions/swizzle.cpp, swizzle_scales_for_gemm), as it
# does in training before TE 2.12 (Linear then asks its quantisers for GEMM-ready scales). One
# published measurement, on a B300 (Blackwell Ultra) and not a B200: both run MXFP8 through the
# same block-scaled tcgen05 MMA; its shapes are within 13% of Llama 3 8B's (M 16,384, FFN
# 14,336). Not fitted to any end-to-end row.
#
# The same guide times TransformerEngine's FP8 with 1x128 / 128x128 block scales
# (``Float8BlockScaling``, ``blockwise``) on Hopper, an H200 NVL, over the same model's layer
# (hidden 4,096, FFN 16,384, M = 15,872): 22.882 ms per layer's GEMMs against 20.285 in FP8 current
# scaling and 32.014 in BF16, each call in autocast, that is with its input and weight quantised in
# the timed call; current scaling's GEMMs alone take 16.785 ms (pre-quantised; the block recipe has
# no pre-quantised Hopper path, cuBLAS taking only 1D-by-2D block scales). So current scaling's casts
# cost 3.500 ms, and the block recipe's casts, priced as this model prices them (``schedule/fp8.py``:
# one read of the BF16 tensor, the row- and column-wise FP8 copies and their scales, 4.06 bytes an
# element, against current scaling's amax read, read, FP8 copy and FP8 transpose, 6), 0.677 of that:
# its GEMMs take (22.882 - 0.677 x 3.500) / 16.785 = 1.222 times current scaling's. Hopper's FP8
# tensor cores take no block scales: the kernel applies them to its FP32 partial sums every 128 of
# the reduction, on the CUDA cores. FBGEMM's CUTLASS kernels on an H100 at 500 W put block-scaled
# GEMMs at 1.29-1.38 times their row-wise scaled ones (8192^3, 65536 x 8192 x 7168, 65536 x 3584 x
# 8192; pytorch/FBGEMM pull request #2546, kernels alone): slower than per-tensor scaling, as here,
# and by more. On Blackwell the recipe runs as MXFP8 (the guide), so it takes MXFP8's ratio there
# (:func:`block_scaled_time`). Not fitted to any end-to-end row; Megatron-LM's MoE layer benchmark on
# H100 (``calibration/moe_layer.py``) is held out from it.
BLOCK_SCALED_GEMM_TIME: dict[str, float] = {
    "mxfp8": 7.161 / 6.812,
    "blockwise": (22.882 - _hopper_cast_bytes("blockwise") / _hopper_cast_bytes("current") * (20.285 - 16.785))
    / 16.785}


def block_scaled_time(scaling: str, arch: str) -> float:
    """Time of a GEMM whose operands carry ``scaling``'s block scales over the same GEMM with one
    scale per tensor (1 for ``""``): :data:`BLOCK_SCALED_GEMM_TIME`, the block recipe as MXFP8 on
    Blackwell."""
    if scaling == "blockwise" and arch == "blackwell":
        scaling = "mxfp8"
    return BLOCK_SCALED_GEMM_TIME.get(scaling, 1.0)

MEMORY_BOUND_KINDS = frozenset({"elementwise", "norm", "copy", "optimizer", "embedding", "loss"})


def gemm_efficiency(gpu: GPU, flops_per_kernel: float, dtype: str = "bf16") -> float:
    """Fraction of peak a GEMM of this many FLOPs reaches: log-linear interpolation of the
    profile's curve, clamped to its end points; fp8 scales the curve (capped at 1)."""
    pts = gpu.gemm_efficiency
    if flops_per_kernel <= pts[0].flops:
        eff = pts[0].efficiency
    elif flops_per_kernel >= pts[-1].flops:
        eff = pts[-1].efficiency
    else:
        eff = pts[-1].efficiency
        x = math.log(flops_per_kernel)
        for a, b in zip(pts, pts[1:]):
            if flops_per_kernel <= b.flops:
                t = (x - math.log(a.flops)) / (math.log(b.flops) - math.log(a.flops))
                eff = a.efficiency + t * (b.efficiency - a.efficiency)
                break
    if dtype == "fp8":
        eff = min(1.0, eff * gpu.fp8_gemm_efficiency_scale)
    return eff


def gemm_op_efficiency(op: ComputeOp, gpu: GPU) -> float:
    """Fraction of peak one kernel of the GEMM ``op`` reaches, SM sharing included when the op
    has a shape (module docstring)."""
    count = max(op.count, 1)
    per_kernel = op.flops / count
    if op.gemm is None:
        return gemm_efficiency(gpu, per_kernel, op.dtype)
    m, n, k = op.gemm
    batch = max(1, round(per_kernel / (2.0 * m * n * k))) if m * n * k > 0 else 1
    plateau = gemm_efficiency(gpu, gpu.gemm_efficiency[-1].flops, op.dtype)
    # chunks running at once on other streams share the waves (ComputeOp.concurrent)
    peak = gpu.peak_flops(op.dtype)
    # a tile's prologue and epilogue take the bf16 kernel's time: more k-steps of a faster dtype
    step_ratio = peak / gpu.peak_flops("bf16") if gpu.bf16_TFLOPS else 1.0
    return shape_efficiency(m, n, k, batch * max(op.concurrent, 1), gpu.sms, peak, plateau,
                            op.sm_fraction, step_ratio)


def _sm_share(op: ComputeOp) -> float:
    """The arithmetic-rate factor for SMs held by communication kernels: a shaped GEMM has it in
    its wave count already (:func:`gemm_op_efficiency`)."""
    if op.kind == "gemm" and op.gemm is not None:
        return 1.0
    return max(op.sm_fraction, 1e-6)


def _is_backward(op: ComputeOp) -> bool:
    if op.tag.phase == "bwd":
        return True
    if op.tag.phase == "fwd":
        return False
    name = op.name.lower()
    return "bwd" in name or "backward" in name


def achieved_flops(op: ComputeOp, gpu: GPU) -> float:
    """Achieved arithmetic throughput (FLOP/s) of one kernel of ``op``, before SM sharing
    (except for a shaped GEMM, whose waves are counted on the SMs it gets)."""
    if op.kind == "gemm":
        return gpu.peak_flops(op.dtype) * gemm_op_efficiency(op, gpu) / block_scaled_time(op.scaling, gpu.arch)
    if op.kind == "attention":
        dtype = "bf16" if op.dtype == "fp8" else op.dtype
        backward = _is_backward(op)
        eff = gpu.attention_fraction(op.attention_kernel, backward)
        if op.attention_shape is not None:
            s_q, s_k, head_dim, causal = op.attention_shape
            kernel = op.attention_kernel or gpu.default_kernel
            c0 = gpu.attention_cta_overhead(kernel, backward)
            eff *= shape_factor(s_q, s_k, causal, head_dim, kernel, c0, op.attention_window)
        return gpu.peak_flops(dtype) * min(eff, 1.0)
    if op.kind == "scan":
        return gpu.peak_flops("bf16") * SSD_SCAN_EFFICIENCY
    # Memory-bound kinds that still carry FLOPs (optimizer math, loss) run on CUDA cores; a
    # fp32 non-tensor rate is a generous upper bound that only matters if hbm_bytes is missing.
    return gpu.fp32_TFLOPS * 1e12


def compute_time(op: ComputeOp, gpu: GPU, overlapped: bool = False, host_time_scale: float = 1.0) -> float:
    """Seconds ``op`` (all ``op.count`` kernels) takes on ``gpu``:
    max(arithmetic bound, memory bound) + count × kernel gap, × (1 + overlap_slowdown) when
    a collective runs beside it. A host op (kind "host") is CPU time, × ``host_time_scale``
    (the node's ``host_time_scale``: its host against the one the figure was timed on), but for
    a copy from host memory (``impl`` "dma"), a transfer at its link's rate."""
    count = max(op.count, 1)
    if op.kind == "host":  # the CPU's issue work: no kernel, so no SM or HBM contention either
        scale = 1.0 if op.impl == "dma" else host_time_scale  # a host-memory copy runs at its link's rate
        return scale * count * (op.host_us or gpu.kernel_launch_us) * 1e-6
    t_flops = 0.0
    if op.flops > 0:
        t_flops = op.flops / (achieved_flops(op, gpu) * _sm_share(op))
    if op.kind in MEMORY_BOUND_KINDS:
        t_mem = memory_time(op.hbm_bytes, count, kernel_class(op.kind, op.impl), gpu)
    else:
        t_mem = op.hbm_bytes / (gpu.hbm_Bps * gpu.hbm_efficiency) if op.hbm_bytes > 0 else 0.0
    if op.kind == "attention" and op.attention_dropout:
        t_flops += _dropout_rng(op, gpu)
    if op.kind == "attention" and op.deterministic_heads > 0:
        t_flops, t_mem = _deterministic_backward(op, gpu, t_flops, t_mem)
    gap = max(gpu.kernel_gap_us - CUDA_GRAPH_GAP_SAVING_US, 0.0) if op.cuda_graph else gpu.kernel_gap_us
    t = max(t_flops, t_mem) + count * gap * 1e-6
    if op.fill_kernels:  # PyTorch's NaN fill of the outputs, kernels of their own before the op's
        t += memory_time(op.fill_bytes, op.fill_kernels, "stream", gpu) + op.fill_kernels * gap * 1e-6
    if overlapped:
        t *= 1.0 + gpu.overlap_slowdown
    return t


def _dropout_rng(op: ComputeOp, gpu: GPU) -> float:
    """Arithmetic time the in-kernel attention dropout adds (``costs.attention_dropout``): one
    Philox draw per computed score element, ``flops / (4 d)`` of them forward and
    ``flops / (2.5 x 4 d)`` backward, on the SMs the kernel has."""
    if op.attention_shape is None:
        return 0.0
    head_dim = op.attention_shape[2]
    per_element = 4.0 * head_dim * (FLASH_BWD_FACTOR if _is_backward(op) else 1.0)
    kernel = op.attention_kernel or gpu.default_kernel
    return attention_dropout.rng_seconds(op.flops / per_element, kernel, gpu) / _sm_share(op)


def _deterministic_backward(op: ComputeOp, gpu: GPU, t_flops: float, t_mem: float) -> tuple[float, float]:
    """(arithmetic, memory) time of an attention backward that runs its deterministic algorithm
    (``costs.attention_determinism``): FlashAttention-2's smaller grid stretches the arithmetic
    time, its split dQ buffers add HBM traffic after the kernel; cuDNN's on Blackwell takes its
    measured ratio to the default one; other kernels (cuDNN's on Hopper) keep their cost."""
    kernel = op.attention_kernel or gpu.default_kernel
    if op.attention_shape is None or not _is_backward(op):
        return t_flops, t_mem
    s_q, s_k, head_dim, causal = op.attention_shape
    if kernel == "flash3" and gpu.arch == "blackwell":  # cuDNN's own deterministic algorithm, measured
        return t_flops * attention_determinism.cudnn_blackwell_slowdown(head_dim, causal, op.dtype), t_mem
    if kernel not in attention_determinism.PRICED_KERNELS:
        return t_flops, t_mem
    bh = op.deterministic_heads
    slow = attention_determinism.grid_slowdown(bh, s_q, s_k, causal, head_dim, gpu.sms, op.attention_window)
    extra = max(op.count, 1) * attention_determinism.dq_accum_extra_bytes(bh, s_q, head_dim, gpu.sms)
    return t_flops * slow + extra / (gpu.hbm_Bps * gpu.hbm_efficiency), t_mem


def shape_key(op: ComputeOp) -> tuple:
    """Everything compute_time depends on (two kernels with the same key take the same time)."""
    return (op.kind, op.flops, op.hbm_bytes, op.count, op.dtype, op.sm_fraction,
            op.kind == "attention" and _is_backward(op), op.attention_kernel, op.attention_shape, op.attention_window, op.host_us, op.gemm, op.concurrent, op.impl,
            op.deterministic_heads, op.scaling, op.attention_dropout, bool(op.cuda_graph), op.fill_bytes, op.fill_kernels)


def compute_times(program: Sequence[Op], gpu: GPU, host_time_scale: float = 1.0) -> list[float | None]:
    """compute_time of every ComputeOp of a program (None for other ops), evaluating each
    distinct kernel shape once: a step repeats the same few dozen kernels thousands of times."""
    memo: dict[tuple, float] = {}
    out: list[float | None] = []
    for op in program:
        if not isinstance(op, ComputeOp):
            out.append(None)
            continue
        key = shape_key(op)
        t = memo.get(key)
        if t is None:
            t = memo[key] = compute_time(op, gpu, host_time_scale=host_time_scale)
        out.append(t)
    return out

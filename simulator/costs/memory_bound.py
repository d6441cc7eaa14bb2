"""How long a memory-bound kernel takes: the bytes it moves over the bandwidth its kind of kernel
achieves, plus a ramp that no size hides.

A norm, an activation, a residual add, a cross-entropy pass or an optimizer's multi-tensor
launch streams its operands from HBM and back. Two things keep it from the datasheet bandwidth:

* **a fixed cost per kernel**: the grid's first loads wait a full memory latency before any
  bandwidth is used, and the last wave drains with most SMs idle. On top of the gap between
  back-to-back kernels (``gpu.kernel_gap_us``) a kernel pays :data:`RAMP_US`;
* **the kernel's design**: a kernel that reads and writes each element once (PyTorch's
  vectorised elementwise kernels, Triton and TransformerEngine norms, softmax and cross-entropy
  passes) reaches :data:`EFFICIENCY` ``["stream"]`` of the GPU's achievable streaming bandwidth
  (``gpu.hbm_Bps × gpu.hbm_efficiency``). PyTorch's own LayerNorm/RMSNorm kernels
  (``torch.nn.LayerNorm``, ``torch.nn.RMSNorm``: one block per row, a Welford pass, fp32
  statistics) reach only :data:`EFFICIENCY` ``["norm_eager"]`` of it, forward and backward.

So a kernel of ``nbytes`` in class ``c`` takes

    t = RAMP_US + nbytes / (EFFICIENCY[c] × hbm_Bps × hbm_efficiency)

(plus the gap, which :mod:`simulator.costs.compute` adds to every kernel). The bytes are
the ones the implementation moves, counted by the schedule pass by pass (a three-pass softmax
reads its row three times): the efficiency is a property of the kernel design, not a bucket for
missing traffic.

The three constants are fitted by :mod:`simulator.calibration.kernel_bandwidth` on Liger-Kernel's
published kernel timings (``data/kernels/liger_kernel_benchmarks.csv``: PyTorch's and Triton's
LayerNorm, RMSNorm, ReLU², SwiGLU, RoPE and cross-entropy kernels on A100-SXM4-80GB and
H100-80GB-HBM3, 2-40,000 MB per call; 107 rows) and scored leave-one-GPU-out: fitted on the H100
rows, the A100 rows are predicted with a median |error| of 8.2%; fitted on the A100 rows, the
H100 rows with 11.6% (``tests/unit/test_memory_bound.py`` checks both). The ramp is the least
determined constant (0.1 µs fitted on H100 alone, 5.4 µs on A100 alone, whose small kernels
were timed slower), and it only matters for kernels of a few MB: over the launch floor the data
leave little fixed cost to explain. Those timings are of one call each, which waits for the
host's launch (``gpu.kernel_launch_us``), so the fit takes that floor; in a step the host runs
ahead and a kernel follows the one before it after ``gpu.kernel_gap_us``.
"""

from __future__ import annotations

from typing import Literal

from simulator.config.hardware import GPU

KernelClass = Literal["stream", "norm_eager"]

# Fitted on the 107 selected rows of data/kernels/liger_kernel_benchmarks.csv
# (python -m simulator.calibration.kernel_bandwidth prints the fit and its leave-one-GPU-out scores).
RAMP_US = 0.6
EFFICIENCY: dict[str, float] = {"stream": 0.90, "norm_eager": 0.64}


def kernel_class(kind: str, impl: str) -> KernelClass:
    """The efficiency class of a memory-bound kernel: PyTorch's native norm kernels, or a
    streaming kernel (everything else)."""
    return "norm_eager" if kind == "norm" and impl == "eager" else "stream"


def achieved_Bps(gpu: GPU, klass: KernelClass) -> float:
    """Bytes/s a large kernel of this class reaches on ``gpu``."""
    return EFFICIENCY[klass] * gpu.hbm_Bps * gpu.hbm_efficiency


def memory_time(nbytes: float, kernels: int, klass: KernelClass, gpu: GPU) -> float:
    """Seconds ``kernels`` kernels of class ``klass`` moving ``nbytes`` together take, launch
    floor excluded: the ramp of each plus the traffic at the class's bandwidth."""
    return max(kernels, 1) * RAMP_US * 1e-6 + nbytes / achieved_Bps(gpu, klass)

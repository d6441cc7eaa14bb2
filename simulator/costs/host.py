"""The host side of a step: the CPU time the framework spends issuing each op, and the queue
that makes the GPU wait when the host falls behind.

A PyTorch training step is issued by one CPU thread per rank. Every kernel costs that thread
some time before the GPU sees it: Python (the module's ``forward``, the framework's code around
the op), PyTorch's dispatcher (autocast, autograd recording, the ATen op) and the driver's
``cudaLaunchKernel``. Backward kernels are issued by the autograd engine's C++ thread, so they
pay the dispatcher and the launch but little Python. Kernels are asynchronous: the host runs
ahead of the GPU while kernels take longer than it needs to issue them, and the GPU idles when
they are shorter. Op ``i`` therefore cannot start before the host has issued it,

    issue[i] = issue[i-1] + host_cost[i],        start[i] >= issue[i],

the recursion of a producer (host) and a consumer (GPU stream) joined by a queue. Over a run of
short kernels the step takes the host's time; over long GEMMs the host's time hides entirely:
per stretch of the program, max(GPU time, host time), not their sum. The step starts with the
host and the GPU in step (a loss read with ``.item()``, a logging sync, ends every step).

Costs per kernel, in microseconds (``benchmarks/bench_host_overhead.py`` measures the
CPU-side parts on the machine it runs on, with a CPU-only PyTorch):

* ``DISPATCH_US`` = 3: one ATen op through PyTorch's dispatcher with autograd recording
  (forward) or one autograd-engine node (backward). Measured by the benchmark: a chain of
  ``torch.mul`` on tiny tensors costs 2.8 us per op forward and 2.7 us per kernel of its
  backward (torch 2.x).
* ``LAUNCH_US`` = 3: ``cudaLaunchKernel`` and the caching allocator's bookkeeping on the host.
  NVIDIA's "Getting Started with CUDA Graphs" (developer.nvidia.com/blog/cuda-graphs, 2019)
  times back-to-back launches of a 2.9 us kernel at 3.8 us each without graphs: the host
  issues a launch in under 3.8 us, and a launch is the part graphs remove (3.4 us each with a
  graph); 3 us is within that bound.
* ``PYTHON_US`` = 5: the Python around each forward kernel (``nn.Module.__call__`` and its
  hooks, the framework's views, splits and checks). The benchmark times an ``nn.Linear`` call
  against the bare ``F.linear`` it wraps.

So a forward kernel costs ``FWD_KERNEL_US`` = 11 us of host time, a backward kernel
``BWD_KERNEL_US`` = 6 us, and an optimizer kernel (a ``foreach`` or fused multi-tensor launch
from Python) ``OPT_KERNEL_US`` = 11 us. A collective or a batch of sends/receives from
``torch.distributed`` costs ``COLLECTIVE_US`` = 15 us: the dispatcher, ProcessGroupNCCL's work
object and the CUDA events that order its stream after the compute stream (two event
records and a stream wait, each a driver call of the launch's order), and the NCCL kernel's
launch. Activation recompute re-runs the forward's Python inside the backward, so recomputed
kernels pay the forward's cost.

An op whose issue a host op of the program already times (``ComputeOp.host_issue`` false: a
timed Python loop, and the kernels launched inside it, as DeepSpeed ZeRO-3 of 2021's per-rank
views and copies) costs nothing here: the host op's duration is that time.

None of these constants is fitted to training runs.
"""

from __future__ import annotations

from typing import Sequence

from simulator.schedule.ir import CommOp, ComputeOp, Op, P2POp

DISPATCH_US = 3.0
LAUNCH_US = 3.0
PYTHON_US = 5.0
FWD_KERNEL_US = DISPATCH_US + LAUNCH_US + PYTHON_US
BWD_KERNEL_US = DISPATCH_US + LAUNCH_US
OPT_KERNEL_US = DISPATCH_US + LAUNCH_US + PYTHON_US
COLLECTIVE_US = 15.0


def host_cost_s(op: Op) -> float:
    """Seconds of host time to issue ``op`` (every one of its ``count`` kernels)."""
    if isinstance(op, ComputeOp):
        if not op.host_issue:  # its issue is timed by a host op of the program (ComputeOp.host_issue)
            return 0.0
        if op.tag.phase == "opt":
            per = OPT_KERNEL_US
        elif op.tag.phase == "bwd" and not op.name.endswith(".recompute"):
            per = BWD_KERNEL_US
        else:
            per = FWD_KERNEL_US
        return max(op.count, 1) * per * 1e-6
    if isinstance(op, (CommOp, P2POp)):
        return COLLECTIVE_US * 1e-6
    return 0.0


def issue_times(program: Sequence[Op], start: float = 0.0) -> list[float]:
    """When the host has issued each op of ``program`` (seconds from the step's start): the
    running sum of host costs in program order, which is the order the host issues them.
    ``start``: the sum before the first op (the issue time of the op before it, for a program
    continued from another's first ops: the same sums, added in the same order)."""
    out: list[float] = []
    t = start
    for op in program:
        t += host_cost_s(op)
        out.append(t)
    return out

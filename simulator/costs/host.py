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

Costs per kernel the model lists, in microseconds. A framework's layer runs more host work than
its kernels: views, transposes and splits, ``nn.Module`` calls and hooks, autograd's nodes for
each of them, the parameters' ``AccumulateGrad`` nodes, checks in Python. The model lists
kernels, so the host cost of a kernel is the host time of real layer code divided by the kernels
the model lists for that layer, measured on CPU tensors (where the kernels cost next to nothing)
plus what CUDA adds per launch:

* ``LAYER_FWD_CPU_US`` = 33, ``LAYER_BWD_CPU_US`` = 23: CPU time of one layer's forward and
  backward over the model's kernels of that layer, the mean of two stacks measured with tiny
  CPU tensors on this repository's machine (torch 2.13, one thread, the fastest repeat of each
  run): Megatron-DeepSpeed's GPT layer op by op (``benchmarks/bench_layer_host.py``: 390 us
  forward, 461 us backward per layer against the model's 12 and 18 kernels, 32.5 and 25.6 us
  each) and the plain ``torch.nn`` GPT-2 model of ``benchmarks/measure_gpt_step.py`` in bf16
  (``benchmarks/bench_gpt_block_host.py``, embedding, head and loss included: 32.9 and 20.0 us
  per model kernel, the median of five runs, 31.6-34.6 and 18.6-21.1). A kernel of the model
  stands for two to three host ops of the code.
* ``CUDA_LAUNCH_US`` = 5.0 and ``CUDA_BWD_NODE_US`` = 6.9: what CUDA tensors add, forward per
  launch and backward per autograd node (the engine hands CUDA work to its device thread),
  read off ``data/kernels/h200_host_overhead.csv``, the one lease with both columns: a
  ``torch.mul`` without autograd 6.28 us on CUDA against 1.26 on CPU tensors, a backward node
  10.64 against 3.79.

Autocast's casts (``training.autocast``, ops of ``impl`` "autocast") are issued inside the linear
they feed, not from Python: ``AUTOCAST_FWD_CPU_US`` = 6.5 and ``AUTOCAST_BWD_CPU_US`` = 5.6 per
cast, what the same GPT-2 model costs more under autocast than in bf16, per cast the model lists
(``bench_gpt_block_host.py``, 122 forward and 146 backward casts: the median of five runs,
3.6-10.4 and 3.3-11.3 us), plus CUDA's launch and node costs.

So a forward kernel costs ``FWD_KERNEL_US`` = 38 us of host time and a backward kernel
``BWD_KERNEL_US`` = 29.9 us. An optimizer launch from Python (a ``foreach`` or fused
multi-tensor kernel, no autograd) costs ``OPT_KERNEL_US`` = 7.85 us (the same lease's CUDA
``torch.mul`` without autograd, 6.28 us, and an ``nn.Module``-level Python call, 1.57), and the
step's Python loop over the parameter tensors (``torch.optim``'s ``_init_group`` and apex's
``FusedAdam.step`` visit each tensor to build the lists they launch on) ``OPT_TENSOR_US`` = 3.7
us per tensor (``benchmarks/bench_host_overhead.py``: ``AdamW(fused=True).step()`` over 148 and
600 tiny tensors, 3.8 and 3.7 us each). A collective or a batch of sends/receives from
``torch.distributed`` costs ``COLLECTIVE_US`` = 15 us: the dispatcher, ProcessGroupNCCL's work
object and the CUDA events that order its stream after the compute stream (two event records and
a stream wait, each a driver call of the launch's order), and the NCCL kernel's launch.
Activation recompute re-runs the forward's Python inside the backward, so recomputed kernels pay
the forward's cost.

The host in these figures is a 2-core cloud VM's and an H200 VM's, Sapphire/Emerald Rapids
Xeons; a DGX H100's Xeon 8480C issues a ``torch.nn.Linear`` forward in the same time (13.48 us,
TransformerEngine issue #2053; 13.33 us on the H200 lease), so it is the reference. Other hosts
are not: every host cost of a step is × the node's ``host_time_scale`` (the profile's
``node.host_time_scale``; the issue costs here, and the host ops whose duration is CPU work).
A DGX A100's EPYC 7742 takes 1.47 times the DGX H100's time, the median ratio of the two nodes'
steps over the 17 cases of Megatron-LM's CI that run on both and whose steps the host sets
(``calibration/host_speed.py``), which profiles based on dgx-a100 inherit; GB200's Grace 1.33, the
same ratio over the same cases run on two GB200 trays, and GH200's 1.19 (GB200's times the GH200 /
GB200 ``torch.nn.Linear`` of the issue above). What a step's
host time comes to against measured steps is in ``docs/validation-e2e.md`` (this project's
GPT-2 steps on one H200, Megatron-LM's functional tests, vTrain's small GPT on one A100 node),
scored, not fitted.

An op whose issue a host op of the program already times (``ComputeOp.host_issue`` false: a
timed Python loop, and the kernels launched inside it, as DeepSpeed ZeRO-3 of 2021's per-rank
views and copies) costs nothing here: the host op's duration is that time.

Where one call from Python issues several kernels from a C++ loop (``ComputeOp.host_calls``:
TransformerEngine's ``general_grouped_gemm`` runs the local experts' GEMMs in
``te_general_grouped_gemm``, ``tex.split_quantize`` quantises every expert's rows in one call,
and a current-scaling quantizer launches its amax, scale and cast kernels from
``Float8CurrentScalingQuantizer::quantize``), the call costs what one kernel of the model does
and each further kernel ``CUDA_LAUNCH_US``, the launch without the Python and the dispatcher.

A CUDA graph replay (``ComputeOp.cuda_graph``, ``schedule/cuda_graphs.py``) is one call to the
host whatever it holds: TransformerEngine's graphed callable (``make_graphed_callables``) is one
autograd function whose forward replays the captured forward graph and whose backward node
replays the backward graph, so its first op costs what one kernel of the model does (the Python
call and one launch forward, ``FWD_KERNEL_US``; one autograd node and one launch backward,
``BWD_KERNEL_US``) and the ops captured with it cost nothing.

None of these constants is fitted to training runs: the DGX A100's and GB200's ``host_time_scale``
are ratios of two nodes' measured steps of the same cases, no simulated step in them.
"""

from __future__ import annotations

from typing import Sequence

from simulator.schedule.ir import CommOp, ComputeOp, Op, P2POp

LAYER_FWD_CPU_US = 33.0
LAYER_BWD_CPU_US = 23.0
CUDA_LAUNCH_US = 5.0
CUDA_BWD_NODE_US = 6.9
FWD_KERNEL_US = LAYER_FWD_CPU_US + CUDA_LAUNCH_US
BWD_KERNEL_US = LAYER_BWD_CPU_US + CUDA_BWD_NODE_US
AUTOCAST_FWD_CPU_US = 6.5
AUTOCAST_BWD_CPU_US = 5.6
OPT_KERNEL_US = 7.85
OPT_TENSOR_US = 3.7
COLLECTIVE_US = 15.0


def host_cost_s(op: Op) -> float:
    """Seconds of host time to issue ``op`` (every one of its ``count`` kernels)."""
    if isinstance(op, (ComputeOp, CommOp)) and op.cuda_graph:
        if op.cuda_graph == "captured":
            return 0.0
        return (BWD_KERNEL_US if op.tag.phase == "bwd" else FWD_KERNEL_US) * 1e-6  # the graph's launch
    if isinstance(op, ComputeOp):
        if not op.host_issue:  # its issue is timed by a host op of the program (ComputeOp.host_issue)
            return 0.0
        backward = op.tag.phase == "bwd" and not op.name.endswith(".recompute")
        if op.tag.phase == "opt":
            per = OPT_KERNEL_US
        elif op.impl == "autocast":
            per = AUTOCAST_BWD_CPU_US + CUDA_BWD_NODE_US if backward else AUTOCAST_FWD_CPU_US + CUDA_LAUNCH_US
        else:
            per = BWD_KERNEL_US if backward else FWD_KERNEL_US
        count = max(op.count, 1)
        calls = min(op.host_calls, count) if op.host_calls else count
        launches = count - calls + op.fill_kernels  # PyTorch's fills are launched inside the empty factories
        return (calls * per + launches * CUDA_LAUNCH_US + op.host_tensors * OPT_TENSOR_US) * 1e-6
    if isinstance(op, (CommOp, P2POp)):
        return COLLECTIVE_US * 1e-6
    return 0.0


def issue_times(program: Sequence[Op], start: float = 0.0, scale: float = 1.0) -> list[float]:
    """When the host has issued each op of ``program`` (seconds from the step's start): the
    running sum of host costs in program order, which is the order the host issues them.
    ``start``: the sum before the first op (the issue time of the op before it, for a program
    continued from another's first ops: the same sums, added in the same order). ``scale``: the
    node's ``host_time_scale`` (each cost × it, as :meth:`CostModel.host_costs` gives them)."""
    out: list[float] = []
    t = start
    for op in program:
        t += scale * host_cost_s(op)
        out.append(t)
    return out


def issued_at(program: Sequence[Op], end: Sequence[float]) -> list[float]:
    """When the host issued each op of a replayed ``program`` whose ops ended at ``end``: the
    running sum of :func:`issue_times`, restarted after every host synchronisation (an op with
    ``host_sync``: the host waits for it to end, then pays the host costs of the ops after it), as
    the replay gates them (``replay/engine.py``, ``_issued``)."""
    issue = issue_times(program)
    out: list[float] = []
    synced = -1  # the last op before the current one after which the host waited
    for i, op in enumerate(program):
        out.append(issue[i] if synced < 0 else float(end[synced]) + issue[i] - issue[synced])
        if getattr(op, "host_sync", False):
            synced = i
    return out

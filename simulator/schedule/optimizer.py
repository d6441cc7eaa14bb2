"""The end of a step: gradient clipping and the Adam step over a rank's parameters, as kernels.

What a rank runs after its gradients are reduced, per ``training.optimizer`` (the Adam/AdamW
implementation) and ``training.grad_clip``:

* **Gradient clipping** (``grad_clip``, on by default: Megatron's ``--clip-grad 1.0``,
  DeepSpeed's ``gradient_clipping``, llm-foundry's and torchtitan's ``max_norm: 1.0``): the L2
  norm of every local gradient (one read of the main gradients, fp32: 4 bytes per parameter),
  a one-element fp32 AllReduce of the squared norm over the ranks that hold different
  gradients (the caller's ``norm_axes``: the shard group when gradients are sharded, as FSDP2's
  ``total_norm.full_tensor()`` and Megatron's ``clip_grad_norm_fp32`` over its
  grad-stats group do), then the gradients scaled in place (read and write, 8 bytes
  per parameter; PyTorch's ``clip_grad_norm_`` always multiplies by the clamped coefficient).
* **Adam**: ``fused`` (apex / TransformerEngine ``FusedAdam``, Megatron-Core's and DeepSpeed's
  default) is one multi-tensor pass over (grad, param, m, v): reads 4 fp32 tensors and writes 3
  (28 bytes) and writes the bf16 model weight (2 bytes; 30, counted 32 with the copy's own
  read of the master weight amortised), then a multi-tensor copy of the master weights into the
  model's. ``foreach`` (``torch.optim.AdamW``'s default on CUDA, ``_multi_tensor_adamw``) and
  ``for_loop`` (its ``_single_tensor_adamw``, and Composer's ``DecoupledAdamW``) run the update
  as 8 separate element-wise ops: weight decay ``p.mul_`` (read+write p: 8 bytes), ``m.lerp_(g)``
  (12), ``v.mul_`` (8), ``v.addcmul_(g, g)`` (12), ``sqrt(v)`` (8), ``div_`` (8), ``add_(eps)``
  (8) and ``p.addcdiv_(m, denom)`` (16): 80 bytes per parameter. ``foreach`` launches each op
  over lists of tensors, ``for_loop`` once per tensor.

**SGD** (``training.optimizer_algorithm: sgd``: torch.optim.SGD without momentum or weight decay)
is one add of the gradients into the weights, 3·B_m bytes per parameter in the same launch scheme
(:func:`sgd_bytes`), and no state.

Those bytes are for fp32 master weights, gradients and moments. With ``training.master_dtype``
bf16 (a model built and stepped in bf16: no master copy, the gradients the optimizer reads in
bf16, FSDP2 casting each reduced gradient to its bf16 shard) and moments of
``optimizer_state_dtype`` (:func:`adam_bytes`), with B_m and B_s bytes: the fused pass reads the
gradient, the weight and both moments and writes the weight and the moments, 3·B_m + 4·B_s, plus
the copy into the bf16 model weight only when the master is an fp32 copy (TransformerEngine's
FusedAdam updates bf16 parameters in place, keeping fp32 moments: 22 bytes); the unfused ops touch
the weight 4 times, the gradient twice and the moments 14 times, 6·B_m + 14·B_s (torch.optim's
moments follow the parameters' dtype: 40 bytes in bf16, ``_multi_tensor_adam`` in
torch/optim/adam.py). Clipping reads B_m and scales 2·B_m.

``fp16_optimizer`` is Megatron-LM 2020's ``FP16_Optimizer`` (``megatron/fp16/fp16.py``,
``loss_scaler.py``, ``mpu/grads.py`` at the Sep 2020 README commit) for fp16 weights and
gradients, a loop over the parameter tensors in Python:

* dynamic loss scaling's overflow check, tensor by tensor: ``float(x.float().sum())`` converts
  the fp16 gradient to fp32 (reads 2, writes 4 bytes per parameter), sums it (reads 4) and copies
  the sum to the host, which waits for it before it issues the next tensor's kernels;
* the fp16 gradients copied into fp32 master gradients and unscaled (two ``multi_tensor_scale``
  passes: 6 + 8 bytes);
* clipping's norm, again tensor by tensor with a host read (``param_norm.item()``: 4 bytes), and
  the scaling only when the norm exceeds the limit (not counted);
* apex ``FusedAdam`` on the fp32 master weights (28 bytes), then ``model.data.copy_(master)`` per
  tensor (reads 4, writes 2).

While the host waits for a read the GPU has nothing queued, so every tensor's kernels and copy
start from an empty queue: a host step the GPU waits for per kernel and per read (3 per tensor
for the overflow check, 2 for the norm), each at least the launch floor (``kind: host`` with the
profile's ``kernel_launch_us``; the host's issue cost of those ops is counted by
:mod:`simulator.costs.host` as for any kernel).

A multi-tensor launch (PyTorch's ``_foreach`` kernels and apex's ``multi_tensor_apply`` share
the scheme, aten/src/ATen/native/cuda/MultiTensorApply.cuh) covers chunks of
``CHUNK = 65536`` elements, at most ``MAX_BLOCKS = 320`` chunks and at most
``MAX_TENSORS[depth]`` tensors (110, 64, 48, 36, 30 for lists of depth 1-5) per launch.
Every kernel pays the GPU's gap between kernels in :func:`~simulator.costs.compute.compute_time` and
the host's issue cost in :mod:`simulator.costs.host`, and the step's Python visits every
parameter tensor before it launches (``torch.optim``'s ``_init_group``, apex's ``FusedAdam.step``
building its lists: ``ComputeOp.host_tensors``, counted as the rank's parameter modules of
:mod:`simulator.schedule.shapes`, which hold a weight and its bias as one: GPT-2 124M has 98 of
them and 148 tensors): a per-tensor loop over thousands of tensors is
where a short step spends its end.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal, Sequence

from simulator.schedule.ir import CommOp, ComputeOp, ProgramBuilder, Tag

OptimizerImpl = Literal["fused", "foreach", "for_loop", "fp16_optimizer"]

CHUNK = 65536
MAX_BLOCKS = 320
MAX_TENSORS = {1: 110, 2: 64, 3: 48, 4: 36, 5: 30}

GRAD_BYTES = 4  # fp32 main gradients (Megatron's main_grad; FSDP's fp32 sharded gradients)
MODEL_WEIGHT_BYTES = 2  # the bf16 weights the model computes with
MODEL_COPY_BYTES = 4  # fused, fp32 master: the bf16 model weight written (2) and the master read again (2)
# The list depth of each op of the unfused update, in _multi_tensor_adamw's order.
UNFUSED_ADAM_DEPTHS = (1, 2, 1, 3, 2, 1, 1, 3)


def multi_tensor_launches(numels: Sequence[int], depth: int) -> int:
    """Kernel launches of one multi-tensor op over tensors of these sizes, as multi_tensor_apply
    loops: chunks are queued tensor by tensor, and a launch goes out when MAX_BLOCKS chunks are
    queued, when MAX_TENSORS[depth] tensors are and the last one's chunks are all in, or at the
    end; a tensor cut by a launch carries over to the next."""
    return _launches_of(tuple(numels), depth)


@lru_cache(maxsize=4096)
def _launches_of(numels: tuple[int, ...], depth: int) -> int:
    """:func:`multi_tensor_launches`, once per (sizes, depth), a tensor at a time: of its ``k``
    chunks, the first ``k - 1`` launch each time ``MAX_BLOCKS`` are queued (the tensor, cut, then
    counts once in the next launch), and its last chunk launches also when it completes the
    ``MAX_TENSORS[depth]``-th tensor. The same count as visiting every 64K-element chunk
    (``tests/unit/test_optimizer_step.py``), which took 0.4 ms for a GPT-3 175B stage."""
    launches = tensors = blocks = 0
    most = MAX_TENSORS[depth]
    for n in numels:
        if n <= 0:
            continue
        tensors += 1
        queued = blocks + math.ceil(n / CHUNK) - 1  # before its last chunk
        full, blocks = divmod(queued, MAX_BLOCKS)
        if full:
            launches += full
            tensors = 1
        blocks += 1
        if blocks == MAX_BLOCKS or tensors == most:
            launches += 1
            blocks = tensors = 0
    return launches + (1 if blocks else 0)


@dataclass(frozen=True)
class LocalParams:
    """The parameter tensors a rank's optimizer updates: each one's element count."""

    numels: tuple[int, ...]

    @property
    def total(self) -> int:
        return sum(self.numels)


def _launches(impl: OptimizerImpl, params: LocalParams, depths: Sequence[int]) -> int:
    if impl == "for_loop":
        return len(depths) * len(params.numels)
    return sum(multi_tensor_launches(params.numels, d) for d in depths)


# FP16_Optimizer's passes, bytes per parameter (module docstring)
OVERFLOW_CHECK_BYTES = 10  # x.float(): 2 + 4, .sum(): 4
MASTER_GRAD_BYTES = 6 + 8  # fp16 -> fp32 copy, then the in-place unscale
MASTER_ADAM_BYTES = 28  # reads grad, param, m, v; writes param, m, v (fp32)
MASTER_TO_MODEL_BYTES = 6  # fp32 master read, fp16 weight written
OVERFLOW_HOST_STEPS = 3  # per tensor: float(), sum(), the read to the host
NORM_HOST_STEPS = 2  # per tensor: norm(), .item()


def fp16_optimizer_ops(pb: ProgramBuilder, params: LocalParams, grad_clip: bool, deps: tuple[int, ...]) -> int:
    """Megatron-LM 2020's FP16_Optimizer step (module docstring); returns its last op."""
    tag, n, tensors = Tag("opt"), params.total, len(params.numels)

    def ops(name: str, nbytes: float, count: int, host_steps: int, after: tuple[int, ...]) -> tuple[int, ...]:
        i = pb.add(ComputeOp(name=f"fp16_optimizer.{name}", kind="optimizer", flops=float(n), hbm_bytes=nbytes * n,
                             count=count, deps=after, tag=tag))
        if host_steps:
            i = pb.add(ComputeOp(name=f"fp16_optimizer.{name}.host_reads", kind="host", count=host_steps * tensors,
                                 deps=(i,), tag=tag))
        return (i,)

    deps = ops("overflow_check", OVERFLOW_CHECK_BYTES, 2 * tensors, OVERFLOW_HOST_STEPS, deps)
    deps = ops("master_grads", MASTER_GRAD_BYTES, 2 * multi_tensor_launches(params.numels, 2), 0, deps)
    if grad_clip:
        deps = ops("grad_norm", GRAD_BYTES, tensors, NORM_HOST_STEPS, deps)
    deps = ops("adam", MASTER_ADAM_BYTES, multi_tensor_launches(params.numels, 4), 0, deps)
    return ops("master_to_model", MASTER_TO_MODEL_BYTES, tensors, 0, deps)[0]


# DeepSpeed 0.3.13's stage-3 step (deepspeed/runtime/zero/stage3.py, FP16_DeepSpeedZeroOptimizer_Stage3),
# bytes per parameter of the rank's partition
DS_NORM_BYTES = 2 + 8 + 8  # g.double(): reads 2, writes 8; .norm(2) reads the 8
DS_FP32_GRAD_BYTES = 4 + 6  # _flatten_dense_tensors of the fp16 partitions (2 + 2), then .to(fp32) (2 + 4)
DS_UNSCALE_BYTES = 8  # grad.mul_(1 / combined_scale) on the fp32 flat gradient
DS_FP16_COPY_BYTES = 6  # fp16 flat partition .copy_(fp32 flat partition)


def zero3_2021_fp16_ops(pb: ProgramBuilder, params: LocalParams, tensors: int, grad_clip: bool,
                        axes: tuple[str, ...], stream: str, deps: tuple[int, ...]) -> int:
    """The fp16 step of DeepSpeed 0.3.13's ZeRO-3 optimizer over a rank's partitions (``step``):

    * ``has_overflow_partitioned_grads_serial``: for each of the ``tensors`` parameter partitions
      ``float(x.float().sum())`` (a cast, a sum and a read to the host that the host waits for:
      the FP16_Optimizer check of the module docstring), then the overflow flag (a ByteTensor)
      AllReduced with MAX over the data-parallel group and read back (``overflow_gpu[0].item()``);
    * with clipping, ``get_grad_norm_direct``: per partition ``g.data.double().norm(2)`` and its
      ``.item()``, the sum of squares AllReduced over the group (one fp32) and read back;
    * per sub-group (one here: ``sub_group_size`` is unset in 0.3.13's configs of the time) the
      fp16 partitions flattened and cast to one fp32 gradient, unscaled and clipped in place,
      the fused Adam step on the fp32 flat partition, and the result copied into the fp16 flat
      partition.

    Each host read waits for the GPU, so these are host steps the GPU waits for, as in
    :func:`fp16_optimizer_ops`. Returns the last op."""
    tag, n = Tag("opt"), params.total

    def kernel(name: str, nbytes: float, count: int, after: tuple[int, ...], reads: int = 0) -> tuple[int, ...]:
        i = pb.add(ComputeOp(name=f"zero3_2021.{name}", kind="optimizer", flops=float(n), hbm_bytes=nbytes * n,
                             count=count, deps=after, tag=tag))
        if reads:
            i = pb.add(ComputeOp(name=f"zero3_2021.{name}.host_reads", kind="host", count=reads, deps=(i,), tag=tag))
        return (i,)

    def allreduce(name: str, size: int, dtype: str, after: tuple[int, ...]) -> tuple[int, ...]:
        if not axes:
            return after
        i = pb.add(CommOp(name=f"zero3_2021.{name}.allreduce", op="allreduce", axes=axes, size_bytes=size,
                          dtype=dtype, deps=after, tag=tag, stream=stream))
        return (pb.add(ComputeOp(name=f"zero3_2021.{name}.read", kind="host", count=1, deps=(i,), tag=tag)),)

    deps = kernel("overflow_check", OVERFLOW_CHECK_BYTES, 2 * tensors, deps, OVERFLOW_HOST_STEPS * tensors)
    deps = allreduce("overflow", 1, "int8", deps)
    if grad_clip:
        deps = kernel("grad_norm", DS_NORM_BYTES, 2 * tensors, deps, NORM_HOST_STEPS * tensors)
        deps = allreduce("grad_norm", 4, "fp32", deps)
    deps = kernel("fp32_grads", DS_FP32_GRAD_BYTES, 2, deps)
    deps = kernel("unscale", DS_UNSCALE_BYTES, 1, deps)
    deps = kernel("adam", MASTER_ADAM_BYTES, multi_tensor_launches([n], 4), deps)
    return kernel("fp16_copy", DS_FP16_COPY_BYTES, 1, deps)[0]


def adam_bytes(impl: OptimizerImpl, master: int = GRAD_BYTES, state: int = GRAD_BYTES) -> int:
    """HBM bytes per parameter of the Adam step with master weights (and the gradients it reads)
    of `master` bytes and moments of `state` bytes (module docstring): 32 and 80 in fp32."""
    if impl == "fused":
        return 3 * master + 4 * state + (MODEL_COPY_BYTES if master != MODEL_WEIGHT_BYTES else 0)
    return 6 * master + 14 * state


def sgd_bytes(master: int = GRAD_BYTES) -> int:
    """HBM bytes per parameter of torch.optim.SGD without momentum or weight decay
    (``_multi_tensor_sgd``: one ``torch._foreach_add_(params, grads, alpha=-lr)``; the
    single-tensor loop runs the same ``add_`` per tensor): the gradient and the weight read, the
    weight written, 3·B_m (6 bytes on a bf16 model), and the copy into the bf16 model weight when
    the master is an fp32 copy."""
    return 3 * master + (MODEL_COPY_BYTES if master != MODEL_WEIGHT_BYTES else 0)


def step_ops(pb: ProgramBuilder, impl: OptimizerImpl, params: LocalParams, grad_clip: bool,
             norm_axes: tuple[str, ...], norm_stream: str, deps: tuple[int, ...],
             master_bytes: int = GRAD_BYTES, state_bytes: int = GRAD_BYTES, algorithm: str = "adam") -> int:
    """Append gradient clipping (if on) and the Adam (or, ``algorithm`` "sgd", the plain SGD) step
    over master weights of `master_bytes` and moments of `state_bytes`; returns the step's last op."""
    if impl == "fp16_optimizer":
        return fp16_optimizer_ops(pb, params, grad_clip, deps)
    tag = Tag("opt")
    n = params.total
    if grad_clip:
        # norm: one pass per tensor list, then the per-tensor norms stacked and reduced (2 kernels)
        norm = pb.add(ComputeOp(name="grad_clip.norm", kind="optimizer", flops=2.0 * n, hbm_bytes=master_bytes * n,
                                count=_launches(impl, params, (1,)) + 2, deps=deps, tag=tag))
        deps = (norm,)
        if norm_axes:
            deps = (pb.add(CommOp(name="grad_clip.norm.allreduce", op="allreduce", axes=norm_axes, size_bytes=4,
                                  dtype="fp32", deps=deps, tag=tag, stream=norm_stream)),)
        deps = (pb.add(ComputeOp(name="grad_clip.scale", kind="optimizer", flops=float(n),
                                 hbm_bytes=2 * master_bytes * n, count=_launches(impl, params, (1,)), deps=deps,
                                 tag=tag)),)
    copy = (2,) if master_bytes != MODEL_WEIGHT_BYTES else ()  # the master-to-model copy (fp32 master)
    if algorithm == "sgd":  # one add of (params, grads), per launch scheme
        count = _launches(impl, params, (2,) + copy)
        nbytes, flops = sgd_bytes(master_bytes) * n, 2.0 * n
    else:
        count = _launches(impl, params, ((4,) + copy) if impl == "fused" else UNFUSED_ADAM_DEPTHS)
        nbytes, flops = adam_bytes(impl, master_bytes, state_bytes) * n, 10.0 * n
    return pb.add(ComputeOp(name="optimizer.step", kind="optimizer", flops=flops, hbm_bytes=nbytes, count=count,
                            deps=deps, tag=tag, host_tensors=len(params.numels)))

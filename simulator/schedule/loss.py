"""The cross-entropy's kernels: bytes per logit and kernel count of each implementation
(``training.cross_entropy``), forward and backward, counted pass by pass.

The loss reads a tokens × V/t matrix of logits that, for a small model, is larger than every
activation of a layer (V = 50,000-128,000 against h = 768-2,048), so how many times its kernels
stream it decides the loss's time. ``B`` is the logits' dtype size (2 for bf16/fp16); the
softmax runs in fp32 (4 B):

* ``vocab_parallel``: Megatron's ``vocab_parallel_cross_entropy``
  (megatron/core/tensor_parallel/cross_entropy.py; the same ops in Megatron-LM 2020's
  mpu/cross_entropy.py). Forward: ``logits.float()`` (reads B, writes 4), the max (reads 4),
  the in-place subtraction of the max (8), ``torch.exp(out=)`` (8), the sum (4), the in-place
  division into the softmax saved for backward (8): 36 + B bytes in six kernels. Backward: the
  saved softmax times the incoming gradient, in place (8), and the fp32 gradient cast back to the
  logits' dtype (4 + B): 12 + B in two kernels.
* ``torch``: ``F.cross_entropy(logits.float())`` (torchtitan, HF): the cast (B + 4), then
  ``log_softmax``, whose kernel for rows longer than shared memory holds reads the row for the
  max, again for the sum of exponentials and again to write the output (16), then ``nll_loss``
  (a gather): 20 + B in three kernels. Backward: ``nll_loss_backward`` fills the gradient with
  zeros (4), ``log_softmax_backward`` reads the incoming gradient for its sum, then it and the
  saved output to write the gradient (16), and the cast back (4 + B): 24 + B in three.
* ``fused``: a one-kernel cross-entropy on the low-precision logits (flash-attn's, which
  llm-foundry's MPT uses by default, ``loss_fn: fused_crossentropy``; the apex ``xentropy``
  kernel of flash-attn 1.0.x): forward reads the row for its max and again for the sum of
  exponentials (2B), backward reads it and writes the gradient (2B).

Liger-Kernel's measured cross-entropy kernels (``data/kernels/``) check these counts:
Megatron's unfused forward on H100 within 7-13% and its backward within 0-15%, PyTorch's forward
on A100 within 2% at V ≥ 32K (:mod:`simulator.calibration.kernel_bandwidth`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

CrossEntropyImpl = Literal["vocab_parallel", "torch", "fused"]


@dataclass(frozen=True)
class LossKernels:
    """Bytes per logit and kernels of one pass of the loss."""

    bytes_per_logit: float
    kernels: int


def loss_kernels(impl: CrossEntropyImpl, logit_bytes: int) -> tuple[LossKernels, LossKernels]:
    """(forward, backward) of the cross-entropy ``impl`` on logits of ``logit_bytes`` each."""
    b = logit_bytes
    if impl == "vocab_parallel":
        return LossKernels(36 + b, 6), LossKernels(12 + b, 2)
    if impl == "torch":
        return LossKernels(20 + b, 3), LossKernels(24 + b, 3)
    return LossKernels(2 * b, 1), LossKernels(2 * b, 1)

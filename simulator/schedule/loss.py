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
* ``torch_lowp``: ``F.cross_entropy(logits)`` on the low-precision logits as the model returns
  them (a Hugging Face causal LM called without labels: transformers 4.45 and later no longer
  upcast its logits), no autocast: ``log_softmax`` in the logits' dtype (three reads and a write:
  4B), then ``nll_loss``: 4B in two kernels. Backward: ``nll_loss_backward`` zero-fills the
  gradient (B), ``log_softmax_backward`` reads it for its sum, then it and the saved output to
  write the gradient (4B): 5B in two.
* ``fused``: a one-kernel cross-entropy on the low-precision logits (flash-attn's, which
  llm-foundry's MPT uses by default, ``loss_fn: fused_crossentropy``; the apex ``xentropy``
  kernel of flash-attn 1.0.x): forward reads the row for its max and again for the sum of
  exponentials (2B), backward reads it and writes the gradient (2B).
* ``fused_linear``: the LM head and the loss in one blockwise kernel that never writes the logits,
  Apple's Cut Cross-Entropy (``cut_cross_entropy.linear_cross_entropy``, arXiv:2411.09009), which
  NeMo AutoModel's ``FusedLinearCrossEntropy`` calls with ``filter_eps=None``
  (nemo_automodel/components/loss/linear_ce.py at cb976544). Forward
  (``cce_lse_forward.py``): each tile of E·Cᵀ is reduced to a running log-sum-exp in registers:
  the head's GEMM and no pass over logits. Backward (``cce_backward.py``, ``_cce_backward_kernel``):
  each tile is computed again (``tl.dot(e, c)``), turned into softmax − one-hot in registers, and
  multiplied into dE (by C) and dC (by E) with locked adds; without filtering every tile does all
  three: the GEMM again, its dgrad and its wgrad, and no memory pass. So the loss costs one more
  forward GEMM of the head and no bytes per logit (:class:`~simulator.schedule.transformer.
  LayerBuilder` ``head_forward`` / ``head_backward``), and the logits buffers are gone
  (``memory.CROSS_ENTROPY_BYTES``). The Triton tiles are priced at the GEMM's rate: the
  repository's README benchmark (A100-SXM4, PyTorch 2.4.1) times the forward at 46.4 ms for
  8,192 tokens x 256,000 x 2,304 (9.66 TFLOP), 67% of the bf16 peak, against 75% for a GEMM that
  large in the dgx-a100 profile; its backward is timed with gradient filtering only.

A training metric computed on the logits besides the loss (``training.train_metrics``) is one more
forward of PyTorch's cross-entropy, under no_grad, on the low-precision logits the model returned
(:func:`metric_kernels`). Composer (0.16, ``Trainer._train_microbatch`` → ``_eval_train_metrics``,
after every micro-batch's backward) updates each training metric of the model: for a causal LM
(llm-foundry's ``ComposerMPTCausalLM``) ``LanguageCrossEntropy`` and ``LanguagePerplexity``, each a
``torch.nn.CrossEntropyLoss(reduction='sum')`` of its own (composer/metrics/nlp.py). Under
``amp_bf16`` autocast, ATen's ``cross_entropy_loss`` calls ``log_softmax(x, 1, x.scalar_type())``:
the explicit dtype keeps the log-softmax in bf16 (autocast's ``fp32_set_opt_dtype`` policy respects
a given dtype), its kernel reading the row for the max, the sum and the output (4B with the
write); ``nll_loss`` is on autocast's fp32 list, so its input, the whole bf16 log-probability
matrix, is first copied to fp32 (B + 4) before the gather: 5B + 4 bytes per logit in three kernels.

Liger-Kernel's measured cross-entropy kernels (``data/kernels/``) check these counts:
Megatron's unfused forward on H100 within 7-13% and its backward within 0-15%, PyTorch's forward
on A100 within 2% at V ≥ 32K (:mod:`simulator.calibration.kernel_bandwidth`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

CrossEntropyImpl = Literal["vocab_parallel", "torch", "torch_lowp", "fused", "fused_linear"]


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
    if impl == "torch_lowp":
        return LossKernels(4 * b, 2), LossKernels(5 * b, 2)
    return LossKernels(2 * b, 1), LossKernels(2 * b, 1)


def metric_kernels(logit_bytes: int) -> LossKernels:
    """One cross-entropy metric over logits of ``logit_bytes`` each under autocast (module
    docstring): the log-softmax in the logits' dtype (three reads, one write), the fp32 copy of
    its output for ``nll_loss`` (none when the logits are fp32 already), the gather."""
    b = logit_bytes
    if b >= 4:
        return LossKernels(4 * b, 2)
    return LossKernels(4 * b + (b + 4), 3)

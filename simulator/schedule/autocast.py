"""What ``torch.autocast`` over fp32 parameters adds to an eager layer (``training.autocast``).

nanoGPT, the Hugging Face Trainer's ``bf16``/``fp16`` with DDP or on one GPU, and this project's
GPT-2 steps (``benchmarks/measure_gpt_step.py``) keep the model's parameters in fp32 and run the
forward under ``torch.autocast``. Autocast casts per op, not per model (aten/src/ATen/autocast_mode.h,
``cached_cast``), and its op lists decide in which dtype each op runs:

* every ``linear`` (autocast's lower-precision list) casts its fp32 weight and bias to the compute
  dtype: a copy kernel per tensor, reading 4 and writing 2 bytes per parameter; the cast of a leaf
  that requires grad is cached until the autocast region ends, so once per forward. Backward,
  autograd's ``ToCopyBackward`` casts each bf16 weight gradient back to fp32 (2 + 4 bytes), a kernel
  per tensor;
* ``layer_norm`` is on the fp32 list and the residual adds promote (fp32 + bf16 = fp32), so the
  residual stream stays fp32 from the embedding's output (``embedding`` is not on a list, its
  weight fp32): the norms read and write fp32, the adds read fp32 and bf16 and write fp32, and each
  norm's output is cast to bf16 before the QKV and FC1 GEMMs (read 4, write 2);
* backward, in activation units hb = tokens × h × 2 bytes: the two casts' gradients back to fp32
  (3 hb each), the residual adds' bf16 branch gradients cast from the fp32 stream (3 hb each), the
  norms' backward passes in fp32 (5 hb more each than on 2-byte activations) and the residual
  gradient sums in fp32 (3 hb more each).

Per dense layer pass, on top of the eager layer of :class:`~simulator.schedule.transformer.
Elementwise`: forward 6 bytes per linear parameter and 14 hb (the two casts 6, the norms 4, the adds
4) in one kernel per weight and bias and 2 more; backward 6 bytes per linear parameter and 28 hb
(12 in casts, 10 in the norms, 6 in the sums) in one kernel per weight and bias and 4 more. The
final norm and the LM head add their own: the head's weight cast (the tied embedding's, V × h) and
the final norm's output cast forward, and back. Counted from the op lists, not measured; the cast
kernels' host costs follow from :mod:`simulator.costs.host` like any kernel's. MoE and hybrid
blocks get no casts here (their eager fp32-parameter runs are not modelled), nor does torchtitan's
op-level recompute (``selective_op``); with ``dtype: fp16`` the GradScaler's per-step unscale, inf
check and its host read are not modelled either.
"""

from __future__ import annotations

from dataclasses import dataclass

# bytes per parameter of a weight's cast, fp32 -> bf16 forward and bf16 -> fp32 backward
WEIGHT_CAST_BYTES = 4 + 2
# extra traffic per dense layer pass in units of hb (module docstring)
LAYER_FWD_HB = 2 * 3 + 2 * 2 + 2 * 2
LAYER_BWD_HB = 2 * 3 + 2 * 3 + 2 * 5 + 2 * 3
# the final norm: its output cast (3 hb) and its fp32 input and output (2 hb) forward; the cast's
# gradient (3 hb) and its fp32 backward passes (5 hb) backward
HEAD_FWD_HB = 3 + 2
HEAD_BWD_HB = 3 + 5


@dataclass(frozen=True)
class CastPass:
    """One pass's autocast traffic: HBM bytes and kernels."""

    hbm_bytes: float
    kernels: int


def layer_pass(linear_params: int, linear_tensors: int, hb: float, direction: str) -> CastPass:
    """The casts and fp32-stream traffic of one dense layer pass: ``linear_params`` parameters in
    ``linear_tensors`` weights and biases of its four linears on this rank, ``hb`` bytes of one
    2-byte activation (tokens × h × 2)."""
    if direction == "fwd":
        return CastPass(WEIGHT_CAST_BYTES * linear_params + LAYER_FWD_HB * hb, linear_tensors + 2)
    return CastPass(WEIGHT_CAST_BYTES * linear_params + LAYER_BWD_HB * hb, linear_tensors + 4)


def head_pass(head_params: int, hb: float, direction: str) -> CastPass:
    """The final norm's and the LM head's: the head weight's cast (one tensor) and the norm's."""
    extra = HEAD_FWD_HB if direction == "fwd" else HEAD_BWD_HB
    return CastPass(WEIGHT_CAST_BYTES * head_params + extra * hb, 2)

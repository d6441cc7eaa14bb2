"""What attention dropout costs inside a fused attention kernel (``training.fused_attention_dropout``).

FlashAttention and cuDNN's fused attention apply the attention dropout in the kernel: every score
element the kernel computes draws a random number from a counter-based Philox generator (seed
and offset from the framework's RNG tracker) and is kept or zeroed, forward and again in the
backward, which regenerates the same numbers instead of storing a mask (flash-attn
``csrc/flash_attn/src/dropout.h``; cuDNN's SDPA graph takes the seed and offset as tensors,
TransformerEngine ``fused_attn_f16_arbitrary_seqlen.cu``). The Philox rounds are integer work on
the CUDA cores beside the tensor-core GEMMs of the tile, so they add time per computed score
element and per pass, whatever the sequence length; that is how this module prices them:
``score elements computed x passes x seconds per element``.

Seconds per element and pass, from the published pairs with and without dropout (each the same
call at p = 0.0 and p = 0.1, forward plus backward, 4 sequences of 1,024 tokens, 16 heads of
128, bf16, TransformerEngine ``DotProductAttention`` with its default causal mask, median of 50
iterations; the increment divided by the causal block's computed elements, 4 x 16 x 1,024 x
1,025 / 2, and by the two passes):

* cuDNN on Hopper (``flash3``, the kernel class TransformerEngine's FusedAttention runs on
  sm90): H200, TE 2.15, ``sbhd``, 0.594 -> 0.614 ms (NVIDIA/TransformerEngine issue #3312,
  2026-08-04): 0.298 ps.
* FlashAttention-2 (``flash2``): GB200, TE 2.17 with flash-attn 2.7.4, ``thd``, 0.695 -> 0.728 ms
  (NVIDIA/TransformerEngine PR #3313, 2026-08-05): 0.491 ps.

Another GPU runs the same Philox rounds at its CUDA-core rate, so a measured figure moves to it
by the ratio of the two GPUs' non-tensor fp32 rates (``gpu.fp32_TFLOPS``: H200 67, GB200 80,
A100 19.5): FlashAttention-2 on A100 then costs 2.02 ps an element and pass. The one published
pair on an A100 is FlashAttention-1's own (arXiv:2205.14135 appendix E.6, Tables 15-16 against
18-19: batch 16, 8 heads of 64, not causal, 8,192 tokens): +8.09 ms forward and +19.52 ms
backward over 8.59e9 elements, 1.61 ps an element and pass on average (1.65 at 16,384 tokens):
the transferred FlashAttention-2 figure is 1.23-1.25 times that (``tests/unit/test_attention_dropout.py``).

Where the increment comes from a short call (1,024 tokens), it is read as a cost per element, not as
a fraction of the call: the fraction would shrink with the kernel's length, the draws do not.

Kernels without a published pair (flash1 beyond that check, the unfused attention, whose dropout
is a kernel of its own in ``schedule/attention.py``) add nothing here.
"""

from __future__ import annotations

from simulator.config.hardware import GPU

# (seconds per computed score element and pass, fp32 TFLOP/s of the GPU it was measured on)
_CAUSAL_ELEMENTS_4x1024x16 = 4 * 16 * 1024 * 1025 / 2
MEASURED: dict[str, tuple[float, float]] = {
    # TransformerEngine issue #3312: cuDNN fused attention, H200 (fp32 67 TFLOP/s, as H100 SXM)
    "flash3": ((0.614e-3 - 0.594e-3) / (2 * _CAUSAL_ELEMENTS_4x1024x16), 67.0),
    # TransformerEngine PR #3313: flash-attn 2.7.4 on GB200 (fp32 80 TFLOP/s, gb200-nvl72 profile)
    "flash2": ((0.728e-3 - 0.695e-3) / (2 * _CAUSAL_ELEMENTS_4x1024x16), 80.0),
}
PRICED_KERNELS = frozenset(MEASURED)


def seconds_per_element(kernel: str, gpu: GPU) -> float:
    """Seconds the in-kernel dropout adds per computed score element and pass of ``kernel`` on
    ``gpu`` (0 for a kernel without a published pair): the measured figure times the ratio of
    the measuring GPU's fp32 rate to this one's."""
    if kernel not in MEASURED:
        return 0.0
    per_element, ref_fp32_tflops = MEASURED[kernel]
    return per_element * ref_fp32_tflops / gpu.fp32_TFLOPS


def rng_seconds(elements: float, kernel: str, gpu: GPU) -> float:
    """Time the dropout of one pass over ``elements`` computed score elements adds."""
    return elements * seconds_per_element(kernel, gpu)

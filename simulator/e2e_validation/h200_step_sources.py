"""This project's own measured training steps of a small GPT on one H200, as e2e cases.

``benchmarks/measure_gpt_step.py`` trains a GPT-2-layout model written in plain ``torch.nn`` on one
H200 of a Firecracker VM (torch 2.11, CUDA 13; ``data/e2e/h200_gpt2_eager_single_gpu.csv`` has the
provenance) and records the median wall time of a whole step, the GPU's busy time in one profiled
step (the sum of its kernels' own times, so the step less it is time the GPU waited for the host)
and the allocator's peaks. Every setting is read off the script, not assumed:

- the model (``build``): learned token and position embeddings (``nn.Embedding(VOCAB, hidden)``,
  ``nn.Embedding(seq, hidden)``), pre-LayerNorm blocks, ``nn.Linear`` with biases for QKV (3h),
  the projection (h), FC1 (4h) and FC2 (h), GeLU (tanh), the LM head ``F.linear(..., wte.weight)``
  (tied), vocabulary 50,304, no dropout module anywhere: ``gpt_model(position="learned",
  tied=True)``, ``mlp: gelu``, ``dropout: false``;
- attention ``F.scaled_dot_product_attention(q, k, v, is_causal=True)`` on bf16 inputs, which
  PyTorch 2.11 runs as cuDNN's fused attention on this GPU: the profiler names
  ``cudnn_generated_fort_native_sdpa_sm90_flash``, ``compute_dot_do_o`` and ``convert_dq_to_16bits``
  (``data/e2e/h200_gpt2_step_phases.csv``), so
  ``attention: flash3``, the cuDNN / FlashAttention-3 class (with ``flash2`` every row reads
  3.7-5.0 points more pessimistic);
- layers in eager PyTorch ops, no ``torch.compile`` (``fused_kernels: false``, PyTorch's own
  LayerNorm kernels: ``norm_kernel`` auto = eager); the biases in addmm's cuBLASLt epilogue and
  reduced by autograd in backward (``linear_bias: epilogue``: every linear's input is contiguous,
  the attention output after its transpose and ``reshape`` included);
- the loss ``F.cross_entropy(logits.float().view(-1, VOCAB), ...)`` (``cross_entropy: torch``),
  no training metrics (``loss.item()`` only);
- ``torch.optim.AdamW(..., fused=True)`` on fp32 parameters (``optimizer: fused``, ``master_dtype:
  fp32``), no clipping (``grad_clip: false``), ``zero_grad(set_to_none=True)`` so autograd
  allocates each gradient in its layer's backward (``grad_allocation: lazy``);
- one GPU, one micro-batch per step (``global_batch`` = ``micro_batch``), no recompute, under
  ``torch.autocast(bfloat16)`` (``dtype: bf16``).

Under ``torch.autocast(bfloat16)`` over fp32 parameters (``autocast: true``, ``schedule/autocast.py``):
every linear's fp32 weight and bias is cast to bf16 in forward and its gradient back to fp32 in
backward (a kernel per tensor each way), and the embedding's output is fp32, so the residual stream,
the LayerNorms and the residual adds run in fp32 with a bf16 cast before QKV, FC1 and the head.

The rows are held out (``sources.HELD_OUT_SOURCES``): one GPU, so none is a fitting row
(``is_fit_case`` takes 8-GPU rows), and ``dgx-h200`` inherits dgx-h100's fitted GEMM curve
(``loso.fit_family``), whose leave-one-source-out refit is the committed fit (this source has no
fitting row on it), so nothing is fitted on these rows and they are scored with the committed curve.
"""

from __future__ import annotations

from simulator.e2e_validation.rows import Row, parse_int
from simulator.e2e_validation.scenarios import Case, Stack, gpt_model, make_scenario

SOURCE = "h200_eager"
PROFILE = "dgx-h200"
# The script's stack (module docstring): SDPA's cuDNN fused attention, eager PyTorch layers with
# PyTorch's LayerNorm, torch's fused AdamW, F.cross_entropy on fp32 logits, no dropout, biases in
# the GEMM epilogue.
TORCH_EAGER_SDPA = Stack(attention="flash3", fused_kernels=False, optimizer="fused", cross_entropy="torch",
                         dropout=False, linear_bias="epilogue")


def h200_eager_case(r: Row) -> Case:
    """One row of the file as the scenario the script runs (module docstring)."""
    mb = parse_int(r["micro_batch"])
    model = gpt_model({**r, "kv_heads": "", "ffn_hidden": "", "vocab": "50304"}, position="learned", tied=True)
    scn = make_scenario(f"{SOURCE}-{r['model']}-mbs{mb}", PROFILE, 1, model, micro_batch=mb, global_batch=mb,
                        dtype="bf16", recompute="none", parallel=dict(zero=0, grad_allocation="lazy"),
                        stack=TORCH_EAGER_SDPA)
    scn["gpus_per_node"] = 1  # one GPU of the node
    scn["training"].update(grad_clip=False, master_dtype="fp32", autocast=True)
    label = f"{r['model']} h{r['hidden']} l{r['layers']} seq{r['seq_len']} mbs{mb} 1 GPU"
    return Case(SOURCE, label, scn, "step_time_s", float(r["step_ms"]) / 1e3, 1)


def h200_eager(rows: list[Row]) -> list[Case]:
    """Every row of the file: GPT-2 124M at micro-batch 1, 4 and 16, 350M and 760M at 8 (sequence
    1,024), a 1.3B GPT at sequence 2,048, micro-batch 4; the median step time over 15 steps."""
    return [h200_eager_case(r) for r in rows]

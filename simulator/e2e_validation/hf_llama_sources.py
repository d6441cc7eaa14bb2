"""NVIDIA cuDNN frontend's Llama-3.2-1B training benchmark on one B200 and one H200, as e2e cases.

``benchmark/Llama-3.2-1B-Training/training_perf.py`` (NVIDIA/cudnn-frontend @7606332; the data file
``data/e2e/cudnn_frontend_llama32_1b.csv`` has the provenance) times a training iteration of
Hugging Face's ``LlamaForCausalLM`` at six batch x sequence shapes of 12K-18K tokens with each of
PyTorch's SDPA backends. What it runs, read off the script and its Dockerfile:

- the model: transformers' Llama built from the Llama-3.2-1B config in bf16 (16 layers, hidden
  2,048, 32 query and 8 KV heads of 64, SwiGLU 8,192, vocabulary 128,256, tied embeddings, RoPE),
  eager PyTorch layers (``fused_kernels: false``): ``LlamaRMSNorm``, the reference RMSNorm as
  PyTorch ops on an fp32 upcast (``norm_kernel: composite``), ``apply_rotary_pos_emb``'s
  multiplies, ``rotate_half`` and add (``rope_kernel: unfused``, Megatron-Core's count of the same
  ops, which also copies an empty pass-through part: 2 B per element more than HF's), SiLU times
  the up projection, no dropout (``attention_dropout`` 0);
- attention through ``F.scaled_dot_product_attention``, causal (an all-ones mask is dropped for
  SDPA's ``is_causal``), with the backend pinned: ``CUDNN_ATTENTION`` is cuDNN's fused flash
  attention (``attention: flash3``), ``FLASH_ATTENTION`` PyTorch's FlashAttention-2 (``flash2``);
  ``EFFICIENT_ATTENTION`` (the CUTLASS memory-efficient kernel) has no kernel model and is not
  built;
- ``torch.nn.CrossEntropyLoss`` on ``output.logits`` as the model returns them: bf16, since
  transformers 4.45 upcasts the logits only when it computes the loss itself (``cross_entropy:
  torch_lowp``);
- ``torch.optim.SGD(lr=1e-6)`` on the bf16 parameters (``optimizer_algorithm: sgd``, foreach,
  ``master_dtype: bf16``), no clipping; ``zero_grad()`` leaves the gradients unallocated
  (``grad_allocation: lazy``);
- one GPU, one batch per iteration (``global_batch`` = ``micro_batch``); the time is the mean of
  100 iterations, the host free to run ahead.

The inputs are embeddings (``inputs_embeds``): the model's embedding lookup and its backward
(under 0.1 ms here) are priced as for a token input. The README says the B200 clock was locked at
1,665 MHz and the H200's at 1,500 MHz; the B200 log shows the lock refused, so those rows ran at
default clocks, as the profiles describe; the H200 rows are scored as run unlocked too (no log).
Every row is held out: one GPU, no fitting row (``sources.HELD_OUT_SOURCES``).
"""

from __future__ import annotations

from dataclasses import replace

from simulator.e2e_validation.rows import Row, parse_int
from simulator.e2e_validation.scenarios import Case, Stack, make_scenario

SOURCE = "cudnn_llama1b"
PROFILE_OF_GPU = {"B200": "dgx-b200", "H200": "dgx-h200"}
KERNEL_OF_BACKEND = {"CUDNN_ATTENTION": "flash3", "FLASH_ATTENTION": "flash2"}
# transformers' LlamaForCausalLM in eager PyTorch (module docstring)
HF_EAGER = Stack(fused_kernels=False, optimizer="foreach", cross_entropy="torch_lowp", dropout=False,
                 norm_kernel="composite", rope_kernel="unfused")
LLAMA_32_1B = dict(layers=16, hidden=2048, heads=32, kv_heads=8, ffn_hidden=8192, vocab=128256, mlp="swiglu",
                   tied_embeddings=True, position_embedding="rope")


def cudnn_llama1b_case(r: Row) -> Case:
    """One built row: the script's iteration on that GPU with that SDPA backend."""
    mb, seq = parse_int(r["batch_size"]), parse_int(r["seq_len"])
    stack = replace(HF_EAGER, attention=KERNEL_OF_BACKEND[r["backend"]])
    scn = make_scenario(f"{SOURCE}-{r['gpu']}-{r['backend']}-{mb}x{seq}", PROFILE_OF_GPU[r["gpu"]], 1,
                        {**LLAMA_32_1B, "seq_len": seq}, micro_batch=mb, global_batch=mb, dtype="bf16",
                        recompute="none", parallel=dict(zero=0, grad_allocation="lazy"), stack=stack)
    scn["gpus_per_node"] = 1
    scn["training"].update(optimizer_algorithm="sgd", master_dtype="bf16", grad_clip=False)
    label = f"Llama-3.2-1B {r['gpu']} {r['backend'].split('_')[0].lower()} mbs{mb} seq{seq} 1 GPU"
    return Case(SOURCE, label, scn, "step_time_s", float(r["time_s"]), 1)


def cudnn_llama1b(rows: list[Row]) -> list[Case]:
    """The cuDNN and FlashAttention-2 rows of both GPUs (the memory-efficient backend's are not
    built: module docstring)."""
    return [cudnn_llama1b_case(r) for r in rows if r["backend"] in KERNEL_OF_BACKEND]

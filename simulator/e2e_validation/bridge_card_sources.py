"""Megatron-Bridge's model verification cards: measured BF16 pre-training steps on H100, as e2e cases
(Qwen3-8B, source ``bridge_card``; the hybrid Nemotron 3 Nano 4B, source ``bridge_card_hybrid``).

The card (NVIDIA-NeMo/Megatron-Bridge ``examples/model_verification_cards/qwen3-8b/card.yaml``;
``data/e2e/megatron_bridge_qwen3_8b_card_h100.csv`` has the provenance) records the average step
time of the last 10 of 100 steps of the recipe ``qwen3_8b_pretrain_16gpu_h100_bf16_config`` on two
nodes of 8 H100: TP 1, PP 1, CP 1, DP 16, 64 micro-batches of one 4,096-token sequence per step.
A dense Megatron-Core + TransformerEngine run on H100 in BF16, data parallel only, at the size of
the NVIDIA recipes the page scores elsewhere, but neither a performance table nor tuned for one
(the card says so). What the card omits comes from the recipe it names:

- the distributed optimizer with overlapped gradient ReduceScatter and parameter AllGather
  (:func:`megatron_parallel`), gradients reduced in bf16 (``grad_reduce_in_fp32 = False``), no
  recompute, no CUDA graphs, TE's fused cross-entropy (``cross_entropy_fusion_impl = "te"``);
- the card's ``ddp.check_for_nan_in_grad=true`` on a 2026 Megatron-Core: the isnan and isinf
  tests of every bucket (``ddp_grad_check: nan_inf``), the gradients scaled in the buffer
  (``average_in_collective`` is Megatron-Core's default, off);
- Qwen3ModelProvider: RMSNorm, QK layernorm (``qk_norm``), kv_channels 128, SwiGLU, no bias,
  untied head, hidden and attention dropout 0.0 (``training.dropout: false``).

The network is not printed: the dgx-h100 profile. Held out (16 GPUs: no fitting row).

The Nemotron 3 Nano 4B card (``examples/model_verification_cards/nemotron-3-nano-4b/card.yaml``,
``data/e2e/megatron_bridge_nemotron3_nano_4b_card_h100.csv``) is the same kind of record for a dense
hybrid Mamba2-Transformer on one node of 8 H100: recipe ``nemotron_3_nano_4b_pretrain_8gpu_h100_bf16_config``,
DP 8, 128 micro-batches of one 4,096-token sequence. Its recipe sets, besides what the Qwen3-8B
recipe does (the distributed optimizer with both overlaps, bf16 reduction, the nan/inf bucket check):

- ``HybridModelProvider``: 42 blocks ``M-M-M-MM-M-M*-M-M*-M-M-M*-M-M-MM*-MMM-M-M-`` (21 Mamba2
  mixers of 96 heads x 80, state 128, 8 groups, chunk 256 on mamba_ssm's memory-efficient path;
  4 attention blocks of 40 heads in 8 query groups with kv_channels 128; 17 squared-ReLU MLP blocks,
  whose activation is Megatron-Core's ``squared_relu``, one kernel each way under ``jit_fuser``),
  hidden 3,136, no position embedding, no bias, untied head;
- ``cross_entropy_fusion_impl = "native"``: Megatron-Core's ``fused_vocab_parallel_cross_entropy``,
  the passes of ``vocab_parallel_cross_entropy`` over fp32 logits in fewer kernels
  (``cross_entropy: vocab_parallel``);
- ``attention_backend`` None: TransformerEngine's own choice on H100 (the profile's default kernel).

It is the one dense hybrid run at BF16 in the data: a check of the Mamba2 mixer's pricing
(``schedule/mamba.py``) apart from FP8, tensor parallelism and Mixture-of-Experts. Held out."""

from __future__ import annotations

from simulator.e2e_validation.bridge_dense_sources import BRIDGE_2511
from simulator.e2e_validation.rows import Row, parse_int
from simulator.e2e_validation.scenarios import (MEGATRON_LM_DDP_2025, Case, gpt_model, llama_model, make_scenario,
                                                megatron_parallel)

HEAD_DIM = 128  # Qwen3ModelProvider kv_channels


def bridge_card_case(r: Row) -> Case:
    n, tp = parse_int(r["num_gpus"]), parse_int(r["tp"], 1)
    model = dict(llama_model(r), head_dim=HEAD_DIM, qk_norm=True)
    par = dict(megatron_parallel(tp), overlap_grad_reduce=True, grad_reduce_dtype="bf16", **MEGATRON_LM_DDP_2025)
    mb, gb = parse_int(r["micro_batch"], 1), parse_int(r["global_batch"])
    scn = make_scenario(f"bridge-card-{r['model_name'].lower()}-{n}", "dgx-h100", n, model, micro_batch=mb,
                        global_batch=gb, dtype="bf16", recompute="none", parallel=par, stack=BRIDGE_2511)
    label = f"{r['model_name']} H100 BF16 tp{tp} dp{n // tp} mbs{mb} gbs{gb} {n} GPUs (verification card)"
    return Case("bridge_card", label, scn, "step_time_s", float(r["value"]), n)


def bridge_card(rows: list[Row]) -> list[Case]:
    """The card's pre-training step time (module docstring)."""
    return [bridge_card_case(r) for r in rows if r["metric"] == "step_time_s"]


# The Mamba2 mixers of Nemotron 3 Nano 4B (HybridModelProvider in the recipe; module docstring).
NANO_4B_MAMBA: dict[str, int] = dict(mamba_heads=96, mamba_head_dim=80, mamba_state=128, mamba_groups=8,
                                     mamba_conv=4, mamba_chunk=256)


def _notes_field(r: Row, key: str) -> str:
    return r["notes"].split(f"{key} ", 1)[1].split(";")[0].strip()


def bridge_card_hybrid_case(r: Row) -> Case:
    n = parse_int(r["num_gpus"])
    model = dict(gpt_model(r, mlp="squared_relu", position="none", tied=False), head_dim=HEAD_DIM,
                 layer_pattern=_notes_field(r, "hybrid"), **NANO_4B_MAMBA)
    par = dict(megatron_parallel(1), overlap_grad_reduce=True, grad_reduce_dtype="bf16", **MEGATRON_LM_DDP_2025)
    mb, gb = parse_int(r["micro_batch"], 1), parse_int(r["global_batch"])
    scn = make_scenario(f"bridge-card-{r['model_name'].lower()}-{n}", "dgx-h100", n, model, micro_batch=mb,
                        global_batch=gb, dtype="bf16", recompute="none", parallel=par, stack=BRIDGE_2511)
    scn["training"]["cross_entropy"] = "vocab_parallel"
    label = f"{r['model_name']} H100 BF16 dp{n} mbs{mb} gbs{gb} {n} GPUs (verification card)"
    return Case("bridge_card_hybrid", label, scn, "step_time_s", float(r["value"]), n)


def bridge_card_hybrid(rows: list[Row]) -> list[Case]:
    """The Nemotron 3 Nano 4B card's pre-training step time (module docstring)."""
    return [bridge_card_hybrid_case(r) for r in rows if r["metric"] == "step_time_s"]

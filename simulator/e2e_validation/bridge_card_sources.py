"""Megatron-Bridge's Qwen3-8B model verification card: a measured BF16 pre-training step on 16 H100, as an
e2e case.

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

The network is not printed: the dgx-h100 profile. Held out (16 GPUs: no fitting row)."""

from __future__ import annotations

from simulator.e2e_validation.bridge_dense_sources import BRIDGE_2511
from simulator.e2e_validation.rows import Row, parse_int
from simulator.e2e_validation.scenarios import (MEGATRON_LM_DDP_2025, Case, llama_model, make_scenario,
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

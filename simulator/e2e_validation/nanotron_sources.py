"""Hugging Face's Ultra-Scale Playbook benchmark summary (nanotron v0.5, 2025), as e2e cases.

The playbook's authors ran thousands of nanotron configurations of four Llama-like models (1.34B,
3.57B, 8.86B, 80B; MHA, SwiGLU, vocabulary 131,072) on 1-64 nodes of 8 H100 at sequence 4,096 and a
fixed global batch of 256 sequences (1M tokens), and published the best configuration of each
(model, node count) with its MFU (``docs/benchmark_summary.svg`` of huggingface/nanotron, the
playbook's heatmap; ``data/e2e/nanotron_playbook_h100.csv`` has the provenance). 26 cells, each a
DP x TP x PP plan with its gradient-accumulation steps, micro-batch and ZeRO stage (0 or 1).

The stack, from the nanotron commit that added the figure (c252843) and the script that generated
the runs (``scripts/scaling_benchmarks.py``):

- bf16 compute with fp32 gradient accumulation: every micro-batch's bf16 weight gradient is added
  into an fp32 buffer (``FP32GradientAccumulator``), one kernel per tensor and micro-batch
  (``gradient_accumulation_fusion: false``); PyTorch DDP's comm hook then reduces the fp32 buffer
  bucket by bucket during the last micro-batch's backward (``overlap_grad_reduce``, fp32 reduction,
  DDP's 25 MB buckets of bf16 gradients: 13,107,200 elements). ZeRO-0 AllReduces it; ZeRO-1
  ReduceScatters it (``reduce_scatter_coalesced``) and AllGathers the updated bf16 parameters after
  the step (``ZeroDistributedOptimizer._all_gather_params``), not overlapped with the next forward.
- TP in ``REDUCE_SCATTER`` mode: sequence parallelism. ``tp_linear_async_communication`` overlaps
  only the column-parallel input AllGather with the GEMM on the local shard, which none of the
  simulator's TP overlap methods describes; priced without overlap (``tp_overlap: none``).
- Pipeline: nanotron's 1F1B engine, every micro-batch of the step in one pass; the stages are cut by
  nanotron's own balance of block costs (``build_model``: a decoder layer costs 4h^2 + 3hF, the LM
  head Vh, the embedding nothing; a block goes to the current rank and the rank advances once the
  cumulative cost passes (rank+1)/pp of the total), so the stage holding the LM head has fewer
  layers: :func:`nanotron_pp_layers`.
- flash-attn 2 attention, Triton RMSNorm, flash-attn's rotary kernel (in training the layer calls
  ``flash_rotary_embedding``, not its PyTorch ``RotaryEmbedding``), the SwiGLU and residual adds as
  PyTorch ops, fp32 sharded cross-entropy over the vocabulary-parallel logits, fused torch AdamW, no
  dropout, no recompute. Not modelled: the copy that stacks K and V for the rotary kernel
  (``torch.cat`` then ``permute(...).contiguous()``).

The cluster is Hugging Face's AWS p5 fleet (profile ``aws-p5``: 32 x 100 Gb/s EFA per node through
aws-ofi-nccl, whose per-crossing costs the deployed EFA constants carry); see ``NANOTRON_PROFILE``.

The published metric is MFU over nanotron's model FLOPs (``get_flops``: three times the forward
GEMMs with the full s x s score matrix and the LM head; MHA here, so the K/V projections are h x h);
the peak is not printed, 989 TFLOP/s (H100 SXM dense BF16) assumed. Each case compares tokens per
second per GPU, MFU x peak / model FLOPs per token.
"""

from __future__ import annotations

from itertools import accumulate

from simulator.e2e_validation.rows import Row, parse_int
from simulator.e2e_validation.scenarios import Case, Stack, gpt_model, make_scenario

# Hugging Face's cluster is AWS p5.48xlarge (8 H100, 32 x 100 Gb/s EFA): the launcher nanotron's benchmark
# scripts were written for excludes nodes ip-26-0-160-192 and ip-26-0-171-102 (run_multinode.sh @67c5ebb6, EC2
# private host names, /fsx = FSx for Lustre), and Hugging Face's Smol Training Playbook (2025) lists
# ip-26-0-171-102 as a p5.48xlarge of its cluster and measures its NCCL collectives over EFA. The figure itself
# does not print the network, so the profile is the provenance of the cluster, not a fit to these rows.
NANOTRON_PROFILE = "aws-p5"
H100_BF16_PEAK = 989e12  # dense BF16, H100 SXM (assumed: the figure does not print its peak)
# PyTorch DDP's default bucket_cap_mb (25, nanotron's ddp_bucket_cap_mb default) over bf16 gradients.
DDP_BUCKET_ELEMENTS = 25 * 1024 * 1024 // 2
# flash-attn 2 (flash_attn_varlen_func), Triton RMSNorm, flash-attn's Triton rotary kernel on q and on the
# stacked k/v in training (CausalSelfAttention.forward: self.flash_rotary_embedding), the gated MLP and
# residual adds as PyTorch ops, fused torch AdamW (torch_adam_is_fused), no dropout.
NANOTRON_2025 = Stack(attention="flash2", fused_kernels=False, optimizer="fused", cross_entropy="vocab_parallel",
                      dropout=False, norm_kernel="fused", rope_kernel="fused")


def nanotron_model_flops_per_token(layers: int, hidden: int, heads: int, kv_heads: int, ffn: int, vocab: int,
                                   seq: int) -> float:
    """nanotron's ``get_flops`` per token: 3 x (Q and KV projections, QK^T and AV over the full s x s
    matrix, the output projection, the gated MLP's three GEMMs, the LM head)."""
    d = hidden // heads
    per_layer = (2 * hidden * heads * d + 4 * hidden * kv_heads * d + 4 * heads * d * seq + 2 * heads * d * hidden
                 + 6 * hidden * ffn)
    return 3.0 * (layers * per_layer + 2 * hidden * vocab)


def nanotron_pp_layers(layers: int, hidden: int, ffn: int, vocab: int, pp: int) -> tuple[int, ...]:
    """Decoder layers per stage as nanotron's ``build_model`` places its pipeline blocks (embedding,
    the layers, final norm, LM head, loss) by cumulative compute cost."""
    layer_cost = 4 * hidden * hidden + 3 * ffn * hidden
    costs = [0] + [layer_cost] * layers + [0, vocab * hidden, 0]
    cumulative = list(accumulate(costs))
    thresholds = [cumulative[-1] * (r + 1) / pp for r in range(pp)]
    rank, ranks = 0, []
    for c in cumulative:
        ranks.append(rank)
        if c > thresholds[rank]:
            rank += 1
    per_layer = ranks[1:1 + layers]
    return tuple(per_layer.count(s) for s in range(pp))


def measured_tokens_per_gpu(r: Row) -> float:
    """The printed MFU (%) as tokens per second per GPU (nanotron's FLOPs, 989 TFLOP/s)."""
    heads = parse_int(r["heads"])
    per_token = nanotron_model_flops_per_token(parse_int(r["layers"]), parse_int(r["hidden"]), heads,
                                               parse_int(r["kv_heads"]) or heads, parse_int(r["ffn_hidden"]),
                                               parse_int(r["vocab"]), parse_int(r["seq_len"]))
    return float(r["value"]) / 100.0 * H100_BF16_PEAK / per_token


def nanotron_case(r: Row) -> Case:
    n, tp, pp, dp = (parse_int(r[k], 1) for k in ("num_gpus", "tp", "pp", "dp"))
    mb, gb = parse_int(r["micro_batch"], 1), parse_int(r["global_batch"])
    zero = int(r["zero_stage_or_fsdp"].removeprefix("zero"))
    ffn = parse_int(r["ffn_hidden"])
    model = gpt_model(r, mlp="swiglu", position="rope", tied=ffn < 10_000)  # scaling_benchmarks.create_config
    par: dict = dict(tp=tp, pp=pp, zero=zero, overlap_grad_reduce=True, grad_reduce_dtype="fp32",
                     gradient_accumulation_fusion=False, ddp_bucket_elements=DDP_BUCKET_ELEMENTS)
    if tp > 1:
        par["sequence_parallel"] = True
    if pp > 1:
        par["pp_layers"] = nanotron_pp_layers(model["layers"], model["hidden"], ffn, model["vocab"], pp)
    label = (f"{r['model_name']} dp{dp} tp{tp} pp{pp} mbs{mb} gas{gb // (dp * mb)} zero{zero} {n} GPUs")
    scenario = make_scenario(f"nanotron-{r['model_name']}-{n}-{dp}-{tp}-{pp}-{mb}-{zero}", NANOTRON_PROFILE, n,
                             model, micro_batch=mb, global_batch=gb, dtype="bf16", recompute="none", parallel=par,
                             stack=NANOTRON_2025)
    return Case("nanotron_playbook", label, scenario, "tokens_per_s_per_gpu", measured_tokens_per_gpu(r), n,
                note=f"printed MFU {r['value']}%")


def nanotron_playbook(rows: list[Row]) -> list[Case]:
    """Every cell of the figure (its MFU row)."""
    return [nanotron_case(r) for r in rows if r["metric"] == "mfu"]

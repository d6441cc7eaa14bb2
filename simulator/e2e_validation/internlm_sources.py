"""InternLM's training-performance page (InternLM/InternLM ``doc/en/train_performance.md``,
July 2023), as e2e cases.

Shanghai AI Laboratory measured InternLM-7B (32 layers, hidden 4,096, 32 heads, SwiGLU 11,008,
vocabulary 103,168, sequence 2,048, bf16) on 8-1,024 A100 SXM4 80 GB with four 100 Gb/s RoCE NICs
per node (the ``internlm-a100`` profile), TP 1 or 2, no pipeline, at a fixed number of tokens per
GPU and step (``data/e2e/internlm_7b_train_performance.csv``, whose header has the provenance).
The optimizer is InternLM's HybridZeroOptimizer (fa7337b, the release the page was measured with):
the bf16 gradients of each 512M-element bucket are AllReduced over the whole data-parallel group
during the last micro-batch's backward, each rank steps its shard of the ``zero1`` group and then
broadcasts its updated bf16 parameters within that group (``zero1_impl: internlm``).

Scored: every row whose ``zero1`` group is the whole data-parallel group: the ``zero1=-1`` rows of
the throughput table (TP 1 and 2, 8-1,024 GPUs) and the one-node rows of the other tables, where
``zero1=8`` (TP 1) and ``zero1=4`` (TP 2) are the whole group too. The multi-node ``zero1=8`` /
``zero1=4`` rows shard the optimizer within a node while the gradients are still AllReduced over
all nodes; the simulator's ZeRO-1 shards over the whole data-parallel group only, so they are
transcribed, not scored.

The stack of fa7337b (``doc/en/install.md``: PyTorch 1.13.1, CUDA 11.7, flash-attention v1.0.5,
apex 23.05): flash-attention 1 kernels, apex's fused mixed-dtype RMSNorm fed an fp32 copy of its input (its
dropout/add/norm blocks checkpointed and re-run in backward), flash-attn's rotary and fused
cross-entropy, torch 1.13's ``torch.optim.AdamW`` (no ``foreach``: a loop over the tensors),
dropout rate 0 (no kernels). Throughput-table rows pack documents into each micro_bsz x 2,048
row (``pack_sample_into_one=False``): attention within each document, priced as attention over
2,048 tokens, an upper bound; the one-node FLOPS-table rows attend over each 2,048-token row.
"""

from __future__ import annotations

from dataclasses import replace

from simulator.e2e_validation.rows import Row, parse_int, parse_recompute
from simulator.e2e_validation.scenarios import Case, Stack, llama_model, make_scenario

INTERNLM_PROFILE = "internlm-a100"
# The buckets of configs/7B_sft.py (hybrid_zero_optimizer.reduce_bucket_size = 512 * 1024 * 1024)
REDUCE_BUCKET_ELEMENTS = 512 * 1024 * 1024
# InternLM fa7337b: flash-attn 1.0.5 attention, rotary and cross-entropy kernels, apex's fused
# RMSNorm, the other elementwise ops PyTorch's, torch 1.13's for-loop AdamW, no dropout kernels.
# Every norm is fed an fp32 copy of its input (``self.norm1(_residual.float())``, ``norm2`` and the
# final ``self.norm(hidden_states.float())`` in internlm/model/modeling_internlm.py) and is apex's
# MixedFusedRMSNorm (fp32 in, bf16 out, fp32 input gradient): norm_input fp32. Without full
# recompute each layer's dropout / residual add / norm blocks run under ``activation_checkpoint``
# (``dropout_selective_checkpoint``, True by default in ``build_model_with_cfg`` and enabled when
# ``checkpoint`` is off): recompute_norm_blocks.
INTERNLM_2023 = Stack(attention="flash1", fused_kernels=False, optimizer="for_loop", cross_entropy="fused",
                      dropout=False, norm_kernel="fused", rope_kernel="fused", norm_input="fp32",
                      recompute_norm_blocks=True)


def zero1_group(r: Row) -> int:
    """The ``zero1`` setting of a row: -1 (the whole data-parallel group) or the group size."""
    return int(r["zero_stage_or_fsdp"].split("=", 1)[1])


def shards_over_dp(r: Row) -> bool:
    """Whether the row's optimizer shards over the whole data-parallel group."""
    z = zero1_group(r)
    return z == -1 or z == parse_int(r["dp"])


def internlm_case(r: Row) -> Case:
    n, tp, dp = (parse_int(r[k], 1) for k in ("num_gpus", "tp", "dp"))
    mb, gb = parse_int(r["micro_batch"], 1), parse_int(r["global_batch"])
    par: dict = dict(tp=tp, zero=1, zero1_impl="internlm", overlap_grad_reduce=True, grad_reduce_dtype="bf16",
                     ddp_bucket_elements=REDUCE_BUCKET_ELEMENTS, gradient_accumulation_fusion=False)
    recompute = parse_recompute(r)
    table = "throughput" if r["notes"].startswith("throughput") else f"FLOPS ckpt {recompute}"
    label = f"InternLM-7B tp{tp} {r['zero_stage_or_fsdp']} mbs{mb} gbs{gb} {n} GPUs ({table})"
    # the norm blocks' own checkpoint is off when the whole layer is checkpointed (PackedFlashBaseLayer1D:
    # dropout_selective_checkpoint and checkpoint is False)
    stack = INTERNLM_2023 if recompute != "full" else replace(INTERNLM_2023, recompute_norm_blocks=False)
    scenario = make_scenario(f"internlm-7b-{tp}-{n}-{mb}-{gb}-{recompute}", INTERNLM_PROFILE, n, llama_model(r),
                             micro_batch=mb, global_batch=gb, dtype="bf16", recompute=recompute, parallel=par,
                             stack=stack)
    return Case("internlm", label, scenario, "tokens_per_s_per_gpu", float(r["value"]), n)


def internlm(rows: list[Row]) -> list[Case]:
    """The rows of the module docstring: tokens per GPU per second, the optimizer sharded over
    the whole data-parallel group."""
    return [internlm_case(r) for r in rows if r["metric"] == "tokens_per_s_per_gpu" and shards_over_dp(r)]

"""MegaScale's Megatron-LM baseline (arXiv:2402.15627, Table 2), as e2e cases.

ByteDance measured GPT-175B (96 layers, hidden 12,288, 128 heads, vocabulary 64,000, 2,048 tokens)
under Megatron-LM at commit 285068c8 (NVIDIA/Megatron-LM, 2023-01-11) on 256-12,288 Ampere GPUs,
TP 8 x PP 8 with an interleaved schedule of six virtual stages (sec. 6.1, Table 1), at a fixed
global batch: 768 sequences on 256-1,024 GPUs, 6,144 on 3,072-12,288, so DP grows 4 -> 16 and
48 -> 192 while the micro-batches of each pipeline fall 192 -> 48 and 128 -> 32
(``data/e2e/megascale_table2.csv``, whose header has the provenance). The paper's own stack
(MegaScale rows: parallel transformer block, sliding-window attention, its TP/PP/DP overlap,
FlashAttention-2, LAMB) is transcribed but not scored: the simulator runs Megatron-LM's layers.

Not printed for the baseline, so Megatron-LM 285068c8's own behaviour and the recipe NVIDIA
published for GPT-175B on A100 at the time (arXiv:2205.05198, the one Megatron-LM's README of
2022-2023 quotes) are taken:

* bf16: the A100 practice of 2023 (MFU is quoted over 312 TFLOP/s, the bf16 and fp16 peak alike).
  Under ``--bf16`` Megatron-LM 285068c8 forces ``accumulate_allreduce_grads_in_fp32``
  (``megatron/arguments.py``): fp32 main gradients in one contiguous buffer per model chunk.
* micro-batch 1: ``examples/pretrain_gpt3_175B.sh`` of the same commit (``--micro-batch-size 1``).
* sequence parallelism with selective recompute (the attention core): arXiv:2205.05198's recipe.
  Full recompute, the example script's, would put the hardware FLOP/s at 4/3 of the printed
  MFU, 70.7% of peak on 256 GPUs, above what any Megatron-LM of the time reached on A100; no
  recompute does not fit 80 GB at 192 in-flight micro-batch chunks per pipeline.
* no FlashAttention (``--use-flash-attn`` was merged in that very commit, off by default; the
  paper lists FlashAttention-2 among MegaScale's own "efficient operators"): the score matrix is
  materialised, Megatron's fused softmax (``MEGATRON_LEGACY``).
* no distributed optimizer (off by default): the local DDP of ``megatron/model/distributed.py``
  AllReduces each model chunk's fp32 gradient buffer across DP after the last backward,
  unoverlapped (``allreduce_gradients``; overlapped reduction came to Megatron-LM in mid-2023);
  gradient-accumulation fusion on (the default); the async TP AllReduce off (disabled by
  ``--sequence-parallel``); no scatter/gather of pipeline tensors (skipped under sequence
  parallelism, ``megatron/p2p_communication.py``).

The cluster runs on the ``dgx-a100`` profile (A100 SXM 80 GB, NVLink3, 8 x 200 Gb/s per node): the
paper prints eight 200G NICs per server but neither the GPU model nor its NVLink; its RoCE fabric
(Tomahawk 4, three layers at 1:1) and congestion control are not modelled.
"""

from __future__ import annotations

from simulator.e2e_validation.rows import Row, parse_int
from simulator.e2e_validation.scenarios import MEGATRON_LEGACY, Case, gpt_model, make_scenario

# One flat fp32 gradient buffer per model chunk (megatron/model/distributed.py at 285068c8)
ONE_FLAT_BUFFER = 2**40


def is_megatron_row(r: Row) -> bool:
    """The Megatron-LM baseline rows (the MegaScale rows carry ``MegaScale stack`` in notes)."""
    return "MegaScale stack" not in r["notes"]


def megascale_case(r: Row) -> Case:
    """One Megatron-LM row of Table 2 with the settings of the module docstring."""
    n, tp, pp, vp = (parse_int(r[k], 1) for k in ("num_gpus", "tp", "pp", "vp"))
    dp = n // (tp * pp)
    gb, mb = parse_int(r["global_batch"]), parse_int(r["micro_batch"], 1)
    par: dict = dict(tp=tp, pp=pp, zero=0, sequence_parallel=True, grad_reduce_dtype="fp32",
                     overlap_grad_reduce=False, ddp_bucket_elements=ONE_FLAT_BUFFER,
                     gradient_accumulation_fusion=True, async_tensor_model_parallel_allreduce=False,
                     scatter_gather_tensors_in_pipeline=False)
    if vp > 1:
        par.update(pp_schedule="interleaved", vp=vp)
    label = f"{r['model_name']} tp{tp} pp{pp} vp{vp} dp{dp} gbs{gb} {n} GPUs"
    return Case("megascale", label,
                make_scenario(f"megascale-mlm-175b-{n}", "dgx-a100", n, gpt_model(r), micro_batch=mb,
                              global_batch=gb, dtype="bf16", recompute="selective", parallel=par,
                              stack=MEGATRON_LEGACY),
                "step_time_s", float(r["value"]), n)


def megascale(rows: list[Row]) -> list[Case]:
    """The Megatron-LM rows of arXiv:2402.15627 Table 2: GPT-175B, TP 8 x PP 8 x vp 6, at a fixed
    batch of 768 sequences on 256-1,024 Ampere GPUs (DP 4-16) and 6,144 on 3,072-12,288 (DP
    48-192), step time as printed. The MegaScale rows (its own stack) are transcribed, not scored."""
    return [megascale_case(r) for r in rows if r["metric"] == "step_time_s" and is_megatron_row(r)]

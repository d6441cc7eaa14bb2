"""vTrain's measured ground truth (VIA-Research/vTrain, MICRO 2024), as e2e cases.

vTrain validated its simulator against iteration times measured with Megatron-DeepSpeed on A100 GPUs
and published them (``data/ground_truth_multi.csv``: GPT 3.6B-175B on 64-512 GPUs;
``data/ground_truth_single.csv``: GPT with hidden 1,024 or 2,048 and 12-24 layers on 2-8 GPUs), each
row with its TP, DP, PP, micro-batch and global batch; every validation config of the repository
(``config/validation/``) sets full activation checkpointing, the 1F1B schedule, no DDP gradient
bucketing and nodes of 8 GPUs with 800 Gb/s between them (the ``vtrain-a100`` profile). The stack
is Megatron-DeepSpeed's, built as the BLOOM rows of the same code base are (``sources._bloom``): fp16
with DeepSpeed ZeRO-1 (the optimizer states of the 175B rows at TP4 x PP4 fit 80 GB only sharded)
reducing the gradients after the backward (``overlap_comm`` off by default), Megatron's legacy
kernels (materialised attention scores, fused softmax and bias-GeLU, which vTrain's traced model
runs), the blocking column-parallel AllReduce and DeepSpeed's pipeline engine (Megatron-DeepSpeed's
GPTModelPipe) sending each TP rank's 1/tp of an activation and AllGathering it on
receipt, each send and receive a blocking transfer of its own (``pp_engine: deepspeed``). The weight
gradients accumulate unfused (``gradient_accumulation_fusion: false``): Microsoft's Megatron-DeepSpeed
keeps Megatron's fused wgrad accumulation commented out, since DeepSpeed's engine owns the fp16
``param.grad`` (no ``main_grad`` buffer), so autograd adds every micro-batch's gradient in place
(mtnlg_sources.py has the evidence). The vocabulary is vTrain's default, the GPT-2 BPE (50,257),
padded as Megatron pads it.
"""

from __future__ import annotations

from simulator.e2e_validation.rows import Row, parse_int, parse_precision
from simulator.e2e_validation.scenarios import (MEGATRON_DEEPSPEED_PARALLEL, MEGATRON_LEGACY, Case, gpt_model,
                                               make_scenario, padded_vocab)
from simulator.schedule.attention import megatron_fused_softmax_available

VTRAIN_PROFILE = "vtrain-a100"


def _vtrain_case(source: str, r: Row) -> Case:
    n, tp, pp, dp = (parse_int(r[k], 1) for k in ("num_gpus", "tp", "pp", "dp"))
    mb, gb = parse_int(r["micro_batch"], 1), parse_int(r["global_batch"])
    model = gpt_model({**r, "vocab": str(padded_vocab(parse_int(r["vocab"]), tp))}, position="learned", tied=True)
    par = dict(tp=tp, pp=pp, grad_reduce_dtype="fp16", **MEGATRON_DEEPSPEED_PARALLEL)
    label = f"{r['model_name']} tp{tp} pp{pp} dp{dp} mbs{mb} gbs{gb}" + ("" if n == 8 else f" {n} GPUs")
    scenario = make_scenario(f"{source}-{r['model_name'].replace(' ', '-')}-{tp}-{pp}-{dp}-{mb}-{gb}", VTRAIN_PROFILE,
                             n, model, micro_batch=mb, global_batch=gb, dtype=parse_precision(r) or "fp16",
                             recompute="full", parallel=par, stack=MEGATRON_LEGACY)
    if n < 8:  # the first n GPUs of one node (vTrain's 2- and 4-GPU runs)
        scenario["gpus_per_node"] = n
    # Megatron's fused softmax takes b·np multiples of 4 (the fixed rule of 2022 on; vTrain's tree is
    # of 2023, PyTorch 2.0.1): a plan whose heads per rank times micro-batch is not runs PyTorch's
    # fp32 softmax (GPT-18.4B's 48 heads at TP 16: np 3)
    heads = parse_int(r["heads"])
    if not megatron_fused_softmax_available(mb, heads // tp, parse_int(r["seq_len"]), max_seq=4096):
        scenario["training"]["masked_softmax"] = "torch"
    return Case(source, label, scenario, "step_time_s", float(r["value"]), n)


def _plan(r: Row) -> tuple[str, ...]:
    return tuple(r[k] for k in ("model_name", "num_gpus", "tp", "pp", "dp", "micro_batch", "global_batch"))


def vtrain_multi(rows: list[Row]) -> list[Case]:
    """Every row of vTrain's multi-node ground truth: GPT 3.6B (64 GPUs), 18.4B (256), 39.1B and
    175B (512) at a fixed global batch per model (512, 1,024, 1,536), TP 1-16, PP 1-32 and
    micro-batch 2-64 as measured; the one plan measured twice (175B tp4 pp32 dp4 mbs2: 53.91 and
    53.94 s) once, at its first time."""
    seen: set[tuple[str, ...]] = set()
    out = []
    for r in rows:
        if r["metric"] != "step_time_s" or _plan(r) in seen:
            continue
        seen.add(_plan(r))
        out.append(_vtrain_case("vtrain_multi", r))
    return out


def vtrain_single(rows: list[Row], gpus: tuple[int, ...] = (2, 4, 8)) -> list[Case]:
    """vTrain's single-node rows on ``gpus`` GPUs of one node (the 2- and 4-GPU runs on the
    first GPUs of the node, a scenario's ``gpus_per_node``): GPT with hidden 1,024 or 2,048, 16
    heads, 12-24 layers, sequence 1,024, under each plan (TP x DP x PP = the GPUs: 3 on 2 GPUs, 6
    on 4, 9 on 8), at the largest global batch measured for the plan, every micro-batch measured
    there (1 up to the whole per-replica batch); the smaller global batches of the same plans (the
    same micro-batches, fewer of them) are left out for run time."""
    kept = [r for r in rows if r["metric"] == "step_time_s" and parse_int(r["num_gpus"]) in gpus]
    largest: dict[tuple[str, ...], int] = {}
    for r in kept:
        k = (r["model_name"], r["num_gpus"], r["tp"], r["pp"], r["dp"])
        largest[k] = max(largest.get(k, 0), parse_int(r["global_batch"]))
    return [_vtrain_case("vtrain_single", r) for r in kept
            if parse_int(r["global_batch"]) == largest[(r["model_name"], r["num_gpus"], r["tp"], r["pp"], r["dp"])]]

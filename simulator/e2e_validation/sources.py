"""The published sources: which rows of each CSV are used and how each becomes a :class:`Case`.

Each builder's docstring is its selection rule; the report prints it under the source's table.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterable

from simulator.e2e_validation.rows import Row, parse_hardware, parse_int, parse_precision, parse_recompute, read_rows
from simulator.e2e_validation.scenarios import (
    AUTOMODEL_STATES,
    MEGATRON_2020,
    MEGATRON_DEEPSPEED_PARALLEL,
    MEGATRON_LEGACY,
    MEGATRON_LM_DDP_2024,
    MODERN,
    NEMO_LAUNCHER_2024,
    Stack,
    Case,
    TORCH_EAGER_FA1,
    TORCH_EAGER_TE,
    TORCHTITAN_COMPILED,
    TORCHTITAN_EAGER,
    TORCHTITAN_EAGER_FUSED_NORM,
    gpt_model,
    llama_model,
    make_scenario,
    megatron_parallel,
    padded_vocab,
)
from simulator.e2e_validation.bridge_card_sources import bridge_card, bridge_card_hybrid
from simulator.e2e_validation.bridge_dense_sources import bridge_dense, bridge_dense_2604
from simulator.e2e_validation.dgxc_gpt3_sources import dgxc_gpt3
from simulator.e2e_validation.dgxc_grok1_sources import dgxc_grok1
from simulator.e2e_validation.dgxc_nemotronh_sources import dgxc_nemotronh
from simulator.e2e_validation.dgxc_llama_sources import dgxc_llama, dgxc_llama_nemo24
from simulator.e2e_validation.fms_fsdp_sources import fms_fsdp
from simulator.e2e_validation.h200_step_sources import h200_eager
from simulator.e2e_validation.hf_llama_sources import cudnn_llama1b
from simulator.e2e_validation.llama3_sources import llama3
from simulator.e2e_validation.internlm_sources import internlm
from simulator.e2e_validation.nanotron_sources import nanotron_playbook
from simulator.e2e_validation.megascale_sources import megascale
from simulator.e2e_validation.mtnlg_sources import mtnlg
from simulator.e2e_validation.mlperf_sources import mlperf_gpt3, mlperf_gpt3_v30
from simulator.e2e_validation.megatron_ci_sources import megatron_ci
from simulator.e2e_validation.nemo_b200_sources import nemo_b200
from simulator.e2e_validation.simumax_sources import simumax_b200
from simulator.e2e_validation.modelzoo_sources import megatron_lm_dsv3_gb200, modelzoo_mixtral, modelzoo_qwen3
from simulator.e2e_validation.moe_sources import (automodel_moe, bridge_ep_overlap, megatron_bridge_moe,
                                                  megatron_bridge_moe_ultra)
from simulator.e2e_validation.usp_sources import usp
from simulator.e2e_validation.vtrain_sources import vtrain_multi
from simulator.files import bundled_dir
from simulator.schedule.attention import megatron_fused_softmax_available

DATA_DIR = bundled_dir("data/e2e")


@dataclass
class Source:
    """How to select and map the rows of one CSV."""

    key: str
    title: str
    file: str
    build: Callable[[list[Row]], list[Case]]
    caveats: list[str] = field(default_factory=list)


# PyTorch DDP's bucket_cap_mb = 25 (torch/nn/parallel/distributed.py), in fp16 gradients
TORCH_DDP_BUCKET_FP16 = 25 * 2**20 // 2
# Megatron-LM 2020's local DDP flattens every fp16 gradient into one buffer
# (megatron/model/distributed.py, allreduce_params: _flatten_dense_tensors per dtype)
ONE_FLAT_BUFFER = 2**40


def _megatron2020(rows: list[Row]) -> list[Case]:
    """A100 rows that fill whole DGX nodes (8-way TP on one node; 128-way DP). The README's
    TFLOP/s follow eq. 3 with the factor 96 (1.076 s and 149.8 TFLOP/s for the 1B model agree
    with it), so activation recompute was on: scenarios use full recompute. The column-parallel
    backward AllReduce follows the wgrad GEMM (Megatron-LM had no async TP AllReduce before Sep
    2021). Data parallelism as the README of the same commit describes it: its local DDP
    all-reduces every fp16 gradient in one flattened buffer after the backward; PyTorch's DDP
    (``--DDP-impl torch``, 25 MB buckets during the backward) is "more efficient at larger model
    parallel sizes" but slower for "2.5 billion parameters using 2-way model parallel and 1.2
    billion parameters with no model parallel": local DDP for tp <= 2, PyTorch DDP above. The
    optimizer is that commit's FP16_Optimizer (``training.optimizer: fp16_optimizer``)."""
    out = []
    for r in rows:
        if r["metric"] != "step_time_s" or "A100" not in r["gpu"]:
            continue
        n, tp = parse_int(r["num_gpus"]), parse_int(r["tp"], 1)
        if n % 8:
            continue
        gb = parse_int(r["global_batch"])
        dp = n // tp
        torch_ddp = tp > 2
        out.append(Case("megatron2020", f"{r['model_name']} tp{tp} dp{dp} {n} GPUs", make_scenario(
            f"mlm2020-{r['model_name']}-{n}", "dgx-a100", n, gpt_model(r),
            micro_batch=gb // dp, global_batch=gb, dtype="fp16", recompute="full",
            parallel=dict(tp=tp, overlap_grad_reduce=torch_ddp, grad_reduce_dtype="fp16",
                          ddp_bucket_elements=TORCH_DDP_BUCKET_FP16 if torch_ddp else ONE_FLAT_BUFFER,
                          async_tensor_model_parallel_allreduce=False),
            stack=MEGATRON_2020), "step_time_s", float(r["value"]), n))
    return out


# tr11-176B-ml.slurm: ``--pad-vocab-size-to 250880`` (the tokenizer's 250,680 tokens and 200 unused
# ones, "a multiple of 8 * 128"; bigscience commit b4aaa19, 2022-03-01)
BLOOM_PADDED_VOCAB = 250_880


def bloom_fused_softmax(micro_batch: int, heads_per_rank: int, seq: int, final: bool) -> bool:
    """Whether a BLOOM run's attention took Megatron-DeepSpeed's fused scale-mask-softmax kernel
    (``schedule.attention.megatron_fused_softmax_available``). The shape search of Feb 2022 ran
    the tree between 9f5f5d4c and 1cb76a64, whose ``is_kernel_available`` sizes the kernel's rows
    per block from the heads on the rank instead of the key length: at TP 8 with 64 heads the
    fused kernel runs for micro-batches of 4 and 8 only, and PyTorch's fp32 softmax for 1, 2 and
    6. The final run (from 2022-03-11) ran the fixed tree (1cb76a64: keys up to 4,096); its plan
    (b·np = 56) passes either rule. The search's ``NHEADS`` table (TP 8, micro-batch 4,
    chronicles-prequel.md "NHEADs comparison") shows the step: 112 heads (np 14: 16 rows per
    block against b·np = 56) took 138.7 s where 64 and 128 heads took 120.2 and 124.9 s."""
    if final:
        return megatron_fused_softmax_available(micro_batch, heads_per_rank, seq, max_seq=4096)
    return megatron_fused_softmax_available(micro_batch, heads_per_rank, seq, swapped_batch_per_block=True)


def _bloom(rows: list[Row]) -> list[Case]:
    """The final BLOOM-176B run (GBS 2048) and the 02-25 and later shape/topology search rows
    on the full 384 GPUs (after the node fix), one per distinct (shape, plan, micro-batch), at the
    production batch of 2,048 where the plan was also measured at another batch, on the
    jean-zay-a100 profile (DGX A100 nodes with Jean Zay's 4 Omni-Path 100 Gb/s links). DeepSpeed
    ZeRO-1 reduces the gradients after the backward (``overlap_comm`` off by default). The
    column-parallel backward AllReduce follows the wgrad GEMM (Megatron-DeepSpeed's
    ColumnParallelLinear: ``copy_to_tensor_model_parallel_region`` then ``F.linear``), and
    DeepSpeed's pipeline engine sends each TP rank's 1/tp of the activations and gradients and
    AllGathers them on receipt (``is_pipe_partitioned``, ``is_grad_partitioned``), each send and
    receive a blocking ``dist.send``/``dist.recv`` of its own, and gathers a sent output back over
    tp before its backward (``pp_engine: deepspeed``). The bf16 final
    run uses DeepSpeed's BF16_Optimizer (``ZERO_STAGE=0``, "it implements its own zero stage 1
    equivalent"): fp32 gradients accumulated after every micro-batch and AllReduced whole
    (``zero1_impl: deepspeed-bf16``). The fp16 runs accumulate the weight gradients unfused
    (``gradient_accumulation_fusion: false``): the fork's ColumnParallelLinear and RowParallelLinear
    compute them with a plain ``F.linear`` backward (bigscience-workshop/Megatron-DeepSpeed
    ``megatron/mpu/layers.py``), and DeepSpeed's engine owns the fp16 ``param.grad``, so autograd adds
    every micro-batch's gradient to it in place (mtnlg_sources.py has the evidence). Every run set ``--position-embedding-type alibi`` (tr11-200B-ml.slurm
    from 02-10 on, tr11-176B-ml.slurm), on the materialised scores of that fork's attention. The
    embedding and LM head have Megatron's padded vocabulary (``_vocab_size_with_padding``): the final
    run's ``--pad-vocab-size-to 250880``, the search rows' 250,000 rounded up to a multiple of
    ``make_vocab_size_divisible_by`` (128) x TP, as their scripts set neither option."""
    out: list[Case] = []
    seen: set[tuple[object, ...]] = set()

    def key(r: Row) -> tuple[object, ...]:
        return (r["layers"], r["hidden"], r["heads"], r["tp"], r["pp"], r["micro_batch"])

    # a plan measured at several batches: the production batch, 2,048 (the 02-25 table's GBS 1,568
    # run of tp8 pp6 dp8 mbs4 took as long as the 2,048 one, 113.0 vs 114.1 s, for 23% fewer samples)
    at_2048 = {key(r) for r in rows if r["global_batch"] == "2048"}
    for r in sorted(rows, key=lambda r: r["model_name"] != "BLOOM-176B"):  # the final run first
        if r["metric"] != "step_time_s" or "INCONSISTENT" in r["notes"] or not r["layers"]:
            continue
        if r["global_batch"] != "2048" and key(r) in at_2048:
            continue
        n, tp, pp = parse_int(r["num_gpus"]), parse_int(r["tp"], 1), parse_int(r["pp"], 1)
        dp = parse_int(r["dp"], 1)
        final = r["model_name"] == "BLOOM-176B"
        if final and parse_int(r["global_batch"]) != 2048:
            continue
        date = r["notes"].split("date=", 1)[1][:5] if "date=" in r["notes"] else ""
        if not final and (n != 384 or date < "02-25"):
            continue
        if tp * pp * dp != n:
            continue
        if key(r) in seen:
            continue
        seen.add(key(r))
        dtype = parse_precision(r) or "fp16"
        mb, gb = parse_int(r["micro_batch"], 1), parse_int(r["global_batch"])
        # bf16 (the final run): DeepSpeed's BF16_Optimizer with its fp32 gradients, AllReduced in
        # buffers of MEMORY_OPT_ALLREDUCE_SIZE = 5e8 elements (deepspeed/runtime/engine.py)
        # (which accumulates in its own fp32 buffers: gradient_accumulation_fusion does not apply)
        bf16_opt = dict(zero1_impl="deepspeed-bf16", grad_reduce_dtype="fp32", ddp_bucket_elements=500_000_000,
                        gradient_accumulation_fusion=True) if dtype == "bf16" else {}
        vocab = BLOOM_PADDED_VOCAB if final else padded_vocab(parse_int(r["vocab"]), tp)
        scn = make_scenario(f"bloom-{len(out)}", "jean-zay-a100", n,
                            gpt_model({**r, "vocab": str(vocab)}, position="alibi", tied=True),
                            micro_batch=mb, global_batch=gb, dtype=dtype, recompute="full",
                            parallel=dict(tp=tp, pp=pp, **{**MEGATRON_DEEPSPEED_PARALLEL, **bf16_opt}),
                            stack=MEGATRON_LEGACY)
        if not bloom_fused_softmax(mb, parse_int(r["heads"]) // tp, parse_int(r["seq_len"]), final):
            scn["training"]["masked_softmax"] = "torch"
        out.append(Case("bloom", f"{r['model_name']} l{r['layers']} h{r['hidden']} a{r['heads']} "
                                 f"tp{tp} pp{pp} dp{dp} mbs{mb}" + (" (final run)" if final else f" ({date})"),
                        scn, "step_time_s", float(r["value"]), n))
    return out[:8]


# The NCCL of the 2021 paper's runs: its launch scripts (NVIDIA/Megatron-LM examples/sc21/SRUN.sh @de7dc40f)
# run every job in ``nvcr.io/nvidia/pytorch:20.12-py3``, whose release notes list NCCL 2.8.3; it
# runs with the tables of 2.8.4, the oldest encoded release (costs/nccl_versions.py: one older
# than 2.8.4 uses 2.8.4's), whose tuner (v2.8.4-1 ``tuning.cc``) has the same latencies and caps.
MEGATRON2021_NCCL = "2.8.3"


def _megatron2021_zero3(rows: list[Row]) -> list[Case]:
    """The ZeRO-3 rows of arXiv:2104.04473 Table 2: GPT-175B and GPT-530B under DeepSpeed ZeRO-3
    with no tensor or pipeline parallelism (dp = GPUs), on DGX A100 (Selene), global batch fixed
    while the GPUs double (one micro-batch per GPU per step). Megatron-LM of 2021 with DeepSpeed's
    stage 3 as released then (``zero3_impl: deepspeed-2021``: a gather per parameter through a
    rank list, a device synchronisation at every fetch) and its defaults (prefetch bucket 5e7, max
    live 1e9, persistence threshold 1e5 elements, reduce bucket 5e8, contiguous_gradients off, so
    each bucket of gradients is AllReduced whole), full activation recompute (the
    eq. 3 TFLOP/s count it), fp16, the legacy kernels (materialised attention scores). Megatron-LM
    as DeepSpeed ported it to stage 3 (DeepSpeedExamples ``Megatron-LM-v1.1.5-ZeRO3``, March 2021):
    the tied word embedding is an external parameter of the root module, held for the whole
    micro-batch (``schedule/zero.py``). The PTD-P rows of the table are the ``megatron2021_ptdp``
    source."""
    out = []
    for r in rows:
        if r["metric"] != "tflops_per_gpu" or not r["zero_stage_or_fsdp"].startswith("ZeRO-3"):
            continue
        n, mb, gb = parse_int(r["num_gpus"]), parse_int(r["micro_batch"]), parse_int(r["global_batch"])
        out.append(Case("megatron2021_zero3", f"{r['model_name']} ZeRO-3 dp{n} mbs{mb}", make_scenario(
            f"mlm2021-zero3-{r['model_name']}-{n}", "dgx-a100", n, gpt_model(r),
            micro_batch=mb, global_batch=gb, dtype=parse_precision(r) or "fp16", recompute="full",
            parallel=dict(zero=3, zero3_impl="deepspeed-2021"), stack=MEGATRON_LEGACY),
            "megatron_hfu_tflops", float(r["value"]), n, nccl_version=MEGATRON2021_NCCL))
    return out


def smallest_interleave(layers_per_stage: int) -> int:
    """The fewest virtual stages (> 1) that split a stage's layers evenly: the interleaved schedule
    with the least extra pipeline communication (a stage with one layer is not interleaved)."""
    return next((v for v in range(2, layers_per_stage + 1) if layers_per_stage % v == 0), 1)


def _megatron2021_ptdp_case(source: str, r: Row) -> Case:
    """One PTD-P row of arXiv:2104.04473 as Megatron-LM of early 2021 ran it (sec 5.1: "the
    interleaved pipeline schedule with the scatter/gather optimization enabled"): TP and PP as
    printed, dp = GPUs / (tp x pp); the micro-batch, the virtual stages and the DDP of the row
    where the CSV has them (every row of Tables 1 and 2: the paper's launch scripts,
    NVIDIA/Megatron-LM ``examples/sc21/`` @de7dc40f, whose ``--checkpoint-activations`` and
    ``CONFIG.sh`` ``--fp16`` every row follows), else micro-batch 1, the fewest virtual stages that
    split a stage's layers evenly and the local DDP; full recompute
    (eq. 3 counts it), fp16 with the legacy kernels (materialised attention scores), the blocking
    TP AllReduce of the time (``async_tensor_model_parallel_allreduce`` came in Sep 2021), no
    distributed optimizer (it came in 2022). The local DDP of that commit AllReduces every fp16
    gradient in one flat buffer after the backward (``megatron/model/distributed.py``);
    ``--DDP-impl torch`` is PyTorch's DDP, 25 MB buckets reduced during the backward of the last
    micro-batch (Megatron runs the others under ``no_sync``). Either way the weight gradients
    accumulate through autograd: ``F.linear`` in ``mpu/layers.py`` (fused accumulation came in
    2022), so every micro-batch after the first adds its fp16 gradients into ``param.grad``
    (``gradient_accumulation_fusion: false``)."""
    n, tp, pp = parse_int(r["num_gpus"]), parse_int(r["tp"], 1), parse_int(r["pp"], 1)
    dp, layers = n // (tp * pp), parse_int(r["layers"])
    mb, gb = parse_int(r["micro_batch"], 1), parse_int(r["global_batch"])
    torch_ddp = "--DDP-impl torch" in r["notes"]
    par: dict = dict(tp=tp, pp=pp, zero=0, overlap_grad_reduce=torch_ddp, grad_reduce_dtype="fp16",
                     gradient_accumulation_fusion=False,
                     ddp_bucket_elements=TORCH_DDP_BUCKET_FP16 if torch_ddp else ONE_FLAT_BUFFER,
                     async_tensor_model_parallel_allreduce=False, scatter_gather_tensors_in_pipeline=True)
    vp = parse_int(r["vp"]) or (smallest_interleave(layers // pp) if pp > 1 else 1)
    if vp > 1:
        par.update(pp_schedule="interleaved", vp=vp)
    return Case(source, f"{r['model_name']} tp{tp} pp{pp} vp{vp} dp{dp} {n} GPUs", make_scenario(
        f"mlm2021-{source}-{r['model_name']}-{n}", "dgx-a100", n, gpt_model(r),
        micro_batch=mb, global_batch=gb, dtype=parse_precision(r) or "fp16", recompute="full",
        parallel=par, stack=MEGATRON_LEGACY), "megatron_hfu_tflops", float(r["value"]), n,
        nccl_version=MEGATRON2021_NCCL)


# Forward and backward passes of one pipeline (pp x vp x micro-batches) above which a Megatron 2021
# or 2022 row is left out for run time. Micro-batch folding (replay/fold.py) replays one reduced step
# of such a pipeline, and what remains grows with the passes of the full one (its build and the
# fold's checks of every op): GPT-530B at TP 8 x PP 35 x VP 3 with 280 micro-batches (29,400) takes
# 8-10 CPU s, GPT-1T at TP 8 x PP 64 with 512 (32,768) 8-9 s, the same 530B plan with 560 and 1,120
# micro-batches (58,800 and 117,600: Table 2's 1,120 and 560 GPUs) 12 and 18 s; GPT-175B on 384
# GPUs at vp 4 (384 micro-batches through 48 virtual stages, 18,432) about 4 s. The cap keeps the
# 530B rows of 280 micro-batches and leaves out the 1T rows, so that the step-time validation stays
# within its 5 minutes on 2 cores (benchmarks/bench_regeneration.py).
MAX_PIPELINE_PASSES = 30_000


def _affordable(c: Case) -> bool:
    p, t = c.scenario["parallel"], c.scenario["training"]
    micro = t["global_batch"] // (t["micro_batch"] * (c.n_gpus // (p.get("tp", 1) * p.get("pp", 1))))
    return p.get("pp", 1) * p.get("vp", 1) * micro <= MAX_PIPELINE_PASSES


def _megatron2021_ptdp(rows: list[Row]) -> list[Case]:
    """The PTD-P rows of arXiv:2104.04473 Table 2, the comparison the ZeRO-3 rows belong to:
    GPT-175B (TP 8 x PP 12) on 384-1,536 and GPT-530B (TP 8 x PP 35) on 560-2,240 DGX A100 GPUs at
    a fixed global batch, micro-batch 1 (printed), so DP grows 4 -> 16 and 2 -> 8 while the
    micro-batches per pipeline fall 384 -> 96 and 1,120 -> 280. The TP x PP split of the printed
    model-parallel size (96, 280) is the one of Table 1; built as the Table 1 rows
    (``megatron2021_weak``). The paper's launch scripts (NVIDIA/Megatron-LM ``examples/sc21/``
    @de7dc40f) have none for Table 2 or Figure 10; the rows take the settings of the scripts that
    run the same model at the same split: GPT-175B at TP 8 x PP 12 in ``run_figure_12.sh`` and ``run_figure_18.sh``
    (``--num-layers-per-virtual-pipeline-stage 2``: vp 4, not the fewest even split, 2),
    GPT-530B at TP 8 x PP 35 in ``run_table_1.sh`` (``... 1``: vp 3); both ``MBS=1``,
    ``DDP=local``. Rows whose pipeline runs more than ``MAX_PIPELINE_PASSES`` passes (GPT-530B on
    560 and 1,120 GPUs: 1,120 and 560 micro-batches through 105 virtual stages) are left out for run
    time."""
    cs = [_megatron2021_ptdp_case("megatron2021_ptdp", r) for r in rows
          if r["metric"] == "tflops_per_gpu" and "PTD-P" in r["zero_stage_or_fsdp"]]
    return [c for c in cs if _affordable(c)]


def _megatron2021_weak(rows: list[Row]) -> list[Case]:
    """Every row of arXiv:2104.04473 Table 1: GPT 1.7B-1T weak scaling on 32-3,072 DGX A100 GPUs
    (TP 1-8, PP 1-64, DP 6-32 derived), Megatron-LM of 2021 with the scatter/gather optimisation.
    The paper prints neither the micro-batch nor the virtual stages; its launch scripts do
    (NVIDIA/Megatron-LM ``examples/sc21/run_table_1.sh``, "scripts that were used to produce the
    results" of the paper, whose TP, PP, batch, shape and node count match every row): micro-batch
    16, 16, 16, 8, 4, 2, 2, 1, 1, 1 from 1.7B to 1T, ``--num-layers-per-virtual-pipeline-stage`` 5,
    5, 3 and 1 for 76B, 145B, 310B and 529.6B (vp 3, 2, 2, 3) and none for 39B and 1T (the plain
    1F1B schedule), and ``--DDP-impl torch`` up to 18B (PyTorch's DDP, overlapped with the
    backward), ``local`` above. The 1T row (512 micro-batches through 64 stages, more than
    ``MAX_PIPELINE_PASSES`` passes) is left out for run time."""
    cs = [_megatron2021_ptdp_case("megatron2021_weak", r) for r in rows if r["metric"] == "tflops_per_gpu"]
    return [c for c in cs if _affordable(c)]


def _megatron2022(rows: list[Row]) -> list[Case]:
    """arXiv:2205.05198 Table 5: GPT 22B (TP 8, 8 GPUs), 175B (TP 8 x PP 8, 64), 530B (TP 8 x PP 35,
    280) and 1T (TP 8 x PP 64, 512) on DGX A100 80GB (Selene) with data parallelism 1 and one
    micro-batch per GPU of the global batch (4, 64, 280, 512), each with full recompute (tensor
    parallelism alone) and with the paper's sequence parallelism plus selective recompute (the
    attention core re-run). Megatron-LM of May 2022: the async column-parallel AllReduce (Sep 2021),
    fused weight-gradient accumulation (Feb 2022), the scatter/gather pipeline exchange without
    sequence parallelism (on by default Feb 2021 - Mar 2023), no --overlap-p2p-communication (2023),
    the legacy kernels (materialised scores, fused softmax), fp16 (not printed: the README's GPT
    examples run --fp16). Micro-batch and virtual stages are not printed: those of Calculon's
    validation of the same table (micro-batch 4 for 22B, 1 for the pipelined models; 3 virtual
    stages for 175B and 530B, none for 1T). The 1T rows (512 micro-batches through 64 stages, more
    than ``MAX_PIPELINE_PASSES`` passes) are left out for run time."""
    out = []
    for r in rows:
        if r["metric"] != "step_time_s":
            continue
        n, tp, pp = parse_int(r["num_gpus"]), parse_int(r["tp"], 1), parse_int(r["pp"], 1)
        sp = r["sequence_parallel"] == "true"
        notes = r["notes"]
        vp = int(notes.split("pipeline_interleaving ", 1)[1].split()[0]) if "pipeline_interleaving " in notes else 1
        par: dict = dict(tp=tp, pp=pp, zero=0, sequence_parallel=sp, grad_reduce_dtype="fp16",
                         scatter_gather_tensors_in_pipeline=True)
        if vp > 1:
            par.update(pp_schedule="interleaved", vp=vp)
        recompute = parse_recompute(r)
        out.append(Case("megatron2022", f"{r['model_name']} tp{tp} pp{pp} vp{vp} {n} GPUs "
                                        + ("SP + selective" if sp else "full recompute"),
                        make_scenario(f"mlm2022-{r['model_name']}-{recompute}", "dgx-a100", n, gpt_model(r),
                                      micro_batch=parse_int(r["micro_batch"], 1),
                                      global_batch=parse_int(r["global_batch"]), dtype=parse_precision(r) or "fp16",
                                      recompute=recompute, parallel=par, stack=MEGATRON_LEGACY),
                        "step_time_s", float(r["value"]), n))
    return [c for c in out if _affordable(c)]


def _automodel(rows: list[Row]) -> list[Case]:
    """Dense pre-training rows (LoRA fine-tuning rows are left out; MoE rows: ``automodel_moe``)."""
    out: list[Case] = []
    for r in rows:
        if r["metric"] != "step_time_s" or "Pre-Training" not in r["notes"]:
            continue
        if not r["model_name"].lower().startswith("llama"):
            continue
        n, tp, pp, cp = parse_int(r["num_gpus"]), parse_int(r["tp"], 1), parse_int(r["pp"], 1), parse_int(r["cp"], 1)
        scn = make_scenario(f"automodel-{len(out)}", "dgx-h100", n, llama_model(r),
                            micro_batch=parse_int(r["micro_batch"], 1), global_batch=parse_int(r["global_batch"]),
                            dtype="bf16", recompute=parse_recompute(r),
                            parallel=dict(tp=tp, pp=pp, cp=cp, zero=3, zero3_impl="fsdp2"), stack=TORCH_EAGER_TE)
        # The Llama 3 70B row's config (examples/llm_pretrain/custom_llama3_1_70b_pretrain_benchmark_8nodes.yaml
        # at 2013a4dd6, the commit that added the row) steps TransformerEngine's FusedAdam without
        # master_weights: the bf16 parameters updated in place, fp32 moments (its exp_avg_dtype and
        # exp_avg_sq_dtype default). FSDP2Config's default MixedPrecisionPolicy there reduces in bf16
        # (components/distributed/config.py at 2013a4dd6; fp32 from later commits): grad_reduce_dtype bf16.
        scn["training"].update(AUTOMODEL_STATES, optimizer="fused", optimizer_state_dtype="fp32")
        # The same config sets ``activation_checkpointing: True`` and ``enable_compile: True``: with
        # compile, ``fsdp2_strategy_parallelize`` (components/distributed/parallelizer.py at 2013a4dd6)
        # wraps every layer's ``self_attn`` and ``mlp`` in a non-reentrant checkpoint_wrapper, so
        # each block's GEMMs and attention re-run in backward (recompute full; the two RMSNorms,
        # outside the wrappers, are not re-run), and Inductor fuses the elementwise ops between the
        # TE linears (fused_kernels). Without the checkpointing the 80 layers' activations at 4,096
        # tokens per rank would not fit an 80 GB H100 (the memory model: 120 GiB).
        scn["training"].update(recompute="full", fused_kernels=True)
        out.append(Case("automodel", f"{r['model_name']} FSDP2 dp{n // (tp * pp * cp)} cp{cp} {n} GPUs", scn,
                        "step_time_s", float(r["value"]), n))
    return out


# torchtitan's train configs of f38766edb (2024-04) that set ``norm_type = "fused_rmsnorm"``:
# llama3_8b.toml and llama2_13b.toml; the 70B configs use the eager "rmsnorm".
TORCHTITAN_FUSED_NORM_MODELS = ("Llama 3 8B", "Llama 2 13B")


def _torchtitan(rows: list[Row]) -> list[Case]:
    """torchtitan's published FSDP2 (1D) throughput on A100 and H200. The A100 rows: Llama 2
    13B/70B (seq 4096) and Llama 3 8B/70B (seq 8192) on 64 A100 80GB (docs/performance.md of
    f38766edb, 2024-04), eager (every train config of that commit sets ``compile = false``), the
    Triton fused RMSNorm for 8B and 13B, foreach AdamW. The H200 rows: Llama 3 8B on 32 and 64
    H200 (benchmarks/llama3-8b_h200_202506_trainy-whitefiber.md), torch.compile with torchao's
    Float8 tensorwise linears (``dtype: fp8``, ``fp8_recipe: current``) gathered by FSDP2 in fp8
    (``enable_fsdp_float8_all_gather``: ``fp8_param_gather``), every linear but the LM head
    (``filter_fqns = ["output"]``: the head in bf16, ``training.fp8_output_layer`` false). FSDP2
    as torchtitan applies it:
    ``fully_shard`` per transformer block and the root, parameters gathered in bf16, gradients
    reduce-scattered in fp32 (``MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)``),
    fp32 sharded parameters and Adam states, gradient-norm clipping (``max_norm = 1.0``).

    Activation checkpointing: ``none`` and ``full`` as printed; torchtitan's op-level selective
    checkpointing (``selective_ac_option = "op"``, parallelize_llama.py's ``_save_list``) as
    ``recompute: selective_op``: the outputs of every ``aten.mm`` but every second one of a block,
    of SDPA and of reduce-scatter are saved, so wk, wo and w3 (37% of the block's forward GEMM
    FLOPs at Llama 3 8B's shape), the norms and SiLU-times-w3 re-run, the attention core does not;
    under Float8 (``aten._scaled_mm``, not in the list) every GEMM but w2 re-runs. The two
    ``selective layer`` rows (every N-th block fully checkpointed, torchtitan's
    ``selective_ac_option`` set to an integer) run ``recompute: full`` with ``recompute_method:
    every`` and N = 2: the page prints no N, and 2 is the option's default in the commit's
    ``torchtitan/config_manager.py`` ("2 = checkpoint every other layer"; the commit's tomls set
    ``'op'``, which the ``selective op`` rows run). ``parallelize_llama.py`` of the commit counts the
    wrapped blocks from 1 (``checkpoint_wrapper._count``), so blocks 2, 4, ... 32 (Llama 3 8B) are
    re-run and the odd ones keep their activations.

    Left out: the Grand Teton H100 rows (benchmarks/llama3_h100_202412 and asyncTP_llama3_h100
    2025-06, torchtitan docs of 2024-08): HBM2e H100s at 2.4 TB/s under a 500 W power limit, which
    no hardware profile describes (dgx-h100 is HBM3 at 3.35 TB/s and 700 W)."""
    out: list[Case] = []
    for r in rows:
        if r["metric"] != "tokens_per_s_per_gpu":
            continue
        a100, h200 = r["gpu"].startswith("A100"), r["gpu"].startswith("H200")
        if not (a100 or h200):
            continue
        n, mb = parse_int(r["num_gpus"]), parse_int(r["micro_batch"])
        fp8 = "fp8" in r["notes"]
        if a100:
            stack = TORCHTITAN_EAGER_FUSED_NORM if r["model_name"] in TORCHTITAN_FUSED_NORM_MODELS else TORCHTITAN_EAGER
        else:
            stack = TORCHTITAN_COMPILED
        scn = make_scenario(f"torchtitan-{len(out)}", "dgx-a100" if a100 else "dgx-h200", n, llama_model(r),
                            micro_batch=mb, global_batch=parse_int(r["global_batch"]), dtype="fp8" if fp8 else "bf16",
                            recompute="selective_op" if r["recompute"] == "selective op" else parse_recompute(r),
                            parallel=dict(zero=3, zero3_impl="fsdp2", grad_reduce_dtype="fp32"), stack=stack)
        if fp8:
            scn["training"].update(fp8_recipe="current", fp8_param_gather=True)
        if r["recompute"] == "selective layer":  # every 2nd block, the option's default (docstring)
            scn["training"].update(recompute="full", recompute_method="every", recompute_num_layers=2)
        out.append(Case("torchtitan", f"{r['model_name']} {r['gpu'].split(' ')[0]} FSDP{n} mbs{mb} {r['recompute']}"
                                      + (" float8 compile" if fp8 else " eager"), scn,
                        "tokens_per_s_per_gpu", float(r["value"]), n))
    return out


MCORE2024_NCCL = "2.21.5"  # the NCCL of NGC PyTorch 24.04-24.06, the latest containers before the README's table


def _mcore2024(rows: list[Row]) -> list[Case]:
    """Weak-scaling GPT rows (tflops_per_gpu = model FLOPs, no recompute; seq 4096, vocab
    131072). Precision, micro-batch, vp and recompute are not stated: bf16, the largest
    micro-batch that fits (:func:`largest_fitting_micro_batch`), no recompute, sequence parallel with TransformerEngine's default TP comm overlap (the README lists
    --tp-comm-overlap, which runs TE's per-GEMM default methods: tp_overlap te_default) with the
    GEMMs of its pipeline and bulk overlaps on every SM: Megatron-Core r0.8.0 (the label of the
    README's plots) passes ``ub_cfgs = {}`` to ``initialize_ub`` without --tp-comm-overlap-cfg
    (``initialize.py`` @937571cf), and every TransformerEngine of 2024 (1.x, the NGC PyTorch
    containers 24.01-24.12) then registers the communicators with ``set_sm_margin = 0``
    (``module/base.py`` v1.8 ``add_ub``; ``comm_gemm_overlap.h``: ``_math_sms = (set_sm_margin) ?
    SMs - num_comm_sm : SMs``); TE 2.0 (2025-02, commit 544dd14b) made the margin the default
    (``tp_overlap_sm_margin``). bf16 is what the table's MFU column counts against: each row's
    TFLOP/s over its MFU is 978-999 TFLOP/s, H100 SXM's dense bf16 peak (989.4) within the rounding
    of the percentages, not its fp8 peak (1979). The launch scripts were never published (NVIDIA/
    Megatron-LM issue #1571, May 2025, asks for them unanswered), so recompute stays the
    default. The
    distributed optimizer's parameter AllGather overlapped with forward (--overlap-param-gather),
    gradients reduced during backward (--overlap-grad-reduce) in fp32 (Megatron's main grads for
    bf16, ``accumulate_allreduce_grads_in_fp32``). The README also overlaps "pipeline-parallel
    communication (enabled by default)": ``--overlap-p2p-communication``, which Megatron-LM of that
    commit runs only with the interleaved schedule (``arguments.py`` @937571cf: "Setting
    args.overlap_p2p_comm to False since non-interleaved schedule does not support overlapping p2p
    communication"), so the pp > 1 rows ran interleaved 1F1B; the virtual stages are not printed:
    the fewest that split a stage's layers evenly, as for the 2021 rows. NCCL 2.21.5: the README
    of 2024-07-15 (@937571cf) recommends "the latest release of NGC's PyTorch container", then
    24.06 (NCCL 2.21.5; the CI image of that commit, 24.01, has 2.19.3), and NCCL 2.23.4, the
    first release whose tuner rates a one-rank-per-node ring's LL128 like any other, came out on
    2024-09-10: every release the runs can have used (2.7.3-2.22.3) rates it at 0.7 of the ring's
    bus bandwidth, and the tp8 rows' data-parallel groups have one rank per node."""
    out = []
    for r in rows:
        if r["metric"] != "tflops_per_gpu" or not r["tp"]:
            continue
        n, tp, pp = parse_int(r["num_gpus"]), parse_int(r["tp"], 1), parse_int(r["pp"], 1)
        if n > 1536:
            continue  # keep the run time reasonable; the 2304-6144 GPU rows behave like 1536
        vp = smallest_interleave(parse_int(r["layers"]) // pp) if pp > 1 else 1
        par = dict(megatron_parallel(tp, pp, vp), grad_reduce_dtype="fp32", tp_overlap_sm_margin=False,
                   **MEGATRON_LM_DDP_2024)
        gb, dp = parse_int(r["global_batch"]), n // (tp * pp)
        scn = largest_fitting_micro_batch(
            lambda mb: make_scenario(f"mcore-{r['model_name']}", "dgx-h100", n, gpt_model(r, position="rope", tied=False),
                                     micro_batch=mb, global_batch=gb, dtype="bf16", recompute="none", parallel=par),
            gb // (dp * pp))
        out.append(Case("mcore2024", f"{r['model_name']} tp{tp} pp{pp} vp{vp} dp{dp} mbs{scn['training']['micro_batch']} {n} GPUs",
                        scn, "megatron_model_tflops", float(r["value"]), n, nccl_version=MCORE2024_NCCL))
    return out


def largest_fitting_micro_batch(scenario: Callable[[int], dict], per_stage_batch: int) -> dict:
    """The scenario with the largest micro-batch that divides `per_stage_batch` (a pipeline's
    batch over its stages, so the micro-batch count stays a multiple of pp, as Megatron's
    interleaved schedule requires) and whose peak memory fits the GPU
    (:func:`~simulator.schedule.memory.memory_per_gpu`); micro-batch 1 if none fits.

    The rule of the launch scripts of NVIDIA's 2021 weak-scaling table (Megatron-LM
    ``examples/sc21/run_table_1.sh``, the same author and method as the 2024 table): the
    micro-batch is as large as memory allows, the whole data-parallel batch where it fits
    (micro-batch 16 = 512 / 32 for every pp 1 row up to 7.5B), smaller as the model grows."""
    from simulator.config.scenario import build_scenario
    from simulator.schedule.memory import memory_per_gpu

    for mb in sorted((d for d in range(1, per_stage_batch + 1) if per_stage_batch % d == 0), reverse=True):
        scn = scenario(mb)
        if mb == 1 or memory_per_gpu(build_scenario(scn, source=f"<e2e:{scn['name']}>")).fits:
            return scn
    raise AssertionError("unreachable: micro-batch 1 is returned")


SUB_1B_MPT = ("MPT-125m", "MPT-350m", "MPT-760m")  # their own source, mpt_small


def _mpt_case(r: Row, source: str, label: str, hw: str, n: int) -> Case:
    """One llm-foundry row as a scenario: Composer's FSDP (FULL_SHARD as FSDP2 ZeRO-3,
    SHARD_GRAD_OP as ZeRO-2 with FSDP's gradients made in backward, ``grad_allocation: lazy``),
    eager layers, FlashAttention-1 kernels, the row's micro-batch and activation checkpointing.

    Gradients are reduced in fp32: the tables' "MP Mode DEFAULT" is Composer's FSDP mixed
    precision ``DEFAULT`` (composer/trainer/mosaic_fsdp_utils.py ``get_mixed_precision``, v0.16,
    llm-foundry v0.3.0's pin), i.e. ``MixedPrecision(param_dtype=bf16, reduce_dtype=float32,
    buffer_dtype=bf16)``: parameters gathered in bf16, each unit's bf16 gradient cast to fp32
    and reduce-scattered in fp32 (torch FSDP ``_post_backward_hook``)."""
    fsdp1 = "SHARD_GRAD_OP" in r["zero_stage_or_fsdp"]
    par = dict(zero=2, grad_allocation="lazy") if fsdp1 else dict(zero=3, zero3_impl="fsdp2")
    par["grad_reduce_dtype"] = "fp32"
    return Case(source, label,
                make_scenario(f"{source}-{label.split()[0]}-{r['seq_len']}-{n}", hw, n, gpt_model(r, position="alibi"),
                              micro_batch=parse_int(r["micro_batch"], 1), global_batch=parse_int(r["global_batch"]),
                              dtype="bf16", recompute=parse_recompute(r), parallel=par, stack=TORCH_EAGER_FA1),
                "tokens_per_s_per_gpu", float(r["value"]), n)


def _mpt(rows: list[Row]) -> list[Case]:
    """BF16 tables only: seq-2048 rows on 8 GPUs for every size from 1B up, plus the large-scale H100
    rows of MPT-7B and MPT-70B; H100-80GB and A100-80GB (A100-40GB has no profile)."""
    out: list[Case] = []
    seen = set()  # one row per (model, gpu, gpus): the README lists a few repeated configurations
    for r in rows:
        if r["metric"] != "tokens_per_s_per_gpu" or parse_precision(r) != "bf16":
            continue
        hw, name, n = parse_hardware(r), r["model_name"], parse_int(r["num_gpus"])
        if hw is None or r["seq_len"] != "2048" or name in SUB_1B_MPT:
            continue
        if not (n == 8 or (hw == "dgx-h100" and name in ("MPT-7b", "MPT-70b") and n in (64, 512))):
            continue
        key = f"{name} {r['gpu']} {n} GPUs"
        if key not in seen:
            seen.add(key)
            out.append(_mpt_case(r, "mpt", f"{key} mbs{r['micro_batch']} {parse_recompute(r)}", hw, n))
    return out


def _mpt_seq(rows: list[Row]) -> list[Case]:
    """The sequence-length sweeps of the same tables: MPT 1B-30B on 8 GPUs (H100-80GB and
    A100-80GB, BF16) at every length other than 2048, from 512 to 65536 tokens, where the
    attention core grows from a few percent to most of the FLOPs. Built like the MPT rows above
    (FSDP, eager layers, FlashAttention-1 kernels), with the micro-batch and activation
    checkpointing of each row."""
    out: list[Case] = []
    seen = set()
    for r in rows:
        if r["metric"] != "tokens_per_s_per_gpu" or parse_precision(r) != "bf16" or r["seq_len"] == "2048":
            continue
        hw, name = parse_hardware(r), r["model_name"]
        if hw is None or r["num_gpus"] != "8" or name in SUB_1B_MPT:
            continue
        label = f"{name} {r['gpu']} seq{r['seq_len']} mbs{r['micro_batch']} {parse_recompute(r)}"
        if label not in seen:
            seen.add(label)
            out.append(_mpt_case(r, "mpt_seq", label, hw, 8))
    return out


def _mpt_small(rows: list[Row]) -> list[Case]:
    """The sub-1B models of the same tables (MPT-125M, -350M, -760M; hidden 768-1536, 12-24
    layers), BF16, every sequence length and GPU count on H100-80GB and A100-80GB, built like the
    MPT rows above. Held out entirely: where GEMMs are small, memory-bound kernels, the LM head
    and the host take a larger share of the step, which is what the model must explain rather
    than the GEMM derate absorb."""
    out: list[Case] = []
    seen = set()
    for r in rows:
        if r["metric"] != "tokens_per_s_per_gpu" or parse_precision(r) != "bf16":
            continue
        hw, name, n = parse_hardware(r), r["model_name"], parse_int(r["num_gpus"])
        if hw is None or name not in SUB_1B_MPT:
            continue
        label = f"{name} {r['gpu']} {n} GPUs seq{r['seq_len']} mbs{r['micro_batch']} {parse_recompute(r)}"
        if label not in seen:
            seen.add(label)
            out.append(_mpt_case(r, "mpt_small", label, hw, n))
    return out


def _flagperf(rows: list[Row]) -> list[Case]:
    """Llama-3 8B/70B Megatron-Core rows in bf16 on H100 and A800 (A800: NVLink 400 GB/s, run
    on the DGX A100 profile). ``recompute-activations`` is Megatron's selective recompute. The
    benchmark's launch script (FlagPerf training/benchmarks/llama3_{8B,70B}/megatron/
    pretrain_llama3.sh at 1b5a0303, run for every nvidia config) passes ``--sequence-parallel``
    and ``--use-distributed-optimizer``: sequence parallel wherever TP > 1, ZeRO-1. No overlap
    flag is passed, so Megatron-Core's defaults: gradients reduced after the backward (no
    ``--overlap-grad-reduce``), in fp32 (main grads for bf16).

    The H100 rows printed ``prec=bf16+fp8`` ran the same plan in the same image with
    TransformerEngine's FP8 (FlagPerf training/nvidia/llama3_8B-megatron/config/
    training_adapter_H100_fp8.sh at 66eb17e4: ``--fp8-format hybrid --fp8-amax-compute-algo max
    --fp8-amax-history-len 1024``, Megatron's ``DelayedScaling`` recipe, no ``--fp8-param-gather``):
    the pair prices the BF16/FP8 step ratio on a stack and cluster other than NVIDIA's."""
    out: list[Case] = []
    for r in rows:
        fp8 = "prec=bf16+fp8" in r["notes"].lower() and "H100" in r["gpu"]
        if r["metric"] != "tokens_per_s_per_gpu" or (parse_precision(r) != "bf16" and not fp8):
            continue
        if "Llama 3" not in r["model_name"]:
            continue
        hw = "dgx-h100" if "H100" in r["gpu"] else ("dgx-a100" if "A800" in r["gpu"] else None)
        n = parse_int(r["num_gpus"])
        if hw is None or n > 64:
            continue
        tp, pp = parse_int(r["tp"], 1), parse_int(r["pp"], 1)
        scn = make_scenario(f"flagperf-{len(out)}", hw, n, llama_model(r),
                            micro_batch=parse_int(r["micro_batch"], 1), global_batch=parse_int(r["global_batch"]),
                            dtype="fp8" if fp8 else "bf16", recompute=parse_recompute(r),
                            parallel=dict(tp=tp, pp=pp, zero=1, sequence_parallel=tp > 1,
                                          overlap_grad_reduce=False, grad_reduce_dtype="fp32",
                                          **MEGATRON_LM_DDP_2024))
        if fp8:
            scn["training"].update(fp8_recipe="delayed")
        out.append(Case("flagperf", f"{r['model_name']} {r['gpu'].split(' ')[0]} tp{tp} pp{pp} dp{n // (tp * pp)}"
                                    + (" FP8" if fp8 else ""),
                        scn, "tokens_per_s_per_gpu", float(r["value"]), n))
    return out


def _nemo_long_context(rows: list[Row]) -> list[Case]:
    """The "with CP" rows of NeMo's long-sequence page (FP8; Llama2-7B on DGX H100 with NeMo
    24.03, 8K-1M tokens; Llama3-8B on DGX B200 with NeMo 25.04, 32K-1M) that fill whole nodes:
    TP, PP and CP as printed, micro-batch 1, Megatron CP's p2p KV ring (TE's only CP
    communication in 24.03), sequence parallel with TP, the distributed optimizer with overlapped
    parameter AllGather (NeMo's distributed_fused_adam), no recompute. NeMo 24.03's TE 1.4 ran
    its CP attention in bshd (``parallel.cp_qkv_format``), NeMo 25.04's TE 2.x in Megatron's
    sbhd. The H100 rows run flash-attn 2 (``NEMO_LAUNCHER_2024``: NeMo-Framework-Launcher
    24.03.01 exports ``NVTE_FUSED_ATTN: 0``), the B200 rows (NeMo 2.0 recipes, no launcher) TE's
    choice, cuDNN. Model TFLOP/s as Megatron-Core counts them (full score matrix; see
    ``scoring.megatron_model_flops``)."""
    out = []
    for r in rows:
        if r["metric"] != "tflops_per_gpu" or not r["notes"].startswith("with CP") or not r["cp"]:
            continue
        n = parse_int(r["num_gpus"])
        hw = "dgx-h100" if "H100" in r["gpu"] else ("dgx-b200" if "B200" in r["gpu"] else None)
        if hw is None or n % 8:
            continue  # a scenario has whole 8-GPU nodes
        tp, pp, cp = parse_int(r["tp"], 1), parse_int(r["pp"], 1), parse_int(r["cp"], 1)
        par = dict(megatron_parallel(tp, pp, cp=cp, tp_overlap="none"), cp_comm="p2p")
        stack = MODERN
        if hw == "dgx-h100":
            par["cp_qkv_format"] = "bshd"  # TE 1.4 (NeMo 24.03.01)
            stack = NEMO_LAUNCHER_2024  # the 24.03.01 launcher disables cuDNN attention
        seq = parse_int(r["seq_len"])
        out.append(Case("nemo_cp", f"{r['model_name']} {hw.split('-')[1].upper()} {seq // 1024}K "
                                   f"tp{tp} pp{pp} cp{cp} dp{n // (tp * pp * cp)} {n} GPUs",
                        make_scenario(f"nemo-cp-{r['model_name']}-{seq}", hw, n, llama_model(r), micro_batch=1,
                                      global_batch=parse_int(r["global_batch"]), dtype="fp8", recompute="none",
                                      parallel=par, stack=stack),
                        "megatron_model_tflops", float(r["value"]), n))
    return out


def _printed_plan_case(source: str, r: Row, model: dict, dtype: str, metric: str, stack: Stack = MODERN,
                       extra_parallel: dict | None = None) -> Case:
    """An NVIDIA-stack row on DGX H100 with its printed plan (TP, PP, VP, CP, micro-batch,
    global batch), ``megatron_parallel``'s defaults for the rest (``extra_parallel`` on top), no
    recompute."""
    n = parse_int(r["num_gpus"])
    tp, pp, vp, cp = (parse_int(r[k], 1) for k in ("tp", "pp", "vp", "cp"))
    par = {**megatron_parallel(tp, pp, vp, cp), **(extra_parallel or {})}
    return Case(source, f"{r['model_name']} tp{tp} pp{pp} vp{vp} cp{cp} dp{n // (tp * pp * cp)} {n} GPUs",
                make_scenario(f"{source}-{r['model_name']}-{n}", "dgx-h100", n, model,
                              micro_batch=parse_int(r["micro_batch"], 1), global_batch=parse_int(r["global_batch"]),
                              dtype=dtype, recompute="none", parallel=par, stack=stack),
                metric, float(r["value"]), n)


GPT2_BPE_VOCAB = 50257  # the GPT-2 BPE that NeMo's GPT-3 configs train with

# NeMo-Framework-Launcher 24.07 (tag 24.07, commit 8325688d8345a5513660f0f8390f0482a721c009)
# names a tuned Userbuffers configuration in each TP-4 model's training yaml
# (``launcher_scripts/conf/training/{gpt3/175b,llama/llama2_70b,llama/llama3_70b}.yaml``, defaults
# ``tp_overlap@model.ub_tp_comm_overlap_cfg``), read from
# ``launcher_scripts/conf/training/tp_overlap/ub_cfg_h100_<shape>.yaml``. As
# ``parallel.tp_overlap_gemm_sms``: the four bulk overlaps set ``set_sm_margin: 0`` (their GEMM on
# every SM), the two pipelined GEMM-ReduceScatters keep the margin at their ``num_sm``. The
# Llama 3 70B FP8 file (``ub_cfg_h100_fp8_h8192_tp4_mbs1_seqlen8192``) differs from the one named
# only in ``fp8_buf``. GPT-3 175B's yaml leaves ``ub_tp_comm_overlap: False`` (and ``fp8: False``)
# as its default; the summary's FP8 runs override the yaml, and the configuration it names is the
# one tuned for them (its header: "H100/175B/TP4/MBS1/SeqLen2K/FP8").
NEMO_LAUNCHER_2407_UB: dict[tuple[int, int], dict[str, int]] = {
    # (hidden, seq_len): ub_cfg_h100_h12288_tp4_mbs1_seqlen2048 (GPT-3 175B)
    (12288, 2048): dict(qkv_dgrad=0, qkv_wgrad=0, fc1_dgrad=0, fc1_wgrad=0, proj_fprop=24, fc2_fprop=20),
    # ub_cfg_h100_h8192_tp4_mbs1_seqlen4096 (Llama 2 70B)
    (8192, 4096): dict(qkv_dgrad=0, qkv_wgrad=0, fc1_dgrad=0, fc1_wgrad=0, proj_fprop=24, fc2_fprop=16),
    # ub_cfg_h100_h8192_tp4_mbs1_seqlen8192 (Llama 3 70B)
    (8192, 8192): dict(qkv_dgrad=0, qkv_wgrad=0, fc1_dgrad=0, fc1_wgrad=0, proj_fprop=24, fc2_fprop=16),
}


def _nemo_2407(rows: list[Row]) -> list[Case]:
    """The pre-training rows of NeMo 24.07's performance summary (final revision; FP8 on DGX
    H100) whose model shape is given: GPT-3 5B/175B, Llama 2 7B/13B/70B, Llama 3 8B/70B, with
    TP, PP, virtual stages (interleaved 1F1B when vp > 1), CP, micro-batch and global batch as
    printed. Not stated, so NeMo's defaults for these models: sequence parallel and
    TransformerEngine's TP overlap with TP, with the launcher's tuned Userbuffers SM counts for
    the TP-4 models (``NEMO_LAUNCHER_2407_UB``), the distributed optimizer with overlapped
    parameter AllGather, no recompute (every row fits in 80 GB). Attention: flash-attn 2, which
    the 24.07 launcher's ``NVTE_FUSED_ATTN: 0`` leaves TransformerEngine (``NEMO_LAUNCHER_2024``)."""
    out = []
    for r in rows:
        if (r["metric"] != "tokens_per_s_per_gpu" or "doc version: final" not in r["notes"]
                or not r["notes"].startswith("pretrain") or not r["layers"]):
            continue
        if r["model_name"].startswith("GPT3"):
            vocab = padded_vocab(GPT2_BPE_VOCAB, parse_int(r["tp"], 1))
            model = gpt_model({**r, "vocab": str(vocab)}, position="learned", tied=True)
        else:
            model = llama_model(r)
        ub = NEMO_LAUNCHER_2407_UB.get((parse_int(r["hidden"]), parse_int(r["seq_len"])))
        extra = {"tp_overlap_gemm_sms": dict(ub)} if ub and parse_int(r["tp"], 1) == 4 else None
        out.append(_printed_plan_case("nemo2407", r, model, "fp8", "tokens_per_s_per_gpu", NEMO_LAUNCHER_2024,
                                      extra_parallel=extra))
    return out


# Nemotron-4 shapes (not in the CSV): 15B, arXiv:2402.16819 Table 1; 340B, arXiv:2406.11704 §2.
# Squared-ReLU MLP with 4h and no gate (two matrices), RoPE, GQA with 8 KV heads, untied embeddings.
# The dgxc READMEs' model FLOPs per sample (3.85e14, 8.62124e15) follow from them. The activation is
# NeMo's ``squared_relu`` (``nemo/collections/llm/fn/activation.py`` at b4148d21: torch.pow(F.relu(x), 2)
# with its ``@torch.jit.script`` commented out), which Megatron-Core's MLP calls as is (no bias-activation
# fusion exists for it): eager ops, two kernels forward and four backward (``activation_kernel: eager``).
NEMOTRON4 = {
    "Nemotron-4 15B": dict(layers=32, hidden=6144, heads=48, kv_heads=8, ffn_hidden=24576, vocab=256000),
    "Nemotron-4 340B": dict(layers=96, hidden=18432, heads=96, kv_heads=8, ffn_hidden=73728, vocab=256000),
}

# NeMo's performance scripts from 2.3 (container 25.04) on, which every dgxc Nemotron-4 row ran
# (dgxc-benchmarking v25.05 ``nemotron/setup.sh`` pins NeMo b4148d21, "r2.3.0 llmb-nemo"; the
# worked examples of 80634adf run container 25.09): ``set_primary_perf_configs``
# (``scripts/performance/utils.py`` at b4148d21; ``helpers.py`` ``set_perf_optimization_configs``
# from v2.4.0) sets ``cross_entropy_fusion_impl = "te"`` for every model, so the loss is
# TransformerEngine's fused cross-entropy kernel (``cross_entropy: fused``; NeMo 2.2, the release of
# the dgxc Llama rows, has no such line). ``Nemotron4Config15B`` / ``340B`` inherit
# ``hidden_dropout = attention_dropout = 0.0`` (``gpt/model/nemotron.py``): no dropout mask.
DGXC_NEMO_PERF = replace(MODERN, cross_entropy="fused", dropout=False)


def _dgxc(rows: list[Row]) -> list[Case]:
    """NVIDIA dgxc-benchmarking's measured Nemotron-4 steps on H100: the two worked examples
    (BF16: 15B with TP2, DP32, micro-batch 2 on 64 GPUs; 340B with TP8, PP8, VP12, DP4,
    micro-batch 1 on 256 GPUs) and v25.05's performance table (NeMo 25.04: the 15B plan on 16
    GPUs and the 340B plan on 256, each in BF16 and FP8). Not stated, so NeMo's defaults:
    sequence parallel with TransformerEngine's default TP overlap, the distributed optimizer with
    overlapped parameter AllGather, no recompute; the performance scripts' TE cross-entropy and the
    model's zero dropout (``DGXC_NEMO_PERF``). FP8 is NeMo 2.0's ``bf16_with_fp8_mixed``
    (nemo/collections/llm/recipes/precision/mixed_precision.py): delayed scaling with
    ``fp8_param_gather = True``."""
    out = []
    for r in rows:
        if not r["source_id"].startswith("dgxc-benchmarking") or r["metric"] != "step_time_s":
            continue
        fp8 = "prec=fp8" in r["notes"].lower()
        if (not fp8 and parse_precision(r) != "bf16") or r["model_name"] not in NEMOTRON4:
            continue
        model = dict(NEMOTRON4[r["model_name"]], seq_len=parse_int(r["seq_len"]), mlp="squared_relu",
                     position_embedding="rope", tied_embeddings=False)
        case = _printed_plan_case("dgxc", r, model, "fp8" if fp8 else "bf16", "step_time_s", stack=DGXC_NEMO_PERF)
        case.scenario["training"]["activation_kernel"] = "eager"
        if fp8:
            case.scenario["training"].update(fp8_recipe="delayed", fp8_param_gather=True)
        if r["source_id"].endswith("-table"):
            case = replace(case, label=f"{case.label} {'FP8' if fp8 else 'BF16'} (v25.05 table)")
        out.append(case)
    return out


SOURCES: list[Source] = [
    Source("megatron2020", "Megatron-LM README 2020 (GPT-2 1.2-8.3B, A100, fp16)", "megatron_lm_readme_2020.csv",
           _megatron2020, ["Old stack (2020): no FlashAttention, no fused kernels (PyTorch ops, apex LayerNorm, separate bias adds); batch per GPU is 16 sequences.",
                           "Only rows filling whole DGX nodes can be built (a scenario has whole nodes)."]),
    Source("bloom", "BLOOM 176B (Jean Zay, 384 A100-80GB)", "bloom_176b_bigscience.csv", _bloom,
           ["Jean Zay's network is modelled as 4 Omni-Path 100 Gb/s links per node (jean-zay-a100), each at the "
            "40.5 Gb/s NCCL 2.10.3 got from one HFI in BigScience's own AllReduce benchmark of those nodes "
            "(data/nccl/a100x32_allreduce_4node_jeanzay_opa_torchdist.csv: no GPUDirect RDMA over the hfi1 verbs "
            "devices). With the HFIs at line rate the rows were 3-7 points more optimistic (the final run's fp32 "
            "gradient AllReduce over DP 8 takes 6.9 s instead of 3.0, the tied embedding's 2.8 s instead of 1.2).",
            "Megatron-DeepSpeed 2022: no FlashAttention (the score matrix is materialised).",
            "The Feb 2022 search ran the Megatron-DeepSpeed tree whose FusedScaleMaskSoftmax.is_kernel_available "
            "sizes the fused kernel's rows per block from the heads on the rank instead of the key length "
            "(9f5f5d4c to 1cb76a64, swapped get_batch_per_block arguments): at TP 8 with 64 heads its micro-batch 2 "
            "and 6 rows ran PyTorch's fp32 softmax (training.masked_softmax: torch), the micro-batch 4 rows and the "
            "final run the fused kernel."]),
    Source("megatron2021_zero3", "Megatron-LM 2021 paper, ZeRO-3 without model parallelism (GPT-175B/530B, A100)",
           "megatron_2021_zero3_table2.csv", _megatron2021_zero3,
           ["Held out entirely (none of these rows fits anything).",
            "DeepSpeed's version and ZeRO-3 settings are not printed: the stage 3 of DeepSpeed 0.3.13 (March "
            "2021, zero3_impl: deepspeed-2021) with its defaults assumed (stage 3 defaults of 0.3.12-0.4.x: "
            "overlap_comm on, contiguous_gradients off, so the gradients are AllReduced per bucket); fp16 "
            "assumed (the paper says mixed precision).",
            "Megatron-LM as DeepSpeed ported it to ZeRO-3 (DeepSpeedExamples Megatron-LM-v1.1.5-ZeRO3, March "
            "2021): the tied word embedding is a registered external parameter of the root GPT2Model, held "
            "from the forward's start to the backward's end and counted against max_live_parameters.",
            "The table's PTD-P rows of the same comparison are the megatron2021_ptdp source."]),
    Source("megatron2021_ptdp", "Megatron-LM 2021 paper, PTD-P at a fixed batch (GPT-175B and 530B, 384-2,240 A100)",
           "megatron_2021_zero3_table2.csv", _megatron2021_ptdp,
           ["Held out entirely (no row fits anything): DP grows 4 -> 16 and 2 -> 8 at a fixed global batch.",
            "The TP x PP split of the printed model-parallel size, the virtual stages and the DDP of the runs "
            "are not printed, and the paper's launch scripts (Megatron-LM examples/sc21/ @de7dc40f) have none "
            "for Table 2: TP 8 with PP 12 or 35 (Table 1's split); the scripts of the same model at the same "
            "split: vp 4 for GPT-175B (run_figure_12.sh, run_figure_18.sh: 2 layers per virtual stage), vp 3 "
            "for GPT-530B (run_table_1.sh), micro-batch 1, Megatron-LM's local DDP of 2021 (one flat fp16 "
            "AllReduce after the backward), --fp16 (CONFIG.sh).",
            "GPT-530B on 560 and 1,120 GPUs (1,120 and 560 micro-batches through 105 virtual stages) is left out "
            "for run time."]),
    Source("megatron2021_weak", "Megatron-LM 2021 paper, weak scaling (GPT 1.7B-530B, 32-2,520 A100)",
           "megatron_2021_table1.csv", _megatron2021_weak,
           ["Held out entirely (no row fits anything).",
            "Micro-batch, virtual stages and DDP are not printed: those of the paper's launch script "
            "(Megatron-LM examples/sc21/run_table_1.sh @de7dc40f), --fp16 (CONFIG.sh).",
            "The 1T row (512 micro-batches through 64 stages) is left out for run time."]),
    Source("megatron2022", "Megatron-LM 2022 paper, sequence parallelism and selective recompute (GPT 22B-530B, A100)",
           "megatron_2022_seqsel_table5.csv", _megatron2022,
           ["Held out entirely (no row fits anything): one A/B per model, full recompute against sequence "
            "parallelism with selective recompute, data parallelism 1.",
            "Micro-batch and virtual stages are not printed: those of Calculon's validation of the table "
            "(calculon-ai/calculon validation/seqsel/tab5/); fp16 assumed.",
            "The 1T rows (512 micro-batches through 64 stages) are left out for run time."]),
    Source("vtrain_multi", "vTrain ground truth, Megatron-DeepSpeed (GPT 3.6B-175B, 64-512 A100, fp16)",
           "vtrain_multi_node.csv", vtrain_multi,
           ["Held out entirely (no row fits anything). Every measured plan of the file: TP 1-16, PP 1-32, "
            "micro-batch 2-64 at a fixed global batch per model; see simulator/e2e_validation/vtrain_sources.py.",
            "Not stated by the source: the split of the 800 Gb/s per node (4 x HDR 200 Gb/s assumed, profile "
            "vtrain-a100), the ZeRO stage (ZeRO-1 inferred: the 175B TP4 x PP4 rows fit 80 GB only so), the "
            "precision (fp16, as vTrain's traced model) and the software versions."]),
    Source("llama3", "Llama 3 405B pre-training, arXiv:2407.21783 Table 4 (8,192-16,384 H100, BF16)",
           "llama3_405b_table4.csv", llama3,
           ["Held out entirely (no row fits anything). Model TFLOP/s per GPU as the paper prints them; see the "
            "file's header and simulator/e2e_validation/llama3_sources.py.",
            "V = 8 virtual stages of one layer, derived from sec. 3.3.2 (the first chunk holds only the embedding, "
            "the last only the output projection and loss); the micro-batch (one sequence) is not printed; the "
            "tunable number N of contiguous micro-batches runs as Megatron's interleaved order.",
            "FSDP as the paper describes it (parameters kept after forward, fp32 gradients reduce-scattered once) "
            "runs as the distributed optimizer's communication (zero 1, overlapped).",
            "The cluster runs on the dgx-h100 profile (H100 SXM 80 GB at 700 W, 8 x 400 Gb/s per node): its RoCE "
            "fabric (1:7 oversubscribed between pods of 3,072 GPUs), NCCLX and the document mask are not modelled.",
            "The 128K-token row (CP 16) is transcribed but not scored: see the page's findings."]),
    Source("megascale", "MegaScale's Megatron-LM baseline, arXiv:2402.15627 Table 2 (GPT-175B, 256-12,288 Ampere GPUs)",
           "megascale_table2.csv", megascale,
           ["Held out entirely (no row fits anything): DP grows 4 -> 16 at 768 sequences and 48 -> 192 at 6,144, "
            "the batch fixed; step time as printed. The MegaScale rows (its own stack) are transcribed, not scored.",
            "Printed: TP 8, PP 8, six virtual stages, sequence 2,048, vocabulary 64,000, Megatron-LM 285068c8 "
            "(2023-01-11). Not printed, taken from that commit's defaults and NVIDIA's GPT-175B recipe of the time: "
            "bf16 with fp32 gradient buffers AllReduced after the backward (local DDP, no distributed optimizer), "
            "micro-batch 1, sequence parallelism with selective recompute, no FlashAttention (see "
            "simulator/e2e_validation/megascale_sources.py).",
            "The cluster runs on the dgx-a100 profile (8 x 200 Gb/s per node as printed; the GPU model and NVLink are "
            "not): its RoCE fabric (Tomahawk 4, three layers at 1:1) and congestion control are not modelled."]),
    Source("mtnlg", "Megatron-Turing NLG 530B, arXiv:2201.11990 sec. 2.4 (2,240-3,360 DGX A100 GPUs, batch 1,920)",
           "mtnlg_530b_2201_11990.csv", mtnlg,
           ["Held out entirely (no row fits anything): TP 8 x PP 35 as printed, DP 8, 10 and 12 at a fixed batch of "
            "1,920 sequences (240 -> 160 micro-batches per pipeline); step time as printed.",
            "Megatron-DeepSpeed of 2021, as the bloom source runs it: DeepSpeed's 1F1B pipeline engine with "
            "partitioned boundary tensors, ZeRO-1 reducing fp16 gradients after the backward, materialised attention "
            "scores. Not printed, assumed: fp16, micro-batch 1, full recompute (the printed TFLOP/s count it) "
            "(simulator/e2e_validation/mtnlg_sources.py).",
            "The cluster runs on the dgx-a100 profile (Selene: 8 x HDR 200 Gb/s per node, full fat tree)."]),
    Source("mlperf_gpt3", "MLPerf Training v3.1, GPT-3 175B on Eos and Azure (512-10,752 H100, NeMo 23.09, FP8)",
           "mlperf_v31_gpt3_h100.csv", mlperf_gpt3,
           ["Held out entirely (no row fits anything): the median logged train_step_timing of three runs per "
            "system; TP 4 x PP 8 x 12 virtual stages, micro-batch 1, batch and micro-batches per pipeline as "
            "logged (128, 16, 8).",
            "Settings from the submission's code (config_common.sh, config_fp8.sh, conf/custom.yaml): FP8 delayed "
            "scaling, sequence parallelism with Userbuffers TP overlap, Apex's distributed optimizer with both "
            "overlaps, no recompute, no dropout, flash-attn 2 (simulator/e2e_validation/mlperf_sources.py); the "
            "vocabulary size (50,257) is assumed.",
            "Eos and Azure's ND H100 v5 run on the dgx-h100 profile (8 x 400 Gb/s InfiniBand per node, as both "
            "systems json print)."]),
    Source("mlperf_gpt3_v30", "MLPerf Training v3.0, GPT-3 175B on DGX H100 and CoreWeave HGX H100 (512-3,584 GPUs, NeMo 23.04, FP8)",
           "mlperf_v30_gpt3_h100.csv", mlperf_gpt3_v30,
           ["Held out entirely (no row fits anything): the median logged train_step_timing of three runs per "
            "system; the v3.1 plan and settings (TP 4 x PP 8 x 12 virtual stages, FP8, Userbuffers TP overlap with "
            "v3.0's SM counts, distributed optimizer, no recompute), the release six months older.",
            "Both clusters run on the dgx-h100 profile (8 x ConnectX-7 NDR 400 Gb/s per node, as the systems json "
            "print)."]),
    Source("internlm", "InternLM-7B training performance, HybridZeroOptimizer (8-1,024 A100, 4 x 100 Gb/s RoCE, BF16)",
           "internlm_7b_train_performance.csv", internlm,
           ["Held out entirely (no row fits anything): tokens per GPU per second at a fixed number of tokens per "
            "GPU and step, TP 1 and 2, no pipeline; see the file's header and "
            "simulator/e2e_validation/internlm_sources.py.",
            "InternLM's HybridZeroOptimizer (zero1_impl: internlm): the bf16 gradients AllReduced over the "
            "data-parallel group in 512M-element buckets during the backward, then one broadcast per rank that "
            "owns parameters (InternLM's greedy split of the parameter tensors), in rank order.",
            "Every RMSNorm is fed an fp32 copy of its input (norm_input: fp32: InternLM's norm(x.float()) into "
            "apex's MixedFusedRMSNorm) and each layer's dropout/add/norm blocks are re-run in backward "
            "(recompute_norm_blocks: InternLM's dropout_selective_checkpoint), except under full recompute.",
            "Scored: the zero1=-1 rows (the optimizer sharded over the whole data-parallel group) and the "
            "one-node rows; the multi-node zero1=8 / zero1=4 rows shard within a node, which the simulator's "
            "ZeRO-1 does not describe: transcribed, not scored.",
            "The cluster runs on the internlm-a100 profile (dgx-a100 with four 100 Gb/s NICs per node, as "
            "printed; the RoCE fabric itself is not modelled). Documents packed with attention within each "
            "(pack_sample_into_one=False) are priced as attention over 2,048 tokens."]),
    Source("nanotron_playbook", "Ultra-Scale Playbook best configurations, nanotron v0.5 (1.34B-80B, 8-512 H100, BF16)",
           "nanotron_playbook_h100.csv", nanotron_playbook,
           ["Held out entirely (no row fits anything, the single-node rows included): the best DP x TP x PP plan "
            "of each model size and node count at 256 sequences of 4,096 tokens, MFU as printed converted to "
            "tokens per second per GPU with nanotron's model FLOPs and 989 TFLOP/s (the peak is not printed); "
            "see the file's header and simulator/e2e_validation/nanotron_sources.py.",
            "fp32 gradient accumulation (one add per tensor and micro-batch), the fp32 gradients AllReduced "
            "(ZeRO-0) or ReduceScattered (ZeRO-1) in DDP buckets during the last backward, ZeRO-1's parameter "
            "AllGather after the step; nanotron's cost-balanced pipeline split (the LM head's stage holds fewer layers).",
            "nanotron's tp_linear_async_communication (the input AllGather beside the local-shard GEMM) is priced "
            "without overlap; the figure prints no network: the aws-p5 profile (32 x 100 Gb/s EFA per node), "
            "Hugging Face's cluster by the launcher's host names (the file's header).",
            "Each value is a single iteration (nanotron's benchmark mode logs iteration 3 and exits)."]),
    Source("megatron_ci", "Megatron-LM functional tests, GPT 6.7B on 8 GPUs (a DGX H100 node, a DGX A100 node, two GB200 trays; BF16)",
           "megatron_ci_golden_values.csv", megatron_ci,
           ["Held out entirely (no row fits anything). Step time: the median of the golden values' logged "
            "iteration-time from step 3 on; arguments from each test case's model_config.yaml (see the file's "
            "header and simulator/e2e_validation/megatron_ci_sources.py).",
            "NVTE_ALLOW_NONDETERMINISTIC_ALGO=0 runs as training.deterministic: on A100 TransformerEngine runs "
            "flash-attn's deterministic FlashAttention-2 backward (costs/attention_determinism.py). Megatron's "
            "default attention dropout 0.1 is drawn inside the fused kernels (training.fused_attention_dropout, "
            "costs/attention_dropout.py: per score element, from published pairs with and without dropout), and "
            "the data loader's b x s x s attention mask is copied to the GPU and broadcast over TP each "
            "micro-batch (training.dataloader_attention_mask). --deterministic-mode's "
            "torch.use_deterministic_algorithms(True) runs as training.torch_deterministic: PyTorch fills "
            "TransformerEngine's fresh GEMM, norm and attention outputs (and, without gradient-accumulation "
            "fusion, its weight gradients) with NaN as it allocates them (schedule/deterministic_fill.py). Not "
            "modelled: the rest of --deterministic-mode (cuDNN's deterministic backward on H100, which has no "
            "published timing; NCCL_ALGO=Ring), the CI's per-step logging (--log-params-norm, --log-num-zeros-in-grad, timers and "
            "memory to TensorBoard) and NVTE_{FWD,BWD}_LAYERNORM_SM_MARGIN=16.",
            "The suite's small-GPT cases (12 layers, hidden 512; builder megatron_ci_small) are transcribed but not "
            "scored: see the page's findings.",
            "The GB200 rows ran on two compute trays of 4 (the CI's gb200 recipe: nodes 2, gpus 4); whether the "
            "trays share an NVLink domain is not stated: modelled on gb200-nvl72, one domain."]),
    Source("automodel", "NeMo AutoModel (H100, BF16, FSDP2)", "nemo_automodel_perf_summary.csv", _automodel,
           ["Only the dense pre-training rows; the LoRA rows train adapters only, the MoE rows are the "
            "automodel_moe source."]),
    Source("automodel_moe", "NeMo AutoModel Mixture-of-Experts (H100, BF16, FSDP2 + EP, DeepEP)",
           "nemo_automodel_perf_summary.csv", automodel_moe,
           ["Held out entirely (none of these rows fits anything). Settings the table omits (recompute, "
            "dispatcher, EP of GPT-OSS, attention kernel) come from the benchmark configs it was made with; "
            "see simulator/e2e_validation/moe_sources.py.",
            "The gate is AutoModel's fake_balanced_gate (moe_routing: round_robin): balanced, a token's experts "
            "neighbours, so DeepEP sends most tokens to one node, and to one rank where a rank holds k or more "
            "consecutive experts (DeepEP moves one row per token and destination rank).",
            "No dropout kernels: AutoModel's models have no hidden dropout and the HF configs' attention_dropout is 0.",
            "With PP, AutoModel runs local_batch/pp_microbatch micro-batches per pipeline pass and GA passes per "
            "step, each filling and draining the pipeline: Kimi-K2 runs two (parallel.pp_flushes: 2), DeepSeek-V3 "
            "on 1,024 GPUs four, through the 16 virtual stages of its config's layers_per_stage 4 (VP 4, not the "
            "printed 8); the extra layers on the first virtual stages, as AutoModel splits the model.",
            "Nemotron V3 Nano's config sets enable_fsdp_optimizations and no reshard_after_forward: without PP the "
            "benchmark recipe defers FSDP2's ReduceScatter and resharding to the step's last micro-batch "
            "(parallel.fsdp_grad_sync: optim_step), so each layer's parameters are gathered once per step. Super's "
            "outer model is an FSDP module (wrap_outer_model), so train_ft's get_sync_ctx turns gradient sync off "
            "for all micro-batches but the last (fsdp_grad_sync: no_sync); the Qwen3 and GPT-OSS rows predate it.",
            "GPT-OSS: the alternating 128-token sliding-window attention as FlexAttention's block mask runs it, "
            "the key blocks outside the band skipped (model.sliding_window, full_attention_every 2); the attention "
            "sinks as AutoModel applies them, FlexAttention's output rescaled by sigmoid(lse - sink) in eager fp32 "
            "(attention_sink_kernel: rescale); the clamped GLU inside the torch.compile'd activation (glu_clamp_kernel: fused); the expert biases as grouped_gemm's path adds "
            "them, split, add per local expert and concatenate, FC1's and FC2's (moe_expert_bias: per_expert_fc1_fc2).",
            "Nemotron V3 Nano and Super: the hybrid Mamba2-Transformer MoEs of their Hugging Face configs "
            "(model.layer_pattern), Mamba2 mixers priced from their kernels (simulator/schedule/mamba.py); Super's "
            "LatentMoE (model.moe_latent_size) projects each MoE block's input to 1024 before the dispatch and back "
            "to 4096 after the combine, so its experts and its DeepEP exchange run at a quarter of the hidden "
            "size. No MTP block for Super: AutoModel's NemotronV3 model had none when the row was measured. "
            "Ultra (108 blocks, LatentMoE at 2048) as its benchmark config runs it: two MTP depths through one "
            "physical \"*E\" layer (model.mtp_repeated_layer: each depth computed, its weights held once) and "
            "AutoModel's FusedLinearCrossEntropy for every head (training.cross_entropy: fused_linear, Cut "
            "Cross-Entropy: no logits, the head's GEMM run again in backward)."]),
    Source("bridge_moe", "Megatron-Bridge 26.04.01 Mixture-of-Experts (H100 FP8-CS and BF16, B200 and GB200 MXFP8 and BF16)",
           "megatron_bridge_perf_summary_moe.csv", megatron_bridge_moe,
           ["Held out entirely (none of these rows fits anything). Settings the table omits come from the "
            "performance recipes of the same commit; see the file's header and "
            "simulator/e2e_validation/moe_sources.py.",
            "The router is forced to balance (moe_router_force_load_balancing) and dropless: a learned router "
            "with moe_imbalance 1.0, plus the kernels of RandomSTE's random logits and, for Qwen3, "
            "DeepSeek-V3 and Nemotron 3, of their load-balancing loss (training.moe_router_kernels).",
            "GPT-OSS recomputes its pre-MLP norms and expert activations (recompute_modules layernorm, moe_act), "
            "as modelled. Its 128-key sliding window on every other layer as cuDNN runs it, the key tiles "
            "outside the band skipped (model.sliding_window, full_attention_every 2); its sinks inside "
            "cuDNN's kernel (TE softmax_type learnable: nothing priced besides it); its experts' clamped GLU as Megatron-Core's bias-activation fusion runs it, the two clamps "
            "and the concatenation as eager kernels before the fused activation (model.glu_clamp 7, "
            "glu_clamp_kernel: unfused); its experts' output bias as Megatron-Core adds it, per local "
            "expert (moe_expert_bias: per_expert); its YaRN RoPE unfused, as Megatron-Core falls back for a "
            "concentration factor other than 1 (rope_kernel: unfused).",
            "The recipes' partial CUDA graphs are replayed as graphs (training.cuda_graph_scope): attention, "
            "router and preprocessing of Qwen3-30B and DeepSeek-V3 on B200, and with the Mamba2 blocks of "
            "Nemotron 3 Nano on B200; Nano's Mamba2 blocks on H100.",
            "Nemotron 3 Nano and Super are hybrid Mamba2-Transformer MoEs (model.layer_pattern). The H100 Nano "
            "recipe recomputes its attention cores and whole MoE layers, their All-to-Alls included (recompute: "
            "selective, recompute_modules moe, layernorm, moe_act); Super on B200 its experts' activations and "
            "pre-MLP norms, and it runs two MTP depths through one repeated \"*E\" layer (model.mtp_layers 2, "
            "mtp_repeated_layer), priced in MXFP8 although the recipe keeps it in BF16 (keep_mtp_spec_in_bf16). "
            "Nemotron 3's recipes leave moe_router_fusion off: their router's unfused kernels are priced as the "
            "fused ones.",
            "DeepSeek-V3's recompute of the MLA up-projections and MLPs is not modelled. The H100 Qwen3-235B "
            "row runs 512 micro-batches through 32 virtual stages with the combined-1F1B A2A overlap.",
            "GB200 rows run on gb200-nvl72 (trays of 4 GPUs in a 72-GPU NVLink domain; its GEMM curve is "
            "dgx-b200's scaled by the two GPUs' measured MAMF, not fitted to these rows). The performance "
            "scripts give every GB200 job Slurm's --segment (the job up to 18 trays, else its largest "
            "divisor up to 18): the 256-GPU jobs hold 16 trays of each of 4 racks (nodes_per_nvlink_domain "
            "16), so EP 32 and 64 stay inside a rack. HybridEP reaches every EP rank of the NVLink domain in "
            "one exchange (USE_MNNVL, NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN = EP). GPT-OSS on GB200 sets "
            "moe_a2a_overlap, which the scripts pair with delay_wgrad_compute (not modelled, as for the other "
            "A2A-overlap rows). Grace's slower host is priced (gb200-nvl72's node.host_time_scale 1.33, "
            "Megatron-LM's CI steps on GB200 over the same cases' on a DGX H100): these rows are GPU-bound in "
            "the model, and the host's pace moves them by less than half a point."]),
    Source("bridge_moe_ultra", "Megatron-Bridge 26.04.01 Mixture-of-Experts on Blackwell Ultra (DGX B300 and GB300 NVL72, MXFP8 and BF16)",
           "megatron_bridge_perf_summary_moe_ultra.csv", megatron_bridge_moe_ultra,
           ["Held out entirely (none of these rows fits anything), and so are the two profiles they run on: "
            "dgx-b300 and gb300-nvl72 are dgx-b200 and gb200-nvl72 with Blackwell Ultra's memory (270 and "
            "279 GB usable), ConnectX-8 NICs at 800 Gb/s on PCIe Gen6, and the same dense BF16/FP8 tensor "
            "rates (docs/reference/HARDWARE.md §1a), so the same GEMM curve; cuDNN's attention at the "
            "GB300-over-GB200 rates measured in one container (forward x 1.196, backward x 1.075: Blackwell "
            "Ultra's doubled exponential throughput, data/kernels/cudnn_sdpa_gb200_gb300.csv); the higher power "
            "limit is not credited (the profiles' headers).",
            "Built as the bridge_moe rows are (simulator/e2e_validation/moe_sources.py), from the B300 and GB300 "
            "variants of the same recipes (the file's header): larger micro-batches than on B200/GB200 where "
            "the memory allows, HybridEP on 32 SMs (Nemotron 3 Nano: 16), GPT-OSS on GB300 with the alltoall "
            "dispatcher, DeepSeek-V3 on B300 with the PP 8 layout its recipe computes, on GB300 without CUDA "
            "graphs. GB300 jobs take Slurm's --segment as the GB200 ones do."]),
    Source("bridge_moe_overlap", "Megatron-Bridge Qwen3-30B-A3B expert-parallel overlap A/B (16 H100, BF16, HybridEP)",
           "megatron_bridge_moe_ep_overlap_h100.csv", bridge_ep_overlap,
           ["Held out entirely (none of these rows fits anything). One controlled pair: the same run without and "
            "with overlap_moe_expert_parallel_comm (combined 1F1B); settings off the card come from the recipe "
            "it names (HybridEP on 32 SMs, no recompute); see the file's header.",
            "The router is forced to balance and dropless: a learned router with moe_imbalance 1.0, plus the "
            "kernels of its random logits and aux loss (training.moe_router_kernels).",
            "The router and the MoE preprocessing are replayed from CUDA graphs (training.cuda_graph_scope "
            "moe_router, moe_preprocess), as the card's recipe captures them."]),
    Source("modelzoo_qwen3", "Megatron-MoE-ModelZoo Qwen3-235B-A22B, the Megatron-Core MoE team's runs (256 H100 BF16 at 4K-64K tokens, 256 GB200 BF16, 256 GB300 MXFP8)",
           "megatron_moe_modelzoo_qwen3.csv", modelzoo_qwen3,
           ["Held out entirely (none of these rows fits anything). Megatron-LM's own arguments, from the "
            "repository at the commit that published each table (the file's header, "
            "simulator/e2e_validation/modelzoo_sources.py): fp32 gradient reduction (no --grad-reduce-in-bf16), no "
            "TP overlap in BF16, DeepEP's normal kernels on 20 SMs (HybridEP on 32 on GB200), the forced-balanced "
            "router with Qwen3's aux loss, the embedding and loss counted as pipeline layers (one layer per virtual "
            "stage at PP 32 x VP 3: the first and last hold the embedding and the loss alone).",
            "H100 at 4,096 tokens: step time as printed. The long-context plan (TP 4, CP 1-4, PP 8 x VP 4, EP 8, "
            "the whole MoE layer and the norms recomputed) and GB200 (PP 8, EP 8 in Slurm segments of 2 trays, "
            "partial CUDA graphs): TFLOP/s/GPU in Megatron-LM's causal count (metric megatron_moe_model_tflops), "
            "which reproduces the H100 table's printed TF from its step times to 0.5%.",
            "The Megatron-FSDP plan (optim_grads_params, TP 2, EP 8, full recompute, no gradient accumulation "
            "fusion) is built as FSDP2's ZeRO-3 with EP. Transcribed, not scored: the dropless values (the load "
            "per expert is not printed), Qwen3-Next-80B (gated delta net layers), the GB200 MXFP8 run "
            "(fine-grained activation offloading), and, for run time (over 20 CPU s a row), PP 32 x VP 3 (31 CPU "
            "s; +17.5% when simulated), CP 8 at 131,072 tokens (54 s; -7.1%) and GB300's long-context plan (49 s).",
            "GB300 (MXFP8, PP 4, EP 32 over HybridEP, micro-batch 2, Slurm segments of 8 trays) runs on "
            "gb300-nvl72, gb200-nvl72 with Blackwell Ultra's memory and NICs (held out, as the profile is)."]),
    Source("modelzoo_mixtral", "Megatron-MoE-ModelZoo Mixtral 8x22B, the Megatron-Core MoE team's script (128 H100, BF16 and blockwise FP8)",
           "megatron_moe_modelzoo_mixtral.csv", modelzoo_mixtral,
           ["Held out entirely (none of these rows fits anything). The values are the script's own comments "
            "(\"performance should be around 465 TFLOPS for H100\"), in Megatron-LM's causal count; the plan and "
            "settings from the repository at the commit that wrote them (the file's header): TP 2 x PP 8 x VP 7, EP 8 "
            "with the alltoall dispatcher, the forced-balanced router with its aux loss, fp32 gradient reduction; "
            "TE's TP overlap in BF16; blockwise FP8 with FP8 parameter gathers and bf16 Adam moments.",
            "Transcribed, not scored: the dropless and token-drop values (the load per expert is not printed)."]),
    Source("mcore_dsv3_gb200", "Megatron-LM's DeepSeek-V3 GB200 NVL72 write-up, the Megatron-Core MoE team's (256 GB200, MXFP8, HybridEP)",
           "megatron_lm_dsv3_gb200.csv", megatron_lm_dsv3_gb200,
           ["Held out entirely (the row fits nothing). The write-up's final 970 TFLOP/s/GPU for TP 1, PP 8 x VP 4 "
            "(layout \"Et|(tt|)*30L\"), EP 32, micro-batch 1, global batch 2,048, in Megatron-LM's count for "
            "multi-latent attention (scoring.megatron_moe_model_flops, which reproduces Megatron-Bridge's printed "
            "DeepSeek-V3 TFLOP/s from its tokens/s to 0.2%); the settings of its reproduce guide's launch command "
            "(HybridEP on 32 SMs in racks of 8 trays, MXFP8 with FP8 parameter gathers and bf16 moments, partial "
            "CUDA graphs, the forced-balanced router, fp32 gradient reduction). The guide's recompute of the dense "
            "layers' MLPs is not modelled."]),
    Source("bridge_dense", "Megatron-Bridge 25.11 dense Llama 3/3.1 (70B on 64 H100 FP8-CS; 8B and 405B on 8-128 B200, 8B on 8 GB200, FP8-CS and MXFP8)",
           "megatron_bridge_perf_summary_dense.csv", bridge_dense,
           ["The 8B FP8-CS run on one B200 node is a fitting row of the dgx-b200 GEMM derate (scored, as every "
            "row, with the derate fitted without this source); the MXFP8 value of the same run is not (its "
            "block-scaled GEMMs carry a factor of their own), nor is any other row. Settings "
            "the table omits come from the performance recipes of Megatron-Bridge v0.2.0, the release of the 25.11 "
            "container; see the file's header and simulator/e2e_validation/bridge_dense_sources.py.",
            "The TP overlap runs as TransformerEngine's default per-GEMM methods (tp_overlap: te_default) with the "
            "recipes' userbuffers configurations: the four bulk overlaps on every SM (tp_overlap_gemm_sms), the two "
            "forward ReduceScatters by ring exchange (tp_overlap_methods).",
            "The B200 and GB200 8B recipes capture the whole iteration in CUDA graphs (cuda_graph_impl local): not "
            "modelled, their kernels are priced as an eager stream's (with no gap between kernels at all the B200 "
            "row's step is 0.3% shorter; with no host cost at all it does not move).",
            "The GB200 8B rows (the same plan on two trays of a GB200 NVL72 rack, gb200-nvl72: its GEMM curve is "
            "dgx-b200's scaled by the two GPUs' measured MAMF) are held out: none fits anything.",
            "The network is not printed: the dgx-h100 and dgx-b200 profiles (8 x 400 Gb/s InfiniBand per node).",
            "Built but not scored, for run time (47 and 10 CPU s): 405B on 1,024 H100 (+2.7%) and the MXFP8 value of "
            "the 405B plan on 128 B200 (-17.2%); the H100 8B row (Megatron-FSDP printed; the v0.2.0 recipe has CP 1 "
            "and recompute_num_layers 5 instead) is transcribed but not built."]),
    Source("bridge_dense_2604", "Megatron-Bridge 26.04.01 dense Llama 3/3.1 (70B on 64 GB300, GB200 and H100; 405B on "
           "256 GB300 and GB200; FP8-CS and MXFP8)",
           "megatron_bridge_perf_summary_dense_2604.csv", bridge_dense_2604,
           ["Held out entirely (every row runs on more than one node: none fits anything). The dense rows of the "
            "26.04.01 page whose MoE rows are bridge_moe and bridge_moe_ultra; settings the table omits from the "
            "recipes of the same commit, which keep 25.11's (bridge_dense) but for the plans and batches; see the "
            "file's header and simulator/e2e_validation/bridge_dense_sources.py.",
            "GB300 and GB200 jobs of 64 trays run in Slurm segments of 16 trays a rack (four racks), as the MoE "
            "rows of the same page; the 64-GPU jobs hold 16 trays of one rack.",
            "The page prints tokens/s/GPU as multiples of 32 or 64 (its TFLOP/s column agrees within 2.2%).",
            "Built but not scored, for run time (about a minute): 405B on 1,024 H100 (-6.8%); transcribed but not "
            "built: the 70B rows printed with Megatron-FSDP (activations offloaded to the Grace CPUs) and the NVFP4 "
            "rows."]),
    Source("bridge_card", "Megatron-Bridge Qwen3-8B verification card (16 H100, BF16, DP 16)",
           "megatron_bridge_qwen3_8b_card_h100.csv", bridge_card,
           ["Held out (none of these rows fits anything). One measured run: the last 10 of 100 steps of the recipe "
            "the card names; settings off the card from that recipe (distributed optimizer with overlapped "
            "communication, bf16 gradient reduction, no recompute, no CUDA graphs, TE fused cross-entropy); see "
            "simulator/e2e_validation/bridge_card_sources.py.",
            "The card states the run was not performance-tuned.",
            "The network is not printed: the dgx-h100 profile (8 x 400 Gb/s InfiniBand per node)."]),
    Source("bridge_card_hybrid", "Megatron-Bridge Nemotron 3 Nano 4B verification card (hybrid Mamba2-Transformer, 8 H100, "
           "BF16, DP 8)",
           "megatron_bridge_nemotron3_nano_4b_card_h100.csv", bridge_card_hybrid,
           ["Held out (none of these rows fits anything, the one-node BF16 run included: the card's run was not "
            "performance-tuned). The last 10 of 100 steps of the recipe the card names; settings off the card from "
            "that recipe (42 hybrid blocks, 21 of them Mamba2 mixers, DP 8 with the distributed optimizer and both "
            "overlaps, bf16 gradient reduction, no recompute, no CUDA graphs, Megatron-Core's native fused "
            "cross-entropy); see simulator/e2e_validation/bridge_card_sources.py.",
            "The node is not printed: the dgx-h100 profile."]),
    Source("nemo2502_b200", "NeMo 25.02 performance summary, Llama 3 8B and 70B on 8-64 B200 (FP8, delayed scaling)",
           "nemo_perf_summary_25.02_b200.csv", nemo_b200,
           ["The 8B row (one node, per-tensor FP8 on B200) is a fitting row of the dgx-b200 GEMM derate; the 70B "
            "row is held out. Settings the table omits come from the NeMo 2.2 performance scripts and the "
            "llama3_8b / llama3_70b recipes (performance_mode); see the file's header and "
            "simulator/e2e_validation/nemo_b200_sources.py.",
            "70B's userbuffers configuration runs the projection's and FC2's forward ReduceScatters by ring "
            "exchange (tp_overlap_methods), where TE's default pipelines them.",
            "CUDA graphs are off in this release's script on every GPU: its launches are eager, as priced.",
            "The network is not printed: the dgx-b200 profile (8 x 400 Gb/s InfiniBand per node).",
            "The 405B row (128 GPUs) is transcribed, not built: its printed plan is not the release's "
            "configuration table's."]),
    Source("torchtitan", "torchtitan FSDP2 (Llama 2/3, 64 A100 eager; 32-64 H200 compiled Float8)",
           "torchtitan_benchmarks.csv", _torchtitan,
           ["Held out entirely (none of these rows fits anything).",
            "Op-level selective checkpointing (torchtitan's selective_ac_option \"op\") runs as recompute: "
            "selective_op: wk, wo, w3 (every GEMM but w2 under Float8), the norms and the activation re-run before "
            "each block's backward, the attention core kept.",
            "The selective-layer rows (every N-th block checkpointed, N not printed) are left out.",
            "The A100 cluster's network is not stated: DGX A100 (8 x 200 Gb/s HDR per node) assumed.",
            "The Grand Teton H100 rows (HBM2e, 2.4 TB/s, 500 W power limit) are left out: no profile describes them."]),
    Source("fms_fsdp", "IBM fms-fsdp, PyTorch FSDP1 full sharding (Llama 2 13B-70B, 128 A100 and 96 H100, BF16, eager)",
           "fms_fsdp_llama2.csv", fms_fsdp,
           ["Held out entirely (none of these rows fits anything).",
            "FSDP1 FULL_SHARD per block with bf16 gathers and reductions over the fp32 model, modelled as the "
            "simulator's FSDP ZeRO-3; every block checkpointed (the printed Full AC); the torchtitan eager stack "
            "(PyTorch ops, SDPA FlashAttention-2, foreach AdamW); see simulator/e2e_validation/fms_fsdp_sources.py.",
            "The network is printed per cluster only (400 and 800 Gb/s): profiles fms-a100 and fms-h100, the NIC "
            "split assumed.",
            "Transcribed, not built: 7B (HYBRID_SHARD), 13B (every second block checkpointed) and the torch.compile "
            "table (34B/70B with every n-th block checkpointed, n not printed)."]),
    Source("h200_eager", "This project's GPT-2 steps in eager PyTorch on one H200 (124M-1.3B, bf16 autocast, fused AdamW)",
           "h200_gpt2_eager_single_gpu.csv", h200_eager,
           ["Held out entirely (none of these rows fits anything: one GPU each; dgx-h200 inherits dgx-h100's fitted "
            "GEMM curve). Measured by benchmarks/measure_gpt_step.py; every setting read off that script (see "
            "simulator/e2e_validation/h200_step_sources.py).",
            "Attention: PyTorch 2.11's SDPA runs cuDNN's fused attention on this GPU (the profiler names "
            "cudnn_generated_fort_native_sdpa_sm90_flash, compute_dot_do_o and convert_dq_to_16bits), the flash3 "
            "class.",
            "Autocast over fp32 parameters (training.autocast): every fp32 weight and bias cast to bf16 (forward) and "
            "their gradients back (backward), a kernel each, and the fp32 residual stream autocast leaves (the "
            "embedding's output is fp32): the LayerNorms and residual adds run in fp32.",
            "GPT-2 124M at micro-batch 1 and 4 are host-bound (step 18.9 and 20.5 ms, GPU busy 6.3 and 14.1 ms); "
            "the GPU-bound rows read 11-15% pessimistic, the gap of the GEMM rate (cuBLAS on this H200 runs 19-25% "
            "faster than dgx-h100's fitted training curve the profile inherits); see the findings."]),
    Source("cudnn_llama1b", "NVIDIA cuDNN frontend's Llama-3.2-1B training loop on one B200 and one H200 (Hugging Face transformers, eager, bf16, SGD)",
           "cudnn_frontend_llama32_1b.csv", cudnn_llama1b,
           ["Held out entirely (none of these rows fits anything: one GPU each). Every setting read off the "
            "benchmark's script and Dockerfile (see simulator/e2e_validation/hf_llama_sources.py): transformers' "
            "LlamaForCausalLM in bf16, eager PyTorch layers with LlamaRMSNorm as its PyTorch ops "
            "(norm_kernel: composite) and the unfused RoPE, SDPA pinned to cuDNN (flash3) or FlashAttention-2 "
            "(flash2), CrossEntropyLoss on the bf16 logits (cross_entropy: torch_lowp), torch.optim.SGD on the "
            "bf16 parameters (optimizer_algorithm: sgd).",
            "The memory-efficient SDPA backend's rows are in the file and not built (no kernel model). The "
            "README's clock locks are not modelled: the B200 log shows the lock refused (default clocks); the "
            "H200 rows have no log."]),
    Source("simumax_b200", "SimuMax's measured Megatron-LM steps on one B200 node (Llama 3 70B / 405B cut to 12 / 4 layers, BF16, "
           "TP 1-8, PP 2, CP 4-8 at 32K-128K)", "simumax_b200_megatron.csv", simumax_b200,
           ["One node in BF16: fitting rows of the dgx-b200 GEMM derate, with the three per-tensor FP8 rows of "
            "other sources; scored with the derate fitted on those FP8 rows alone. The measured columns of SimuMax "
            "1.2's B200 table, run by its authors with "
            "Megatron-LM core_r0.14.0 and TransformerEngine 2.11; every setting from the launcher the repository "
            "ships (see the file's header and simulator/e2e_validation/simumax_sources.py).",
            "The distributed optimizer without overlap: fp32 gradients reduce-scattered after the backward, "
            "parameters all-gathered after the step; no TP overlap, no recompute, no dropout.",
            "The model cut to 12 (70B) or 4 (405B) layers keeps the full embedding and LM head; the launcher's 405B "
            "has 16 KV groups.",
            "The DeepSeek-V2/V3 rows of the same table are transcribed, not built (expert capacity padding is not "
            "modelled)."]),
    Source("mcore2024", "Megatron-Core 2024 weak scaling (H100)", "megatron_core_readme_2024_h100.csv", _mcore2024,
           ["Precision, micro-batch, vp and recompute are not stated; bf16 (the MFU column's peak), no recompute, "
            "and the largest micro-batch that fits in memory (as the 2021 weak-scaling scripts ran) assumed.",
            "TE 1.x's Userbuffers defaults: pipeline and bulk overlap GEMMs on every SM (set_sm_margin 0).",
            "Rows above 1536 GPUs are skipped for run time."]),
    Source("mpt", "MosaicML llm-foundry MPT (FSDP, BF16)", "llm_foundry_mpt.csv", _mpt,
           ["MPT uses ALiBi: a GeLU GPT without learned positions, the bias added inside the Triton "
            "FlashAttention kernel (no traffic, no RoPE).",
            "FSDP FULL_SHARD is modelled as FSDP2 ZeRO-3 (Composer used FSDP1, torch 1.13/2.0)."]),
    Source("mpt_seq", "MosaicML llm-foundry MPT sequence-length sweeps (8 GPUs, BF16)", "llm_foundry_mpt.csv",
           _mpt_seq,
           ["Held out entirely: a sweep along one variable tests how the model extrapolates along it, so none "
            "of its single-node rows fits the GEMM curve.",
            "MPT's learned position embeddings grow with the sequence (the tables' NumParams do); modelled "
            "without them, as the seq-2048 rows."]),
    Source("mpt_small", "MosaicML llm-foundry MPT 125M-760M (FSDP, BF16)", "llm_foundry_mpt.csv", _mpt_small,
           ["Held out entirely (none of these rows fits the GEMM curve): the regime of small GEMMs, where "
            "memory-bound kernels, the LM head and host overhead weigh most.",
            "Built as the MPT rows (ALiBi, no learned positions, FSDP as FSDP2 ZeRO-3, "
            "FlashAttention-1 kernels); A100-40GB rows have no profile and are left out."]),
    Source("flagperf", "FlagPerf Llama-3 (Megatron-Core 0.6, BF16; FP8 on H100)", "flagperf_nvidia.csv", _flagperf,
           ["A800 rows run on the DGX A100 profile (A800 NVLink is 400 GB/s, not 600).",
            "The two H100 rows printed bf16+fp8 are the BF16 plan run with TransformerEngine's FP8 "
            "(delayed scaling: FlagPerf training/nvidia/llama3_8B-megatron/config/training_adapter_H100_fp8.sh); "
            "held out like every FP8 row on H100.",
            "Distributed optimizer not stated; ZeRO-1 assumed.",
            "FlagPerf lists flash attention 2 among the case's optimisations, but its image "
            "(nvcr.io/nvidia/pytorch:24.02-py3, FlagPerf training/nvidia/docker_image/megatron_core060/Dockerfile) "
            "runs the layers through TransformerEngine, whose DotProductAttention prefers cuDNN's fused "
            "attention to flash-attn on sm90 from v1.2 on (transformer_engine/pytorch/attention.py: \"Select "
            "FusedAttention on sm90 and FlashAttention on others\"): the H100 rows run the profile's default "
            "kernel (cuDNN, flash3-class), the A800 rows FlashAttention-2."]),
    Source("nemo_cp", "NeMo long-context with context parallelism (FP8, H100 and B200)", "nemo_long_context_cp.csv",
           _nemo_long_context,
           ["FP8 GEMMs (TransformerEngine), attention in bf16. Micro-batch, recompute and TP comm overlap are "
            "not stated: 1, none (every row fits) and none (NeMo's Llama2-7B default) assumed.",
            "H100 (NeMo 24.03.01): FlashAttention-2, not cuDNN. NeMo-Framework-Launcher's global environment "
            "(launcher_scripts/conf/config.yaml, tags 24.01 to 24.07) sets NVTE_FUSED_ATTN: 0 \"Disable cudnn FA "
            "until we've tested it more\", so TransformerEngine 1.4 builds no FusedAttention and runs flash-attn 2, "
            "context parallelism included. B200 (NeMo 25.04): TE's default, cuDNN.",
            "The 4K H100 row (4 GPUs) and the 8K/16K B200 rows (2 and 4 GPUs) fill no whole node and are left "
            "out; the rows without CP give no parallel plan."]),
    Source("usp", "USP paper, Ulysses x ring x TP (Llama2-7B/Llama3-8B, 8-16 A800, 30K-208K tokens, BF16)",
           "usp_2405_07719.csv", usp,
           ["Held out entirely (none of these rows fits anything).",
            "A800: the A100 chip with NVLink cut to 400 GB/s (the dgx-a800 profile, dgx-a100's GEMM derate).",
            "Precision, micro-batch (where the global batch exceeds 1), recompute and overlap flags are not "
            "printed: bf16, 1, none (the paper's OOM reports fit none) and Megatron-LM's defaults assumed.",
            "Sequence lengths read as K = 1,024 tokens.",
            "Not modelled: Table 6's TP2 plans at 64K and 80K measure 141.7-201.6 TFLOP/s where every other plan "
            "of the same length measures 196.9-247.8 (the paper gives no reason); the penalty, 1.5 s of a 4.3 s "
            "step at 64K, is larger than the step's whole attention time and shrinks with length (1.2 s at 80K, "
            "0.8 s at 120K), so it is neither attention pricing nor a per-token cost. The simulator predicts "
            "these plans inside the range of the others; they are the source's worst rows (+18% to +62%)."]),
    Source("nemo2407", "NeMo 24.07 performance summary (FP8, H100, pre-training)", "nemo_perf_summary_24.07.csv",
           _nemo_2407,
           ["All rows are FP8 on H100, so none is in the fitting subset (the dgx-h100 curve is fitted on bf16).",
            "Attention: FlashAttention-2. NeMo-Framework-Launcher 24.07's launcher_scripts/conf/config.yaml sets "
            "NVTE_FUSED_ATTN: 0 (\"Disable cudnn FA until we've tested it more\"; dropped on the 24.09 branch), so "
            "TransformerEngine runs flash-attn 2 instead of cuDNN's fused attention.",
            "GPT-3 vocabulary: the GPT-2 BPE (50257) padded as Megatron pads it (a multiple of 128 x TP).",
            "GPT3-20B and Nemotron rows (no shape in the source) and the SFT/LoRA rows are left out."]),
    Source("dgxc", "NVIDIA dgxc-benchmarking Nemotron-4 on H100 (worked examples, BF16; v25.05 table, BF16 and FP8)",
           "misc_single_points.csv",
           _dgxc,
           ["Nemotron-4's squared-ReLU MLP (mlp: squared_relu) runs NeMo's eager torch.pow(F.relu(x), 2): two "
            "kernels forward and four backward (activation_kernel: eager).",
            "The loss is TransformerEngine's fused cross-entropy: NeMo's performance scripts set "
            "cross_entropy_fusion_impl te for every model from 2.3 (container 25.04) on, the releases these rows ran; "
            "Nemotron-4's configs have no dropout.",
            "The other rows of the file are left out: OPT-175B gives no plan, and the MLPerf GPT-3 row is a "
            "third-party summary of a 10,752-GPU run."]),
    Source("dgxc_llama", "NVIDIA dgxc-benchmarking v25.04 Llama 3.1 8B/70B/405B on H100 (NeMo 25.02.01, BF16 and FP8)",
           "dgxc_llama31_h100.csv", dgxc_llama,
           ["Held out entirely (none of these rows fits anything, the single-node 8B rows included).",
            "Settings the README does not print come from the NeMo 2.0 recipes of the commit the release pins "
            "(distributed optimizer, overlapped gradient and parameter communication in bf16, no recompute, "
            "TE TP overlap for 70B and 405B); see the file's header and "
            "simulator/e2e_validation/dgxc_llama_sources.py.",
            "The TP overlap runs TransformerEngine's default per-GEMM methods (tp_overlap: te_default) with the "
            "SM counts of the recipe's userbuffers configurations (tp_overlap_gemm_sms: the four bulk "
            "overlaps on every SM, set_sm_margin False; proj_fprop 24 and fc2_fprop 16 (70B) or 8 (405B) SMs "
            "withheld), where TE's defaults withhold 16 SMs from all six.",
            "The network is not printed: the dgx-h100 profile (8 x 400 Gb/s InfiniBand per node) assumed.",
            "Scored, for simulation time (a pipelined 405B row costs 18-27 CPU seconds, a 70B one 3-6): every 8B "
            "run, the 70B runs on 64 and 2,048 GPUs in both precisions, the 405B proxy on 32 GPUs in both "
            "precisions and in BF16 on 64 (17 of the 34 runs; each weak-scaling table's step times lie within 3% "
            "of each other)."]),
    Source("dgxc_llama_nemo24", "NVIDIA dgxc-benchmarking v24.11.1 and v25.02 Llama 3.1 8B/70B/405B on H100 (NeMo "
           "24.09 and 24.12, BF16 and FP8)",
           "dgxc_llama31_h100_nemo24.csv", dgxc_llama_nemo24,
           ["Held out entirely (none of these rows fits anything, the single-node rows included).",
            "The plans of the dgxc_llama rows (8B TP 1, CP 2; 70B TP 4, PP 4 x VP 5, CP 2, which v25.04 kept for BF16) "
            "two containers older, run by NeMo 1.0's launcher configuration of those releases (Apex distributed_fused_adam with "
            "overlapped bf16 gradient and parameter synchronisation, cuDNN fused attention, FP8 hybrid with "
            "delayed scaling and fp8 parameters); see the file's header and "
            "simulator/e2e_validation/dgxc_llama_sources.py.",
            "405B as those releases ran it, not as v25.04 did: TP 8, PP 9 x VP 7 with the layers split evenly, CP 2, "
            "16 query groups (the yaml's) and the GPT-2 tokenizer on synthetic data (configure.sh's), with proxies "
            "of 7, 21 and 42 layers on 32, 96 and 192 GPUs.",
            "The network is not printed: the dgx-h100 profile (8 x 400 Gb/s InfiniBand per node) assumed.",
            "Scored: every 8B run, the 70B runs on 64 and 2,048 GPUs (TP 4, PP 4 x VP 5, CP 2, TE TP overlap at "
            "the yaml's userbuffers SM counts, in both precisions) and the 405B proxies on 32 and 96 GPUs (7 layers "
            "without pipeline; 21 layers at PP 3 x VP 7); transcribed, not scored, for simulation time: the 70B runs "
            "on 128-1,024 GPUs (each weak-scaling table within 2% (BF16) and 5% (FP8) of its 64-GPU run), the "
            "405B proxy on 192 GPUs and the whole 405B on 576-2,304 (about 8 and 35 CPU s a row)."]),
    Source("dgxc_gpt3", "NVIDIA dgxc-benchmarking GPT-3 175B on H100 (NeMo 24.05 and 24.12, BF16 and FP8)",
           "dgxc_gpt3_175b_h100.csv", dgxc_gpt3,
           ["Held out entirely (none of these rows fits anything).",
            "The nemo_megatron recipe's GPT-3 175B at TP 4 x PP 8 (VP 12 under nemo:24.05, VP 6 under nemo:24.12), "
            "micro-batch 1, two sequences per GPU, run by NeMo 1.0's megatron_gpt_pretraining.py on the release's yaml "
            "(Apex distributed_fused_adam with overlapped bf16 gradient and parameter synchronisation, TE Userbuffers TP "
            "overlap at the yaml's SM counts, dropout 0.1, no recompute; flash-attn 2 under nemo:24.05, cuDNN fused "
            "attention under nemo:24.12; FP8 hybrid with delayed scaling and fp8 parameters); see the file's header and "
            "simulator/e2e_validation/dgxc_gpt3_sources.py.",
            "The network is not printed: the dgx-h100 profile (8 x 400 Gb/s InfiniBand per node) assumed.",
            "Scored, for simulation time (6-9 CPU seconds a row): the 128- and 2,048-GPU runs under nemo:24.12 and the "
            "128-GPU runs under nemo:24.05, in both precisions (6 of the 20 runs)."]),
    Source("dgxc_grok1", "NVIDIA dgxc-benchmarking Grok-1 314B (Mixture-of-Experts) on H100 (NeMo 24.09 and 24.12, BF16 and FP8)",
           "dgxc_grok1_314b_h100.csv", dgxc_grok1,
           ["Held out entirely (none of these rows fits anything).",
            "The grok1 recipe's Grok-1 314B (8 experts, top-2, FFN 32,768 per expert) cut to 2-16 layers for 8-128 GPUs, "
            "TP 4 with sequence parallelism and TE's default Userbuffers overlap, EP 2-8 with the experts tensor-parallel "
            "over TP, Megatron-Core's alltoall dispatcher with expert inputs padded to a capacity factor of 1.0, CP 2 "
            "from 64 GPUs, PP 2 x VP 8 on 128, micro-batch 1, 1,024 sequences a step, Megatron-Core DDP (overlapped "
            "bf16 gradient and parameter synchronisation), no recompute, dropout 0, flash-attn 2 (NVTE_FUSED_ATTN=0); "
            "FP8 hybrid with delayed scaling and fp8 parameters, the output layer in BF16; see the file's header and "
            "simulator/e2e_validation/dgxc_grok1_sources.py.",
            "The network is not printed: the dgx-h100 profile (8 x 400 Gb/s InfiniBand per node) assumed.",
            "Scored: the runs on 8, 16, 32, 64 and 128 GPUs, both containers and precisions (20 of the 36 runs); the "
            "runs on 256-2,048 GPUs (4.5-20 CPU seconds each) are transcribed, not scored."]),
    Source("dgxc_nemotronh", "NVIDIA dgxc-benchmarking Nemotron-H 56B (hybrid Mamba2-Transformer) on H100 (NeMo 25.04.01, FP8)",
           "dgxc_nemotronh_56b_h100.csv", dgxc_nemotronh,
           ["Held out entirely (none of these rows fits anything).",
            "NeMo 2.0's pretrain_nemotronh_56b.py at the commit the recipe pins: 118 blocks (54 Mamba2 mixers, 10 "
            "attention, 54 squared-ReLU MLP blocks: model.layer_pattern), TP 8 with sequence parallelism and no TP "
            "overlap, no pipeline, micro-batch 1, three sequences per GPU, Megatron-Core 0.12 DDP (gradient "
            "ReduceScatter overlapped in bf16, parameter AllGather not), FP8 with delayed scaling and fp8 parameters, "
            "flash-attn 2 (NVTE_FUSED_ATTN=0), TE cross-entropy, no recompute, dropout 0; see the file's header and "
            "simulator/e2e_validation/dgxc_nemotronh_sources.py.",
            "The network is not printed: the dgx-h100 profile (8 x 400 Gb/s InfiniBand per node) assumed.",
            "Every run scored (32-2,048 GPUs, 7 rows, under a CPU second each)."]),
]


def cases(sources: Iterable[Source] = SOURCES, data_dir: Path = DATA_DIR) -> list[Case]:
    out: list[Case] = []
    for s in sources:
        out.extend(s.build(read_rows(data_dir / s.file)))
    return out


# Profiles whose GEMM curve takes fp8 rows among its fitting rows. dgx-b200 had no single-node
# bf16/fp16 row until SimuMax's (one source): its three per-tensor FP8 rows, one per source, stay so
# that the bf16 source held out is scored with a B200 fit, not a derate borrowed from another GPU.
FP8_FIT_PROFILES = frozenset({"dgx-b200"})
# The fp8 recipes such a fit takes: per-tensor scaling, whose GEMMs the curve x fp8_gemm_efficiency_scale
# prices. MXFP8's block-scaled GEMMs carry a factor of their own (schedule/fp8.py), which a fit on
# them would fold into the curve.
FP8_FIT_RECIPES = frozenset({"delayed", "current"})


# Sources held out entirely, single-node rows included.
HELD_OUT_SOURCES = frozenset({"mpt_seq", "mpt_small", "automodel_moe", "bridge_moe", "bridge_moe_overlap",
                              "modelzoo_qwen3", "modelzoo_mixtral", "mcore_dsv3_gb200",
                              "torchtitan",
                              "megatron2021_zero3",
                              "megatron2021_ptdp", "megatron2021_weak", "megatron2022", "vtrain_multi",
                              "vtrain_single", "megatron_ci", "megatron_ci_small", "llama3", "usp",
                              "megascale", "mtnlg", "mlperf_gpt3", "mlperf_gpt3_v30", "dgxc_llama", "dgxc_llama_nemo24", "dgxc_gpt3", "dgxc_grok1", "dgxc_nemotronh", "internlm", "nanotron_playbook", "fms_fsdp",
                              "bridge_card", "bridge_card_hybrid", "h200_eager", "cudnn_llama1b"})


def is_fit_case(case: Case) -> bool:
    """The fitting subset: single-node (8-GPU) rows in bf16/fp16, the precision the GEMM curve
    describes. An fp8 row also carries TransformerEngine's fp8 overheads (casts, amax
    reductions) that the model lumps into the curve × ``fp8_gemm_efficiency_scale``, so it fits a
    profile only where bf16/fp16 rows are missing or come from one source (``FP8_FIT_PROFILES``), and only with per-tensor
    scaling (``FP8_FIT_RECIPES``). Every multi-node row is held out, and so is every row of a sweep
    source (``HELD_OUT_SOURCES``)."""
    if case.n_gpus != 8 or case.source in HELD_OUT_SOURCES:
        return False
    training = case.scenario["training"]
    if training["dtype"] != "fp8":
        return True
    return (case.scenario["hardware"] in FP8_FIT_PROFILES
            and training.get("fp8_recipe", "delayed") in FP8_FIT_RECIPES)

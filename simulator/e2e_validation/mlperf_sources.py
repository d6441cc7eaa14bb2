"""NVIDIA's MLPerf Training v3.1 GPT-3 175B submissions on Eos (DGX H100), as e2e cases.

The MLPerf logs time every optimizer step (``train_step_timing``, one MLLOG line per step), and the
submission repository holds the launch configuration of the same code (mlcommons/training_results_v3.1,
``data/e2e/mlperf_v31_gpt3_h100.csv`` has the provenance): GPT-3 175B (96 layers, hidden 12,288,
sequence 2,048) on 512 to 10,752 H100, TP 4 x PP 8 with 12 virtual stages, the batch and the
micro-batches per pipeline as logged (128, 16 or 8 per pipeline: the largest runs drive the
interleaved pipeline with as many micro-batches as it has stages). An NVIDIA-tuned FP8 stack at
the largest scale any source reaches. Azure submitted the same code at Eos' largest plan on 1,344
ND H100 v5 VMs (8 x 400 Gb/s InfiniBand each, as a DGX H100): the same scenario on another
cluster.

What the submission's code sets, as the scenario describes it:

- NeMo 23.09 with TransformerEngine FP8 (``config_fp8.sh``: hybrid format, delayed scaling, amax
  history 1,024, no FP8 parameter gather), bf16 elsewhere (``megatron_amp_O2``);
- sequence parallelism with Userbuffers TP overlap (``conf/tp_overlap/h100tp4pp8mbs1.yaml``: the
  four bulk overlaps with no SM margin, the two pipelined GEMM-ReduceScatters on 24 and 4 SMs;
  its atomic GEMM-ReduceScatter, ``NVTE_UB_ATOMIC_GEMM_RS=1``, is priced as the pipelined one);
- Apex's DistributedFusedAdam (``USE_DIST_OPTIMIZER=True``): gradients reduce-scattered in bf16
  and parameters all-gathered, both overlapped (the distributed optimizer of
  ``megatron_parallel``);
- the interleaved schedule with ``overlap_p2p_comm``; no activation checkpointing; hidden and
  attention dropout 0; flash-attn 2 through TransformerEngine 1.x (which prefers it to cuDNN's
  fused attention when both are built: ``NEMO_LAUNCHER_2024``);
- learned positions and the tied embedding of NeMo's GPT config; the vocabulary of the
  benchmark's SentencePiece model (50,257, not printed: assumed), padded to 50,688 at TP 4.

The v3.0 round (2023-06, NeMo Megatron 23.04, ``data/e2e/mlperf_v30_gpt3_h100.csv``, source
``mlperf_gpt3_v30``) ran the same plan with the same settings on NVIDIA's DGX H100 (512 and 768
GPUs) and CoreWeave's HGX H100 (768-3,584 GPUs), the only difference the code shows being the
fc2 GEMM-ReduceScatter's SMs (20 where v3.1 gives it 4); it is built the same way.

Held out entirely: none of these rows fits anything.
"""

from __future__ import annotations

from dataclasses import replace

from simulator.e2e_validation.rows import Row, parse_int
from simulator.e2e_validation.scenarios import (NEMO_LAUNCHER_2024, Case, Stack, gpt_model, make_scenario,
                                                megatron_parallel, padded_vocab)

SOURCE = "mlperf_gpt3"
SOURCE_V30 = "mlperf_gpt3_v30"

# conf/tp_overlap/h100tp4pp8mbs1.yaml as ``parallel.tp_overlap_gemm_sms``: the bulk overlaps
# (set_sm_margin 0) leave their GEMM every SM; the pipelined ones keep their margin at num_sm.
MLPERF_V31_UB = dict(qkv_dgrad=0, qkv_wgrad=0, fc1_dgrad=0, fc1_wgrad=0, proj_fprop=24, fc2_fprop=4)
# v3.0's h100tp4pp8mbs1_tp_comm_overlap_cfg.yaml: the same but fc2_fprop on 20 SMs
MLPERF_V30_UB = {**MLPERF_V31_UB, "fc2_fprop": 20}

# custom.yaml: hidden_dropout and attention_dropout 0.0 (no dropout masks)
MLPERF_V31_STACK = replace(NEMO_LAUNCHER_2024, dropout=False)


def nemo_gpt3_scenario(r: Row, name: str, *, dtype: str, ub_sms: dict[str, int], stack: Stack) -> dict:
    """A row's GPT as NeMo's Megatron-Core GPT runs it on DGX H100, shared by NVIDIA's GPT-3 175B
    sources (MLPerf, dgxc-benchmarking's ``nemo_megatron``): learned positions and the tied
    embedding, the vocabulary padded to a multiple of 128 x TP, the row's TP, PP and VP with the
    distributed optimizer and TE's per-GEMM TP overlap at the configuration's SMs (``ub_sms``),
    micro-batch and global batch as printed, no recompute; FP8 with delayed scaling."""
    n = parse_int(r["num_gpus"])
    tp, pp, vp = (parse_int(r[k], 1) for k in ("tp", "pp", "vp"))
    model = gpt_model({**r, "vocab": str(padded_vocab(parse_int(r["vocab"]), tp))}, position="learned", tied=True)
    par = {**megatron_parallel(tp, pp, vp), "tp_overlap_gemm_sms": dict(ub_sms)}
    scn = make_scenario(name, "dgx-h100", n, model, micro_batch=parse_int(r["micro_batch"], 1),
                        global_batch=parse_int(r["global_batch"]), dtype=dtype, recompute="none", parallel=par,
                        stack=stack)
    if dtype == "fp8":
        scn["training"]["fp8_recipe"] = "delayed"
    return scn


def mlperf_gpt3_case(r: Row) -> Case:
    """One system's step time with the settings of the module docstring (v3.0 or v3.1 by the row's
    ``source_id``)."""
    v30 = "v3.0" in r["source_id"]
    n = parse_int(r["num_gpus"])
    tp, pp, vp = (parse_int(r[k], 1) for k in ("tp", "pp", "vp"))
    dp = n // (tp * pp)
    gb = parse_int(r["global_batch"])
    azure, coreweave = "Azure" in r["source_id"], "CoreWeave" in r["source_id"]
    where = " (Azure ND H100 v5)" if azure else " (CoreWeave HGX H100)" if coreweave else ""
    scn = nemo_gpt3_scenario(r, f"mlperf-{'v30' if v30 else 'v31'}-gpt3-{n}{'-azure' if azure else '-coreweave' if coreweave else ''}",
                             dtype="fp8", ub_sms=MLPERF_V30_UB if v30 else MLPERF_V31_UB, stack=MLPERF_V31_STACK)
    label = f"{r['model_name']} tp{tp} pp{pp} vp{vp} dp{dp} gbs{gb} {n} GPUs" + where
    return Case(SOURCE_V30 if v30 else SOURCE, label, scn, "step_time_s", float(r["value"]), n)


def mlperf_gpt3(rows: list[Row]) -> list[Case]:
    """NVIDIA's seven MLPerf Training v3.1 GPT-3 175B systems on Eos (512-10,752 H100, NeMo 23.09,
    FP8) and Azure's one (10,752 H100, the same code), TP 4 x PP 8 x 12 virtual stages, the logged
    batch, step time as logged (the median of every step of three runs; module docstring)."""
    return [mlperf_gpt3_case(r) for r in rows if r["metric"] == "step_time_s"]


def mlperf_gpt3_v30(rows: list[Row]) -> list[Case]:
    """The MLPerf Training v3.0 GPT-3 175B systems of NVIDIA (512 and 768 DGX H100 GPUs) and
    NVIDIA+CoreWeave (768-3,584 HGX H100 GPUs), NeMo Megatron 23.04, FP8, the v3.1 plan with v3.0's
    Userbuffers SMs, step time as logged (module docstring)."""
    return [mlperf_gpt3_case(r) for r in rows if r["metric"] == "step_time_s"]

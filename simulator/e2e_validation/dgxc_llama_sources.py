"""NVIDIA dgxc-benchmarking's Llama 3.1 pre-training recipe on H100 (release v25.04, and releases
v24.11.1 and v25.02 two containers older: ``dgxc_llama_nemo24``, the same 8B and 70B plans, the 405B
at its own), as e2e cases.

The v25.04 release's ``llama3.1/README.md`` prints measured step times of its launch script's plans
on 8 to 2,048 H100 (container nvcr.io/nvidia/nemo:25.02.01), each model in BF16 and FP8, at a
global batch that grows with the GPUs (weak scaling): Llama 3.1 8B (TP 1, CP 2), 70B (TP 4 and SP,
PP 4 x VP 5 with CP 2 in BF16, PP 8 x VP 5 in FP8) and 405B (TP 8 and SP, PP 8 x VP 8, CP 2) with
three shortened 405B "proxies" on 32-128 GPUs (``data/e2e/dgxc_llama31_h100.csv``, whose header
has the provenance). The plan of every row is ``llama31_auto_configs`` of the same release's
``llama3.1/llama31_utils.py``; the rest is the NeMo 2.0 recipe of the commit its ``setup.sh``
pins (NVIDIA/NeMo d2b21556, ``nemo/collections/llm/recipes/llama3_8b.py``, ``llama3_70b.py``,
``llama31_405b.py`` with ``performance_mode=True``; ``scripts/performance/utils.py``
``set_primary_perf_configs``):

- the distributed optimizer with overlapped gradient ReduceScatter and parameter AllGather
  (``DistributedDataParallelConfig(overlap_grad_reduce=True, overlap_param_gather=True)``), the
  gradients reduced in bf16 (``pretrain_performance_optimizations``: ``grad_reduce_in_fp32 =
  False``), sequence parallelism wherever TP > 1, no activation recompute;
- TransformerEngine's TP communication overlap for 70B and 405B (``MegatronCommOverlapCallback``
  with the ``userbuffers_{bf16,fp8}_h100_h8192_tp4`` / ``h16384_tp8_cp2`` configurations: ring
  exchange for the QKV and FC1 forward GEMMs, pipelined splits for the projection and FC2, bulk
  overlap of the backward, with the SMs each configuration gives its GEMMs: ``UB_TUNED_H100``), not
  for 8B (``tp_comm_overlap=False``; TP 1);
- interleaved 1F1B with overlapped pipeline exchanges where VP > 1; for 405B the embedding and the
  loss each count as one layer in the pipeline split (``account_for_embedding_in_pipeline_split``
  and ``account_for_loss_in_pipeline_split``, the recipe's trainer defaults), so the first
  virtual stage holds one layer fewer, as does the last;
- context parallelism by Megatron-Core's default ``cp_comm_type`` (p2p, TE's KV ring);
- FP8 as ``bf16_with_fp8_mixed`` (``fp8='hybrid'``, delayed scaling with a 1,024-step amax history,
  ``fp8_params=True``): delayed scaling with fp8 parameter AllGather;
- attention: the executor's ``NVTE_FLASH_ATTN=1`` and ``NVTE_FUSED_ATTN=1`` leave TE's choice,
  cuDNN's fused attention on H100 (the profile's default kernel);
- the Llama 3.1 tokenizer (``pretrain_llama31.py``: ``recipe.data.tokenizer =
  hf_tokenizer(HF_MODEL_URI)``, 128,256 tokens) padded by NeMo 2.0 to a multiple of 128 x TP
  (``make_vocab_size_divisible_by``): 128,512 at TP 4, 129,024 at TP 8 (``padded_vocab``).
"""

from __future__ import annotations

from dataclasses import replace

from simulator.e2e_validation.llama3_sources import llama3_layers_per_chunk
from simulator.e2e_validation.rows import Row, parse_int
from simulator.e2e_validation.scenarios import (MODERN, NEMO2_DDP_MCORE_011, Case, llama_model, make_scenario,
                                                megatron_parallel, padded_vocab)

# The recipe's tuned Userbuffers configurations (NeMo ``nemo/collections/llm/recipes/
# tp_overlap_configs/userbuffers.py``; the bf16 and fp8 variants differ only in FP8 buffers), as
# the SMs each bulk or pipeline communication kernel withholds from its GEMM
# (``parallel.tp_overlap_gemm_sms``): the four bulk overlaps of the column-parallel backward set
# ``set_sm_margin=False`` (the GEMM on all 132 SMs beside a 2-24-SM communication kernel), the two
# pipelined GEMM-ReduceScatters keep the margin with their own ``num_sm``. TE's defaults, which
# ``tp_overlap: te_default`` alone runs, withhold 16 SMs from all six.
UB_TUNED_H100: dict[str, dict[str, int]] = {
    # userbuffers_{bf16,fp8}_h100_h8192_tp4_mbs1_seqlen8192 (70B): proj_fprop num_sm 24, fc2_fprop 16
    "70b": dict(qkv_dgrad=0, qkv_wgrad=0, fc1_dgrad=0, fc1_wgrad=0, proj_fprop=24, fc2_fprop=16),
    # userbuffers_{bf16,fp8}_h100_h16384_tp8_cp2_mbs1_seqlen8192 (405B): proj_fprop 24, fc2_fprop 8
    "405b": dict(qkv_dgrad=0, qkv_wgrad=0, fc1_dgrad=0, fc1_wgrad=0, proj_fprop=24, fc2_fprop=8),
}

# The rows scored, as (model size, precision, GPUs). A pipelined 70B row costs 3-6 CPU seconds to
# simulate, a 405B row of 62 or 126 layers 18-27 (32-64 virtual stages), a row without pipeline
# about one, so: every 8B row (one node, then data parallelism from 4 to 64 replicas over
# InfiniBand), the 405B proxy on 32 GPUs in both precisions (TP 8 with CP 2, no pipeline), the
# cheapest pipelined 405B row (the proxy in BF16 on 64: TP 8, CP 2, PP 4 x VP 8 at one layer per
# virtual stage), and both ends of each 70B weak-scaling table (BF16: TP 4, PP 4 x VP 5, CP 2 on 64
# and 2,048 GPUs; FP8: TP 4, PP 8 x VP 5 on 64 and 2,048). Each table's step times lie within 3% of
# each other, so the sizes between add simulation time more than information.
SCORED: frozenset[tuple[str, str, int]] = frozenset(
    {("8b", dtype, n) for dtype in ("bf16", "fp8") for n in (8, 16, 32, 64, 128)}
    | {("70b", dtype, n) for dtype in ("bf16", "fp8") for n in (64, 2048)}
    | {("405b", "bf16", 32), ("405b", "fp8", 32), ("405b", "bf16", 64)})


def _recipe(row: Row) -> tuple[str, str, int]:
    """(MODEL_SIZE, DTYPE, JOB_TOTAL_GPUS) of the launch script, from the row's source id
    ``dgxc-benchmarking-v25.04-llama3.1-<size>-<dtype>-<gpus>``."""
    size, dtype, n = row["source_id"].split("-")[-3:]
    return size, dtype, int(n)


def dgxc_llama_case(r: Row, embedding_loss_split: bool = True) -> Case:
    """One README row as a scenario (the module docstring gives every setting and its source).
    ``embedding_loss_split``: a pipelined 405B counts the embedding and the loss as a layer each
    in the pipeline split, as NeMo 2.0's recipe does (NeMo 1.0 splits the layers evenly)."""
    n, tp, pp, vp, cp = (parse_int(r[k], 1) for k in ("num_gpus", "tp", "pp", "vp", "cp"))
    size, dtype, _ = _recipe(r)
    fp8 = dtype == "fp8"
    model = dict(llama_model(r), vocab=padded_vocab(parse_int(r["vocab"]), tp))
    par = dict(megatron_parallel(tp, pp, vp, cp, tp_overlap="te_default" if size != "8b" else "none"),
               overlap_grad_reduce=True, grad_reduce_dtype="bf16", **NEMO2_DDP_MCORE_011)
    if size in UB_TUNED_H100:
        par["tp_overlap_gemm_sms"] = dict(UB_TUNED_H100[size])
    if size == "405b" and pp > 1 and embedding_loss_split:
        par["pp_layers"] = llama3_layers_per_chunk(model["layers"], pp, vp)
    dp = n // (tp * pp * cp)
    label = f"{r['model_name']} {dtype.upper()} tp{tp} pp{pp} vp{vp} cp{cp} dp{dp} {n} GPUs"
    scn = make_scenario(f"dgxc-llama31-{size}-{dtype}-{n}", "dgx-h100", n, model,
                        micro_batch=parse_int(r["micro_batch"], 1), global_batch=parse_int(r["global_batch"]),
                        dtype=dtype, recompute="none", parallel=par, stack=MODERN)
    if fp8:
        scn["training"].update(fp8_recipe="delayed", fp8_param_gather=True)
    return Case("dgxc_llama", label, scn, "step_time_s", float(r["value"]), n)


def dgxc_llama(rows: list[Row]) -> list[Case]:
    """dgxc-benchmarking v25.04's measured Llama 3.1 step times on H100 (NeMo 25.02.01), BF16 and
    FP8, with the TP, PP, VP, CP, micro-batch 1 and global batch of the launch script: every 8B
    run (8 to 128 GPUs), the 70B runs on 64 and 2,048 GPUs in both precisions, the 405B proxy on
    32 GPUs in both precisions and in BF16 on 64 (``SCORED``). Transcribed but not scored, for
    simulation time: the other 17 runs (70B at the data-parallel sizes between, the full 405B, the
    128-GPU proxy and the 405B FP8 proxy on 64)."""
    return [dgxc_llama_case(r) for r in rows if r["metric"] == "step_time_s" and _recipe(r) in SCORED]


# The containers of the releases that printed the same plans before v25.04
# (``data/e2e/dgxc_llama31_h100_nemo24.csv``): launch.sh's FW_VERSION per release tag.
NEMO24_CONTAINERS: dict[str, str] = {"v24.11.1": "24.09", "v25.02": "24.12"}


def dgxc_llama_nemo24_case(r: Row) -> Case:
    """One row of releases v24.11.1 and v25.02 (containers nemo:24.09 and nemo:24.12) as a
    scenario: its v25.04 twin (:func:`dgxc_llama_case` on the row's plan: 8B TP 1, CP 2; 70B TP 4,
    PP 4 x VP 5, CP 2 in both precisions, with TE's TP overlap at the SM counts of the yaml's
    ``ub_tp_comm_overlap_cfg``, which are ``UB_TUNED_H100["70b"]``; micro-batch 1, no recompute,
    cuDNN fused attention, FP8 hybrid with delayed scaling and fp8 parameters) on NeMo 1.0's
    launcher configuration (``llama3.1_{8b,70b}.yaml`` and ``configure.sh`` of those releases,
    ``NVTE_FUSED_ATTN=1``): Apex's ``distributed_fused_adam``, whose overlapped bf16 gradient and
    parameter synchronisation are the distributed optimizer's communication, in place of NeMo
    2.0's Megatron-Core DDP, so without that DDP's per-bucket passes (``ddp_grad_check``,
    ``ddp_grad_scaling``). The 405B rows (``llama3.1_405b.yaml``: TP 8, CP 2, ``UB_TUNED_H100["405b"]``'s
    SM counts, 16 query groups; configure.sh's layers, PP and global batch per GPU count) split
    their layers evenly over the virtual stages, as NeMo 1.0 does, and run configure.sh's GPT-2 BPE
    tokenizer on synthetic data: 50,257 tokens, padded to 51,200 (``padded_vocab``)."""
    twin = dgxc_llama_case(r, embedding_loss_split=False)
    size, dtype, n = _recipe(r)
    container = NEMO24_CONTAINERS[r["source_id"].split("-")[2]]
    par = {k: v for k, v in twin.scenario["parallel"].items() if k not in NEMO2_DDP_MCORE_011}
    # (the 405B rows' vocabulary is configure.sh's GPT-2 BPE, padded by the twin as NeMo 1.0 pads it)
    scn = dict(twin.scenario, name=f"dgxc-llama31-nemo{container}-{size}-{dtype}-{n}", parallel=par)
    # the twin's label with the container named: "Llama 3.1 8B BF16 nemo:24.09 tp1 pp1 vp1 cp2 dp4 8 GPUs"
    label = twin.label.replace(" tp", f" nemo:{container} tp", 1)
    return replace(twin, source="dgxc_llama_nemo24", label=label, scenario=scn)


def dgxc_llama_nemo24(rows: list[Row]) -> list[Case]:
    """dgxc-benchmarking v24.11.1 (nemo:24.09) and v25.02 (nemo:24.12): every Llama 3.1 8B run (the
    v25.04 plan on 8-128 H100), the 70B runs on 64 and 2,048 GPUs (both ends of each weak-scaling
    table) and the two smallest 405B proxies (7 layers on 32 GPUs, TP 8 x CP 2 without pipeline; 21
    layers on 96, PP 3 x VP 7 at one layer per virtual stage), BF16 and FP8, two containers older
    than v25.04's. Transcribed, not scored: the 70B runs on 128-1,024 GPUs (each table's steps lie
    within 2% (BF16) and 5% (FP8) of its 64-GPU run's, and the model's within 0.3%), the 42-layer
    405B proxy on 192 GPUs (about 8 CPU s a row) and the whole 405B on 576-2,304 (about 35).
    Not modelled: the yaml's deferred embedding wgrad (``defer_embedding_wgrad_compute``) and the
    405B runs' ``NCCL_P2P_NET_CHUNKSIZE`` of 256 KiB."""
    return [dgxc_llama_nemo24_case(r) for r in rows
            if r["metric"] == "step_time_s" and _nemo24_scored(*_recipe(r))]


def _nemo24_scored(size: str, dtype: str, n: int) -> bool:
    return size == "8b" or (size, n) in {("70b", 64), ("70b", 2048), ("405b", 32), ("405b", 96)}

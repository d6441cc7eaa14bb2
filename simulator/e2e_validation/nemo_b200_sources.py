"""NeMo 25.02's performance summary on DGX B200: Llama 3 8B and 70B pre-training, as e2e cases.

The NeMo Framework user guide's performance page, in the revision for container 25.02, printed a
DGX-B200 pre-training table in FP8 (``data/e2e/nemo_perf_summary_25.02_b200.csv`` has the
provenance). Its Llama 3 8B row ran on one node (8 GPUs, TP 1, PP 1, CP 1, micro-batch 2, global
batch 128, sequence 8,192): a single-node FP8 run on B200, the kind of row the dgx-b200 GEMM
derate is fitted on (``sources.is_fit_case``). What the table omits comes from the NeMo 2.2
performance scripts and recipes (tags v2.2.0 and v2.2.1 agree):

- ``scripts/llm/performance/pretrain_llama3_8b.py``: ``llama3_8b.pretrain_recipe(performance_mode=True)``,
  FP8 as ``bf16_with_fp8_mixed`` (hybrid FP8 with delayed scaling, amax history 1,024,
  ``fp8_params``: parameters gathered in FP8), gradients reduced in bf16, CUDA graphs off on every GPU
  (``enable_cuda_graph = args.gpu in []``), so the run's launches are eager as the simulator prices them;
- ``recipes/llama3_8b.py``: the distributed optimizer with overlapped gradient ReduceScatter and
  parameter AllGather, no TP communication overlap (TP 1 here), no recompute;
- ``gpt/model/llama.py`` ``Llama3Config``: hidden and attention dropout 0.0 (``training.dropout: false``);
  the loss is Megatron-Core's vocab-parallel cross-entropy (``cross_entropy_loss_fusion``), as the
  sibling NeMo 25.02 rows of ``dgxc_llama`` price it;
- ``scripts/llm/performance/utils.py`` ``slurm_executor``: ``NVTE_FUSED_ATTN=1`` and ``NVTE_FLASH_ATTN=1``
  leave TransformerEngine its choice of attention kernel (the profile's ``auto``, cuDNN on B200).

The 70B row (64 GPUs: TP 2 with sequence parallelism, PP 4 x VP 5, CP 2, DP 4, micro-batch 1) is
built and held out, with ``pretrain_llama3_70b.py``'s B200 userbuffers configuration
(``recipes/tp_overlap_configs/userbuffers.py`` ``userbuffers_fp8_b200_h8192_tp2_mbs1_seqlen8192``):
the four bulk overlaps of the column-parallel backward on every SM (``set_sm_margin=False``), the
forward AllGathers and the dgrad re-gathers by ring exchange, and the projection's and FC2's
forward ReduceScatters also by ring exchange (``num_sm=1``: ``tp_overlap_methods``, where TE's
default pipelines them); context
parallelism by Megatron-Core's default p2p ring. The 405B row is transcribed, not built: the plan
printed (PP 8 x VP 8 on 128 GPUs) is not the one the v2.2 configuration table lists (PP 9 x VP 7 on
144), so the recipe's other settings for it are not determined.
"""

from __future__ import annotations

from dataclasses import replace

from simulator.e2e_validation.rows import Row, parse_int
from simulator.e2e_validation.scenarios import (MODERN, NEMO2_DDP_MCORE_011, Case, llama_model, make_scenario,
                                                megatron_parallel, padded_vocab)

# NeMo 2.2's Llama 3 models set both dropouts to 0.0, and a dropout of p = 0 keeps no mask
NEMO_2502 = replace(MODERN, dropout=False)

# The rows built, by the page's model name (module docstring)
BUILT = frozenset({"LLAMA3-8B", "LLAMA3-70B"})

# userbuffers_fp8_b200_h8192_tp2_mbs1_seqlen8192: the bulk overlaps set_sm_margin=False (their GEMMs
# give up no SM), the projection's and FC2's forward ReduceScatters by ring exchange
UB_B200_70B: dict[str, int] = dict(qkv_dgrad=0, qkv_wgrad=0, fc1_dgrad=0, fc1_wgrad=0)
UB_B200_70B_METHODS: dict[str, str] = dict(proj_fprop="ring_exchange", fc2_fprop="ring_exchange")


def nemo_b200_case(r: Row) -> Case:
    """One table row as a scenario (the module docstring gives every setting and its source)."""
    n, tp, pp, vp, cp = (parse_int(r[k], 1) for k in ("num_gpus", "tp", "pp", "vp", "cp"))
    model = dict(llama_model(r), vocab=padded_vocab(parse_int(r["vocab"]), tp))
    par = dict(megatron_parallel(tp, pp, vp, cp, tp_overlap="te_default" if tp > 1 else "none"),
               overlap_grad_reduce=True, grad_reduce_dtype="bf16", **NEMO2_DDP_MCORE_011)
    if tp > 1:
        par.update(tp_overlap_gemm_sms=dict(UB_B200_70B), tp_overlap_methods=dict(UB_B200_70B_METHODS))
    mb, gb = parse_int(r["micro_batch"], 1), parse_int(r["global_batch"])
    dp = n // (tp * pp * cp)
    label = (f"{r['model_name']} B200 FP8 tp{tp} pp{pp}" + (f" vp{vp}" if vp > 1 else "")
             + f" cp{cp} dp{dp} mbs{mb} {n} GPUs")
    scn = make_scenario(f"nemo2502-{r['model_name'].lower()}-b200-{n}", "dgx-b200", n, model, micro_batch=mb,
                        global_batch=gb, dtype="fp8", recompute="none", parallel=par, stack=NEMO_2502)
    scn["training"].update(fp8_recipe="delayed", fp8_param_gather=True)
    return Case("nemo2502_b200", label, scn, "tokens_per_s_per_gpu", float(r["value"]), n)


def nemo_b200(rows: list[Row]) -> list[Case]:
    """NeMo 25.02's Llama 3 pre-training on DGX B200 (FP8, delayed scaling): 8B on one node (TP 1,
    micro-batch 2) and 70B on 64 GPUs (TP 2, PP 4 x VP 5, CP 2), with the NeMo 2.2 performance
    recipes' settings; the 405B row is transcribed, not built."""
    return [nemo_b200_case(r) for r in rows if r["metric"] == "tokens_per_s_per_gpu" and r["model_name"] in BUILT]

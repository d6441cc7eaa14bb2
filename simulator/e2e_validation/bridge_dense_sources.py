"""Megatron-Bridge's 25.11 and 26.04.01 performance summaries, dense Llama pre-training on DGX H100,
DGX B200, GB200 NVL72 and GB300 NVL72, as e2e cases (sources ``bridge_dense`` and ``bridge_dense_2604``).

The page (NVIDIA-NeMo/Megatron-Bridge ``docs/performance-summary.md``, NeMo container 25.11; the
file ``data/e2e/megatron_bridge_perf_summary_dense.csv`` has the provenance) prints tokens/s/GPU of
Llama 3 8B, Llama 3 70B and Llama 3.1 405B at sequence 8,192 with GBS, MBS, TP, PP, CP and VP, in
FP8 with per-tensor current scaling (FP8-CS) and, on B200, MXFP8. What the table omits comes
from the performance recipes of the release the container ships (Megatron-Bridge v0.2.0:
``scripts/performance/configs/llama3``, ``configs/llama31``, ``recipes/llama/llama3.py``,
``training/mixed_precision.py``):

- the distributed optimizer with overlapped gradient ReduceScatter and parameter AllGather,
  gradients reduced in bf16 (``set_llama3_common_configs``: ``grad_reduce_in_fp32 = False``),
  no activation recompute, sequence parallelism wherever TP > 1; no dropout (the Llama
  providers' ``hidden_dropout`` and ``attention_dropout`` are 0.0: ``training.dropout: false``);
- TransformerEngine's userbuffers TP overlap for 70B and 405B (``tp_comm_overlap_cfg``
  ``userbuffers_fp8_{h100,b200}_h{8192,16384}_...``), none for 8B (TP 1). The three FP8 configurations
  the scored and built rows name (``src/megatron/bridge/training/comm_overlap.py``:
  ``userbuffers_fp8_h100_h8192_tp4_mbs1_seqlen8192``, ``..._b200_h16384_tp4_cp2_...``,
  ``..._h100_h16384_tp8_cp2_...``; MXFP8 takes the FP8 one) set the same SMs: the four bulk overlaps of
  the column-parallel backward with ``set_sm_margin=False`` (their GEMMs on every SM:
  ``parallel.tp_overlap_gemm_sms``, ``UB_BRIDGE_FP8``, where TE's defaults withhold 16 SMs) and the
  projection's and FC2's forward ReduceScatters by ring exchange (``RingExchangeOverlapCfg(num_sm=1,
  set_sm_margin=True)``: ``parallel.tp_overlap_methods``, ``UB_BRIDGE_FP8_METHODS``), where TE's
  default pipelines them;
- interleaved 1F1B with overlapped pipeline exchanges where VP > 1; 405B counts the embedding and
  the loss as one layer each in the pipeline split (``account_for_embedding_in_pipeline_split``,
  ``account_for_loss_in_pipeline_split``), so its first and last virtual stages hold one layer;
- FP8-CS as ``bf16_with_fp8_current_scaling_mixed`` with ``first_last_layers_bf16 = False``
  (``utils/precision.py``), MXFP8 as ``bf16_with_mxfp8_mixed``; both gather parameters in FP8
  (``fp8_param_gather = True``); the 405B MXFP8 recipe turns ``overlap_param_gather`` off ("keeping
  this enabled causes NaN grad norm");
- the vocabulary 128,256 padded to a multiple of 128 x TP (``should_pad_vocab``);
- the loss as TransformerEngine's fused cross-entropy kernel on the bf16 logits
  (``cross_entropy_loss_fusion = True``, the GPT provider's default, with the recipe's
  ``cross_entropy_fusion_impl = "te"``): ``training.cross_entropy: fused``;
- B200 and GB200 8B run ``cuda_graph_impl = "local"`` over the full iteration: not modelled, their
  kernel launches are priced as eager launches;
- GB200 8B is the B200 8B recipe (``LLAMA3_8B_GB200_FP8_CS_BASE_CONFIG``: micro-batch 2, the same
  graphs) on two trays of a GB200 NVL72 rack (``gb200-nvl72``, 4 GPUs a tray).

The 8B FP8-CS row is a fitting row of the dgx-b200 GEMM derate (one node, per-tensor FP8:
``sources.is_fit_case``); the MXFP8 value of the same run is not, its block-scaled GEMMs being
priced with a factor of their own. Scored (``SCORED``), within about 20 CPU seconds of simulation: the 8B rows on one B200 node in
both precisions (under a second each), 70B on 64 H100 (about 8 s: 64 micro-batches through 40
virtual stages) and 405B on 128 B200 in FP8-CS, the table's primary value (about 10 s: 32
micro-batches through 64 virtual stages). Built (``bridge_dense_all``) but not scored, for run
time: 405B on 1,024 H100 (about 47 s: 64 micro-batches through 64 virtual stages on eight
data-parallel replicas) and the MXFP8 value of the 405B B200 plan (the same plan, printed in
parentheses; the 8B pair already sets the two precisions side by side); the slow test of
``tests/validation/test_bridge_dense_source.py`` scores them. Not built: the H100 8B row, whose
printed plan (Megatron-FSDP) is not the recipe's (CP 1 with ``recompute_num_layers = 5``, no
FSDP) and whose partial-layer recompute the simulator does not describe.

26.04.01 (``docs/performance-summary-archive.md`` @4ab94dfad; the file
``data/e2e/megatron_bridge_perf_summary_dense_2604.csv`` has the provenance, recipes at 21d102f5e)
prints Llama 3 70B on 64 GPUs at global batch 256 and Llama 3.1 405B on 256 Blackwell GPUs at 1,536
(the recipes' variant V2). Its recipes keep every setting above: the same common configuration, the
same userbuffers configurations (the 70B Blackwell rows take ``userbuffers_fp8_b200_h8192_tp2``, the
same SMs as the H100 one), FP8-CS and MXFP8 as above with the FP8 parameter AllGather, but 25.11's
405B MXFP8 workaround is gone: ``overlap_param_gather`` stays on in every row (``llama31_llm_pretrain.py``
turns it off only for NVFP4 V2 on GB200).
Its GB300 and GB200 jobs of more than 18 trays run in Slurm segments of 16 trays a rack, as the MoE
rows of the same page (``moe_sources.bridge_segment``). Scored (``SCORED_2604``): 70B on GB300
(MXFP8, TP 1, PP 4 x VP 5), GB200 (MXFP8, TP 2) and H100 (FP8-CS, TP 4, PP 8 x VP 5), and 405B on
GB300 (FP8-CS at TP 4, PP 8 x VP 4; MXFP8 at TP 2, CP 2) and GB200 (TP 4, PP 16 x VP 4 and 8), about
70 CPU seconds in all. Built, not scored: 405B on 1,024 H100 (192 micro-batches, a minute).
Transcribed, not built: the 70B rows printed with Megatron-FSDP (with activations offloaded to the
Grace CPUs, ``cpu_offloading_num_layers``) and the NVFP4 rows.
"""

from __future__ import annotations

from dataclasses import replace

from simulator.e2e_validation.llama3_sources import llama3_layers_per_chunk
from simulator.e2e_validation.moe_sources import NVL72_PROFILES, NVL72_TRAYS, bridge_segment
from simulator.e2e_validation.rows import Row, gpu_name, parse_int, parse_system
from simulator.e2e_validation.scenarios import (BRIDGE_PERF_DDP, MODERN, Case, llama_model, make_scenario,
                                                megatron_parallel, padded_vocab)

# Megatron-Core with TransformerEngine (MODERN) and TE's fused cross-entropy (cross_entropy_fusion_impl "te");
# the Llama providers set hidden_dropout = attention_dropout = 0.0 (Megatron-Bridge v0.2.0
# src/megatron/bridge/models/llama/llama_provider.py), and a dropout of p = 0 keeps no mask: dropout false
BRIDGE_2511 = replace(MODERN, cross_entropy="fused", dropout=False)

# The userbuffers configurations of the FP8 rows (module docstring): the SMs each bulk overlap gives
# up (set_sm_margin=False: none), and the two forward ReduceScatters by ring exchange, not TE's pipeline
UB_BRIDGE_FP8: dict[str, int] = dict(qkv_dgrad=0, qkv_wgrad=0, fc1_dgrad=0, fc1_wgrad=0)
UB_BRIDGE_FP8_METHODS: dict[str, str] = dict(proj_fprop="ring_exchange", fc2_fprop="ring_exchange")

# The table's precisions: (training.dtype, training.fp8_recipe)
BRIDGE_DENSE_PRECISION: dict[str, tuple[str, str]] = {"fp8-cs": ("fp8", "current"), "mxfp8": ("fp8", "mxfp8")}


def _prec(r: Row) -> str:
    return r["notes"].split("prec=", 1)[1].split(";")[0].strip()


# The rows scored, as (model, system, precision): see the module docstring.
SCORED: frozenset[tuple[str, str, str]] = frozenset({
    ("LLAMA3_8B", "dgx-b200", "FP8-CS"), ("LLAMA3_8B", "dgx-b200", "MXFP8"),
    ("LLAMA3_8B", "gb200-nvl72", "FP8-CS"), ("LLAMA3_8B", "gb200-nvl72", "MXFP8"),
    ("LLAMA3_70B", "dgx-h100", "FP8-CS"), ("LLAMA3.1_405B", "dgx-b200", "FP8-CS")})


def _system(r: Row) -> str:
    hw = parse_system(r)
    if hw is None:
        raise ValueError(f"bridge_dense: no profile for {r['gpu']!r}")
    return hw


def buildable(r: Row) -> bool:
    """A tokens/s row whose plan the recipe determines and whose precision is modelled: all but the
    rows printed with Megatron-FSDP (25.11's H100 8B, 26.04.01's 70B FP8 rows on GB300 and GB200)
    and 26.04.01's NVFP4 rows (see the module)."""
    return (r["metric"] == "tokens_per_s_per_gpu" and not r["zero_stage_or_fsdp"].startswith("Megatron-FSDP")
            and _prec(r).lower() in BRIDGE_DENSE_PRECISION)


def bridge_dense_case(r: Row, source: str = "bridge_dense") -> Case:
    """One table row as a scenario of `source` (the module docstring gives every setting and its
    source); a GB200 or GB300 job of more than one rack's trays in the performance scripts' Slurm
    segments (:func:`~simulator.e2e_validation.moe_sources.bridge_segment`)."""
    n, tp, pp, vp, cp = (parse_int(r[k], 1) for k in ("num_gpus", "tp", "pp", "vp", "cp"))
    prec = _prec(r)
    dtype, recipe = BRIDGE_DENSE_PRECISION[prec.lower()]
    hw = _system(r)
    model = dict(llama_model(r), vocab=padded_vocab(parse_int(r["vocab"]), tp))
    par = dict(megatron_parallel(tp, pp, vp, cp, tp_overlap="te_default" if tp > 1 else "none"),
               overlap_grad_reduce=True, grad_reduce_dtype="bf16", **BRIDGE_PERF_DDP)
    if tp > 1:
        par.update(tp_overlap_gemm_sms=dict(UB_BRIDGE_FP8), tp_overlap_methods=dict(UB_BRIDGE_FP8_METHODS))
    if "overlap_param_gather=False" in r["notes"]:
        par["overlap_param_gather"] = False
    if r["model_name"].startswith("LLAMA3.1_405B") and pp > 1:
        par["pp_layers"] = llama3_layers_per_chunk(model["layers"], pp, vp)
    mb, gb = parse_int(r["micro_batch"], 1), parse_int(r["global_batch"])
    dp = n // (tp * pp * cp)
    label = (f"{r['model_name']} {gpu_name(r)} {prec} tp{tp} pp{pp}" + (f" vp{vp}" if vp > 1 else "")
             + (f" cp{cp}" if cp > 1 else "") + f" dp{dp} mbs{mb} {n} GPUs")
    scn = make_scenario(f"{source.replace('_', '-')}-{r['model_name'].lower()}-{hw}-{prec.lower()}-{n}", hw, n,
                        model, micro_batch=mb, global_batch=gb, dtype=dtype, recompute="none", parallel=par,
                        stack=BRIDGE_2511, gpus_per_node=parse_int(r["gpus_per_node"], 8))
    if hw in NVL72_PROFILES and scn["nodes"] > NVL72_TRAYS:  # the job's racks as Slurm segments them
        scn["nodes_per_nvlink_domain"] = bridge_segment(scn["nodes"])
    scn["training"].update(fp8_recipe=recipe, fp8_param_gather=True)
    return Case(source, label, scn, "tokens_per_s_per_gpu", float(r["value"]), n)


def bridge_dense_all(rows: list[Row]) -> list[Case]:
    """Every row with a determined plan (:func:`buildable`): six runs."""
    return [bridge_dense_case(r) for r in rows if buildable(r)]


def bridge_dense(rows: list[Row]) -> list[Case]:
    """Megatron-Bridge 25.11's dense Llama pre-training on DGX B200 (8B on 8 GPUs in FP8-CS and
    MXFP8, 405B on 128 in FP8-CS), GB200 NVL72 (8B on 8, FP8-CS and MXFP8) and DGX H100 (70B on 64,
    FP8-CS) with the printed plan and the
    v0.2.0 recipes' settings. Built, not scored, for run time: 405B on 1,024 H100 and the MXFP8
    value of 405B on 128 B200; transcribed, not built: the H100 8B row (its plan is not the
    recipe's)."""
    return [bridge_dense_case(r) for r in rows
            if buildable(r) and (r["model_name"], _system(r), _prec(r)) in SCORED]


# 26.04.01's rows scored: every row built but 405B on 1,024 H100 (192 micro-batches through 64 virtual
# stages on eight replicas: about a minute of simulation; the 25.11 row of the same plan is built, not scored, too).
SCORED_2604: frozenset[tuple[str, str, str]] = frozenset({
    ("LLAMA3_70B", "gb300-nvl72", "MXFP8"), ("LLAMA3_70B", "gb200-nvl72", "MXFP8"), ("LLAMA3_70B", "dgx-h100", "FP8-CS"),
    ("LLAMA3.1_405B", "gb300-nvl72", "FP8-CS"), ("LLAMA3.1_405B", "gb300-nvl72", "MXFP8"),
    ("LLAMA3.1_405B", "gb200-nvl72", "FP8-CS"), ("LLAMA3.1_405B", "gb200-nvl72", "MXFP8")})


def bridge_dense_2604_all(rows: list[Row]) -> list[Case]:
    """Every 26.04.01 row with a determined plan and a modelled precision (:func:`buildable`): eight runs."""
    return [bridge_dense_case(r, "bridge_dense_2604") for r in rows if buildable(r)]


def bridge_dense_2604(rows: list[Row]) -> list[Case]:
    """Megatron-Bridge 26.04.01's dense Llama pre-training (``data/e2e/megatron_bridge_perf_summary_dense_2604.csv``):
    Llama 3 70B on 64 GB300 (MXFP8, TP 1), 64 GB200 (MXFP8, TP 2) and 64 H100 (FP8-CS, TP 4), global
    batch 256; Llama 3.1 405B on 256 GB300 and 256 GB200 in FP8-CS and MXFP8, global batch 1,536; with
    the printed plan and the settings of the recipes of the same commit, which are 25.11's (module
    docstring). Built, not scored, for run time: 405B on 1,024 H100. Transcribed, not built: the rows
    printed with Megatron-FSDP and the NVFP4 rows."""
    return [bridge_dense_case(r, "bridge_dense_2604") for r in rows
            if buildable(r) and (r["model_name"], _system(r), _prec(r)) in SCORED_2604]

"""The Megatron-Core MoE team's own Qwen3-235B-A22B and Mixtral 8x22B runs, as e2e cases.

yanring/Megatron-MoE-ModelZoo holds the launch scripts and configs that team benchmarks Megatron-LM's
MoE stack with, three tables of results on Qwen3-235B-A22B (``data/e2e/megatron_moe_modelzoo_qwen3.csv``)
and, in the comments of its Mixtral 8x22B script, the TFLOP/s of that model on 128 H100 in BF16 and
in blockwise FP8 (``megatron_moe_modelzoo_mixtral.csv``). The Qwen3 tables:
five plans on 256 H100 at 4,096 tokens with their step times (cross-node EP 32 with DeepEP, with
and without the combined-1F1B A2A overlap; intra-node EP 8 under Megatron-FSDP, under PP 32 with
the alltoall dispatcher, and under TP 4), one plan at 16K-128K tokens with CP 1-8, and GB200 / GB300
runs. Unlike Megatron-Bridge's release pages these are Megatron-LM's own arguments, read from the
repository at the commit that published each table (the data file's header):

- Megatron-LM with ``--bf16`` and no ``--grad-reduce-in-bf16`` accumulates and reduces gradients in
  fp32 (``accumulate_allreduce_grads_in_fp32``, megatron/training/arguments.py), with the
  distributed optimizer, overlapped gradient reduction and parameter gather;
- no TP communication overlap in BF16 (the scripts added ``--tp-comm-overlap`` later), no CUDA
  graphs on H100, DeepEP's normal kernels on Megatron's default 20 SMs, the forced-balanced router
  with Qwen3's aux loss, the embedding and loss counted as pipeline layers (``NUM_LAYERS`` 96);
- the May-2025 H100 plans ran Megatron's vocab-parallel cross-entropy and the unfused router (the
  long-context and GB200 configs add TE's fused cross-entropy and ``--moe-router-fusion``; the model
  prices the router's kernels fused either way);
- the Megatron-FSDP row (``--use-custom-fsdp``, ``optim_grads_params``: parameters, gradients and
  optimizer states sharded over the data-parallel group, each module gathered before use and its
  gradients reduce-scattered after) is built as FSDP2's ZeRO-3 with EP, without gradient
  accumulation fusion as launched;
- Mixtral 8x22B (December 2025): TP 2 x PP 8 x VP 7 (one layer a virtual stage, no embedding or
  loss accounting in its config), EP 8 with the alltoall dispatcher, TE's TP overlap in BF16 (the
  script adds ``--tp-comm-overlap`` for BF16 only); blockwise FP8 with FP8 parameter gathers and
  bf16 Adam moments (``--use-precision-aware-optimizer``); Megatron's native fusion of the
  vocab-parallel loss (``--cross-entropy-fusion-impl native``) priced as its unfused passes.

Not modelled, and small at these step times: the H100 config's ``--log-params-norm`` and
``--log-num-zeros-in-grad`` (one pass over the parameters and one over the gradients a step) and
Python's garbage collection every fifth step (``--manual-gc-interval 5``).
"""

from __future__ import annotations

import re

from simulator.config.workload import PRESETS
from simulator.e2e_validation.moe_sources import (
    cuda_graph_scopes,
    expert_exchange,
    pp_layout,
    stages_with_embedding_and_loss,
)
from simulator.e2e_validation.rows import Row, note_value, parse_int, parse_system
from simulator.e2e_validation.scenarios import Case, make_scenario, megatron_parallel

# table name -> preset
MODELZOO_PRESETS: dict[str, str] = {"Qwen3-235B-A22B": "qwen3-235b-a22b", "Mixtral-8x22B": "mixtral-8x22b",
                                    "DeepSeek-V3": "deepseek-v3"}

# Models whose config splits the pipeline with ``--account-for-embedding-in-pipeline-split`` and
# ``--account-for-loss-in-pipeline-split`` (Qwen3-235B-A22B.yaml; Mixtral-8x22B.yaml sets neither)
EMBEDDING_AND_LOSS_SPLIT = frozenset({"Qwen3-235B-A22B"})

# The row's precision (notes ``prec=``) -> (training.dtype, training.fp8_recipe)
PRECISION: dict[str, tuple[str, str | None]] = {"BF16": ("bf16", None), "FP8 blockwise": ("fp8", "blockwise"),
                                                "MXFP8": ("fp8", "mxfp8")}

# Selective recompute modules as the tables print them -> training.recompute_modules
RECOMPUTE_MODULES: dict[str, str] = {"layernorm": "layernorm", "moe_act": "moe_act", "moe": "moe"}

# Rows whose simulation takes more than this many CPU seconds are left out, so that the validation
# page regenerates within its budget (5 minutes on 2 cores, ``benchmarks/bench_regeneration.py e2e``).
MAX_CPU_S = 20
# CPU seconds of a plan's simulation, measured on this project's 2-core machine
# (``benchmarks/bench_e2e_rows.py --source modelzoo_qwen3``): (pp, vp, cp, micro-batches per
# pipeline) -> s. PP 32 x VP 3 runs 512 micro-batches through 96 virtual stages, 32 ranks
# simulated; CP 8 at 128K tokens 256 micro-batches of 94 layers with 8 ring steps per attention
# pass, whose steady periods do not repeat exactly enough to fold (``replay/fold.py``). CP 4 at
# 64K (19.3 s: its CP ranks mirrored, ``replay/symmetry._hops_alike``) is in. GB300's long-context
# plan runs 512 micro-batches through PP 4 x VP 12 at CP 4 and 128K tokens.
SLOW_PLANS: dict[tuple[int, int, int, int], float] = {(32, 3, 1, 512): 30.9, (8, 4, 8, 256): 53.8,
                                                      (4, 12, 4, 512): 48.7}


def skip_reason(r: Row) -> str | None:
    """Why a row is transcribed but not scored, or None."""
    notes = r["notes"]
    if r["model_name"] not in MODELZOO_PRESETS:
        return "no preset (Qwen3-Next's gated delta net layers)"
    if parse_system(r) is None:
        return f"no profile for {r['gpu']}"
    if "router=dropless" in notes or "router=token drop" in notes:
        return "learned routing: the load per expert is not printed (the plan's forced-balance value is the one scored)"
    if "activation offloading" in notes:
        return "fine-grained activation offloading is not modelled"
    pp, vp, cp, dp = (parse_int(r[k], 1) for k in ("pp", "vp", "cp", "dp"))
    plan = (pp, vp, cp, parse_int(r["global_batch"]) // (parse_int(r["micro_batch"], 1) * dp))
    if SLOW_PLANS.get(plan, 0.0) > MAX_CPU_S:
        return f"run time ({SLOW_PLANS[plan]:.0f} CPU s)"
    return None


def _dispatcher_label(parallel: dict) -> str:
    if parallel["moe_dispatcher"] != "deepep":
        return "A2A"
    return "HybridEP" if parallel.get("moe_deepep_backend") == "hybridep" else "DeepEP"


def modelzoo_qwen3(rows: list[Row]) -> list[Case]:
    """Every forced-balance Qwen3-235B-A22B row on H100 and GB200 that the model can express and
    simulates within ``MAX_CPU_S``: four of the five 4,096-token H100 plans (step time), the
    long-context plan at CP 1, 2 and 4 and the GB200 BF16 plan (TFLOP/s/GPU in Megatron-LM's causal
    count, ``megatron_moe_model_tflops``)."""
    return modelzoo_cases("modelzoo_qwen3", rows)


def modelzoo_mixtral(rows: list[Row]) -> list[Case]:
    """Mixtral 8x22B on 128 H100 with the forced-balanced router, BF16 and blockwise FP8
    (TFLOP/s/GPU in Megatron-LM's causal count)."""
    return modelzoo_cases("modelzoo_mixtral", rows)


def modelzoo_cases(source: str, rows: list[Row]) -> list[Case]:
    """The rows :func:`skip_reason` lets through, as cases of `source`, numbered in order."""
    out: list[Case] = []
    for r in rows:
        if skip_reason(r) is None:
            out.append(modelzoo_case(r, len(out), source))
    return out


def megatron_lm_dsv3_gb200(rows: list[Row]) -> list[Case]:
    """DeepSeek-V3 on 256 GB200 in MXFP8, the plan of the Megatron-Core MoE team's GB200 write-up
    (TP 1, PP 8 x VP 4 in the layout "Et|(tt|)*30L", EP 32 over HybridEP in racks of 8 trays),
    its final 970 TFLOP/s/GPU. The guide's recompute of the dense layers' MLPs is not modelled
    (``moe_act`` is)."""
    return modelzoo_cases("mcore_dsv3_gb200", rows)


def modelzoo_case(r: Row, index: int, source: str = "modelzoo_qwen3") -> Case:
    """One row as a case (see the module docstring for the settings the tables omit)."""
    notes, preset, hw = r["notes"], MODELZOO_PRESETS[r["model_name"]], parse_system(r)
    if hw is None:
        raise ValueError(f"no profile for {r['gpu']}")
    n, seq = parse_int(r["num_gpus"]), parse_int(r["seq_len"])
    tp, pp, vp, cp, ep = (parse_int(r[k], 1) for k in ("tp", "pp", "vp", "cp", "ep"))
    parallel = megatron_parallel(tp, pp, vp, cp, tp_overlap="te_default" if note_value(notes, "tp_comm_overlap") == "True"
                                 else "none") | expert_exchange(notes, ep)
    parallel["grad_reduce_dtype"] = "fp32"
    overlap = parallel.get("overlap_moe_expert_parallel_comm", False)
    fsdp = r["zero_stage_or_fsdp"].startswith("Megatron-FSDP")
    if fsdp:
        parallel.pop("overlap_param_gather")
        parallel.update(zero=3, zero3_impl="fsdp2")
    if note_value(notes, "gradient_accumulation_fusion") == "False":
        parallel["gradient_accumulation_fusion"] = False
    if pp > 1 and r["model_name"] in EMBEDDING_AND_LOSS_SPLIT:
        parallel["pp_layers"] = list(stages_with_embedding_and_loss(PRESETS[preset]["layers"], pp * vp))
    layout = note_value(notes, "pp_layout")
    if layout:  # Megatron-Core's --pipeline-model-parallel-layout
        parallel["pp_layers"] = pp_layout(layout)[0]
    model = {"preset": preset, "seq_len": seq, "vocab": parse_int(r["vocab"])}
    recompute = r["recompute"].split(" ")[0]
    precision = note_value(notes, "prec")
    dtype, fp8_recipe = PRECISION[precision]
    scn = make_scenario(f"{source.replace('_', '-')}-{index}", hw, n, model, micro_batch=parse_int(r["micro_batch"], 1),
                        global_batch=parse_int(r["global_batch"]), dtype=dtype,
                        recompute="full" if recompute == "full" else "none", parallel=parallel,
                        gpus_per_node=parse_int(r["gpus_per_node"], 8))
    t = scn["training"]
    modules = [RECOMPUTE_MODULES[m.strip()] for m in re.findall(r"\(([^)]*)\)", r["recompute"])[0].split(";")
               if m.strip() in RECOMPUTE_MODULES] if recompute == "selective" else []
    if modules:
        t["recompute_modules"] = modules
    t["moe_router_kernels"] = ["random_logits", "aux_loss"]  # --moe-router-force-load-balancing, the aux loss
    if fp8_recipe is not None:
        t["fp8_recipe"] = fp8_recipe
    if note_value(notes, "fp8_param_gather") == "True":
        t["fp8_param_gather"] = True
    if note_value(notes, "optimizer_state_dtype"):
        t["optimizer_state_dtype"] = note_value(notes, "optimizer_state_dtype")
    if "cross_entropy=te fused" in notes:
        t["cross_entropy"] = "fused"
    graphs = cuda_graph_scopes(notes)
    if graphs:
        t["cuda_graph_scope"] = graphs
    segment = note_value(notes, "segment")
    if segment:  # SEGMENT=k: the job's trays in Slurm segments of k, each inside one NVL72 rack
        scn["nodes_per_nvlink_domain"] = int(segment)
    dp = n // (tp * pp * cp)
    label = (f"{r['model_name']} {r['gpu'].split()[0]} {precision} tp{tp} pp{pp}" + (f" vp{vp}" if vp > 1 else "")
             + (f" cp{cp}" if cp > 1 else "") + (f" {seq // 1024}K tokens" if seq > 4096 else "")
             + f" ep{ep} dp{dp} {n} GPUs {_dispatcher_label(parallel)}"
             + (" A2A overlap" if overlap else "") + (" Megatron-FSDP" if fsdp else ""))
    return Case(source, label, scn, r["metric"], float(r["value"]), n)

"""Mixture-of-Experts rows of the published sources, as e2e cases.

NeMo AutoModel's performance summary (``nemo_automodel_perf_summary.csv``) prints, for its MoE
pre-training rows, the GPUs, TP/PP/VP/EP, the FSDP2 group, the local and global batch and the step
time, but neither the model shape nor the recompute or dispatcher settings. Those come from the
benchmark configs the table was produced with (NVIDIA-NeMo/Automodel
``examples/benchmark/configs/{deepseek_v3,kimi_k2,qwen3_moe_30b,gptoss_20b,gptoss_120b}_te_deepep.yaml``,
read at 037e04a6/092af93e/080dca53; ``nemotron_nano_v3_te_deepep.yaml`` at 08a48f76,
``nemotron_super_v3_te_deepep.yaml`` at c0e4fe1b, the commit that added the Super row): DeepEP dispatch (``enable_deepep`` / ``dispatcher: deepep``),
a forced-balanced gate (``fake_balanced_gate``), TE linear layers and attention (FlexAttention for
GPT-OSS), full activation checkpointing for DeepSeek-V3, Kimi-K2 and Qwen3 (not for GPT-OSS),
``reshard_after_forward: false`` for DeepSeek-V3, EP 8 / 64 for GPT-OSS-20B / 120B (blank in the
table), ``pp_microbatch_size`` 1 and the virtual stages of ``layers_per_stage`` (``AUTOMODEL_LAYERS_PER_STAGE``:
2, but 4 for DeepSeek-V3 on 1,024 GPUs) for the pipelined runs. The shapes
are the presets (the models' Hugging Face configs). A pipelined run calls torch pipelining's
``schedule.step`` once per gradient-accumulation step (the table's GA): that many pipeline passes,
each with its fill and drain (``parallel.pp_flushes``). Under PP the stages' backward is
``patched_backward_maybe_with_nosync`` (nemo_automodel/components/moe/fsdp_mixin.py, the same at
all three commits): a ``MoEFSDPSyncMixin`` model (DeepSeek-V3 and Kimi-K2 are
``DeepseekV3ForCausalLM``; the outer model not itself sharded: ``wrap_outer_model: false`` in the
DeepSeek-V3 configs, no outer wrap at 092af93e) turns off gradient sync and resharding for every
backward and runs ``post_backward`` only at the last backward of the step's last GA pass
(``get_is_optim_step``, set by ``prepare_for_final_backward`` in recipes/llm/benchmark.py):
``parallel.fsdp_grad_sync: optim_step``. The experts are ``experts: gmm``
(``GroupedExpertsDeepEP`` on grouped_gemm's ``ops.gmm``, which has no bias epilogue: GPT-OSS's
FC1 and FC2 biases are added per local expert, ``_apply_bias`` in nemo_automodel/components/moe/
experts.py at cb976544), and AutoModel's model classes run no dropout (``TORCH_EAGER_TE``).
"""

from __future__ import annotations

import re

from simulator.config.workload import PRESETS
from simulator.e2e_validation.rows import Row, note_value, parse_int, parse_system
from simulator.e2e_validation.scenarios import (
    AUTOMODEL_STATES, TORCH_EAGER_TE, Case, make_scenario, megatron_parallel, padded_vocab,
)

# table name -> (preset, recompute, ep when the table leaves it blank, FSDP2 reshard after forward,
# attention kernel: TE's fused attention, or FlexAttention for GPT-OSS, which PyTorch's FlexAttention
# write-up puts at about 90% (forward) and 85% (backward) of FlashAttention-2: FA2-class)
AUTOMODEL_MOE: dict[str, tuple[str, str, int, bool, str]] = {
    "DeepSeek V3 671B": ("deepseek-v3", "full", 0, False, "auto"),
    "Kimi K2": ("kimi-k2", "full", 0, True, "auto"),
    "Qwen3 MoE 30B": ("qwen3-30b-a3b", "full", 0, True, "auto"),
    "GPT-OSS 20B": ("gpt-oss-20b", "none", 8, True, "flash2"),
    "GPT-OSS 120B": ("gpt-oss-120b", "none", 64, True, "flash2"),
    # nemotron_nano_v3_te_deepep.yaml (Automodel @08a48f76): activation checkpointing, EP 8, attention
    # through PyTorch SDPA (the table's "TorchSDPA"), whose flash backend is FlashAttention-2; no
    # distributed.moe section, so MoEParallelizerConfig's default reshard_after_forward: false
    # (components/moe/config.py, recipes/_dist_setup.py at 08a48f76)
    "Nemotron V3 Nano 30B (26.02)": ("nemotron-3-nano-30b-a3b", "full", 8, False, "flash2"),
    # nemotron_super_v3_te_deepep.yaml, added with the row (Automodel c0e4fe1b, "feat: Super V3"): the
    # same settings at EP 64, distributed.moe.reshard_after_forward true, and no
    # backend.enable_fsdp_optimizations (Nano's config sets it). No MTP block: AutoModel's NemotronV3 model
    # builds none before 1f13c9aa ("add Multi-Token Prediction (MTP) support", two months later)
    "Nemotron V3 Super 120B (26.02)": ("nemotron-3-super-120b-a12b", "full", 64, True, "flash2"),
    # examples/llm_benchmark/nemotron/nemotron_ultra_v3_te_deepep.yaml (Automodel cb976544): activation
    # checkpointing, EP 64, reshard_after_forward true, attention through TE (attn: te). Its experts:
    # torch_mm, torch._grouped_mm over the same argsorted token groups: two grouped GEMMs, priced as gmm's
    "Nemotron V3 Ultra 550B (26.04)": ("nemotron-3-ultra-550b-a55b", "full", 64, True, "auto"),
}

# The same configs' model and training settings beyond the shape: Ultra's num_nextn_predict_layers 2 with
# mtp_use_repeated_layer (two MTP depths through one physical "*E" layer) and its loss_fn,
# FusedLinearCrossEntropy (Cut Cross-Entropy: the LM head and the loss without logits), for every head
# (nemo_automodel/components/loss/mtp.py calculate_mtp_loss passes the MTP depths' hidden states to it too).
AUTOMODEL_MOE_KEYS: dict[str, tuple[dict, dict]] = {
    "Nemotron V3 Ultra 550B (26.04)": ({"mtp_layers": 2, "mtp_repeated_layer": True}, {"cross_entropy": "fused_linear"}),
}

# Without PP, train_ft's ``_forward_backward_step`` (which the benchmark recipe runs per micro-batch)
# wraps each in ``get_sync_ctx(model, idx == num_batches - 1)`` (components/distributed/utils.py; at
# 89e3a9fdd and 8d9bfb90e unconditionally, from 08a48f76 unless FSDP2Config.defer_fsdp_grad_sync is
# turned off, true by default), i.e. FSDP2's ``set_requires_gradient_sync(False)`` on every
# micro-batch but the last: gradients are reduce-scattered once per step (``fsdp_grad_sync: no_sync``).
# It acts only when the model it is given, the outer CausalLM, is an FSDP module: the MoE parallelizer
# wraps it since 4448734a ("perf regressions for custom MoEs", ``wrap_outer_model``, default true), so
# for Nemotron V3 Super (c0e4fe1b; Nano's mixin does the same and more), not for the Qwen3 and GPT-OSS
# rows (89e3a9fdd, 8d9bfb90e: only the inner model is wrapped), nor Ultra (its config sets
# wrap_outer_model: false; one micro-batch per step there anyway, GA=1).
AUTOMODEL_NO_SYNC = frozenset({"Nemotron V3 Super 120B (26.02)"})

# Rows run without PP whose benchmark config sets ``backend.enable_fsdp_optimizations``: the benchmark
# recipe (recipes/llm/benchmark.py at 08a48f76) calls ``prepare_for_grad_accumulation`` before the
# first micro-batch and ``prepare_for_final_backward`` before the last (MoEFSDPSyncMixin,
# components/moe/fsdp_mixin.py), so gradients are reduce-scattered and parameters resharded after
# backward only in the step's last micro-batch (``parallel.fsdp_grad_sync: optim_step``).
AUTOMODEL_DEFERRED_SYNC = frozenset({"Nemotron V3 Nano 30B (26.02)"})

# Rows left out, with the reason (the source's notes in sources.py repeat it).
AUTOMODEL_MOE_SKIPPED: dict[str, str] = {}


# ``autopipeline.layers_per_stage`` of the pipelined rows' configs (Automodel examples/benchmark/configs/):
# deepseek_v3_te_deepep.yaml 2; deepseek_v3_te_deepep_1024.yaml, the 1,024-GPU run's own config, 4 in every
# version of it (b039c59b 2025-10-03, the day after the table's "Last Updated", to cb976544), though the table
# prints VP 8 for both DeepSeek-V3 rows; kimi_k2_te_deepep.yaml 2 (89e3a9fd .. cb976544).
AUTOMODEL_LAYERS_PER_STAGE: dict[tuple[str, int], int] = {
    ("DeepSeek V3 671B", 256): 2, ("DeepSeek V3 671B", 1024): 4, ("Kimi K2", 256): 2}


def automodel_virtual_stages(layers: int, layers_per_stage: int, pp: int) -> int:
    """Virtual pipeline stages of AutoModel's ``calculate_virtual_stages`` as the table's runs had it
    (nemo_automodel/components/distributed/pipelining/functional.py at 89e3a9fd and b039c59b):
    ``ceil(layers / layers_per_stage) + 1``, rounded down to a multiple of pp
    (``round_virtual_stages_to_pp_multiple: down``). 61 layers at 2 per stage: 32 (VP 8 on PP 4, VP 4
    on PP 8, as printed); at 4 per stage: 17 -> 16, VP 4 on PP 4. (The ``+ 1`` is gone by 037e04a6.)"""
    stages = -(-layers // layers_per_stage) + 1
    return stages - stages % pp


def front_loaded_stages(layers: int, stages: int) -> tuple[int, ...]:
    """Layers per virtual stage as AutoModel splits the model (``generate_hf_model_fqn_per_model_part``,
    same file, 89e3a9fd .. cb976544): ``layers // stages`` each, the first ``layers % stages`` stages one
    more; the embedding runs on the first stage and the final norm and LM head on the last."""
    base, extra = divmod(layers, stages)
    return tuple(base + (i < extra) for i in range(stages))


def automodel_moe(rows: list[Row]) -> list[Case]:
    """MoE pre-training rows of the models above (FSDP2 + EP with DeepEP, BF16, balanced gate), 8 to
    1,024 GPUs, Nemotron-3 Nano's and Super's hybrid Mamba2-Transformer MoEs included (Super's
    LatentMoE with ``model.moe_latent_size``, Ultra's repeated MTP layer and fused linear cross-entropy)."""
    out: list[Case] = []
    for r in rows:
        name = r["model_name"]
        if r["metric"] != "step_time_s" or "Pre-Training" not in r["notes"] or name not in AUTOMODEL_MOE:
            continue
        preset, recompute, ep_default, reshard, kernel = AUTOMODEL_MOE[name]
        n, pp, vp = parse_int(r["num_gpus"]), parse_int(r["pp"], 1), parse_int(r["vp"], 1)
        ep = parse_int(r["ep"], ep_default)
        model = {"preset": preset, "seq_len": parse_int(r["seq_len"])}
        # the MoE parallelizer's MixedPrecisionPolicy reduces in fp32 (components/moe/parallelizer.py,
        # reduce_dtype=torch.float32 at every row's commit); FSDP2 drops a reduce dtype only when it equals
        # param_dtype (FSDPParam.init_dtype_attrs), so the bf16 gradients are reduce-scattered in fp32
        parallel: dict = dict(pp=pp, ep=ep, zero=3, zero3_impl="fsdp2", moe_dispatcher="deepep",
                              fsdp_reshard_after_forward=reshard, grad_reduce_dtype="fp32")
        ga = re.search(r"\bGA=(\d+)", r["notes"])
        if pp > 1 or name in AUTOMODEL_DEFERRED_SYNC:  # MoEFSDPSyncMixin: reduce-scatter once per step
            parallel["fsdp_grad_sync"] = "optim_step"
        elif name in AUTOMODEL_NO_SYNC:  # get_sync_ctx: gradient sync only on the last micro-batch
            parallel["fsdp_grad_sync"] = "no_sync"
        if pp > 1 and ga and int(ga.group(1)) > 1:  # one schedule.step, fill and drain, per GA step
            parallel["pp_flushes"] = int(ga.group(1))
        layers = PRESETS[preset]["layers"]
        if (name, n) in AUTOMODEL_LAYERS_PER_STAGE:  # the config's stages, where they differ from the table's VP
            vp = automodel_virtual_stages(layers, AUTOMODEL_LAYERS_PER_STAGE[name, n], pp) // pp
        if vp > 1:
            parallel.update(pp_schedule="interleaved", vp=vp, pp_layers=list(front_loaded_stages(layers, pp * vp)))
        scn = make_scenario(f"automodel-moe-{len(out)}", "dgx-h100", n, model,
                            micro_batch=parse_int(r["micro_batch"], 1), global_batch=parse_int(r["global_batch"]),
                            dtype="bf16", recompute=recompute, parallel=parallel, stack=TORCH_EAGER_TE)
        model_keys, training_keys = AUTOMODEL_MOE_KEYS.get(name, ({}, {}))
        scn["model"].update(model_keys)
        scn["training"].update(moe_routing="round_robin", attention=kernel, **AUTOMODEL_STATES,  # torch.optim.Adam
                               **training_keys)  # fake_balanced_gate
        if preset in BIASED_EXPERTS:  # grouped_gemm's gmm has no bias: both biases added per local expert
            scn["training"]["moe_expert_bias"] = "per_expert_fc1_fc2"
            # GPT-OSS's clamp inside AutoModel's torch.compile'd quick_geglu_deepep
            # (nemo_automodel/components/moe/experts.py); its sinks rescale FlexAttention's output
            scn["training"]["glu_clamp_kernel"] = "fused"
            scn["training"]["attention_sink_kernel"] = "rescale"
        dp = n // pp
        out.append(Case("automodel_moe", f"{name} FSDP2 dp{dp} ep{ep} pp{pp}" + (f" vp{vp}" if vp > 1 else "")
                        + f" {n} GPUs", scn, "step_time_s", float(r["value"]), n))
    return out


# Megatron-Bridge 26.04.01 performance summary: table name -> preset. DeepSeek-V3's recipe adds a
# multi-token-prediction layer on the last stage (pp_layout "Et*4|(t*4|)*14tmL", model.mtp_layers)
# and recomputes the MLA up-projections and the dense MLPs, which are not modelled (run, not redone).
MEGATRON_BRIDGE_MOE: dict[str, str] = {
    "Qwen3_30B_a3B": "qwen3-30b-a3b",
    "Qwen3_235B_a22B": "qwen3-235b-a22b",
    "GPT OSS 120B": "gpt-oss-120b",
    "DeepSeekV3": "deepseek-v3",
    "Nemotron_3_Nano": "nemotron-3-nano-30b-a3b",
    "Nemotron_3_Super": "nemotron-3-super-120b-a12b",
}

# Selective recompute modules the simulator models as recompute_modules; core_attn is recompute:
# selective; the others a recipe lists are left out.
MODELLED_RECOMPUTE = frozenset({"layernorm", "moe_act", "moe"})


def pp_layout(layout: str) -> tuple[list[int], int]:
    """Transformer layers per virtual stage and MTP depths of a Megatron-Core
    ``pipeline_model_parallel_layout`` (megatron/core/transformer/pipeline_parallel_layer_layout.py):
    ``|`` separates the virtual stages, ``t`` is a transformer layer, ``m`` an MTP depth, ``E`` and
    ``L`` the embedding and the loss, ``x*N`` and ``(...)*N`` repeat."""
    while True:
        out = re.sub(r"\(([^()]*)\)\*(\d+)", lambda g: g.group(1) * int(g.group(2)), layout)
        out = re.sub(r"([A-Za-z])\*(\d+)", lambda g: g.group(1) * int(g.group(2)), out)
        if out == layout:
            break
        layout = out
    stages = layout.split("|")
    return [st.count("t") for st in stages], layout.count("m")

# Models whose routed experts carry biases (Megatron-Bridge's GPTOSSBridge sets add_bias_linear,
# src/megatron/bridge/models/gpt_oss/gpt_oss_bridge.py at 21d102f5e): Megatron-Core adds the FC2 bias
# per local expert (training.moe_expert_bias: per_expert).
BIASED_EXPERTS = frozenset({"gpt-oss-120b", "gpt-oss-20b"})

# Models whose Megatron-Core attention applies RoPE unfused although the performance scripts turn
# ``apply_rope_fusion`` on (``scripts/performance/utils/overrides.py`` at 21d102f5e): GPT-OSS's YaRN
# (``GPTOSSBridge``: ``yarn_rotary_scaling_factor`` 32, ``yarn_mscale`` None) gives a concentration
# factor of 0.1 ln 32 + 1 = 1.347, which TE's fused RoPE does not take, so ``apply_rotary_pos_emb``
# falls back to ``_apply_rotary_pos_emb_bshd`` (Megatron-LM 4415119, training.rope_kernel: unfused).
UNFUSED_ROPE = frozenset({"gpt-oss-120b", "gpt-oss-20b"})

# Presets whose Megatron-Bridge model carries a load-balancing loss: Qwen3-MoE ``aux_loss``, coefficient
# 1e-3 (``Qwen3MoEBridge``, models/qwen/qwen3_moe_bridge.py at 21d102f5e), DeepSeek-V3 ``seq_aux_loss``,
# 1e-4 (models/deepseek/deepseek_v3_bridge.py), Nemotron 3 ``seq_aux_loss``, 1e-4 (Nano's recipe,
# recipes/nemotronh/nemotron_3_nano.py; Super's ``NemotronHBridge``, models/nemotronh/nemotron_h_bridge.py);
# GPT-OSS sets ``moe_router_load_balancing_type`` "none". The router runs it even under the forced
# balancing (router.py ``routing``: on while training with a nonzero coefficient), priced fused (the
# performance scripts set ``moe_router_fusion`` for Qwen3 and GPT-OSS; Nemotron 3's recipes leave it off,
# whose unfused router kernels are not priced).
AUX_LOSS_PRESETS = frozenset({"qwen3-30b-a3b", "qwen3-235b-a22b", "deepseek-v3", "nemotron-3-nano-30b-a3b",
                              "nemotron-3-super-120b-a12b"})

# SMs the HybridEP kernels hold: the Qwen3 MoE recipes set ``moe_hybridep_num_sms = 16``
# (src/megatron/bridge/recipes/qwen/qwen3_moe.py at 21d102f5e), but the performance scripts that ran
# the 26.04.01 rows raise it to 32 for every recipe that names the HybridEP backend before
# ``set_workload_base_configs`` runs ``_set_common_perf_overrides`` (scripts/performance/utils/overrides.py
# at 21d102f5e: "moe_hybridep_num_sms = 32"): Qwen3's, DeepSeek-V3's, GPT-OSS's, Nemotron 3 Super's.
# Nemotron 3 Nano's recipe names deepep and its performance config switches it to hybridep only after
# that call, so it keeps the recipe's 16 (its rows' ``hybridep_sms=16``).
HYBRIDEP_NUM_SMS = 32

# The loss of every Megatron-Bridge MoE row: TransformerEngine's fused cross-entropy. The 26.04.01
# performance scripts override every recipe's ``cross_entropy_fusion_impl`` with "te"
# (``scripts/performance/utils/overrides.py`` ``_set_common_perf_overrides`` at 21d102f5e, over
# GPT-OSS's "native"), and the A/B card's recipe sets it itself
# (``src/megatron/bridge/recipes/qwen/h100/qwen3_moe.py`` at 30297677).
BRIDGE_MOE_CROSS_ENTROPY = "fused"

# The table's precision -> (dtype, fp8_recipe): FP8 on H100 is TransformerEngine's current scaling
# (the page's "FP8-CS"), FP8 on B200 MXFP8.
BRIDGE_PRECISION: dict[str, tuple[str, str | None]] = {
    "bf16": ("bf16", None), "fp8-cs": ("fp8", "current"), "mxfp8": ("fp8", "mxfp8")}


def stages_with_embedding_and_loss(layers: int, stages: int) -> tuple[int, ...]:
    """Megatron-Core's ``account_for_embedding_in_pipeline_split`` and
    ``account_for_loss_in_pipeline_split``: the embedding and the loss each count as one layer, so
    layers + 2 split evenly and the first and last (virtual) stages hold one layer fewer: none at
    one layer a stage (the first holds the embedding alone, the last the loss alone, which only
    virtual stages may)."""
    per, rest = divmod(layers + 2, stages)
    if rest or per < 1:
        raise ValueError(f"{layers} layers + embedding + loss do not split evenly into {stages} stages")
    return (per - 1,) + (per,) * (stages - 2) + (per - 1,)


# Rows with more micro-batches per pipeline are left out for run time. The most any row runs, the
# H100 Qwen3-235B row's 512 micro-batches through 32 virtual pipeline stages, simulates in about
# 48 CPU s since the MoE replay keeps its class-level solves (several CPU minutes before).
MAX_MICRO_BATCHES = 512


# cuda_graph_scope names of TransformerEngine's partial CUDA graphs (training.cuda_graph_scope)
GRAPH_SCOPES = ("attn", "mlp", "moe_router", "moe_preprocess", "mamba")


def cuda_graph_scopes(notes: str) -> list[str]:
    """The scopes of a row's "CUDA graphs (a; b; ...)" note, in that order; none where the note
    names no scope (no graphs, or a whole-iteration capture)."""
    m = re.search(r"CUDA graphs \(([^)]*)\)", notes)
    return [g.strip() for g in m.group(1).split(";") if g.strip() in GRAPH_SCOPES] if m else []


# Trays of one GB200 or GB300 NVL72 rack (its NVLink domain): the most Slurm's --segment can ask for.
NVL72_TRAYS = 18
NVL72_PROFILES = ("gb200-nvl72", "gb300-nvl72")


def bridge_segment(nodes: int) -> int:
    """The ``--segment`` Megatron-Bridge's performance scripts give a GB200 job of ``nodes`` trays
    (scripts/performance/utils/executors.py at 21d102f5e: the job itself up to 18 trays, else the
    largest divisor of its tray count up to 18): the trays it holds of each rack."""
    if nodes <= NVL72_TRAYS:
        return nodes
    return next(k for k in range(NVL72_TRAYS, 0, -1) if nodes % k == 0)



def megatron_bridge_moe(rows: list[Row]) -> list[Case]:
    """Every Qwen3-30B-A3B, Qwen3-235B-A22B, GPT-OSS-120B, DeepSeek-V3 and Nemotron 3 Nano and Super
    pre-training row on DGX H100, DGX B200 and GB200 NVL72 (``gb200-nvl72``, the 256-GPU jobs in Slurm
    segments of :func:`bridge_segment` trays) of Megatron-Bridge's 26.04.01 performance summary, with
    the printed TP, PP, VP, EP, micro-batch and global batch; from the recipes: ETP 1, the
    distributed optimizer with overlapped gradient reduction and parameter AllGather, bf16 gradient
    reduction, no recompute (GPT-OSS and Nemotron 3: their selective ``recompute_modules``, the
    pre-MLP norm, the experts' activation and, for Nano on H100, the attention core and the whole
    MoE layer), the partial CUDA graphs of their ``cuda_graph_scope``, the dispatcher
    (``flex`` with the DeepEP or HybridEP backend as deepep, with HybridEP's routing-map AllGather,
    else alltoall) sending BF16 tokens in FP8 runs too (Megatron-Core has no FP8 dispatch), combined-1F1B A2A
    overlap where ``moe_a2a_overlap`` is set, the 32 SMs the performance scripts give HybridEP, and the
    Qwen3 layer split that counts the embedding and the loss as layers, TE's fused cross-entropy
    (``BRIDGE_MOE_CROSS_ENTROPY``); DeepSeek-V3's row with its
    recipe's ``pp_layout`` and its multi-token-prediction layer (its recompute of the MLA
    up-projections and dense MLPs is not modelled), Nemotron 3 Super's two MTP depths through one
    repeated layer."""
    return bridge_cases("bridge_moe", rows)


def megatron_bridge_moe_ultra(rows: list[Row]) -> list[Case]:
    """The DGX B300 and GB300 NVL72 rows of the same 26.04.01 table and models (``dgx-b300``,
    ``gb300-nvl72``: Blackwell Ultra, B200's and GB200's tensor rates with more memory and 800 Gb/s
    NICs), built as :func:`megatron_bridge_moe` builds the others, from the B300 and GB300
    variants of the same recipes."""
    return bridge_cases("bridge_moe_ultra", rows)


def bridge_ep_overlap(rows: list[Row]) -> list[Case]:
    """Megatron-Bridge's controlled A/B of ``overlap_moe_expert_parallel_comm`` (Qwen3-30B-A3B on 16
    H100 in BF16, TP1 PP1 EP16, HybridEP on the 32 SMs its recipe sets; the skill card's
    measured_result): the same run without and with the combined-1F1B A2A overlap, built as the
    26.04.01 rows are (:func:`bridge_case`)."""
    return bridge_cases("bridge_moe_overlap", rows)


def bridge_cases(source: str, rows: list[Row]) -> list[Case]:
    """The rows :func:`bridge_case` builds, numbered in order."""
    out: list[Case] = []
    for r in rows:
        c = bridge_case(source, r, len(out))
        if c is not None:
            out.append(c)
    return out


def expert_exchange(notes: str, ep: int) -> dict:
    """The parallel keys of a Megatron-Core MoE row's expert exchange, from its notes: EP and ETP,
    the dispatcher (``flex`` with the DeepEP or HybridEP backend as deepep, else alltoall), the SMs
    HybridEP holds (``hybridep_sms``, else :data:`HYBRIDEP_NUM_SMS`), the combined-1F1B A2A overlap
    (``moe_a2a_overlap=True``), and BF16 tokens on the wire: Megatron-Core dispatches BF16
    activations on every path (schedule.moe.fp8_dispatch_wanted)."""
    dispatcher = note_value(notes, "dispatcher")
    keys: dict = dict(ep=ep, etp=parse_int(note_value(notes, "ETP"), 1), moe_dispatch_dtype="bf16",
                      moe_dispatcher="deepep" if dispatcher.startswith("flex") else "alltoall")
    if "hybridep" in dispatcher:
        keys.update(moe_deepep_backend="hybridep",
                    moe_deepep_sms=parse_int(note_value(notes, "hybridep_sms"), HYBRIDEP_NUM_SMS))
    if note_value(notes, "moe_a2a_overlap").startswith("True"):
        keys["overlap_moe_expert_parallel_comm"] = True
    return keys


def bridge_case(source: str, r: Row, index: int) -> Case | None:
    """One Megatron-Bridge MoE row as a case (see :func:`megatron_bridge_moe`), or None when its
    model is not mapped, its GPU has no profile or it runs more than ``MAX_MICRO_BATCHES`` per
    pipeline. The notes give what the table does not print: precision, ETP, dispatcher, the SMs of
    HybridEP (``hybridep_sms``; the 26.04.01 Qwen3 recipes' 16 when absent), TP overlap and A2A
    overlap."""
    name, notes = r["model_name"], r["notes"]
    if r["metric"] not in ("tokens_per_s_per_gpu", "step_time_s") or name not in MEGATRON_BRIDGE_MOE:
        return None
    preset = MEGATRON_BRIDGE_MOE[name]
    hw = parse_system(r)
    if hw is None:
        return None
    dtype, recipe = BRIDGE_PRECISION[note_value(notes, "prec").lower()]
    n = parse_int(r["num_gpus"])
    tp, pp, vp, ep = (parse_int(r[k], 1) for k in ("tp", "pp", "vp", "ep"))
    mbs, gbs = parse_int(r["micro_batch"], 1), parse_int(r["global_batch"])
    if gbs // (mbs * (n // (tp * pp))) > MAX_MICRO_BATCHES:
        return None
    tp_overlap = "none" if note_value(notes, "tp_comm_overlap") == "False" else "te_default"
    parallel = megatron_parallel(tp, pp, vp, tp_overlap=tp_overlap) | expert_exchange(notes, ep)
    overlap = parallel.get("overlap_moe_expert_parallel_comm", False)
    if pp > 1 and preset.startswith("qwen3"):
        parallel["pp_layers"] = list(stages_with_embedding_and_loss(PRESETS[preset]["layers"], pp * vp))
    model = {"preset": preset, "seq_len": parse_int(r["seq_len"]), "vocab": padded_vocab(PRESETS[preset]["vocab"], tp)}
    layout = note_value(notes, "pp_layout").split(" ")[0]
    if layout:
        parallel["pp_layers"], model["mtp_layers"] = pp_layout(layout)
    mtp = note_value(notes, "mtp_layers")
    if mtp:  # Nemotron 3 Super's recipe: mtp_num_layers 2 through one repeated "*E" depth
        model["mtp_layers"] = int(mtp)
        model["mtp_repeated_layer"] = note_value(notes, "mtp_repeated_layer").startswith("True")
    # the recipe's recompute_modules core_attn is Megatron's selective recompute of the attention core
    recompute = "selective" if "core_attn" in note_value(notes, "recompute_modules").split("+") else "none"
    scn = make_scenario(f"{source.replace('_', '-')}-{index}", hw, n, model, micro_batch=mbs,
                        global_batch=gbs, dtype=dtype, recompute=recompute, parallel=parallel,
                        gpus_per_node=parse_int(r["gpus_per_node"], 8))
    if hw in NVL72_PROFILES and scn["nodes"] > NVL72_TRAYS:  # the job's racks as Slurm segments them
        scn["nodes_per_nvlink_domain"] = bridge_segment(scn["nodes"])
    if recipe is not None:
        scn["training"]["fp8_recipe"] = recipe
    scn["training"]["cross_entropy"] = BRIDGE_MOE_CROSS_ENTROPY
    if preset in BIASED_EXPERTS:
        scn["training"]["moe_expert_bias"] = "per_expert"
    if preset in UNFUSED_ROPE:
        scn["training"]["rope_kernel"] = "unfused"
    # every row: the page's forced-balanced router (RandomSTE's random logits), and the model's aux loss
    scn["training"]["moe_router_kernels"] = ["random_logits"] + (["aux_loss"] if preset in AUX_LOSS_PRESETS else [])
    graphs = cuda_graph_scopes(notes)
    if graphs:  # the recipe's cuda_graph_impl transformer_engine with its cuda_graph_scope
        scn["training"]["cuda_graph_scope"] = graphs
    modules = [m for m in note_value(notes, "recompute_modules").split("+") if m in MODELLED_RECOMPUTE]
    if modules:  # the recipe's selective recompute_modules (layernorm, moe_act)
        scn["training"]["recompute_modules"] = modules
    dp = n // (tp * pp)
    label = (f"{name} {r['gpu'].split()[0]} {note_value(notes, 'prec')} tp{tp} pp{pp}" + (f" vp{vp}" if vp > 1 else "")
             + f" ep{ep} dp{dp} {n} GPUs" + (" A2A overlap" if overlap else ""))
    return Case(source, label, scn, r["metric"], float(r["value"]), n)

"""A scenario: model, training settings, cluster and parallel plan, validated together.

``load_scenario(path)`` is the entry point: it parses the YAML (via :mod:`simulator.config.loader`),
resolves the hardware profile (a bundled name, or a path relative to the scenario's folder), and
checks every rule that involves more than one field. Each failure is an InputError naming the
file, the field path and the arithmetic ("tp=8 x cp=4 x pp=4 = 128 does not divide 96 GPUs").
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from simulator.config.hardware import HardwareProfile, is_profile_path, load_profile
from simulator.config.limits import gpus_problem, layer_passes_problem, layers_problem
from simulator.config.loader import read_yaml, validate
from simulator.config.node_subset import domain_segment, domain_segment_problem, first_gpus, first_gpus_problem
from simulator.config.parallelism import Parallel
from simulator.config.strict import STRICT_CONFIG
from simulator.config.workload import Model, Training
from simulator.errors import InputError


class ScenarioFile(BaseModel):
    """The YAML keys of a scenario, exactly (unknown keys rejected, strict types)."""

    model_config = STRICT_CONFIG

    name: str
    hardware: str
    nodes: int = Field(gt=0)
    # The first N GPUs of every node (CUDA_VISIBLE_DEVICES=0,1 on a DGX; a 4-GPU cloud shape of an
    # 8-GPU server); None: every GPU of the profile's node (config/node_subset.py).
    gpus_per_node: int | None = Field(default=None, ge=1)
    # K consecutive nodes of every multi-node NVLink domain (Slurm's --segment on GB200 NVL72);
    # None: the job fills whole domains (config/node_subset.py).
    nodes_per_nvlink_domain: int | None = Field(default=None, ge=1)
    model: Model
    training: Training
    parallel: Parallel = Parallel()


@dataclass(frozen=True)
class Scenario:
    """A validated scenario with its hardware profile resolved. Derived sizes are properties."""

    name: str
    hardware: str
    nodes: int
    model: Model
    training: Training
    parallel: Parallel
    profile: HardwareProfile  # with the scenario's gpus_per_node applied (node_subset.first_gpus)
    source: str = ""
    first_gpus: int | None = None  # the scenario's gpus_per_node key, as given (None: the whole node)
    domain_segment: int | None = None  # the scenario's nodes_per_nvlink_domain key, as given (None: whole domains)

    @property
    def gpus_per_node(self) -> int:
        return self.profile.node.gpus

    @property
    def n_gpus(self) -> int:
        return self.nodes * self.profile.node.gpus

    @property
    def model_parallel(self) -> int:
        return self.parallel.model_parallel

    @property
    def dp(self) -> int:
        return self.n_gpus // self.model_parallel

    @property
    def n_micro(self) -> int:
        """Micro-batches per optimizer step on each DP replica."""
        return self.training.global_batch // (self.training.micro_batch * self.dp)

    @property
    def expert_dp(self) -> int:
        """Expert-data-parallel degree: ranks of one stage holding the same experts."""
        return self.n_gpus // (self.parallel.pp * self.parallel.expert_tp * self.parallel.ep)

    @property
    def tokens_per_step(self) -> int:
        return self.training.global_batch * self.model.seq_len

    @property
    def stage_layers(self) -> tuple[int, ...]:
        """Transformer layers held by each pipeline stage."""
        p = self.parallel
        if p.pp_layers is not None and len(p.pp_layers) == p.pp * p.vp and p.vp > 1:
            return tuple(sum(p.pp_layers[c * p.pp + s] for c in range(p.vp)) for s in range(p.pp))
        return p.pp_layers or split_layers(self.model.layers, p.pp)

    @property
    def virtual_stage_layers(self) -> tuple[int, ...]:
        """Layers of each virtual stage v = chunk·pp + stage (pp·vp entries)."""
        p = self.parallel
        if p.pp_layers is not None and len(p.pp_layers) == p.pp * p.vp and p.vp > 1:
            return p.pp_layers
        stages = self.stage_layers  # once: each read splits the layers again
        return tuple(stages[v % p.pp] // p.vp for v in range(p.pp * p.vp))

    def with_parallel(self, parallel: Parallel) -> "Scenario":
        """The same scenario under another plan, validated again (for sweeps and comparisons)."""
        out = replace(self, parallel=parallel)
        check_plan(out)
        return out


@functools.lru_cache(maxsize=1024)
def split_layers(layers: int, pp: int) -> tuple[int, ...]:
    """Split layers over pp stages as evenly as possible.

    The remainder goes to the middle stages first: the first stage also runs the embedding and
    the last one the LM head and loss, so they get the smaller share (what Megatron users set by
    hand with decoder_first/last_pipeline_num_layers, e.g. Llama-3 405B's 126 layers on 16 stages).
    """
    base, extra = divmod(layers, pp)
    counts = [base] * pp
    priority = list(range(1, pp - 1)) + [pp - 1, 0] if pp > 2 else list(range(pp))[::-1]
    for i in priority[:extra]:
        counts[i] += 1
    return tuple(counts)


def _fail(scn: Scenario, field: str, message: str) -> None:
    raise InputError(message, source=scn.source or None, field=field)


def _product(parts: list[tuple[str, int]]) -> tuple[str, int]:
    shown = [(k, v) for k, v in parts if v > 1] or parts[:1]
    total = 1
    for _, v in parts:
        total *= v
    text = " x ".join(f"{k}={v}" for k, v in shown)
    return (text if len(shown) == 1 else f"{text} = {total}"), total


def check_plan(scn: Scenario) -> None:
    """Every cross-field rule of a scenario; raises InputError with the arithmetic."""
    m, t, p = scn.model, scn.training, scn.parallel
    n = scn.n_gpus
    # sizes first: nothing below may allocate for a size that cannot be meant
    per_node = f"gpus_per_node={scn.first_gpus}" if scn.first_gpus is not None else f"{scn.gpus_per_node} GPUs per node"
    problem = gpus_problem(n, f"nodes={scn.nodes:,} x {per_node}")
    if problem:
        _fail(scn, "nodes", problem)
    problem = layers_problem(m.layers)
    if problem:
        _fail(scn, "model.layers", problem)
    text, _ = _product([("tp", p.tp), ("cp", p.cp), ("ulysses", p.ulysses), ("pp", p.pp)])
    mp = p.model_parallel
    if n % mp:
        # blame the axis whose degree alone does not divide the GPUs (tp: 3 on 8 GPUs); when
        # each does and only their product does not, the plan as a whole
        alone = [a for a, d in (("tp", p.tp), ("cp", p.cp), ("ulysses", p.ulysses), ("pp", p.pp)) if n % d]
        blamed = f"parallel.{alone[0]}" if alone else "parallel"
        _fail(scn, blamed, f"{text} does not divide {n} GPUs (nodes={scn.nodes} x {per_node})")
    dp = n // mp
    if p.dp is not None and p.dp != dp:
        _fail(scn, "parallel.dp", f"dp={p.dp} but {n} GPUs / ({text}) = {dp}")
    # heads over TP and Ulysses
    if m.heads % p.tp:
        _fail(scn, "parallel.tp", f"tp={p.tp} does not divide heads={m.heads}")
    if m.kv_heads % p.tp:
        _fail(scn, "parallel.tp", f"tp={p.tp} does not divide kv_heads={m.kv_heads}")
    if m.hybrid:
        check_hybrid(scn)
    if "mamba" in scn.training.cuda_graph_scope and not m.mamba_heads:
        _fail(scn, "training.cuda_graph_scope", "mamba captures the Mamba2 blocks of a hybrid model: this model "
                                                "has none (model.layer_pattern with M)")
    dense_mlps = any(m.has_mlp(i) and not m.is_moe_layer(i) for i in range(m.layers))
    if "mlp" in scn.training.cuda_graph_scope and not dense_mlps:
        _fail(scn, "training.cuda_graph_scope", "mlp captures dense MLPs: every MLP of this model is an MoE layer "
                                                "(moe_router captures their routers)")
    if m.ffn_hidden % p.tp and dense_mlps:
        _fail(scn, "parallel.tp", f"tp={p.tp} does not divide ffn_hidden={m.ffn_hidden} (the column- and "
                                  "row-parallel MLP layers split it evenly, Megatron's ColumnParallelLinear)")
    if p.ulysses > 1:
        if m.heads % (p.tp * p.ulysses):
            _fail(scn, "parallel.ulysses",
                  f"tp={p.tp} x ulysses={p.ulysses} = {p.tp * p.ulysses} does not divide heads={m.heads}")
        kv = m.kv_heads // p.tp
        if kv % p.ulysses and p.ulysses % kv:
            _fail(scn, "parallel.ulysses", f"kv_heads/tp = {m.kv_heads}/{p.tp} = {kv} and ulysses={p.ulysses}: "
                                           "one must divide the other (KV heads are split or replicated)")
    if p.cp > 1 and p.cp_comm in ("a2a",):
        for what, heads in (("heads", m.heads), ("kv_heads", m.kv_heads)):
            if (heads // p.tp) % p.cp:
                _fail(scn, "parallel.cp", f"{what}/tp = {heads}/{p.tp} = {heads // p.tp} is not divisible by "
                                          f"cp={p.cp} (cp_comm: a2a splits heads)")
    if m.windowed and p.cp > 1 and p.cp_comm != "a2a":
        _fail(scn, "model.sliding_window", f"sliding_window={m.sliding_window} with cp={p.cp} and cp_comm: "
                                           f"{p.cp_comm}: a windowed layer is modelled where every rank's kernel "
                                           "sees the whole sequence (no CP, Ulysses, or cp_comm: a2a, which "
                                           "TransformerEngine requires for GPT-OSS's learnable softmax)")
    if p.cp_qkv_format != "sbhd" and p.cp_comm != "p2p":
        _fail(scn, "parallel.cp_qkv_format", f"cp_qkv_format={p.cp_qkv_format} applies only to cp_comm: p2p "
                                             f"(TransformerEngine <= 1.6 had no other), got {p.cp_comm}")
    if p.cp_a2a is not None:
        if p.cp_comm != "a2a+p2p":
            _fail(scn, "parallel.cp_a2a", f"cp_a2a={p.cp_a2a} applies only to cp_comm: a2a+p2p (got {p.cp_comm})")
        if p.cp % p.cp_a2a:
            _fail(scn, "parallel.cp_a2a", f"cp_a2a={p.cp_a2a} does not divide cp={p.cp}")
        for what, heads in (("heads", m.heads), ("kv_heads", m.kv_heads)):
            if (heads // p.tp) % p.cp_a2a:
                _fail(scn, "parallel.cp_a2a", f"{what}/tp = {heads}/{p.tp} = {heads // p.tp} is not divisible by "
                                              f"cp_a2a={p.cp_a2a} (the All-to-All splits heads)")
    # sequence
    s = m.seq_len
    if p.cp > 1:
        chunks = p.cp if p.cp_comm == "ring" else 2 * p.cp
        if s % chunks:
            how = f"cp={p.cp} (ring)" if p.cp_comm == "ring" else f"2 x cp = {chunks} (load-balanced CP)"
            _fail(scn, "model.seq_len", f"seq_len={s} is not divisible by {how}")
    if p.ulysses > 1 and s % p.ulysses:
        _fail(scn, "model.seq_len", f"seq_len={s} is not divisible by ulysses={p.ulysses}")
    if p.ulysses > 1 and p.cp > 1 and s % (chunks * p.ulysses):
        # USP: each of the ring's chunks is split again over the Ulysses group
        _fail(scn, "model.seq_len", f"seq_len={s} is not divisible by {chunks} ring chunks x ulysses={p.ulysses} "
                                    f"= {chunks * p.ulysses} (Ulysses inside a CP ring)")
    s_local = s // (p.cp * p.ulysses)
    if p.sp_enabled and (s_local * t.micro_batch) % p.tp:
        _fail(scn, "model.seq_len", f"micro_batch x seq_len/(cp x ulysses) = {t.micro_batch} x {s_local} "
                                    f"is not divisible by tp={p.tp} (sequence parallel)")
    # batch
    if t.global_batch % (t.micro_batch * dp):
        _fail(scn, "training.global_batch", f"global_batch={t.global_batch} is not divisible by "
                                            f"micro_batch={t.micro_batch} x dp={dp} = {t.micro_batch * dp}")
    n_micro = t.global_batch // (t.micro_batch * dp)
    problem = layer_passes_problem(n_micro, -(-m.layers // p.pp))
    if problem:
        _fail(scn, "training.global_batch", problem)
    # pipeline
    if p.pp > m.layers:
        _fail(scn, "parallel.pp", f"pp={p.pp} stages but only layers={m.layers}")
    if p.pp_layers is not None:
        if len(p.pp_layers) != p.pp and not (p.vp > 1 and len(p.pp_layers) == p.pp * p.vp):
            expect = f"pp={p.pp}" + (f" (or pp x vp = {p.pp * p.vp}, one per virtual stage)" if p.vp > 1 else "")
            _fail(scn, "parallel.pp_layers", f"{len(p.pp_layers)} entries but {expect}")
        # The first and last of several virtual stages may hold no transformer layer: the embedding
        # alone, the output projection and loss alone (Megatron-Core's pipeline layout "E|...|L";
        # Llama 3's schedule, arXiv:2407.21783 sec. 3.3.2: "the first model chunk on the first stage
        # has only the embedding, and the last model chunk on the last stage has only output
        # projection and loss calculation"). Their stages still hold the layers of their other chunks.
        virtual = p.vp > 1 and len(p.pp_layers) == p.pp * p.vp
        inner = p.pp_layers[1:-1] if virtual else p.pp_layers
        if sum(p.pp_layers) != m.layers or min(p.pp_layers) < 0 or min(inner, default=1) < 1:
            _fail(scn, "parallel.pp_layers", f"sum {'+'.join(map(str, p.pp_layers))} = {sum(p.pp_layers)} "
                                             f"must equal layers={m.layers}, at least 1 per stage"
                                             + (" (0 only in the first and the last virtual stage)" if virtual else ""))
    if p.vp > 1 and not (p.pp_layers is not None and len(p.pp_layers) == p.pp * p.vp):
        for i, n_layers in enumerate(scn.stage_layers):
            if n_layers % p.vp:
                _fail(scn, "parallel.vp", f"stage {i} holds {n_layers} layers, not divisible by vp={p.vp}")
    if p.pp_flushes > 1 and (p.pp == 1 or n_micro % p.pp_flushes):
        _fail(scn, "parallel.pp_flushes", f"pp_flushes={p.pp_flushes} needs pp > 1 and divides the "
                                          f"micro-batches per step ({n_micro}), got pp={p.pp}")
    if p.fsdp_grad_sync != "microbatch" and (p.zero != 3 or p.zero3_impl != "fsdp2"):
        _fail(scn, "parallel.fsdp_grad_sync", f"fsdp_grad_sync={p.fsdp_grad_sync} needs zero: 3 with zero3_impl: "
                                              f"fsdp2, got zero={p.zero} zero3_impl={p.zero3_impl}")
    n_micro //= p.pp_flushes  # the micro-batches of one pipeline pass
    if p.pp_schedule == "interleaved" and n_micro % p.pp:
        _fail(scn, "parallel.pp_schedule", f"interleaved 1F1B needs micro-batches divisible by pp: "
                                           f"global_batch/(micro_batch x dp) = {t.global_batch}/"
                                           f"({t.micro_batch} x {dp}) = {n_micro} is not divisible by pp={p.pp}")
    if p.zero == 3 and p.zero3_impl == "deepspeed-2021" and m.mla:
        _fail(scn, "parallel.zero3_impl", "deepspeed-2021 gathers the fused QKV, projection and MLP weights "
                                          "of a dense layer; multi-head latent attention is not modelled with it")
    if p.zero3_contiguous_gradients is not None and (p.zero != 3 or p.zero3_impl != "deepspeed-2021"):
        _fail(scn, "parallel.zero3_contiguous_gradients", "selects how DeepSpeed ZeRO-3 of 2021 reduces gradients "
                                                          "and needs zero: 3 with zero3_impl: deepspeed-2021, got "
                                                          f"zero={p.zero}, zero3_impl={p.zero3_impl}")
    if p.pp_engine == "deepspeed" and p.pp_schedule != "1f1b":
        _fail(scn, "parallel.pp_engine", f"pp_engine: deepspeed runs DeepSpeed's TrainSchedule, a non-interleaved "
                                         f"1F1B; pp_schedule must be 1f1b, got {p.pp_schedule}")
    if p.zero == 3 and p.pp > 1 and p.zero3_impl.startswith("deepspeed"):
        _fail(scn, "parallel.zero", f"zero=3 with pp={p.pp}: DeepSpeed's pipeline engine supports ZeRO "
                                    "stages 0-1 only (use zero3_impl: fsdp2)")
    megatron_ddp = p.zero == 0 or (p.zero == 1 and p.zero1_impl == "megatron")
    for key, value in (("ddp_grad_check", p.ddp_grad_check), ("ddp_grad_scaling", p.ddp_grad_scaling)):
        if value != "none" and not megatron_ddp:
            _fail(scn, f"parallel.{key}", f"{key}: {value} prices Megatron-Core DDP's passes over its gradient "
                                          f"buffer and needs zero 0, or zero 1 with zero1_impl: megatron; got "
                                          f"zero={p.zero}, zero1_impl={p.zero1_impl}")
    fixed_master = ((p.zero == 1 and p.zero1_impl == "deepspeed-bf16" and "zero1_impl: deepspeed-bf16")
                    or (p.zero == 3 and p.zero3_impl == "deepspeed-2021" and "zero3_impl: deepspeed-2021"))
    if fixed_master and t.master_dtype != "fp32":
        _fail(scn, "training.master_dtype", f"{fixed_master} steps fp32 master weights by construction "
                                            f"(DeepSpeed's optimizer wrapper), got master_dtype {t.master_dtype}")
    if p.zero == 3 and p.zero3_impl == "deepspeed-2021" and t.optimizer_algorithm != "adam":
        _fail(scn, "training.optimizer_algorithm", "zero3_impl: deepspeed-2021 prices DeepSpeed's fp16 Adam step "
                                                   f"(stage3.py); got optimizer_algorithm {t.optimizer_algorithm}")
    check_moe(scn, dp)
    if t.recompute == "selective_op":
        check_op_level_recompute(scn)
    if t.recompute_method == "uniform" and t.recompute_num_layers > 1 and scn.model.mtp_layers:
        # megatron/core/transformer/multi_token_prediction.py asserts a group of one under uniform
        _fail(scn, "training.recompute_num_layers", f"recompute_method: uniform checkpoints each MTP depth on its "
                                                    f"own, so Megatron needs recompute_num_layers 1 with "
                                                    f"mtp_layers (got {t.recompute_num_layers})")
    if t.fp8_param_gather:
        check_fp8_param_gather(scn)
    if t.dtype == "fp8" and t.fp8_recipe == "mxfp8" and scn.profile.gpu.arch != "blackwell":
        _fail(scn, "training.fp8_recipe", f"mxfp8 needs Blackwell tensor cores (MX block scaling); "
                                          f"{scn.profile.gpu.name} is {scn.profile.gpu.arch}")
    if t.dtype == "fp8" and scn.profile.gpu.fp8_TFLOPS is None:
        _fail(scn, "training.dtype", f"fp8 needs fp8 tensor cores; {scn.profile.gpu.name} has none")
    try:  # the kernel generation must be one the profile prices (flash3 on an A100 is not)
        kernel = scn.profile.gpu.resolve_attention(t.attention)
    except InputError as exc:
        _fail(scn, "training.attention", exc.detail)
    if kernel == "flash1" and scn.model.windowed:
        _fail(scn, "training.attention", f"flash1 has no sliding window (FlashAttention-1 masks causally only; "
                                         f"window_size came with flash-attn 2.3), and model.sliding_window is "
                                         f"{scn.model.sliding_window}: use flash2, flash3 or unfused")


def check_hybrid(scn: Scenario) -> None:
    """What a hybrid Mamba2-Transformer model (``model.layer_pattern``) supports here: Megatron-Core's
    ``MambaMixer`` splits the heads and the B/C groups over TP; context parallelism of the mixers is
    not modelled, and the combined-1F1B A2A overlap exists for GPTModel only (FP8 runs every
    block's GEMMs at the FP8 rate with its recipe's quantisation passes, the routed rows of E
    blocks included, as for the layers of a GPT model: schedule/fp8.py). A
    multi-token-prediction depth of a hybrid model is an attention block and an MoE block
    (Nemotron-3's ``mtp_hybrid_override_pattern: "*E"``), so it needs experts."""
    m, t, p = scn.model, scn.training, scn.parallel
    if m.mamba_heads and (m.mamba_heads % p.tp or m.mamba_groups % p.tp):
        _fail(scn, "parallel.tp", f"tp={p.tp} must divide mamba_heads={m.mamba_heads} and mamba_groups="
                                  f"{m.mamba_groups} (Megatron-Core's MambaMixer splits both over TP)")
    if m.mamba_heads and (p.cp > 1 or p.ulysses > 1):
        _fail(scn, "parallel.cp", "context parallelism of Mamba2 mixers is not modelled (layer_pattern with M)")
    if t.recompute_norm_blocks:
        _fail(scn, "training.recompute_norm_blocks", "re-running the norm blocks of hybrid blocks (layer_pattern) "
                                                     "is not modelled")
    if m.mtp_layers and not m.moe:
        _fail(scn, "model.mtp_layers", "a hybrid model's MTP depth is an attention and an MoE block (\"*E\"): "
                                       "it needs experts > 0")
    if p.overlap_moe_expert_parallel_comm:
        # only GPTModel builds the schedule plan combined 1F1B runs (megatron/core/models/gpt/gpt_model.py
        # build_schedule_plan); MambaModel has none
        _fail(scn, "parallel.overlap_moe_expert_parallel_comm", "Megatron-Core's combined 1F1B A2A overlap "
                                                                "plans GPTModel layers only, not hybrid blocks")


def check_fp8_param_gather(scn: Scenario) -> None:
    """FP8 weights are gathered only where a sharded optimizer or FSDP gathers weights at all, and
    in the recipes the frameworks implement it for."""
    p, t = scn.parallel, scn.training
    key = "training.fp8_param_gather"
    if p.zero == 0:
        _fail(scn, key, "needs sharded weights to gather (zero 1/2: Megatron's distributed optimizer, "
                        "zero 3 with zero3_impl: fsdp2)")
    if p.zero == 3 and p.zero3_impl != "fsdp2":
        _fail(scn, key, "with zero=3 is FSDP2's float8 all-gather (zero3_impl: fsdp2); DeepSpeed gathers bf16")
    if p.zero == 3 and t.fp8_recipe != "current":
        _fail(scn, key, f"with FSDP2 needs fp8_recipe: current (torchao's tensorwise dynamic scaling is the "
                        f"only one enable_fsdp_float8_all_gather supports), got {t.fp8_recipe}")
    if p.zero < 3 and t.fp8_recipe == "rowwise":
        _fail(scn, key, "rowwise is torchao's recipe; Megatron's fp8_param_gather runs TransformerEngine's "
                        "delayed, current, blockwise or mxfp8")


def check_op_level_recompute(scn: Scenario) -> None:
    """``recompute: selective_op`` is torchtitan's op-level policy on its Llama blocks: dense
    SwiGLU layers (its every-second-mm rule is counted on wq, wk, wv, wo, w1, w3, w2), without TP
    (under TP the re-run's collectives are not modelled) and without ZeRO-3 hooks per GEMM
    (DeepSpeed's coordinator gathers by GEMM; FSDP2 gathers a block once before its backward)."""
    m, p = scn.model, scn.parallel
    why = ("a Mixture-of-Experts model" if m.moe else "a hybrid layer pattern" if m.hybrid else
           f"mlp {m.mlp} (the policy counts a SwiGLU block's seven GEMMs)" if not m.gated else
           f"tp={p.tp}" if p.tp > 1 else
           f"zero3_impl {p.zero3_impl}" if p.zero == 3 and p.zero3_impl != "fsdp2" else "")
    if why:
        _fail(scn, "training.recompute", f"recompute: selective_op (torchtitan's op-level policy) is modelled "
                                         f"on dense SwiGLU layers without TP under FSDP2 or no ZeRO-3; got {why}")


def check_moe(scn: Scenario, dp: int) -> None:
    """Expert-parallel rules (Megatron-Core parallel_state.py and transformer_config.py)."""
    m, p = scn.model, scn.parallel
    etp = p.expert_tp
    if not m.moe:
        if p.ep > 1 or p.etp is not None:
            key = "ep" if p.ep > 1 else "etp"
            _fail(scn, f"parallel.{key}", f"{key}={getattr(p, key)} needs a Mixture-of-Experts model "
                                          "(model.experts > 0)")
        t = scn.training
        moe_only = {"recompute_modules": bool(t.recompute_modules), "moe_expert_bias": t.moe_expert_bias != "none",
                    "cuda_graph_scope": bool({"moe_router", "moe_preprocess"} & set(t.cuda_graph_scope)),
                    "moe_activation": t.moe_activation != "fused", "moe_grouped_gemm": t.moe_grouped_gemm,
                    "moe_router_kernels": bool(t.moe_router_kernels)}
        moe_key = next((k for k, set_ in moe_only.items() if set_), None)
        if moe_key is not None:
            _fail(scn, f"training.{moe_key}", f"{moe_key} describes the MoE layers: it needs a Mixture-of-Experts model "
                                          "(model.experts > 0)")
        return
    if m.experts % p.ep:
        _fail(scn, "parallel.ep", f"ep={p.ep} does not divide experts={m.experts}")
    if scn.training.moe_activation == "unfused" and m.gated:
        _fail(scn, "training.moe_activation", "unfused is modelled for non-gated experts (mlp gelu); "
                                              f"mlp {m.mlp} needs fused")
    block = p.tp * p.cp * dp
    if block % (etp * p.ep):
        _fail(scn, "parallel.ep", f"etp={etp} x ep={p.ep} = {etp * p.ep} does not divide tp x cp x dp = "
                                  f"{p.tp} x {p.cp} x {dp} = {block} (EP folds into the ranks of one stage)")
    if (p.ep > 1 or etp != p.tp) and p.full_order[-1] != "pp":
        _fail(scn, "parallel.order", f"order {list(p.full_order)}: with expert parallelism pp must be the "
                                     "outermost axis (Megatron builds the expert ranks as tp-ep-dp-pp)")
    if p.ulysses > 1:
        _fail(scn, "parallel.ulysses", "DeepSpeed-Ulysses is not combined with experts here; use cp")
    if p.tp > 1 and not p.sp_enabled:
        _fail(scn, "parallel.sequence_parallel", f"tp={p.tp} with experts needs sequence_parallel: true "
                                                 "(Megatron-Core requires it for MoE)")
    if m.moe_ffn_hidden % etp:
        _fail(scn, "parallel.etp", f"etp={etp} does not divide moe_ffn_hidden={m.moe_ffn_hidden}")
    if m.shared_ffn_hidden % p.tp:
        _fail(scn, "parallel.tp", f"tp={p.tp} does not divide shared_ffn_hidden={m.shared_ffn_hidden}")
    if p.zero == 3 and p.zero3_impl.startswith("deepspeed"):
        _fail(scn, "parallel.zero3_impl", "experts with zero=3 are sharded the FSDP2 way here "
                                          "(zero3_impl: fsdp2)")
    if p.moe_dispatcher == "deepep" and p.moe_deepep_sms >= scn.profile.gpu.sms:
        _fail(scn, "parallel.moe_deepep_sms", f"moe_deepep_sms={p.moe_deepep_sms} leaves no SM for compute: "
                                              f"{scn.profile.gpu.name} has {scn.profile.gpu.sms}")
    if p.moe_deepep_backend == "hybridep" and p.moe_dispatcher != "deepep":
        _fail(scn, "parallel.moe_deepep_backend", f"hybridep is a backend of moe_dispatcher deepep (Megatron's flex "
                                                  f"dispatcher), not of {p.moe_dispatcher}")
    if p.overlap_moe_expert_parallel_comm:
        check_a2a_overlap(scn)


def check_a2a_overlap(scn: Scenario) -> None:
    """The rules Megatron-Core's TransformerConfig checks for ``overlap_moe_expert_parallel_comm``
    (megatron/core/transformer/transformer_config.py): an All-to-All to hide, a dispatcher the
    fine-grained schedule splits, a schedule that pairs micro-batches."""
    p, t = scn.parallel, scn.training
    key = "parallel.overlap_moe_expert_parallel_comm"
    if p.ep == 1:
        _fail(scn, key, "needs an All-to-All to hide (ep > 1)")
    if p.moe_dispatcher == "allgather":
        _fail(scn, key, "works with moe_dispatcher alltoall or deepep (Megatron's flex), not allgather")
    if p.moe_shared_expert_overlap:
        _fail(scn, key, "excludes moe_shared_expert_overlap: the combined schedule runs the shared experts "
                        "in the expert node")
    if p.pp > 1 and p.vp == 1:
        _fail(scn, key, f"pp={p.pp} needs the interleaved schedule (vp > 1); Megatron pairs micro-batches only "
                        "without pipelining or with virtual pipeline stages")
    if t.recompute == "full":
        _fail(scn, "training.recompute", "recompute: full with overlap_moe_expert_parallel_comm re-runs the "
                                         "forward's All-to-Alls inside the paired backward; use selective or none")
    if "moe" in t.recompute_modules:
        # transformer_config.py: "disable moe in recompute_modules when enabling overlap_moe_expert_parallel_comm"
        _fail(scn, "training.recompute_modules", "moe re-runs the MoE layer's All-to-Alls inside its backward, "
                                                 "which overlap_moe_expert_parallel_comm excludes (Megatron-Core "
                                                 "asserts it); drop one of them")


def build_scenario(data: dict[str, Any], source: str | Path | None = None, base_dir: Path | None = None,
                   profile: HardwareProfile | None = None) -> Scenario:
    """Validate a scenario mapping (as read from YAML) into a Scenario; ``profile``, when given,
    is the hardware instead of the one ``hardware:`` names (a profile built in memory, e.g. with
    :func:`~simulator.config.hardware.apply_overlay`)."""
    spec = validate(ScenarioFile, data, source)
    hw = spec.hardware
    if base_dir is not None and is_profile_path(hw):
        candidate = Path(hw) if Path(hw).is_absolute() else base_dir / hw
        hw = str(candidate)
    if profile is None:
        try:
            profile = load_profile(hw)
        except InputError as exc:
            if exc.source is None:
                raise InputError(exc.detail, source=str(source) if source else None, field=exc.field) from None
            raise
    if spec.gpus_per_node is not None:
        problem = first_gpus_problem(profile, spec.gpus_per_node)
        if problem:
            raise InputError(problem, source=str(source) if source else None, field="gpus_per_node")
        profile = first_gpus(profile, spec.gpus_per_node)
    if spec.nodes_per_nvlink_domain is not None:
        problem = domain_segment_problem(profile, spec.nodes_per_nvlink_domain, spec.nodes)
        if problem:
            raise InputError(problem, source=str(source) if source else None, field="nodes_per_nvlink_domain")
        profile = domain_segment(profile, spec.nodes_per_nvlink_domain)
    scn = Scenario(name=spec.name, hardware=spec.hardware, nodes=spec.nodes, model=spec.model,
                   training=spec.training, parallel=spec.parallel, profile=profile,
                   source=str(source) if source else "", first_gpus=spec.gpus_per_node,
                   domain_segment=spec.nodes_per_nvlink_domain)
    check_plan(scn)
    return scn


def _refuse_missing(p: Path) -> None:
    """A scenario path that does not exist; when it names a bundled scenario (``clustersim run
    quickstart``), say where that one is and how to get a copy."""
    from simulator.files import bundled_dir

    bundled = bundled_dir("scenarios") / f"{p.name.removesuffix('.yaml')}.yaml"
    hint = ""
    if bundled.is_file():
        hint = (f"; {bundled.stem!r} is a bundled scenario: clustersim scenarios copy {bundled.stem} "
                f"writes it to {bundled.stem}.yaml here (it is {bundled})")
    raise InputError(f"no such file{hint}", source=str(p))


def load_scenario(path: str | Path, hardware: str | None = None) -> Scenario:
    """Read, validate and resolve a scenario YAML; `hardware` (a bundled profile name or a
    profile path relative to the working directory, e.g. a calibrated overlay) replaces the
    file's ``hardware:``."""
    p = Path(path)
    if not p.exists():
        _refuse_missing(p)
    data = read_yaml(p)
    if hardware is not None:
        if is_profile_path(hardware):  # a path on the command line is relative to the working directory
            hardware = str(Path(hardware).resolve())
        try:
            load_profile(hardware)
        except InputError as exc:
            if exc.source:  # an error inside the profile file names that file and field
                raise
            raise InputError(exc.detail, source="command line", field="--hardware") from None
        if isinstance(data, dict):
            data = {**data, "hardware": hardware}
    return build_scenario(data, source=p, base_dir=p.parent)

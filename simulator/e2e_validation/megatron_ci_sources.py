"""Megatron-LM's functional-test golden values (NVIDIA/Megatron-LM ``tests/functional_tests/test_cases/gpt``), as e2e cases.

Megatron-LM's CI trains small GPT models on one DGX H100 or DGX A100 node and keeps the measured
``iteration-time`` of every logged step in each case's golden values, beside the ``model_config.yaml``
that gives the exact arguments (``data/e2e/megatron_ci_golden_values.csv``, whose header has the
provenance). Every case runs Megatron-Core with TransformerEngine layers in bf16, learned absolute
positions, a GeLU MLP of 4h, ``--no-gradient-accumulation-fusion`` (autograd accumulates each
micro-batch's weight gradients), Megatron's fp32 main gradients (reduced in fp32), no sequence
parallelism unless the case sets it and no TP communication overlap. The CI's per-step logging
(``--log-params-norm``, ``--log-num-zeros-in-grad``, timers and memory to TensorBoard) and the rest of
``--deterministic-mode`` (``NCCL_ALGO=Ring``, cuBLAS's workspace, cuDNN's deterministic attention
backward on H100) are not modelled; ``NVTE_ALLOW_NONDETERMINISTIC_ALGO=0`` is
(``training.deterministic``: FlashAttention-2's deterministic backward, which TransformerEngine runs
on A100), and so is ``--deterministic-mode``'s ``torch.use_deterministic_algorithms(True)``
(``training.torch_deterministic``: PyTorch fills TransformerEngine's fresh outputs with NaN,
schedule/deterministic_fill.py). Megatron's default attention dropout of 0.1 runs inside TE's fused kernels
(``training.fused_attention_dropout``: a Philox draw per score element, costs/attention_dropout.py),
and ``GPTDataset``'s b x 1 x s x s attention mask is copied to the GPU and broadcast over TP each
micro-batch (``training.dataloader_attention_mask``, schedule/data_loading.py): both are set here.
The file's ``megatron_ci_flags`` rows (more cases of the small GPT, one flag or plan axis apart) are data
for the findings' decomposition of the small cases' step; no builder reads them.
"""

from __future__ import annotations

from dataclasses import replace

from simulator.e2e_validation.rows import Row, gpu_name, note_value, parse_int, parse_recompute, parse_system
from simulator.e2e_validation.scenarios import MEGATRON_LM_DDP_2025, MODERN, Case, gpt_model, make_scenario

# --attention-backend as the case sets it (notes), to the kernel it runs: ``flash`` is TE's
# flash-attn path (FlashAttention-2 class), ``unfused`` materialises the scores, the default
# (``auto``) lets TE choose (cuDNN's fused attention on H100, flash-attn 2 on A100).
_ATTENTION = {"unfused": "unfused", "flash": "flash2", "auto": "auto"}


def _note(r: Row, key: str) -> str:
    """The text after ``key`` in the row's notes, up to the next ``;``."""
    return r["notes"].split(f"{key} ", 1)[1].split(";")[0].strip()


def megatron_ci_case(source: str, r: Row) -> Case:
    """One golden-values row as the scenario its model_config.yaml describes."""
    tp, pp, vp, cp = (parse_int(r[k], 1) for k in ("tp", "pp", "vp", "cp"))
    mb, gb = parse_int(r["micro_batch"], 1), parse_int(r["global_batch"])
    hw = parse_system(r)
    if hw is None:
        raise ValueError(f"megatron_ci: no profile for {r['gpu']!r}")
    flags = _note(r, "flags")
    dist_opt = r["zero_stage_or_fsdp"].startswith("distributed optimizer")
    par: dict = dict(tp=tp, pp=pp, cp=cp, zero=1 if dist_opt else 0,
                     overlap_grad_reduce="--overlap-grad-reduce" in flags,
                     overlap_param_gather="--overlap-param-gather" in flags,
                     grad_reduce_dtype="fp32", gradient_accumulation_fusion=False,
                     sequence_parallel=r["sequence_parallel"] == "true", **MEGATRON_LM_DDP_2025)
    if "--no-check-for-nan-in-loss-and-grad" in flags:
        par["ddp_grad_check"] = "none"
    if "--ddp-average-in-collective" in flags:
        par["ddp_grad_scaling"] = "collective"
    if vp > 1:  # Megatron-LM overlaps the interleaved schedule's exchanges by default (--overlap-p2p-communication)
        par.update(pp_schedule="interleaved", vp=vp, overlap_p2p_comm=True)
    attention = _ATTENTION[_note(r, "attention-backend").split()[0]]
    dropout = not _note(r, "dropout").startswith("hidden 0.0")
    stack = replace(MODERN, attention=attention, dropout=dropout)
    model = gpt_model(r, position="learned", tied="--untie-embeddings-and-output-weights" not in flags)
    test = note_value(r["notes"], "test_case")
    gpu = gpu_name(r)
    label = f"{r['model_name'].split(' (')[0]} {gpu} tp{tp} pp{pp}" + (f" vp{vp}" if vp > 1 else "") + \
        (f" cp{cp}" if cp > 1 else "") + f" dp{8 // (tp * pp * cp)}" + (" full recompute" if r["recompute"] == "full" else "")
    scenario = make_scenario(f"{source}-{test}-{gpu}", hw, 8, model, micro_batch=mb, global_batch=gb, dtype="bf16",
                             recompute=parse_recompute(r), parallel=par, stack=stack,
                             gpus_per_node=parse_int(r["gpus_per_node"], 8))
    # NVTE_ALLOW_NONDETERMINISTIC_ALGO=0 (with or without --deterministic-mode): TE's deterministic
    # attention backward (flash-attn's on A100)
    scenario["training"]["deterministic"] = "NVTE_ALLOW_NONDETERMINISTIC_ALGO=0" in _note(r, "env")
    # --deterministic-mode: torch.use_deterministic_algorithms(True), so PyTorch fills every tensor the
    # empty factories hand out (TE's GEMM, norm and attention outputs) with NaN first
    scenario["training"]["torch_deterministic"] = "--deterministic-mode" in flags
    # --attention-dropout (0.1 unless the case sets 0): TE's fused kernels draw it per score element
    scenario["training"]["fused_attention_dropout"] = dropout and attention != "unfused"
    # GPTDataset's b x 1 x s x s mask, copied to the GPU and broadcast over TP by get_batch
    scenario["training"]["dataloader_attention_mask"] = "--no-create-attention-mask-in-dataloader" not in flags
    return Case(source, label, scenario, "step_time_s", float(r["value"]), 8)


def megatron_ci(rows: list[Row]) -> list[Case]:
    """The two 7B cases of Megatron-LM's functional tests (``gpt3_7b_tp1_pp4_memory_speed``: TP 1 x
    PP 4 with one layer per virtual stage, vp 8, DP 2, micro-batch 1; ``gpt3_7b_tp4_pp1_memory_speed``:
    TP 4 without sequence parallelism, DP 2, micro-batch 2), GPT with 32 layers, hidden 4,096, GQA 8,
    seq 8,192, global batch 8, the distributed optimizer overlapped with the backward and forward,
    on one DGX H100 node, one DGX A100 node and two GB200 trays of 4 (``gb200-nvl72``, the trays in
    one NVLink domain: the CI does not say): six rows. The step time is the median of the logged
    iteration times from step 3 on."""
    return [megatron_ci_case("megatron_ci", r) for r in rows if r["source_id"] in ("megatron_ci", "megatron_ci_gb200")
            and r["metric"] == "step_time_s" and r["model_name"].startswith("GPT 6.7B")]


def megatron_ci_small(rows: list[Row]) -> list[Case]:
    """The suite's small GPT (12 layers, hidden 512, 8 heads, seq 1,024, micro-batch 4, global batch
    32) under five plans, each on one DGX H100 and one DGX A100 node: TP 1 x PP 4 with vp 3 (unfused
    attention), TP 2 x PP 2, TP 2 x PP 2 x CP 2 with sequence parallelism (flash attention, no
    dropout), TP 4 with the distributed optimizer (unfused attention), and DP 8 with full recompute:
    ten rows, measured at 0.05-0.5 s a step."""
    return [megatron_ci_case("megatron_ci_small", r) for r in rows if r["source_id"] == "megatron_ci"
            and r["metric"] == "step_time_s" and r["model_name"].startswith("GPT 12L")]

"""Mixture-of-Experts rows of the published sources, as e2e cases.

NeMo AutoModel's performance summary (``nemo_automodel_perf_summary.csv``) prints, for its MoE
pre-training rows, the GPUs, TP/PP/VP/EP, the FSDP2 group, the local and global batch and the step
time, but neither the model shape nor the recompute or dispatcher settings. Those come from the
benchmark configs the table was produced with (NVIDIA-NeMo/Automodel
``examples/benchmark/configs/{deepseek_v3,kimi_k2,qwen3_moe_30b,gptoss_20b,gptoss_120b}_te_deepep.yaml``,
read at 037e04a6/092af93e/080dca53): DeepEP dispatch (``enable_deepep`` / ``dispatcher: deepep``),
a forced-balanced gate (``fake_balanced_gate``), TE linear layers and attention (FlexAttention for
GPT-OSS), full activation checkpointing for DeepSeek-V3, Kimi-K2 and Qwen3 (not for GPT-OSS),
``reshard_after_forward: false`` for DeepSeek-V3, EP 8 / 64 for GPT-OSS-20B / 120B (blank in the
table), ``pp_microbatch_size`` 1 and ``layers_per_stage: 2`` for the pipelined runs. The shapes
are the presets (the models' Hugging Face configs). A pipelined run calls torch pipelining's
``schedule.step`` once per gradient-accumulation step (the table's GA): that many pipeline passes,
each with its fill and drain (``parallel.pp_flushes``).
"""

from __future__ import annotations

import re

from simulator.e2e_validation.rows import Row, parse_int
from simulator.e2e_validation.scenarios import TORCH_EAGER_TE, Case, make_scenario

# table name -> (preset, recompute, ep when the table leaves it blank, FSDP2 reshard after forward,
# attention kernel: TE's fused attention, or FlexAttention for GPT-OSS, which PyTorch's FlexAttention
# write-up puts at about 90% (forward) and 85% (backward) of FlashAttention-2: FA2-class)
AUTOMODEL_MOE: dict[str, tuple[str, str, int, bool, str]] = {
    "DeepSeek V3 671B": ("deepseek-v3", "full", 0, False, "auto"),
    "Kimi K2": ("kimi-k2", "full", 0, True, "auto"),
    "Qwen3 MoE 30B": ("qwen3-30b-a3b", "full", 0, True, "auto"),
    "GPT-OSS 20B": ("gpt-oss-20b", "none", 8, True, "flash2"),
    "GPT-OSS 120B": ("gpt-oss-120b", "none", 64, True, "flash2"),
}


# The 1,024-GPU DeepSeek-V3 row takes about 9 minutes to simulate on one core.
MAX_GPUS = 256


def uneven_virtual_stages(layers: int, stages: int) -> tuple[int, ...]:
    """Layers of `stages` virtual pipeline stages of about two layers each (torch pipelining's
    ``layers_per_stage: 2``): as even as possible, the short stages first and last, where the
    embedding and the LM head also run."""
    base, extra = divmod(layers, stages)
    counts = [base] * stages
    for i in range(1, extra + 1):
        counts[i] += 1
    return tuple(counts)


def automodel_moe(rows: list[Row]) -> list[Case]:
    """MoE pre-training rows of the models above (FSDP2 + EP with DeepEP, BF16, balanced gate) on up
    to 256 GPUs. The Nemotron-3 rows are left out: hybrid Mamba-Transformer models, not modelled."""
    out: list[Case] = []
    for r in rows:
        name = r["model_name"]
        if r["metric"] != "step_time_s" or "Pre-Training" not in r["notes"] or name not in AUTOMODEL_MOE:
            continue
        preset, recompute, ep_default, reshard, kernel = AUTOMODEL_MOE[name]
        n, pp, vp = parse_int(r["num_gpus"]), parse_int(r["pp"], 1), parse_int(r["vp"], 1)
        if n > MAX_GPUS:
            continue
        ep = parse_int(r["ep"], ep_default)
        model = {"preset": preset, "seq_len": parse_int(r["seq_len"])}
        parallel: dict = dict(pp=pp, ep=ep, zero=3, zero3_impl="fsdp2", moe_dispatcher="deepep",
                              fsdp_reshard_after_forward=reshard)
        ga = re.search(r"\bGA=(\d+)", r["notes"])
        if pp > 1 and ga and int(ga.group(1)) > 1:  # one schedule.step, fill and drain, per GA step
            parallel["pp_flushes"] = int(ga.group(1))
        if vp > 1:
            from simulator.config.workload import PRESETS

            parallel.update(pp_schedule="interleaved", vp=vp,
                            pp_layers=list(uneven_virtual_stages(PRESETS[preset]["layers"], pp * vp)))
        scn = make_scenario(f"automodel-moe-{len(out)}", "dgx-h100", n, model,
                            micro_batch=parse_int(r["micro_batch"], 1), global_batch=parse_int(r["global_batch"]),
                            dtype="bf16", recompute=recompute, parallel=parallel, stack=TORCH_EAGER_TE)
        scn["training"].update(moe_routing="round_robin", attention=kernel)  # fake_balanced_gate
        dp = n // pp
        out.append(Case("automodel_moe", f"{name} FSDP2 dp{dp} ep{ep} pp{pp}" + (f" vp{vp}" if vp > 1 else "")
                        + f" {n} GPUs", scn, "step_time_s", float(r["value"]), n))
    return out

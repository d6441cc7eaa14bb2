"""How a parallel plan and a run are named in tables, plot titles and results files.

The plan notation is the one practitioners write in papers and launch scripts (Megatron-LM's
``--tensor-model-parallel-size 8 --pipeline-model-parallel-size 2`` reads ``tp8 pp2``).
"""

from __future__ import annotations

from typing import Any

from simulator.config.parallelism import Parallel


def plan_label(p: Parallel, dp: int | None, micro_batch: int, recompute: str | None = None) -> str:
    """E.g. ``tp8sp pp2 vp4 cp2 dp4 z1 mb1`` (a split of the layers given per stage after the
    stages: ``pp2 layers=17,15``), then the knobs that differ from the defaults:
    ``ovl=ring_exchange`` (tp_overlap), ``cp=a2a`` (cp_comm, with cp > 1), ``fsdp2``,
    ``fsdp2-noreshard`` (zero 3), ``ep8 etp1`` and ``moe=deepep`` (experts), ``rc=selective`` (recompute, when given)."""
    parts = [f"tp{p.tp}" + ("sp" if p.sp_enabled else ""), f"pp{p.pp}"]
    if p.vp > 1:
        parts.append(f"vp{p.vp}")
    if p.pp_layers is not None and p.pp > 1:
        parts.append("layers=" + ",".join(map(str, p.pp_layers)))
    if p.cp > 1:
        parts.append(f"cp{p.cp}")
    if p.ulysses > 1:
        parts.append(f"uly{p.ulysses}")
    if dp is not None:
        parts.append(f"dp{dp}")
    if p.ep > 1:
        parts.append(f"ep{p.ep}")
    if p.etp is not None and p.etp != p.tp:
        parts.append(f"etp{p.etp}")
    parts += [f"z{p.zero}", f"mb{micro_batch}"]
    if p.tp_overlap != "none":
        parts.append(f"ovl={p.tp_overlap}")
    if p.cp > 1 and p.cp_comm != "p2p":
        parts.append(f"cp={p.cp_comm}")
    if p.moe_dispatcher != "alltoall":
        parts.append(f"moe={p.moe_dispatcher}")
    if p.zero == 3 and p.zero3_impl == "fsdp2":
        parts.append("fsdp2" if p.fsdp_reshard_after_forward else "fsdp2-noreshard")
    if p.zero == 3 and p.zero3_impl == "deepspeed-2021":
        parts.append("deepspeed-2021")
    if recompute:
        parts.append(f"rc={recompute}")
    return " ".join(parts)


def run_title(scenario: Any, step_time_s: float) -> str:
    """Plot title of one run: scenario, hardware, plan and step time."""
    hw = scenario.profile.name
    gpus = f"{scenario.nodes} x {scenario.gpus_per_node} GPUs"
    t = scenario.training
    recompute = t.recompute if t.recompute != "none" else None
    if t.recompute_layers_chosen:
        recompute = f"{t.recompute}/{t.recompute_method}{t.recompute_num_layers}"
    plan = plan_label(scenario.parallel, scenario.dp, t.micro_batch, recompute)
    batch = f"batch {t.global_batch} x {scenario.model.seq_len} tokens {t.dtype}"
    return f"{scenario.name}: {hw}, {gpus}, {plan}, {batch}, step {step_time_s * 1e3:.1f} ms"

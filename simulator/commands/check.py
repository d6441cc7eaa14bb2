"""``clustersim check SCENARIO``: load, validate and build the schedule; print a one-screen summary."""

from __future__ import annotations

import argparse

from simulator.commands import add_hardware_option
from simulator.config.scenario import load_scenario
from simulator.costs.nccl_constants import constants_from_overrides
from simulator.hardware.topology import build_topology
from simulator.report.inputs import domain_inputs
from simulator.report.summary import domain_fill_lines, recompute_to_fit_line
from simulator.schedule.build import build_schedule, role_comm_bytes
from simulator.schedule.flops import active_param_count, param_count
from simulator.schedule.memory import block_recompute_to_fit, memory_per_gpu
from simulator.sweep.plans import balanced_split_of
from simulator.units import GiB


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("check", help="validate a scenario and build its schedule")
    parser.add_argument("scenario", help="scenario YAML")
    add_hardware_option(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    scn = load_scenario(args.scenario, args.hardware)
    sched = build_schedule(scn)
    # everything `run` builds before it simulates, so that check refuses what run would
    topo = build_topology(scn.profile, scn.nodes)
    constants_from_overrides(scn.profile.nccl_overrides, source=scn.profile.name, version=scn.profile.nccl_version)
    m, t, p = scn.model, scn.training, scn.parallel
    mem = memory_per_gpu(scn)
    lines = [
        f"scenario  {scn.name}: OK",
        f"hardware  {scn.profile.name}: {scn.nodes} nodes x {scn.gpus_per_node} GPUs = {scn.n_gpus} GPUs"
        + (f" (gpus_per_node: the first {scn.first_gpus} of each node)" if scn.first_gpus is not None else "")
        + (f" (nodes_per_nvlink_domain: {scn.domain_segment} nodes of each NVLink domain)"
           if scn.domain_segment is not None else ""),
        f"model     {m.preset or 'custom'}: {param_count(m) / 1e9:.2f}B params, {m.layers} layers, h={m.hidden}, "
        f"heads={m.heads}/{m.kv_heads}, ffn={m.ffn_hidden} ({m.mlp}), vocab={m.vocab}, seq={m.seq_len}",
        *([f"experts   {m.experts} x ffn {m.moe_ffn_hidden}"
           f"{f' in a {m.moe_latent_size}-wide latent space' if m.moe_latent_size else ''}, top-{m.top_k}, "
           f"{m.shared_experts} shared, "
           f"{m.first_dense_layers} dense layers first; {active_param_count(m) / 1e9:.2f}B active params; "
           f"ep={p.ep} etp={p.expert_tp} expert-dp={scn.expert_dp} ({p.moe_dispatcher} dispatcher)"] if m.moe else []),
        *([f"hybrid    {m.layer_pattern.count('M')} Mamba2 (heads {m.mamba_heads} x {m.mamba_head_dim}, state "
           f"{m.mamba_state}, groups {m.mamba_groups}), {m.layer_pattern.count('*')} attention, "
           f"{m.layer_pattern.count('E')} MoE, {m.layer_pattern.count('-')} MLP blocks"] if m.hybrid else []),
        f"training  micro_batch={t.micro_batch} global_batch={t.global_batch} dtype={t.dtype} "
        f"recompute={t.recompute}"
        + (f" ({t.recompute_method}, {t.recompute_num_layers} layers)"
           if t.recompute_layers_chosen else ""),
        f"plan      tp={p.tp}{' +SP' if p.sp_enabled else ''} (overlap {p.tp_overlap}) cp={p.cp} ({p.cp_comm}) "
        f"ulysses={p.ulysses} pp={p.pp} ({p.pp_schedule}, vp={p.vp}) dp={scn.dp} zero={p.zero}",
        f"          order {list(sched.grid.axes)}, stage layers {list(scn.stage_layers)}, "
        f"{scn.n_micro} micro-batches per step",
        *([f"          stages evened out by pp_layers: {evened} (from the passes' lower-bound times; "
           "`run` reads it off the replay)"] if (evened := balanced_split_of(scn)) else []),
        f"memory    {mem.total / GiB:.1f} GiB per GPU on stage {mem.stage} (params {mem.params / GiB:.1f}, "
        f"grads {mem.grads / GiB:.1f}, optimizer {mem.optimizer / GiB:.1f}, activations {mem.activations / GiB:.1f}; "
        f"peak allocated {mem.allocated / GiB:.1f}, reserved {mem.reserved / GiB:.1f}, "
        f"CUDA context + NCCL {mem.non_pytorch / GiB:.1f}) "
        f"of {mem.hbm_bytes / GiB:.0f} GiB: {'fits' if mem.fits else 'DOES NOT FIT'}",
        *([f"          {recompute_to_fit_line(n)}"] if not mem.fits and (n := block_recompute_to_fit(scn)) else []),
        f"topology  {topo.n_gpus} GPUs, {len(topo.kind)} link directions",
        *(f"          {line.strip()}" for line in domain_fill_lines(domain_inputs(scn))),
        f"schedule  {len(sched.programs)} role programs, {sched.n_ops} ops",
    ]
    for role, ops in sched.programs.items():
        vol = role_comm_bytes(ops, sched.grid)
        lines.append(f"  {role:10s} {len(ops):7d} ops  " + "  ".join(f"{k} {v / GiB:.2f} GiB" for k, v in vol.items() if v))
    from simulator.report.inputs import inputs_line, scenario_inputs

    lines.append(inputs_line(scenario_inputs(scn)))
    print("\n".join(lines))
    return 0

"""Generate docs/scenario-reference.md from the pydantic schema of a scenario.

    python docs/gen_scenario_reference.py          # rewrite the file
    python docs/gen_scenario_reference.py --check  # exit 1 if the file is out of date

The schema (simulator/config/scenario.py ScenarioFile and the models it nests) is the single
source of truth; tests/unit/test_scenario_reference.py fails when the committed page differs.
"""

from __future__ import annotations

import sys
import typing
from pathlib import Path

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "scenario-reference.md"


# What each key means, for keys whose schema field carries no description of its own (the
# wording follows DESIGN.md's scenario contract).
NOTES = {
    "name": "scenario name, echoed in reports",
    "hardware": "a profile in hardware_profiles/ (e.g. dgx-h100) or a path to a profile YAML",
    "nodes": "GPUs = nodes x the profile's GPUs per node (or x gpus_per_node)",
    "gpus_per_node": "use the first N GPUs of every node (2 or 4 GPUs of an 8-GPU server, CUDA_VISIBLE_DEVICES=0,1); "
                     "1 <= N <= the profile's GPUs per node; null = all. The used GPUs keep their NVSwitch "
                     "bandwidth, their mesh links to each other and their own NICs (docs/architecture.md)",
    "nodes_per_nvlink_domain": "a job holding K consecutive nodes of each multi-node NVLink domain (Slurm's "
                               "--segment=K on GB200 NVL72): its NVLink domains are K nodes wide, and ranks of two "
                               "segments talk over the network; nodes must be a multiple of K, 1 <= K <= the "
                               "profile's nodes per domain; null = the job fills whole domains",
    "preset": "a model preset; explicit fields override it",
    "layers": "transformer layers", "hidden": "hidden size", "heads": "query heads",
    "kv_heads": "key/value heads (GQA); 0 = heads", "ffn_hidden": "MLP inner size; 0 = the mlp's rule",
    "vocab": "vocabulary size",
    "mlp": "the MLP's activation: swiglu (gate and up projections, three matrices), gelu or squared_relu "
           "(relu(x)², Nemotron-4 and Nemotron-H; two matrices each)",
    "seq_len": "tokens per sequence",
    "micro_batch": "sequences per micro-batch", "global_batch": "sequences per optimizer step",
    "dtype": "fp8 runs GEMMs in fp8, the rest in bf16", "recompute": "activation recomputation",
    "tp": "tensor-parallel degree", "sequence_parallel": "Megatron sequence parallelism with TP",
    "tp_overlap": "TP communication/GEMM overlap (TransformerEngine userbuffers): one method for every GEMM "
                  "(bulk, pipelined, ring_exchange), or te_default, TE's per-GEMM defaults as Megatron's "
                  "--tp-comm-overlap runs them", "pp": "pipeline stages",
    "pp_schedule": "pipeline schedule (interleaved when vp > 1 and this is not given)",
    "vp": "virtual stages per rank (interleaved)",
    "cp": "context-parallel degree", "cp_comm": "ring (plain Ring Attention) | p2p (Megatron, load-balanced) | variants",
    "ulysses": "DeepSpeed-Ulysses degree; with cp > 1 (cp_comm ring or p2p) USP: Ulysses inside, the CP ring "
               "across (list ulysses before cp in order)", "zero": "ZeRO stage", "order": "rank placement, innermost axis first",
    "dp": "data-parallel degree; derived, checked when given",
    "model": "model shape (a preset and/or explicit fields)", "training": "batch, precision, recompute, kernels",
    "parallel": "the parallel plan; every key optional",
    "tied_embeddings": "the LM head shares the input embedding's weights",
    "position_embedding": "rope (no weights) or learned position embeddings (GPT-2/3)",
    "fused_kernels": "fused bias/dropout/residual/norm/activation kernels (Megatron-Core, TE); false = one "
                     "memory-bound kernel each, as older stacks ran",
    "zero3_impl": "ZeRO-3 as DeepSpeed runs it (per-parameter, prefetch buckets), as DeepSpeed's 2021 "
                  "releases ran it (deepspeed-2021: a collective per parameter through a rank list, a device "
                  "synchronisation at every fetch) or as FSDP2 (per block)",
    "pp_layers": "transformer layers per pipeline stage; default: as even as possible",
    "grad_reduce_dtype": "dtype of the gradient reduction (Megatron's grad_reduce_in_fp32 = fp32)",
    "gradient_accumulation_fusion": "the weight-gradient GEMM accumulates into the gradient buffer (Megatron --gradient-accumulation-fusion, 2022 on); false: autograd adds each micro-batch's weight gradients in a kernel per tensor (Megatron-LM 2020-2021)",
    "zero1_impl": "ZeRO-1 as Megatron's distributed optimizer runs it (ReduceScatter of the gradients, AllGather "
                  "of the parameters), as DeepSpeed's BF16_Optimizer (deepspeed-bf16, BLOOM: fp32 gradients "
                  "accumulated every micro-batch and AllReduced whole) or as InternLM's HybridZeroOptimizer of "
                  "2023 (internlm: bf16 gradients AllReduced whole in buckets, then one broadcast of its shard "
                  "per rank that owns parameters, in rank order)",
    "scatter_gather_tensors_in_pipeline": "without sequence parallelism: each TP rank sends 1/tp of the "
                                          "activation between pipeline stages and the receiver AllGathers it "
                                          "(Megatron-LM 2021-2023, DeepSpeed's pipeline engine); false: the "
                                          "whole activation (Megatron-Core)",
    "pp_engine": "megatron: Megatron's pipeline schedule; deepspeed: DeepSpeed's PipelineEngine, which frees a "
                 "partitioned stage output once sent and AllGathers it back over tp before its backward "
                 "(Megatron-DeepSpeed: BLOOM, MT-NLG, vTrain)",
    "async_tensor_model_parallel_allreduce": "without sequence parallelism: the AllReduce of a column-parallel "
                                             "layer's input gradient overlaps its wgrad GEMM (Megatron-LM since "
                                             "Sep 2021); false: it follows the layer's backward, blocking "
                                             "(Megatron-LM 2020, BLOOM's Megatron-DeepSpeed)",
    "tp_overlap_sm_margin": "TransformerEngine's set_sm_margin for its pipeline and bulk overlaps: the GEMM beside "
                            "the communication kernel runs on SMs - 16 (TE >= 2.0's default); false: on every SM, "
                            "slowed by overlap_slowdown while communication runs (TE 1.x's default)",
    "tp_overlap_gemm_sms": "a tuned Userbuffers configuration (NeMo's TransformerLayerTPOverlapCfg): per GEMM of TE's "
                           "overlap table (qkv_dgrad, fc2_fprop, ...), the SMs its bulk or pipeline communication kernel "
                           "withholds from it: the config's num_sm where it sets set_sm_margin, 0 where not (the GEMM "
                           "on every SM, slowed by overlap_slowdown while communication runs); unnamed GEMMs keep "
                           "TE's default",
    "tp_overlap_methods": "the same configuration's method per GEMM where it is not TE's default (tp_overlap: "
                          "te_default): proj_fprop / fc2_fprop pipeline | ring_exchange (the tuned configs' "
                          "RingExchangeOverlapCfg); qkv_dgrad / fc1_dgrad bulk | pipeline | ring_exchange, where a "
                          "non-bulk method reduces dX inside the dgrad GEMM (TE's ub_overlap_rs_dgrad, Megatron-Core's "
                          "tp_comm_overlap_rs_dgrad) and the input is re-gathered by NCCL; the AllGather-GEMMs "
                          "ring_exchange only, the wgrads bulk only",
    "ddp_grad_check": "Megatron-Core DDP's check_for_nan_in_grad before each bucket's collective: none | norm (the bucket's norm only: Megatron-Core 0.10-0.11 with reruns disabled) | nan (norm, isnan and one blocking host read per bucket: 0.6-0.9) | nan_inf (isnan and isinf, two reads: 0.12 on); zero 0, or zero 1 with zero1_impl megatron",
    "ddp_grad_scaling": "Megatron-Core DDP's 1/(dp x cp) average: none (not priced) | buffer (average_in_collective off: each bucket multiplied in place before its collective, read + write) | collective (average_in_collective: NCCL AVG; expert buckets still scaled by edp/(dp x cp) where not 1)",
    "ddp_bucket_elements": "DDP / distributed-optimizer bucket size in elements; default max(4e7, 1e6 x dp)",
    "zero3_prefetch_bucket_elements": "DeepSpeed stage3_prefetch_bucket_size",
    "zero3_max_live_parameters": "DeepSpeed stage3_max_live_parameters",
    "zero3_param_persistence_threshold": "DeepSpeed stage3_param_persistence_threshold: smaller parameters stay "
                                         "gathered",
    "zero3_reduce_bucket_elements": "DeepSpeed reduce_bucket_size",
    "zero3_max_reuse_distance": "DeepSpeed stage3_max_reuse_distance",
    "zero3_contiguous_gradients": "zero3_impl deepspeed-2021: DeepSpeed contiguous_gradients; true: each gradient "
                                  "reduce-scattered through a rank list; false: each IPG bucket flattened and "
                                  "AllReduced whole; default: false (DeepSpeed 0.3.12-0.4.x's stage-3 default)",
    "cp_a2a": "cp_comm a2a+p2p: All-to-All degree inside each ring position (TE "
              "hierarchical_context_parallel_sizes[0]); default: largest power of two <= 8 dividing cp and the "
              "heads per TP rank",
    "cp_qkv_format": "cp_comm p2p: the layout TransformerEngine's CP attention runs in; sbhd: Megatron's (TE >= "
                     "1.7); bshd: TE <= 1.6 (NeMo 24.03-24.05), q, k, v transposed in and the output out, the ring "
                     "steps' KV halves copied, dK and dV concatenated",
    "overlap_param_gather": "ZeRO-1/2: the parameter AllGather hides under the next forward (Megatron "
                            "--overlap-param-gather) instead of following the optimizer step",
    "overlap_p2p_comm": "interleaved schedule: each pass's pipeline send/recv is issued after the pass and "
                        "waited for only by the pass that consumes it (Megatron --overlap-p2p-communication) "
                        "instead of one batched, blocking exchange per step",
    "fsdp_reshard_after_forward": "FSDP2: free gathered parameters after forward and gather them again in backward",
    "fsdp_grad_sync": "FSDP2: microbatch: every backward reduce-scatters the gradients and reshards; optim_step: "
                      "only the last backward before the optimizer step does, parameters stay gathered and "
                      "gradients accumulate unsharded until then (NeMo AutoModel's MoE models under PP, "
                      "MoEFSDPSyncMixin, or without PP with enable_fsdp_optimizations); no_sync: only the last "
                      "micro-batch's backward reduce-scatters, resharding as usual (FSDP2 "
                      "set_requires_gradient_sync(False) on the others, AutoModel's get_sync_ctx)",
    "head_dim": "query/key head dimension (Megatron kv_channels); 0 = hidden / heads; under MLA the no-RoPE part",
}


# Hardware profile keys (simulator/config/hardware.py HardwareProfile), by their path in the
# profile: what each means and its unit; every bundled profile cites a source per number.
PROFILE_NOTES = {
    "name": "profile name (`hardware:` of a scenario)", "description": "one line shown in reports",
    "provenance": "where the numbers come from", "nccl": "NCCL tuner overrides and `version` (what `clustersim "
    "calibrate` writes); they time the chosen algorithm, not the choice; `tuner_plugin` (e.g. "
    "`aws-ofi-nccl-1.16:p5.48xlarge`) names a tuner plugin the runs load, whose choice comes first", "uncertainty": "the fit's residual "
    "quantiles per collective class (written by `clustersim calibrate`)",
    "uncertainty.busbw_log_residual": "[q10, q90] of ln(predicted / measured busbw) per class, e.g. "
    "`allreduce, across nodes, >= 1 MiB`", "uncertainty.rows": "rows the fit had per class",
    "uncertainty.fitted_ranks": "[smallest, largest] communicator (ranks) the fit measured per scope (`one node`, "
    "`across nodes`); outside it `collective` takes the wider of the residual and leave-one-system-out bands",
    "gpu": "the accelerator", "node": "one server (or compute tray)", "scale_out": "the network between nodes",
    "gpu.gemm_efficiency": "achieved fraction of peak by GEMM FLOPs, log-interpolated; its last point is the plateau that the shape model (tiles and waves on `sms`) spreads over GEMMs with a known m×n×k",
    "node.gpus": "GPUs per node", "node.scale_up": "the GPU-to-GPU fabric", "node.pcie": "host links of GPUs and NICs",
    "node.nics": "scale-out NICs of one node", "node.cpu_vendor": "host CPU (NCCL's net overhead and LL caps)",
    "node.host_time_scale": "the host's time per framework op against a DGX H100's Xeon (1); scales every host cost of a step (costs/host.py)",
    "node.board_gpus": "GPUs of the physical node when a run uses its first `gpus` (set by a scenario's gpus_per_node); null = gpus",
    "node.scale_up.link_GBps": "per GPU per direction into the switch (nvswitch) or per peer link (mesh)",
    "node.scale_up.links_per_gpu": "NVLink/xGMI links per GPU (NCCL's per-link bandwidth model)",
    "node.scale_up.latency_us": "GPU-to-GPU hop latency", "node.scale_up.switches": "switch chips (informational)",
    "node.scale_up.nvls": "in-switch reduction (NVLink SHARP)",
    "node.scale_up.domain_gpus": "GPUs of one NVLink domain when it spans nodes (multi-node NVLink, MNNVL): "
                                 "72 for a GB200 NVL72 rack of 18 four-GPU trays; consecutive nodes form a domain, "
                                 "routes inside it are NVLink and NCCL treats it as one node; null = the node",
    "node.scale_up.efficiency": "achievable fraction of the link for NCCL's copy kernels",
    "node.scale_up.nvls_reduce_GBps": "in-switch (NVLS) reduction rate per GPU, GB/s of ReduceScatter bus bytes: "
                                      "an NVLS AllReduce's busbw is at most twice it at any group size; null = links only",
    "node.nics.count": "NICs per node (rail i = NIC i)", "node.nics.Gbps": "line rate per NIC",
    "node.nics.latency_us": "one-way NIC and software latency", "node.nics.efficiency": "achievable fraction of line rate",
    "node.nics.transport": "selects the deployed-fabric constants (simulator/costs/deployed.py)",
    "node.nics.local_gpus": "per NIC (in NCCL's device order), the local GPU on its PCIe host bridge, when each NIC "
                            "has one: where rings enter and leave the node; the other GPUs share the NICs round robin "
                            "(null: NIC r serves GPUs r*gpus/count..)",
    "node.nics.gpu_path": "PCIe path from a GPU to its NIC as NCCL classes it: pix (one switch), pxb (switches), "
                          "p2c (a Grace superchip's GPU over C2C to its CPU's PCIe: phb before NCCL 2.27), "
                          "phb (through the CPU's host bridge), sys (across sockets); beyond pxb NCCL runs no LL128 "
                          "across nodes (from 2.27 on Hopper and later, beyond p2c)",
    "node.nics.gpu_paths": "per local GPU, its path to the NIC it sends through, where the GPUs differ (null: "
                           "gpu_path for every GPU); a GPU at sys also crosses the CPU interconnect (node.pcie.sys_GBps)",
    "node.nics.gdr_level": "NCCL_NET_GDR_LEVEL as deployed: GPUDirect RDMA for a GPU no farther from its NIC, host "
                           "memory staging beyond (null: NCCL's default, pxb)",
    "node.pcie.sys_GBps": "per direction, the CPU interconnect a sys path crosses (between sockets or NUMA domains); "
                          "null: NCCL's figure for the CPU vendor (topo.h: amd 16, arm 6, intel 10)",
    "node.pcie.phb_p2p_GBps": "per direction, what a GPU and its NIC exchange peer to peer through the CPU's host bridge "
                              "(a GPU on path phb with GPUDirect RDMA): that GPU's PCIe link carries its network traffic "
                              "at this rate; null: the link's own (perlmutter-a100 sets it, derived from measured rings)",
    "node.nics.rdzv_proto": "Slingshot only: the libfabric CXI provider's rendezvous protocol (FI_CXI_RDZV_PROTO); "
                            "alt_read costs a host-software round per network message (net_message_us)",
    "node.nics.ports": "network ports per NIC, Gbps being their sum: NCCL before 2.20 gives each port its own "
                       "network device (and channels), 2.20 onwards merges them into one",
    "scale_out.kind": "rail_fat_tree (a leaf per rail per unit), fat_tree (one leaf per unit), dragonfly (groups "
                      "joined by global links, routed on the fabric graph) or none",
    "scale_out.nodes_per_unit": "nodes under one leaf group (scalable unit; a dragonfly group)",
    "scale_out.spines": "spine switches above the leaves",
    "scale_out.oversubscription": "leaf downlink / uplink bandwidth",
    "scale_out.switch_latency_us": "per switch hop", "scale_out.cable_latency_us": "per cable",
}


def _type_name(annotation: typing.Any) -> str:
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return " \\| ".join(f"`{a}`" for a in typing.get_args(annotation))
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return " or ".join(_type_name(a) for a in typing.get_args(annotation))
    if origin in (tuple, list):
        args = [a for a in typing.get_args(annotation) if a is not Ellipsis]
        return f"list of {_type_name(args[0])}" if args else "list"
    if origin is dict:
        return "mapping"
    if isinstance(annotation, type):
        if issubclass(annotation, BaseModel):
            return "mapping"
        return {"NoneType": "null"}.get(annotation.__name__, annotation.__name__)
    return str(annotation).replace("typing.", "")


def _default(field: typing.Any) -> str:
    if field.is_required():
        return "**required**"
    value = field.default
    if value is PydanticUndefined:
        value = field.default_factory() if field.default_factory else None
    if isinstance(value, BaseModel):
        return "(see below)"
    if isinstance(value, tuple):
        value = list(value)
    return f"`{value}`" if value is not None else "`null`"


def _constraints(field: typing.Any) -> str:
    parts = []
    for m in field.metadata:
        for attr, sym in (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<="), ("min_length", "min length")):
            v = getattr(m, attr, None)
            if v is not None:
                parts.append(f"{sym} {v}")
    return ", ".join(parts)


def _section(model: type[BaseModel], prefix: str, out: list[str], seen: set[type],
             notes: dict[str, str] | None = None) -> None:
    nested: list[tuple[str, type[BaseModel]]] = []
    out.append(f"### `{prefix or '(top level)'}`\n")
    if model.__doc__:
        out.append(" ".join(model.__doc__.split()) + "\n")
    out.append("| key | type | default | constraint | description |")
    out.append("|---|---|---|---|---|")
    for name, field in model.model_fields.items():
        ann = field.annotation
        sub = [a for a in (ann, *typing.get_args(ann)) if isinstance(a, type) and issubclass(a, BaseModel)]
        if sub and sub[0] not in seen:
            nested.append((f"{prefix}.{name}" if prefix else name, sub[0]))
        path = f"{prefix}.{name}" if prefix else name
        desc = field.description or (NOTES.get(name, "") if notes is None else notes.get(path, notes.get(name, "")))
        desc = desc.replace("|", "\\|")
        out.append(f"| `{name}` | {_type_name(ann)} | {_default(field)} | {_constraints(field)} | {desc} |")
    out.append("")
    for path, sub_model in nested:
        seen.add(sub_model)
        _section(sub_model, path, out, seen, notes)


def render() -> str:
    from simulator.config.limits import MAX_GPUS, MAX_LAYER_PASSES, MAX_LAYERS
    from simulator.config.scenario import ScenarioFile
    from simulator.config.workload import PRESETS

    out = [
        "# Scenario reference",
        "",
        "<!-- generated by docs/gen_scenario_reference.py from the pydantic schema; do not edit by hand -->",
        "",
        "A scenario YAML describes the model, the training settings, the cluster and the parallel",
        "plan of one run. Unknown keys are rejected, with the nearest keys of their block (`parallel.tpp: unknown",
        "key; did you mean tp or pp?`); units are in key names. Every bundled example in",
        "`scenarios/` is commented; `clustersim check SCENARIO` validates one without running it.",
        "",
        "Model presets: " + ", ".join(f"`{p}`" for p in sorted(PRESETS)) + ". A preset supplies every model field",
        "marked required below; explicit fields override the preset's.",
        "",
        "Types are strict: a whole number is written as one (`tp: 8`, not `8.0`, `\"8\"` or `true`), a",
        "boolean as `true`/`false`, and every number is finite (no `.inf`, `.nan`). Sizes that cannot",
        "be meant are refused up front with the limit: more than "
        f"{MAX_GPUS:,} GPUs, {MAX_LAYERS:,} layers, or {MAX_LAYER_PASSES:,}",
        "micro-batches x layers per pipeline stage (`simulator/config/limits.py` gives the reasons).",
        "A `hardware:` value with a `/` or ending in `.yaml` is a path (relative to the scenario's",
        "folder); anything else is the name of a bundled profile.",
        "",
        "## Keys",
        "",
    ]
    _section(ScenarioFile, "", out, {ScenarioFile})
    out += [
        "## Hardware profile keys",
        "",
        "A profile (`hardware_profiles/<name>.yaml`, or your own file; an overlay names its `base:` and",
        "changes some keys) describes a GPU, a node and the network between nodes",
        "(`simulator/config/hardware.py`). Units are in the key names: `_GBps` decimal GB/s per",
        "direction, `_Gbps` line rate, `_us`, `_TFLOPS` dense, `_GiB`. A scenario's `nodes` counts",
        "the profile's nodes: for `gb200-nvl72` and `gb300-nvl72` a node is a 4-GPU compute tray and 18 of them are one",
        "rack (`node.scale_up.domain_gpus: 72`).",
        "",
    ]
    from simulator.config.hardware import HardwareProfile

    _section(HardwareProfile, "", out, {HardwareProfile}, PROFILE_NOTES)
    return "\n".join(out).rstrip() + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if not OUT.exists() or OUT.read_text() != text:
            print(f"{OUT.relative_to(ROOT)} is out of date; run python docs/gen_scenario_reference.py")
            return 1
        return 0
    OUT.write_text(text)
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main(sys.argv[1:]))

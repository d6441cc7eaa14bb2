"""What a result was computed from, echoed at the top of every JSON and table clustersim writes.

A result file should be reproducible from itself: the scenario (its path as given and the
SHA-256 of its bytes, so an edited file is told apart from the one that was run), the hardware
profile (its name, and the path and SHA-256 of the file when it is not a bundled one, such as a
``calibrate`` overlay), the parallel plan as validated (defaults filled in), and the clustersim
version. Everything here is the same for two identical runs; what differs between them (the
wall time) goes under ``meta``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def file_inputs(path: str | Path | None) -> dict[str, Any]:
    """``{"path": ..., "sha256": ...}`` of an input file (sha256 None when it cannot be read)."""
    from simulator.files import sha256_file

    if not path:
        return {"path": None, "sha256": None}
    try:
        digest = sha256_file(path)
    except OSError:
        digest = None
    return {"path": str(path), "sha256": digest}


def profile_file(spec: str, scenario_source: str | None = None) -> Path | None:
    """The file behind a ``hardware:`` value when it is a path rather than a bundled name
    (relative paths are tried from the working directory, then from the scenario's folder)."""
    from simulator.config.hardware import PROFILE_DIR, profile_path

    p = profile_path(spec)
    if p.parent == PROFILE_DIR and p.is_file() and not Path(spec).suffix:
        return None  # a bundled profile, named
    if p.is_file():
        return p
    if scenario_source:
        candidate = Path(scenario_source).parent / spec
        if candidate.is_file():
            return candidate
    return None


def hardware_inputs(spec: str, profile_name: str, scenario_source: str | None = None) -> dict[str, Any]:
    """Profile name, and the file (path and SHA-256) when the profile is not a bundled name."""
    f = profile_file(spec, scenario_source)
    out: dict[str, Any] = {"profile": profile_name}
    if f is not None:
        out |= file_inputs(f)
    return out


def version() -> str:
    from simulator import __version__

    return __version__


def plan_inputs(scenario: Any) -> dict[str, Any]:
    """The validated parallel plan (every knob, defaults filled in) and the derived degrees."""
    plan = scenario.parallel.model_dump(mode="json")
    plan |= {"dp": scenario.dp, "micro_batch": scenario.training.micro_batch,
             "global_batch": scenario.training.global_batch, "micro_batches_per_step": scenario.n_micro}
    return plan


def workload_inputs(scenario: Any) -> dict[str, Any]:
    """The model (its preset, if named), the sequence length and the precision: with the plan's
    global batch, what one step processes; and where attention layers see a sliding window
    shorter than the sequence, the window and how many layers have it."""
    model, training = scenario.model, scenario.training
    layers = ({"recompute_method": training.recompute_method, "recompute_num_layers": training.recompute_num_layers}
              if training.recompute_layers_chosen else {})
    windowed = sum(1 for i in range(model.layers) if 0 < model.attention_window(i) < model.seq_len)
    window = {"sliding_window": {"keys": model.sliding_window, "layers": windowed}} if windowed else {}
    return {"preset": model.preset, "seq_len": model.seq_len, "dtype": training.dtype,
            "recompute": training.recompute, **layers, **window}


def nccl_inputs(profile: Any) -> dict[str, Any]:
    """``nccl_version``: the profile's ``nccl.version`` (None: not set); ``nccl_tables``: the
    NCCL release whose tuner tables price the collectives (the newest encoded when not set)."""
    from simulator.costs.nccl_versions import resolve

    return {"nccl_version": profile.nccl_version, "nccl_tables": resolve(profile.nccl_version)}


def domain_inputs(scenario: Any) -> dict[str, Any]:
    """Where the profile's NVLink domain spans nodes (a GB200 NVL72 rack), how the job's nodes fill
    its domains: ``{"nvlink_domain": {"nodes": K, "full": F, "partial_nodes": R}}`` (the job packed
    into F whole domains of K nodes and R nodes of one more; K is the job's segment under
    ``nodes_per_nvlink_domain``); nothing for a node-sized domain."""
    profile = getattr(scenario, "profile", None)
    if profile is None or profile.node.scale_up.domain_gpus is None or profile.nodes_per_domain <= 1:
        return {}
    k = profile.nodes_per_domain
    return {"nvlink_domain": {"nodes": k, "full": scenario.nodes // k, "partial_nodes": scenario.nodes % k}}


def scenario_inputs(scenario: Any) -> dict[str, Any]:
    """The ``inputs`` block of a result computed from one scenario."""
    return {
        "scenario": {"name": scenario.name, **file_inputs(scenario.source or None)},
        "hardware": hardware_inputs(scenario.hardware, scenario.profile.name, scenario.source or None),
        "nodes": scenario.nodes,
        **({"gpus_per_node": scenario.first_gpus} if getattr(scenario, "first_gpus", None) is not None else {}),
        **({"nodes_per_nvlink_domain": scenario.domain_segment}
           if getattr(scenario, "domain_segment", None) is not None else {}),
        **domain_inputs(scenario),
        "gpus": scenario.n_gpus,
        "host_time_scale": scenario.profile.node.host_time_scale,
        "model": workload_inputs(scenario),
        **nccl_inputs(scenario.profile),
        "plan": plan_inputs(scenario),
        "clustersim": version(),
    }


def fixed_inputs_title(inputs: dict[str, Any]) -> str:
    """A plot title for plans compared on one scenario: what every plan shares (scenario,
    hardware, GPUs, model, global batch, NCCL tables), not the plan."""
    scn, hw, model, plan = (inputs.get(k) or {} for k in ("scenario", "hardware", "model", "plan"))
    parts = [hw.get("profile", "")]
    if inputs.get("gpus") and inputs.get("nodes"):
        parts.append(f"{inputs['nodes']} x {inputs['gpus'] // inputs['nodes']} GPUs")
    if model:
        parts.append(f"{model.get('preset') or 'custom model'} seq {model.get('seq_len')} {model.get('dtype')}")
    if plan.get("global_batch"):
        parts.append(f"global batch {plan['global_batch']}")
    if inputs.get("nccl_tables"):
        parts.append(f"NCCL {inputs.get('nccl_version') or inputs['nccl_tables']}")
    return f"{scn.get('name', '')}: " + ", ".join(p for p in parts if p)


def inputs_line(inputs: dict[str, Any], plan_label: str = "plan") -> str:
    """One line for a table: ``inputs: scenario PATH (sha256 1234abcd) hardware NAME ... clustersim V``;
    ``plan_label`` names the plan (a sweep's rows override the base scenario's)."""
    parts = []
    scn = inputs.get("scenario")
    if isinstance(scn, dict) and scn.get("path"):
        parts.append(f"scenario {scn['path']}" + (f" (sha256 {scn['sha256'][:12]})" if scn.get("sha256") else ""))
    hw = inputs.get("hardware")
    if isinstance(hw, dict):
        parts.append(f"hardware {hw['profile']}" + (f" from {hw['path']} (sha256 {hw['sha256'][:12]})"
                                                    if hw.get("path") and hw.get("sha256") else ""))
    if inputs.get("host_time_scale", 1.0) != 1.0:
        parts.append(f"host x{inputs['host_time_scale']:g} a DGX H100's time per op")
    if inputs.get("gpus") and inputs.get("nodes"):
        parts.append(f"{inputs['nodes']} nodes x {inputs['gpus'] // inputs['nodes']} GPUs = {inputs['gpus']} GPUs"
                     + (f", {inputs['nodes_per_nvlink_domain']} nodes per NVLink domain"
                        if inputs.get("nodes_per_nvlink_domain") else ""))
    if inputs.get("nccl_tables"):
        parts.append(f"NCCL {inputs.get('nccl_version') or inputs['nccl_tables']} tuner tables"
                     + (f" (those of {inputs['nccl_tables']})"
                        if inputs.get("nccl_version") not in (None, inputs["nccl_tables"]) else ""))
    model = inputs.get("model")
    if isinstance(model, dict):
        window = model.get("sliding_window")
        parts.append(f"model {model.get('preset') or 'custom'} seq {model.get('seq_len')} {model.get('dtype')}"
                     + (f" recompute {model['recompute']}" if model.get("recompute") not in (None, "none") else "")
                     + (f" window {window['keys']} on {window['layers']} layers" if isinstance(window, dict) else ""))
    plan = inputs.get("plan")
    if isinstance(plan, dict):
        knobs = [f"{k}={plan[k]}" for k in ("tp", "cp", "ulysses", "pp", "vp", "dp", "ep", "zero", "micro_batch",
                                            "global_batch")
                 if k in plan and plan[k] is not None]
        parts.append(f"{plan_label} " + " ".join(knobs))
    pins = [f"{k} {inputs[k]}" for k in ("algo", "proto") if inputs.get(k)]
    if pins:
        parts.append("pinned " + " ".join(pins))
    parts.append(f"clustersim {inputs.get('clustersim', version())}")
    return "inputs: " + "; ".join(parts)

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


def scenario_inputs(scenario: Any) -> dict[str, Any]:
    """The ``inputs`` block of a result computed from one scenario."""
    return {
        "scenario": {"name": scenario.name, **file_inputs(scenario.source or None)},
        "hardware": hardware_inputs(scenario.hardware, scenario.profile.name, scenario.source or None),
        "nodes": scenario.nodes,
        **({"gpus_per_node": scenario.first_gpus} if getattr(scenario, "first_gpus", None) is not None else {}),
        "plan": plan_inputs(scenario),
        "clustersim": version(),
    }


def inputs_line(inputs: dict[str, Any]) -> str:
    """One line for a table: ``inputs: scenario PATH (sha256 1234abcd) hardware NAME ... clustersim V``."""
    parts = []
    scn = inputs.get("scenario")
    if isinstance(scn, dict) and scn.get("path"):
        parts.append(f"scenario {scn['path']}" + (f" (sha256 {scn['sha256'][:12]})" if scn.get("sha256") else ""))
    hw = inputs.get("hardware")
    if isinstance(hw, dict):
        parts.append(f"hardware {hw['profile']}" + (f" from {hw['path']} (sha256 {hw['sha256'][:12]})"
                                                    if hw.get("path") and hw.get("sha256") else ""))
    plan = inputs.get("plan")
    if isinstance(plan, dict):
        knobs = [f"{k}={plan[k]}" for k in ("tp", "cp", "ulysses", "pp", "vp", "dp", "zero", "micro_batch")
                 if k in plan and plan[k] is not None]
        parts.append("plan " + " ".join(knobs))
    parts.append(f"clustersim {inputs.get('clustersim', version())}")
    return "inputs: " + "; ".join(parts)

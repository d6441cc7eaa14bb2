"""Calibrate a hardware profile from measurements: read the inputs, fit, return the overlay.

What ``clustersim calibrate`` does between parsing its arguments and writing its files (the
command keeps those and the before/after table). Collectives are fitted by
:mod:`~simulator.calibration.fit`, the GEMM curve and fp8 factor by
:mod:`~simulator.calibration.gemm_fit`, the fused-attention efficiencies by
:mod:`~simulator.calibration.attention_fit`; this module reads each input by its kind and gathers
their overlays, one-line summaries and warnings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from simulator.calibration.fit import MeasuredCollective
from simulator.calibration.kineto import AttentionEvent, GemmEvent
from simulator.config.hardware import HardwareProfile, apply_overlay, merge_overlay
from simulator.errors import InputError
from simulator.vocabulary import canonical_algo

_ALGO_PIN = re.compile(r"NCCL_ALGO(?:=|\s+set by environment to\s+)\s*([A-Za-z_,^]+)")


@dataclass(frozen=True)
class CalibrationInputs:
    measurements: list[MeasuredCollective]
    gemms: list[GemmEvent]
    attentions: list[AttentionEvent]
    files: list[tuple[str, str]]  # (path, what was read)
    skipped: list[str]  # runs of collectives the model does not predict


def _pinned_algo(text: str) -> str | None:
    m = _ALGO_PIN.search(text)
    if not m:
        return None
    from simulator.costs.collectives import FLOWED

    return canonical_algo(m.group(1), among=FLOWED)


def _is_trace(path: Path) -> bool:
    if path.name.endswith((".json", ".json.gz")):
        return True
    try:
        with path.open("rb") as fh:
            head = fh.read(64).lstrip()
    except OSError:
        return False
    return head[:1] in (b"{", b"\x1f")


def read_inputs(paths: list[str], profile: HardwareProfile, gpus_per_node: int | None,
                algo: str | None) -> CalibrationInputs:
    """Read every input file by its kind: a kernel table, a measured sweep CSV, a profiler trace
    or an nccl-tests log (runs of collectives the model does not predict are skipped with a note);
    ``algo`` pins the algorithm of every sweep, else a log's ``NCCL_ALGO`` does."""
    from simulator.calibration.fit import from_sweep
    from simulator.calibration.kernel_table import is_kernel_table, read_kernel_table
    from simulator.calibration.kineto import parse_kineto_trace
    from simulator.calibration.nccl_log import parse_nccl_log
    from simulator.costs.collectives import OPS

    measurements, gemms, attentions, files, skipped = [], [], [], [], []
    for name in paths:
        path = Path(name)
        if not path.is_file():
            raise InputError("no such file", source=name)
        if is_kernel_table(path):
            table = read_kernel_table(path)
            table_gemms, table_attention = table.gemm_events(), table.attention_events()
            gemms += table_gemms
            attentions += table_attention
            where = ", ".join(f"{k}: {v}" for k, v in table.header.items() if k in ("device", "date"))
            files.append((name, f"kernel table: {len(table_gemms)} GEMM and {len(table_attention)} "
                                f"attention rows" + (f" ({where})" if where else "")))
            continue
        if path.suffix.lower() == ".csv":
            from simulator.calibration.fit import from_measured_csv
            from simulator.calibration.measured import read_sweep

            sweep = read_sweep(path)
            m = from_measured_csv(sweep, profile, gpus_per_node=gpus_per_node, algo=algo)
            measurements.append(m)
            files.append((name, f"measured sweep CSV: {m.op} x{m.ranks} ({m.nodes} node(s)), {len(m.sizes)} rows"
                                + (f", NCCL_ALGO={m.algo}" if m.algo else "")))
            continue
        if _is_trace(path):
            trace = parse_kineto_trace(path)
            skipped += [f"{name}: {note}" for note in trace.unusable]
            if not (trace.gemms or trace.attentions or trace.collectives):
                raise InputError("no GEMM, attention or collective kernels found: expected a PyTorch profiler "
                                 "(Kineto) trace, this looks like another tool's Chrome trace", source=name)
            usable = [g for g in trace.gemms if g.flops and g.duration_s > 0]
            attn = [a for a in trace.attentions if a.flops and a.duration_s > 0]
            gemms += usable
            attentions += attn
            shapeless = len(trace.gemms) - len(usable) + len(trace.attentions) - len(attn)
            files.append((name, f"Kineto trace: {len(usable)} GEMM and {len(attn)} attention kernels with shapes"
                                + (f"; {shapeless} GEMM/attention kernels without a shape (no aten op with "
                                   "Input Dims above them: record_shapes off?) not used" if shapeless else "")
                                + (f"; {len(trace.collectives)} collective kernels not fitted (their durations "
                                   "include rendezvous waits and overlap; nccl-tests logs fit collectives)"
                                   if trace.collectives else "")))
            continue
        sweeps = parse_nccl_log(path)
        pin = algo or _pinned_algo(path.read_text(errors="replace"))
        used = [sw for sw in sweeps if sw.op in OPS]
        for sw in sweeps:
            if sw.op not in OPS:  # reduce_perf, gather_perf, ...: nothing of the model to fit
                skipped.append(f"{name}:{sw.first_line}: {sw.op} is not a collective the model predicts "
                               f"({', '.join(OPS)}); run skipped")
        for sw in used:
            measurements.append(from_sweep(sw, profile, gpus_per_node=gpus_per_node, algo=pin))
        rows = sum(len(m.sizes) for m in measurements[len(measurements) - len(used):])
        files.append((name, f"nccl-tests log: {len(used)} run(s), {rows} rows"
                            + (f", {len(sweeps) - len(used)} run(s) skipped" if len(used) < len(sweeps) else "")
                            + (f", NCCL_ALGO={pin}" if pin else "")))
    return CalibrationInputs(measurements, gemms, attentions, files, skipped)


def inconsistent_rows(profile: HardwareProfile, measurements: list[MeasuredCollective]) -> list[str]:
    """One warning per sweep whose time falls steeply with size on one NCCL path (the worst case)."""
    from simulator.calibration.consistency import time_drops
    from simulator.calibration.fit import Predictor

    pred = Predictor(profile)
    out = []
    for m in measurements:
        drops = time_drops(pred, m)
        if drops:
            worst = max(drops, key=lambda d: d.factor)
            more = f" ({len(drops)} rows like it)" if len(drops) > 1 else ""
            out.append(worst.describe() + more)
    return out


def non_finite(tree: object, path: str = "") -> list[str]:
    """Dotted paths of the NaN/inf numbers in a nested overlay mapping."""
    if isinstance(tree, dict):
        return [p for k, v in tree.items() for p in non_finite(v, f"{path}.{k}" if path else str(k))]
    if isinstance(tree, (list, tuple)):
        return [p for i, v in enumerate(tree) for p in non_finite(v, f"{path}[{i}]")]
    if isinstance(tree, float) and not np.isfinite(tree):
        return [path]
    return []


@dataclass(frozen=True)
class Calibration:
    """The fit of a profile to a set of inputs."""

    overlay: dict[str, Any]  # the fitted fields, nested as in a profile YAML
    profile: HardwareProfile  # the profile with the fitted collective fields applied
    summary: list[str]  # one line per parameter: datasheet -> fitted (or kept)
    warnings: list[str]


def calibrate(profile: HardwareProfile, inputs: CalibrationInputs, *, max_rows: int = 256, min_points: int = 3,
              causal: bool = True) -> Calibration:
    """Fit the collective model on the sweeps (each thinned to ``max_rows`` rows), the GEMM
    curve and fp8 factor on the GEMM kernels, the attention efficiencies on the attention kernels
    (``causal``: the traced mask). A non-finite fitted value is an input error: nothing the
    profile loader cannot read is returned."""
    from simulator.calibration.attention_fit import fit_attention_efficiency
    from simulator.calibration.fit import fit_collectives
    from simulator.calibration.gemm_fit import fit_fp8_scale, fit_gemm_curve

    if not inputs.measurements and not inputs.gemms and not inputs.attentions:
        read = inputs.skipped + [f"{Path(f).name}: {what}" for f, what in inputs.files]
        why = f" ({'; '.join(read)})" if read else ""
        raise InputError("nothing to fit: no collective rows and no GEMM or attention kernels with shapes in the "
                         f"inputs{why}", source=", ".join(f for f, _ in inputs.files))
    warnings: list[str] = inputs.skipped + inconsistent_rows(profile, inputs.measurements)
    base_version = profile.nccl_version
    overlay: dict[str, Any] = {}
    summary: list[str] = []
    profile, version, version_note = at_logged_release(profile, inputs.measurements)
    if version_note:
        (summary if version else warnings).append(version_note)
    if version and version != base_version:
        overlay["nccl"] = {"version": version}  # recorded with the fit
    fitted_profile = profile
    if inputs.measurements:
        fit_rows = [m.thinned(max_rows) for m in inputs.measurements]
        for full, used in zip(inputs.measurements, fit_rows):
            if used is not full:
                warnings.append(f"{full.source}: fitted on {len(used.sizes)} of its {len(full.sizes)} rows "
                                f"(one size in {-(-len(full.sizes) // max_rows)}; --max-rows)")
        fit = fit_collectives(profile, fit_rows, min_points=min_points)
        warnings += fit.warnings
        overlay = merge_overlay(overlay, fit.overlay)
        fitted_profile = fit.profile
        for fp in fit.params:
            state = f"{fp.datasheet:g} -> {fp.value:.4g}" if fp.fitted else f"kept {fp.datasheet:g}"
            summary.append(f"{fp.param.path}: {state} ({fp.points} sensitive rows)")
        from simulator.calibration.collective_intervals import fit_residuals

        residuals = fit_residuals(fitted_profile, inputs.measurements)
        if residuals:  # the 80% interval `collective` prints for this profile (report/intervals.py)
            overlay["uncertainty"] = residuals
            summary.append("uncertainty.busbw_log_residual: 80% band of the fit's residuals per class ("
                           + ", ".join(f"{c}: {n} rows" for c, n in residuals["rows"].items()) + ")")
            summary.append("uncertainty.fitted_ranks: the communicators the fit measured ("
                           + ", ".join(f"{scope}: {lo}" + (f"-{hi}" if hi != lo else "") + " ranks"
                                       for scope, (lo, hi) in residuals["fitted_ranks"].items())
                           + "); outside them the interval is the wider of the residual and "
                           "leave-one-system-out bands")
    if inputs.gemms:
        gfit = fit_gemm_curve(inputs.gemms, profile)
        warnings += gfit.warnings
        if gfit.points:
            overlay.setdefault("gpu", {})["gemm_efficiency"] = gfit.points
            summary.append(f"gpu.gemm_efficiency: {len(gfit.points)} points from {gfit.samples} GEMM kernels")
        scale, n_fp8, fp8_warnings = fit_fp8_scale(inputs.gemms, profile, gfit.points or None)
        warnings += fp8_warnings
        if scale is not None:
            overlay.setdefault("gpu", {})["fp8_gemm_efficiency_scale"] = scale
            summary.append(f"gpu.fp8_gemm_efficiency_scale: {profile.gpu.fp8_gemm_efficiency_scale:g} -> {scale:g} "
                           f"({n_fp8} fp8 GEMM kernels)")
    elif inputs.measurements:
        warnings.append("gpu.gemm_efficiency: no profiler trace with GEMM kernels given; left at the datasheet curve")
    if inputs.attentions:
        afit = fit_attention_efficiency(inputs.attentions, profile, causal=causal)
        warnings += afit.warnings
        if afit.overlay:
            overlay.setdefault("gpu", {})["attention_efficiency"] = afit.overlay
        for (kernel, direction), n in sorted(afit.samples.items()):
            was = next((e for k, e in profile.gpu.attention_efficiency.items() if k == kernel), None)
            before = f"{getattr(was, direction):g}" if was is not None else "none"
            summary.append(f"gpu.attention_efficiency.{kernel}.{direction}: {before} -> "
                           f"{afit.overlay[kernel][direction]:g} ({n} kernels, {'causal' if causal else 'full'} mask)")

    bad = non_finite(overlay)
    if bad:  # never write a number the profile loader (or a reader of the file) cannot use
        raise InputError(f"the fit gave a non-finite value for {', '.join(bad)}; the inputs cannot determine it "
                         "(check the measurements for zero or missing durations)",
                         source=", ".join(f for f, _ in inputs.files))
    return Calibration(overlay, fitted_profile, summary, warnings)


def at_logged_release(profile: HardwareProfile, measurements: list[MeasuredCollective]
                      ) -> tuple[HardwareProfile, str | None, str | None]:
    """The profile with the tuner tables of the NCCL release the measurements' headers name, where
    they all name the same one (the NCCL that ran them; :func:`logged_nccl_version`), else the
    profile as it is; with that release and the line saying so."""
    version, note = logged_nccl_version(measurements)
    if version and version != profile.nccl_version:
        profile = apply_overlay(profile, {"nccl": {"version": version}}, source="the logs' NCCL version")
    return profile, version, note


def logged_nccl_version(measurements: list[MeasuredCollective]) -> tuple[str | None, str | None]:
    """The NCCL release the measurements' headers name, when they all name the same one, and a
    line saying so (or, when they name several, a warning naming them; None, None if none does)."""
    named: dict[str, list[str]] = {}
    for m in measurements:
        if m.nccl_version:
            named.setdefault(m.nccl_version, []).append(Path(m.source).name)
    if not named:
        return None, None
    if len(named) > 1:
        which = "; ".join(f"{v}: {', '.join(sorted(set(srcs)))}" for v, srcs in sorted(named.items()))
        return None, (f"nccl.version: the logs name different NCCL releases ({which}); none recorded, the fit "
                      "uses the profile's tables (fit each release's logs separately to keep their tables)")
    (version, srcs), = named.items()
    unnamed = len(measurements) - len(srcs)
    return version, (f"nccl.version: {version} (named by {len(srcs)} sweep(s)"
                     + (f"; {unnamed} name no release" if unnamed else "") + ")")


def overlay_document(base: str, overlay: dict, provenance: str, comments: list[str]) -> str:
    """The overlay YAML: comment header, ``base:``, ``provenance:``, then the fitted fields."""
    body = {"base": base, "provenance": provenance, **overlay}
    head = "".join(f"# {c}\n" for c in comments)
    return head + yaml.safe_dump(body, sort_keys=False, default_flow_style=False, width=100)

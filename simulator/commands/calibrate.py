"""`clustersim calibrate LOG_OR_TRACE... --hardware P -o OUT.yaml`: fit a profile to measurements.

nccl-tests / rccl-tests logs (any ``*_perf`` output, several runs per file) fit the collective
model's latencies and achievable bandwidth fractions; PyTorch profiler (Kineto) traces fit the
GEMM-efficiency curve from their GEMM kernels and the fused-attention efficiencies from their
attention kernels; a kernel table of ``python -m simulator.measure_kernels`` fits the same from
GEMMs and attention kernels timed by shape, and the fp8 GEMM factor. The result is a profile
overlay (``base: P`` plus only the fitted fields and their provenance) that ``--hardware``
accepts anywhere. Prints the busbw error before and after the fit per sweep, a warning for every
parameter the data cannot determine (it keeps its datasheet value) and for rows no machine could
have produced (:mod:`simulator.calibration.consistency`). Nothing is written unless everything
parsed.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from simulator.commands import check_outputs
from simulator.errors import InputError
from simulator.files import STDOUT, OutputSet
from simulator.report.inputs import file_inputs, version
from simulator.units import MiB
from simulator.vocabulary import canonical_algo

_ALGO_PIN = re.compile(r"NCCL_ALGO(?:=|\s+set by environment to\s+)\s*([A-Za-z_,^]+)")


def register(subparsers) -> None:
    p = subparsers.add_parser("calibrate", help="fit a hardware profile to nccl-tests logs and profiler traces",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("inputs", nargs="+", metavar="LOG_OR_TRACE",
                   help="nccl-tests/rccl-tests output (.txt/.log), a measured sweep CSV as in data/nccl/ (.csv), "
                        "PyTorch profiler trace (.json/.json.gz) or a kernel table from python -m "
                        "simulator.measure_kernels (.csv)")
    p.add_argument("--hardware", required=True, help="profile to refine: bundled name or path to a profile YAML")
    p.add_argument("-o", "--output", required=True, metavar="OUT.yaml",
                   help="where to write the profile overlay ('-' for stdout; the fit report then goes to stderr)")
    p.add_argument("--gpus-per-node", type=int, default=None,
                   help="GPUs per node the measurement used (default: from the log's hosts, else the profile's)")
    p.add_argument("--algo", default=None, help="algorithm the measurements pinned (NCCL_ALGO), if the logs do not say")
    p.add_argument("--min-points", type=int, default=3, help="rows a parameter needs to be fitted (default 3)")
    p.add_argument("--max-rows", type=int, default=256,
                   help="fit on at most this many rows per run, every k-th size of a denser sweep (default 256); "
                        "the before/after report uses all rows")
    p.add_argument("--attention-mask", choices=("causal", "full"), default="causal",
                   help="mask of the traced attention kernels, which a trace does not record (default causal; "
                        "kernel tables say it per row)")
    p.set_defaults(handler=run)


@dataclass(frozen=True)
class _Inputs:
    measurements: list  # list[MeasuredCollective]
    gemms: list  # list[GemmEvent]
    attentions: list  # list[AttentionEvent]
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


def _read_inputs(paths: list[str], profile, gpus_per_node: int | None, algo: str | None) -> _Inputs:
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
    return _Inputs(measurements, gemms, attentions, files, skipped)


def _stats(err: np.ndarray, sizes: np.ndarray) -> tuple[float | None, float | None, float, float]:
    e = np.abs(err)
    big = e[sizes >= MiB]
    return (float(np.median(big)) if big.size else None, float(np.max(big)) if big.size else None,
            float(np.median(e)), float(np.max(e)))


def _pct(x: float | None) -> str:
    return "    –" if x is None else f"{100 * x:5.1f}%"


def _report(before, after, measurements, out=None) -> None:
    from simulator.calibration.fit import busbw_errors

    out = out or sys.stdout

    print("busbw error per sweep, |predicted/measured - 1| (median / worst), before -> after:", file=out)
    print(f"  {'sweep':52s} {'rows':>4s}  {'>=1MiB median':>15s}  {'>=1MiB worst':>15s}  {'all median':>15s}  {'all worst':>15s}",
          file=out)
    for m in measurements:
        sizes = np.asarray(m.sizes)
        b = _stats(busbw_errors(before, m), sizes)
        a = _stats(busbw_errors(after, m), sizes)
        label = f"{Path(m.source).name}:{m.lines[0] if m.lines else ''} {m.op} x{m.ranks}"
        cells = "  ".join(f"{_pct(x)}->{_pct(y)}" for x, y in zip(b, a))
        print(f"  {label:52s} {len(m.sizes):4d}  {cells}", file=out)


def _inconsistent_rows(profile, measurements) -> list[str]:
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


def _non_finite(tree: object, path: str = "") -> list[str]:
    """Dotted paths of the NaN/inf numbers in a nested overlay mapping."""
    if isinstance(tree, dict):
        return [p for k, v in tree.items() for p in _non_finite(v, f"{path}.{k}" if path else str(k))]
    if isinstance(tree, (list, tuple)):
        return [p for i, v in enumerate(tree) for p in _non_finite(v, f"{path}[{i}]")]
    if isinstance(tree, float) and not np.isfinite(tree):
        return [path]
    return []


def overlay_document(base: str, overlay: dict, provenance: str, comments: list[str]) -> str:
    """The overlay YAML: comment header, ``base:``, ``provenance:``, then the fitted fields."""
    body = {"base": base, "provenance": provenance, **overlay}
    head = "".join(f"# {c}\n" for c in comments)
    return head + yaml.safe_dump(body, sort_keys=False, default_flow_style=False, width=100)


def _base_reference(name: str) -> str:
    from simulator.config.hardware import PROFILE_DIR, profile_path

    p = profile_path(name)
    return name if p.parent == PROFILE_DIR and not Path(name).suffix else str(p.resolve())


def run(args: argparse.Namespace) -> int:
    from simulator.calibration.attention_fit import fit_attention_efficiency
    from simulator.calibration.fit import fit_collectives
    from simulator.calibration.gemm_fit import fit_fp8_scale, fit_gemm_curve
    from simulator.config.hardware import load_profile

    if args.min_points < 1:
        raise InputError(f"expected a whole number >= 1, got {args.min_points}", field="--min-points")
    if args.max_rows < 4:
        raise InputError(f"expected a whole number >= 4, got {args.max_rows}", field="--max-rows")
    if args.algo is not None and args.algo.lower() not in ("ring", "tree", "nvls", "nvls_tree"):
        raise InputError(f"expected ring, tree, nvls or nvls_tree, got {args.algo!r}", field="--algo")
    to_stdout = args.output == STDOUT
    out = Path("overlay.yaml" if to_stdout else args.output)
    if out.suffix not in (".yaml", ".yml"):
        raise InputError(f"expected a .yaml output path (or '-' for stdout), got {args.output!r}", field="-o")
    check_outputs(args, "output")
    profile = load_profile(args.hardware)
    inputs = _read_inputs(args.inputs, profile, args.gpus_per_node, args.algo.lower() if args.algo else None)
    if not inputs.measurements and not inputs.gemms and not inputs.attentions:
        read = inputs.skipped + [f"{Path(f).name}: {what}" for f, what in inputs.files]
        why = f" ({'; '.join(read)})" if read else ""
        raise InputError("nothing to fit: no collective rows and no GEMM or attention kernels with shapes in the "
                         f"inputs{why}",
                         source=", ".join(args.inputs))

    warnings: list[str] = inputs.skipped + _inconsistent_rows(profile, inputs.measurements)
    overlay: dict = {}
    fitted_profile = profile
    summary: list[str] = []
    if inputs.measurements:
        fit_rows = [m.thinned(args.max_rows) for m in inputs.measurements]
        for full, used in zip(inputs.measurements, fit_rows):
            if used is not full:
                warnings.append(f"{full.source}: fitted on {len(used.sizes)} of its {len(full.sizes)} rows "
                                f"(one size in {-(-len(full.sizes) // args.max_rows)}; --max-rows)")
        fit = fit_collectives(profile, fit_rows, min_points=args.min_points)
        warnings += fit.warnings
        overlay = fit.overlay
        fitted_profile = fit.profile
        for fp in fit.params:
            state = f"{fp.datasheet:g} -> {fp.value:.4g}" if fp.fitted else f"kept {fp.datasheet:g}"
            summary.append(f"{fp.param.path}: {state} ({fp.points} sensitive rows)")
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
        afit = fit_attention_efficiency(inputs.attentions, profile, causal=args.attention_mask == "causal")
        warnings += afit.warnings
        if afit.overlay:
            overlay.setdefault("gpu", {})["attention_efficiency"] = afit.overlay
        for (kernel, direction), n in sorted(afit.samples.items()):
            was = profile.gpu.attention_efficiency.get(kernel)
            before = f"{getattr(was, direction):g}" if was is not None else "none"
            summary.append(f"gpu.attention_efficiency.{kernel}.{direction}: {before} -> "
                           f"{afit.overlay[kernel][direction]:g} ({n} kernels, {args.attention_mask} mask)")

    bad = _non_finite(overlay)
    if bad:  # never write a number the profile loader (or a reader of the file) cannot use
        raise InputError(f"the fit gave a non-finite value for {', '.join(bad)}; the inputs cannot determine it "
                         "(check the measurements for zero or missing durations)", source=", ".join(args.inputs))
    date = _dt.date.today().isoformat()
    rows = sum(len(m.sizes) for m in inputs.measurements)
    provenance = (f"clustersim calibrate {date}: {len(inputs.measurements)} sweep(s), {rows} rows, "
                  f"{len(inputs.gemms)} GEMM and {len(inputs.attentions)} attention kernels from {', '.join(Path(f).name for f, _ in inputs.files)}")
    comments = [f"Profile overlay written by clustersim {version()} `calibrate` on {date}; refines {args.hardware}.",
                "Inputs:"] + [f"  {f}: {what} (sha256 {file_inputs(f)['sha256']})" for f, what in inputs.files] + ["Parameters:"] + [f"  {s}" for s in summary]
    if warnings:
        comments += ["Warnings:"] + [f"  {w}" for w in warnings]
    text = overlay_document(_base_reference(args.hardware), overlay, provenance, comments)

    # Check the overlay loads exactly as a user's --hardware would, before anything is written.
    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / out.name
        probe.write_text(text)
        load_profile(str(probe))

    report_to = sys.stderr if to_stdout else sys.stdout
    if inputs.measurements:
        _report(profile, fitted_profile, inputs.measurements, out=report_to)
    for line in summary:
        print(f"  {line}", file=report_to)
    for w in warnings:
        print(f"clustersim: warning: {w}", file=sys.stderr)
    with OutputSet() as files:
        files.add(args.output, text, "-o")
    if not to_stdout:
        print(f"wrote {out}")
    return 0

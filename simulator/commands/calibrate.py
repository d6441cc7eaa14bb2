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
import sys
from pathlib import Path

import numpy as np
import yaml

from simulator.commands import check_outputs
from simulator.errors import InputError
from simulator.files import STDOUT, OutputSet
from simulator.report.inputs import file_inputs, version
from simulator.units import MiB
from simulator.vocabulary import canonical_algo

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


def _base_reference(name: str) -> str:
    from simulator.config.hardware import PROFILE_DIR, profile_path

    p = profile_path(name)
    return name if p.parent == PROFILE_DIR and not Path(name).suffix else str(p.resolve())


def run(args: argparse.Namespace) -> int:
    from simulator.calibration.profile_fit import calibrate, overlay_document, read_inputs
    from simulator.config.hardware import apply_overlay, load_profile
    from simulator.costs.collectives import FLOWED

    if args.min_points < 1:
        raise InputError(f"expected a whole number >= 1, got {args.min_points}", field="--min-points")
    if args.max_rows < 4:
        raise InputError(f"expected a whole number >= 4, got {args.max_rows}", field="--max-rows")
    algo = canonical_algo(args.algo, among=FLOWED) if args.algo is not None else None
    if args.algo is not None and algo is None:
        raise InputError(f"expected {', '.join(FLOWED[:-1])} or {FLOWED[-1]}, got {args.algo!r}", field="--algo")
    to_stdout = args.output == STDOUT
    out = Path("overlay.yaml" if to_stdout else args.output)
    if out.suffix not in (".yaml", ".yml"):
        raise InputError(f"expected a .yaml output path (or '-' for stdout), got {args.output!r}", field="-o")
    check_outputs(args, "output")
    profile = load_profile(args.hardware)
    inputs = read_inputs(args.inputs, profile, args.gpus_per_node, algo)
    cal = calibrate(profile, inputs, max_rows=args.max_rows, min_points=args.min_points,
                    causal=args.attention_mask == "causal")
    warnings = cal.warnings
    date = _dt.date.today().isoformat()
    rows = sum(len(m.sizes) for m in inputs.measurements)
    provenance = (f"clustersim calibrate {date}: {len(inputs.measurements)} sweep(s), {rows} rows, "
                  f"{len(inputs.gemms)} GEMM and {len(inputs.attentions)} attention kernels from {', '.join(Path(f).name for f, _ in inputs.files)}")
    comments = [f"Profile overlay written by clustersim {version()} `calibrate` on {date}; refines {args.hardware}.",
                "Inputs:"] + [f"  {f}: {what} (sha256 {file_inputs(f)['sha256']})" for f, what in inputs.files] + ["Parameters:"] + [f"  {s}" for s in cal.summary]
    if warnings:
        comments += ["Warnings:"] + [f"  {w}" for w in warnings]
    text = overlay_document(_base_reference(args.hardware), cal.overlay, provenance, comments)

    # Check that the overlay as written loads onto its base, before anything is written.
    written = yaml.safe_load(text)
    written.pop("base")
    apply_overlay(profile, written, source=str(out))

    report_to = sys.stderr if to_stdout else sys.stdout
    if inputs.measurements:
        _report(profile, cal.profile, inputs.measurements, out=report_to)
    for line in cal.summary:
        print(f"  {line}", file=report_to)
    for w in warnings:
        print(f"clustersim: warning: {w}", file=sys.stderr)
    with OutputSet() as files:
        files.add(args.output, text, "-o")
    if not to_stdout:
        print(f"wrote {out}")
    return 0

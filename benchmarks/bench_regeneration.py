"""Time the two regenerations of the validation pages, as a user runs them: prints figures,
asserts nothing.

* ``collective``: ``python -m simulator.calibration.collective_validation`` (every bundled
  nccl-tests sweep predicted, in sample and leave one system out, tables and plots).
  Target (the collective-validation issue, "Speed"): a full leave-one-system-out regeneration
  under 5 minutes on 2 cores. The per-size target (one size under 1 ms at 1,024 ranks) is
  ``benchmarks/bench_prediction.py``'s.
* ``e2e``: ``python -m simulator.e2e_validation --jobs 2`` (every published training run
  simulated). Target (the step-time validation issue): under 5 minutes on 2 cores.

Each runs in a child process writing to a temporary folder; both also rewrite their interval
table in the package (``simulator/report/collective_interval_table.py``,
``step_interval_table.py``), which this script puts back as it was afterwards. Printed: wall seconds, CPU seconds
of the child and its workers (user + system, from ``RUSAGE_CHILDREN``: on a machine shared with
other jobs the wall clock also counts their turns, the CPU time does not), and the wall time
the CPU time would take on 2 idle cores (CPU / 2 when the work is parallel, else the CPU time).

    python benchmarks/bench_regeneration.py [collective] [e2e] [--jobs 2] [--source KEY ...]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 300.0
# what the regenerations write into the package besides their --out folder
GENERATED = [ROOT / "simulator" / "report" / f"{k}_interval_table.py" for k in ("collective", "step")]


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(argv: list[str]) -> tuple[int, float, float]:
    """Exit code, wall seconds and CPU seconds of ``python argv...`` run from the repository root."""
    kept = {p: p.read_bytes() for p in GENERATED if p.is_file()}
    cpu0, wall0 = _children_cpu(), time.perf_counter()
    try:
        rc = subprocess.run([sys.executable, *argv], cwd=ROOT, stdout=subprocess.DEVNULL).returncode
    finally:
        for p, data in kept.items():
            p.write_bytes(data)
    return rc, time.perf_counter() - wall0, _children_cpu() - cpu0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("which", nargs="*", metavar="collective|e2e", help="what to time (default: both)")
    ap.add_argument("--jobs", type=int, default=2, help="e2e worker processes (default 2: the target's cores)")
    ap.add_argument("--source", action="append", default=[], help="e2e: only these sources (repeatable)")
    args = ap.parse_args()
    which = args.which or ["collective", "e2e"]
    if set(which) - {"collective", "e2e"}:
        ap.error(f"expected collective or e2e, got {' '.join(sorted(set(which) - {'collective', 'e2e'}))}")
    with tempfile.TemporaryDirectory() as tmp:
        runs = {
            "collective": (["-m", "simulator.calibration.collective_validation", "--out", f"{tmp}/coll"], 1),
            "e2e": (["-m", "simulator.e2e_validation", "--out", f"{tmp}/e2e", "--jobs", str(args.jobs),
                     *[a for s in args.source for a in ("--source", s)]], args.jobs),
        }
        print(f"{'regeneration':>12} {'rc':>3} {'wall_s':>8} {'cpu_s':>8} {'2-core_s':>9} {'target_s':>9}")
        for name in which:
            argv, workers = runs[name]
            rc, wall, cpu = timed(argv)
            two_core = cpu / min(2, max(1, workers))
            print(f"{name:>12} {rc:>3} {wall:>8.1f} {cpu:>8.1f} {two_core:>9.1f} {TARGET_S:>9.0f}"
                  + ("" if name != "e2e" or not args.source else "   (some sources only)"))


if __name__ == "__main__":
    main()

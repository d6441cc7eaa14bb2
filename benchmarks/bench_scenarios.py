"""Wall time, simulated events/s and peak memory of one step estimate per bundled scenario,
and with ``--sweep`` the time of ``clustersim sweep`` on each.

    python benchmarks/bench_scenarios.py [NAME ...]
    python benchmarks/bench_scenarios.py --sweep [NAME ...]   # one process, one core per sweep

Targets (issue "Replay engine"): the 1,024-GPU 3D plan under 20 s, the others under 5 s; a
sweep of a bundled scenario well under a minute of CPU (SWEEP_TARGET_S). Each scenario runs in a fresh
process so peak RSS is its own. CPU seconds are printed beside wall seconds: on a shared machine
the wall time also counts the waits for a core.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = {"gpt3-175b-3d-a100": 20.0}
SWEEP_TARGET_S = 60.0

CHILD = r"""
import json, resource, sys, time
from simulator.simulation import simulate
t0, c0 = time.perf_counter(), time.process_time()
sim = simulate(sys.argv[1])
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
s = sim.trace.stats
print(json.dumps({"wall_s": wall, "cpu_s": cpu, "replay_s": s.wall_s, "events": s.events, "ranks": s.ranks,
                  "ranks_simulated": s.ranks_simulated,
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "step_ms": sim.report.step_time_s * 1e3}))
"""


SWEEP_CHILD = r"""
import contextlib, io, json, resource, sys, time
from simulator.cli import main
t0 = time.perf_counter()
with contextlib.redirect_stdout(io.StringIO()):
    rc = main(["sweep", sys.argv[1], "--quiet", "--json", sys.argv[2]])
wall = time.perf_counter() - t0
u = resource.getrusage(resource.RUSAGE_SELF)
doc = json.load(open(sys.argv[2]))
print(json.dumps({"rc": rc, "wall_s": wall, "cpu_s": u.ru_utime + u.ru_stime, "counts": doc["counts"]}))
"""


def sweeps(paths: list[Path]) -> int:
    """``clustersim sweep`` (default knobs, one process) of each scenario: wall and CPU seconds,
    plans enumerated and simulated, CPU seconds per simulated plan."""
    import tempfile

    print(f"{'sweep of':<34}{'plans':>7}{'simulated':>10}{'wall s':>9}{'cpu s':>8}{'cpu s/plan':>11}  target")
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for p in paths:
            out = subprocess.run([sys.executable, "-c", SWEEP_CHILD, str(p), str(Path(tmp) / f"{p.stem}.json")],
                                 cwd=ROOT, capture_output=True, text=True)
            if out.returncode:
                print(f"{p.stem:<34} failed: {out.stderr.strip().splitlines()[-1] if out.stderr else out.returncode}")
                bad += 1
                continue
            r = json.loads(out.stdout.strip().splitlines()[-1])
            c = r["counts"]
            ok = r["cpu_s"] <= SWEEP_TARGET_S  # one process: its CPU seconds are its wall on an idle core
            bad += not ok
            print(f"{p.stem:<34}{c['enumerated']:>7}{c['simulated']:>10}{r['wall_s']:>9.2f}{r['cpu_s']:>8.2f}"
                  f"{r['cpu_s'] / max(c['simulated'], 1):>11.2f}  {'ok' if ok else 'OVER'} (<{SWEEP_TARGET_S:.0f} s)")
    return 1 if bad else 0


def main(names: list[str]) -> int:
    sweep = "--sweep" in names
    names = [n for n in names if n != "--sweep"]
    paths = [ROOT / "scenarios" / f"{n}.yaml" for n in names] or sorted((ROOT / "scenarios").glob("*.yaml"))
    if sweep:
        return sweeps(paths)
    print(f"{'scenario':<34}{'ranks':>7}{'sim':>6}{'wall s':>9}{'cpu s':>8}{'replay s':>10}{'events':>11}{'events/s':>11}"
          f"{'peak MiB':>10}  target")
    bad = 0
    for p in paths:
        out = subprocess.run([sys.executable, "-c", CHILD, str(p)], cwd=ROOT, capture_output=True, text=True)
        if out.returncode:
            print(f"{p.stem:<34} failed: {out.stderr.strip().splitlines()[-1] if out.stderr else out.returncode}")
            bad += 1
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        target = TARGET_S.get(p.stem, 5.0)
        ok = r["wall_s"] <= target
        bad += not ok
        print(f"{p.stem:<34}{r['ranks']:>7}{r['ranks_simulated']:>6}{r['wall_s']:>9.2f}{r['cpu_s']:>8.2f}{r['replay_s']:>10.2f}"
              f"{r['events']:>11,}{r['events'] / max(r['replay_s'], 1e-9):>11,.0f}{r['peak_rss_mib']:>10.0f}  "
              f"{'ok' if ok else 'OVER'} (<{target:.0f} s)")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

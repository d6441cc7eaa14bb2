"""Wall time, simulated events/s and peak memory of one step estimate per bundled scenario.

    python benchmarks/bench_scenarios.py [NAME ...]

Targets (issue "Replay engine"): the 1,024-GPU 3D plan under 20 s, the others under 5 s.
Each scenario runs in a fresh process so peak RSS is its own.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = {"gpt3-175b-3d-a100": 20.0}

CHILD = r"""
import json, resource, sys, time
from simulator.simulation import simulate
t0 = time.perf_counter()
sim = simulate(sys.argv[1])
wall = time.perf_counter() - t0
s = sim.trace.stats
print(json.dumps({"wall_s": wall, "replay_s": s.wall_s, "events": s.events, "ranks": s.ranks,
                  "ranks_simulated": s.ranks_simulated,
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "step_ms": sim.report.step_time_s * 1e3}))
"""


def main(names: list[str]) -> int:
    paths = [ROOT / "scenarios" / f"{n}.yaml" for n in names] or sorted((ROOT / "scenarios").glob("*.yaml"))
    print(f"{'scenario':<34}{'ranks':>7}{'sim':>6}{'wall s':>9}{'replay s':>10}{'events':>11}{'events/s':>11}"
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
        print(f"{p.stem:<34}{r['ranks']:>7}{r['ranks_simulated']:>6}{r['wall_s']:>9.2f}{r['replay_s']:>10.2f}"
              f"{r['events']:>11,}{r['events'] / max(r['replay_s'], 1e-9):>11,.0f}{r['peak_rss_mib']:>10.0f}  "
              f"{'ok' if ok else 'OVER'} (<{target:.0f} s)")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

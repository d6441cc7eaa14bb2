"""What `--plot` adds to `clustersim run`: seconds to draw and write the Gantt and the breakdown
PNGs, per bundled scenario and for one step of Llama-3 405B on 16,384 H100 GPUs.

    python benchmarks/bench_plots.py [NAME ...]      # NAME: a bundled scenario, or 16k

Targets (issue "Plan search ... and pictures that come back in seconds"): at most 2 s per
bundled scenario, at most 10 s for the 16,384-GPU step, with the default window (one
steady-state layer). The whole-step window is timed too, for information. Times are CPU seconds
of this process (wall seconds beside them: on a shared machine the wall clock also counts other
processes' turns).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simulator.config.scenario import build_scenario, load_scenario  # noqa: E402
from simulator.report.plots import save_plots  # noqa: E402
from simulator.simulation import simulate_scenario  # noqa: E402

# Llama-3 405B as Meta trained it on 16K H100 (arXiv:2407.21783 Table 4: TP 8, PP 16, DP 128,
# seq 8192, 16M tokens per step).
LLAMA3_405B_16K = dict(
    name="llama3-405b-16k-h100", hardware="dgx-h100", nodes=2048,
    model=dict(preset="llama3-405b", seq_len=8192),
    training=dict(micro_batch=1, global_batch=2048, recompute="none"),
    parallel=dict(tp=8, sequence_parallel=True, pp=16, zero=1, order=["tp", "cp", "dp", "pp"]))
TARGET_S = {"16k": 10.0}


def scenarios(names: list[str]):
    bundled = {p.stem: p for p in sorted((ROOT / "scenarios").glob("*.yaml"))}
    for name in names or [*bundled, "16k"]:
        if name == "16k":
            yield name, build_scenario(LLAMA3_405B_16K)
        else:
            yield name, load_scenario(bundled[name])


def timed(fn):
    c0, w0 = time.process_time(), time.perf_counter()
    out = fn()
    return out, time.process_time() - c0, time.perf_counter() - w0


def main(names: list[str]) -> int:
    print(f"{'scenario':<32}{'GPUs':>7}{'ops/rank':>10}{'sim s':>8}{'plot s':>8}{'(wall)':>8}"
          f"{'step-window s':>15}  target")
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, scn in scenarios(names):
            sim, sim_cpu, _ = timed(lambda: simulate_scenario(scn))
            _, cpu, wall = timed(lambda: save_plots(sim.trace, sim.report, Path(tmp) / f"{name}.png",
                                                    scenario=scn, grid=sim.schedule.grid))
            _, step_cpu, _ = timed(lambda: save_plots(sim.trace, sim.report, Path(tmp) / f"{name}-step.png",
                                                      scenario=scn, grid=sim.schedule.grid, window="step"))
            target = TARGET_S.get(name, 2.0)
            ok = cpu <= target
            bad += not ok
            ops = max(len(t.program) for t in sim.trace.timelines.values())
            print(f"{name:<32}{scn.n_gpus:>7,}{ops:>10,}{sim_cpu:>8.2f}{cpu:>8.2f}{wall:>8.2f}{step_cpu:>15.2f}  "
                  f"{'ok' if ok else 'OVER'} (<= {target:.0f} s)", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""CPU seconds, simulated ranks and events of each row of the step-time validation: prints
figures, asserts nothing.

    python benchmarks/bench_e2e_rows.py [--source KEY ...] [--match TEXT] [--compare-image-ranks]

Per row (``simulator.e2e_validation`` cases, simulated one after another in this process):
the CPU seconds of its simulation (this process's; on a machine shared with other jobs the wall
clock also counts their turns), the ranks it simulated, its events and its step time; then the
sum per source. ``--compare-image-ranks`` simulates each row again with the ranks that share a
simulated rank's NIC simulated rather than imaged (``replay(image_ranks=False)``) and prints
both times and the relative difference of the step times (float rounding only: the same flows
at the same moments). Target (the step-time validation issue): ``python -m
simulator.e2e_validation --jobs 2`` under 5 minutes on 2 cores (``bench_regeneration.py e2e``).
"""

from __future__ import annotations

import argparse
import functools
import time
from collections import defaultdict

import simulator.replay.engine as engine
from simulator.config.scenario import build_scenario
from simulator.e2e_validation.scoring import case_profile
from simulator.e2e_validation.sources import SOURCES, Case, cases
from simulator.simulation import simulate_scenario

_REPLAY = engine.replay


def _run(case: Case, image_ranks: bool) -> tuple[float, float, int, int]:
    """(CPU seconds, step time, ranks simulated, events) of one row."""
    engine.replay = _REPLAY if image_ranks else functools.partial(_REPLAY, image_ranks=False)  # type: ignore[assignment]
    try:
        t0 = time.process_time()
        profile = case_profile(case)
        scn = (build_scenario(case.scenario, source=case.label) if profile is None
               else build_scenario(case.scenario, source=case.label, profile=profile))
        sim = simulate_scenario(scn)
        cpu = time.process_time() - t0
    finally:
        engine.replay = _REPLAY  # type: ignore[assignment]
    return cpu, sim.report.step_time_s, sim.trace.stats.ranks_simulated, sim.trace.stats.events


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", action="append", choices=[s.key for s in SOURCES], metavar="KEY")
    ap.add_argument("--match", default="", help="only rows whose label contains this")
    ap.add_argument("--compare-image-ranks", action="store_true")
    args = ap.parse_args()
    srcs = [s for s in SOURCES if not args.source or s.key in args.source]
    total: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for case in (c for c in cases(srcs) if args.match in c.label):
        cpu, step, ranks, events = _run(case, True)
        total[case.source][0] += cpu
        line = f"{case.source:12s} {case.label:60s} {cpu:7.2f} s  {ranks:5d} ranks {events:8d} events  step {step:.6g} s"
        if args.compare_image_ranks:
            cpu0, step0, ranks0, events0 = _run(case, False)
            total[case.source][1] += cpu0
            line += f"  | simulated: {cpu0:7.2f} s {ranks0:5d} ranks {events0:8d} events  rel {abs(step / step0 - 1):.1e}"
        print(line, flush=True)
    for src, (cpu, cpu0) in total.items():
        print(f"{src:12s} {cpu:8.1f} CPU s" + (f"  (NIC-sharing ranks simulated: {cpu0:.1f} CPU s)" if cpu0 else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

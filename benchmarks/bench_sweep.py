"""Sweep speed: how fast plans are screened (rules, memory model, lower bound) before any
replay, how many the lower bound prunes, and the cost per simulated plan.

    python benchmarks/bench_sweep.py                 # screening only (seconds)
    python benchmarks/bench_sweep.py --simulate      # also run the sweeps (minutes) with --jobs 2
    python benchmarks/bench_sweep.py --simulate gpt3 # only the cases whose name contains "gpt3"
    python benchmarks/bench_sweep.py --simulate --max-plans 6   # a sample: the 6 most promising plans
    python benchmarks/bench_sweep.py --simulate llama --jobs 1  # one worker (a shared machine)

Cases (issue "Plan search that scales past one machine"):

* Llama-3 70B on 1,024 H100 at 8K context, every axis (`--vary all`): screening target
  >= 10 plans/s; the whole sweep's target is <= 2 minutes on 2 cores.
* GPT-3 175B on 1,024 A100 (`scenarios/gpt3-175b-3d-a100.yaml`): target <= 1 s of CPU per
  simulated plan, averaged over the sweep.
* Llama-3 70B on 128 A100 PCIe (2 per node) at 32K context, every axis (`--vary all`): 12,237
  plans (with the evened-out splits), 366 that fit; screening target >= 10 plans/s.
* Qwen3-235B-A22B on 256 H100 at 4K context, every axis (`--vary all`): 19,387 plans, 9,626 that
  fit; 20 replayed (35 before the bound read the stage before the last and ZeRO-3 windows).

Printed: plans enumerated, screened per second, how many reach simulation, and with
``--simulate`` the wall time, plans pruned by the lower bound (fraction of those that could
run), simulated plans per second and CPU seconds per simulated plan (all processes).
"""

from __future__ import annotations

import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simulator.config.scenario import build_scenario, load_scenario  # noqa: E402
from simulator.simulation import simulate_scenario  # noqa: E402
from simulator.sweep.bound import passes_lower_bound  # noqa: E402
from simulator.sweep.plans import (VARY_KEYS, SweepBounds, enumerate_plans, iter_checked,  # noqa: E402
                                    with_balanced_splits)
from simulator.sweep.progress import Progress  # noqa: E402
from simulator.sweep.run import count_kinds, run_plans  # noqa: E402

LLAMA3_70B_1K = dict(
    name="llama3-70b-1k-h100-8k", hardware="dgx-h100", nodes=128,
    model=dict(preset="llama3-70b", seq_len=8192),
    training=dict(micro_batch=1, global_batch=1024),
    parallel=dict(tp=8, sequence_parallel=True, pp=4, zero=1, order=["tp", "cp", "dp", "pp"]))


# Long context on a cluster without NVLink (2 A100 PCIe per node): every plan needs CP or Ulysses
# across nodes or full recompute to fit, and the sweep's knobs multiply (cp_comm, ZeRO-3 flavours).
LLAMA3_70B_PCIE_32K = dict(
    name="llama3-70b-128-a100-pcie-32k", hardware="a100-pcie", nodes=64,
    model=dict(preset="llama3-70b", seq_len=32768),
    training=dict(micro_batch=1, global_batch=256),
    parallel=dict(tp=8, pp=4, zero=1))


# A mixture of experts over deep pipelines: ZeRO-2 and FSDP2 plans at pp 16-32 replay in 13-38 s
# each and lose by 9-13%; the bound's slowdown term on the stage before the last and the stages'
# windows prune them (docs/sweep.md, "Large `--vary all` spaces").
QWEN3_235B_256 = dict(
    name="qwen3-235b-256-h100", hardware="dgx-h100", nodes=32,
    model=dict(preset="qwen3-235b-a22b", seq_len=4096),
    training=dict(micro_batch=1, global_batch=1024),
    parallel=dict(tp=2, sequence_parallel=True, pp=8, ep=16, zero=1))


def cases():
    yield "llama3-70b 1024xH100 8K, --vary all", build_scenario(LLAMA3_70B_1K), \
        SweepBounds(vary=frozenset(VARY_KEYS))
    yield "llama3-70b 128xA100-PCIe 32K, --vary all", build_scenario(LLAMA3_70B_PCIE_32K), \
        SweepBounds(vary=frozenset(VARY_KEYS))
    yield "qwen3-235b-a22b 256xH100 4K, --vary all", build_scenario(QWEN3_235B_256), \
        SweepBounds(vary=frozenset(VARY_KEYS))
    yield "gpt3-175b 1024xA100 (degrees only)", load_scenario(ROOT / "scenarios" / "gpt3-175b-3d-a100.yaml"), \
        SweepBounds()


def cpu_all() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def screen(base, bounds) -> tuple[int, int, float]:
    """(plans, plans that could be simulated, seconds) of enumeration, the evened-out splits of
    pipelined plans (as ``run_plans`` adds them), rules, memory and bound."""
    t0 = time.perf_counter()
    plans = with_balanced_splits(base, enumerate_plans(base, bounds))
    runnable = 0
    for _, scn, mem, reason in iter_checked(base, plans):
        if scn is not None and not reason:
            passes_lower_bound(scn)
            runnable += 1
    return len(plans), runnable, time.perf_counter() - t0


def main(argv: list[str]) -> int:
    simulate = "--simulate" in argv
    max_plans = int(argv[argv.index("--max-plans") + 1]) if "--max-plans" in argv else None
    jobs = int(argv[argv.index("--jobs") + 1]) if "--jobs" in argv else min(2, os.cpu_count() or 1)
    only = [a for i, a in enumerate(argv)
            if not a.startswith("--") and (i == 0 or argv[i - 1] not in ("--max-plans", "--jobs"))]
    bad = 0
    for name, base, bounds in cases():
        if only and not any(o in name for o in only):
            continue
        n, runnable, dt = screen(base, bounds)
        rate = n / dt
        ok = rate >= 10
        bad += not ok
        print(f"{name}: {n} plans screened in {dt:.2f} s = {rate:,.0f} plans/s "
              f"({'ok' if ok else 'UNDER'} >= 10), {runnable} could run", flush=True)
        if not simulate:
            continue
        c0, t0 = cpu_all(), time.perf_counter()
        result = run_plans(base, enumerate_plans(base, bounds), simulate_scenario, jobs=jobs,
                           max_plans=max_plans, progress=Progress())
        wall, cpu = time.perf_counter() - t0, cpu_all() - c0
        c = count_kinds(result.plans)
        sim = max(c["simulated"], 1)
        pruned = c["skipped_by"]["lower_bound"]
        print(f"  sweep: {wall:.1f} s wall, {cpu:.2f} CPU s, {c['simulated']} simulated, {pruned} pruned by the lower bound "
              f"({100 * pruned / max(runnable, 1):.0f}% of those that could run), "
              f"{c['simulated'] / wall:.2f} simulated plans/s, {cpu / sim:.2f} CPU s per simulated plan; "
              f"best {result.best.label if result.best else '-'}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

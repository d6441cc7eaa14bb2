"""Speed of collective prediction, and of the calibration workloads built on it.

Per size: milliseconds to predict one collective of one size on 8, 64 and 1,024 ranks of
dgx-h100, on a warm cost model (its flow patterns built by an earlier size, as in a sweep or a
fit), both as the calibration predicts it (plan + closed form, ``event_driven=False``:
``closed_ms``, every pattern built) and as ``clustersim collective`` does (plan + SimPy
FlowNetwork up to 256 flows: ``simpy_ms``). The first size of each group, which builds the
layout and the first patterns, is reported apart (``cold_ms``), and so is the first pass over
the other sizes (``first_ms``: it builds the pattern of each new channel count). The closed form
makes no Flow objects (``flow_patterns.Phase`` makes them only when something walks them).

Workloads (the slow validation tests): a one-round and a full fit of the sophia-a100 sweeps
(every other size, as tests/unit/test_calibrate.py), the leave-one-system-out held-out
predictions (tests/validation/test_deployed_defaults.py), the bundled deployed table's fit, and
the cross-validation of sophia-a100 and dgx-h100 (tests/validation/test_calibration_accuracy.py).
Times are CPU seconds of this process (wall seconds in brackets), so a loaded machine inflates
them less.

    python benchmarks/bench_prediction.py [--ranks 8 64 1024] [--no-workloads]

Targets (the collective-validation issue, "Speed"): one size under 1 ms at 1,024
ranks; a full leave-one-system-out regeneration under 5 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import time
from typing import Callable

from simulator.config.hardware import load_profile
from simulator.costs.model import CostModel
from simulator.hardware.topology import build_topology
from simulator.replay.single_collective import time_collective

OPS = ("allgather", "reducescatter", "allreduce", "alltoall", "broadcast", "sendrecv")
SIZES = [8 << i for i in range(24)]  # 8 B .. 64 MiB


def _timed(fn: Callable[[], object]) -> tuple[float, float]:
    c0, w0 = time.process_time(), time.perf_counter()
    fn()
    return time.process_time() - c0, time.perf_counter() - w0


def per_size(ranks_list: list[int], hardware: str) -> None:
    profile = load_profile(hardware)
    print(f"{'ranks':>6} {'op':>14} {'cold_ms':>8} {'first_ms':>9} {'closed_ms':>10} {'simpy_ms':>9}   (per size)")
    for ranks in ranks_list:
        gpus = list(range(ranks))
        for op in OPS:
            costs = CostModel(build_topology(profile, max(1, ranks // profile.node.gpus)))
            cold, _ = _timed(lambda: time_collective(op, gpus, SIZES[0], costs, event_driven=False))
            first, _ = _timed(lambda: [time_collective(op, gpus, s, costs, event_driven=False) for s in SIZES[1:]])
            closed, _ = _timed(lambda: [time_collective(op, gpus, s, costs, event_driven=False) for s in SIZES[1:]])
            simpy, _ = _timed(lambda: [time_collective(op, gpus, s, costs) for s in SIZES[1:]])
            n = len(SIZES) - 1
            print(f"{ranks:>6} {op:>14} {1e3 * cold:>8.2f} {1e3 * first / n:>9.3f} {1e3 * closed / n:>10.3f} "
                  f"{1e3 * simpy / n:>9.3f}")


def workloads() -> None:
    from simulator.calibration.cross_validation import cross_validate, systems
    from simulator.calibration.deployed_fit import decompose, fit_table, leave_one_system_out, neutral_results
    from simulator.calibration.fit import fit_collectives

    by_system, _ = systems()
    ms = [m.subset([i % 2 == 0 for i in range(len(m.sizes))]) for m in by_system["sophia-a100"]]
    sophia = load_profile("sophia-a100")
    jobs: list[tuple[str, Callable[[], object]]] = [
        ("fit sophia-a100, one round", lambda: fit_collectives(sophia, ms, rounds=1)),
        ("fit sophia-a100, full", lambda: fit_collectives(sophia, ms)),
        ("leave one system out (held-out predictions)", leave_one_system_out),
        ("bundled deployed table fit", lambda: fit_table(decompose(neutral_results()))),
    ]
    for system in ("sophia-a100", "dgx-h100"):
        if system in by_system:
            jobs.append((f"cross-validate {system}", lambda s=system: cross_validate(s, by_system[s])))
    for name, job in jobs:
        cpu, wall = _timed(job)
        print(f"{name:>45}: {cpu:7.2f} s CPU ({wall:.2f} s wall)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, nargs="+", default=[8, 64, 1024])
    ap.add_argument("--hardware", default="dgx-h100")
    ap.add_argument("--no-workloads", action="store_true")
    args = ap.parse_args()
    per_size(args.ranks, args.hardware)
    if not args.no_workloads:
        workloads()


if __name__ == "__main__":
    main()

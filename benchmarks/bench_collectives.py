"""Speed of the collective model: a 24-size sweep (8 B .. 64 MiB, ×2) of each collective on 8, 64
and 1,024 ranks of dgx-h100, planned and run on the SimPy FlowNetwork, as `clustersim collective`
does. Prints wall time per sweep (topology build + 24 plans + runs) and the process's peak RSS
after it (ru_maxrss, so it only grows; tracemalloc would slow the run several-fold).

    python benchmarks/bench_collectives.py [--ranks 8 64 1024] [--hardware dgx-h100]

Target (issue "Foundation"): the 1,024-rank sweep under 2 s and 500 MB.
"""

from __future__ import annotations

import argparse
import resource
import time

from simulator.config.hardware import load_profile
from simulator.costs.model import CostModel
from simulator.hardware.topology import build_topology
from simulator.replay.single_collective import time_collective

OPS = ("allgather", "reducescatter", "allreduce", "alltoall", "broadcast", "sendrecv")
SIZES = [8 << i for i in range(24)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, nargs="+", default=[8, 64, 1024])
    ap.add_argument("--hardware", default="dgx-h100")
    args = ap.parse_args()
    profile = load_profile(args.hardware)
    print(f"{'ranks':>6} {'op':>14} {'wall_s':>8} {'rss_MB':>8} {'flows(max)':>10} {'busbw@64M':>10}")
    for ranks in args.ranks:
        nodes = max(1, ranks // profile.node.gpus)
        total = 0.0
        for op in OPS:
            t0 = time.perf_counter()
            costs = CostModel(build_topology(profile, nodes))
            gpus = list(range(ranks))
            results = [time_collective(op, gpus, s, costs) for s in SIZES]
            wall = time.perf_counter() - t0
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3  # kB on Linux
            total += wall
            print(f"{ranks:>6} {op:>14} {wall:>8.2f} {peak:>8.1f} {max(r.flows for r in results):>10} "
                  f"{results[-1].busbw / 1e9:>10.1f}")
        print(f"{ranks:>6} {'all six':>14} {total:>8.2f}")


if __name__ == "__main__":
    main()

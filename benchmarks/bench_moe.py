"""Benchmark: DeepSeek-V3 on 2,048 H100 (EP 64, PP 16, TP 1, DP 128 with the distributed
optimizer; the DeepSeek-V3 report's plan, arXiv:2412.19437 §3.2), 32 micro-batches per pipeline.

Targets (issue 13): the schedule builds in under 2 s and one step replays in under 10 s on two
cores. Prints, per token dispatcher, the build and replay times (wall and CPU), the op counts,
the simulated ranks and the step time. Run: ``python benchmarks/bench_moe.py``.

Last measured (2-core machine shared with other jobs, load ~2.5): the schedule builds in 0.31 CPU s
(alltoall, 144,002 ops) and 0.27 CPU s (deepep, 134,722 ops). The replay, at the 32 micro-batches
per pipeline here: 5.3 CPU s (alltoall; 12.4 CPU s before the kept class-level outcomes, member
tables, block totals and per-link counts below, 344 CPU s before classes; step 19.60565072972531 s
throughout) and 1.2 CPU s (deepep, step 14.04 s); at 8 micro-batches (global batch 1,024):
2.1 CPU s (alltoall; 3.3 CPU s before, 50.0 CPU s before classes; step 9.320142685924496 s) and
0.6 CPU s (deepep).

What made the All-to-All replay cheap (replay/links.py, flow_records.py, solo_phases.py): each
All-to-All of a 64-rank EP group over 8 nodes puts 4,032 flows on the network when the spine links
join it to other stages' All-to-Alls and the pipeline's sends. Those flows now go on the network
as classes (flows of one phase with the same size, bytes left and cap, their links held as numpy
tables): one heap entry, one completion and one set of per-link entries per class. Rates of large
components are water-filled class by class (a few hundred weighted entries instead of ~40,000)
and accepted only when every member then has a bottleneck link (the characterisation of the
max-min allocation); otherwise they are solved member by member and the classes split where
the members' rates differ. The replayed times are those of the flow-by-flow network to float
round-off (here identical to the last digit).

What is left per event is kept rather than redone: a class-level outcome (rates, or the check's
rejection) by the classes in play, since the same All-to-All classes meet again every
micro-batch; a broken component's member tables by member set; what a block's surviving
components delivered by pattern of survivors; and classes too large for the component search as
a count per link instead of a dict entry per link.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simulator.config.scenario import build_scenario  # noqa: E402
from simulator.hardware.topology import build_topology  # noqa: E402
from simulator.replay.engine import replay  # noqa: E402
from simulator.report.summary import summarize  # noqa: E402
from simulator.schedule.build import build_schedule  # noqa: E402


def scenario(dispatcher: str):
    return build_scenario({"name": f"deepseek-v3-2048-{dispatcher}", "hardware": "dgx-h100", "nodes": 256,
                           "model": {"preset": "deepseek-v3", "seq_len": 4096},
                           "training": {"micro_batch": 1, "global_batch": 4096, "recompute": "full"},
                           "parallel": {"pp": 16, "ep": 64, "zero": 1, "moe_dispatcher": dispatcher}})


def main() -> None:
    for dispatcher in ("alltoall", "deepep"):
        scn = scenario(dispatcher)
        t0, c0 = time.perf_counter(), time.process_time()
        sched = build_schedule(scn)
        build_wall, build_cpu = time.perf_counter() - t0, time.process_time() - c0
        topo = build_topology(scn.profile, scn.nodes)
        t0, c0 = time.perf_counter(), time.process_time()
        trace = replay(sched, topo)
        replay_wall, replay_cpu = time.perf_counter() - t0, time.process_time() - c0
        step = f" step={summarize(trace, sched, scn).step_time_s:.2f} s"
        print(f"{dispatcher:9s} GPUs={scn.n_gpus} dp={scn.dp} ep={scn.parallel.ep} expert-dp={scn.expert_dp} "
              f"micro-batches={scn.n_micro} roles={len(sched.programs)} ops={sched.n_ops} "
              f"schedule={build_wall:.2f} s wall ({build_cpu:.2f} CPU) replay={replay_wall:.2f} s wall "
              f"({replay_cpu:.2f} CPU){step}", flush=True)


if __name__ == "__main__":
    main()

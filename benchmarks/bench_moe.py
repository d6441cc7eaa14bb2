"""Benchmark: DeepSeek-V3 on 2,048 H100 (EP 64, PP 16, TP 1, DP 128 with the distributed
optimizer; the DeepSeek-V3 report's plan, arXiv:2412.19437 §3.2), 32 micro-batches per pipeline.

Targets (issue 13): the schedule builds in under 2 s and one step replays in under 10 s on two
cores. Prints, per token dispatcher, the build and replay times (wall and CPU), the op counts,
the simulated ranks and the step time. Run: ``python benchmarks/bench_moe.py``.

Last measured (2-core machine shared with other jobs): the schedule builds in 1.05 CPU s
(alltoall, 123,586 ops) and 1.00 CPU s (deepep, 134,722 ops), under the 2 s target. The replay
misses its target by far: with the alltoall dispatcher it had not finished after 195 CPU s. A
profile of the same plan at 2 micro-batches per pipeline (global batch 256: 43 CPU s) puts the
time in the flow network (``replay/links.py`` ``_update``/``_admit``/``_complete``, about
865,000 flow-rate updates): each All-to-All of a 64-rank EP group spanning 8 nodes is replayed
flow by flow, sharing the NICs with the pipeline's sends and other stages' All-to-Alls. The
schedule side is not what bounds it.

With 8 micro-batches per pipeline (global batch 1,024), measured back to back on the same main
(load ~5 on 2 cores), the replay took 160.6 -> 87.0 CPU s once it kept CPython's cyclic garbage
collector off its long-lived objects and the flow network did less Python per flow (collections,
timed with gc.callbacks: 24.8 -> 0.4 s); the same step, 9.478000920416282 s, and 30,057 events.
What is left is still per-flow Python in the flow network: each All-to-All's 4,032 flows are
admitted, re-shared and completed one by one once the fabric's spine links join them to other
stages' All-to-Alls and the pipeline's sends; the 10 s target needs those flows handled in
batches or timed in closed form.
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

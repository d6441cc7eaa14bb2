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

Measured (CPU s of ``scoring.run_case`` per row, before and after in two processes side by side
on a 2-core machine shared with other jobs, load ~5: +-10% noise), the MLPerf GPT-3 175B rows,
tp 4 pp 8 vp 12 with TP communication overlap, before and after (1) layer passes stamped from
their templates on every stage (the TP ring-exchange P2P keys name the layer twice, and
``transformer._relabeled`` had refused them, so stages 1-6 built and priced every pass op by
op) and (2) ``FlowNetwork._break`` settling a block's span once per call:

    row (source:index, GPUs, micro-batches/pipeline)   before   after
    mlperf_gpt3:0       512 GPUs, 128               23.6    20.2
    mlperf_gpt3:1       768 GPUs, 128               27.5    22.5
    mlperf_gpt3:2     4,096 GPUs,  16                7.3     7.7
    mlperf_gpt3:3     6,144 GPUs,  16                8.4     7.9
    mlperf_gpt3:4     8,192 GPUs,  16               11.3     9.5
    mlperf_gpt3:5    10,240 GPUs,   8               14.5    13.9
    mlperf_gpt3:6    10,752 GPUs,   8               20.8    17.7
    mlperf_gpt3:7    10,752 GPUs,   8 (Azure)       21.3    17.9
    mlperf_gpt3_v30:0   512 GPUs, 128               26.2    23.2
    mlperf_gpt3_v30:1   768 GPUs, 128               32.0    22.3
    mlperf_gpt3_v30:2   768 GPUs, 128 (CoreWeave)   29.5    26.5
    mlperf_gpt3_v30:3 1,536 GPUs,  64 (CoreWeave)   17.8    16.7
    mlperf_gpt3_v30:4 3,584 GPUs,  24 (CoreWeave)    9.6     8.8
    total                                          249.7   215.0

Every predicted step time the same float, on these 13 rows and 28 rows of llama3, megascale,
nemo_cp, usp, megatron2022, mcore2024, nemo2407, bridge_dense and megatron2021_zero3. The
128-micro-batch rows are not folded by the two-replay fold (``fold.fold_count``: the two
reduced steps would replay 104 of the 128 micro-batches); under cProfile the 512-GPU row is the
replay's per-op loop (``engine._stream``, SimPy's ~2.2 M events) more than the flow network,
spread over many functions (no one above 12% of the time).

Since, the single-replay fold (``fold.fold_count_once``) replays those rows with 48
micro-batches, the same step times to 1.1e-13 (``scoring.run_case`` CPU s, machine load ~3 on 2
cores): mlperf_gpt3:0 16.4 -> 10.1, :1 17.0 -> 10.5, mlperf_gpt3_v30:0 20.8 -> 10.3, :1 19.9 ->
11.1, :2 20.8 -> 12.2; ``python -m simulator.e2e_validation --jobs 1 --source mlperf_gpt3
--source mlperf_gpt3_v30`` 191 -> 156 s wall.

The fold's checks at 1e-9 of the step instead of 1e-12 (``fold._REL_TOL``: a few cool-down ops
of the step with one more period end nanoseconds apart, the flow model settling near-simultaneous
flow ends in event order): bridge_moe:1 (Qwen3-235B, 256 H100, tp 2 pp 8 vp 4 ep 32, 512
micro-batches; 3.9 M events unfolded) 226 -> 45 s, step 69.85088153 -> 69.85088157 s; every row in
two processes (``scoring.run_case``) 815 -> 645 CPU s, 323 s wall.

Since, send/recv on idle links held by their time alone (``replay/sendrecv.py``: one timer per
matched send/recv instead of the network's rate updates, called back onto the network when
traffic arrives; those that meet traffic put on as one phase), every pass with P2P ops stamped
by a generated stamper (``transformer._restamp_p2p``; they were stamped op by op) and
``symmetry._p2p_offsets`` reading P2P ops only. CPU s of ``scoring._simulate`` per row, the
unchanged tree and the changed one one after the other in the same order, then in the other
order (machine speed drifts by 10-20% over minutes on this 2-core machine):

    row (source:index)      first order      other order
    bridge_dense_2604:3    16.73 -> 12.93   14.40 -> 12.44
    bridge_dense_2604:6          -          37.29 -> 29.19
    mlperf_gpt3:6          14.01 -> 12.60   11.83 -> 11.76
    mlperf_gpt3:0          11.97 -> 10.49    9.52 ->  9.87
    dgxc_gpt3:0             8.68 ->  6.59    7.59 ->  6.35
    modelzoo_qwen3:0        3.43 ->  3.39    3.61 ->  3.40
    vtrain_multi:50         0.65 ->  0.53    0.61 ->  0.51
    sum (13 and 7 rows)    56.8  -> 47.7    84.9  -> 73.5

Every step time the same to the 12 digits printed. Under cProfile, Llama 3.1 405B at tp 4 pp 16
vp 8 on GB200 (bridge_dense_2604:6) ran 0.49 million network rate updates before and 0.09
million after; what is left of it is the replay's per-op loop and building the full program
(3.4 million ops, for the fold's checks and the reports) besides the replayed one.

Since, a layer pass's send/recv keys hold a placeholder for the micro-batch its tag names
(``ir.MB_PLACEHOLDER``, ``ir.transfer_key``), so a pass stamped from its template keeps the
template's transfers instead of making one per send and receive with the digits in its key.
CPU s of ``build_schedule`` of the full step (the least of two builds, the unchanged tree and the
changed one alternately, twice): bridge_dense_2604:5 (Llama 3.1 405B, tp 4 pp 16 vp 4, 384
micro-batches, 3.5 million ops) 6.63/6.81 -> 4.32/4.07, mlperf_gpt3:0 1.90/1.82 -> 1.48/1.40,
dgxc_gpt3:0 0.87/0.82 -> 0.63/0.60; ``scoring._simulate`` of the first 23.3 -> 18.6 and 22.0 ->
20.2 s in the two orders. Every step time the same to the 12 digits printed (13 rows with TP
ring exchange, context-parallel and ring-attention rings). The whole regeneration
(``bench_regeneration.py e2e``, the same machine an hour apart): 288.8 s wall, 572 CPU s before;
259.5 s wall, 514 CPU s after; 251.6 s wall, 497 CPU s once check 3 of the fold read the reduced
replay's issue times from its table instead of pricing the reduced program again
(``fold._full_issue``). ``validation-e2e.md`` regenerated byte for byte the same. A 1F1B
row with many micro-batches still spends more on building its full program than on its replay
(vTrain's GPT-175B at tp 8 pp 32 with 384 micro-batches: 1.66 s of 4.3, the two reduced replays
0.82 s): the fold's check 1 reads every op of it.
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

"""CPU cost of simulating one plan, on the cases the plan-search issue names. Prints figures,
asserts nothing; every case runs in a fresh process (its own peak RSS, no warm caches).

1. ``sweep``: GPT-3 175B on 1,024 A100 (scenarios/gpt3-175b-3d-a100.yaml), the plans a sweep
   simulates (every valid plan that fits in memory), or every k-th of them (``--every k``):
   CPU seconds per plan and their mean. Target: mean <= 1 s.
2. ``405b``: Llama-3 405B, seq 8192, on DGX H100 with the Llama 3 paper's plan (arXiv:2407.21783,
   Table 4: TP 8, PP 16, 16 micro-batches per pipeline) at 1,024, 16,384 and 100,352 GPUs
   (DP 8, 128, 784): CPU seconds per step. Target: <= 2 s at 16,384, flat in the GPU count.
3. ``alltoall``: an All-to-All over 8,192 H100 ranks at the 24 sizes of bench_collectives
   (8 B .. 64 MiB): CPU seconds and peak RSS.
4. ``cp``: context parallelism, one role per CP index: the e2e row "LLAMA2-7B H100 1024K tp8 pp1
   cp32 dp4 1024 GPUs" (source nemo_cp), scenarios/llama3-70b-cp-p2p-128k-h100.yaml (cp 8, p2p)
   and scenarios/llama3-8b-ring-attention-128k.yaml (cp 16, ring): CPU seconds per step.

    python benchmarks/bench_plan_cost.py [sweep|405b|alltoall|cp ...] [--every K] [--plans LABEL,LABEL]

Last measured for ``cp`` (2-core machine shared with other jobs), before -> after the CP roles
of a stage shared one program where the pattern gives every CP index the same ops (p2p, a2a,
a2a+p2p): built once by build_schedule and priced once by compute_times (one RoleTable per
distinct program). nemo_cp cp 32: 12.3 -> 6.3 CPU s (cProfile before: 5.3 s in build_schedule
and 2.5 s in RoleTable, of 28 s profiled; after, what is left is the event loop, 315,508 stream
resumes of 32 ranks x their programs, and link_owners, 2.2 s), same step 9.3980 s and 422,145
events. llama3-70b-cp-p2p-128k-h100: 3.41 -> 1.92 s, same step 6.9973 s. The ring scenario's
roles differ by rank (its causal work grows with the rank): 4.9 -> 5.1 s (load), unchanged.
Then link_owners gathered each owner's links once instead of claiming them per rank and per
collective size: at cp 32 it took 1.74 -> 0.01 CPU s (plan cache warm for both, same owners);
the row 7.9 -> 7.1 s measured back to back under load (same step, same events).

Last measured (2-core machine shared with other jobs, so +-10-40%), before -> after compute
blocks took in the collectives between their kernels (docs/sweep.md, "What one plan costs"):
405b at 1,024 / 16,384 / 100,352 GPUs: 2.52 / 3.41 / 7.77 -> 2.25 / 3.30 / 7.55 CPU s, events
105,467 / 102,921 / 101,125 -> 49,942 / 47,428 / 45,534. sweep (every 8th plan): tp1 pp8 dp128
z2 2.87 -> 2.80 s, tp2sp pp1 dp512 z3 3.44 -> 3.54 s (same events: their collectives share
links or have no neighbour kernels), tp2sp pp32 dp16 z2 43.70 -> 43.76 s (1,478,965 events
either way: its TP collectives share NVLink with the per-micro-batch ZeRO-2 ReduceScatters and go
flow by flow), tp4sp pp8 dp32 z1 9.22 -> 8.89 s (514,527 events either way: TP 4 shares the
node's NVLink with DP), tp4sp pp64 dp4 z0 83.2 -> 92.0 s (4,304,588 events either way; the
difference is the load), tp8sp pp4 dp32 z2 14.65 -> 8.20 s (368,712 -> 159,455 events: TP 8 owns
the node's NVLink). Mean of these six plans 26.2 -> 26.5 s: the deep plans whose TP shares links
dominate it.

Then mirrored collectives on shared links ran by their time alone while their links were idle
(reserved links, docs/architecture.md), and phases of one pattern shared one decomposition:
sweep (every 8th of 53 plans, under load): tp1 pp8 dp128 z2 2.90 s, tp2sp pp1 dp512 z3 2.89 s,
tp2sp pp32 dp16 z2 42.9 s (1,478,965 -> 882,932 events), tp4sp pp8 dp32 z1 7.85 s (514,527 ->
122,645), tp4sp pp64 dp4 z0 74.3 s (4,304,588 -> 1,288,341), tp8sp pp4 dp32 z2 12.6 s (load;
its events are unchanged), tp8sp pp32 dp4 z1 45.1 s: mean 26.9 s, bound by ops, not events.
405b: 2.40 / 3.52 / 8.34 CPU s (another benchmark running beside it; 2.57 / 3.07 / 7.88 alone).

Then repeated steady micro-batches were folded (replay/fold.py: the step replayed with M' and
M' + 1 micro-batches, checked, and expanded): sweep (every 8th of 53 plans, the all-rows e2e
test running beside it): tp1 pp8 dp128 z2 3.01 s, tp2sp pp1 dp512 z3 2.27 s (neither folds: 12
and 3 micro-batches), tp2sp pp32 dp16 z2 39.6 s (96 micro-batches over 32 stages: the two
reduced steps would hold more than 3/4 of them, so it is not folded), tp4sp pp8 dp32 z1 8.09 ->
6.78 s, tp4sp pp64 dp4 z0 89.7 -> 43.0 s (1,288,257 -> 480,473 events, 315 of 384 micro-batches
folded), tp8sp pp4 dp32 z2 12.96 s, tp8sp pp32 dp4 z1 24.4 -> 21.3 s (347 of 384 folded): mean
27.0 -> 18.4 s. Step times as unfolded (1e-13). What is left of a folded deep plan is building
the full schedule (every op of every stage, for the trace) and checking it against the reduced
one, not the replay. 405B at 16 micro-batches per pipeline does not fold (too few).

Then stamped ops were built by setting their slots directly (schedule/ir.py MAKE_OP) and the
replay's RoleTable bound its look-ups once (same programs, pickled byte for byte; same tables),
measured before -> after under a load of 8-9 on 2 cores (+-20% between runs of the same code):
full schedule of tp4sp pp64 dp4 z0 (1,718,531 ops) 14.1 -> 8.4 CPU s back to back. sweep
(every 8th of 53 plans): tp1 pp8 dp128 z2 2.52 -> 2.90 s, tp2sp pp1 dp512 z3 2.54 -> 3.10 s,
tp2sp pp32 dp16 z2 40.7 -> 44.1 s, tp4sp pp8 dp32 z1 8.35 -> 6.56 s, tp4sp pp64 dp4 z0 46.7 ->
46.9 s, tp8sp pp4 dp32 z2 15.8 -> 15.2 s, tp8sp pp32 dp4 z1 27.2 -> 24.0 s: mean 20.6 -> 20.4 s,
within that noise (tp4sp pp64's build saves 5.7 s of its 47 s when timed alone). 405b: 2.49 / 3.14 / 7.78 -> 2.21 / 2.37 / 5.26 CPU s (same events); at
100,352 GPUs the topology (827,904 links, 1.8 s) and the DP rings' flow patterns grow.

Then the replay kept CPython's cyclic garbage collector off its long-lived objects (the
schedule's ops frozen at its start, folding's reduced schedules frozen as built, the youngest
generation collected every 50,000 allocations) and the flow network did less Python per flow.
Measured back to back on the same main (load 5-8 on 2 cores), sweep (every 8th of 53 plans):
tp1 pp8 dp128 z2 2.71 -> 2.76 s, tp2sp pp1 dp512 z3 2.48 -> 2.98 s, tp2sp pp32 dp16 z2 37.3 ->
36.1 s, tp4sp pp8 dp32 z1 7.90 -> 5.08 s, tp4sp pp64 dp4 z0 40.9 -> 33.9 s, tp8sp pp4 dp32 z2
13.0 -> 13.0 s, tp8sp pp32 dp4 z1 16.8 -> 18.8 s: mean 17.3 -> 16.1 s (same steps and events).
Collections timed with gc.callbacks in the replay of tp8sp pp32 dp4 z1: 2.38 -> 0.08 s.

Then the schedule was built inside the replay's spare of the collector and frozen as built, a
finished replay dropped its reference cycles (replay/collector.py), multi_tensor_launches was
cached and stamped ops were made without an argument list per op (same programs, byte for byte).
Measured back to back on the same machine (load 2-5 on 2 cores), main -> this: sweep (every 8th
of 53 plans): tp1 pp8 dp128 z2 1.01 -> 1.03 s, tp2sp pp1 dp512 z3 1.04 -> 1.13 s, tp2sp pp32
dp16 z2 13.73 -> 13.13 s, tp4sp pp8 dp32 z1 2.24 -> 2.12 s, tp4sp pp64 dp4 z0 12.55 -> 11.37 s,
tp8sp pp4 dp32 z2 4.25 -> 4.22 s, tp8sp pp32 dp4 z1 6.93 -> 6.22 s: mean 5.96 -> 5.60 s (same
steps and events). 405b: 0.71 / 0.98 / 2.70 -> 0.69 / 0.96 / 2.51 CPU s. Where the deep plans'
time goes now (process time per phase, no profiler): tp2sp pp32 dp16 z2 (not folded: its
per-micro-batch ZeRO-2 ReduceScatters share NVLink with TP, and a fold's checks refuse it) 11.1 s
of 12.7 in the event loop (881,431 events; the flow network and the TP collectives that go on it);
tp4sp pp64 dp4 z0: event loop 5.3 s (two reduced replays), three builds 4.4 s, fold check 1 1.25 s,
role tables 0.74 s; tp8sp pp32 dp4 z1: builds 3.4 s, event loop 1.4 s, fold check 1 1.15 s.
With ComputeRun.plan's loop lighter as well, a second back-to-back pair (load 5): main 5.87 ->
5.66 s mean (tp4sp pp64 dp4 z0 12.62 -> 11.68, tp8sp pp32 dp4 z1 6.99 -> 6.45, tp8sp pp4 dp32
z2 4.61 -> 4.45, tp2sp pp32 dp16 z2 12.62 -> 13.03); 405b 0.79 / 1.02 / 2.77 -> 0.72 / 1.03 /
2.54 s. Tried and not kept: collectives timed alone taken into a compute block beside its
kernels (the SP backward's AllGather beside the dgrad GEMM, the ReduceScatter beside the wgrad),
same steps (to 3e-14): events 189,356 -> 110,201 (tp8sp pp32 dp4 z1) and 164,328 -> 128,842
(tp8sp pp4 dp32 z2), but the event loop 5-10% slower, since every start or end of communication
on the rank re-plans the rest of a now much longer block: events are not what a plan costs.

Then what grew with the GPU count was cut (cProfile of 100,352 against 1,024 GPUs): the
topology was built link by link (827,904 link directions, 1.65 s) and is now built in blocks
whose ids by role are reshaped aranges (0.03 s; names only with the graph); the DP ring's hops
(~37k over 784 nodes) are routed in one route_matrix call; link loads are summed over a plan's
distinct links, not by a bincount as long as the fabric's links; link_owners, the replay's
held links and checked_flows read a plan's arrays instead of its Flow objects. Back to back
against the same main (load 2.5 on 2 cores), 405b: 0.71 / 1.00 / 2.60 and 0.73 / 1.01 / 2.65
-> 0.72 / 0.86 / 1.41 and 0.73 / 0.85 / 1.42 CPU s, peak RSS at 100k 582 -> 356 MiB; same steps
(repr) and events. What still grows (100k - 1k, no profiler, ~0.6 s): replay/solo_phases.py
(phase shapes walk every flow of the 784-member ring, link_totals bincounts over every link
id), link_owners' per-link claims and the ring patterns themselves (flows in proportion to DP).

Then that growth was cut (cProfile of 100,352 against 1,024 GPUs; tests/unit/test_large_dp_rings.py
checks each path against the explicit one): a phase none of whose links two flows cross (a DP
ring's hops) is decomposed as arrays, every flow a component alone made on first access
(solo_phases.LoneComponents), a scaled phase shares its base's components, flow tables and
checks (ScaledComponents, PhaseSpecs, the pattern key as the bytes of the flows' arrays),
link_totals sums over the phase's links, not a bincount over the fabric; channels that run the
same ring are routed once and the hops merged with one np.unique over their routes; link_owners
counts owners with one sort and answers as arrays (LinkOwners.owned_by); no list as long as the
fabric is made (link kinds by runs, scalar routes from the tables' arrays, the network's
capacities as an array.array above 65,536 links). Back to back against the same main (load 8
on 2 cores), 405b: 0.89 / 0.98 / 1.57 and 0.84 / 0.91 / 1.60 -> 0.91 / 0.85 / 1.01 and 0.85 /
0.86 / 1.06 CPU s, peak RSS at 100k 349 -> 202 MiB; the same steps (repr), events and goldens
(bit for bit). What still grows (~0.15 s, best of 3, by timers): the 30 DP ring patterns and
their plans (~0.05 s: a route and a tuple per distinct hop), the network's per-event array
passes over a ring's ~5k links and its 784 lone components (~0.05 s), the topology and the
network's arrays over ~800k links (~0.03 s).

Then the ZeRO-2 plans that a pruned sweep still replays were cut (docs/sweep.md, "What one plan
costs"): folding accepts the gradient clipping that waits for every micro-batch's ReduceScatter,
small components' max-min rates are kept by routes and caps, a broken ring hop's few flows are
grouped and its components found without numpy. The five plans the GPT-3 175B sweep simulates,
back to back under a load of 6-8 on 2 cores (mean of two): tp4sp pp4 dp64 z1 1.37 -> 1.37 s,
tp4sp pp8 dp32 z1 2.41 -> 2.39 s, tp4sp pp2 dp128 z2 2.67 -> 2.11 s, tp4sp pp4 dp64 z2 7.35 ->
5.05 s, tp4sp pp8 dp32 z2 14.71 -> 5.47 s (459,611 -> 254,959 events, folded): mean 5.70 ->
3.28 s; same steps (the folded one 2e-12 s apart). ``--plans LABEL,LABEL`` times those plans only.

Then what symmetry reads over every rank was made arrays (replay/engine._nic_key: one node's NICs
tiled over the nodes, ~0.07 s as a call per rank at 100k ranks; symmetry.nic_private_axes: the
NIC overlap by a marker array, not np.intersect1d's two hash-based np.unique), the DP rings'
routed and merged hops were shared between channel counts (a DP group of one GPU per node runs
every channel on one ring: 47 -> 32 route_matrix + merge calls at 100k GPUs), and the network's
unsorted distinct links and a compute run's held links took sorted_distinct. 405b, best of three
interleaved runs against the same main (load 2.5-3 on 2 cores): 0.86 / 0.87 / 1.10 -> 0.83 /
0.89 / 0.97 CPU s; the same steps, events and bundled scenarios' ``run --json`` (bit for bit).
What still grows (100k - 1k, by timers): link_owners and the plans it builds (~0.05 s: 16 DP
groups' ring patterns, their flow arrays and layouts, a Python tuple per distinct hop), the
phase shapes of the 784-hop rings (~0.03 s), the network's per-event passes (~0.03 s) and its
and the topology's arrays over ~830k links (~0.03 s: array("d") of the capacities, -1-filled
owner and reservation arrays).

Then a 1F1B step too short to keep six steady periods and pay keeps four (replay/fold.py
fold_count) and builds of one role's shapes share the layer-pass templates (schedule/build.py):
the same five plans back to back, load 3-6 on 2 cores (mean of two): tp4sp pp4 dp64 z1 1.40 ->
1.51 s (now folded: the tail both reduced replays repeat outweighs 9 micro-batches), tp4sp pp8
dp32 z1 2.32 -> 2.33 s, tp4sp pp2 dp128 z2 2.23 -> 2.17 s, tp4sp pp4 dp64 z2 5.16 -> 3.63 s
(232,936 -> 146,399 events, 17 of 24 micro-batches folded), tp4sp pp8 dp32 z2 5.44 -> 5.62 s:
mean 3.31 -> 3.05 s; same steps (4e-13 s apart).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SWEEP_LIST = r"""
import json, sys
from simulator.config.scenario import load_scenario
from simulator.sweep.plans import enumerate_plans, iter_checked
scn = load_scenario(sys.argv[1])
print(json.dumps([c.label(s.dp) for c, s, _, r in iter_checked(scn, enumerate_plans(scn)) if not r]))
"""

# The tail every step-timing child runs: one simulated step of `{scenario}`, CPU time and size as JSON.
_TIMED_STEP = r"""
c0 = time.process_time()
sim = simulate_scenario({scenario})
print(json.dumps({{"cpu_s": time.process_time() - c0, "step_s": sim.report.step_time_s,
                  "ranks_simulated": sim.trace.stats.ranks_simulated, "events": sim.trace.stats.events,
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""

SWEEP_PLAN = r"""
import json, resource, sys, time
from simulator.config.scenario import load_scenario
from simulator.simulation import simulate_scenario
from simulator.sweep.plans import enumerate_plans, iter_checked
scn = load_scenario(sys.argv[1])
plan = next(s for c, s, _, r in iter_checked(scn, enumerate_plans(scn)) if not r and c.label(s.dp) == sys.argv[2])
""" + _TIMED_STEP.format(scenario="plan")

LLAMA_405B = r"""
import json, resource, sys, time, tempfile
from pathlib import Path
from simulator.config.scenario import build_scenario
from simulator.simulation import simulate_scenario
dp = int(sys.argv[1])
scn = build_scenario({"name": f"llama3-405b-{128 * dp}", "hardware": "dgx-h100", "nodes": 16 * dp,
                      "model": {"preset": "llama3-405b", "seq_len": 8192},
                      "training": {"micro_batch": 1, "global_batch": 16 * dp, "dtype": "bf16",
                                   "recompute": "none"},
                      "parallel": {"tp": 8, "sequence_parallel": True, "pp": 16, "zero": 1}},
                     base_dir=Path(tempfile.mkdtemp()))
""" + _TIMED_STEP.format(scenario="scn")

ALLTOALL = r"""
import json, resource, time
from simulator.config.hardware import load_profile
from simulator.costs.model import CostModel
from simulator.hardware.topology import build_topology
from simulator.replay.single_collective import time_collective
c0 = time.process_time()
costs = CostModel(build_topology(load_profile("dgx-h100"), 1024))
res = [time_collective("alltoall", list(range(8192)), 8 << i, costs) for i in range(24)]
print(json.dumps({"cpu_s": time.process_time() - c0, "busbw_64MiB_GBps": res[-1].busbw / 1e9,
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


CP_ROW = r"""
import json, resource, sys, time
from simulator.config.scenario import build_scenario
from simulator.e2e_validation.sources import SOURCES, cases
from simulator.simulation import simulate_scenario
case = next(c for c in cases([s for s in SOURCES if s.key == "nemo_cp"]) if c.label == sys.argv[1])
scn = build_scenario(case.scenario, source=f"<e2e:{case.label}>")
""" + _TIMED_STEP.format(scenario="scn")

CP_SCENARIO = r"""
import json, resource, sys, time
from simulator.config.scenario import load_scenario
from simulator.simulation import simulate_scenario
scn = load_scenario(sys.argv[1])
""" + _TIMED_STEP.format(scenario="scn")


def _child(code: str, *args: str) -> dict | str:
    out = subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, capture_output=True, text=True)
    if out.returncode:
        return (out.stderr.strip().splitlines() or [f"exit {out.returncode}"])[-1]
    return json.loads(out.stdout.strip().splitlines()[-1])


def sweep(every: int, plans: list[str] | None = None) -> None:
    path = str(ROOT / "scenarios" / "gpt3-175b-3d-a100.yaml")
    labels = _child(SWEEP_LIST, path)
    if isinstance(labels, str):
        print(f"sweep: failed: {labels}")
        return
    sample = [x for x in labels if x in plans] if plans else labels[::every]
    print(f"GPT-3 175B on 1,024 A100: {len(labels)} plans a sweep simulates; timing {len(sample)} "
          f"({'those named' if plans else f'every {every}'})")
    print(f"{'plan':<28}{'CPU s':>8}{'step s':>9}{'ranks':>7}{'events':>11}{'peak MiB':>10}")
    cpu = []
    for label in sample:
        r = _child(SWEEP_PLAN, path, label)
        if isinstance(r, str):
            print(f"{label:<28} failed: {r}")
            continue
        cpu.append(r["cpu_s"])
        print(f"{label:<28}{r['cpu_s']:>8.2f}{r['step_s']:>9.3f}{r['ranks_simulated']:>7}{r['events']:>11,}"
              f"{r['peak_rss_mib']:>10.0f}", flush=True)
    if cpu:
        print(f"mean CPU per simulated plan: {sum(cpu) / len(cpu):.2f} s (max {max(cpu):.2f} s)  target <= 1 s")


def llama_405b() -> None:
    print("Llama-3 405B, seq 8192, TP 8 PP 16, 16 micro-batches per pipeline, DGX H100")
    print(f"{'GPUs':>8}{'DP':>5}{'CPU s':>8}{'step s':>9}{'ranks':>7}{'events':>11}{'peak MiB':>10}")
    for dp in (8, 128, 784):
        r = _child(LLAMA_405B, str(dp))
        if isinstance(r, str):
            print(f"{128 * dp:>8}{dp:>5} failed: {r}")
            continue
        print(f"{128 * dp:>8,}{dp:>5}{r['cpu_s']:>8.2f}{r['step_s']:>9.3f}{r['ranks_simulated']:>7}{r['events']:>11,}"
              f"{r['peak_rss_mib']:>10.0f}", flush=True)
    print("target: <= 2 s CPU per step at 16,384 GPUs, flat from 1k to 100k")


def alltoall() -> None:
    r = _child(ALLTOALL)
    if isinstance(r, str):
        print(f"All-to-All, 8,192 ranks: failed: {r}")
        return
    print(f"All-to-All over 8,192 H100 ranks, 24 sizes: {r['cpu_s']:.1f} s CPU, peak RSS {r['peak_rss_mib']:.0f} MiB, "
          f"busbw at 64 MiB {r['busbw_64MiB_GBps']:.1f} GB/s")


def context_parallel() -> None:
    print("Context parallelism: one role per CP index")
    print(f"{'case':<44}{'CPU s':>8}{'step s':>9}{'ranks':>7}{'events':>11}{'peak MiB':>10}")
    row = "LLAMA2-7B H100 1024K tp8 pp1 cp32 dp4 1024 GPUs"
    runs = [(f"nemo_cp {row.split(' 1024 GPUs')[0]}", CP_ROW, row)]
    runs += [(name, CP_SCENARIO, str(ROOT / "scenarios" / f"{name}.yaml"))
             for name in ("llama3-70b-cp-p2p-128k-h100", "llama3-8b-ring-attention-128k")]
    for name, code, arg in runs:
        r = _child(code, arg)
        if isinstance(r, str):
            print(f"{name:<44} failed: {r}")
            continue
        print(f"{name:<44}{r['cpu_s']:>8.2f}{r['step_s']:>9.3f}{r['ranks_simulated']:>7}{r['events']:>11,}"
              f"{r['peak_rss_mib']:>10.0f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("cases", nargs="*", default=["sweep", "405b", "alltoall", "cp"])
    ap.add_argument("--every", type=int, default=4, help="time every k-th plan of the sweep (1: all)")
    ap.add_argument("--plans", default="", help="time only these sweep plans (labels, comma-separated), e.g. "
                    "those a pruned sweep replays: 'tp4sp pp4 dp64 z1 mb1,tp4sp pp8 dp32 z2 mb1'")
    args = ap.parse_args()
    named = [x.strip() for x in args.plans.split(",") if x.strip()]
    for case in args.cases:
        {"sweep": lambda: sweep(args.every, named), "405b": llama_405b, "alltoall": alltoall,
         "cp": context_parallel}[case]()


if __name__ == "__main__":
    main()

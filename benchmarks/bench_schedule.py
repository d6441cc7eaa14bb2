"""Benchmark: build the schedule of GPT-3 175B, TP8 (SP) PP8 DP16 on 1,024 GPUs, 96 micro-batches.

Target (issue 3): under 2 s and 1 GB. Prints the wall time, the peak Python heap (tracemalloc
in a second run, which slows it) and the op counts. Run: ``python benchmarks/bench_schedule.py``.
"""

from __future__ import annotations

import resource
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simulator.config.scenario import build_scenario  # noqa: E402
from simulator.schedule.build import build_schedule  # noqa: E402

PROFILE = """name: bench-a100
gpu: {name: A100, arch: ampere, sms: 108, bf16_TFLOPS: 312, fp16_TFLOPS: 312, fp32_TFLOPS: 19.5,
      hbm_GiB: 80, hbm_GBps: 2039, gemm_efficiency: [{flops: 1.0e12, efficiency: 0.7}]}
node: {gpus: 8, scale_up: {kind: nvswitch, link_GBps: 300, latency_us: 1.0},
       pcie: {gen: 4, GBps: 32}, nics: {count: 8, Gbps: 200, latency_us: 2.0}}
"""


def scenario(pp_schedule: str = "1f1b"):
    tmp = Path(tempfile.mkdtemp())
    (tmp / "p.yaml").write_text(PROFILE)
    parallel = {"tp": 8, "sequence_parallel": True, "pp": 8, "zero": 1}
    if pp_schedule == "interleaved":
        parallel.update(pp_schedule="interleaved", vp=3)
    return build_scenario({"name": "gpt3-175b-1024", "hardware": "p.yaml", "nodes": 128,
                           "model": {"preset": "gpt3-175b", "seq_len": 2048},
                           "training": {"micro_batch": 1, "global_batch": 1536, "recompute": "selective"},
                           "parallel": parallel}, base_dir=tmp)


def main() -> None:
    for schedule in ("1f1b", "interleaved"):
        scn = scenario(schedule)
        t0, c0 = time.perf_counter(), time.process_time()
        sched = build_schedule(scn)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        tracemalloc.start()
        build_schedule(scn)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{schedule:12s} GPUs={scn.n_gpus} dp={scn.dp} micro-batches={scn.n_micro} "
              f"roles={len(sched.programs)} ops={sched.n_ops} build={wall:.2f} s wall, {cpu:.2f} s CPU "
              f"peak heap={peak / 2**20:.0f} MiB max RSS={rss:.0f} MiB")


if __name__ == "__main__":
    main()

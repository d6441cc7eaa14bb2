"""Benchmark: parse synthetic PyTorch profiler (Kineto) traces of growing size.

Target (issue 15): linear in the trace size, a 300 MB trace in under a minute, gzipped traces
decompressed as they are parsed. Each trace is one training thread issuing layers of
``aten::linear > aten::addmm > cudaLaunchKernel`` (a GEMM kernel on the GPU stream, tied by
its correlation id) and ``record_param_comms > cudaLaunchKernel`` (an NCCL AllReduce kernel),
all under one long ``ProfilerStep`` op, as a real step's trace is: thousands of sibling ops
under one parent, the case where scanning every earlier op was quadratic (3 MB in 1.3 s, 10 MB
in 16.7 s, 30 MB not done in 120 s).

Prints, per size: MB of JSON, events, parse seconds, MB/s and the peak RSS of the process.
Run: ``python benchmarks/bench_kineto.py [--sizes 3 10 30 100 300] [--gzip]``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simulator.calibration.kineto import parse_kineto_trace  # noqa: E402

GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1_execute_segment_k_off_kernel"
NCCL = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


def _layer(i: int, t: float) -> list[dict]:
    """The events of one layer starting at time t (us): a GEMM and an AllReduce."""
    corr_g, corr_c = 2 * i, 2 * i + 1
    cpu = {"pid": 1, "tid": 1}
    return [
        {"ph": "X", "cat": "cpu_op", "name": "aten::linear", "ts": t, "dur": 30.0, **cpu,
         "args": {"External id": corr_g, "Input Dims": [[4, 4096, 4096], [4096, 4096], [4096]],
                  "Input type": ["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"]}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "ts": t + 2, "dur": 25.0, **cpu,
         "args": {"External id": corr_g, "Input Dims": [[4096], [16384, 4096], [4096, 4096]],
                  "Input type": ["c10::BFloat16", "c10::BFloat16", "c10::BFloat16"]}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": t + 5, "dur": 8.0, **cpu,
         "args": {"correlation": corr_g}},
        {"ph": "X", "cat": "kernel", "name": GEMM, "pid": 0, "tid": 7, "ts": t + 40, "dur": 410.0,
         "args": {"correlation": corr_g, "device": 0, "stream": 7, "grid": [132, 1, 1], "block": [384, 1, 1]}},
        {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "ts": t + 40, "dur": 20.0, **cpu,
         "args": {"Collective name": "allreduce", "dtype": "BFloat16", "In msg nelems": 16777216,
                  "Out msg nelems": 16777216, "Group size": 8, "Process Group Name": "0"}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": t + 45, "dur": 8.0, **cpu,
         "args": {"correlation": corr_c}},
        {"ph": "X", "cat": "kernel", "name": NCCL, "pid": 0, "tid": 20, "ts": t + 460, "dur": 900.0,
         "args": {"correlation": corr_c, "device": 0, "stream": 20}},
    ]


def write_trace(path: Path, megabytes: float, compress: bool) -> tuple[int, int]:
    """Write a trace of about this many MB of JSON; returns (JSON bytes, events)."""
    target = int(megabytes * 1e6)
    opener = gzip.open if compress else open
    written = events = 0
    with opener(path, "wt") as fh:
        head = '{"schemaVersion": 1, "distributedInfo": {"rank": 0, "world_size": 8, "backend": "nccl"}, "traceEvents": ['
        fh.write(head)
        written += len(head)
        i, t = 0, 0.0
        fh.write(json.dumps({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1,
                             "ts": 0.0, "dur": 1e12, "args": {}}))
        while written < target:
            chunk = ",\n" + ",\n".join(json.dumps(e) for e in _layer(i, t))
            fh.write(chunk)
            written += len(chunk)
            events += 7
            i, t = i + 1, t + 1500.0
        tail = "]}\n"
        fh.write(tail)
        written += len(tail)
    return written, events + 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=float, nargs="*", default=[3, 10, 30, 100, 300], help="trace sizes in MB of JSON")
    ap.add_argument("--gzip", action="store_true", help="write and read the traces gzipped")
    args = ap.parse_args()
    print(f"{'MB':>7} {'events':>10} {'parse s':>9} {'MB/s':>7} {'kernels':>9} {'peak RSS MB':>12}")
    with tempfile.TemporaryDirectory() as tmp:
        for mb in args.sizes:
            path = Path(tmp) / ("trace.json.gz" if args.gzip else "trace.json")
            size, events = write_trace(path, mb, args.gzip)
            start = time.perf_counter()
            trace = parse_kineto_trace(path)
            seconds = time.perf_counter() - start
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            kernels = len(trace.gemms) + len(trace.collectives)
            assert kernels == 2 * ((events - 1) // 7) and all(c.size_bytes for c in trace.collectives)
            print(f"{size / 1e6:7.1f} {events:10,d} {seconds:9.2f} {size / 1e6 / seconds:7.1f} {kernels:9,d} {rss:12,.0f}")
            path.unlink()


if __name__ == "__main__":
    main()

"""What PyTorch's caching allocator pays when a large request finds no cached block of its stream
and the device is full: the cost a ZeRO-3 rank near its memory limit would pay per gather.

DeepSpeed 0.3.13 gathers each parameter into two tensors allocated on its comm stream (the zeroed
gathered tensor of ``_allgather_param`` and the flat output ``ProcessGroupNCCL::allgather``
allocates for a rank list), while autograd allocates the weight's gradient on the default stream.
The caching allocator keeps freed blocks per stream (``CUDACachingAllocator.cpp``: a cached block
serves only requests of the stream it was allocated on). When a request fits no cached block of
its stream and ``cudaMalloc`` fails, ``free_cached_blocks`` waits for the outstanding events,
``cudaFree``s every unsplit cached block, of every stream, and allocates again. A rank whose two
pools cannot both stay cached then frees one pool's block and allocates the other's, every time
the stream changes. This script times, on the GPU it runs on:

* ``cudaMalloc`` and ``cudaFree`` of one block of 0.34-3.4 GB (GPT-530B's hidden state at
  micro-batch 4, its attention projection, QKV and MLP weights in fp16), through the allocator
  (``torch.empty`` after ``empty_cache``; ``del`` and ``empty_cache``);
* one gather's pattern (a zeroed tensor and a flat output of S bytes on a side stream, the output
  copied into the tensor and freed, then a gradient of S bytes on the default stream), with the
  device synchronised between the steps as 0.3.13 does, uncapped, capped with room for every
  cached block (3.2 S above a fixed live tensor) and capped with room for the live tensors only
  (2.2 S): there each gather takes the out-of-memory path twice (``num_alloc_retries``).

    python benchmarks/bench_alloc_retry.py [--iters 20]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

SIZES = (0.3355e9, 0.839e9, 2.516e9, 3.355e9)
STATS = ("num_alloc_retries", "num_device_alloc", "num_device_free")


def malloc_free_ms(nbytes: int, repeat: int = 7) -> tuple[float, float]:
    """Median ms of one cudaMalloc and one cudaFree of `nbytes` (the first of `repeat` dropped)."""
    dev = torch.device("cuda")
    m, f = [], []
    for _ in range(repeat):
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        t0 = time.perf_counter()
        x = torch.empty(nbytes, dtype=torch.uint8, device=dev)
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        del x
        torch.cuda.empty_cache()
        t3 = time.perf_counter()
        m.append(t1 - t0)
        f.append(t3 - t2)
    return 1e3 * statistics.median(m[1:]), 1e3 * statistics.median(f[1:])


def gathers(n: int, size: int, comm: torch.cuda.Stream) -> list[float]:
    """Seconds per gather of the pattern in the module docstring."""
    dev = torch.device("cuda")
    out = []
    for _ in range(n):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.cuda.stream(comm):
            param = torch.zeros(size, dtype=torch.uint8, device=dev)
            flat = torch.empty(size, dtype=torch.uint8, device=dev)
            param.copy_(flat)
            del flat
        torch.cuda.synchronize()
        grad = torch.empty(size, dtype=torch.uint8, device=dev)
        grad.fill_(1)
        del param, grad
        torch.cuda.synchronize()
        out.append(time.perf_counter() - t0)
    return out


def pingpong(size: int, iters: int, live_bytes: int = 60 * 2**30) -> dict[str, dict[str, float]]:
    total = torch.cuda.get_device_properties(0).total_memory
    comm = torch.cuda.Stream()
    res = {}
    for label, room in (("uncapped", None), ("cap 3.2 S", 3.2), ("cap 2.2 S", 2.2)):
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        cap = 1.0 if room is None else min(1.0, (live_bytes + room * size + 2**26) / total)
        torch.cuda.set_per_process_memory_fraction(cap)
        live = torch.empty(live_bytes, dtype=torch.uint8, device="cuda")
        gathers(3, size, comm)
        s0 = torch.cuda.memory_stats()
        t = gathers(iters, size, comm)
        s1 = torch.cuda.memory_stats()
        res[label] = {"ms_per_gather": 1e3 * statistics.median(t), **{k: s1.get(k, 0) - s0.get(k, 0) for k in STATS}}
        del live
    torch.cuda.set_per_process_memory_fraction(1.0)
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iters", type=int, default=20)
    args = ap.parse_args()
    torch.zeros(1, device="cuda")
    out: dict[str, object] = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__}
    for s in SIZES:
        m, f = malloc_free_ms(int(s))
        out[f"{s / 1e9:.2f} GB"] = {"cudaMalloc_ms": round(m, 3), "cudaFree_ms": round(f, 3)}
    for s in (SIZES[1], SIZES[3]):
        out[f"gather {s / 1e9:.2f} GB"] = pingpong(int(s), args.iters)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

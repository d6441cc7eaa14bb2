"""CPU cost per rank of the host loops of DeepSpeed ZeRO-3 as released in 2021, which
``zero3_impl: deepspeed-2021`` prices (simulator/schedule/zero.py, ``HOST_US``).

For every parameter it gathers, ``partition_parameters.py`` (DeepSpeed 0.3.13, ``_allgather_param``)
runs a Python loop over the N ranks: one ``narrow`` view per rank appended to a list, and a
``torch.distributed.get_rank(group=...)`` call per iteration; ``_reduce_scatter_gradient`` builds
the same list of views for every gradient. PyTorch's ``ProcessGroupNCCL`` then copies between its
flat buffer and the N views, one ``copy_`` per rank, dispatched from C++ (its launch is the
profile's ``kernel_launch_us``). After every optimizer step ``_allgather_params`` refreshes the
persistent parameters (below ``param_persistence_threshold``) with one AllGather and then, from
Python, one ``copy_`` per parameter and rank out of the gathered buffer. This script times the four
on CPU tensors with the installed
PyTorch, in CPU time of this process (``time.process_time``: a loaded machine does not inflate
it), best of ``--repeat``:

    python benchmarks/bench_zero3_host_loop.py [--ranks 2240] [--repeat 30]

``_foreach_copy_`` runs the per-tensor ``copy_`` loop in C++ as ProcessGroupNCCL does, so it
measures the dispatch without the Python call. The figures are a lower bound for 2021: Python 3.8
and PyTorch 1.8 on the DGX A100's EPYC 7742 were not faster than what runs this.
"""

from __future__ import annotations

import argparse
import tempfile
import time

import torch
import torch.distributed as dist


def best_us_per_rank(fn, n: int, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best / n * 1e6


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=2240)
    ap.add_argument("--repeat", type=int, default=30)
    args = ap.parse_args()
    n, shard = args.ranks, 1024
    dist.init_process_group("gloo", init_method=f"file://{tempfile.mktemp()}", rank=0, world_size=1)
    group = dist.new_group([0])
    flat = torch.zeros(n * shard)
    views = [flat.narrow(0, shard * i, shard) for i in range(n)]
    dst = [torch.zeros(shard) for _ in range(n)]

    def gather_loop() -> None:  # _allgather_param's loop
        parts = []
        for i in range(n):
            parts.append(flat.narrow(0, shard * i, shard))
            if i == dist.get_rank(group=group):
                pass

    def scatter_loop() -> None:  # _reduce_scatter_gradient's loop (no padded rank)
        parts = []
        for i in range(n):
            start = i * shard
            if start < n * shard and start + shard <= n * shard:
                parts.append(flat.narrow(0, start, shard))

    def copies() -> None:  # ProcessGroupNCCL's per-rank copy_ between the flat buffer and the views
        torch._foreach_copy_(dst, views)

    small = 8  # a bias or norm weight of h elements at N = h / 8 ranks: its 8-element shard
    gathered = torch.zeros(n * small)
    replicated = torch.zeros(n * small)

    def persistent_loop() -> None:  # _allgather_params' copy loop, one parameter
        for i in range(n):
            param_start = i * small
            if param_start < n * small:
                numel_to_copy = min(n * small - param_start, small)
                part_to_copy = gathered.narrow(0, param_start, numel_to_copy)
                replicated.view(-1).narrow(0, param_start, numel_to_copy).copy_(part_to_copy)

    print(f"torch {torch.__version__}, {n} ranks, CPU time per rank (best of {args.repeat}):")
    for name, fn in (("allgather loop (narrow + get_rank)", gather_loop),
                     ("reduce-scatter loop (narrow)", scatter_loop),
                     ("copy_ dispatch from C++ (_foreach_copy_)", copies),
                     ("persistent-parameter loop (narrow, view, narrow, copy_)", persistent_loop)):
        print(f"  {name:56s} {best_us_per_rank(fn, n, args.repeat):6.2f} us")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

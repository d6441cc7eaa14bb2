"""Host-side cost of issuing PyTorch ops: the CPU parts behind ``simulator/costs/host.py``.

Runs on CPU tensors of 4x4 elements, so the kernels themselves cost next to nothing and what is
timed is Python, the dispatcher and autograd. Prints, per op, the median over repeats of:

* ``torch.mul`` forward with autograd recording;
* the backward of that chain, per kernel (two ``mul`` kernels per node);
* an ``nn.Module`` call minus the ``F.linear`` it wraps (the module call's Python);
* ``torch.optim.AdamW(fused=True).step()`` over 148 and 600 parameter tensors of 4 elements,
  per tensor: the step's Python loop over its tensors (``OPT_TENSOR_US``).

The minimum over repeats is printed (overhead benchmarks read the fastest repeat: other load on
the machine only ever adds time), with the median beside it. Real layer code runs two to three
such ops per kernel the model lists: ``bench_layer_host.py`` and ``bench_gpt_block_host.py``
time whole layers (``LAYER_FWD_CPU_US``, ``LAYER_BWD_CPU_US``).

    python benchmarks/bench_host_overhead.py [--ops 200] [--repeats 9]

Needs torch (the ``[test]`` extra installs the CPU build). What CUDA adds per launch and per
backward node is not measured here (there is no GPU): ``data/kernels/h200_host_overhead.csv``.

Measured (torch 2.13 CPU, this repository's 2-core machine): the fused AdamW step's loop 3.8 us
per tensor over 148 tensors and 3.7 us over 600.
"""

from __future__ import annotations

import argparse
import statistics
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=9)
    args = ap.parse_args()
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(1)
    x = torch.randn(4, 4, requires_grad=True)
    b = torch.randn(4, 4, requires_grad=True)
    lin = torch.nn.Linear(4, 4)
    n = args.ops
    fwd, bwd, module, functional = [], [], [], []
    for _ in range(args.repeats):
        y = x
        t0 = time.perf_counter()
        for _ in range(n):
            y = torch.mul(y, b)
        fwd.append((time.perf_counter() - t0) / n)
        t0 = time.perf_counter()
        y.backward(torch.ones_like(y))
        bwd.append((time.perf_counter() - t0) / (2 * n))
        x.grad = b.grad = None
        t0 = time.perf_counter()
        for _ in range(n):
            lin(x)
        module.append((time.perf_counter() - t0) / n)
        t0 = time.perf_counter()
        for _ in range(n):
            F.linear(x, lin.weight, lin.bias)
        functional.append((time.perf_counter() - t0) / n)
    def show(label: str, xs: list[float], minus: list[float] | None = None) -> None:
        lo = min(xs) - (min(minus) if minus else 0.0)
        mid = statistics.median(xs) - (statistics.median(minus) if minus else 0.0)
        print(f"{label:40s}: {lo * 1e6:6.2f} us (median {mid * 1e6:6.2f} us)")

    optimizer: dict[int, list[float]] = {}
    for tensors in (148, 600):
        params = [torch.nn.Parameter(torch.randn(4)) for _ in range(tensors)]
        opt = torch.optim.AdamW(params, lr=1e-4, fused=True)
        times = optimizer.setdefault(tensors, [])
        for _ in range(args.repeats + 1):
            for p in params:
                p.grad = torch.randn(4)
            t0 = time.perf_counter()
            opt.step()
            times.append((time.perf_counter() - t0) / tensors)
        del times[0]  # the first step creates the state
    print(f"torch {torch.__version__}, {args.ops} ops x {args.repeats} repeats, one CPU thread")
    show("dispatch + autograd record, forward op", fwd)
    show("autograd engine, per backward kernel", bwd)
    show("nn.Module call over its functional", module, functional)
    for tensors, times in optimizer.items():
        show(f"AdamW(fused=True).step, per tensor of {tensors}", times)


if __name__ == "__main__":
    main()

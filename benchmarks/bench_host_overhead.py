"""Host-side cost of issuing PyTorch ops, the CPU parts of ``simulator/costs/host.py``'s constants.

Runs on CPU tensors of 4x4 elements, so the kernels themselves cost next to nothing and what is
timed is Python, the dispatcher and autograd. Prints, per op, the median over repeats of:

* ``torch.mul`` forward with autograd recording (``DISPATCH_US``, forward);
* the backward of that chain, per kernel (two ``mul`` kernels per node; ``DISPATCH_US``, backward);
* an ``nn.Linear`` module call minus the ``F.linear`` it wraps (``PYTHON_US``: the module call).

The minimum over repeats is printed (overhead benchmarks read the fastest repeat: other load on
the machine only ever adds time), with the median beside it.

    python benchmarks/bench_host_overhead.py [--ops 200] [--repeats 9]

Needs torch (the ``[test]`` extra installs the CPU build). The CUDA launch (``LAUNCH_US``) is
not measured here: there is no GPU; see the module docstring of ``simulator/costs/host.py``.
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

    print(f"torch {torch.__version__}, {args.ops} ops x {args.repeats} repeats, one CPU thread")
    show("dispatch + autograd record, forward op", fwd)
    show("autograd engine, per backward kernel", bwd)
    show("nn.Module call over its functional", module, functional)


if __name__ == "__main__":
    main()

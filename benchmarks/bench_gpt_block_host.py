"""Host time of the plain ``torch.nn`` GPT-2 model of ``benchmarks/measure_gpt_step.py``, per layer
and per kernel the model lists, on tiny CPU tensors (the kernels cost next to nothing, as in
``bench_host_overhead.py`` and ``bench_layer_host.py``).

The model is ``measure_gpt_step.build`` itself (12 pre-LayerNorm blocks, SDPA, tied head,
``F.cross_entropy``) at hidden 48, 12 heads, sequence 8, vocabulary 64, run in bf16 (no autocast)
and under ``torch.autocast(bfloat16)`` over fp32 parameters, as the measured steps on an H200 ran.
What is timed is Python, PyTorch's dispatcher and autograd, forward and backward apart, and
``AdamW(fused=True).step()``; CUDA's launches are not (``costs/host.py`` adds them per kernel).
The per-kernel figures divide by the kernels the simulator lists for the same model
(``simulator/e2e_validation/h200_step_sources.py``'s scenario at micro-batch 1): the
``LAYER_FWD_CPU_US`` / ``LAYER_BWD_CPU_US`` inputs of ``costs/host.py``.

    python benchmarks/bench_gpt_block_host.py [--repeats 20]

Measured (torch 2.13 CPU, one thread, the fastest repeat of each run, this repository's 2-core
machine, five runs): bf16 31.6-34.6 us per model kernel forward (median 32.9) and 18.6-21.1 us
backward (20.0) for the 12 layers with the embedding, head and loss (126 forward, 248 backward
kernels; 3.98-4.36 ms and 4.61-5.24 ms); autocast adds 3.6-10.4 us (6.5) per forward cast and
3.3-11.3 us (5.6) per backward cast the model lists (122 and 146): ``AUTOCAST_FWD_CPU_US``,
``AUTOCAST_BWD_CPU_US``; the fused AdamW step 1.0-1.7 ms over 148 tensors (with the CPU's own
Adam arithmetic on them). The host's figures vary by 10-30% between runs of a shared machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def model_kernels() -> tuple[int, int, int, int]:
    """(forward, backward) kernels the simulator lists for GPT-2 124M at micro-batch 1 on one GPU,
    autocast's casts apart, then the forward and backward casts."""
    sys.path.insert(0, str(ROOT))
    from simulator.config.scenario import build_scenario
    from simulator.e2e_validation.h200_step_sources import h200_eager_case
    from simulator.schedule.build import build_program
    from simulator.schedule.ir import ComputeOp

    row = {"model": "gpt2-124m", "hidden": "768", "layers": "12", "heads": "12", "seq_len": "1024",
           "micro_batch": "1", "step_ms": "1"}
    prog = build_program(build_scenario(h200_eager_case(row).scenario, source="<bench>"), 0)
    def count(phase: str, casts: bool) -> int:
        return sum(max(op.count, 1) for op in prog
                   if isinstance(op, ComputeOp) and op.tag.phase == phase and (op.impl == "autocast") == casts)
    return count("fwd", False), count("bwd", False), count("fwd", True), count("bwd", True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args()
    import torch

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import measure_gpt_step as m

    m.VOCAB = 64
    torch.set_num_threads(1)
    n_fwd, n_bwd, c_fwd, c_bwd = model_kernels()
    print(f"torch {torch.__version__}, GPT-2 layout h=48 heads=12 s=8 b=1, 12 layers, CPU tensors, one thread; "
          f"the model lists {n_fwd} forward and {n_bwd} backward kernels, and under autocast {c_fwd} and {c_bwd} casts")
    best: dict[tuple[bool, str], float] = {}
    for autocast in (False, True):
        model = m.build(torch, 48, 12, 12, 8)
        if not autocast:
            model = model.to(torch.bfloat16)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
        idx = torch.randint(0, m.VOCAB, (1, 8))
        tgt = torch.randint(0, m.VOCAB, (1, 8))
        fwd, bwd, step = [], [], []
        for _ in range(args.repeats):
            opt.zero_grad(set_to_none=True)
            t0 = time.perf_counter()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                loss = model(idx, tgt)
            t1 = time.perf_counter()
            loss.backward()
            t2 = time.perf_counter()
            opt.step()
            t3 = time.perf_counter()
            fwd.append(t1 - t0)
            bwd.append(t2 - t1)
            step.append(t3 - t2)
        label = "autocast over fp32" if autocast else "bf16 model"
        for name, xs, n in (("forward", fwd, n_fwd), ("backward", bwd, n_bwd)):
            best[autocast, name] = min(xs)
            print(f"{label:20s} {name:9s}: {min(xs) * 1e3:6.2f} ms (median {statistics.median(xs) * 1e3:6.2f}), "
                  f"{min(xs) / n * 1e6:5.1f} us per model kernel")
        tensors = sum(1 for _ in model.parameters())
        print(f"{label:20s} AdamW(fused=True).step over {tensors} tensors: {min(step) * 1e3:.2f} ms "
              f"(median {statistics.median(step) * 1e3:.2f})")
    for name, casts in (("forward", c_fwd), ("backward", c_bwd)):
        extra = best[True, name] - best[False, name]
        print(f"autocast's extra {name}: {extra * 1e3:.2f} ms, {extra / casts * 1e6:.1f} us per cast the model lists")


if __name__ == "__main__":
    main()

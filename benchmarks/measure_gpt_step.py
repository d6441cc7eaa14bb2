"""Measure the training step of a small GPT in plain PyTorch on one GPU: step time and peak memory.

The model is GPT-2's layout (learned positions, pre-LayerNorm blocks with biases, GeLU MLP of 4h,
tied embedding and LM head, no dropout), written here in plain ``torch.nn``: the eager stack
whose short steps the simulator's host and kernel-gap terms price (``costs/host.py``,
``gpu.kernel_gap_us``). Parameters are fp32 under ``torch.autocast`` in bf16, attention is
``scaled_dot_product_attention`` (PyTorch 2.11 picks its cuDNN kernel on H200), the loss ``F.cross_entropy`` on
the bf16 logits autocast leaves in fp32, and the optimizer ``torch.optim.AdamW(fused=True)``. One
step is zero_grad, forward, loss, backward and the optimizer step, synchronised at its end (as a
loss read with ``.item()`` does); the median over the timed steps is reported, with
``torch.cuda.max_memory_allocated`` and ``max_memory_reserved`` over them, and the GPU's busy
time in one more step under ``torch.profiler`` (the sum of its kernels' times).

    python benchmarks/measure_gpt_step.py --out DIR [--quick]
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
import time
from pathlib import Path

# (name, hidden, layers, heads, seq, micro-batch)
CONFIGS = (
    ("gpt2-124m", 768, 12, 12, 1024, 1), ("gpt2-124m", 768, 12, 12, 1024, 4),
    ("gpt2-124m", 768, 12, 12, 1024, 16), ("gpt2-350m", 1024, 24, 16, 1024, 8),
    ("gpt2-760m", 1536, 24, 16, 1024, 8), ("gpt-1.3b", 2048, 24, 16, 2048, 4),
)
VOCAB = 50304


def build(torch, hidden: int, layers: int, heads: int, seq: int):
    nn = torch.nn
    F = torch.nn.functional

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln1 = nn.LayerNorm(hidden)
            self.qkv = nn.Linear(hidden, 3 * hidden)
            self.proj = nn.Linear(hidden, hidden)
            self.ln2 = nn.LayerNorm(hidden)
            self.fc1 = nn.Linear(hidden, 4 * hidden)
            self.fc2 = nn.Linear(4 * hidden, hidden)

        def forward(self, x):
            b, s, h = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(h, dim=2)
            q, k, v = (t.view(b, s, heads, h // heads).transpose(1, 2) for t in (q, k, v))
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(a.transpose(1, 2).reshape(b, s, h))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.wte = nn.Embedding(VOCAB, hidden)
            self.wpe = nn.Embedding(seq, hidden)
            self.blocks = nn.ModuleList(Block() for _ in range(layers))
            self.ln_f = nn.LayerNorm(hidden)

        def forward(self, idx, targets):
            pos = torch.arange(idx.shape[1], device=idx.device)
            x = self.wte(idx) + self.wpe(pos)
            for blk in self.blocks:
                x = blk(x)
            logits = F.linear(self.ln_f(x), self.wte.weight)
            return F.cross_entropy(logits.float().view(-1, VOCAB), targets.view(-1))

    return GPT()


def gpu_busy_ms(torch, step) -> float:
    """Sum of the GPU kernels' own time over one profiled step (kernels do not overlap on one
    stream): the step less this is the time the GPU waited for the host."""
    from torch.profiler import ProfilerActivity, profile

    try:
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            step()
            torch.cuda.synchronize()
        return sum(e.self_device_time_total for e in prof.key_averages()) / 1e3
    except Exception as exc:  # noqa: BLE001 - informational column
        print(f"profiler: {exc}", flush=True)
        return float("nan")


def measure(torch, hidden: int, layers: int, heads: int, seq: int, mb: int, steps: int) -> dict:
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    model = build(torch, hidden, layers, heads, seq).to(dev)
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=dev == "cuda")
    idx = torch.randint(0, VOCAB, (mb, seq), device=dev)
    tgt = torch.randint(0, VOCAB, (mb, seq), device=dev)

    def step() -> float:
        opt.zero_grad(set_to_none=True)
        with torch.autocast(dev, dtype=torch.bfloat16):
            loss = model(idx, tgt)
        loss.backward()
        opt.step()
        return float(loss.item())

    for _ in range(3):
        step()
    if dev == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    out = {"params": params, "step_ms": f"{statistics.median(times) * 1e3:.3f}",
           "step_ms_min": f"{min(times) * 1e3:.3f}", "steps_timed": steps}
    if dev == "cuda":
        out["gpu_busy_ms"] = f"{gpu_busy_ms(torch, step):.3f}"
        out["max_allocated_GiB"] = f"{torch.cuda.max_memory_allocated() / 2**30:.3f}"
        out["max_reserved_GiB"] = f"{torch.cuda.max_memory_reserved() / 2**30:.3f}"
    del model, opt
    if dev == "cuda":
        torch.cuda.empty_cache()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    import torch

    torch.backends.cuda.matmul.allow_tf32 = True
    configs = (("tiny", 64, 2, 2, 64, 2),) if args.quick else CONFIGS
    rows = []
    for name, h, layers, heads, seq, mb in configs:
        r = measure(torch, h, layers, heads, seq, mb, steps=3 if args.quick else 15)
        row = {"model": name, "hidden": h, "layers": layers, "heads": heads, "seq_len": seq, "micro_batch": mb, **r}
        print(json.dumps(row), flush=True)
        rows.append(row)
    args.out.mkdir(parents=True, exist_ok=True)
    env = {"torch": torch.__version__, "cuda": str(torch.version.cuda),
           "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
           "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime())}
    with open(args.out / "gpt_step.csv", "w", newline="") as fh:
        fh.write("# what: one training step (zero_grad, forward, loss, backward, fused AdamW step; synchronised) of "
                 "benchmarks/measure_gpt_step.py's GPT-2-layout model, fp32 parameters under bf16 autocast, "
                 "SDPA attention, median over the timed steps after 3 warm-up steps\n")
        fh.write("# environment: " + json.dumps(env, sort_keys=True) + "\n")
        fields = sorted({k for r in rows for k in r}, key=lambda k: list(rows[-1]).index(k) if k in rows[-1] else 99)
        w = csv.DictWriter(fh, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Measure reference sweeps of the kernels the compute model prices, on the GPU this runs on, and
write them as CSVs: the held-out data the model's shape laws are scored on.

Not the calibration harness. ``python -m simulator.measure_kernels`` times the GEMMs of the
model presets' layers and attention at their lengths, as a kernel table that ``clustersim
calibrate`` fits a profile to. This script measures what a fit cannot give and a check needs:
published benchmarks' grids and protocols, so that the rows sit beside published ones (XLA's GEMM
grid, cudnn-frontend's attention shapes, Liger-Kernel's memory-bound kernels and CSV columns),
and the costs outside GEMMs and attention (HBM, the optimizer step, the host's and the GPU's
per-kernel costs). ``data/kernels/h200_*.csv`` came from it.

The simulator prices a step's kernels from published measurements (``data/kernels/``): a GEMM by
its shape (``costs/gemm_shape.py``), fused attention by kernel and sequence length
(``costs/attention_shape.py``), memory-bound kernels by the bytes they move
(``costs/memory_bound.py``), the host's cost of issuing each op (``costs/host.py``) and the
optimizer step. This script measures the same quantities on one GPU, so that a user can check
the model on their own hardware and so that a GPU the bundled data do not cover can be scored.

Sections (each writes one CSV under ``--out``; a section that fails is reported and skipped):

* ``gemm``: C = A·Bᵀ (the ``nn.Linear`` layout), bf16 and fp8 e4m3 (``torch._scaled_mm``,
  per-tensor scales, bf16 output), on XLA's grid (m, n, k each 256-4096) and on a few
  training shapes; timed by CUDA-graph replay of back-to-back calls
  (``triton.testing.do_bench_cudagraph``), the median per call.
* ``memory_bound``: PyTorch's own LayerNorm (forward, backward), RMSNorm, ReLU² and
  cross-entropy, and Liger-Kernel's Triton versions where the package is importable, at the
  shapes of Liger-Kernel's benchmark scripts, timed as they time them (``triton.testing.do_bench``:
  CUDA events around each call, L2 flushed between calls). The rows use Liger's CSV columns,
  so ``simulator/calibration/kernel_bandwidth.py`` reads them as it reads Liger's.
* ``attention``: ``torch.nn.functional.scaled_dot_product_attention`` with the FlashAttention-2
  and cuDNN backends, bf16, head dim 64 and 128, causal and not, 512-32K tokens at 16K tokens
  per batch (FlashAttention-2's benchmark protocol), forward and backward apart.
* ``hbm``: a device-to-device copy and an elementwise add of 1-4 GiB.
* ``host``: the host's time per op issuing tiny CUDA kernels (no autograd, autograd forward,
  backward per kernel), an ``nn.Linear`` call against ``F.linear``, and the GPU's time per
  kernel for back-to-back empty-ish kernels replayed from a CUDA graph.
* ``launch_gap``: the GPU's time per kernel of a chain of back-to-back kernels issued eagerly
  behind long GEMMs, so that the host is ahead, and of the same chain replayed from a CUDA graph
  (the GPU's gap between kernels, ``gpu.kernel_gap_us``).
* ``adam``: one ``torch.optim.AdamW`` step (fused and foreach) over fp32 parameters.

    python benchmarks/measure_reference_kernels.py --out DIR [--sections gemm,attention] [--quick]

``--quick`` runs a few small shapes of each section (a smoke test; on a machine without a GPU
it runs on the CPU and times nothing meaningful). Needs torch and, for the GPU timings, triton.
"""

from __future__ import annotations

import argparse
import csv
import json
import platform
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Callable

GRID = (256, 512, 1024, 2048, 4096)
# Training shapes (m tokens, n out features, k in features) of Llama-3 8B / 70B layers at 8,192
# tokens, their backward GEMMs (dgrad: k and n swapped; wgrad: k = tokens), and the square
# shapes where a profile's plateau is read.
TRAINING_SHAPES = (
    (8192, 6144, 4096), (8192, 4096, 4096), (8192, 28672, 4096), (8192, 4096, 14336),
    (8192, 4096, 6144), (8192, 14336, 4096), (6144, 4096, 8192), (28672, 4096, 8192),
    (8192, 10240, 8192), (8192, 8192, 8192), (8192, 57344, 8192), (8192, 8192, 28672),
    (16384, 16384, 16384),
)
ATTN_SEQS = (512, 1024, 2048, 4096, 8192, 16384, 32768)
ATTN_TOKENS = 16384
ATTN_HIDDEN = 2048


class Env:
    """Where the timings come from: torch, its device and the timing functions."""

    def __init__(self, quick: bool) -> None:
        import torch

        self.torch = torch
        self.quick = quick
        self.cuda = torch.cuda.is_available()
        self.device = "cuda" if self.cuda else "cpu"
        if self.cuda:
            import triton.testing as tt

            self.tt = tt
        else:
            self.tt = None

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize()

    def bench(self, fn: Callable[[], object], rep_ms: int = 60,
              grad_to_none: list | None = None) -> tuple[float, float, float]:
        """(median, 20th, 80th percentile) ms per call, events around each call, L2 flushed;
        ``grad_to_none``: tensors whose ``.grad`` is reset before each call (so a backward writes
        its gradients instead of adding to the last call's)."""
        if self.tt is None:
            t0 = time.perf_counter()
            for _ in range(3):
                fn()
            t = (time.perf_counter() - t0) / 3 * 1e3
            return t, t, t
        q = self.tt.do_bench(fn, warmup=10, rep=rep_ms, quantiles=[0.5, 0.2, 0.8], grad_to_none=grad_to_none)
        return float(q[0]), float(q[1]), float(q[2])

    def bench_graph(self, fn: Callable[[], object], rep_ms: int = 40) -> float:
        """Median ms per call over CUDA-graph replays of back-to-back calls."""
        if self.tt is None:
            return self.bench(fn)[0]
        return float(self.tt.do_bench_cudagraph(fn, rep=rep_ms, return_mode="median"))


def environment(env: Env) -> dict[str, str]:
    """Versions and hardware, for the provenance header of every CSV: the calibration harness's
    (``simulator.measure_kernels.environment``), plus the library wheels the kernels come from,
    the CPU model (the host-side rows are the CPU's) and nvidia-smi's clocks and power."""
    from simulator.measure_kernels import environment as harness_environment

    torch = env.torch
    info = harness_environment(torch, torch.device(env.device))
    for pkg in ("nvidia-cublas", "nvidia-cudnn-cu13", "triton", "liger-kernel"):
        if env_version(pkg):
            info[pkg] = env_version(pkg)
    try:
        with open("/proc/cpuinfo") as fh:
            info["cpu"] = next(line.split(":", 1)[1].strip() for line in fh if line.startswith("model name"))
    except (OSError, StopIteration):
        info["cpu"] = platform.processor() or platform.machine()
    if env.cuda:
        info["nvidia_smi"] = smi()
    return info


def smi() -> str:
    """Driver, clocks and power as nvidia-smi reads them now."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,clocks.sm,clocks.max.sm,clocks.mem,"
                              "power.draw,power.limit,temperature.gpu", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        return out.stdout.strip()
    except Exception as exc:  # noqa: BLE001 - informational only
        return f"unavailable ({exc})"


class Writer:
    """One CSV per section, its header the environment and what the section measured."""

    def __init__(self, out: Path, info: dict[str, str]) -> None:
        self.out = out
        self.info = info
        out.mkdir(parents=True, exist_ok=True)

    def write(self, name: str, what: str, fields: list[str], rows: list[dict]) -> None:
        path = self.out / f"{name}.csv"
        with open(path, "w", newline="") as fh:
            fh.write(f"# what: {what}\n")
            fh.write("# environment: " + json.dumps(self.info, sort_keys=True) + "\n")
            w = csv.DictWriter(fh, fieldnames=fields)
            w.writeheader()
            w.writerows(rows)
        print(f"wrote {path} ({len(rows)} rows)", flush=True)


def gemm(env: Env) -> list[dict]:
    torch = env.torch
    dev = env.device
    grid = (256, 1024) if env.quick else GRID
    shapes = [(m, n, k) for m in grid for n in grid for k in grid]
    shapes += [] if env.quick else list(TRAINING_SHAPES)
    dtypes = ["bf16"] + (["fp8_e4m3", "fp8_e4m3_fastacc"] if env.cuda else [])
    rows = []
    for m, n, k in shapes:
        for dt in list(dtypes):
            a = torch.randn(m, k, device=dev, dtype=torch.bfloat16)
            w = torch.randn(n, k, device=dev, dtype=torch.bfloat16)
            if dt == "bf16":
                out = torch.empty(m, n, device=dev, dtype=torch.bfloat16)

                def fn(a=a, w=w, out=out):
                    return torch.mm(a, w.t(), out=out)
            else:
                a8 = a.to(torch.float8_e4m3fn)
                w8 = w.to(torch.float8_e4m3fn)
                one = torch.ones((), device=dev, dtype=torch.float32)
                fast = dt.endswith("fastacc")

                def fn(a8=a8, w8=w8, one=one, fast=fast):
                    return torch._scaled_mm(a8, w8.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16,
                                            use_fast_accum=fast)
            try:
                fn()
                ms = env.bench_graph(fn, rep_ms=100 if (m, n, k) == (8192, 8192, 8192) else 30)
            except Exception as exc:  # noqa: BLE001 - fp8 may be refused; keep the bf16 rows
                print(f"gemm {dt} {m}x{n}x{k}: {exc!s:.160}; {dt} dropped", flush=True)
                dtypes.remove(dt)
                continue
            rows.append({"dtype": dt, "b": 1, "m": m, "n": n, "k": k, "ms": f"{ms:.6g}",
                         "tflops": f"{2.0 * m * n * k / (ms * 1e-3) / 1e12:.2f}"})
            del a, w
        if (m, n, k) == (8192, 8192, 8192) and env.cuda:
            print("clocks under sustained GEMM load:", smi(), flush=True)
    return rows


def _liger():
    try:
        import liger_kernel.transformers as lt

        return lt
    except Exception as exc:  # noqa: BLE001 - an optional provider
        print(f"liger-kernel not importable ({exc}); its rows are skipped", flush=True)
        return None


def memory_bound(env: Env, gpu_name: str) -> list[dict]:
    """Rows in Liger-Kernel's benchmark CSV columns (kernel, provider, mode, x, ms quantiles)."""
    torch = env.torch
    dev = env.device
    lt = _liger() if env.cuda else None
    rows: list[dict] = []
    liger_version = env_version("liger-kernel")

    def add(kernel: str, provider: str, mode: str, x_name: str, x: int, cfg: dict, q: tuple[float, float, float]):
        rows.append({"kernel_name": kernel, "kernel_provider": provider, "kernel_operation_mode": mode,
                     "x_name": x_name, "x_value": x, "y_value_50": q[0], "y_value_20": q[1], "y_value_80": q[2],
                     "extra_benchmark_config_str": json.dumps(cfg), "gpu_name": gpu_name,
                     "timestamp": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
                     "liger_version": liger_version})

    def fwd_bwd(kernel: str, provider: str, x_name: str, x: int, cfg: dict, make: Callable, backward: bool):
        inp, f = make()
        add(kernel, provider, "forward", x_name, x, cfg, env.bench(lambda: f(inp)))
        if backward:
            y = f(inp)
            dy = torch.randn_like(y)
            leaves = [inp] + list(f.parameters())
            add(kernel, provider, "backward", x_name, x, cfg,
                env.bench(lambda: y.backward(dy, retain_graph=True), grad_to_none=leaves))

    small = env.quick
    def norms(kernel: str, x_name: str, sizes: tuple[int, ...], cfg: dict, dtype: object,
              modules: dict[str, Callable[[int], object] | None], backward: bool) -> None:
        """A norm module per provider over 4,096 rows of each width (None: provider unavailable)."""
        for n in sizes[:1] if small else sizes:
            for provider, build in modules.items():
                if build is None:
                    continue

                def make(n: int = n, build: Callable[[int], object] = build):
                    x = torch.randn(4096, n, device=dev, dtype=dtype, requires_grad=True)
                    return x, build(n).to(dev).to(dtype)  # type: ignore[attr-defined]
                fwd_bwd(kernel, provider, x_name, n, cfg, make, backward=backward)

    widths = (1024, 2048, 4096, 8192, 16384)
    # LayerNorm, fp32, 4,096 rows (benchmark_layer_norm.py's shapes); forward and backward
    norms("layer_norm", "N", widths, {"M": 4096, "dtype": "torch.float32", "eps": 1e-06}, torch.float32,
          {"huggingface": lambda n: torch.nn.LayerNorm(n, eps=1e-6),
           "liger": (lambda n: lt.LigerLayerNorm(n, eps=1e-6)) if lt is not None else None}, backward=True)
    # RMSNorm, bf16, 4,096 tokens (benchmark_megatron_rms_norm.py's shapes); forward
    norms("megatron_rms_norm", "H", widths, {"S": 4096, "B": 1}, torch.bfloat16,
          {"torch": lambda h: torch.nn.RMSNorm(h, eps=1e-5),
           "liger": (lambda h: lt.LigerRMSNorm(h, eps=1e-5)) if lt is not None else None}, backward=False)
    # ReLU², bf16, 4,096 rows
    for n in ((1024,) if small else (128, 256, 512, 1024, 2048, 4096, 8192, 16384)):
        cfg = {"M": 4096, "dtype": "torch.bfloat16"}

        def make(n=n):
            x = torch.randn(4096, n, device=dev, dtype=torch.bfloat16, requires_grad=True)
            return x, lambda t: torch.square(torch.relu(t))
        fwd_bwd("relu_squared", "torch", "N", n, cfg, make, backward=False)
    # cross-entropy on fp32 logits, 8 x 2,048 tokens
    for v in ((4096,) if small else (4096, 8192, 16384, 32768, 65536, 131072)):
        cfg = {"B": 8, "T": 2048}
        tokens = 8 * 2048 if not small else 256
        for provider in ("huggingface", "liger"):
            if provider == "liger" and lt is None:
                continue

            def make(v=v, provider=provider, tokens=tokens):
                logits = torch.randn(tokens, v, device=dev, dtype=torch.float32, requires_grad=True)
                target = torch.randint(0, v, (tokens,), device=dev)
                loss = torch.nn.CrossEntropyLoss() if provider == "huggingface" else lt.LigerCrossEntropyLoss()
                return logits, lambda t: loss(t, target)
            fwd_bwd("cross_entropy", provider, "V", v, cfg, make, backward=False)
    # SwiGLU (silu(gate) * up), bf16, 4 x 2,048 tokens: Liger's one kernel and PyTorch's chain
    for f in ((1024,) if small else (1024, 2048, 4096, 8192, 16384, 32768)):
        cfg = {"S": 2048, "B": 4}
        for provider in ("torch", "liger"):
            if provider == "liger" and lt is None:
                continue

            def make(f=f, provider=provider):
                gate = torch.randn(8192, f, device=dev, dtype=torch.bfloat16)
                up = torch.randn(8192, f, device=dev, dtype=torch.bfloat16)
                if provider == "torch":
                    return (gate, up), lambda t: torch.nn.functional.silu(t[0]) * t[1]
                from liger_kernel.ops.swiglu import LigerSiLUMulFunction

                return (gate, up), lambda t: LigerSiLUMulFunction.apply(t[0], t[1])
            fwd_bwd("megatron_swiglu", provider, "ffn_local", f, cfg, make, backward=False)
    return rows


def env_version(pkg: str) -> str:
    try:
        from importlib.metadata import version

        return version(pkg)
    except Exception:
        return ""


def attention(env: Env) -> list[dict]:
    torch = env.torch
    dev = env.device
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backends = {"flash2": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}
    if not env.cuda:
        backends = {"math": SDPBackend.MATH}
    rows = []
    seqs = (512, 1024) if env.quick else ATTN_SEQS
    for name, backend in backends.items():
        for d in (64, 128):
            heads = ATTN_HIDDEN // d
            for s in seqs:
                batch = max(1, ATTN_TOKENS // s) if not env.quick else 1
                for causal in (False, True):
                    q, k, v = (torch.randn(batch, heads, s, d, device=dev, dtype=torch.bfloat16,
                                           requires_grad=True) for _ in range(3))
                    try:
                        with sdpa_kernel([backend]):
                            def f():
                                return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
                            fwd = env.bench(f, rep_ms=40)
                            o = f()
                            do = torch.randn_like(o)
                            bwd = env.bench(lambda: o.backward(do, retain_graph=True), rep_ms=40,
                                            grad_to_none=[q, k, v])
                    except Exception as exc:  # noqa: BLE001 - a backend may refuse a shape
                        print(f"attention {name} d={d} s={s} causal={causal}: {exc!s:.120}", flush=True)
                        continue
                    flops = 4.0 * batch * heads * s * s * d * (0.5 if causal else 1.0)
                    rows.append({"backend": name, "batch": batch, "heads": heads, "seqlen": s, "head_dim": d,
                                 "causal": int(causal), "fwd_ms": f"{fwd[0]:.6g}", "bwd_ms": f"{bwd[0]:.6g}",
                                 "fwd_tflops": f"{flops / (fwd[0] * 1e-3) / 1e12:.1f}",
                                 "bwd_tflops": f"{2.5 * flops / (bwd[0] * 1e-3) / 1e12:.1f}"})
                    del q, k, v
    return rows


def hbm(env: Env) -> list[dict]:
    torch = env.torch
    dev = env.device
    rows = []
    for gib in ((0.0625,) if env.quick else (0.25, 1.0, 4.0)):
        n = int(gib * 2**30 / 2)
        a = torch.empty(n, device=dev, dtype=torch.bfloat16).normal_()
        b = torch.empty_like(a).normal_()
        c = torch.empty_like(a)
        for op, fn, nbytes in (("copy", lambda: c.copy_(a), 2 * a.nbytes),
                               ("add", lambda: torch.add(a, b, out=c), 3 * a.nbytes)):
            ms = env.bench(fn, rep_ms=60)[0]
            rows.append({"op": op, "tensor_bytes": a.nbytes, "bytes_moved": nbytes, "ms": f"{ms:.6g}",
                         "GBps": f"{nbytes / (ms * 1e-3) / 1e9:.1f}"})
        del a, b, c
    return rows


def host(env: Env) -> list[dict]:
    """Host microseconds per op issuing tiny kernels, and the GPU's per-kernel floor; the same
    chains on CPU tensors beside them (the dispatcher and autograd without the CUDA launch)."""
    torch = env.torch
    ops = 200
    rows = []

    def per_op(fn: Callable[[], object], repeats: int = 15) -> float:
        times = []
        for _ in range(repeats):
            env.sync()
            t0 = time.perf_counter()
            fn()
            env.sync()
            times.append((time.perf_counter() - t0) / ops * 1e6)
        return min(times)

    for dev in (["cuda", "cpu"] if env.cuda else ["cpu"]):
        tag = "" if dev == "cuda" else ", CPU tensors"
        x = torch.randn(4, 4, device=dev)
        xg = torch.randn(4, 4, device=dev, requires_grad=True)
        b = torch.randn(4, 4, device=dev)

        def chain(t, b=b):
            for _ in range(ops):
                t = torch.mul(t, b)
            return t
        with torch.no_grad():
            rows.append({"what": f"torch.mul, no autograd (dispatch + launch){tag}",
                         "us_per_op": f"{per_op(lambda: chain(x)):.2f}"})
        rows.append({"what": f"torch.mul with autograd recording, forward{tag}",
                     "us_per_op": f"{per_op(lambda: chain(xg)):.2f}"})

        def bwd(xg=xg, chain=chain):
            y = chain(xg).sum()
            env.sync()
            t0 = time.perf_counter()
            y.backward()
            env.sync()
            return (time.perf_counter() - t0) / ops * 1e6
        rows.append({"what": f"backward of the torch.mul chain, per node{tag}",
                     "us_per_op": f"{min(bwd() for _ in range(15)):.2f}"})
        lin = torch.nn.Linear(4, 4).to(dev)
        F = torch.nn.functional

        def mod(lin=lin, x=x):
            for _ in range(ops):
                lin(x)

        def fun(lin=lin, x=x):
            for _ in range(ops):
                F.linear(x, lin.weight, lin.bias)
        with torch.no_grad():
            rows.append({"what": f"nn.Linear call{tag}", "us_per_op": f"{per_op(mod):.2f}"})
            rows.append({"what": f"F.linear call{tag}", "us_per_op": f"{per_op(fun):.2f}"})
            if dev == "cuda":
                ms = env.bench_graph(lambda: chain(x), rep_ms=30)
                rows.append({"what": "GPU time per tiny kernel, back to back (CUDA graph)",
                             "us_per_op": f"{ms * 1e3 / ops:.2f}"})
    return rows


def launch_gap(env: Env) -> list[dict]:
    """GPU time per kernel of a chain of short kernels issued eagerly while the GPU is busy (so the
    host has queued them all before the GPU reaches them), against the same chain replayed from
    a CUDA graph: the gap a stream leaves between back-to-back kernels when the host is ahead."""
    torch = env.torch
    dev = env.device
    rows = []
    ops = 200
    big_a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16) if env.cuda else torch.randn(64, 64)
    x = torch.randn(4, 4, device=dev)
    b = torch.randn(4, 4, device=dev)
    g = {s: (torch.randn(s, s, device=dev, dtype=torch.bfloat16), torch.randn(s, s, device=dev, dtype=torch.bfloat16))
         for s in ((256, 1024) if env.cuda else (16,))}
    chains: dict[str, Callable[[], object]] = {"torch.mul 4x4": lambda: [torch.mul(x, b) for _ in range(ops)]}
    for s, (p, q) in g.items():
        chains[f"bf16 GEMM {s}^3"] = lambda p=p, q=q: [torch.mm(p, q) for _ in range(ops)]
    with torch.no_grad():
        for name, chain in chains.items():
            chain()
            eager = []
            for _ in range(7):
                env.sync()
                for _ in range(3):
                    torch.mm(big_a, big_a)  # keeps the GPU busy while the host queues the chain
                if env.cuda:
                    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    e0.record()
                    chain()
                    e1.record()
                    e1.synchronize()
                    eager.append(e0.elapsed_time(e1) * 1e3 / ops)
                else:
                    t0 = time.perf_counter()
                    chain()
                    eager.append((time.perf_counter() - t0) * 1e6 / ops)
            graph = env.bench_graph(chain, rep_ms=30) * 1e3 / ops
            rows.append({"chain": name, "kernels": ops, "eager_us_per_kernel": f"{statistics.median(eager):.3f}",
                         "graph_us_per_kernel": f"{graph:.3f}"})
    return rows


def adam(env: Env) -> list[dict]:
    torch = env.torch
    dev = env.device
    rows = []
    tensors, numel = (4, 1 << 16) if env.quick else (64, 1 << 22)
    for impl in ("fused", "foreach"):
        if impl == "fused" and not env.cuda:
            continue
        params = [torch.nn.Parameter(torch.randn(numel, device=dev)) for _ in range(tensors)]
        for p in params:
            p.grad = torch.randn_like(p)
        opt = torch.optim.AdamW(params, lr=1e-4, **{impl: True})
        opt.step()
        ms = env.bench(opt.step, rep_ms=100)[0]
        n = tensors * numel
        rows.append({"impl": impl, "tensors": tensors, "params": n, "ms": f"{ms:.6g}",
                     "GBps_at_28B_per_param": f"{28 * n / (ms * 1e-3) / 1e9:.1f}"})
        del params, opt
    return rows


SECTIONS = ("hbm", "gemm", "attention", "memory_bound", "host", "launch_gap", "adam")
WHAT = {
    "gemm": "GEMM C[m,n] = A[m,k] @ W[n,k]^T, one kernel per call, median ms per call over CUDA-graph replays "
            "(triton.testing.do_bench_cudagraph), random normal data; fp8 = torch._scaled_mm e4m3 x e4m3, "
            "per-tensor scales, bf16 out; tflops = 2mnk / time",
    "memory_bound": "GPU time of one call (triton.testing.do_bench: events around each call, L2 flushed), ms "
                    "median and 20th/80th percentiles, in Liger-Kernel's benchmark CSV columns",
    "attention": "scaled_dot_product_attention bf16, (batch, heads, seqlen, head_dim), 16K tokens per batch, "
                 "hidden 2048; forward and backward (given the saved forward) timed apart with "
                 "triton.testing.do_bench; tflops: forward 4*b*h*s^2*d (x0.5 causal), backward 2.5x that",
    "hbm": "device-to-device copy (read + write) and a + b -> c (two reads, one write), bf16, do_bench median",
    "host": "host wall microseconds per op over a chain of 200 ops on 4x4 tensors (min of 15 repeats, "
            "synchronised before and after), and the GPU time per kernel of the same chain replayed from a CUDA graph",
    "launch_gap": "GPU microseconds per kernel of 200 back-to-back kernels issued eagerly behind three 8192^3 GEMMs "
                  "(the host queues them before the GPU reaches them; CUDA events around the chain, median of 7) "
                  "and the same chain replayed from a CUDA graph (do_bench_cudagraph median)",
    "adam": "one torch.optim.AdamW step over fp32 parameters with gradients (do_bench median); "
            "28 bytes per parameter: reads param, grad, exp_avg, exp_avg_sq; writes param, exp_avg, exp_avg_sq",
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--sections", default=",".join(SECTIONS))
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    env = Env(args.quick)
    info = environment(env)
    print(json.dumps(info, indent=1), flush=True)
    writer = Writer(args.out, info)
    gpu_name = info["device"]
    failed = 0
    for name in args.sections.split(","):
        t0 = time.perf_counter()
        try:
            rows = memory_bound(env, gpu_name) if name == "memory_bound" else globals()[name](env)
        except Exception:  # noqa: BLE001 - one section's failure must not lose the others
            traceback.print_exc()
            failed += 1
            continue
        fields = list(rows[0]) if rows else ["empty"]
        writer.write(name, WHAT[name], fields, rows)
        print(f"{name}: {time.perf_counter() - t0:.1f} s", flush=True)
        if env.cuda:
            env.torch.cuda.empty_cache()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""Kernel measurement harness: GEMM and fused-attention throughput by shape on one GPU, written
as a kernel table (:mod:`simulator.calibration.kernel_table`) that ``clustersim calibrate``
fits the profile's compute model to (``gpu.gemm_efficiency``, ``gpu.fp8_gemm_efficiency_scale``,
``gpu.attention_efficiency``)::

    python -m simulator.measure_kernels --hardware dgx-h200 -o data/kernels/h200.csv
    clustersim calibrate data/kernels/h200.csv --hardware dgx-h200 -o h200-compute.yaml

GEMM shapes are those the model presets run: one transformer layer of each preset at each TP
degree (``--models``, ``--tp``, ``--tokens``), forward and backward, as the schedule builder
(:class:`simulator.schedule.transformer.LayerBuilder`) emits them, so the table covers the
(m, n, k) the simulator will price; ``--shape MxNxK`` adds or replaces them. Each GEMM runs in
bf16 and, where the GPU has fp8 tensor cores and torch has ``_scaled_mm``, in fp8 (e4m3, per-tensor
scales, what TransformerEngine's fp8 GEMMs are). Attention: ``scaled_dot_product_attention``,
causal, over ``--seq`` lengths at ``--tokens`` tokens per call, forward and backward, once per
available fused backend: FlashAttention-2 (``flash2``) and cuDNN's Hopper-class kernel
(``flash3``). Timing: CUDA events around each call, ``--warmup`` then ``--iters`` calls, the
median; GEMMs start from a flushed L2. On a CPU (no GPU at hand, tests) the same code runs with
a wall clock and the math attention backend, labelled as such. torch is optional
(``pip install clustersim[measure]``).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import platform
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from simulator.calibration.kernel_table import KernelRow, KernelTable, format_table
from simulator.errors import InputError, exit_code
from simulator.files import check_output_path, write_atomically

DEFAULT_MODELS = ("llama3-8b", "llama3-70b", "llama3-405b", "gpt3-175b")
DEFAULT_TP = (1, 2, 4, 8)
DEFAULT_SEQ = (1024, 2048, 4096, 8192, 16384, 32768)


@dataclass(frozen=True)
class GemmShape:
    m: int
    n: int
    k: int
    label: str


def preset_gemm_shapes(models: Sequence[str], tps: Sequence[int], tokens: int, hardware: str) -> list[GemmShape]:
    """Distinct (m, n, k) of one layer's forward and backward GEMMs, per preset and TP degree
    (plans whose TP does not divide the heads are skipped)."""
    from simulator.config.hardware import load_profile
    from simulator.config.scenario import build_scenario
    from simulator.schedule.ir import ProgramBuilder
    from simulator.schedule.transformer import LayerBuilder, LayerSpec

    gpus = load_profile(hardware).node.gpus  # one node; the rest of it is data parallel
    seen: dict[tuple[int, int, int], GemmShape] = {}
    for model in models:
        for tp in tps:
            data = {"name": "shapes", "hardware": hardware, "nodes": 1,
                    "model": {"preset": model, "seq_len": tokens},
                    "training": {"micro_batch": 1, "global_batch": gpus, "dtype": "bf16", "recompute": "none"},
                    "parallel": {"tp": tp}}
            try:
                scn = build_scenario(data, source=f"{model} tp{tp}")
            except InputError:
                continue  # tp does not divide this model's heads, or the node
            pb = ProgramBuilder()
            builder = LayerBuilder(LayerSpec.from_scenario(scn))
            builder.backward(pb, 0, 0, builder.forward(pb, 0, 0, -1))
            for op in pb.ops:
                shape = getattr(op, "gemm", None)
                if op.type == "compute" and op.kind == "gemm" and shape and tuple(shape) not in seen:
                    name = op.name.split(".", 1)[-1]
                    m, n, k = shape
                    seen[tuple(shape)] = GemmShape(m, n, k, label=f"{model} tp{tp} {name}")
    return list(seen.values())


def parse_shape(text: str) -> GemmShape:
    try:
        m, n, k = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise InputError(f"expected MxNxK, e.g. 4096x4096x14336, got {text!r}", field="--shape") from None
    if min(m, n, k) < 1:
        raise InputError(f"expected positive sizes, got {text!r}", field="--shape")
    return GemmShape(m, n, k, label="--shape")


# ------------------------------------------------------------------------------ timing

def _torch() -> Any:
    try:
        import torch  # noqa: PLC0415
    except ImportError:
        raise InputError("measuring kernels needs PyTorch: pip install 'clustersim[measure]'") from None
    return torch


class Timer:
    """Median time of a callable: CUDA events on a GPU, the wall clock on a CPU."""

    def __init__(self, torch: Any, device: Any, warmup: int, iters: int) -> None:
        self.torch, self.device, self.warmup, self.iters = torch, device, warmup, iters

    def __call__(self, fn: Callable[[], Any], before: Callable[[], Any] | None = None) -> float:
        cuda = self.device.type == "cuda"
        times = []
        for i in range(self.warmup + self.iters):
            if before is not None:
                before()
            if cuda:
                start, end = self.torch.cuda.Event(enable_timing=True), self.torch.cuda.Event(enable_timing=True)
                start.record()
                fn()
                end.record()
                end.synchronize()
                dt = start.elapsed_time(end) * 1e-3
            else:
                t0 = time.perf_counter()
                fn()
                dt = time.perf_counter() - t0
            if i >= self.warmup:
                times.append(dt)
        return statistics.median(times)


L2_FLUSH_BYTES = 256 * 2**20  # larger than any GPU's L2 (H100/H200: 50 MB, B200: 126 MB)


def measure_gemms(torch: Any, timer: Timer, shapes: Sequence[GemmShape], fp8: bool) -> list[KernelRow]:
    """Each GEMM from cold caches: in training a GEMM's operands were last touched by other
    kernels, so a timing loop that leaves them in L2 would flatter the small shapes."""
    rows = []
    dev = timer.device
    dtype = torch.bfloat16 if dev.type == "cuda" else torch.float32
    flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8, device=dev).zero_ if dev.type == "cuda" else None
    for s in shapes:
        a = torch.randn(s.m, s.k, device=dev, dtype=dtype)
        b = torch.randn(s.k, s.n, device=dev, dtype=dtype)
        t = timer(lambda: torch.matmul(a, b), before=flush)
        rows.append(KernelRow("gemm", "cublas" if dev.type == "cuda" else "cpu", "bf16" if dev.type == "cuda" else "fp32",
                              "fwd", t * 1e6, m=s.m, n=s.n, k=s.k, label=s.label))
        if fp8 and s.m % 16 == 0 and s.n % 16 == 0 and s.k % 16 == 0:
            a8 = a.to(torch.float8_e4m3fn)
            b8 = b.t().contiguous().to(torch.float8_e4m3fn).t()  # column-major B, as _scaled_mm wants
            one = torch.ones((), device=dev, dtype=torch.float32)
            t8 = timer(lambda: torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16),
                       before=flush)
            rows.append(KernelRow("gemm", "cublas-fp8", "fp8", "fwd", t8 * 1e6, m=s.m, n=s.n, k=s.k, label=s.label))
    return rows


def attention_backends(torch: Any, device: Any) -> list[tuple[str, Any]]:
    """(generation, SDPA backend) pairs to measure: flash2 and cuDNN (flash3) on a GPU that has
    them, the math backend on a CPU."""
    from torch.nn.attention import SDPBackend  # noqa: PLC0415

    if device.type != "cuda":
        return [("cpu-math", SDPBackend.MATH)]
    out = [("flash2", SDPBackend.FLASH_ATTENTION)]
    if torch.cuda.get_device_capability(device)[0] >= 9 and hasattr(SDPBackend, "CUDNN_ATTENTION"):
        out.append(("flash3", SDPBackend.CUDNN_ATTENTION))
    return out


def measure_attention(torch: Any, timer: Timer, seqs: Sequence[int], tokens: int, heads: int,
                      head_dim: int) -> tuple[list[KernelRow], list[str]]:
    from torch.nn.attention import sdpa_kernel  # noqa: PLC0415

    rows, notes = [], []
    dev = timer.device
    dtype = torch.bfloat16 if dev.type == "cuda" else torch.float32
    f = torch.nn.functional.scaled_dot_product_attention
    for kernel, backend in attention_backends(torch, dev):
        for seq in seqs:
            b = max(1, tokens // seq)
            q, k, v = (torch.randn(b, heads, seq, head_dim, device=dev, dtype=dtype, requires_grad=True) for _ in range(3))
            grad = torch.randn(b, heads, seq, head_dim, device=dev, dtype=dtype)
            try:
                with sdpa_kernel(backend):
                    t_fwd = timer(lambda: f(q, k, v, is_causal=True))
                    state: dict[str, Any] = {}

                    def forward() -> None:
                        state["out"] = f(q, k, v, is_causal=True)

                    t_bwd = timer(lambda: state["out"].backward(grad), before=forward)
            except RuntimeError as exc:  # the backend does not take this shape / dtype here
                notes.append(f"{kernel} seq {seq}: not run ({str(exc).splitlines()[0][:80]})")
                continue
            name = "bf16" if dev.type == "cuda" else "fp32"
            for direction, t in (("fwd", t_fwd), ("bwd", t_bwd)):
                rows.append(KernelRow("attention", kernel, name, direction, t * 1e6, batch=b, heads=heads, seq=seq,
                                      head_dim=head_dim, causal=True, label=f"seq {seq}"))
    return rows, notes


def environment(torch: Any, device: Any) -> dict[str, str]:
    """Where and with what the table was measured (the header of the kernel table)."""
    env = {"date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), "host": platform.node(),
           "torch": torch.__version__, "python": platform.python_version()}
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        env.update({"device": props.name, "sms": str(props.multi_processor_count),
                    "memory_GiB": f"{props.total_memory / 2**30:.0f}", "cuda": str(torch.version.cuda),
                    "cudnn": str(torch.backends.cudnn.version())})
        try:
            import subprocess  # noqa: PLC0415

            out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,clocks.max.sm", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=10).stdout.strip().splitlines()
            if out:
                env["driver, max SM clock"] = out[0]
        except (OSError, subprocess.SubprocessError):
            pass
    else:
        env["device"] = f"CPU ({platform.processor() or platform.machine()})"
    return env


# ------------------------------------------------------------------------------ command line

def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m simulator.measure_kernels", description=__doc__.splitlines()[0])
    p.add_argument("--hardware", default="dgx-h200", help="profile whose node the preset shapes are built for")
    p.add_argument("--models", nargs="*", default=list(DEFAULT_MODELS), help="model presets whose layer GEMMs to time")
    p.add_argument("--tp", nargs="*", type=int, default=list(DEFAULT_TP), help="TP degrees of those layers")
    p.add_argument("--tokens", type=int, default=4096, help="tokens per GEMM / attention call (micro-batch x seq)")
    p.add_argument("--shape", action="append", default=[], help="an extra GEMM MxNxK (repeatable)")
    p.add_argument("--only-shapes", action="store_true", help="time only the --shape GEMMs, not the presets'")
    p.add_argument("--seq", nargs="*", type=int, default=list(DEFAULT_SEQ), help="attention sequence lengths")
    p.add_argument("--heads", type=int, default=32, help="attention heads per call")
    p.add_argument("--head-dim", type=int, default=128)
    p.add_argument("--no-fp8", action="store_true", help="skip the fp8 GEMMs")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--device", default=None, help="cuda or cpu (default: cuda when available)")
    p.add_argument("-o", "--output", help="kernel table CSV to write (default, or '-': stdout)")
    return p


def run(args: argparse.Namespace) -> int:
    if args.iters < 1 or args.warmup < 0 or args.tokens < 1 or args.heads < 1 or args.head_dim < 1:
        raise InputError("expected --iters >= 1, --warmup >= 0 and positive --tokens, --heads, --head-dim")
    shapes = [parse_shape(s) for s in args.shape]
    if not args.only_shapes:
        shapes += preset_gemm_shapes(args.models, args.tp, args.tokens, args.hardware)
    check_output_path(args.output, "-o")
    torch = _torch()
    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    timer = Timer(torch, device, args.warmup, args.iters)
    fp8 = (not args.no_fp8 and device.type == "cuda" and hasattr(torch, "_scaled_mm")
           and torch.cuda.get_device_capability(device) >= (8, 9))
    rows = measure_gemms(torch, timer, shapes, fp8)
    att, notes = measure_attention(torch, timer, [s for s in args.seq if s > 0], args.tokens, args.heads, args.head_dim)
    header = environment(torch, device)
    header["command"] = "python -m simulator.measure_kernels " + " ".join(getattr(args, "argv", sys.argv[1:]))
    for n in notes:
        print(f"note: {n}", file=sys.stderr)
    text = format_table(KernelTable(rows + att, header))
    if args.output and args.output != "-":
        write_atomically(Path(args.output), text)
        print(f"wrote {args.output}: {len(rows)} GEMM and {len(att)} attention rows", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.argv = list(argv) if argv is not None else sys.argv[1:]
    return exit_code("python -m simulator.measure_kernels", lambda: run(args))


if __name__ == "__main__":
    raise SystemExit(main())

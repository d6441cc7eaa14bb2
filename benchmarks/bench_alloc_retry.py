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
  (2.2 S): there each gather takes the out-of-memory path twice (``num_alloc_retries``);
* with ``--emulate``, the allocations of one training step of GPT-530B on 640 GPUs (micro-batch 4,
  sequence 2,048, 105 layers, full recompute) in the order DeepSpeed 0.3.13 and Megatron-LM make
  them, without the kernels: the rank's fp16/fp32 states, the pinned tied embedding, each
  layer's checkpointed forward, the loss, then per layer the recompute and the backward with each
  weight gathered into two comm-stream buffers (:data:`FORWARD`, :data:`RECOMPUTE`,
  :data:`BACKWARD`), each weight gradient kept whole until the IPG flush after next. It runs the
  step with PyTorch's allocator capped at a device size (minus 0.64 GiB outside PyTorch, the
  memory model's CUDA context and NCCL buffers) and reports the step's time, the reserved peak,
  the retries and the ``cudaFree`` calls; ``--dry-run`` only tallies the live bytes (no GPU).

    python benchmarks/bench_alloc_retry.py [--iters 20] [--emulate [--dry-run]]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

SIZES = (0.3355e9, 0.839e9, 2.516e9, 3.355e9)

# -- one step of GPT-530B at micro-batch 4 on 640 GPUs, as allocations -----------------------------
# Sizes in units of one hidden state, s x b x h x 2 bytes = 2,048 x 4 x 20,480 x 2. The scores and
# the softmax output (b x a x s x s fp16) are 12.8 of them, the dropout mask (1 byte) 6.4; the
# weights (fp16) QKV 3h^2 x 2 = 7.5, the projection 2.5, each MLP weight 10; the tied embedding with
# the position table 53,248 x h x 2.
HIDDEN = 2048 * 4 * 20480 * 2
WEIGHTS = {"q": 7.5, "p": 2.5, "1": 10.0, "2": 10.0}
EMBEDDING = 2 * 53248 * 20480 / HIDDEN
# the rank's partitions (529.6e9 / 640 parameters): fp16 weights, fp16 gradients, fp32 master, m, v
STATES = (4.93, 4.93, 9.86, 9.86, 9.86)
# Per layer, in order: "g:W" gathers weight W (``_allgather_param``: its zeroed tensor and
# ProcessGroupNCCL's flat output on the comm stream, the flat output freed after the copies, the
# device synchronised before and after), "r:W" releases it, "+name:size" allocates on the default
# stream (replacing a tensor of that name), "-name" frees, "b:name" puts a weight gradient in the
# IPG bucket, "F" flushes the bucket (``reduce_ipg_grads``: the previously flushed gradients are
# partitioned and freed, the bucket's become the previous ones). The forward is Megatron-LM's
# checkpointed layer under no_grad (its output "O" is the next checkpoint); the recompute keeps
# what autograd saves and keeps the fc2 weight for the backward (``max_reuse_distance``); the
# backward's flushes follow the hooks of the biases and norms between the weights.
FORWARD = ("g:q +x:1 +qkv:3 -x r:q +sc:12.8 +pr:12.8 +dm:6.4 +do:12.8 -dm +cx:1 +cc:1 -cx -sc -pr -do -qkv "
           "g:p +po:1 r:p -cc +m:.5 +h:1 -m -po +x:1 g:1 +f1:4 -x r:1 +ge:4 -f1 g:2 +f2:1 -ge r:2 +m:.5 +O:1 "
           "-m -f2 -h")
RECOMPUTE = ("g:q +x:1 +qkv:3 r:q +sc:12.8 +pr:12.8 -sc +dm:6.4 +do:12.8 +cx:1 +cc:1 -cx g:p +po:1 r:p +m:.5 "
             "+h:1 -po +x2:1 g:1 +f1:4 r:1 +ge:4 g:2 +f2:1 +m2:.5 +o:1 -f2")
BACKWARD = ("+gd:1 -o -m2 +gi:4 +wg2:10 b:wg2 r:2 -gd -ge F +gg:4 -gi -f1 g:1 +gx:1 +wg1:10 b:wg1 r:1 -gg "
            "+gh:1 -gx -x2 F +gr:1 -gh -m g:p +gc:1 +wgp:2.5 b:wgp r:p -gr -cc +gp:12.8 +gv:1 -gc -do "
            "+gd2:12.8 -gp -dm +gs:12.8 -gd2 -pr +gq:1 +gk:1 -gs +gqkv:3 -gq -gk -gv g:q +gx1:1 +wgq:7.5 F "
            "b:wgq r:q -gqkv -qkv +gin:1 -gx1 -x -h F -go")
LOSS = "+fl:1 +lg:2.5 +lf:5 -lg +glf:5 -lf +glg:2.5 -glf +eg:{emb} +go:1 -glg -fl"


class StepEmulation:
    """Replays :data:`FORWARD`, the loss, :data:`RECOMPUTE` and :data:`BACKWARD` over the layers as
    allocations (on the GPU, or tallied only when `gpu` is False)."""

    def __init__(self, gpu: bool, layers: int = 105):
        self.gpu, self.layers = gpu, layers
        self.live: dict[str, tuple[object, int]] = {}
        self.bucket: list[str] = []
        self.previous: list[str] = []
        self.bytes = 0
        self.peak = 0
        self.comm = torch.cuda.Stream() if gpu else None

    def alloc(self, name: str, units: float, comm: bool = False) -> None:
        n = int(units * HIDDEN)
        t: object = n
        if self.gpu:
            with torch.cuda.stream(self.comm if comm else torch.cuda.current_stream()):
                t = torch.empty(n, dtype=torch.uint8, device="cuda")
        self.free(name)
        self.live[name] = (t, n)
        self.bytes += n
        self.peak = max(self.peak, self.bytes)

    def free(self, name: str) -> None:
        if name in self.live:
            self.bytes -= self.live.pop(name)[1]

    def sync(self) -> None:
        if self.gpu:
            torch.cuda.synchronize()

    def run(self, ops: str) -> None:
        for op in ops.split():
            kind, _, arg = op.partition(":")
            if kind == "g":
                self.sync()
                self.alloc("W" + arg, WEIGHTS[arg], comm=True)
                self.alloc("flat", WEIGHTS[arg], comm=True)
                self.sync()
                self.free("flat")
            elif kind == "r":
                self.free("W" + arg)
            elif kind == "b":
                self.bucket.append(arg)
            elif kind == "F":
                for g in self.previous:
                    self.free(g)
                self.previous, self.bucket = self.bucket, []
            elif kind[0] == "+":
                self.alloc(kind[1:], float(arg))
            else:
                self.free(kind[1:])

    def states(self) -> None:
        for i, units in enumerate(STATES):
            self.alloc(f"state{i}", units)

    def step(self) -> float:
        self.sync()
        t0 = time.perf_counter()
        self.alloc("emb", EMBEDDING, comm=True)
        self.alloc("flat", EMBEDDING, comm=True)
        self.sync()
        self.free("flat")
        self.alloc("c0", 1)
        self.alloc("em", 0.5)
        for layer in range(self.layers):
            self.run(FORWARD)
            self.live[f"c{layer + 1}"] = self.live.pop("O")
        self.run(LOSS.format(emb=EMBEDDING))
        self.free(f"c{self.layers}")
        for layer in range(self.layers - 1, -1, -1):
            self.run(RECOMPUTE)
            self.run(BACKWARD)
            self.live["go"] = self.live.pop("gin")
            self.free(f"c{layer}")
        self.run("F F -go -eg -em -emb")
        self.bucket, self.previous = [], []
        self.sync()
        return time.perf_counter() - t0


def emulate(devices_gib: tuple[float | None, ...] = (None, 96, 94, 93, 92, 91, 90, 88, 86, 84, 82, 80),
            outside_gib: float = 0.64) -> dict[str, object]:
    """The step of :class:`StepEmulation` with the allocator capped at each device size."""
    total = torch.cuda.get_device_properties(0).total_memory
    out: dict[str, object] = {}
    for dev in devices_gib:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        cap = 1.0 if dev is None else (dev - outside_gib) * 2**30 / total
        torch.cuda.set_per_process_memory_fraction(cap)
        emu = StepEmulation(gpu=True)
        emu.states()
        try:
            times, s0 = [], {}
            for i in range(3):
                if i == 1:
                    s0 = torch.cuda.memory_stats()
                times.append(emu.step())
            s1 = torch.cuda.memory_stats()
            out[str(dev)] = {"step_s": [round(t, 3) for t in times],
                             "reserved_peak_GiB": round(s1["reserved_bytes.all.peak"] / 2**30, 2),
                             **{k: (s1[k] - s0[k]) / 2 for k in ("num_alloc_retries", "num_device_free")}}
        except torch.cuda.OutOfMemoryError as e:
            out[str(dev)] = f"out of memory: {str(e).splitlines()[0][:100]}"
        emu.live.clear()
    torch.cuda.set_per_process_memory_fraction(1.0)
    return out
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
    ap.add_argument("--emulate", action="store_true", help="the GPT-530B step's allocations, capped (module doc)")
    ap.add_argument("--dry-run", action="store_true", help="with --emulate: tally the live bytes only, no GPU")
    args = ap.parse_args()
    if args.emulate and args.dry_run:
        emu = StepEmulation(gpu=False)
        emu.states()
        emu.step()
        print(json.dumps({"live_peak_GiB": round(emu.peak / 2**30, 2), "left_after_step": sorted(emu.live)}))
        return
    torch.zeros(1, device="cuda")
    if args.emulate:
        print(json.dumps(emulate(), indent=1))
        return
    out: dict[str, object] = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__}
    for s in SIZES:
        m, f = malloc_free_ms(int(s))
        out[f"{s / 1e9:.2f} GB"] = {"cudaMalloc_ms": round(m, 3), "cudaFree_ms": round(f, 3)}
    for s in (SIZES[1], SIZES[3]):
        out[f"gather {s / 1e9:.2f} GB"] = pingpong(int(s), args.iters)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()

"""Host time of one Megatron-DeepSpeed (legacy) GPT layer at TP 1: forward under DeepSpeed's
activation checkpointing, its recompute and its backward, on tiny CPU tensors (hidden 16,
sequence 8: the kernels cost next to nothing, as in ``bench_host_overhead.py``).

Every op runs Python, PyTorch's dispatcher and autograd's recording and engine as on a GPU.
``--device meta`` runs the same on meta tensors, but is not the host's cost: many meta kernels
are Python functions (``torch/_meta_registrations.py``, ``torch/_refs``), so an elementwise
``mul`` costs ~190 us there against ~2 us dispatched on CPU. What is timed is the host's work to
issue a layer, less what CUDA adds (``CUDA_LAUNCH_US`` and ``CUDA_BWD_NODE_US`` of
``simulator/costs/host.py``) and the caching allocator; it is compared with the CPU part of the
per-layer charge of ``costs/host.py`` (12 forward + 12 recomputed kernels at ``LAYER_FWD_CPU_US``,
18 backward kernels at ``LAYER_BWD_CPU_US``; the TP AllReduces are absent at TP 1).

The layer follows, op by op, microsoft/Megatron-DeepSpeed @f4157bea:
``megatron/model/transformer.py`` (``ParallelTransformerLayer.forward``,
``ParallelAttention.forward``, ``CoreAttention.forward``, ``ParallelMLP.forward``,
``bias_dropout_add``), ``megatron/core/tensor_parallel/layers.py``
(``ColumnParallelLinear``/``RowParallelLinear`` with
``LinearWithGradAccumulationAndAsyncCommunication``; the identity TP mappings at TP 1 are
autograd Functions), ``megatron/core/tensor_parallel/random.py``
(``CudaRNGStatesTracker.fork`` around attention dropout), apex's ``FusedLayerNormAffineFunction``
and Megatron's ``ScaledUpperTriangMaskedSoftmax`` and ``GeLUFunction`` (autograd Functions whose
fused kernels are replaced by the same number of ATen ops on meta), and DeepSpeed's
``runtime/activation_checkpointing/checkpointing.py`` ``CheckpointFunction`` (RNG states saved
in forward, restored around the recompute; re-entrant ``torch.autograd.backward``). The CUDA
generator's state (16 bytes) is stood in for by a ``torch.Generator`` on CPU.

Dropout on CPU is four ATen ops (``empty_like``, ``bernoulli_``, ``div_``, ``mul``) where CUDA
runs one ``native_dropout``. Not reproduced: the two ``torch.tensor(0.0, device=...)`` of ``ParallelTransformerLayer.forward``
(moe_loss, mlp_bias; on a GPU each is a blocking host-to-device copy), printed separately.

    python benchmarks/bench_layer_host.py [--layers 24] [--repeats 9] [--device cpu|meta]

Measured (torch 2.13 CPU, one thread, minimum of 9 repeats, fastest of three runs on a shared
machine): 0.27 ms checkpointed forward and 0.78 ms recompute + backward per layer and micro-batch
(1.04 ms; the slowest run 1.59 ms), against 0.37 ms in ``costs/host.py``'s per-kernel costs of
the time (11 us forward, 6 backward). A later run: 0.43 + 1.03 ms checkpointed, and without
checkpointing 390 us forward and 461 us backward per layer, 32.5 and 25.6 us per kernel the model
lists for the layer (12 forward, 18 backward): ``LAYER_FWD_CPU_US`` and ``LAYER_BWD_CPU_US`` of
``costs/host.py`` with ``bench_gpt_block_host.py``'s figures.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
from typing import Any, Callable, Iterator

import torch
import torch.nn.functional as F

DEV = "cpu"
DT = torch.float32


class _Identity(torch.autograd.Function):
    """``_CopyToModelParallelRegion`` / ``_ReduceFromModelParallelRegion`` at TP 1: identity
    forward and backward (``mappings.py``), still an autograd node."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor) -> torch.Tensor:
        return x

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> torch.Tensor:
        return g


class _Linear(torch.autograd.Function):
    """``LinearWithGradAccumulationAndAsyncCommunication`` at TP 1, no sequence parallelism."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None) -> torch.Tensor:
        ctx.save_for_backward(x, w)
        ctx.use_bias = b is not None
        out = torch.matmul(x, w.t())
        if b is not None:
            out = out + b
        return out

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[Any, ...]:
        x, w = ctx.saved_tensors
        gi = g.matmul(w)
        g = g.contiguous()
        g = g.view(g.shape[0] * g.shape[1], g.shape[2])
        x = x.view(x.shape[0] * x.shape[1], x.shape[2])
        gw = g.t().matmul(x)
        gb = g.sum(dim=0) if ctx.use_bias else None
        return gi, gw, gb


class _LayerNorm(torch.autograd.Function):
    """apex ``FusedLayerNormAffineFunction``: contiguous() of input, weight, bias, one kernel
    forward (returning mean and invvar), one backward kernel (here ATen's)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        x_, w_, b_ = x.contiguous(), w.contiguous(), b.contiguous()
        out, mean, invvar = torch.native_layer_norm(x_, (x_.shape[-1],), w_, b_, 1e-5)
        ctx.save_for_backward(x_, w_, b_, mean, invvar)
        return out

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[Any, ...]:
        x, w, b, mean, invvar = ctx.saved_tensors
        gi, gw, gb = torch.ops.aten.native_layer_norm_backward(
            g.contiguous(), x, (x.shape[-1],), mean, invvar, w, b, [True, True, True])
        return gi, gw, gb


class _CausalSoftmax(torch.autograd.Function):
    """Megatron ``ScaledUpperTriangMaskedSoftmax`` (fused_softmax.py): one kernel each way."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, scale: float) -> torch.Tensor:
        y = torch.softmax(x, -1)
        ctx.save_for_backward(y)
        ctx.scale = scale
        return y

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[Any, ...]:
        (y,) = ctx.saved_tensors
        return torch._softmax_backward_data(g, y, -1, y.dtype), None


class _BiasGeLU(torch.autograd.Function):
    """Megatron ``GeLUFunction`` (fused_bias_gelu.py): a jitted bias+GeLU each way, one kernel."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, b)
        return F.gelu(x + b)

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[Any, ...]:
        x, b = ctx.saved_tensors
        gi = torch.ops.aten.gelu_backward(g, x)
        return gi, gi


class RNGTracker:
    """``CudaRNGStatesTracker`` (random.py): ``fork`` gets the current state, sets the
    tracker's, yields, stores the advanced state and restores the original."""

    def __init__(self) -> None:
        self.gen = torch.Generator()
        self.states_ = {"model-parallel-rng": self.gen.get_state()}

    def get_states(self) -> dict[str, torch.Tensor]:
        return {k: v for k, v in self.states_.items()}

    def set_states(self, states: dict[str, torch.Tensor]) -> None:
        self.states_ = states

    @contextlib.contextmanager
    def fork(self, name: str = "model-parallel-rng") -> Iterator[None]:
        if name not in self.states_:
            raise Exception(name)
        orig = self.gen.get_state()
        self.gen.set_state(self.states_[name])
        try:
            yield
        finally:
            self.states_[name] = self.gen.get_state()
            self.gen.set_state(orig)


TRACKER = RNGTracker()


def _bias_dropout_add(x: torch.Tensor, bias: torch.Tensor, residual: torch.Tensor, p: float) -> torch.Tensor:
    """transformer.py ``bias_dropout_add`` (jitted and fused into one kernel each way on a GPU)."""
    out = F.dropout(x + bias, p=p, training=True)
    return residual + out


class Layer:
    """The parameters of one ``ParallelTransformerLayer`` at TP 1 and its forward."""

    def __init__(self, h: int, heads: int) -> None:
        def p(*shape: int) -> torch.Tensor:
            return torch.empty(*shape, device=DEV, dtype=DT, requires_grad=True)
        self.h, self.heads, self.hn = h, heads, h // heads
        self.ln1_w, self.ln1_b = p(h), p(h)
        self.qkv_w, self.qkv_b = p(3 * h, h), p(3 * h)
        self.dense_w, self.dense_b = p(h, h), p(h)
        self.ln2_w, self.ln2_b = p(h), p(h)
        self.fc1_w, self.fc1_b = p(4 * h, h), p(4 * h)
        self.fc2_w, self.fc2_b = p(h, 4 * h), p(h)
        self.params = [self.ln1_w, self.ln1_b, self.qkv_w, self.qkv_b, self.dense_w, self.dense_b,
                       self.ln2_w, self.ln2_b, self.fc1_w, self.fc1_b, self.fc2_w, self.fc2_b]

    def column(self, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = _Identity.apply(x)                  # copy_to_tensor_model_parallel_region
        return _Linear.apply(x, w, None), b     # skip_bias_add

    def row(self, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out = _Linear.apply(x, w, None)
        return _Identity.apply(out), b          # reduce_from_tensor_model_parallel_region

    def attention(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mixed, _ = self.column(x, self.qkv_w, self.qkv_b)
        s, b = mixed.shape[0], mixed.shape[1]
        e = mixed.shape[-1] // 3
        q = mixed[:, :, :e].reshape(s, b, -1, self.hn)
        k = mixed[:, :, e:2 * e].reshape(s, b, -1, self.hn)
        v = mixed[:, :, 2 * e:].reshape(s, b, -1, self.hn)
        # CoreAttention.forward
        out_size = (q.size(1), q.size(2), q.size(0), k.size(0))
        q = q.view(out_size[2], out_size[0] * out_size[1], -1)
        k = k.view(out_size[3], out_size[0] * out_size[1], -1)
        buf = torch.empty((out_size[0] * out_size[1], out_size[2], out_size[3]), device=DEV, dtype=DT)
        scores = torch.baddbmm(buf, q.transpose(0, 1), k.transpose(0, 1).transpose(1, 2),
                               beta=0.0, alpha=1.0 / self.hn ** 0.5)
        scores = scores.view(*out_size)
        # FusedScaleMaskSoftmax.forward_fused_softmax: view to 3-D, kernel, view back
        b_, np_, sq, sk = scores.size()
        probs = _CausalSoftmax.apply(scores.view(-1, sq, sk), 1.0).view(b_, np_, sq, sk)
        with TRACKER.fork():
            probs = F.dropout(probs, p=0.1, training=True)
        out_size = (v.size(1), v.size(2), q.size(0), v.size(3))
        v = v.view(v.size(0), out_size[0] * out_size[1], -1)
        probs = probs.view(out_size[0] * out_size[1], out_size[2], -1)
        ctx = torch.bmm(probs, v.transpose(0, 1))
        ctx = ctx.view(*out_size)
        ctx = ctx.permute(2, 0, 1, 3).contiguous()
        ctx = ctx.view(*(ctx.size()[:-2] + (self.h,)))
        return self.row(ctx, self.dense_w, self.dense_b)

    def mlp(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        inter, bias = self.column(x, self.fc1_w, self.fc1_b)
        inter = _BiasGeLU.apply(inter, bias)
        return self.row(inter, self.fc2_w, self.fc2_b)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        ln = _LayerNorm.apply(hidden, self.ln1_w, self.ln1_b)
        attn_out, attn_bias = self.attention(ln)
        residual = hidden
        attn_bias = attn_bias.expand_as(residual)
        with torch.enable_grad():               # bias_dropout_add_exec_handler (torch >= 1.10)
            ln_in = _bias_dropout_add(attn_out, attn_bias, residual, 0.1)
        ln = _LayerNorm.apply(ln_in, self.ln2_w, self.ln2_b)
        mlp_out, mlp_bias = self.mlp(ln)
        residual = ln_in
        mlp_bias = mlp_bias.expand_as(residual)
        with torch.enable_grad():
            out = _bias_dropout_add(mlp_out, mlp_bias, residual, 0.1)
        # core.utils.make_viewless_tensor(keep_graph=True): a no-op for a non-view output
        return out


class CheckpointFunction(torch.autograd.Function):
    """DeepSpeed ``CheckpointFunction`` without partitioned or CPU activations."""

    @staticmethod
    def forward(ctx: Any, run_function: Callable[..., torch.Tensor], *args: torch.Tensor) -> torch.Tensor:
        ctx.run_function = run_function
        inputs = [a.detach() if torch.is_tensor(a) else a for a in args]
        ctx.fwd_cpu_rng_state = torch.get_rng_state()
        ctx.fwd_cuda_rng_state = TRACKER.gen.get_state()
        ctx.fwd_cuda_rng_state_tracker = TRACKER.get_states()
        with torch.no_grad():
            outputs = run_function(*inputs)
        ctx.save_for_backward(*args)
        return outputs

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor) -> tuple[Any, ...]:
        if not torch.autograd._is_checkpoint_valid():
            raise RuntimeError("checkpoint")
        inputs = ctx.saved_tensors
        detached = []
        for inp in inputs:
            x = inp.detach()
            x.requires_grad = inp.requires_grad
            detached.append(x)
        bwd_cpu_rng_state = torch.get_rng_state()
        bwd_cuda_rng_state = TRACKER.gen.get_state()
        bwd_cuda_rng_state_tracker = TRACKER.get_states()
        torch.set_rng_state(ctx.fwd_cpu_rng_state)
        TRACKER.gen.set_state(ctx.fwd_cuda_rng_state)
        TRACKER.set_states(ctx.fwd_cuda_rng_state_tracker)
        with torch.enable_grad():
            outputs = ctx.run_function(*detached)
        torch.set_rng_state(bwd_cpu_rng_state)
        TRACKER.gen.set_state(bwd_cuda_rng_state)
        TRACKER.set_states(bwd_cuda_rng_state_tracker)
        if torch.is_tensor(outputs):
            outputs = (outputs,)
        out_t, grad_t = [], []
        for out, g in zip(outputs, grads):
            if out.requires_grad:
                out_t.append(out)
                grad_t.append(g)
        torch.autograd.backward(tuple(out_t), tuple(grad_t))
        return (None,) + tuple(x.grad if isinstance(x, torch.Tensor) else None for x in detached)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--hidden", type=int, default=16)
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--seq", type=int, default=8)
    ap.add_argument("--micro-batch", type=int, default=1)
    ap.add_argument("--device", default="cpu", help="cpu (tiny tensors) or meta")
    args = ap.parse_args()
    global DEV, DT
    DEV = args.device
    DT = torch.float16 if DEV == "meta" else torch.float32
    torch.set_num_threads(1)
    layers = [Layer(args.hidden, args.heads) for _ in range(args.layers)]
    n = args.layers
    fwd, bwd, plain_fwd, plain_bwd = [], [], [], []
    def timed_step(step) -> tuple[float, float]:
        """Host seconds per layer of one forward through every layer (``step(layer, x)``) and of
        its backward."""
        x = torch.empty(args.seq, args.micro_batch, args.hidden, device=DEV, dtype=DT, requires_grad=True)
        t0 = time.perf_counter()
        y = x
        for lay in layers:
            y = step(lay, y)
        f = (time.perf_counter() - t0) / n
        t0 = time.perf_counter()
        y.backward(torch.empty_like(y))
        b = (time.perf_counter() - t0) / n
        for lay in layers:
            for p_ in lay.params:
                p_.grad = None
        return f, b

    for _ in range(args.repeats):
        f, b = timed_step(lambda lay, y: CheckpointFunction.apply(lay.forward, y))
        fwd.append(f)
        bwd.append(b)
        # The same layer without checkpointing: forward with autograd recording, then backward.
        f, b = timed_step(lambda lay, y: lay.forward(y))
        plain_fwd.append(f)
        plain_bwd.append(b)
    sync = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        for _ in range(100):
            torch.tensor(0.0, device=DEV, dtype=DT)
        sync.append((time.perf_counter() - t0) / 100)

    def show(label: str, xs: list[float]) -> None:
        print(f"{label:58s}: {min(xs) * 1e6:7.1f} us (median {statistics.median(xs) * 1e6:7.1f} us)")

    print(f"torch {torch.__version__}, GPT layer h={args.hidden} heads={args.heads} s={args.seq} "
          f"b={args.micro_batch}, TP 1, {n} layers x {args.repeats} repeats, {DEV} tensors, one thread")
    show("checkpointed forward (no_grad), per layer", fwd)
    show("recompute + backward (re-entrant), per layer", bwd)
    show("total, per layer and micro-batch", [a + b for a, b in zip(fwd, bwd)])
    show("uncheckpointed forward, per layer", plain_fwd)
    show("uncheckpointed backward, per layer", plain_bwd)
    show("torch.tensor(0.0, device=...), each (meta: no copy)", sync)
    try:
        from simulator.costs.host import LAYER_BWD_CPU_US, LAYER_FWD_CPU_US
        charge = (12 + 12) * LAYER_FWD_CPU_US + 18 * LAYER_BWD_CPU_US
        print(f"{'costs/host.py CPU part at TP 1, per layer and micro-batch':58s}: {charge:7.1f} us")
    except ImportError:
        pass


if __name__ == "__main__":
    main()

"""Host time of Megatron-Core's MoE block (router, token dispatcher, grouped experts) on tiny CPU
tensors, against what ``simulator/costs/host.py`` charges for the same block.

Runs Megatron-Core's own ``MoELayer`` (``TopKRouter`` with the forced balancing of the benchmark
recipes, ``moe_router_force_load_balancing``: random logits under the expert-parallel RNG fork, the
aux loss; ``MoEAlltoAllTokenDispatcher``) forward and backward at EP 1, hidden 16, 8 tokens, 128
experts, top 8: every Python line, dispatcher call and autograd node of the real code path, none of
its kernels' GPU time. What cannot run on a CPU is stood in for:

- TransformerEngine's fused kernels the performance recipes turn on (``moe_router_fusion``,
  ``moe_permute_fusion``: ``fused_topk_with_score_function``, ``fused_compute_score_for_moe_aux_loss``,
  ``fused_moe_aux_loss``, ``fused_permute(_with_probs)``, ``fused_sort_chunks_by_index``,
  ``fused_unpermute``): one autograd Function of one ATen op each way, as a TE extension call
  is one Python call that launches from C++ (``--unfused`` runs Megatron-Core's PyTorch paths
  instead);
- the grouped experts (TE's ``GroupedLinear``, a C++ loop over the local experts): FC1, the gated
  activation weighted by the router's probabilities, FC2, as three matmul-class calls;
- CUDA streams, events and the CUDA RNG state (the dispatcher's device-to-host copy stream, the
  router's RNG fork): no-ops and a CPU generator's state.

CUDA adds what ``costs/host.py`` counts separately per launch (``CUDA_LAUNCH_US``) and per backward
node (``CUDA_BWD_NODE_US``); the comparison is with its CPU part (``LAYER_FWD_CPU_US``,
``LAYER_BWD_CPU_US``) per kernel the model lists for the block.

    pip install megatron-core==0.16.1      # not a dependency of clustersim
    python benchmarks/bench_moe_layer_host.py [--unfused] [--repeats 300]

Measured (megatron-core 0.16.1, torch 2.13 CPU, one thread, this repository's 2-core machine, the
minimum over 300 repeats, three runs): forward 304-314 us, backward 232-238 us with the fused
stand-ins (Megatron-Core's unfused paths: 769-800 and 586-610 us). The model charges the block's
forward 33 us of CPU for each of the 14 Python calls it lists (462 us) and its backward 23 us for
each of 16 (368 us): 1.5 times what Megatron-Core's code costs the host, so the host is not what
the model misses on Megatron-Bridge's MoE rows (docs/validation-e2e.md, the section on GB200
NVL72).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
from typing import Any, Iterator

E, TOP_K, HIDDEN, TOKENS = 128, 8, 16, 8


def _cpu_cuda_stand_ins(torch: Any) -> None:
    """CUDA calls of the dispatcher and router as CPU no-ops (module docstring)."""

    class Event:
        def record(self, *a: Any) -> None: ...
        def synchronize(self) -> None: ...
        def wait(self, *a: Any) -> None: ...

    class Stream:
        def synchronize(self) -> None: ...
        def wait_stream(self, s: Any) -> None: ...
        def record_event(self, *a: Any) -> Event: return Event()
        def wait_event(self, *a: Any) -> None: ...

    torch.cuda.current_device = lambda: "cpu"
    torch.cuda.current_stream = lambda *a, **k: Stream()
    torch.cuda.Stream = lambda *a, **k: Stream()
    torch.cuda.stream = lambda s: contextlib.nullcontext()
    torch.cuda.Event = lambda *a, **k: Event()


class _RngTracker:
    """The CUDA RNG tracker's ``fork``: the default generator's state saved, the named one's set,
    both swapped back after (a CPU generator's state for CUDA's)."""

    def __init__(self, torch: Any) -> None:
        self.torch, self.states = torch, {}

    @contextlib.contextmanager
    def fork(self, name: str = "model-parallel-rng") -> Iterator[None]:
        torch = self.torch
        orig = torch.get_rng_state()
        torch.set_rng_state(self.states.setdefault(name, orig.clone()))
        try:
            yield
        finally:
            self.states[name] = torch.get_rng_state()
            torch.set_rng_state(orig)


def _fused_stand_ins(torch: Any, moe_utils: Any) -> None:
    """TransformerEngine's fused MoE kernels as one-op autograd Functions (module docstring)."""

    class OneOp(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            return x.clone()

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            return g.clone()

    def permute(tokens: Any, routing_map: Any, num_out_tokens: int | None = None, **_: Any) -> Any:
        n = num_out_tokens or tokens.shape[0] * TOP_K
        return OneOp.apply(tokens.repeat(TOP_K, 1)[:n]), torch.empty(1)

    def permute_with_probs(tokens: Any, probs: Any, routing_map: Any, num_out_tokens: int | None = None) -> Any:
        n = num_out_tokens or tokens.shape[0] * TOP_K
        return OneOp.apply(tokens.repeat(TOP_K, 1)[:n]), OneOp.apply(probs.reshape(-1)[:n]), torch.empty(1)

    def unpermute(x: Any, row_id_map: Any, merging_probs: Any = None, restore_shape: Any = None) -> Any:
        return OneOp.apply(x[: restore_shape[0]] if restore_shape is not None else x)

    def topk(logits: Any, *_: Any, **__: Any) -> Any:
        p = OneOp.apply(logits)
        return p, p > 0

    stand_ins = {
        "fused_permute": permute, "fused_permute_with_probs": permute_with_probs, "fused_unpermute": unpermute,
        "fused_sort_chunks_by_index": lambda x, *_: OneOp.apply(x),
        "fused_sort_chunks_by_index_with_probs": lambda x, probs, *_: (OneOp.apply(x), OneOp.apply(probs)),
        "fused_topk_with_score_function": topk,
        "fused_compute_score_for_moe_aux_loss": lambda logits, *_, **__: (logits > 0, OneOp.apply(logits)),
        "fused_moe_aux_loss": lambda probs, *_, **__: OneOp.apply(probs.sum()),
    }
    for name, fn in stand_ins.items():
        setattr(moe_utils, name, fn)
    moe_utils.HAVE_TE = True


def measure(fused: bool, repeats: int) -> tuple[float, float]:
    """Minimum host seconds of the MoE block's forward and backward (module docstring)."""
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    _cpu_cuda_stand_ins(torch)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29531")
    dist.init_process_group("gloo", rank=0, world_size=1)
    from megatron.core import parallel_state
    from megatron.core.transformer.moe import moe_utils
    from megatron.core.transformer.moe.moe_layer import MoELayer, MoESubmodules
    from megatron.core.transformer.moe.router import TopKRouter
    from megatron.core.transformer.transformer_config import TransformerConfig

    parallel_state.initialize_model_parallel(1, 1, expert_model_parallel_size=1)
    tracker = _RngTracker(torch)
    moe_utils.get_cuda_rng_tracker = lambda *a, **k: tracker
    moe_utils.te_general_gemm = None  # the router GEMM through torch (no TE)
    if fused:
        _fused_stand_ins(torch, moe_utils)

    class GroupedExperts(torch.nn.Module):
        """TE's grouped experts: grouped FC1, the weighted gated activation, grouped FC2."""

        def __init__(self, *_: Any, **__: Any) -> None:
            super().__init__()
            self.w1 = torch.nn.Parameter(torch.randn(HIDDEN, 16))
            self.w2 = torch.nn.Parameter(torch.randn(8, HIDDEN))

        def forward(self, x: Any, tokens_per_expert: Any, probs: Any) -> tuple[Any, None]:
            a, b = (x @ self.w1).chunk(2, -1)
            return ((torch.nn.functional.silu(a) * b) * probs.unsqueeze(-1)) @ self.w2, None

    cfg = TransformerConfig(num_layers=1, hidden_size=HIDDEN, num_attention_heads=2, ffn_hidden_size=32,
                            num_moe_experts=E, moe_router_topk=TOP_K, moe_ffn_hidden_size=8,
                            moe_aux_loss_coeff=1e-3, moe_router_load_balancing_type="aux_loss",
                            moe_router_force_load_balancing=True, moe_token_dispatcher_type="alltoall",
                            use_cpu_initialization=True, params_dtype=torch.float32, moe_router_dtype="fp32",
                            add_bias_linear=False)
    layer = MoELayer(cfg, MoESubmodules(experts=GroupedExperts, router=TopKRouter), layer_number=1)
    # set after construction: the dispatcher builds its index tensors on CUDA when fusion is on
    cfg.moe_permute_fusion = cfg.moe_router_fusion = fused
    x = torch.randn(TOKENS, 1, HIDDEN, requires_grad=True)
    fwd, bwd = [], []
    for i in range(repeats + 30):
        t0 = time.perf_counter()
        out, _ = layer(x)
        t1 = time.perf_counter()
        out.sum().backward()
        t2 = time.perf_counter()
        if i >= 30:  # warm-up
            fwd.append(t1 - t0)
            bwd.append(t2 - t1)
    print(f"  medians: forward {1e6 * statistics.median(fwd):.0f} us, backward {1e6 * statistics.median(bwd):.0f} us")
    return min(fwd), min(bwd)


def model_charge() -> tuple[float, float, int, int]:
    """CPU seconds ``costs/host.py`` charges for one MoE block's forward and backward of the same
    configuration (Qwen3-30B-A3B's router and experts at EP 1, BF16, no CUDA graphs): each Python
    call the model lists pays ``LAYER_FWD_CPU_US`` or ``LAYER_BWD_CPU_US`` (the launches CUDA adds
    left out, as the CPU run has none), with the number of those calls."""
    from simulator.config.scenario import build_scenario
    from simulator.costs import host
    from simulator.schedule.build import build_schedule
    from simulator.schedule.ir import ComputeOp
    from simulator.simulation import with_micro_batches

    scn = build_scenario({"name": "moe-host", "hardware": "dgx-h100", "nodes": 1,
                          "model": {"preset": "qwen3-30b-a3b", "seq_len": 4096},
                          "training": {"micro_batch": 1, "global_batch": 8, "recompute": "none",
                                       "moe_router_kernels": ["random_logits", "aux_loss"]},
                          "parallel": {"ep": 1}})
    program = next(iter(build_schedule(with_micro_batches(scn, 1)).programs.values()))
    calls = {"fwd": 0, "bwd": 0}
    for op in program:
        if isinstance(op, ComputeOp) and op.tag.layer == 0 and ".moe." in op.name and op.tag.phase in calls:
            n = max(op.count, 1)
            calls[op.tag.phase] += min(op.host_calls, n) if op.host_calls else n
    return (calls["fwd"] * host.LAYER_FWD_CPU_US * 1e-6, calls["bwd"] * host.LAYER_BWD_CPU_US * 1e-6,
            calls["fwd"], calls["bwd"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--unfused", action="store_true", help="Megatron-Core's PyTorch paths instead of TE's fused kernels")
    ap.add_argument("--repeats", type=int, default=300)
    args = ap.parse_args()
    try:
        fwd, bwd = measure(not args.unfused, args.repeats)
    except ImportError as exc:
        sys.exit(f"needs megatron-core (pip install megatron-core==0.16.1): {exc}")
    print(f"Megatron-Core MoE block, {'unfused' if args.unfused else 'fused stand-ins'}: "
          f"forward {1e6 * fwd:.0f} us, backward {1e6 * bwd:.0f} us of CPU (minimum of {args.repeats})")
    try:
        mf, mb, kf, kb = model_charge()
    except ImportError:
        return
    print(f"costs/host.py for the block (its CPU part): forward {1e6 * mf:.0f} us for {kf} Python calls, "
          f"backward {1e6 * mb:.0f} us for {kb}")


if __name__ == "__main__":
    main()

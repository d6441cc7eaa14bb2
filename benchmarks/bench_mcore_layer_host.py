"""Host time of Megatron-Core's dense transformer layer on tiny CPU tensors, against what
``simulator/costs/host.py`` charges for the same layer.

Runs Megatron-Core's own ``TransformerBlock`` built from ``get_gpt_layer_local_spec()`` (Megatron's
``ColumnParallelLinear`` / ``RowParallelLinear``, its ``DotProductAttention`` with the masked
softmax and the attention dropout under the model-parallel RNG fork, the MLP, the bias-dropout-add
and the norms of the local spec) forward and backward at TP 1, hidden 64, 4 heads, 8 tokens x 2
sequences, hidden and attention dropout 0.1 as Megatron-LM's defaults and the CI's small GPT keep
them: every Python line and autograd node of the layer's code path, none of its kernels' GPU time.
CUDA streams, events and the CUDA RNG state are CPU stand-ins (``bench_moe_layer_host``'s); CUDA
adds what ``costs/host.py`` counts separately per launch and per backward node. The comparison is
with the CPU part of the model's charge (``LAYER_FWD_CPU_US`` / ``LAYER_BWD_CPU_US`` per kernel it
lists) for one layer of Megatron-LM CI's small GPT at TP 1 (``megatron_ci_small``'s scenario).

Why: the CI's small GPT (12 layers, h 512) measures 4.1-4.3 ms per layer and micro-batch on a DGX
H100 node whatever the TP degree, TransformerEngine or Megatron's local layers alike, where the
model charges about 1 ms (docs/validation-e2e.md, the functional tests' section). If Megatron-Core's
layer cost its host several times what the model charges, that would be the floor.

    pip install megatron-core==0.16.1      # not a dependency of clustersim
    python benchmarks/bench_mcore_layer_host.py [--repeats 300]

Measured (megatron-core 0.16.1, torch 2.13 CPU, one thread, this repository's 2-core machine, the
minimum over 300 repeats of the 12-layer block, three runs): 605-627 us forward and 404-412 us
backward per layer (medians 649-679 and 429-450), about 1.0 ms. The model charges the layer's
forward 33 us of CPU for each of the 12 kernels it lists (396 us) and its backward 23 us for each of
18 (414 us), 0.81 ms: Megatron-Core's layer costs its host 1.3 times the model's charge (the
forward 1.6 times, the backward 1.0), not the four times the CI's floor asks for. The floor is not
the layer's Python.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

HIDDEN, HEADS, TOKENS, SEQS, LAYERS = 64, 4, 8, 2, 12
ROOT = Path(__file__).resolve().parents[1]


def measure(repeats: int) -> tuple[float, float]:
    """Minimum host seconds of one layer's forward and backward (the 12-layer block's, divided)."""
    import torch
    import torch.distributed as dist

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_moe_layer_host import _cpu_cuda_stand_ins, _RngTracker

    torch.set_num_threads(1)
    _cpu_cuda_stand_ins(torch)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    dist.init_process_group("gloo", rank=0, world_size=1)
    from megatron.core import parallel_state, tensor_parallel
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.tensor_parallel import random as tp_random
    from megatron.core.transformer.transformer_block import TransformerBlock
    from megatron.core.transformer.transformer_config import TransformerConfig

    parallel_state.initialize_model_parallel(1, 1)
    tracker = _RngTracker(torch)
    tp_random._CUDA_RNG_STATE_TRACKER = tracker
    tp_random.get_cuda_rng_tracker = tensor_parallel.get_cuda_rng_tracker = lambda *a, **k: tracker
    cfg = TransformerConfig(num_layers=LAYERS, hidden_size=HIDDEN, num_attention_heads=HEADS,
                            ffn_hidden_size=4 * HIDDEN, use_cpu_initialization=True, params_dtype=torch.float32,
                            hidden_dropout=0.1, attention_dropout=0.1, bias_dropout_fusion=False,
                            masked_softmax_fusion=False, bias_activation_fusion=False, persist_layer_norm=False,
                            gradient_accumulation_fusion=False, apply_rope_fusion=False)
    block = TransformerBlock(cfg, get_gpt_layer_local_spec())
    x = torch.randn(TOKENS, SEQS, HIDDEN, requires_grad=True)
    mask = torch.ones(SEQS, 1, TOKENS, TOKENS, dtype=torch.bool).triu(1)
    fwd, bwd = [], []
    for i in range(repeats + 30):
        t0 = time.perf_counter()
        out = block(x, attention_mask=mask)
        t1 = time.perf_counter()
        out.sum().backward()
        t2 = time.perf_counter()
        if i >= 30:  # warm-up
            fwd.append((t1 - t0) / LAYERS)
            bwd.append((t2 - t1) / LAYERS)
    print(f"  medians per layer: forward {1e6 * statistics.median(fwd):.0f} us, "
          f"backward {1e6 * statistics.median(bwd):.0f} us")
    return min(fwd), min(bwd)


def model_charge() -> tuple[float, float, int, int]:
    """CPU seconds ``costs/host.py`` charges for one layer of the CI's small GPT at TP 1 with the
    unfused attention of the local spec (forward, backward) and the kernels it lists there, CUDA's
    launches left out as the CPU run has none."""
    sys.path.insert(0, str(ROOT))
    from simulator.config.scenario import build_scenario
    from simulator.costs import host
    from simulator.e2e_validation.megatron_ci_sources import megatron_ci_small
    from simulator.e2e_validation.rows import read_rows
    from simulator.schedule.build import build_schedule
    from simulator.schedule.ir import ComputeOp
    from simulator.simulation import with_micro_batches

    rows = read_rows(ROOT / "data/e2e/megatron_ci_golden_values.csv")
    case = next(c for c in megatron_ci_small(rows) if c.label.endswith("H100 tp1 pp1 dp8 full recompute"))
    # the local spec's attention: Megatron's DotProductAttention, the unfused path; no recompute
    scenario = dict(case.scenario, training={**case.scenario["training"], "recompute": "none", "attention": "unfused"})
    program = next(iter(build_schedule(with_micro_batches(build_scenario(scenario), 1)).programs.values()))
    kernels = {"fwd": 0, "bwd": 0}
    for op in program:
        if isinstance(op, ComputeOp) and op.tag.layer == 0 and op.tag.phase in kernels and op.kind != "host":
            kernels[op.tag.phase] += max(op.count, 1)
    return (kernels["fwd"] * host.LAYER_FWD_CPU_US * 1e-6, kernels["bwd"] * host.LAYER_BWD_CPU_US * 1e-6,
            kernels["fwd"], kernels["bwd"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=300)
    args = ap.parse_args()
    try:
        fwd, bwd = measure(args.repeats)
    except ImportError as exc:
        sys.exit(f"needs megatron-core (pip install megatron-core==0.16.1): {exc}")
    print(f"Megatron-Core layer (local spec): forward {1e6 * fwd:.0f} us, backward {1e6 * bwd:.0f} us of CPU "
          f"(minimum of {args.repeats}, per layer)")
    mf, mb, kf, kb = model_charge()
    print(f"costs/host.py for the CI small GPT's layer (its CPU part): forward {1e6 * mf:.0f} us for {kf} kernels, "
          f"backward {1e6 * mb:.0f} us for {kb}")


if __name__ == "__main__":
    main()

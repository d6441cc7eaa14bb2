"""Sizes clustersim refuses up front, with the limit and the reason.

A size far beyond any real training run is a typo (an extra zero, a number of tokens where
sequences were meant), and simulating it would use gigabytes of memory and hours before saying
anything. Each limit is a few times the largest published run and is checked while the scenario
is validated, before a topology or a schedule is built.
"""

from __future__ import annotations

# Llama 3 405B trained on 16,384 H100 (arXiv:2407.21783 §3.3); the topology is built link by
# link, about 26 KB and 5 ms per 8-GPU node.
MAX_GPUS = 131_072
# The deepest bundled or published dense model has 128 layers (gpt-1t, arXiv:2104.04473 Table 1).
MAX_LAYERS = 1_024
# Micro-batches x transformer layers one pipeline stage runs per step: each is some 30 ops of
# about 230 bytes in the schedule, so this bounds it near 500 MB. The validated runs reach 8,192.
MAX_LAYER_PASSES = 65_536
# NVL72 racks have 72 GPUs in one NVLink domain; the node is modelled GPU by GPU.
MAX_GPUS_PER_NODE = 1_024


def gpus_problem(n_gpus: int, how: str | None = None) -> str | None:
    """Why ``n_gpus`` GPUs are refused, or None; ``how`` says how the count came about."""
    if n_gpus > MAX_GPUS:
        return (f"{how + ' = ' if how else ''}{n_gpus:,} GPUs; clustersim refuses more than {MAX_GPUS:,} (8x the largest published "
                "training run, Llama 3 405B on 16,384 GPUs): the topology is built link by link, about 26 KB "
                "and 5 ms per node")
    return None


def layers_problem(layers: int) -> str | None:
    if layers > MAX_LAYERS:
        return (f"layers={layers:,}; clustersim refuses more than {MAX_LAYERS:,} (the deepest published dense "
                "model has 128): every layer's kernels are generated")
    return None


def layer_passes_problem(n_micro: int, stage_layers: int) -> str | None:
    passes = n_micro * stage_layers
    if passes > MAX_LAYER_PASSES:
        return (f"{n_micro:,} micro-batches x {stage_layers:,} layers on a pipeline stage = {passes:,} layer passes "
                f"per step; clustersim refuses more than {MAX_LAYER_PASSES:,} (about 30 ops each in the schedule, "
                "some 500 MB): raise micro_batch or lower global_batch")
    return None

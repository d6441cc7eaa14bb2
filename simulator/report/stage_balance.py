"""A split of the transformer layers over the pipeline stages that evens out their compute, read off
a replay.

1F1B runs at the pace of its most loaded stage: every other stage idles for the difference at
each step of the steady state, and ``run`` reports that idle time as the first stage's bubble.
Splitting the layers evenly by count is what ``parallel.pp_layers`` defaults to, but the stages
are not alike: the first also runs the embedding, the last the LM head and the loss (Megatron's
``account_for_embedding_in_pipeline_split`` / ``account_for_loss_in_pipeline_split`` and
``decoder_first/last_pipeline_num_layers`` exist for this), and a model's layers differ (the dense
layers before DeepSeek-V3's MoE layers, a hybrid model's Mamba, attention and MLP blocks).

What a replay gives for this: per transformer layer, the seconds its kernels ran on the compute
stream of the busiest simulated rank of its stage (every pass: forward, recompute, backward), and
per stage the rest of that rank's compute (embedding, head, loss, optimizer). Moving a layer
moves its seconds; the rest stays with its stage. The split minimising the most loaded stage is
then the contiguous min-max partition with a fixed load per part, found exactly by dynamic
programming (filling stages greedily is not enough: a stage that takes one more layer can hand a
heavy layer to a stage whose fixed load cannot take it). It is a suggestion: ``run`` prints the
new split's memory (the first stage stashes the most activations in 1F1B, so a split that moves
layers to it needs more there), and running the scenario with it replays the step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from simulator.replay.trace import Trace
from simulator.schedule.ir import ComputeOp

# A split is suggested only where it shortens the most loaded stage by at least this much.
MIN_GAIN = 0.02


@dataclass(frozen=True)
class StageBalance:
    pp_layers: list[int]  # the suggested split
    most_loaded_s: float  # its most loaded stage's compute, as estimated
    current_most_loaded_s: float  # the replayed split's


def layer_and_rest_s(trace: Trace, rank: int) -> tuple[dict[int, float], float]:
    """Compute-stream seconds of ``rank`` per transformer layer (``Tag.layer`` ≥ 0) and the rest."""
    tl = trace.timelines[rank]
    per_layer: dict[int, float] = {}
    rest = 0.0
    for i, op in enumerate(tl.program):
        if not isinstance(op, ComputeOp) or op.stream != "compute":
            continue
        d = float(tl.end[i] - tl.start[i])
        layer = op.tag.layer
        if layer is not None and layer >= 0:
            per_layer[layer] = per_layer.get(layer, 0.0) + d
        else:
            rest += d
    return per_layer, rest


def balanced_split(layer_s: list[float], fixed_s: list[float]) -> list[int]:
    """Layers per stage (contiguous, in order, at least one each) minimising the most loaded
    stage's ``fixed_s[s]`` plus its layers' seconds: the min-max partition by dynamic programming
    over (stage, layers so far), O(stages x layers^2), vectorised over the cut."""
    n, pp = len(layer_s), len(fixed_s)
    if not 1 <= pp <= n:
        raise ValueError(f"{n} layers cannot fill {pp} stages")
    prefix = np.concatenate(([0.0], np.cumsum(layer_s)))
    # best[i]: the least most-loaded stage over splits of the first i layers into the stages so far
    best = np.full(n + 1, np.inf)
    best[1:] = fixed_s[0] + prefix[1:]
    cut = np.zeros((pp, n + 1), dtype=np.int64)  # where the stage's layers start, for each end
    for s in range(1, pp):
        new = np.full(n + 1, np.inf)
        for i in range(s + 1, n - (pp - 1 - s) + 1):
            j = np.arange(s, i)  # the stage's layers are j .. i-1, at least one
            cand = np.maximum(best[j], fixed_s[s] + prefix[i] - prefix[j])
            k = int(np.argmin(cand))
            new[i], cut[s, i] = cand[k], j[k]
        best = new
    counts, end = [], n
    for s in range(pp - 1, 0, -1):
        start = int(cut[s, end])
        counts.append(end - start)
        end = start
    counts.append(end)
    return counts[::-1]


def busiest_ranks(trace: Trace, grid: Any) -> list[int] | None:
    """Per pipeline stage, its simulated rank with the most compute (None with one stage, or where a
    stage has no simulated rank)."""
    pp = grid.size("pp") if "pp" in grid.axes else 1
    if pp <= 1:
        return None
    busiest: dict[int, tuple[float, int]] = {}
    for r in trace.ranks:
        s, busy = grid.coord(r, "pp"), trace.compute_busy(r)
        if s not in busiest or busy > busiest[s][0]:
            busiest[s] = (busy, r)
    return [busiest[s][1] for s in range(pp)] if len(busiest) == pp else None


def _loads(layer_s: list[float], fixed_s: list[float], counts: Sequence[int]) -> list[float]:
    out, start = [], 0
    for s, n in enumerate(counts):
        out.append(fixed_s[s] + sum(layer_s[start:start + n]))
        start += n
    return out


def suggest(trace: Trace, busiest: list[int], stage_layers: Sequence[int], vp: int) -> StageBalance | None:
    """The split evening out the stages whose busiest ranks are ``busiest``, where it shortens the
    most loaded one by ``MIN_GAIN`` (None otherwise, and with virtual stages)."""
    if vp > 1 or len(stage_layers) != len(busiest) or len(busiest) < 2:
        return None
    layer_s: dict[int, float] = {}
    fixed_s = []
    for rank in busiest:
        per_layer, rest = layer_and_rest_s(trace, rank)
        layer_s.update(per_layer)
        fixed_s.append(rest)
    if sorted(layer_s) != list(range(sum(stage_layers))):
        return None
    times = [layer_s[i] for i in range(len(layer_s))]
    split = balanced_split(times, fixed_s)
    most, current = max(_loads(times, fixed_s, split)), max(_loads(times, fixed_s, stage_layers))
    return StageBalance(split, most, current) if most <= current * (1 - MIN_GAIN) else None

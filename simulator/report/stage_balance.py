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
programming (with interleaved 1F1B, over the virtual stages in their order: each stage's load is
the sum of its chunks', and evening out the chunks evens out the stages) (filling stages greedily is not enough: a stage that takes one more layer can hand a
heavy layer to a stage whose fixed load cannot take it). It is a suggestion: ``run`` prints the
new split's memory (the first stage stashes the most activations in 1F1B, so a split that moves
layers to it needs more there), and running the scenario with it replays the step.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from simulator.replay.trace import NO_LAYER, Trace

# A split is suggested only where it shortens the most loaded stage by at least this much.
MIN_GAIN = 0.02


@dataclass(frozen=True)
class StageBalance:
    pp_layers: list[int]  # the suggested split
    most_loaded_s: float  # its most loaded stage's compute, as estimated
    current_most_loaded_s: float  # the current split's, the same way
    memory_gib: float | None = None  # the evened plan's memory per GPU, where the caller computed it
    fits: bool | None = None  # and whether that fits


def layer_and_rest_s(trace: Trace, rank: int) -> tuple[dict[int, float], float]:
    """Compute-stream seconds of ``rank`` per transformer layer (``Tag.layer`` ≥ 0) and the rest."""
    tl = trace.timelines[rank]
    layers = trace.layers(rank)
    seconds = tl.end - tl.start
    rest_s = seconds[layers == NO_LAYER]
    rest = float(np.cumsum(rest_s)[-1]) if rest_s.size else 0.0  # in program order, as the layers' sums
    at = layers >= 0
    if not at.any():
        return {}, rest
    sums = np.bincount(layers[at], weights=seconds[at])
    present = np.bincount(layers[at]) > 0
    return {int(k): float(sums[k]) for k in np.flatnonzero(present)}, rest


def balanced_split(layer_s: list[float], fixed_s: list[float], min_layers: Sequence[int] | None = None) -> list[int]:
    """Layers per part (contiguous, in order, at least ``min_layers[s]`` each: one by default)
    minimising the most loaded part's ``fixed_s[s]`` plus its layers' seconds: the min-max
    partition by dynamic programming over (part, layers so far), O(parts x layers^2), vectorised
    over the part's end and start."""
    n, parts = len(layer_s), len(fixed_s)
    mins = list(min_layers) if min_layers is not None else [1] * parts
    if parts < 1 or len(mins) != parts or sum(mins) > n:
        raise ValueError(f"{n} layers cannot fill {parts} parts of at least {mins} layers")
    prefix = np.concatenate(([0.0], np.cumsum(layer_s)))
    before = list(itertools.accumulate(mins, initial=0))  # the fewest layers parts 0..s-1 hold
    # best[i]: the least most-loaded part over splits of the first i layers into the parts so far
    best = np.full(n + 1, np.inf)
    best[mins[0]:] = fixed_s[0] + prefix[mins[0]:]
    cut = np.zeros((parts, n + 1), dtype=np.int64)  # where the part's layers start, for each end
    for p in range(1, parts):
        new = np.full(n + 1, np.inf)
        ends = np.arange(before[p + 1], n - (before[-1] - before[p + 1]) + 1)  # where part p may end
        if len(ends):
            # row: an end i; column: a start j; the part's layers are j .. i-1, at least mins[p] of them
            starts = np.arange(before[p], ends[-1] - mins[p] + 1)
            cand = np.maximum(best[starts][None, :], (fixed_s[p] + prefix[ends])[:, None] - prefix[starts][None, :])
            cand[starts[None, :] > ends[:, None] - mins[p]] = np.inf
            k = np.argmin(cand, axis=1)
            new[ends], cut[p, ends] = cand[np.arange(len(ends)), k], starts[k]
        best = new
    counts, end = [], n
    for p in range(parts - 1, 0, -1):
        start = int(cut[p, end])
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


def physical_loads(layer_s: list[float], rest_s: list[float], virtual: Sequence[int]) -> list[float]:
    """Each pipeline stage's compute: its ``rest_s`` plus the layers of its virtual stages
    ``v = chunk x pp + stage`` when ``virtual`` gives the layers of each (pp x vp entries, in
    order; one per stage without virtual stages)."""
    pp = len(rest_s)
    bounds = list(itertools.accumulate(virtual, initial=0))
    loads = list(rest_s)
    for v, (a, b) in enumerate(zip(bounds, bounds[1:])):
        loads[v % pp] += sum(layer_s[a:b])
    return loads


def evened_split(layer_s: list[float], rest_s: list[float], vp: int) -> list[int]:
    """The split :func:`balanced_split` gives ``pp`` stages of ``vp`` virtual stages each, where
    stage ``s`` carries ``rest_s[s]`` beside its layers. Without virtual stages, each stage one
    part. With them, the ``pp x vp`` virtual stages are evened out as parts in their order, the
    first carrying what the first stage has beyond the lightest (the embedding), the last what the
    last stage has (the head and loss), and those two may hold no layer (Megatron-Core's layout
    ``E|t|...|t|L``, as ``parallel.pp_layers`` allows); single layers then move across chunk
    boundaries while that lowers the stages' loads (largest first)."""
    pp = len(rest_s)
    if vp <= 1:
        return balanced_split(layer_s, rest_s)
    parts = pp * vp
    common = min(rest_s)
    fixed = [0.0] * parts
    fixed[0] += rest_s[0] - common
    fixed[-1] += rest_s[-1] - common
    mins = [0] + [1] * (parts - 2) + [0]
    split = balanced_split(layer_s, fixed, mins)
    # Evening out the chunks leaves ties the stages' sums tell apart (two chunks of one stage both
    # at the maximum): move single layers across chunk boundaries while the stages' loads, largest
    # first, go down.
    def key(counts: list[int]) -> list[float]:
        return sorted(physical_loads(layer_s, rest_s, counts), reverse=True)

    best = key(split)
    improved = True
    while improved:
        improved = False
        for v in range(parts - 1):
            for give, take in ((v, v + 1), (v + 1, v)):
                if split[give] <= mins[give]:
                    continue
                trial = list(split)
                trial[give] -= 1
                trial[take] += 1
                k = key(trial)
                if k < best:
                    split, best, improved = trial, k, True
    return split


def suggest(trace: Trace, busiest: list[int], virtual: Sequence[int], vp: int) -> StageBalance | None:
    """The split evening out the stages whose busiest ranks are ``busiest`` (``virtual``: the
    layers of each virtual stage now, ``Scenario.virtual_stage_layers``), where it shortens the
    most loaded stage by ``MIN_GAIN`` (None otherwise)."""
    pp = len(busiest)
    if pp < 2 or len(virtual) != pp * vp:
        return None
    layer_s: dict[int, float] = {}
    rest_s = []
    for rank in busiest:
        per_layer, rest = layer_and_rest_s(trace, rank)
        layer_s.update(per_layer)
        rest_s.append(rest)
    if sorted(layer_s) != list(range(sum(virtual))):
        return None
    return evened([layer_s[i] for i in range(len(layer_s))], rest_s, virtual, vp)


def evened(layer_s: list[float], rest_s: list[float], virtual: Sequence[int], vp: int) -> StageBalance | None:
    """:func:`evened_split` of stages carrying ``rest_s`` beside layers of ``layer_s`` seconds, split
    as ``virtual`` now, where it shortens the most loaded stage by ``MIN_GAIN`` (None otherwise)."""
    split = evened_split(layer_s, rest_s, vp)
    most = max(physical_loads(layer_s, rest_s, split))
    current = max(physical_loads(layer_s, rest_s, virtual))
    return StageBalance(split, most, current) if most <= current * (1 - MIN_GAIN) else None

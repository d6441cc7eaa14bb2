"""Which layers full recompute re-runs, and what each pipeline rank keeps for them.

``training.recompute: full`` checkpoints whole layers: a checkpointed layer keeps only its input
and re-runs its forward before its backward. Which layers are checkpointed is the framework's
choice (``training.recompute_method``, N = ``training.recompute_num_layers``):

* **uniform** (Megatron-Core ``recompute_method='uniform'``): every layer. The layers of each
  model chunk (one ``TransformerBlock``: a pipeline stage's layers, or one virtual stage's under
  interleaving) are checkpointed in consecutive groups of N, the last group of a chunk shorter
  (``megatron/core/recompute.py`` ``checkpointed_forward`` runs each group as one checkpointed
  call), so a group keeps one input and its backward first rebuilds all N layers. Same work as
  N = 1; less kept, more rebuilt at once.
* **block** (``recompute_method='block'``; Megatron-Bridge's ``--recompute_num_layers`` sets it,
  ``scripts/performance/utils/overrides.py``): only the first N layers of each model chunk are
  checkpointed, one by one; the chunk's other layers keep their activations and are not re-run
  (N = 0: none, as SimuMax's Megatron launches pass ``--recompute-num-layers 0``).
  (Megatron skips a layer whose input needs no gradient under FP8, which no layer after the
  embedding is; and it skips the MTP block under ``block``, ``multi_token_prediction.py``.)
* **every** (torchtitan's ``activation_checkpoint.mode = "selective"`` with
  ``selective_ac_option = "N"``, ``_apply_layer_sac``): a counter incremented per transformer block
  as the rank wraps its model parts checkpoints the blocks at which it is a multiple of N: the N-th,
  2N-th... block of the rank, counted from 1; the others keep their activations (N = 0: every
  block, as a frequency of 0 means there).
"""

from __future__ import annotations

import math

from simulator.config.scenario import Scenario
from simulator.schedule.shapes import stage_layers, virtual_layers


def recomputed_layers(scn: Scenario) -> frozenset[int]:
    """Global indices of the layers (MTP depths' layers included) whose forward is re-run before
    their backward under ``recompute: full``; empty under any other recompute."""
    t = scn.training
    if t.recompute != "full":
        return frozenset()
    n = t.recompute_num_layers
    if t.recompute_method == "uniform":
        return _every_layer(scn)
    if t.recompute_method == "block":
        return frozenset(layer for chunk in virtual_layers(scn)
                         for layer in [i for i in chunk if i < scn.model.layers][:n])
    return frozenset(layer for stage in range(scn.parallel.pp)  # (torchtitan: a frequency of 0 is every block)
                     for k, layer in enumerate(stage_layers(scn, stage), start=1) if n == 0 or k % n == 0)


def kept_layers(scn: Scenario) -> frozenset[int]:
    """Layers that keep their activations although ``recompute`` is ``full`` (``block`` and
    ``every`` leave them out); empty under any other recompute."""
    if scn.training.recompute != "full":
        return frozenset()
    return _every_layer(scn) - recomputed_layers(scn)


def stage_checkpoints(scn: Scenario, stage: int) -> int:
    """Layer inputs one micro-batch keeps on pipeline stage `stage` for its checkpointed layers:
    one per group of N under ``uniform``, one per checkpointed layer otherwise."""
    t = scn.training
    if t.recompute != "full":
        return 0
    if t.recompute_method == "uniform":
        return sum(math.ceil(len(chunk) / t.recompute_num_layers) for chunk in _stage_chunks(scn, stage))
    redo = recomputed_layers(scn)
    return sum(1 for layer in stage_layers(scn, stage) if layer in redo)


def rebuilt_layers(scn: Scenario, stage: int) -> int:
    """Layers whose activations one backward rebuilds at once on stage `stage`: a whole group
    under ``uniform`` (at most a chunk's layers), one layer otherwise, 0 where none is re-run."""
    t = scn.training
    if t.recompute != "full" or stage_checkpoints(scn, stage) == 0:
        return 0
    if t.recompute_method == "uniform":
        return min(t.recompute_num_layers, max(len(chunk) for chunk in _stage_chunks(scn, stage)))
    return 1


def _every_layer(scn: Scenario) -> frozenset[int]:
    """Every layer of the model, the MTP depths' layers included."""
    return frozenset(layer for chunk in virtual_layers(scn) for layer in chunk)


def _stage_chunks(scn: Scenario, stage: int) -> list[list[int]]:
    """The layers of each model chunk of pipeline stage `stage` (virtual stage chunk·pp + stage)."""
    p = scn.parallel
    vl = virtual_layers(scn)
    return [vl[c * p.pp + stage] for c in range(p.vp)]

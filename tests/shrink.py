"""A bundled scenario with fewer layers, for checks whose subject does not depend on depth.

Every transformer layer of a stage generates the same ops, so a scenario cut to one layer per
(virtual) pipeline chunk exercises every pattern of the full one: TP/SP, CP, the pipeline's
send/recv, the DP reduction and the layout of ranks. Checks of structure (symmetry, schedule
invariants) run on it in a fraction of the time; checks of numbers (goldens) keep the full file.
"""

from __future__ import annotations

from pathlib import Path

from simulator.config.loader import read_yaml
from simulator.config.scenario import Scenario, build_scenario


def shrunk_scenario(path: Path, layers_per_chunk: int = 2) -> Scenario:
    """``path`` with ``layers_per_chunk`` layers per pipeline chunk (pp x vp chunks); a scenario
    that lays out its stages by hand (``pp_layers``) or has fewer layers is returned unchanged. A
    hybrid model's blocks differ by kind (``layer_pattern``), so without a pipeline it keeps the
    shortest prefix of its pattern that holds every kind, and with one it is returned unchanged."""
    data = read_yaml(path)
    full = build_scenario(data, source=path, base_dir=path.parent)
    par = full.parallel
    pattern = full.model.layer_pattern
    if pattern:
        k = next(i + 1 for i in range(len(pattern)) if set(pattern[: i + 1]) == set(pattern))
        if par.pp > 1 or k >= len(pattern):
            return full
        data["model"] = {**data["model"], "layers": k, "layer_pattern": pattern[:k]}
        return build_scenario(data, source=path, base_dir=path.parent)
    layers = par.pp * par.vp * layers_per_chunk
    if par.pp_layers is not None or layers >= full.model.layers or full.model.moe_layers:
        return full
    data["model"] = {**data["model"], "layers": layers}
    return build_scenario(data, source=path, base_dir=path.parent)

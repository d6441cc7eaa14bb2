"""The split of the layers over pipeline stages that `run` suggests (report/stage_balance.py): the
min-max partition is checked against every split of small cases, and the suggestion against a
replay of it."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest
import yaml

from simulator.report.stage_balance import balanced_split
from simulator.simulation import simulate

ROOT = Path(__file__).resolve().parents[2]
QUICK = ROOT / "scenarios" / "quickstart.yaml"


def _loads(layer_s: list[float], fixed_s: list[float], counts: list[int]) -> list[float]:
    out, start = [], 0
    for s, n in enumerate(counts):
        out.append(fixed_s[s] + sum(layer_s[start:start + n]))
        start += n
    return out


def _best_by_enumeration(layer_s: list[float], fixed_s: list[float]) -> float:
    n, pp = len(layer_s), len(fixed_s)
    best = float("inf")
    for cuts in itertools.combinations(range(1, n), pp - 1):
        bounds = (0, *cuts, n)
        counts = [bounds[i + 1] - bounds[i] for i in range(pp)]
        best = min(best, max(_loads(layer_s, fixed_s, counts)))
    return best


def test_even_layers_split_evenly_and_a_loaded_stage_takes_fewer():
    assert balanced_split([1.0] * 8, [0.0] * 4) == [2, 2, 2, 2]
    # the last stage's head worth two layers: it keeps one layer, the others share seven
    counts = balanced_split([1.0] * 8, [0.0, 0.0, 0.0, 2.0])
    assert sum(counts) == 8 and min(counts) >= 1 and counts[-1] == 1
    assert max(_loads([1.0] * 8, [0.0, 0.0, 0.0, 2.0], counts)) == pytest.approx(3.0)


def test_the_split_is_the_best_of_every_split():
    rng = random.Random(7)
    for _ in range(200):
        n, pp = rng.randint(2, 9), rng.randint(1, 4)
        if pp > n:
            continue
        layer_s = [rng.uniform(0.5, 2.0) for _ in range(n)]
        fixed_s = [rng.choice([0.0, 0.0, rng.uniform(0.0, 3.0)]) for _ in range(pp)]
        counts = balanced_split(layer_s, fixed_s)
        assert len(counts) == pp and sum(counts) == n and min(counts) >= 1
        assert max(_loads(layer_s, fixed_s, counts)) == pytest.approx(_best_by_enumeration(layer_s, fixed_s), rel=1e-9)


def test_run_suggests_a_split_its_replay_confirms(tmp_path):
    doc = yaml.safe_load(QUICK.read_text())
    doc["model"]["layers"] = 8
    doc["training"]["global_batch"] = 8
    doc["parallel"].update(tp=4, pp=2)
    even = tmp_path / "even.yaml"
    even.write_text(yaml.safe_dump(doc))
    sim = simulate(even)
    # Llama 3 8B's head and loss on the last stage: four layers each leave that stage the heavier
    assert sim.report.stage_compute_s[1] > sim.report.stage_compute_s[0]
    split, estimate, current = sim.report.balanced_split
    assert split == [5, 3] and current == pytest.approx(max(sim.report.stage_compute_s))
    assert sim.report.to_dict()["pipeline_balanced_pp_layers"] == [5, 3]
    doc["parallel"]["pp_layers"] = split
    moved = tmp_path / "moved.yaml"
    moved.write_text(yaml.safe_dump(doc))
    again = simulate(moved)
    assert max(again.report.stage_compute_s) == pytest.approx(estimate, rel=0.02)
    assert again.report.step_time_s < sim.report.step_time_s
    assert again.report.balanced_split is None  # nothing left to even out

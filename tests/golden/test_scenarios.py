"""Every bundled scenario runs, and its key numbers stay what tests/golden/<name>.json says
(1e-6 relative). When a model change is intended: `python -m tests.golden.regenerate`."""

from __future__ import annotations

import json
import math

import pytest

from tests.golden.regenerate import GOLDEN, SCENARIOS, golden_numbers, scenario_names

SLOW = {"gpt3-175b-3d-a100", "llama3-70b-cp-p2p-128k-h100", "llama3-8b-ring-attention-128k"}


def _compare(got, want, path: str = "") -> list[str]:
    if isinstance(want, dict):
        out = []
        for k, v in want.items():
            if k not in got:
                out.append(f"{path}.{k}: missing")
            else:
                out += _compare(got[k], v, f"{path}.{k}")
        return out
    if isinstance(want, list) and isinstance(got, list) and len(got) == len(want):
        return [p for i, (g, w) in enumerate(zip(got, want)) for p in _compare(g, w, f"{path}[{i}]")]
    if isinstance(want, float) or isinstance(got, float):
        ok = math.isclose(float(got), float(want), rel_tol=1e-6, abs_tol=1e-12)
        return [] if ok else [f"{path}: {got!r} != golden {want!r}"]
    return [] if got == want else [f"{path}: {got!r} != golden {want!r}"]


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n
                                  for n in scenario_names()])
def test_scenario_matches_golden(name: str) -> None:
    golden = GOLDEN / f"{name}.json"
    if not golden.exists():
        pytest.fail(f"no {golden.name}; run `python -m tests.golden.regenerate {name}`")
    got = golden_numbers(SCENARIOS / f"{name}.yaml")
    bd = got["breakdown_s"]
    total = bd["compute"] + sum(bd["exposed_comm"].values()) + bd["pipeline_bubble"]
    assert total == pytest.approx(got["step_time_s"], rel=0.05)
    assert 0 < got["mfu"] <= 1
    problems = _compare(got, json.loads(golden.read_text()))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", ["quickstart", "llama3-8b-zero3-h100", "llama3-8b-ulysses-128k",
                                  "llama3-70b-gb200-nvl72"])
def test_symmetric_mode_agrees_with_every_rank_simulated(name: str) -> None:
    """DESIGN.md: ranks represented once must give what simulating all of them gives. The
    scenarios run cut to two layers per pipeline chunk (tests/shrink.py): which ranks share a
    role does not depend on depth, and simulating every rank of 80 layers costs minutes."""
    from simulator.simulation import simulate
    from tests.shrink import shrunk_scenario

    scenario = shrunk_scenario(SCENARIOS / f"{name}.yaml")
    full = simulate(scenario, symmetric=False).report
    sym = simulate(scenario, symmetric=True).report
    assert sym.sim["ranks_simulated"] < full.sim["ranks_simulated"] == full.sim["ranks"]
    assert sym.step_time_s == pytest.approx(full.step_time_s, rel=1e-9)
    for k, v in full.breakdown_s.exposed_comm.items():
        assert sym.breakdown_s.exposed_comm[k] == pytest.approx(v, rel=1e-6, abs=1e-12)

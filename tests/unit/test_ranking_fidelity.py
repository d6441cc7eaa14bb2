"""Ranking fidelity (simulator/e2e_validation/ranking.py): Kendall's tau-b, the grouping of
published cases that differ only in the plan, and the per-group score."""

from __future__ import annotations

import itertools
import math

import pytest

from simulator.e2e_validation.ranking import kendall_tau_b, plan_groups, score_group
from simulator.e2e_validation.sources import SOURCES, Case, cases


def tau_by_definition(x, y):
    """tau-b from its definition over all pairs: (C - D) / sqrt((n0 - n1)(n0 - n2))."""
    n = len(x)
    n0 = n * (n - 1) / 2
    s = sum(math.copysign(1, (a - b) * (c - d)) if (a - b) * (c - d) else 0
            for (a, c), (b, d) in itertools.combinations(zip(x, y), 2))
    n1 = sum(1 for a, b in itertools.combinations(x, 2) if a == b)
    n2 = sum(1 for a, b in itertools.combinations(y, 2) if a == b)
    return s / math.sqrt((n0 - n1) * (n0 - n2))


def test_tau_b_agrees_with_the_definition_with_and_without_ties():
    assert kendall_tau_b([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0
    assert kendall_tau_b([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    # one swapped pair out of 10: (9 - 1) / 10
    assert kendall_tau_b([1, 2, 3, 4, 5], [1, 2, 4, 3, 5]) == pytest.approx(0.8)
    for x, y in (([1, 2, 2, 3], [1, 3, 2, 4]), ([3, 1, 2, 2, 5], [2, 2, 1, 3, 3])):
        assert kendall_tau_b(x, y) == pytest.approx(tau_by_definition(x, y))
    assert math.isnan(kendall_tau_b([1, 1, 1], [1, 2, 3]))


def test_groups_hold_cases_that_differ_only_in_the_plan():
    groups = plan_groups(cases(SOURCES))
    assert groups and all(len(g) >= 2 for g in groups)
    for g in groups:
        first = g[0]
        for c in g[1:]:
            assert c.source == first.source and c.n_gpus == first.n_gpus and c.metric == first.metric
            assert c.scenario["model"] == first.scenario["model"]
            assert c.scenario["hardware"] == first.scenario["hardware"]
            assert c.scenario["training"].get("global_batch") == first.scenario["training"].get("global_batch")
        # a plan is what a sweep varies: the parallel block, the micro-batch and the recompute mode
        # (torchtitan measured Llama 3 70B on 64 A100 under the same FSDP plan with full and op-level
        # activation checkpointing)
        plans = [(c.scenario.get("parallel"), c.scenario["training"].get("micro_batch"),
                  c.scenario["training"].get("recompute")) for c in g]
        assert len({repr(p) for p in plans}) == len(plans)  # every case a different plan


def test_score_counts_the_regret_of_the_predicted_pick():
    def case(label, measured):
        return Case("s", label, {"model": {"layers": 2}, "hardware": "dgx-h100", "training": {}},
                    "tokens_per_s_per_gpu", measured, 8)

    g = [case("a", 100.0), case("b", 90.0), case("c", 80.0)]
    right = score_group(g, [10.0, 9.0, 8.0])
    assert right.tau == 1.0 and right.best_matches and right.regret == 0.0
    wrong = score_group(g, [9.0, 10.0, 8.0])  # picks b, measured 10% slower than a
    assert not wrong.best_matches and wrong.regret == pytest.approx(0.1)
    assert wrong.tau == pytest.approx(1 / 3)

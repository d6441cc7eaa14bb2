"""Ranking fidelity: where a published source measured several parallel plans of the same model
on the same cluster, does clustersim order them as the measurements do?

A sweep is only as useful as its ordering: a constant error in every step time does not change
which plan wins, a plan-dependent one does. For every group of published cases that share the
model (shape and sequence length), the hardware profile, the GPU count, the global batch, the
precision and the metric, and differ only in the plan (tp, pp, dp, micro-batch, recompute, ...), this
module simulates each case and reports:

* Kendall's tau-b between the predicted and the measured speed (Kendall 1945, the tie-corrected
  form: ties in either ordering are neither concordant nor discordant, and the denominator
  discounts them);
* whether the predicted fastest plan is the measured fastest, and if not, how much slower the
  measured speed of the predicted pick is than the measured best (the regret a user would pay).

``python -m simulator.e2e_validation.ranking`` prints the markdown table ``docs/gen_sweep.py``
puts into ``docs/sweep.md``.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable, Sequence

from simulator.e2e_validation.sources import SOURCES, Case, cases


def group_key(c: Case) -> tuple:
    """What the cases of a group share. The attention kernel is a property of the stack, not of the
    plan: runs of one model under two containers with different kernels (dgxc's GPT-3 175B under
    nemo:24.05's flash-attn 2 and nemo:24.12's cuDNN attention) are not two plans of one stack."""
    s = c.scenario
    t = s["training"]
    return (c.source, json.dumps(s["model"], sort_keys=True), s["hardware"], c.n_gpus, t.get("global_batch"),
            t.get("dtype", "bf16"), t.get("attention"), c.metric)


def plan_groups(selected: Iterable[Case], min_plans: int = 2) -> list[list[Case]]:
    """Groups of cases that differ only in the plan, in source order, with at least
    ``min_plans`` plans each. A plan measured twice (dgxc prints Nemotron-4 340B's plan from two
    container releases) is one choice, so a group keeps its first measurement."""
    groups: dict[tuple, dict[str, Case]] = defaultdict(dict)
    for c in selected:
        groups[group_key(c)].setdefault(plan_key(c), c)
    return [list(g.values()) for g in groups.values() if len(g) >= min_plans]


def plan_key(c: Case) -> str:
    """What a sweep of plans varies: the parallel block, the micro-batch and the recompute mode."""
    t = c.scenario["training"]
    return json.dumps([c.scenario.get("parallel"), t.get("micro_batch"), t.get("recompute")], sort_keys=True)


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's tau-b of two equally long sequences (nan when either is constant)."""
    n = len(x)
    concordant = discordant = ties_x = ties_y = 0
    for i in range(n):
        for j in range(i + 1, n):
            dx, dy = x[i] - x[j], y[i] - y[j]
            if dx == 0 and dy == 0:
                continue
            if dx == 0:
                ties_x += 1
            elif dy == 0:
                ties_y += 1
            elif (dx > 0) == (dy > 0):
                concordant += 1
            else:
                discordant += 1
    denom = ((concordant + discordant + ties_x) * (concordant + discordant + ties_y)) ** 0.5
    return (concordant - discordant) / denom if denom else float("nan")


def speed(case: Case, value: float) -> float:
    """Higher is faster: throughput metrics as they are, step time inverted."""
    return 1.0 / value if case.metric == "step_time_s" else value


@dataclass
class GroupFidelity:
    source: str
    title: str  # model, hardware, GPUs
    labels: list[str]
    measured: list[float]  # speed, higher is faster
    predicted: list[float]
    tau: float
    best_matches: bool
    regret: float  # measured speed lost by taking the predicted best (0 when it is the best)


def score_group(group: Sequence[Case], predicted_metric: Sequence[float]) -> GroupFidelity:
    meas = [speed(c, c.measured) for c in group]
    pred = [speed(c, p) for c, p in zip(group, predicted_metric)]
    pick = max(range(len(group)), key=lambda i: pred[i])
    best = max(meas)
    c0 = group[0]
    m = c0.scenario["model"]
    name = m.get("preset") or f"l{m.get('layers')} h{m.get('hidden')}"
    title = f"{name} seq {m.get('seq_len')}, {c0.scenario['hardware']}, {c0.n_gpus} GPUs, " \
            f"global batch {c0.scenario['training'].get('global_batch')}"
    return GroupFidelity(c0.source, title, [c.label for c in group], meas, pred, kendall_tau_b(pred, meas),
                         meas[pick] == best, 1.0 - meas[pick] / best)


def fidelity(groups: Sequence[Sequence[Case]], jobs: int = 1) -> list[GroupFidelity]:
    """Simulate every case of the groups and score each group."""
    from simulator.e2e_validation.scoring import run_cases

    flat = [c for g in groups for c in g]
    results = list(run_cases(flat, jobs=jobs))
    out, i = [], 0
    for g in groups:
        out.append(score_group(g, [r.predicted for r in results[i:i + len(g)]]))
        i += len(g)
    return out


def render_markdown(rows: Sequence[GroupFidelity]) -> str:
    titles = {s.key: s.title for s in SOURCES}
    lines = ["| source | model, cluster | plans | Kendall's τ | predicted best = measured best | "
             "measured speed lost by the predicted pick |", "|---|---|---|---|---|---|"]
    for r in rows:
        tau = "—" if r.tau != r.tau else f"{r.tau:+.2f}"
        lines.append(f"| {titles.get(r.source, r.source)} | {r.title} | {len(r.labels)} | {tau} | "
                     f"{'yes' if r.best_matches else 'no'} | {100 * r.regret:.1f}% |")
    taus = [r.tau for r in rows if r.tau == r.tau]
    hits = sum(r.best_matches for r in rows)
    summary = (f"\nOver {len(rows)} groups ({sum(len(r.labels) for r in rows)} measured plans): mean τ "
               f"{sum(taus) / len(taus):+.2f}; the predicted best is the measured best in {hits} of {len(rows)}"
               + (f"; where it is not, the pick is {max(100 * r.regret for r in rows):.1f}% slower than the best "
                  "at worst." if hits < len(rows) else ".")) if rows and taus else "\nNo group has two plans."
    detail = ["", "Per plan (speed in the source's metric, higher is faster; predicted rank / measured rank):", ""]
    for r in rows:
        order_p = sorted(range(len(r.labels)), key=lambda i: -r.predicted[i])
        order_m = sorted(range(len(r.labels)), key=lambda i: -r.measured[i])
        detail.append(f"* {r.title}: " + "; ".join(
            f"{r.labels[i]} {order_p.index(i) + 1}/{order_m.index(i) + 1}" for i in order_m))
    return "\n".join(lines) + "\n" + summary + "\n" + "\n".join(detail) + "\n"


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m simulator.e2e_validation.ranking",
                                 description="Kendall's tau between predicted and measured plan orderings")
    ap.add_argument("--jobs", type=int, default=1)
    args = ap.parse_args(argv)
    print(render_markdown(fidelity(plan_groups(cases(SOURCES)), jobs=args.jobs)), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Simulate the candidates that can run, and rank them fastest first.

The sweep sits below ``simulate`` in the layering, so the step simulator is passed in: a
picklable callable ``Scenario -> Simulation`` (the commands pass
:func:`simulator.simulate.simulate_scenario`). With ``jobs > 1`` plans replay in a
``concurrent.futures.ProcessPoolExecutor``; every plan is independent, so results do not depend
on the number of jobs.

Order of the result: simulated plans by step time (ties by the plan label, so the order is
deterministic), then plans that do not fit in memory (least memory first), then plans not
simulated because of ``max_plans``, then invalid plans. ``best`` is the fastest simulated plan.
"""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from simulator.config.scenario import Scenario
from simulator.errors import InputError, SimulationError
from simulator.report.summary import Breakdown, Report
from simulator.sweep.plans import Candidate, iter_checked

Simulate = Callable[..., Any]  # Scenario -> object with a `.report: Report`


@dataclass
class PlanResult:
    """One row of a comparison: the plan, whether it can run, and what the replay predicts."""

    candidate: Candidate
    dp: int | None  # None when the plan is invalid before dp can be derived
    fits_in_memory: bool
    memory_gib_per_gpu: dict[str, float] | None  # params, grads, optimizer, activations, total
    reason: str = ""
    report: Report | None = None  # set once simulated

    @property
    def simulated(self) -> bool:
        return self.report is not None

    @property
    def step_time_s(self) -> float | None:
        return self.report.step_time_s if self.report else None

    @property
    def label(self) -> str:
        return self.candidate.label(self.dp)


@dataclass
class SweepResult:
    scenario: str
    plans: list[PlanResult]
    wall_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def best(self) -> PlanResult | None:
        return next((p for p in self.plans if p.simulated and p.fits_in_memory), None)


def _report_of(simulate: Simulate, scn: Scenario) -> Report | str:
    """Worker body: the plan's Report, or the reason its replay could not complete."""
    try:
        return simulate(scn).report
    except (SimulationError, InputError) as exc:
        return f"simulation failed: {exc}"


def _derived_dp(base: Scenario, cand: Candidate) -> int | None:
    """GPUs / (tp x cp x ulysses x pp), or None when that does not divide."""
    p = cand.parallel
    mp = p.tp * p.cp * p.ulysses * p.pp
    return base.n_gpus // mp if base.n_gpus % mp == 0 else None


def _sort_key(r: PlanResult) -> tuple:
    if r.simulated and not r.reason:
        return (0, r.step_time_s, r.label)
    if r.memory_gib_per_gpu is not None and not r.fits_in_memory:
        return (1, r.memory_gib_per_gpu["total"], r.label)
    if r.memory_gib_per_gpu is not None:
        return (2, 0.0, r.label)  # valid and fits, but not simulated (max_plans) or replay failed
    return (3, 0.0, r.label)


def rank(results: Iterable[PlanResult]) -> list[PlanResult]:
    return sorted(results, key=_sort_key)


def run_plans(base: Scenario, candidates: Sequence[Candidate], simulate: Simulate, *, jobs: int = 1,
              max_plans: int | None = None) -> SweepResult:
    """Check, prune and simulate `candidates` of scenario `base`; return them ranked.

    At most `max_plans` plans are replayed (the first ones in candidate order that fit); the
    other fitting plans are listed with a reason saying they were skipped.
    """
    import time

    t0 = time.perf_counter()
    results: list[PlanResult] = []
    to_run: list[tuple[PlanResult, Scenario]] = []
    for cand, scn, mem, reason in iter_checked(base, candidates):
        res = PlanResult(cand, _derived_dp(base, cand), bool(mem and mem.fits), mem.gib() if mem else None, reason)
        results.append(res)
        if scn is not None and mem is not None and mem.fits:
            if max_plans is not None and len(to_run) >= max_plans:
                res.reason = f"not simulated: --max-plans {max_plans} reached"
            else:
                to_run.append((res, scn))
    if jobs > 1 and len(to_run) > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            outcomes = list(pool.map(_report_of, [simulate] * len(to_run), [s for _, s in to_run]))
    else:
        outcomes = [_report_of(simulate, s) for _, s in to_run]
    for (res, _), out in zip(to_run, outcomes):
        if isinstance(out, str):
            res.reason = out
        else:
            res.report = out
    return SweepResult(base.name, rank(results), wall_s=time.perf_counter() - t0)


# ------------------------------------------------------------------------------------------
# JSON (DESIGN.md "sweep --json / compare --json")

COMM_KEYS = ("allgather", "reducescatter", "allreduce", "alltoall", "sendrecv")


def parallel_json(r: PlanResult) -> dict[str, Any]:
    p = r.candidate.parallel
    return {"tp": p.tp, "pp": p.pp, "cp": p.cp, "ulysses": p.ulysses, "dp": r.dp, "zero": p.zero,
            "micro_batch": r.candidate.micro_batch, "vp": p.vp, "sequence_parallel": p.sequence_parallel,
            "pp_schedule": p.pp_schedule, "tp_overlap": p.tp_overlap, "cp_comm": p.cp_comm}


def breakdown_json(bd: Breakdown) -> dict[str, Any]:
    return {"compute": bd.compute, "exposed_comm": {k: bd.exposed_comm.get(k, 0.0) for k in COMM_KEYS},
            "pipeline_bubble": bd.pipeline_bubble}


def plan_json(r: PlanResult) -> dict[str, Any]:
    rep = r.report
    return {
        "label": r.label,
        "parallel": parallel_json(r),
        "step_time_s": rep.step_time_s if rep else None,
        "fits_in_memory": r.fits_in_memory,
        "memory_gib_per_gpu": r.memory_gib_per_gpu["total"] if r.memory_gib_per_gpu else None,
        "reason": r.reason,
        "simulated": rep is not None,
        "tokens_per_s": rep.tokens_per_s if rep else None,
        "mfu": rep.mfu if rep else None,
        "breakdown_s": breakdown_json(rep.breakdown_s) if rep else None,
        "memory_breakdown_gib": r.memory_gib_per_gpu,
    }


def sweep_json(result: SweepResult) -> dict[str, Any]:
    best = result.best
    return {
        "scenario": result.scenario,
        "plans": [plan_json(r) for r in result.plans],
        "best": ({"parallel": parallel_json(best), "step_time_s": best.step_time_s, "label": best.label}
                 if best else {"parallel": {}, "step_time_s": None}),
        "counts": count_kinds(result.plans),
        "wall_s": result.wall_s,
    }


def count_kinds(plans: Sequence[PlanResult]) -> dict[str, int]:
    return {"total": len(plans),
            "simulated": sum(p.simulated for p in plans),
            "does_not_fit": sum(p.memory_gib_per_gpu is not None and not p.fits_in_memory for p in plans),
            "invalid": sum(p.memory_gib_per_gpu is None for p in plans)}

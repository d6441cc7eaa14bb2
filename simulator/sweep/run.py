"""Screen the candidates, simulate the ones that can run and may win, and rank them.

The sweep sits below ``simulate`` in the layering, so the step simulator is passed in: a
picklable callable ``Scenario -> Simulation`` (the commands pass
:func:`simulator.simulation.simulate_scenario`).

1. **Screening**, in this process, with no replay: the scenario rules (invalid plans and their
   reason), the memory model (plans that do not fit, or exceed ``memory_cap_gib``) and the
   analytical lower bound of :mod:`simulator.sweep.bound` on its passes and bubble.
2. **Simulation**, in order of increasing lower bound, so good plans come first: inline
   (``jobs=1``), in a pool of worker processes (``jobs>1``) or as Ray tasks (``ray=ADDRESS``),
   with at most as many plans in flight as there are workers. Before a plan is handed out, its
   bound is compared with the best step simulated so far: when the bound is not lower, neither
   it nor any plan after it can win, and they are *pruned* (with ``prune=True``). A plan that
   may still win first gets the bound of its whole program (what the data-parallel traffic, the
   optimizer step and the kernels slowed beside communication add, a tenth of a second to walk):
   pruned alone when that reaches the best, otherwise queued again at that bound.
3. Every decided plan is appended at once to the results file (:mod:`simulator.sweep.results_file`);
   with ``resume`` the plans that file already holds are taken from it, not simulated again.

Every plan is independent, so the figures do not depend on the executor or the number of jobs;
which plans get pruned can (the best so far depends on what finished first), never the best.

Order of the result: simulated plans by the objective (step time; tokens/s ranks the same way,
the global batch being fixed), ties by label; then infeasible plans (least memory first), plans
skipped (pruned, ``max_plans``, failed replays), invalid plans.
"""

from __future__ import annotations

import bisect
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from simulator.config.scenario import Scenario
from simulator.errors import InputError, SimulationError
from simulator.report.stage_balance import StageBalance
from simulator.report.summary import Breakdown, Report
from simulator.sweep.bound import passes_lower_bound, step_lower_bound
from simulator.sweep.plans import Candidate, iter_checked, with_balanced_splits
from simulator.vocabulary import COMM_TYPES

Simulate = Callable[..., Any]  # Scenario -> object with a `.report: Report`
OBJECTIVES = ("step_time", "tokens_per_s")
STATUSES = ("simulated", "infeasible", "invalid", "pruned", "skipped", "failed")


@dataclass
class PlanResult:
    """One row of a comparison: the plan, whether it can run, and what the replay predicts."""

    candidate: Candidate
    dp: int | None  # None when the plan is invalid before dp can be derived
    fits_in_memory: bool
    memory_gib_per_gpu: dict[str, float] | None  # MemoryEstimate.gib(): the terms, allocated, reserved, total
    reason: str = ""
    report: Report | None = None  # set once simulated
    status: str = ""  # one of STATUSES
    lower_bound_s: float | None = None
    resumed: bool = False  # figures read from the results file

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


class Interrupted(BaseException):
    """SIGTERM (or another signal the command turns into this) stopped the sweep. A
    BaseException, like KeyboardInterrupt, so no ``except Exception`` swallows it."""

    def __init__(self, signum: int):
        super().__init__(f"signal {signum}")
        self.signum = signum


def _report_of(simulate: Simulate, scn: Scenario) -> Report | str:
    """Worker body: the plan's Report, or the reason its replay could not complete."""
    try:
        return simulate(scn).report
    except (SimulationError, InputError) as exc:
        return f"simulation failed: {exc}"


def _derived_dp(base: Scenario, cand: Candidate) -> int | None:
    """GPUs / (tp x cp x ulysses x pp), or None when that does not divide."""
    mp = cand.parallel.model_parallel
    return base.n_gpus // mp if base.n_gpus % mp == 0 else None


def _sort_key(r: PlanResult, objective: str = "step_time") -> tuple:
    if r.report is not None and not r.reason:
        value = -r.report.tokens_per_s if objective == "tokens_per_s" else r.report.step_time_s
        return (0, value, r.label)
    if r.memory_gib_per_gpu is not None and not r.fits_in_memory:
        return (1, r.memory_gib_per_gpu["total"], r.label)
    if r.memory_gib_per_gpu is not None:
        return (2, r.lower_bound_s or 0.0, r.label)  # valid and fits, but skipped or failed
    return (3, 0.0, r.label)


def rank(results: Iterable[PlanResult], objective: str = "step_time") -> list[PlanResult]:
    return sorted(results, key=lambda r: _sort_key(r, objective))


def _make_executor(simulate: Simulate, jobs: int, ray: str | None, n_plans: int):
    from simulator.sweep import executors

    if ray:
        return executors.RayExecutor(_report_of, simulate, ray)
    if jobs > 1 and n_plans > 1:
        return executors.PoolExecutor(_report_of, simulate, min(jobs, n_plans))
    return executors.InlineExecutor(_report_of, simulate)


def run_plans(base: Scenario, candidates: Sequence[Candidate], simulate: Simulate, *, jobs: int = 1,
              max_plans: int | None = None, prune: bool = True, objective: str = "step_time",
              memory_cap_gib: float | None = None, results: str | Path | None = None,
              resume: str | Path | None = None, ray: str | None = None, progress: Any = None,
              balance_stages: bool = False) -> SweepResult:
    """Screen, simulate and rank ``candidates`` of scenario ``base`` (module docstring).

    At most ``max_plans`` plans are replayed by this call (the most promising first); the other
    plans that could run are listed as skipped and are not written to the results file, so a
    later ``resume`` runs them. ``results`` (default: ``resume``) is the JSON Lines file every
    decided plan is appended to. ``balance_stages``: each pipelined plan whose layers are split
    evenly is followed by the same plan with the split that evens out its stages, where the passes'
    lower-bound times find one (``plans.with_balanced_splits``), screened and ranked like the others.
    """
    from simulator.sweep import results_file as rf

    if objective not in OBJECTIVES:
        raise InputError(f"objective {objective!r}: expected one of {', '.join(OBJECTIVES)}",
                         source="command line", field="--objective")
    t0 = time.perf_counter()
    hashes = rf.input_hashes(base)
    loaded = rf.read_results(resume, hashes).lines if resume else {}
    out_path = results or resume
    writer = rf.ResultsWriter(out_path, truncate_tail=True) if out_path else None

    def record(res: PlanResult) -> None:
        if writer is not None:
            writer.append(result_line(res, hashes))

    if balance_stages:
        candidates = with_balanced_splits(base, candidates)
    try:
        return _run(base, candidates, simulate, loaded, record, jobs=jobs, max_plans=max_plans, prune=prune,
                    objective=objective, memory_cap_gib=memory_cap_gib, ray=ray, progress=progress, t0=t0)
    finally:
        if writer is not None:
            writer.close()


def _run(base: Scenario, candidates: Sequence[Candidate], simulate: Simulate, loaded: dict[str, dict],
         record: Callable[[PlanResult], None], *, jobs: int, max_plans: int | None, prune: bool, objective: str,
         memory_cap_gib: float | None, ray: str | None, progress: Any, t0: float) -> SweepResult:
    results: list[PlanResult] = []
    queue: list[tuple[float, int, PlanResult, Scenario]] = []
    best: float | None = None
    for cand, scn, mem, reason in iter_checked(base, candidates):
        res = PlanResult(cand, _derived_dp(base, cand), bool(mem and mem.fits), mem.gib() if mem else None, reason)
        results.append(res)
        line = loaded.get(cand.key_text)
        if line is not None and not (line["status"] == "pruned" and not prune):  # --no-prune replays those
            apply_line(res, line, base.name)
            if res.report is not None:
                step = res.report.step_time_s
                best = step if best is None else min(best, step)
            continue
        if scn is None:
            res.status = "invalid"
        elif mem is None or not res.fits_in_memory:  # a valid plan has a memory estimate; fits says whether it fits
            res.status = "infeasible"
        elif memory_cap_gib is not None and mem.total / 2**30 > memory_cap_gib:
            res.status, res.fits_in_memory = "infeasible", False
            res.reason = f"over the memory cap: {mem.total / 2**30:.1f} GiB per GPU > {memory_cap_gib:g} GiB"
        else:
            res.lower_bound_s = passes_lower_bound(scn)
            queue.append((res.lower_bound_s, len(queue), res, scn))
            continue
        record(res)
    queue.sort(key=lambda q: (q[0], q[1]))
    bounds = [q[0] for q in queue]
    refined: set[int] = set()  # plans whose whole bound is computed (id of their PlanResult)
    resumed = sum(r.resumed for r in results)
    if progress is not None:
        progress.start(len(results), len(queue), resumed)

    executor = _make_executor(simulate, jobs, ray, len(queue)) if queue else None
    started = simulated = feasible = 0
    total = len(queue)
    best_label = ""
    try:
        nxt = 0
        while nxt < len(queue) or (executor is not None and executor.in_flight()):
            while executor is not None and nxt < len(queue) and executor.in_flight() < executor.slots:
                bound, _, res, scn = queue[nxt]
                nxt += 1
                if prune and best is not None and bound >= best:
                    for r_bound, _, r, _ in queue[nxt - 1:]:  # sorted by bound: none of them can win
                        r.status = "pruned"
                        r.reason = (f"cannot beat the best ({best * 1e3:.1f} ms): lower bound "
                                    f"{r_bound * 1e3:.1f} ms")
                        record(r)
                    total -= len(queue) - (nxt - 1)
                    nxt = len(queue)
                    break
                if max_plans is not None and started >= max_plans:
                    for _, _, r, _ in queue[nxt - 1:]:
                        r.status, r.reason = "skipped", f"not simulated: --max-plans {max_plans} reached"
                    total -= len(queue) - (nxt - 1)
                    nxt = len(queue)
                    break
                if id(res) not in refined:
                    refined.add(id(res))
                    res.lower_bound_s = step_lower_bound(scn, bound, enough=best if prune else None)
                    if res.lower_bound_s > bound:  # queued again at its whole bound (pruned alone once above the best)
                        entry = (res.lower_bound_s, queue[nxt - 1][1], res, scn)
                        at = bisect.bisect_left(queue, entry[:2], nxt, key=lambda q: q[:2])
                        queue.insert(at, entry)
                        bounds.insert(at, entry[0])
                        del queue[nxt - 1], bounds[nxt - 1]
                        nxt -= 1
                        continue
                started += 1
                executor.submit(res, scn)
                if isinstance(executor, _inline_type()):
                    break  # handle its result (and the best so far) before the next plan
            for res, out in (executor.wait(0.25) if executor is not None else []):
                simulated += 1
                if isinstance(out, str):
                    res.status, res.reason = "failed", out
                else:
                    res.status, res.report = "simulated", out
                    feasible += 1
                    if best is None or out.step_time_s < best:
                        best, best_label = out.step_time_s, f"{out.step_time_s * 1e3:.1f} ms ({res.label})"
                record(res)
                if progress is not None:
                    # plans still to run: those handed out, and the queued ones whose bound is below
                    # the best so far (the others will be pruned), so the ETA does not count them
                    left = total if not prune or best is None else \
                        min(total, started + bisect.bisect_left(bounds, best, nxt) - nxt)
                    progress.update(done=simulated, total=left, feasible=feasible, best=best_label,
                                    force=simulated == left)
        if executor is not None:
            executor.close()
    except BaseException:  # a signal (KeyboardInterrupt, Interrupted) or a bug: stop the workers now
        if executor is not None:
            executor.terminate()
        raise
    result = SweepResult(base.name, rank(results, objective), wall_s=time.perf_counter() - t0)
    result.extra["objective"] = objective
    return result


def _inline_type() -> type:
    from simulator.sweep.executors import InlineExecutor

    return InlineExecutor


# ------------------------------------------------------------------------------------------
# Results-file lines


def result_line(r: PlanResult, hashes: dict[str, str]) -> dict[str, Any]:
    """One JSON line of the results file: the plan, its status and figures, the input hashes."""
    doc = plan_json(r)
    doc["key"] = r.candidate.key_text
    doc["inputs"] = hashes
    return doc


def apply_line(res: PlanResult, line: dict[str, Any], scenario: str) -> None:
    """Fill a screened plan's result from its results-file line."""
    res.resumed = True
    res.status, res.reason = line["status"], line.get("reason", "")
    res.lower_bound_s = line.get("lower_bound_s")
    if line.get("memory_breakdown_gib") is not None:
        res.memory_gib_per_gpu = line["memory_breakdown_gib"]
    res.fits_in_memory = bool(line.get("fits_in_memory"))
    if line["status"] == "simulated":
        bd = line["breakdown_s"]
        res.report = Report(scenario=scenario, step_time_s=line["step_time_s"], tokens_per_s=line["tokens_per_s"],
                            mfu=line["mfu"], breakdown_s=Breakdown(bd["compute"], dict(bd["exposed_comm"]),
                                                                  bd["pipeline_bubble"]),
                            comm_bytes_per_gpu={}, memory_gib_per_gpu=res.memory_gib_per_gpu or {},
                            fits_in_memory=True, sim={})
        if line.get("step_time_interval_s"):  # the interval of the run that wrote the line
            lo, hi = line["step_time_interval_s"]
            res.report.step_time_interval_s = (lo, hi)
        split = line.get("balanced_split")
        if split:
            res.report.balanced_split = StageBalance(list(split["pp_layers"]), split["most_loaded_s"],
                                                     split["current_most_loaded_s"])


# ------------------------------------------------------------------------------------------
# JSON (DESIGN.md "sweep --json / compare --json")

COMM_KEYS = COMM_TYPES


def parallel_json(r: PlanResult) -> dict[str, Any]:
    p = r.candidate.parallel
    return {"tp": p.tp, "pp": p.pp, "cp": p.cp, "ulysses": p.ulysses, "dp": r.dp, "zero": p.zero,
            "micro_batch": r.candidate.micro_batch, "vp": p.vp, "sequence_parallel": p.sequence_parallel,
            "pp_schedule": p.pp_schedule, "tp_overlap": p.tp_overlap, "cp_comm": p.cp_comm,
            "zero3_impl": p.zero3_impl, "fsdp_reshard_after_forward": p.fsdp_reshard_after_forward,
            "pp_layers": list(p.pp_layers) if p.pp_layers is not None else None,
            "recompute": r.candidate.recompute}


def breakdown_json(bd: Breakdown) -> dict[str, Any]:
    return {"compute": bd.compute, "exposed_comm": {k: bd.exposed_comm.get(k, 0.0) for k in COMM_KEYS},
            "pipeline_bubble": bd.pipeline_bubble}


def plan_json(r: PlanResult) -> dict[str, Any]:
    from simulator.report.intervals import step_band

    rep = r.report
    # the interval `run` prints: the report's own (its GPU generation's band); a report made without
    # one (a stand-in, an older results file) takes the pooled band
    interval = rep.step_time_interval_s if rep else None
    if rep is not None and interval is None:
        band = step_band()
        interval = band[0].around(rep.step_time_s) if band else None
    return {
        "label": r.label,
        "parallel": parallel_json(r),
        "status": r.status,
        "step_time_s": rep.step_time_s if rep else None,
        # the 80% interval of this plan's step time (report/intervals.py), the same one `run` prints
        "step_time_interval_s": list(interval) if interval else None,
        "fits_in_memory": r.fits_in_memory,
        "memory_gib_per_gpu": r.memory_gib_per_gpu["total"] if r.memory_gib_per_gpu else None,
        "reason": r.reason,
        "simulated": rep is not None,
        "tokens_per_s": rep.tokens_per_s if rep else None,
        "mfu": rep.mfu if rep else None,
        "breakdown_s": breakdown_json(rep.breakdown_s) if rep else None,
        "memory_breakdown_gib": r.memory_gib_per_gpu,
        "lower_bound_s": r.lower_bound_s,
        "from_results_file": r.resumed,
        # a split of the layers that evens out the plan's stages (report/stage_balance.py), with the
        # most loaded stage's compute after and before it
        "balanced_split": ({"pp_layers": list(bal.pp_layers), "most_loaded_s": bal.most_loaded_s,
                            "current_most_loaded_s": bal.current_most_loaded_s}
                           if rep and (bal := rep.balanced_split) else None),
    }


def sweep_json(result: SweepResult) -> dict[str, Any]:
    best = result.best
    return {
        "scenario": result.scenario,
        "objective": result.extra.get("objective", "step_time"),
        "plans": [plan_json(r) for r in result.plans],
        "best": ({"parallel": parallel_json(best), "step_time_s": best.step_time_s, "label": best.label}
                 if best else {"parallel": {}, "step_time_s": None}),
        "counts": count_kinds(result.plans),
        "wall_s": result.wall_s,
    }


def count_kinds(plans: Sequence[PlanResult]) -> dict[str, Any]:
    """simulated + infeasible + invalid + skipped = enumerated; skipped_by says why."""
    n = {s: sum(p.status == s for p in plans) for s in STATUSES}
    return {"enumerated": len(plans), "simulated": n["simulated"], "infeasible": n["infeasible"],
            "invalid": n["invalid"], "skipped": n["pruned"] + n["skipped"] + n["failed"],
            "skipped_by": {"lower_bound": n["pruned"], "max_plans": n["skipped"], "replay_failed": n["failed"]},
            "from_results_file": sum(p.resumed for p in plans)}

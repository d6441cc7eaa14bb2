"""The side-by-side table `clustersim compare` and `clustersim sweep` print.

One row per plan, fastest first: step time, tokens/s, MFU, memory per GPU, whether it fits, and
the step's breakdown (compute, exposed AllGather / ReduceScatter / AllReduce / All-to-All /
send-recv, pipeline bubble) in milliseconds, so a user sees *why* one plan beats another.
Plans that were not simulated show their reason instead of times.
"""

from __future__ import annotations

from typing import Sequence

from simulator.sweep.plans import with_split
from simulator.sweep.run import COMM_KEYS, PlanResult, SweepResult, count_kinds

_SHORT = {"allgather": "AG", "reducescatter": "RS", "allreduce": "AR", "alltoall": "A2A", "sendrecv": "P2P"}
_TIME_COLS = ["step ms", "tok/s", "MFU%", "mem GiB", "fits", "compute"] + \
             [f"x{_SHORT[k]}" for k in COMM_KEYS] + ["bubble"]


def _row(rank: int | str, r: PlanResult) -> list[str]:
    mem = f"{r.memory_gib_per_gpu['total']:.1f}" if r.memory_gib_per_gpu else "-"
    fits = "yes" if r.fits_in_memory else ("no" if r.memory_gib_per_gpu else "-")
    rep = r.report
    if rep is None:
        return [str(rank), r.label, "-", "-", "-", mem, fits] + ["-"] * (2 + len(COMM_KEYS))
    bd = rep.breakdown_s
    ms = [bd.compute] + [bd.exposed_comm.get(k, 0.0) for k in COMM_KEYS] + [bd.pipeline_bubble]
    return [str(rank), r.label, f"{rep.step_time_s * 1e3:.1f}", f"{rep.tokens_per_s:,.0f}",
            f"{100 * rep.mfu:.1f}", mem, fits] + [f"{v * 1e3:.1f}" for v in ms]


def format_plans(result: SweepResult, top: int | None = None, show_rejected: int = 10) -> str:
    """The table of the `top` fastest simulated plans, then the rejected ones with reasons
    (at most `show_rejected` of them; the JSON output lists all)."""
    header = ["#", "plan"] + _TIME_COLS
    ran = [r for r in result.plans if r.simulated]
    other = [r for r in result.plans if not r.simulated]
    shown = ran[:top] if top else ran
    rows = [header] + [_row(i + 1, r) for i, r in enumerate(shown)]
    widths = [max(len(row[c]) for row in rows) for c in range(len(header))]
    lines = [f"{result.scenario}: times in ms; xAG/xRS/xAR/xA2A/xP2P = exposed communication"]
    for row in rows:
        cells = [row[0].rjust(widths[0]), row[1].ljust(widths[1])] + \
                [row[c].rjust(widths[c]) for c in range(2, len(row))]
        lines.append("  ".join(cells))
    if top and len(ran) > top:
        lines.append(f"... {len(ran) - top} slower simulated plans not shown (--top)")
    tried = {r.candidate.key for r in ran}
    evened = [(i + 1, r, bal) for i, r in enumerate(shown) if r.report is not None and (bal := r.report.balanced_split)
              and with_split(r.candidate, bal.pp_layers).key not in tried]  # not already a plan of the table
    if evened:
        lines.append("stages a split of the layers would even out (estimated from each plan's layer times; "
                     "run the plan with it to check):")
        for i, r, bal in evened:
            lines.append(f"  #{i} {r.label}: pp_layers [{', '.join(map(str, bal.pp_layers))}], most loaded stage "
                         f"{bal.current_most_loaded_s * 1e3:.1f} -> {bal.most_loaded_s * 1e3:.1f} ms")
    if other:
        lines.append("not simulated:")
        for r in other[:show_rejected]:
            mem = f" [{r.memory_gib_per_gpu['total']:.1f} GiB/GPU]" if r.memory_gib_per_gpu else ""
            lines.append(f"  {r.label}{mem}: {r.reason}")
        if len(other) > show_rejected:
            lines.append(f"  ... and {len(other) - show_rejected} more (see --json)")
    lines.append(counts_line(result))
    best = result.best
    lines.append(f"best: {best.label}, {best.step_time_s * 1e3:.1f} ms per step" if best and best.step_time_s is not None
                 else "best: none (no plan could be simulated)")
    return "\n".join(lines)


def counts_line(result: SweepResult) -> str:
    """``48 plans: 12 simulated (5 from the results file), 20 infeasible, 6 invalid, 10 skipped
    (9 by the lower bound, 1 by --max-plans)``: the four terms add up to the plans enumerated."""
    c = count_kinds(result.plans)
    why = c["skipped_by"]
    reasons = [f"{why['lower_bound']} cannot beat the best (lower bound)" if why["lower_bound"] else "",
               f"{why['max_plans']} by --max-plans" if why["max_plans"] else "",
               f"{why['replay_failed']} replay failed" if why["replay_failed"] else ""]
    reasons = [r for r in reasons if r]
    resumed = f" ({c['from_results_file']} from the results file)" if c["from_results_file"] else ""
    return (f"{c['enumerated']} plans: {c['simulated']} simulated{resumed}, {c['infeasible']} infeasible, "
            f"{c['invalid']} invalid, {c['skipped']} skipped" + (f" ({', '.join(reasons)})" if reasons else "")
            + f" ({result.wall_s:.1f} s)")


CSV_COLUMNS = ("rank", "label", "status", "tp", "pp", "vp", "pp_layers", "cp", "ulysses", "dp", "zero", "micro_batch",
               "recompute", "sequence_parallel", "tp_overlap", "cp_comm", "pp_schedule", "zero3_impl",
               "fsdp_reshard_after_forward", "step_time_s", "tokens_per_s", "mfu", "memory_gib_per_gpu",
               "lower_bound_s", "compute_s", *(f"exposed_{k}_s" for k in COMM_KEYS), "pipeline_bubble_s",
               "reason")


def csv_text(result: SweepResult, inputs: str = "") -> str:
    """``--csv F``: one row per plan, in the ranking's order (rank empty for plans not simulated),
    below a ``# inputs: ...`` comment line (``inputs``, the table's inputs line) when given, as the
    measured sweeps of data/nccl/ carry their provenance: a CSV passed on keeps what its numbers
    were computed from (read it with ``pandas.read_csv(F, comment="#")``)."""
    import csv
    import io

    from simulator.sweep.run import plan_json

    buf = io.StringIO()
    if inputs:
        buf.write("# " + " ".join(inputs.splitlines()) + "\n")
    w = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, lineterminator="\n")
    w.writeheader()
    n = 0
    for r in result.plans:
        doc = plan_json(r)
        bd = doc["breakdown_s"] or {}
        split = doc["parallel"]["pp_layers"]
        row = {**doc["parallel"], "pp_layers": ",".join(map(str, split)) if split else None,
               "label": doc["label"], "status": doc["status"], "reason": doc["reason"],
               "step_time_s": doc["step_time_s"], "tokens_per_s": doc["tokens_per_s"], "mfu": doc["mfu"],
               "memory_gib_per_gpu": doc["memory_gib_per_gpu"], "lower_bound_s": doc["lower_bound_s"],
               "compute_s": bd.get("compute"), "pipeline_bubble_s": bd.get("pipeline_bubble"),
               **{f"exposed_{k}_s": bd.get("exposed_comm", {}).get(k) for k in COMM_KEYS}}
        if r.simulated:
            n += 1
            row["rank"] = n
        w.writerow({k: ("" if row.get(k) is None else row.get(k)) for k in CSV_COLUMNS})
    return buf.getvalue()


def plot_rows(plans: Sequence[PlanResult], top: int | None = None) -> list[tuple[str, dict[str, float]]]:
    """(label, breakdown seconds by part) of the simulated plans, for the comparison chart."""
    out = []
    for r, report in [(p, p.report) for p in plans if p.report is not None][: top or None]:
        bd = report.breakdown_s
        parts = {"compute": bd.compute, **{k: bd.exposed_comm.get(k, 0.0) for k in COMM_KEYS},
                 "pipeline_bubble": bd.pipeline_bubble}
        out.append((r.label, parts))
    return out


def pareto_points(plans: Sequence[PlanResult]) -> list[tuple[str, float, float]]:
    """(label, step seconds, GiB per GPU) of the simulated plans in ranking order (the first is
    the chosen plan), for the Pareto plot."""
    return [(r.label, r.report.step_time_s, r.memory_gib_per_gpu["total"]) for r in plans
            if r.report is not None and r.memory_gib_per_gpu]

"""The side-by-side table `clustersim compare` and `clustersim sweep` print.

One row per plan, fastest first: step time, tokens/s, MFU, memory per GPU, whether it fits, and
the step's breakdown (compute, exposed AllGather / ReduceScatter / AllReduce / All-to-All /
send-recv, pipeline bubble) in milliseconds, so a user sees *why* one plan beats another.
Plans that were not simulated show their reason instead of times.
"""

from __future__ import annotations

from typing import Sequence

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
    if other:
        lines.append("not simulated:")
        for r in other[:show_rejected]:
            mem = f" [{r.memory_gib_per_gpu['total']:.1f} GiB/GPU]" if r.memory_gib_per_gpu else ""
            lines.append(f"  {r.label}{mem}: {r.reason}")
        if len(other) > show_rejected:
            lines.append(f"  ... and {len(other) - show_rejected} more (see --json)")
    c = count_kinds(result.plans)
    best = result.best
    lines.append(f"{c['total']} plans: {c['simulated']} simulated, {c['does_not_fit']} do not fit, "
                 f"{c['invalid']} invalid ({result.wall_s:.1f} s)")
    lines.append(f"best: {best.label}, {best.step_time_s * 1e3:.1f} ms per step" if best
                 else "best: none (no plan could be simulated)")
    return "\n".join(lines)


def plot_rows(plans: Sequence[PlanResult], top: int | None = None) -> list[tuple[str, dict[str, float]]]:
    """(label, breakdown seconds by part) of the simulated plans, for the comparison chart."""
    out = []
    for r in [p for p in plans if p.simulated][: top or None]:
        bd = r.report.breakdown_s
        parts = {"compute": bd.compute, **{k: bd.exposed_comm.get(k, 0.0) for k in COMM_KEYS},
                 "pipeline_bubble": bd.pipeline_bubble}
        out.append((r.label, parts))
    return out

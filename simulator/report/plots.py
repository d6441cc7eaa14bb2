"""PNG plots of a replayed step (matplotlib, Agg backend; the only report module using it).

* :func:`plot_gantt`: a time window for a few ranks, one row per (rank, stream), ops coloured
  by kind, rendezvous waits hatched.
* :func:`plot_breakdown`: the stacked bar of compute, exposed communication per type and
  pipeline bubble, one bar per report (to compare plans or overlap modes side by side).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from simulator.replay.trace import Trace  # noqa: E402
from simulator.report.summary import Report  # noqa: E402
from simulator.schedule.ir import COMM_TYPES  # noqa: E402

COLORS = {"compute": "#4c72b0", "allgather": "#dd8452", "reducescatter": "#55a868", "allreduce": "#c44e52",
          "alltoall": "#8172b3", "broadcast": "#937860", "sendrecv": "#da8bc3", "pipeline_bubble": "#bbbbbb"}


def plot_gantt(trace: Trace, ranks: Sequence[int] | None = None, window: tuple[float, float] | None = None,
               path: str | Path | None = None) -> Figure:
    """Gantt of ``ranks`` (default: the critical rank and up to three others) over ``window``
    seconds (default: the whole step)."""
    if ranks is None:
        crit = trace.critical_rank()
        ranks = [crit] + [r for r in trace.ranks if r != crit][:3]
    lo, hi = window if window else (0.0, trace.step_time_s)
    rows: list[tuple[int, str]] = [(r, s) for r in ranks for s in trace.streams(r)]
    fig, ax = plt.subplots(figsize=(12, 0.35 * len(rows) + 1.5))
    for y, (rank, stream) in enumerate(rows):
        for rec in trace.records(rank):
            if rec.stream != stream or rec.end < lo or rec.start > hi:
                continue
            ax.broken_barh([(rec.start * 1e3, max(rec.duration, 1e-9) * 1e3)], (y - 0.4, 0.8),
                           facecolors=COLORS.get(rec.kind, "#777777"), linewidth=0)
            if rec.kind != "compute" and rec.wait > 0:
                ax.broken_barh([(rec.ready * 1e3, rec.wait * 1e3)], (y - 0.4, 0.8), facecolors="none",
                               edgecolor="#999999", hatch="//", linewidth=0)
    ax.set_yticks(range(len(rows)), [f"rank {r} {s}" for r, s in rows])
    ax.invert_yaxis()
    ax.set_xlim(lo * 1e3, hi * 1e3)
    ax.set_xlabel("time (ms)")
    kinds = [k for k in COLORS if k != "pipeline_bubble"]
    ax.legend(handles=[plt.Rectangle((0, 0), 1, 1, color=COLORS[k]) for k in kinds], labels=kinds,
              loc="upper center", bbox_to_anchor=(0.5, -0.12 - 0.6 / max(len(rows), 1)), fontsize=7, ncol=len(kinds))
    fig.tight_layout()
    if path:
        fig.savefig(path, dpi=120)
    return fig


def plot_breakdown(reports: Sequence[Report], labels: Sequence[str] | None = None,
                   path: str | Path | None = None) -> Figure:
    """Stacked bars of the step-time breakdown, one per report."""
    labels = list(labels) if labels else [r.scenario for r in reports]
    parts = ["compute", *COMM_TYPES, "pipeline_bubble"]
    fig, ax = plt.subplots(figsize=(max(4, 1.6 * len(reports) + 2), 4.5))
    bottom = [0.0] * len(reports)
    for part in parts:
        vals = []
        for r in reports:
            bd = r.breakdown_s
            v = bd.compute if part == "compute" else bd.pipeline_bubble if part == "pipeline_bubble" \
                else bd.exposed_comm.get(part, 0.0)
            vals.append(v * 1e3)
        if any(vals):
            ax.bar(labels, vals, bottom=bottom, color=COLORS[part],
                   label=part if part in ("compute", "pipeline_bubble") else f"exposed {part}")
            bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_ylabel("time per step (ms)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    if path:
        fig.savefig(path, dpi=120)
    return fig


def save_plots(trace: Trace, report: Report, path: str | Path) -> list[Path]:
    """``--plot F``: F with ``-gantt`` and ``-breakdown`` before its suffix (PNG)."""
    p = Path(path)
    stem, suffix = p.with_suffix(""), p.suffix or ".png"
    out = [Path(f"{stem}-gantt{suffix}"), Path(f"{stem}-breakdown{suffix}")]
    plt.close(plot_gantt(trace, path=out[0]))
    plt.close(plot_breakdown([report], path=out[1]))
    return out

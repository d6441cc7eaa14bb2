"""The comparison chart of `clustersim compare` / `sweep`: one stacked bar per plan (compute,
exposed communication per collective type, pipeline bubble), fastest plan on top.

Takes plain (label, seconds-by-part) rows so it needs nothing from the sweep layer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from matplotlib.figure import Figure

from simulator.report.figures import new_figure, save_figure

PARTS = ("compute", "allgather", "reducescatter", "allreduce", "alltoall", "sendrecv", "pipeline_bubble")
COLORS = {"compute": "#4c72b0", "allgather": "#dd8452", "reducescatter": "#55a868", "allreduce": "#c44e52",
          "alltoall": "#8172b3", "sendrecv": "#da8bc3", "pipeline_bubble": "#bbbbbb"}
LABELS = {"compute": "compute", "allgather": "exposed AllGather", "reducescatter": "exposed ReduceScatter",
          "allreduce": "exposed AllReduce", "alltoall": "exposed All-to-All", "sendrecv": "exposed send/recv",
          "pipeline_bubble": "pipeline bubble"}


def plot_plan_comparison(rows: Sequence[tuple[str, Mapping[str, float]]], title: str = "",
                         path: str | Path | None = None) -> Figure:
    """Horizontal stacked bars of each plan's step time in ms, split by part."""
    fig = new_figure(10, 0.45 * max(len(rows), 1) + 2.4)
    ax = fig.subplots()
    y = list(range(len(rows)))
    left = [0.0] * len(rows)
    for part in PARTS:
        widths = [1e3 * parts.get(part, 0.0) for _, parts in rows]
        if not any(widths):
            continue
        ax.barh(y, widths, left=left, color=COLORS[part], label=LABELS[part])
        left = [a + b for a, b in zip(left, widths)]
    ax.set_yticks(y, [label for label, _ in rows])
    ax.invert_yaxis()
    ax.set_xlabel("step time (ms)")
    if title:
        ax.set_title(title)
    if rows:
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14 - 0.5 / max(len(rows), 1)), fontsize=7, ncol=4)
    fig.tight_layout()
    if path:
        save_figure(fig, path)
    return fig

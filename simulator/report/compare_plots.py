"""The comparison chart of `clustersim compare` / `sweep`: one stacked bar per plan (compute,
exposed communication per collective type, pipeline bubble), fastest plan on top.

Takes plain (label, seconds-by-part) rows so it needs nothing from the sweep layer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from matplotlib.figure import Figure

from simulator.report.figures import new_figure, save_figure
from simulator.vocabulary import COMM_TYPES

PARTS = ("compute", *COMM_TYPES, "pipeline_bubble")
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


def pareto_front(points: Sequence[tuple[str, float, float]]) -> list[int]:
    """Indices of the points no other point beats on both step time and memory, by step time."""
    order = sorted(range(len(points)), key=lambda i: (points[i][1], points[i][2]))
    front, best_mem = [], float("inf")
    for i in order:
        if points[i][2] < best_mem:
            front.append(i)
            best_mem = points[i][2]
    return front


def plot_pareto(points: Sequence[tuple[str, float, float]], chosen: int | None = 0, title: str = "",
                path: str | Path | None = None, memory_cap_gib: float | None = None) -> Figure:
    """Step time (ms) against memory per GPU (GiB) of the simulated plans, given as
    (label, step seconds, GiB); the Pareto front joined and labelled, ``chosen`` (an index,
    by default the first: the ranking's best) circled."""
    fig = new_figure(8.5, 5.5)
    ax = fig.subplots()
    if points:
        ax.scatter([p[2] for p in points], [p[1] * 1e3 for p in points], s=14, color="#8c8c8c", alpha=0.7,
                   label=f"simulated plans ({len(points)})", zorder=2)
        front = pareto_front(points)
        fx = [points[i][2] for i in front]
        fy = [points[i][1] * 1e3 for i in front]
        ax.step(fx, fy, where="post", color="#4c72b0", lw=1.2, zorder=3)
        ax.scatter(fx, fy, s=28, color="#4c72b0", label=f"Pareto front ({len(front)})", zorder=4)
        for i in front[:12]:
            ax.annotate(points[i][0], (points[i][2], points[i][1] * 1e3), fontsize=6, xytext=(4, 3),
                        textcoords="offset points")
        if chosen is not None and 0 <= chosen < len(points):
            c = points[chosen]
            ax.scatter([c[2]], [c[1] * 1e3], s=160, facecolors="none", edgecolors="#c44e52", lw=2, zorder=5,
                       label=f"chosen: {c[0]} ({c[1] * 1e3:.1f} ms, {c[2]:.1f} GiB)")
    if memory_cap_gib:
        ax.axvline(memory_cap_gib, color="#c44e52", ls="--", lw=1, label=f"memory cap {memory_cap_gib:g} GiB")
    ax.set_xlabel("memory per GPU (GiB, worst pipeline stage)")
    ax.set_ylabel("step time (ms)")
    ax.grid(True, alpha=0.3)
    ax.set_title(title or "step time against memory per GPU", fontsize=10)
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    if path:
        save_figure(fig, path)
    return fig

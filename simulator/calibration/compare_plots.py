"""Figure of ``clustersim compare-trace``: predicted vs measured time per kernel, by category."""

from __future__ import annotations

from pathlib import Path

from matplotlib.figure import Figure

from simulator.calibration.trace_compare import CATEGORIES, TraceComparison
from simulator.report.figures import new_figure, save_figure

_MARKERS = {"collective": "o", "gemm": "s", "attention": "^"}


def plot_trace_comparison(cmp: TraceComparison, path: str | Path) -> Path:
    """:func:`trace_comparison_figure` saved as a PNG at ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return save_figure(trace_comparison_figure(cmp), path)


def trace_comparison_figure(cmp: TraceComparison) -> Figure:
    """Log-log scatter of predicted vs measured kernel time with the y = x line and ±20% band."""
    fig = new_figure(6, 5.5)
    ax = fig.subplots()
    values = [v for e in cmp.events for v in (e.measured_s * 1e6, e.predicted_s * 1e6) if v > 0]
    lo, hi = (min(values) / 1.5, max(values) * 1.5) if values else (1.0, 10.0)
    ax.plot([lo, hi], [lo, hi], "k-", lw=1, label="predicted = measured")
    ax.fill_between([lo, hi], [lo * 0.8, hi * 0.8], [lo * 1.2, hi * 1.2], color="0.9", label="±20%")
    for cat in CATEGORIES:
        evs = [e for e in cmp.events if e.category == cat]
        if evs:
            ax.plot([e.measured_s * 1e6 for e in evs], [e.predicted_s * 1e6 for e in evs], _MARKERS[cat],
                    ms=6, alpha=0.8, label=f"{cat} ({len(evs)})")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("measured kernel time (us)")
    ax.set_ylabel("predicted time (us)")
    ax.set_title(f"{Path(cmp.trace).name} on {cmp.profile}", fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
    ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    return fig

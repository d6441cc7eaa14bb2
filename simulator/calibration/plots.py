"""Figures of the collective validation: predicted vs measured busbw over message size."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Sequence

from simulator.report.figures import new_figure


def plot_busbw_by_profile(results: Sequence, out_dir: Path) -> list[Path]:
    """One PNG per hardware profile, one panel per sweep; returns the files written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    by_profile: dict[str, list] = defaultdict(list)
    for r in results:
        by_profile[r.case.profile].append(r)
    written = []
    for profile, group in sorted(by_profile.items()):
        cols = min(3, len(group))
        rows = -(-len(group) // cols)
        fig = new_figure(5 * cols, 3.6 * rows)
        axes = fig.subplots(rows, cols, squeeze=False)
        for ax, r in zip(axes.flat, group):
            sizes = [p.size_bytes for p in r.points]
            ax.plot(sizes, [p.measured_busbw_GBps for p in r.points], "o", ms=3.5, label="measured (nccl-tests)")
            ax.plot(sizes, [p.predicted_busbw_GBps for p in r.points], "-", lw=1.5, label="predicted")
            ax.set_xscale("log", base=2)
            ax.set_title(r.sweep.name, fontsize=8)
            ax.set_xlabel("size (bytes)")
            ax.set_ylabel("busbw (GB/s)")
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=7)
        for ax in list(axes.flat)[len(group):]:
            ax.set_visible(False)
        fig.suptitle(f"{profile}: predicted vs measured busbw")
        fig.tight_layout()
        path = out_dir / f"collectives-{profile}.png"
        fig.savefig(path, dpi=90)
        written.append(path)
    return written

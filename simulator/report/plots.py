"""PNG plots of a replayed step (matplotlib object API; see :mod:`simulator.report.figures`).

* :func:`plot_gantt`: one row per (rank, stream), ops coloured by kind, rendezvous waits
  hatched. By default it shows what a reader looks for first: one steady-state transformer
  layer, its forward and its backward side by side, on the critical rank and its TP / CP / DP
  peers. ``window="step"`` shows the whole step, ``window=(lo, hi)`` a time range in seconds.
* :func:`plot_breakdown`: the stacked bar of compute, exposed communication per type and
  pipeline bubble, one bar per report, each part labelled with its milliseconds.

Cost: a trace is read once per rank as numpy arrays (start, end, ready, and per-op stream and
kind codes computed once per shared program), and each row of the Gantt is one
``PolyCollection`` (one for its bars, one for its waits), never one artist per op; the picture
costs milliseconds per thousand ops drawn, far less than the replay that made them.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence, Union, cast

import numpy as np
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from simulator.replay.trace import Trace, op_kind
from simulator.report.figures import DPI, new_figure, save_figure
from simulator.report.labels import run_title
from simulator.report.summary import Report
from simulator.vocabulary import COMM_TYPES, PREDICTED_OPS

COLORS = {"compute": "#4c72b0", "allgather": "#dd8452", "reducescatter": "#55a868", "allreduce": "#c44e52",
          "alltoall": "#8172b3", "broadcast": "#937860", "sendrecv": "#da8bc3", "pipeline_bubble": "#bbbbbb"}
KINDS = ("compute", *PREDICTED_OPS)
_PALETTE = np.array([[int(COLORS[k][i:i + 2], 16) / 255 for i in (1, 3, 5)] + [1.0] for k in KINDS])
PEER_AXES = ("tp", "cp", "ulysses", "dp")  # the peers a layer's collectives wait on

Window = Union[None, str, tuple[float, float]]


@dataclass(frozen=True)
class Panel:
    """One time range of the Gantt, in seconds."""

    label: str
    lo: float
    hi: float


@dataclass
class _Ops:
    """A rank's ops as arrays: times (s), stream index, kind index; its (shared) program."""

    start: np.ndarray
    end: np.ndarray
    ready: np.ndarray
    stream: np.ndarray
    kind: np.ndarray
    streams: list[str]
    program: Sequence[Any]


def _codes(program: Sequence[Any]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Per op: stream index (streams compute first, then in order of first use) and kind index."""
    streams: dict[str, int] = {"compute": 0}
    s = np.fromiter((streams.setdefault(op.stream, len(streams)) for op in program), dtype=np.int32,
                    count=len(program))
    k = np.fromiter((KINDS.index(op_kind(op)) for op in program), dtype=np.int8, count=len(program))
    return s, k, list(streams)


def _rank_ops(trace: Trace, ranks: Sequence[int]) -> dict[int, _Ops]:
    """Every requested rank's ops, the program codes computed once per shared program."""
    cache: dict[int, tuple[np.ndarray, np.ndarray, list[str]]] = {}
    out = {}
    for r in ranks:
        tl = trace.timelines[r]
        key = id(tl.program)
        if key not in cache:
            cache[key] = _codes(tl.program)
        s, k, names = cache[key]
        out[r] = _Ops(tl.start, tl.end, tl.ready, s, k, names, tl.program)
    return out


# ------------------------------------------------------------------------------------------
# Which ranks and which time window


def gantt_ranks(trace: Trace, grid: Any | None = None, crit: int | None = None) -> tuple[list[int], list[str]]:
    """The critical rank, then its next peer along each of tp, cp, ulysses, dp that was
    simulated; also the axes whose peers were mirrored (symmetric replay: same timeline as the
    critical rank, not stored). Without a grid: the critical rank and up to three others."""
    crit = trace.critical_rank() if crit is None else crit
    if grid is None:
        return [crit] + [r for r in trace.ranks if r != crit][:3], []
    ranks, mirrored = [crit], []
    for axis in PEER_AXES:
        if axis not in grid.axes or grid.size(axis) < 2:
            continue
        peer = grid.peer(crit, axis, 1)
        if peer in trace.timelines:
            if peer not in ranks:
                ranks.append(peer)
        else:
            mirrored.append(axis)
    return ranks, mirrored


def steady_state_panels(trace: Trace, rank: int) -> list[Panel]:
    """Forward and backward of one steady-state layer on ``rank``: the middle micro-batch (in
    1F1B the middle of the schedule is its steady state; without pipelining every micro-batch
    looks alike) and the middle layer of the rank's stage. Each panel spans that layer's
    compute-stream kernels (the TP and CP communication of the layer runs between and beside
    them), padded by 5%. Empty when the program carries no layer tags."""
    tl = trace.timelines[rank]
    spans: dict[tuple[str, int, int], list[float]] = {}
    start, end = tl.start, tl.end
    for i, op in enumerate(tl.program):
        t = op.tag
        if op.stream != "compute" or t.layer is None or t.layer < 0 or t.mb_index is None \
                or t.phase not in ("fwd", "bwd"):
            continue  # layer -1 tags the LM head
        key = (t.phase, t.layer, t.mb_index)
        s = spans.get(key)
        if s is None:
            spans[key] = [float(start[i]), float(end[i])]
        else:
            s[0] = min(s[0], float(start[i]))
            s[1] = max(s[1], float(end[i]))
    both = {(layer, mb) for (ph, layer, mb) in spans if ph == "fwd" and ("bwd", layer, mb) in spans}
    if not both:
        return []
    mbs = sorted({mb for _, mb in both})
    mb = mbs[len(mbs) // 2]
    layers = sorted(layer for layer, m in both if m == mb)
    layer = layers[len(layers) // 2]
    out = []
    for phase, word in (("fwd", "forward"), ("bwd", "backward")):
        lo, hi = spans[(phase, layer, mb)]
        pad = 0.05 * max(hi - lo, 1e-9)
        out.append(Panel(f"{word}, layer {layer}, micro-batch {mb}", max(0.0, lo - pad), hi + pad))
    return out


def resolve_window(trace: Trace, window: Window, rank: int) -> list[Panel]:
    """``None``/"layer": the steady-state layer (the whole step when there is none);
    "step": the whole step; ``(lo, hi)``: that range in seconds."""
    step = trace.step_time_s
    if isinstance(window, tuple):
        lo, hi = window
        return [Panel(f"{lo * 1e3:.3f}-{hi * 1e3:.3f} ms", lo, hi)]
    if window in (None, "layer"):
        panels = steady_state_panels(trace, rank)
        if panels:
            return panels
    elif window != "step":
        raise ValueError(f"window {window!r}: expected 'layer', 'step' or (lo, hi) seconds")
    return [Panel("whole step", 0.0, step)]


# ------------------------------------------------------------------------------------------
# Drawing


def _boxes(x0: np.ndarray, x1: np.ndarray, y: float, h: float = 0.8) -> Sequence[np.ndarray]:
    """(n, 4, 2) rectangle vertices for spans [x0, x1] on row y: one array, which PolyCollection
    takes without copying box by box (its stubs say a sequence of (4, 2) arrays, which it is)."""
    v = np.empty((len(x0), 4, 2))
    v[:, 0, 0] = v[:, 1, 0] = x0
    v[:, 2, 0] = v[:, 3, 0] = x1
    v[:, 0, 1] = v[:, 3, 1] = y - h / 2
    v[:, 1, 1] = v[:, 2, 1] = y + h / 2
    return cast("Sequence[np.ndarray]", v)


def _short(name: str) -> str:
    """``L16.qkv.fwd.gemm`` -> ``qkv.fwd.gemm`` (the panel title names the layer)."""
    head, _, rest = name.partition(".")
    return rest if head[:1] == "L" and head[1:].isdigit() and rest else name


def _draw_panel(ax: Any, ops: dict[int, _Ops], rows: list[tuple[int, int]], panel: Panel,
                present: set[int], width_px: float) -> bool:
    """Draw every row of one panel (``width_px`` pixels wide); returns whether any rendezvous
    wait was drawn. Bars narrower than a pixel are widened to one, so a short collective in a
    whole-step view is a thin line rather than an invisible sliver."""
    lo, hi = panel.lo, panel.hi
    ms_per_px = max(hi - lo, 1e-12) * 1e3 / width_px
    any_wait = False
    for y, (rank, s) in enumerate(rows):
        o = ops[rank]
        idx = np.flatnonzero((o.stream == s) & (o.end >= lo) & (o.start <= hi))
        if not len(idx):
            continue
        x0, x1 = o.start[idx] * 1e3, o.end[idx] * 1e3
        kinds = o.kind[idx]
        present.update(np.unique(kinds).tolist())
        few = len(idx) <= 400
        ax.add_collection(PolyCollection(_boxes(x0, np.maximum(x1, x0 + ms_per_px), y), facecolors=_PALETTE[kinds],
                                         edgecolors="white" if few else "none", linewidths=0.4 if few else 0,
                                         antialiased=few))
        w = ((o.start[idx] - o.ready[idx]) > 0) & (kinds != 0)
        if w.any():
            any_wait = True
            ready = o.ready[idx][w] * 1e3
            ax.add_collection(PolyCollection(_boxes(ready, np.maximum(x0[w], ready + ms_per_px), y),
                                             facecolors="none", edgecolors="#888888", hatch="////", linewidths=0))
        if few:  # name the bars wide enough to hold their name
            for j in np.flatnonzero((x1 - x0) / ms_per_px > 60):
                text = _short(o.program[int(idx[j])].name)
                if (x1[j] - x0[j]) / ms_per_px >= 4.8 * len(text) + 6:
                    ax.text((x0[j] + x1[j]) / 2, y, text, ha="center", va="center", fontsize=6, color="white",
                            clip_on=True)
    ax.set_xlim(lo * 1e3, hi * 1e3)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.ticklabel_format(axis="x", useOffset=False)
    ax.set_title(panel.label, fontsize=9)
    ax.set_xlabel("time in the step (ms)")
    return any_wait


def plot_gantt(run: Any, ranks: Sequence[int] | None = None, window: Window = None,
               path: str | Path | None = None, *, grid: Any | None = None, title: str = "") -> Figure:
    """Gantt of ``ranks`` over ``window``.

    ``run`` is a Trace, or a Simulation (``simulate(...)``'s result), whose schedule gives the
    grid and whose scenario gives the title. ``ranks`` default to the critical rank and its
    TP/CP/Ulysses/DP peers (which needs the grid; without it, the critical rank and up to three
    others). ``window`` defaults to one steady-state layer, forward and backward side by side;
    ``"step"`` is the whole step, ``(lo, hi)`` a range in seconds. Rows without an op in the
    window are left out."""
    trace = getattr(run, "trace", run)
    if trace is not run:
        grid = grid if grid is not None else run.schedule.grid
        title = title or run_title(run.scenario, run.report.step_time_s)
    mirrored: list[str] = []
    crit = trace.critical_rank()
    if ranks is None:
        ranks, mirrored = gantt_ranks(trace, grid, crit)
    ranks = list(ranks)
    panels = resolve_window(trace, window, crit if crit in ranks else ranks[0])
    ops = _rank_ops(trace, ranks)
    rows: list[tuple[int, int]] = []
    for r in ranks:
        o = ops[r]
        for s in range(len(o.streams)):
            sel = o.stream == s
            if any(((o.end[sel] >= p.lo) & (o.start[sel] <= p.hi)).any() for p in panels):
                rows.append((r, s))
    width_in = 13.0
    fig = new_figure(width_in, 0.3 * len(rows) + 2.2)
    axes = fig.subplots(1, len(panels), sharey=True, squeeze=False)[0]
    present: set[int] = set()
    waits = False
    panel_px = width_in * DPI * 0.82 / len(panels)
    for ax, panel in zip(axes, panels):
        waits |= _draw_panel(ax, ops, rows, panel, present, panel_px)
    names = [f"rank {r}{' (critical)' if r == crit else ''} {ops[r].streams[s]}" for r, s in rows]
    axes[0].set_yticks(range(len(rows)), names, fontsize=7)
    handles = [Patch(color=COLORS[KINDS[k]], label=KINDS[k]) for k in sorted(present)]
    if waits:
        handles.append(Patch(facecolor="none", edgecolor="#888888", hatch="////", label="wait for peers"))
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=7, frameon=False)
    head = title or f"step {trace.step_time_s * 1e3:.1f} ms"
    if mirrored:
        head += (f"\n{', '.join(mirrored)} peers replayed by symmetry: same timeline as rank {crit}")
    fig.suptitle(head, fontsize=10)
    fig.tight_layout(rect=(0, 0.06 if len(rows) < 8 else 0.03, 1, 1))
    if path:
        save_figure(fig, path)
    return fig


def breakdown_parts(report: Report) -> dict[str, float]:
    """Seconds by part, in plot order: compute, exposed comm per type, pipeline bubble."""
    bd = report.breakdown_s
    return {"compute": bd.compute, **{k: bd.exposed_comm.get(k, 0.0) for k in COMM_TYPES},
            "pipeline_bubble": bd.pipeline_bubble}


def _part_label(part: str) -> str:
    return part.replace("_", " ") if part in ("compute", "pipeline_bubble") else f"exposed {part}"


def plot_breakdown(reports: Sequence[Report], labels: Sequence[str] | None = None,
                   path: str | Path | None = None, *, title: str = "") -> Figure:
    """Stacked bars of the step-time breakdown, one per report; each part is labelled with its
    milliseconds and share where it is tall enough, each bar with its total; the legend lists
    only the parts some bar has."""
    labels = list(labels) if labels else [r.scenario for r in reports]
    parts = [breakdown_parts(r) for r in reports]
    totals = [sum(p.values()) * 1e3 for p in parts]
    top = max(totals, default=1.0) or 1.0
    fig = new_figure(max(5.0, 1.9 * len(reports) + 2.5), 5.0)
    ax = fig.subplots()
    x = np.arange(len(reports))
    bottom = np.zeros(len(reports))
    for part in parts[0] if parts else []:
        vals = np.array([p[part] * 1e3 for p in parts])
        if not vals.any():
            continue
        label = _part_label(part) + (f" {vals[0]:.1f} ms" if len(reports) == 1 else "")
        ax.bar(x, vals, bottom=bottom, color=COLORS[part], label=label, width=0.6)
        for i, v in enumerate(vals):
            if v > 0.045 * top:
                ax.text(x[i], bottom[i] + v / 2, f"{v:.1f} ms ({100 * v / totals[i]:.0f}%)", ha="center",
                        va="center", fontsize=7, color="white" if part != "pipeline_bubble" else "black")
        bottom += vals
    for i, t in enumerate(totals):
        ax.text(x[i], t + 0.01 * top, f"{t:.1f} ms", ha="center", va="bottom", fontsize=8, fontweight="bold")
    ax.set_xticks(x, labels, fontsize=8)
    ax.set_ylim(0, top * 1.12)
    ax.set_ylabel("time per step (ms)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    head = title or (f"{reports[0].scenario}: step {reports[0].step_time_s * 1e3:.1f} ms"
                     if len(reports) == 1 else "step time breakdown")
    ax.set_title(textwrap.fill(head, 55), fontsize=9)
    fig.tight_layout()
    if path:
        save_figure(fig, path)
    return fig


def plot_paths(path: str | Path) -> list[Path]:
    """``--plot F``: F with ``-gantt`` and ``-breakdown`` before its suffix (PNG)."""
    p = Path(path)
    stem, suffix = p.with_suffix(""), p.suffix or ".png"
    return [Path(f"{stem}-gantt{suffix}"), Path(f"{stem}-breakdown{suffix}")]


def save_plots(trace: Trace, report: Report, path: str | Path, *, scenario: Any | None = None,
               grid: Any | None = None, window: Window = None) -> list[Path]:
    """Write the Gantt and the breakdown of one run (:func:`plot_paths`); returns the paths.
    ``scenario`` (for the title's hardware and plan) and ``grid`` (for the peers) are optional."""
    out = plot_paths(path)
    title = run_title(scenario, report.step_time_s) if scenario is not None else ""
    plot_gantt(trace, window=window, path=out[0], grid=grid, title=title)
    plot_breakdown([report], path=out[1], title=title)
    return out

"""Prediction intervals: how far to trust a predicted collective time or step time.

An interval is the point prediction scaled by empirical quantiles of the signed log error
``r = ln(measured time / predicted time)`` (for a collective ``= ln(predicted busbw / measured
busbw)``, for a step ``= ln(1 + error)`` of docs/validation-e2e.md), taken from predictions of
systems the model was not tuned on:

* an uncalibrated collective: the leave-one-system-out errors of the bundled nccl-tests sweeps
  (docs/validation-collectives.md) of *comparable* systems, that is the same scope (inside one
  node over the scale-up fabric, or across nodes over the scale-out network) and the same size
  band (below 64 KiB, where the time is latency; 64 KiB to 1 MiB; from 1 MiB, where it is
  bandwidth). Transports are not told apart: most have one or two measured systems, too few for
  a quantile of their own;
* a calibrated collective (a profile overlay written by ``clustersim calibrate``, which records
  its residuals as ``uncertainty.busbw_log_residual``): the quantiles of the fit's own residuals
  in the same class, for the classes the fit had rows of, where a class is the collective, the
  scope and the size band. They are in-sample, so they are the narrowest honest statement
  (docs/validation-calibration.md scores the fit on held-out rows); a class the fit did not see
  (another collective, scope or size band) falls back to the leave-one-system-out band: on the
  leave-one-collective-out splits of docs/validation-calibration.md the fit's own band covered
  53% of the held-out collective's rows, the fallback covers 94%. Scale is part of the class
  too: the overlay records the smallest and largest communicator (ranks) the fit measured per
  scope (``uncertainty.fitted_ranks``), and a prediction outside that range, where the
  residuals say nothing, takes the wider of the residual band and the leave-one-system-out band
  (the latter describes the model on a system, or a scale, that no fit saw; the former is kept so
  that going further from the data never narrows the interval). On the scale splits of
  docs/validation-calibration.md the residual band alone covered 60% of the larger
  communicators' rows, the wider band covers 83%;
* a step time: the leave-one-source-out errors of the published training runs
  (docs/validation-e2e.md), one band for every run (a band per regime, one node or several,
  covers fewer held-out rows on these data; the page shows both). It is the same with a
  calibrated profile: the published rows' errors are mostly compute, and a collective fit says
  nothing about how much of them it removes, so the band is not narrowed on a guess.

The 80% interval is ``[t·exp(q10), t·exp(q90)]``. Each system (or source) weighs the same,
however many rows it has: one 1,000-row sweep does not make the others irrelevant. When the
errors of the comparable systems all lie on one side of zero the interval is widened to
include the point prediction, so ``lo <= t <= hi`` always holds.

The quantiles are not computed at run time (leave-one-out takes minutes): they are read from
generated tables, ``collective_interval_table.py`` (written by ``python -m
simulator.calibration.collective_intervals``) and ``step_interval_table.py`` (by ``python -m
simulator.e2e_validation --out docs``). Their coverage on held-out data is nested: the
quantiles that predict a system come from the *other* systems only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from simulator.config.hardware import SCOPES, SIZE_BANDS

LEVEL = 0.8  # the interval's nominal coverage
PROBS = ((1.0 - LEVEL) / 2, (1.0 + LEVEL) / 2)  # 10th and 90th percentiles


def size_band(size_bytes: int) -> str:
    """The size band of a collective (nccl-tests' size_bytes)."""
    return next(label for limit, label in SIZE_BANDS if size_bytes < limit)


def collective_class(multi_node: bool, size_bytes: int) -> str:
    """What "comparable" means for a collective: scope and size band, e.g. ``across nodes, >= 1 MiB``."""
    return f"{SCOPES[int(bool(multi_node))]}, {size_band(size_bytes)}"


def op_class(op: str, multi_node: bool, size_bytes: int) -> str:
    """The class of a calibration fit's residuals: the collective, its scope and size band, e.g.
    ``allgather, one node, >= 1 MiB``. A fit's residuals say how well it reproduces what it
    measured; for another collective (another pattern, its own algorithm and protocol mix) they
    say nothing (docs/validation-calibration.md measures how they cover one)."""
    return f"{op}, {collective_class(multi_node, size_bytes)}"


STEP_CLASS = "all runs"  # the pooled step-time band (e2e_validation/intervals.py: why not per regime)

# GPU generations that may have a step-time band of their own, by the leading letters of the
# profile's ``gpu.name``: the generation sets the GEMM curve and its fitted derate, the one
# constant fitted on training runs (e2e_validation/intervals.py: when the table holds them).
GENERATIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Blackwell", ("B100", "B200", "B300", "GB200", "GB300")),
    ("Hopper", ("H100", "H200", "H800", "H20", "GH200")),
    ("Ampere", ("A100", "A800", "A40", "A30", "A10")),
)


def gpu_generation(gpu_name: str) -> str | None:
    """The generation of a GPU by its profile name ("GB300-279GB" -> "Blackwell"); None for the
    others (MI300X, V100), which take the pooled band."""
    name = gpu_name.upper()
    return next((gen for gen, prefixes in GENERATIONS if name.startswith(prefixes)), None)


def generation_class(generation: str) -> str:
    """The step-time band's class of a GPU generation."""
    return f"{generation} GPUs"


def step_regime(nodes: int) -> str:
    """The regime of a training step: one node or several (docs/validation-e2e.md compares a
    band per regime with the single band)."""
    return "one node" if nodes <= 1 else "multi-node"


def log_error(error: float) -> float:
    """``ln(1 + error)`` of an error defined as predicted speed / measured speed - 1."""
    return math.log1p(error)


def group_quantiles(groups: Mapping[str, Sequence[float]], probs: Sequence[float] = PROBS) -> tuple[float, ...]:
    """Quantiles of the values of all groups, each group weighing 1 split evenly over its values:
    the inverse of that weighted empirical CDF (the smallest value whose cumulative weight
    reaches ``p`` of the total)."""
    pairs = sorted((v, 1.0 / len(vs)) for vs in groups.values() if vs for v in vs)
    if not pairs:
        raise ValueError("no values")
    total = float(sum(1 for vs in groups.values() if vs))
    out = []
    for p in probs:
        target, acc = p * total, 0.0
        value = pairs[-1][0]
        for v, w in pairs:
            acc += w
            if acc >= target - 1e-12:
                value = v
                break
        out.append(value)
    return tuple(out)


@dataclass(frozen=True)
class Band:
    """The log-error quantiles of one class: an interval is ``[t·exp(lo), t·exp(hi)]``."""

    lo: float
    hi: float
    groups: int  # systems (or sources) the quantiles come from
    rows: int

    def around(self, value: float) -> tuple[float, float]:
        """The interval of a predicted *time* ``value`` (a speed scales by the reciprocals)."""
        return value * math.exp(self.lo), value * math.exp(self.hi)


def band(groups: Mapping[str, Sequence[float]]) -> Band:
    """The 80% band of these groups' log errors, widened to contain 0 (the point prediction)."""
    q_lo, q_hi = group_quantiles(groups)
    return Band(min(q_lo, 0.0), max(q_hi, 0.0), sum(1 for v in groups.values() if v),
                sum(len(v) for v in groups.values()))


@dataclass(frozen=True)
class Coverage:
    """Nested leave-one-group-out coverage: each group's values against the band of the others."""

    rows: int
    covered_rows: int
    groups: int
    group_mean: float  # the mean over groups of the fraction of a group's values covered

    @property
    def row_fraction(self) -> float:
        return self.covered_rows / self.rows if self.rows else math.nan


def nested_coverage(by_class: Mapping[str, Mapping[str, Sequence[float]]]) -> Coverage:
    """Coverage of the 80% band on held-out groups: for every class and group, the band of the
    class computed without that group, applied to its values. ``by_class[class][group]`` are
    log errors. A class with a single group has no held-out band and is skipped."""
    rows = covered = 0
    per_group: dict[str, list[int]] = {}
    for groups in by_class.values():
        for g, values in groups.items():
            others = {k: v for k, v in groups.items() if k != g and v}
            if not values or not others:
                continue
            b = band(others)
            hit = sum(b.lo <= v <= b.hi for v in values)
            rows += len(values)
            covered += hit
            acc = per_group.setdefault(g, [0, 0])
            acc[0] += hit
            acc[1] += len(values)
    mean = sum(h / n for h, n in per_group.values()) / len(per_group) if per_group else math.nan
    return Coverage(rows, covered, len(per_group), mean)


def bands_by_class(by_class: Mapping[str, Mapping[str, Sequence[float]]]) -> dict[str, Band]:
    return {c: band(groups) for c, groups in sorted(by_class.items()) if any(groups.values())}


def calibration_residuals(profile: Any) -> dict[str, tuple[float, float]] | None:
    """The ``[q10, q90]`` log residuals per class a calibrated profile records (None: not calibrated)."""
    u = getattr(profile, "uncertainty", None)
    res = getattr(u, "busbw_log_residual", None) if u is not None else None
    return {k: (float(v[0]), float(v[1])) for k, v in res.items()} if res else None


def calibration_ranks(profile: Any) -> dict[str, tuple[int, int]] | None:
    """The smallest and largest communicator (ranks) per scope that a calibrated profile's fit
    measured (``uncertainty.fitted_ranks``; None: not recorded, or not calibrated)."""
    u = getattr(profile, "uncertainty", None)
    got = getattr(u, "fitted_ranks", None) if u is not None else None
    return {k: (int(v[0]), int(v[1])) for k, v in got.items()} if got else None


def outside_fitted_scale(multi_node: bool, ranks: int | None,
                         fitted_ranks: Mapping[str, Sequence[int]] | None) -> str | None:
    """Why a communicator of ``ranks`` lies outside the scale a calibration fit measured in its
    scope (None: inside it, or nothing to tell: no ranks given or no range recorded)."""
    if ranks is None or fitted_ranks is None:
        return None
    scope = SCOPES[int(bool(multi_node))]
    span = fitted_ranks.get(scope)
    if span is None:
        return f"the calibration fit measured no communicator {scope}"
    lo, hi = span
    if lo <= ranks <= hi:
        return None
    measured = f"{lo} ranks" if lo == hi else f"{lo}-{hi} ranks"
    return f"{ranks} ranks is outside the {measured} the calibration fit measured {scope}"


def collective_band(multi_node: bool, size_bytes: int,
                    residuals: Mapping[str, Sequence[float]] | None = None, op: str | None = None,
                    ranks: int | None = None,
                    fitted_ranks: Mapping[str, Sequence[int]] | None = None) -> tuple[Band, str]:
    """The band of a predicted collective ``op`` on ``ranks`` GPUs, and where it comes from.
    ``residuals``: the ``[q10, q90]`` log residuals per class that ``clustersim calibrate``
    recorded in the profile (``uncertainty.busbw_log_residual``), used for the classes the fit had
    rows of (the collective's own class, or a class without a collective that an older overlay
    recorded) at a communicator size within ``fitted_ranks`` (``uncertainty.fitted_ranks``);
    outside that range the wider of the residual band and the leave-one-system-out band (the
    residuals describe the fit at the scales it measured, not beyond); for any other class the
    leave-one-system-out table."""
    from simulator.report.collective_interval_table import BANDS

    cls = collective_class(multi_node, size_bytes)
    t_lo, t_hi, groups, rows = BANDS[cls]
    loso = f"leave-one-system-out errors of {groups} measured systems, {cls}"
    if residuals:
        for key in ((op_class(op, multi_node, size_bytes),) if op else ()) + (cls,):
            if key in residuals:
                lo, hi = residuals[key]
                beyond = outside_fitted_scale(multi_node, ranks, fitted_ranks)
                if beyond is None:
                    return Band(min(lo, 0.0), max(hi, 0.0), 1, 0), f"residuals of the calibration fit, {key}"
                return (Band(min(lo, t_lo, 0.0), max(hi, t_hi, 0.0), groups, rows),
                        f"wider of the residuals of the calibration fit, {key}, and the {loso} ({beyond})")
    return Band(t_lo, t_hi, groups, rows), loso


def step_band(gpu_name: str | None = None) -> tuple[Band, str] | None:
    """The band of a step time predicted on a ``gpu_name`` GPU, and where it comes from: its
    generation's band where the table holds one, else the pooled band (None before the table was
    first generated: the run that generates it predicts steps too)."""
    try:
        from simulator.report.step_interval_table import BANDS
    except ModuleNotFoundError:
        return None
    generation = gpu_generation(gpu_name) if gpu_name else None
    key = generation_class(generation) if generation and generation_class(generation) in BANDS else STEP_CLASS
    lo, hi, groups, rows = BANDS[key]
    on = f" on {key}" if key != STEP_CLASS else ""
    return Band(lo, hi, groups, rows), f"leave-one-source-out errors of {rows} published runs{on} from {groups} sources"


def fmt_interval(value: float, lo: float, hi: float, unit: str = "s") -> str:
    """``7.09 s (6.60–7.50 s, 80%)``: three significant digits, in s, ms or µs by magnitude."""
    scale, name = next(((f, n) for f, n in ((1.0, unit), (1e-3, "ms"), (1e-6, "µs")) if value >= f), (1e-6, "µs"))
    v, a, b = value / scale, lo / scale, hi / scale
    decimals = max(0, 2 - int(math.floor(math.log10(v)))) if v > 0 else 2
    return f"{v:.{decimals}f} {name} ({a:.{decimals}f}–{b:.{decimals}f} {name}, {LEVEL:.0%})"


def table_lines(bands: Mapping[str, Band], coverage: Mapping[str, Coverage], groups: str = "systems") -> list[str]:
    """A markdown table of bands and their nested coverage (the validation pages)."""
    lines = [f"| class | {groups} | rows | 80% band of measured / predicted time | held-out coverage (rows) | "
             f"held-out coverage (mean over {groups}) |", "|---|---:|---:|---|---:|---:|"]
    for c in list(bands) + [c for c in coverage if c not in bands]:
        b, cov = bands.get(c), coverage.get(c)
        cells = (f"{cov.row_fraction:.0%} of {cov.rows}", f"{cov.group_mean:.0%} of {cov.groups}") if cov and cov.rows \
            else ("–", "–")
        span = f"×{math.exp(b.lo):.2f} – ×{math.exp(b.hi):.2f}" if b else "(each class's own band)"
        lines.append(f"| {c} | {b.groups if b else cov.groups if cov else '–'} | {b.rows if b else cov.rows if cov else '–'} | "
                     f"{span} | {cells[0]} | {cells[1]} |")
    return lines


def source_commit() -> str:
    """The checkout's commit, for the header of a generated table ("unknown" outside git)."""
    import subprocess
    from pathlib import Path

    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10,
                             cwd=Path(__file__).resolve().parent, check=False)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"

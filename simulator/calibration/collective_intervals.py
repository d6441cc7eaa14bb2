"""The collective interval table of ``clustersim collective``
(``simulator/report/collective_interval_table.py``) and its section of
docs/validation-collectives.md, from the leave-one-system-out predictions of the bundled sweeps.

    python -m simulator.calibration.collective_intervals      # the table only (about a minute)

``python -m simulator.calibration.collective_validation --out docs/`` writes both, from the same
held-out predictions. Every held-out row gives a log error ``ln(predicted busbw / measured busbw)``
(= ln(measured time / predicted time)); rows are grouped by class (scope and size band,
:func:`simulator.report.intervals.collective_class`) and by system, and
:mod:`simulator.report.intervals` turns them into each class's 80% band (every system weighing
the same) and its nested coverage (each system's rows against the band of the other systems).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Sequence

from simulator.report.intervals import (source_commit, LEVEL, SCOPES, Band, Coverage, bands_by_class, collective_class,
                                        log_error, nested_coverage, op_class, table_lines)

TABLE = Path(__file__).resolve().parents[1] / "report" / "collective_interval_table.py"

# Systems no prediction made today is comparable to, left out of the bands (still in the page's
# error tables). The model's tuner constants are NCCL 2.30.7's, and every other sweep here ran
# NCCL 2.16-2.29 or RCCL 2.22-2.26.
NOT_COMPARABLE = {
    "abci-a100": "NCCL 2.8.4 (2020), whose single-node sweep is as far from the model as its multi-node ones "
                 "(+84% at >= 1 MiB on one NVSwitch node, with the release's own tuner tables; ABCI's V100 "
                 "nodes show the same shortfall under the same release): a library four years older than any "
                 "other sweep, not a cluster property a user's prediction would share",
    "abci-a100-bcast": "ABCI's Broadcast under the same NCCL 2.8.4 stack as abci-a100 (+93..+96% at >= 1 MiB on "
                       "one node): the same four-year-older library",
    "aws-p4d-2021": "NCCL 2.8.3 with the aws-ofi-nccl of Feb 2021 (costs/transports.py, EFA_NET_V4): 32.7 GB/s "
                    "Ring busbw at 1 GiB where the same 4 x 100 Gb/s EFA carried 78 under the 2024 stack; a plugin "
                    "three years older than any other EFA sweep, not a property a user's prediction would share",
}


def class_errors(held_out: Sequence[Any]) -> dict[str, dict[str, list[float]]]:
    """``[class][system]`` -> the log errors of that system's held-out rows in that class."""
    by: dict[str, dict[str, list[float]]] = {}
    for h in sorted(held_out, key=lambda h: h.system):
        if h.system in NOT_COMPARABLE:
            continue
        for r in h.results:
            for p in r.points:
                cls = collective_class(p.spans_nodes, p.size_bytes)
                by.setdefault(cls, {}).setdefault(h.system, []).append(log_error(p.error))
    return dict(sorted(by.items()))


def bands_and_coverage(held_out: Sequence[Any]) -> tuple[dict[str, Band], dict[str, Coverage]]:
    by = class_errors(held_out)
    cov = {c: nested_coverage({c: g}) for c, g in by.items()}
    cov["all rows"] = nested_coverage(by)
    return bands_by_class(by), cov


def fit_residuals(profile: Any, measurements: Sequence[Any]) -> dict[str, Any] | None:
    """The ``uncertainty`` block of a calibrated overlay: per class of a collective the fit
    measured (collective, scope and size band, :func:`~simulator.report.intervals.op_class`),
    the 80% band of the fitted profile's residuals ln(predicted busbw / measured busbw) in that
    scope and size band, over every collective measured there (each sweep weighing the same: one
    collective's few rows per band give no 10th-90th percentile of their own), the collective's
    row count, and per scope the smallest and largest communicator (ranks) measured there
    (``fitted_ranks``); None without rows. In-sample residuals: the band says how well the
    fitted model reproduces these measurements at these scales, the narrowest honest claim. A
    collective the fit did not measure gets no entry, so it keeps the leave-one-system-out band;
    a communicator outside ``fitted_ranks`` gets the wider of the two
    (:func:`simulator.report.intervals.collective_band`)."""
    from simulator.calibration.fit import busbw_errors

    by: dict[str, dict[str, list[float]]] = {}
    rows: dict[str, int] = {}
    ranks: dict[str, list[int]] = {}
    for i, m in enumerate(measurements):
        net = profile.domains(m.nodes) > 1  # over the scale-out network (not one NVLink domain)
        for size, err in zip(m.sizes, busbw_errors(profile, m)):
            if err > -1.0:
                by.setdefault(collective_class(net, size), {}).setdefault(str(i), []).append(log_error(float(err)))
                key = op_class(m.op, net, size)
                rows[key] = rows.get(key, 0) + 1
                span = ranks.setdefault(SCOPES[int(net)], [m.ranks, m.ranks])
                span[:] = [min(span[0], m.ranks), max(span[1], m.ranks)]
    bands = bands_by_class(by)
    if not bands:
        return None
    keys = sorted(rows)
    return {"busbw_log_residual": {k: [round(bands[cls].lo, 6), round(bands[cls].hi, 6)]
                                   for k in keys for cls in (k.split(", ", 1)[1],)},
            "rows": {k: rows[k] for k in keys},
            "fitted_ranks": {scope: ranks[scope] for scope in SCOPES if scope in ranks}}


def render_table(held_out: Sequence[Any]) -> str:
    """The generated module: per class the band and its nested coverage."""
    bands, cov = bands_and_coverage(held_out)
    sweeps = sum(len(h.results) for h in held_out)
    lines = ['"""Collective interval table of `clustersim collective` (simulator/report/intervals.py). GENERATED:',
             "do not edit.", "",
             f"Written by `python -m simulator.calibration.collective_validation` (or `.collective_intervals`) at commit {source_commit()} from the",
             f"leave-one-system-out predictions of {sweeps} sweeps of {len(held_out)} systems in data/nccl",
             "(docs/validation-collectives.md). BANDS[class] = (q10, q90, systems, rows): quantiles of",
             "ln(predicted busbw / measured busbw) = ln(measured time / predicted time), every system weighing",
             "the same, widened to contain 0. COVERAGE[class] = (rows, rows covered, systems, mean over systems",
             f"of the fraction covered) of the {LEVEL:.0%} band, nested: each system against the other systems' band.",
             '"""', "", "BANDS = {"]
    lines += [f"    {c!r}: ({b.lo!r}, {b.hi!r}, {b.groups}, {b.rows})," for c, b in bands.items()]
    lines += ["}", "", "COVERAGE = {"]
    lines += [f"    {c!r}: ({v.rows}, {v.covered_rows}, {v.groups}, {round(v.group_mean, 6)!r})," for c, v in cov.items()]
    lines += ["}", ""]
    return "\n".join(lines)


def render_section(held_out: Sequence[Any]) -> list[str]:
    """The page's section on the interval ``clustersim collective`` prints and its coverage."""
    bands, cov = bands_and_coverage(held_out)
    overall = cov["all rows"]
    big = [v for c, v in cov.items() if c.endswith(">= 1 MiB")]
    big_rows, big_hit = sum(v.rows for v in big), sum(v.covered_rows for v in big)
    lines = ["## Prediction intervals and their coverage", "",
             f"`clustersim collective` prints an {LEVEL:.0%} interval of busbw per size (and `--json` gives "
             "`time_interval_us` and `busbw_interval_GBps` per row). Without a calibration it is the predicted time × "
             "the 10th and 90th percentiles of ln(measured time / predicted time) over the held-out rows of the "
             "table above from *comparable* systems: the same scope (one node over the scale-up fabric, or across "
             "nodes over the scale-out network) and the same size band (below 64 KiB, latency-bound; 64 KiB to "
             "1 MiB; from 1 MiB, bandwidth-bound). Transports are not told apart: most have one or two systems here. "
             "Every system weighs the same however many rows it has, and the band is widened to contain the "
             "prediction. A profile written by `clustersim calibrate` carries the quantiles of its own fit's "
             "residuals per class it has rows of instead (`uncertainty.busbw_log_residual`), at the communicator "
             "sizes its fit measured (`uncertainty.fitted_ranks`; outside them, the wider of the two bands). Code: "
             "`simulator/report/intervals.py`; table: `simulator/report/collective_interval_table.py`, written "
             "with this page.", "",
             "Coverage is nested, so it is not in-sample: each system's rows are checked against the band computed "
             "from the *other* systems' held-out errors. "
             f"**The {LEVEL:.0%} interval covers {overall.row_fraction:.0%} of the {overall.rows} held-out rows** "
             f"({overall.group_mean:.0%} averaged over the {overall.groups} systems"
             + (f"; {big_hit / big_rows:.0%} of the {big_rows} rows from 1 MiB" if big_rows else "") + "). "
             "The row count is dominated by the two 1,023-row scans of a100-pcie and vTrain's three 1,024-row "
             "tables (1 MiB steps, most of them on the plateau); the mean over systems weighs "
             "each system once. With three to seven other systems per class, a held-out system is often an "
             "extrapolation, so the mean over systems falls short of the nominal 80%: read the interval as the "
             "spread between deployed systems, not as a guarantee.", ""]
    lines += table_lines(bands, cov)
    lines += ["", "Left out of the bands: " + "; ".join(f"{k} ({v})" for k, v in NOT_COMPARABLE.items()) + "."]
    return lines + [""]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m simulator.calibration.collective_intervals",
                                 description="write simulator/report/collective_interval_table.py")
    ap.add_argument("--print", action="store_true", help="print the table instead of writing it")
    args = ap.parse_args(argv)
    from simulator.calibration.deployed_fit import leave_one_system_out

    held_out = leave_one_system_out()
    text = render_table(held_out)
    if args.print:
        print(text)
        return 0
    TABLE.write_text(text)
    print("\n".join(render_section(held_out)))
    print(f"wrote {TABLE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The step-time interval table of ``clustersim run`` (``simulator/report/step_interval_table.py``)
and its coverage section of docs/validation-e2e.md, both from the leave-one-source-out results.

Every row's held-out error (``predicted throughput / measured throughput - 1`` =
``measured step / predicted step - 1``) gives a log error ``ln(1 + error)``, grouped by source;
:mod:`simulator.report.intervals` turns them into the 80% band (every source weighing the same)
and its nested coverage (each source's rows against the band of the other sources).

One band serves every run. A band per regime (one node, several nodes: ``scenario.nodes``) was
the obvious split; the page reports its nested coverage beside the pooled band's, and on these
rows it covers fewer held-out rows, so the data do not support it. The table keeps every row with its regime, so the band,
the coverage and the comparison can be recomputed from it (tests/unit/test_intervals.py) and
compared with the page; ``python -m simulator.e2e_validation.intervals`` rewrites the table's
header and the page's section from the stored rows, without simulating anything.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Sequence

from simulator.report.intervals import (LEVEL, STEP_CLASS, Band, Coverage, bands_by_class, log_error, nested_coverage,
                                        source_commit, step_regime, table_lines)

Row = tuple[str, str, str, float]  # (regime, source, label, log error)
TABLE = Path(__file__).resolve().parents[1] / "report" / "step_interval_table.py"
DOC = Path(__file__).resolve().parents[2] / "docs" / "validation-e2e.md"
HEADING = "## Step-time interval and its coverage"


def regime_rows(loso: Sequence[Any]) -> list[Row]:
    """``(regime, source, label, log error)`` of every held-out row, in the page's order."""
    return [(step_regime(int(r.result.case.scenario.get("nodes", 1))), r.result.case.source, r.result.case.label,
             round(log_error(r.result.error), 6)) for r in loso]


def _by_source(rows: Sequence[Row]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for _regime, source, _label, err in rows:
        out.setdefault(source, []).append(err)
    return out


def bands_and_coverage(rows: Sequence[Row]) -> tuple[dict[str, Band], dict[str, Coverage]]:
    """The band ``clustersim run`` uses (one class, every row) and its nested coverage."""
    by = {STEP_CLASS: _by_source(rows)}
    return bands_by_class(by), {STEP_CLASS: nested_coverage(by)}


def split_by_regime(rows: Sequence[Row]) -> tuple[dict[str, Band], dict[str, Coverage]]:
    """The alternative: a band per regime, each with its nested coverage, and theirs together."""
    by: dict[str, dict[str, list[float]]] = {}
    for regime, source, _label, err in rows:
        by.setdefault(regime, {}).setdefault(source, []).append(err)
    cov = {c: nested_coverage({c: g}) for c, g in sorted(by.items())}
    cov["per regime, together"] = nested_coverage(by)
    return bands_by_class(by), cov


def render_table(rows: Sequence[Row]) -> str:
    """The generated module: the band and the held-out rows it comes from."""
    bands, cov = bands_and_coverage(rows)
    c = cov[STEP_CLASS]
    lines = ['"""Step-time interval table of `clustersim run` (simulator/report/intervals.py). GENERATED: do not edit.',
             "",
             f"Written by `python -m simulator.e2e_validation --out docs` at commit {source_commit()} from the",
             f"leave-one-source-out errors of the {len(rows)} rows of data/e2e that docs/validation-e2e.md scores.",
             "BANDS[class] = (q10, q90, sources, rows): quantiles of ln(measured step / predicted step), every",
             "source weighing the same, widened to contain 0. ROWS: (regime, source, label, log error).",
             f"Nested held-out coverage of the {LEVEL:.0%} band: {c.row_fraction:.1%} of {c.rows} rows, "
             f"{c.group_mean:.1%} averaged over {c.groups} sources.",
             '"""', "", "BANDS = {"]
    lines += [f"    {k!r}: ({b.lo!r}, {b.hi!r}, {b.groups}, {b.rows})," for k, b in bands.items()]
    lines += ["}", "", "ROWS = ("]
    lines += [f"    {r!r}," for r in rows]
    lines += [")", ""]
    return "\n".join(lines)


def render_section(rows: Sequence[Row]) -> list[str]:
    """The page's section on the interval ``clustersim run`` prints and its held-out coverage."""
    bands, cov = bands_and_coverage(rows)
    split_bands, split_cov = split_by_regime(rows)
    c, s = cov[STEP_CLASS], split_cov["per regime, together"]
    verdict = ("covers fewer held-out rows than the pooled band, so the data do not support the split and one band "
               "serves every run" if s.row_fraction < c.row_fraction else
               "covers as many held-out rows or more; the table keeps one band all the same until the multi-node "
               "rows come from more than a handful per source")
    lines = [HEADING, "",
             f"`clustersim run` prints the step time with an {LEVEL:.0%} interval, e.g. `7.09 s (6.60–7.50 s, 80%)`, "
             "and `run --json` gives it as `step_time_interval_s`. The interval is the predicted step × the 10th "
             "and 90th percentiles of ln(measured step / predicted step) over the held-out rows above, every source "
             "weighing the same and the band widened to contain the prediction (`simulator/report/intervals.py`; "
             "the table `simulator/report/step_interval_table.py` is written with this page).", "",
             "Coverage is nested, so it is not in-sample: each source's rows are checked against the band computed "
             "from the *other* sources' held-out errors. "
             f"**The {LEVEL:.0%} interval covers {c.row_fraction:.0%} of the {c.rows} held-out rows** "
             f"({c.group_mean:.0%} averaged over the {c.groups} sources: the rows of a source that share one bias "
             "fall outside the others' band together).", ""]
    lines += table_lines(bands, cov, groups="sources")
    lines += ["", f"A band per regime (one node, several nodes) {verdict}: its nested coverage is "
              f"{s.row_fraction:.0%} of the rows ({s.group_mean:.0%} averaged over the sources).", ""]
    lines += table_lines(split_bands, split_cov, groups="sources")
    return lines + [""]


def main(argv: list[str] | None = None) -> int:
    """Rewrite the table's header and the page's section from the rows the table stores."""
    argparse.ArgumentParser(prog="python -m simulator.e2e_validation.intervals", description=main.__doc__).parse_args(argv)
    from simulator.report.step_interval_table import ROWS

    rows = list(ROWS)
    TABLE.write_text(render_table(rows))
    text = DOC.read_text()
    head, sep, rest = text.partition(HEADING)
    if not sep:
        raise SystemExit(f"{DOC}: no section {HEADING!r}; run python -m simulator.e2e_validation --out docs")
    tail = rest.split("\n## ", 1)[1]
    DOC.write_text(head + "\n".join(render_section(rows)) + "\n## " + tail)
    print(f"wrote {TABLE} and {DOC}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

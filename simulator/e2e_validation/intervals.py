"""The step-time interval table of ``clustersim run`` (``simulator/report/step_interval_table.py``)
and its coverage section of docs/validation-e2e.md, both from the leave-one-source-out results.

Every row's held-out error (``predicted throughput / measured throughput - 1`` =
``measured step / predicted step - 1``) gives a log error ``ln(1 + error)``, grouped by source;
:mod:`simulator.report.intervals` turns them into the 80% band (every source weighing the same)
and its nested coverage (each source's rows against the band of the other sources).

Two splits of the pooled band are weighed by the same measure, nested coverage (each source's
rows against the band of the other sources of its class). A band per regime (one node, several
nodes: ``scenario.nodes``) covers fewer held-out rows than the pooled band, so the data do not
support it. A band per GPU generation (Blackwell, Hopper, Ampere: ``report.intervals.GENERATIONS``,
the generation whose GEMM curve and fitted derate price the run) is written into the table, beside
the pooled band, only where it covers at least as many held-out rows as the pooled band does;
``clustersim run`` then prints the band of its profile's generation (the pooled band for a GPU of
none of them). The rule was fixed before the split's coverage was computed. The table keeps every
row with its regime and generation, so the bands, the coverage and the comparisons can be
recomputed from it (tests/unit/test_intervals.py) and compared with the page;
``python -m simulator.e2e_validation.intervals`` rewrites the table's header and the page's section
from the stored rows, without simulating anything.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Callable, Sequence

from simulator.report.intervals import (LEVEL, STEP_CLASS, Band, Coverage, bands_by_class, generation_class,
                                        gpu_generation, log_error, nested_coverage, source_commit, step_regime,
                                        table_lines)

Row = tuple[str, str, str, float, str]  # (regime, source, label, log error, GPU generation or "")
TABLE = Path(__file__).resolve().parents[1] / "report" / "step_interval_table.py"
DOC = Path(__file__).resolve().parents[2] / "docs" / "validation-e2e.md"
HEADING = "## Step-time interval and its coverage"


def _generation(hardware: str) -> str:
    from simulator.config.hardware import load_profile

    return gpu_generation(load_profile(hardware).gpu.name) or ""


def regime_rows(loso: Sequence[Any]) -> list[Row]:
    """``(regime, source, label, log error, GPU generation)`` of every held-out row, in the page's order."""
    generations: dict[str, str] = {}
    out: list[Row] = []
    for r in loso:
        case = r.result.case
        hw = case.scenario["hardware"]
        if hw not in generations:
            generations[hw] = _generation(hw)
        out.append((step_regime(int(case.scenario.get("nodes", 1))), case.source, case.label,
                    round(log_error(r.result.error), 6), generations[hw]))
    return out


def _by_source(rows: Sequence[Row]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for _regime, source, _label, err, _gen in rows:
        out.setdefault(source, []).append(err)
    return out


def bands_and_coverage(rows: Sequence[Row]) -> tuple[dict[str, Band], dict[str, Coverage]]:
    """The band ``clustersim run`` uses (one class, every row) and its nested coverage."""
    by = {STEP_CLASS: _by_source(rows)}
    return bands_by_class(by), {STEP_CLASS: nested_coverage(by)}


def _split(rows: Sequence[Row], key: Callable[[Row], str], together: str) -> tuple[dict[str, Band], dict[str, Coverage]]:
    by: dict[str, dict[str, list[float]]] = {}
    for row in rows:
        by.setdefault(key(row), {}).setdefault(row[1], []).append(row[3])
    cov = {c: nested_coverage({c: g}) for c, g in sorted(by.items())}
    cov[together] = nested_coverage(by)
    return bands_by_class(by), cov


def split_by_regime(rows: Sequence[Row]) -> tuple[dict[str, Band], dict[str, Coverage]]:
    """One alternative: a band per regime, each with its nested coverage, and theirs together."""
    return _split(rows, lambda r: r[0], "per regime, together")


GENERATIONS_TOGETHER = "per generation, together"


def split_by_generation(rows: Sequence[Row]) -> tuple[dict[str, Band], dict[str, Coverage]]:
    """The other: a band per GPU generation (rows of a GPU of none in the pooled class)."""
    return _split(rows, lambda r: generation_class(r[4]) if r[4] else STEP_CLASS, GENERATIONS_TOGETHER)


def _generations_hold(cov: dict[str, Coverage], gen_cov: dict[str, Coverage]) -> bool:
    return gen_cov[GENERATIONS_TOGETHER].covered_rows >= cov[STEP_CLASS].covered_rows


def _held_bands(bands: dict[str, Band], cov: dict[str, Coverage], gen_bands: dict[str, Band],
                gen_cov: dict[str, Coverage]) -> dict[str, Band]:
    """The pooled band, and the generations' where they hold (module docstring)."""
    if not _generations_hold(cov, gen_cov):
        return bands
    return bands | {k: b for k, b in gen_bands.items() if k != STEP_CLASS}


def generation_bands_hold(rows: Sequence[Row]) -> bool:
    """Whether the per-generation bands cover at least as many held-out rows as the pooled band
    (module docstring): then the table holds them and ``run`` prints its generation's."""
    return _generations_hold(bands_and_coverage(rows)[1], split_by_generation(rows)[1])


def table_bands(rows: Sequence[Row]) -> dict[str, Band]:
    """The bands the table holds: the pooled one, and the generations' where they hold."""
    return _held_bands(*bands_and_coverage(rows), *split_by_generation(rows))


def render_table(rows: Sequence[Row]) -> str:
    """The generated module: the band and the held-out rows it comes from."""
    pooled, cov = bands_and_coverage(rows)
    gen_bands, gen_cov = split_by_generation(rows)
    bands = _held_bands(pooled, cov, gen_bands, gen_cov)
    c, g = cov[STEP_CLASS], gen_cov[GENERATIONS_TOGETHER]
    lines = ['"""Step-time interval table of `clustersim run` (simulator/report/intervals.py). GENERATED: do not edit.',
             "",
             f"Written by `python -m simulator.e2e_validation --out docs` at commit {source_commit()} from the",
             f"leave-one-source-out errors of the {len(rows)} rows of data/e2e that docs/validation-e2e.md scores.",
             "BANDS[class] = (q10, q90, sources, rows): quantiles of ln(measured step / predicted step), every",
             "source weighing the same, widened to contain 0; the pooled class, and one per GPU generation where",
             "those cover at least as many held-out rows (simulator/e2e_validation/intervals.py).",
             "ROWS: (regime, source, label, log error, GPU generation).",
             f"Nested held-out coverage of the {LEVEL:.0%} band: pooled {c.row_fraction:.1%} of {c.rows} rows, "
             f"{c.group_mean:.1%} averaged over {c.groups} sources; per generation {g.row_fraction:.1%}, {g.group_mean:.1%}.",
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
    gen_bands, gen_cov = split_by_generation(rows)
    c, s, g = cov[STEP_CLASS], split_cov["per regime, together"], gen_cov[GENERATIONS_TOGETHER]
    gen_verdict = ("covers at least as many held-out rows as the pooled band, so the table holds these bands and "
                   "`clustersim run` prints the band of its profile's GPU generation (the pooled band for a GPU of "
                   "none of them)" if _generations_hold(cov, gen_cov) else
                   "covers fewer held-out rows than the pooled band, so the table holds the pooled band alone")
    verdict = ("covers fewer held-out rows than the pooled band, so the data do not support the split and one band "
               "serves every run" if s.row_fraction < c.row_fraction else
               "covers as many held-out rows or more; the table keeps one band all the same until the multi-node "
               "rows come from more than a handful per source")
    lines = [HEADING, "",
             f"`clustersim run` prints the step time with an {LEVEL:.0%} interval, e.g. `7.09 s (6.60–7.50 s, 80%)`, "
             "and `run --json` gives it as `step_time_interval_s`. The interval is the predicted step × the 10th "
             "and 90th percentiles of ln(measured step / predicted step) over the held-out rows above (those of "
             "the run's GPU generation where the table holds a band per generation: the last table below), every "
             "source weighing the same and the band widened to contain the prediction "
             "(`simulator/report/intervals.py`; the table `simulator/report/step_interval_table.py` is written with "
             "this page).", "",
             "Coverage is nested, so it is not in-sample: each source's rows are checked against the band computed "
             "from the *other* sources' held-out errors. "
             f"**The {LEVEL:.0%} interval covers {c.row_fraction:.0%} of the {c.rows} held-out rows** "
             f"({c.group_mean:.0%} averaged over the {c.groups} sources: the rows of a source that share one bias "
             "fall outside the others' band together).", ""]
    lines += table_lines(bands, cov, groups="sources")
    lines += ["", f"A band per regime (one node, several nodes) {verdict}: its nested coverage is "
              f"{s.row_fraction:.0%} of the rows ({s.group_mean:.0%} averaged over the sources).", ""]
    lines += table_lines(split_bands, split_cov, groups="sources")
    lines += ["", f"A band per GPU generation (the generation whose GEMM curve and fitted derate price the run) "
              f"{gen_verdict}: its nested coverage is {g.row_fraction:.0%} of the rows ({g.group_mean:.0%} averaged "
              "over the sources; a source whose rows span generations counts once in each).", ""]
    lines += table_lines(gen_bands, gen_cov, groups="sources")
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

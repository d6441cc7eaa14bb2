"""The findings appended to docs/validation-e2e.md carry, under each section about given sources,
those sources' current held-out figures (report.render_findings), so that the figures a section
quotes from the day its change was made are not read as today's."""

from __future__ import annotations

from simulator.e2e_validation.findings import FINDINGS, SECTION_SOURCES
from simulator.e2e_validation.loso import LosoResult, Refit
from simulator.e2e_validation.report import render_findings
from simulator.e2e_validation.scenarios import Case
from simulator.e2e_validation.scoring import Result
from simulator.e2e_validation.sources import SOURCES


def _held_out(source: str, errors: list[float]) -> list[LosoResult]:
    out = []
    for i, e in enumerate(errors):
        case = Case(source=source, label=f"{source} row {i}", scenario={}, metric="step_time_s",
                    measured=1.0, n_gpus=8)
        out.append(LosoResult(Result(case, 1.0 / (1 + e), 1.0 / (1 + e), e, 0.5, 0.0), e,
                              Refit("dgx-h100", 1.0, 0, "committed")))
    return out


def test_every_mapped_section_is_a_heading_and_every_source_exists():
    headings = {line[3:] for line in FINDINGS.split("\n") if line.startswith("## ")}
    keys = {s.key for s in SOURCES}
    assert SECTION_SOURCES and set(SECTION_SOURCES) <= headings
    for section, sources in SECTION_SOURCES.items():
        assert sources and set(sources) <= keys, section


def test_the_current_figures_follow_the_heading():
    # nemo2407: errors -0.10, -0.12, +0.02 -> median |error| 10.0%, signed median -10.0%
    loso = _held_out("nemo2407", [-0.10, -0.12, 0.02]) + _held_out("mpt", [0.30])
    text = render_findings(loso)
    lines = text.split("\n")
    at = lines.index("## NeMo 24.07 FP8 pre-training on H100 (held out)")
    assert lines[at + 1] == ""
    assert lines[at + 2] == "*Now, held out (the tables above): `nemo2407` 3 rows, median |error| 10.0%, signed -10.0%.*"
    # a section naming two sources prints the ones this run scored, and only those
    at = lines.index("## What sets the H100 GEMM derate: the five fitting rows, row by row")
    assert lines[at + 2] == "*Now, held out (the tables above): `mpt` 1 row, median |error| 30.0%, signed +30.0%.*"
    # a section whose sources were not run keeps its text as written
    at = lines.index("## Megatron-Turing NLG 530B on 2,240-3,360 A100 (arXiv:2201.11990 sec. 2.4, held out)")
    assert not lines[at + 2].startswith("*Now")
    # nothing else of the text changes: without the inserted lines (and the blank before each) it is FINDINGS
    kept: list[str] = []
    for x in lines:
        if x.startswith("*Now, held out"):
            assert kept.pop() == ""
            continue
        kept.append(x)
    assert "\n".join(kept) == FINDINGS

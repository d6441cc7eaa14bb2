"""Prediction intervals (simulator/report/intervals.py): the quantile and coverage machinery on
data with a known answer, the generated tables against the data and the validation pages, and
what `collective` and `run` print and write."""

from __future__ import annotations

import json
import math
import random
import re
from pathlib import Path

import pytest

from simulator.cli import main
from simulator.report import intervals as iv

ROOT = Path(__file__).resolve().parents[2]
# Nested leave-one-out coverage of the stored tables must lie within this many points of the
# nominal 80%: with 4-10 systems (11 sources) per class a held-out group is often an extrapolation,
# so the figure is noisy; docs/validation-*.md report the exact values.
COVERAGE_TOLERANCE = 0.15


def test_group_quantiles_weigh_every_group_once():
    # group a: one value (weight 1); group b: four values (1/4 each); total weight 2
    groups = {"a": [0.0], "b": [1.0, 2.0, 3.0, 4.0]}
    assert iv.group_quantiles(groups, (0.1, 0.5, 0.6, 0.9)) == (0.0, 0.0, 1.0, 4.0)
    assert iv.group_quantiles({"x": [float(i) for i in range(10)]}, (0.1, 0.9)) == (0.0, 8.0)


def test_band_contains_the_point_prediction_when_all_errors_lie_on_one_side():
    b = iv.band({"a": [0.1, 0.2, 0.3], "b": [0.4]})
    assert b.lo == 0.0 and b.hi > 0
    lo, hi = b.around(2.0)
    assert lo == 2.0 < hi


def test_nested_coverage_is_nominal_when_groups_are_alike():
    """Exchangeable groups (every system's errors from the same distribution): a band from the
    other groups covers 80% of a held-out group's values, up to sampling noise."""
    rng = random.Random(7)
    groups = {f"s{i}": [rng.gauss(0.0, 0.2) for _ in range(40)] for i in range(30)}
    cov = iv.nested_coverage({"c": groups})
    assert cov.rows == 1200 and cov.groups == 30
    assert cov.row_fraction == pytest.approx(iv.LEVEL, abs=0.03)


def test_nested_coverage_falls_when_groups_differ():
    """Groups with their own bias: a held-out group is an extrapolation and coverage drops below
    nominal, which the stored tables report rather than hide."""
    rng = random.Random(3)
    # four systems at -0.45, -0.15, +0.15, +0.45 with little spread: held out, the two outer ones
    # lie beyond the others' band, the two inner ones inside it
    groups = {f"s{i}": [0.3 * (i - 1.5) + rng.gauss(0.0, 0.02) for _ in range(20)] for i in range(4)}
    cov = iv.nested_coverage({"c": groups})
    assert cov.row_fraction == 0.5 and cov.group_mean == 0.5


def test_fmt_interval():
    assert iv.fmt_interval(7.09, 6.6, 7.5) == "7.09 s (6.60–7.50 s, 80%)"
    assert iv.fmt_interval(0.348, 0.318, 0.38) == "348 ms (318–380 ms, 80%)"


def test_collective_table_is_consistent():
    from simulator.report.collective_interval_table import BANDS, COVERAGE

    classes = {iv.collective_class(m, s) for m in (False, True) for s in (8, 1 << 17, 1 << 30)}
    assert set(BANDS) == classes
    for lo, hi, systems, rows in BANDS.values():
        assert lo <= 0.0 <= hi and lo < hi and systems >= 3 and rows > 0
    rows, covered, systems, mean = COVERAGE["all rows"]
    assert rows == sum(b[3] for b in BANDS.values())
    assert abs(covered / rows - iv.LEVEL) <= COVERAGE_TOLERANCE
    assert abs(mean - iv.LEVEL) <= COVERAGE_TOLERANCE


def _doc_table(path: Path, heading: str) -> dict[str, list[str]]:
    text = path.read_text()
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    out = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and len(cells) == 6 and cells[0] not in ("class",):
            out[cells[0]] = cells
    return out


def test_collective_doc_shows_the_stored_bands_and_coverage():
    from simulator.report.collective_interval_table import BANDS, COVERAGE

    doc = _doc_table(ROOT / "docs" / "validation-collectives.md", "## Prediction intervals and their coverage")
    assert set(doc) == set(BANDS) | {"all rows"}
    for c, (lo, hi, systems, rows) in BANDS.items():
        assert doc[c][1:4] == [str(systems), str(rows), f"×{math.exp(lo):.2f} – ×{math.exp(hi):.2f}"]
    for c, (rows, covered, systems, mean) in COVERAGE.items():
        assert doc[c][4] == f"{covered / rows:.0%} of {rows}" and doc[c][5] == f"{mean:.0%} of {systems}"


def test_step_table_is_recomputed_from_its_rows():
    from simulator.e2e_validation.intervals import (bands_and_coverage, generation_bands_hold, split_by_generation,
                                                    split_by_regime, table_bands)
    from simulator.report.step_interval_table import BANDS, ROWS

    bands, cov = bands_and_coverage(ROWS)
    assert {c: (b.lo, b.hi, b.groups, b.rows) for c, b in table_bands(ROWS).items()} == BANDS
    # the generations' bands are in the table exactly when they cover as many held-out rows as the pooled one
    gen_bands, gen_cov = split_by_generation(ROWS)
    holds = gen_cov["per generation, together"].covered_rows >= cov[iv.STEP_CLASS].covered_rows
    assert generation_bands_hold(ROWS) is holds
    assert set(BANDS) == {iv.STEP_CLASS} | ({k for k in gen_bands if k != iv.STEP_CLASS} if holds else set())
    assert {r[4] for r in ROWS} == {"Ampere", "Hopper", "Blackwell"}
    lo, hi, sources, rows = BANDS[iv.STEP_CLASS]
    assert lo <= 0.0 <= hi and lo < hi and rows == len(ROWS) and sources == len({r[1] for r in ROWS})
    overall = cov[iv.STEP_CLASS]
    assert overall.rows == len(ROWS)
    assert abs(overall.row_fraction - iv.LEVEL) <= COVERAGE_TOLERANCE
    assert abs(overall.group_mean - iv.LEVEL) <= COVERAGE_TOLERANCE
    doc = _doc_table(ROOT / "docs" / "validation-e2e.md", "## Step-time interval and its coverage")
    split_bands, split_cov = split_by_regime(ROWS)
    for c, v in (cov | split_cov | gen_cov).items():
        assert doc[c][4] == f"{v.row_fraction:.0%} of {v.rows}" and doc[c][5] == f"{v.group_mean:.0%} of {v.groups}"
    assert doc[iv.STEP_CLASS][3] == f"×{math.exp(lo):.2f} – ×{math.exp(hi):.2f}"


def test_step_table_rows_are_the_held_out_errors_of_the_page():
    """Each stored row is the held-out error docs/validation-e2e.md prints for it (0.1% rounding)."""
    from simulator.e2e_validation.sources import SOURCES
    from simulator.report.step_interval_table import ROWS

    text = (ROOT / "docs" / "validation-e2e.md").read_text()
    for s in SOURCES:
        mine = [r for r in ROWS if r[1] == s.key]
        if not mine:
            continue
        section = text.split(f"\n## {s.title}\n", 1)[1].split("\n## ", 1)[0]
        printed = [line.split("|")[6].strip() for line in section.splitlines()
                   if line.startswith("| ") and not line.startswith(("| configuration", "|---"))]
        assert len(printed) == len(mine), s.key
        for (_regime, _src, label, err, _generation), cell in zip(mine, printed):
            # the page rounds the error of the printed step times, the table stores ln(meas/pred) to
            # 6 decimals: equal within the page's 0.05-point rounding (a tie may round either way)
            assert abs(100 * math.expm1(err) - float(cell.rstrip("%"))) <= 0.05 + 1e-3, (s.key, label, cell)


def test_collective_prints_and_writes_the_interval(tmp_path, capsys):
    from simulator.report.collective_interval_table import BANDS

    out = tmp_path / "c.json"
    assert main(["collective", "--hardware", "dgx-h100", "--op", "allreduce", "--ranks", "16", "--min-bytes", "8K",
                 "--max-bytes", "64M", "-f", "8", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "80% interval of busbw" in text
    rows = [line.split() for line in text.splitlines() if line and not line.startswith("#")]
    doc = json.loads(out.read_text())
    assert doc["interval_level"] == 0.8
    for cells, r in zip(rows, doc["rows"]):
        lo, hi = (float(x) for x in cells[7].split("-"))
        assert lo <= float(cells[5]) <= hi and lo < hi
        t_lo, t_hi = r["time_interval_us"]
        assert t_lo <= r["time_us"] <= t_hi and t_lo < t_hi
        b_lo, b_hi, _, _ = BANDS[iv.collective_class(True, r["size_bytes"])]
        assert (t_lo, t_hi) == pytest.approx((r["time_us"] * math.exp(b_lo), r["time_us"] * math.exp(b_hi)))
        # busbw ∝ 1/time: the busbw interval is the time interval's reciprocal
        assert r["busbw_interval_GBps"] == pytest.approx([r["busbw_GBps"] * r["time_us"] / t_hi,
                                                          r["busbw_GBps"] * r["time_us"] / t_lo])
        assert "leave-one-system-out" in r["interval_basis"]


def test_run_prints_and_writes_the_step_interval(tmp_path, capsys):
    from simulator.report.step_interval_table import BANDS

    out = tmp_path / "r.json"
    assert main(["run", str(ROOT / "scenarios" / "quickstart.yaml"), "--json", str(out)]) == 0
    text = capsys.readouterr().out
    doc = json.loads(out.read_text())
    lo, hi = doc["step_time_interval_s"]
    step = doc["step_time_s"]
    assert lo <= step <= hi and lo < hi
    # the band of the profile's GPU generation where the table holds one (dgx-h100: Hopper), else the pooled one
    band, basis = iv.step_band("H100-SXM5-80GB")
    assert ("Hopper GPUs" in BANDS) == ("on Hopper GPUs" in basis)
    assert (lo, hi) == pytest.approx((step * math.exp(band.lo), step * math.exp(band.hi)))
    assert doc["step_time_interval"]["level"] == 0.8 and doc["step_time_interval"]["basis"] == basis
    assert "leave-one-source-out" in basis
    line = next(x for x in text.splitlines() if x.strip().startswith("step time"))
    assert re.search(r"= [0-9.]+ m?s \([0-9.]+–[0-9.]+ m?s, 80%\)$", line), line


def test_gpu_generations_by_profile_name():
    """The generation of each bundled profile's GPU (report/intervals.py GENERATIONS); the AMD GPUs
    belong to none and take the pooled band."""
    from simulator.config.hardware import load_profile

    names = {p: load_profile(p).gpu.name for p in ("dgx-a100", "dgx-a800", "dgx-h100", "dgx-h200", "gh200-alps",
                                                   "dgx-b200", "dgx-b300", "gb200-nvl72", "gb300-nvl72", "mi300x",
                                                   "mi355x")}
    assert {p: iv.gpu_generation(n) for p, n in names.items()} == {
        "dgx-a100": "Ampere", "dgx-a800": "Ampere", "dgx-h100": "Hopper", "dgx-h200": "Hopper", "gh200-alps": "Hopper",
        "dgx-b200": "Blackwell", "dgx-b300": "Blackwell", "gb200-nvl72": "Blackwell", "gb300-nvl72": "Blackwell",
        "mi300x": None, "mi355x": None}


def test_step_band_is_the_generations_where_the_table_holds_one(monkeypatch):
    """``step_band(gpu)``: the band of the GPU's generation where the table holds one (its basis
    names the generation), else the pooled band; no GPU given, the pooled band."""
    from simulator.report import step_interval_table

    pooled = (-0.1, 0.12, 47, 637)
    monkeypatch.setattr(step_interval_table, "BANDS", {iv.STEP_CLASS: pooled, "Blackwell GPUs": (-0.24, 0.12, 11, 91)})
    band, basis = iv.step_band("GB300-279GB")
    assert (band.lo, band.hi) == (-0.24, 0.12) and basis.endswith("91 published runs on Blackwell GPUs from 11 sources")
    for gpu in ("H100-SXM5-80GB", "MI300X-OAM-192GB", None):
        band, basis = iv.step_band(gpu)
        assert (band.lo, band.hi) == pooled[:2] and basis.endswith("637 published runs from 47 sources")


def test_calibrated_profile_carries_its_residual_band(tmp_path, capsys):
    """`calibrate` records the 80% band of its fit's residuals per class; `collective` uses it
    for the classes the fit saw (one node here) and the leave-one-system-out band elsewhere."""
    import numpy as np

    from simulator.calibration.fit import busbw_errors, from_sweep
    from simulator.calibration.nccl_log import parse_nccl_log
    from simulator.config.hardware import load_profile
    from simulator.report.collective_interval_table import BANDS

    log = ROOT / "tests" / "fixtures" / "nccl_logs" / "h100x8_allgather_1node_full_ringalgo.txt"
    overlay = tmp_path / "cal.yaml"
    assert main(["calibrate", str(log), "--hardware", "dgx-h100", "-o", str(overlay)]) == 0
    capsys.readouterr()
    cal = load_profile(str(overlay))
    res = cal.uncertainty.busbw_log_residual
    assert set(res) <= {f"allgather, {c}" for c in BANDS if c.startswith("one node")} and res
    assert cal.uncertainty.fitted_ranks == {"one node": [8, 8]}  # the log's one 8-GPU communicator
    m = from_sweep(parse_nccl_log(log)[0], load_profile("dgx-h100"), algo="ring")
    logs = np.log1p(busbw_errors(cal, m))
    big = [x for s, x in zip(m.sizes, logs) if s >= 1 << 20]
    lo, hi = res["allgather, one node, >= 1 MiB"]
    assert lo <= 0 <= hi
    # 80% of one sweep's rows lie inside its own band (inverse-CDF quantiles: at least 80%)
    assert sum(lo - 1e-6 <= x <= hi + 1e-6 for x in big) >= 0.8 * len(big) - 1
    out = tmp_path / "c.json"
    assert main(["collective", "--hardware", str(overlay), "--op", "allgather", "--ranks", "16",
                 "--min-bytes", "1G", "--max-bytes", "1G", "--gpus-per-node", "8", "--json", str(out)]) == 0
    across = json.loads(out.read_text())["rows"][0]
    assert "leave-one-system-out" in across["interval_basis"]  # the fit saw one node only
    assert main(["collective", "--hardware", str(overlay), "--op", "allgather", "--ranks", "8",
                 "--min-bytes", "1G", "--max-bytes", "1G", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    one = json.loads(out.read_text())["rows"][0]
    assert "calibration fit" in one["interval_basis"] and "residuals of this profile's calibration fit" in text
    assert one["time_interval_us"] == pytest.approx([one["time_us"] * math.exp(min(lo, 0)),
                                                     one["time_us"] * math.exp(max(hi, 0))], rel=1e-5)
    # a collective the fit never measured keeps the leave-one-system-out band, on the same node
    assert main(["collective", "--hardware", str(overlay), "--op", "alltoall", "--ranks", "8",
                 "--min-bytes", "1G", "--max-bytes", "1G", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    other = json.loads(out.read_text())["rows"][0]
    assert "leave-one-system-out" in other["interval_basis"] and "measured no alltoall" in text
    b_lo, b_hi, _, _ = BANDS["one node, >= 1 MiB"]
    assert other["time_interval_us"] == pytest.approx([other["time_us"] * math.exp(b_lo),
                                                       other["time_us"] * math.exp(b_hi)], rel=1e-5)
    # a communicator the fit did not measure (4 of the 8 GPUs): the wider of the two bands, said so
    assert main(["collective", "--hardware", str(overlay), "--op", "allgather", "--ranks", "4",
                 "--min-bytes", "1G", "--max-bytes", "1G", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    four = json.loads(out.read_text())["rows"][0]
    assert four["interval_basis"].startswith("wider of") and "outside the 8 ranks" in four["interval_basis"]
    assert "4 ranks is outside the 8 ranks the calibration fit measured one node" in text
    assert four["time_interval_us"] == pytest.approx([four["time_us"] * math.exp(min(lo, b_lo)),
                                                      four["time_us"] * math.exp(max(hi, b_hi))], rel=1e-5)


def test_beyond_the_fitted_scale_the_band_is_the_wider_of_the_two():
    """A calibrated profile's residual band holds at the communicator sizes its fit measured;
    beyond them (larger, or smaller) the interval is the union of the residual band and the
    leave-one-system-out band of the class, so it never narrows with distance from the data.
    Overlays without `fitted_ranks` keep the residual band at every scale."""
    from simulator.report.collective_interval_table import BANDS

    cls = "across nodes, >= 1 MiB"
    t_lo, t_hi, systems, _ = BANDS[cls]
    res = {f"allreduce, {cls}": [-0.02, 0.03]}
    ranges = {"one node": [8, 8], "across nodes": [16, 32]}
    for ranks in (16, 24, 32):
        band, basis = iv.collective_band(True, 1 << 30, res, "allreduce", ranks, ranges)
        assert (band.lo, band.hi) == (-0.02, 0.03) and basis == f"residuals of the calibration fit, allreduce, {cls}"
    for ranks in (8, 64, 1024):
        band, basis = iv.collective_band(True, 1 << 30, res, "allreduce", ranks, ranges)
        assert (band.lo, band.hi) == (min(-0.02, t_lo), max(0.03, t_hi)) and band.groups == systems
        assert basis.startswith("wider of") and f"{ranks} ranks is outside the 16-32 ranks" in basis
    # the wider of the two, side by side: a residual band wider than the table's on one side keeps it
    wide = {f"allreduce, {cls}": [t_lo - 0.5, 0.0]}
    band, _ = iv.collective_band(True, 1 << 30, wide, "allreduce", 64, ranges)
    assert (band.lo, band.hi) == (t_lo - 0.5, t_hi)
    # a scope the fit measured no communicator of (a legacy key without a collective, here)
    band, basis = iv.collective_band(True, 1 << 30, {cls: [-0.01, 0.01]}, "alltoall", 16, {"one node": [8, 8]})
    assert (band.lo, band.hi) == (t_lo, t_hi) and "measured no communicator across nodes" in basis
    # no range recorded (an overlay written before fitted_ranks): the residual band at any scale
    assert iv.collective_band(True, 1 << 30, res, "allreduce", 1024, None)[0].lo == -0.02
    # a class the fit had no rows of stays the leave-one-system-out band whatever the scale
    band, basis = iv.collective_band(True, 1 << 30, res, "allgather", 64, ranges)
    assert (band.lo, band.hi) == (t_lo, t_hi) and basis.startswith("leave-one-system-out")


def test_collective_says_which_band_beyond_the_fitted_scale(tmp_path, capsys):
    """`collective` on an overlay whose fit measured 16-32 ranks across nodes: at 16 ranks the
    residual band, at 64 the wider band, with the header saying why."""
    from simulator.report.collective_interval_table import BANDS

    cls = "across nodes, >= 1 MiB"
    overlay = tmp_path / "cal.yaml"
    overlay.write_text("base: dgx-h100\nuncertainty:\n  busbw_log_residual:\n"
                       f"    'allreduce, {cls}': [-0.02, 0.03]\n"
                       "  fitted_ranks:\n    'across nodes': [16, 32]\n")
    out = tmp_path / "c.json"
    rows = {}
    for ranks in (16, 64):
        assert main(["collective", "--hardware", str(overlay), "--op", "allreduce", "--ranks", str(ranks),
                     "--min-bytes", "1G", "--max-bytes", "1G", "--json", str(out)]) == 0
        rows[ranks] = (capsys.readouterr().out, json.loads(out.read_text())["rows"][0])
    text, row = rows[16]
    assert "the residuals of this profile's calibration fit" in text and "wider" not in text
    assert row["time_interval_us"] == pytest.approx([row["time_us"] * math.exp(-0.02),
                                                     row["time_us"] * math.exp(0.03)], rel=1e-6)
    text, row = rows[64]
    header = next(line for line in text.splitlines() if line.startswith("# 80% interval"))
    assert "wider of this profile's calibration residuals and the leave-one-system-out" in header
    assert "64 ranks is outside the 16-32 ranks the calibration fit measured across nodes" in header
    t_lo, t_hi, _, _ = BANDS[cls]
    assert row["time_interval_us"] == pytest.approx([row["time_us"] * math.exp(min(-0.02, t_lo)),
                                                     row["time_us"] * math.exp(max(0.03, t_hi))], rel=1e-6)


@pytest.mark.parametrize("value,expected", [
    ("{'across nodes': [sixteen, 32]}", "uncertainty.fitted_ranks.across nodes[0]: Input should be a valid integer"),
    ("{'across nodes': 16}", "uncertainty.fitted_ranks.across nodes: Input should be a valid list"),
    ("{'across nodes': [32, 16]}", "1 <= smallest <= largest"),
    ("{'across the network': [16, 32]}", "expected a scope, one of one node, across nodes"),
])
def test_fitted_ranks_is_validated(tmp_path, capsys, value, expected):
    """A malformed `uncertainty.fitted_ranks` is an input error naming the field: exit 2."""
    overlay = tmp_path / "bad.yaml"
    overlay.write_text(f"base: dgx-h100\nuncertainty:\n  fitted_ranks: {value}\n")
    rc = main(["collective", "--hardware", str(overlay), "--op", "allreduce", "--ranks", "16"])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "Traceback" not in err and str(overlay) in err and expected in err, err
    assert "fitted_ranks" in err


def test_residual_classes_name_the_collective():
    """Residual bands are keyed per collective; keys of overlays written before (no collective)
    still read, for every collective; a key naming no collective class is refused."""
    from simulator.config.hardware import Uncertainty
    from simulator.report.intervals import collective_band

    res = {"allreduce, across nodes, >= 1 MiB": [-0.1, 0.05]}
    band, basis = collective_band(True, 1 << 30, res, "allreduce")
    assert (band.lo, band.hi) == (-0.1, 0.05) and "calibration fit" in basis
    assert "leave-one-system-out" in collective_band(True, 1 << 30, res, "allgather")[1]
    assert "leave-one-system-out" in collective_band(False, 1 << 30, res, "allreduce")[1]
    legacy = {"across nodes, >= 1 MiB": [-0.2, 0.1]}
    assert collective_band(True, 1 << 30, legacy, "alltoall")[0].lo == -0.2
    Uncertainty(busbw_log_residual=res | legacy)
    with pytest.raises(ValueError, match="collective"):
        Uncertainty(busbw_log_residual={"allscatter, across nodes, >= 1 MiB": [-0.1, 0.1]})


def test_sweep_plans_carry_the_step_interval():
    """`sweep --json` / `compare --json`: every simulated plan has the interval `run` prints."""
    from types import SimpleNamespace

    from simulator.config.scenario import build_scenario
    from simulator.report.step_interval_table import BANDS
    from simulator.report.summary import Breakdown, Report
    from simulator.sweep.plans import enumerate_plans
    from simulator.sweep.run import run_plans, sweep_json

    scn = build_scenario(dict(name="tiny", hardware="dgx-h100", nodes=1,
                              model=dict(layers=2, hidden=1024, heads=8, vocab=32000, seq_len=1024),
                              training=dict(micro_batch=1, global_batch=8)))

    def stand_in(s):
        step = 1.0 + s.parallel.tp
        return SimpleNamespace(report=Report(scenario="tiny", step_time_s=step, tokens_per_s=1.0 / step, mfu=0.1,
                                             breakdown_s=Breakdown(step, {}, 0.0), comm_bytes_per_gpu={},
                                             memory_gib_per_gpu={}, fits_in_memory=True, sim={}))

    result = run_plans(scn, enumerate_plans(scn)[:6], stand_in, prune=False)
    # a report made without an interval (this stand-in) takes the pooled band; one with its own keeps it
    carried = next(p for p in result.plans if p.simulated)
    assert carried.report is not None
    carried.report.step_time_interval_s = (0.5, 7.0)
    doc = sweep_json(result)
    assert next(p for p in doc["plans"] if p["label"] == carried.label)["step_time_interval_s"] == [0.5, 7.0]
    # resumed from a results file, the plan keeps the interval its line was written with
    from dataclasses import replace

    from simulator.sweep.run import apply_line, result_line

    resumed = replace(carried, report=None)
    apply_line(resumed, result_line(carried, {}), "tiny")
    assert resumed.report is not None and resumed.report.step_time_interval_s == (0.5, 7.0)
    carried.report.step_time_interval_s = None
    doc = sweep_json(result)
    lo_f, hi_f = (math.exp(x) for x in BANDS[iv.STEP_CLASS][:2])
    ran = [p for p in doc["plans"] if p["simulated"]]
    assert ran
    for p in doc["plans"]:
        if p["simulated"]:
            assert p["step_time_interval_s"] == pytest.approx([p["step_time_s"] * lo_f, p["step_time_s"] * hi_f])
        else:
            assert p["step_time_interval_s"] is None


def test_fit_residuals_record_the_communicators_per_scope():
    """`uncertainty.fitted_ranks` is the smallest and largest communicator of the measured sweeps
    in each scope: an 8-GPU node and 16- and 32-GPU sweeps across nodes of ABCI's A100s."""
    from simulator.calibration.collective_intervals import fit_residuals
    from simulator.calibration.fit import from_sweep
    from simulator.calibration.nccl_log import parse_nccl_log
    from simulator.config.hardware import Uncertainty, load_profile

    profile = load_profile("abci-a100")
    logs = ROOT / "tests" / "fixtures" / "nccl_logs"
    ms = [from_sweep(parse_nccl_log(logs / name)[0], profile)
          for name in ("a100x8_allreduce_1node_abci.txt", "a100x16_allreduce_2node_abci.txt",
                       "a100x32_allreduce_4node_abci.txt")]
    assert [m.ranks for m in ms] == [8, 16, 32]
    block = fit_residuals(profile, ms)
    assert block["fitted_ranks"] == {"one node": [8, 8], "across nodes": [16, 32]}
    Uncertainty(**block)  # what calibrate writes, the profile loader reads

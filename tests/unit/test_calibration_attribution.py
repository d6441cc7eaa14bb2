"""Attributing a held-out split's change to the fitted keys (cross_validation.key_effects): the
tool that names which key a calibration moved in a way that does not carry over."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from simulator.calibration.cross_validation import key_effects, row_comparison, self_fit, split_sets
from simulator.calibration.fit import MeasuredCollective, Param, Predictor, busbw_errors, overlay_of
from simulator.config.hardware import apply_overlay, load_profile
from simulator.errors import InputError
from simulator.units import MiB

EFF = Param("node.scale_up.efficiency")
SIZES = tuple(2**k for k in range(26, 33))  # 64 MiB .. 4 GiB: the bandwidth regime, only the link's fraction


def _sweep(profile, eff: float, ranks: int = 8) -> MeasuredCollective:
    truth = apply_overlay(profile, overlay_of({EFF: eff}))
    shell = MeasuredCollective("synthetic", "allgather", ranks, 1, ranks, SIZES, tuple(1.0 for _ in SIZES),
                               algo="ring")
    return replace(shell, times_s=tuple(float(t) for t in Predictor(truth).times(shell)))


def test_a_key_fitted_on_rows_that_do_not_carry_over_is_named():
    """Train rows run the NVLink at 0.55 of its rate, the held-out rows at 0.70 (both below the
    per-channel cap, so time ∝ 1/efficiency at these sizes): the fitted 0.55 predicts the held-out
    rows 1 - 0.55/0.70 = 21.4% off (busbw, closed form), and without it they keep the uncalibrated
    profile's error."""
    profile = load_profile("dgx-h100")
    train, test = [_sweep(profile, 0.55)], [_sweep(profile, 0.70)]
    effects = {e.path: e for e in key_effects(profile, train, test)}
    e = effects[EFF.path]
    assert e.value == pytest.approx(0.55, rel=0.01)
    assert e.with_all == pytest.approx(1 - 0.55 / 0.70, abs=0.01)
    assert e.alone == pytest.approx(e.with_all, abs=0.005)
    before = float(np.median(np.abs(busbw_errors(profile, test[0]))))
    assert e.without == pytest.approx(before, abs=0.005) and before < e.with_all - 0.05
    assert e.harms


def test_split_sets_follow_the_report_names():
    ms = [MeasuredCollective("a", op, r, r // 4, 4, (MiB,), (1e-3,)) for op in ("allreduce", "alltoall")
          for r in (8, 16, 64)]
    train, test = split_sets(ms, "leave out alltoall")
    assert {m.op for m in train} == {"allreduce"} and {m.op for m in test} == {"alltoall"}
    train, test = split_sets(ms, "scale: fit ≤ 32 GPUs, predict 64")
    assert {m.ranks for m in train} == {8, 16} and {m.ranks for m in test} == {64}
    with pytest.raises(InputError):
        split_sets(ms, "sizes (fit even, predict odd)")


def test_row_comparison_prints_each_predicted_row_before_and_after():
    """The same synthetic split row by row: before calibration each held-out row has the datasheet
    profile's error; after it the fitted 0.55 predicts the held-out bytes 0.55/0.70 as fast as the
    0.70 that timed them, so busbw is 1 - 0.55/0.70 = 21.4% low where the bytes dominate (>= 1 GiB;
    below, the latency both share dilutes it), on the algorithm the measurement pinned."""
    profile = load_profile("dgx-h100")
    train, test = [_sweep(profile, 0.55)], [_sweep(profile, 0.70)]
    rows = row_comparison(profile, train, test)
    assert [r.size for r in rows] == list(SIZES)
    assert [r.before_error for r in rows] == pytest.approx(list(busbw_errors(profile, test[0])), abs=1e-9)
    large = [r.after_error for r in rows if r.size >= 1 << 30]
    assert large == pytest.approx([-(1 - 0.55 / 0.70)] * len(large), abs=0.003)
    after = [r.after_error for r in rows]
    assert all(a > b for a, b in zip(after, after[1:]))  # the latency's share falls with the size
    assert {r.after[0] for r in rows} == {"ring"}


def test_self_fit_separates_carry_over_from_what_no_calibration_reaches():
    """Held-out rows at 0.70 of the NVLink, training rows at 0.55: fitted on the training rows the
    held-out busbw is 1 - 0.55/0.70 = 21.4% low, fitted on themselves the link's fraction is
    recovered and the error vanishes, so the whole gap is carry-over."""
    profile = load_profile("dgx-h100")
    r = self_fit(profile, [_sweep(profile, 0.55)], [_sweep(profile, 0.70)])
    assert r.held_out == pytest.approx(1 - 0.55 / 0.70, abs=0.01)
    assert r.own is not None and r.own < 0.005
    assert r.gap == pytest.approx(r.held_out - r.own)
    assert any(f.startswith(EFF.path + "=0.7") for f in r.fitted)


def test_self_fit_of_two_sweeps_that_disagree_stays_above_their_disagreement():
    """Two sweeps of one configuration, one at 0.55 of the NVLink and one at 0.70 (as two runs of
    one cluster under different releases can be): one profile times both alike, so with a fraction
    e in [0.55, 0.70] half the rows are e/0.55 - 1 fast and half 1 - e/0.70 slow, and the median of
    the two is (e/0.55 - e/0.70)/2 >= 0.55 x (1/0.55 - 1/0.70)/2 = 10.7% (e = 0.55; outside the
    range one side only grows): in-sample, no calibration of the offered keys gets below it."""
    profile = load_profile("dgx-h100")
    test = [_sweep(profile, 0.55), _sweep(profile, 0.70)]
    r = self_fit(profile, [_sweep(profile, 0.60)], test)
    bound = 0.55 * (1 / 0.55 - 1 / 0.70) / 2
    assert r.own is not None and r.own >= bound - 0.005


@pytest.mark.parametrize("flag", ["--rows", "--attribute", "--self-fit"])
def test_an_unknown_split_name_is_a_usage_error(flag, capsys):
    from simulator.calibration.cross_validation import main

    with pytest.raises(SystemExit) as exc:
        main(["--system", "sophia-a100", flag, "leave in allreduce"])
    assert exc.value.code == 2
    assert f"{flag}: unknown held-out split 'leave in allreduce'" in capsys.readouterr().err


@pytest.mark.parametrize("before, held_out, own, cause", [
    (0.05, 0.07, 0.02, None),             # meets 8%
    (0.05, 0.12, 0.09, "mechanism"),      # fitted on themselves the rows miss too
    (0.15, 0.12, 0.09, "mechanism"),      # even where calibration helped
    (0.07, 0.10, 0.04, "carry-over"),     # calibration made a split worse that the keys can fit
    (0.0802, 0.0804, 0.057, "undetermined"),  # worse by less than half a point: not harmed
    (0.25, 0.084, 0.038, "undetermined"), # calibration helped, the keys it needs were not set
    (None, None, None, None),             # no row >= 1 MiB
])
def test_miss_cause_rules(before, held_out, own, cause):
    from simulator.calibration.cross_validation import miss_cause

    assert miss_cause(before, held_out, own) == cause


def test_self_fit_names_the_cause_of_each_kind_of_miss():
    """The three causes on synthetic NVLink rows (time ∝ 1 / the link's fraction at 64 MiB-4 GiB
    below the per-channel cap): (1) training rows at 0.55, held-out at 0.70: held out 1 - 0.55/0.70
    = 21.4% low, while the datasheet 0.82 is at most 0.82/0.70 - 1 = 17.1% fast (less where the
    cap binds), and fitted on themselves the rows are exact: carry-over. (2) Training rows in the
    latency regime only (8 B-1 KiB), which no efficiency moves: nothing is fitted, the held-out
    rows keep the datasheet's error (above 8%) and fitted on themselves they are exact:
    undetermined. (3) Held-out sweeps at 0.55 and 0.70 together: in-sample at least 10.7%
    (test above): mechanism."""
    profile = load_profile("dgx-h100")
    carry = self_fit(profile, [_sweep(profile, 0.55)], [_sweep(profile, 0.70)])
    assert carry.before is not None and carry.before <= 0.82 / 0.70 - 1 + 1e-3 < carry.held_out - 0.03
    assert carry.cause == "carry-over"
    small = MeasuredCollective("synthetic", "allgather", 8, 1, 8, tuple(2**k for k in range(3, 11)),
                               tuple(1.0 for _ in range(3, 11)), algo="ring")
    small = replace(small, times_s=tuple(float(t) for t in Predictor(profile).times(small)))
    undetermined = self_fit(profile, [small], [_sweep(profile, 0.70)])
    assert undetermined.held_out == pytest.approx(undetermined.before, abs=1e-3) and undetermined.held_out > 0.08
    assert undetermined.own is not None and undetermined.own < 0.005
    assert undetermined.cause == "undetermined"
    mechanism = self_fit(profile, [_sweep(profile, 0.60)], [_sweep(profile, 0.55), _sweep(profile, 0.70)])
    assert mechanism.cause == "mechanism"


def test_the_report_names_each_missed_split_with_its_cause():
    """held_out_summary counts the held-out splits against 8% and names each miss's cause from its
    three medians; a sizes split is not held out and a met split has no cause."""
    from simulator.calibration.cross_validation import SplitResult, held_out_summary

    def result(split, before, after, own=None):
        return SplitResult("sys", split, (), (), 10, before, before, after, after, (), own_large=own)

    rows = [result("sizes (fit even, predict odd)", 0.2, 0.1), result("leave out allreduce", 0.07, 0.10, 0.04),
            result("leave out alltoall", 0.11, 0.084, 0.017), result("leave out allgather", 0.05, 0.06),
            result("scale: fit ≤ 32 GPUs, predict 64", 0.13, 0.12, 0.15)]
    assert [r.miss_cause for r in rows] == [None, "carry-over", "undetermined", None, "mechanism"]
    (line,) = held_out_summary(rows)
    assert line.startswith("**Held-out splits:** 1 of 4 with rows ≥ 1 MiB meet ≤ 8 %")
    assert "sys, leave out allreduce (10.0%, 7.0% before, 4.0% fitted on themselves: carry-over)" in line
    assert "1 mechanism, 1 carry-over, 1 undetermined" in line

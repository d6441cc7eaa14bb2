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

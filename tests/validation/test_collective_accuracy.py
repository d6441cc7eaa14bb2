"""Predicted collectives against the bundled nccl-tests sweeps (data/nccl/), at the issue's
tolerances: median |busbw error| <= 15% for sizes >= 1 MiB on the single-node H100 sweeps (all
five collectives) and the two-node A100 sweeps, and the shape of the curves."""

from __future__ import annotations

from functools import lru_cache

import pytest

from simulator.calibration.collective_validation import SweepResult, case_for, predict_sweep
from simulator.calibration.measured import DATA_DIR, read_sweep
from simulator.config.hardware import available_profiles
from simulator.units import KiB, MiB

TOLERANCE = 0.15
H100_SINGLE_NODE = ["h100x8_allreduce_1node", "h100x8_allgather_1node", "h100x8_reducescatter_1node",
                    "h100x8_alltoall_1node", "h100x8_sendrecv_1node",
                    "h100x8_allgather_1node_full_ringalgo", "h100x8_reducescatter_1node_full_ringalgo",
                    "h100x8_allreduce_1node_full_nvlsenv"]
# The two-node DGX A100 (Sophia) sweeps. The ABCI two-node file stops at 32 MiB, where its busbw
# (33 GB/s) is still far below its NICs; it is reported in docs/validation-collectives.md, not
# asserted (see the note there).
A100_TWO_NODE = ["a100x16_allreduce_2node_dgx_ib", "a100x16_allgather_2node_dgx_ib", "a100x16_alltoall_2node_dgx_ib"]
FULL_RANGE = ["h100x8_allgather_1node_full_ringalgo", "h100x8_reducescatter_1node_full_ringalgo",
              "h100x8_allreduce_1node_full_nvlsenv", "a100x16_allreduce_2node_dgx_ib", "a100x16_allgather_2node_dgx_ib"]


@lru_cache(maxsize=None)
def _result(name: str) -> SweepResult:
    sweep = read_sweep(DATA_DIR / f"{name}.csv")
    case = case_for(sweep)
    assert case is not None, f"{name} has no case mapping"
    if case.profile not in available_profiles():
        pytest.skip(f"profile {case.profile} is not bundled yet")
    return predict_sweep(sweep, case)


@pytest.mark.parametrize("name", H100_SINGLE_NODE + A100_TWO_NODE)
def test_median_busbw_error_above_1MiB(name):
    r = _result(name)
    assert len(r.errors(MiB)) >= 5
    assert r.median_error(MiB) <= TOLERANCE, f"{name}: median |busbw error| {r.median_error(MiB):.1%}"


@pytest.mark.parametrize("name", FULL_RANGE)
def test_latency_floor_at_small_sizes_within_a_factor(name):
    r = _result(name)
    small = [p for p in r.points if p.size_bytes <= 4 * KiB]
    assert small
    for p in small:
        assert 0.5 <= p.predicted_time_us / p.measured_time_us <= 2.0, (p.size_bytes, p.predicted_time_us, p.measured_time_us)


@pytest.mark.parametrize("name", H100_SINGLE_NODE + A100_TWO_NODE)
def test_plateau_matches_the_measured_peak(name):
    r = _result(name)
    measured_peak = max(p.measured_busbw_GBps for p in r.points)
    predicted_at_largest = r.points[-1].predicted_busbw_GBps
    assert predicted_at_largest == pytest.approx(measured_peak, rel=TOLERANCE)


@pytest.mark.parametrize("name", H100_SINGLE_NODE + A100_TWO_NODE)
def test_busbw_is_monotone_in_the_bandwidth_regime(name):
    r = _result(name)
    big = [p.predicted_busbw_GBps for p in r.points if p.size_bytes >= 8 * MiB]
    assert all(b >= a * 0.99 for a, b in zip(big, big[1:])), big


def test_h100_allreduce_default_picks_nvls_at_large_sizes():
    r = _result("h100x8_allreduce_1node")
    assert r.points[-1].algorithm == "nvls"
    assert r.points[-1].predicted_busbw_GBps > 400  # measured 482 GB/s: above any ring on 450 GB/s NVLink

"""Ring/LL128 on one A100 NVSwitch node at the NVLink store rate of NCCL's LL ceiling
(simulator/costs/nvlink_store.py): the closed form, the plan on dgx-a100, and vTrain's 8-GPU
nccl-tests table (data/nccl/a100x8_allreduce_1node_vtrain_dgx.csv)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from simulator.calibration.measured import bundled_sweeps
from simulator.config.hardware import load_profile
from simulator.costs import nvlink_store
from simulator.costs.model import CostModel
from simulator.hardware.topology import build_topology

MiB = 1 << 20
AMPERE_LL_MAX_BW = 87.7  # llMaxBws, Ampere, one node (tuning.cc, v2.8.4-1 .. v2.30.7-1)
CAP = 2 * AMPERE_LL_MAX_BW * 120 / 128  # 164.44 GB/s busbw


def test_closed_form_and_where_it_applies():
    assert nvlink_store.ll128_busbw_cap_GBps("ring", "ll128", 1, "ampere", "nvswitch", AMPERE_LL_MAX_BW) == \
        pytest.approx(164.4375)
    # 0.74 of NCCL's own LL128 rate for 12 graph channels at 20 GB/s: min(0.92 x 240, 12 x 20)
    assert CAP / min(0.92 * 240, 12 * 20) == pytest.approx(0.745, abs=0.001)
    args = (AMPERE_LL_MAX_BW,)
    assert nvlink_store.ll128_busbw_cap_GBps("ring", "ll128", 1, "hopper", "nvswitch", *args) is None  # writes
    assert nvlink_store.ll128_busbw_cap_GBps("ring", "simple", 1, "ampere", "nvswitch", *args) is None  # reads
    assert nvlink_store.ll128_busbw_cap_GBps("ring", "ll", 1, "ampere", "nvswitch", *args) is None  # llMaxBw itself
    assert nvlink_store.ll128_busbw_cap_GBps("tree", "ll128", 1, "ampere", "nvswitch", *args) is None
    assert nvlink_store.ll128_busbw_cap_GBps("ring", "ll128", 2, "ampere", "nvswitch", *args) is None
    assert nvlink_store.ll128_busbw_cap_GBps("ring", "ll128", 1, "ampere", "mesh", *args) is None


@pytest.mark.parametrize("op, factor", [("allreduce", 2 * 7 / 8), ("allgather", 7 / 8), ("reducescatter", 7 / 8)])
def test_dgx_a100_ring_ll128_runs_at_the_store_rate(op, factor):
    """8 GPUs of dgx-a100, Ring/LL128 pinned: the time beyond the latency term is the bytes a rank
    sends over 164.4 GB/s, where NCCL's LL128 rate (and the profile's links: 300 x 0.78 x 120/128 =
    219 GB/s) would give 0.74 of that time."""
    costs = CostModel(build_topology(load_profile("dgx-a100"), 1), "ring", "ll128")
    size = 16 * MiB
    plan = costs.plan(op, list(range(8)), size)
    assert (plan.algorithm, plan.protocol) == ("ring", "ll128")
    bytes_s = costs.time_alone_s(plan) - plan.latency_s
    assert bytes_s == pytest.approx(factor * size / (CAP * 1e9), rel=1e-6)


def test_hopper_ring_ll128_is_not_capped():
    """dgx-h100 writes with every protocol: its Ring/LL128 keeps NCCL's rate, above the cap."""
    costs = CostModel(build_topology(load_profile("dgx-h100"), 1), "ring", "ll128")
    size = 16 * MiB
    plan = costs.plan("allreduce", list(range(8)), size)
    bytes_s = costs.time_alone_s(plan) - plan.latency_s
    assert 2 * 7 / 8 * size / bytes_s / 1e9 > 1.5 * CAP


def _vtrain8():
    return next(s for s in bundled_sweeps() if s.name == "a100x8_allreduce_1node_vtrain_dgx")


def test_vtrain_8gpu_ll128_slope_is_the_store_rate():
    """The measured Ring/LL128 rows (8-16 MiB, where NCCL's tables pick LL128 and the time rises
    with the bytes from the 93 us floor of 1-5 MiB) add bytes at 159 GB/s busbw (least squares over
    the 1 MiB steps): within 5% of 2 x llMaxBw x 120/128, where NCCL's own LL128 rate (221) is 39% above."""
    rows = [r for r in _vtrain8().rows if 8 * MiB <= r.size_bytes <= 16 * MiB]
    assert len(rows) == 9
    slope_us_per_byte = np.polyfit([r.size_bytes for r in rows], [r.time_us for r in rows], 1)[0]
    busbw = 2 * 7 / 8 / slope_us_per_byte / 1e3
    assert busbw == pytest.approx(159, abs=1)
    assert busbw == pytest.approx(CAP, rel=0.05)


def test_vtrain_8gpu_ll128_rows_within_7_percent():
    """Predicted as the bundled case does (vtrain-a100, newest tables), the Ring/LL128 rows from
    6 to 16 MiB are within 7% of the measured time (they were 17-25% fast at NCCL's LL128 rate)."""
    from simulator.calibration.sweep_prediction import case_for, predict_sweep

    sweep = _vtrain8()
    picked = [r for r in sweep.rows if r.size_bytes in {s * MiB for s in (6, 8, 10, 12, 14, 16)}]
    points = predict_sweep(replace(sweep, rows=tuple(picked)), case_for(sweep)).points
    assert len(points) == 6
    for p in points:
        assert (p.algorithm, p.protocol) == ("ring", "ll128")
        assert abs(p.measured_time_us / p.predicted_time_us - 1) < 0.07, (p.size_bytes, p.predicted_time_us)

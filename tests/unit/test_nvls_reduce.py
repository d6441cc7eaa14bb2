"""The in-switch reduction's rate (simulator/costs/nvls_reduce.py): an NVLS AllReduce's busbw is
twice the profile's rate at any group size, unless the links are slower."""

from __future__ import annotations

import pytest

from simulator.config.hardware import load_profile
from simulator.costs import nccl_constants
from simulator.costs.collectives import busbw_factor
from simulator.costs.model import CostModel
from simulator.costs.nvls_pipeline import nvls_fill_factor
from simulator.costs.nvls_reduce import flow_multiplier, reduced_share
from simulator.hardware.topology import build_topology
from simulator.units import GiB


def _bandwidth_busbw(k: int, op: str = "allreduce") -> float:
    """busbw (GB/s) of an NVLS call among the first k GPUs of a GB200 NVL72 rack, from the plan's
    bandwidth-bound time without its latency and chunk pipeline fill (closed form)."""
    profile = load_profile("gb200-nvl72")
    costs = CostModel(build_topology(profile, 18), "nvls", None)
    size = 8 * GiB
    plan = costs.plan(op, list(range(k)), size)
    assert plan.algorithm == "nvls"
    t = costs.time_alone_s(plan) - plan.latency_s
    fill = nvls_fill_factor(size, plan.channels * k) if op == "allreduce" else 1.0
    return size / (t / fill) * busbw_factor(op, k) / 1e9


@pytest.mark.parametrize("k", [16, 36, 64, 72])
def test_allreduce_busbw_is_twice_the_rate_at_any_size_of_group(k):
    """838 GB/s busbw (2 x 419, the 8-B200 plateau) from 16 to 72 GPUs of one rack, within 0.5%;
    the links alone gave 2(k-1)/(k+1) x 900 x 0.83 x 0.74: 975 GB/s at 16, 1,074 at 72."""
    assert _bandwidth_busbw(k) == pytest.approx(838.0, rel=0.005)


def test_a_small_group_is_bound_by_its_links():
    """Four GPUs (one tray): the links bind first, 2(k-1)/(k+1) x 900 x 0.83 x 0.74 = 663 GB/s
    busbw, below the reduction's 838."""
    su = load_profile("gb200-nvl72").node.scale_up
    links = 2 * 3 / 5 * su.link_GBps * su.efficiency * nccl_constants.NVLS_EFFICIENCY["blackwell"]
    assert links < 2 * su.nvls_reduce_GBps
    assert _bandwidth_busbw(4) == pytest.approx(links, rel=0.005)


def test_reducescatter_busbw_is_the_rate():
    """A ReduceScatter combines the same (k-1)/k S per GPU: busbw = the rate, 419 GB/s."""
    assert _bandwidth_busbw(72, "reducescatter") == pytest.approx(419.0, rel=0.005)


def test_allgather_reduces_nothing():
    assert reduced_share("allgather", 72) == 0.0 and flow_multiplier("allgather", 1.0, 72) == 1.0
    assert reduced_share("allreduce", 8) == pytest.approx(7 / 8)
    assert flow_multiplier("allreduce", 1 + 1 / 8, 8) == pytest.approx((9 / 8) / (7 / 8))

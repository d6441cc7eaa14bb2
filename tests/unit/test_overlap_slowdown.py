"""The slowdown of compute beside communication (config/hardware.py ``OVERLAP_SLOWDOWN``): the
published figure every bundled profile carries, and what the replay makes of it, in closed form
under the stand-in network."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.config.hardware import OVERLAP_SLOWDOWN, PROFILE_DIR, load_profile
from simulator.costs.compute import compute_time
from simulator.replay.engine import replay
from simulator.schedule.groups import Grid
from simulator.schedule.ir import CommOp, ComputeOp, ProgramBuilder
from tests.unit.replay_fixtures import FAKES, Sched, ring_time, topo

GEMM = dict(kind="gemm", flops=2 * 4096**3)


def test_the_slowdown_is_the_published_average():
    """Lee et al., arXiv:2507.03114: compute overlapped with communication runs 18.9% longer on
    average than alone (A100, H100, MI250, MI210)."""
    assert OVERLAP_SLOWDOWN == 0.189


def test_every_bundled_profile_carries_it():
    names = sorted(p.stem for p in Path(PROFILE_DIR).glob("*.yaml"))
    assert {"dgx-a100", "dgx-h100", "dgx-b200", "gb200-nvl72", "mi300x", "mi355x"} <= set(names)
    for name in names:
        assert load_profile(name).gpu.overlap_slowdown == OVERLAP_SLOWDOWN, name


def test_a_kernel_wholly_beside_communication_takes_1_189_times_its_time():
    gpu = load_profile("dgx-h100").gpu
    op = ComputeOp("g", **GEMM)
    assert compute_time(op, gpu, overlapped=True) == pytest.approx(1.189 * compute_time(op, gpu), rel=1e-12)


def _schedule(size: int) -> Sched:
    """Every TP rank: GEMM A, then an AllReduce of ``size`` bytes and GEMM B, both waiting for A
    only, so B runs beside the AllReduce from its start."""
    pb = ProgramBuilder()
    a = pb.add(ComputeOp("A", **GEMM))
    pb.add(CommOp("ar", "allreduce", ("tp",), size, deps=(a,)))
    pb.add(ComputeOp("B", **GEMM, deps=(a,)))
    return Sched(Grid.from_sizes({"tp": 8}), {0: pb.ops})


@pytest.mark.parametrize("compute_runs", [False, True])
def test_a_kernel_partly_beside_communication_pays_o_times_0_159(compute_runs: bool):
    """GEMM B (g seconds) overlapped by an AllReduce of o < g seconds: it runs at 1/1.189 of its
    speed for o seconds and ends o x 0.189/1.189 = o x 0.15896 later than alone."""
    t = topo(1, 8, overlap_slowdown=OVERLAP_SLOWDOWN)
    g = compute_time(ComputeOp("A", **GEMM), t.profile.gpu)
    size = 32 * 2**20
    o = ring_time("allreduce", 8, size)
    assert 0 < o < g
    trace = replay(_schedule(size), t, compute_runs=compute_runs, **FAKES)
    assert trace.step_time_s == pytest.approx(2 * g + o * 0.189 / 1.189, rel=1e-9)
    assert 0.189 / 1.189 == pytest.approx(0.15896, abs=1e-5)


@pytest.mark.parametrize("compute_runs", [False, True])
def test_a_kernel_covered_by_communication_takes_1_189_g(compute_runs: bool):
    """An AllReduce outlasting GEMM B: B runs slowed for all of its length, 1.189 g; the step ends
    with the AllReduce or with B, whichever is later."""
    t = topo(1, 8, overlap_slowdown=OVERLAP_SLOWDOWN)
    g = compute_time(ComputeOp("A", **GEMM), t.profile.gpu)
    size = 1024 * 2**20
    o = ring_time("allreduce", 8, size)
    assert o > 1.189 * g
    trace = replay(_schedule(size), t, compute_runs=compute_runs, **FAKES)
    rec = {r.name: r for r in trace.records(3)}
    assert rec["B"].duration == pytest.approx(1.189 * g, rel=1e-9)
    assert trace.step_time_s == pytest.approx(g + o, rel=1e-9)

"""compute_time against closed forms of the roofline model (simulator/costs/compute.py)."""

from __future__ import annotations

import math

import pytest

from simulator.config.hardware import GPU, AttentionEfficiency, GemmPoint
from simulator.costs.compute import compute_time, gemm_efficiency
from simulator.costs.memory_bound import EFFICIENCY, RAMP_US
from simulator.schedule.ir import ComputeOp, Tag

GAP = 3e-6  # kernel_gap_us below; the host's kernel_launch_us differs, so a test tells them apart


def make_gpu(**over) -> GPU:
    base = dict(
        name="test", arch="hopper", sms=132, bf16_TFLOPS=1000.0, fp16_TFLOPS=1000.0, fp8_TFLOPS=2000.0,
        fp32_TFLOPS=60.0, hbm_GiB=80.0, hbm_GBps=3000.0, hbm_efficiency=0.8,
        gemm_efficiency=[GemmPoint(flops=1e9, efficiency=0.2), GemmPoint(flops=1e12, efficiency=0.8)],
        fp8_gemm_efficiency_scale=0.75,
        attention_efficiency={"flash2": AttentionEfficiency(fwd=0.3, bwd=0.25),
                              "flash3": AttentionEfficiency(fwd=0.6, bwd=0.4)},
        overlap_slowdown=0.1, kernel_launch_us=4.0, kernel_gap_us=3.0,
    )
    base.update(over)
    return GPU(**base)


def test_gemm_efficiency_log_interpolates_and_clamps():
    gpu = make_gpu()
    assert gemm_efficiency(gpu, 1e6) == 0.2
    assert gemm_efficiency(gpu, 1e15) == 0.8
    # halfway in log space between 1e9 and 1e12 is 10**10.5
    assert gemm_efficiency(gpu, 10**10.5) == pytest.approx(0.5)
    assert gemm_efficiency(gpu, 1e15, "fp8") == pytest.approx(0.6)


def test_large_gemm_is_peak_times_efficiency_plus_gap():
    gpu = make_gpu()
    flops = 2 * 8192 * 8192 * 8192
    op = ComputeOp("g", "gemm", flops=flops, hbm_bytes=3 * 8192 * 8192 * 2, gemm=(8192, 8192, 8192))
    assert compute_time(op, gpu) == pytest.approx(flops / (1000e12 * 0.8) + GAP)


def test_count_uses_per_kernel_size_and_pays_the_gap_per_kernel():
    gpu = make_gpu()
    one = ComputeOp("g", "gemm", flops=10**10.5)
    many = ComputeOp("g", "gemm", flops=4 * 10**10.5, count=4)
    t_one = compute_time(one, gpu)
    assert compute_time(many, gpu) == pytest.approx(4 * t_one)
    assert t_one == pytest.approx(10**10.5 / (1000e12 * 0.5) + GAP)


def test_fp8_gemm_uses_fp8_peak_and_scaled_curve():
    gpu = make_gpu()
    op = ComputeOp("g", "gemm", flops=1e13, dtype="fp8")
    assert compute_time(op, gpu) == pytest.approx(1e13 / (2000e12 * 0.6) + GAP)


def test_fp8_without_tensor_cores_is_an_input_error():
    from simulator.errors import InputError

    gpu = make_gpu(fp8_TFLOPS=None)
    with pytest.raises(InputError):
        compute_time(ComputeOp("g", "gemm", flops=1e12, dtype="fp8"), gpu)


def test_attention_phase_picks_efficiency():
    gpu = make_gpu()
    fwd = ComputeOp("a", "attention", flops=1e12, tag=Tag("fwd"))
    bwd = ComputeOp("a", "attention", flops=1e12, tag=Tag("bwd"))
    by_name = ComputeOp("L0.attn.core.bwd", "attention", flops=1e12)
    assert compute_time(fwd, gpu) == pytest.approx(1e12 / (1000e12 * 0.6) + GAP)
    assert compute_time(bwd, gpu) == pytest.approx(1e12 / (1000e12 * 0.4) + GAP)
    assert compute_time(by_name, gpu) == compute_time(bwd, gpu)


def test_attention_kernel_generation_picks_its_own_efficiency():
    """An op naming its kernel runs at that kernel's fraction; "" runs the GPU's default
    (flash3 on hopper, flash2 on ampere); the GEMM curve plays no part."""
    gpu = make_gpu()
    assert gpu.default_attention == "flash3"
    fa2_f = ComputeOp("a", "attention", flops=1e12, tag=Tag("fwd"), attention_kernel="flash2")
    fa2_b = ComputeOp("a", "attention", flops=1e12, tag=Tag("bwd"), attention_kernel="flash2")
    fa3_f = ComputeOp("a", "attention", flops=1e12, tag=Tag("fwd"), attention_kernel="flash3")
    assert compute_time(fa2_f, gpu) == pytest.approx(1e12 / (1000e12 * 0.3) + GAP)
    assert compute_time(fa2_b, gpu) == pytest.approx(1e12 / (1000e12 * 0.25) + GAP)
    assert compute_time(fa3_f, gpu) == compute_time(ComputeOp("a", "attention", flops=1e12, tag=Tag("fwd")), gpu)
    flat = make_gpu(gemm_efficiency=[GemmPoint(flops=1e9, efficiency=0.01)])
    assert compute_time(fa2_f, flat) == compute_time(fa2_f, gpu)
    ampere = make_gpu(arch="ampere", attention_efficiency={"flash2": AttentionEfficiency(fwd=0.5, bwd=0.4)})
    assert ampere.default_attention == "flash2"
    assert compute_time(ComputeOp("a", "attention", flops=1e12, tag=Tag("fwd")), ampere) == pytest.approx(
        1e12 / (1000e12 * 0.5) + GAP)


def test_missing_attention_kernel_is_an_input_error():
    from simulator.errors import InputError

    ampere = make_gpu(arch="ampere", attention_efficiency={"flash2": AttentionEfficiency(fwd=0.5, bwd=0.4)})
    with pytest.raises(InputError):
        compute_time(ComputeOp("a", "attention", flops=1e12, attention_kernel="flash3"), ampere)
    with pytest.raises(InputError) as err:
        ampere.resolve_attention("flash3")
    assert err.value.field == "training.attention"
    assert ampere.resolve_attention("auto") == "flash2" and ampere.resolve_attention("unfused") == "unfused"
    with pytest.raises(ValueError):  # a default the profile has no numbers for
        make_gpu(default_attention="flash3",
                 attention_efficiency={"flash2": AttentionEfficiency(fwd=0.5, bwd=0.4)})


def test_memory_bound_ops_use_hbm():
    """Bytes over the class's share of the streaming bandwidth, plus the ramp and the gap
    (costs/memory_bound.py); PyTorch's native norm kernels reach a lower share."""
    gpu = make_gpu()
    op = ComputeOp("n", "norm", flops=1e6, hbm_bytes=1e9)
    ramp = RAMP_US * 1e-6
    assert compute_time(op, gpu) == pytest.approx(1e9 / (3000e9 * 0.8 * EFFICIENCY["stream"]) + ramp + GAP)
    eager = ComputeOp("n", "norm", flops=1e6, hbm_bytes=1e9, impl="eager", count=2)
    assert compute_time(eager, gpu) == pytest.approx(1e9 / (3000e9 * 0.8 * EFFICIENCY["norm_eager"])
                                                     + 2 * (ramp + GAP))
    # "eager" names a norm kernel's implementation only: an eager elementwise kernel streams
    assert compute_time(ComputeOp("a", "elementwise", hbm_bytes=1e9, impl="eager"), gpu) == pytest.approx(
        compute_time(ComputeOp("a", "elementwise", hbm_bytes=1e9), gpu))


def test_memory_bound_gemm_takes_the_slower_bound():
    gpu = make_gpu()
    op = ComputeOp("g", "gemm", flops=1e9, hbm_bytes=1e10)  # tiny arithmetic, huge traffic
    assert compute_time(op, gpu) == pytest.approx(1e10 / (3000e9 * 0.8) + GAP)


def test_empty_kernel_costs_its_gap_and_a_host_step_its_launch():
    """A kernel in a fed stream pays the GPU's gap between kernels (kernel_gap_us); a host step the
    GPU waits for (kind host, no host_us given) pays the host's launch (kernel_launch_us)."""
    gpu = make_gpu()
    assert compute_time(ComputeOp("e", "elementwise"), gpu) == pytest.approx(GAP + RAMP_US * 1e-6)
    assert compute_time(ComputeOp("e", "gemm"), gpu) == pytest.approx(GAP)
    assert compute_time(ComputeOp("h", "host", count=5), gpu) == pytest.approx(5 * 4e-6)
    assert compute_time(ComputeOp("h", "host", count=5, host_us=7.0), gpu) == pytest.approx(5 * 7e-6)


def test_sm_fraction_and_overlap_slowdown():
    gpu = make_gpu()
    op = ComputeOp("g", "gemm", flops=1e13)
    full = 1e13 / (1000e12 * 0.8)
    shared = ComputeOp("g", "gemm", flops=1e13, sm_fraction=0.5)
    assert compute_time(shared, gpu) == pytest.approx(2 * full + GAP)
    assert compute_time(op, gpu, overlapped=True) == pytest.approx((full + GAP) * 1.1)
    assert compute_time(op, make_gpu(overlap_slowdown=0.0), overlapped=True) == pytest.approx(full + GAP)


def test_monotone_in_flops():
    gpu = make_gpu()
    times = [compute_time(ComputeOp("g", "gemm", flops=f), gpu) for f in (1e8, 1e10, 1e12, 1e14)]
    assert all(b > a for a, b in zip(times, times[1:]))
    assert not any(math.isnan(t) for t in times)


def test_compute_times_equals_compute_time_per_op():
    from simulator.costs.compute import compute_times
    from simulator.schedule.ir import CommOp

    gpu = make_gpu()
    prog = [ComputeOp("a", "gemm", flops=1e12), CommOp("c", "allgather", ("tp",), 10),
            ComputeOp("b", "attention", flops=1e12, tag=Tag("bwd")), ComputeOp("a2", "gemm", flops=1e12),
            ComputeOp("f", "attention", flops=1e12, tag=Tag("fwd")),
            ComputeOp("f2", "attention", flops=1e12, tag=Tag("fwd"), attention_kernel="flash2")]
    got = compute_times(prog, gpu)
    assert got[1] is None
    for op, t in zip(prog, got):
        if t is not None:
            assert t == compute_time(op, gpu)
    assert got[-1] > got[-2]  # same shape, slower kernel: the memo keys on the kernel

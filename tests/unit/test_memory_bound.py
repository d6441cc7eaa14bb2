"""The memory-bound kernel model (costs/memory_bound.py), its fit on Liger-Kernel's published
kernel timings (calibration/kernel_bandwidth.py, data/kernels/) scored leave-one-GPU-out, and the
schedule's kernels that it prices: PyTorch's own norm kernels and the cross-entropy's passes."""

from __future__ import annotations

import pytest

from simulator.calibration.kernel_bandwidth import KernelFit, fit, leave_one_gpu_out, load_points, predict
from simulator.config.hardware import load_profile
from simulator.config.scenario import build_scenario
from simulator.costs.compute import compute_time
from simulator.costs.memory_bound import EFFICIENCY, RAMP_US, memory_time
from simulator.schedule.build import build_schedule
from simulator.schedule.ir import ComputeOp
from simulator.schedule.loss import loss_kernels


@pytest.fixture(scope="module")
def points():
    return load_points()


def test_closed_form_time_of_a_kernel():
    """400 MB through one streaming kernel on an H100 (3,350 GB/s × 0.92 streaming): the bytes at
    0.90 of that, plus the ramp; the gap between kernels comes on top in compute_time."""
    gpu = load_profile("dgx-h100").gpu
    stream = 400e6 / (EFFICIENCY["stream"] * 3350e9 * 0.92) + RAMP_US * 1e-6
    assert memory_time(400e6, 1, "stream", gpu) == pytest.approx(stream)
    op = ComputeOp("x", "elementwise", hbm_bytes=400e6)
    assert compute_time(op, gpu) == pytest.approx(stream + gpu.kernel_gap_us * 1e-6)
    # PyTorch's LayerNorm forward over the same bytes: 0.64 of the streaming bandwidth
    eager = 400e6 / (EFFICIENCY["norm_eager"] * 3350e9 * 0.92) + RAMP_US * 1e-6
    assert memory_time(400e6, 1, "norm_eager", gpu) == pytest.approx(eager)
    assert eager / stream == pytest.approx(EFFICIENCY["stream"] / EFFICIENCY["norm_eager"], rel=0.01)
    # small kernels pay the fixed costs: in a fed stream 4 MB reaches under half the bandwidth
    small = compute_time(ComputeOp("x", "elementwise", hbm_bytes=4e6), gpu)
    assert small == pytest.approx(4e6 / (EFFICIENCY["stream"] * 3350e9 * 0.92) + (RAMP_US + 1.2) * 1e-6)
    assert 4e6 / small < 0.5 * 400e6 / compute_time(op, gpu)


def test_the_data_selection(points):
    """107 rows: the two GPUs, both classes, every rule of the selection."""
    assert len(points) == 107
    assert {p.gpu for p in points} == {"NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3"}
    for gpu in ("NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3"):
        assert {p.klass for p in points if p.gpu == gpu} == {"stream", "norm_eager"}
    assert all(p.seconds > 0 and p.nbytes > 0 for p in points)


def test_committed_constants_are_the_fit_on_all_rows(points):
    f = fit(points)
    assert f.ramp_us == pytest.approx(RAMP_US, abs=0.05)
    for c, e in EFFICIENCY.items():
        assert f.efficiency[c] == pytest.approx(e, abs=0.005)


def test_leave_one_gpu_out(points):
    """Fitted on one GPU's rows, the other GPU's are predicted with a median |error| of 8.2%
    (A100 held out) and 11.6% (H100 held out); three quarters within 19% and 26%. The largest
    errors are PyTorch's two-kernel ReLU² on 2-30 MB tensors on H100 when the ramp comes from the
    A100 rows, whose small kernels were timed slower."""
    held = {h.gpu: h for h in leave_one_gpu_out(points)}
    assert held["NVIDIA A100-SXM4-80GB"].median_abs < 0.10
    assert held["NVIDIA H100 80GB HBM3"].median_abs < 0.13
    for h in held.values():
        errs = sorted(abs(e) for e in h.errors)
        assert errs[int(0.75 * len(errs))] < 0.30


def test_cross_entropy_passes_match_the_measured_kernels(points):
    """The bytes counted pass by pass (schedule/loss.py for Megatron's vocab_parallel_cross_entropy;
    PyTorch's three-pass log_softmax) predict the measured kernels at LM vocabularies (V ≥ 32K)
    within 10% with the committed constants: the counts, not an efficiency, make the loss slow."""
    committed = KernelFit(RAMP_US, dict(EFFICIENCY))
    ce = [p for p in points if p.kernel.endswith("cross_entropy") and p.provider != "liger" and p.x >= 32768]
    assert len(ce) == 9
    for p in ce:
        assert predict(p, committed) / p.seconds - 1 == pytest.approx(0, abs=0.10), (p.provider, p.mode, p.x)
    # and the schedule's Megatron counts are the ones the data rows use (bf16 logits: 38 and 14 B)
    fwd, bwd = loss_kernels("vocab_parallel", 2)
    assert (fwd.bytes_per_logit, fwd.kernels, bwd.bytes_per_logit, bwd.kernels) == (38, 6, 14, 2)


def _program(tmp_path, **training):
    data = {"name": "s", "hardware": "dgx-a100", "nodes": 1,
            "model": {"layers": 2, "hidden": 512, "heads": 8, "vocab": 32000, "mlp": "gelu", "seq_len": 1024},
            "training": {"micro_batch": 2, "global_batch": 16, **training}, "parallel": {"tp": 1}}
    sched = build_schedule(build_scenario(data, source="s.yaml", base_dir=tmp_path))
    return [op for prog in sched.programs.values() for op in prog if isinstance(op, ComputeOp)]


@pytest.mark.parametrize("impl", ["vocab_parallel", "torch", "torch_lowp", "fused"])
def test_loss_kernels_in_the_schedule(tmp_path, impl):
    ops = _program(tmp_path, cross_entropy=impl)
    logits = 2 * 1024 * 32000  # tokens × vocab of one micro-batch
    fwd, bwd = loss_kernels(impl, 2)
    loss_f = [o for o in ops if o.name == "loss.fwd"]
    loss_b = [o for o in ops if o.name == "loss.bwd"]
    assert loss_f and all(o.hbm_bytes == fwd.bytes_per_logit * logits and o.count == fwd.kernels for o in loss_f)
    assert loss_b and all(o.hbm_bytes == bwd.bytes_per_logit * logits and o.count == bwd.kernels for o in loss_b)


def test_loss_implementations_order(tmp_path):
    """Megatron's six passes > PyTorch's cast + three-pass log-softmax > the same log-softmax on the
    bf16 logits themselves (4B forward; zero-fill and two passes backward, 5B) > one fused kernel."""
    impls = ("vocab_parallel", "torch", "torch_lowp", "fused")
    total = {impl: sum(f.bytes_per_logit for f in loss_kernels(impl, 2)) for impl in impls}
    assert total == {"vocab_parallel": 38 + 14, "torch": 22 + 26, "torch_lowp": 8 + 10, "fused": 8}
    assert [k.kernels for k in loss_kernels("torch_lowp", 2)] == [2, 2]


def test_eager_layers_run_pytorchs_norm_kernels(tmp_path):
    """With fused_kernels false every norm is PyTorch's own kernel (impl eager): forward 2 hb in
    one kernel, backward 5 hb in two; the residual add and dropout are separate elementwise ops."""
    hb = 2 * 1024 * 512 * 2
    eager = _program(tmp_path, fused_kernels=False)
    norms = [o for o in eager if o.kind == "norm"]
    assert norms and all(o.impl == "eager" for o in norms)
    assert {(o.hbm_bytes, o.count) for o in norms if o.name.endswith(".fwd")} == {(2 * hb, 1)}
    assert {(o.hbm_bytes, o.count) for o in norms if o.name.endswith(".bwd")} == {(5 * hb, 2)}
    res = [o for o in eager if o.name == "L0.res1.fwd"]
    assert res and res[0].kind == "elementwise" and res[0].hbm_bytes == (2.5 + 3) * hb
    fused = _program(tmp_path)
    assert not any(o.impl for o in fused)
    gpu = load_profile("dgx-a100").gpu
    t = lambda ops: sum(compute_time(o, gpu) for o in ops if o.kind in ("norm", "elementwise"))  # noqa: E731
    assert t(eager) > 1.5 * t(fused)


def test_h200_rows_held_out_with_the_committed_constants():
    """This project's H200 timings of PyTorch's own kernels (data/kernels/h200_memory_bound.csv, the
    shapes of Liger's benchmarks, timed the same way) on a GPU none of the constants was fitted on:
    median |error| 10.1% over 29 rows (the other two GPUs score each other at 8.2% and 11.6%), and
    the cross-entropy at 64K-128K logits per row, where the three-pass count is the kernel's,
    within 10%."""
    from simulator.calibration.kernel_bandwidth import h200_points

    pts = h200_points()
    assert len(pts) == 29
    assert {p.provider for p in pts} == {"huggingface", "torch"}
    committed = KernelFit(RAMP_US, dict(EFFICIENCY))
    errs = [predict(p, committed) / p.seconds - 1 for p in pts]
    assert sorted(abs(e) for e in errs)[len(errs) // 2] < 0.12
    for p, e in zip(pts, errs):
        if p.kernel == "cross_entropy" and p.x >= 65536:
            assert e == pytest.approx(0, abs=0.10), p.x


def test_lowp_loss_buffers():
    """F.cross_entropy on the bf16 logits themselves keeps 6 bytes per logit at its peak (the saved
    log-softmax output, its incoming gradient, the input's gradient, 2 each), half of the fp32 path's 12."""
    from simulator.schedule.memory import loss_buffer_bytes

    def scn(impl: str):
        return build_scenario({"name": "l", "hardware": "dgx-h100", "nodes": 1,
                               "model": {"layers": 2, "hidden": 512, "heads": 8, "seq_len": 1024, "vocab": 32000},
                               "training": {"micro_batch": 2, "global_batch": 16, "cross_entropy": impl}},
                              source="<test>")

    logits = 2 * 1024 * 32000
    assert loss_buffer_bytes(scn("torch_lowp")) == 6 * logits and loss_buffer_bytes(scn("torch")) == 12 * logits

"""training.torch_deterministic: PyTorch's NaN fill of what TransformerEngine allocates
(schedule/deterministic_fill.py), counted per op in closed form and priced as streaming writes."""

from __future__ import annotations

import pytest

from simulator.config.hardware import load_profile
from simulator.config.scenario import build_scenario
from simulator.costs.compute import compute_time
from simulator.costs.host import CUDA_LAUNCH_US, host_cost_s
from simulator.costs.memory_bound import EFFICIENCY, RAMP_US
from simulator.schedule.build import build_schedule
from simulator.schedule.ir import ComputeOp

H, FFN, SEQ, MB, HEADS, KV, VOCAB, LAYERS, TP = 1024, 4096, 2048, 2, 16, 4, 32768, 2, 4
D = H // HEADS
TOKENS = MB * SEQ
HB = TOKENS * H * 2  # one bf16 hidden activation, the full sequence on every TP rank (no SP)


def _ops(tmp_path, fused: bool = True, gaf: bool = False, **training) -> list[ComputeOp]:
    data = {"name": "s", "hardware": "dgx-h100", "nodes": 1, "gpus_per_node": TP,
            "model": {"layers": LAYERS, "hidden": H, "heads": HEADS, "kv_heads": KV, "ffn_hidden": FFN,
                      "vocab": VOCAB, "mlp": "gelu", "seq_len": SEQ},
            "training": {"micro_batch": MB, "global_batch": MB, "dtype": "bf16", "fused_kernels": fused,
                         "dropout": False, **training},
            "parallel": {"tp": TP, "sequence_parallel": False, "gradient_accumulation_fusion": gaf}}
    sched = build_schedule(build_scenario(data, source="s.yaml", base_dir=tmp_path))
    return [op for op in next(iter(sched.programs.values())) if isinstance(op, ComputeOp)]


def _named(ops: list[ComputeOp], name: str) -> ComputeOp:
    return next(op for op in ops if op.name == name)


def test_the_fill_is_off_by_default(tmp_path):
    assert all(op.fill_bytes == 0 and op.fill_kernels == 0 for op in _ops(tmp_path))


def test_te_outputs_are_filled_as_allocated(tmp_path):
    """Per layer, TP 4 without sequence parallelism: each linear GEMM fills its m x n bf16 output
    (QKV: tokens x (16 + 2 x 4) x 64 / 4 columns); the weight gradients too without
    gradient-accumulation fusion; the fused attention its output (forward) and dQ, dK, dV
    (backward, three tensors); the norms one hidden activation each; Megatron's output layer
    (torch.matmul) and the elementwise ops nothing."""
    ops = _ops(tmp_path, torch_deterministic=True)
    qkv_cols = (HEADS + 2 * KV) * D // TP
    expect = {"L0.qkv.fwd.gemm": TOKENS * qkv_cols * 2, "L0.proj.fwd.gemm": HB,
              "L0.fc1.fwd.gemm": TOKENS * FFN // TP * 2,
              "L0.fc2.fwd.gemm": HB, "L0.qkv.bwd.dgrad": HB, "L0.qkv.bwd.wgrad": qkv_cols * H * 2,
              "L0.fc2.bwd.wgrad": H * FFN // TP * 2, "L0.ln1.fwd": HB, "L0.ln1.bwd": HB,
              "L0.res1_ln2.fwd": HB, "L0.res1_ln2.bwd": HB}
    for name, nbytes in expect.items():
        op = _named(ops, name)
        assert (op.fill_bytes, op.fill_kernels) == (nbytes, 1), name
    q = TOKENS * HEADS // TP * D * 2
    kv = 2 * TOKENS * KV // TP * D * 2
    fwd, bwd = _named(ops, "L0.attn.core.fwd"), _named(ops, "L0.attn.core.bwd")
    assert (fwd.fill_bytes, fwd.fill_kernels) == (q, 1)
    assert (bwd.fill_bytes, bwd.fill_kernels) == (q + kv, 3)
    head = [op for op in ops if "lm_head" in op.name]
    assert head and all(op.fill_bytes == 0 for op in head)
    assert all(op.fill_bytes == 0 for op in ops if op.kind == "elementwise")


def test_fused_weight_gradients_and_eager_stacks_are_not_filled(tmp_path):
    """Gradient-accumulation fusion writes the weight gradient into main_grad in place (no new tensor);
    an eager PyTorch stack's linear layers are torch.matmul, structured kernels the fill leaves alone."""
    ops = _ops(tmp_path, gaf=True, torch_deterministic=True)
    assert _named(ops, "L0.fc1.bwd.wgrad").fill_bytes == 0
    assert _named(ops, "L0.fc1.bwd.dgrad").fill_bytes == HB
    assert all(op.fill_bytes == 0 for op in _ops(tmp_path, fused=False, torch_deterministic=True))


def test_a_fill_costs_a_streaming_write_and_a_launch():
    """The fill adds its bytes at the streaming rate (0.90 of the usable HBM bandwidth) with each
    kernel's ramp and gap on the GPU, and one CUDA launch per kernel on the host."""
    gpu = load_profile("dgx-h100").gpu
    base = ComputeOp(name="g", kind="gemm", flops=2.0 * 4096 * 4096 * 1024, hbm_bytes=4e7, gemm=(4096, 4096, 1024))
    filled = ComputeOp(name="g", kind="gemm", flops=base.flops, hbm_bytes=base.hbm_bytes, gemm=base.gemm,
                       fill_bytes=4096 * 4096 * 2, fill_kernels=1)
    rate = EFFICIENCY["stream"] * gpu.hbm_Bps * gpu.hbm_efficiency
    extra = filled.fill_bytes / rate + (RAMP_US + gpu.kernel_gap_us) * 1e-6
    assert compute_time(filled, gpu) - compute_time(base, gpu) == pytest.approx(extra, rel=1e-9)
    assert host_cost_s(filled) - host_cost_s(base) == pytest.approx(CUDA_LAUNCH_US * 1e-6)


def test_moe_grouped_gemms_fill_one_output_a_call_and_each_expert_weight_gradient(tmp_path):
    """TE's GroupedLinear allocates one output for all local experts (forward, dgrad) and, without
    gradient-accumulation fusion, one weight gradient per expert: 8 experts, 2 on each of 4 EP ranks,
    top-2 of 1,024 tokens x 2 sequences, each expert's FC1 (gated: 2 x 512 columns) and FC2."""
    data = {"name": "s", "hardware": "dgx-h100", "nodes": 1, "gpus_per_node": 4,
            "model": {"layers": 1, "hidden": 256, "heads": 4, "vocab": 4096, "mlp": "swiglu", "seq_len": 1024,
                      "experts": 8, "top_k": 2, "moe_ffn_hidden": 512},
            "training": {"micro_batch": 2, "global_batch": 8, "dtype": "bf16", "dropout": False,
                         "torch_deterministic": True},
            "parallel": {"ep": 4, "gradient_accumulation_fusion": False}}
    sched = build_schedule(build_scenario(data, source="s.yaml", base_dir=tmp_path))
    ops = [op for op in next(iter(sched.programs.values())) if isinstance(op, ComputeOp)]
    rows = 2 * 1024 * 2  # T x k routed rows, balanced over the 4 ranks' 2 experts each
    fc1 = _named(ops, "L0.moe.experts.fc1.fwd")
    assert (fc1.fill_bytes, fc1.fill_kernels) == (rows * 2 * 512 * 2, 1)
    fc2_w = _named(ops, "L0.moe.experts.fc2.wgrad")
    assert (fc2_w.fill_bytes, fc2_w.fill_kernels) == (2 * 256 * 512 * 2, 2)

"""Kineto (PyTorch profiler) trace parser: NCCL/GEMM/attention kernels with sizes and shapes from
the launching CPU ops, on a hand-made GPU-style trace and a real CPU/gloo trace."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simulator.calibration.kineto import (attention_shape, gemm_shape, parse_kineto_data, parse_kineto_trace,
                                          parse_nccl_kernel_name)
from simulator.errors import InputError

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "kineto"
GPU = FIX / "gpu_style_trace.json"
CPU = FIX / "cpu_gloo_trace.json"


@pytest.mark.parametrize("name, expected", [
    ("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", ("allgather", "ring", "ll")),
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", ("allreduce", "ring", "ll")),
    ("ncclDevKernel_AllReduce_Sum_bf16_NVLS_TREE_SIMPLE(ncclDevKernelArgsStorage<4096ul>)",
     ("allreduce", "nvls_tree", "simple")),
    ("ncclDevKernel_AllReduce_Sum_f32_NVLS_SIMPLE(x)", ("allreduce", "nvls", "simple")),
    ("ncclKernel_ReduceScatter_RING_LL128_Sum_half(ncclDevComm*)", ("reducescatter", "ring", "ll128")),
    ("ncclDevKernel_AllReduce_Sum_bf16_COLLNET_DIRECT_SIMPLE(x)", ("allreduce", "collnet_direct", "simple")),
    ("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", ("sendrecv", None, None)),
    ("ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", (None, None, None)),
    ("ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*)", ("broadcast", "ring", "ll")),
    ("sm90_xmma_gemm_bf16bf16_bf16f32", (None, None, None)),
])
def test_nccl_kernel_names(name, expected):
    assert parse_nccl_kernel_name(name) == expected


def test_gemm_shapes():
    assert gemm_shape("aten::mm", [[64, 128], [128, 32]]) == (1, 64, 32, 128)
    assert gemm_shape("aten::addmm", [[32], [64, 128], [128, 32]]) == (1, 64, 32, 128)
    assert gemm_shape("aten::bmm", [[8, 64, 128], [8, 128, 32]]) == (8, 64, 32, 128)
    assert gemm_shape("aten::matmul", [[2, 3, 64, 128], [128, 32]]) == (1, 384, 32, 128)
    assert gemm_shape("aten::matmul", [[4, 64, 128], [4, 128, 32]]) == (4, 64, 32, 128)
    assert gemm_shape("aten::linear", [[2, 2048, 4096], [1024, 4096], [1024]]) == (1, 4096, 1024, 4096)
    assert gemm_shape("aten::mm", [[64, 128]]) is None
    assert gemm_shape("aten::mm", [[], []]) is None


def test_attention_shapes():
    # [b, s, h, d] for _flash_attention_forward, [b, h, s, d] for the SDPA wrapper
    assert attention_shape("aten::_flash_attention_forward", [[2, 4096, 16, 64], [2, 4096, 4, 64]]) == (2, 16, 4, 4096, 4096, 64)
    assert attention_shape("aten::_scaled_dot_product_flash_attention", [[2, 16, 4096, 64], [2, 4, 1024, 64]]) == (2, 16, 4, 4096, 1024, 64)
    assert attention_shape("aten::_flash_attention_backward", [[1, 8, 2, 4], [1, 8, 2, 4], [1, 8, 1, 4]]) == (1, 2, 1, 8, 8, 4)


def test_gpu_style_trace_collectives():
    t = parse_kineto_trace(GPU)
    assert (t.rank, t.world_size, t.backend) == (0, 8, "nccl")
    assert t.device_names == ("NVIDIA H100 80GB HBM3",)
    got = [(c.op, c.algorithm, c.protocol, c.size_bytes, c.group_size, c.dtype) for c in t.collectives]
    bf16, f32 = 2, 4
    assert got == [
        ("allgather", "ring", "ll", 8388608 * bf16, 8, "bfloat16"),  # gathered output
        ("reducescatter", "ring", "simple", 8388608 * bf16, 8, "bfloat16"),  # scattered input
        ("allreduce", "tree", "ll128", 262144 * f32, 8, "float"),
        ("allreduce", None, None, 16777216 * bf16, 8, "bfloat16"),  # generic kernel
        ("alltoall", None, None, 4194304 * bf16, 4, "bfloat16"),  # SendRecv kernel, linked by flow only
        ("sendrecv", None, None, 2097152 * bf16, 2, "bfloat16"),
    ]
    raw = json.loads(GPU.read_text())["traceEvents"]
    kernels = {e["args"]["correlation"]: e for e in raw if e.get("cat") == "kernel"}
    for c in t.collectives:
        k = next(k for k in kernels.values() if k["name"] == c.name and k["ts"] * 1e-6 == c.start_s)
        assert c.duration_s == pytest.approx(k["dur"] * 1e-6)
        assert c.stream == k["args"]["stream"] and c.device == 0


def test_gpu_style_trace_gemms_and_attention():
    t = parse_kineto_trace(GPU)
    shapes = [(g.aten_op, g.batch, g.m, g.n, g.k, g.dtype) for g in t.gemms]
    assert shapes == [("aten::mm", 1, 4096, 1024, 8192, "bfloat16"),
                      ("aten::addmm", 1, 4096, 1024, 4096, "bfloat16"),  # innermost op under aten::linear
                      ("aten::bmm", 32, 2048, 2048, 128, "bfloat16")]
    mm = t.gemms[0]
    assert mm.flops == 2 * 4096 * 1024 * 8192
    assert mm.achieved_flops == pytest.approx(2 * 4096 * 1024 * 8192 / 410e-6)
    fwd, bwd = t.attentions
    assert (fwd.backward, bwd.backward) == (False, True)
    for a in (fwd, bwd):
        assert a.aten_op.startswith("aten::_flash_attention")
        assert (a.batch, a.heads, a.kv_heads, a.seq_q, a.seq_k, a.head_dim) == (1, 32, 8, 8192, 8192, 128)
    assert fwd.flops == 4 * 32 * 8192 * 8192 * 128
    assert bwd.flops == pytest.approx(2.5 * fwd.flops)
    names = {g.name for g in t.gemms} | {a.name for a in t.attentions} | {c.name for c in t.collectives}
    assert not any("elementwise" in n for n in names)


def test_real_cpu_gloo_trace():
    """Recorded by the harness: torchrun -nproc 2 -m simulator.measure --op allreduce --op allgather
    --op reducescatter -b 1K -e 2K -n 2 -w 1 --profile ... (see tests/unit/test_measure.py)."""
    t = parse_kineto_trace(CPU)
    assert (t.backend, t.world_size) == ("gloo", 2)
    float_runs = [c for c in t.collectives if c.dtype == "float"]
    assert all(c.backend == "gloo" and c.group_size == 2 and c.duration_s > 0 for c in float_runs)
    counts: dict[tuple[str, int], int] = {}
    for c in float_runs:
        counts[(c.op, c.size_bytes)] = counts.get((c.op, c.size_bytes), 0) + 1
    # per size: (1 warm-up + 2 timed) calls per measured half; torch's AllReduce is in-place only
    per_half = 1 + 2
    assert counts == {("allreduce", 1024): per_half, ("allreduce", 2048): per_half,
                      ("allgather", 1024): 2 * per_half, ("allgather", 2048): 2 * per_half,
                      ("reducescatter", 1024): 2 * per_half, ("reducescatter", 2048): 2 * per_half}
    # one float64 AllReduce per timing averages the time over ranks: 2 + 4 + 4 timings
    assert sum(1 for c in t.collectives if c.op == "allreduce" and c.dtype == "double" and c.size_bytes == 8) == 10
    assert CPU.stat().st_size < 300_000


@pytest.mark.parametrize("content, what", [
    ("not json at all", "not valid JSON"),
    ('{"otherTool": []}', "traceEvents"),
    ('[{"ph": "X"}]', "traceEvents"),
    ('{"traceEvents": {"a": 1}}', "traceEvents"),
])
def test_not_a_kineto_trace(tmp_path: Path, content: str, what: str):
    p = tmp_path / "t.json"
    p.write_text(content)
    with pytest.raises(InputError, match=what) as exc:
        parse_kineto_trace(p)
    assert str(p) in str(exc.value)


def test_missing_trace():
    with pytest.raises(InputError, match="no such file"):
        parse_kineto_trace("/nonexistent/trace.json")


def test_gzip_trace(tmp_path: Path):
    import gzip

    p = tmp_path / "t.json.gz"
    p.write_bytes(gzip.compress(GPU.read_bytes()))
    assert len(parse_kineto_trace(p).collectives) == 6


def test_kernel_without_launch_keeps_name_only():
    data = {"traceEvents": [{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllGather_RING_SIMPLE(x)",
                             "ts": 10.0, "dur": 5.0, "pid": 0, "tid": 7, "args": {"correlation": 1, "device": 0}}]}
    (c,) = parse_kineto_data(data).collectives
    assert (c.op, c.algorithm, c.protocol, c.size_bytes, c.group_size) == ("allgather", "ring", "simple", None, None)

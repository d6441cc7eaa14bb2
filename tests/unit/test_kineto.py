"""Kineto (PyTorch profiler) trace parser: NCCL/GEMM/attention kernels with sizes and shapes from
the launching CPU ops, on a hand-made GPU-style trace and a real CPU/gloo trace."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml

from simulator.calibration.kineto import (_CpuIndex, attention_shape, gemm_shape, parse_kineto_data,
                                          parse_kineto_trace, parse_nccl_kernel_name)
from simulator.cli import main
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


def _gpu_fixture() -> dict:
    return json.loads(GPU.read_text())


@pytest.mark.parametrize("bad", [None, "NaN", float("inf"), "12.5", [1], True])
def test_kernels_without_a_usable_timestamp_are_left_out_and_named(tmp_path, capsys, bad):
    """A kernel whose ts or dur is missing, NaN or of another type is reported, never turned
    into a NaN in the calibrated overlay."""
    data = _gpu_fixture()
    kernels = [e for e in data["traceEvents"] if e.get("cat") == "kernel"]
    gemm = next(e for e in kernels if "gemm" in e["name"].lower())
    for e in kernels[:3]:
        if bad is None:
            e.pop("ts")
        else:
            e["dur" if e is gemm else "ts"] = bad
    path = tmp_path / "t.json"
    # json.dumps writes NaN/Infinity literals, as a broken exporter would
    path.write_text(json.dumps(data).replace('"NaN"', "NaN"))
    trace = parse_kineto_trace(path)
    assert trace.unusable and all("left out" in u for u in trace.unusable)
    assert "kernel event(s)" in trace.unusable[0]
    for ev in trace.gemms + trace.attentions + trace.collectives:
        assert math.isfinite(ev.start_s) and math.isfinite(ev.duration_s)
    out = tmp_path / "o.yaml"
    assert main(["calibrate", str(path), "--hardware", "dgx-h100", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "left out" in err and "traceEvents[" in err
    def numbers(tree):
        if isinstance(tree, dict):
            return [x for v in tree.values() for x in numbers(v)]
        if isinstance(tree, list):
            return [x for v in tree for x in numbers(v)]
        return [tree] if isinstance(tree, float) else []

    values = numbers(yaml.safe_load(out.read_text()))
    assert values and all(math.isfinite(v) for v in values)


@pytest.mark.parametrize("field,value", [
    ("args", "not a mapping"), ("name", 12345), ("args.Input Dims", "abc"), ("args.correlation", [1, 2]),
    ("args.In msg nelems", "many"), ("args.Out msg nelems", -5), ("args.Group size", 1e300),
    ("args.Input Dims", [[-4, 4096], [4096, 4096]]), ("distributedInfo.pg_config", 7),
])
def test_wrong_typed_fields_are_exit_0_or_2_never_a_traceback(tmp_path, capsys, field, value):
    data = _gpu_fixture()
    if field.startswith("distributedInfo."):
        data["distributedInfo"] = {field.split(".", 1)[1]: value}
    else:
        for e in data["traceEvents"]:
            if e.get("ph") == "X":
                if field.startswith("args.") and isinstance(e.get("args"), dict):
                    e["args"][field.split(".", 1)[1]] = value
                elif not field.startswith("args."):
                    e[field] = value
    path = tmp_path / "t.json"
    path.write_text(json.dumps(data))
    trace = parse_kineto_trace(path)
    for ev in trace.gemms:
        assert ev.flops is None or ev.flops > 0
    rc = main(["calibrate", str(path), "--hardware", "dgx-h100", "-o", str(tmp_path / "o.yaml")])
    err = capsys.readouterr().err
    assert rc in (0, 2) and "Traceback" not in err and "internal error" not in err


def test_gzipped_trace_is_read_as_a_stream(tmp_path):
    import gzip

    path = tmp_path / "t.json.gz"
    with gzip.open(path, "wt") as fh:
        fh.write(GPU.read_text())
    plain, gz = parse_kineto_trace(GPU), parse_kineto_trace(path)
    assert (gz.collectives, gz.gemms, gz.attentions) == (plain.collectives, plain.gemms, plain.attentions)


def test_enclosing_ops_are_found_without_scanning_every_earlier_op():
    """Many sibling CPU ops then a deep stack: the answer is the stack, innermost first."""
    ops = [{"ts": float(i), "dur": 0.5, "name": f"leaf{i}"} for i in range(10_000)]
    outer = {"ts": 0.0, "dur": 20_000.0, "name": "outer"}
    inner = {"ts": 10_000.0, "dur": 100.0, "name": "inner"}
    index = _CpuIndex([outer, *ops, inner])
    assert [e["name"] for e in index.enclosing(None, None, 10_050.0)] == ["inner", "outer"]
    assert [e["name"] for e in index.enclosing(None, None, 5.25)] == ["leaf5", "outer"]
    assert [e["name"] for e in index.enclosing(None, None, 5.75)] == ["outer"]

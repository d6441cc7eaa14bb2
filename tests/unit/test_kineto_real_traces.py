"""Real PyTorch profiler traces (tests/fixtures/kineto/PROVENANCE.md) through the parser,
`calibrate` and `compare-trace`, and the whole-step figures of a trace checked against sums
computed from the raw events; the interval arithmetic against closed forms."""

from __future__ import annotations

import gzip
import json
import statistics
from pathlib import Path

import pytest
import yaml

from simulator.cli import main

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "kineto"
A100 = FIX / "hta_a100x2_ddp_nccl2.17.json.gz"
MI250 = FIX / "hta_mi250_minitoy_train_rocm6.2.json.gz"
SAMPLED = FIX / "hta_rank0_of_128_sendrecv_sampled.json.gz"


def _raw(path: Path) -> dict:
    return json.loads(gzip.decompress(path.read_bytes()))


def test_fixtures_are_small_gzip_and_documented():
    files = sorted(FIX.glob("hta_*.json.gz"))
    assert len(files) == 3 and sum(f.stat().st_size for f in files) < 1_000_000
    provenance = (FIX / "PROVENANCE.md").read_text()
    for f in files:
        assert f.read_bytes()[:2] == b"\x1f\x8b" and f.name in provenance


def test_union_and_uncovered_lengths():
    from simulator.calibration.trace_steps import uncovered_length, union_length

    assert union_length([(0, 2), (1, 3), (5, 6)]) == 4
    assert union_length([]) == 0
    # comm [0,4) and [6,8); compute [1,2) and [3,7): exposed = [0,1) + [2,3) + [7,8) = 3
    assert uncovered_length([(0, 4), (6, 8)], [(1, 2), (3, 7)]) == 3
    assert uncovered_length([(0, 4)], []) == 4 and uncovered_length([(1, 2)], [(0, 5)]) == 0


def test_measured_steps_of_a_hand_made_trace():
    """Two ProfilerSteps; kernels belong to the step that launched them, even when they run
    after the annotation ended."""
    from simulator.calibration.trace_steps import measure_steps

    def k(name, ts, dur, corr):
        return {"ph": "X", "cat": "kernel", "name": name, "ts": ts, "dur": dur,
                "args": {"device": 0, "correlation": corr}}

    def launch(ts, corr):
        return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": ts, "dur": 1,
                "args": {"correlation": corr}}

    events = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "ts": 0, "dur": 100},
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#8", "ts": 100, "dur": 120},
        launch(1, 1), k("sm80_gemm", 10, 40, 1),                     # compute [10, 50)
        launch(2, 2), k("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 30, 40, 2),  # comm [30, 70): 20 exposed
        launch(99, 3), k("sm80_gemm", 105, 10, 3),                   # launched in step 7, runs in step 8's window
        launch(150, 4), k("ncclKernel_SendRecv_RING_SIMPLE", 160, 30, 4),      # step 8: all exposed
    ]
    m = measure_steps({"traceEvents": events})
    (a, b) = m.steps
    assert (a.step, a.kernels) == (7, 3) and a.step_s == pytest.approx(100e-6)
    assert a.compute_s == pytest.approx(50e-6) and a.comm_s == pytest.approx(40e-6)
    assert a.exposed_comm_s == pytest.approx(20e-6) and a.gpu_span_s == pytest.approx(105e-6)
    assert (b.step, b.kernels, b.compute_s) == (8, 1, 0.0) and b.step_s == pytest.approx(120e-6)
    assert b.exposed_comm_s == pytest.approx(30e-6)


def test_parser_reads_the_real_traces():
    from simulator.calibration.kineto import parse_kineto_trace

    a100 = parse_kineto_trace(A100)
    sized = [c for c in a100.collectives if c.size_bytes]
    assert len(a100.collectives) == len(sized) == 21
    assert {c.op for c in sized} == {"allreduce", "broadcast"} and {c.group_size for c in sized} == {2}
    # 2,049,000 floats -> the first bucket: In msg nelems x 4 bytes
    assert min(c.size_bytes for c in sized if c.op == "allreduce") == 2_049_000 * 4
    mi250 = parse_kineto_trace(MI250)
    assert [(g.aten_op, g.m, g.n, g.k) for g in mi250.gemms] == [("aten::addmm", 5, 128, 128), ("aten::mm", 128, 128, 5)]
    assert all(g.name.startswith("Cijk_") for g in mi250.gemms)  # rocBLAS/Tensile kernels are GEMMs


@pytest.mark.parametrize("path", [A100, SAMPLED])
def test_step_figures_match_sums_over_the_raw_events(path):
    from simulator.calibration.trace_steps import measure_steps, union_length

    raw = _raw(path)
    m = measure_steps(raw)
    steps = sorted((e["ts"], e["dur"], e["name"]) for e in raw["traceEvents"]
                   if str(e.get("name", "")).startswith("ProfilerStep#"))
    assert [s.step for s in m.steps] == [int(n.split("#")[1]) for _, _, n in steps]
    assert [s.step_s for s in m.steps] == pytest.approx([d * 1e-6 for _, d, _ in steps])
    kernels = [e for e in raw["traceEvents"] if e.get("cat") == "kernel"]
    assert sum(s.kernels for s in m.steps) <= len(kernels)
    nccl = [(e["ts"] * 1e-6, (e["ts"] + e["dur"]) * 1e-6) for e in kernels if e["name"].startswith("nccl")]
    assert sum(s.comm_s for s in m.steps) == pytest.approx(union_length(nccl), rel=1e-9)
    for s in m.steps:
        assert 0 <= s.exposed_comm_s <= s.comm_s and s.compute_s + s.exposed_comm_s <= s.gpu_span_s * (1 + 1e-9)


def _a100_scenario(tmp_path: Path) -> Path:
    doc = {"name": "a100-2gpu", "hardware": "dgx-a100", "nodes": 1,
           "model": {"layers": 2, "hidden": 1024, "heads": 16, "vocab": 32000, "seq_len": 1024},
           "training": {"micro_batch": 1, "global_batch": 8, "dtype": "bf16"}, "parallel": {}}
    path = tmp_path / "a100.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.slow  # parses a 10 MB trace and simulates a step: ~4 s of CPU
def test_compare_trace_reads_a_real_gzip_trace_and_compares_the_whole_step(tmp_path, capsys):
    out = tmp_path / "cmp.json"
    assert main(["compare-trace", str(_a100_scenario(tmp_path)), str(A100), "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "whole step (median of 3 profiled step(s))" in printed and "exposed communication" in printed
    doc = json.loads(out.read_text())
    assert doc["inputs"]["trace"]["path"] == str(A100)
    assert len([e for e in doc["events"] if e["category"] == "collective"]) == 21
    durations = [e["dur"] * 1e-6 for e in _raw(A100)["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep#")]
    step = doc["step"]
    assert step["steps"] == 3 and step["measured_step_s"] == pytest.approx(statistics.median(durations))
    assert 0 < step["measured_exposed_comm_s"] <= step["measured_comm_s"]
    assert step["predicted_step_s"] > 0 and step["step_error"] == pytest.approx(
        step["predicted_step_s"] / step["measured_step_s"] - 1)
    assert main(["compare-trace", str(_a100_scenario(tmp_path)), str(A100), "--kernels-only", "--json", "-"]) == 0
    assert json.loads(capsys.readouterr().out)["step"] is None


def test_calibrate_reads_the_real_traces_and_says_what_it_could_not_use(tmp_path, capsys):
    assert main(["calibrate", str(A100), "--hardware", "dgx-a100", "-o", str(tmp_path / "a.yaml")]) == 2
    err = capsys.readouterr().err
    assert "without a shape" in err and "21 collective kernels not fitted" in err
    assert main(["calibrate", str(MI250), "--hardware", "mi300x", "-o", str(tmp_path / "m.yaml")]) == 0
    overlay = (tmp_path / "m.yaml").read_text()
    assert "Kineto trace: 2 GEMM and 0 attention kernels with shapes" in overlay

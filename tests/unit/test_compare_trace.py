"""`clustersim compare-trace` and simulator/calibration/trace_compare.py on the Kineto fixtures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simulator.calibration.kineto import parse_kineto_trace
from simulator.calibration.trace_compare import compare_trace
from simulator.cli import main
from simulator.config.scenario import load_scenario
from simulator.costs.compute import gemm_efficiency
from simulator.costs.gemm_shape import shape_efficiency

ROOT = Path(__file__).resolve().parents[2]
GPU_TRACE = ROOT / "tests" / "fixtures" / "kineto" / "gpu_style_trace.json"
CPU_TRACE = ROOT / "tests" / "fixtures" / "kineto" / "cpu_gloo_trace.json"
SCENARIO = ROOT / "scenarios" / "quickstart.yaml"


@pytest.fixture(scope="module")
def comparison():
    return compare_trace(load_scenario(SCENARIO), parse_kineto_trace(GPU_TRACE))


def test_every_shaped_kernel_is_compared(comparison):
    trace = parse_kineto_trace(GPU_TRACE)
    cats = [e.category for e in comparison.events]
    assert cats.count("gemm") == sum(1 for g in trace.gemms if g.flops)
    assert cats.count("attention") == sum(1 for a in trace.attentions if a.flops)
    modelled = [c for c in trace.collectives if c.size_bytes and c.group_size]
    assert cats.count("collective") == len(modelled)
    assert len(comparison.events) + len(comparison.skipped) == len(trace.gemms) + len(trace.attentions) + len(trace.collectives)


def test_gemm_prediction_is_the_roofline_of_the_measured_shape(comparison):
    scn = load_scenario(SCENARIO)
    gpu = scn.profile.gpu
    events = {e.start_s: e for e in comparison.events if e.category == "gemm"}
    for g in parse_kineto_trace(GPU_TRACE).gemms:
        e = events[g.start_s]
        flops = 2.0 * g.batch * g.m * g.n * g.k
        hbm = 2.0 * g.batch * (g.m * g.k + g.k * g.n + g.m * g.n)  # bf16 operands and result
        # the shape model at the profile's plateau (the curve's top), batch of g.batch products
        plateau = gemm_efficiency(gpu, gpu.gemm_efficiency[-1].flops)
        eff = shape_efficiency(g.m, g.n, g.k, g.batch, gpu.sms, gpu.peak_flops("bf16"), plateau)
        expected = max(flops / (gpu.peak_flops("bf16") * eff),
                       hbm / (gpu.hbm_Bps * gpu.hbm_efficiency))
        assert e.predicted_s == pytest.approx(expected, rel=1e-6)
        assert e.measured_s == pytest.approx(g.duration_s)
        assert e.error == pytest.approx(e.predicted_s / e.measured_s - 1)


def test_category_summary(comparison):
    cats = {c.category: c for c in comparison.by_category()}
    for cat, c in cats.items():
        errs = sorted(abs(e.error) for e in comparison.events if e.category == cat)
        assert c.worst_abs_error == errs[-1]
        assert min(errs) <= c.median_abs_error <= max(errs)
        assert c.measured_s == pytest.approx(sum(e.measured_s for e in comparison.events if e.category == cat))


def test_cli_writes_table_json_and_png(tmp_path, capsys):
    png, js = tmp_path / "cmp.png", tmp_path / "cmp.json"
    assert main(["compare-trace", str(SCENARIO), str(GPU_TRACE), "--plot", str(png), "--json", str(js)]) == 0
    out = capsys.readouterr().out
    assert "median |err|" in out and "collective" in out and "gemm" in out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    data = json.loads(js.read_text())
    assert {c["category"] for c in data["categories"]} == {"collective", "gemm", "attention"}
    assert all(ev["predicted_s"] > 0 and ev["measured_s"] > 0 for ev in data["events"])


def test_cli_gloo_only_trace_exit_2(capsys):
    assert main(["compare-trace", str(SCENARIO), str(CPU_TRACE)]) == 2
    err = capsys.readouterr().err
    assert str(CPU_TRACE) in err and "gloo" in err


def test_cli_other_tool_trace_exit_2(tmp_path, capsys):
    other = tmp_path / "other.json"
    other.write_text('{"traceEvents": [{"name": "x", "ph": "X", "ts": 0, "dur": 1, "pid": 0, "tid": 0}]}')
    assert main(["compare-trace", str(SCENARIO), str(other)]) == 2
    assert "Kineto" in capsys.readouterr().err

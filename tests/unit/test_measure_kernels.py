"""The kernel table (calibration/kernel_table.py), the harness that writes it
(simulator/measure_kernels.py, on CPU here) and `clustersim calibrate` reading it."""

from __future__ import annotations

import pytest

from simulator.calibration.kernel_table import KernelRow, KernelTable, format_table, read_kernel_table
from simulator.cli import main
from simulator.config.hardware import load_profile
from simulator.costs.attention_shape import shape_factor
from simulator.costs.compute import gemm_efficiency
from simulator.errors import InputError
from simulator.measure_kernels import preset_gemm_shapes


def test_preset_shapes_are_the_layer_gemms_of_each_tp_degree():
    h, kv, d, f, T = 4096, 8, 128, 14336, 4096  # llama3-8b, 4096 tokens
    shapes = {(s.m, s.n, s.k) for s in preset_gemm_shapes(["llama3-8b"], [1, 8], T, "dgx-h200")}
    for t in (1, 8):
        forward = {(T, (h + 2 * kv * d) // t, h), (T, h, h // t), (T, 2 * f // t, h), (T, h, f // t)}
        assert forward <= shapes, t
    # GPT-3 175B has 96 heads: TP 64 does not divide a node and is skipped, not an error
    assert preset_gemm_shapes(["gpt3-175b"], [64], T, "dgx-h200") == []


def _table(h200) -> KernelTable:
    """bf16 GEMMs at 50% / 70% of peak, fp8 GEMMs at 0.9 x the bf16 fraction, flash3 attention
    at 55% / 40% on its computed (causal) FLOPs."""
    rows = []
    bf16, fp8 = h200.gpu.peak_flops("bf16"), h200.gpu.peak_flops("fp8")
    for (m, n, k), eff in (((1024, 1024, 1024), 0.5), ((8192, 8192, 8192), 0.7)):
        flops = 2.0 * m * n * k
        rows.append(KernelRow("gemm", "cublas", "bf16", "fwd", flops / (eff * bf16) * 1e6, m=m, n=n, k=k))
        rows.append(KernelRow("gemm", "cublas-fp8", "fp8", "fwd", flops / (0.9 * eff * fp8) * 1e6, m=m, n=n, k=k))
    for direction, eff, factor in (("fwd", 0.55, 1.0), ("bwd", 0.40, 2.5)):
        seq, b, heads, d = 8192, 2, 32, 128
        flops = 4.0 * b * heads * seq * seq * d * (seq + 1) / (2 * seq) * factor
        # the time the model gives an 8K kernel when the (16K) figure is eff (a backward with the
        # profile's per-CTA cost of the backward)
        c0 = h200.gpu.attention_cta_overhead("flash3", direction == "bwd")
        shaped = eff * shape_factor(seq, seq, True, d, "flash3", c0)
        rows.append(KernelRow("attention", "flash3", "bf16", direction, flops / (shaped * bf16) * 1e6,
                              batch=b, heads=heads, seq=seq, head_dim=d))
    return KernelTable(rows, {"device": "synthetic", "date": "2026-11-30"})


def test_table_round_trips(tmp_path):
    h200 = load_profile("dgx-h200")
    table = _table(h200)
    path = tmp_path / "t.csv"
    path.write_text(format_table(table))
    back = read_kernel_table(path)
    assert back.header == table.header
    assert [(r.kind, r.m, r.seq, r.direction) for r in back.rows] == [(r.kind, r.m, r.seq, r.direction) for r in table.rows]
    assert [r.time_us for r in back.rows] == pytest.approx([r.time_us for r in table.rows], abs=1e-3)


def test_calibrate_fits_the_compute_model_to_a_kernel_table(tmp_path, capsys):
    h200 = load_profile("dgx-h200")
    path = tmp_path / "h200.csv"
    path.write_text(format_table(_table(h200)))
    out = tmp_path / "h200-compute.yaml"
    assert main(["calibrate", str(path), "--hardware", "dgx-h200", "-o", str(out)]) == 0
    assert "kernel table: 4 GEMM and 2 attention rows (device: synthetic, date: 2026-11-30)" in out.read_text()
    cal = load_profile(str(out))
    assert [p.efficiency for p in cal.gpu.gemm_efficiency] == pytest.approx([0.5, 0.7], abs=1e-4)
    assert cal.gpu.fp8_gemm_efficiency_scale == pytest.approx(0.9, abs=1e-3)
    assert gemm_efficiency(cal.gpu, 2.0 * 8192**3, "fp8") == pytest.approx(0.63, abs=1e-3)
    assert cal.gpu.attention_efficiency["flash3"].fwd == pytest.approx(0.55, abs=1e-4)
    assert cal.gpu.attention_efficiency["flash3"].bwd == pytest.approx(0.40, abs=1e-4)


def test_bad_kernel_table_row_is_exit_2_with_file_and_line(tmp_path, capsys):
    h200 = load_profile("dgx-h200")
    text = format_table(_table(h200)).splitlines()
    i = next(j for j, line in enumerate(text) if line.startswith("gemm,"))
    text[i] = text[i].replace("gemm,cublas,bf16,fwd,", "gemm,cublas,bf16,sideways,")
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join(text) + "\n")
    with pytest.raises(InputError, match="direction"):
        read_kernel_table(bad)
    out = tmp_path / "o.yaml"
    assert main(["calibrate", str(bad), "--hardware", "dgx-h200", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:{i + 1}" in err and "Traceback" not in err and not out.exists()


def test_harness_runs_on_cpu_and_writes_a_table_calibrate_reads(tmp_path, capsys):
    pytest.importorskip("torch")
    from simulator.measure_kernels import main as measure

    path = tmp_path / "cpu.csv"
    assert measure(["--only-shapes", "--shape", "64x64x64", "--shape", "256x128x64", "--seq", "64", "128",
                    "--heads", "2", "--head-dim", "16", "--tokens", "256", "--iters", "2", "--warmup", "1",
                    "--device", "cpu", "-o", str(path)]) == 0
    table = read_kernel_table(path)
    assert {"date", "device", "torch", "command"} <= set(table.header)
    assert table.header["command"].startswith("python -m simulator.measure_kernels --only-shapes --shape 64x64x64")
    gemms = [r for r in table.rows if r.kind == "gemm"]
    attn = [r for r in table.rows if r.kind == "attention"]
    assert [(r.m, r.n, r.k) for r in gemms] == [(64, 64, 64), (256, 128, 64)]
    assert sorted((r.seq, r.batch, r.direction) for r in attn) == [(64, 4, "bwd"), (64, 4, "fwd"), (128, 2, "bwd"),
                                                                   (128, 2, "fwd")]
    assert all(r.time_us > 0 for r in table.rows)
    # CPU fp32 kernels say nothing about a GPU's bf16 tensor cores: calibrate reads the table
    # and leaves the curves at the datasheet, saying why
    out = tmp_path / "o.yaml"
    assert main(["calibrate", str(path), "--hardware", "dgx-h200", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "gemm_efficiency" in err and "cpu-math" in err


def test_bad_options_are_exit_2(capsys):
    from simulator.measure_kernels import main as measure

    assert measure(["--only-shapes", "--shape", "64x64", "--device", "cpu"]) == 2
    assert "MxNxK" in capsys.readouterr().err

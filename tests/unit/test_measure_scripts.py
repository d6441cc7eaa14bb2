"""The measurement scripts (benchmarks/measure_reference_kernels.py, measure_gpt_step.py) run end
to end in their quick mode on the CPU build of torch and write the CSVs the data files
were made from: their columns and provenance headers, so that a user can measure their own GPU."""

from __future__ import annotations

import csv
import importlib.util
import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _read(path: Path) -> tuple[list[str], list[dict]]:
    lines = path.read_text().splitlines()
    header = [line for line in lines if line.startswith("#")]
    return header, list(csv.DictReader(line for line in lines if not line.startswith("#")))


def test_measure_kernels_quick(tmp_path):
    mk = _load("measure_reference_kernels")
    assert mk.main(["--out", str(tmp_path), "--quick", "--sections", "hbm,gemm,memory_bound,host,launch_gap,adam"]) == 0
    header, gemm = _read(tmp_path / "gemm.csv")
    assert header[0].startswith("# what: GEMM") and json.loads(header[1][len("# environment: "):])["torch"]
    assert len(gemm) == 8 and {r["dtype"] for r in gemm} == {"bf16"}  # no fp8 without a GPU
    for r in gemm:  # the derived column is the FLOPs over the time
        m, n, k, ms = int(r["m"]), int(r["n"]), int(r["k"]), float(r["ms"])
        assert float(r["tflops"]) == pytest.approx(2 * m * n * k / (ms * 1e-3) / 1e12, rel=0.01, abs=0.01)
    _, bound = _read(tmp_path / "memory_bound.csv")
    mine = set(bound[0])
    with open(BENCH.parent / "data" / "kernels" / "liger_kernel_benchmarks.csv") as fh:
        liger = set(next(csv.reader(line for line in fh if not line.startswith("#"))))
    assert mine == liger  # Liger-Kernel's columns, so calibration/kernel_bandwidth.py reads the rows
    _, host = _read(tmp_path / "host.csv")
    assert all(float(r["us_per_op"]) > 0 for r in host)


def test_measure_gpt_step_quick(tmp_path):
    mg = _load("measure_gpt_step")
    assert mg.main(["--out", str(tmp_path), "--quick"]) == 0
    _, rows = _read(tmp_path / "gpt_step.csv")
    assert len(rows) == 1 and float(rows[0]["step_ms"]) > 0
    # the model's parameter count is GPT-2's layout: tied embedding, learned positions, biased linears
    h, layers, seq, vocab = 64, 2, 64, mg.VOCAB
    per_layer = 12 * h * h + 13 * h
    assert int(rows[0]["params"]) == vocab * h + seq * h + layers * per_layer + 2 * h

"""The host benchmarks behind ``simulator/costs/host.py`` run end to end on the CPU build of torch
and print the figures its docstring quotes: per kernel the model lists (and, under autocast, per
cast), and the optimizer's loop per parameter tensor. Quick mode: the figures are not checked, the
counts they divide by are."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def _run(script: str, *args: str) -> str:
    out = subprocess.run([sys.executable, str(BENCH / script), *args], capture_output=True, text=True, timeout=300,
                         cwd=BENCH.parent)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_gpt_block_bench_divides_by_the_models_kernels():
    """The GPT-2 model's 12 layers with embedding, head and loss: 126 forward and 248 backward kernels
    in the model's program, 122 and 146 casts more under autocast (the counts costs/host.py quotes)."""
    text = _run("bench_gpt_block_host.py", "--repeats", "2")
    assert "the model lists 126 forward and 248 backward kernels, and under autocast 122 and 146 casts" in text
    per_kernel = [float(x) for x in re.findall(r"([\d.]+) us per model kernel", text)]
    per_cast = [float(x) for x in re.findall(r"([\d.]+) us per cast", text)]
    assert len(per_kernel) == 4 and all(x > 0 for x in per_kernel) and len(per_cast) == 2


def test_host_overhead_bench_times_the_optimizer_loop():
    text = _run("bench_host_overhead.py", "--ops", "20", "--repeats", "2")
    for tensors in (148, 600):
        assert re.search(rf"AdamW\(fused=True\)\.step, per tensor of {tensors}\s*:\s+[\d.]+ us", text), text

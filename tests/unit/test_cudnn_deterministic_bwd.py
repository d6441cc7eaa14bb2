"""cuDNN's deterministic attention backward on Blackwell, as cudnn-frontend's 9.22.0 benchmark measures it
(data/kernels/cudnn_sdpa_deterministic_bwd_blackwell.csv): the pairs are transcribed consistently, and
what the deterministic algorithm costs depends on the head shape and the data type, which is why the
model prices it only for FlashAttention-2 (costs/attention_determinism.py) and not with one factor for
cuDNN (the findings)."""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[2] / "data" / "kernels" / "cudnn_sdpa_deterministic_bwd_blackwell.csv"


def _rows() -> list[dict[str, str]]:
    with DATA.open() as fh:
        return list(csv.DictReader(line for line in fh if not line.startswith("#")))


def test_pairs_are_one_shape_timed_twice():
    """230 pairs on GB200 and GB300, cuDNN 9.22.0; each pair's TFLOP/s x time is one FLOP count."""
    rows = _rows()
    assert len(rows) == 230
    assert {r["gpu"] for r in rows} == {"GB200", "GB300"} and {r["cudnn_backend_version"] for r in rows} == {"92200"}
    for r in rows:
        pairs = (("bwd_tflops", "bwd_ms"), ("bwd_tflops_deterministic", "bwd_ms_deterministic"))
        flops, flops_det = (float(r[t]) * float(r[m]) for t, m in pairs)
        assert flops_det == pytest.approx(flops, rel=0.01), r


def test_the_deterministic_cost_depends_on_the_head_and_the_type():
    """bfloat16: 1.09-1.29x at head dim 128, 1.27-1.31x at 64 (GPT-OSS), about nothing with MLA's 192/128
    heads (0.94-1.09); fp8 and mxfp8: 0.94-1.05 at every head."""
    ratios: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in _rows():
        dtype = "bf16" if r["dtype"] == "bfloat16" else "fp8"
        ratios[(dtype, r["head_dim_qk"])].append(float(r["bwd_ms_deterministic"]) / float(r["bwd_ms"]))
    bounds = {("bf16", "128"): (1.08, 1.30), ("bf16", "64"): (1.26, 1.32), ("bf16", "192"): (0.93, 1.09)}
    for key, values in ratios.items():
        lo, hi = bounds.get(key, (0.94, 1.05))
        assert lo <= min(values) and max(values) <= hi, (key, min(values), max(values))
    llama = [float(r["bwd_ms_deterministic"]) / float(r["bwd_ms"]) for r in _rows()
             if r["model"] == "llama3.1" and r["dtype"] == "bfloat16"]
    assert 1.08 <= min(llama) and max(llama) <= 1.21

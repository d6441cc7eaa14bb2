"""cuDNN's deterministic attention backward on Blackwell, as cudnn-frontend's 9.22.0 benchmark measures it
(data/kernels/cudnn_sdpa_deterministic_bwd_blackwell.csv): the pairs are transcribed consistently, and
what the deterministic algorithm costs depends on the head shape and the data type, so the model prices it
by head dim and mask for 16-bit heads and not at all for MLA and FP8 (costs/attention_determinism.py
``cudnn_blackwell_slowdown``), not with one factor."""

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


def _median_ratio(head_dim: str, causal: bool) -> float:
    import statistics

    return statistics.median(float(r["bwd_ms_deterministic"]) / float(r["bwd_ms"]) for r in _rows()
                             if r["dtype"] == "bfloat16" and r["head_dim_qk"] == head_dim
                             and (r["mask"] == "top_left") == causal)


def test_priced_ratios_are_the_measured_medians():
    """The model's table is the median pair of each 16-bit (head dim, mask) class of the file; head dim
    64 is measured causal (GPT-OSS's sliding window) only and prices both masks."""
    from simulator.costs.attention_determinism import CUDNN_BLACKWELL_DETERMINISTIC as table

    for (d, causal), ratio in table.items():
        measured = _median_ratio(str(d), True if d == 64 else causal)
        assert ratio == pytest.approx(measured, abs=0.006), (d, causal, measured)


def test_blackwell_cudnn_backward_takes_its_measured_ratio():
    """A deterministic cuDNN backward (flash3) on GB200 costs the table's ratio more at head dim 128,
    nothing with MLA's heads or in FP8, and on H100 (no published pair) nothing."""
    from simulator.config.hardware import load_profile
    from simulator.costs.compute import compute_time
    from simulator.schedule.ir import ComputeOp, Tag

    def bwd(d: int, heads: int, dtype: str = "bf16") -> ComputeOp:
        return ComputeOp(name="attn.bwd", kind="attention", tag=Tag("bwd", 0, 0), flops=2.5e12, dtype=dtype,
                         attention_kernel="flash3", attention_shape=(8192, 8192, d, True),
                         deterministic_heads=heads)

    gb200, h100 = load_profile("gb200-nvl72").gpu, load_profile("dgx-h100").gpu
    for d, ratio in ((128, 1.13), (64, 1.28), (192, 1.0)):
        assert compute_time(bwd(d, 32), gb200) / compute_time(bwd(d, 0), gb200) == pytest.approx(ratio, rel=0.01)
    assert compute_time(bwd(128, 32, "fp8"), gb200) == compute_time(bwd(128, 0, "fp8"), gb200)
    assert compute_time(bwd(128, 32), h100) == compute_time(bwd(128, 0), h100)

"""training.fused_attention_dropout: the Philox draws of in-kernel attention dropout (costs/attention_dropout.py)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from simulator.config.hardware import load_profile
from simulator.config.workload import Training
from simulator.costs import attention_dropout
from simulator.costs.compute import compute_time
from simulator.schedule.attention import FLASH_BWD_FACTOR, attention_flops, causal_fraction_diagonal
from simulator.schedule.ir import ComputeOp, Tag

ROOT = Path(__file__).resolve().parents[2]


def _pairs() -> list[dict[str, str]]:
    path = ROOT / "data/kernels/attention_dropout_pairs.csv"
    return list(csv.DictReader(line for line in path.open() if not line.startswith("#")))


def _per_element_pass(row: dict[str, str]) -> float:
    """The published increment over the computed score elements and the passes it covers."""
    b, h, s = int(row["batch"]), int(row["heads"]), int(row["seq"])
    elements = b * h * s * ((s + 1) / 2 if row["causal"] == "true" else s)
    passes = 2 if row["pass"] == "fwd_bwd" else 1
    return (float(row["ms_p01"]) - float(row["ms_p0"])) * 1e-3 / (elements * passes)


def _row(gpu: str, backend: str, layout: str) -> dict[str, str]:
    return next(r for r in _pairs() if r["gpu"] == gpu and r["backend"] == backend and r["layout"] == layout)


def test_the_constants_are_the_published_increments():
    # H200 cuDNN sbhd: +0.020 ms over 4 x 16 x 1,024 x 1,025 / 2 elements, twice: 0.298 ps
    assert attention_dropout.MEASURED["flash3"][0] == pytest.approx(_per_element_pass(_row("H200", "cudnn", "sbhd")))
    assert attention_dropout.MEASURED["flash3"][0] == pytest.approx(2.977e-13, rel=1e-3)
    # GB200 flash-attn 2: +0.033 ms over the same elements: 0.491 ps
    assert attention_dropout.MEASURED["flash2"][0] == pytest.approx(
        _per_element_pass(_row("GB200", "flash_attn_2", "thd")))
    assert attention_dropout.MEASURED["flash2"][0] == pytest.approx(4.913e-13, rel=1e-3)


def test_the_fa2_figure_moved_to_a100_meets_flashattention1_measured_there():
    a100 = load_profile("dgx-a100").gpu
    moved = attention_dropout.seconds_per_element("flash2", a100)
    assert moved == pytest.approx(4.913e-13 * 80.0 / 19.5, rel=1e-3)  # 2.02 ps
    # FlashAttention-1 on an A100, 8K and 16K tokens: forward and backward increments over 2 x elements
    rows = [r for r in _pairs() if r["backend"] == "flash_attn_1" and int(r["seq"]) >= 8192]
    per_pass = []
    for seq in (8192, 16384):
        fwd, bwd = (next(r for r in rows if r["seq"] == str(seq) and r["pass"] == p) for p in ("fwd", "bwd"))
        per_pass.append((_per_element_pass(fwd) + _per_element_pass(bwd)) / 2)
    assert per_pass[0] == pytest.approx(1.61e-12, rel=0.01)
    for measured in per_pass:
        assert 1.0 < moved / measured < 1.3


def test_an_attention_op_pays_its_elements_times_the_rate():
    h100 = load_profile("dgx-h100").gpu
    b, heads, s, d = 1, 32, 8192, 128
    frac = causal_fraction_diagonal(s)
    fwd = attention_flops(b, heads, s, s, d, frac)
    elements = b * heads * s * (s + 1) / 2
    for phase, flops in (("fwd", fwd), ("bwd", FLASH_BWD_FACTOR * fwd)):
        op = ComputeOp(name=f"L0.attn.core.{phase}", kind="attention", flops=flops, tag=Tag(phase, 0, 0),
                       causal_fraction=frac, attention_shape=(s, s, d, True))
        with_rng = ComputeOp(**{**{f: getattr(op, f) for f in op.__dataclass_fields__}, "attention_dropout": True})
        extra = compute_time(with_rng, h100) - compute_time(op, h100)
        assert extra == pytest.approx(elements * 2.977e-13, rel=1e-3)  # 0.32 ms a pass at this shape


def test_kernels_without_a_published_pair_add_nothing():
    a100 = load_profile("dgx-a100").gpu
    assert attention_dropout.seconds_per_element("flash1", a100) == 0.0
    assert attention_dropout.PRICED_KERNELS == {"flash2", "flash3"}


def test_fused_attention_dropout_needs_a_dropout():
    with pytest.raises(ValueError, match="fused_attention_dropout.*dropout: true"):
        Training(micro_batch=1, global_batch=8, dropout=False, fused_attention_dropout=True)

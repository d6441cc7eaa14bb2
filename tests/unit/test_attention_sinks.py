"""Attention sinks applied after the kernel (model.attention_sinks, training.attention_sink_kernel:
rescale, NeMo AutoModel's FlexAttention path for GPT-OSS): the eager rescale's bytes in closed
form, its place around the attention core, and nothing where the fused kernel applies them."""

from __future__ import annotations

from typing import Any

import pytest

from simulator.config.scenario import build_scenario
from simulator.schedule.build import build_program

B, S, HEADS, D = 2, 2048, 16, 64


def _data(kernel: str, sinks: bool = True) -> dict[str, Any]:
    return {"name": "sinks", "hardware": "dgx-h100", "nodes": 1,
            "model": {"layers": 2, "hidden": 1024, "heads": HEADS, "head_dim": D, "vocab": 32000, "seq_len": S,
                      "mlp": "swiglu", "attention_sinks": sinks},
            "training": {"micro_batch": B, "global_batch": 8 * B, "attention_sink_kernel": kernel},
            "parallel": {"tp": 1, "pp": 1}}


def _layer0(data: dict[str, Any]) -> list:
    return [op for op in build_program(build_scenario(data), 0) if op.name.startswith("L0.attn.")]


def test_rescale_bytes_in_closed_form():
    ops = {op.name: op for op in _layer0(_data("rescale"))}
    elements, rows = B * S * HEADS * D, B * S * HEADS
    fwd, bwd = ops["L0.attn.sink_rescale.fwd"], ops["L0.attn.sink_rescale.bwd"]
    # forward: out (bf16) x scale -> fp32 (2 + 4), cast back (4 + 2); per row lse - w and sigmoid (8 + 8)
    assert fwd.hbm_bytes == 12 * elements + 16 * rows and fwd.count == 4
    # backward: the cast's gradient (2 + 4), d out (4 + 4, cast 4 + 2), d scale (4 + 2 + 4, summed 4)
    assert bwd.hbm_bytes == (6 + 14 + 14) * elements + 16 * rows and bwd.count == 7


def test_rescale_follows_the_kernel_and_precedes_its_backward():
    ops = _layer0(_data("rescale"))
    names = [op.name for op in ops]
    fwd_core, bwd_core = names.index("L0.attn.core.fwd"), names.index("L0.attn.core.bwd")
    assert names.index("L0.attn.sink_rescale.fwd") == fwd_core + 1
    assert names.index("L0.attn.sink_rescale.bwd") < bwd_core


@pytest.mark.parametrize("kernel, sinks", [("fused", True), ("rescale", False)])
def test_no_rescale_where_the_kernel_holds_the_sinks(kernel, sinks):
    assert not [op for op in _layer0(_data(kernel, sinks)) if "sink" in op.name]


def test_gpt_oss_has_sinks():
    from simulator.config.workload import Model

    assert Model(preset="gpt-oss-120b").attention_sinks and not Model(preset="llama3-8b").attention_sinks

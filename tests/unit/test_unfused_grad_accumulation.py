"""``parallel.gradient_accumulation_fusion: false`` (schedule/data_parallel.py): without Megatron's
fused weight-gradient accumulation (before 2022), autograd's AccumulateGrad sums each micro-batch's
weight gradients into ``param.grad``. Closed forms per pipeline stage with fp16 gradients: the
first micro-batch's gradient is adopted (no kernel), each later one costs 6 bytes per parameter
(read 2 + 2, write 2); with fp32 main grads every micro-batch costs 10 (read 4 + 2, write 4)."""

from __future__ import annotations

import pytest

from simulator.schedule.build import build_schedule
from simulator.schedule.ir import ComputeOp
from simulator.schedule.shapes import stage_units
from tests.unit.test_schedule_invariants import make as small_scenario  # noqa: F401 (fixture)

GB, PP = 16, 2  # 2 nodes x 4 GPUs: dp 4, 4 micro-batches per stage


@pytest.fixture
def make(small_scenario):
    def _make(**parallel):
        return small_scenario({"pp": PP, "zero": 0, "overlap_grad_reduce": False, **parallel},
                              training={"global_batch": GB, "dtype": "fp16"})
    return _make


def _accumulations(scn, stage: int) -> list[ComputeOp]:
    prog = build_schedule(scn).programs[f"pp{stage}.cp0"]
    return [op for op in prog if isinstance(op, ComputeOp) and op.name.startswith("autograd.accumulate_grad")]


@pytest.mark.parametrize("stage", range(PP))
def test_fp16_gradients_accumulate_after_the_first_micro_batch(make, stage):
    scn = make(gradient_accumulation_fusion=False, grad_reduce_dtype="fp16")
    params = sum(m.numel for c in stage_units(scn, stage) for u in c for m in u.modules)
    ops = _accumulations(scn, stage)
    assert scn.n_micro == GB // scn.dp == 4
    assert len(ops) == scn.n_micro - 1  # the first micro-batch's gradient becomes param.grad
    assert sum(op.hbm_bytes for op in ops) == 6 * params * (scn.n_micro - 1)


def test_fp32_main_grads_accumulate_every_micro_batch(make):
    scn = make(gradient_accumulation_fusion=False, grad_reduce_dtype="fp32")
    params = sum(m.numel for c in stage_units(scn, 0) for u in c for m in u.modules)
    ops = _accumulations(scn, 0)
    assert len(ops) == scn.n_micro
    assert sum(op.hbm_bytes for op in ops) == 10 * params * scn.n_micro


def test_fused_accumulation_adds_no_kernel(make):
    assert not _accumulations(make(grad_reduce_dtype="fp16"), 0)
    assert not _accumulations(make(gradient_accumulation_fusion=False, zero=2, grad_reduce_dtype="fp16"), 0)


def test_the_gradient_sent_back_waits_for_the_accumulation(make):
    """AccumulateGrad runs inside the backward pass, before the pass's input gradient is sent on."""
    scn = make(gradient_accumulation_fusion=False, grad_reduce_dtype="fp16")
    prog = build_schedule(scn).programs["pp1.cp0"]
    sends = [op for op in prog if op.type == "p2p" and any(t.key.startswith("pp.grad") for t in op.sends)]
    waited = [s for s in sends if any(prog[d].name.startswith("autograd.accumulate_grad") for d in s.deps)]
    assert len(waited) == scn.n_micro - 1

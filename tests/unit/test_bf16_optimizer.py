"""``parallel.zero1_impl: deepspeed-bf16`` (schedule/data_parallel.py): DeepSpeed's BF16_Optimizer
as BLOOM ran it. Closed forms per pipeline stage: one fp32 accumulation pass of 18 bytes per
parameter after each micro-batch's backward, the whole fp32 gradient AllReduced over dp (4 bytes
per parameter), the bf16 parameters AllGathered (2 bytes per parameter)."""

from __future__ import annotations

import pytest

from simulator.config.scenario import build_scenario
from simulator.errors import InputError
from simulator.schedule.build import build_schedule
from simulator.schedule.data_parallel import HP_GRAD_UPDATE_BYTES
from simulator.schedule.ir import CommOp, ComputeOp
from simulator.schedule.shapes import stage_units
from tests.unit.test_schedule_invariants import PROFILE, SMALL

GB, PP = 16, 2  # 2 nodes x 4 GPUs: dp 4, 4 micro-batches per stage


@pytest.fixture
def make(tmp_path):
    (tmp_path / "p.yaml").write_text(PROFILE)

    def _make(**parallel):
        data = {"name": "bf16opt", "hardware": "p.yaml", "nodes": 2, "model": SMALL,
                "training": {"micro_batch": 1, "global_batch": GB},
                "parallel": {"pp": PP, "zero": 1, "overlap_grad_reduce": False, **parallel}}
        return build_scenario(data, source="bf16opt.yaml", base_dir=tmp_path)
    return _make


@pytest.mark.parametrize("stage", range(PP))
def test_deepspeed_bf16_optimizer_volumes(make, stage):
    scn = make(zero1_impl="deepspeed-bf16", grad_reduce_dtype="fp32")
    prog = build_schedule(scn).programs[f"pp{stage}.cp0"]
    params = sum(m.numel for c in stage_units(scn, stage) for u in c for m in u.modules)
    accum = [op for op in prog if isinstance(op, ComputeOp) and op.name.startswith("bf16_optimizer.update_hp_grads")]
    assert len(accum) == scn.n_micro == GB // (scn.dp)
    n = params
    assert all(op.hbm_bytes == HP_GRAD_UPDATE_BYTES * n for op in accum)
    grads = [op for op in prog if isinstance(op, CommOp) and op.name.startswith("dp.grad.")]
    gathers = [op for op in prog if isinstance(op, CommOp) and op.name.startswith("dp.param.allgather")]
    assert {op.op for op in grads} == {"allreduce"} and all(op.dtype == "fp32" for op in grads)
    assert sum(op.size_bytes for op in grads) == 4 * n
    assert sum(op.size_bytes for op in gathers) == 2 * n
    # the gradient sent back to the previous stage waits for the accumulation (DeepSpeed's
    # BackwardPass instruction runs update_hp_grads before SendGrad)
    if stage > 0:
        sends = [op for op in prog if op.type == "p2p" and any(t.key.startswith("pp.grad") for t in op.sends)]
        assert all(any(isinstance(prog[d], ComputeOp) and prog[d].name.startswith("bf16_optimizer") for d in s.deps)
                   for s in sends)
        assert sends


def test_megatron_zero1_has_no_accumulation_pass(make):
    prog = build_schedule(make()).programs["pp0.cp0"]
    assert not any(op.name.startswith("bf16_optimizer") for op in prog)
    assert {op.op for op in prog if isinstance(op, CommOp) and op.name.startswith("dp.grad.")} == {"reducescatter"}


def test_deepspeed_bf16_needs_zero1(tmp_path):
    (tmp_path / "p.yaml").write_text(PROFILE)
    data = {"name": "x", "hardware": "p.yaml", "nodes": 2, "model": SMALL,
            "training": {"micro_batch": 1, "global_batch": GB}, "parallel": {"zero": 0, "zero1_impl": "deepspeed-bf16"}}
    with pytest.raises(InputError, match="zero1_impl"):
        build_scenario(data, source="x.yaml", base_dir=tmp_path)

"""Model states and the optimizer step with ``training.master_dtype`` / ``optimizer_state_dtype``:
a model built and stepped in bf16 (NeMo AutoModel) against the fp32 master weights of mixed
precision, in bytes per parameter derived here in closed form."""

import pytest

from simulator.config.scenario import build_scenario
from simulator.errors import InputError
from simulator.schedule.build import build_schedule
from simulator.schedule.ir import CommOp
from simulator.schedule.memory import estimate_memory, model_state_bytes_per_param
from simulator.schedule.optimizer import multi_tensor_launches
from simulator.schedule.shapes import stage_units

MODEL = dict(layers=2, hidden=512, heads=8, seq_len=128, vocab=4096)


def _scn(training=None, parallel=None, nodes=1):
    t = dict(micro_batch=1, global_batch=8 * nodes, dtype="bf16")
    t.update(training or {})
    return build_scenario(dict(name="m", hardware="dgx-h100", nodes=nodes, model=MODEL, training=t,
                               parallel=parallel or {}), source="<test>")


def _numels(scn, shard):
    return [-(-m.numel // shard) for chunk in stage_units(scn, 0) for u in chunk for m in u.modules]


def _ops(scn):
    return list(next(iter(build_schedule(scn).programs.values())))


def _end(scn):
    return {op.name: op for op in _ops(scn) if op.tag.phase == "opt"}


FSDP2 = dict(zero=3, zero3_impl="fsdp2")


@pytest.mark.parametrize("training,per_param", [
    ({}, 4 + 4 + 8),  # torchtitan: fp32 sharded parameter, gradient and moments
    ({"master_dtype": "bf16", "optimizer": "foreach"}, 2 + 2 + 4),  # torch.optim over bf16 shards
    ({"master_dtype": "bf16", "optimizer_state_dtype": "fp32"}, 2 + 2 + 8),  # TE FusedAdam over bf16 shards
])
def test_fsdp2_model_states_follow_the_master_and_moment_dtypes(training, per_param):
    """FSDP2 over 8 ranks: the sharded parameter is the master, its gradient has the master's dtype
    (FSDP2 casts the reduced gradient back to it) and the optimizer holds two moments. Two
    micro-batches: the first's backward has made every gradient before the second's peak."""
    scn = _scn(dict(training, global_batch=16), FSDP2)
    m = estimate_memory(scn, 0)
    n = sum(_numels(scn, 1))
    assert (m.params + m.grads + m.optimizer) == pytest.approx(per_param * n / 8, rel=1e-3)
    master = 2 if training else 4
    assert m.params == m.grads == pytest.approx(master * n / 8, rel=1e-3)


def test_zero1_bf16_master_keeps_no_fp32_copy():
    """ZeRO-1 over 8 ranks, bf16 master and moments: 2 B weights + 2 B gradients + 4/8 B moments
    (mixed precision: 2 + 2 + (4 + 8)/8)."""
    assert model_state_bytes_per_param(1, 8, 2, master_bytes=2, state_bytes=2) == (2, 2, 0.5)
    assert model_state_bytes_per_param(1, 8, 2) == (2, 2, 12 / 8)
    scn = _scn({"master_dtype": "bf16", "optimizer": "foreach"}, dict(zero=1))
    m = estimate_memory(scn, 0)
    n = m.params / 2
    assert m.optimizer == pytest.approx(4 * n / 8)


@pytest.mark.parametrize("impl,training,per_param,depths", [
    ("foreach", {"master_dtype": "bf16"}, 40, (1, 2, 1, 3, 2, 1, 1, 3)),  # 6 x 2 + 14 x 2
    ("fused", {"master_dtype": "bf16", "optimizer_state_dtype": "fp32"}, 22, (4,)),  # 3 x 2 + 4 x 4, no copy
    ("fused", {"master_dtype": "bf16"}, 14, (4,)),  # 7 tensor accesses of 2 bytes
    ("fused", {}, 32, (4, 2)),  # 28 + the bf16 model weight written and the master read again
    ("foreach", {}, 80, (1, 2, 1, 3, 2, 1, 1, 3)),
])
def test_adam_step_bytes_per_parameter(impl, training, per_param, depths):
    scn = _scn(dict(training, optimizer=impl, grad_clip=False))
    step = _end(scn)["optimizer.step"]
    numels = _numels(scn, 1)
    assert step.hbm_bytes == per_param * sum(numels)
    assert step.count == sum(multi_tensor_launches(numels, d) for d in depths)


def test_grad_clip_reads_the_gradients_in_the_master_dtype():
    """FSDP2 over bf16 shards: the norm reads 2 bytes and the scaling 4 bytes per local parameter."""
    scn = _scn({"master_dtype": "bf16", "optimizer": "foreach"}, FSDP2)
    ops = _end(scn)
    n = sum(_numels(scn, 8))
    assert ops["grad_clip.norm"].hbm_bytes == 2 * n and ops["grad_clip.scale"].hbm_bytes == 4 * n


def test_fsdp2_collectives_gather_bf16_and_reduce_in_the_reduce_dtype():
    """The AllGather moves bf16 whatever the master dtype (MixedPrecisionPolicy param_dtype bf16);
    the ReduceScatter moves grad_reduce_dtype (AutoModel's MoE parallelizer: fp32 over bf16 shards)."""
    for training in ({}, {"master_dtype": "bf16", "optimizer": "foreach"}):
        ops = [op for op in _ops(_scn(training, dict(FSDP2, grad_reduce_dtype="fp32"))) if isinstance(op, CommOp)]
        ag = [op for op in ops if op.op == "allgather"]
        rs = [op for op in ops if op.op == "reducescatter"]
        assert ag and rs
        assert {op.dtype for op in ag} == {"bf16"} and {op.dtype for op in rs} == {"fp32"}
        # the same group ("fsdp.<ag|rs>.<group>..."): 4 bytes per reduced element against 2 per gathered one
        group = rs[0].name.split(".")[2]
        gathered = next(op.size_bytes for op in ag if op.name.split(".")[2] == group)
        assert rs[0].size_bytes == 2 * gathered


@pytest.mark.parametrize("training,parallel,field", [
    ({"master_dtype": "bf16", "optimizer": "foreach", "optimizer_state_dtype": "fp32"}, {}, "optimizer"),
    ({"dtype": "fp16", "optimizer": "fp16_optimizer", "master_dtype": "bf16"}, {}, "fp16"),
    ({"master_dtype": "bf16"}, {"zero": 1, "zero1_impl": "deepspeed-bf16"}, "deepspeed-bf16"),
])
def test_master_dtype_rejects_what_the_optimizer_cannot_do(training, parallel, field):
    with pytest.raises((InputError, ValueError), match=field):
        _scn(training, parallel)

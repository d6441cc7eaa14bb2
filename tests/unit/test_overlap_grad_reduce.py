"""``parallel.overlap_grad_reduce`` (schedule/data_parallel.py): with it (PyTorch DDP, Megatron
``--overlap-grad-reduce``) a bucket is reduced as soon as its gradients are ready, during the last
micro-batch's backward; without it (Megatron's default, DeepSpeed ZeRO-1/2 without
``overlap_comm``) every bucket waits for the whole backward (``finalize_model_grads``)."""

from __future__ import annotations

import pytest

from simulator.config.scenario import build_scenario
from simulator.schedule.build import build_schedule
from simulator.schedule.ir import CommOp, ComputeOp
from tests.unit.test_schedule_invariants import PROFILE, SMALL


@pytest.fixture
def make(tmp_path):
    (tmp_path / "p.yaml").write_text(PROFILE)

    def _make(parallel):
        data = {"name": "ogr", "hardware": "p.yaml", "nodes": 2, "model": SMALL,
                "training": {"micro_batch": 1, "global_batch": 16},
                "parallel": {"ddp_bucket_elements": 200_000, **parallel}}  # several buckets
        return build_scenario(data, source="ogr.yaml", base_dir=tmp_path)
    return _make


def _grads(prog):
    return [(i, op) for i, op in enumerate(prog) if isinstance(op, CommOp) and op.name.startswith("dp.grad.")]


def _last_backward_compute(prog) -> int:
    return max(i for i, op in enumerate(prog) if isinstance(op, ComputeOp) and op.tag.phase == "bwd")


@pytest.mark.parametrize("zero", [0, 1])
def test_without_overlap_every_bucket_waits_for_the_whole_backward(make, zero):
    on = build_schedule(make({"zero": zero})).programs["pp0.cp0"]
    off = build_schedule(make({"zero": zero, "overlap_grad_reduce": False})).programs["pp0.cp0"]
    last_on, last_off = _last_backward_compute(on), _last_backward_compute(off)
    # same buckets, same bytes
    assert sorted(op.size_bytes for _, op in _grads(on)) == sorted(op.size_bytes for _, op in _grads(off))
    assert len(_grads(off)) >= 2
    # with overlap, all but the last bucket start before backward ends; without, none does
    assert sum(i < last_on for i, _ in _grads(on)) >= 1
    assert all(i > last_off and last_off in op.deps for i, op in _grads(off))


def test_zero2_without_overlap_reduces_each_micro_batch_before_the_next(make):
    prog = build_schedule(make({"zero": 2, "overlap_grad_reduce": False})).programs["pp0.cp0"]
    grads = _grads(prog)
    mbs = sorted({op.tag.mb_index for _, op in grads})
    assert len(mbs) == 2  # global batch 16 over dp 8 = 2 micro-batches
    first_rs = max(i for i, op in grads if op.tag.mb_index == mbs[0])
    # the second micro-batch's forward compute waits (transitively) for the first's ReduceScatters
    second_fwd = min(i for i, op in enumerate(prog) if isinstance(op, ComputeOp) and op.tag.phase == "fwd"
                     and op.tag.mb_index == mbs[1])
    reach = set(prog[second_fwd].deps)
    frontier = list(reach)
    while frontier:
        j = frontier.pop()
        for d in prog[j].deps:
            if d not in reach:
                reach.add(d)
                frontier.append(d)
    assert first_rs in reach


def test_exposing_the_reduction_never_speeds_the_step(make):
    from simulator.simulation import simulate_scenario

    on = simulate_scenario(make({"zero": 1})).report
    off = simulate_scenario(make({"zero": 1, "overlap_grad_reduce": False})).report
    assert off.step_time_s > on.step_time_s


@pytest.mark.parametrize("zero,dtype", [(1, "bf16"), (2, "bf16"), (2, "fp32")])
def test_zero2_reduce_scatters_every_micro_batch_and_gathers_once(make, zero, dtype):
    """ZeRO-2 (DeepSpeed stage 2, ``allreduce_gradients`` in deepspeed/runtime/engine.py: "ZeRO
    stage >= 2 communicates during non gradient accumulation boundaries as well"): every
    micro-batch's backward ReduceScatters the gradients of every parameter, P elements in the
    reduce dtype, where the distributed optimizer (zero 1) does so once, in the last micro-batch;
    both AllGather the P updated bf16 parameters once after the step. No gradient AllReduce."""
    from simulator.schedule.flops import param_count

    scn = make({"zero": zero, "grad_reduce_dtype": dtype, "overlap_grad_reduce": False})
    prog = build_schedule(scn).programs["pp0.cp0"]
    P, g = param_count(scn.model), {"bf16": 2, "fp32": 4}[dtype]
    assert scn.n_micro == 2 and scn.dp == 8
    per_mb: dict[int, int] = {}
    for _, op in _grads(prog):
        assert op.op == "reducescatter" and op.axes == ("dp",)
        per_mb[op.tag.mb_index] = per_mb.get(op.tag.mb_index, 0) + op.size_bytes
    assert per_mb == ({mb: P * g for mb in range(scn.n_micro)} if zero == 2 else {scn.n_micro - 1: P * g})
    gathers = [op for op in prog if isinstance(op, CommOp) and op.name.startswith("dp.param.allgather")]
    assert sum(op.size_bytes for op in gathers) == P * 2 and all(op.op == "allgather" for op in gathers)
    assert len({op.name for op in gathers}) == len(gathers)

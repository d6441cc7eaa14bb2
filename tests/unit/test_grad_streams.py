"""The gradient-reduction / ZeRO group runs on its own NCCL stream, also when dp = 1
(schedule/data_parallel.py ``grad_stream``): Megatron reduces gradients over ``dp_cp_group`` and
DeepSpeed over its data-parallel group, communicators distinct from the CP ring's and the
Ulysses All-to-All's, so their collectives never wait in the CP / Ulysses FIFO."""

from __future__ import annotations

import pytest

from simulator.config.scenario import build_scenario
from simulator.schedule import data_parallel
from simulator.schedule.build import build_schedule
from simulator.schedule.ir import CommOp, P2POp
from tests.unit.test_schedule_invariants import PROFILE, SMALL


@pytest.fixture
def make(tmp_path):
    (tmp_path / "p.yaml").write_text(PROFILE)

    def _make(parallel, training=None):
        data = {"name": "streams", "hardware": "p.yaml", "nodes": 2, "model": dict(SMALL, heads=8, kv_heads=8),
                "training": {"micro_batch": 1, "global_batch": 2, **(training or {})}, "parallel": parallel}
        return build_scenario(data, source="streams.yaml", base_dir=tmp_path)
    return _make


def _grad_ops(prog):
    return [op for op in prog if isinstance(op, CommOp) and op.name.startswith(("dp.", "zero3.", "fsdp.", "grad_clip."))]


@pytest.mark.parametrize("parallel, group_stream, other_stream", [
    ({"ulysses": 8, "zero": 3}, "dp+ulysses", "ulysses"),
    ({"ulysses": 8, "zero": 3, "zero3_impl": "fsdp2"}, "dp+ulysses", "ulysses"),
    ({"cp": 8, "zero": 1}, "dp+cp", "cp"),
    ({"cp": 4, "zero": 1}, "dp+cp", "cp"),  # dp = 2: the stream of the same group as before
])
def test_gradient_collectives_do_not_share_the_cp_or_ulysses_stream(make, parallel, group_stream, other_stream):
    scn = make(parallel)
    sched = build_schedule(scn)
    for prog in sched.programs.values():
        grads = _grad_ops(prog)
        assert grads and {op.stream for op in grads} == {group_stream}
        others = [op for op in prog if isinstance(op, (CommOp, P2POp)) and op not in grads
                  and not op.name.startswith("tp.")]
        assert others and {op.stream for op in others} == {other_stream}


def test_grad_stream_names_the_whole_group():
    assert data_parallel.grad_stream(("dp",)) == "dp"
    assert data_parallel.grad_stream(("dp", "cp")) == "dp+cp"
    assert data_parallel.grad_stream(("cp",)) == "dp+cp"
    assert data_parallel.grad_stream(("ulysses",)) == "dp+ulysses"
    assert data_parallel.grad_stream(("edp",)) == "edp"  # the expert-data-parallel group keeps its name


def test_separate_streams_never_slow_the_step(make, monkeypatch, no_host_costs):
    """Ulysses 8 with ZeRO-3 and dp = 1: with the ZeRO-3 AllGathers and ReduceScatters queued in
    the All-to-All FIFO (the old behaviour), an All-to-All waits behind the next layer's prefetch;
    on their own stream the step is at least as fast."""
    from simulator.simulation import simulate_scenario

    scn = make({"ulysses": 8, "zero": 3}, training={"global_batch": 4})
    own = simulate_scenario(scn).report.step_time_s
    monkeypatch.setattr(data_parallel, "grad_stream", lambda axes: "+".join(axes))
    shared = simulate_scenario(scn).report.step_time_s
    assert own < shared

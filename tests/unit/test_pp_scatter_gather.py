"""``parallel.scatter_gather_tensors_in_pipeline`` (schedule/pipeline.py): without sequence
parallelism every TP rank holds the whole activation, and Megatron-LM (2021-2023) and DeepSpeed's
pipeline engine send 1/tp of it between stages, the receiver AllGathering the pieces over tp.
Closed forms per stage of a 1F1B step with M micro-batches of b·s·h activations."""

from __future__ import annotations

import pytest

from simulator.config.scenario import build_scenario
from simulator.schedule.build import build_schedule
from simulator.schedule.ir import CommOp, P2POp
from tests.unit.test_schedule_invariants import PROFILE, SMALL

TP, PP, MB, GB = 4, 2, 2, 8  # 2 nodes of 4 GPUs: dp 1


@pytest.fixture
def make(tmp_path):
    (tmp_path / "p.yaml").write_text(PROFILE)

    def _make(**parallel):
        data = {"name": "ppsg", "hardware": "p.yaml", "nodes": 2, "model": SMALL,
                "training": {"micro_batch": MB, "global_batch": GB},
                "parallel": {"tp": TP, "pp": PP, **parallel}}
        return build_scenario(data, source="ppsg.yaml", base_dir=tmp_path)
    return _make


def _pp_volumes(prog):
    sent = sum(t.nbytes for op in prog if isinstance(op, P2POp) for t in op.sends if t.axis == "pp")
    got = sum(t.nbytes for op in prog if isinstance(op, P2POp) for t in op.recvs if t.axis == "pp")
    gathers = [op for op in prog if isinstance(op, CommOp) and op.name.startswith("pp.")]
    return sent, got, gathers


@pytest.mark.parametrize("stage", [0, 1])
def test_scatter_gather_sends_one_tp_share_and_gathers_the_rest(make, stage):
    off = build_schedule(make()).programs[f"pp{stage}.cp0"]
    on = build_schedule(make(scatter_gather_tensors_in_pipeline=True)).programs[f"pp{stage}.cp0"]
    m = GB // MB  # micro-batches (dp 1)
    act = MB * SMALL["seq_len"] * SMALL["hidden"] * 2  # one micro-batch's bf16 activation
    # stage 0 sends m activations and receives m gradients; stage 1 the reverse
    assert _pp_volumes(off)[:2] == (m * act, m * act) and not _pp_volumes(off)[2]
    sent, got, gathers = _pp_volumes(on)
    assert (sent, got) == (m * act // TP, m * act // TP)
    assert len(gathers) == m and all(g.op == "allgather" and g.axes == ("tp",) and g.size_bytes == act
                                     for g in gathers)
    # each gather follows its receive, and the pass that uses the tensor waits for the gather
    at = [i for i, op in enumerate(on) if isinstance(op, CommOp) and op.name.startswith("pp.")]
    assert all(isinstance(on[on[i].deps[0]], P2POp) for i in at)
    users = {d for op in on for d in op.deps}
    assert all(i in users for i in at)


def test_no_effect_with_sequence_parallelism(make):
    """With SP each TP rank already holds (and sends) only its sequence shard."""
    a = build_schedule(make(sequence_parallel=True)).programs["pp0.cp0"]
    b = build_schedule(make(sequence_parallel=True, scatter_gather_tensors_in_pipeline=True)).programs["pp0.cp0"]
    assert _pp_volumes(a)[:2] == _pp_volumes(b)[:2] and not _pp_volumes(b)[2]

"""``parallel.pp_engine: deepspeed`` (schedule/pipeline.py): DeepSpeed's PipelineEngine keeps only
the 1/tp share of a partitioned stage output once it is sent and AllGathers it back over tp before
that micro-batch's backward (``_exec_backward_pass``: ``PartitionedTensor.from_meta(...).full()``).
Closed forms per stage of a 1F1B step with M micro-batches of b·s·h activations."""

from __future__ import annotations

import pytest

from simulator.config.scenario import build_scenario
from simulator.schedule.build import build_schedule
from simulator.schedule.ir import CommOp
from tests.unit.test_schedule_invariants import PROFILE, SMALL

TP, PP, MB, GB = 4, 2, 2, 8  # 2 nodes of 4 GPUs: dp 1, 4 micro-batches


@pytest.fixture
def make(tmp_path):
    (tmp_path / "p.yaml").write_text(PROFILE)

    def _make(**parallel):
        data = {"name": "ppds", "hardware": "p.yaml", "nodes": 2, "model": SMALL,
                "training": {"micro_batch": MB, "global_batch": GB},
                "parallel": {"tp": TP, "pp": PP, **parallel}}
        return build_scenario(data, source="ppds.yaml", base_dir=tmp_path)
    return _make


def _restores(prog) -> list[int]:
    return [i for i, op in enumerate(prog) if isinstance(op, CommOp) and op.name.endswith(".restore.allgather")]


def test_every_sending_stage_gathers_its_output_back_once_per_micro_batch(make):
    prog = build_schedule(make(scatter_gather_tensors_in_pipeline=True, pp_engine="deepspeed")).programs
    m = GB // MB
    act = MB * SMALL["seq_len"] * SMALL["hidden"] * 2  # one micro-batch's bf16 activation, whole
    first = prog["pp0.cp0"]
    at = _restores(first)
    assert len(at) == m
    assert all(first[i].op == "allgather" and first[i].axes == ("tp",) and first[i].size_bytes == act for i in at)
    # the last stage sends no output: nothing to restore
    assert not _restores(prog[f"pp{PP - 1}.cp0"])
    # each restore waits for the received gradient's gather and the backward waits for it
    users = {d for op in first for d in op.deps}
    assert all(i in users for i in at)
    assert all(first[first[i].deps[0]].name.startswith("pp.grad") for i in at)


@pytest.mark.parametrize("parallel", [dict(scatter_gather_tensors_in_pipeline=True),  # Megatron keeps the output
                                      dict(pp_engine="deepspeed"),  # whole tensors sent: nothing freed
                                      dict(pp_engine="deepspeed", scatter_gather_tensors_in_pipeline=True,
                                           sequence_parallel=True)])  # SP: the shard is the output
def test_no_restore_without_a_partitioned_output_in_deepspeed(make, parallel):
    assert not _restores(build_schedule(make(**parallel)).programs["pp0.cp0"])

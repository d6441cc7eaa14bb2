"""``parallel.pp_engine: deepspeed`` (schedule/pipeline.py): DeepSpeed's PipelineEngine keeps only
the 1/tp share of a partitioned stage output once it is sent and AllGathers it back over tp before
that micro-batch's backward (``_exec_backward_pass``: ``PartitionedTensor.from_meta(...).full()``).
Closed forms per stage of a 1F1B step with M micro-batches of b·s·h activations."""

from __future__ import annotations

import pytest

from simulator.config.scenario import build_scenario
from simulator.schedule.build import build_schedule
from simulator.schedule.ir import CommOp, P2POp
from simulator.simulation import simulate_scenario
from tests.unit.test_pp_scatter_gather import GB, MB, PP, TP, make  # noqa: F401 (make: a fixture)
from tests.unit.test_schedule_invariants import PROFILE, SMALL

# the 2-node, dp 1 plan of the scatter/gather tests (4 micro-batches) and its scenario fixture


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


def _exchanges(prog):
    return [(i, op) for i, op in enumerate(prog) if isinstance(op, P2POp)]


def test_each_send_and_receive_is_a_blocking_transfer_of_its_own_in_trainschedule_order(make):
    """DeepSpeed's TrainSchedule: a backward step sends the previous forward's activation, then
    receives the gradient; a forward step receives the activation, then sends the previous
    backward's gradient. Megatron batches each such pair into one exchange."""
    kw = dict(scatter_gather_tensors_in_pipeline=True)
    m = GB // MB
    for stage in range(PP):
        mega = build_schedule(make(**kw)).programs[f"pp{stage}.cp0"]
        ds = build_schedule(make(pp_engine="deepspeed", **kw)).programs[f"pp{stage}.cp0"]
        # the same messages: m activations one way and m gradients the other, 1/tp each
        vol = lambda prog: sorted((t.key, t.nbytes) for _, op in _exchanges(prog) for t in op.sends + op.recvs)
        assert vol(ds) == vol(mega) and len(vol(ds)) == 2 * m
        ops = _exchanges(ds)
        assert all(len(op.sends) + len(op.recvs) == 1 for _, op in ops)
        # stage 0 (first) sends activations and receives gradients: a warm-up send, then m - 1
        # backward steps of send then receive, then the last receive; the last stage receives
        # activations and sends gradients: receive, m - 1 forward steps of receive then send, send
        kinds = ["send" if op.sends else "recv" for _, op in ops]
        pair = ["send", "recv"] if stage == 0 else ["recv", "send"]
        assert kinds == pair[:1] + pair * (m - 1) + pair[1:]
        # a pair's second transfer waits for its first, and the pass after waits for the second
        users = {d for op in ds for d in op.deps}
        seconds = [(i, op) for i, op in ops if op.deps and isinstance(ds[op.deps[0]], P2POp)]
        assert [i for i, _ in seconds] == [j for (_, _), (j, _) in zip(ops[1:-1:2], ops[2::2])]
        assert all(i in users for i, _ in seconds)
    # Megatron: the steady pairs are one exchange each (the first stage: m - 1 of them + 1 warm-up)
    assert sum(len(op.sends) + len(op.recvs) == 2 for _, op in _exchanges(build_schedule(make(**kw)).programs["pp0.cp0"])) > 0


def test_the_serial_exchange_adds_one_message_per_steady_cycle(tmp_path, no_host_costs):
    """Two stages on two nodes, tp 1 (whole activations, no gather): Megatron's steady exchange
    moves the activation and the gradient at once over the full-duplex NIC; DeepSpeed's moves
    one, then the other. Each of the M - 1 steady cycles then takes one message longer: the
    difference between the engines grows by the same amount per micro-batch, and that amount
    grows with the message at the NIC's achieved rate (PROFILE: 400 Gb/s x efficiency 0.9)."""
    (tmp_path / "p.yaml").write_text(PROFILE)

    def step(mb: int, m: int, engine: str) -> float:
        data = {"name": "ppds", "hardware": "p.yaml", "nodes": 2, "model": SMALL,
                "training": {"micro_batch": mb, "global_batch": mb * 4 * m},  # dp 4: m micro-batches
                "parallel": {"pp": 2, "pp_engine": engine}}
        return simulate_scenario(build_scenario(data, source="ppds.yaml", base_dir=tmp_path)).report.step_time_s

    def per_cycle(mb: int) -> float:
        extra = {m: step(mb, m, "deepspeed") - step(mb, m, "megatron") for m in (4, 8)}
        assert extra[4] > 0
        return (extra[8] - extra[4]) / 4

    small, large = per_cycle(16), per_cycle(32)
    message = lambda mb: mb * SMALL["seq_len"] * SMALL["hidden"] * 2  # bf16 activation, bytes
    assert large - small == pytest.approx((message(32) - message(16)) / (400e9 / 8 * 0.9), rel=0.02)


def test_folded_replay_gives_the_unfolded_step(make):
    """The serial exchanges repeat each steady micro-batch alike, so the replay's folding of the
    steady section (replay/fold.py) gives the step of the whole replay."""
    scn = make(scatter_gather_tensors_in_pipeline=True, pp_engine="deepspeed")
    assert simulate_scenario(scn).report.step_time_s == pytest.approx(
        simulate_scenario(scn, fold=False).report.step_time_s, rel=1e-9)

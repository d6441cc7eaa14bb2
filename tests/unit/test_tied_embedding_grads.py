"""The tied word embedding under pipelining (schedule/data_parallel.py,
``tied_embedding_allreduce``): the first stage's embedding and the last stage's LM-head copy sum
their gradients once per step (Megatron's ``_allreduce_word_embedding_grads``, DeepSpeed's
``_exec_reduce_tied_grads``): vocab·hidden/tp gradients in the reduction dtype each way between
stage 0 and stage pp − 1, nothing elsewhere."""

from __future__ import annotations

import pytest

from simulator.config.scenario import build_scenario
from simulator.schedule.build import build_schedule
from simulator.schedule.ir import P2POp
from simulator.simulation import simulate_scenario
from tests.unit.test_schedule_invariants import PROFILE, SMALL

GPT = {**SMALL, "mlp": "gelu", "tied_embeddings": True, "position_embedding": "learned"}


@pytest.fixture
def make(tmp_path):
    (tmp_path / "p.yaml").write_text(PROFILE)

    def _make(model=GPT, **parallel):
        data = {"name": "tied", "hardware": "p.yaml", "nodes": 2, "model": model,
                "training": {"micro_batch": 1, "global_batch": 8}, "parallel": parallel}
        return build_scenario(data, source="tied.yaml", base_dir=tmp_path)
    return _make


def _tied(prog):
    return [op for op in prog if isinstance(op, P2POp) and op.name == "pp.tied_embedding.grad_allreduce"]


@pytest.mark.parametrize("dtype,nbytes", [("fp32", 4), ("bf16", 2)])
def test_first_and_last_stage_exchange_the_embedding_gradient(make, dtype, nbytes):
    scn = make(pp=4, tp=2, grad_reduce_dtype=dtype)
    sched = build_schedule(scn)
    size = GPT["vocab"] * GPT["hidden"] // 2 * nbytes
    first, last = _tied(sched.programs["pp0.cp0"]), _tied(sched.programs["pp3.cp0"])
    assert len(first) == len(last) == 1
    (a,), (b,) = first, last
    def spans(ts):
        return [(t.axis, t.offset, t.nbytes) for t in ts]

    # stage 0 talks to offset -1 (stage pp - 1, cyclic), the last stage to offset +1 (stage 0)
    assert spans(a.sends) == spans(a.recvs) == [("pp", -1, size)]
    assert spans(b.sends) == spans(b.recvs) == [("pp", +1, size)]
    assert {t.key for t in a.sends} == {t.key for t in b.recvs} and {t.key for t in b.sends} == {t.key for t in a.recvs}
    assert not _tied(sched.programs["pp1.cp0"]) and not _tied(sched.programs["pp2.cp0"])


def test_untied_or_unpipelined_models_exchange_nothing(make):
    for scn in (make(model={**GPT, "tied_embeddings": False}, pp=2), make(pp=1)):
        assert not any(_tied(prog) for prog in build_schedule(scn).programs.values())


def test_the_exchange_replays_before_the_optimizer_step(make):
    """The keys meet across the wrap-around (no hang), and the optimizer step of both end stages
    starts after the exchange has ended."""
    sim = simulate_scenario(make(pp=2))
    seen = 0
    for rank in sim.trace.ranks:
        recs = {r.name: r for r in sim.trace.records(rank)}
        if "pp.tied_embedding.grad_allreduce" in recs:
            x = recs["pp.tied_embedding.grad_allreduce"]
            assert x.kind == "sendrecv" and x.end > x.start
            assert recs["optimizer.step"].start >= x.end
            seen += 1
    assert seen >= 2  # a rank of the first stage and one of the last

"""Multi-token prediction (``model.mtp_layers``): Megatron-Core's MTP block on the last pipeline stage
(megatron/core/transformer/multi_token_prediction.py)."""

import pytest

from simulator.config.workload import Model
from simulator.errors import InputError
from simulator.schedule.build import build_schedule
from simulator.schedule.flops import megatron_flops_per_step
from simulator.schedule.ir import ComputeOp
from simulator.schedule.shapes import layer_kinds, stage_params
from tests.unit.test_moe_schedule import MOE, moe_scenario_maker

PLANS = {"ep4": {"ep": 4}, "ep2_tp2_pp2": {"ep": 2, "tp": 2, "sequence_parallel": True, "pp": 2}}


def _gemm_attention_flops(scn) -> float:
    """GEMM and attention FLOPs of one step summed over the GPUs of one data-parallel replica."""
    sched = build_schedule(scn)
    total = sum(op.flops for prog in sched.programs.values() for op in prog
                if isinstance(op, ComputeOp) and op.kind in ("gemm", "attention"))
    return total * scn.parallel.tp  # each role stands for its TP group (same shard on every rank)


@pytest.mark.parametrize("plan", list(PLANS))
def test_mtp_adds_megatrons_mtp_flops(tmp_path, plan):
    """One MTP depth adds what Megatron-Core's ``num_floating_point_operations`` adds for it (one more
    MoE layer, the 2h -> h projection, one more logits pass), less what the closed form counts and the
    simulator runs as memory-bound kernels (the enorm/hnorm 3h term), plus the router GEMM it omits and
    the simulator's causal scores: (s + 1) / 2s of the score matrix (the diagonal kept) and a
    FlashAttention backward of 2.5 forwards, where the closed form counts s / 2 and 2."""
    make = moe_scenario_maker(tmp_path, MOE)
    base, mtp = make(PLANS[plan]), make(PLANS[plan], model={"mtp_layers": 1})
    m, s, h, a, d = mtp.model, MOE["seq_len"], MOE["hidden"], MOE["heads"], MOE["hidden"] // MOE["heads"]
    batch = 8 // base.dp  # sequences one data-parallel replica runs
    delta_closed = megatron_flops_per_step(m, batch, mtp_layers=1) - megatron_flops_per_step(m, batch)
    tokens = batch * s
    router = 6 * tokens * h * m.experts
    norms = 6 * tokens * 3 * h
    scores = (1 + 2.5) * 2 * 2 * a * d * tokens * (s + 1) / 2 - 6 * a * d * s * tokens
    expected = delta_closed - norms + router + scores
    assert _gemm_attention_flops(mtp) - _gemm_attention_flops(base) == pytest.approx(expected, rel=1e-9)


def test_mtp_parameters_on_the_last_stage(tmp_path):
    """The last stage holds one more MoE layer, enorm + hnorm + eh_proj (2h·h/tp) + the MTP final norm
    and, with pp > 1, a copy of the input embedding (vocab·h/tp); stage 0 is unchanged."""
    make = moe_scenario_maker(tmp_path, MOE)
    plan = PLANS["ep2_tp2_pp2"]
    base, mtp = make(plan), make(plan, model={"mtp_layers": 1})
    h, tp = MOE["hidden"], 2
    assert stage_params(mtp, 0) == stage_params(base, 0)
    a, b = stage_params(base, 1), stage_params(mtp, 1)
    (moe_dense, moe_expert), _ = layer_kinds(base, [3])[0]  # layer 3: an MoE layer
    assert b.expert - a.expert == moe_expert
    assert b.dense - a.dense == moe_dense + 3 * h + 2 * h * h // tp + MOE["vocab"] * h // tp


@pytest.mark.parametrize("bad", [-1, 1.5, "one"])
def test_mtp_layers_must_be_a_non_negative_int(tmp_path, bad):
    make = moe_scenario_maker(tmp_path, MOE)
    with pytest.raises(InputError, match="mtp_layers"):
        make({"ep": 4}, model={"mtp_layers": bad})


def test_mtp_default_off():
    assert Model.model_validate({"preset": "deepseek-v3"}).mtp_layers == 0

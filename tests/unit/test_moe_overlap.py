"""Combined 1F1B (Megatron's overlap_moe_expert_parallel_comm): the issue order of a paired
forward/backward layer, the rules of the key, and the All-to-All time it hides in closed form."""

import pytest

from simulator.config.hardware import apply_overlay, load_profile
from simulator.errors import InputError
from simulator.schedule.build import build_program, build_schedule
from simulator.schedule.ir import CommOp
from simulator.simulation import simulate_scenario
from tests.unit.test_moe_schedule import moe_scenario_maker
from tests.unit.test_schedule_invariants import check_invariants

# 8 experts, top-2, one dense layer first; sized so that each compute node outlasts the
# All-to-All it is paired with (a 16 MiB exchange on 450 GB/s NVLink against ~0.5 ms of GEMMs;
# the expert FFN wide enough that a forward's experts outlast the backward dispatch, which starts
# only after the paired backward's expert wgrad)
MOE = {"layers": 4, "hidden": 4096, "heads": 32, "kv_heads": 8, "ffn_hidden": 8192, "vocab": 1000,
       "mlp": "swiglu", "seq_len": 4096, "experts": 8, "top_k": 2, "moe_ffn_hidden": 3072,
       "first_dense_layers": 1}


@pytest.fixture
def make(tmp_path):
    return moe_scenario_maker(tmp_path, MOE, nodes=1, global_batch=16)


OVERLAP = {"overlap_moe_expert_parallel_comm": True}
PLANS = {
    "pp1": {"ep": 4},
    "interleaved": {"ep": 2, "pp": 2, "pp_schedule": "interleaved", "vp": 2},
    "deepep_2nodes": {"ep": 8, "moe_dispatcher": "deepep"},
    "tp2_etp2": {"ep": 2, "tp": 2, "sequence_parallel": True},
    "fsdp2": {"ep": 4, "zero": 3, "zero3_impl": "fsdp2"},
}


@pytest.mark.parametrize("name", list(PLANS))
def test_combined_plans_keep_the_invariants(make, name):
    nodes = 2 if "2nodes" in name else 1
    sched = build_schedule(make({**PLANS[name], **OVERLAP}, nodes=nodes, model={"shared_experts": 1}))
    check_invariants(sched)
    plain = build_schedule(make(PLANS[name], nodes=nodes, model={"shared_experts": 1}))
    for role, prog in sched.programs.items():  # the same kernels and collectives, in another order
        names = sorted(op.name for op in prog if not op.name.startswith("pp."))
        assert names == sorted(op.name for op in plain.programs[role] if not op.name.startswith("pp."))


def test_paired_layer_issue_order_follows_megatron(make):
    """TransformerLayerSchedulePlan.run: on the communication stream combine_bwd, dispatch_fwd,
    dispatch_bwd, combine_fwd; f's attention between b's combine and b's experts."""
    prog = build_schedule(make({"ep": 4, **OVERLAP})).programs["pp0.cp0"]
    # the second step pairs F(mb 1) with B(mb 0); of 4 layers, forward layer 1 with backward layer 2
    names = [op.name for op in prog]
    a2a = [op.name for op in prog if isinstance(op, CommOp) and op.axes == ("ep",) and ".probs." not in op.name]
    i = a2a.index("L2.moe.combine.bwd.alltoall")
    assert a2a[i:i + 4] == ["L2.moe.combine.bwd.alltoall", "L1.moe.dispatch.fwd.alltoall",
                            "L2.moe.dispatch.bwd.alltoall", "L1.moe.combine.fwd.alltoall"]
    order = names[names.index("L2.moe.combine.bwd.alltoall"):]
    at = order.index
    assert at("L1.qkv.fwd.gemm") < at("L2.moe.experts.fc2.dgrad") < at("L1.moe.experts.fc1.fwd")
    assert at("L1.moe.experts.fc2.fwd") < at("L2.qkv.bwd.dgrad") < at("L1.res2.fwd")


def test_overlap_hides_the_paired_all_to_alls_in_closed_form(make, tmp_path):
    """pp = 1, M = 4 micro-batches per GPU: F0, then F(i) with B(i−1), then B3 alone. Every
    compute node outlasts the All-to-All it is paired with, so of the 2M passes' All-to-Alls only
    F0's and B3's stay exposed: the step shrinks by (M−1)/M of the exposed All-to-All time and
    what is left exposed is 1/M of it. Compute is not slowed by the overlap here
    (overlap_slowdown 0), so the saving is exactly the hidden communication."""
    profile = apply_overlay(load_profile(str(tmp_path / "p.yaml")), {"gpu": {"overlap_slowdown": 0.0}})
    training = {"recompute": "selective"}
    parallel = {"ep": 4, "overlap_grad_reduce": False}
    plain = simulate_scenario(make(parallel, training=training, profile=profile)).report
    combined = simulate_scenario(make({**parallel, **OVERLAP}, training=training, profile=profile)).report
    M = 4
    a2a = plain.breakdown_s.exposed_comm["alltoall"]
    assert a2a > 0.05 * plain.step_time_s
    assert combined.breakdown_s.exposed_comm["alltoall"] == pytest.approx(a2a / M, rel=0.02)
    assert combined.step_time_s == pytest.approx(plain.step_time_s - a2a * (M - 1) / M, rel=0.002)


@pytest.mark.parametrize("parallel,training,needle", [
    ({"ep": 1}, {}, "needs an All-to-All to hide"),
    ({"ep": 4, "moe_dispatcher": "allgather"}, {}, "not allgather"),
    ({"ep": 4, "moe_shared_expert_overlap": True}, {}, "excludes moe_shared_expert_overlap"),
    ({"ep": 2, "pp": 2}, {}, "needs the interleaved schedule"),
    ({"ep": 4}, {"recompute": "full"}, "recompute: full"),
])
def test_bad_overlap_plans_name_the_field(make, parallel, training, needle):
    with pytest.raises(InputError, match=needle):
        make({**parallel, **OVERLAP}, training=training)


def _gemm_fractions(prog, pattern, mb=None):
    return sorted({op.sm_fraction for op in prog if op.name.startswith(pattern) and getattr(op, "kind", "") == "gemm"
                   and op.tag.phase == "fwd" and (mb is None or op.tag.mb_index == mb)})


def test_deepep_kernels_take_their_sms_from_the_paired_compute(make):
    """DeepEP's kernels hold moe_deepep_sms of the 132 SMs: the GEMMs of a node paired with a
    DeepEP exchange keep 1 − 20/132 of them, 24 SMs leave 1 − 24/132; NCCL's All-to-All
    takes none here (the profile's overlap_slowdown prices it in the replay)."""
    def prog(**parallel):
        return build_schedule(make({"ep": 4, **OVERLAP, **parallel})).programs["pp0.cp0"]

    deepep = prog(moe_dispatcher="deepep")
    # the second step pairs F(mb 1) layer 1 with B(mb 0) layer 2: f's attention sits beside b's
    # combine, f's experts beside b's dispatch
    assert _gemm_fractions(deepep, "L1.qkv.fwd", mb=1) == pytest.approx([1 - 20 / 132])
    assert _gemm_fractions(deepep, "L1.moe.experts.fc1.fwd", mb=1) == pytest.approx([1 - 20 / 132])
    assert _gemm_fractions(deepep, "L1.", mb=0) == [1.0]  # F0 runs alone
    sms24 = prog(moe_dispatcher="deepep", moe_deepep_sms=24)
    assert _gemm_fractions(sms24, "L1.qkv.fwd", mb=1) == pytest.approx([1 - 24 / 132])
    assert _gemm_fractions(prog(), "L1.") == [1.0]


def test_deepep_shared_expert_overlap_keeps_the_sms_left(make):
    prog = build_schedule(make({"ep": 4, "moe_dispatcher": "deepep", "moe_shared_expert_overlap": True},
                               model={"shared_experts": 1})).programs["pp0.cp0"]
    assert _gemm_fractions(prog, "L1.moe.shared.fc1") == pytest.approx([1 - 20 / 132])
    assert _gemm_fractions(prog, "L1.moe.experts.fc1") == [1.0]
    with pytest.raises(InputError, match="moe_deepep_sms=132 leaves no SM"):
        make({"ep": 4, "moe_dispatcher": "deepep", "moe_deepep_sms": 132})


@pytest.mark.parametrize("name", ["pp1", "interleaved", "deepep_2nodes"])
def test_pairs_reordered_by_their_templates_plan_equal_the_pairs_reordered_op_by_op(make, monkeypatch, name):
    """A pair of stamped passes is reordered by its templates' plan (moe_overlap.PairPlan): the
    same ops, field for field (dependencies, SMs held beside DeepEP's exchanges), as working the
    order out from the ops of every pair, and the same step. 16 micro-batches per pipeline, so
    that most passes are stamps (a pass is templated from its third build on), after a
    priced-only build of the same plan."""
    from simulator.schedule import moe_overlap

    nodes = 2 if "2nodes" in name else 1
    dp = 8 * nodes // (PLANS[name].get("tp", 1) * PLANS[name].get("pp", 1))
    scn = make({**PLANS[name], **OVERLAP}, nodes=nodes, training={"global_batch": 16 * dp})
    # a priced-only build first (the sweep's bound, ProgramBuilder.priced_only): its pairs hold
    # an earlier stamp's dependencies, and the plans are made from the full build's
    build_program(scn, 0, priced_only=True)  # (the second appends the first's stamps)
    monkeypatch.setattr(moe_overlap, "_PLANS", {})
    build_program(scn, 0, priced_only=True)
    planned = build_schedule(scn)
    assert any(isinstance(tpl, moe_overlap.PairPlan) for stamps in planned.stamps.values() for _, _, tpl in stamps)
    with monkeypatch.context() as m:
        m.setattr(moe_overlap, "_stamped_pair", lambda pb, start, mid: None)
        plain = build_schedule(scn)
        assert not any(isinstance(tpl, moe_overlap.PairPlan) for stamps in plain.stamps.values() for _, _, tpl in stamps)
        plain_step = simulate_scenario(scn).report.step_time_s
    assert planned.programs == plain.programs
    assert simulate_scenario(scn).report.step_time_s == plain_step


@pytest.mark.parametrize("name", ["interleaved", "deepep_2nodes"])
def test_role_table_prices_a_reordered_pair_once_per_plan_as_op_by_op(make, name):
    """A reordered pair counts as one stamp of its plan (moe_overlap.PairPlan), which the replay's
    role table prices once per plan (replay/rank_state.py): every entry equals the one priced op
    by op, the SMs held beside DeepEP's exchanges included."""
    from simulator.costs.model import CostModel
    from simulator.hardware.topology import build_topology
    from simulator.replay.rank_state import RoleTable
    from simulator.schedule import moe_overlap
    from tests.unit.test_role_table_stamps import _same

    nodes = 2 if "2nodes" in name else 1
    dp = 8 * nodes // PLANS[name].get("pp", 1)
    scn = make({**PLANS[name], **OVERLAP}, nodes=nodes, training={"global_batch": 16 * dp})
    schedule = build_schedule(scn)
    costs = CostModel(build_topology(scn.profile, scn.nodes), None, None)
    for role, program in schedule.programs.items():
        stamps = schedule.stamps[role]
        assert sum(len(seg) for _, seg, tpl in stamps if isinstance(tpl, moe_overlap.PairPlan)) > 0.5 * len(program)
        _same(RoleTable(program, costs, stamps=stamps), RoleTable(program, costs))

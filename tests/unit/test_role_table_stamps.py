"""A replay's role table prices the stamped layer passes of its program once per template
(replay/rank_state.py ``_priced_by_stamps``): every entry is the one priced op by op."""

from __future__ import annotations

from dataclasses import replace

import pytest

from simulator.costs.model import CostModel
from simulator.hardware.topology import build_topology
from simulator.replay.rank_state import RoleTable
from simulator.schedule.build import build_schedule
from simulator.schedule.ir import ComputeOp, make_tag
from simulator.sweep.bound import _with_micro_batches
from tests.unit.test_sweep_bound import gpt3_175b


def _fields(table: RoleTable) -> dict:
    return {k: v for k, v in vars(table).items() if k != "program"}


def _same(a: RoleTable, b: RoleTable) -> None:
    fa, fb = _fields(a), _fields(b)
    assert fa.keys() == fb.keys()
    for k in fa:
        assert fa[k] == fb[k], k
        if isinstance(fa[k], dict) and k != "streams":  # (look-ups: their order is not read)
            assert repr(sorted(fa[k].items())) == repr(sorted(fb[k].items())), k
        else:  # the same floats to the last bit; the streams in order of first use
            assert repr(fa[k]) == repr(fb[k]), k


@pytest.mark.parametrize("parallel", [dict(tp=4, pp=4, zero=1),
                                      dict(tp=4, pp=4, vp=2, pp_schedule="interleaved", zero=1),
                                      # ZeRO-3's passes: ops that wait both for a parameter gather
                                      # before the pass and for a kernel of the pass
                                      dict(tp=8, pp=1, zero=3)])
def test_role_table_by_stamps_is_op_by_op(parallel):
    """Every role of a GPT-3 175B plan: kernel times, issue times (their running sum in the same
    order) and every other entry equal with and without the stamps; most ops are stamped. And a
    table continued from an earlier one's ops in front (a fold's reduced step, ``like``)."""
    scn = _with_micro_batches(gpt3_175b(**parallel), 8)
    schedule = build_schedule(scn)
    costs = CostModel(build_topology(scn.profile, scn.nodes), None, None)
    small = build_schedule(_with_micro_batches(scn, 4))
    for role, program in schedule.programs.items():
        stamps = schedule.stamps[role]
        assert sum(len(seg) for _, seg, _ in stamps) > 0.6 * len(program)
        by_stamps = RoleTable(program, costs, stamps=stamps)
        _same(by_stamps, RoleTable(program, costs))
        like = RoleTable(small.programs[role], costs, stamps=small.stamps[role])
        continued = RoleTable(program, costs, like=like, stamps=stamps)
        _same(continued, RoleTable(program, costs, like=like))
        _same(continued, by_stamps)


def test_a_stamped_op_replaced_after_the_build_is_priced_as_it_is():
    """An op of a stamp replaced after the build (a GEMM twice as long, a forward kernel
    re-tagged as a backward one, which the host issues faster) is no longer the template's:
    its stamp is priced op by op, with the op as it stands."""
    scn = _with_micro_batches(gpt3_175b(tp=4, pp=4, zero=1), 8)
    schedule = build_schedule(scn)
    costs = CostModel(build_topology(scn.profile, scn.nodes), None, None)
    role = next(iter(schedule.programs))
    program = list(schedule.programs[role])
    stamps = schedule.stamps[role]
    start, seg, _ = next(s for s in stamps[1:]
                         if any(isinstance(op, ComputeOp) and op.tag.phase == "fwd" and op.host_issue for op in s[1]))
    gemms = [k for k, op in enumerate(seg) if isinstance(op, ComputeOp) and op.kind == "gemm"]
    fwd = next(k for k, op in enumerate(seg) if isinstance(op, ComputeOp) and op.tag.phase == "fwd" and op.host_issue)
    program[start + gemms[0]] = replace(seg[gemms[0]], flops=2 * seg[gemms[0]].flops)
    op = seg[fwd]
    program[start + fwd] = replace(op, tag=make_tag("bwd", op.tag.layer, op.tag.mb_index, op.tag.chunk))
    changed = RoleTable(program, costs, stamps=stamps)
    _same(changed, RoleTable(program, costs))
    _same(RoleTable(schedule.programs[role], costs, stamps=stamps), RoleTable(schedule.programs[role], costs))
    unchanged = RoleTable(schedule.programs[role], costs)
    assert changed.dt[start + gemms[0]] != unchanged.dt[start + gemms[0]]
    assert changed.issue[-1] < unchanged.issue[-1]

"""CP roles that run the same ops share one program and one priced RoleTable
(schedule/build.py, context_parallel.program_depends_on_cp_rank); sharing them changes nothing.

The reference is the unshared schedule: every CP role built separately by ``build_program``, so
the replay prices each one on its own. Both are replayed and every op of every rank must start and
end at the same instant, for the load-balanced p2p ring, for a2a and for a2a+p2p.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from simulator.config.scenario import build_scenario
from simulator.hardware.topology import build_topology
from simulator.replay.engine import replay
from simulator.schedule.build import build_program, build_schedule, role_name


def _scenario(tmp_path, comm: str, tp: int = 2):
    # cp 8 over 16 GPUs (tp 2, or dp 2 inside it): the CP group crosses the two nodes, so the CP
    # ranks see different links and their timelines differ even where their programs do not.
    order = ["tp", "cp", "dp", "pp"] if tp == 2 else ["tp", "dp", "cp", "pp"]
    data = {"name": f"cp-{comm}", "hardware": "dgx-h100", "nodes": 2,
            "model": {"preset": "llama3-8b", "layers": 2, "seq_len": 65536},
            "training": {"micro_batch": 1, "global_batch": 2, "dtype": "bf16", "recompute": "none"},
            "parallel": {"tp": tp, "sequence_parallel": tp > 1, "cp": 8, "cp_comm": comm, "zero": 1,
                         "order": order}}
    return build_scenario(data, base_dir=tmp_path)


@pytest.mark.parametrize("comm, tp", [("p2p", 2), ("a2a", 1), ("a2a+p2p", 2)])  # a2a: kv heads / tp / cp
def test_shared_cp_programs_time_every_op_as_unshared_ones(tmp_path, comm, tp):
    scn = _scenario(tmp_path, comm, tp)
    shared = build_schedule(scn)
    roles = [role_name(0, c) for c in range(8)]
    assert len({id(shared.programs[r]) for r in roles}) == 1  # one program object for the 8 roles
    unshared = replace(shared, programs={role_name(0, c): build_program(scn, 0, c) for c in range(8)})
    assert all(unshared.programs[r] == shared.programs[r] for r in roles)  # the same ops, built apart

    topo = build_topology(scn.profile, scn.nodes)
    a = replay(shared, topo, symmetric=False)
    b = replay(unshared, topo, symmetric=False)
    assert sorted(a.timelines) == sorted(b.timelines) == list(range(scn.n_gpus))
    timelines = set()
    for r, ta in a.timelines.items():
        tb = b.timelines[r]
        for f in ("ready", "start", "end"):
            np.testing.assert_array_equal(getattr(ta, f), getattr(tb, f), err_msg=f"rank {r} {f}")
        timelines.add(np.round(ta.end, 12).tobytes())  # to the picosecond: not float rounding
    assert a.step_time_s == b.step_time_s
    # On the flat ring the ranks sharing a program do not share a timeline (two of its eight hops
    # cross the nodes); an All-to-All ends on every member at once, and a2a+p2p's ring of two
    # positions four ranks apart crosses the nodes on every hop.
    assert (len(timelines) > 1) == (comm == "p2p")


@pytest.mark.parametrize("comm", ["ring", "all_gather"])
def test_rank_dependent_cp_patterns_keep_one_program_per_role(tmp_path, comm):
    scn = _scenario(tmp_path, comm)
    programs = build_schedule(scn).programs
    first, last = programs[role_name(0, 0)], programs[role_name(0, 7)]
    assert first is not last and first != last


def _owners_claim_by_claim(rp):
    """Reference for link_owners: every (rank, collective size) and P2P direction claims its links
    in turn; a link claimed by two different owners is shared."""
    owners: dict = {}

    def claim(links, owner):
        for link in links:
            held = owners.get(link)
            owners[link] = owner if held is None or held == owner else "shared"

    for R in rp.ranks.values():
        for stream, axes, kind, size in R.table.collectives:
            members, _ = rp._group(R.rank, axes)
            if len(members) > 1:
                for phase in rp._plan_of(kind, members, size).phases:
                    for flow in phase:
                        claim(flow.links, (stream, members))
        for axis, offset, is_send in R.table.p2p_dirs:
            peer = rp.grid.peer(R.rank, axis, offset)
            src, dst = (R.rank, peer) if is_send else (peer, R.rank)
            if src != dst:
                claim(rp._route(src, dst).links, ("p2p", src, dst))
    return owners


@pytest.mark.parametrize("comm, tp", [("p2p", 2), ("a2a+p2p", 2), ("ring", 2)])
def test_link_owners_gathered_per_owner_match_claim_by_claim(tmp_path, comm, tp):
    from simulator.costs.model import CostModel
    from simulator.replay.engine import Replayer
    from simulator.replay.exclusive_links import _SHARED, link_owners
    from simulator.replay.links import FlowNetwork

    scn = _scenario(tmp_path, comm, tp)
    schedule = build_schedule(scn)
    costs = CostModel(build_topology(scn.profile, scn.nodes), None, None)
    rp = Replayer(schedule, costs, list(range(scn.n_gpus)), network_factory=FlowNetwork)
    got = link_owners(rp.ranks.values(), rp._group, rp._plan_of, rp.grid.peer, rp._route)
    got = {k: "shared" if v is _SHARED else v for k, v in got.items()}
    want = _owners_claim_by_claim(rp)
    assert got == want
    assert "shared" in want.values()
    # On the rings some links have one owner (a TP group's NVLink); under a2a+p2p every link
    # this plan uses is met by the All-to-All and the ring.
    assert any(v != "shared" for v in want.values()) or comm == "a2a+p2p"


def _every_rank_and_mirrored(tmp_path, seq: int, global_batch: int, tp: int, comm: str, order: list[str]):
    """CP 4 of llama3-8b (2 layers) on two DGX H100 nodes, replayed with every rank simulated and in
    symmetric mode."""
    data = {"name": "cp4", "hardware": "dgx-h100", "nodes": 2,
            "model": {"preset": "llama3-8b", "layers": 2, "seq_len": seq},
            "training": {"micro_batch": 1, "global_batch": global_batch, "dtype": "bf16", "recompute": "none"},
            "parallel": {"tp": tp, "sequence_parallel": True, "cp": 4, "cp_comm": comm, "zero": 1, "order": order}}
    scn = build_scenario(data, base_dir=tmp_path)
    sched = build_schedule(scn)
    topo = build_topology(scn.profile, scn.nodes)
    return replay(sched, topo, symmetric=False), replay(sched, topo, symmetric=True)


def test_cp_inside_a_node_is_mirrored_and_times_the_step_as_every_rank_simulated(tmp_path):
    """CP roles with equal programs whose CP groups lie on one node run one timeline: symmetric
    mode mirrors cp (replay/symmetry.symmetric_axes), and the step is that of every rank simulated."""
    full, mirrored = _every_rank_and_mirrored(tmp_path, 16384, 4, 2, "p2p", ["tp", "cp", "dp", "pp"])
    assert "cp" in mirrored.stats.mirrored_axes
    assert mirrored.stats.ranks_simulated == 1 and full.stats.ranks_simulated == 16
    assert mirrored.step_time_s == pytest.approx(full.step_time_s, rel=1e-9)
    np.testing.assert_allclose(mirrored.timelines[0].end, full.timelines[0].end, rtol=1e-9, atol=0)


def test_cp_ring_across_nodes_is_not_mirrored(tmp_path):
    """The flat ring of cp 8 over two nodes: two of its hops cross the nodes, so its ranks'
    timelines differ although their programs do not (above) and cp stays simulated."""
    scn = _scenario(tmp_path, "p2p")
    trace = replay(build_schedule(scn), build_topology(scn.profile, scn.nodes), symmetric=True)
    assert "cp" not in trace.stats.mirrored_axes


@pytest.mark.parametrize("comm, tp, order", [("p2p", 4, ["tp", "cp", "dp", "pp"]),
                                             ("a2a", 2, ["tp", "dp", "cp", "pp"])])
def test_cp_across_nodes_with_alike_hops_is_mirrored_and_times_the_step_as_every_rank(tmp_path, comm, tp, order):
    """CP 4 on two 8-GPU nodes, its ranks on GPUs 0, 4 | 8, 12. Under p2p (TP 4) every rank has
    one ring hop on NVLink and one over the network (replay/symmetry._hops_alike); under a2a
    (TP 2, DP 2 inside the CP stride) there is no ring. Its ranks run one timeline: symmetric
    mode mirrors cp, and every op of the simulated rank starts and ends where it does with all
    16 ranks simulated."""
    full, mirrored = _every_rank_and_mirrored(tmp_path, 32768, 2, tp, comm, order)
    assert "cp" in mirrored.stats.mirrored_axes
    assert mirrored.stats.ranks_simulated == 1 and full.stats.ranks_simulated == 16
    assert mirrored.step_time_s == pytest.approx(full.step_time_s, rel=1e-9)
    for r in mirrored.timelines:
        for f in ("start", "end"):
            np.testing.assert_allclose(getattr(mirrored.timelines[r], f), getattr(full.timelines[r], f),
                                       rtol=1e-9, atol=1e-12)
    # CP rank 1 (GPU 4; under p2p its send crosses the nodes) ends every op with CP rank 0 (GPU 0;
    # its receive does)
    np.testing.assert_allclose(full.timelines[4].end, full.timelines[0].end, rtol=1e-9, atol=1e-12)

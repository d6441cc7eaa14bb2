"""Replay-engine semantics on hand-built schedules (closed forms under the stand-in network)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from simulator.costs.compute import compute_time
from simulator.errors import HangError
from simulator.replay.engine import replay
from simulator.schedule.groups import Grid
from simulator.schedule.ir import CommOp, ComputeOp, P2POp, ProgramBuilder, Tag, Transfer
from tests.unit.replay_fixtures import FAKES, LAT, NVLINK_Bps, Sched, ring_time, topo

GEMM = dict(kind="gemm", flops=2 * 4096**3)  # ~0.19 ms on the test H100


def test_single_rank_without_communication_is_the_sum_of_its_ops():
    t = topo(1, 1)
    pb = ProgramBuilder()
    prev = None
    for i in range(20):
        op = ComputeOp(f"k{i}", "gemm" if i % 2 else "norm", flops=1e9 * (i + 1), hbm_bytes=1e7 * i,
                       deps=(prev,) if prev is not None else ())
        prev = pb.add(op)
    sched = Sched(Grid.from_sizes({"tp": 1}), {0: pb.ops})
    trace = replay(sched, t, **FAKES)
    expected = sum(compute_time(op, t.profile.gpu) for op in pb.ops)
    assert trace.step_time_s == pytest.approx(expected, rel=1e-12)
    # Op by op, every kernel is an event; as one run of kernels, a handful, with the same times.
    by_op = replay(sched, t, compute_runs=False, **FAKES)
    assert by_op.stats.ranks == 1 and by_op.stats.events > 20 and trace.stats.events < 10
    tl, ref = trace.timelines[0], by_op.timelines[0]
    for a in ("ready", "start", "end"):
        assert getattr(tl, a) == pytest.approx(getattr(ref, a), rel=1e-12)


def tp_overlap_schedule(dependent: bool) -> tuple[Sched, int]:
    """Every TP rank: GEMM A, an AllReduce issued after A, GEMM B that either waits for the
    AllReduce (dependent) or not."""
    pb = ProgramBuilder()
    a = pb.add(ComputeOp("A", **GEMM))
    size = 32 * 2**20
    ar = pb.add(CommOp("ar", "allreduce", ("tp",), size, deps=(a,)))
    pb.add(ComputeOp("B", **GEMM, deps=(ar,) if dependent else (a,)))
    return Sched(Grid.from_sizes({"tp": 8}), {0: pb.ops}), size


def test_collective_hidden_under_compute_and_exposed_by_a_dependency():
    t = topo(1, 8)
    gpu = t.profile.gpu
    g = compute_time(ComputeOp("A", **GEMM), gpu)
    for dependent in (False, True):
        sched, size = tp_overlap_schedule(dependent)
        comm = ring_time("allreduce", 8, size)
        assert comm < g  # the collective fits under GEMM B
        trace = replay(sched, t, **FAKES)
        if dependent:
            assert trace.step_time_s == pytest.approx(2 * g + comm, rel=1e-9)
        else:
            assert trace.step_time_s == pytest.approx(2 * g, rel=1e-9)
        rec = {r.name: r for r in trace.records(3)}
        assert rec["ar"].duration == pytest.approx(comm, rel=1e-9)
        assert rec["ar"].algorithm == "ring" and rec["ar"].group == tuple(range(8))


def test_overlap_slowdown_stretches_compute_that_runs_beside_a_collective():
    """GEMM B starts with the AllReduce and outlasts it: slowed only while it runs beside it,
    B takes g + comm s/(1+s), not g (1+s)."""
    t = topo(1, 8, overlap_slowdown=0.2)
    sched, size = tp_overlap_schedule(dependent=False)
    trace = replay(sched, t, **FAKES)
    gpu = t.profile.gpu
    g = compute_time(ComputeOp("A", **GEMM), gpu)
    comm = ring_time("allreduce", 8, size)
    assert comm < g
    assert trace.step_time_s == pytest.approx(2 * g + comm * 0.2 / 1.2, rel=1e-9)


def _side(n: int, share: float) -> ComputeOp:
    """A kernel on a stream of its own holding half the SMs (sm_fraction < 1: never slowed by
    overlap), ``share`` of GEMM's FLOPs: it delays the collective issued after it."""
    return ComputeOp(f"S{n}", kind="gemm", flops=share * GEMM["flops"], sm_fraction=0.5, stream=f"side{n}")


def _beside_schedule(comms: list[tuple[ComputeOp | None, int]], kernels: int) -> Sched:
    """``kernels`` GEMMs in a chain on the compute stream from t = 0 and, per (side kernel,
    size) of ``comms``, a TP AllReduce on a stream of its own issued after that side kernel
    (None: at t = 0)."""
    pb = ProgramBuilder()
    prev = pb.add(ComputeOp("B0", **GEMM))
    for k in range(1, kernels):
        prev = pb.add(ComputeOp(f"B{k}", **GEMM, deps=(prev,)))
    for n, (side, size) in enumerate(comms):
        deps = (pb.add(side),) if side is not None else ()
        pb.add(CommOp(f"ar{n}", "allreduce", ("tp",), size, deps=deps, stream=f"c{n}"))
    return Sched(Grid.from_sizes({"tp": 8}), {0: pb.ops})


@pytest.mark.parametrize("compute_runs", [False, True])
@pytest.mark.parametrize("case", ["start", "middle", "spanning", "outlasting", "two apart", "two together"])
def test_kernel_is_slowed_only_while_communication_runs_beside_it(case: str, compute_runs: bool):
    """A kernel progresses at 1/(1+s) of its speed alone while its rank has communication in
    flight, at full speed otherwise: kernels of c seconds (in all) overlapped for o seconds end
    at c + o s/(1+s) (sweep/bound.py's slowdown_bound); ones whose communication outlasts them
    from t0 on end at t0 + (c - t0)(1+s). Communication starting with the kernels, in their
    middle, covering them, outlasting them, and two transfers (apart: their o add up; one
    starting inside the other: the union of their spans counts)."""
    s = 0.25
    t = topo(1, 8, overlap_slowdown=s)
    gpu = t.profile.gpu
    g = compute_time(ComputeOp("B", **GEMM), gpu)
    kernels = 2
    c = kernels * g
    small, big = 4 * 2**20, 1024 * 2**20
    o_small, o_big = ring_time("allreduce", 8, small), ring_time("allreduce", 8, big)
    early, late = _side(0, 0.1), _side(1, 0.35)
    t_early, t_late = compute_time(early, gpu), compute_time(late, gpu)
    assert 0 < t_early < t_early + o_small < t_late < t_late + o_small < c < c * (1 + s) < o_big
    comms: list[tuple[ComputeOp | None, int]]
    if case == "start":
        comms, expected = [(None, small)], c + o_small * s / (1 + s)
    elif case == "middle":
        comms, expected = [(late, small)], c + o_small * s / (1 + s)
    elif case == "spanning":
        comms, expected = [(None, big)], c * (1 + s)
    elif case == "outlasting":
        comms, expected = [(late, big)], t_late + (c - t_late) * (1 + s)
    elif case == "two apart":
        comms, expected = [(early, small), (_side(1, 0.35), small)], c + 2 * o_small * s / (1 + s)
    else:
        # one from 0 that ends halfway through the other's, issued at t_early: in flight together
        # from t_early to o_mid, so the rank has communication from 0 to t_early + o_small
        mid = round((t_early + o_small / 2 - LAT) * NVLINK_Bps / (2 * 7 / 8))
        o_mid = ring_time("allreduce", 8, mid)
        assert t_early < o_mid < t_early + o_small
        comms, expected = [(None, mid), (early, small)], c + (t_early + o_small) * s / (1 + s)
    trace = replay(_beside_schedule(comms, kernels), t, compute_runs=compute_runs, **FAKES)
    ends = {r.name: r.end for r in trace.records(0)}
    assert ends[f"B{kernels - 1}"] == pytest.approx(expected, rel=1e-9)


def test_kernel_that_gave_up_sms_to_communication_is_not_slowed_twice():
    """TransformerEngine userbuffers GEMMs run on fewer SMs (sm_fraction < 1, priced by
    compute_time); the generic overlap slowdown must not stretch them again."""
    t = topo(1, 8, overlap_slowdown=0.2)
    pb = ProgramBuilder()
    a = pb.add(ComputeOp("A", **GEMM))
    pb.add(CommOp("ar", "allreduce", ("tp",), 32 * 2**20, deps=(a,)))
    pb.add(ComputeOp("B", **GEMM, deps=(a,), sm_fraction=0.9))
    trace = replay(Sched(Grid.from_sizes({"tp": 8}), {0: pb.ops}), t, **FAKES)
    gpu = t.profile.gpu
    g = compute_time(ComputeOp("A", **GEMM), gpu)
    g_b = compute_time(ComputeOp("B", **GEMM, sm_fraction=0.9), gpu)
    assert g_b > g
    assert trace.step_time_s == pytest.approx(g + g_b, rel=1e-9)


def test_rendezvous_waits_for_the_last_member():
    """Rank 1 computes twice as long before the collective: everyone starts it when rank 1 arrives."""
    pb0, pb1 = ProgramBuilder(), ProgramBuilder()
    a0 = pb0.add(ComputeOp("A", **GEMM))
    pb0.add(CommOp("ag", "allgather", ("tp",), 2**20, deps=(a0,)))
    a1 = pb1.add(ComputeOp("A", **GEMM))
    b1 = pb1.add(ComputeOp("A2", **GEMM, deps=(a1,)))
    pb1.add(CommOp("ag", "allgather", ("tp",), 2**20, deps=(b1,)))
    sched = Sched(Grid.from_sizes({"tp": 2}), {0: pb0.ops, 1: pb1.ops}, roles={0: 0, 1: 1})
    t = topo(1, 2)
    trace = replay(sched, t, **FAKES)
    g = compute_time(ComputeOp("A", **GEMM), t.profile.gpu)
    r0 = {r.name: r for r in trace.records(0)}
    assert r0["ag"].ready == pytest.approx(g)
    assert r0["ag"].start == pytest.approx(2 * g)
    assert r0["ag"].wait == pytest.approx(g)
    assert trace.step_time_s == pytest.approx(2 * g + ring_time("allgather", 2, 2**20))


def test_mismatched_collective_order_is_a_hang_naming_ranks_and_ops():
    def prog(first: str, second: str):
        pb = ProgramBuilder()
        pb.add(CommOp(first, "allgather" if first == "ag" else "reducescatter", ("tp",), 2**20))
        pb.add(CommOp(second, "allgather" if second == "ag" else "reducescatter", ("tp",), 2**20))
        return pb.ops

    sched = Sched(Grid.from_sizes({"tp": 2}), {"a": prog("ag", "rs"), "b": prog("rs", "ag")}, roles={0: "a", 1: "b"})
    with pytest.raises(HangError) as err:
        replay(sched, topo(1, 2), **FAKES)
    msg = str(err.value)
    assert "rank 0" in msg and "rank 1" in msg
    assert "'ag'" in msg and "'rs'" in msg and "stream tp" in msg


def test_missing_peer_of_a_send_is_a_hang():
    pb0, pb1 = ProgramBuilder(), ProgramBuilder()
    pb0.add(P2POp("send", sends=(Transfer("pp", 1, 1000, "x"),)))
    pb1.add(ComputeOp("idle", "elementwise", hbm_bytes=10))
    sched = Sched(Grid.from_sizes({"pp": 2}), {0: pb0.ops, 1: pb1.ops}, roles={0: 0, 1: 1})
    with pytest.raises(HangError, match="rank 0.*'send'.*never posts"):
        replay(sched, topo(1, 2), **FAKES)


def pipeline_ring(n: int, nbytes: int) -> Sched:
    """A ring step: every rank sends to the next and receives from the previous, then computes."""
    pb = ProgramBuilder()
    x = pb.add(P2POp("ring", sends=(Transfer("cp", 1, nbytes, "kv"),), recvs=(Transfer("cp", -1, nbytes, "kv"),)))
    pb.add(ComputeOp("attn", "attention", flops=1e12, deps=(x,), tag=Tag("fwd")))
    return Sched(Grid.from_sizes({"cp": n}), {0: pb.ops})


def test_p2p_ring_step_is_latency_plus_bytes_over_bandwidth():
    t = topo(1, 4)
    nbytes = 32 * 2**20
    trace = replay(pipeline_ring(4, nbytes), t, **FAKES)
    p2p = LAT + nbytes / 450e9
    attn = compute_time(ComputeOp("attn", "attention", flops=1e12, tag=Tag("fwd")), t.profile.gpu)
    assert trace.step_time_s == pytest.approx(p2p + attn, rel=1e-9)


def test_same_schedule_twice_gives_identical_traces():
    t = topo(2, 8)
    sched, _ = tp_overlap_schedule(dependent=True)
    sched = Sched(Grid.from_sizes({"tp": 8, "dp": 2}), sched.programs)
    a = replay(sched, t, **FAKES)
    b = replay(sched, t, **FAKES)
    for r in a.ranks:
        assert (a.timelines[r].end == b.timelines[r].end).all()
    assert a.stats.events == b.stats.events


def test_replay_leaves_the_garbage_collector_as_it_found_it():
    """The replay freezes the objects alive at its start and collects its youngest generation
    less often (replay.collector.collector_spared); afterwards thresholds and frozen objects are as
    before, and a caller's own frozen objects stay frozen."""
    import gc

    t = topo(2, 8)
    sched, _ = tp_overlap_schedule(dependent=True)
    sched = Sched(Grid.from_sizes({"tp": 8, "dp": 2}), sched.programs)
    thresholds, frozen = gc.get_threshold(), gc.get_freeze_count()
    a = replay(sched, t, **FAKES)
    assert (gc.get_threshold(), gc.get_freeze_count(), gc.isenabled()) == (thresholds, frozen, True)
    gc.freeze()
    try:
        held = gc.get_freeze_count()
        b = replay(sched, t, **FAKES)
        assert gc.get_freeze_count() == held
    finally:
        gc.unfreeze()
    for r in a.ranks:
        assert (a.timelines[r].end == b.timelines[r].end).all()


def dp_tp_schedule() -> Sched:
    """TP AllGather on NVLink and a DP AllReduce across nodes, with P2P along tp."""
    pb = ProgramBuilder()
    a = pb.add(ComputeOp("A", **GEMM))
    ag = pb.add(CommOp("ag", "allgather", ("tp",), 8 * 2**20, deps=(a,)))
    x = pb.add(P2POp("x", sends=(Transfer("tp", 1, 2**20, "k"),), recvs=(Transfer("tp", -1, 2**20, "k"),), deps=(ag,)))
    b = pb.add(ComputeOp("B", **GEMM, deps=(x,)))
    pb.add(CommOp("grads", "allreduce", ("dp",), 256 * 2**20, deps=(b,)))
    pb.add(ComputeOp("C", **GEMM, deps=(b,)))
    return Sched(Grid.from_sizes({"tp": 8, "dp": 4}), {0: pb.ops})


def test_symmetric_mode_agrees_with_full_simulation():
    t = topo(4, 8)
    sched = dp_tp_schedule()
    full = replay(sched, t, symmetric=False, **FAKES)
    sym = replay(sched, t, symmetric=True, **FAKES)
    assert full.stats.ranks_simulated == 32
    assert sym.stats.ranks_simulated == 1 and set(sym.stats.mirrored_axes) == {"tp", "dp"}
    assert sym.step_time_s == pytest.approx(full.step_time_s, rel=1e-9)
    assert (sym.timelines[0].end == full.timelines[0].end).all()


def test_roles_that_differ_along_an_axis_are_not_mirrored():
    t = topo(1, 4)
    sched = pipeline_ring(4, 2**20)
    sched.roles = {0: 0, 1: 1, 2: 0, 3: 1}
    sched.programs[1] = [*sched.programs[0][:1], replace(sched.programs[0][1], flops=2e12)]
    sym = replay(sched, t, symmetric=True, **FAKES)
    assert sym.stats.ranks_simulated == 4


def test_roles_named_apart_with_equal_programs_inside_a_node_are_mirrored():
    """Equal programs under two role names, the ring inside one node: one timeline (mirrored),
    the step of every rank simulated."""
    t = topo(1, 4)
    sched = pipeline_ring(4, 2**20)
    sched.roles = {0: 0, 1: 1, 2: 0, 3: 1}
    sched.programs[1] = list(sched.programs[0])
    sym = replay(sched, t, symmetric=True, **FAKES)
    full = replay(sched, t, symmetric=False, **FAKES)
    assert sym.stats.ranks_simulated == 1 and full.stats.ranks_simulated == 4
    assert sym.step_time_s == pytest.approx(full.step_time_s, rel=1e-9)


# -- the breakdown of report.summary on these traces ----------------------------------------
from simulator.report.summary import critical_path_breakdown, rank_comm_bytes  # noqa: E402


def test_breakdown_of_an_exposed_collective_adds_up():
    t = topo(1, 8)
    g = compute_time(ComputeOp("A", **GEMM), t.profile.gpu)
    sched, size = tp_overlap_schedule(dependent=True)
    trace = replay(sched, t, **FAKES)
    bd = critical_path_breakdown(trace.timelines[trace.critical_rank()], trace.step_time_s)
    assert bd.compute == pytest.approx(2 * g)
    assert bd.exposed_comm["allreduce"] == pytest.approx(ring_time("allreduce", 8, size))
    assert bd.pipeline_bubble == pytest.approx(0.0, abs=1e-15)
    assert bd.total == pytest.approx(trace.step_time_s, rel=1e-12)
    assert rank_comm_bytes(trace.timelines[0])["allreduce"] == size


def test_hidden_collective_shows_no_exposure():
    t = topo(1, 8)
    sched, _ = tp_overlap_schedule(dependent=False)
    trace = replay(sched, t, **FAKES)
    bd = critical_path_breakdown(trace.timelines[0], trace.step_time_s)
    assert sum(bd.exposed_comm.values()) == pytest.approx(0.0, abs=1e-15)
    assert bd.total == pytest.approx(trace.step_time_s, rel=1e-12)


def test_pipeline_wait_is_bubble_and_the_transfer_is_exposed_sendrecv():
    nbytes = 16 * 2**20
    pb0, pb1 = ProgramBuilder(), ProgramBuilder()
    a = pb0.add(ComputeOp("F0", **GEMM))
    pb0.add(P2POp("send", sends=(Transfer("pp", 1, nbytes, "act"),), deps=(a,)))
    r = pb1.add(P2POp("recv", recvs=(Transfer("pp", -1, nbytes, "act"),)))
    pb1.add(ComputeOp("F1", **GEMM, deps=(r,)))
    sched = Sched(Grid.from_sizes({"pp": 2}), {0: pb0.ops, 1: pb1.ops}, roles={0: 0, 1: 1})
    t = topo(1, 2)
    trace = replay(sched, t, **FAKES)
    g = compute_time(ComputeOp("A", **GEMM), t.profile.gpu)
    xfer = LAT + nbytes / 450e9
    assert trace.critical_rank() == 1
    bd = critical_path_breakdown(trace.timelines[1], trace.step_time_s)
    assert bd.compute == pytest.approx(g)
    assert bd.pipeline_bubble == pytest.approx(g)
    assert bd.exposed_comm["sendrecv"] == pytest.approx(xfer)
    assert bd.total == pytest.approx(trace.step_time_s, rel=1e-12)
    assert rank_comm_bytes(trace.timelines[0])["sendrecv"] == nbytes and rank_comm_bytes(trace.timelines[1])["sendrecv"] == 0


def test_symmetric_mode_agrees_with_full_simulation_on_the_real_network():
    """With the real FlowNetwork and collective planner (shared NICs between the DP AllReduce of
    the 8 TP positions), one simulated rank reproduces the 32-rank timeline."""
    from simulator.config.hardware import load_profile
    from simulator.hardware.topology import build_topology

    t = build_topology(load_profile("dgx-h100"), 4)
    sched = dp_tp_schedule()
    full = replay(sched, t, symmetric=False)
    sym = replay(sched, t, symmetric=True)
    assert sym.stats.ranks_simulated == 1
    assert sym.step_time_s == pytest.approx(full.step_time_s, rel=1e-6)
    assert sym.timelines[0].end == pytest.approx(full.timelines[0].end, rel=1e-6)


def test_symmetric_mode_keeps_replicas_that_share_a_nic_on_shared_nics():
    """Jean Zay's A100 nodes have 4 NICs for 8 GPUs (NIC r serves GPUs 2r, 2r+1). With tp 4
    innermost and dp 8 over 4 nodes, the DP groups of TP ranks 0 and 1 (GPUs 0, 4 and 1, 5 of
    each node) AllReduce at once through NICs 0 and 2. Mirrored along tp, the replica's flows
    were dropped and the AllReduce ran alone on those NICs, twice as fast as with every rank
    simulated; dp (whose replicas use NICs 2, 3 against 0, 1) is mirrored and tp only in blocks
    of the two GPUs of a NIC (TP ranks 0 and 1 simulated, 2 and 3 their mirror images on NIC 1),
    with the same timeline as the full replay."""
    from simulator.config.hardware import load_profile
    from simulator.hardware.topology import build_topology

    t = build_topology(load_profile("jean-zay-a100"), 4)
    pb = ProgramBuilder()
    a = pb.add(ComputeOp("A", **GEMM))
    grads = pb.add(CommOp("grads", "allreduce", ("dp",), 2**30, deps=(a,)))
    pb.add(ComputeOp("B", **GEMM, deps=(grads,)))
    sched = Sched(Grid.from_sizes({"tp": 4, "dp": 8}), {0: pb.ops})
    full = replay(sched, t, symmetric=False)
    sym = replay(sched, t, symmetric=True, image_ranks=False)
    assert sym.stats.mirrored_axes == ("dp",) and sym.stats.ranks_simulated == 2
    assert sym.step_time_s == pytest.approx(full.step_time_s, rel=1e-6)
    # With image ranks (the default) TP rank 1 is rank 0's image, its DP flows beside rank 0's
    img = replay(sched, t, symmetric=True)
    assert img.stats.ranks_simulated == 1 and img.step_time_s == pytest.approx(sym.step_time_s, rel=1e-12)
    # Two DP groups per NIC pair: each gets half of two NICs, one NIC's worth of a ring.
    ar = next(r for r in full.records(0) if r.name == "grads")
    one_nic = t.profile.node.nics.Bps * t.profile.node.nics.efficiency
    assert ar.end - ar.start == pytest.approx(2 * 7 / 8 * 2**30 / one_nic, rel=0.1)


def test_default_mode_switches_to_symmetric_above_max_ranks_or_the_op_budget():
    t = topo(4, 8)
    sched = dp_tp_schedule()
    assert replay(sched, t, **FAKES).stats.ranks_simulated == 32
    assert replay(sched, t, max_ranks=16, **FAKES).stats.ranks_simulated == 1
    assert replay(sched, t, op_budget=10, **FAKES).stats.ranks_simulated == 1


def test_exclusive_link_fast_path_changes_nothing():
    """TP collectives alone on their NVLink links are timed by their cached time alone; the
    trace must equal the flow-by-flow replay (and the fast path must actually be taken)."""
    from simulator.config.hardware import load_profile
    from simulator.hardware.topology import build_topology

    t = build_topology(load_profile("dgx-h100"), 4)
    pb = ProgramBuilder()
    prev = pb.add(ComputeOp("A", **GEMM))
    for k in range(4):
        ag = pb.add(CommOp(f"ag{k}", "allgather", ("tp",), 16 * 2**20, deps=(prev,)))
        prev = pb.add(ComputeOp(f"B{k}", **GEMM, deps=(ag,)))
    pb.add(CommOp("grads", "reducescatter", ("dp",), 64 * 2**20, deps=(prev,)))
    sched = Sched(Grid.from_sizes({"tp": 8, "dp": 4}), {0: pb.ops})
    fast = replay(sched, t, symmetric=False)
    slow = replay(sched, t, symmetric=False, exclusive_fast_path=False)
    assert fast.stats.events < slow.stats.events
    for r in fast.ranks:
        assert fast.timelines[r].end == pytest.approx(slow.timelines[r].end, rel=1e-9)


def _ring_step(n: int, nbytes: int, transport: str) -> Sched:
    pb = ProgramBuilder()
    pb.add(P2POp("ring", sends=(Transfer("cp", 1, nbytes, "kv", transport),),
                 recvs=(Transfer("cp", -1, nbytes, "kv", transport),)))
    return Sched(Grid.from_sizes({"cp": n}), {0: pb.ops})


def test_nccl_send_runs_on_its_channels_and_userbuffers_on_the_link():
    """With the real planner and network: an ncclSend between two GPUs of a DGX H100 runs on the
    16 channels NCCL gives a 2-rank communicator (32 p2p channels / 2), 20.6 GB/s each = 329.6 GB/s,
    below the NVLink's 450 × 0.82 = 369 GB/s; a TransformerEngine userbuffers copy runs at the link.
    The batch starts once the host has issued it (one ``torch.distributed`` call)."""
    from simulator.config.hardware import load_profile
    from simulator.costs.collectives import plan_collective
    from simulator.costs.host import COLLECTIVE_US
    from simulator.hardware.topology import build_topology

    t = build_topology(load_profile("dgx-h100"), 1)
    nbytes = 64 * 2**20
    lat = plan_collective("sendrecv", [0, 1], nbytes, t).latency_s + COLLECTIVE_US * 1e-6
    nccl = replay(_ring_step(2, nbytes, "nccl"), t).step_time_s
    ub = replay(_ring_step(2, nbytes, "userbuffers"), t).step_time_s
    assert nccl == pytest.approx(lat + nbytes / (16 * 20.6e9), rel=1e-6)
    assert ub == pytest.approx(lat + nbytes / (450e9 * 0.82), rel=1e-6)


@pytest.mark.parametrize("send", [False, True])
def test_runs_of_kernels_as_one_block_give_the_op_by_op_times(send: bool):
    """Kernels replayed as one block must start, end and be slowed as op by op: communication
    starting mid-run (a collective issued off op 2, a send off op 5) stretches the kernel
    running then and slows the next ones until it ends; kernels after it run at full speed."""
    t = topo(2, 4, overlap_slowdown=0.2)
    pb = ProgramBuilder()
    chain = [pb.add(ComputeOp("A0", **GEMM))]
    for k in range(1, 12):
        chain.append(pb.add(ComputeOp(f"A{k}", **GEMM, deps=(chain[-1],))))
        if k == 2:
            pb.add(CommOp("grads", "allreduce", ("dp",), 64 * 2**20, deps=(chain[-1],)))
        if k == 5 and send:
            pb.add(P2POp("x", sends=(Transfer("dp", 1, 2**20, "k"),), recvs=(Transfer("dp", -1, 2**20, "k"),),
                         deps=(chain[-1],)))
    last = pb.add(CommOp("tail", "allgather", ("tp",), 8 * 2**20, deps=(chain[-1],)))
    pb.add(ComputeOp("B", **GEMM, deps=(last,)))
    sched = Sched(Grid.from_sizes({"tp": 4, "dp": 2}), {0: pb.ops})
    fast = replay(sched, t, symmetric=False)
    slow = replay(sched, t, symmetric=False, compute_runs=False)
    assert fast.stats.events < slow.stats.events
    for r in fast.ranks:
        for a in ("ready", "start", "end"):
            assert getattr(fast.timelines[r], a) == pytest.approx(getattr(slow.timelines[r], a), rel=1e-12)
    # The overlap did stretch some kernels.
    g = compute_time(ComputeOp("A", **GEMM), t.profile.gpu)
    tl = slow.timelines[0]
    assert max(tl.end[k] - tl.start[k] for k in chain) > 1.05 * g


def test_hang_from_mismatched_sizes_gives_the_sizes():
    def prog(size: int):
        pb = ProgramBuilder()
        pb.add(CommOp("ar", "allreduce", ("tp",), size))
        return pb.ops

    sched = Sched(Grid.from_sizes({"tp": 2}), {"a": prog(2**20), "b": prog(2**21)}, roles={0: "a", 1: "b"})
    with pytest.raises(HangError) as err:
        replay(sched, topo(1, 2), **FAKES)
    msg = str(err.value)
    assert "disagree" in msg and "allreduce of 1,048,576 bytes" in msg and "allreduce of 2,097,152 bytes" in msg


def test_hang_report_cap_keeps_the_rank_at_fault():
    """32 ranks wait on an AllReduce that the last rank never issues (it waits on a send
    nobody receives): the capped report still names that rank and what it waits on."""
    n = 32
    ok = ProgramBuilder()
    ok.add(CommOp("ar", "allreduce", ("dp",), 2**20))
    culprit = ProgramBuilder()
    culprit.add(P2POp("send", sends=(Transfer("dp", 1, 1000, "x"),)))
    roles = {r: "ok" for r in range(n - 1)} | {n - 1: "late"}
    sched = Sched(Grid.from_sizes({"dp": n}), {"ok": ok.ops, "late": culprit.ops}, roles=roles)
    with pytest.raises(HangError) as err:
        replay(sched, topo(4, 8), **FAKES)
    msg = str(err.value)
    assert len(msg.splitlines()) <= 26
    assert "at fault: ranks [0, 31]" in msg.splitlines()[0]  # 31 never issues it; 0 never receives from 31
    assert f"  rank {n - 1}: op 0 'send' on stream dp: send key 'x' to rank 0" in msg


def test_op_that_ends_the_step_is_the_latest_of_the_last_to_end():
    """The breakdown's tail starts from the op that ends last, the latest one on a tie (what
    ``max(range(n), key=lambda k: (end[k], k))`` picks), with NaN ends (ops not run) as that
    expression treats them: never taken, unless the first stays the best."""
    import numpy as np

    from simulator.report.summary import _last_to_end

    nan = float("nan")
    cases = [[1.0, 3.0, 2.0], [3.0, 1.0, 3.0, 2.0], [0.0, -0.0], [-0.0, 0.0, -1.0], [5.0],
             [1.0, nan, 3.0, 3.0, nan], [nan, 1.0, 2.0], [nan, nan], [2.0, nan, 1.0]]
    rng = np.random.default_rng(0)
    cases += [list(rng.integers(0, 4, 50).astype(float)) for _ in range(20)]
    for case in cases:
        end = np.array(case)
        listed = end.tolist()  # as critical_path_breakdown reads them: a float object each
        assert _last_to_end(end) == max(range(len(listed)), key=lambda k: (listed[k], k)), case

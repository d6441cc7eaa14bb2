"""RCCL's own tuner (simulator/costs/rccl_tuner.py) on AMD profiles: its latency tables in
closed form, the choice it makes against the measured MI300X/MI355X sweeps, and that RCCL's
systems have their own deployed row while NCCL's keep theirs."""

from __future__ import annotations

import pytest

from simulator.calibration.measured import DATA_DIR, read_sweep
from simulator.config.hardware import load_profile
from simulator.costs import rccl_tuner
from simulator.costs.collectives import plan_collective
from simulator.costs.deployed import DEPLOYED, deployed_for, deployed_key
from simulator.costs.nccl_graph import context_from_profile
from simulator.hardware.topology import build_topology
from simulator.units import KiB, MiB


def _roce(name: str):
    p = load_profile(name)
    nics = p.node.nics.model_copy(update={"transport": "roce"})
    return p.model_copy(update={"node": p.node.model_copy(update={"nics": nics})})


def test_amd_profiles_run_rccl_and_nvidia_profiles_nccl():
    assert load_profile("mi300x").collective_library == "rccl"
    assert load_profile("mi355x").collective_library == "rccl"
    assert load_profile("dgx-h100").collective_library == "nccl"
    assert context_from_profile(load_profile("mi300x"), 16, 2).library == "rccl"
    assert context_from_profile(load_profile("dgx-h100"), 16, 2).library == "nccl"


def test_rccl_latencies_in_closed_form():
    """tuning_model_5 on 2 x 8 GPUs (ppn 8, AMD hosts: 2 us net overhead, x3 for Simple)."""
    ctx = context_from_profile(load_profile("mi300x"), 16, 2)
    # Tree: base + 2 ((ppn - 1) xGMI hops + log2(2) network hops)
    assert rccl_tuner.latency_us(ctx, "allreduce", "tree", "ll") == pytest.approx(12 + 2 * (7 * 0.9 + 10.5))
    assert rccl_tuner.latency_us(ctx, "allreduce", "tree", "simple") == pytest.approx(17 + 2 * (7 * 2.3 + 25.0))
    # Ring AllReduce: 2(n-1) = 30 steps, 2(nNodes-1) = 2 of them across the network
    assert rccl_tuner.latency_us(ctx, "allreduce", "ring", "ll") == pytest.approx(12 + 28 * 2.0 + 2 * 9.5)
    assert rccl_tuner.latency_us(ctx, "allreduce", "ring", "simple") == pytest.approx(17 + 28 * 6.0 + 2 * 320.0)
    one = context_from_profile(load_profile("mi300x"), 8, 1)
    assert rccl_tuner.latency_us(one, "allreduce", "ring", "ll") == pytest.approx(12 + 14 * 0.8)
    assert not rccl_tuner.enabled(one, "allreduce", "tree", "simple")  # skipped on one node
    assert not any(rccl_tuner.enabled(ctx, "allreduce", a, "ll128") for a in ("ring", "tree"))


def test_protocol_ranges_override_the_model_across_nodes():
    """rcclUpdateCollectiveProtocol: LL while the bytes per rank are in (0, 1 MiB] for AllReduce,
    (0, 96 KiB] for AllGather, else Simple; a pinned protocol (NCCL_PROTO) is honoured."""
    ctx = context_from_profile(load_profile("mi300x"), 16, 2)
    assert rccl_tuner.select(ctx, "allreduce", MiB)[1] == "ll"
    assert rccl_tuner.select(ctx, "allreduce", MiB + 4)[1] == "simple"
    assert rccl_tuner.select(ctx, "allgather", 16 * 96 * KiB)[1] == "ll"
    assert rccl_tuner.select(ctx, "allgather", 16 * 96 * KiB + 16)[1] == "simple"
    assert rccl_tuner.select(ctx, "allreduce", 64 * MiB, proto="ll")[1] == "ll"
    assert rccl_tuner.protocol_override(context_from_profile(load_profile("mi300x"), 8, 1), "allreduce", 64) is None


@pytest.mark.parametrize("stem,profile", [("mi300x16_allreduce_2node_aac10_roce", "mi300x"),
                                          ("mi355x16_allreduce_2node_aac14_pollara", "mi355x")])
def test_choice_against_the_measured_amd_sweeps(stem, profile):
    """Both RCCL sweeps step up in busbw between 128 and 256 MiB (Tree/Simple to Ring/Simple):
    RCCL's tables run Ring/Simple from 256 MiB (the ring correction reaches 1.0 there) and
    Tree/Simple from 2 to 64 MiB; LL up to 1 MiB. No LL128 across nodes."""
    rows = {r.size_bytes: r for r in read_sweep(DATA_DIR / f"{stem}.csv").rows}
    assert rows[256 * MiB].busbw_GBps > 1.2 * rows[128 * MiB].busbw_GBps  # the measured step
    p = _roce(profile) if profile == "mi300x" else load_profile(profile)
    topo = build_topology(p, 2)
    gpus = list(range(16))
    chosen = {s: plan_collective("allreduce", gpus, s, topo) for s in rows if s > 0}
    for s, plan in chosen.items():
        assert plan.protocol != "ll128"
        if s <= MiB:
            assert plan.protocol == "ll", s
        elif s <= 64 * MiB:
            assert (plan.algorithm, plan.protocol) == ("tree", "simple"), s
        elif s >= 256 * MiB:
            assert (plan.algorithm, plan.protocol) == ("ring", "simple"), s


def test_rccl_systems_have_their_own_deployed_row():
    assert deployed_key(_roce("mi300x")) == "roce/rccl"
    assert deployed_key(load_profile("mi355x")) == "roce/rccl"
    assert deployed_key(_roce("dgx-h100")) == "roce"
    assert deployed_key(load_profile("dgx-h100")) == "infiniband"
    assert deployed_for("roce/rccl") is DEPLOYED["roce/rccl"]
    assert deployed_for("roce/rccl", {"other": DEPLOYED["other"]}) is DEPLOYED["other"]  # no RCCL row: pooled

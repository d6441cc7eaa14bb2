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


def _at(profile, release: str | None):
    """The profile with the RCCL release its sweep's header names (nccl.version)."""
    return profile if release is None else profile.model_copy(update={"nccl": {**profile.nccl, "version": release}})


@pytest.mark.parametrize("stem,profile,release", [("mi300x16_allreduce_2node_aac10_roce", "mi300x", "2.22.3"),
                                                  ("mi355x16_allreduce_2node_aac14_pollara", "mi355x", "2.21.5")])
def test_choice_against_the_measured_amd_sweeps(stem, profile, release):
    """Both RCCL sweeps step up in busbw between 128 and 256 MiB (Tree/Simple to Ring/Simple):
    tuning_model_5 runs Ring/Simple from 256 MiB (the ring correction reaches 1.0 there) and
    Tree/Simple from 2 to 64 MiB; LL up to 1 MiB. No LL128 across nodes before 2.26."""
    rows = {r.size_bytes: r for r in read_sweep(DATA_DIR / f"{stem}.csv").rows}
    assert rows[256 * MiB].busbw_GBps > 1.2 * rows[128 * MiB].busbw_GBps  # the measured step
    p = _at(_roce(profile) if profile == "mi300x" else load_profile(profile), release)
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


def test_release_tables():
    """tables_for: gfx950 (cdna4) gets tuning_model_6 with LL128 from RCCL 2.26; earlier releases and
    gfx942 (cdna3) tuning_model_5 without LL128; no release named: the newest encoded (2.26)."""
    t = rccl_tuner.tables_for
    assert t("2.26.6", "cdna4") is rccl_tuner.MODEL_6_2_26 and t("2.27.7", "cdna4").ll128
    assert t(None, "cdna4") is rccl_tuner.MODEL_6_2_26
    assert t("2.22.3", "cdna4") is rccl_tuner.MODEL_5 and not t("2.22.3", "cdna4").ll128
    assert t("2.18.3", "cdna3") is rccl_tuner.MODEL_5  # before the first encoded release: the first
    assert t("2.27.7", "cdna3") is rccl_tuner.MODEL_5_2_26 and not t("2.27.7", "cdna3").ll128
    assert t("2.26.6", "cdna3").ll_range == rccl_tuner.MODEL_5.ll_range


def test_gfx950_ll128_range_overrides_the_model_across_nodes():
    """rcclUpdateCollectiveProtocol with tuning_model_6 (2.26-2.27): AllReduce LL in (0, 131071]
    bytes per rank, LL128 in (131071, 17660227], Simple above; on more than 2 nodes the LL128 max
    x 3.8; AllGather and ReduceScatter by bytes / ranks (LL128 in (7, 8 MiB] and (131071, 4 MiB])."""
    p = _at(load_profile("mi355x"), "2.27.7")
    two = context_from_profile(p, 16, 2)
    po = rccl_tuner.protocol_override
    assert [po(two, "allreduce", b) for b in (131071, 131072, 17660227, 17660228)] == ["ll", "ll128", "ll128", "simple"]
    four = context_from_profile(p, 32, 4)
    assert po(four, "allreduce", 17660228) == "ll128"
    assert po(four, "allreduce", int(17660227 * 3.8)) == "ll128"
    assert po(four, "allreduce", int(17660227 * 3.8) + 1) == "simple"
    assert [po(two, "allgather", 16 * b) for b in (7, 8, 8 * MiB, 8 * MiB + 1)] == ["ll", "ll128", "ll128", "simple"]
    assert [po(two, "reducescatter", 16 * b) for b in (131071, 131072, 4 * MiB, 4 * MiB + 1)] == \
        ["ll", "ll128", "ll128", "simple"]
    assert po(context_from_profile(p, 8, 1), "allreduce", MiB) is None  # one node: the model's choice
    assert rccl_tuner.enabled(two, "allreduce", "tree", "ll128") and rccl_tuner.enabled(two, "allreduce", "ring", "ll128")
    # the pinned protocol (NCCL_PROTO) is honoured; gfx942 of the same release runs no LL128
    assert rccl_tuner.select(two, "allreduce", 4 * MiB, proto="simple")[1] == "simple"
    mi300x = context_from_profile(_at(_roce("mi300x"), "2.27.7"), 16, 2)
    assert rccl_tuner.select(mi300x, "allreduce", 4 * MiB)[1] == "simple"
    assert not rccl_tuner.enabled(mi300x, "allreduce", "tree", "ll128")


def test_gfx950_corrections_in_closed_form():
    """tuning_model_6's per-size corrections, index log2(bytes / 64): Tree/Simple 0.1 and Tree/LL128
    2.0 at 32 MiB (index 19), Ring/Simple 1.0 from 256 MiB (index 22), 0.8 at 512 MiB-1 GiB."""
    ctx = context_from_profile(_at(load_profile("mi355x"), "2.26.6"), 16, 2)
    c = rccl_tuner.correction
    assert c(ctx, "tree", "simple", 32 * MiB) == pytest.approx(0.1)
    assert c(ctx, "tree", "ll128", 32 * MiB) == pytest.approx(2.0)
    assert c(ctx, "tree", "simple", 2 * MiB) == pytest.approx(0.7)
    assert [c(ctx, "ring", "simple", s * MiB) for s in (256, 512, 1024)] == pytest.approx([1.0, 0.8, 0.8])
    old = context_from_profile(_at(load_profile("mi355x"), "2.21.5"), 16, 2)
    assert c(old, "tree", "simple", 32 * MiB) == pytest.approx(1.0)


@pytest.mark.parametrize("stem,release,tol", [("mi355x16_allreduce_2node_aac14_pollara", "2.26.6", 0.18),
                                              ("mi355x16_allreduce_2node_alibaba_ainic", "2.27.7", 0.36)])
def test_gfx950_ll128_against_the_measured_sweeps(stem, release, tol):
    """128 KiB-4 MiB on the two MI355X sweeps run RCCL's LL128 range, timed as Tree/LL128: each row's
    busbw within ``tol`` of the measured one (AAC14 within 18%; Alibaba's system runs 20-35% faster
    than AAC14's at every size from 1 MiB, Simple rows included, a difference no header states), and
    from 1 MiB nearer the measured time than what tuning_model_5 ran there (Tree/LL at 1 MiB,
    Tree/Simple above)."""
    from simulator.costs.model import CostModel
    from simulator.replay.single_collective import time_collective

    rows = {r.size_bytes: r.time_us for r in read_sweep(DATA_DIR / f"{stem}.csv").rows if r.size_bytes > 0}
    p = load_profile("mi355x")
    new, old = CostModel(build_topology(_at(p, release), 2)), CostModel(build_topology(_at(p, "2.21.5"), 2))
    gpus = list(range(16))
    for s in (128 * KiB, 256 * KiB, 512 * KiB, MiB, 2 * MiB, 4 * MiB):
        plan = new.plan("allreduce", gpus, s)
        assert (plan.algorithm, plan.protocol) == ("tree", "ll128"), s
        err_new = rows[s] / (time_collective("allreduce", gpus, s, new, plan=plan).time_s * 1e6) - 1
        err_old = rows[s] / (time_collective("allreduce", gpus, s, old).time_s * 1e6) - 1
        assert abs(err_new) <= tol, (s, err_new)
        if s >= MiB:
            assert abs(err_new) < abs(err_old), (s, err_new, err_old)


def test_rccl_systems_have_their_own_deployed_row():
    assert deployed_key(_roce("mi300x")) == "roce/rccl"
    assert deployed_key(load_profile("mi355x")) == "roce/rccl"
    assert deployed_key(_roce("dgx-h100")) == "roce"
    assert deployed_key(load_profile("dgx-h100")) == "infiniband"
    assert deployed_for("roce/rccl") is DEPLOYED["roce/rccl"]
    assert deployed_for("roce/rccl", {"other": DEPLOYED["other"]}) is DEPLOYED["other"]  # no RCCL row: pooled

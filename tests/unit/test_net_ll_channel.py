"""LL's rate per channel across nodes (``nccl.net_ll_channel_GBps``): LL lines bound for the network
are stored into a host-memory buffer by the channel's CTA and scanned by the proxy before the send
(net.cc), so a channel's LL rate across nodes is that path's, not a share of the links' rate."""

from __future__ import annotations

import statistics

import pytest

from simulator.calibration.measured import DATA_DIR, read_sweep
from simulator.calibration.sweep_prediction import case_for, predict_sweep
from simulator.config.hardware import load_profile
from simulator.costs import nccl_graph, nccl_tuner
from simulator.costs.collectives import phase_time_s, plan_collective, effective_capacity_Bps
from simulator.costs.deployed import NEUTRAL, DeployedNet
from simulator.errors import InputError
from simulator.hardware.topology import build_topology


def _profile(name: str, **nccl):
    """The bundled profile with NCCL's own constants (no deployed ones) and ``nccl``."""
    p = load_profile(name)
    return p.model_copy(update={"nccl": {**NEUTRAL.overrides(), **nccl}})


def _rate(value: float) -> dict[str, float]:
    return {"net_ll_channel_GBps.ring": value, "net_ll_channel_GBps.tree": value}


def test_keys_set_both_algorithms_then_one_and_zero_means_nccls_own():
    base = load_profile("dgx-a100")
    p = base.model_copy(update={"nccl": {"net_ll_channel_GBps": 2.0, "net_ll_channel_GBps.tree": 0.5}})
    k = nccl_graph.context_from_profile(p, 16, 2, "coll").constants
    assert dict(k.net_ll_channel_GBps) == {"ring": 2.0, "tree": 0.5}
    k = nccl_graph.context_from_profile(_profile("dgx-a100"), 16, 2, "coll").constants
    assert dict(k.net_ll_channel_GBps) == {"ring": None, "tree": None}
    with pytest.raises(InputError):
        nccl_graph.context_from_profile(_profile("dgx-a100", **_rate(-1)), 16, 2, "coll")


def test_one_channel_of_ll_across_nodes_moves_at_the_rate_and_inside_a_node_at_nccls():
    """A Ring/LL AllReduce of S bytes on two nodes of one A100 each: every one of the n_ch channels
    carries 2(n-1)/n x S / n_ch = S / n_ch of payload, so with a rate R per channel below NCCL's the
    flows take S / (n_ch x R); inside one node (2 GPUs on PCIe) the rate does not apply."""
    size, rate = 1 << 20, 0.5
    for gpus_per_node, nodes in ((1, 2), (2, 1)):
        base = _profile("a100-pcie")
        capped = _profile("a100-pcie", **_rate(rate))
        times = []
        for p in (base, capped):
            topo = build_topology(p, nodes)
            gpus = [n * p.node.gpus + j for n in range(nodes) for j in range(gpus_per_node)]
            plan = plan_collective("allreduce", gpus, size, topo, algo="ring", proto="ll")
            times.append(phase_time_s(plan.phases[0], effective_capacity_Bps(topo)))
        if nodes == 1:
            assert times[1] == times[0]
        else:
            ctx = nccl_graph.context_from_profile(capped, 2, 2, "coll")
            n_ch = nccl_tuner.channels_used(ctx, "ring", "ll", size)
            assert times[1] == pytest.approx(size / (n_ch * rate * 1e9))
            assert times[1] > times[0]


def test_one_rate_measured_on_one_gpu_per_node_predicts_eight():
    """The rate per channel measured on 2 x 1 A100-PCIe (Ring/LL, 4-64 KiB: payload per channel over
    the time above the sweep's floor, ~0.94 GB/s) predicts the Tree/LL rows of two 2 x 8 A100 clusters
    over InfiniBand (Sophia: DGX A100, NCCL 2.22.3; ABCI: NCCL 2.8.4) within 10% median, and its own
    within 15%, with InfiniBand's 5 us per network crossing (its own LL rows run to ~450 KiB, where NCCL
    switches to Simple, since the HCA's PHB path rules LL128 out: from 330 KiB the measured times alternate
    between ~1 GB/s and twice that from one 1 KiB step to the next, 12% while LL stopped at ~99 KiB). As a share of NCCL's rate instead the
    same rows asked x 0.125 of the one-GPU system and ~x 1 of the eight-GPU ones: NCCL rates a Tree/LL
    channel of the DGX 4-8x faster than a Ring/LL channel of the PCIe node."""
    pcie = read_sweep(DATA_DIR / "a100pcie_x2_allreduce_2node_ib_linear1k.csv")
    neutral = predict_sweep(pcie, case_for(pcie), table={"other": NEUTRAL})
    floor = min(p.measured_time_us for p in neutral.points)
    rate = statistics.median(p.ll_channel_us / (p.measured_time_us - floor) for p in neutral.points
                             if p.protocol == "ll" and 4096 <= p.size_bytes <= 65536)
    assert 0.7 <= rate <= 1.2
    table = {"other": DeployedNet(5.0, (rate, 1.0), (rate, 1.0), "a100-pcie's LL rate")}
    for name, bound in (("a100x16_allreduce_2node_dgx_ib", 0.10), ("a100x16_allreduce_2node_abci", 0.10),
                        ("a100pcie_x2_allreduce_2node_ib_linear1k", 0.15)):
        sweep = read_sweep(DATA_DIR / f"{name}.csv")
        errors = [abs(p.error) for p in predict_sweep(sweep, case_for(sweep), table=table).points if p.protocol == "ll"]
        assert len(errors) >= 15 and statistics.median(errors) <= bound, (name, statistics.median(errors))

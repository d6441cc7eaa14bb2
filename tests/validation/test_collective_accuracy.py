"""Predicted collectives against the bundled nccl-tests sweeps (data/nccl/), at the issue's
tolerances: median |busbw error| <= 15% for sizes >= 1 MiB on the single-node H100 sweeps (all
five collectives) and the two-node A100 sweeps, and the shape of the curves; plus per-sweep
tolerances (what the model achieves, with a few points of margin) on the full-mesh and
multi-node systems fixed later (docs/validation-collectives.md lists the numbers)."""

from __future__ import annotations

import statistics
from functools import lru_cache

import pytest

from simulator.calibration.collective_validation import SweepResult, case_for, predict_sweep
from simulator.calibration.measured import DATA_DIR, read_sweep
from simulator.config.hardware import available_profiles, load_profile
from simulator.costs.nvls_pipeline import nvls_tree_fill_factor
from simulator.units import KiB, MiB

TOLERANCE = 0.15
H100_SINGLE_NODE = ["h100x8_allreduce_1node", "h100x8_allgather_1node", "h100x8_reducescatter_1node",
                    "h100x8_alltoall_1node", "h100x8_sendrecv_1node",
                    "h100x8_allgather_1node_full_ringalgo", "h100x8_reducescatter_1node_full_ringalgo",
                    "h100x8_allreduce_1node_full_nvlsenv"]
# The two-node DGX A100 (Sophia) sweeps. The ABCI (NCCL 2.8.4) files stop at 32 MiB and run far
# below the model; they are reported in docs/validation-collectives.md, not asserted (see the notes).
A100_TWO_NODE = ["a100x16_allreduce_2node_dgx_ib", "a100x16_allgather_2node_dgx_ib", "a100x16_alltoall_2node_dgx_ib"]
FULL_RANGE = ["h100x8_allgather_1node_full_ringalgo", "h100x8_reducescatter_1node_full_ringalgo",
              "h100x8_allreduce_1node_full_nvlsenv", "a100x16_allreduce_2node_dgx_ib", "a100x16_allgather_2node_dgx_ib"]


# Achieved median |busbw error| >= 1 MiB (docs/validation-collectives.md) + a few points of margin.
MESH_AND_MULTINODE = {
    "mi300x8_allreduce_1node": 0.06,  # 2.2%: rings over all 7 xGMI links
    "gh200x4_allreduce_1node_alps_slingshot": 0.10,  # 6.4%: rings over all 3 NVLink peers
    # 9.4%: Tree on two nodes (tree graph bwIntra); 12.2% with the Tree/Simple fill of its 512 KiB chunks
    # (costs/tree_pipeline.py; the 128 MiB-4 GiB rows, 8-15% too slow, are the Tree bandwidth estimate's);
    # 16.4% with no LL128 across the nodes (NCCL 2.23.4 types the GH200's C2C path PHB: gpu_path p2c):
    # 4-16 MiB run Tree/Simple, whose 512 KiB chunks' fill over 6 NVLink stages (~150 us) the measured
    # rows do not show (4 MiB: 189 us measured, 369 predicted)
    "gh200x8_allreduce_2node_alps_slingshot": 0.18,
    # Tree/Simple over a host-message transport: the fill of NCCL 2.20+'s whole-step chunks
    # (costs/tree_pipeline.py), the per-message cost overlapping their bytes (collectives.messages_overlap):
    "a100x16_allreduce_2node_awsp4de_efa": 0.10,  # 5.1% (7.2% with a serial cost per message; 26.7% without)
    # 9.1% (18.3% with a serial cost per message and no fill): GPUDirect-TCPXO, 1 MiB chunks
    "h100x16_allreduce_2node_gcp_a3mega_tcpxo": 0.12,
    # 17.0% (11.1% while every remote peer added a network hop in order): NCCL runs the 8 remote peers' rounds
    # as one batch, and the proxy's per-peer cost (costs/nccl_p2p.py) prices the 56-59 us floor within
    # 7-14%, but the 1-8 MiB rows run 20-31% fast (0.69-0.80 of the measured time), a ramp of the bytes
    # the model lacks that the in-order hops had hidden
    "a100x16_alltoall_2node_dgx_ib": 0.18,
}
# Sweeps whose mid sizes are still far off (see the doc's notes) but whose bandwidth regime
# (>= 512 MiB) is modelled: median |error| there, achieved + margin.
BANDWIDTH_REGIME = {
    "h100x16_allreduce_2node_awsp5_efa": 0.08,  # 3.3% (14.0% before the NVLSTree per-channel ceiling)
    "gh200x64_allreduce_16node_alps_slingshot": 0.08,  # 4.1%
    "mi300x8_allreduce_1node": 0.06,
    "gh200x4_allreduce_1node_alps_slingshot": 0.10,
    "gh200x8_allreduce_2node_alps_slingshot": 0.11,  # 7.3%
}


@lru_cache(maxsize=None)
def _result(name: str) -> SweepResult:
    sweep = read_sweep(DATA_DIR / f"{name}.csv")
    case = case_for(sweep)
    assert case is not None, f"{name} has no case mapping"
    if case.profile not in available_profiles():
        pytest.skip(f"profile {case.profile} is not bundled yet")
    return predict_sweep(sweep, case)


@pytest.mark.parametrize("name", H100_SINGLE_NODE + A100_TWO_NODE[:2])
def test_median_busbw_error_above_1MiB(name):
    r = _result(name)
    assert len(r.errors(MiB)) >= 5
    assert r.median_error(MiB) <= TOLERANCE, f"{name}: median |busbw error| {r.median_error(MiB):.1%}"


@pytest.mark.parametrize("name", FULL_RANGE)
def test_latency_floor_at_small_sizes_within_a_factor(name):
    r = _result(name)
    small = [p for p in r.points if p.size_bytes <= 4 * KiB]
    assert small
    for p in small:
        assert 0.5 <= p.predicted_time_us / p.measured_time_us <= 2.0, (p.size_bytes, p.predicted_time_us, p.measured_time_us)


@pytest.mark.parametrize("name", H100_SINGLE_NODE + A100_TWO_NODE)
def test_plateau_matches_the_measured_peak(name):
    r = _result(name)
    measured_peak = max(p.measured_busbw_GBps for p in r.points)
    predicted_at_largest = r.points[-1].predicted_busbw_GBps
    assert predicted_at_largest == pytest.approx(measured_peak, rel=TOLERANCE)


@pytest.mark.parametrize("name", H100_SINGLE_NODE + A100_TWO_NODE)
def test_busbw_is_monotone_in_the_bandwidth_regime(name):
    r = _result(name)
    big = [p.predicted_busbw_GBps for p in r.points if p.size_bytes >= 8 * MiB]
    assert all(b >= a * 0.99 for a, b in zip(big, big[1:])), big


# One Azure ND H100 v5 and one ND H200 v5 VM (Azure/AI-benchmarking-guide), AllReduce with NCCL_ALGO=NVLS from
# one process (-g 8), NCCL 2.18.5 / 2.20.5; in-place busbw only, times derived from it. Achieved median |busbw
# error| >= 1 MiB + margin: 5.0% (the H100 VM's 64 KiB-2 MiB calls take 42-45 us, its H200 twin's 31-41) and 2.2%.
AZURE_NVLS = {"h100x8_allreduce_1node_azure_ndh100v5_nvls": 0.07, "h200x8_allreduce_1node_azure_ndh200v5_nvls": 0.04}


@pytest.mark.parametrize("name,tol", sorted(AZURE_NVLS.items()))
def test_azure_vms_run_the_pinned_nvls_at_nvswitchs_reduction_rate(name, tol):
    """Every size runs NVLS as the header pins it; the 8 GiB busbw (478.9 and 480.0 GB/s measured)
    within 3%, above any ring on 450 GB/s NVLink."""
    r = _result(name)
    assert {p.algorithm for p in r.points} == {"nvls"}
    assert r.median_error(MiB) <= tol, f"{name}: median |busbw error| {r.median_error(MiB):.1%}"
    assert r.points[-1].predicted_busbw_GBps == pytest.approx(r.points[-1].measured_busbw_GBps, rel=0.03)
    assert r.points[-1].measured_busbw_GBps > 450


def test_h100_allreduce_default_picks_nvls_at_large_sizes():
    r = _result("h100x8_allreduce_1node")
    assert r.points[-1].algorithm == "nvls"
    assert r.points[-1].predicted_busbw_GBps > 400  # measured 482 GB/s: above any ring on 450 GB/s NVLink


def _assert_median_error_above(name: str, min_bytes: int, tol: float, min_rows: int) -> None:
    """The sweep has at least ``min_rows`` sizes >= ``min_bytes``, and their median |busbw error| is within ``tol``."""
    r = _result(name)
    assert len(r.errors(min_bytes)) >= min_rows
    assert r.median_error(min_bytes) <= tol, \
        f"{name}: median |busbw error| >= {min_bytes / MiB:g} MiB {r.median_error(min_bytes):.1%}"


@pytest.mark.parametrize("name,tol", sorted(MESH_AND_MULTINODE.items()))
def test_median_busbw_error_above_1MiB_mesh_and_multinode(name, tol):
    _assert_median_error_above(name, MiB, tol, min_rows=5)


@pytest.mark.parametrize("name,tol", sorted(BANDWIDTH_REGIME.items()))
def test_bandwidth_regime_of_multinode_and_mesh_sweeps(name, tol):
    _assert_median_error_above(name, 512 * MiB, tol, min_rows=3)


# Ring/Simple plateaus of Hopper nodes with a 400 Gb/s NIC per GPU, one graph channel per NIC run
# as two CTAs at the p2p channel's 20.6 GB/s (nccl_tuner.ring_cta_GBps): 8 x 41.2 GB/s, where the
# NICs (8 x 47.5) or NCCL's graph (8 x 45) alone were predicted 10-14% too fast. IB and RoCE, 10 and
# 2 nodes, H100 and H200: every row >= 1 GiB within 3% (worst today 2.7%).
HOPPER_RING_PLATEAU = ["h100x80_allgather_10node_xxrjun_ib", "h100x80_reducescatter_10node_xxrjun_ib",
                       "h200x16_allgather_2node_gcp_a3ultra_roce"]


@pytest.mark.parametrize("name", HOPPER_RING_PLATEAU)
def test_hopper_ring_plateau_is_two_ctas_per_nic(name):
    r = _result(name)
    big = [p for p in r.points if p.size_bytes >= 1 << 30 and p.algorithm == "ring" and p.protocol == "simple"]
    assert len(big) >= 4
    worst = max(abs(p.error) for p in big)
    assert worst <= 0.04, f"{name}: worst |busbw error| >= 1 GiB {worst:.1%}"


# Two-node NVLSTree plateaus of 8-GPU H100 nodes, InfiniBand, RoCE and EFA: 249-260 GB/s algbw
# measured, NCCL's own per-channel NVLSTree ceiling (tuning.cc perChMaxNVLSTreeBws, Hopper on
# two nodes 57.7 GB/s busBw per graph channel; nccl_tuner.nvls_tree_edge_GBps) gives
# 8 x 57.7 x 16/30 = 246.2 GB/s; the links alone gave 278 (7-12% too fast). Every NVLSTree row of
# 4 GiB and up within 6% of the measured busbw (worst today 5.5%, aws-p5 at 16 GiB). Nebius' two H100
# VMs (dstack's example run, added after the ceiling was set) meet it within 1.4-1.9%.
NVLS_TREE_TWO_NODE = ["h100x16_allreduce_2node_issue309_ib", "h100x16_allreduce_2node_xe9680_ib",
                      "h100x16_allreduce_2node_oci_roce", "h100x16_allreduce_2node_awsp5_efa",
                      "h100x16_allreduce_2node_nebius_ib", "h100x16_allreduce_2node_together_k8s_ib",
                      "h200x16_allreduce_2node_coreweave_ib"]


@pytest.mark.parametrize("name", NVLS_TREE_TWO_NODE)
def test_two_node_nvls_tree_plateau_is_nccls_per_channel_ceiling(name):
    r = _result(name)
    big = [p for p in r.points if p.size_bytes >= 4 << 30 and p.algorithm == "nvls_tree"]
    assert big
    for p in big:  # busbw = 8 graph channels x 57.7, less the chunk pipeline's fill (16 channels x 8 heads)
        fill = nvls_tree_fill_factor(p.size_bytes, 16 * 8, 2)
        assert p.predicted_busbw_GBps == pytest.approx(8 * 57.7 / fill, rel=0.01)
    worst = max(abs(p.error) for p in big)
    assert worst <= 0.06, f"{name}: worst |busbw error| >= 4 GiB {worst:.1%}"


# From 4 nodes NCCL's tuner rates NVLSTree on its NVLS search graph (8 heads x min(40 x 0.85 x 7/8 x 2,
# 48, 45.5) = 364 GB/s busBw, nccl_graph.nvls_graph) below the 8 x 48 GB/s ring graph, so the largest
# calls run Ring/Simple at two CTAs per NIC (8 x 41.2 GB/s): 320-325 GB/s measured on two clusters
# (nccl-tests issue #309's 4 and 8 nodes, 10 x 8 H100 whose busbw drops from 345 at 1 GiB to 314 at
# 4 GiB). With the runtime 16 channels the model kept NVLSTree at 361-363 (+11-15%); now every row
# from 4 GiB is Ring/Simple within 4% (worst today 2.5%), two nodes stay on NVLSTree.
@pytest.mark.parametrize("name", ["h100x32_allreduce_4node_issue309_ib", "h100x64_allreduce_8node_issue309_ib",
                                  "h100x80_allreduce_10node_xxrjun_ib"])
def test_largest_allreduce_from_four_h100_nodes_is_nccls_ring(name):
    r = _result(name)
    big = [p for p in r.points if p.size_bytes >= 4096 * MiB]
    assert big and all((p.algorithm, p.protocol) == ("ring", "simple") for p in big)
    worst = max(abs(p.error) for p in big)
    assert worst <= 0.04, f"{name}: worst |busbw error| >= 4 GiB {worst:.1%}"
    assert _result("h100x16_allreduce_2node_issue309_ib").points[-1].algorithm == "nvls_tree"


# The two-node NVLSTree ramp: from 32 MiB to 2 GiB the calls take 140 us more than the 4-8 GiB
# rate and NCCL's latency give (70 us at 32 MiB), two rounds of 16 channels x 8 heads x the chunk
# (128 KiB; 64 KiB below 64 MiB) at ~250 GB/s: the chunk pipeline's fill
# (costs/nvls_pipeline.py). Without it those rows ran 11-37% fast; every row from 32 MiB is now
# within 5% of the measured busbw (worst today 3.7%; Nebius' two H100 VMs, added later: 1.9%).
@pytest.mark.parametrize("name", ["h100x16_allreduce_2node_issue309_ib", "h100x16_allreduce_2node_xe9680_ib",
                                  "h100x16_allreduce_2node_nebius_ib"])
def test_two_node_nvls_tree_ramp_is_the_chunk_pipeline_fill(name):
    r = _result(name)
    mid = [p for p in r.points if 32 * MiB <= p.size_bytes <= 2048 * MiB]
    assert len(mid) >= 7 and all(p.algorithm == "nvls_tree" for p in mid)
    worst = max(abs(p.error) for p in mid)
    assert worst <= 0.05, f"{name}: worst |busbw error| 32 MiB-2 GiB {worst:.1%}"


# The same 10-node H100 cluster with 1, 2 and 4 GPUs per node (N10_G1/G2/G4 logs): each GPU's
# NIC carries 48.7-49.2 GB/s. One rank per node rings through its own NIC only (nccl_graph.
# reachable_nics) and has no NVLS (nccl_tuner.enabled), so every row from 256 MiB is within 6%
# (worst today 4.7%); before, the 1-GPU AllReduce ran NVLS-tree 22% slow and SendRecv 90% fast.
PER_NODE_SWEEPS = [f"h100x{10 * g}_{op}_10node_xxrjun_ib_{g}pernode"
                   for g in (1,) for op in ("allreduce", "allgather", "reducescatter")]


@pytest.mark.parametrize("name", PER_NODE_SWEEPS)
def test_one_gpu_per_node_rings_at_its_nic_rate(name):
    r = _result(name)
    big = [p for p in r.points if p.size_bytes >= 256 * MiB]
    assert big and all(p.algorithm == "ring" and p.protocol == "simple" for p in big)
    worst = max(abs(p.error) for p in big)
    assert worst <= 0.06, f"{name}: worst |busbw error| >= 256 MiB {worst:.1%}"


def test_two_gh200_nodes_run_tree_above_the_ring_nic_bound():
    # Four 200 Gb/s NICs bound any ring at 100 GB/s busbw; the measured 158 GB/s needs Tree.
    r = _result("gh200x8_allreduce_2node_alps_slingshot")
    assert r.points[-1].algorithm == "tree"
    assert r.points[-1].predicted_busbw_GBps > 100


def test_mi300x_ring_uses_every_xgmi_link():
    # One 64 GB/s link per peer: rings over fewer than all 7 peers could not exceed 6 × 64 × 0.69.
    r = _result("mi300x8_allreduce_1node")
    assert r.points[-1].predicted_busbw_GBps > 6 * 64 * 0.69


def test_mi355x_one_node_ring_reaches_its_xgmi_links_not_rccls_graph():
    """One MI355X node (Oracle Cloud, 8 and 16 GiB): RCCL's graph rates each xGMI link at 48 GB/s on
    gfx950 as on gfx942 (7 x 48 = 336 GB/s, taken as 16 channels x 20 = 320), which the measured
    408 GB/s busbw exceeds: the ring runs at its 7 links' rate, 7 x 76.5 x 0.69 = 369.5 GB/s (was 320,
    -22%). What is left, -9.5%, is the per-link fraction: 58.4 GB/s of 76.5 (0.763) on this AllReduce,
    0.705 on MI300X's (mi300x8_allreduce_1node), 0.674 on this node's own All-to-All (data/nccl/INDEX.md)."""
    from simulator.config.hardware import load_profile

    su = load_profile("mi355x").node.scale_up
    links = su.links_per_gpu * su.link_GBps * su.efficiency
    assert links == pytest.approx(369.5, abs=0.1)
    r = _result("mi355x8_allreduce_1node_oci_pollara")
    for p in r.points:
        assert (p.algorithm, p.protocol) == ("ring", "simple")
        assert p.predicted_busbw_GBps == pytest.approx(links, rel=0.005)
        assert p.predicted_busbw_GBps > 7 * 48.0  # above all RCCL's graph rates the node at
        assert p.error == pytest.approx(links / p.measured_busbw_GBps - 1, abs=0.005)
        assert -0.105 <= p.error <= -0.085
    # the same node's All-to-All, on the same links at the same fraction, stays within 3%
    a2a = _result("mi355x8_alltoall_1node_oci_pollara")
    assert all(abs(p.error) <= 0.03 for p in a2a.points)


def test_h100_sendrecv_follows_nccls_p2p_channels():
    """8-rank SendRecv: 32-64 MiB on 4 channels (~80 GB/s measured), 128 MiB on 8, 256 MiB on 16,
    then the NVLink: every row within 10% (worst 8.5% at 256 MiB; 324% when a send ran at the link)."""
    r = _result("h100x8_sendrecv_1node")
    assert r.worst_error() <= 0.10, f"worst |busbw error| {r.worst_error():.1%}"


# Multi-node rings over xGMI meshes, measured (hisohara/ai-scripts, data/nccl/INDEX.md): the
# 4-16 GiB plateaus of 2, 4 and 8 MI325X nodes (NCCL_ALGO=Ring) within 0.3-1.0%, and the
# MI300X/MI355X two-node plateaus. Before multi-node mesh rings used every peer link, all of
# them were predicted at ~50 GB/s busbw (75-85% low).
MESH_MULTINODE_PLATEAU = {
    "mi325x16_allreduce_2node_aac11_roce_ringalgo": 0.03,
    "mi325x32_allreduce_4node_aac11_roce_ringalgo": 0.03,
    "mi325x64_allreduce_8node_aac11_roce_ringalgo": 0.03,
    "mi300x16_allreduce_2node_aac10_roce": 0.05,
    "mi355x16_allreduce_2node_aac14_pollara": 0.08,
    "mi355x16_allreduce_2node_alibaba_ainic": 0.04,  # 2.0% (RCCL 2.27.7, 8 AMD AI NICs; scored, not fitted)
    # Oracle Cloud's MI355X with 8 Pollara 400 NICs, 8-16 GiB only (scored, not fitted): 2.4% and 1.9%
    "mi355x16_allreduce_2node_oci_pollara": 0.03,
    "mi355x32_allreduce_4node_oci_pollara": 0.03,
    "mi300x16_allreduce_2node_oci_roce": 0.03,  # 1.7% (2 x 8 MI300X over RoCE, Oracle Cloud; scored, not fitted)
}


@pytest.mark.parametrize("name,tol", sorted(MESH_MULTINODE_PLATEAU.items()))
def test_multinode_xgmi_plateau(name, tol):
    r = _result(name)
    big = [p for p in r.points if p.size_bytes >= 4 << 30]
    assert big and all(p.algorithm == "ring" for p in big)
    worst = max(abs(p.error) for p in big)
    assert worst <= tol, f"{name}: worst |busbw error| >= 4 GiB {worst:.1%}"


def test_aac10_excess_is_paid_by_tree_calls_only():
    """AAC10's 2 x 8 MI300X sweep (RCCL 2.22.3) against the model: each Tree call of 8 B-256 KiB (LL) and
    2-64 MiB (Simple) takes 163-240 us more than predicted, while the Ring/Simple rows from 256 MiB are
    within 1.5% (256 and 512 MiB: +24 and -18 us). A cost paid per launch or per call whatever the
    algorithm (what the calibration's ``net_call_extra_us`` adds) would have to show on the ring too
    (data/nccl/INDEX.md, data-quality note on AAC10). Excluded: the Tree/LL rows of 512 KiB-1 MiB, whose
    LL rate differs as well."""
    r = _result("mi300x16_allreduce_2node_aac10_roce")
    tree = [p for p in r.points if p.algorithm == "tree" and (p.protocol == "simple" or p.size_bytes <= 256 * KiB)]
    ring = [p for p in r.points if p.algorithm == "ring" and p.size_bytes >= 256 * MiB]
    assert len(tree) == 22 and len(ring) == 7
    tree_excess = [p.measured_time_us - p.predicted_time_us for p in tree]
    assert all(150.0 <= e <= 250.0 for e in tree_excess), tree_excess
    assert all(abs(p.error) <= 0.02 for p in ring), [round(p.error, 4) for p in ring]
    near = [abs(p.measured_time_us - p.predicted_time_us) for p in ring if p.size_bytes <= 512 * MiB]
    assert max(near) * 5 < min(tree_excess), (near, min(tree_excess))


def test_every_bundled_row_is_consistent():
    """algbw = size / time and busbw = algbw x the nccl-tests factor for the stated ranks, on every
    row of every scored sweep (printed values are rounded to 0.01 GB/s)."""
    from simulator.calibration.collective_validation import CASES
    from simulator.costs.collectives import busbw_factor

    for name, case in CASES.items():
        sweep = read_sweep(DATA_DIR / f"{name}.csv")
        for row in sweep.rows:
            if row.size_bytes <= 0 or not row.time_us:
                continue
            algbw = row.size_bytes / (row.time_us * 1e3)
            assert abs(algbw - row.algbw_GBps) <= max(0.011, 0.005 * algbw), (name, row)
            busbw = algbw * busbw_factor(case.op, case.ranks)
            assert abs(busbw - row.busbw_GBps) <= max(0.011, 0.005 * busbw), (name, row)


# GB200 NVL72 (coreweave/nccl-tests, NCCL 2.26.2, >= 512 MiB): one rack (72 ranks over one
# NVLink domain of 18 trays) runs NVLS, 2 racks of 16 trays (128 ranks) NVLSTree, both NCCL's choice,
# and 20 racks (1,440 ranks) over InfiniBand are modelled as Ring (sweep_prediction's note: the
# per-call cost grows as NCCL's ring latency). Achieved median |busbw error| + margin.
NVL72 = {
    # 6.9% (13.7% as a pinned ring, 16 channels x 45 GB/s short of 839 GB/s; the links alone gave NVLS
    # +28%): the switches' reduction rate bounds NVLS (costs/nvls_reduce.py)
    "gb200x72_allreduce_1rack_nvl72": 0.08,
    # 1.3% (10.7% as a pinned ring): NVLSTree's in-rack reduction at the same rate, its chunk pipeline fill
    "gb200x128_allreduce_2rack_nvl72_ib": 0.03,
    # 20 racks: 12.0% with 5 us per crossing of the chain (40: nccl_tuner.ring_net_crossings) where NCCL
    # 2.26 counts 38 inter-node steps (11.6% at 7 us per step); 15.3% (signed +11.5% -> -0.2%) since each
    # of its 2,838 NVLink steps pays Blackwell's 0.7 us (nccl_constants.NVLINK_HOP_EXTRA_US): 512 MiB-2 GiB
    # turn too slow (-28..-5%), 8-16 GiB stay too fast (+14..+19%)
    # 19.2% (above 0.16 already) with InfiniBand's ring LL128 at x 0.9; 22.5% at x 1, the value the fit
    # keeps since no InfiniBand system gains a point from 0.9 (deployed_fit.parsimonious): 8-16 GiB +22..+45%
    # too fast, 2-rack 13.0% -> 10.7%
    "gb200x1440_allreduce_20rack_nvl72_ib": 0.23,
}


@pytest.mark.parametrize("name,tol", sorted(NVL72.items()))
def test_nvl72_racks(name, tol):
    _assert_median_error_above(name, 512 * MiB, tol, min_rows=5)


def test_nvl72_per_call_cost_grows_with_the_ring():
    """The 20-rack time is a + S/B with a = 4.6 ms (fitted on the first and last rows), a cost per
    call that only a ring's latency reaches (NVLSTree's is 0.16 ms), which is why that sweep stays
    pinned to Ring. The fitted 4.6 ms lies below even NCCL's own Ring/LL128 term (5.8 ms: 2,838
    NVLink steps at 1.9 us), so a ring step there costs less than NCCL's table says, and the 0.7 us
    more per step (7.8 ms) leaves it 70% above: within 75%."""
    r = _result("gb200x1440_allreduce_20rack_nvl72_ib")
    first, last = r.points[0], r.points[-1]
    algbw = (last.size_bytes - first.size_bytes) / (last.measured_time_us - first.measured_time_us)
    fitted = first.measured_time_us - first.size_bytes / algbw
    ring = max(p.latency_us for p in r.points)
    assert r.case.ranks == 1440 and {p.algorithm for p in r.points} == {"ring"}
    assert ring == pytest.approx(fitted, rel=0.75), f"fitted {fitted:.0f} us, ring term {ring:.0f} us"


def _per_call_and_rate(points, measured: bool) -> tuple[float, float]:
    """Least squares of time = a + S / B over ``points``: (a in us, B in GB/s), on the measured or the
    predicted times."""
    xs = [float(p.size_bytes) for p in points]
    ys = [p.measured_time_us if measured else p.predicted_time_us for p in points]
    n, mx, my = len(xs), sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return my - slope * mx, 1e-3 / slope


def test_nvl72_20_racks_ran_ring_ll128_not_simple():
    """The 20-rack per-call cost is an LL128 ring's, so NCCL 2.26.2 ran LL128 across the racks, as the
    model does. NCCL's Ring/Simple term (tuning.cc of v2.26.2-1: base 8.4 us, 3.4 us per NVLink step,
    14 us per network step, x 1.4 for a Simple ring across nodes) for 128 ranks over 2 MNNVL cliques is
    1.4 x (8.4 + 252 x 3.4 + 2 x 14) = 1,250 us, and Oracle's 2-rack Ring/Simple rows (4-32 GiB) cost
    1.07 ms per call (least squares), 0.85 of it. For 1,440 ranks over 20 cliques the same term is
    1.4 x (8.4 + 2,840 x 3.4 + 38 x 14) = 14,275 us; the 20-rack rows cost 4.83 ms per call, 0.34 of
    it, and 0.87 of NCCL's Ring/LL128 term, 14 + 2,840 x 1.9 + 38 x 4.0 = 5,562 us. NCCL enables LL128
    across nodes only on a GPU-to-NIC path no farther than PXN (tuning.cc), so on these GB200 trays the
    path is not the PHB that NCCL before 2.27 gives a GH200's C2C path (config/gdr.py): the profile
    leaves gb200-nvl72 without ``gpu_path: p2c``, which would turn the sweep to Ring/Simple."""
    def simple(n: int, cliques: int) -> float:
        return 1.4 * (8.4 + (2 * (n - 1) - 2 * (cliques - 1)) * 3.4 + 2 * (cliques - 1) * 14.0)

    ll128_1440 = 14.0 + (2 * 1439 - 38) * 1.9 + 38 * 4.0
    assert simple(128, 2) == pytest.approx(1250.5, abs=0.1) and ll128_1440 == pytest.approx(5562.0)
    oci = [p for p in _result("gb200x128_allreduce_2rack_oci_nvl72_roce").points if p.size_bytes >= 4096 * MiB]
    assert {(p.algorithm, p.protocol) for p in oci} == {("ring", "simple")}
    oci_call, _ = _per_call_and_rate(oci, measured=True)
    assert 0.75 <= oci_call / simple(128, 2) <= 1.0, oci_call  # 0.85
    r = _result("gb200x1440_allreduce_20rack_nvl72_ib")
    call, _ = _per_call_and_rate(r.points, measured=True)
    assert call < 0.5 * simple(1440, 20), call  # 4,831 us: 0.34 of the Simple term
    assert 0.75 <= call / ll128_1440 <= 1.0, call  # 0.87
    assert {(p.algorithm, p.protocol) for p in r.points} == {("ring", "ll128")}


def test_gh200_tree_simple_rate_holds_to_512_nodes_and_its_per_call_cost_to_32():
    """Tree/Simple on the Alps GH200 sweeps (NCCL 2.23.4; the rows where NCCL's tables and the model
    run it). Least squares of time = a + S/B: the model's rate B is within 10% of the measured on 128
    nodes (128 MiB-1 GiB: 38.4 against 36.1 GB/s algbw) and on 512 (128 MiB-2 GiB: 32.7 against 35.2),
    and its per-call term a within 20% on 16 nodes (8-32 MiB: 0.69 against 0.73 ms) and 32 (8-128 MiB:
    1.02 against 0.89 ms). Beyond 32 nodes the measured a leaps, 2.59 ms on 128 nodes and 3.65 ms on 512,
    where the model's (NCCL's tree latency, the deployed 15 us per crossing and the fill of 512 KiB
    chunks through 2 x log2(nodes) network stages, costs/tree_pipeline.py) gives 1.16 and 1.45: some
    1.4-2.2 ms per call, 100-120 us per network stage of the chunk, that no sweep of at most 32 nodes
    shows and NCCL's source does not give. Those rows' errors (+22..+52% at 16-256 MiB) are that gap."""
    cases = {"gh200x64_allreduce_16node_alps_slingshot": (8, 32), "gh200x128_allreduce_32node_alps_slingshot": (8, 128),
             "gh200x512_allreduce_128node_alps_slingshot": (128, 1024),
             "gh200x2048_allreduce_512node_alps_slingshot": (128, 2048)}
    fits = {}
    for name, (lo, hi) in cases.items():
        rows = [p for p in _result(name).points if lo * MiB <= p.size_bytes <= hi * MiB]
        assert len(rows) >= 3 and {(p.algorithm, p.protocol) for p in rows} == {("tree", "simple")}, name
        fits[name] = _per_call_and_rate(rows, measured=True), _per_call_and_rate(rows, measured=False)
    for name in ("gh200x512_allreduce_128node_alps_slingshot", "gh200x2048_allreduce_512node_alps_slingshot"):
        (_, rate), (_, predicted_rate) = fits[name]
        assert predicted_rate == pytest.approx(rate, rel=0.10), (name, rate, predicted_rate)
    for name in ("gh200x64_allreduce_16node_alps_slingshot", "gh200x128_allreduce_32node_alps_slingshot"):
        (call, _), (predicted_call, _) = fits[name]
        assert predicted_call == pytest.approx(call, rel=0.20), (name, call, predicted_call)


def test_gh200_tree_ll_floor_is_nccls_per_level_latency_to_32_nodes():
    """The 8-64 B rows (Tree/LL) take NCCL 2.23.4's tree latency, 6.8 + 2 x (3 x 0.6 + log2(nodes) x
    5.0) us (tuning.cc; LL messages stay within the CXI eager limit, so no rendezvous extra), within 10%
    on 2 to 32 nodes: 18.7 / 30.4 / 54.1 / 65.0 us measured (medians) against 20.4 / 30.4 / 50.4 / 60.4.
    On 512 nodes the floor is 131.5 us, 1.31 x NCCL's 100.4: the measured cost of a tree level rises
    from 10-12 us (2 to 32 nodes) to 16.6 us per level from 32 to 512 nodes, the same leap beyond 32 nodes
    the Tree/Simple per-call term shows (test above); the 128-node floor scatters (93-253 us)."""
    import statistics

    for name, nodes in (("gh200x8_allreduce_2node_alps_slingshot", 2), ("gh200x16_allreduce_4node_alps_slingshot", 4),
                        ("gh200x64_allreduce_16node_alps_slingshot", 16), ("gh200x128_allreduce_32node_alps_slingshot", 32),
                        ("gh200x2048_allreduce_512node_alps_slingshot", 512)):
        small = [p for p in _result(name).points if p.size_bytes <= 64]
        assert {(p.algorithm, p.protocol) for p in small} == {("tree", "ll")}, name
        nccl = 6.8 + 2 * (3 * 0.6 + (nodes.bit_length() - 1) * 5.0)
        measured = statistics.median(p.measured_time_us for p in small)
        assert statistics.median(p.predicted_time_us for p in small) == pytest.approx(nccl, abs=0.5), name
        if nodes <= 32:
            assert measured == pytest.approx(nccl, rel=0.10), (name, measured, nccl)
        else:
            assert measured > 1.25 * nccl, (name, measured, nccl)


def test_nvl72_one_and_two_racks_run_nvls():
    """Unpinned, one rack runs NVLS and two NVLSTree at every size (NCCL 2.26.2's tables), and their
    4-16 GiB plateaus land within 8% of the measured 743-839 GB/s busbw: the switches' reduction
    rate from 8 B200 (838 GB/s busbw at any rank count) where the links alone predicted 1,072-1,045
    (+28%, +29%)."""
    for name, algo in (("gb200x72_allreduce_1rack_nvl72", "nvls"), ("gb200x128_allreduce_2rack_nvl72_ib", "nvls_tree")):
        r = _result(name)
        assert r.case.algo is None and {p.algorithm for p in r.points} == {algo}
        for p in r.points:
            if p.size_bytes >= 4 * 1024 * MiB:
                assert p.predicted_busbw_GBps == pytest.approx(p.measured_busbw_GBps, rel=0.08), (name, p.size_bytes)


def test_gb300_nvls_plateau_is_the_b200_switch_rate():
    """Oracle Cloud's GB300 NVL72 trays (NCCL 2.28.7, NVLS on), modelled on gb200-nvl72: one and two
    trays run NVLS and two racks NVLSTree from 4 MiB, and the two trays' 2-16 GiB plateau (823-842 GB/s
    busbw) is the switches' reduction rate measured on 8 B200 of another machine (838 GB/s,
    costs/nvls_reduce.py), within 2% (-0.8% to -1.1% achieved)."""
    for name, algo in (("gb300x4_allreduce_1tray_oci_nvl72", "nvls"), ("gb300x8_allreduce_2tray_oci_nvl72", "nvls"),
                       ("gb300x128_allreduce_2rack_oci_nvl72_roce", "nvls_tree")):
        r = _result(name)
        assert {p.algorithm for p in r.points if p.size_bytes >= 4 * MiB} == {algo}, name
    for p in _result("gb300x8_allreduce_2tray_oci_nvl72").points:
        if p.size_bytes >= 2048 * MiB:
            assert p.predicted_busbw_GBps == pytest.approx(p.measured_busbw_GBps, rel=0.02), p.size_bytes


def _replaced(name: str, **changes) -> SweepResult:
    """A GB300 sweep predicted with its case changed (a pinned algorithm/protocol, NVLS off)."""
    from dataclasses import replace

    sweep = read_sweep(DATA_DIR / f"{name}.csv")
    return predict_sweep(sweep, replace(case_for(sweep), **changes))


def _row(r: SweepResult, size: int):
    return next(p for p in r.points if p.size_bytes == size)


def test_gb300_nvls_per_call_cost_grows_with_the_trays_where_nccls_does_not():
    """NCCL 2.28.7 prices an NVLS AllReduce inside one NVLink domain at its NVLink hwLat, 25 us, whatever
    the ranks (tuning.cc: ``latencies[NVLS] = intraLat``, plus interLat only across nodes), and the model
    does the same on 1, 2 and 16 trays. The measured rows do not: at 4 MiB (NVLS in all three) the time
    beyond the model is -0.5 / +13.5 / +30.3 us on 1 / 2 / 16 trays, and on 16 trays 512 KiB-2 MiB sit
    at a 66-70 us floor against 27.5-34.9 modelled. The two trays' own Ring/LL rows (512 KiB-2 MiB) are
    within 8%, so the extra is NVLS's, not a launch skew of two hosts. Not modelled (data/nccl/INDEX.md,
    GB300 note): a cost per NVLS head (the scatter and gather warps loop over min(ranks, 32) heads in
    order) fitted on 16 trays, ~0.66 us, gives +5 us on 2 trays where +13.5-20 us are measured."""
    names = ("gb300x4_allreduce_1tray_oci_nvl72", "gb300x8_allreduce_2tray_oci_nvl72",
             "gb300x64_allreduce_1rack_oci_nvl72")
    at4 = [_row(_result(n), 4 * MiB) for n in names]
    assert {p.algorithm for p in at4} == {"nvls"}
    assert {round(p.latency_us, 6) for p in at4} == {25.0}
    extra = [p.measured_time_us - p.predicted_time_us for p in at4]
    assert abs(extra[0]) <= 2.0 and 10.0 <= extra[1] <= 17.0 and 25.0 <= extra[2] <= 35.0, extra
    rack = _result("gb300x64_allreduce_1rack_oci_nvl72")
    for p in rack.points:
        if p.size_bytes <= 2 * MiB:
            assert 65.0 <= p.measured_time_us <= 71.0 and p.predicted_time_us <= 36.0, p.size_bytes
    for p in _result("gb300x8_allreduce_2tray_oci_nvl72").points:
        if p.size_bytes <= 2 * MiB:
            assert p.algorithm == "ring" and p.protocol == "ll" and abs(p.error) <= 0.10, p.size_bytes


def test_gb300_two_trays_step_up_between_1_and_2_gib():
    """Two trays' busbw steps from 725 to 823 GB/s between 1 and 2 GiB (+13.5%), where a rate curve of one
    algorithm rises by a few percent. NVLS (NCCL's choice from 4 MiB by its tables, with either NVLS graph)
    meets every row from 2 GiB within 1.1% and is 10-12% fast at 256 MiB-1 GiB; Ring/Simple pinned meets
    128 MiB-1 GiB within 3.2% and is 13-15% slow from 2 GiB. Either NCCL ran Ring to 1 GiB, which its
    tuning.cc does not give, or NVLS ran slower below 2 GiB, where its chunk is 64 KiB (enqueue.cc: below
    64 rounds of 24 channels x 8 heads x 128 KiB = 1.5 GiB) while one tray shows no step at its own chunk
    change (768 MiB). Not modelled (data/nccl/INDEX.md, GB300 note)."""
    name = "gb300x8_allreduce_2tray_oci_nvl72"
    nvls, ring = _result(name), _replaced(name, algo="ring", proto="simple")
    assert _row(nvls, 2048 * MiB).measured_busbw_GBps >= 1.12 * _row(nvls, 1024 * MiB).measured_busbw_GBps
    for p, q in zip(nvls.points, ring.points):
        if 256 * MiB <= p.size_bytes <= 1024 * MiB:
            assert 0.08 <= p.error <= 0.14, p.size_bytes
        if 128 * MiB <= q.size_bytes <= 1024 * MiB:
            assert abs(q.error) <= 0.035, q.size_bytes
        if q.size_bytes >= 2048 * MiB:
            assert -0.16 <= q.error <= -0.12 and abs(p.error) <= 0.015, q.size_bytes


def test_gb300_two_racks_allreduce_runs_at_ring_rates_not_nvls_trees():
    """Two racks (NCCL_NVLS_ENABLE=1 in the header) are priced as NCCL's tables choose, NVLSTree: 746-818
    GB/s busbw at 4-16 GiB where 659-738 were measured (+11-13%), and +28-74% fast at 64-256 MiB. The
    same case with NVLS off (Tree/LL128, Ring/LL128, then Ring/Simple from 4 GiB) meets 512 MiB-16 GiB
    within 5% and 64-256 MiB within 15%, but keeps 1-16 MiB at 241-373 us where a flat ~490 us floor
    was measured. NCCL sets up NVLS at init and drops it silently when that fails (init.cc); no log of
    the run says which it ran, so the case keeps the header's NVLS (data/nccl/INDEX.md, GB300 note)."""
    name = "gb300x128_allreduce_2rack_oci_nvl72_roce"
    tree, off = _result(name), _replaced(name, nvls=False)
    for p in tree.points:
        if p.size_bytes >= 4096 * MiB:
            assert 0.10 <= p.error <= 0.14, p.size_bytes
    for p, q in zip(tree.points, off.points):
        if 64 * MiB <= p.size_bytes <= 256 * MiB:
            assert p.error >= 0.25 and 0.0 <= q.error <= 0.15, p.size_bytes
        if p.size_bytes >= 512 * MiB:
            assert abs(q.error) <= 0.05 and q.algorithm == "ring", p.size_bytes
        if MiB <= p.size_bytes <= 16 * MiB:
            assert abs(p.measured_time_us / 490.0 - 1) <= 0.05 and q.predicted_time_us <= 380.0, p.size_bytes


def test_gb300_two_racks_alltoall_crosses_at_a_quarter_of_the_nics():
    """Between the racks a GPU of the 128-rank All-to-All moves half its bytes: the measured 47.7 GB/s
    busbw from 1 GiB is 24 GB/s per GPU, 96 GB/s per tray, 0.24 of its 8 x 400 Gb/s and half of what
    Oracle's GB200 racks moved with 4 NICs per tray (89.7 GB/s busbw) and of what 10 x 8 H100 over
    InfiniBand move with 72 remote peers (data/nccl/h100x80_alltoall_10node_xxrjun_ib.csv, 46 GB/s per
    GPU, within 5.5% of the model). NCCL 2.28.7 keeps every remote peer in flight (p2pSchedGroupSize 8
    rounds per channel base, 32 / 2 x 8 = 128 concurrent sends, enqueue.cc), so the model's 101-117 GB/s
    (+112% to +146%) is not a scheduling limit it misses; not modelled (data/nccl/INDEX.md, GB300 note)."""
    r = _result("gb300x128_alltoall_2rack_oci_nvl72_roce")
    big = [p for p in r.points if p.size_bytes >= 1024 * MiB]
    for p in big:
        per_gpu = p.size_bytes / 2 / (p.measured_time_us * 1e3)  # GB/s of each GPU's bytes to the other rack
        assert per_gpu == pytest.approx(24.0, rel=0.04), p.size_bytes
        assert p.predicted_busbw_GBps >= 2.0 * p.measured_busbw_GBps, p.size_bytes
    assert big[-1].predicted_busbw_GBps >= 2.4 * big[-1].measured_busbw_GBps


def test_a_nic_count_in_the_case_replaces_the_profiles():
    """A GB300 tray has 8 RoCE NICs of 400 Gb/s (its header) where the gb200-nvl72 profile has 4: the
    case's count reaches the profile the sweep is predicted on, and the two racks' All-to-All, whose
    bytes between the racks cross the NICs, runs faster with 8 than with 4."""
    from dataclasses import replace

    from simulator.calibration.sweep_prediction import CASES, case_profile
    from simulator.config.hardware import load_profile

    case = CASES["gb300x128_alltoall_2rack_oci_nvl72_roce"]
    assert case_profile(case).node.nics.count == 8 and load_profile("gb200-nvl72").node.nics.count == 4
    sweep = read_sweep(DATA_DIR / "gb300x128_alltoall_2rack_oci_nvl72_roce.csv")
    eight, four = predict_sweep(sweep, case).points[-1], predict_sweep(sweep, replace(case, nics=4)).points[-1]
    assert eight.predicted_busbw_GBps > 1.2 * four.predicted_busbw_GBps


def test_nvls_enable_0_in_the_header_keeps_nvls_off():
    """Two NVL72 racks over RoCE (Oracle Cloud), run with NCCL_NVLS_ENABLE=0 (the header's env, from the
    repo's manifest): no row may run NVLS/NVLSTree, which would be priced near the switches' reduction rate
    (838 GB/s busbw, costs/nvls_reduce.py) where 684 was measured; with Tree and Ring the bandwidth regime (>= 4 GiB: Ring/Simple) is within 8% of
    the measured busbw (+4.5-5% achieved), and the median from 1 MiB within 32% (31.2%: Tree/LL128
    over the 64-GPU chains at 4-256 MiB runs 21-34% below NCCL's RoCE LL128 rate, which the deployed
    row, fitted on 2-node H100/H200/A100 RoCE clusters, puts at 1.0 since the NVLSTree chunk pipeline's
    fill (costs/nvls_pipeline.py) stopped the 2-node NVLSTree ramps of the pooled systems from pulling it
    to 0.3, where this sweep's median was 13.3%)."""
    name = "gb200x128_allreduce_2rack_oci_nvl72_roce"
    r = _result(name)
    assert not r.case.nvls
    assert {p.algorithm for p in r.points} <= {"ring", "tree"}
    plateau = [p for p in r.points if p.size_bytes >= 4 * 1024 * MiB]
    assert len(plateau) == 4
    for p in plateau:
        assert abs(p.error) <= 0.08, (p.size_bytes, p.predicted_busbw_GBps, p.measured_busbw_GBps)
    _assert_median_error_above(name, MiB, 0.32, min_rows=10)


def test_polaris_runs_no_ll128_across_nodes():
    """Polaris' A100s reach their Slingshot NICs through the CPU's host bridge (NCCL_NET_GDR_LEVEL=PHB
    in every sweep's header; node.nics.gpu_path): NCCL's tuner enables LL128 only up to PXB, so no
    size of its multi-node sweeps is predicted on LL128, while one Polaris node (NVLink only) keeps
    it. The Alps GH200s reach theirs over C2C and the Grace CPU's PCIe, which their NCCL 2.23.4 types PHB
    too (node.nics.gpu_path p2c; config/gdr.py): LL128 on one node only."""
    for name in ("a100x8_allreduce_2node_polaris_slingshot", "a100x8_allgather_2node_polaris_slingshot",
                 "a100x32_allreduce_8node_polaris_slingshot", "a100x2160_allreduce_540node_polaris_slingshot",
                 "gh200x8_allreduce_2node_alps_slingshot", "gh200x64_allreduce_16node_alps_slingshot",
                 "gh200x2048_allreduce_512node_alps_slingshot"):
        assert all(p.protocol != "ll128" for p in _result(name).points), name
    assert any(p.protocol == "ll128" for p in _result("gh200x4_allreduce_1node_alps_slingshot").points)


def test_perlmutter_rings_reach_polaris_rate_per_nic_without_alt_read():
    """NERSC Perlmutter (4 Slingshot-11 NICs per node, one per GPU, CXI rendezvous at libfabric's default)
    and ALCF Polaris and Sirius (2 NICs per node, FI_CXI_RDZV_PROTO=alt_read) carry the same ring bytes per
    NIC on two nodes: 74.3 and 73.8 GB/s busbw over 4 NICs at 4 GiB (NCCL 2.21.5 and 2.22.3 runs) and
    36.6-36.8 over 2 at 1 GiB, 18.3-18.6 GB/s, 0.74 of a 25 GB/s NIC, read off the measured rows. Without
    alt_read no message cost applies, so the rate is the path's: every Perlmutter GPU reaches its NIC through
    the EPYC's host bridge (gpu_path phb, GDRDMA), and perlmutter-a100's ``pcie.phb_p2p_GBps`` is derived from
    Polaris' and Sirius' plateaus alone (18.35 / nics.efficiency 0.9 = 20.4 raw). Held out that way, the
    Ring/Simple plateaus from 128 MiB are within 3% (19-23% too fast at the NIC's rate)."""
    polaris_like = []
    for name in ("a100x8_allreduce_2node_polaris_slingshot", "a100x8_allreduce_2node_sirius_slingshot",
                 "a100x8_allreduce_2node_sirius_nccl2215_slingshot"):
        top = max(_result(name).points, key=lambda p: p.size_bytes)
        assert top.size_bytes == 1 << 30
        polaris_like.append(top.measured_busbw_GBps / 2)
    per_nic = statistics.median(polaris_like)
    profile = load_profile("perlmutter-a100")
    assert profile.node.pcie.phb_p2p_GBps * profile.node.nics.efficiency == pytest.approx(per_nic, rel=0.005)
    for name in ("a100x8_allreduce_2node_perlmutter_slingshot", "a100x8_allreduce_2node_perlmutter_nccl2223_slingshot"):
        perl = _result(name)  # NCCL 2.21.5 and 2.22.3, two node pairs
        per_nic_perl = max(perl.points, key=lambda p: p.size_bytes).measured_busbw_GBps / 4
        assert per_nic_perl == pytest.approx(per_nic, rel=0.03), name
        assert per_nic_perl == pytest.approx(0.74 * 25, rel=0.02), name
        plateau = [p for p in perl.points if p.size_bytes >= 128 * MiB]
        assert len(plateau) == 6 and all((p.algorithm, p.protocol) == ("ring", "simple") for p in plateau)
        assert all(abs(p.error) <= 0.03 for p in plateau), (name, [round(p.error, 3) for p in plateau])


def test_kestrel_h100_rings_reach_the_nic_rate_the_a100_nodes_miss():
    """NREL Kestrel (16 x 4 H100 SXM, 2 Slingshot-11 NICs per node) ran the same NCCL 2.21.5, aws-ofi-nccl 1.6.0
    and libfabric 1.15.2.0 as Perlmutter, also without alt_read, and its rings carry 45.7 (AllReduce) and 45.6
    (AllGather) GB/s busbw at 4 GiB: 22.8-22.9 GB/s per NIC, 0.91 of 25 GB/s, where the A100 nodes reach 18.4-18.6.
    Modelled on gh200-alps with 2 NICs (no message cost without alt_read), both plateaus are within 7% from
    512 MiB: the NIC and its software stack deliver the modelled rate, so the A100 nodes' shortfall is theirs."""
    per_nic = {}
    for op in ("allreduce", "allgather"):
        r = _result(f"h100x64_{op}_16node_kestrel_slingshot")
        per_nic[op] = max(r.points, key=lambda p: p.size_bytes).measured_busbw_GBps / 2
        plateau = [p for p in r.points if p.size_bytes >= 512 * MiB]
        assert len(plateau) == 4 and all(abs(p.error) <= 0.07 for p in plateau), [round(p.error, 3) for p in plateau]
    perl = _result("a100x8_allreduce_2node_perlmutter_slingshot")
    a100_per_nic = max(perl.points, key=lambda p: p.size_bytes).measured_busbw_GBps / 4
    for v in per_nic.values():
        assert v == pytest.approx(0.91 * 25, rel=0.02) and v / a100_per_nic >= 1.2


def test_a_host_bridge_p2p_overhead_would_give_the_a100_nodes_rate_but_not_kestrels():
    """NCCL charges GPU traffic through an Intel CPU's root complex 6/5 of its bytes (src/graph/topo.h
    INTEL_P2P_OVERHEAD: the CPU splits peer traffic into 64-byte TLPs). Put on a Slingshot NIC's modelled
    25 GB/s x 0.9, that leaves 18.75 GB/s per NIC, within 2% of what both A100 nodes' rings carry per NIC
    (Polaris 18.4, Perlmutter 18.4-18.6; their GPUs reach the NICs through the host bridge, gpu_path phb).
    It is not adopted as NCCL's rule (data/nccl/INDEX.md, Slingshot-11's per-NIC ring rate; perlmutter-a100
    carries the rate as its host bridge's own, pcie.phb_p2p_GBps): NCCL applies it to Intel CPUs
    only, both nodes are AMD (profile cpu_vendor), Kestrel's H100 nodes (AMD as well, path not published)
    carry 22.8-22.9 GB/s per NIC, 22% above it, and on the x86 PHB profiles it moves the held-out Sirius from
    5.0% to 13.6% median error >= 1 MiB (Polaris' alt_read message cost, fitted on Sirius, then counts twice)."""
    from simulator.config.hardware import load_profile

    overhead_rate = 25 * 0.9 * 5 / 6
    rates = {
        "a100x8_allreduce_2node_polaris_slingshot": 2,
        "a100x8_allreduce_2node_perlmutter_slingshot": 4,
        "a100x8_allreduce_2node_perlmutter_nccl2223_slingshot": 4,
    }
    for name, nics in rates.items():
        per_nic = max(_result(name).points, key=lambda p: p.size_bytes).measured_busbw_GBps / nics
        assert per_nic == pytest.approx(overhead_rate, rel=0.02), name
    for profile in ("polaris-a100", "perlmutter-a100"):
        assert load_profile(profile).node.cpu_vendor == "amd"
    for op in ("allreduce", "allgather"):
        r = _result(f"h100x64_{op}_16node_kestrel_slingshot")
        per_nic = max(r.points, key=lambda p: p.size_bytes).measured_busbw_GBps / 2
        assert per_nic / overhead_rate == pytest.approx(1.22, abs=0.02), op


def test_kestrel_allgather_eager_ring_steps_run_slower_than_rendezvous_ones():
    """Kestrel's 64-rank AllGather (Ring/LL, no alt_read) takes 550-710 us from 1 KiB to 128 KiB, where each
    ring step's network message stays within the CXI provider's 4,097-byte eager limit, and 466 us at 256 KiB,
    its first row of rendezvous-size messages: the eager steps cost more. The model does the reverse (the
    deployed per-crossing extra is the rendezvous, costs/transports.py eager_max_bytes): ~95-107 us, then 358
    us from 256 KiB. Every held-out repair tried (data/nccl/INDEX.md) prices the eager steps with the alt_read
    per-message cost: charged to every Ring/LL step on Slingshot it makes Perlmutter's 2-node Ring/LL rows
    (already 20-26% faster than predicted, pinned here) slower still; charged to eager ring steps only it
    fits this sweep alone."""
    r = _result("h100x64_allgather_16node_kestrel_slingshot")
    by_size = {p.size_bytes: p for p in r.points}
    eager = [by_size[s * KiB] for s in (1, 2, 4, 8, 16, 32, 64, 128)]
    rdzv = by_size[256 * KiB]
    assert all(p.algorithm == "ring" and p.protocol == "ll" for p in eager + [rdzv])
    assert 550 <= min(p.measured_time_us for p in eager) and max(p.measured_time_us for p in eager) <= 710
    assert rdzv.measured_time_us < 0.85 * min(p.measured_time_us for p in eager)
    assert all(p.predicted_time_us < 0.2 * p.measured_time_us for p in eager)
    assert rdzv.predicted_time_us > 3 * max(p.predicted_time_us for p in eager)
    perl = {p.size_bytes: p for p in _result("a100x8_allreduce_2node_perlmutter_slingshot").points}
    ring_ll = [perl[s * KiB] for s in (256, 512, 1024, 2048)]
    assert all((p.algorithm, p.protocol) == ("ring", "ll") and -0.3 <= p.error <= -0.15 for p in ring_ll), \
        [round(p.error, 3) for p in ring_ll]


def test_ring_takes_over_from_tree_where_the_gh200_sweeps_reach_a_rings_busbw():
    """One NIC per GH200 leaves NCCL's tree graph a TREE pattern, which its tuner rates × 0.85
    (simple_tree_pattern), and NCCL 2.23.4 runs no LL128 across these nodes (gpu_path p2c: PHB). So
    Tree/Simple meets Ring/Simple: on 128 nodes (512 ranks) Ring from 2 GiB, where the sweep reaches a
    ring's 87-89 GB/s (1 GiB, 67 GB/s measured, is Tree's); on 32 nodes from 256 MiB (measured from
    512 MiB; with LL128 on, Ring/LL128 from 64 MiB); on 512 nodes Ring's 2 × 511 steps of latency keep
    Tree to 4 GiB."""
    by_size = {p.size_bytes: p for p in _result("gh200x512_allreduce_128node_alps_slingshot").points}
    assert by_size[1024 * MiB].algorithm == "tree"
    assert all(by_size[s * 1024 * MiB].algorithm == "ring" for s in (2, 4))
    assert abs(by_size[4096 * MiB].error) <= 0.15  # Ring/Simple: -10%
    mid = {p.size_bytes: p for p in _result("gh200x128_allreduce_32node_alps_slingshot").points}
    assert mid[128 * MiB].algorithm == "tree" and mid[256 * MiB].algorithm == "ring"
    big = {p.size_bytes: p for p in _result("gh200x2048_allreduce_512node_alps_slingshot").points}
    assert big[1024 * MiB].algorithm == big[2048 * MiB].algorithm == "tree"


def test_nccl_min_nchannels_in_the_header_is_a_channel_floor():
    """128 x 8 H100 (nccl-tests issue #322) with NCCL_MIN_NCHANNELS=32: four CTAs run each of the 8
    graph channels (nccl_tuner.ring_ctas_per_channel), so Ring/LL128 is no longer held to NCCL's
    per-channel LL128 cap for two (8 x 36.7 = 294 GB/s busbw) but to the graph's 8 x 48 x 120/128 =
    360; measured 367 GB/s from 8 GiB. RoCE's deployed ring LL128 fraction (x 0.9, fitted on 2-node
    rings of two CTAs per NIC) slows the CTAs, which four per NIC more than feed
    (collectives.channel_fraction): the 16 GiB row is within 10% (24.6% slow before the floor, 17.5%
    while the fraction scaled the bytes, capping busbw at 0.9 x 360 = 324) and above 324, as predicted
    with the fraction at 1."""
    from dataclasses import replace

    from simulator.costs.deployed import DEPLOYED

    r = _result("h100x1024_allreduce_128node_issue322_ringll128")
    assert r.case.min_channels == 32 and DEPLOYED["roce"].ring[1] == 0.9
    assert abs(r.points[-1].error) <= 0.10, f"16 GiB: {r.points[-1].error:+.1%}"  # -8.9%
    assert r.points[-1].predicted_busbw_GBps > 0.9 * 8 * 48 * 120 / 128  # 334.6 GB/s
    assert all(p.predicted_busbw_GBps < 8 * 48 * 120 / 128 for p in r.points)
    roce = DEPLOYED["roce"]
    at_rate = predict_sweep(r.sweep, r.case, table={**DEPLOYED, "roce": replace(roce, ring=(roce.ring[0], 1.0))})
    assert [p.predicted_time_us for p in r.points] == pytest.approx([p.predicted_time_us for p in at_rate.points])


def test_nccl_proto_in_the_header_pins_the_protocol():
    """128 x 8 H100 (nccl-tests issue #322) run with NCCL_ALGO=Ring and NCCL_PROTO=LL128 (the header's
    env): every row is priced as Ring/LL128, as NCCL runs it, where NCCL's own choice on this layout
    would be Ring/Simple at 16 GiB (the Simple plateau of 8 x 400 Gb/s, which LL128 with its 120 of 128
    payload bytes per line cannot reach)."""
    from dataclasses import replace

    name = "h100x1024_allreduce_128node_issue322_ringll128"
    r = _result(name)
    assert (r.case.algo, r.case.proto, r.case.nvls) == ("ring", "ll128", False)
    assert {(p.algorithm, p.protocol) for p in r.points} == {("ring", "ll128")}
    unpinned = predict_sweep(r.sweep, replace(r.case, proto=None))
    assert unpinned.points[-1].protocol == "simple"
    assert r.points[-1].predicted_busbw_GBps < unpinned.points[-1].predicted_busbw_GBps


def _a100_pcie(name: str) -> SweepResult:
    return _result(f"a100pcie_x2_{name}_2node_ib_linear1k")


def test_a100_pcie_nodes_switch_from_ll_to_simple_where_measured():
    """The 2 x 1 A100-PCIe nodes reach their HCA through the CPU's host bridge (NCCL's topology log:
    ``NET/0 (3/24.000000/PHB)``; node.nics.gpu_path), so NCCL's tuner runs no LL128 across them
    (tuning.cc, typeInter <= PATH_PXB) and keeps Ring/LL until Simple's latency pays off. Measured, the
    dense 1 KiB-step sweep runs at LL's ~1 GB/s (up to 420 us) until the last row above 120 us, then drops
    to Simple's ~70 us; the predicted switch lies within 2% of that size (with LL128 enabled it came at
    ~99 KiB and priced 99-450 KiB at LL128's rate, 2-5x too fast)."""
    r = _a100_pcie("allreduce")
    assert all(p.protocol != "ll128" for p in r.points)
    last_slow = max(p.size_bytes for p in r.points if p.measured_time_us > 120)
    measured_switch = min(p.size_bytes for p in r.points if p.size_bytes > last_slow)
    predicted_switch = min(p.size_bytes for p in r.points if p.protocol == "simple")
    assert abs(predicted_switch / measured_switch - 1) <= 0.02, (predicted_switch, measured_switch)


@pytest.mark.parametrize("op,low", [("sendrecv", 256 * KiB), ("allreduce", 480 * KiB)])
def test_a100_pcie_simple_rows_grow_at_the_gdr_path_rate(op, low):
    """Above the protocol switch, each 2-node row grows at what the GPU-to-NIC path carries: the
    profile's 200 Gb/s x 0.584, the 14.6 GB/s plateau the same nodes measure at 1.6-12 GiB in another
    run (hardware_profiles/a100-pcie.yaml). The least-squares slope of the measured time over the
    1 KiB-step rows from ``low`` to 1 MiB (13.5 GB/s SendRecv, 15.1 GB/s AllReduce algbw) and the
    predicted one agree within 10% (the NIC's assumed 0.95 gave 23.8 GB/s, 75% above the SendRecv's)."""
    import numpy as np

    pts = [p for p in _a100_pcie(op).points if p.size_bytes >= low]
    assert len(pts) > 100 and all(p.protocol == "simple" for p in pts)
    size = np.asarray([p.size_bytes for p in pts], dtype=float)
    slope = {k: np.polyfit(size, [getattr(p, k) for p in pts], 1)[0] for k in ("measured_time_us", "predicted_time_us")}
    assert abs(slope["predicted_time_us"] / slope["measured_time_us"] - 1) <= 0.10, slope


def _increment_GBps(name: str, lo: int, hi: int, measured: bool = True) -> float:
    """What a sweep adds per byte from ``lo`` to ``hi`` (GB/s of algbw): the rate its bytes run at,
    free of the per-call cost."""
    pts = {p.size_bytes: p for p in _result(name).points}
    t = (lambda p: p.measured_time_us) if measured else (lambda p: p.predicted_time_us)
    return (hi - lo) / (t(pts[hi]) - t(pts[lo])) / 1e3


def test_abci_broadcast_carries_less_per_hca_than_its_allreduce():
    """ABCI's Broadcast and AllReduce under the same NCCL 2.8.4 stack (aistabci/abci2.0benchmark): from 16
    to 32 MiB a 2- or 4-node Broadcast adds bytes at 29.8-30.0 GB/s, 7.5 GB/s per HDR HCA (the chain enters
    and leaves each node once), where the 2-node AllReduce moves busbw 36.5 GB/s, 9.1 per HCA, and the model,
    at the HCAs' GPU-memory rate (node.nics.efficiency 0.39), gives the Broadcast 43-51 GB/s. The gap is
    pinned, not modelled (data/nccl/INDEX.md)."""
    per_hca = [_increment_GBps(f"a100x{n}_broadcast_{n // 8}node_abci", 16 * MiB, 32 * MiB) / 4 for n in (16, 32)]
    assert all(7.2 <= x <= 7.7 for x in per_hca), per_hca
    ar = _increment_GBps("a100x16_allreduce_2node_abci", 16 * MiB, 32 * MiB) * 2 * 15 / 16 / 4
    assert 8.9 <= ar <= 9.3, ar
    model = [_increment_GBps(f"a100x{n}_broadcast_{n // 8}node_abci", 16 * MiB, 32 * MiB, measured=False) / 4
             for n in (16, 32)]
    assert all(x > 1.3 * y for x, y in zip(model, per_hca)), (model, per_hca)


def test_abci_broadcast_per_call_cost_grows_with_the_chains_network_crossings():
    """The line through the 16 and 32 MiB rows of ABCI's Broadcast: the same byte rate on 2, 4 and 16 nodes
    (27.4-30.0 GB/s) but an intercept of 124, 402 and 1,615 us on 1, 3 and 15 network crossings of the chain,
    100-140 us per crossing (about one 512 KiB Simple step at a channel's 3.7 GB/s), where the model's fill
    gives 42-107 us; while the 4-512 B rows stay at 7.5-7.8 us (median) on every node count (nccl-tests'
    pipelined loop overlaps the calls' chains there). Not modelled: the rows say how much, not why."""
    for nodes, lo, hi in ((2, 100, 150), (4, 350, 450), (16, 1500, 1700)):
        name = f"a100x{8 * nodes}_broadcast_{nodes}node_abci"
        rate = _increment_GBps(name, 16 * MiB, 32 * MiB)
        assert 27.0 <= rate <= 30.5, (name, rate)
        pts = {p.size_bytes: p for p in _result(name).points}
        intercept = pts[32 * MiB].measured_time_us - 32 * MiB / (rate * 1e3)
        assert lo <= intercept <= hi, (name, intercept)
        floor = statistics.median(p.measured_time_us for p in _result(name).points if p.size_bytes <= 512)
        assert 7.4 <= floor <= 7.9, (name, floor)


def test_abci_tree_ll128_rows_under_nccl_2_8s_size_correction():
    """NCCL 2.8.4 rates Tree/LL128 at 0.5 of its bandwidth at 512 KiB and 0.7 at 4-8 MiB (v2.8.4-1
    ``treeCorrectionFactor``; 0.6 and 0.8-0.9 from v2.10.3-1), which the model both chooses and times by
    (costs/nccl_versions.py ``tree_ll128_correction``). Against ABCI's rows (measured time / predicted - 1),
    with InfiniBand's deployed tree LL128 at NCCL's rate (x 1, costs/deployed.py): the 2-node 512 KiB Tree/LL128 row +36% and the 4-node 4 MiB one +31% (+8% and -12% at x 0.6),
    so ABCI's tree LL128 runs well below the rate Crusoe's (within 0-8%) and Azure's (+19-21%) rows show;
    the 4-node 8 MiB row, where 2.8.4's 0.7 moves NCCL's choice to Ring/LL128, -9%. The rows neither confirm
    nor refute the release's factor as a rate."""
    def row(name: str, size: int):
        return next(p for p in _result(name).points if p.size_bytes == size)

    p = row("a100x16_allreduce_2node_abci", 512 * KiB)
    assert (p.algorithm, p.protocol) == ("tree", "ll128")
    assert 0.30 <= p.measured_time_us / p.predicted_time_us - 1 <= 0.40
    p = row("a100x32_allreduce_4node_abci", 8 * MiB)
    assert (p.algorithm, p.protocol) == ("ring", "ll128")
    assert -0.12 <= p.measured_time_us / p.predicted_time_us - 1 <= -0.06
    p = row("a100x32_allreduce_4node_abci", 4 * MiB)
    assert (p.algorithm, p.protocol) == ("tree", "ll128")
    assert 0.26 <= p.measured_time_us / p.predicted_time_us - 1 <= 0.36


def test_crusoe_a100_runs_faster_than_the_azure_a100_vms_at_every_size():
    """Two clouds' VMs of the same node (8 A100-80GB on NVSwitch, 8 HDR InfiniBand HCAs), one profile
    (dgx-a100) and one set of tables (neither run prints its NCCL release): Crusoe's run
    (NCCL_IB_QPS_PER_CONNECTION=2) takes less time than Azure's NDm A100 v4 run at every printed size,
    8-10 us less at the Tree/LL floor, 10-20% less at 1-32 MiB, 4-11% less from 64 MiB. With InfiniBand's
    tree LL128 at NCCL's rate (x 1) Crusoe's 4 and 8 MiB Tree/LL128 rows are within -0.4% / +8.2% (25-26% slow
    at x 0.6) and Azure's +19% / +21% too fast (Crusoe is scored, not fitted; what was read for the difference:
    data/nccl/INDEX.md, "Tree/LL128 across InfiniBand nodes"). Crusoe's 8 B-1 KiB floor is 15-21% slow (Azure's within 14%), its Ring/Simple plateau within 7%
    (data/nccl/INDEX.md)."""
    crusoe, azure = _result("a100x16_allreduce_2node_crusoe_ib"), _result("a100x16_allreduce_2node_azure_ndmv4_ib")
    az = {p.size_bytes: p for p in azure.points}
    for p in crusoe.points:
        if p.size_bytes != 256 * KiB:  # Crusoe's 256 KiB row (192.8 us) is an outlier kept as printed
            assert p.measured_time_us < az[p.size_bytes].measured_time_us, p.size_bytes
    by_size = {p.size_bytes: p for p in crusoe.points}
    for size in (4 * MiB, 8 * MiB):
        p = by_size[size]
        assert (p.algorithm, p.protocol) == ("tree", "ll128") and -0.05 <= p.error <= 0.10, (size, p.error)
    floor = [by_size[s].error for s in (8, 64, 512, 1024)]
    assert all(-0.22 <= e <= -0.14 for e in floor), floor
    plateau = [p for p in crusoe.points if p.size_bytes >= 128 * MiB]
    assert plateau and all(p.protocol == "simple" and abs(p.error) <= 0.07 for p in plateau)


def test_sophia_ring_simple_rows_pay_little_of_the_per_call_term_the_model_adds():
    """A gap the model keeps (docs/calibration.md, "When a held-out split misses": Sophia's held-out
    AllReduce). From 128 MiB Sophia's 2 x 8 A100 AllReduce runs Ring/Simple (NCCL's tables and the
    model's); least squares of time = a + S / B over those rows (128 MiB-1 GiB) give a per-call cost
    within +-40 us of 0 measured, where the model's latency term is NCCL's own estimate, 240 us
    (tuning.cc of 2.22: base 8.4 us, 26 NVLink steps at the host's net overhead, 2 x 3 us on an AMD
    host, 4 network steps at 14 us, plus the deployed 5 us per crossing): at 128 MiB 17% of the
    measured time. Charging the net overhead to the network steps only (NCCL's comment: inter-node
    rings "launch nsteps * net overhead") brought the term to 124 us here but made the held-out
    collective validation worse on ABCI (17.6% -> 21.0%), Azure NDmv4, MI355X and Polaris
    (2026-12-04), so it is not modelled; the rates agree (B within 8%)."""
    r = _result("a100x16_allreduce_2node_dgx_ib")
    pts = [p for p in r.points if p.size_bytes >= 128 * MiB]
    assert len(pts) == 4 and {(p.algorithm, p.protocol) for p in pts} == {("ring", "simple")}
    a_meas, b_meas = _per_call_and_rate(pts, measured=True)
    a_pred, b_pred = _per_call_and_rate(pts, measured=False)
    assert abs(a_meas) < 40.0, f"measured per-call cost {a_meas:.0f} us"
    assert a_pred == pytest.approx(240.4, abs=1.0), f"model per-call cost {a_pred:.0f} us"
    assert b_pred == pytest.approx(b_meas, rel=0.08)

# AWS p5 on 2-32 nodes (SageMaker HyperPod, NCCL 2.27.7 by the image, 32 MiB and up; a summary table, time =
# size / algbw). aws-ofi-nccl's RDMA protocol shows NCCL one network device of 4 EFA rails per GPU
# (nccl_graph.net_devices), so a ring has 8 graph channels at 48 GB/s on every release: 16 at 12 GB/s (32
# single devices under a MAXCHANNELS of 32) predicted its AllGather 37-44% slow at 1-2 GiB.
P5_NODES = (2, 4, 8, 16, 32)


@pytest.mark.parametrize("nodes", P5_NODES)
def test_p5_allgather_rings_over_one_device_per_gpu(nodes):
    """The 2 GiB AllGather row (Ring) within 12% on every node count (measured 263-331 GB/s busbw;
    achieved -11.0..+0.3%), and the 1 GiB row within 20% (the 8-node one, a dip in the measured curve,
    +18.6%; the 4-node curve dips at 512 MiB instead: +20.5%)."""
    r = _result(f"h100x{8 * nodes}_allgather_{nodes}node_awsp5_hyperpod_efa")
    big = {p.size_bytes: p for p in r.points if p.size_bytes >= 1024 * MiB}
    assert len(big) == 2 and all(p.algorithm == "ring" for p in big.values())
    assert abs(big[2048 * MiB].error) <= 0.12, big[2048 * MiB].error
    assert all(abs(p.error) <= 0.20 for p in big.values()), {s >> 20: p.error for s, p in big.items()}


def test_p5_two_node_allreduce_is_nvls_tree():
    """2 nodes: NVLSTree from 64 MiB (as the AWS tuner's region for 16 ranks above 30 MiB), 128 MiB-8 GiB
    within 5% (achieved -4.1..+3.8%)."""
    r = _result("h100x16_allreduce_2node_awsp5_hyperpod_efa")
    big = [p for p in r.points if p.size_bytes >= 128 * MiB]
    assert len(big) == 7
    assert all(p.algorithm == "nvls_tree" and abs(p.error) <= 0.05 for p in big), [(p.size_bytes >> 20, p.error) for p in big]


# aws-ofi-nccl 1.16's region tuner (costs/aws_ofi_tuner.py), which the HyperPod runs loaded from the net
# plugin: each row's (algorithm, protocol) as its p5 polygons for 8 ranks per node give them, read off
# src/tuner/nccl_ofi_regions.cpp (v1.16.3) at 32/64/128/256 ranks (tests/unit/test_aws_ofi_tuner.py
# derives the boundaries), per size in MiB.
_TL, _RL, _RS, _NT = ("tree", "ll128"), ("ring", "ll128"), ("ring", "simple"), ("nvls_tree", "simple")
P5_PLUGIN_CHOICE = {
    4: {32: _TL, 64: _RL, 128: _RL, 256: _RL, 512: _RL, 1024: _RL, 2048: _RS, 4096: _RS, 8192: _RS},
    8: {32: _TL, 64: _TL, 128: _RL, 256: _RL, 512: _RL, 1024: _RL, 2048: _RL, 4096: _RS, 8192: _RS},
    16: {32: _TL, 64: _TL, 128: _TL, 256: _TL, 512: _RL, 1024: _RL, 2048: _RL, 4096: _NT, 8192: _RS},
    32: {32: _TL, 64: _TL, 128: _TL, 256: _TL, 512: _NT, 1024: _NT, 2048: _RL, 4096: _NT, 8192: _NT},
}


@pytest.mark.parametrize("nodes, tolerance", [(4, 0.11), (8, 0.13), (16, 0.16)])
def test_p5_allreduce_runs_the_plugin_tuner_choice(nodes, tolerance):
    """4-16 nodes: every row runs the plugin's choice, and the sweep's median |busbw error| is within
    `tolerance` (achieved 9.7%, 11.4%, 14.5%; with NCCL's own tables 9.7%, 20.4%, 23.6%)."""
    r = _result(f"h100x{8 * nodes}_allreduce_{nodes}node_awsp5_hyperpod_efa")
    assert {p.size_bytes >> 20: (p.algorithm, p.protocol) for p in r.points} == P5_PLUGIN_CHOICE[nodes]
    assert r.median_error(MiB) <= tolerance, r.median_error(MiB)


@pytest.mark.parametrize("nodes", (4, 8, 16, 32))
def test_p5_allreduce_beyond_two_nodes_pins_the_gaps_left(nodes):
    """What the model does not explain yet, with the plugin's choice (above) modelled. (1) Ring/Simple
    (351-357 GB/s measured at 4-8 GiB on 4-16 nodes) is 9-13% slow: two CTAs per graph channel at
    20.6 GB/s each (nccl_tuner.ring_cta_GBps) give 16 x 20.6 = 330 GB/s at most. (2) Tree/LL128 at
    64-256 MiB on 8-32 nodes is 20-30% fast. (3) Ring/LL128 on the 270-280 GB/s shelf is 13-17% slow at
    128-512 MiB. (4) On 32 nodes the plugin's NVLSTree rows are fast: +90% and +49% at 512 MiB and 1 GiB
    (157 and 220 GB/s measured), +12..+17% at 4-8 GiB; NVLSTree's fill across 32 nodes is not what
    costs/nvls_pipeline.py gives at these sizes."""
    r = _result(f"h100x{8 * nodes}_allreduce_{nodes}node_awsp5_hyperpod_efa")
    by = {p.size_bytes >> 20: p for p in r.points}
    for size in (2048, 4096, 8192):
        if P5_PLUGIN_CHOICE[nodes][size] == _RS:
            assert -0.15 <= by[size].error <= -0.07, (size, by[size].error)
    tree = [by[s] for s in (64, 128, 256) if P5_PLUGIN_CHOICE[nodes][s] == _TL]
    assert all(0.18 <= p.error <= 0.33 for p in tree), [p.error for p in tree]
    shelf = [by[s] for s in (128, 256, 512) if P5_PLUGIN_CHOICE[nodes][s] == _RL]
    assert all(-0.19 <= p.error <= -0.05 for p in shelf), [p.error for p in shelf]
    if nodes == 32:
        assert 0.70 <= by[512].error <= 1.10 and 0.35 <= by[1024].error <= 0.65, (by[512].error, by[1024].error)
        assert all(0.08 <= by[s].error <= 0.22 for s in (4096, 8192)), (by[4096].error, by[8192].error)
        assert 0.20 <= r.median_error(MiB) <= 0.30, r.median_error(MiB)

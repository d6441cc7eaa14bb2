"""The collectives' rate at the scale of arXiv:2104.04473 Table 2's ZeRO-3 rows (48-280 DGX A100
nodes), as the findings' "The collectives' rate at 48-280 nodes" reads it: no nccl-tests sweep of
such nodes exists here, so what is checked is (1) the model's rates on the large sweeps that do
(Polaris' AllGather chains of 1,024-2,160 ranks; its trees, right at 256 nodes and optimistic at
540), (2) the arithmetic of the paper's own sec. 5.9 figures for its 1T run (892 GB/s pipeline,
12.9 TB/s data-parallel "effective bisection bandwidth") against the model's rates for those
transfers, with Megatron-LM's group layout, and (3) where the six rows land with the DGX A100 NICs
scaled by those ratios (what-ifs; nothing here is a bundled constant)."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from simulator.calibration.sweep_prediction import bundled_sweeps, case_for, predict_sweep
from simulator.config.hardware import apply_overlay, load_profile
from simulator.costs.model import CostModel
from simulator.hardware.topology import build_topology
from simulator.replay.single_collective import time_collective
from simulator.units import GiB

# The 1T row of the paper's Table 1 (sec. 5.9's run): 3,072 GPUs, TP 8 x PP 64 x DP 6, h 25,600,
# 128 layers (2 a stage), sequence 2,048, micro-batch 1, fp16.
GPUS, TP, PP, DP, HIDDEN, LAYERS, SEQ = 3072, 8, 64, 6, 25_600, 128, 2048
PP_BISECTION_Bps, DP_BISECTION_Bps = 892e9, 12.9e12


def _megatron_groups() -> tuple[list[list[int]], list[list[int]]]:
    """Megatron-LM's initialize_model_parallel (2021): DP groups stride TP within one stage's block
    of world/PP ranks; pipelines stride world/PP."""
    per_stage = GPUS // PP
    dp = [list(range(i * per_stage + j, (i + 1) * per_stage, TP)) for i in range(PP) for j in range(TP)]
    pp = [list(range(k, GPUS, per_stage)) for k in range(per_stage)]
    return dp, pp


def test_no_data_parallel_ring_crosses_the_machines_bisection_and_each_pipeline_once():
    dp, pp = _megatron_groups()
    half = GPUS // 2
    assert len(dp) == 512 and all(len(g) == DP for g in dp)
    nodes = [sorted({r // 8 for r in g}) for g in dp]
    assert all(n == list(range(n[0], n[0] + DP)) for n in nodes)  # 6 adjacent nodes, one GPU each
    assert all(max(g) < half or min(g) >= half for g in dp)
    assert len(pp) == 48 and all(sum((a < half) != (b < half) for a, b in zip(g, g[1:])) == 1 for g in pp)


def test_section_5_9_read_per_group_bisection_is_about_half_the_models_rates():
    """Both figures read as traffic across each group's own bisection, both ways: 12.9 TB/s over two
    links of each of the 512 six-rank rings, 892 GB/s over the 48 pipelines' one boundary each (the
    activation one way, its gradient the other). One way, the ring links would carry more than
    HDR's line rate."""
    profile = apply_overlay(load_profile("dgx-a100"), {"nccl": {"version": "2.8.3"}})
    line_Bps = profile.node.nics.Gbps * 1e9 / 8
    assert DP_BISECTION_Bps / 512 > line_Bps
    grads = (LAYERS // PP) * (12 * HIDDEN**2 + 13 * HIDDEN) // TP * 2  # fp16 bytes of a middle stage's rank
    assert grads == pytest.approx(3.93e9, rel=1e-3)
    ar = time_collective("allreduce", [n * 8 for n in range(DP)], grads, CostModel(build_topology(profile, DP)))
    assert ar.algorithm == "ring" and ar.busbw == pytest.approx(23.7e9, rel=0.03)
    assert DP_BISECTION_Bps / (512 * 2) / ar.busbw == pytest.approx(0.53, abs=0.02)
    act = SEQ * HIDDEN // TP * 2  # scatter/gather: 1/TP of a micro-batch's activation, fp16
    p2p = time_collective("sendrecv", [0, 8], act, CostModel(build_topology(profile, 2)))
    assert p2p.busbw == pytest.approx(22.6e9, rel=0.03)
    assert PP_BISECTION_Bps / (48 * 2) / p2p.busbw == pytest.approx(0.41, abs=0.02)
    # Summed over the GPUs instead: 4.2 GB/s each, under a third of the model's AllReduce algbw.
    assert DP_BISECTION_Bps / GPUS / ar.algbw < 0.31


def _error_at(name: str, size: int) -> float:
    sweep = next(s for s in bundled_sweeps() if s.name == name)
    (p,) = [p for p in predict_sweep(sweep, case_for(sweep)).points if abs(p.size_bytes - size) < 2**20]
    return p.error


def test_model_on_the_large_sweeps_allgather_chains_right_trees_optimistic_only_at_540_nodes():
    for name in ("a100x1024_allgather_256node_polaris_slingshot", "a100x2160_allgather_540node_polaris_slingshot"):
        assert abs(_error_at(name, GiB)) < 0.10
    assert _error_at("a100x1024_allreduce_256node_polaris_slingshot", GiB) < -0.10
    assert _error_at("a100x2160_allreduce_540node_polaris_slingshot", GiB) > 0.30


@pytest.mark.slow
def test_zero3_rows_with_the_nics_scaled():
    """At a DGX A100 host's pace (``node.host_time_scale`` 1.47; 17.1% with the NICs as
    profiled), x 0.72 (Polaris' 540-node trees, the most optimistic ratio of another fabric)
    brings the source's median to 10.5%, every row still optimistic but GPT-175B at DP 1,536
    (-1.6%); x 0.53 (sec. 5.9 read per group) to 4.3%, overshooting on that row (-7.8%). Neither
    is modelled (the findings' ZeRO-3 section)."""
    from simulator.e2e_validation.rows import read_rows
    from simulator.e2e_validation.scoring import run_case
    from simulator.e2e_validation.sources import SOURCES

    src = next(s for s in SOURCES if s.key == "megatron2021_zero3")
    cases = src.build(read_rows(Path(__file__).resolve().parents[2] / "data" / "e2e" / src.file))

    def errors(scale: float) -> list[float]:
        prof = apply_overlay(load_profile("dgx-a100"), {"node": {"nics": {"efficiency": 0.95 * scale}}})
        return [run_case(c, prof).error for c in cases]

    nics = errors(0.72)
    assert 0.09 < statistics.median(abs(e) for e in nics) < 0.12 and sum(e < 0 for e in nics) == 1, nics
    half = errors(0.53)
    assert statistics.median(abs(e) for e in half) < 0.06 and min(half) < -0.05, half

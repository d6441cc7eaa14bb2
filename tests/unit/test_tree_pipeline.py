"""The pipeline fill of a Tree/Simple AllReduce across nodes (costs/tree_pipeline.py): closed forms,
and the GPUDirect-TCPXO sweep it explains (data/nccl/h100x16_allreduce_2node_gcp_a3mega_tcpxo.csv)."""

from __future__ import annotations

import numpy as np
import pytest

from simulator.costs.tree_pipeline import tree_simple_fill_us, tree_stages

MiB = 1 << 20


def test_tree_stages_closed_forms():
    """A chunk crosses the node's chain (ppn - 1 NVLink stages) and the binary tree over nodes
    (ceil(log2 nodes) network stages), up and back down."""
    assert tree_stages(8, 2) == (14, 2)
    assert tree_stages(4, 8) == (6, 6)
    assert tree_stages(8, 1) == (14, 0)


def test_fill_is_every_stage_but_the_slowest():
    """2 x 8 ranks, 16 channels, 1 MiB chunks: 14 NVLink stages at 20.6 GB/s and 2 network stages at
    12 GB/s; the network stage is the slowest, so the fill is 14 x 50.9 + 87.4 = 800 us. A call
    whose channel share is below the chunk fills with its share (4 MiB: 256 KiB, a quarter)."""
    nvl, net = MiB / 20.6e3, MiB / 12e3
    full = 14 * nvl + 2 * net - net
    assert tree_simple_fill_us(16 * MiB, 16, MiB, 8, 2, 20.6, 12.0) == pytest.approx(full)
    assert full == pytest.approx(800.3, abs=0.5)
    assert tree_simple_fill_us(4 * MiB, 16, MiB, 8, 2, 20.6, 12.0) == pytest.approx(full / 4)
    assert tree_simple_fill_us(1 << 33, 16, MiB, 8, 2, 20.6, 12.0) == pytest.approx(full)
    assert tree_simple_fill_us(0, 16, MiB, 8, 2, 20.6, 12.0) == 0.0


def _a3_mega():
    from simulator.calibration.measured import DATA_DIR, read_sweep
    from simulator.calibration.sweep_prediction import case_for, predict_sweep

    sweep = read_sweep(DATA_DIR / "h100x16_allreduce_2node_gcp_a3mega_tcpxo.csv")
    return predict_sweep(sweep, case_for(sweep)).points


def test_a3_mega_large_call_intercept_is_the_fill():
    """From 64 MiB to 8 GiB the measured times lie on one line, 928 us + S / 184 GB/s (least
    squares): every call pays a fixed ~930 us beyond the 123 us floor of an 8-byte call. NCCL 2.21's
    1 MiB Tree/Simple chunks (TCPXO's 8 MiB buffer) filling 14 NVLink stages and one network stage
    are ~800 us of it; the plan's latency term (Tree/Simple's own plus the fill) is within 5% of the
    measured intercept, where a cost per 1 MiB message made it grow from 762 to 10,362 us."""
    pts = [p for p in _a3_mega() if p.size_bytes >= 64 * MiB]
    x = np.array([p.size_bytes for p in pts], dtype=float)
    y = np.array([p.measured_time_us for p in pts])
    slope, intercept = np.polyfit(x, y, 1)
    assert intercept == pytest.approx(928, abs=5) and 1 / slope / 1e3 == pytest.approx(184, abs=1)
    for p in pts:
        assert p.algorithm == "tree" and p.protocol == "simple"
        assert p.latency_us == pytest.approx(intercept, rel=0.05), p.size_bytes


def test_a3_mega_mid_sizes_follow_the_chunk():
    """1-8 MiB: each of the 16 channels' shares is one chunk of S/16, so the fill, and the time,
    grow with the size (203 us at 1 MiB, 572 at 8: ~53 us per MiB); 2-8 MiB predicted within 10% (they
    were 13-65% too fast with a cost per message and no fill). Every size >= 2 MiB within 15%. The 1 MiB
    row, whose time is the most latency, rests on the pooled deployed row's hop extra (TCPXO has no other
    system): +10% at 15 us per crossing, +16% at the 10 us the fit gives since the cloud and VM clusters of
    data/nccl joined it; within 20%."""
    for p in _a3_mega():
        if 2 * MiB <= p.size_bytes <= 8 * MiB:
            assert abs(p.error) < 0.10, p.size_bytes
        if p.size_bytes >= 2 * MiB:
            assert abs(p.error) < 0.15, p.size_bytes
        if p.size_bytes == MiB:
            assert abs(p.error) < 0.20


def test_fill_follows_the_release_chunk_rule():
    """Before NCCL 2.20 the Tree/Simple chunk of a 4 MiB call on 2 x 8 H100 is halved to 32 KiB (a
    channel's share is 256 KiB: fewer than depth x 8 chunks), so the fill is an eighth of 2.21's,
    whose chunk is the whole 256 KiB share: 25 us against 200 (16 channels, 20.6 GB/s per NVLink
    stage, 12 GB/s per network stage). One node, or another algorithm: no fill."""
    from simulator.config.hardware import load_profile
    from simulator.costs.collectives import tree_fill_us
    from simulator.costs.nccl_graph import context_from_profile

    fill = {}
    for v in ("2.19.4", "2.21.5"):
        p = load_profile("gcp-a3-mega")
        p = p.model_copy(update={"nccl": {**p.nccl_overrides, "version": v}})
        ctx = context_from_profile(p, 16, 2, "coll")
        fill[v] = tree_fill_us(ctx, "allreduce", "tree", "simple", 4 * MiB)
        assert tree_fill_us(ctx, "allreduce", "ring", "simple", 4 * MiB) == 0.0
        assert tree_fill_us(context_from_profile(p, 8, 1, "coll"), "allreduce", "tree", "simple", 4 * MiB) == 0.0
    assert fill["2.21.5"] == pytest.approx(tree_simple_fill_us(4 * MiB, 16, MiB, 8, 2, 20.6, 12.0))
    assert fill["2.21.5"] == pytest.approx(200.0, abs=0.5)
    assert fill["2.19.4"] == pytest.approx(25.0, abs=0.1)

"""NVLSTree's chunk rule and pipeline fill (simulator/costs/nvls_pipeline.py)."""

from __future__ import annotations

import pytest

from simulator.costs.nvls_pipeline import STAGES_BEHIND, nvls_tree_chunk_bytes, nvls_tree_fill_factor
from simulator.units import GiB, KiB, MiB

OPS = 16 * 8  # 16 NVLS channels x 8 heads (8-GPU H100 nodes)


@pytest.mark.parametrize("nodes, size, chunk", [
    (2, 8 * GiB, 128 * KiB),   # NCCL_NVLS_CHUNKSIZE
    (2, 64 * MiB, 128 * KiB),  # 64 MiB is 4 rounds of 128 x 128 KiB: not below
    (2, 32 * MiB, 64 * KiB),   # fewer than 4 rounds
    (2, 8 * MiB, 64 * KiB),    # each test reads the chunk the previous one left: one round of 128 x 64 KiB
    (2, 4 * MiB, 32 * KiB),    # below one round
    (4, 8 * GiB, 64 * KiB),    # NCCL_NVLSTREE_MAX_CHUNKSIZE from 4 nodes
    (8, 16 * MiB, 64 * KiB),   # 2 rounds of 128 x 64 KiB
    (8, 4 * MiB, 32 * KiB),    # below one round
])
def test_chunk_follows_enqueue_cc(nodes, size, chunk):
    assert nvls_tree_chunk_bytes(size, OPS, nodes) == chunk


def test_fill_is_two_rounds_of_the_chunk_pipeline():
    # 1 GiB on two nodes: 64 rounds of 16 MiB, 2 more to drain: 66/64
    assert nvls_tree_fill_factor(GiB, OPS, 2) == pytest.approx(66 / 64)
    assert STAGES_BEHIND == 2
    # a call of fewer rounds than the stages behind drains its own bytes once more: 2
    assert nvls_tree_fill_factor(MiB, OPS, 2) == pytest.approx(2.0)  # a quarter of a round
    assert nvls_tree_fill_factor(16 * MiB, OPS, 2) == pytest.approx(2.0)  # two rounds of 128 x 64 KiB
    assert nvls_tree_fill_factor(32 * MiB, OPS, 2) == pytest.approx(1.5)  # four
    assert nvls_tree_fill_factor(0, OPS, 2) == 1.0

"""NVLS's and NVLSTree's chunk rules and pipeline fill (simulator/costs/nvls_pipeline.py)."""

from __future__ import annotations

import pytest

from simulator.costs.nvls_pipeline import (
    STAGES_BEHIND, nvls_chunk_bytes, nvls_fill_factor, nvls_tree_chunk_bytes, nvls_tree_fill_factor,
)
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


RACK_OPS = 32 * 72  # one GB200 NVL72 rack: 32 NVLS channels (nvls.cc, SM100) x 72 heads


@pytest.mark.parametrize("ops, size, chunk", [
    (RACK_OPS, 512 * MiB, 32 * KiB),   # below 8 rounds of 2,304 x 64 KiB (1.2 GB)
    (RACK_OPS, GiB, 32 * KiB),
    (RACK_OPS, 2 * GiB, 64 * KiB),     # below 64 rounds of 2,304 x 128 KiB (19 GB)
    (RACK_OPS, 8 * GiB, 64 * KiB),
    (RACK_OPS, 64 * MiB, 16 * KiB),    # below 2 rounds of 2,304 x 32 KiB (151 MB)
    (OPS, 2 * GiB, 128 * KiB),         # 8 H100: 64 rounds of 128 x 128 KiB is 1 GiB
    (OPS, 256 * MiB, 64 * KiB),
    (OPS, 32 * MiB, 32 * KiB),         # below 8 rounds of 128 x 64 KiB (64 MiB)
])
def test_nvls_chunk_follows_enqueue_cc(ops, size, chunk):
    assert nvls_chunk_bytes(size, ops) == chunk


def test_nvls_fill_is_two_rounds():
    # one rack at 512 MiB: rounds of 2,304 x 32 KiB = 72 MiB, two more: 1 + 144/512
    assert nvls_fill_factor(512 * MiB, RACK_OPS) == pytest.approx(1 + 144 / 512)
    # 8 H100 at 32 MiB: rounds of 128 x 32 KiB = 4 MiB, two more: 1 + 8/32
    assert nvls_fill_factor(32 * MiB, OPS) == pytest.approx(1.25)
    assert nvls_fill_factor(0, OPS) == 1.0

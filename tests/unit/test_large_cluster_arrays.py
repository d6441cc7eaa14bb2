"""What grows with the cluster in one plan of Llama-3 405B (100k GPUs): the per-rank NIC keys
symmetry reads over every rank, computed as arrays, and the DP rings' routes, shared between
channel counts. Each must equal the explicit per-rank, per-hop form."""

from __future__ import annotations

import numpy as np
import pytest

from simulator.config.hardware import load_profile
from simulator.hardware import build_topology
from simulator.replay.engine import _nic_key
from simulator.replay.symmetry import nic_private_blocks
from simulator.schedule.groups import Grid


@pytest.mark.parametrize("profile", ["dgx-h100", "aws-p4de", "polaris-a100", "a100-pcie", "gb200-nvl72"])
@pytest.mark.parametrize("n_ranks", [1, 3, 8, 24])
def test_nic_key_matches_per_rank_calls(profile: str, n_ranks: int) -> None:
    """One node's NICs tiled over the nodes give node_of(g) * rails + nic_of(g) for every rank,
    including NICs shared by two GPUs (aws-p4de, polaris-a100's 0,1,1,0) and partial nodes."""
    topo = build_topology(load_profile(profile), 12)
    explicit = [topo.node_of(g) * topo.rails + topo.nic_of(g) for g in range(n_ranks)]
    got = _nic_key(topo, n_ranks)
    assert got is not None and got.dtype == np.int64 and got.tolist() == explicit


def _explicit_private_axes(grid: Grid, n: int, axes: list[str], nic_key: np.ndarray) -> list[str]:
    """The axes nic_private_blocks mirrors whole, with np.intersect1d, rank by rank coordinates."""
    keep = np.ones(n, dtype=bool)
    out: list[str] = []
    for a in axes:
        coord = np.array([grid.coord(r, a) for r in range(n)])
        trial = keep & (coord == 0)
        if np.intersect1d(nic_key[trial], nic_key[~trial]).size == 0:
            keep, out = trial, out + [a]
    return out


@pytest.mark.parametrize("seed", range(20))
def test_nic_private_axes_matches_intersect1d(seed: int) -> None:
    """The marker-array test of NIC overlap keeps the same axes as np.intersect1d, on NIC keys
    with a NIC per GPU, per pair of GPUs and random sharings."""
    rng = np.random.default_rng(seed)
    sizes = {"tp": int(rng.choice([1, 2, 4])), "cp": int(rng.choice([1, 2])), "dp": int(rng.choice([2, 4])),
             "pp": int(rng.choice([1, 2]))}
    grid = Grid.from_sizes(sizes)
    n = grid.n_ranks
    axes = [a for a in ("tp", "cp", "dp", "pp") if sizes[a] > 1]
    for key in (np.arange(n), np.arange(n) // 2, rng.integers(0, max(2, n // 2), n)):
        key = key.astype(np.int64)
        whole = [a for a, b in nic_private_blocks(grid, n, axes, key).items() if b == 1]
        assert whole == _explicit_private_axes(grid, n, axes, key)


@pytest.mark.parametrize("profile,nodes,group,closed", [
    ("dgx-h100", 96, [n * 8 for n in range(0, 96, 2)], True),  # one GPU a node: one ring, one rail
    ("dgx-h100", 96, [n * 8 + 5 for n in range(0, 96, 3)], False),  # a broadcast chain
    ("dgx-h100", 4, list(range(32)), True),  # whole nodes: rings rotated to each rail
    ("polaris-a100", 4, list(range(16)), True),  # cross-NIC rings
])
def test_ring_routes_shared_across_channel_counts(profile, nodes, group, closed):
    """Patterns built with the routes of another channel count taken from the cache equal those
    built alone and those routed hop by hop, bit for bit; a DP group of one GPU per node routes
    its ring once for every channel count."""
    from simulator.costs import flow_patterns as fp
    from tests.unit.test_large_dp_rings import _explicit_ring

    topo = build_topology(load_profile(profile), nodes)
    lay = fp.layout(topo, group)
    cache: dict = {}
    for n_ch in (1, 2, 4, 1, 12):
        got = fp.ring_pattern(topo, lay, n_ch, closed, cache)
        assert got == fp.ring_pattern(topo, lay, n_ch, closed) == _explicit_ring(topo, lay, n_ch, closed)
        assert [type(x) for _, w, m in got for x in (w, m)] == [float] * (2 * len(got))
    if len(lay.by_node[0]) == 1:
        assert sum(1 for k in cache if k[0] == "ring routes") == 1

"""Which ranks symmetric mode simulates: the arithmetic path (coordinates of every rank at once)
must pick the same ranks and mirrored axes as asking every rank for its role and its groups."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from simulator.replay.symmetry import choose_ranks, nic_private_blocks
from simulator.schedule.build import Schedule, role_name
from simulator.schedule.groups import Grid


@dataclass
class PerRank:
    """The same schedule without ``role_axes``, so symmetry asks every rank (the reference)."""

    inner: Schedule

    @property
    def grid(self) -> Any:
        return self.inner.grid

    @property
    def programs(self) -> dict:
        return self.inner.programs

    def role_of(self, rank: int) -> str:
        return self.inner.role_of(rank)


GRIDS = [
    Grid.from_sizes({"tp": 8, "dp": 4}),
    Grid.from_sizes({"tp": 2, "dp": 16, "pp": 4}),
    Grid.from_sizes({"tp": 4, "cp": 4, "dp": 2, "pp": 2}),
    Grid.from_sizes({"tp": 2, "cp": 8, "dp": 2}, splits={"cp_a2a": ("cp", 2)}),
    Grid.from_sizes({"tp": 4, "pp": 2, "dp": 4}, order=("tp", "pp", "dp", "cp", "ulysses", "ep")),
]


@pytest.mark.parametrize("grid", GRIDS, ids=lambda g: "-".join(f"{a}{n}" for a, n in g.sizes if n > 1))
def test_arithmetic_rank_choice_matches_asking_every_rank(grid: Grid) -> None:
    n = grid.n_ranks
    roles = {role_name(grid.coord(r, "pp"), grid.coord(r, "cp")) for r in range(n)}
    sched = Schedule(grid, {role: [] for role in roles})
    fast = choose_ranks(sched, n, max_ranks=None, op_budget=0, symmetric=True)
    slow = choose_ranks(PerRank(sched), n, max_ranks=None, op_budget=0, symmetric=True)
    assert fast == slow
    ranks, axes = fast
    # Every role is simulated once per combination of the axes that are not mirrored.
    assert len(ranks) == n // grid.degree(axes)
    assert {sched.role_of(r) for r in ranks} == roles


def test_no_axis_is_mirrored_whose_replicas_share_a_simulated_ranks_nic() -> None:
    """8 GPUs and 4 NICs per node (NIC r: GPUs 2r, 2r+1), tp 4 innermost, dp 2 per node: tp
    replicas share NICs (GPUs 0 and 1), dp replicas do not (GPUs 0-3 on NICs 0-1, 4-7 on 2-3).
    tp is mirrored in blocks of the two GPUs of a NIC: ranks 0 and 1 simulated, 2 and 3 (NIC 1)
    their mirror images. With a NIC per GPU both axes are mirrored whole."""
    grid = Grid.from_sizes({"tp": 4, "dp": 4})
    n = grid.n_ranks
    sched = Schedule(grid, {role_name(0, 0): []})
    shared = np.array([(g // 8) * 4 + (g % 8) // 2 for g in range(n)])
    ranks, axes = choose_ranks(sched, n, max_ranks=None, op_budget=0, symmetric=True, nic_key=shared)
    assert axes == ["dp"] and ranks == [0, 1]
    assert nic_private_blocks(grid, n, ["tp", "dp"], shared) == {"tp": 2, "dp": 1}
    own = np.arange(n)
    assert choose_ranks(sched, n, max_ranks=None, op_budget=0, symmetric=True, nic_key=own) == ([0], ["tp", "dp"])
    assert [a for a, b in nic_private_blocks(grid, n, ["dp", "tp"], shared).items() if b == 1] == ["dp"]


def test_a_block_is_kept_only_where_its_nics_are_its_own() -> None:
    """4 NICs for 8 GPUs, NIC r serving GPUs r and r + 4 (a NIC shared across the halves of the
    node): tp 8 has no block of 2 or 4 consecutive ranks with NICs of its own; not mirrored."""
    grid = Grid.from_sizes({"tp": 8, "dp": 2})
    n = grid.n_ranks
    strided = np.array([(g // 8) * 4 + (g % 8) % 4 for g in range(n)])
    assert nic_private_blocks(grid, n, ["tp", "dp"], strided) == {"dp": 1}
    sched = Schedule(grid, {role_name(0, 0): []})
    assert choose_ranks(sched, n, max_ranks=None, op_budget=0, symmetric=True,
                        nic_key=strided) == (list(range(8)), ["dp"])

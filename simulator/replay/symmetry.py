"""Symmetric mode: which ranks the replay simulates, and which grid axes it mirrors.

Along an axis where every rank has the same role (same program) and the fabric
is symmetric (TP inside a node, DP replicas on their rails), all ranks run the same timeline. The
engine can then simulate only the ranks at coordinate 0 of those axes. A collective waits only
for its simulated members but still puts the flows of *all* members on the network; a P2P whose
peer is a mirror image starts its flow at once (the mirror issues it at the same moment by
symmetry). What this mode drops is traffic of unsimulated replicas on links no simulated group
uses (spines shared across replicas); tests check both modes agree where both run.
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

DEFAULT_MAX_RANKS = 4096
# Above this many op executions (ranks x program length) the engine switches to symmetric mode
# on its own, to keep a step of a 1,000-GPU plan within seconds.
DEFAULT_OP_BUDGET = 200_000
_FALLBACK_AXES = ("tp", "cp", "ulysses", "ep", "dp", "pp")


def grid_axes(grid: Any) -> list[str]:
    """Axis names of a Grid, innermost first; tolerant of the shapes a Grid may expose them in."""
    axes = getattr(grid, "axes", None) or getattr(grid, "order", None)
    if isinstance(axes, dict):
        return list(axes)
    if axes:
        return [a if isinstance(a, str) else getattr(a, "name", str(a)) for a in axes]
    found = []
    for a in _FALLBACK_AXES:
        try:
            grid.group(0, (a,))
        except Exception:  # noqa: BLE001 - an axis this grid does not know
            continue
        found.append(a)
    return found


def _vector_grid(grid: Any) -> bool:
    """Whether ``grid.coord``/``grid.peer`` accept a numpy array of ranks (``schedule.groups.Grid``
    is pure arithmetic on the rank: strides and sizes)."""
    try:
        r = np.arange(2)
        return all(np.asarray(grid.coord(r, a)).shape == (2,) for a in grid_axes(grid))
    except Exception:  # noqa: BLE001 - a grid that only takes one rank at a time
        return False


def symmetric_axes(schedule: Any, n_ranks: int, axes: Iterable[str]) -> list[str]:
    """Axes of degree > 1 along which every rank has the same role as its neighbour.

    When the schedule names the axes its roles depend on (``role_axes``) and the grid is
    arithmetic, this is a comparison of coordinate arrays: a step along ``a`` keeps every rank's
    role iff it keeps every role axis's coordinate. Otherwise every rank's role is asked.
    """
    grid = schedule.grid
    role_axes = getattr(schedule, "role_axes", None)
    vector = role_axes is not None and _vector_grid(grid)
    r = np.arange(n_ranks, dtype=np.int64) if vector else None
    out = []
    for a in axes:
        if len(grid.group(0, (a,))) <= 1:
            continue
        if r is not None and role_axes is not None:  # the vector path
            peer = grid.peer(r, a, 1)
            same = all(np.array_equal(grid.coord(peer, b), grid.coord(r, b)) for b in role_axes)
        else:
            same = all(schedule.role_of(rk) == schedule.role_of(grid.peer(rk, a, 1)) for rk in range(n_ranks))
        if same:
            out.append(a)
    return out


def choose_ranks(schedule: Any, n_ranks: int, *, max_ranks: int | None, op_budget: int,
                 symmetric: bool | None) -> tuple[list[int], list[str]]:
    """Which ranks to simulate and which axes are mirrored.

    ``symmetric`` True/False forces the mode; None picks it: all ranks when there are at most
    ``max_ranks`` of them and the op count fits ``op_budget``, otherwise symmetric mode.
    The simulated ranks are those at coordinate 0 of every mirrored axis (the first member of
    each of their groups along it), found from the coordinates, not by listing groups.
    """
    if symmetric is None:
        limit = DEFAULT_MAX_RANKS if max_ranks is None else max_ranks
        prog_len = max((len(p) for p in schedule.programs.values()), default=0)
        symmetric = n_ranks > limit or n_ranks * prog_len > op_budget
    if not symmetric:
        return list(range(n_ranks)), []
    grid = schedule.grid
    axes = symmetric_axes(schedule, n_ranks, grid_axes(grid))
    if _vector_grid(grid):
        r = np.arange(n_ranks, dtype=np.int64)
        keep = np.ones(n_ranks, dtype=bool)
        for a in axes:
            keep &= np.asarray(grid.coord(r, a)) == 0
        return r[keep].tolist(), axes
    ranks = [r for r in range(n_ranks) if all(grid.group(r, (a,))[0] == r for a in axes)]
    return ranks, axes

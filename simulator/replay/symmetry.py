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


def symmetric_axes(schedule: Any, n_ranks: int, axes: Iterable[str]) -> list[str]:
    """Axes of degree > 1 along which every rank has the same role as its neighbour."""
    grid = schedule.grid
    out = []
    for a in axes:
        if len(grid.group(0, (a,))) <= 1:
            continue
        if all(schedule.role_of(r) == schedule.role_of(grid.peer(r, a, 1)) for r in range(n_ranks)):
            out.append(a)
    return out


def choose_ranks(schedule: Any, n_ranks: int, *, max_ranks: int | None, op_budget: int,
                 symmetric: bool | None) -> tuple[list[int], list[str]]:
    """Which ranks to simulate and which axes are mirrored.

    ``symmetric`` True/False forces the mode; None picks it: all ranks when there are at most
    ``max_ranks`` of them and the op count fits ``op_budget``, otherwise symmetric mode.
    """
    if symmetric is None:
        limit = DEFAULT_MAX_RANKS if max_ranks is None else max_ranks
        prog_len = max((len(p) for p in schedule.programs.values()), default=0)
        symmetric = n_ranks > limit or n_ranks * prog_len > op_budget
    if not symmetric:
        return list(range(n_ranks)), []
    grid = schedule.grid
    axes = symmetric_axes(schedule, n_ranks, grid_axes(grid))
    ranks = [r for r in range(n_ranks) if all(grid.group(r, (a,))[0] == r for a in axes)]
    return ranks, axes

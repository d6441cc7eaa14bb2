"""Symmetric mode: which ranks the replay simulates, and which grid axes it mirrors.

Along an axis where every rank has the same role (same program) and the fabric
is symmetric (TP inside a node, DP replicas on their rails), all ranks run the same timeline. The
engine can then simulate only the ranks at coordinate 0 of those axes. A collective waits only
for its simulated members but still puts the flows of *all* members on the network; a P2P whose
peer is a mirror image starts its flow at once (the mirror issues it at the same moment by
symmetry). What this mode drops is traffic of unsimulated replicas on links no simulated group
uses (spines shared across replicas); tests check both modes agree where both run.

The fabric is symmetric along an axis only where the replicas it drops reach the network through
NICs of their own. A node with fewer NICs than GPUs breaks that: on Jean Zay's A100 nodes (4
Omni-Path NICs for 8 GPUs, NIC r serving GPUs 2r and 2r+1) the data-parallel groups of TP ranks 0
and 1 (GPUs 0, 4 and 1, 5 of every node) run the same AllReduce at the same time through NICs 0
and 2. Mirrored along tp, only the first group's flows were on those NICs: it ran at twice the
bandwidth it gets beside its replica (BLOOM-176B, tp4 pp12 dp8: 0.18 s per 2.5 GB bucket against
0.36 s with every rank simulated, the step 93.4 s against 95.6 s). So an axis is mirrored only
while no unsimulated rank shares a NIC with a simulated rank of its node, whole or in blocks of
the ranks that share a NIC (:func:`nic_private_blocks`); or, with image ranks
(:func:`choose_ranks_with_images`, the engine's default), mirrored whole while the ranks that share
a simulated rank's NICs put their traffic on the network beside its own.
"""

from __future__ import annotations

from itertools import product
from typing import Any, Iterable

import numpy as np

from simulator.schedule.ir import P2POp

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


def symmetric_axes(schedule: Any, n_ranks: int, axes: Iterable[str], gpus_per_node: int | None = None) -> list[str]:
    """Axes of degree > 1 along which every rank has the same role as its neighbour; with
    ``gpus_per_node``, also an axis whose groups each lie on one node and along which every
    rank's program equals its neighbour's (:func:`_same_programs`): inside a node every member
    reaches the others alike, so equal programs run equal timelines; and an axis whose ranks,
    running equal programs, each send and receive across nodes as often as the others
    (:func:`_hops_alike`: CP 4 rings over TP 4). (A CP ring where only some ranks' hops cross
    the nodes is not mirrored: those ranks wait longer.)

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
            here = [np.asarray(grid.coord(r, b)) for b in role_axes]
            there = [np.asarray(grid.coord(peer, b)) for b in role_axes]
            same = all(np.array_equal(x, y) for x, y in zip(here, there))
            if not same and gpus_per_node and (np.array_equal(peer // gpus_per_node, r // gpus_per_node)
                                               or _hops_alike(schedule, r, a, gpus_per_node)):
                # roles named apart, groups on one node or alike hops: one rank per distinct pair
                # of role coordinates
                _, first = np.unique(np.stack(here + there, axis=1), axis=0, return_index=True)
                same = _same_programs(schedule, {(schedule.role_of(int(r[i])), schedule.role_of(int(peer[i])))
                                                 for i in first})
        else:
            pairs = {(schedule.role_of(rk), schedule.role_of(grid.peer(rk, a, 1))) for rk in range(n_ranks)}
            same = all(x == y for x, y in pairs) or bool(
                gpus_per_node and all(grid.peer(rk, a, 1) // gpus_per_node == rk // gpus_per_node
                                      for rk in range(n_ranks))
                and _same_programs(schedule, pairs))
        if same:
            out.append(a)
    return out


def _p2p_offsets(schedule: Any, axis: str) -> set[int]:
    """The offsets along ``axis`` that the sends and receives of the programs of rank 0's group
    along it reach (a ring's +hop and -hop). Every stage's layers use the axis alike, so one
    group's programs tell (scanning every stage's took 1.3 s on a 94-layer, 128-micro-batch plan)."""
    out: set[int] = set()
    programs = {id(p): p for p in (schedule.programs[schedule.role_of(int(m))]
                                   for m in schedule.grid.group(0, (axis,)))}
    for prog in programs.values():
        for op in prog:
            if type(op) is P2POp:
                for t in op.sends:
                    if t.axis == axis:
                        out.add(t.offset)
                for t in op.recvs:
                    if t.axis == axis:
                        out.add(t.offset)
    return out


def _hops_alike(schedule: Any, r: np.ndarray, axis: str, gpus_per_node: int) -> bool:
    """Whether every rank's sends and receives along ``axis`` cross between nodes as often as
    every other rank's: for each rank, how many of the peers it reaches along the axis (the
    offsets its programs use, :func:`_p2p_offsets`) lie on another node.

    A ring exchange waits for its send and its receive alike (Megatron's and TE's context-parallel
    rings post both, then wait for both before the next step). Where each rank has the same number
    of hops leaving its node, each waits on the same number of NVLink and network transfers per
    step, so ranks with equal programs run the same timeline: CP 4 over TP 4 on 8-GPU nodes (CP
    ranks on GPUs 0, 4 | 8, 12: every rank sends or receives over the network, one of each) or CP
    8 over TP 4 (the same on four nodes). Qwen3-235B at TP 4 x CP 4 x PP 8 on 256 H100 (the
    Megatron-MoE-ModelZoo long-context row at 64K): 81.685834 s with cp mirrored, 81.685904 s with
    every CP rank simulated, in 12 instead of 30 CPU s. A flat ring of CP 8 over TP 2 is not so:
    ranks 1 and 2 of each node have both hops on NVLink, ranks 0 and 3 one on the network, and
    their timelines differ (``tests/unit/test_cp_shared_programs.py``). Collectives along the axis
    are timed as a group on every member's links and need no such condition."""
    node = r // gpus_per_node
    counts = np.zeros(r.size, dtype=np.int64)
    for o in sorted(_p2p_offsets(schedule, axis)):
        counts += schedule.grid.peer(r, axis, o) // gpus_per_node != node
    return bool(np.all(counts == counts[0]))


def _same_programs(schedule: Any, pairs: set[tuple[Any, Any]]) -> bool:
    """Whether the roles of each pair run the same program. Roles named apart can run equal
    programs (the CP ranks of a load-balanced causal split, ``role_name(pp, cp)``: every CP rank
    gets chunks i and 2·cp−1−i, the same kernels and ring messages), and then the ranks run the
    same timeline as ranks of one role do."""
    programs = schedule.programs
    return all(x == y or programs[x] == programs[y] for x, y in pairs)


def nic_private_blocks(grid: Any, n_ranks: int, axes: Iterable[str], nic_key: np.ndarray) -> dict[str, int]:
    """How far each axis of ``axes`` (innermost first) can be mirrored without an unsimulated rank
    sending through the NIC of a simulated rank of its node: ``{axis: b}``, the ranks at
    coordinates ``0 .. b-1`` along it simulated (b = 1: the axis mirrored whole; an axis absent:
    not mirrored). An axis is mirrored whole while the NICs (``nic_key``: one non-negative id per
    rank, distinct across nodes) of the ranks kept so far at coordinate 0 of it and those of the
    other ranks stay disjoint. Where that fails, the smallest block b dividing its degree whose
    ranks' NICs are disjoint from the others' is kept: on a node with a NIC per two GPUs (NIC r
    serving GPUs 2r and 2r+1), TP ranks 0 and 1 are simulated and ranks 2..7 are their mirror
    images (rank c runs the timeline of rank c mod 2), each pair with its NIC to itself. The NIC
    each simulated rank shares is then shared as on the full cluster, and what is dropped is, as
    for an axis mirrored whole, traffic of replicas on NICs of their own (module docstring). With a
    NIC per GPU every axis is mirrored whole."""
    r = np.arange(n_ranks, dtype=np.int64)
    vector = _vector_grid(grid)
    keep = np.ones(n_ranks, dtype=bool)
    out: dict[str, int] = {}
    # The keys are small non-negative ids (node * rails + NIC): the intersection is tested with
    # a marker array, not np.intersect1d (two hash-based np.unique over every rank in numpy 2).
    marked = np.zeros(int(nic_key.max()) + 1 if nic_key.size else 0, dtype=bool)
    for a in axes:
        coord = np.asarray(grid.coord(r, a)) if vector else np.array([grid.coord(int(x), a) for x in r])
        degree = len(grid.group(0, (a,)))
        for b in range(1, degree // 2 + 1):
            if degree % b:
                continue
            trial = keep & (coord < b)
            marked[:] = False
            marked[nic_key[trial]] = True
            if not marked[nic_key[~trial]].any():
                keep, out[a] = trial, b
                break
    return out


def choose_ranks(schedule: Any, n_ranks: int, *, max_ranks: int | None, op_budget: int,
                 symmetric: bool | None, nic_key: np.ndarray | None = None,
                 gpus_per_node: int | None = None) -> tuple[list[int], list[str]]:
    """Which ranks to simulate and which axes are mirrored.

    ``symmetric`` True/False forces the mode; None picks it: all ranks when there are at most
    ``max_ranks`` of them and the op count fits ``op_budget``, otherwise symmetric mode.
    The simulated ranks are those at coordinate 0 of every mirrored axis (the first member of
    each of their groups along it), found from the coordinates, not by listing groups.
    ``nic_key`` (one NIC id per rank, distinct across nodes; None: a NIC per GPU) keeps the
    mirrored axes to those whose replicas have NICs of their own, and mirrors an axis whose
    ranks share NICs in blocks of the ranks that share them (:func:`nic_private_blocks`: TP
    ranks 0 and 1 of a node with a NIC per two GPUs, a quarter of the TP ranks instead of all
    of them). ``gpus_per_node`` (None: unknown) lets an axis inside a node whose roles run equal
    programs be mirrored (:func:`symmetric_axes`). The axes returned are those mirrored whole.
    """
    if symmetric is None:
        limit = DEFAULT_MAX_RANKS if max_ranks is None else max_ranks
        prog_len = max((len(p) for p in schedule.programs.values()), default=0)
        symmetric = n_ranks > limit or n_ranks * prog_len > op_budget
    if not symmetric:
        return list(range(n_ranks)), []
    grid = schedule.grid
    axes = symmetric_axes(schedule, n_ranks, grid_axes(grid), gpus_per_node)
    blocks = {a: 1 for a in axes}
    if nic_key is not None:
        blocks = nic_private_blocks(grid, n_ranks, axes, nic_key)
    axes = [a for a, b in blocks.items() if b == 1]  # mirrored whole (a block of b > 1: in part)
    if _vector_grid(grid):
        r = np.arange(n_ranks, dtype=np.int64)
        keep = np.ones(n_ranks, dtype=bool)
        for a, b in blocks.items():
            keep &= np.asarray(grid.coord(r, a)) < b
        return r[keep].tolist(), axes
    ranks = [r for r in range(n_ranks) if all(grid.group(r, (a,))[0] == r for a in axes)]
    return ranks, axes



def choose_ranks_with_images(schedule: Any, n_ranks: int, *, max_ranks: int | None, op_budget: int,
                             symmetric: bool | None, nic_key: np.ndarray | None, gpus_per_node: int | None = None
                             ) -> tuple[list[int], list[str], tuple[tuple[tuple[str, int], ...], ...]]:
    """:func:`choose_ranks` with *image ranks*: every axis along which every rank has the same
    role is mirrored whole, also those :func:`choose_ranks` mirrors in blocks of the ranks that
    share a NIC, or not at all. The ranks it would simulate at coordinates 1 .. b-1 of such an
    axis run, by symmetry, the timeline of the rank at coordinate 0 (same program, same
    collectives, their flows crossing NICs shared as those of coordinate 0): they are not
    simulated, but their traffic off the groups that span the axis (a DP AllReduce, a pipeline
    send/recv) goes on the network beside that of the simulated rank, on its own links (the
    engine joins each image group's plan to the simulated group's, and each image flow of a
    send/recv to the simulated one). So the NICs they share carry what they carry with every
    rank of the block simulated, and the ranks simulated are those of choose_ranks over b.

    Returns the ranks, the axes mirrored (whole or with images), and the images: one tuple of
    (axis, shift) steps per image rank of a simulated rank (shifts along several axes compose).
    Without a NIC key (a NIC per GPU) or outside symmetric mode: :func:`choose_ranks`' answer and
    no images."""
    plain = choose_ranks(schedule, n_ranks, max_ranks=max_ranks, op_budget=op_budget, symmetric=symmetric,
                         nic_key=nic_key, gpus_per_node=gpus_per_node)
    if nic_key is None or len(plain[0]) == n_ranks or not _vector_grid(schedule.grid):
        return plain[0], plain[1], ()
    grid = schedule.grid
    axes = symmetric_axes(schedule, n_ranks, grid_axes(grid), gpus_per_node)
    blocks = nic_private_blocks(grid, n_ranks, axes, nic_key)
    # an axis nic_private_blocks left out is simulated whole along its degree: a block of all of it
    span = {a: blocks.get(a, len(grid.group(0, (a,)))) for a in axes}
    steps = [[(a, j) for j in range(b)] for a, b in span.items() if b > 1]
    if not steps:
        return plain[0], plain[1], ()
    r = np.arange(n_ranks, dtype=np.int64)
    keep = np.ones(n_ranks, dtype=bool)
    for a in axes:
        keep &= np.asarray(grid.coord(r, a)) < 1
    images = tuple(tuple((a, j) for a, j in combo if j) for combo in product(*steps))
    return r[keep].tolist(), list(axes), tuple(im for im in images if im)

"""Exclusive links: the fast path for collectives whose flows no other traffic can meet.

Before the run, every link that simulated traffic can use is given its owner: one collective
group on one stream, or one P2P direction. A collective whose flows only cross links it owns
never shares them (its group issues collectives one at a time), so it is timed by its duration
alone on the network, computed once per plan on a private network, instead of flow by flow.
This is exact (tests compare it with ``exclusive_fast_path=False``).
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, Mapping

import numpy as np
import simpy

from simulator.costs.flow_patterns import Phase, sorted_distinct
from simulator.replay.rank_state import RankState
from simulator.schedule.ir import CommOp

_SHARED = object()  # a link that more than one collective group or P2P direction can use


def plan_links(plan: Any) -> np.ndarray:
    """Every link some flow of ``plan`` crosses, sorted, once each: a :class:`Phase`'s are its
    pattern's ``unit_load`` links (cached with the pattern, which the closed-form phase time has
    mostly computed already), so that a ring over hundreds of nodes makes no Flow objects here;
    phases sharing a pattern are read once."""
    parts: dict[int, np.ndarray] = {}
    for phase in plan.phases:
        if isinstance(phase, Phase):
            if id(phase.arrays) not in parts:
                parts[id(phase.arrays)] = phase.arrays.unit_load[0]
        elif phase:
            parts[id(phase)] = np.fromiter((link for flow in phase for link in flow.links), dtype=np.int64)
    if len(parts) == 1 and isinstance(plan.phases[0], Phase):
        shared = next(iter(parts.values())).view()  # the pattern's own array: read-only here
        shared.flags.writeable = False
        return shared
    return sorted_distinct(np.concatenate(list(parts.values()))) if parts else np.zeros(0, dtype=np.int64)


def link_owners(ranks: Iterable[RankState], group: Callable[[int, tuple[str, ...]], tuple[tuple[int, ...], int]],
                plan_of: Callable[[str, tuple[int, ...], int], Any], grid_peer: Callable[[int, str, int], int],
                route: Callable[[int, int], Any]) -> LinkOwners:
    """For every link some simulated traffic can use: its single owner (a collective's
    (stream, members), or a P2P direction (src, dst)) or _SHARED.

    A collective whose flows only cross links it owns never shares them: its group issues
    its collectives one at a time (one FIFO stream), so its duration is its time alone on
    the network, computed once per plan instead of flow by flow. Exact, not an approximation.
    ``group``, ``plan_of``, ``grid_peer`` and ``route`` are the replay's lookups.
    """
    # A link's owner depends only on which distinct owners can use it, not on how often or in
    # which order: gather each owner's links once (ranks of one group, and the sizes of one
    # collective, mostly repeat the same links), then count the owners of each link.
    parts: dict[Any, list[np.ndarray]] = {}
    seen: set[tuple[str, tuple[int, ...], str, int]] = set()
    for R in ranks:
        for stream, axes, kind, size in R.table.collectives:
            members, _ = group(R.rank, axes)
            if len(members) > 1 and (stream, members, kind, size) not in seen:
                seen.add((stream, members, kind, size))
                parts.setdefault((stream, members), []).append(plan_links(plan_of(kind, members, size)))
        for axis, offset, is_send in R.table.p2p_dirs:
            peer = grid_peer(R.rank, axis, offset)
            src, dst = (R.rank, peer) if is_send else (peer, R.rank)
            if src != dst and ("p2p", src, dst) not in parts:
                parts[("p2p", src, dst)] = [np.asarray(route(src, dst).links, dtype=np.int64)]
    return _claim(list(parts), [sorted_distinct(np.concatenate(p)) for p in parts.values()])


class LinkOwners(Mapping[int, Any]):
    """:func:`link_owners`' answer, held as arrays: every link some owner can use, ascending,
    and per link the index of its one owner (-1: _SHARED). Reads as a mapping from link to
    owner (or _SHARED); :meth:`owned_by` answers for a whole plan's links with a few array
    passes (a DP group over 784 nodes owns thousands of links; a dict of them all cost more
    than the rest of the plan's setup)."""

    __slots__ = ("_owners", "_index", "_links", "_owner_of")

    def __init__(self, owners: list[Any], links: np.ndarray, owner_of: np.ndarray) -> None:
        self._owners = owners
        self._index = {owner: i for i, owner in enumerate(owners)}
        self._links, self._owner_of = links, owner_of

    def __getitem__(self, link: int) -> Any:
        i = int(np.searchsorted(self._links, link))
        if i == self._links.size or self._links[i] != link:
            raise KeyError(link)
        o = int(self._owner_of[i])
        return _SHARED if o < 0 else self._owners[o]

    def __iter__(self) -> Iterator[int]:
        return iter(self._links.tolist())

    def __len__(self) -> int:
        return int(self._links.size)

    def owned_by(self, links: np.ndarray, owner: Any) -> bool:
        """Whether ``owner`` is the one owner of every link of ``links`` (as ``all(owners.get(link)
        == owner for link in links)``)."""
        if not links.size:
            return True
        i = self._index.get(owner)
        if i is None:
            return False
        pos = np.searchsorted(self._links, links)
        if int(pos.max()) >= self._links.size:
            return False
        return bool(np.all((self._links[pos] == links) & (self._owner_of[pos] == i)))


def _claim(owners: list[Any], links: list[np.ndarray]) -> LinkOwners:
    """Per link: the one of ``owners`` whose ``links`` (distinct, per owner) hold it, or _SHARED
    where two do. The owners are distinct (dict keys), so a link is shared exactly when it
    appears in more than one owner's links: counted with one sort over all of them, not a dict
    update per claim."""
    if not owners:
        return LinkOwners([], np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    every = np.concatenate(links)
    owner_of = np.repeat(np.arange(len(owners), dtype=np.int64), [a.size for a in links])
    order = np.argsort(every, kind="stable")
    every, owner_of = every[order], owner_of[order]
    first = np.flatnonzero(np.concatenate(([True], every[1:] != every[:-1])))
    claims = np.diff(np.append(first, every.size))
    return LinkOwners(owners, every[first], np.where(claims == 1, owner_of[first], -1))


class ExclusiveLinks:
    """Times collectives that only cross links they own (``owners`` from :func:`link_owners`;
    None turns the fast path off) on a private network built by ``network_factory``."""

    def __init__(self, owners: Mapping[int, Any] | None, network_factory: Callable[..., Any], capacity_Bps: Any,
                 phase_duration: Callable[[Any], float] | None = None) -> None:
        self._owners = owners
        self._network_factory = network_factory
        self._capacity = capacity_Bps
        # The replay network's closed form of a phase alone (FlowNetwork.phase_duration), when it
        # has one: the same time as a private network, without building one per plan.
        self._phase_duration = phase_duration
        # plan key -> seconds alone on the network, for collectives whose links nothing else uses
        self._alone: dict[tuple, float | None] = {}

    def time_alone(self, op: CommOp, members: tuple[int, ...], plan: Any) -> float | None:
        """Seconds the collective takes on links it alone uses, or None if it shares any."""
        key = (op.op, members, op.size_bytes, op.stream)
        if key in self._alone:
            return self._alone[key]
        owner = (op.stream, members)
        t: float | None = None
        owners = self._owners
        if owners is not None and (owners.owned_by(plan_links(plan), owner) if isinstance(owners, LinkOwners)
                                   else all(owners.get(link) == owner for link in plan_links(plan).tolist())):
            t = float(plan.latency_s)
            for phase in plan.phases:
                if phase and self._phase_duration is not None:
                    t += self._phase_duration(phase)
                elif phase:
                    env = simpy.Environment()
                    net = self._network_factory(env, self._capacity)
                    done = net.transfer_many(phase) if hasattr(net, "transfer_many") else env.all_of(
                        [net.transfer(f.links, f.nbytes, f.rate_cap_Bps) for f in phase])
                    env.run(done)
                    t += env.now
        self._alone[key] = t
        return t

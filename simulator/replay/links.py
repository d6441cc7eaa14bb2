"""Links as shared resources: a fluid flow network with max-min fair sharing.

Every direction of every link (``Topology.capacity_Bps``) is a resource of fixed bandwidth.
Concurrent flows share it the way long-lived transfers share a lossless fabric: max-min fair
(Bertsekas & Gallager, *Data Networks*, §6.5.2, progressive filling), so two collectives on one
NIC each get half, and nothing is serialised behind a whole message. Rates are recomputed
whenever a flow starts or ends; between such events every flow moves at a constant rate, so the
simulation advances from one completion to the next (a fluid model, not packets).

Rates are recomputed incrementally: max-min fairness decomposes over the connected components of
the flow-link graph, so a start or finish only re-shares the flows connected to it (a send/recv
on one rail does not touch a TP ring on NVLink). Small components are water-filled in plain
Python; one that reaches more than LARGE_COMPONENT_FLOWS flows re-shares every active flow with
the vectorised water-filling (a few numpy passes per fair-share level over ~20,000 flows). Flows
finishing within a relative 1e-9 of each other complete in the same event: a symmetric
collective phase is one event, not one per rank.

Flows of a phase that go on the network together with the same size, bytes left and cap are one
*class* (``flow_records.ActiveFlow`` with ``n`` members, their links as a numpy table): an
All-to-All of 64 ranks is 4,032 flows but a handful of classes, each with one heap entry, one
completion and one entry per link. A large component is water-filled class by class (entries
weighted by the members crossing each link) when that is exact: every member must then have a
bottleneck, a saturated link on which no flow is faster (Bertsekas & Gallager §6.5.2: the
max-min allocation is the unique feasible one where every flow has one); otherwise member by
member, and classes whose members got different rates split. Folding never changes a rate.

Traffic can also be timed outside the network on links it reserves (:meth:`FlowNetwork.reserve`:
traffic arriving there calls the holder back, which hands what it holds over). While the links
of a phase carry only components of fixed rates (phase blocks within one segment of their solo
trajectories, or ordinary flows until one of them ends), :meth:`FlowNetwork.beside` times the
phase in closed form on the capacity they leave, checked to be the max-min allocation of both
(``fair_share.is_max_min``); :meth:`FlowNetwork.resume_phase` hands such a phase over.

Latency is not added here; the caller (the replay engine) adds the route/protocol latency.
"""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Iterable, Sequence
from itertools import chain
from operator import is_
from typing import Any, NamedTuple

import numpy as np
import simpy
from simpy.events import Event, Timeout

from simulator.costs.flow_patterns import sorted_distinct
from simulator.replay.fair_share import is_max_min, max_min_rates, max_min_rates_small
from simulator.replay.flow_records import (FlowStats, ActiveFlow, FlowGroup, Mirror, checked_flows, csr_take,
                                           entries, link_counts)
from simulator.replay.solo_phases import FlowClass, PhaseShape, PhaseShapes, SoloBlock, residual_shape

# Flows whose finish times differ by less than this fraction of the current simulated time
# (plus an absolute femtosecond) complete together.
REL_TOL = 1e-9
ABS_TOL_S = 1e-15

# Components with at most this many flow-link entries are water-filled in plain Python: numpy's
# per-call overhead (~20 calls a pass) dominates below a few hundred entries.
SMALL_COMPONENT_ENTRIES = 160

# The class-level rates are accepted when every member has a bottleneck within this relative
# tolerance (links saturated, rates the highest on the link): float round-off of the weighted sums.
CHECK_TOL = 1e-9

# Links left by finished flows beyond this many are narrowed to those still in use with one
# numpy pass before the component search (below it, a dict lookup per link is cheaper).
DIRTY_FILTER_LINKS = 32

# _class_level_rates' outcomes kept (then started over): the same classes meet again and again
# (a phase's All-to-All classes, one micro-batch after another).
CLASS_LEVEL_KNOWN = 4096

# Fabrics of up to this many links keep their capacities as a list of floats (FlowNetwork).
LIST_CAPACITY_LINKS = 1 << 16

# A change whose component reaches more flows than this is re-shared over every active flow at
# once with the vectorised water-filling (a 1,024-rank All-to-All connects everything).
LARGE_COMPONENT_FLOWS = 512
# Up to this many flow-link entries, the flows admitted at one instant are counted on their
# links one by one rather than with numpy (FlowNetwork._admit)
_FEW_ENTRIES = 16
# Up to this many links, beside() reads their occupancy rows as Python lists rather than
# with a numpy call per column and test (a TP ring's 8 NVLink hops, most of its calls)
_FEW_LINKS = 32

try:  # numpy's C count_nonzero: np.count_nonzero and ndarray.any() pass through Python wrappers
    # (~1 us a call, on arrays of a few links asked about hundreds of thousands of times a step)
    from numpy._core.multiarray import count_nonzero as _count_nonzero
except ImportError:  # numpy < 2
    from numpy.core.multiarray import count_nonzero as _count_nonzero  # type: ignore[no-redef]


def _few_plain(flows: list[ActiveFlow]) -> bool:
    """Whether ``flows`` are single flows (no classes) crossing _FEW_ENTRIES links in all."""
    n = 0
    for f in flows:
        if f.ptr is not None:
            return False
        n += len(f.links)
    return n <= _FEW_ENTRIES


class Beside(NamedTuple):
    """Phases timed in closed form beside traffic of fixed rates (:meth:`FlowNetwork.beside`):
    each phase's trajectory on the capacity that traffic leaves, their total duration, until
    when (absolute) the traffic keeps its rates, and the links to reserve meanwhile. (A named
    tuple: built once or twice per collective timed beside, a frozen dataclass's per-field
    ``object.__setattr__`` cost more than the rest of the answer.)"""

    shapes: tuple[PhaseShape, ...]
    duration: float
    until: float
    links: np.ndarray


def _distinct(ids: np.ndarray) -> np.ndarray:
    """The distinct values of ``ids``, ascending: ``np.unique``, without its sort when ``ids``
    is already in order (the mirror's entries are appended in flow-id order), and by one sort
    otherwise (``sorted_distinct``: numpy 2's hash-based ``np.unique`` is slower on link ids)."""
    if ids.size > 1 and not (ids[1:] >= ids[:-1]).all():
        return sorted_distinct(ids)
    keep = np.ones(ids.size, dtype=bool)
    np.not_equal(ids[1:], ids[:-1], out=keep[1:])
    return ids[keep]


class _Known:
    """What a network works out from its link capacities alone, whatever traffic it carries:
    its phases' shapes and their trajectories beside fixed traffic, components' max-min
    rates. Every answer is kept by the objects it was worked out from (held in the entry) or
    by values, so networks on the same capacities share them (:func:`_known_for`)."""

    __slots__ = ("capacity", "values", "shapes", "component", "beside", "beside_seg", "beside_links")

    def __init__(self, capacity_Bps: np.ndarray, capacity: Sequence[float]) -> None:
        self.capacity = capacity_Bps
        self.values = capacity_Bps.copy()  # as they were (an array can be changed in place)
        self.shapes = PhaseShapes(capacity_Bps, capacity)
        self.component: dict[tuple[Any, ...], list[float]] = {}
        self.beside: dict[tuple[Any, ...], tuple[Any, PhaseShape | None]] = {}
        self.beside_seg: dict[tuple[int, ...], tuple[tuple[Any, ...], list[PhaseShape] | None]] = {}
        self.beside_links: dict[tuple[int, ...], tuple[np.ndarray, tuple[Any, ...], np.ndarray]] = {}


# The last capacities' _Known: a folded step's two reduced replays run on one cost model's
# capacities (the same array), and the second meets the phases of the same plans
# (engine._replay shares them) without working out their shapes and trajectories again.
_LAST_KNOWN: list[_Known] = []


def _known_for(capacity_Bps: np.ndarray, capacity: Sequence[float]) -> _Known:
    """The :class:`_Known` of these capacities: the last one when it was made for this very
    array with the same values (a caller may have changed them in place), else a new one."""
    if _LAST_KNOWN:
        last = _LAST_KNOWN[0]
        if last.capacity is capacity_Bps and np.array_equal(last.values, capacity_Bps):
            return last
    known = _Known(capacity_Bps, capacity)
    _LAST_KNOWN[:] = [known]
    return known


class FlowNetwork:
    """Fluid model of every link direction as a shared, max-min fair resource.

    ``capacity_Bps[link]`` is the bandwidth of each link direction (bytes/s). ``transfer`` and
    ``transfer_many`` return SimPy events that fire when the last byte has crossed.

    Rates are recomputed incrementally. Max-min fairness decomposes over the connected components
    of the flow-link graph (flows joined by a shared link): a component's allocation depends on
    its own links and flows alone. When flows start or finish, only the component(s) reachable
    from the links they touch get new rates; every other flow keeps its rate and its finish time.
    TP rings on NVLink, a DP ReduceScatter on the NICs and a CP ring step on another rail are
    separate components, so a send/recv starting or ending costs a water-filling over its own few
    flows, not over every flow in flight. Each flow keeps (bytes left at a reference time, rate),
    so only flows whose rate changes are touched; finish times sit in a heap.
    """

    def __init__(self, env: simpy.Environment, capacity_Bps: np.ndarray | Sequence[float]) -> None:
        cap = np.asarray(capacity_Bps, dtype=np.float64)
        if cap.ndim != 1 or not np.all(np.isfinite(cap)) or np.any(cap <= 0):
            raise ValueError("capacity_Bps must be a 1-D array of positive, finite bandwidths")
        self.env = env
        self.capacity_Bps = cap
        self._n_links = int(cap.size)
        # plain floats for the per-flow paths: a list (the fastest to index) on a fabric of up to
        # LIST_CAPACITY_LINKS links, else an array.array of the same floats (one copy of the
        # buffer, not ~800k float objects at 100k GPUs)
        self._capacity_list: Sequence[float] = (cap.tolist() if cap.size <= LIST_CAPACITY_LINKS
                                                else array("d", cap.tobytes()))
        self.stats = FlowStats()
        # Bytes carried by flows already finished: (links, bytes) chunks, summed per link on demand.
        # (Folded per link only when asked or when many chunks are pending: a bincount over every
        # link per completion would cost in proportion to the fabric, not to the flows.)
        self._link_done: list[tuple[np.ndarray, np.ndarray]] = []
        self._link_done_entries = 0  # entries in those chunks
        self._link_done_sum = np.zeros(cap.size)
        self._flows: dict[int, ActiveFlow] = {}  # active flows by id, in start order
        self._on_link: dict[int, dict[int, ActiveFlow]] = {}  # link -> active flows crossing it
        # Classes of more than LARGE_COMPONENT_FLOWS members are not in _on_link: any component
        # that reaches one is re-shared whole, so the search only needs to know that one crosses
        # a link (how many, per link), which costs one numpy pass per class instead of a dict
        # entry per link (an All-to-All class crosses ~1,300).
        self._large_on_link = np.zeros(cap.size, dtype=np.int64)
        self._n_large = 0  # active classes counted in _large_on_link
        # (finish, fid, flow or solo block); stale entries skipped
        self._heap: list[tuple[float, int, ActiveFlow | SoloBlock]] = []
        self._new: list[ActiveFlow] = []  # started this instant, not yet given a rate
        # What changed since the last rate computation: links that flows left, flows that started.
        self._dirty: set[int] = set()
        self._seeds: list[ActiveFlow] = []
        self._mirror: Mirror | None = None  # numpy copy for large components, while they occur
        self._next_fid = 0
        self._timer_token = 0  # only the timer carrying the current token is live
        self._timer_at: float | None = None  # when the live timer fires
        self._update_pending = False
        # Phases run in closed form while alone (solo_phases): their shapes by id(phase), the
        # started ones by id, and per link the id of the block holding it (-1: none).
        known = _known_for(self.capacity_Bps, self._capacity_list)
        self._shapes = known.shapes
        self._blocks: dict[int, SoloBlock] = {}
        self._owner = np.full(cap.size, -1, dtype=np.int64)
        # Per link: active ordinary flows (_busy), 1 where a block holds it (_owner >= 0,
        # _owned) and the reservation (_reserved, below), the three columns of one array: idle()
        # asks for all three of a few links at once (a row take), without comparisons (it is
        # asked for every collective a compute block may hold, tens of thousands of times a step)
        self._occupancy = np.zeros((cap.size, 3), dtype=np.int64)
        self._busy = self._occupancy[:, 0]
        self._owned = self._occupancy[:, 1]
        self._link_slot = np.zeros(cap.size, dtype=np.int64)  # scratch of _number_links
        # _class_level_rates' outcomes by the classes in play (tables and caps, in order)
        self._class_level_known: dict[tuple[Any, ...], tuple[list[float] | None, list[np.ndarray]]] = {}
        # _component_rates' outcomes by the component's routes and caps
        self._component_known: dict[tuple[Any, ...], list[float]] = known.component
        # Links reserved by a holder outside the network (the replay's compute blocks holding a
        # collective they time alone, engine._compute_run): per link the holder's id plus one
        # (0: none; reserve and release, asked once or twice per collective held, test and count
        # it without a comparison).
        # Traffic arriving on a reserved link first calls ``on_reserved(holders, links)``, so
        # that the holder can put what it holds there on the network before the newcomer is
        # placed (:meth:`reserve`).
        self._reserved = self._occupancy[:, 2]
        self._n_reserved = 0
        self.on_reserved: Any = None
        # holder -> the links it reserved, and the holders some of whose links were reserved
        # again since (by another, or by itself with other links): release clears a holder's
        # links without comparing them unless it is one of those
        self._holding: dict[int, np.ndarray] = {}
        self._overwritten: set[int] = set()
        # beside()'s trajectories by (id of the phase, the fixed flows): (phase, shape or None)
        self._beside_known: dict[tuple[Any, ...], tuple[Any, PhaseShape | None]] = known.beside
        # _beside_known_shapes' answers by (phases, block specs and segments), held by identity
        self._beside_seg_known: dict[tuple[int, ...], tuple[tuple[Any, ...], list[PhaseShape] | None]] = known.beside_seg
        # _beside_links' answers by (links, block components), held by identity
        self._beside_links_known: dict[tuple[int, ...], tuple[np.ndarray, tuple[Any, ...], np.ndarray]] = known.beside_links

    # ------------------------------------------------------------------ public
    @property
    def active_flows(self) -> int:
        return sum([f.n for f in self._flows.values()])

    @property
    def link_bytes(self) -> np.ndarray:
        """Bytes carried per link direction so far (finished flows plus the progress of active ones)."""
        out = self._done_per_link().copy()
        now = self.env._now
        for f in self._flows.values():
            moved = f.size - max(f.rem - f.rate * (now - f.t_ref), 0.0)
            if f.ptr is not None:
                np.add.at(out, f.links, moved)
                continue
            for link in f.links:
                out[link] += moved
        for block in self._blocks.values():
            specs = block.shape.specs
            for c, comp in enumerate(block.shape.components):
                if block.alive[c]:
                    left = dict(comp.remaining(now - block.t0))
                    for i in comp.flows:
                        links, size, _ = specs[i]
                        for link in links:
                            out[link] += size - left.get(i, 0.0)
        return out

    def rates(self) -> np.ndarray:
        """Current rate (bytes/s) of each active flow, in start order (recomputed if pending)."""
        if self._new or self._dirty or self._seeds:
            self._admit()
            self._refresh_rates()
        return np.repeat([f.rate for f in self._flows.values()], [f.n for f in self._flows.values()]).astype(np.float64)

    def transfer(self, links: Sequence[int], nbytes: float, rate_cap_Bps: float | None = None) -> simpy.Event:
        """Start one flow of ``nbytes`` over ``links``; the event fires when it has finished."""
        return self.transfer_many(((links, nbytes, rate_cap_Bps),))

    def transfer_many(self, flows: Iterable[Any]) -> simpy.Event:
        """Start many flows at once (one rate recompute for the batch); the event fires when all
        have finished. Items: ``(links, nbytes[, rate_cap_Bps])`` or objects with those fields.
        Zero-byte flows, and flows over no link without a cap, finish immediately."""
        batch = checked_flows(flows, self._n_links)
        event = Event(self.env)
        if not batch:
            event.succeed()
            return event
        group = FlowGroup(len(batch), event)
        now = self.env._now
        fid = self._next_fid
        for links, nbytes, cap in batch:
            f = ActiveFlow(fid, links, nbytes, cap, group)
            f.t_ref = now
            self._new.append(f)
            fid += 1
        self._next_fid = fid
        self.stats.flows_started += len(batch)
        self._schedule_update()
        return event

    def _shape(self, phase: Sequence[Any]) -> PhaseShape:
        return self._shapes.get(phase)

    def phase_duration(self, phase: Sequence[Any]) -> float:
        """Seconds the phase takes alone on an empty network (its slowest component alone)."""
        return self._shape(phase).duration

    def idle(self, links: np.ndarray) -> bool:
        """Whether no flow, phase block or reservation holds any of ``links`` now (flows started
        this instant are not counted yet: their arrival calls ``on_reserved`` like any other)."""
        return not _count_nonzero(self._occupancy.take(links, axis=0))

    def reserve(self, holder: int, links: np.ndarray) -> None:
        """Reserve ``links`` (idle ones, :meth:`idle`) for ``holder`` (an id >= 0): until
        :meth:`release`, any flow or phase that starts on one of them first calls
        ``on_reserved(holders, links)`` with the holders and links it meets, then starts. The
        holder stands for traffic timed outside the network, in closed form, on links nothing
        else uses; called back, it puts that traffic on the network as it stands at that
        moment (``transfer_phase(phase, t0=...)``), so the newcomer shares the links exactly as
        if the traffic had been on the network all along."""
        reserved = self._reserved
        prev = reserved[links]
        taken = int(_count_nonzero(prev))
        if taken:  # links of other holders (or its own) change hands: their release checks
            self._overwritten.update((prev[prev > 0] - 1).tolist())
        if self._holding.setdefault(holder, links) is not links:
            self._overwritten.add(holder)  # a second reservation before the first's release
        self._n_reserved += links.size - taken
        reserved[links] = holder + 1

    def reserve_idle(self, holder: int, links: np.ndarray) -> None:
        """:meth:`reserve` of links just found idle (:meth:`idle`, nothing between): none is
        reserved, so none changes hands."""
        if self._holding.setdefault(holder, links) is not links:
            self._overwritten.add(holder)
        self._n_reserved += links.size
        self._reserved[links] = holder + 1

    def release(self, holder: int, links: np.ndarray) -> None:
        """Drop ``holder``'s reservation of ``links`` (links another holder reserved are kept)."""
        reserved = self._reserved
        if self._holding.pop(holder, None) is links and holder not in self._overwritten:
            # (the common case: the links it reserved, every one still its own)
            reserved[links] = 0
            self._n_reserved -= links.size
            return
        self._overwritten.discard(holder)
        mine = reserved[links] == holder + 1
        n = int(_count_nonzero(mine))
        if n:
            reserved[links if n == links.size else links[mine]] = 0
            self._n_reserved -= n

    def beside(self, phases: Sequence[Sequence[Any]], links: np.ndarray) -> Beside | None:
        """``phases``, run one after the other from now on ``links`` (every link they cross),
        timed in closed form beside the traffic of fixed rates that holds some of those links
        now; None where that is not exact. Traffic timed outside the network on those links
        (reservations) is called back first, as for any newcomer; if none is left there, the
        phases are timed alone.

        The traffic on those links must be components of running phase blocks or of ordinary
        flows (no other reservation). From now until the first of those components moves to
        its next segment, or one of their flows ends (``Beside.until``), each moves at fixed
        rates: the link
        capacity it leaves is known, and the phases' own trajectory on that residual capacity
        is their closed form (``solo_phases.residual_shape``). It is the network's trajectory
        exactly when, at every segment of it, the phases' rates with the components' fixed ones
        are the max-min fair allocation of both (``fair_share.is_max_min``: the components keep
        their rates, capped or bottlenecked elsewhere, and the phases take what they leave). A
        TP collective on the NVLink of a node whose DP ring hop runs at its per-channel cap is
        the case in point. The caller reserves ``Beside.links`` (the phases' and those
        components' links) and hands the phases over (:meth:`resume_phase`) when traffic
        arrives there or at ``until``, whichever comes first."""
        if self._n_reserved:  # traffic timed outside the network there comes onto it first
            self._claim(links)
        occupancy = self._occupancy.take(links, axis=0)  # (busy, owned, reserved) per link
        on_links: list[int]  # the links phase blocks hold, and those ordinary flows cross
        busy_links: list[int]
        if links.size <= _FEW_LINKS:
            # (a TP ring's few links: the rows as Python lists cost less than a numpy call each)
            on_links, busy_links = [], []
            for link, (b, o, r) in zip(links.tolist(), occupancy.tolist()):
                if r:
                    return None
                if o > 0:
                    on_links.append(link)
                if b > 0:
                    busy_links.append(link)
        else:
            if _count_nonzero(occupancy[:, 2]):
                return None
            on_links = links[occupancy[:, 1] > 0].tolist()
            busy_links = links[occupancy[:, 0] > 0].tolist()
        if not on_links and not busy_links:  # (what the claim put on the network has not started yet)
            alone = tuple(map(self._shape, phases))
            return Beside(alone, sum([sh.duration for sh in alone]), float("inf"), links)
        now = self.env._now
        until = float("inf")
        fixed: list[tuple[tuple[int, ...], float, float]] = []  # (links, cap, rate) of their flows
        others: set[int] = set()  # the links of those components (of ordinary flows)
        comps: list[Any] = []  # those components (of phase blocks)
        held_by: list[Any] = []  # (specs, segment in force) of each of them
        flowing = bool(busy_links)
        if flowing:
            # Ordinary flows: their components keep their rates until one of their flows ends
            # (or traffic arrives, which the reservation of their links calls back).
            if self._new or self._seeds or self._dirty or self._update_pending:
                return None  # rates not yet worked out for this instant
            connected = self._flow_components(busy_links)
            if connected is None:
                return None
            flows, comp_links = connected
            others.update(comp_links)
            for f in flows:
                until = min(until, f.finish)
                fixed.extend((m, f.cap, f.rate) for m in f.members())
        seen: set[tuple[int, int]] = set()
        for fid, link in zip(self._owner[on_links].tolist() if on_links else (), on_links):
            block = self._blocks[fid]
            c = block.shape.component_at(link)
            if (fid, c) in seen:
                continue
            seen.add((fid, c))
            comp = block.shape.components[c]
            seg, end = comp.segment_window(now - block.t0)
            until = min(until, block.t0 + end)
            if seg is None:
                continue  # ended: its links carry nothing until the block ends
            comps.append(comp)
            held_by.append(block.shape.specs)
            held_by.append(seg)
        shapes = self._beside_shapes(phases, fixed, held_by) if flowing else self._beside_known_shapes(phases, held_by)
        if shapes is None:
            return None
        if others or comps:
            links = self._beside_links(links, comps, others)
            if _count_nonzero(self._reserved[links]):
                return None
        return Beside(tuple(shapes), sum([sh.duration for sh in shapes]), until, links)

    def _beside_shapes(self, phases: Sequence[Sequence[Any]], fixed: list[tuple[tuple[int, ...], float, float]],
                       held_by: list[Any]) -> list[PhaseShape] | None:
        """:meth:`beside`'s trajectories of ``phases`` beside the flows ``fixed`` (links, cap,
        rate) and the block components' segments in force (``held_by``: specs, segment, ...),
        kept by those (``_beside_known``); None where one is not the max-min one."""
        for j in range(0, len(held_by), 2):
            specs, seg = held_by[j], held_by[j + 1]
            fixed.extend((specs[i][0], specs[i][2], r) for i, r in zip(seg.alive, seg.rate))
        key = tuple(fixed)
        shapes: list[PhaseShape] = []
        for phase in phases:
            got = self._beside_known.get((id(phase), key))
            if got is None or got[0] is not phase:
                got = (phase, self._residual_shape(self._shape(phase), fixed))
                if len(self._beside_known) >= CLASS_LEVEL_KNOWN:
                    self._beside_known.clear()
                self._beside_known[(id(phase), key)] = got
            if got[1] is None:
                return None
            shapes.append(got[1])
        return shapes

    def _beside_known_shapes(self, phases: Sequence[Sequence[Any]], held_by: list[Any]) -> list[PhaseShape] | None:
        """:meth:`_beside_shapes` beside phase blocks alone, kept by the phases and the blocks'
        (specs, segment) objects themselves (held in the entry): their fixed flows follow from
        those, so the same TP ring beside the same DP hop's segment costs a lookup of a few ids,
        not a tuple of every flow's links, caps and rates built and hashed."""
        key = (*map(id, phases), *map(id, held_by))
        got = self._beside_seg_known.get(key)
        if got is not None and all(map(is_, got[0], (*phases, *held_by))):
            return got[1]
        shapes = self._beside_shapes(phases, [], held_by)
        if len(self._beside_seg_known) >= CLASS_LEVEL_KNOWN:
            self._beside_seg_known.clear()
        self._beside_seg_known[key] = ((*phases, *held_by), shapes)
        return shapes

    def _beside_links(self, links: np.ndarray, comps: list[Any], others: set[int]) -> np.ndarray:
        """:meth:`beside`'s links to reserve: ``links``, the block components ``comps``' and the
        flows' ``others``, sorted. Without flows they are kept by the components and ``links``
        (the objects themselves, held in the entry): a DP ring's component crosses hundreds of
        links, and the same TP ring meets the same components again and again."""
        key = None
        if not others:
            key = (id(links), *map(id, comps))
            got = self._beside_links_known.get(key)
            if got is not None and got[0] is links and all(map(is_, got[1], comps)):
                return got[2]
        for comp in comps:
            others.update(comp.links)
        others.update(links.tolist())
        out = np.array(sorted(others), dtype=np.int64)
        if key is not None:
            if len(self._beside_links_known) >= CLASS_LEVEL_KNOWN:
                self._beside_links_known.clear()
            self._beside_links_known[key] = (links, tuple(comps), out)
        return out

    def _flow_components(self, links: list[int]) -> tuple[list[ActiveFlow], set[int]] | None:
        """The active flows connected (through shared links) to ``links`` and every link they
        cross; None when they are more than LARGE_COMPONENT_FLOWS (members counted), or a class
        too large to be kept per link is among them."""
        members: dict[int, ActiveFlow] = {}
        seen = set(links)
        if self._grow_component(members, 0, list(links), seen) is None:
            return None
        return list(members.values()), seen

    def _grow_component(self, members: dict[int, ActiveFlow], n_members: int, stack: list[int],
                        seen: set[int], stop_at: float = float("inf")) -> int | None:
        """Add to ``members`` every active flow reachable from the links on ``stack`` through
        shared links (``seen`` grows with the links visited), until ``stop_at`` flows are members.
        The members' flow count, or None past LARGE_COMPONENT_FLOWS or at a link whose class is
        too large to be kept per link."""
        # (a numpy read per link visited only while a class too large to be kept per link is
        # active: most of a step has none)
        large = self._large_on_link if self._n_large else None
        get = self._on_link.get
        while stack and len(members) < stop_at:
            link = stack.pop()
            if large is not None and large[link]:
                return None
            users = get(link)
            if not users:
                continue
            for fid, f in users.items():
                if fid not in members:
                    members[fid] = f
                    n_members += f.n
                    if n_members > LARGE_COMPONENT_FLOWS:
                        return None
                    new = [other for other in f.ulinks if other not in seen]
                    if new:
                        seen.update(new)
                        stack.extend(new)
        return n_members

    def _residual_shape(self, shape: PhaseShape,
                        fixed: list[tuple[tuple[int, ...], float, float]]) -> PhaseShape | None:
        """:meth:`beside`'s trajectory of one phase beside flows ``fixed`` (links, cap, rate),
        or None where it is not the max-min one (or the fixed flows leave a link no room)."""
        residual = self.capacity_Bps.copy()
        for links, _, r in fixed:
            for link in links:
                residual[link] -= r
        touched = np.unique(np.fromiter((link for links, _, _ in fixed for link in links), dtype=np.int64))
        if (residual[touched] <= 0.0).any():
            return None
        out = residual_shape(shape, residual)
        f_routes = [links for links, _, _ in fixed]
        f_caps = [cap for _, cap, _ in fixed]
        f_rates = [r for _, _, r in fixed]
        loaded = set(touched.tolist())
        specs = out.specs
        for comp in out.components:
            if loaded.isdisjoint(comp.links):
                continue
            for seg in comp.segments:
                routes = [specs[i][0] for i in seg.alive] + f_routes
                caps = [specs[i][2] for i in seg.alive] + f_caps
                if not is_max_min(routes, caps, list(seg.rate) + f_rates, self.capacity_Bps):
                    return None
        return out

    def resume_phase(self, shape: PhaseShape, t0: float) -> simpy.Event:
        """Put on the network, flow by flow, a phase that started at ``t0`` and has moved
        since along ``shape``'s trajectory (timed outside the network, :meth:`beside`), with
        the bytes each flow has left now; the event fires when they have all finished."""
        event = Event(self.env)
        group = FlowGroup(0, event)
        if self._n_reserved:
            self._claim(shape.links)
        now = self.env._now
        self.stats.flows_started += shape.n_flows
        left = np.zeros(shape.n_flows, dtype=bool)
        for comp in shape.components:
            idx, rem = comp.remaining_arrays(now - t0)
            if idx.size:
                left[idx] = True
                self._materialize(shape.classes(idx, rem), group, now)
        self._account(shape, np.flatnonzero(~left))
        if group.outstanding:
            self._schedule_update()
        else:
            event.succeed()
        return event

    def _claim(self, links: np.ndarray) -> None:
        """Traffic is about to start on ``links``: call back the holders of reserved ones."""
        held = self._reserved[links]
        if _count_nonzero(held) and self.on_reserved is not None:
            hit = held > 0
            self.on_reserved(held[hit] - 1, links[hit])

    def transfer_phase(self, phase: Sequence[Any], t0: float | None = None) -> simpy.Event:
        """:meth:`transfer_many` for a phase that starts again and again (a collective plan's
        phase, the same object each time): it is decomposed once into its connected
        components, and each component that meets no other flow runs in closed form as its
        solo trajectory (``solo_phases``) until a flow arrives on one of its links. The event
        fires when every flow of the phase has finished, at the time transfer_many gives.

        ``t0`` (default now): when the phase started, for a phase that has been running alone
        since then outside the network (a reservation's holder handing it over, :meth:`reserve`);
        its flows are where their solo trajectories put them at the current time."""
        shape = self._shape(phase)
        event = Event(self.env)
        if not shape.components:
            event.succeed()
            return event
        if self._n_reserved:
            self._claim(shape.links)
        now = self.env._now
        start = now if t0 is None else t0
        group = FlowGroup(0, event)
        alive = [True] * len(shape.components)
        # Components that meet flows already in flight, or another block's components, go on
        # the network flow by flow (and so do the components they meet).
        met: set[int] = set()
        if self._flows:
            busy = self._busy[shape.links] > 0
            if _count_nonzero(busy):
                met.update(shape.component_of_link[busy].tolist())
        if self._blocks:
            held = self._owner[shape.links]
            clash = held >= 0
            if _count_nonzero(clash):
                met.update(shape.component_of_link[clash].tolist())
                self._break(held[clash], shape.links[clash], now)
        fid = self._next_fid
        self._next_fid += 1
        self.stats.components_broken += len(met)
        for c in met:
            alive[c] = False
            comp = shape.components[c]
            self._materialize(shape.component_classes(c), group, now)
        if len(met) < len(shape.components):
            block = SoloBlock(fid, shape, start, alive, group)
            group.outstanding += 1
            self._blocks[fid] = block
            # the links of the components kept in the block
            kept = shape.links if not met else shape.links[np.asarray(alive, dtype=bool)[shape.component_of_link]]
            self._set_owner(kept, fid)
            heapq.heappush(self._heap, (block.finish, fid, block))
        self.stats.flows_started += shape.n_flows
        self._schedule_update()
        return event

    # ------------------------------------------------------------------ internals
    def _schedule_update(self) -> None:
        if not self._update_pending:
            # Defer the recompute to the end of this instant so that every flow started now
            # (by any caller) shares one recompute.
            self._update_pending = True
            trigger = Event(self.env)
            trigger.callbacks.append(self._on_start)
            trigger.succeed()

    def _materialize(self, classes: list[FlowClass], group: FlowGroup, now: float) -> None:
        """Put flows of a phase on the network as ordinary flows: each class of flows with the
        same size, bytes left and cap (``PhaseShape.classes``) as one ``ActiveFlow``, which the
        rate computation splits where its members' rates differ."""
        fid = self._next_fid
        for c in classes:
            f = ActiveFlow(fid, c.links, c.size, c.cap, group, c.ptr, c.distinct)
            f.rem = c.rem
            f.t_ref = now
            self._new.append(f)
            fid += 1
        self._next_fid = fid
        group.outstanding += len(classes)

    def _break(self, block_ids: np.ndarray, links: np.ndarray, now: float) -> None:
        """Hand the components of running blocks that hold ``links`` to the network as ordinary
        flows, with the bytes their solo trajectories have left at ``now``.

        The components go in the order of the (block, link) pairs, each once; their links are
        released and each block's span settled once per call, after all of them
        (:meth:`SoloBlock.settle_many`: the span and finish that settling after each would
        leave). A DP collective that meets a block of a ring's hundreds of components breaks
        them all at once: per component, releasing its links and rescanning the block's
        durations cost more than the rest."""
        pairs = list(set(zip(block_ids.tolist(), links.tolist())))  # (block, link) each once
        blocks = self._blocks
        broken: dict[int, tuple[SoloBlock, list[int]]] = {}  # by block, in order of first break
        freed: list[tuple[int, ...]] = []
        # per block met: (block, its components by link, their alive flags); most pairs name a
        # component broken already (a ring hop's links), so each costs two look-ups
        met: dict[int, tuple[SoloBlock, dict[int, int], list[bool]]] = {}
        for fid, link in pairs:
            got = met.get(fid)
            if got is None:
                block = blocks.get(fid)
                if block is None:
                    continue
                got = met[fid] = (block, block.shape.components_by_link(), block.alive)
            block, at, alive = got
            c = at[link]
            if not alive[c]:
                continue
            alive[c] = False
            shape = block.shape
            self.stats.components_broken += 1
            comp = shape.components[c]
            freed.append(comp.links)
            idx, rem = comp.remaining_arrays(now - block.t0)
            flows = comp.flow_array()
            if idx.size:  # the component's flows that finished inside the block, in order
                done = np.ones(len(shape.specs), dtype=bool)
                done[idx] = False
                flows = flows[done[flows]]
            self._account(shape, flows)
            if idx.size:
                self._materialize(shape.classes(idx, rem), block.group, now)
            listed = broken.get(fid)
            if listed is None:
                broken[fid] = (block, [c])
            else:
                listed[1].append(c)
        if not freed:
            return
        self._set_owner(np.fromiter(chain.from_iterable(freed), dtype=np.int64), -1)
        for fid, (block, comps) in broken.items():
            before = block.finish
            block.settle_many(comps)
            finish = block.finish
            if not any(block.alive):
                del blocks[fid]
                block.finish = float("nan")
                block.group.outstanding -= 1  # its flows are all ordinary now (never 0 here)
            elif finish != before:
                heapq.heappush(self._heap, (finish, fid, block))

    def _set_owner(self, links: np.ndarray, fid: int) -> None:
        """Mark ``links`` held by block ``fid`` (-1: by none), and ``_owned`` with them."""
        self._owner[links] = fid
        self._owned[links] = 1 if fid >= 0 else 0

    def _done_per_link(self) -> np.ndarray:
        """Bytes per link carried by finished flows (the pending chunks folded in)."""
        if self._link_done:
            links = np.concatenate([links for links, _ in self._link_done])
            nbytes = np.concatenate([nbytes for _, nbytes in self._link_done])
            self._link_done_sum += np.bincount(links, weights=nbytes, minlength=self._n_links)
            self._link_done = []
            self._link_done_entries = 0
        return self._link_done_sum

    def _done(self, links: np.ndarray, nbytes: np.ndarray) -> None:
        """Record bytes carried by finished flows (per entry: a link and its flow's bytes);
        folded per link once the pending chunks are many or long."""
        self._link_done.append((links, nbytes))
        self._link_done_entries += links.size
        if len(self._link_done) > 4096 or self._link_done_entries > 2 * self._n_links + 65536:
            self._done_per_link()

    def _account(self, shape: PhaseShape, flows: np.ndarray) -> None:
        """Count flows of a phase that finished inside a block."""
        if not flows.size:
            return
        ptr, links = csr_take(shape.flow_ptr, shape.flow_links, flows)
        sizes = shape.sizes[flows]
        self._done(links, np.repeat(sizes, np.diff(ptr)))
        self.stats.bytes_delivered += float(sizes.sum())
        self.stats.flows_finished += int(flows.size)

    def _complete_blocks(self, blocks: list[SoloBlock]) -> None:
        for block in blocks:
            del self._blocks[block.fid]
            shape = block.shape
            if all(block.alive):
                self._set_owner(shape.links, -1)
                self._done(*shape.link_totals())
                self.stats.bytes_delivered += shape.total_bytes
                self.stats.flows_finished += shape.n_flows
                continue
            mask = self._owner[shape.links] == block.fid
            self._set_owner(shape.links[mask], -1)
            # the components still alive delivered all their flows' bytes (broken ones were
            # accounted as they broke)
            links, nbytes, delivered, n_flows = shape.alive_totals(block.alive)
            self._done(links, nbytes)
            self.stats.bytes_delivered += delivered
            self.stats.flows_finished += n_flows
        for block in blocks:
            group = block.group
            group.outstanding -= 1
            if group.outstanding == 0:
                group.event.succeed()

    def _admit(self) -> None:
        """Enter the flows started this instant; they seed the next rate computation."""
        now = self.env._now
        if self._new and not self._n_reserved and not self._blocks and _few_plain(self._new):
            # (no link held or reserved to check, and a few entries: counted one by one, without
            # the arrays below; 99% of the send/recv flows of a 128K ring-attention step)
            busy = self._busy
            for f in self._new:
                for link in f.links:
                    busy[link] += 1
        elif self._new:
            n_new = len(self._new)
            links, counts = link_counts(self._new)
            if self._n_reserved:  # reserved links: their holders put what they hold on the network first
                self._claim(links)
            if self._blocks:
                # New flows on links a block holds: that block's component becomes ordinary flows.
                held = self._owner[links]
                clash = held >= 0
                if _count_nonzero(clash):
                    self._break(held[clash], links[clash], now)
            if len(self._new) != n_new:  # flows of broken components joined them
                links, counts = link_counts(self._new)
            self._count_busy(links, 1, counts)
        flows, on_link, seeds = self._flows, self._on_link, self._seeds
        get = on_link.get
        for f in self._new:
            f.t_ref = now
            fid = f.fid
            flows[fid] = f
            if not f.ulinks:  # a flow over no link runs at its cap and never shares anything
                self._set_rate(f, f.cap, now)
                continue
            seeds.append(f)
            if f.n > LARGE_COMPONENT_FLOWS:
                self._large_on_link[f.uarr] += 1
                self._n_large += 1
                continue
            for link in f.ulinks:
                users = get(link)
                if users is None:
                    on_link[link] = {fid: f}
                else:
                    users[fid] = f
        mirror = self._mirror
        if mirror is not None:
            if mirror.backlog() > 4 * len(flows) + 4096:  # no large component for a long while
                self._mirror = None
            else:
                mirror.added.extend(self._new)
        self._new = []

    def _count_busy(self, links: np.ndarray, delta: int, counts: np.ndarray | None = None) -> None:
        """Add ``delta`` (times ``counts``: members per link) to the count of active flows on each
        of ``links`` (repeats counted): unbuffered per entry for a few entries, one bincount over
        the fabric for many."""
        if links.size * 8 < self._n_links:
            np.add.at(self._busy, links, delta if counts is None else delta * counts)
        elif counts is None:
            self._busy += delta * np.bincount(links, minlength=self._n_links)
        else:
            self._busy += delta * np.bincount(links, weights=counts, minlength=self._n_links).astype(np.int64)

    def _set_rate(self, f: ActiveFlow, rate: float, now: float) -> None:
        """Change a flow's rate from ``now`` on; its new finish time goes on the heap."""
        if now != f.t_ref:
            f.rem = max(f.rem - f.rate * (now - f.t_ref), 0.0)
            f.t_ref = now
        f.rate = rate
        f.finish = now + f.rem / rate
        heapq.heappush(self._heap, (f.finish, f.fid, f))
        if self._mirror is not None and f.slots is not None:
            self._mirror.rate[f.slots] = rate

    def _on_start(self, _event: simpy.Event) -> None:
        self._update()

    def _on_timer(self, event: simpy.Event) -> None:
        if event._value == self._timer_token:
            self._timer_at = None
            self._update()

    def _component(self) -> list[ActiveFlow] | None:
        """Active flows connected (through shared links) to the new flows and to the links that
        finished flows left, in start order; None when that is over LARGE_COMPONENT_FLOWS flows
        (members of classes counted one by one)."""
        n_active = len(self._flows)
        seen_links = self._dirty
        if len(seen_links) > DIRTY_FILTER_LINKS:
            # a class that finished left hundreds of links, most of them now empty: keep those
            # that active flows still cross (_busy), in one pass instead of a lookup per link
            dirty = np.fromiter(seen_links, dtype=np.int64, count=len(seen_links))
            stack = dirty[self._busy[dirty] > 0].tolist()
            seen_links = set(stack)
        else:
            seen_links = set(seen_links)
            stack = list(seen_links)
        members: dict[int, ActiveFlow] = {f.fid: f for f in self._seeds}
        n_members = sum([f.n for f in self._seeds])
        if n_members > LARGE_COMPONENT_FLOWS:
            return None
        if len(members) < n_active:
            for f in self._seeds:
                for link in f.ulinks:
                    if link not in seen_links:
                        seen_links.add(link)
                        stack.append(link)
        if self._grow_component(members, n_members, stack, seen_links, n_active) is None:
            return None
        if len(members) == n_active:  # everything is connected: no need to sort
            return list(self._flows.values())
        return [members[fid] for fid in sorted(members)]

    def _refresh_rates(self) -> None:
        """New max-min rates for the components touched since the last refresh."""
        if not self._dirty and not self._seeds:
            return
        if not self._flows:
            self._dirty = set()
            return
        self.stats.recomputes += 1
        flows = self._component()
        self._dirty = set()
        self._seeds = []
        now = self.env._now
        if flows is None:
            self._refresh_all(now)
            return
        if not flows:
            return
        if len(flows) == 1 and flows[0].n == 1:  # alone on its links: the slowest link or its cap
            f = flows[0]
            r = min(f.cap, min(self._capacity_list[link] for link in f.links))
            if r != f.rate:
                self._set_rate(f, r, now)
            return
        # one row per member flow (a class's members are solved one by one)
        plain = all(f.ptr is None for f in flows)
        if plain:
            routes = [f.links for f in flows]
            caps = [f.cap for f in flows]
        else:
            routes = [m for f in flows for m in f.members()]
            caps = [f.cap for f in flows for _ in range(f.n)]
        rates = self._component_rates(routes, caps)
        if plain:
            for f, r in zip(flows, rates):
                if r != f.rate:
                    self._set_rate(f, r, now)
            return
        k = 0
        for f in flows:
            n = f.n  # (a class that splits has fewer members after)
            if n == 1:
                r = rates[k]
                if r != f.rate:
                    self._set_rate(f, r, now)
            else:
                self._class_rates(f, rates[k:k + n], now)
            k += n

    def _component_rates(self, routes: list[Any], caps: list[float]) -> list[float]:
        """Max-min rates of one component's flows (each a tuple of links, and its cap). They are
        a function of the routes and caps alone (the capacities are fixed), so each outcome is
        kept by them (``_component_known``): the same components meet again every micro-batch
        (GPT-3 175B tp4 pp4 dp64 ZeRO-2: 58 distinct among 40,179 solves, a TP ring beside the
        DP ReduceScatter's flows on the node's NVLink), and then cost one dict lookup."""
        key = (tuple(routes), tuple(caps))
        known = self._component_known.get(key)
        if known is not None:
            return known
        e_flow = [i for i, links in enumerate(routes) for _ in links]
        e_link = [link for links in routes for link in links]
        if len(e_link) <= SMALL_COMPONENT_ENTRIES:
            rates = max_min_rates_small(e_flow, e_link, len(caps), self._capacity_list, caps)
        else:
            rates = max_min_rates(np.array(e_flow, dtype=np.int64), np.array(e_link, dtype=np.int64), len(caps),
                                  self.capacity_Bps, np.array(caps)).tolist()
        if len(self._component_known) >= CLASS_LEVEL_KNOWN:
            self._component_known.clear()
        self._component_known[key] = rates
        return rates

    def _class_rates(self, f: ActiveFlow, rates: Any, now: float) -> None:
        """Give class ``f`` its members' new rates: one rate if they all got the same, else
        the class splits into classes of equal rate."""
        rates = np.asarray(rates, dtype=np.float64)
        r = float(rates[0])
        if (rates == r).all():
            if r != f.rate:
                self._set_rate(f, r, now)
        else:
            self._split(f, rates, now)

    def _split(self, f: ActiveFlow, rates: np.ndarray, now: float) -> None:
        """Split class ``f`` by its members' new ``rates``: the members sharing the first
        member's rate stay in ``f``, each other rate becomes a new class with the same bytes
        left, in the same completion group."""
        assert f.ptr is not None
        if now != f.t_ref:
            f.rem = max(f.rem - f.rate * (now - f.t_ref), 0.0)
            f.t_ref = now
        values, first, inverse = np.unique(rates, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
        groups = np.split(np.argsort(inverse, kind="stable"), np.cumsum(np.bincount(inverse))[:-1])
        on_link, fid = self._on_link, f.fid
        if f.n > LARGE_COMPONENT_FLOWS:
            self._large_on_link[f.uarr] -= 1
            self._n_large -= 1
        else:
            for link in f.ulinks:
                del on_link[link][fid]
        mirror = self._mirror
        slots, ptr, links = f.slots, f.ptr, f.links
        for u in np.argsort(first, kind="stable").tolist():
            idx = groups[u]
            x = float(values[u])
            sub_ptr, sub_links = csr_take(ptr, links, idx)
            if idx[0] == 0:
                g = f
                g.set_members(sub_ptr, sub_links)
            else:
                g = ActiveFlow(self._next_fid, sub_links, f.size, f.cap, f.group, sub_ptr)
                self._next_fid += 1
                g.rem, g.t_ref, g.rate = f.rem, now, float("nan")  # nan: always given its rate below
                self._flows[g.fid] = g
                f.group.outstanding += 1
                if mirror is not None and slots is None:
                    mirror.added.append(g)  # f is there too, not yet synced
            if isinstance(slots, np.ndarray):
                g.slots = slots[idx]
                if mirror is not None:
                    mirror.owner[g.slots] = g.fid
            if g.n > LARGE_COMPONENT_FLOWS:
                self._large_on_link[g.uarr] += 1
                self._n_large += 1
            else:
                for link in g.ulinks:
                    users = on_link.get(link)
                    if users is None:
                        on_link[link] = {g.fid: g}
                    else:
                        users[g.fid] = g
            if x != g.rate:
                self._set_rate(g, x, now)

    def _class_level_rates(self, now: float) -> bool:
        """Re-share every active flow class by class, if that is exact; False (nothing done)
        where it is not.

        The water-filling runs on the classes (``max_min_rates`` with each class-link entry
        weighted by the members crossing the link), a few hundred entries where the members
        have tens of thousands. Its answer, every member at its class's rate, is then checked
        against the characterisation of the max-min fair allocation (Bertsekas & Gallager,
        *Data Networks*, 2nd ed., §6.5.2): feasible, and every flow either at its cap or with a
        *bottleneck*, a saturated link on which no flow has a higher rate. That allocation is
        unique, so if every member has one the answer is exact. A class whose members all
        crossed some bottleneck link at the last check (``cover``) and still have them needs no
        member-level look; otherwise its member entries are scanned. When some member has no
        bottleneck (the classes are no longer interchangeable: a newcomer loads some members'
        links and not others'), the caller solves member by member and splits the classes.

        Both the rates and the check's verdict are a function of the classes' link tables and
        caps alone, so each outcome is kept by those (``_class_level_known``): the same classes
        meet again every micro-batch, and then cost one dict lookup."""
        if not any(f.ptr is not None for f in self._flows.values()):
            return False  # nothing folded: the member-level computation is the same one
        flows = [f for f in self._flows.values() if f.ulinks]
        # The outcome depends on the classes' link tables and caps alone, in this order: a
        # class by its table's identity (kept alive in the entry), a single flow by its links.
        key = tuple([(f.cap, f.links if f.ptr is None else id(f.uarr)) for f in flows])
        known = self._class_level_known.get(key)
        if known is None:
            known = self._class_level_solve(flows)
            if len(self._class_level_known) >= CLASS_LEVEL_KNOWN:
                self._class_level_known.clear()
            self._class_level_known[key] = known
        x = known[0]
        if x is None:
            return False
        for f, r in zip(flows, x):
            if r != f.rate:
                self._set_rate(f, r, now)
        return True

    def _class_level_solve(self, flows: list[ActiveFlow]) -> tuple[list[float] | None, list[np.ndarray]]:
        """:meth:`_class_level_rates`' water-filling and exactness check for ``flows``: their
        rates, or None where some member has no bottleneck; and the classes' tables (held so
        that their identities, the key of the result, stay theirs)."""
        k = len(flows)
        uarrs: list[np.ndarray] = []
        weights: list[np.ndarray] = []
        for f in flows:
            if f.uarr is None or f.weight is None:  # a single flow
                f.uarr = np.array(f.links, dtype=np.int64)
                f.weight = np.ones(f.uarr.size)
            uarrs.append(f.uarr)
            weights.append(f.weight)
        lengths = np.fromiter(map(len, uarrs), dtype=np.int64, count=k)
        c_link = np.concatenate(uarrs)
        c_w = np.concatenate(weights)
        cls = np.repeat(np.arange(k, dtype=np.int64), lengths)
        caps = np.fromiter((f.cap for f in flows), dtype=np.float64, count=k)
        used, c_local = self._number_links(c_link)
        capacity = self.capacity_Bps[used]
        x = max_min_rates(cls, c_local, k, capacity, caps, weight_of_entry=c_w)
        xe = x[cls]
        load = np.bincount(c_local, weights=xe * c_w, minlength=used.size)
        highest = np.zeros(used.size)
        np.maximum.at(highest, c_local, xe)
        keep = 1.0 - CHECK_TOL
        bottleneck = (load >= capacity * keep)[c_local] & (xe >= highest[c_local] * keep)
        capped = x >= caps * keep
        if not (capped | (np.bincount(cls[bottleneck], minlength=k) > 0)).all():
            return None, uarrs
        ends = np.cumsum(lengths)
        for i, f in enumerate(flows):
            if f.n == 1 or capped[i] or f.upos is None or f.ptr is None:
                continue
            b = bottleneck[ends[i] - lengths[i]:ends[i]]
            if f.cover is not None and not (f.cover & ~b).any():
                continue  # the links that covered every member are bottlenecks still
            if not np.logical_or.reduceat(b[f.upos], f.ptr[:-1]).all():
                return None, uarrs
            f.cover = b
        return x.tolist(), uarrs

    def _number_links(self, links: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The distinct ``links`` and each entry's number among them: ``np.unique(links,
        return_inverse=True)`` up to the links' order, without its sort (a scratch array over the
        fabric: each link keeps the index of one of its entries, whichever the write left, and
        that entry stands for it). The water-filling and the bottleneck check sum and compare
        per link, each link's entries in entry order, so numbering the links differently
        changes no result."""
        slot = self._link_slot
        at = np.arange(links.size, dtype=np.int64)
        slot[links] = at
        used = links[slot[links] == at]
        slot[used] = np.arange(used.size, dtype=np.int64)
        return used, slot[links]

    def _refresh_all(self, now: float) -> None:
        """Re-share every active flow with the vectorised water-filling (components are
        independent, so this gives each component what a per-component recompute would):
        class by class where that is exact (:meth:`_class_level_rates`), else member by
        member, splitting the classes whose members' rates differ."""
        if self._class_level_rates(now):
            self.stats.class_level += 1
            return
        if self._mirror is None:
            self._mirror = Mirror(self._flows.values())
        mirror = self._mirror
        mirror.sync(self._flows.values())
        entries = mirror.alive[mirror.m_slot]
        m_slot, m_link = mirror.m_slot[entries], mirror.m_link[entries]
        # The active members' slots, ascending, and each entry's position among them: over the
        # live entries, not over every slot handed out.
        active = _distinct(m_slot)
        rates = max_min_rates(np.searchsorted(active, m_slot), m_link, active.size, self.capacity_Bps,
                              mirror.cap[active])
        changed = np.flatnonzero(rates != mirror.rate[active])
        slots = active[changed]
        new_rates = rates[changed]
        mirror.rate[slots] = new_rates
        # _set_rate for each changed flow, its mirror write done above for all of them at once
        flows, heap, push = self._flows, self._heap, heapq.heappush
        classes: set[int] = set()
        for fid, r in zip(mirror.owner[slots].tolist(), new_rates.tolist()):
            if fid in classes:  # given its members' rates already (and maybe split since)
                continue
            f = flows[fid]
            if f.n != 1:
                classes.add(fid)
                self._class_rates(f, mirror.rate[f.slots], now)
                continue
            if now != f.t_ref:
                f.rem = max(f.rem - f.rate * (now - f.t_ref), 0.0)
                f.t_ref = now
            f.rate = r
            f.finish = finish = now + f.rem / r
            push(heap, (finish, fid, f))

    def _update(self) -> None:
        """Complete the flows due now, admit the new ones, re-share, and set the next timer."""
        self.stats.events += 1
        self._update_pending = False
        now = self.env._now
        due = now + REL_TOL * now + ABS_TOL_S
        heap = self._heap
        finished: list[ActiveFlow] = []
        blocks: list[SoloBlock] = []
        while heap and heap[0][0] <= due:
            finish, fid, f = heapq.heappop(heap)
            if f.finish != finish:
                continue
            if self._flows.get(fid) is f:
                f.finish = float("nan")  # a duplicate heap entry (same finish pushed twice) is stale
                finished.append(f)
            elif self._blocks.get(fid) is f:
                f.finish = float("nan")
                blocks.append(f)
        if blocks:
            self._complete_blocks(blocks)
        if finished:
            self._complete(finished)
        self._admit()
        self._refresh_rates()
        while heap:
            finish, fid, f = heap[0]
            if f.finish == finish and (self._flows.get(fid) is f or self._blocks.get(fid) is f):
                break
            heapq.heappop(heap)
        else:
            return
        # One live timer, for the earliest finish; a timer already set for that instant stays.
        if self._timer_at != finish:
            self._timer_token += 1
            self._timer_at = finish
            timer = Timeout(self.env, max(finish - now, 0.0), self._timer_token)
            timer.callbacks.append(self._on_timer)

    def _complete(self, finished: list[ActiveFlow]) -> None:
        """Remove finished flows and fire the events of groups with nothing left."""
        delivered = 0.0
        flows, on_link = self._flows, self._on_link
        gone_links: list[int] = []
        # each entry's bytes, listed as the entries are (a flow's size once per link it crossed:
        # cheaper than an np.repeat of the sizes for the few flows that end at once)
        entry_bytes: list[float] = []
        extend, extend_bytes = gone_links.extend, entry_bytes.extend
        n_finished = len(finished)
        for f in finished:
            fid = f.fid
            del flows[fid]
            size = f.size
            if f.ptr is None:
                delivered += size
                links = f.links
                extend(links)
                extend_bytes([size] * len(links))
            else:  # a class: its members' bytes and counts per distinct link
                delivered += size * f.n
                n_finished += f.n - 1
                self._dirty.update(f.ulinks)
                if f.uarr is not None and f.weight is not None:
                    self._done(f.uarr, f.weight * size)
                    self._count_busy(f.uarr, -1, f.weight.astype(np.int64))
                    if f.n > LARGE_COMPONENT_FLOWS:
                        self._large_on_link[f.uarr] -= 1
                        self._n_large -= 1
                        continue
            for link in f.ulinks:
                users = on_link[link]
                del users[fid]
                if not users:
                    del on_link[link]
        if gone_links:
            self._dirty.update(gone_links)
            gone = np.array(gone_links, dtype=np.int64)
            self._count_busy(gone, -1)
            self._done(gone, np.array(entry_bytes, dtype=np.float64))
        if self._mirror is not None:
            self._mirror.gone.extend(finished)
        self.stats.bytes_delivered += delivered
        self.stats.flows_finished += n_finished
        for f in finished:
            group = f.group
            group.outstanding -= 1
            if group.outstanding == 0:
                group.event.succeed()

"""Phases of flows timed in closed form while nothing else touches their links.

A collective's phase (``CollectivePlan.phases``) is a set of flows started together. Its flow-link
graph falls apart into connected components: the hops of a ring are each alone on their links
(or joined by a shared NIC or spine link), so a 512-rank ring is hundreds of components of one or
a few flows. Max-min fairness decomposes over components (``links.FlowNetwork``), so while no
other flow crosses a component's links, the component evolves exactly as it would alone on an
empty network: its *solo trajectory*, which depends only on the phase and is computed once per
phase. ``FlowNetwork.transfer_phase`` runs such components as one heap entry instead of one
flow each; a flow that arrives on one of their links turns that component back into ordinary
flows, with the bytes its trajectory says they still had (``remaining``), and the network goes
on flow by flow from there. Nothing is approximated: the rates are those the flow-by-flow
network computes, up to float rounding in the order of operations.
"""

from __future__ import annotations

from dataclasses import InitVar, dataclass, field
from typing import Any, Iterator, Sequence

import numpy as np

from simulator.costs.flow_patterns import Phase, link_loads
from simulator.replay.fair_share import max_min_rates, max_min_rates_small
from simulator.replay.flow_records import DistinctLinks, checked_flows, csr_take, distinct_links

# As links.FlowNetwork: flows whose finish times differ by less than this fraction (plus an
# absolute femtosecond) complete together.
REL_TOL = 1e-9
ABS_TOL_S = 1e-15
SMALL_COMPONENT_ENTRIES = 160

# A phase shape keeps its member sets' link tables up to this many times its own entries
# (PhaseShape._members_table), then starts over.
TABLE_CACHE_FACTOR = 8

# Flows grouped into classes in plain Python up to this many (PhaseShape._few_classes); numpy's
# unique, argsort and split cost more below it.
SMALL_CLASSES = 16


@dataclass
class Segment:
    """From ``t`` (seconds after the phase started) on, flows ``alive`` (indices into the
    phase's flows) had ``rem`` bytes left and move at ``rate`` until the next segment."""

    t: float
    alive: list[int]
    rem: list[float]
    rate: list[float]
    _arrays: tuple[np.ndarray, np.ndarray, np.ndarray] | None = field(default=None, repr=False, compare=False)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``alive``, ``rem`` and ``rate`` as numpy arrays (made on first use)."""
        if self._arrays is None:
            self._arrays = (np.asarray(self.alive, dtype=np.int64), np.asarray(self.rem, dtype=np.float64),
                            np.asarray(self.rate, dtype=np.float64))
        return self._arrays


@dataclass
class Component:
    """Flows of a phase joined by shared links, with the links they cross and their solo
    trajectory (``duration``: when the last of them finishes alone)."""

    flows: list[int]
    links: tuple[int, ...]
    duration: float
    segments: list[Segment]
    # the segments' times and bytes are this factor times those stored (a phase scaled from
    # another, scaled_shape): the rates are the same
    scale: float = 1.0
    _flow_array: np.ndarray | None = field(default=None, repr=False, compare=False)

    def _segment_index(self, elapsed: float) -> tuple[int, float]:
        """The index of the segment in force ``elapsed`` s after the start, and that time on
        the stored (unscaled) clock."""
        k = self.scale
        e = elapsed / k if k != 1.0 else elapsed
        segments = self.segments
        j = 0
        while j + 1 < len(segments) and segments[j + 1].t <= e:
            j += 1
        return j, e

    def _segment_at(self, elapsed: float) -> tuple[Segment, float]:
        """The segment in force ``elapsed`` s after the start, and that time on the stored
        (unscaled) clock."""
        j, e = self._segment_index(elapsed)
        return self.segments[j], e

    def segment_window(self, elapsed: float) -> tuple[Segment | None, float]:
        """The segment in force ``elapsed`` s after the start (None once the component has
        ended) and until when, in seconds after the start (``inf`` after the end: nothing
        changes any more)."""
        if elapsed >= self.duration:
            return None, float("inf")
        j, _ = self._segment_index(elapsed)
        segments = self.segments
        return segments[j], (segments[j + 1].t * self.scale if j + 1 < len(segments) else self.duration)

    def remaining(self, elapsed: float) -> list[tuple[int, float]]:
        """(flow index, bytes left) of the flows still moving ``elapsed`` s after the start."""
        if elapsed >= self.duration:
            return []
        k = self.scale
        seg, e = self._segment_at(elapsed)
        dt = e - seg.t
        if k == 1.0:
            return [(i, max(r - rate * dt, 0.0)) for i, r, rate in zip(seg.alive, seg.rem, seg.rate)]
        return [(i, max(r - rate * dt, 0.0) * k) for i, r, rate in zip(seg.alive, seg.rem, seg.rate)]

    def remaining_arrays(self, elapsed: float) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`remaining` as arrays (flow indices, bytes left): the same operations, element
        by element."""
        if elapsed >= self.duration:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        k = self.scale
        seg, e = self._segment_at(elapsed)
        alive, rem, rate = seg.arrays()
        left = np.maximum(rem - rate * (e - seg.t), 0.0)
        return alive, (left if k == 1.0 else left * k)

    def flow_array(self) -> np.ndarray:
        """``flows`` as an array."""
        if self._flow_array is None:
            self._flow_array = np.asarray(self.flows, dtype=np.int64)
        return self._flow_array


class LoneComponents(Sequence[Component]):
    """The components of a phase none of whose links two flows cross: component ``c`` is flow
    ``c`` alone, at its alone rate (``rates``: its slowest link or its cap) from start to end.
    Held as arrays, each :class:`Component` made on first access (and kept): a DP ring over 784
    nodes is 784 such components, and a run mostly needs only their durations
    (``PhaseShape.comp_durations``), not an object each."""

    __slots__ = ("_ptr", "_links", "_sizes", "_rates", "_made")

    def __init__(self, ptr: np.ndarray, links: np.ndarray, sizes: np.ndarray, rates: np.ndarray) -> None:
        self._ptr, self._links, self._sizes, self._rates = ptr, links, sizes, rates  # links: sorted per flow
        self._made: dict[int, Component] = {}

    def __len__(self) -> int:
        return int(self._sizes.size)

    def __getitem__(self, c: int) -> Component:  # type: ignore[override]
        got = self._made.get(c)
        if got is None:
            if not 0 <= c < self._sizes.size:
                raise IndexError(c)
            flows = [c]
            size, rate = float(self._sizes[c]), float(self._rates[c])
            links = tuple(self._links[self._ptr[c]:self._ptr[c + 1]].tolist())
            got = self._made[c] = Component(flows, links, size / rate, [Segment(0.0, flows, [size], [rate])])
        return got

    def __iter__(self) -> Iterator[Component]:
        return (self[c] for c in range(len(self)))


class ScaledComponents(Sequence[Component]):
    """``base``'s components with their times and bytes scaled by ``k`` (:func:`scaled_shape`),
    each made on first access (and kept), sharing the base's flows, links and segments."""

    __slots__ = ("_base", "_k", "_made")

    def __init__(self, base: Sequence[Component], k: float) -> None:
        self._base, self._k = base, k
        self._made: dict[int, Component] = {}

    def __len__(self) -> int:
        return len(self._base)

    def __getitem__(self, c: int) -> Component:  # type: ignore[override]
        got = self._made.get(c)
        if got is None:
            b, k = self._base[c], self._k
            got = self._made[c] = Component(b.flows, b.links, b.duration * k, b.segments, b.scale * k)
        return got

    def __iter__(self) -> Iterator[Component]:
        return (self[c] for c in range(len(self)))


@dataclass(frozen=True, slots=True)
class FlowClass:
    """Flows of a phase that start together with the same size, bytes left and cap: their
    links as one row-compressed table (``ptr`` None: a single flow, ``links`` its tuple)."""

    size: float
    rem: float
    cap: float
    ptr: np.ndarray | None
    links: Any
    distinct: DistinctLinks | None = None  # distinct_links(links), for a class of several flows


@dataclass
class PhaseShape:
    """A phase decomposed once: its flows as (links, bytes, cap), its components, and per link
    it crosses the component that holds it."""

    specs: Sequence[tuple[tuple[int, ...], float, float]]  # the phase's checked flows (links, bytes, cap)
    components: Sequence[Component]
    links: np.ndarray  # every link the phase crosses, sorted
    component_of_link: np.ndarray  # aligned with links
    linkless: list[int]  # components over no link (capped flows): never meet anything
    duration: float = 0.0  # when the last component ends, alone
    flow_links: np.ndarray = field(init=False)  # every (flow, link) entry's link ...
    flow_bytes: np.ndarray = field(init=False)  # ... and that flow's bytes (link accounting)
    total_bytes: float = 0.0
    # per (flow, link) entry the component of its flow, and per component its bytes and flows:
    # what a block whose components were not all alive to the end delivered, in a few numpy
    # passes (FlowNetwork._complete_blocks)
    entry_comp: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    comp_bytes: np.ndarray = field(default_factory=lambda: np.zeros(0))
    comp_flows: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    # per component its duration alone (SoloBlock.settle); None: read from the components
    comp_durations: np.ndarray | None = None
    # (flow_ptr, flow_links, sizes, caps) when the caller has them as arrays already; None:
    # read from the specs
    table: InitVar[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None] = None
    # per flow: where its entries start in flow_links (n + 1 offsets), its size and cap
    flow_ptr: np.ndarray = field(init=False)
    sizes: np.ndarray = field(init=False)
    caps: np.ndarray = field(init=False)
    # per component, its flows grouped as classes at the start (FlowNetwork._materialize)
    start_classes: dict[int, list[FlowClass]] = field(init=False)
    # member sets' link tables (csr_take, distinct_links) by the members' indices, and their
    # entries in all (:meth:`_members_table`)
    _tables: dict[bytes, tuple[np.ndarray, np.ndarray, DistinctLinks]] = field(init=False)
    _table_entries: int = field(init=False)
    # alive_totals by pattern of live components, and their entries in all
    _alive_totals: dict[tuple[bool, ...], tuple[np.ndarray, np.ndarray, float, int]] = field(init=False)
    _alive_entries: int = field(init=False)
    _link_totals: tuple[np.ndarray, np.ndarray] | None = field(init=False)
    _component_at: dict[int, int] | None = field(init=False)

    def __post_init__(self, table: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None) -> None:
        if self.comp_durations is None:
            self.comp_durations = np.fromiter((c.duration for c in self.components), dtype=np.float64,
                                              count=len(self.components))
        self.duration = float(self.comp_durations.max()) if self.comp_durations.size else 0.0
        if table is None:
            ptr, links, sizes, caps = _spec_table(self.specs)
        else:
            ptr, links, sizes, caps = table
        self.flow_ptr, self.flow_links, self.sizes, self.caps = ptr, links, sizes, caps
        self.flow_bytes = np.repeat(self.sizes, np.diff(self.flow_ptr))
        self.total_bytes = float(sum(self.sizes.tolist()))  # in flow order, as the flows add up
        self.start_classes = {}
        self._tables = {}
        self._table_entries = 0
        self._alive_totals = {}
        self._alive_entries = 0
        self._link_totals = None
        self._component_at = None

    def component_at(self, link: int) -> int:
        """The component that holds ``link`` (one the phase crosses): ``component_of_link`` by
        link id, as a dict built on first use (a newcomer breaking a ring hop asks for a few)."""
        return self.components_by_link()[link]

    def components_by_link(self) -> dict[int, int]:
        """:meth:`component_at` as the dict itself (link -> component), for a caller asking
        for many links."""
        got = self._component_at
        if got is None:
            got = self._component_at = dict(zip(self.links.tolist(), self.component_of_link.tolist()))
        return got

    def link_totals(self) -> tuple[np.ndarray, np.ndarray]:
        """(links, bytes): every link the phase's flows cross and the bytes they carry over it,
        summed once (what a block that ran to its end delivered, per link)."""
        if self._link_totals is None:
            # sized by the phase's entries, not by the fabric's link ids (~800k at 100k GPUs)
            self._link_totals = link_loads(self.flow_links, self.flow_bytes)
        return self._link_totals

    def alive_totals(self, alive: list[bool]) -> tuple[np.ndarray, np.ndarray, float, int]:
        """What the components flagged ``alive`` delivered by the end: their entries' links and
        bytes, their bytes and their flows. Kept by pattern (the same components break every
        micro-batch), up to TABLE_CACHE_FACTOR times the phase's entries."""
        key = tuple(alive)
        got = self._alive_totals.get(key)
        if got is None:
            mask = np.asarray(alive, dtype=bool)
            entries = mask[self.entry_comp]
            got = (self.flow_links[entries], self.flow_bytes[entries], float(self.comp_bytes[mask].sum()),
                   int(self.comp_flows[mask].sum()))
            if self._alive_entries + got[0].size > TABLE_CACHE_FACTOR * self.flow_links.size:
                self._alive_totals.clear()
                self._alive_entries = 0
            self._alive_totals[key] = got
            self._alive_entries += got[0].size
        return got

    def classes(self, idx: np.ndarray, rem: np.ndarray) -> list[FlowClass]:
        """Flows ``idx`` with ``rem`` bytes left each, grouped by (size, bytes left, cap): the
        flows of each group move in lockstep until their rates differ."""
        if idx.size <= SMALL_CLASSES:
            return self._few_classes(idx, rem)
        sizes, caps = self.sizes[idx], self.caps[idx]
        if (sizes == sizes[0]).all() and (caps == caps[0]).all():
            _, first, inverse = np.unique(rem, return_index=True, return_inverse=True)
        else:
            key = np.stack([sizes, rem, caps], axis=1)
            _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
        perm = np.argsort(inverse, kind="stable")
        groups = np.split(perm, np.cumsum(np.bincount(inverse))[:-1])
        out: list[FlowClass] = []
        for u in np.argsort(first, kind="stable").tolist():
            members = idx[groups[u]]
            i = int(members[0])
            size, cap, r = self.specs[i][1], self.specs[i][2], float(rem[groups[u][0]])
            if members.size == 1:
                out.append(FlowClass(size, r, cap, None, self.specs[i][0]))
            else:
                out.append(FlowClass(size, r, cap, *self._members_table(members)))
        return out

    def _few_classes(self, idx: np.ndarray, rem: np.ndarray) -> list[FlowClass]:
        """:meth:`classes` of a few flows in plain Python: the same groups (equal size, bytes
        left and cap), in order of their first flow, members in ``idx`` order. A component of
        a DP ring's hop that a TP collective meets on NVLink holds its two channels' flows,
        for which numpy's calls cost more than the grouping."""
        specs = self.specs
        groups: dict[tuple[float, float, float], list[int]] = {}
        for i, r in zip(idx.tolist(), rem.tolist()):
            spec = specs[i]
            key = (spec[1], r, spec[2])
            got = groups.get(key)
            if got is None:
                groups[key] = [i]
            else:
                got.append(i)
        out: list[FlowClass] = []
        for (size, r, cap), members in groups.items():
            if len(members) == 1:
                out.append(FlowClass(size, r, cap, None, specs[members[0]][0]))
            else:
                out.append(FlowClass(size, r, cap, *self._members_table(np.array(members, dtype=np.int64))))
        return out

    def _members_table(self, members: np.ndarray) -> tuple[np.ndarray, np.ndarray, DistinctLinks]:
        """The link table of flows ``members`` and its distinct links, kept by member set: a
        phase's components break again and again into the same classes (an All-to-All's
        members met by the same traffic each micro-batch), and the table of tens of thousands
        of entries costs far more than hashing the member indices. Never written to by its
        users (the classes' arrays are only read or replaced). At most
        TABLE_CACHE_FACTOR times the phase's entries are kept."""
        key = members.tobytes()
        got = self._tables.get(key)
        if got is None:
            ptr, links = csr_take(self.flow_ptr, self.flow_links, members)
            got = (ptr, links, distinct_links(links))
            if self._table_entries + links.size > TABLE_CACHE_FACTOR * self.flow_links.size:
                self._tables.clear()
                self._table_entries = 0
            self._tables[key] = got
            self._table_entries += links.size
        return got

    def component_classes(self, c: int) -> list[FlowClass]:
        """:meth:`classes` of component ``c``'s flows at the start (worked out once)."""
        got = self.start_classes.get(c)
        if got is None:
            idx = np.asarray(self.components[c].flows, dtype=np.int64)
            got = self.start_classes[c] = self.classes(idx, self.sizes[idx])
        return got

    @property
    def n_flows(self) -> int:
        return len(self.specs)


def _solo(flows: list[int], specs: Sequence[tuple[tuple[int, ...], float, float]], capacity: Sequence[float],
          capacity_arr: np.ndarray) -> tuple[float, list[Segment]]:
    """Water-fill the component alone, advance to the next finish, repeat (as FlowNetwork does)."""
    if len(flows) == 1:
        links, size, cap = specs[flows[0]]
        alone = min(cap, min(capacity[link] for link in links)) if links else cap
        return size / alone, [Segment(0.0, list(flows), [size], [alone])]
    t = 0.0
    alive = list(flows)
    rem = [specs[i][1] for i in alive]
    segments: list[Segment] = []
    while alive:
        e_flow = [k for k, i in enumerate(alive) for _ in specs[i][0]]
        e_link = [link for i in alive for link in specs[i][0]]
        caps = [specs[i][2] for i in alive]
        if len(e_link) <= SMALL_COMPONENT_ENTRIES:
            rate = max_min_rates_small(e_flow, e_link, len(alive), capacity, caps)
        else:
            rate = max_min_rates(np.array(e_flow, dtype=np.int64), np.array(e_link, dtype=np.int64), len(alive),
                                 capacity_arr, np.array(caps)).tolist()
        segments.append(Segment(t, list(alive), list(rem), list(rate)))
        finish = [t + r / x for r, x in zip(rem, rate)]
        now = min(finish)
        due = now + REL_TOL * now + ABS_TOL_S
        keep = [k for k, f in enumerate(finish) if f > due]
        rem = [max(rem[k] - rate[k] * (now - t), 0.0) for k in keep]
        alive = [alive[k] for k in keep]
        t = now
    return t, segments


Specs = Sequence[tuple[tuple[int, ...], float, float]]


class PhaseSpecs(Sequence[tuple[tuple[int, ...], float, float]]):
    """A known Phase's checked flows as ``checked_flows`` gives them, (links, bytes, cap), each
    tuple made on access from the pattern's link tuples, the phase's sizes and the caps (a
    phase scaled from a known shape rarely reads more than a few of its flows)."""

    __slots__ = ("_links", "_sizes", "_caps")

    def __init__(self, links: list[tuple[int, ...]], sizes: np.ndarray, caps: list[float]) -> None:
        self._links, self._sizes, self._caps = links, sizes, caps

    def __len__(self) -> int:
        return len(self._links)

    def __getitem__(self, i: int) -> tuple[tuple[int, ...], float, float]:  # type: ignore[override]
        return self._links[i], float(self._sizes[i]), self._caps[i]

    def __iter__(self) -> Iterator[tuple[tuple[int, ...], float, float]]:
        return zip(self._links, self._sizes.tolist(), self._caps)
# (flow_ptr, flow_links, sizes, caps): per flow where its entries start (n + 1 offsets), every
# entry's link, and each flow's bytes and cap
FlowTable = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _spec_table(specs: Specs) -> FlowTable:
    """The flows ``specs`` as a :data:`FlowTable`, read flow by flow."""
    n = len(specs)
    lengths = np.fromiter((len(links) for links, _, _ in specs), dtype=np.int64, count=n)
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=ptr[1:])
    links = np.fromiter((link for links, _, _ in specs for link in links), dtype=np.int64, count=int(ptr[-1]))
    sizes = np.fromiter((size for _, size, _ in specs), dtype=np.float64, count=n)
    caps = np.fromiter((cap for _, _, cap in specs), dtype=np.float64, count=n)
    return ptr, links, sizes, caps


def _flow_table(phase: Sequence[Any], n_links: int) -> tuple[Specs, FlowTable]:
    """The phase's checked flows (``checked_flows``) and their :data:`FlowTable`: for a
    :class:`Phase` none of whose flows is dropped, its pattern's arrays as they are (the same
    numbers: the specs are made from them), else read flow by flow."""
    specs = checked_flows(phase, n_links)
    if isinstance(phase, Phase) and len(specs) == len(phase) and phase.arrays.links.dtype == np.int64:
        a, n = phase.arrays, len(specs)
        ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(a.flow_of_link, minlength=n), out=ptr[1:])
        fc = phase.flow_caps
        caps = np.full(n, np.inf) if fc is None else np.where(np.isnan(fc), np.inf, fc)
        return specs, (ptr, a.links, np.asarray(phase.nbytes, dtype=np.float64), caps)
    return specs, _spec_table(specs)


def phase_shape(phase: Sequence[Any], capacity_Bps: np.ndarray, capacity: Sequence[float]) -> PhaseShape:
    """Decompose a phase (flows as accepted by ``FlowNetwork.transfer_many``) into components
    and time each alone. Zero-byte flows, and flows over no link without a cap, are dropped:
    they finish at once."""
    return _decompose(*_flow_table(phase, capacity_Bps.size), capacity_Bps, capacity)


def _decompose(specs: Specs, table: FlowTable, capacity_Bps: np.ndarray, capacity: Sequence[float],
               lone: bool = True) -> PhaseShape:
    """:func:`phase_shape` of checked flows ``specs`` (their :data:`FlowTable`: ``table``).
    ``lone`` False: by the union-find even where no link is shared (the same shape, component
    by component: tests compare the two)."""
    ptr, e_link, sizes, caps = table
    n = len(specs)
    lengths = np.diff(ptr)
    e_flow = np.repeat(np.arange(n, dtype=np.int64), lengths)
    # Flows alone in their component: the slowest link or the cap (as FlowNetwork times them).
    link_min = np.full(n, np.inf)
    has = lengths > 0
    if has.any():
        link_min[has] = np.minimum.reduceat(capacity_Bps[e_link], ptr[:-1][has])
    alone = np.minimum(link_min, caps)
    # (np.unique, not a bincount over every link: the phase is small beside a large fabric.)
    _, where, users = np.unique(e_link, return_inverse=True, return_counts=True)
    shared = users[where.reshape(-1)] > 1
    if lone and not shared.any():
        # No link carries two entries (a ring's hops, each on links of its own): every flow is
        # a component alone, in flow order, as the union-find below would find them; its links
        # are its own, distinct, so sorting them per flow (and all of them) is all there is.
        order = np.argsort(e_link, kind="stable")
        by_flow = np.lexsort((e_link, e_flow))
        return PhaseShape(specs, LoneComponents(ptr, e_link[by_flow], sizes, alone), e_link[order], e_flow[order],
                          np.flatnonzero(~has).tolist(), entry_comp=e_flow,
                          comp_bytes=np.bincount(np.arange(n), weights=sizes, minlength=n),
                          comp_flows=np.ones(n, dtype=np.int64), comp_durations=sizes / alone, table=table)
    # Components by union-find over links (flows sharing a link are joined); only flows on a
    # link some other flow of the phase crosses can be joined to anything.
    parent = list(range(n))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first: dict[int, int] = {}
    for i, link in zip(e_flow[shared].tolist(), e_link[shared].tolist()):
        j = first.setdefault(link, i)
        if j != i:
            a, b = find(i), find(j)
            if a != b:
                parent[max(a, b)] = min(a, b)
    alone_rate = alone.tolist()
    members: dict[int, list[int]] = {}
    for i in range(n):
        members.setdefault(find(i), []).append(i)
    components: list[Component] = []
    linkless: list[int] = []
    link_list: list[int] = []
    comp_list: list[int] = []
    for flows in members.values():
        if len(flows) == 1:
            i = flows[0]
            links, size, _ = specs[i]
            rate = alone_rate[i]
            links = tuple(sorted(set(links)))
            duration, segments = size / rate, [Segment(0.0, flows, [size], [rate])]
        else:
            links = tuple(sorted({link for i in flows for link in specs[i][0]}))
            duration, segments = _solo(flows, specs, capacity, capacity_Bps)
        if not links:
            linkless.append(len(components))
        link_list.extend(links)
        comp_list.extend([len(components)] * len(links))
        components.append(Component(flows, links, duration, segments))
    order = np.argsort(np.asarray(link_list, dtype=np.int64), kind="stable")
    comp_of_flow = np.zeros(n, dtype=np.int64)
    for c, comp in enumerate(components):
        comp_of_flow[comp.flows] = c
    return PhaseShape(specs, components, np.asarray(link_list, dtype=np.int64)[order],
                      np.asarray(comp_list, dtype=np.int64)[order], linkless,
                      entry_comp=comp_of_flow[e_flow],
                      comp_bytes=np.bincount(comp_of_flow, weights=sizes, minlength=len(components)),
                      comp_flows=np.bincount(comp_of_flow, minlength=len(components)), table=table)


class SoloBlock:
    """The components of one started phase still running alone: one heap entry for all of them
    (``finish``: when the last one ends). ``alive[c]`` is False once component ``c`` has been
    handed to the network as ordinary flows (or met another flow at the start)."""

    __slots__ = ("fid", "finish", "group", "shape", "t0", "alive", "span")

    def __init__(self, fid: int, shape: PhaseShape, t0: float, alive: list[bool], group: Any) -> None:
        self.fid = fid
        self.shape = shape
        self.t0 = t0
        self.alive = alive
        self.group = group
        self.span = 0.0  # the longest duration of the components alive
        self.finish = 0.0
        self.settle(None)

    def settle(self, broken: Component | None) -> None:
        """Set ``span`` and ``finish`` after component ``broken`` left (None: from scratch); the
        components are only scanned when the one that left was the longest, and only until one
        alive is as long (a ring's hops all are: the span stays)."""
        if broken is None and all(self.alive):
            self.span = self.shape.duration
        elif broken is None or broken.duration >= self.span:
            components = self.shape.components
            if isinstance(components, list):
                span = self.span
                if broken is None or not any(a and c.duration >= span for c, a in zip(components, self.alive)):
                    self.span = max((c.duration for c, a in zip(components, self.alive) if a), default=0.0)
            else:  # made on access (LoneComponents, ScaledComponents): their durations as an array
                durations = self.shape.comp_durations
                assert durations is not None  # (set by PhaseShape.__post_init__)
                alive = durations[np.asarray(self.alive, dtype=bool)]
                self.span = float(alive.max()) if alive.size else 0.0
        self.finish = self.t0 + self.span

    def settle_many(self, broken: Sequence[int]) -> None:
        """:meth:`settle` after each of the components ``broken`` in turn (their ``alive`` flags
        cleared already): the same span and finish, with the components scanned once, not once
        per broken one. Before the i-th settles, the components alive are those alive now and
        ``broken[i+1:]``; the longest of them (a maximum: exact in any order) is the longer of the
        longest alive now and the longest of that suffix."""
        components = self.shape.components
        listed = isinstance(components, list)
        if listed:
            alive_now = [c.duration for c, a in zip(components, self.alive) if a]
            later = [components[k].duration for k in broken]
        else:  # (settle reads these durations from the array)
            durations = self.shape.comp_durations
            assert durations is not None  # (set by PhaseShape.__post_init__)
            alive = durations[np.asarray(self.alive, dtype=bool)]
            alive_now = [float(alive.max())] if alive.size else []
            later = durations[np.asarray(broken, dtype=np.int64)].tolist()
        # longest[i]: the longest component alive when the i-th settles (None: none)
        longest: list[float | None] = [None] * len(broken)
        best: float | None = max(alive_now) if alive_now else None
        for i in range(len(broken) - 1, -1, -1):
            longest[i] = best
            d = later[i]
            if best is None or d > best:
                best = d
        span = self.span
        for k, top in zip(broken, longest):
            if components[k].duration >= span and (not listed or top is None or not top >= span):
                span = top if top is not None else 0.0
        self.span = span
        self.finish = self.t0 + span


def residual_shape(shape: PhaseShape, capacity_Bps: np.ndarray) -> PhaseShape:
    """``shape``'s phase decomposed and timed alone on links of ``capacity_Bps`` instead: the
    capacity that other traffic of fixed rates leaves (``FlowNetwork.beside``)."""
    table = (shape.flow_ptr, shape.flow_links, shape.sizes, shape.caps)
    return _decompose(shape.specs, table, capacity_Bps, capacity_Bps)  # type: ignore[arg-type]


def scaled_shape(base: PhaseShape, specs: Specs, k: float, sizes: np.ndarray | None = None) -> PhaseShape:
    """The shape of a phase whose flows are ``base``'s (same links, same caps, in the same
    order) with every size multiplied by ``k`` (``specs``: its flows; ``sizes``: their sizes as
    an array, None: read from ``specs``). Max-min rates depend on which flows are active, not on
    their sizes, so every flow keeps its rates and the active sets follow one another in the
    same order; only the times and the bytes left scale by ``k``. The components (made on first
    access, :class:`ScaledComponents`) and the link tables are shared with ``base``."""
    if sizes is None:
        sizes = np.fromiter((size for _, size, _ in specs), dtype=np.float64, count=len(specs))
    assert base.comp_durations is not None  # (set by PhaseShape.__post_init__)
    return PhaseShape(specs, ScaledComponents(base.components, k), base.links, base.component_of_link, base.linkless,
                      entry_comp=base.entry_comp, comp_bytes=base.comp_bytes * k, comp_flows=base.comp_flows,
                      comp_durations=base.comp_durations * k, table=(base.flow_ptr, base.flow_links, sizes, base.caps))


def _pattern_key(table: FlowTable) -> tuple[bytes, bytes, bytes]:
    """What makes two phases one pattern (PhaseShapes): every flow's links and cap, in order,
    as the bytes of their arrays (equal exactly when the (links, cap) of every flow are: the
    caps are > 0 or infinite). Bytes keep their hash, so a lookup does not walk the flows."""
    ptr, links, _, caps = table
    return ptr.tobytes(), links.tobytes(), caps.tobytes()


@dataclass
class _KnownPattern:
    """What :class:`PhaseShapes` keeps of a pattern's arrays met with given caps: the
    ``_by_pattern`` key of their flows (:func:`_pattern_key`), their caps (array and list), where each flow's links
    start, and the base shape of that key once there is one."""

    arrays: Any  # held: their id() keys the entry
    key: tuple[bytes, bytes, bytes]
    caps: np.ndarray
    cap_list: list[float]
    ptr: np.ndarray
    base: tuple[np.ndarray, PhaseShape] | None = None


class PhaseShapes:
    """The shapes of a network's phases, each worked out once. A collective's plans at
    different sizes are one flow pattern scaled by the per-rank volume (``costs.collectives``'
    ``scaled_flows``): a phase with the flows (links, caps) of one already decomposed and sizes
    all in one ratio to its sizes is that shape scaled (:func:`scaled_shape`), not decomposed
    and water-filled again.

    A :class:`Phase` is known by its pattern's arrays and its caps: the first phase of those is
    checked flow by flow (``checked_flows``) and its key made; a later one only differs in its
    sizes, checked as an array, so it costs a few array passes and a list of its flows, not a
    pass of Python per flow (a DP ring over 784 nodes is met at every size of every bucket)."""

    def __init__(self, capacity_Bps: np.ndarray, capacity: Sequence[float]) -> None:
        self._capacity_Bps = capacity_Bps
        self._capacity = capacity
        self._by_id: dict[int, tuple[Any, PhaseShape]] = {}
        # (links, cap) of every flow (_pattern_key) -> (sizes, shape) of the first phase
        # decomposed with them
        self._by_pattern: dict[tuple[bytes, bytes, bytes], tuple[np.ndarray, PhaseShape]] = {}
        # (id of a pattern's arrays, its flows' caps as bytes) -> what is known of them
        self._known: dict[tuple[int, bytes], _KnownPattern] = {}

    def get(self, phase: Sequence[Any]) -> PhaseShape:
        hit = self._by_id.get(id(phase))
        if hit is not None and hit[0] is phase:
            return hit[1]
        known = self._known_phase(phase) if isinstance(phase, Phase) else None
        if known is not None:
            entry, specs, table = known
            key = entry.key
            if entry.base is None:
                entry.base = self._by_pattern.get(key)
            base = entry.base
        else:
            specs, table = _flow_table(phase, self._capacity_Bps.size)
            key = _pattern_key(table)
            base = self._by_pattern.get(key)
        sizes = table[2]
        shape: PhaseShape | None = None
        if base is not None and sizes.size:
            k = float(sizes[0] / base[0][0])
            if np.allclose(sizes, base[0] * k, rtol=1e-12, atol=0.0):
                shape = scaled_shape(base[1], specs, k, sizes)
        if shape is None:
            shape = _decompose(specs, table, self._capacity_Bps, self._capacity)
            if base is None:
                self._by_pattern[key] = (sizes, shape)
                if known is not None:
                    known[0].base = self._by_pattern[key]
        self._by_id[id(phase)] = (phase, shape)
        return shape

    def _known_phase(self, phase: Phase) -> tuple[_KnownPattern, Specs, FlowTable] | None:
        """The entry of ``phase``'s pattern arrays and caps (made on first sight), its checked
        flows and their table; None where some flow is dropped or fails a check (the general
        path then checks it flow by flow and raises what it raises)."""
        a, nbytes, fc = phase.arrays, phase.nbytes, phase.flow_caps
        caps = np.full(nbytes.size, np.inf) if fc is None else np.where(np.isnan(fc), np.inf, fc)
        keyed = (id(a), caps.tobytes())
        entry = self._known.get(keyed)
        if entry is not None and entry.arrays is a:
            # Links, their ids, caps and which flows have links are the entry's, checked when it
            # was made; the sizes are this phase's: all finite and > 0, or the general path.
            if nbytes.dtype != np.float64 or not bool(np.all((nbytes > 0) & (nbytes < np.inf))):
                return None
            return entry, PhaseSpecs(a.flow_links, nbytes, entry.cap_list), (entry.ptr, a.links, nbytes, entry.caps)
        specs, table = _flow_table(phase, self._capacity_Bps.size)
        if table[1] is not a.links:
            return None
        entry = self._known[keyed] = _KnownPattern(a, _pattern_key(table), table[3], table[3].tolist(), table[0])
        return entry, specs, table

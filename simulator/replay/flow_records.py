"""What ``links.FlowNetwork`` keeps per flow: the active-flow record, the completion group of a
``transfer_many`` call, the counters, the flow-spec unpacking, and the numpy mirror of the
flow-link incidence used while large components occur."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np
import simpy

from simulator.costs.flow_patterns import Phase


class ActiveFlow:
    """One active flow, or a *class* of ``n`` flows that move in lockstep: the same size, cap,
    bytes left and rate, over different links (an All-to-All's sends, started together).

    ``rem`` is what each member had left at time ``t_ref``; since then it has moved at ``rate``,
    so all members finish at ``finish = t_ref + rem / rate`` unless their rate changes first.
    A single flow's ``links`` is a tuple; a class's is a numpy array of its members' links end to
    end (member i's are ``links[ptr[i]:ptr[i+1]]``; a link crossed by k members appears k times:
    per-link counts and bytes are per member). ``ulinks``: each link once. ``slots``: the
    members' rows in the network's numpy mirror (None until it holds them).

    Rates are always solved member by member (``links.FlowNetwork``); a class only stands for
    members the solver gave one rate. Members given different rates are split into classes of
    equal rate (``FlowNetwork._split``), so the bookkeeping (heap entries, per-link maps, the
    completion) is per class while every member moves exactly as it would alone.
    """

    __slots__ = ("fid", "links", "size", "cap", "group", "rem", "rate", "t_ref", "finish", "n", "ptr", "ulinks",
                 "slots", "uarr", "weight", "upos", "cover")

    def __init__(self, fid: int, links: Any, size: float, cap: float, group: "FlowGroup",
                 ptr: np.ndarray | None = None, distinct: "DistinctLinks | None" = None) -> None:
        self.fid = fid
        self.size = size
        self.cap = cap
        self.group = group
        self.rem = size
        self.rate = 0.0
        self.t_ref = 0.0
        self.finish = float("inf")
        self.slots: np.ndarray | int | None = None  # an int for a single flow
        # For the rates solved per class (FlowNetwork._class_level_rates): ``ulinks`` as an
        # array, how many members cross each, each member entry's position in it, and the links
        # (a mask over ``uarr``) shown to give every member a bottleneck at the last check.
        self.uarr: np.ndarray | None = None
        self.weight: np.ndarray | None = None
        self.upos: np.ndarray | None = None
        self.cover: np.ndarray | None = None
        if ptr is None:
            self.n = 1
            self.links = self.ulinks = links
            self.ptr: np.ndarray | None = None
        else:
            self.set_members(ptr, links, distinct)

    def set_members(self, ptr: np.ndarray, links: np.ndarray, distinct: "DistinctLinks | None" = None) -> None:
        """Make the class these members (``ptr``, ``links``: their links, as the class holds them;
        ``distinct``: :func:`distinct_links` of ``links`` where the caller has it)."""
        self.n = ptr.size - 1
        if self.n == 1:
            self.links = self.ulinks = tuple(links.tolist())
            self.ptr = self.uarr = self.weight = self.upos = None
        else:
            self.ptr, self.links = ptr, links
            self.uarr, self.upos, self.weight, self.ulinks = distinct or distinct_links(links)
        self.cover = None

    def members(self) -> list[tuple[int, ...]]:
        """Each member's links."""
        if self.ptr is None:
            return [self.links]
        flat, p = self.links.tolist(), self.ptr.tolist()
        return [tuple(flat[p[i]:p[i + 1]]) for i in range(self.n)]

    def lengths(self) -> np.ndarray:
        """How many links each member crosses."""
        return np.diff(self.ptr) if self.ptr is not None else np.array([len(self.links)], dtype=np.int64)


DistinctLinks = tuple[np.ndarray, np.ndarray, np.ndarray, tuple[int, ...]]


def distinct_links(links: np.ndarray) -> DistinctLinks:
    """The distinct links of a class's entries, ascending; each entry's position among them; how
    many entries each has (as floats: weights); and the distinct links as a tuple. Many entries
    (an All-to-All class has tens of thousands) are counted per link id, an array as long as
    the highest id; a few are sorted (np.unique)."""
    top = int(links.max())
    if links.size * 8 < top:
        uarr, position, counts = np.unique(links, return_inverse=True, return_counts=True)
        return uarr, position.reshape(-1), counts.astype(np.float64), tuple(uarr.tolist())
    counts = np.bincount(links, minlength=top + 1)
    uarr = np.flatnonzero(counts)
    position = np.cumsum(counts > 0) - 1
    return uarr, position[links], counts[uarr].astype(np.float64), tuple(uarr.tolist())


def csr_take(ptr: np.ndarray, links: np.ndarray, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``idx`` of the row-compressed table (``ptr``, ``links``), as a table of their own."""
    lengths = ptr[idx + 1] - ptr[idx]
    new_ptr = np.zeros(idx.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=new_ptr[1:])
    pos = np.repeat(ptr[idx] - new_ptr[:-1], lengths) + np.arange(new_ptr[-1], dtype=np.int64)
    return new_ptr, links[pos]


def link_counts(flows: Sequence[ActiveFlow]) -> tuple[np.ndarray, np.ndarray | None]:
    """(links, how many members of ``flows`` cross each): a single flow's links once each, a
    class's distinct links with their member counts (links may repeat across flows); counts
    None when every flow is a single one (each entry counts once)."""
    if all(f.ptr is None for f in flows):
        return entries(flows), None
    links_parts: list[np.ndarray] = []
    count_parts: list[np.ndarray] = []
    singles = [f for f in flows if f.ptr is None]
    if singles:
        single = entries(singles)
        links_parts.append(single)
        count_parts.append(np.ones(single.size, dtype=np.int64))
    for f in flows:
        if f.ptr is not None and f.uarr is not None and f.weight is not None:
            links_parts.append(f.uarr)
            count_parts.append(f.weight.astype(np.int64))
    return np.concatenate(links_parts), np.concatenate(count_parts)


def entries(flows: Iterable[ActiveFlow]) -> np.ndarray:
    """The links of ``flows`` end to end (every member's, repeats counted)."""
    parts: list[np.ndarray] = []
    run: list[tuple[int, ...]] = []
    for f in flows:
        if f.ptr is None:
            run.append(f.links)
        else:
            if run:
                parts.append(np.fromiter(chain.from_iterable(run), dtype=np.int64))
                run = []
            parts.append(f.links)
    if run or not parts:
        parts.append(np.fromiter(chain.from_iterable(run), dtype=np.int64))
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


class FlowGroup:
    """The flows of one ``transfer_many`` call; its event fires when the last one finishes."""

    __slots__ = ("outstanding", "event")

    def __init__(self, outstanding: int, event: simpy.Event) -> None:
        self.outstanding = outstanding
        self.event = event


@dataclass
class FlowStats:
    """Counters for benchmarks and conservation checks."""

    events: int = 0  # network updates processed (starts batched per instant, completions)
    recomputes: int = 0  # max-min rate computations
    flows_started: int = 0
    flows_finished: int = 0
    bytes_delivered: float = 0.0  # integral of rate over time, all flows
    components_broken: int = 0  # lone phase components another flow met (transfer_phase)
    class_level: int = 0  # large recomputes solved class by class (FlowNetwork._class_level_rates)


def unpack_flow(flow: Any) -> tuple[Sequence[int], float, float | None]:
    """Accept ``(links, nbytes)``, ``(links, nbytes, cap)`` or an object with ``links``, ``nbytes``
    and optionally ``rate_cap_Bps`` (such as ``costs.collectives.Flow``)."""
    if hasattr(flow, "links"):
        return flow.links, flow.nbytes, getattr(flow, "rate_cap_Bps", None)
    if len(flow) == 2:
        return flow[0], flow[1], None
    links, nbytes, cap = flow
    return links, nbytes, cap


def checked_flows(flows: Iterable[Any], n_links: int) -> list[tuple[tuple[int, ...], float, float]]:
    """The flows as ``(links, nbytes, cap)`` with an infinite cap for none, checked: a finite
    size >= 0, a positive cap, link ids in ``0..n_links-1``. Zero-byte flows, and flows over
    no link without a cap, are dropped: they finish at once."""
    if isinstance(flows, Phase):
        got = _checked_phase(flows, n_links)
        if got is not None:
            return got
    inf = float("inf")
    out: list[tuple[tuple[int, ...], float, float]] = []
    for flow in flows:
        links, nbytes, cap = unpack_flow(flow)
        nbytes = float(nbytes)
        if not (0 <= nbytes < inf):
            raise ValueError(f"flow size must be a finite number of bytes >= 0, got {nbytes!r}")
        if cap is not None and not cap > 0:
            raise ValueError(f"rate cap must be > 0 bytes/s, got {cap!r}")
        if nbytes == 0 or (len(links) == 0 and cap is None):
            continue
        if type(links) is not tuple:
            links = tuple(int(link) for link in links)
        if links and (min(links) < 0 or max(links) >= n_links):
            raise ValueError(f"link id out of range 0..{n_links - 1}")
        out.append((links, nbytes, inf if cap is None else float(cap)))
    return out


def _checked_phase(phase: Phase, n_links: int) -> list[tuple[tuple[int, ...], float, float]] | None:
    """:func:`checked_flows` of a :class:`Phase`, checked on its arrays (a DP ring over 784
    nodes has ~100k flows: no Flow object, no per-flow unpacking); None when any flow fails a
    check, so that the flow-by-flow pass raises the same error."""
    a, nbytes = phase.arrays, phase.nbytes
    flow_links = a.flow_links
    if not bool(np.all((nbytes >= 0) & (nbytes < np.inf))):
        return None
    if a.links.size and (int(a.links.min()) < 0 or int(a.links.max()) >= n_links):
        return None
    if not all(type(links) is tuple for links in flow_links):
        return None
    n = len(flow_links)
    no_cap = np.ones(n, dtype=bool) if phase.flow_caps is None else np.isnan(phase.flow_caps)
    if phase.flow_caps is not None and not bool(np.all(no_cap | (phase.flow_caps > 0))):
        return None
    caps = np.full(n, np.inf) if phase.flow_caps is None else np.where(no_cap, np.inf, phase.flow_caps)
    lengths = np.bincount(a.flow_of_link, minlength=n)
    drop = (nbytes == 0) | ((lengths == 0) & no_cap)
    specs = zip(flow_links, nbytes.tolist(), caps.tolist())
    if not drop.any():
        return list(specs)
    return [spec for spec, gone in zip(specs, drop.tolist()) if not gone]


class Mirror:
    """numpy copy of the active flows' flow-link incidence, kept only while large components
    occur, member by member: each member of a class (``ActiveFlow``) has a *slot*; per entry the
    slot and the link; per slot its cap, current rate, whether it is active and the id of the
    class holding it (``owner``). Flows that start or finish are applied in bulk at the next
    large recompute (:meth:`sync`). Slots are numbered afresh once most of them are dead, so the
    arrays stay in proportion to the flows in flight, not to every flow the step has started."""

    def __init__(self, flows: Iterable[ActiveFlow]) -> None:
        self.m_slot = np.zeros(0, dtype=np.int64)
        self.m_link = np.zeros(0, dtype=np.int64)
        self.alive = np.zeros(0, dtype=bool)
        self.cap = np.zeros(0)
        self.rate = np.zeros(0)
        self.owner = np.zeros(0, dtype=np.int64)
        self.n_slots = 0  # slots handed out (alive or dead)
        self.n_alive = 0
        self.dead_entries = 0
        self.added: list[ActiveFlow] = list(flows)
        for f in self.added:
            f.slots = None
        self.gone: list[ActiveFlow] = []

    def _grow(self, size: int) -> None:
        if size > self.alive.size:
            n = max(size, 2 * self.alive.size, 1024)
            pad = n - self.alive.size
            self.alive = np.concatenate([self.alive, np.zeros(pad, dtype=bool)])
            self.cap = np.concatenate([self.cap, np.zeros(pad)])
            self.rate = np.concatenate([self.rate, np.zeros(pad)])
            self.owner = np.concatenate([self.owner, np.zeros(pad, dtype=np.int64)])

    def sync(self, flows: Iterable[ActiveFlow]) -> None:
        """Apply the starts and finishes since the last sync (``flows``: every active flow, for
        renumbering the slots)."""
        # Added first: a flow that started and finished since the last sync ends up inactive.
        if self.added:
            added = [f for f in self.added if len(f.links)]
            counts = np.fromiter([f.n for f in added], dtype=np.int64, count=len(added))
            total = int(counts.sum())
            first = self.n_slots
            self._grow(first + total)
            k = first
            for f in added:
                f.slots = k if f.n == 1 else np.arange(k, k + f.n, dtype=np.int64)
                k += f.n
            slots = np.arange(first, first + total, dtype=np.int64)
            if all(f.ptr is None for f in added):
                lengths = np.fromiter(map(len, [f.links for f in added]), dtype=np.int64, count=total)
            else:
                lengths = np.concatenate([f.lengths() for f in added])
            links = entries(added)
            self.m_slot = np.concatenate([self.m_slot, np.repeat(slots, lengths)])
            self.m_link = np.concatenate([self.m_link, links])
            self.alive[first:k] = True
            self.cap[first:k] = np.repeat([f.cap for f in added], counts)
            self.rate[first:k] = np.repeat([f.rate for f in added], counts)
            self.owner[first:k] = np.repeat([f.fid for f in added], counts)
            self.n_slots = k
            self.n_alive += total
            self.added = []
        if self.gone:
            singles = [f.slots for f in self.gone if f.slots is not None and not isinstance(f.slots, np.ndarray)]
            arrays = [f.slots for f in self.gone if isinstance(f.slots, np.ndarray)]
            if singles or arrays:
                dead = np.concatenate([np.asarray(singles, dtype=np.int64)] + arrays)
                self.alive[dead] = False
                self.n_alive -= dead.size
                self.dead_entries += sum([len(f.links) for f in self.gone if f.slots is not None])
            self.gone = []
        if self.dead_entries * 2 > self.m_slot.size:
            keep = self.alive[self.m_slot]
            self.m_slot, self.m_link = self.m_slot[keep], self.m_link[keep]
            self.dead_entries = 0
            if self.n_slots > 2 * self.n_alive + 4096:
                self._renumber(flows)

    def _renumber(self, flows: Iterable[ActiveFlow]) -> None:
        """Number the live slots 0..n_alive-1, in the order they had."""
        live = np.flatnonzero(self.alive[:self.n_slots])
        new = np.full(self.n_slots, -1, dtype=np.int64)
        new[live] = np.arange(live.size, dtype=np.int64)
        self.m_slot = new[self.m_slot]
        for f in flows:
            if isinstance(f.slots, np.ndarray):
                f.slots = new[f.slots]
            elif f.slots is not None:
                f.slots = int(new[f.slots])
        n = live.size
        self.cap[:n], self.rate[:n], self.owner[:n] = self.cap[live], self.rate[live], self.owner[live]
        self.alive[:n] = True
        self.alive[n:] = False
        self.n_slots = n

    def backlog(self) -> int:
        return len(self.added) + len(self.gone)

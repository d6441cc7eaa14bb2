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


class ActiveFlow:
    """One active flow. ``rem`` is what was left at time ``t_ref``; since then it has moved at
    ``rate``, so it finishes at ``finish = t_ref + rem / rate`` unless its rate changes first."""

    __slots__ = ("fid", "links", "size", "cap", "group", "rem", "rate", "t_ref", "finish")

    def __init__(self, fid: int, links: tuple[int, ...], size: float, cap: float, group: "FlowGroup") -> None:
        self.fid = fid
        self.links = links
        self.size = size
        self.cap = cap
        self.group = group
        self.rem = size
        self.rate = 0.0
        self.t_ref = 0.0
        self.finish = float("inf")


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


class Mirror:
    """numpy copy of the active flows' flow-link incidence, kept only while large components
    occur: per entry the flow id and link; per flow id its cap, current rate and whether it is
    active. Flows that start or finish are applied in bulk at the next large recompute."""

    def __init__(self, flows: Iterable[ActiveFlow], size: int) -> None:
        self.m_fid = np.zeros(0, dtype=np.int64)
        self.m_link = np.zeros(0, dtype=np.int64)
        self.alive = np.zeros(0, dtype=bool)
        self.cap = np.zeros(0)
        self.rate = np.zeros(0)
        self.dead_entries = 0
        self.added: list[ActiveFlow] = list(flows)
        self.gone: list[ActiveFlow] = []
        self.reserve(size)

    def reserve(self, size: int) -> None:
        if size > self.alive.size:
            n = max(size, 2 * self.alive.size, 1024)
            self.alive = np.concatenate([self.alive, np.zeros(n - self.alive.size, dtype=bool)])
            self.cap = np.concatenate([self.cap, np.zeros(n - self.cap.size)])
            self.rate = np.concatenate([self.rate, np.zeros(n - self.rate.size)])

    def sync(self) -> None:
        # Added first: a flow that started and finished since the last sync ends up inactive.
        if self.added:
            added = [f for f in self.added if f.links]
            links_of = [f.links for f in added]
            lengths = np.fromiter(map(len, links_of), dtype=np.int64, count=len(added))
            fids = np.fromiter([f.fid for f in added], dtype=np.int64, count=len(added))
            links = np.fromiter(chain.from_iterable(links_of), dtype=np.int64, count=int(lengths.sum()))
            self.m_fid = np.concatenate([self.m_fid, np.repeat(fids, lengths)])
            self.m_link = np.concatenate([self.m_link, links])
            self.alive[fids] = True
            self.cap[fids] = [f.cap for f in added]
            self.rate[fids] = [f.rate for f in added]
            self.added = []
        if self.gone:
            gone = np.fromiter([f.fid for f in self.gone], dtype=np.int64, count=len(self.gone))
            self.alive[gone] = False
            self.dead_entries += sum(map(len, [f.links for f in self.gone]))
            self.gone = []
        if self.dead_entries * 2 > self.m_fid.size:
            keep = self.alive[self.m_fid]
            self.m_fid, self.m_link = self.m_fid[keep], self.m_link[keep]
            self.dead_entries = 0

    def backlog(self) -> int:
        return len(self.added) + len(self.gone)

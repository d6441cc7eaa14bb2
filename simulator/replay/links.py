"""Links as shared resources: a fluid flow network with max-min fair sharing.

Every direction of every link (``Topology.capacity_Bps``) is a resource of fixed bandwidth.
Concurrent flows share it the way long-lived transfers share a lossless fabric: max-min fair
(Bertsekas & Gallager, *Data Networks*, §6.5.2, progressive filling), so two collectives on one
NIC each get half, and nothing is serialised behind a whole message. Rates are recomputed
whenever a flow starts or ends; between such events every flow moves at a constant rate, so the
simulation advances from one completion to the next (a fluid model, not packets).

The state is kept in numpy arrays (one row per active flow, one entry per flow-link incidence),
so a recompute over ~20,000 flows costs a few vectorised passes per fair-share level, and flows
finishing within a relative 1e-9 of each other complete in the same event: a symmetric
collective phase is one event, not one per rank.

Latency is not added here; the caller (the replay engine) adds the route/protocol latency.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import simpy

# Flows whose finish times differ by less than this fraction of the current simulated time
# (plus an absolute femtosecond) complete together.
REL_TOL = 1e-9
ABS_TOL_S = 1e-15


def max_min_rates(
    flow_of_entry: np.ndarray,
    link_of_entry: np.ndarray,
    n_flows: int,
    capacity_Bps: np.ndarray,
    rate_cap_Bps: np.ndarray | None = None,
) -> np.ndarray:
    """Max-min fair rates by progressive filling (water-filling), many bottlenecks per pass.

    ``flow_of_entry[i]`` crosses ``link_of_entry[i]`` (one entry per flow-link pair);
    ``rate_cap_Bps[f]`` bounds flow f (``inf`` for none). A link's *share* is its residual
    capacity over its unfrozen flows. During progressive filling shares never fall (a flow freezes
    at a rate no larger than the share of any link it crosses), so a link whose share is the
    smallest among all links and caps of the flows crossing it is a bottleneck: its flows freeze
    at that share. Freezing all such local minima at once (plus flows held by their own cap) gives
    the same allocation as raising one global level at a time (Bertsekas & Gallager, *Data
    Networks*, 2nd ed., §6.5.2), in far fewer passes when shares differ from link to link.
    """
    cap = np.full(n_flows, np.inf) if rate_cap_Bps is None else np.asarray(rate_cap_Bps, dtype=np.float64)
    rate = np.zeros(n_flows)
    if n_flows == 0:
        return rate
    e_link = np.asarray(link_of_entry, dtype=np.int64)
    e_flow = np.asarray(flow_of_entry, dtype=np.int64)
    residual = np.array(capacity_Bps, dtype=np.float64)  # a copy, indexed by link id
    n_links = residual.size
    frozen = np.zeros(n_flows, dtype=bool)
    # Flows over no link are limited by their cap alone.
    linked = np.zeros(n_flows, dtype=bool)
    linked[e_flow] = True
    if np.any(~linked & ~np.isfinite(cap)):
        raise ValueError("a flow crosses no link and has no rate cap: its rate is unbounded")
    rate[~linked] = cap[~linked]
    frozen |= ~linked
    # Entries of unfrozen flows only; they shrink every pass as flows freeze.
    le_flow, le_link = e_flow, e_link
    while not frozen.all():
        n_on_link = np.bincount(le_link, minlength=n_links)
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(n_on_link > 0, residual / n_on_link, np.inf)
        flow_min = np.full(n_flows, np.inf)
        np.minimum.at(flow_min, le_flow, share[le_link])
        limit = np.minimum(flow_min, cap)
        link_min = np.full(n_links, np.inf)
        np.minimum.at(link_min, le_link, limit[le_flow])
        bottleneck = share <= link_min * (1 + 1e-12)
        hit = np.zeros(n_flows, dtype=bool)
        hit[le_flow[bottleneck[le_link]]] = True
        hit |= cap <= flow_min * (1 + 1e-12)
        hit &= ~frozen
        if not hit.any():  # cannot happen in exact arithmetic: the smallest share is a bottleneck
            raise RuntimeError("max-min water-filling made no progress")
        rate[hit] = limit[hit]
        frozen |= hit
        newly = hit[le_flow]
        residual -= np.bincount(le_link[newly], weights=rate[le_flow[newly]], minlength=n_links)
        np.maximum(residual, 0.0, out=residual)
        le_flow, le_link = le_flow[~newly], le_link[~newly]
    return rate


def fair_rates(
    routes: Sequence[Sequence[int]], capacity_Bps: np.ndarray, rate_caps: Sequence[float | None] | None = None
) -> np.ndarray:
    """Max-min fair rates of flows given as lists of link ids (convenience wrapper)."""
    lengths = [len(r) for r in routes]
    e_flow = np.repeat(np.arange(len(routes)), lengths)
    e_link = np.fromiter((link for r in routes for link in r), dtype=np.int64, count=sum(lengths))
    caps = None
    if rate_caps is not None:
        caps = np.array([np.inf if c is None else c for c in rate_caps], dtype=np.float64)
    return max_min_rates(e_flow, e_link, len(routes), capacity_Bps, caps)


@dataclass
class _Group:
    outstanding: int
    event: simpy.Event


@dataclass
class FlowStats:
    """Counters for benchmarks and conservation checks."""

    events: int = 0  # network updates processed (starts batched per instant, completions)
    recomputes: int = 0  # max-min rate computations
    flows_started: int = 0
    flows_finished: int = 0
    bytes_delivered: float = 0.0  # integral of rate over time, all flows


def _unpack(flow: Any) -> tuple[Sequence[int], float, float | None]:
    """Accept ``(links, nbytes)``, ``(links, nbytes, cap)`` or an object with ``links``, ``nbytes``
    and optionally ``rate_cap_Bps`` (such as ``costs.collectives.Flow``)."""
    if hasattr(flow, "links"):
        return flow.links, flow.nbytes, getattr(flow, "rate_cap_Bps", None)
    if len(flow) == 2:
        return flow[0], flow[1], None
    links, nbytes, cap = flow
    return links, nbytes, cap


class FlowNetwork:
    """Fluid model of every link direction as a shared, max-min fair resource.

    ``capacity_Bps[link]`` is the bandwidth of each link direction (bytes/s). ``transfer`` and
    ``transfer_many`` return SimPy events that fire when the last byte has crossed.
    """

    def __init__(self, env: simpy.Environment, capacity_Bps: np.ndarray | Sequence[float]) -> None:
        cap = np.asarray(capacity_Bps, dtype=np.float64)
        if cap.ndim != 1 or not np.all(np.isfinite(cap)) or np.any(cap <= 0):
            raise ValueError("capacity_Bps must be a 1-D array of positive, finite bandwidths")
        self.env = env
        self.capacity_Bps = cap
        self.stats = FlowStats()
        self.link_bytes = np.zeros(cap.size)  # bytes carried per link direction so far
        self._rem = np.zeros(0)
        self._rate = np.zeros(0)
        self._cap = np.zeros(0)
        self._group = np.zeros(0, dtype=np.int64)
        self._e_flow = np.zeros(0, dtype=np.int64)
        self._e_link = np.zeros(0, dtype=np.int64)
        self._groups: dict[int, _Group] = {}
        self._next_gid = 0
        self._last = env.now
        self._version = 0
        self._update_pending = False
        self._next_flow = -1

    # ------------------------------------------------------------------ public
    @property
    def active_flows(self) -> int:
        return int(self._rem.size)

    def rates(self) -> np.ndarray:
        """Current rate (bytes/s) of each active flow, in start order (recomputed if pending)."""
        if self._update_pending:
            self._refresh_rates()
        return self._rate.copy()

    def transfer(self, links: Sequence[int], nbytes: float, rate_cap_Bps: float | None = None) -> simpy.Event:
        """Start one flow of ``nbytes`` over ``links``; the event fires when it has finished."""
        return self.transfer_many([(links, nbytes, rate_cap_Bps)])

    def transfer_many(self, flows: Iterable[Any]) -> simpy.Event:
        """Start many flows at once (one rate recompute for the batch); the event fires when all
        have finished. Items: ``(links, nbytes[, rate_cap_Bps])`` or objects with those fields.
        Zero-byte flows, and flows over no link without a cap, finish immediately."""
        link_lists: list[Sequence[int]] = []
        sizes: list[float] = []
        caps: list[float] = []
        for flow in flows:
            links, nbytes, cap = _unpack(flow)
            nbytes = float(nbytes)
            if not np.isfinite(nbytes) or nbytes < 0:
                raise ValueError(f"flow size must be a finite number of bytes >= 0, got {nbytes!r}")
            if cap is not None and not cap > 0:
                raise ValueError(f"rate cap must be > 0 bytes/s, got {cap!r}")
            if nbytes == 0 or (len(links) == 0 and cap is None):
                continue
            link_lists.append(links)
            sizes.append(nbytes)
            caps.append(np.inf if cap is None else float(cap))
        event = self.env.event()
        if not sizes:
            event.succeed()
            return event
        lengths = np.fromiter((len(x) for x in link_lists), dtype=np.int64, count=len(link_lists))
        e_link = np.fromiter((link for x in link_lists for link in x), dtype=np.int64, count=int(lengths.sum()))
        if e_link.size and (e_link.min() < 0 or e_link.max() >= self.capacity_Bps.size):
            raise ValueError(f"link id out of range 0..{self.capacity_Bps.size - 1}")
        self._advance()
        gid = self._next_gid
        self._next_gid += 1
        self._groups[gid] = _Group(len(sizes), event)
        base = self._rem.size
        self._e_flow = np.concatenate([self._e_flow, np.repeat(np.arange(base, base + len(sizes)), lengths)])
        self._e_link = np.concatenate([self._e_link, e_link])
        self._rem = np.concatenate([self._rem, sizes])
        self._rate = np.concatenate([self._rate, np.zeros(len(sizes))])
        self._cap = np.concatenate([self._cap, caps])
        self._group = np.concatenate([self._group, np.full(len(sizes), gid, dtype=np.int64)])
        self.stats.flows_started += len(sizes)
        self._version += 1
        if not self._update_pending:
            # Defer the recompute to the end of this instant so that every flow started now
            # (by any caller) shares one recompute.
            self._update_pending = True
            trigger = self.env.event()
            trigger.callbacks.append(self._on_start)
            trigger.succeed()
        return event

    # ------------------------------------------------------------------ internals
    def _advance(self) -> None:
        """Move every active flow forward to ``env.now`` at its current rate."""
        now = self.env.now
        dt = now - self._last
        self._last = now
        if dt <= 0 or self._rem.size == 0:
            return
        moved = np.minimum(self._rate * dt, self._rem)
        self._rem -= moved
        self.stats.bytes_delivered += float(moved.sum())
        self.link_bytes += np.bincount(self._e_link, weights=moved[self._e_flow], minlength=self.link_bytes.size)

    def _on_start(self, _event: simpy.Event) -> None:
        self._update(force=-1)

    def _on_timer(self, event: simpy.Event) -> None:
        version, flow = event.value
        if version == self._version:
            self._update(force=flow)

    def _refresh_rates(self) -> None:
        self.stats.recomputes += 1
        self._rate = max_min_rates(self._e_flow, self._e_link, self._rem.size, self.capacity_Bps, self._cap)

    def _update(self, force: int) -> None:
        """Advance, complete finished flows (``force``: the flow the timer was set for), re-share."""
        self.stats.events += 1
        self._update_pending = False
        self._advance()
        if self._rem.size:
            with np.errstate(divide="ignore", invalid="ignore"):
                left = np.where(self._rate > 0, self._rem / self._rate, np.inf)
            done = (left <= REL_TOL * self.env.now + ABS_TOL_S) | (self._rem <= 0)
            if force >= 0:
                done[force] = True
            if done.any():
                self._complete(done)
        self._version += 1
        if self._rem.size == 0:
            self._rate = np.zeros(0)
            return
        self._refresh_rates()
        left = self._rem / self._rate
        nxt = int(np.argmin(left))
        timer = self.env.timeout(float(left[nxt]), value=(self._version, nxt))
        timer.callbacks.append(self._on_timer)

    def _complete(self, done: np.ndarray) -> None:
        """Remove finished flows and fire the events of groups with nothing left."""
        # Bytes still recorded as remaining on a finished flow (sub-tolerance) are delivered now.
        tail = self._rem[done]
        self.stats.bytes_delivered += float(tail.sum())
        tail_entries = done[self._e_flow]
        self.link_bytes += np.bincount(self._e_link[tail_entries], weights=self._rem[self._e_flow[tail_entries]], minlength=self.link_bytes.size)
        self.stats.flows_finished += int(done.sum())
        gids, counts = np.unique(self._group[done], return_counts=True)
        for gid, count in zip(gids.tolist(), counts.tolist()):
            group = self._groups[gid]
            group.outstanding -= count
            if group.outstanding == 0:
                del self._groups[gid]
                group.event.succeed()
        keep = ~done
        new_index = np.cumsum(keep) - 1
        keep_entry = keep[self._e_flow]
        self._e_flow = new_index[self._e_flow[keep_entry]]
        self._e_link = self._e_link[keep_entry]
        self._rem = self._rem[keep]
        self._rate = self._rate[keep]
        self._cap = self._cap[keep]
        self._group = self._group[keep]

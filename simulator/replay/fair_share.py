"""Max-min fair rates of flows sharing links: progressive filling (water-filling).

Every direction of every link is a resource of fixed bandwidth; concurrent flows share it the
way long-lived transfers share a lossless fabric: max-min fair (Bertsekas & Gallager, *Data
Networks*, §6.5.2). :func:`max_min_rates` is the vectorised water-filling (numpy passes over
flow-link entries), :func:`max_min_rates_small` the same passes in plain Python for a few flows,
and :func:`fair_rates` a convenience wrapper over lists of link ids. ``links.FlowNetwork`` calls
them on the flows a start or finish touches.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def max_min_rates(
    flow_of_entry: np.ndarray,
    link_of_entry: np.ndarray,
    n_flows: int,
    capacity_Bps: np.ndarray,
    rate_cap_Bps: np.ndarray | None = None,
    weight_of_entry: np.ndarray | None = None,
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

    ``weight_of_entry[i]``: entry i stands for that many flows crossing the link, all with flow
    ``flow_of_entry[i]``'s rate (a *class* of flows, ``links.FlowNetwork``): a link's share is
    its residual over the weighted count, and a frozen class takes weight × rate from it. With
    every weight 1 this is the per-flow computation; the per-member allocation it stands for is
    the max-min one only when the members really are interchangeable, which the caller checks.
    """
    cap = np.full(n_flows, np.inf) if rate_cap_Bps is None else np.asarray(rate_cap_Bps, dtype=np.float64)
    rate = np.zeros(n_flows)
    if n_flows == 0:
        return rate
    e_link = np.asarray(link_of_entry, dtype=np.int64)
    e_flow = np.asarray(flow_of_entry, dtype=np.int64)
    capacity_Bps = np.asarray(capacity_Bps, dtype=np.float64)
    if capacity_Bps.size > 4 * e_link.size:
        # Few flows on a large fabric: number the links they cross 0..k-1, so that every pass
        # costs in proportion to those links, not to the fabric (same sums, same order).
        used, e_link = np.unique(e_link, return_inverse=True)
        e_link = e_link.reshape(-1)
        residual = capacity_Bps[used]
    else:
        residual = capacity_Bps.copy()  # indexed by link id
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
    le_w = None if weight_of_entry is None else np.asarray(weight_of_entry, dtype=np.float64)
    while not frozen.all():
        n_on_link = np.bincount(le_link, weights=le_w, minlength=n_links)
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
        taken = rate[le_flow[newly]] if le_w is None else rate[le_flow[newly]] * le_w[newly]
        residual -= np.bincount(le_link[newly], weights=taken, minlength=n_links)
        np.maximum(residual, 0.0, out=residual)
        le_flow, le_link = le_flow[~newly], le_link[~newly]
        if le_w is not None:
            le_w = le_w[~newly]
    return rate


def max_min_rates_small(
    flow_of_entry: Sequence[int],
    link_of_entry: Sequence[int],
    n_flows: int,
    capacity_Bps: Sequence[float] | np.ndarray,
    rate_cap_Bps: Sequence[float],
) -> list[float]:
    """:func:`max_min_rates` for a few flows, in plain Python: the same passes (freeze every flow
    on a link whose share is the smallest limit among its flows, or held by its own cap), the
    same tolerances, so both give the same allocation to float rounding. Every flow must cross
    at least one link."""
    links_of: list[list[int]] = [[] for _ in range(n_flows)]
    for f, link in zip(flow_of_entry, link_of_entry):
        links_of[f].append(link)
    residual = {link: float(capacity_Bps[link]) for link in set(link_of_entry)}
    rate = [0.0] * n_flows
    active = list(range(n_flows))
    inf = float("inf")
    while active:
        count: dict[int, int] = {}
        for f in active:
            for link in links_of[f]:
                count[link] = count.get(link, 0) + 1
        share = {link: residual[link] / c for link, c in count.items()}
        flow_min = [inf] * n_flows
        limit = [inf] * n_flows
        link_min = dict.fromkeys(count, inf)
        for f in active:
            m = min(share[link] for link in links_of[f])
            flow_min[f] = m
            lim = limit[f] = m if m < rate_cap_Bps[f] else rate_cap_Bps[f]
            for link in links_of[f]:
                if lim < link_min[link]:
                    link_min[link] = lim
        bottleneck = {link for link, sh in share.items() if sh <= link_min[link] * (1 + 1e-12)}
        still: list[int] = []
        used: dict[int, float] = {}
        for f in active:
            if rate_cap_Bps[f] <= flow_min[f] * (1 + 1e-12) or any(link in bottleneck for link in links_of[f]):
                r = rate[f] = limit[f]
                for link in links_of[f]:
                    used[link] = used.get(link, 0.0) + r
            else:
                still.append(f)
        if len(still) == len(active):
            raise RuntimeError("max-min water-filling made no progress")
        for link, r in used.items():
            left = residual[link] - r
            residual[link] = left if left > 0.0 else 0.0
        active = still
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


def is_max_min(
    routes: Sequence[Sequence[int]],
    caps: Sequence[float],
    rates: Sequence[float],
    capacity_Bps: Sequence[float] | np.ndarray,
    tol: float = 1e-9,
) -> bool:
    """Whether ``rates`` is the max-min fair allocation of flows ``routes`` (with rate caps
    ``caps``, ``inf`` for none) on links of ``capacity_Bps``, every flow on those links being
    among ``routes``: every rate positive and within its cap, no link loaded beyond its
    capacity, and every flow
    either at its cap or with a *bottleneck*, a saturated link on which no flow is faster. That
    allocation is unique (Bertsekas & Gallager, *Data Networks*, 2nd ed., §6.5.2), so rates
    that pass are those :func:`max_min_rates` gives, up to ``tol`` (relative)."""
    load: dict[int, float] = {}
    top: dict[int, float] = {}
    for links, r in zip(routes, rates):
        if not r > 0.0:
            return False
        for link in links:
            load[link] = load.get(link, 0.0) + r
            if r > top.get(link, 0.0):
                top[link] = r
    keep = 1.0 - tol
    if any(x > float(capacity_Bps[link]) * (1.0 + tol) for link, x in load.items()):
        return False
    for links, cap, r in zip(routes, caps, rates):
        if r >= cap * keep:
            if r > cap * (1.0 + tol):
                return False
            continue
        if not any(load[link] >= float(capacity_Bps[link]) * keep and r >= top[link] * keep for link in links):
            return False
    return True

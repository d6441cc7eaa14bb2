"""What the Perfetto export draws between and under the ranks: flow arrows joining the two ends
of each send and the members of each collective, and per-link utilisation counters.

* **Flows.** Every member of a collective records the same start (the rendezvous), so the
  instances are found by (member ranks, op name, start); the simulated members are chained in
  rank order by flow events (``ph: s``/``f``, bound to the enclosing slices). A send is joined
  to the receive its peer posted with the same key (:class:`simulator.schedule.ir.Transfer`;
  the peer is ``grid.peer(rank, axis, offset)``).
* **Link utilisation.** Each collective instance is planned again with the algorithm and
  protocol it ran with (:meth:`simulator.costs.model.CostModel.plan`), each send by its wire
  bytes on its route (:meth:`~simulator.costs.model.CostModel.p2p`, the price the replay used,
  userbuffers copies included); the bytes every flow puts on a link are spread evenly over the
  op's span, and the per-link sum over concurrent ops, divided by the link's capacity, is a
  step function: one counter track per link (the busiest ``max_links``), so the bottleneck link
  of a phase stands out. This is the op-average rate, not the instantaneous max-min share the
  replay computed (which it does not keep). In symmetric mode only the ops of simulated ranks
  are drawn, so replicas replayed by symmetry add nothing.
"""

from __future__ import annotations

import json
import math
from typing import Any, Iterable

import numpy as np

from simulator.costs.topology_view import TopologyView
from simulator.replay.trace import Trace
from simulator.schedule.ir import CommOp, P2POp, transfer_key

LINK_PID = 1_000_000  # the counters' process, after every rank


def _slice_ts(t: float) -> float:
    return t * 1e6


def flow_events(trace: Trace, ranks: Iterable[int], grid: Any | None) -> list[dict[str, Any]]:
    """Flow start/finish pairs for collectives (chained over simulated members) and sends."""
    ranks = list(ranks)
    shown = set(ranks)
    out: list[dict[str, Any]] = []
    next_id = 0
    seen: set[tuple] = set()
    for r in ranks:
        tl = trace.timelines[r]
        starts = tl.start.tolist()  # floats once, not a numpy scalar per op
        program = tl.program
        groups = tl.groups
        for i in sorted(groups):  # program order, as the ids are handed out
            op, group = program[i], groups[i]
            if not isinstance(op, CommOp) or len(group) < 2:
                continue
            key = (group, op.name, starts[i])
            if key in seen:
                continue
            seen.add(key)
            members = [m for m in group if m in shown]
            ts = _slice_ts(starts[i])
            for a, b in zip(members, members[1:]):
                out.append({"ph": "s", "id": next_id, "name": op.name, "cat": f"{op.op} flow", "pid": a,
                            "tid": _tid(trace, a, op.stream), "ts": ts, "bp": "e"})
                out.append({"ph": "f", "id": next_id, "name": op.name, "cat": f"{op.op} flow", "pid": b,
                            "tid": _tid(trace, b, op.stream), "ts": ts, "bp": "e"})
                next_id += 1
    if grid is None:
        return out
    recvs: dict[tuple[int, int, str], list[int]] = {}  # (receiver, sender, key) -> op indices in order
    for r in ranks:
        for i, op in enumerate(trace.timelines[r].program):
            if isinstance(op, P2POp):
                for t in op.recvs:
                    recvs.setdefault((r, grid.peer(r, t.axis, t.offset), transfer_key(op, t)), []).append(i)
    for r in ranks:
        tl = trace.timelines[r]
        for i, op in enumerate(tl.program):
            if not isinstance(op, P2POp):
                continue
            for t in op.sends:
                dst = grid.peer(r, t.axis, t.offset)
                msg = transfer_key(op, t)
                waiting = recvs.get((dst, r, msg))
                if dst == r or not waiting:
                    continue
                j = waiting.pop(0)
                dtl = trace.timelines[dst]
                name = f"send {msg}"
                out.append({"ph": "s", "id": next_id, "name": name, "cat": "sendrecv flow", "pid": r,
                            "tid": _tid(trace, r, op.stream), "ts": _slice_ts(float(tl.start[i])), "bp": "e"})
                out.append({"ph": "f", "id": next_id, "name": name, "cat": "sendrecv flow", "pid": dst,
                            "tid": _tid(trace, dst, dtl.program[j].stream), "ts": _slice_ts(float(dtl.start[j])),
                            "bp": "e"})
                next_id += 1
    return out


_TIDS: dict[tuple[int, int], dict[str, int]] = {}


def _tid(trace: Trace, rank: int, stream: str) -> int:
    key = (id(trace), rank)
    tids = _TIDS.get(key)
    if tids is None:
        if len(_TIDS) > 64:
            _TIDS.clear()
        tids = _TIDS[key] = {s: k for k, s in enumerate(trace.streams(rank))}
    return tids[stream]


def link_loads(trace: Trace, topology: TopologyView, grid: Any | None,
               ranks: Iterable[int]) -> dict[int, list[tuple[float, float, float]]]:
    """Per link id: (start s, end s, bytes/s) of every op's share of that link: a collective's
    plan as it ran (its recorded algorithm and protocol), a send's wire bytes on its route."""
    from simulator.costs.model import CostModel
    from simulator.errors import InputError

    costs = CostModel(topology)

    loads: dict[int, list[tuple[float, float, float]]] = {}
    plans: dict[tuple, Any] = {}

    def add(flows: Iterable[tuple[Iterable[int], float]], lo: float, hi: float) -> None:
        if hi <= lo:
            return
        per_link: dict[int, float] = {}
        for links, nbytes in flows:
            for link in links:
                per_link[link] = per_link.get(link, 0.0) + nbytes
        for link, nbytes in per_link.items():
            loads.setdefault(link, []).append((lo, hi, nbytes / (hi - lo)))

    def plan_of(*key: Any) -> Any:
        if key not in plans:
            op, members, size, algo, proto = key
            try:
                plans[key] = costs.plan(op, members, size, algo=algo or None, proto=proto or None)
            except InputError:
                plans[key] = None
        return plans[key]

    seen: set[tuple] = set()
    for r in ranks:
        tl = trace.timelines[r]
        starts, ends = tl.start.tolist(), tl.end.tolist()  # floats once, not a numpy scalar per op
        for i, op in enumerate(tl.program):
            if isinstance(op, CommOp):
                lo, hi = starts[i], ends[i]
                group = tl.groups.get(i, ())
                if len(group) < 2 or (group, op.name, lo) in seen:
                    continue
                seen.add((group, op.name, lo))
                algo, proto = tl.algorithm.get(i, ("", ""))
                plan = plan_of(op.op, group, op.size_bytes, algo, proto)
                if plan is not None:
                    add(((f.links, f.nbytes) for phase in plan.phases for f in phase), lo, hi)
            elif isinstance(op, P2POp) and grid is not None:
                lo, hi = starts[i], ends[i]
                for t in op.sends:
                    dst = grid.peer(r, t.axis, t.offset)
                    if dst != r and t.nbytes > 0:
                        # the send's own direction only, priced as the replay ran it (CostModel.p2p)
                        add([(topology.route(r, dst).links, costs.p2p(r, dst, t.nbytes, t.transport).wire_bytes)], lo, hi)
    return loads


def _counter_tracks(trace: Trace, topology: TopologyView, grid: Any | None, ranks: Iterable[int],
                    max_links: int) -> list[tuple[str, list[float], list[float]]]:
    """Per busiest link (at most ``max_links``, busiest first): its track name, the instants
    (microseconds) where its utilisation changes, and the utilisation from each on."""
    loads = link_loads(trace, topology, grid, list(ranks))
    if not loads:
        return []
    cap = topology.capacity_Bps
    busiest = sorted(loads, key=lambda l: -sum((hi - lo) * rate for lo, hi, rate in loads[l]) / cap[l])[:max_links]
    ends = _link_ends(topology)
    tracks = []
    for link in busiest:
        u, v = ends.get(link, ("?", "?"))
        times, levels = _step_function(loads[link])
        c = float(cap[link])
        tracks.append((f"link {link} {topology.kind[link]} {u}->{v}", (times * 1e6).tolist(),
                       [round(level / c, 6) for level in np.maximum(levels, 0.0).tolist()]))
    return tracks


def _counter_process() -> list[dict[str, Any]]:
    return [{"ph": "M", "name": "process_name", "pid": LINK_PID, "args": {"name": "links (utilisation, op average)"}},
            {"ph": "M", "name": "process_sort_index", "pid": LINK_PID, "args": {"sort_index": LINK_PID}}]


def utilisation_counters(trace: Trace, topology: TopologyView, grid: Any | None, ranks: Iterable[int],
                         max_links: int = 32) -> list[dict[str, Any]]:
    """Counter events (``ph: C``) of the busiest links' utilisation, in their own process."""
    tracks = _counter_tracks(trace, topology, grid, ranks, max_links)
    if not tracks:
        return []
    out = _counter_process()
    for name, times, levels in tracks:
        out += [{"ph": "C", "name": name, "pid": LINK_PID, "ts": ts, "args": {"utilisation": level}}
                for ts, level in zip(times, levels)]
    return out


def utilisation_counters_json(trace: Trace, topology: TopologyView, grid: Any | None, ranks: Iterable[int],
                              max_links: int = 32) -> list[str]:
    """:func:`utilisation_counters` as JSON text, one string per event, written directly: a
    1,024-GPU GPT-3 step draws ~450,000 counter steps, whose dicts and their encoding cost
    seconds. A non-finite value goes through ``json.dumps`` (``NaN``, as elsewhere)."""
    tracks = _counter_tracks(trace, topology, grid, ranks, max_links)
    if not tracks:
        return []
    dumps = json.dumps
    out = [dumps(e) for e in _counter_process()]
    for name, times, levels in tracks:
        head = f'{{"ph":"C","name":{dumps(name)},"pid":{LINK_PID},"ts":'
        if all(map(math.isfinite, times)) and all(map(math.isfinite, levels)):
            out += [f'{head}{ts!r},"args":{{"utilisation":{level!r}}}}}' for ts, level in zip(times, levels)]
        else:
            out += [dumps({"ph": "C", "name": name, "pid": LINK_PID, "ts": ts, "args": {"utilisation": level}})
                    for ts, level in zip(times, levels)]
    return out


def _step_function(spans: list[tuple[float, float, float]]) -> tuple[np.ndarray, np.ndarray]:
    """The instants where a sum of (start, end, rate) boxes changes, in order, and the sum from
    each on: every box adds its rate at its start and takes it back at its end; the changes at
    one instant are summed in the order of ``spans``, then accumulated in time order (the same
    float operations, in the same order, as a dict of deltas walked in sorted order; sorting
    and accumulating in numpy keeps a 14,000-op link track from costing seconds)."""
    a = np.asarray(spans, dtype=float).reshape(-1, 3)
    t = a[:, :2].ravel()  # lo0, hi0, lo1, hi1, ...: the order the deltas are added in
    d = np.empty_like(t)
    d[0::2], d[1::2] = a[:, 2], -a[:, 2]
    times, slot = np.unique(t, return_inverse=True)
    deltas = np.zeros(len(times))
    np.add.at(deltas, slot.ravel(), d)
    return times, np.cumsum(deltas)


def _link_ends(topology: TopologyView) -> dict[int, tuple[str, str]]:
    graph = getattr(topology, "graph", None)  # Topology's networkx view; a TopologyView need not have one
    if graph is None:  # name links by id only
        return {}
    try:
        return {d["link"]: (u, v) for u, v, d in graph.edges(data=True)}
    except Exception:  # a graph of another shape: the same
        return {}

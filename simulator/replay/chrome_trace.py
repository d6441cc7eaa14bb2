"""Export a Trace as Chrome trace-event JSON (opens in https://ui.perfetto.dev).

One process per simulated rank, one thread per stream (compute first), one complete ("X")
event per op with its name, kind, bytes, group and algorithm in ``args``; a rendezvous wait
appears as a separate "wait" slice before the op so idle time is visible. Given the schedule's
grid and the topology, flow arrows join the ends of each send and the members of each
collective, and counter tracks show the busiest links' utilisation
(:mod:`simulator.replay.trace_links`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable

from simulator.costs.topology_view import TopologyView
from simulator.files import write_atomically
from simulator.replay.trace import Trace


def chrome_trace_events(trace: Trace, ranks: Iterable[int] | None = None, *, grid: Any | None = None,
                        topology: TopologyView | None = None) -> list[dict[str, Any]]:
    ranks = list(trace.ranks if ranks is None else ranks)
    events: list[dict[str, Any]] = []
    for rank in ranks:
        tids = {s: k for k, s in enumerate(trace.streams(rank))}
        events.append({"ph": "M", "name": "process_name", "pid": rank, "args": {"name": f"rank {rank}"}})
        events.append({"ph": "M", "name": "process_sort_index", "pid": rank, "args": {"sort_index": rank}})
        for s, tid in tids.items():
            events.append({"ph": "M", "name": "thread_name", "pid": rank, "tid": tid, "args": {"name": s}})
            events.append({"ph": "M", "name": "thread_sort_index", "pid": rank, "tid": tid, "args": {"sort_index": tid}})
        for rec in trace.records(rank):
            tid = tids[rec.stream]
            args: dict[str, Any] = {"kind": rec.kind, "bytes": rec.bytes, "op_index": rec.index}
            if rec.group:
                args["group"] = list(rec.group)
            if rec.algorithm:
                args["algorithm"] = rec.algorithm
                args["protocol"] = rec.protocol
            if rec.kind != "compute" and rec.wait > 0:
                events.append({"ph": "X", "name": f"wait {rec.name}", "cat": "wait", "pid": rank, "tid": tid,
                               "ts": rec.ready * 1e6, "dur": rec.wait * 1e6})
            events.append({"ph": "X", "name": rec.name, "cat": rec.kind, "pid": rank, "tid": tid,
                           "ts": rec.start * 1e6, "dur": max(rec.duration, 0.0) * 1e6, "args": args})
    from simulator.replay.trace_links import flow_events, utilisation_counters

    events += flow_events(trace, ranks, grid)
    if topology is not None:
        events += utilisation_counters(trace, topology, grid, ranks)
    return events


def chrome_trace_json(trace: Trace, ranks: Iterable[int] | None = None,
                      inputs: dict[str, Any] | None = None, *, grid: Any | None = None,
                      topology: TopologyView | None = None) -> str:
    """The trace document as JSON text; ``inputs`` (what the run was computed from) goes in
    ``otherData``, which Perfetto shows as the trace's metadata."""
    other: dict[str, Any] = {"ranks": trace.stats.ranks, "ranks_simulated": trace.stats.ranks_simulated}
    if inputs:
        other["inputs"] = inputs
    doc = {"traceEvents": chrome_trace_events(trace, ranks, grid=grid, topology=topology), "displayTimeUnit": "ms",
           "otherData": other}
    return json.dumps(doc)


def write_chrome_trace(trace: Trace, path: str | Path, ranks: Iterable[int] | None = None,
                       inputs: dict[str, Any] | None = None, *, grid: Any | None = None,
                       topology: TopologyView | None = None) -> Path:
    """Write the trace to ``path`` atomically; gzip-compressed when the name ends in ``.gz``
    (Perfetto opens both)."""
    return write_atomically(path, chrome_trace_json(trace, ranks, inputs, grid=grid, topology=topology))

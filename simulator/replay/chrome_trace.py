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
from typing import Any, Iterable, Iterator

import numpy as np

from simulator.costs.topology_view import TopologyView
from simulator.files import write_atomically
from simulator.replay.trace import Trace, op_bytes, op_kind


def _program_columns(trace: Trace, rank: int) -> tuple[dict[str, int], list[tuple[str, int, str, int, bool]]]:
    """What the events of a rank take from its program, which its role shares with others:
    per op its name, thread id, kind and bytes, and whether it is communication."""
    tids = {s: k for k, s in enumerate(trace.streams(rank))}
    cols = []
    for op in trace.timelines[rank].program:
        kind = op_kind(op)
        cols.append((op.name, tids[op.stream], kind, op_bytes(op), kind != "compute"))
    return tids, cols


def _columns(trace: Trace, rank: int, programs: dict) -> tuple[dict[str, int], list[tuple[str, int, str, int, bool]]]:
    key = id(trace.timelines[rank].program)
    if key not in programs:
        programs[key] = _program_columns(trace, rank)
    return programs[key]


def _rank_metadata(rank: int, tids: dict[str, int]) -> list[dict[str, Any]]:
    """The rank's process and its streams' threads, compute first."""
    out: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": rank, "args": {"name": f"rank {rank}"}},
        {"ph": "M", "name": "process_sort_index", "pid": rank, "args": {"sort_index": rank}}]
    for s, tid in tids.items():
        out.append({"ph": "M", "name": "thread_name", "pid": rank, "tid": tid, "args": {"name": s}})
        out.append({"ph": "M", "name": "thread_sort_index", "pid": rank, "tid": tid, "args": {"sort_index": tid}})
    return out


def _rank_ops(tl: Any, cols: list[tuple[str, int, str, int, bool]]) -> Iterator[tuple]:
    """Per op of a rank: index, name, thread, kind, bytes, the (ts, dur) of its rendezvous wait
    (a communication op that waited; else None), and its own ts and dur, in microseconds."""
    ready_ts = (tl.ready * 1e6).tolist()
    start_ts = (tl.start * 1e6).tolist()
    wait = tl.start - tl.ready
    waited = (wait > 0).tolist()
    wait_dur = (wait * 1e6).tolist()
    dur = (np.maximum(tl.end - tl.start, 0.0) * 1e6).tolist()
    for i, (name, tid, kind, nbytes, comm) in enumerate(cols):
        yield (i, name, tid, kind, nbytes, (ready_ts[i], wait_dur[i]) if comm and waited[i] else None,
               start_ts[i], dur[i])


def _program_json(cols: list[tuple[str, int, str, int, bool]]) -> list[tuple[str, str, str]]:
    """Per op of a program the JSON text its slices repeat on every rank of the role: the wait
    slice's name, the op's name and category, and the kind again in ``args``."""
    dumps = json.dumps
    out = []
    for name, _tid, kind, _nbytes, _comm in cols:
        jkind = dumps(kind)
        out.append((dumps("wait " + name), f'"name":{dumps(name)},"cat":{jkind}', jkind))
    return out


def _rank_slices_json(trace: Trace, rank: int, cols: list[tuple[str, int, str, int, bool]],
                      texts: list[tuple[str, str, str]] | None = None) -> list[str]:
    """The rank's slices of :func:`chrome_trace_events` as JSON text, written directly: at a
    few hundred thousand ops, building a dict per slice and encoding it cost twice this; the
    names and kinds are encoded once per program (``texts``, :func:`_program_json`), not per rank."""
    tl = trace.timelines[rank]
    dumps = json.dumps
    if texts is None:
        texts = _program_json(cols)
    out: list[str] = []
    append = out.append
    head = f',"pid":{rank},"tid":'
    groups, algorithms = tl.groups, tl.algorithm
    for i, _name, tid, _kind, nbytes, wait, ts, dur in _rank_ops(tl, cols):
        extra = ""
        group = groups.get(i)
        if group:
            extra = ',"group":[' + ",".join(map(str, group)) + "]"
        algo = algorithms.get(i)
        if algo is not None and algo[0]:
            extra += f',"algorithm":{dumps(algo[0])},"protocol":{dumps(algo[1])}'
        jwait, jnamecat, jkind = texts[i]
        if wait is not None:
            append(f'{{"ph":"X","name":{jwait},"cat":"wait"{head}{tid},"ts":{wait[0]!r},'
                   f'"dur":{wait[1]!r}}}')
        append(f'{{"ph":"X",{jnamecat}{head}{tid},"ts":{ts!r},"dur":{dur!r},'
               f'"args":{{"kind":{jkind},"bytes":{nbytes},"op_index":{i}{extra}}}}}')
    return out


def chrome_trace_events(trace: Trace, ranks: Iterable[int] | None = None, *, grid: Any | None = None,
                        topology: TopologyView | None = None) -> list[dict[str, Any]]:
    """The trace's events: per rank its process and stream threads, one complete ("X") slice
    per op (the fields of :meth:`Trace.records`), a "wait" slice before a communication op that
    waited at its rendezvous, then the flow arrows and link counters. Read column by column
    from the timelines' arrays and from each distinct program once (ranks of one role share it);
    :meth:`Trace.records` builds an object per op, which at 344,329 ops of GPT-3 175B cost more
    than the replay."""
    ranks = list(trace.ranks if ranks is None else ranks)
    events: list[dict[str, Any]] = []
    append = events.append
    programs: dict[int, tuple[dict[str, int], list[tuple[str, int, str, int, bool]]]] = {}
    for rank in ranks:
        tids, cols = _columns(trace, rank, programs)
        events += _rank_metadata(rank, tids)
        tl = trace.timelines[rank]
        for i, name, tid, kind, nbytes, wait, ts, dur in _rank_ops(tl, cols):
            args: dict[str, Any] = {"kind": kind, "bytes": nbytes, "op_index": i}
            group = tl.groups.get(i)
            if group:
                args["group"] = list(group)
            algo = tl.algorithm.get(i)
            if algo is not None and algo[0]:
                args["algorithm"], args["protocol"] = algo
            if wait is not None:
                append({"ph": "X", "name": f"wait {name}", "cat": "wait", "pid": rank, "tid": tid,
                        "ts": wait[0], "dur": wait[1]})
            append({"ph": "X", "name": name, "cat": kind, "pid": rank, "tid": tid, "ts": ts, "dur": dur, "args": args})
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
    from simulator.replay.trace_links import flow_events, utilisation_counters_json

    # the events of chrome_trace_events, in its order; the slices written as text directly
    ranks = list(trace.ranks if ranks is None else ranks)
    dumps = json.dumps
    parts: list[str] = []
    programs: dict[int, tuple[dict[str, int], list[tuple[str, int, str, int, bool]]]] = {}
    texts: dict[int, list[tuple[str, str, str]]] = {}
    for rank in ranks:
        tids, cols = _columns(trace, rank, programs)
        parts += map(dumps, _rank_metadata(rank, tids))
        tl = trace.timelines[rank]
        if all(np.isfinite(a).all() for a in (tl.ready, tl.start, tl.end)):
            if id(cols) not in texts:
                texts[id(cols)] = _program_json(cols)
            parts += _rank_slices_json(trace, rank, cols, texts[id(cols)])
        else:  # repr() of nan/inf is not JSON: let json.dumps write them (NaN, Infinity) as it does elsewhere
            parts += [dumps(e) for e in chrome_trace_events(trace, [rank]) if e["ph"] == "X"]
    parts += map(dumps, flow_events(trace, ranks, grid))
    if topology is not None:
        parts += utilisation_counters_json(trace, topology, grid, ranks)
    return ('{"traceEvents":[' + ",\n".join(parts) + '],"displayTimeUnit":"ms","otherData":' + dumps(other) + "}")


def write_chrome_trace(trace: Trace, path: str | Path, ranks: Iterable[int] | None = None,
                       inputs: dict[str, Any] | None = None, *, grid: Any | None = None,
                       topology: TopologyView | None = None) -> Path:
    """Write the trace to ``path`` atomically; gzip-compressed when the name ends in ``.gz``
    (Perfetto opens both)."""
    return write_atomically(path, chrome_trace_json(trace, ranks, inputs, grid=grid, topology=topology))

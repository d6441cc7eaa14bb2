"""Mutable state of one replay: what every rank of a role shares (``RoleTable``), each simulated
rank's timeline and stream bookkeeping (``RankState``), and a collective waiting for its members
(``Rendezvous``)."""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any, Callable, Sequence

import numpy as np
import simpy

from simulator.costs.model import CostModel
from simulator.schedule.ir import CommOp, Op, P2POp


class RoleTable:
    """What every rank of one role shares: its program, per-stream op lists, compute times."""

    def __init__(self, program: Sequence[Op], costs: CostModel, like: "RoleTable | None" = None,
                 stamps: Sequence[tuple[int, tuple[Op, ...], Any]] = ()) -> None:
        self.program = program
        # The ops in front that ``like`` (an earlier table of this role: a fold's small reduced
        # step, replayed before its large one) has too, at the same positions: their entries are
        # ``like``'s (every entry of an op depends on it and the ops before it alone), and the
        # pass below starts after them. 57% of a GPT-3 175B tp4 pp8 role's large reduced step:
        # the builds share the stamps of their first micro-batches.
        front = _same_front(program, like.program) if like is not None else 0
        # (alone, wholly beside communication): compute_time(op, gpu, overlapped) is t x (1 +
        # slowdown); the replay charges the second only while communication runs (engine._retime).
        # A kernel scheduled with sm_fraction < 1 already gave up the SMs of the communication
        # kernel it runs beside (TransformerEngine userbuffers); the generic slowdown for NCCL
        # kernels competing for SMs is not applied to it a second time.
        slow = 1.0 + costs.gpu.overlap_slowdown
        self.dt: list[tuple[float, float] | None] = []
        self.streams: dict[str, list[int]] = {}
        # Distinct collective signatures (stream, axes, op, size) and P2P directions (axis,
        # offset, is_send): what decides which links a rank of this role can ever use.
        self.collectives: set[tuple[str, tuple[str, ...], str, int]] = set()
        self.p2p_dirs: set[tuple[str, int, bool]] = set()
        # When the host has issued each op (costs/host.py): no op starts earlier. A cost model
        # without host costs (a test's stand-in) issues everything at once.
        # ``stamps``: the program's stamped layer passes (``ProgramBuilder.stamps``), whose
        # kernel times and host costs are priced once per template (_priced_by_stamps).
        issue = getattr(costs, "issue_times", None)
        hosts_of = getattr(costs, "host_costs", None) if issue is not None else None
        times: Sequence[float | None] | None = None
        hosts: list[float] | None = None
        runs = _stamped_runs(program, front, stamps) if stamps else []
        if runs:
            times, hosts = _priced_by_stamps(program, front, runs, costs.compute_times, hosts_of)
        if issue is None:
            self.issue: list[float] = [0.0] * len(program)
        elif times is not None and hosts is not None:
            # the running sum issue_times adds, in the same order from the same start
            issued = list(accumulate(hosts, initial=like.issue[front - 1] if front and like is not None else 0.0))
            del issued[0]
            self.issue = like.issue[:front] + issued if front and like is not None else issued
        elif front and like is not None:
            self.issue = like.issue[:front] + list(issue(program[front:], like.issue[front - 1]))
        else:
            self.issue = list(issue(program))
        # Host synchronisations (ComputeOp.host_sync): for each op, the last op before it in
        # program order after which the host waited for the GPU (-1: none), or None when the
        # program has none. Such an op is issued ``issue[i] - issue[s]`` after op s has ended.
        # (the synchronising ops are listed by the pass below, ``syncs``; ``like``'s in front)
        self.synced_after: list[int] | None = None
        self.syncs: list[int] = [s for s in like.syncs if s < front] if front and like is not None else []
        # For runs of kernels replayed as one timed block (engine._compute_run): the ops an op
        # of another stream waits for, with those waiting ops (a run ends there, so that op's
        # end can wake them, unless the one waiting is a collective the run takes in), each
        # op's dependencies on other streams (a run goes on only while they are done), and the
        # op before each op on its stream (a collective taken into a run must be next on it).
        self.watchers: dict[int, list[int]] = {}
        # The ops an op of a stream other than compute waits for, with the first such op: a
        # collective awaited off the compute stream is never taken into a block
        # (engine._absorbable), a set look-up instead of a walk of its watchers per ask.
        self.side_watched: dict[int, int] = {}
        self.cross_deps: list[tuple[int, ...]] = []
        self.stream_pred: list[int] = []
        # One pass over the program (a deep pipeline's role holds tens of thousands of ops), its
        # attribute look-ups bound once: this table is built for every role of every replay.
        streams, watchers, dt, cross_deps, stream_pred = (self.streams, self.watchers, self.dt, self.cross_deps,
                                                          self.stream_pred)
        side_watched = self.side_watched
        # Whether a kernel of this role runs on a stream other than compute (ZeRO-3's unflatten
        # copies): then a collective may run beside a kernel outside the compute blocks, and a
        # block takes in only collectives whose links are their own (engine._absorbable).
        self.side_kernels = False
        stream_of: list[str] = []
        self.stream_of = stream_of  # each op's stream
        no_deps: tuple[int, ...] = ()
        add_collective = self.collectives.add
        p2p_dirs = self.p2p_dirs

        def note_communication(op: Op, stream: str) -> None:
            """Record a collective's (stream, group, kind, size) or a send/recv's directions."""
            if isinstance(op, CommOp):
                add_collective((stream, op.axes, op.op, op.size_bytes))
            elif isinstance(op, P2POp):
                p2p_dirs.update([(x.axis, x.offset, True) for x in op.sends])
                p2p_dirs.update([(x.axis, x.offset, False) for x in op.recvs])

        side = False
        if front and like is not None:
            dt.extend(like.dt[:front])
            stream_of.extend(like.stream_of[:front])
            cross_deps.extend(like.cross_deps[:front])
            stream_pred.extend(like.stream_pred[:front])
            for stream, listed in like.streams.items():  # (in order of first use, as built)
                cut = bisect_left(listed, front)
                if cut:
                    streams[stream] = listed[:cut]
            for d, waiting in like.watchers.items():
                if d < front:
                    cut = bisect_left(waiting, front)
                    if cut:
                        watchers[d] = waiting[:cut]
            for d, first in like.side_watched.items():
                if first < front:
                    side_watched[d] = first
            for op, entry, stream in zip(program[:front], dt, stream_of):
                if entry is None:
                    note_communication(op, stream)
                elif stream != "compute":
                    side = True
        add_dt, add_cross, add_pred, add_stream = dt.append, cross_deps.append, stream_pred.append, stream_of.append
        # (alone, beside) of each distinct kernel time, made once: the step repeats a few dozen
        # kernels thousands of times
        pairs: dict[tuple[float, bool], tuple[float, float]] = {}
        if times is None:
            times = costs.compute_times(program[front:] if front else program)
        add_sync = self.syncs.append
        # The ops between the stamped layer passes one by one; each stamp (_stamped_runs) by its
        # template's entries (_StampPlan), once per template: the same entries, in the same order.
        plans: dict[int, tuple[Any, _StampPlan]] = {}

        def watch(i: int, cross: tuple[int, ...], stream: str) -> None:
            """Op ``i`` (on ``stream``) waits for the ops ``cross`` of other streams: it is their
            watcher, and the first op other than compute waiting for one is its side watcher."""
            for d in cross:
                w = watchers.get(d)
                if w is None:
                    watchers[d] = [i]
                else:
                    w.append(i)
            if stream != "compute":
                for d in cross:
                    if d not in side_watched:
                        side_watched[d] = i

        done = front
        i = front - 1
        segments: list[tuple[int, tuple[Op, ...], Any]] = [*runs, (len(program), (), None)]
        for start, seg, origin in segments:
            for op, t in zip(program[done:start], times[done - front:start - front]):
                i += 1
                stream = op.stream
                add_stream(stream)
                ops_of = streams.get(stream)
                if ops_of is None:
                    streams[stream] = [i]
                    add_pred(-1)
                else:
                    add_pred(ops_of[-1])
                    ops_of.append(i)
                if t is None:
                    add_dt(None)
                    if type(op) is CommOp:  # (note_communication written out for the common case)
                        add_collective((stream, op.axes, op.op, op.size_bytes))
                    else:
                        note_communication(op, stream)
                else:
                    shared = getattr(op, "sm_fraction", 1.0) < 1.0
                    pair = pairs.get((t, shared))
                    if pair is None:
                        pair = pairs[(t, shared)] = (t, t if shared else t * slow)
                    add_dt(pair)
                    if stream != "compute":
                        side = True
                if getattr(op, "host_sync", False):
                    add_sync(i)
                deps = op.deps
                if not deps:
                    add_cross(no_deps)
                    continue
                cross: tuple[int, ...]
                if len(deps) == 1:
                    if stream_of[deps[0]] == stream:
                        add_cross(no_deps)
                        continue
                    cross = deps
                else:
                    cross = tuple([d for d in deps if stream_of[d] != stream])
                add_cross(cross)
                watch(i, cross, stream)
            if origin is None:
                break
            n = len(seg)
            hit = plans.get(id(origin))
            if hit is None or hit[0] is not origin:
                plan = _StampPlan(seg, start, times[start - front:start - front + n], pairs, slow)
                hit = plans[id(origin)] = (origin, plan)
                for op, entry, stream in zip(seg, plan.dt, plan.streams):  # once per template: sets
                    if entry is None:
                        note_communication(op, stream)
                side = side or plan.side
            plan = hit[1]
            stream_of.extend(plan.streams)
            dt.extend(plan.dt)
            lasts = {name: (streams[name][-1] if name in streams else -1) for name, _ in plan.by_stream}
            stream_pred.extend([start + p if p >= 0 else lasts[name] for p, name in zip(plan.pred, plan.streams)])
            for name, ks in plan.by_stream:
                ops_of = streams.get(name)
                if ops_of is None:
                    streams[name] = [start + k for k in ks]
                else:
                    ops_of.extend([start + k for k in ks])
            if plan.syncs:
                self.syncs.extend([start + k for k in plan.syncs])
            cross_deps.extend(plan.no_cross)
            if plan.inner is not None:
                singles, multiples, watching, side_first = plan.inner
                for k, d in singles:
                    cross_deps[start + k] = (start + d,)
                for k, offsets in multiples:
                    cross_deps[start + k] = tuple([start + d for d in offsets])
                for d, ks in watching:  # (no op before the pass waits for one in it)
                    watchers[start + d] = [start + ks[0]] if len(ks) == 1 else [start + k for k in ks]
                for d, k in side_first:
                    side_watched[start + d] = start + k
            for k, offsets in plan.waits:
                i = start + k
                stream = plan.streams[k]
                if offsets is None:  # it waits for an op before the stamp: looked up as above
                    deps = seg[k].deps
                    if len(deps) == 1:
                        if stream_of[deps[0]] == stream:
                            continue
                        cross = deps
                    else:
                        cross = tuple([d for d in deps if stream_of[d] != stream])
                        if not cross:
                            continue
                else:
                    cross = tuple([start + d for d in offsets])
                cross_deps[i] = cross
                watch(i, cross, stream)
            i = start + n - 1
            done = start + n
        self.side_kernels = side
        # Host synchronisations (ComputeOp.host_sync): for each op, the last op before it in
        # program order after which the host waited for the GPU (-1: none), or None when the
        # program has none (or no host costs). Such an op is issued ``issue[i] - issue[s]``
        # after op s has ended.
        if self.syncs and issue is not None:
            after = [-1] * len(program)
            bounds = self.syncs + [len(program) - 1]
            for s, nxt in zip(bounds, bounds[1:]):
                after[s + 1:nxt + 1] = [s] * (nxt - s)
            self.synced_after = after


def _stamped_runs(program: Sequence[Op], lo: int, stamps: Sequence[tuple[int, tuple[Op, ...], Any]]
                  ) -> list[tuple[int, tuple[Op, ...], Any]]:
    """The stamped layer passes of ``program`` from op ``lo`` on (``ProgramBuilder.stamps``), each
    as (start, its ops, the template it was stamped from, or the one that template was relabeled
    from: ``_Template.origin``), in program order. A stamp counts only while the program still
    holds its ops (``tuple`` equality, as the sweep's bound, sweep/bound.py ``_priced_program``):
    an op replaced or moved after the build (a test's longer kernel, MoE's SM share, combined
    1F1B's order) leaves its pass to be read op by op."""
    runs = []
    done = lo
    for start, seg, tpl in stamps:
        n = len(seg)
        if start < done or tuple(program[start:start + n]) != seg:
            continue
        runs.append((start, seg, tpl.origin or tpl))
        done = start + n
    return runs


def _priced_by_stamps(program: Sequence[Op], lo: int, runs: Sequence[tuple[int, tuple[Op, ...], Any]],
                      compute_times: Callable[[Sequence[Op]], list[float | None]],
                      host_costs: Callable[[Sequence[Op]], list[float]] | None
                      ) -> tuple[list[float | None], list[float] | None]:
    """Each kernel time of ``program[lo:]`` (``CostModel.compute_times``) and each op's host cost
    (``CostModel.host_costs``, None without it), the stamped passes (:func:`_stamped_runs`)
    priced once per template. A stamp's ops are its template's but their dependencies, tags and
    names (transformer._stamp_ops; a relabeled template's differ from its origin's in their
    names alone): neither price reads those but the tag's phase and whether the name ends in
    ``.recompute`` (costs/host.py, costs/compute.py ``_is_backward``), which a stamp keeps."""
    times: list[float | None] = []
    hosts: list[float] | None = [] if host_costs is not None else None
    passes: dict[int, tuple[Any, list[float | None], list[float] | None]] = {}
    done = lo

    def one_by_one(a: int, b: int) -> None:
        part = program[a:b]
        times.extend(compute_times(part))
        if hosts is not None and host_costs is not None:
            hosts.extend(host_costs(part))

    for start, seg, tpl in runs:
        if done < start:
            one_by_one(done, start)
        hit = passes.get(id(tpl))
        if hit is None or hit[0] is not tpl:
            hit = passes[id(tpl)] = (tpl, compute_times(seg), host_costs(seg) if host_costs is not None else None)
        times.extend(hit[1])
        if hosts is not None and hit[2] is not None:
            hosts.extend(hit[2])
        done = start + len(seg)
    one_by_one(done, len(program))
    return times, hosts


class _StampPlan:
    """A stamped pass's entries in a role table (``RoleTable``), relative to its first op: the same
    for every stamp of its template (its ops' streams, kernel times, host synchronisations and
    dependencies inside the pass are the template's; a dependency on an op before the pass,
    its ``after`` and waits, is looked up per stamp). Made from one stamp at ``start``."""

    __slots__ = ("streams", "dt", "side", "syncs", "pred", "by_stream", "no_cross", "waits", "inner")

    def __init__(self, seg: tuple[Op, ...], start: int, times: Sequence[float | None],
                 pairs: dict[tuple[float, bool], tuple[float, float]], slow: float) -> None:
        self.streams = tuple(op.stream for op in seg)
        dt: list[tuple[float, float] | None] = []
        self.side = False
        for op, t, stream in zip(seg, times, self.streams):
            if t is None:
                dt.append(None)
                continue
            shared = getattr(op, "sm_fraction", 1.0) < 1.0
            pair = pairs.get((t, shared))
            if pair is None:
                pair = pairs[(t, shared)] = (t, t if shared else t * slow)
            dt.append(pair)
            if stream != "compute":
                self.side = True
        self.dt = tuple(dt)
        self.syncs = tuple(k for k, op in enumerate(seg) if getattr(op, "host_sync", False))
        # each op's predecessor on its stream inside the pass (-1: the stream's last op before it)
        last: dict[str, int] = {}
        pred: list[int] = []
        by_stream: dict[str, list[int]] = {}  # (in order of first use)
        for k, stream in enumerate(self.streams):
            pred.append(last.get(stream, -1))
            last[stream] = k
            by_stream.setdefault(stream, []).append(k)
        self.pred = tuple(pred)
        self.by_stream = tuple((s, tuple(ks)) for s, ks in by_stream.items())
        self.no_cross: tuple[tuple[int, ...], ...] = ((),) * len(seg)
        # The ops that may wait for another stream: (k, the offsets of those it waits for inside
        # the pass), or (k, None) where it waits for an op before the pass (looked up per stamp).
        # Where no op of the latter waits for one inside the pass on another stream, the ops
        # that wait inside it alone are entered at once (``inner``): their cross-stream waits,
        # each waited-for op's waiting ops (all in the pass, in order) and its first one off the
        # compute stream; ``waits`` then holds the others.
        streams = self.streams
        waits: list[tuple[int, tuple[int, ...] | None]] = []
        inside: list[tuple[int, tuple[int, ...]]] = []
        mixed = False
        for k, op in enumerate(seg):
            deps = op.deps
            if not deps:
                continue
            if min(deps) < start:
                waits.append((k, None))
                mixed = mixed or any(d >= start and streams[d - start] != streams[k] for d in deps)
                continue
            offsets = tuple(d - start for d in deps if streams[d - start] != streams[k])
            if offsets:
                waits.append((k, offsets))
                inside.append((k, offsets))
        self.inner: tuple[tuple, tuple, tuple, tuple] | None = None
        if not mixed:
            watching: dict[int, list[int]] = {}
            side_first: dict[int, int] = {}
            for k, offsets in inside:
                for d in offsets:
                    watching.setdefault(d, []).append(k)
                    if streams[k] != "compute":
                        side_first.setdefault(d, k)
            self.inner = (tuple((k, offsets[0]) for k, offsets in inside if len(offsets) == 1),
                          tuple((k, offsets) for k, offsets in inside if len(offsets) > 1),
                          tuple((d, tuple(ks)) for d, ks in watching.items()), tuple(side_first.items()))
            waits = [(k, offsets) for k, offsets in waits if offsets is None]
        self.waits = tuple(waits)


# Fewer ops in front in common than this: the table is built from scratch.
_FRONT_MIN = 256


def _same_front(program: Sequence[Op], other: Sequence[Op]) -> int:
    """How many ops in front ``program`` and ``other`` have in common: the same objects (the
    stamped passes the builds share), or equal (the few built afresh each time); 0 below
    _FRONT_MIN."""
    n = min(len(program), len(other))
    k = 0
    while k < n and (program[k] is other[k] or program[k] == other[k]):
        k += 1
    return k if k >= _FRONT_MIN else 0


_NAN = float("nan")


class RankState:
    """Mutable state of one simulated rank during the replay."""

    __slots__ = ("rank", "role", "table", "ready", "start", "end", "done", "waiters", "inflight",
                 "coll_seq", "blocked", "algorithm", "groups", "n_done", "running", "run", "absorb",
                 "handed", "coll_sigs")

    def __init__(self, rank: int, role: Any, table: RoleTable) -> None:
        n = len(table.program)
        self.rank = rank
        self.role = role
        self.table = table
        # Python lists while the replay runs (a store costs less than a numpy one: the streams
        # write every op's times, a compute block its dozens at once), numpy arrays once it has
        # run (Replayer.run: finished)
        self.ready: Any = [_NAN] * n
        self.start: Any = [_NAN] * n
        self.end: Any = [_NAN] * n
        self.done = bytearray(n)
        self.n_done = 0
        self.waiters: dict[int, simpy.Event] = {}
        self.inflight = 0
        # stream -> the slowable kernel running on it outside a block (engine._retime): [planned
        # end, slowed now, the timer its stream waits on, the time that timer fires at]
        self.running: dict[str, list[Any]] = {}
        self.run: ComputeRun | None = None  # the run of kernels replayed as one block, if any
        # (axes, kind, size, stream) of a collective -> its Absorbable when a compute run may
        # take it in (engine._absorbable), None when it may not; filled as asked
        self.absorb: dict[tuple[tuple[str, ...], str, int, str], Absorbable | None] = {}
        # collective -> (its start, the event of its end): a collective a compute block had
        # taken in and handed back to the network when other traffic met its links mid-flight
        # (engine._hand_back); its stream waits for that event instead of running it
        self.handed: dict[int, tuple[float, simpy.Event]] = {}
        self.coll_seq: dict[str, int] = {}
        # (axes, kind, size, stream) of a collective -> its group and plan here (engine._coll_sig)
        self.coll_sigs: dict[tuple[tuple[str, ...], str, int, str], Any] = {}
        # stream -> (op index, what it waits for: a dependency's index, or "rendezvous"/"send/recv")
        self.blocked: dict[str, tuple[int, int | str]] = {}
        self.algorithm: dict[int, tuple[str, str]] = {}
        self.groups: dict[int, tuple[int, ...]] = {}

    def finished(self) -> None:
        """The replay has run: its op times become the arrays the trace keeps."""
        if isinstance(self.ready, list):
            self.ready = np.array(self.ready, dtype=np.float64)
            self.start = np.array(self.start, dtype=np.float64)
            self.end = np.array(self.end, dtype=np.float64)


@dataclass(frozen=True)
class Absorbable:
    """A collective a compute block may take in (engine._absorbable): ``alone`` seconds,
    ``members``, (algorithm, protocol) or None for a group of one, and ``links`` (sorted, unique)
    when its links are not its own for the whole step: then the block holds it only while
    nothing else is on those links (a reservation on the network), else None."""

    alone: float
    members: tuple[int, ...]
    algo: tuple[str, str] | None
    links: np.ndarray | None = None
    plan: Any = None  # its CollectivePlan, where ``links`` is given


class ComputeRun:
    """Consecutive kernels of the compute stream replayed as one timed block: each starts when
    the previous ends, slowed by ``overlap_slowdown`` while the rank has communication in flight,
    as the op-by-op replay does. ``plan`` lays them out from a given op on;
    communication that starts or ends on the rank during the run re-plans the rest
    (engine._comm_started). ``timer`` is the wake-up its stream waits on, set for ``armed``
    (engine._arm).

    A run may also hold collectives of other streams that sit between two of its kernels (the
    kernel before is all they wait for, the kernel after waits for them) and that are timed by
    their time alone (engine._absorbable): one such entry lasts that time, is never slowed, and
    is not counted as communication in flight, since no kernel of the rank runs beside it.
    ``durs`` holds each entry's (alone, beside communication) seconds, ``n_kernels`` how many
    of the entries are the compute stream's."""

    __slots__ = ("ops", "durs", "gates", "n_kernels", "start", "end", "slowed", "timer", "armed", "held", "holder",
                 "beside", "expiring", "held_links")

    def __init__(self, ops: list[int], durs: list[tuple[float, float]], n_kernels: int,
                 gates: list[float] | None = None) -> None:
        self.ops = ops
        self.durs = durs
        self.gates = gates if gates is not None else [0.0] * len(ops)  # when the host issued each entry
        self.n_kernels = n_kernels
        self.start = [0.0] * len(ops)
        self.end = [0.0] * len(ops)
        self.slowed = [False] * len(ops)  # True: laid out at its slowed rate (beside communication)
        self.timer: simpy.Timeout | None = None
        self.armed = 0.0  # the time ``timer`` fires at
        # entries holding a collective whose links are reserved on the network while the run
        # lasts: (entry index, links), and the reservation's holder id (-1: none)
        self.held: list[tuple[int, np.ndarray]] = []
        self.holder = -1
        self.held_links: tuple[list[tuple[int, np.ndarray]], np.ndarray] | None = None  # engine._held_links
        # held entries timed beside traffic of fixed rates: entry index -> the network's
        # closed form of their phases there (links.Beside)
        self.beside: dict[int, Any] = {}
        self.expiring: set[float] = set()  # the times those are handed back at (engine._expire)

    def cut(self, j: int) -> None:
        """Drop entries ``j``.. (the run ends at entry ``j - 1``; j >= 1)."""
        for seq in (self.ops, self.durs, self.gates, self.start, self.end, self.slowed):
            del seq[j:]
        self.held = [(k, links) for k, links in self.held if k < j]
        self.beside = {k: b for k, b in self.beside.items() if k < j}

    def plan(self, first: int, t: float, inflight: bool) -> None:
        """Entries ``first``.. back to back from ``t``, none before the host has issued it, under
        the communication state ``inflight``."""
        start, end, slowed, durs, gates = self.start, self.end, self.slowed, self.durs, self.gates
        # (a replan lays out the rest of a block that may be hundreds of kernels long: no call
        # per entry, max() written out)
        for j in range(first, len(durs)):
            d0, d1 = durs[j]
            g = gates[j]
            if g > t:
                t = g
            start[j] = t
            if inflight:
                t = t + d1
                slowed[j] = d1 != d0
            else:
                t = t + d0
                slowed[j] = False
            end[j] = t


@dataclass
class Rendezvous:
    op: CommOp
    members: tuple[int, ...]
    expected: int
    event: simpy.Event
    arrived: list[tuple[RankState, int]] = field(default_factory=list)

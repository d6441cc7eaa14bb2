"""Replay a Schedule on a Topology: the discrete-event core (SimPy only in this layer).

Semantics (docs/architecture.md, "Replay engine"):

* Every simulated rank runs its role's program (shared, never copied) on one compute stream and
  one stream per communication stream name. A stream is FIFO in program order; an op starts when
  its ``deps`` are done and every earlier op of its stream has finished.
* A :class:`CommOp` is a rendezvous, as in NCCL: it starts when every member of its process group
  (``grid.group(rank, op.axes)``) has issued its matching op. Matching is by the per-group sequence
  number of collectives on that stream, plus the collective kind and size: a rank that issues
  collectives in a different order than its peers never matches and the replay reports a hang.
  The collective then runs as a :class:`CollectivePlan` on ONE FlowNetwork shared by the whole
  step: wait ``latency_s``, then each phase's flows concurrently. Concurrent collectives (DP on
  the NICs, CP rings, TP on NVLink) therefore share links max-min fairly.
* A :class:`P2POp` finishes when all its sends and receives have. A send meets the receive with
  the same key on the peer (``grid.peer(rank, axis, offset)``); then one flow crosses
  ``topology.route(src, dst)`` after NCCL's send/recv latency (``CostModel.p2p``).
* Every cost comes from one :class:`~simulator.costs.model.CostModel`: collective plans,
  send/recv prices, kernel times, and the link capacities the network runs on (raw capacity x
  the profile's achievable fraction, the capacities the plans' flows assume).
* Compute ops take :meth:`CostModel.compute_times`, slowed by ``overlap_slowdown`` while the rank
  has communication (a collective or a P2P flow) in flight: a kernel progresses at rate
  ``1/(1 + overlap_slowdown)`` of its time alone while at least one communication op of its rank
  runs, at rate 1 otherwise, its end moved at each transition (communication starting or the last
  of it ending mid-kernel). A kernel of ``c`` seconds overlapped for ``o`` seconds thus takes
  ``c + o s/(1+s)`` (the rule sweep/bound.py's ``slowdown_bound`` assumes): the NCCL kernel holds
  SMs and HBM bandwidth only while it runs, and a bulk TP re-gather lasting a tenth of the GEMM
  it overlaps slows a tenth of it, not the whole GEMM (e2e_validation/findings.py). Kernels
  scheduled with ``sm_fraction < 1`` (TransformerEngine userbuffers overlap) already pay for the
  communication kernel beside them in :func:`compute_time` and are not slowed again.
* No op starts before the rank's host has issued it (:mod:`simulator.costs.host`: the running
  sum of per-op host costs in program order), so a run of kernels shorter than their host cost
  takes the host's time.
* When the event queue drains with ranks unfinished, :class:`HangError` lists which rank waits on
  which op.

Beside this module: ``symmetry`` picks the simulated ranks (symmetric mode: only coordinate 0
of axes along which every rank has the same role; ranks that share a simulated rank's NIC are
*images* of it whose traffic joins its own on the network, :meth:`Replayer._with_images`),
``rank_state`` holds the per-role tables and per-rank state, ``sendrecv`` matches sends with
receives and runs their flows, ``exclusive_links`` times collectives that own every link they
cross, ``hang`` writes the HangError text.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from heapq import heappop
from operator import is_
from typing import Any, Callable, Iterator, NamedTuple, Sequence, cast

import numpy as np
import simpy
from simpy.events import URGENT, Event, Timeout

from simulator.costs.collectives import CollectivePlan
from simulator.costs.flow_patterns import join_phases, sorted_distinct
from simulator.costs.model import CostModel
from simulator.costs.topology_view import TopologyView
from simulator.errors import HangError
from simulator.hardware.routes import Route
from simulator.replay.collector import built_frozen, collector_spared
from simulator.replay.exclusive_links import ExclusiveLinks, link_owners, plan_links
from simulator.replay.fold import fold_replay
from simulator.replay.hang import hang_report
from simulator.replay.links import ABS_TOL_S, REL_TOL, Beside
from simulator.replay.rank_state import Absorbable, ComputeRun, RankState, Rendezvous, RoleTable
from simulator.replay.sendrecv import SendRecv
from simulator.replay.symmetry import DEFAULT_OP_BUDGET, choose_ranks, choose_ranks_with_images
from simulator.replay.trace import RankTimeline, SimStats, Trace
from simulator.schedule.ir import CommOp, P2POp


class _Links(NamedTuple):
    """The links of a send/recv direction and of its images' flows (Replayer._image_route)."""

    links: tuple[int, ...]


_UNKNOWN: Any = object()  # not asked yet (Replayer._compute_run's look-ups)


class _CountingEnv(simpy.Environment):
    """A SimPy environment that counts the events it processes (for the sim stats). Run to
    the end of its schedule, every event scheduled (a timeout, a succeeded event, a process
    start) is processed once, so ``run()`` counts its steps: one addition per event in the
    loop, rather than a Python override of ``schedule`` that every event would pass through."""

    def __init__(self) -> None:
        super().__init__()
        self.n_events = 0
        # SimPy binds its event constructors (env.timeout, env.event, ...) to the instance at
        # init (BoundClass.bind_early), but only those in the instance's own class dict: for a
        # subclass, every env.timeout would build a bound method first. Bound here as SimPy does.
        for name in ("event", "timeout", "process", "all_of", "any_of"):
            setattr(self, name, getattr(self, name))

    def run(self, until: Any = None) -> Any:
        """``Environment.run()`` to the end of the schedule (as SimPy's loop: step until the
        schedule is empty), counting the events; with ``until``, SimPy's own, uncounted."""
        if until is not None:
            return super().run(until)
        # Environment.step written out (its StopSimulation handling is for ``until`` alone):
        # a method call per event less
        queue = self._queue
        n = 0
        try:
            while queue:
                self._now, _, _, event = heappop(queue)
                callbacks, event.callbacks = event.callbacks, None
                for callback in callbacks:
                    callback(event)
                n += 1
                if not event._ok and not hasattr(event, "_defused"):
                    exc = type(event._value)(*event._value.args)
                    exc.__cause__ = event._value
                    raise exc
            return None
        finally:
            self.n_events += n

class _StreamProcess:
    """What ``env.process`` makes of a stream's generator, with only what the replay uses: its
    start (an urgent event, as SimPy's ``Initialize``), each yielded event resuming it, and at
    its end one event scheduled (as SimPy schedules the finished process), so the same events
    run in the same order. Its events never fail (an exception raised by the generator
    propagates out of ``run``), nothing waits for the process, and its resume is bound once:
    SimPy's ``Process._resume`` builds a bound method per wait."""

    __slots__ = ("_env", "_send", "_resume")

    def __init__(self, env: simpy.Environment, generator: Iterator[Any]) -> None:
        self._env = env
        self._send = cast(Any, generator).send
        self._resume: Callable[[Event], None] | None = self._step  # (dropped at its end: no cycle left)
        start = Event(env)
        start._ok = True
        start._value = None
        start.callbacks = [self._resume]
        env.schedule(start, URGENT)

    def _step(self, event: Event) -> None:
        send = self._send
        while True:
            try:
                event = send(event._value)
            except StopIteration:
                self._resume = None
                done = Event(self._env)
                done._ok = True
                done._value = None
                self._env.schedule(done)
                return
            callbacks = event.callbacks
            if callbacks is not None:
                callbacks.append(self._resume)
                return


@dataclass(slots=True)
class _Hold:
    """A collective run by its time alone on links it holds reserved (Replayer._held)."""

    plan: CollectivePlan
    start: float
    end: float
    links: np.ndarray
    timer: Timeout  # its end by its time alone, which its stream waits on
    beside: Beside | None = None  # its phases timed beside traffic of fixed rates (FlowNetwork.beside)


class _CollSig:
    """A collective's group on one rank and what its replay needs of it (Replayer._coll_sig)."""

    __slots__ = ("members", "n_sim", "plan", "algo", "alone", "held")

    def __init__(self, members: tuple[int, ...], n_sim: int) -> None:
        self.members = members
        self.n_sim = n_sim
        self.plan: Any = None
        self.algo: tuple[str, str] = ("", "")
        self.alone: float | None = None
        self.held: tuple[float, np.ndarray] | None = None


class Replayer:
    """One replay of one step. Use :func:`replay`."""

    def __init__(self, schedule: Any, costs: CostModel, ranks: Sequence[int], *,
                 network_factory: Callable[..., Any], exclusive_fast_path: bool = True,
                 compute_runs: bool = True, plans: dict[tuple, CollectivePlan] | None = None,
                 alone: tuple[dict[int, Any], dict[bytes, np.ndarray]] | None = None,
                 like: dict[Any, RoleTable] | None = None,
                 images: tuple[tuple[tuple[str, int], ...], ...] = ()) -> None:
        self.schedule = schedule
        self._images = images
        self.costs = costs
        self.compute_runs = compute_runs
        self.grid = schedule.grid
        self.topology = costs.topology
        self.env = _CountingEnv()
        self.net = network_factory(self.env, costs.capacity_Bps)
        self._transfer_many = getattr(self.net, "transfer_many", None)
        self._transfer_phase = getattr(self.net, "transfer_phase", None)
        # (a network without reservations, a test's stand-in, has no idle(): never asked then)
        self._net_idle: Callable[[np.ndarray], bool] = getattr(self.net, "idle", None)  # type: ignore[assignment]
        self.slowdown = costs.gpu.overlap_slowdown
        # One table per distinct program object: roles that share a program (the CP roles of a
        # stage under p2p or a2a, schedule/build.py) share its compute times and stream lists.
        # ``like``: an earlier replay's tables by role, whose entries for the ops in front that
        # the programs share are taken as they are (RoleTable).
        tables: dict[int, RoleTable] = {}
        self.ranks: dict[int, RankState] = {}
        for r in ranks:
            role = schedule.role_of(r)
            program = schedule.programs[role]
            table = tables.get(id(program))
            if table is None:
                table = tables[id(program)] = RoleTable(program, costs, like.get(role) if like else None,
                                                               getattr(schedule, "stamps", {}).get(role, ()))
            self.ranks[r] = RankState(r, role, table)
        self.rendezvous: dict[tuple, Rendezvous] = {}
        self._groups: dict[tuple[int, tuple[str, ...]], tuple[tuple[int, ...], int]] = {}
        self._axes_of: dict[tuple[int, ...], tuple[str, ...]] = {}  # a group's axes (_with_images)
        # (kind, members, size) -> plan; shared by the replays of one step (a fold's two
        # reduced ones), whose networks then meet the same phase objects (links._known_for)
        self._plans: dict[tuple, CollectivePlan] = {} if plans is None else plans
        self._routes: dict[tuple[int, int], Route] = {}
        self._reservable = exclusive_fast_path and hasattr(self.net, "reserve") and hasattr(self.net, "phase_duration")
        self._next_holder = 0
        self.sendrecv = SendRecv(self.env, self.net, self.ranks, self.grid, costs=costs, route=self._route,
                                 comm_started=self._comm_started, image_of=self._image_of if images else None,
                                 holder=self._new_holder if self._reservable else None)
        # (op, members, size, stream) -> (plan, (algorithm, protocol), time alone or None)
        self._ready_plans: dict[tuple, tuple[CollectivePlan, tuple[str, str], float | None, tuple[int, ...]]] = {}
        owners = (link_owners(self.ranks.values(), self._group, self._plan_of, self.grid.peer, self._image_route)
                  if exclusive_fast_path else None)
        self._exclusive = ExclusiveLinks(owners, network_factory, costs.capacity_Bps,
                                         getattr(self.net, "phase_duration", None))
        # Collectives whose links are shared over the step (a TP ring on the NVLink that DP
        # also crosses) may still join a compute block while nothing else is on their links:
        # the block reserves the links on the network (FlowNetwork.reserve), and traffic that
        # arrives there hands the collective back to the network where it stands (_hand_back).
        if self._reservable:
            self.net.on_reserved = self._on_reserved
        # ... and while other traffic of fixed rates is on their links, timed beside it
        self._besides = self._reservable and hasattr(self.net, "beside")
        self._holders: dict[int, tuple[RankState, ComputeRun]] = {}
        self._holds: dict[int, _Hold] = {}  # collectives run by their time alone on reserved links
        # id of a plan -> (the plan, seconds alone on an empty network, the links it crosses),
        # shared links or not
        # shared, as ``plans``, by the replays of one step (``alone``): they depend on the plan
        # and the capacities alone
        self._alone_any: dict[int, tuple[CollectivePlan, float, np.ndarray]] = {} if alone is None else alone[0]
        self._link_sets: dict[bytes, np.ndarray] = {} if alone is None else alone[1]  # those links by their ids' bytes
        self._phase_lists: dict[int, tuple[CollectivePlan, list[Any]]] = {}  # _phases
        # _held_links' unions by the ids of the link arrays (held in the entry)
        self._unions: dict[tuple[int, ...], tuple[tuple[np.ndarray, ...], np.ndarray]] = {}

    # -- helpers -------------------------------------------------------------------------
    def _group(self, rank: int, axes: tuple[str, ...]) -> tuple[tuple[int, ...], int]:
        """Member ranks of the group and how many of them are simulated."""
        key = (rank, axes)
        hit = self._groups.get(key)
        if hit is None:
            members = tuple(self.grid.group(rank, axes))
            hit = (members, sum(1 for m in members if m in self.ranks))
            self._groups[key] = hit
            self._axes_of.setdefault(members, axes)
        return hit

    def _plan(self, op: CommOp, members: tuple[int, ...]) -> CollectivePlan:
        return self._plan_of(op.op, members, op.size_bytes)

    def _plan_of(self, kind: str, members: tuple[int, ...], size: int) -> CollectivePlan:
        key = (kind, members, size)
        plan = self._plans.get(key)
        if plan is None:
            plan = self.costs.plan(kind, members, size)
            if self._images:
                plan = self._with_images(plan, kind, members, size)
            self._plans[key] = plan
        return plan

    def _with_images(self, plan: CollectivePlan, kind: str, members: tuple[int, ...], size: int) -> CollectivePlan:
        """``plan`` with the flows of its image groups (its members' images: the same
        collective of the image ranks, run at the same moment by symmetry) joined to each phase.
        A group that spans an image axis is its own image (its plan already has every
        member's flows); one that does not is disjoint from its images.

        A group along a block of the image axis (the expert-parallel groups, blocks of the
        data-parallel axis, ``schedule/groups.py`` splits) is neither when the image shift is
        not a multiple of the block: shifting its members one by one gives no group (EP group
        (0, 1) shifted one step along dp: (1, 2)). Its image is then the group of the image of
        a simulated member: itself where that rank is in it (rank 1, whose EP group is rank
        0's: the same collective, already in the plan), else the group that rank runs."""
        mset = set(members)
        phases = list(plan.phases)
        seen = [mset]
        for k, image in enumerate(zip(*map(self._image_of, members))):
            iset = set(image)
            if any(iset == other for other in seen):
                continue
            if any(not iset.isdisjoint(other) for other in seen):
                image = self._image_group(members, k, image)
                iset = set(image)
                if any(iset == other for other in seen):
                    continue
            if any(not iset.isdisjoint(other) for other in seen):
                raise RuntimeError(f"image group {image} of {members} overlaps it")  # (groups follow grid axes)
            seen.append(iset)
            other = self.costs.plan(kind, image, size)
            if len(other.phases) != len(phases) or other.latency_s != plan.latency_s:
                raise RuntimeError(f"the plan of image group {image} differs from that of {members}")
            phases = [join_phases(p, q) for p, q in zip(phases, other.phases)]
        return plan if len(seen) == 1 else replace(plan, phases=tuple(phases))

    def _image_group(self, members: tuple[int, ...], k: int, image: tuple[int, ...]) -> tuple[int, ...]:
        """The group (along ``members``' axes) of image ``k`` of the first simulated member;
        ``image`` (the members shifted one by one) where ``members`` is no group of this replay's."""
        axes = self._axes_of.get(members)
        simulated = next((m for m in members if m in self.ranks), None)
        if axes is None or simulated is None:
            return image
        return tuple(self.grid.group(self._image_of(simulated)[k], axes))

    def _image_of(self, rank: int) -> list[int]:
        """The image ranks of ``rank`` (symmetry.choose_ranks_with_images), one per image."""
        out = []
        peer = self.grid.peer
        for steps in self._images:
            r = rank
            for axis, j in steps:
                r = int(peer(r, axis, j))
            out.append(r)
        return out

    def _image_route(self, src: int, dst: int) -> Any:
        """The links of the send/recv flow from ``src`` to ``dst`` and of its images' flows
        (what link_owners needs of a P2P direction)."""
        route = self._route(src, dst)
        if not self._images:
            return route
        links = list(route.links)
        for s, d in zip(self._image_of(src), self._image_of(dst)):
            links.extend(self._route(s, d).links)
        return _Links(tuple(links))

    def _route(self, src: int, dst: int) -> Route:
        route = self._routes.get((src, dst))
        if route is None:
            route = self._routes[(src, dst)] = self.topology.route(src, dst)
        return route

    def _phase(self, flows: Sequence[Any]) -> simpy.Event:
        # A plan's phases are the same tuples every time the plan runs (plans are cached), so
        # the network can decompose each once and time its lone components in closed form.
        if self._transfer_phase is not None:
            return self._transfer_phase(flows)
        if self._transfer_many is not None:
            return self._transfer_many(flows)
        return self.env.all_of([self.net.transfer(f.links, f.nbytes, f.rate_cap_Bps) for f in flows])

    def _comm_started(self, R: RankState, delta: int) -> None:
        """Count communication in flight on a rank. When the first starts or the last ends, the
        kernel running now goes on at its new rate for its remaining work (``_retime``, or
        ``_replan`` for a block of kernels)."""
        R.inflight += delta
        if self.slowdown > 0 and R.inflight == (delta if delta > 0 else 0):
            if R.run is not None:
                self._replan(R, R.run, delta > 0)
            if R.running:
                for k in R.running.values():
                    self._retime(k, delta > 0)

    def _retime(self, k: list[Any], started: bool) -> None:
        """A slowable kernel running on a rank (one of ``RankState.running``: [planned end,
        slowed, timer, the time that timer fires at]) when communication starts (``started``) or the
        last of it ends: its remaining work, ``end - now`` seconds at its old rate, goes on at
        rate ``1/(1+s)`` (started) or 1. A later end keeps the timer (its stream, woken then,
        waits for the rest); an earlier one moves the stream's wake-up onto a new timer (the
        old one fires with nothing waiting on it)."""
        if k[1] == started:
            return
        now = self.env._now
        end = self._rescaled_end(k[0], now, started)
        k[0] = end
        k[1] = started
        if end < k[3]:
            timer = k[2]
            new = Timeout(self.env, end - now)
            new.callbacks, timer.callbacks = timer.callbacks, []
            k[2] = new
            k[3] = now + (end - now)  # (the time SimPy schedules it at)

    def _rescaled_end(self, end: float, now: float, started: bool) -> float:
        """The new end of a kernel planned to end at ``end`` whose remaining work goes on at rate
        ``1/(1+s)`` from ``now`` (communication ``started``) or at rate 1 (the last of it ended)."""
        slow = 1.0 + self.slowdown
        return now + (end - now) * slow if started else now + (end - now) / slow

    def _replan(self, R: RankState, run: ComputeRun, started: bool) -> None:
        """Communication started (``started``) or the last of it ended on a rank running a
        block of kernels: the kernel running now goes on at its new rate for its remaining
        work (as ``_retime`` does for a single kernel), the kernels after it run under the new
        state. One that has not started yet (waiting for its host) is laid out afresh."""
        now = self.env._now
        end = run.end
        k = 0
        while k < len(end) and end[k] <= now:
            k += 1
        if k == len(end):
            return  # every kernel of the run has ended; its wake-up is due now
        if run.start[k] >= now:
            run.plan(k, now, R.inflight > 0)
        else:
            d0, d1 = run.durs[k]
            if d0 != d1 and run.slowed[k] != started:
                end[k] = self._rescaled_end(end[k], now, started)
                run.slowed[k] = started
            run.plan(k + 1, end[k], R.inflight > 0)
        self._arm(run)

    def _arm(self, run: ComputeRun) -> None:
        """(Re)set the timer the run's stream waits on (``run.timer``, its one event per block)
        to the run's last kernel's end. A later end than the pending timer's keeps that timer:
        when it fires, the stream sets the next (:meth:`_stream`), so a block slowed several
        times on its way costs no timer per re-plan. An earlier end sets a new timer and moves
        the stream's wake-up onto it (the old one fires with nothing waiting)."""
        end = run.end[-1]
        timer = run.timer
        if timer is None or timer.callbacks is None or end < run.armed:
            new = Timeout(self.env, max(end - self.env._now, 0.0))
            if timer is not None and timer.callbacks:
                new.callbacks, timer.callbacks = timer.callbacks, []
            run.timer = new
            run.armed = end
        if run.beside:
            self._expire(run)

    @staticmethod
    def _synced(R: RankState, i: int) -> bool:
        """Whether the host has passed the last host synchronisation before op ``i``
        (ComputeOp.host_sync): the synced op has ended, or there is none."""
        after = R.table.synced_after
        return after is None or (s := after[i]) < 0 or bool(R.done[s])

    def _waiter(self, R: RankState, stream: str, i: int, d: int) -> simpy.Event:
        """The event rank R's op ``i`` waits on until op ``d`` ends (one per awaited op, shared by
        every op that waits for it); the stream is marked blocked there."""
        ev = R.waiters.get(d)
        if ev is None:
            ev = R.waiters[d] = Event(self.env)
        R.blocked[stream] = (i, d)
        return ev

    @staticmethod
    def _issued(R: RankState, i: int) -> float:
        """When rank R's host has issued op ``i`` (costs/host.py). After a host synchronisation
        on op s the host resumes when s ends, then pays the host costs of the ops between:
        ``issue[i] - issue[s]`` later. Requires :meth:`_synced`."""
        table = R.table
        after = table.synced_after
        if after is None or (s := after[i]) < 0:
            return table.issue[i]
        return float(R.end[s]) + table.issue[i] - table.issue[s]

    def _compute_run(self, R: RankState, indices: list[int], p: int) -> ComputeRun | None:
        """The kernels from ``indices[p]`` on that can replay as one block: consecutive compute
        ops whose other-stream dependencies are done, ending at one another stream waits for,
        unless what waits there is a collective the block can take in (:meth:`_absorbable`):
        one the kernel after it waits for. None when the block would be one kernel alone."""
        table = R.table
        dts, watchers, cross, done, program = table.dt, table.watchers, table.cross_deps, R.done, table.program
        after = table.synced_after  # host synchronisations (None: the program has none)
        # (this loop visits every kernel of the step: its look-ups are bound once, and the
        # checks that are calls elsewhere (_synced, all(...)) are written out)
        n = len(indices)
        q = p
        k = indices[p]
        # The first kernel's own reasons to stand alone, as the loop below has them, checked
        # before its lists are set up: half the kernels asked about (the dgrad and wgrad GEMMs
        # beside the sequence-parallel backward's collectives) end up alone.
        if p + 1 >= n:
            return None
        nxt = indices[p + 1]
        if dts[nxt] is None:
            return None
        ws = watchers.get(k)
        if ws is not None:
            if len(ws) != 1 or ws[0] not in program[nxt].deps:
                return None
        else:
            for d in cross[nxt]:
                if not done[d]:
                    return None
        ops = [k]
        durs: list[tuple[float, float]] = [dts[k]]  # type: ignore[list-item]
        add_op, add_dur = ops.append, durs.append
        taken: set[int] = set()  # collectives taken into this block
        held: list[tuple[int, np.ndarray]] = []  # (entry, links) of those on links reserved
        besides: dict[int, Beside] = {}  # entries of those timed beside traffic of fixed rates
        absorb, side_watched, net_idle = R.absorb, table.side_watched, self._net_idle
        stream_pred, groups, algorithms, coll_seq = table.stream_pred, R.groups, R.algorithm, R.coll_seq
        idle_links = None  # the last links found idle (Absorbable.links: one object per set)
        while True:
            ws = watchers.get(k)
            if ws is not None:
                # Another stream waits for kernel k: go on only through a collective taken in.
                c = ws[0]
                if len(ws) != 1 or q + 1 >= n:
                    break
                nxt = indices[q + 1]
                if dts[nxt] is None or c not in program[nxt].deps:
                    break
                if after is not None and not (self._synced(R, c) and self._synced(R, nxt)):
                    break  # the host issues them only once the GPU has ended a synced op
                op_c = program[c]
                if type(op_c) is not CommOp or c in side_watched:
                    break
                info = absorb.get((op_c.axes, op_c.op, op_c.size_bytes, op_c.stream), _UNKNOWN)
                if info is _UNKNOWN:
                    info = self._absorbable(R, c)
                if info is None:
                    break
                pred = stream_pred[c]
                if pred >= 0 and not done[pred] and pred not in taken:
                    break
                first = indices[p]
                stop = False
                for d in op_c.deps:
                    if not (done[d] or d in taken or (first <= d <= k and program[d].stream == "compute")):
                        stop = True
                        break
                if stop:
                    break
                alone, members, algo, links = info.alone, info.members, info.algo, info.links
                # (nothing changes the network's occupancy between two checks of one block
                # but _beside's claim: links found idle stay so until then)
                if links is not None and links is not idle_links:
                    if net_idle(links):
                        idle_links = links
                    else:
                        # Other traffic is on its links now: it goes on the network, unless it
                        # can be timed beside that traffic until it ends (from the end of the
                        # block's kernels so far, laid out slowed: a later start is covered by
                        # the timer that hands it back, _expire).
                        idle_links = None
                        beside = self._beside(info.plan, links, self.env._now + sum([d[1] for d in durs]))
                        if beside is None:
                            break
                        alone, links = beside.duration, beside.links
                        besides[len(ops)] = beside
                if links is not None:
                    held.append((len(ops), links))
                groups[c] = members
                if algo is not None:
                    algorithms[c] = algo
                    stream = op_c.stream
                    coll_seq[stream] = coll_seq.get(stream, 0) + 1
                taken.add(c)
                add_op(c)
                add_dur((alone, alone))
                stop = False
                for d in cross[nxt]:
                    if not (done[d] or d in taken):
                        stop = True
                        break
                if stop:
                    break  # the block ends with the collective
            else:
                if q + 1 >= n:
                    break
                nxt = indices[q + 1]
                dt = dts[nxt]
                if dt is None:
                    break
                cr = cross[nxt]
                if cr:
                    stop = False
                    for d in cr:
                        if not (done[d] or d in taken):
                            stop = True
                            break
                    if stop:
                        break
                if after is not None and (s := after[nxt]) >= 0 and not done[s]:
                    break  # the host issues it only once the GPU has ended a synced op (_synced)
            q += 1
            k = nxt
            add_op(k)
            add_dur(dts[k])  # type: ignore[arg-type]
        if len(ops) == 1:
            return None
        issue = table.issue
        if after is None:
            gates = list(map(issue.__getitem__, ops))
        else:  # (_issued written out: one call per entry of every block otherwise)
            r_end = R.end
            gates = [issue[o] if (s := after[o]) < 0 else float(r_end[s]) + issue[o] - issue[s] for o in ops]
        run = ComputeRun(ops, durs, q - p + 1, gates)
        if held:
            run.held = held
            run.holder = self._next_holder
            self._next_holder += 1
            self._holders[run.holder] = (R, run)
            if besides:
                self.net.reserve(run.holder, self._held_links(run))
            else:  # (every link held was found idle above, and nothing has started since)
                self.net.reserve_idle(run.holder, self._held_links(run))
            run.beside = besides
        return run

    def _beside(self, plan: CollectivePlan, links: np.ndarray, start: float) -> Beside | None:
        """The collective of ``plan`` (one simulated member; ``links``: those it crosses) timed
        from ``start`` beside the traffic of fixed rates on its links now
        (``FlowNetwork.beside``): its latency plus its phases there, provided that traffic
        keeps its rates until it ends; None otherwise."""
        if not self._besides:
            return None
        b = self.net.beside(self._phases(plan), links)
        if b is None or start + plan.latency_s + b.duration > b.until:
            return None
        return Beside(b.shapes, plan.latency_s + b.duration, b.until, b.links)

    def _phases(self, plan: CollectivePlan) -> list[Any]:
        """The plan's phases that move bytes (plans are kept per replay: listed once each)."""
        hit = self._phase_lists.get(id(plan))
        if hit is None or hit[0] is not plan:
            hit = self._phase_lists[id(plan)] = (plan, [ph for ph in plan.phases if ph])
        return hit[1]

    def _expire(self, run: ComputeRun) -> None:
        """When the traffic a collective the block holds was timed beside changes its rates
        (``Beside.until``) before the block (as now laid out) ends, the block is called back
        then as by traffic arriving on those links (:meth:`_on_reserved`): if it still holds
        that collective (its kernels before it ran slower or later than laid out when it was
        taken in), the collective goes on the network where its closed form has it; if not,
        the links are released. (A block that ends first releases them as it ends.)"""
        last = run.end[-1]
        for b in run.beside.values():
            if last > b.until and b.until not in run.expiring:
                run.expiring.add(b.until)
                holder, links = run.holder, b.links
                timer = Timeout(self.env, max(b.until - self.env._now, 0.0))
                timer.callbacks.append(lambda _ev: self._on_reserved(np.full(links.size, holder, dtype=np.int64), links)
                                       if self._holders.get(holder, (None, None))[1] is run else None)

    def _held_links(self, run: ComputeRun) -> np.ndarray:
        """The links the run's held collectives cross, once per ``run.held`` list (a new list
        whenever it changes: ComputeRun.cut, _on_reserved): a block reserves and releases them,
        and is called back on them, several times."""
        held = run.held
        cached = run.held_links
        if cached is not None and cached[0] is held:
            return cached[1]
        first = held[0][1]
        if len(held) == 1 or all([links is first for _, links in held]):
            links = first  # (one collective, or several on one set of links: _alone_anyway)
        else:
            # the same few link arrays (a TP ring's, a DP hop's) are held together block after
            # block: their union is kept by the arrays themselves (held in the entry)
            arrays = tuple([links for _, links in held])
            key = tuple(map(id, arrays))
            got = self._unions.get(key)
            if got is not None and all(map(is_, got[0], arrays)):
                links = got[1]
            else:
                # sorted_distinct: np.unique's hash table is slower on link ids (numpy 2)
                links = sorted_distinct(np.concatenate(arrays))
                self._unions[key] = (arrays, links)
        run.held_links = (held, links)
        return links

    def _release(self, run: ComputeRun) -> None:
        """The run has ended (or holds no reserved collective any more): free its links."""
        if run.holder >= 0:
            if run.held:
                self.net.release(run.holder, self._held_links(run))
            del self._holders[run.holder]
            run.holder = -1

    def _new_holder(self) -> int:
        """A new id for links reserved on the network (compute blocks, collectives, send/recv)."""
        h = self._next_holder
        self._next_holder = h + 1
        return h

    def _on_reserved(self, holders: np.ndarray, links: np.ndarray) -> None:
        """Traffic is starting on links compute blocks reserved for collectives they hold
        (FlowNetwork.reserve). For each such block, the first of its collectives on those links
        that has not ended is handed back (:meth:`_hand_back`); the newcomer then shares the
        links with it as it would have on the op-by-op replay. A collective held alone goes on
        the network where its closed form has it, and so do a send/recv's flows
        (``SendRecv.hand_back``)."""
        now = self.env._now
        due = now + REL_TOL * now + ABS_TOL_S  # ends this instant: done before the newcomer starts
        holder_ids = set(holders.tolist())
        single = len(holder_ids) == 1  # (then every link is that holder's)
        p2p = self.sendrecv.holds
        for h in holder_ids:
            if p2p and self.sendrecv.hand_back(h, now, due):
                continue
            hold = self._holds.get(h)
            if hold is not None:
                if hold.end > due:  # (one ending now ends before the newcomer starts)
                    del self._holds[h]
                    self.net.release(h, hold.links)
                    end = self._continue_on_network(hold.plan, hold.start, now, due, None, hold.beside)
                    # its stream now waits for that end: its wake-up moves there from the timer
                    # (which then fires with nothing waiting on it)
                    end.callbacks.extend(hold.timer.callbacks)
                    hold.timer.callbacks = []
                continue
            hit = self._holders.get(h)
            if hit is None:
                continue
            R, run = hit
            mine = set(links.tolist() if single else links[holders == h].tolist())
            live = [(j, held) for j, held in run.held if run.end[j] > due]
            first = next((j for j, held in live if not mine.isdisjoint(held.tolist())), None)
            if first is not None:
                self._hand_back(R, run, first, now, due)
            elif len(live) < len(run.held):  # the collectives that ended free their links
                self.net.release(run.holder, self._held_links(run))
                run.held = live
                if live:
                    self.net.reserve(run.holder, self._held_links(run))
                else:
                    del self._holders[run.holder]
                    run.holder = -1

    def _hand_back(self, R: RankState, run: ComputeRun, j: int, now: float, due: float) -> None:
        """The block ``run`` holds a collective at entry ``j`` on links other traffic is about
        to use. The block is cut before it: the kernels up to entry ``j - 1`` stay (they have
        ended: entry ``j`` starts after them, or lies ahead and the block ends earlier), and so
        do earlier collectives on other links. A collective of entry ``j`` or later that has not
        started goes back to its stream and runs the op-by-op way. One already running
        (``start <= now``) continues on the network from where its closed form has it: the
        rest of its latency, or its current phase started at its own start time
        (``transfer_phase(t0=...)``: the flows hold what their solo trajectories have left), then
        the later phases; its stream waits for that (``R.handed``)."""
        table, prog = R.table, R.table.program
        c = run.ops[j]
        started = run.start[j] <= now
        for k in range(j + (1 if started else 0), len(run.ops)):
            o = run.ops[k]
            if table.dt[o] is None:  # a collective taken in: its stream runs it after all
                R.groups.pop(o, None)
                if R.algorithm.pop(o, None) is not None:
                    R.coll_seq[prog[o].stream] -= 1
        self.net.release(run.holder, self._held_links(run))
        start_c = run.start[j]
        beside = run.beside.get(j)
        run.cut(j)
        run.n_kernels = sum(1 for o in run.ops if table.dt[o] is not None)
        if run.held:
            self.net.reserve(run.holder, self._held_links(run))
        else:
            del self._holders[run.holder]
            run.holder = -1
        self._arm(run)
        if not started:
            return
        op = cast(CommOp, prog[c])
        plan, _, _ = self._ready_plan(op, R.groups[c])
        self._comm_started(R, +1)
        R.handed[c] = (start_c, self._continue_on_network(plan, start_c, now, due, R, beside))

    def _continue_on_network(self, plan: CollectivePlan, start: float, now: float, due: float,
                             R: RankState | None, beside: Beside | None = None) -> simpy.Event:
        """A collective timed in closed form since ``start`` goes on the network at ``now``
        where its closed form has it: the rest of its latency, or its current phase started at
        that phase's own start (``transfer_phase(t0=...)``), then the later phases. The phase
        is put on the network at once (before the traffic that called it back starts). Returns
        the event of its end, R's communication count down before it fires: the last phase's own
        event, or one the rest's chain of callbacks succeeds (:meth:`_rest_on_network`). One
        timed beside traffic of fixed rates (``beside``) has moved along its phases' trajectories
        there; its current phase goes on the network flow by flow as that has it
        (``resume_phase``)."""
        phases = self._phases(plan)
        t = start + plan.latency_s
        first: simpy.Event | None = None
        k = 0
        if t <= now:
            while k < len(phases):
                d = beside.shapes[k].duration if beside is not None else self.net.phase_duration(phases[k])
                if t + d > due:
                    break
                t += d
                k += 1
            if k < len(phases):
                first = (self.net.resume_phase(beside.shapes[k], t) if beside is not None
                         else self.net.transfer_phase(phases[k], t0=t))
                k += 1
        if first is not None and k == len(phases):  # its last phase: no process to wait for it
            if R is not None:
                first.callbacks.append(lambda _ev: self._comm_started(R, -1))
            return first
        return self._rest_on_network(R, first, max(t - now, 0.0) if first is None else 0.0, phases[k:])

    def _rest_on_network(self, R: RankState | None, first: simpy.Event | None, wait: float,
                         phases: list[Any]) -> simpy.Event:
        """The rest of a collective handed to the network (:meth:`_continue_on_network`): after
        ``first`` (or ``wait`` seconds), each phase started by the previous one's callback, and
        the returned event succeeded after the last (a process would cost two events more: its
        start and its end)."""
        done = Event(self.env)
        rest = iter(phases)

        def step(_ev: Any = None) -> None:
            phase = next(rest, None)
            if phase is not None:
                self._phase(phase).callbacks.append(step)
                return
            if R is not None:
                self._comm_started(R, -1)
            done.succeed()

        if first is not None:
            first.callbacks.append(step)
        elif wait > 0:
            Timeout(self.env, wait).callbacks.append(step)
        else:
            step()
        return done

    def _held(self, plan: CollectivePlan, alone: float, links: np.ndarray,
              beside: Beside | None = None) -> tuple[int, _Hold]:
        """Run a collective (one simulated member, links shared over the step but idle now) by
        its time alone while it holds its links reserved; traffic that arrives on them hands it
        to the network where it stands (:meth:`_on_reserved`). One timer instead of its
        latency, its phases' network events and their wake-ups; the stream waits on that timer
        itself (one event per collective, ``_Hold.timer``), then calls :meth:`_unheld`. Handed
        over, its wake-up moves to the network's end of it (the timer then fires with nothing
        waiting on it). (Not a generator: one per collective cost more than the rest of it.)"""
        hid = self._next_holder
        self._next_holder += 1
        now = self.env._now
        timer = Timeout(self.env, alone)
        hold = _Hold(plan, now, now + alone, links, timer, beside)
        self._holds[hid] = hold
        if beside is None:  # (its links were found idle just now: Replayer._stream, _run_collective)
            self.net.reserve_idle(hid, links)
        else:  # (one timed beside other traffic ends before that changes)
            self.net.reserve(hid, links)
        return hid, hold

    def _unheld(self, hid: int, hold: _Hold) -> None:
        """The timer of hold ``hid`` (:meth:`_held`) has fired: unless the collective went on
        the network (_on_reserved), it has ended, and its links are free."""
        if self._holds.get(hid) is hold:
            del self._holds[hid]
            self.net.release(hid, hold.links)

    def _absorbable(self, R: RankState, c: int) -> Absorbable | None:
        """Whether a compute block of rank R may take in collective ``c``: it is timed by its
        time alone (its links are its own, and no other simulated member has to meet it) or
        has no other member, and only compute ops wait for it. Then its :class:`Absorbable`.
        A collective with one simulated member whose links other traffic of the step also
        crosses qualifies too, on a role with no kernel off the compute stream: a block takes
        it in only while its links are idle, and holds them reserved (``Absorbable.links``).
        Such a collective, started when
        the kernel before it ends and awaited by the kernel after, changes nothing but the
        time between the two: the block holds it as an entry of that duration instead of
        three events (the kernel's end waking the collective's stream, its timer, its end
        waking the compute stream)."""
        table = R.table
        op = table.program[c]
        if type(op) is not CommOp or c in table.side_watched:
            return None
        # the same for every op of that kind, size and stream in that group on this rank (and
        # role: side_kernels): kept by those, not worked out again per op
        key = (op.axes, op.op, op.size_bytes, op.stream)
        absorb = R.absorb
        if key in absorb:
            return absorb[key]
        info: Absorbable | None = None
        members, n_sim = self._group(R.rank, op.axes)
        if len(members) <= 1:
            info = Absorbable(0.0, members, None)
        elif n_sim == 1:
            plan, algo, alone = self._ready_plan(op, members)
            if alone is not None:
                info = Absorbable(alone, members, algo)
            elif self._reservable and not table.side_kernels:
                t, links = self._alone_anyway(op, members, plan)
                info = Absorbable(t, members, algo, links, plan)
        absorb[key] = info
        return info

    def _alone_anyway(self, op: CommOp, members: tuple[int, ...], plan: CollectivePlan) -> tuple[float, np.ndarray]:
        """The plan's seconds alone on an empty network (as ExclusiveLinks times an exclusive
        one: latency, then each phase's closed form) and the links it crosses. Kept by the plan
        (one per kind, members and size, _plan_of), checked to be the same."""
        hit = self._alone_any.get(id(plan))
        if hit is None or hit[0] is not plan:
            t = float(plan.latency_s)
            for phase in plan.phases:
                if phase:
                    t += self.net.phase_duration(phase)
            links = plan_links(plan)
            # one array object per set of links (a TP group's AllGather and ReduceScatter cross
            # the same): a block's checks and unions of its held links go by identity
            links = self._link_sets.setdefault(links.tobytes(), links)
            hit = self._alone_any[id(plan)] = (plan, t, links)
        return hit[1], hit[2]

    # -- streams -------------------------------------------------------------------------
    def _stream(self, R: RankState, indices: list[int]):
        env = self.env
        table = R.table
        prog, dts, issue, synced_after = table.program, table.dt, table.issue, table.synced_after
        # R's arrays and tables are never replaced during the replay: bound once (this loop
        # runs for every op of every simulated rank)
        done, waiters, r_ready, r_start, r_end = R.done, R.waiters, R.ready, R.start, R.end
        coll_sigs, groups, coll_seq, algorithms = R.coll_sigs, R.groups, R.coll_seq, R.algorithm
        net_idle, slowdown = self._net_idle, self.slowdown
        holds = self._holds
        net = self.net
        n = len(indices)
        p = 0
        blocks = self.compute_runs and prog[indices[0]].stream == "compute"
        while p < n:
            i = indices[p]
            p += 1
            op = prog[i]
            for d in op.deps:
                if not done[d]:
                    # (_waiter written out: every op that waits on another stream's comes here)
                    ev = waiters.get(d)
                    if ev is None:
                        ev = waiters[d] = Event(env)
                    R.blocked[op.stream] = (i, d)
                    yield ev
            at = issue[i]
            if synced_after is not None and (s := synced_after[i]) >= 0 and not done[i]:
                # the host waited for op s to end before it went on issuing (ComputeOp.host_sync)
                if not done[s]:
                    yield self._waiter(R, op.stream, i, s)
                at = float(r_end[s]) + issue[i] - issue[s]  # (_issued written out)
            now = env._now
            if at > now and not done[i]:  # the host has not issued it yet (costs/host.py)
                yield Timeout(env, at - now)
                now = env._now
            if done[i]:
                continue  # a collective a compute block took in (_compute_run) has run there
            r_ready[i] = now
            dt = dts[i]
            if dt is not None and blocks and (run := self._compute_run(R, indices, p - 1)) is not None:
                R.run = run
                run.plan(0, now, R.inflight > 0)
                self._arm(run)
                yield run.timer
                while run.end[-1] > run.armed:  # re-planned later than the timer it waited on
                    self._arm(run)
                    yield run.timer
                R.run = None
                if run.holder >= 0:
                    self._release(run)
                ops = run.ops
                if waiters:  # (an event succeeded here only schedules: its waiters run later)
                    pop = waiters.pop
                    for k, t, e in zip(ops, run.start, run.end):
                        r_ready[k] = t
                        r_start[k] = t
                        r_end[k] = e
                        done[k] = 1
                        ev = pop(k, None)
                        if ev is not None:
                            ev.succeed()
                else:
                    for k, t, e in zip(ops, run.start, run.end):
                        r_ready[k] = t
                        r_start[k] = t
                        r_end[k] = e
                        done[k] = 1
                R.n_done += len(ops)
                p += run.n_kernels - 1
                continue
            if dt is not None:
                r_start[i] = now
                d0, d1 = dt
                if d1 == d0:  # never slowed (sm_fraction < 1, or no slowdown)
                    yield Timeout(env, d0)
                else:
                    # [planned end, slowed, timer, when the timer fires]: moved by _retime when
                    # communication starts or the last of it ends while it runs
                    slowed = R.inflight > 0
                    timer = Timeout(env, d1 if slowed else d0)
                    ks: list[Any] = [now + (d1 if slowed else d0), slowed, timer, 0.0]
                    ks[3] = ks[0]
                    running = R.running
                    running[op.stream] = ks
                    yield timer
                    while ks[0] > ks[3]:  # slowed after its timer was set: wait for the rest
                        now = env._now
                        ks[2] = Timeout(env, ks[0] - now)
                        ks[3] = now + (ks[0] - now)
                        yield ks[2]
                    del running[op.stream]
            elif type(op) is CommOp:
                handed = R.handed.pop(i, None) if R.handed else None
                if handed is not None:  # a compute block had taken it in and handed it back (_hand_back)
                    r_ready[i] = r_start[i] = handed[0]
                    yield handed[1]
                else:
                    sig = coll_sigs.get((op.axes, op.op, op.size_bytes, op.stream))
                    if sig is None:
                        sig = self._coll_sig(R, op)
                    if sig.n_sim != 1:
                        yield from self._collective(R, i, op, sig)
                    else:
                        # the only simulated member of its group (:meth:`_run_collective`'s
                        # lone case written out: one generator less per collective)
                        groups[i] = sig.members
                        stream = op.stream
                        coll_seq[stream] = coll_seq.get(stream, 0) + 1
                        r_start[i] = now
                        # (_comm_started(R, +1) written out)
                        R.inflight += 1
                        if slowdown > 0 and R.inflight == 1:
                            if R.run is not None:
                                self._replan(R, R.run, True)
                            if R.running:
                                for kr in R.running.values():
                                    self._retime(kr, True)
                        algorithms[i] = sig.algo
                        held = sig.held
                        if sig.alone is not None:
                            yield Timeout(env, sig.alone)
                        elif held is not None and net_idle(held[1]):
                            # (_held and _unheld written out: the collective by its time alone
                            # while it holds its idle links reserved)
                            hid = self._next_holder
                            self._next_holder = hid + 1
                            alone, links = held
                            hold = _Hold(sig.plan, now, now + alone, links, Timeout(env, alone))
                            holds[hid] = hold
                            net.reserve_idle(hid, links)
                            yield hold.timer
                            if holds.get(hid) is hold:
                                del holds[hid]
                                net.release(hid, links)
                        else:
                            yield from self._run_on_network(sig.plan, held, now)
                        # (_comm_started(R, -1) written out)
                        R.inflight -= 1
                        if slowdown > 0 and R.inflight == 0:
                            if R.run is not None:
                                self._replan(R, R.run, False)
                            if R.running:
                                for kr in R.running.values():
                                    self._retime(kr, False)
            else:  # the ops left are send/recv batches
                yield from self.sendrecv.run_op(R, i, cast(P2POp, op))
            r_end[i] = env._now
            done[i] = 1
            R.n_done += 1
            if waiters:
                ev = waiters.pop(i, None)
                if ev is not None:
                    ev.succeed()

    def _coll_sig(self, R: RankState, op: CommOp) -> _CollSig:
        """Rank R's group for the collective, how many of its members are simulated, and (one
        simulated member) its plan, (algorithm, protocol), time alone or None (links not its
        own) and then, where links can be reserved, (seconds alone, links): the same for every
        op of that kind, size and stream of the rank (R.coll_sigs)."""
        members, n_sim = self._group(R.rank, op.axes)
        sig = _CollSig(members, n_sim)
        if n_sim == 1 and len(members) > 1:
            sig.plan, sig.algo, sig.alone = self._ready_plan(op, members)
            if sig.alone is None and self._reservable:
                sig.held = self._alone_anyway(op, members, sig.plan)
        R.coll_sigs[(op.axes, op.op, op.size_bytes, op.stream)] = sig
        return sig

    def _collective(self, R: RankState, i: int, op: CommOp, sig: _CollSig) -> Iterator[Any]:
        """What rank R's stream yields from to run collective ``i`` (``sig``: :meth:`_coll_sig`)
        when it is not the only simulated member of its group (_stream runs that case):
        nothing for a group of one, else its rendezvous (:meth:`_rendezvous`). (Not a generator
        itself: one generator per collective fewer.)"""
        members = sig.members
        R.groups[i] = members
        if len(members) <= 1:
            R.start[i] = self.env._now
            return iter(())
        seq = R.coll_seq.get(op.stream, 0)
        R.coll_seq[op.stream] = seq + 1
        return self._rendezvous(R, i, op, members, sig.n_sim, seq)

    def _rendezvous(self, R: RankState, i: int, op: CommOp, members: tuple[int, ...], n_sim: int, seq: int):
        """Wait at the collective's rendezvous; the last member to arrive runs it for all."""
        key = (op.stream, members, seq, op.op, op.size_bytes)
        rv = self.rendezvous.get(key)
        if rv is None:
            rv = self.rendezvous[key] = Rendezvous(op, members, n_sim, Event(self.env))
        rv.arrived.append((R, i))
        if len(rv.arrived) < rv.expected:
            R.blocked[op.stream] = (i, "rendezvous")
            yield rv.event
            return
        del self.rendezvous[key]
        yield from self._run_collective(op, members, rv.arrived, False)
        rv.event.succeed()

    def _ready_plan(self, op: CommOp, members: tuple[int, ...]) -> tuple[CollectivePlan, tuple[str, str], float | None]:
        """The collective's plan, its (algorithm, protocol) and its time alone (None when its
        links are not its own), once per (kind, members, size, stream). Kept by the members'
        tuple itself (_group's, one per group: a DP group's hundred ranks are not hashed per
        call), checked to be the same."""
        key = (id(members), op.op, op.size_bytes, op.stream)
        hit = self._ready_plans.get(key)
        if hit is None or hit[3] is not members:
            plan = self._plan(op, members)
            algo = (str(getattr(plan, "algorithm", "")), str(getattr(plan, "protocol", "")))
            hit = self._ready_plans[key] = (plan, algo, self._exclusive.time_alone(op, members, plan), members)
        return hit[0], hit[1], hit[2]

    def _run_collective(self, op: CommOp, members: tuple[int, ...], arrived: Sequence[tuple[RankState, int]],
                        lone: bool):
        """Every member has issued the collective: run it (latency, then its phases' flows).
        ``lone``: the group has one simulated member (the others are its mirror images)."""
        now = self.env._now
        plan, algo, alone = self._ready_plan(op, members)
        for Rm, im in arrived:
            Rm.start[im] = now
            self._comm_started(Rm, +1)
            Rm.algorithm[im] = algo
        held: tuple[float, np.ndarray] | None = None
        if alone is None and lone and self._reservable:
            held = self._alone_anyway(op, members, plan)
        if alone is not None:
            yield Timeout(self.env, alone)
        elif held is not None and self.net.idle(held[1]):
            hid, hold = self._held(plan, *held)
            yield hold.timer
            self._unheld(hid, hold)
        else:
            yield from self._run_on_network(plan, held, now)
        for Rm, _ in arrived:
            self._comm_started(Rm, -1)

    def _run_on_network(self, plan: CollectivePlan, held: tuple[float, np.ndarray] | None,
                        now: float) -> Iterator[Any]:
        """A collective whose links are not its own and not idle (``held``: its time alone and
        links where they could be reserved): timed beside the traffic of fixed rates on them
        where that is exact (:meth:`_beside`), else on the network, latency then phases."""
        if held is not None and (beside := self._beside(plan, held[1], now)) is not None:
            hid, hold = self._held(plan, beside.duration, beside.links, beside)
            yield hold.timer
            self._unheld(hid, hold)
        else:
            if plan.latency_s > 0:
                yield Timeout(self.env, plan.latency_s)
            for phase in plan.phases:
                if phase:
                    yield self._phase(phase)

    # -- run -------------------------------------------------------------------------------
    def run(self) -> None:
        for R in self.ranks.values():
            for indices in R.table.streams.values():
                _StreamProcess(self.env, self._stream(R, indices))
        try:
            try:
                self.env.run()
            finally:
                for R in self.ranks.values():
                    R.finished()
            stuck = [R for R in self.ranks.values() if R.n_done < len(R.table.program)]
            if stuck:
                raise HangError(hang_report(stuck, self.ranks, self.rendezvous, self.sendrecv.p2p))
        finally:
            # The network's and the send/recv's callbacks into this replayer are its only
            # reference cycles: dropped, a finished replay is freed by reference counting when
            # its last user lets it go, not by a collection that scans its objects (and the
            # reduced schedules of folding it holds): 1.04 M objects in cycles for GPT-3 175B
            # tp8sp pp32 dp4 z1 without this, 317 with it (gc.DEBUG_SAVEALL).
            if self._reservable:
                self.net.on_reserved = None
            self.sendrecv.close()


def replay(schedule: Any, topology: TopologyView, *, algo: str | None = None, proto: str | None = None,
           max_ranks: int | None = None, symmetric: bool | None = None,
           op_budget: int = DEFAULT_OP_BUDGET, cost_model: Callable[..., CostModel] = CostModel,
           network_factory: Callable[..., Any] | None = None, exclusive_fast_path: bool = True,
           compute_runs: bool = True, fold: Callable[[int], Any] | None = None, image_ranks: bool = True) -> Trace:
    """Replay one training step of ``schedule`` on ``topology``; returns its :class:`Trace`.

    ``algo``/``proto`` pin the NCCL algorithm/protocol of every collective (default: the tuner's
    choice). ``exclusive_fast_path`` times a collective whose links no other traffic can use
    by its (cached) time alone instead of flow by flow; ``compute_runs`` replays consecutive
    kernels of the compute stream that nothing else waits on as one timed block; ``fold``
    (the schedule of the same step with a given number of micro-batches per pipeline; None:
    off) replays repeated steady micro-batches once (``replay/fold.py``) where its checks
    pass; ``image_ranks`` (symmetric mode on nodes with fewer NICs than GPUs) replaces the
    ranks that share a simulated rank's NIC by images of it whose traffic goes on the network
    beside its own (``symmetry.choose_ranks_with_images``) instead of simulating them.
    Turning any of them off must not change results.
    ``cost_model(topology, algo, proto)`` builds the costs (default :class:`CostModel`) and
    ``network_factory(env, capacity_Bps)`` the network (default ``replay.links.FlowNetwork``,
    built on the cost model's capacities); both are injectable for tests.
    """
    with collector_spared() as frozen:
        if fold is not None and frozen:
            fold = built_frozen(fold)
        return _replay(schedule, topology, algo, proto, max_ranks, symmetric, op_budget, cost_model,
                       network_factory, exclusive_fast_path, compute_runs, fold, image_ranks)


def _nic_key(topology: TopologyView, n_ranks: int) -> np.ndarray | None:
    """One id per rank for the NIC it sends through, distinct across nodes (symmetry.choose_ranks
    mirrors no axis whose dropped replicas would share a simulated rank's NIC); None without NICs."""
    rails = topology.rails
    if not rails or n_ranks > topology.n_gpus:
        return None
    # A GPU's node is gpu // gpus_per_node and its NIC follows from its index in the node
    # (Topology.node_of / nic_of), so one node's NICs tiled over the nodes give every rank's
    # key as arrays: a Python call per rank cost ~0.07 s at 100k ranks.
    gpn = topology.gpus_per_node
    local = np.array([topology.nic_of(g) for g in range(min(gpn, n_ranks))], dtype=np.int64)
    g = np.arange(n_ranks, dtype=np.int64)
    return (g // gpn) * rails + local[g % gpn]


def _replay(schedule: Any, topology: TopologyView, algo: str | None, proto: str | None, max_ranks: int | None,
            symmetric: bool | None, op_budget: int, cost_model: Callable[..., CostModel],
            network_factory: Callable[..., Any] | None, exclusive_fast_path: bool, compute_runs: bool,
            fold: Callable[[int], Any] | None, image_ranks: bool = True) -> Trace:
    costs = cost_model(topology, algo, proto)
    from simulator.replay.links import FlowNetwork

    grid = schedule.grid
    n_ranks = int(getattr(grid, "n_ranks", 0) or topology.n_gpus)
    t0 = time.perf_counter()
    images: tuple[tuple[tuple[str, int], ...], ...] = ()
    gpn = topology.gpus_per_node if n_ranks <= topology.n_gpus else None  # rank r on GPU r
    if image_ranks:
        ranks, mirrored, images = choose_ranks_with_images(
            schedule, n_ranks, max_ranks=max_ranks, op_budget=op_budget, symmetric=symmetric,
            nic_key=_nic_key(topology, n_ranks), gpus_per_node=gpn)
    else:
        ranks, mirrored = choose_ranks(schedule, n_ranks, max_ranks=max_ranks, op_budget=op_budget,
                                       symmetric=symmetric, nic_key=_nic_key(topology, n_ranks), gpus_per_node=gpn)

    plans: dict[tuple, CollectivePlan] = {}
    alone: tuple[dict[int, Any], dict[bytes, np.ndarray]] = ({}, {})
    tables: dict[Any, RoleTable] = {}  # the last replay's, by role

    def run(sched: Any) -> Replayer:
        rp = Replayer(sched, costs, ranks, network_factory=network_factory or FlowNetwork,
                      exclusive_fast_path=exclusive_fast_path, compute_runs=compute_runs, plans=plans, alone=alone,
                      like=tables, images=images)
        tables.clear()
        tables.update({R.role: R.table for R in rp.ranks.values()})
        rp.run()
        return rp

    folded = None
    if fold is not None:
        try:
            folded = fold_replay(schedule, fold, run, ranks)
        except HangError:
            folded = None  # the whole step, replayed below, reports it
    n_folded = 0
    if folded is None:
        rp = run(schedule)
        timelines = {
            r: RankTimeline(rank=r, role=R.role, program=R.table.program, ready=R.ready, start=R.start, end=R.end,
                            algorithm=R.algorithm, groups=R.groups)
            for r, R in rp.ranks.items()
        }
    else:
        fields, rp, n_folded = folded
        timelines = {r: RankTimeline(rank=r, role=R.role, program=schedule.programs[R.role], **fields[r])
                     for r, R in rp.ranks.items()}
    stats = SimStats(ranks=n_ranks, ranks_simulated=len(ranks), events=rp.env.n_events,
                     wall_s=time.perf_counter() - t0, mirrored_axes=tuple(mirrored), folded_micro_batches=n_folded)
    return Trace(timelines, stats)

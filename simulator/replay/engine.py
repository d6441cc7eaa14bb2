"""Replay a Schedule on a Topology: the discrete-event core (SimPy only here).

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
  ``topology.route(src, dst)`` after NCCL's send/recv latency (the planner's ``sendrecv`` plan).
* The network runs on ``effective_capacity_Bps(topology)`` (raw capacity x the profile's
  achievable fraction), the capacities the collective planner's flows assume.
* Compute ops take :func:`compute_time`, slowed by ``overlap_slowdown`` when they start while the
  rank has communication (a collective or a P2P flow) in flight; a kernel that is already running
  when communication starts runs its remaining part slowed (never sped up when it ends). Kernels
  scheduled with ``sm_fraction < 1`` (TransformerEngine userbuffers overlap) already pay for the
  communication kernel beside them in :func:`compute_time` and are not slowed again.
* When the event queue drains with ranks unfinished, :class:`HangError` lists which rank waits on
  which op.

Symmetric mode: along an axis where every rank has the same role (same program) and the fabric
is symmetric (TP inside a node, DP replicas on their rails), all ranks run the same timeline. The
engine can then simulate only the ranks at coordinate 0 of those axes. A collective waits only
for its simulated members but still puts the flows of *all* members on the network; a P2P whose
peer is a mirror image starts its flow at once (the mirror issues it at the same moment by
symmetry). What this mode drops is traffic of unsimulated replicas on links no simulated group
uses (spines shared across replicas); tests check both modes agree where both run.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import simpy

from simulator.costs.compute import compute_times
from simulator.errors import HangError
from simulator.replay.trace import RankTimeline, SimStats, Trace
from simulator.schedule.ir import CommOp, Op, P2POp

DEFAULT_MAX_RANKS = 4096
# Above this many op executions (ranks x program length) the engine switches to symmetric mode
# on its own, to keep a step of a 1,000-GPU plan within seconds.
DEFAULT_OP_BUDGET = 200_000
_FALLBACK_AXES = ("tp", "cp", "ulysses", "ep", "dp", "pp")
_SHARED = object()  # a link that more than one collective group or P2P direction can use


class _CountingEnv(simpy.Environment):
    """A SimPy environment that reports how many events it scheduled (for the sim stats).

    SimPy numbers every scheduled event with ``itertools.count`` (``_eid``, used to keep the
    queue FIFO); reading that counter costs nothing per event, unlike overriding ``schedule``.
    """

    @property
    def n_events(self) -> int:
        eid = getattr(self, "_eid", None)
        if eid is None:
            return 0
        return int(repr(eid)[len("count("):-1])


class _RoleTable:
    """What every rank of one role shares: its program, per-stream op lists, compute times."""

    def __init__(self, program: Sequence[Op], gpu: Any) -> None:
        self.program = program
        self.streams: dict[str, list[int]] = {}
        # Distinct collective signatures (stream, axes, op, size) and P2P directions (axis,
        # offset, is_send): what decides which links a rank of this role can ever use.
        self.collectives: set[tuple[str, tuple[str, ...], str, int]] = set()
        self.p2p_dirs: set[tuple[str, int, bool]] = set()
        for i, op in enumerate(program):
            self.streams.setdefault(op.stream, []).append(i)
            if type(op) is CommOp:
                self.collectives.add((op.stream, op.axes, op.op, op.size_bytes))
            elif type(op) is P2POp:
                self.p2p_dirs.update((t.axis, t.offset, True) for t in op.sends)
                self.p2p_dirs.update((t.axis, t.offset, False) for t in op.recvs)
        # (alone, beside communication): compute_time(op, gpu, overlapped) is t x (1 + slowdown).
        # A kernel scheduled with sm_fraction < 1 already gave up the SMs of the communication
        # kernel it runs beside (TransformerEngine userbuffers); the generic slowdown for NCCL
        # kernels competing for SMs is not applied to it a second time.
        slow = 1.0 + gpu.overlap_slowdown
        self.dt: list[tuple[float, float] | None] = [
            None if t is None else (t, t if getattr(op, "sm_fraction", 1.0) < 1.0 else t * slow)
            for op, t in zip(program, compute_times(program, gpu))]


class _Rank:
    """Mutable state of one simulated rank during the replay."""

    __slots__ = ("rank", "role", "table", "ready", "start", "end", "done", "waiters", "inflight",
                 "coll_seq", "blocked", "algorithm", "groups", "n_done", "running", "extend")

    def __init__(self, rank: int, role: Any, table: _RoleTable) -> None:
        n = len(table.program)
        self.rank = rank
        self.role = role
        self.table = table
        self.ready = np.full(n, np.nan)
        self.start = np.full(n, np.nan)
        self.end = np.full(n, np.nan)
        self.done = bytearray(n)
        self.n_done = 0
        self.waiters: dict[int, simpy.Event] = {}
        self.inflight = 0
        self.running: tuple[float, bool] | None = None  # (planned end, slowed) of the compute op running
        self.extend = 0.0  # extra compute time owed because communication started mid-kernel
        self.coll_seq: dict[str, int] = {}
        # stream -> (op index, what it waits for: a dependency's index, or "rendezvous"/"send/recv")
        self.blocked: dict[str, tuple[int, int | str]] = {}
        self.algorithm: dict[int, tuple[str, str]] = {}
        self.groups: dict[int, tuple[int, ...]] = {}


@dataclass
class _Rendezvous:
    op: CommOp
    members: tuple[int, ...]
    expected: int
    event: simpy.Event
    arrived: list[tuple[_Rank, int]] = field(default_factory=list)


@dataclass
class _P2PSide:
    """A send or receive waiting for its counterpart; ``event`` fires when the flow is done."""

    event: simpy.Event
    nbytes: int
    posted_by: list[tuple[int, int, str]]  # (rank, op index, "send"/"recv") for hang reports
    matched_at: float = float("nan")


def grid_axes(grid: Any) -> list[str]:
    """Axis names of a Grid, innermost first; tolerant of the shapes a Grid may expose them in."""
    axes = getattr(grid, "axes", None) or getattr(grid, "order", None)
    if isinstance(axes, dict):
        return list(axes)
    if axes:
        return [a if isinstance(a, str) else getattr(a, "name", str(a)) for a in axes]
    found = []
    for a in _FALLBACK_AXES:
        try:
            grid.group(0, (a,))
        except Exception:  # noqa: BLE001 - an axis this grid does not know
            continue
        found.append(a)
    return found


def symmetric_axes(schedule: Any, n_ranks: int, axes: Iterable[str]) -> list[str]:
    """Axes of degree > 1 along which every rank has the same role as its neighbour."""
    grid = schedule.grid
    out = []
    for a in axes:
        if len(grid.group(0, (a,))) <= 1:
            continue
        if all(schedule.role_of(r) == schedule.role_of(grid.peer(r, a, 1)) for r in range(n_ranks)):
            out.append(a)
    return out


class Replayer:
    """One replay of one step. Use :func:`replay`."""

    def __init__(self, schedule: Any, topology: Any, *, algo: str | None, proto: str | None,
                 ranks: Sequence[int], n_ranks: int, mirrored: Sequence[str],
                 planner: Callable[..., Any], network_factory: Callable[..., Any], capacity_Bps: Any,
                 exclusive_fast_path: bool = True) -> None:
        self.schedule = schedule
        self.grid = schedule.grid
        self.topology = topology
        self.algo = algo
        self.proto = proto
        self.n_ranks = n_ranks
        self.mirrored = tuple(mirrored)
        self.planner = planner
        self.env = _CountingEnv()
        self.net = network_factory(self.env, capacity_Bps)
        self._network_factory = network_factory
        self._capacity = capacity_Bps
        self._transfer_many = getattr(self.net, "transfer_many", None)
        gpu = topology.profile.gpu
        self.slowdown = gpu.overlap_slowdown
        tables: dict[Any, _RoleTable] = {}
        self.ranks: dict[int, _Rank] = {}
        for r in ranks:
            role = schedule.role_of(r)
            if role not in tables:
                tables[role] = _RoleTable(schedule.programs[role], gpu)
            self.ranks[r] = _Rank(r, role, tables[role])
        self.rendezvous: dict[tuple, _Rendezvous] = {}
        self.p2p: dict[tuple[int, int, str], _P2PSide] = {}
        self._groups: dict[tuple[int, tuple[str, ...]], tuple[tuple[int, ...], int]] = {}
        self._plans: dict[tuple, Any] = {}
        self._routes: dict[tuple[int, int], Any] = {}
        self._peers: dict[tuple[int, str, int], int] = {}
        self._p2p_lat: dict[tuple[int, int, int], float] = {}
        # plan key -> seconds alone on the network, for collectives whose links nothing else uses
        self._alone: dict[tuple, float | None] = {}
        # (op, members, size, stream) -> (plan, (algorithm, protocol), time alone or None)
        self._ready_plans: dict[tuple, tuple[Any, tuple[str, str], float | None]] = {}
        self._owners: dict[int, Any] | None = self._link_owners() if exclusive_fast_path else None

    # -- helpers -------------------------------------------------------------------------
    def _group(self, rank: int, axes: tuple[str, ...]) -> tuple[tuple[int, ...], int]:
        """Member ranks of the group and how many of them are simulated."""
        key = (rank, axes)
        hit = self._groups.get(key)
        if hit is None:
            members = tuple(self.grid.group(rank, axes))
            hit = (members, sum(1 for m in members if m in self.ranks))
            self._groups[key] = hit
        return hit

    def _plan(self, op: CommOp, members: tuple[int, ...]) -> Any:
        return self._plan_of(op.op, members, op.size_bytes)

    def _plan_of(self, kind: str, members: tuple[int, ...], size: int) -> Any:
        key = (kind, members, size)
        plan = self._plans.get(key)
        if plan is None:
            plan = self.planner(kind, list(members), size, self.topology, algo=self.algo, proto=self.proto)
            self._plans[key] = plan
        return plan

    def _link_owners(self) -> dict[int, Any]:
        """For every link some simulated traffic can use: its single owner (a collective's
        (stream, members), or a P2P direction (src, dst)) or _SHARED.

        A collective whose flows only cross links it owns never shares them: its group issues
        its collectives one at a time (one FIFO stream), so its duration is its time alone on
        the network, computed once per plan instead of flow by flow. Exact, not an approximation.
        """
        owners: dict[int, Any] = {}

        def claim(links: Iterable[int], owner: Any) -> None:
            for link in links:
                held = owners.get(link)
                if held is None:
                    owners[link] = owner
                elif held is not _SHARED and held != owner:
                    owners[link] = _SHARED

        for R in self.ranks.values():
            for stream, axes, kind, size in R.table.collectives:
                members, _ = self._group(R.rank, axes)
                if len(members) > 1:
                    plan = self._plan_of(kind, members, size)
                    for phase in plan.phases:
                        for flow in phase:
                            claim(flow.links, (stream, members))
            for axis, offset, is_send in R.table.p2p_dirs:
                peer = self.grid.peer(R.rank, axis, offset)
                src, dst = (R.rank, peer) if is_send else (peer, R.rank)
                if src != dst:
                    claim(self._route(src, dst).links, ("p2p", src, dst))
        return owners

    def _time_alone(self, op: CommOp, members: tuple[int, ...], plan: Any) -> float | None:
        """Seconds the collective takes on links it alone uses, or None if it shares any."""
        key = (op.op, members, op.size_bytes, op.stream)
        if key in self._alone:
            return self._alone[key]
        owner = (op.stream, members)
        links = {link for phase in plan.phases for flow in phase for link in flow.links}
        t: float | None = None
        if self._owners is not None and all(self._owners.get(link) == owner for link in links):
            t = float(plan.latency_s)
            for phase in plan.phases:
                if phase:
                    env = simpy.Environment()
                    net = self._network_factory(env, self._capacity)
                    done = net.transfer_many(phase) if hasattr(net, "transfer_many") else env.all_of(
                        [net.transfer(f.links, f.nbytes, f.rate_cap_Bps) for f in phase])
                    env.run(done)
                    t += env.now
        self._alone[key] = t
        return t

    def _peer(self, rank: int, axis: str, offset: int) -> int:
        key = (rank, axis, offset)
        peer = self._peers.get(key)
        if peer is None:
            peer = self._peers[key] = self.grid.peer(rank, axis, offset)
        return peer

    def _route(self, src: int, dst: int) -> Any:
        route = self._routes.get((src, dst))
        if route is None:
            route = self._routes[(src, dst)] = self.topology.route(src, dst)
        return route

    def _phase(self, flows: Sequence[Any]) -> simpy.Event:
        if self._transfer_many is not None:
            return self._transfer_many(flows)
        return self.env.all_of([self.net.transfer(f.links, f.nbytes, f.rate_cap_Bps) for f in flows])

    def _inflight(self, ranks: Iterable[int], delta: int) -> None:
        for r in ranks:
            R = self.ranks.get(r)
            if R is not None:
                self._comm_started(R, delta)

    def _comm_started(self, R: _Rank, delta: int) -> None:
        """Count communication in flight on a rank; a kernel already running unslowed when
        communication starts runs its remaining part slowed by ``overlap_slowdown``."""
        R.inflight += delta
        if delta > 0 and self.slowdown > 0 and R.running is not None and not R.running[1]:
            end, _ = R.running
            R.extend += (end - self.env.now) * self.slowdown
            R.running = (end, True)

    # -- streams -------------------------------------------------------------------------
    def _stream(self, R: _Rank, indices: list[int]):
        env = self.env
        prog = R.table.program
        dts = R.table.dt
        for i in indices:
            op = prog[i]
            for d in op.deps:
                if not R.done[d]:
                    ev = R.waiters.get(d)
                    if ev is None:
                        ev = R.waiters[d] = env.event()
                    R.blocked[op.stream] = (i, d)
                    yield ev
            R.ready[i] = env.now
            dt = dts[i]
            if dt is not None:
                R.start[i] = env.now
                slowed = R.inflight > 0
                d = dt[1] if slowed else dt[0]
                R.running = (env.now + d, slowed or dt[1] == dt[0])
                yield env.timeout(d)
                while R.extend > 0:
                    extra, R.extend = R.extend, 0.0
                    yield env.timeout(extra)
                R.running = None
            elif type(op) is CommOp:
                yield from self._collective(R, i, op)
            else:
                yield from self._p2p(R, i, op)
            R.end[i] = env.now
            R.done[i] = 1
            R.n_done += 1
            ev = R.waiters.pop(i, None)
            if ev is not None:
                ev.succeed()

    def _collective(self, R: _Rank, i: int, op: CommOp):
        members, n_sim = self._group(R.rank, op.axes)
        R.groups[i] = members
        if len(members) <= 1:
            R.start[i] = self.env.now
            return
        seq = R.coll_seq.get(op.stream, 0)
        R.coll_seq[op.stream] = seq + 1
        if n_sim == 1:
            # The only simulated member (the others are mirror images): no rendezvous to wait at,
            # so no rendezvous record and no event to wake anyone.
            yield from self._run_collective(op, members, ((R, i),))
            return
        key = (op.stream, members, seq, op.op, op.size_bytes)
        rv = self.rendezvous.get(key)
        if rv is None:
            rv = self.rendezvous[key] = _Rendezvous(op, members, n_sim, self.env.event())
        rv.arrived.append((R, i))
        if len(rv.arrived) < rv.expected:
            R.blocked[op.stream] = (i, "rendezvous")
            yield rv.event
            return
        del self.rendezvous[key]
        yield from self._run_collective(op, members, rv.arrived)
        rv.event.succeed()

    def _run_collective(self, op: CommOp, members: tuple[int, ...], arrived: Sequence[tuple[_Rank, int]]):
        """Every member has issued the collective: run it (latency, then its phases' flows)."""
        now = self.env.now
        key = (op.op, members, op.size_bytes, op.stream)
        hit = self._ready_plans.get(key)
        if hit is None:
            plan = self._plan(op, members)
            algo = (str(getattr(plan, "algorithm", "")), str(getattr(plan, "protocol", "")))
            hit = self._ready_plans[key] = (plan, algo, self._time_alone(op, members, plan))
        plan, algo, alone = hit
        for Rm, im in arrived:
            Rm.start[im] = now
            self._comm_started(Rm, +1)
            Rm.algorithm[im] = algo
        if alone is not None:
            yield self.env.timeout(alone)
        else:
            if plan.latency_s > 0:
                yield self.env.timeout(plan.latency_s)
            for phase in plan.phases:
                if phase:
                    yield self._phase(phase)
        for Rm, _ in arrived:
            Rm.inflight -= 1

    def _p2p(self, R: _Rank, i: int, op: P2POp):
        sides = []
        for t in op.sends:
            dst = self._peer(R.rank, t.axis, t.offset)
            sides.append(self._post(R.rank, dst, t.key, t.nbytes, (R.rank, i, "send"), mirrored_peer=dst))
        for t in op.recvs:
            src = self._peer(R.rank, t.axis, t.offset)
            sides.append(self._post(src, R.rank, t.key, t.nbytes, (R.rank, i, "recv"), mirrored_peer=src))
        if not sides:
            R.start[i] = self.env.now
            return
        R.blocked[op.stream] = (i, "send/recv")
        # Wait for each side in turn (the op ends with the last); cheaper than an AllOf condition,
        # which costs an event of its own per send/recv batch.
        for side in sides:
            if not side.event.processed:
                yield side.event
        R.start[i] = max(s.matched_at for s in sides)

    def _post(self, src: int, dst: int, key: str, nbytes: int, who: tuple[int, int, str],
              mirrored_peer: int) -> _P2PSide:
        """Post one side of a send/recv; start the flow once both sides are posted."""
        if src == dst:
            side = _P2PSide(self.env.event(), nbytes, [who], self.env.now)
            side.event.succeed()
            return side
        if mirrored_peer not in self.ranks:
            # The peer is a mirror image of a simulated rank: it posts its side now, by symmetry.
            side = _P2PSide(self.env.event(), nbytes, [who])
            self._start_flow(src, dst, side)
            return side
        k = (src, dst, key)
        side = self.p2p.pop(k, None)
        if side is None:
            side = self.p2p[k] = _P2PSide(self.env.event(), nbytes, [who])
            return side
        side.posted_by.append(who)
        if who[2] == "send":
            side.nbytes = nbytes
        self._start_flow(src, dst, side)
        return side

    def _start_flow(self, src: int, dst: int, side: _P2PSide) -> None:
        """Run one send/recv flow: NCCL's latency, then the bytes on the route.

        Chained event callbacks rather than a SimPy process: a process costs two extra events
        (its start and its end) per flow, and a 128K-token CP ring has tens of thousands of flows.
        """
        side.matched_at = self.env.now
        route = self._route(src, dst)
        self._inflight((src, dst), +1)
        latency = self._p2p_latency(src, dst, side.nbytes)
        if latency > 0:
            self.env.timeout(latency).callbacks.append(lambda _ev: self._flow_bytes(src, dst, side, route))
        else:
            self._flow_bytes(src, dst, side, route)

    def _p2p_latency(self, src: int, dst: int, nbytes: int) -> float:
        """NCCL's latency of one send/recv (protocol picked by size), from the collective planner."""
        key = (src, dst, nbytes)
        lat = self._p2p_lat.get(key)
        if lat is None:
            plan = self.planner("sendrecv", [src, dst], nbytes, self.topology, algo=None, proto=self.proto)
            lat = self._p2p_lat[key] = float(plan.latency_s)
        return lat

    def _flow_bytes(self, src: int, dst: int, side: _P2PSide, route: Any) -> None:
        if side.nbytes > 0 and route.links:
            self.net.transfer(route.links, side.nbytes).callbacks.append(lambda _ev: self._flow_done(src, dst, side))
        else:
            self._flow_done(src, dst, side)

    def _flow_done(self, src: int, dst: int, side: _P2PSide) -> None:
        self._inflight((src, dst), -1)
        side.event.succeed()

    # -- run -------------------------------------------------------------------------------
    def run(self) -> None:
        for R in self.ranks.values():
            for indices in R.table.streams.values():
                self.env.process(self._stream(R, indices))
        self.env.run()
        stuck = [R for R in self.ranks.values() if R.n_done < len(R.table.program)]
        if stuck:
            raise HangError(self._hang_report(stuck))

    def _hang_report(self, stuck: list[_Rank], limit: int = 24) -> str:
        lines = [f"{len(stuck)} of {len(self.ranks)} simulated ranks never finish the step:"]
        waiting: dict[tuple[int, int], str] = {}
        for rv in self.rendezvous.values():
            here = sorted(R.rank for R, _ in rv.arrived)
            missing = [m for m in rv.members if m in self.ranks and m not in here]
            for R, i in rv.arrived:
                waiting[(R.rank, i)] = (f"collective {rv.op.op} (stream {rv.op.stream}, group {list(rv.members)}); "
                                        f"issued by ranks {here}, never by ranks {missing}")
        for (src, dst, key), side in self.p2p.items():
            for rank, i, kind in side.posted_by:
                peer = dst if kind == "send" else src
                waiting[(rank, i)] = (f"{kind} key {key!r} {'to' if kind == 'send' else 'from'} rank {peer}; "
                                      f"rank {peer} never posts the matching {'recv' if kind == 'send' else 'send'}")
        for R in sorted(stuck, key=lambda R: R.rank):
            prog = R.table.program
            for stream, (i, why) in sorted(R.blocked.items()):
                if R.done[i]:
                    continue
                op = prog[i]
                detail = waiting.get((R.rank, i)) or (
                    f"waits for its dependency op {why} ({prog[why].name!r})" if isinstance(why, int) else f"waits ({why})")
                lines.append(f"  rank {R.rank}: op {i} {op.name!r} on stream {stream}: {detail}")
                if len(lines) > limit:
                    lines.append("  ...")
                    return "\n".join(lines)
        return "\n".join(lines)


def choose_ranks(schedule: Any, n_ranks: int, *, max_ranks: int | None, op_budget: int,
                 symmetric: bool | None) -> tuple[list[int], list[str]]:
    """Which ranks to simulate and which axes are mirrored.

    ``symmetric`` True/False forces the mode; None picks it: all ranks when there are at most
    ``max_ranks`` of them and the op count fits ``op_budget``, otherwise symmetric mode.
    """
    if symmetric is None:
        limit = DEFAULT_MAX_RANKS if max_ranks is None else max_ranks
        prog_len = max((len(p) for p in schedule.programs.values()), default=0)
        symmetric = n_ranks > limit or n_ranks * prog_len > op_budget
    if not symmetric:
        return list(range(n_ranks)), []
    grid = schedule.grid
    axes = symmetric_axes(schedule, n_ranks, grid_axes(grid))
    ranks = [r for r in range(n_ranks) if all(grid.group(r, (a,))[0] == r for a in axes)]
    return ranks, axes


def replay(schedule: Any, topology: Any, *, algo: str | None = None, proto: str | None = None,
           max_ranks: int | None = None, symmetric: bool | None = None,
           op_budget: int = DEFAULT_OP_BUDGET, planner: Callable[..., Any] | None = None,
           network_factory: Callable[..., Any] | None = None, exclusive_fast_path: bool = True) -> Trace:
    """Replay one training step of ``schedule`` on ``topology``; returns its :class:`Trace`.

    ``algo``/``proto`` pin the NCCL algorithm/protocol of every collective (default: the tuner's
    choice). ``exclusive_fast_path`` times a collective whose links no other traffic can use
    by its (cached) time alone instead of flow by flow; turning it off must not change results.
    ``planner`` and ``network_factory`` default to ``costs.collectives.plan_collective``
    and ``replay.links.FlowNetwork`` (injectable for tests).
    """
    capacity = topology.capacity_Bps
    if planner is None:
        # The collective model's flows assume link capacities x the profile's achievable
        # fraction (costs.collectives.effective_capacity_Bps); the network must use the same.
        from simulator.costs.collectives import effective_capacity_Bps, plan_collective as planner

        capacity = effective_capacity_Bps(topology)
    if network_factory is None:
        from simulator.replay.links import FlowNetwork as network_factory
    grid = schedule.grid
    n_ranks = int(getattr(grid, "n_ranks", 0) or topology.n_gpus)
    t0 = time.perf_counter()
    ranks, mirrored = choose_ranks(schedule, n_ranks, max_ranks=max_ranks, op_budget=op_budget, symmetric=symmetric)
    rp = Replayer(schedule, topology, algo=algo, proto=proto, ranks=ranks, n_ranks=n_ranks, mirrored=mirrored,
                  planner=planner, network_factory=network_factory, capacity_Bps=capacity,
                  exclusive_fast_path=exclusive_fast_path)
    rp.run()
    timelines = {
        r: RankTimeline(rank=r, role=R.role, program=R.table.program, ready=R.ready, start=R.start, end=R.end,
                        algorithm=R.algorithm, groups=R.groups)
        for r, R in rp.ranks.items()
    }
    stats = SimStats(ranks=n_ranks, ranks_simulated=len(ranks), events=rp.env.n_events,
                     wall_s=time.perf_counter() - t0, mirrored_axes=tuple(mirrored))
    return Trace(timelines, stats)

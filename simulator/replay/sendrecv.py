"""Send/recv of one replay: posting each side, matching a send with its receive, and the flow
that then runs.

A :class:`P2POp` finishes when all its sends and receives have. A send from ``r`` to
``grid.peer(r, axis, offset)`` meets the receive with the same key posted by that peer; once both
sides are posted, one flow crosses ``topology.route(src, dst)`` after NCCL's send/recv latency,
priced by the cost model (:meth:`simulator.costs.model.CostModel.p2p`: the latency, wire bytes
and rate bound of the send). In symmetric mode a peer that is not simulated is a mirror
image of a simulated rank and posts its side at once.

A send/recv whose flows cross only idle links (most do: a TP ring exchange's hops, a pipeline's
activations) runs by its time alone while it holds those links reserved on the network
(``FlowNetwork.reserve``): one timer instead of the network's events for its flows. Traffic
that arrives on one of those links calls it back (:meth:`SendRecv.hand_back`): its flows go on
the network with the bytes they have left, and the newcomer shares the links with them as it
would have all along. Exact: a flow alone moves at its cap or its slowest link's capacity, the
rate the network gives it, up to float rounding in the order of operations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import simpy
from simpy.events import Timeout

from simulator.costs.model import CostModel
from simulator.hardware.routes import Route
from simulator.replay.rank_state import RankState
from simulator.schedule.ir import P2POp, transfer_key


# Distinct sets of send/recv flows kept (SendRecv._known), then the table starts over.
_FLOWS_KEPT = 65_536

Flows = tuple[tuple[tuple[int, ...], float, "float | None"], ...]  # (links, wire bytes, rate cap) each


@dataclass(frozen=True, slots=True)
class _Alone:
    """Send/recv flows on disjoint links, each at its own rate while nothing else crosses them."""

    links: np.ndarray  # every link they cross, sorted
    rates: tuple[float, ...]  # bytes/s of each flow alone: its cap or its slowest link
    ends: tuple[float, ...]  # seconds each flow takes alone
    duration: float  # the last of them


@dataclass(slots=True)
class _Hold:
    """Flows run by their time alone on links they hold reserved (SendRecv._held)."""

    flows: Flows
    alone: _Alone
    start: float
    end: float
    timer: Timeout  # their end, which the send/recv waits on
    unheld: Callable[[Any], None]  # the timer's callback that frees the links


def alone_of(flows: Flows, capacity: Sequence[float]) -> _Alone | None:
    """``flows`` timed alone, or None where some flow crosses no link, a link twice or
    another's link (those share capacity: the network times them)."""
    seen: set[int] = set()
    rates, ends = [], []
    for links, wire, cap in flows:
        if not links or wire <= 0 or len(set(links)) != len(links) or not seen.isdisjoint(links):
            return None
        seen.update(links)
        rate = min(capacity[link] for link in links)
        if cap is not None and cap < rate:
            rate = float(cap)
        rates.append(rate)
        ends.append(wire / rate)
    return _Alone(np.array(sorted(seen), dtype=np.int64), tuple(rates), tuple(ends), max(ends))


def _closed(*_args: Any) -> Any:
    raise RuntimeError("send/recv used after its replay ended")


@dataclass
class P2PSide:
    """A send or receive waiting for its counterpart; ``event`` fires when the flow is done."""

    event: simpy.Event
    nbytes: int
    posted_by: list[tuple[int, int, str]]  # (rank, op index, "send"/"recv") for hang reports
    matched_at: float = float("nan")
    transport: str = "nccl"


class SendRecv:
    """The send/recv sides of one replay that wait for their counterpart (``p2p``, keyed by
    (src, dst, key)) and the flows of matched pairs on the replay's network.

    ``route(src, dst)`` is the replay's route lookup; ``comm_started(rank, delta)`` counts
    communication in flight on a simulated rank (the overlap slowdown of its kernels).
    """

    def __init__(self, env: simpy.Environment, net: Any, ranks: dict[int, RankState], grid: Any, *,
                 costs: CostModel, route: Callable[[int, int], Route],
                 comm_started: Callable[[RankState, int], None],
                 image_of: Callable[[int], list[int]] | None = None,
                 holder: Callable[[], int] | None = None) -> None:
        self.env = env
        self._image_of = image_of
        self._images_started: set[tuple[int, int, str]] = set()  # image flows (src, dst, key) started
        self.net = net
        self.ranks = ranks
        self.grid = grid
        self.costs = costs
        self._route = route
        self._comm_started = comm_started
        self.p2p: dict[tuple[int, int, str], P2PSide] = {}
        self._peers: dict[tuple[int, str, int], int] = {}
        self._transfer_phase = getattr(net, "transfer_phase", None)
        # ``holder()``: a new reservation id, where the replay's network reserves links (None: it
        # does not, and every send/recv goes on the network)
        self._holder = holder
        # Per set of flows a send/recv puts on the network (its own flow, and those of its image
        # ranks): one object for it, the phase the network keeps its decomposition by, and the
        # flows timed alone (None: not held, or no reservations)
        self._known: dict[Flows, tuple[Flows, _Alone | None]] = {}
        self._capacity: Sequence[float] = np.asarray(costs.capacity_Bps, dtype=np.float64).tolist() \
            if holder is not None else ()
        self.holds: dict[int, _Hold] = {}  # by reservation id
        self.held = self.handed_back = 0  # send/recv run by their time alone, and of those called back

    def close(self) -> None:
        """The replay has ended: drop the replayer's callbacks (its reference cycle)."""
        self._route = self._comm_started = _closed
        self._image_of = _closed if self._image_of is not None else None
        self._holder = _closed if self._holder is not None else None
        self.holds.clear()

    def _peer(self, rank: int, axis: str, offset: int) -> int:
        key = (rank, axis, offset)
        peer = self._peers.get(key)
        if peer is None:
            peer = self._peers[key] = self.grid.peer(rank, axis, offset)
        return peer

    def _inflight(self, ranks: Iterable[int], delta: int) -> None:
        for r in ranks:
            R = self.ranks.get(r)
            if R is not None:
                self._comm_started(R, delta)

    def run_op(self, R: RankState, i: int, op: P2POp):
        """Post the sends and receives of op ``i`` of rank ``R`` (a generator run by the rank's
        stream process: it ends when all of them have finished)."""
        sides = []
        for t in op.sends:
            dst = self._peer(R.rank, t.axis, t.offset)
            sides.append(self._post(R.rank, dst, transfer_key(op, t), t.nbytes, (R.rank, i, "send"), dst, t.transport))
        for t in op.recvs:
            src = self._peer(R.rank, t.axis, t.offset)
            sides.append(self._post(src, R.rank, transfer_key(op, t), t.nbytes, (R.rank, i, "recv"), src, t.transport))
        if not sides:
            R.start[i] = self.env._now
            return
        R.blocked[op.stream] = (i, "send/recv")
        # Wait for each side in turn (the op ends with the last); cheaper than an AllOf condition,
        # which costs an event of its own per send/recv batch.
        for side in sides:
            if not side.event.processed:
                yield side.event
        R.start[i] = max(s.matched_at for s in sides)

    def _post(self, src: int, dst: int, key: str, nbytes: int, who: tuple[int, int, str],
              mirrored_peer: int, transport: str) -> P2PSide:
        """Post one side of a send/recv; start the flow once both sides are posted."""
        if src == dst:
            side = P2PSide(self.env.event(), nbytes, [who], self.env._now, transport)
            side.event.succeed()
            return side
        if mirrored_peer not in self.ranks:
            # The peer is a mirror image of a simulated rank: it posts its side now, by symmetry.
            side = P2PSide(self.env.event(), nbytes, [who], transport=transport)
            self._start_flow(src, dst, side, key)
            return side
        k = (src, dst, key)
        posted = self.p2p.pop(k, None)
        if posted is None:
            side = self.p2p[k] = P2PSide(self.env.event(), nbytes, [who], transport=transport)
            return side
        side = posted
        side.posted_by.append(who)
        if who[2] == "send":
            side.nbytes = nbytes
        self._start_flow(src, dst, side, key)
        return side

    def _start_flow(self, src: int, dst: int, side: P2PSide, key: str = "") -> None:
        """Run one send/recv flow: NCCL's latency, then the bytes on the route.

        Chained event callbacks rather than a SimPy process: a process costs two extra events
        (its start and its end) per flow, and a 128K-token CP ring has tens of thousands of flows.
        """
        side.matched_at = self.env._now
        route = self._route(src, dst)
        self._inflight((src, dst), +1)
        cost = self.costs.p2p(src, dst, side.nbytes, side.transport)
        latency, wire, cap = cost.latency_s, cost.wire_bytes, cost.rate_cap_Bps
        if latency > 0:
            self.env.timeout(latency).callbacks.append(
                lambda _ev: self._flow_bytes(src, dst, side, route, wire, cap, key))
        else:
            self._flow_bytes(src, dst, side, route, wire, cap, key)

    def _flow_bytes(self, src: int, dst: int, side: P2PSide, route: Route, wire: float, cap: float | None,
                    key: str = "") -> None:
        if side.nbytes > 0 and route.links:
            if self._image_of is not None:
                # the image ranks' send/recv, at the same moment by symmetry, each on its own
                # route: those between two ranks not simulated, once each while in flight (along
                # an image axis, the image of 0 -> 1 is 1 -> 2, and that of 3 -> 0 is 0 -> 1,
                # posted by rank 0 itself, or 1 -> 2 again at a shift of 2)
                flows = [(route.links, wire, cap)]
                ranks, started = self.ranks, self._images_started
                mine = []
                for s, d in zip(self._image_of(src), self._image_of(dst)):
                    if s not in ranks and d not in ranks and (s, d, key) not in started:
                        mine.append((s, d, key))
                        flows.append((self._route(s, d).links, wire, cap))
                started.update(mine)
                done = self._start(tuple(flows))
                if mine:
                    done.callbacks.append(lambda _ev: started.difference_update(mine))
            else:
                done = self._start(((route.links, wire, cap),))
            done.callbacks.append(lambda _ev: self._flow_done(src, dst, side))
        else:
            self._flow_done(src, dst, side)

    def _start(self, flows: Flows) -> simpy.Event:
        """The flows of a send/recv, held on their links while those are idle, else on the network."""
        known = self._known.get(flows)
        if known is None:
            if len(self._known) >= _FLOWS_KEPT:
                self._known.clear()
            known = self._known[flows] = (flows, alone_of(flows, self._capacity) if self._holder is not None else None)
        phase, alone = known
        if alone is not None and self.net.idle(alone.links):
            return self._held(phase, alone)
        return self._transfer(phase)

    def _held(self, flows: Flows, alone: _Alone) -> simpy.Event:
        """Run ``flows`` by their time alone while they hold their (idle) links reserved; the
        returned timer is their end unless traffic calls them back first (:meth:`hand_back`)."""
        hid = self._holder()  # type: ignore[misc]
        now = self.env._now
        timer = Timeout(self.env, alone.duration)

        def unheld(_ev: Any) -> None:
            if self.holds.get(hid) is hold:
                del self.holds[hid]
                self.net.release(hid, alone.links)

        hold = _Hold(flows, alone, now, now + alone.duration, timer, unheld)
        self.holds[hid] = hold
        self.held += 1
        timer.callbacks.append(unheld)
        self.net.reserve_idle(hid, alone.links)
        return timer

    def hand_back(self, hid: int, now: float, due: float) -> bool:
        """Traffic starts now on links that hold ``hid`` reserved: if those are a send/recv's
        (:meth:`_held`) that has not ended by ``due``, its flows go on the network with the bytes
        they have left, and what waited on its timer waits on their end. False: ``hid`` is not a
        send/recv's."""
        hold = self.holds.get(hid)
        if hold is None:
            return False
        if hold.end <= due:  # (it ends this instant, before the newcomer starts)
            return True
        del self.holds[hid]
        self.handed_back += 1
        alone = hold.alone
        self.net.release(hid, alone.links)
        elapsed, last = now - hold.start, due - hold.start
        rest = [(links, wire - rate * elapsed, cap) for (links, wire, cap), rate, end
                in zip(hold.flows, alone.rates, alone.ends) if end > last]
        end = self.net.transfer_many(rest)
        timer = hold.timer
        end.callbacks.extend([cb for cb in timer.callbacks if cb is not hold.unheld])
        timer.callbacks = []
        return True

    def _transfer(self, phase: Flows) -> simpy.Event:
        """Put the flows of ``phase`` (one object per set of flows: :meth:`_start`) on the network
        as one phase (``FlowNetwork.transfer_phase``): while no other traffic crosses their links
        they run in closed form, their solo trajectory, and a flow that arrives on one of those
        links turns them back into ordinary flows with the bytes that trajectory has left
        (``solo_phases``). These are the send/recv that met traffic as they started, of which some
        flows may still meet none. The same flows recur every micro-batch, and the network keeps
        its decomposition by the object."""
        if self._transfer_phase is None:  # (a test's stand-in network)
            return self.net.transfer(*phase[0]) if len(phase) == 1 else self.net.transfer_many(phase)
        return self._transfer_phase(phase)

    def _flow_done(self, src: int, dst: int, side: P2PSide) -> None:
        self._inflight((src, dst), -1)
        side.event.succeed()

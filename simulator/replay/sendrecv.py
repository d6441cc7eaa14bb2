"""Send/recv of one replay: posting each side, matching a send with its receive, and the flow
that then runs.

A :class:`P2POp` finishes when all its sends and receives have. A send from ``r`` to
``grid.peer(r, axis, offset)`` meets the receive with the same key posted by that peer; once both
sides are posted, one flow crosses ``topology.route(src, dst)`` after NCCL's send/recv latency,
priced by the cost model (:meth:`simulator.costs.model.CostModel.p2p`: the latency, wire bytes
and rate bound of the send). In symmetric mode a peer that is not simulated is a mirror
image of a simulated rank and posts its side at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

import simpy

from simulator.costs.model import CostModel
from simulator.hardware.routes import Route
from simulator.replay.rank_state import RankState
from simulator.schedule.ir import P2POp


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
                 image_of: Callable[[int], list[int]] | None = None) -> None:
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

    def close(self) -> None:
        """The replay has ended: drop the replayer's callbacks (its reference cycle)."""
        self._route = self._comm_started = _closed
        self._image_of = _closed if self._image_of is not None else None

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
            sides.append(self._post(R.rank, dst, t.key, t.nbytes, (R.rank, i, "send"), dst, t.transport))
        for t in op.recvs:
            src = self._peer(R.rank, t.axis, t.offset)
            sides.append(self._post(src, R.rank, t.key, t.nbytes, (R.rank, i, "recv"), src, t.transport))
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
                done = self.net.transfer_many(flows)
                if mine:
                    done.callbacks.append(lambda _ev: started.difference_update(mine))
            else:
                done = self.net.transfer(route.links, wire, cap)
            done.callbacks.append(lambda _ev: self._flow_done(src, dst, side))
        else:
            self._flow_done(src, dst, side)

    def _flow_done(self, src: int, dst: int, side: P2PSide) -> None:
        self._inflight((src, dst), -1)
        side.event.succeed()

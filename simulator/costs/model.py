"""The cost model of one cluster: what every collective, send and kernel costs on it.

:class:`CostModel` is the one object the replay engine (and the single-collective timer, the
calibration and the trace export) asks for costs. It holds the topology, the algorithm and
protocol pins of the run and the caches that make repeated questions cheap (flow patterns and
NCCL tuner contexts per group, send/recv prices per pair and size), all on the instance: two
models share no state unless their caller hands both the same ``geometry`` (layouts and flow
patterns, which depend on the routes alone), and dropping a model drops its caches.

- :meth:`CostModel.plan`: a collective as NCCL's tuner would run it
  (:func:`simulator.costs.collectives.plan_collective`): latency plus phases of flows.
- :meth:`CostModel.p2p`: one ``ncclSend``/``ncclRecv`` pair, priced by the ``sendrecv`` plan of
  the two GPUs (NCCL's send/recv latency, the protocol's wire bytes and the per-channel rate
  bound), or as a plain copy for the userbuffers transport.
- :meth:`CostModel.compute_times`: every kernel of a program (:mod:`simulator.costs.compute`).
- :meth:`CostModel.issue_times`: when the host has issued each op (:mod:`simulator.costs.host`).
- :attr:`CostModel.capacity_Bps`: the link capacities the flows assume (raw × the profile's
  achievable fraction); the replay's network is built on them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from simulator.config.hardware import GPU
from simulator.costs.collectives import (
    CollectivePlan, effective_capacity_Bps, net_hops_in_latency, phase_time_s, plan_collective,
    proxied_peers_in_latency,
)
from simulator.costs.compute import compute_times
from simulator.costs.host import host_cost_s, issue_times
from simulator.costs.topology_view import TopologyView
from simulator.schedule.ir import Op


@dataclass(frozen=True, slots=True)
class P2PCost:
    """One send of ``nbytes``: NCCL's latency before the bytes move, the bytes on the wire
    (payload × the protocol's wire factor) and the bound on its rate (its channels'
    bandwidth; None: only the links bound it)."""

    latency_s: float
    wire_bytes: float
    rate_cap_Bps: float | None


class CostModel:
    """Costs on ``topology``; ``algo``/``proto`` pin the NCCL algorithm and protocol of every
    collective (None: the tuner's choice). A send/recv keeps NCCL's choice of algorithm (it has
    one) under the protocol pin."""

    def __init__(self, topology: TopologyView, algo: str | None = None, proto: str | None = None, *,
                 geometry: dict | None = None) -> None:
        self.topology = topology
        self.algo = algo
        self.proto = proto
        self.capacity_Bps: np.ndarray = effective_capacity_Bps(topology)
        self._patterns: dict = {}  # plan_collective's cache: tuner contexts
        # What depends on the routes only (layouts, flow patterns): the caller may share one
        # among models of topologies with the same routes (calibration's perturbed profiles).
        self._geometry: dict = {} if geometry is None else geometry
        self._p2p: dict[tuple[int, int, int, str], P2PCost] = {}

    @property
    def gpu(self) -> GPU:
        return self.topology.profile.gpu

    def plan(self, op: str, gpus: Sequence[int], size_bytes: int, *, algo: str | None = None,
             proto: str | None = None) -> CollectivePlan:
        """The collective ``op`` over ``gpus`` (rank order) of ``size_bytes`` (nccl-tests
        convention). ``algo``/``proto`` override the model's pins for this call (calibration
        times each measurement with the algorithm it was run with).

        Plans are not memoised here (their patterns are, and scaling one is cheap; an 8,192-rank
        All-to-All plan holds tens of thousands of flows): callers that run a plan many times
        keep it."""
        return plan_collective(op, gpus, size_bytes, self.topology, algo=algo or self.algo,
                               proto=proto or self.proto, cache=self._patterns, geometry=self._geometry)

    def net_hops_in_latency(self, op: str, gpus: Sequence[int], algorithm: str, protocol: str,
                            size_bytes: int | None = None) -> float:
        """How many inter-node hops the latency term of (algorithm, protocol) counts at ``size_bytes``
        (:func:`simulator.costs.collectives.net_hops_in_latency`)."""
        return net_hops_in_latency(op, gpus, self.topology, algorithm, protocol, cache=self._patterns,
                                   size_bytes=size_bytes)

    def proxied_peers_in_latency(self, op: str, gpus: Sequence[int], algorithm: str, protocol: str) -> float:
        """Remote peers whose proxy cost the latency of (op, algorithm, protocol) adds in order
        (:func:`simulator.costs.collectives.proxied_peers_in_latency`)."""
        return proxied_peers_in_latency(op, gpus, self.topology, algorithm, protocol, cache=self._patterns)

    def p2p(self, src: int, dst: int, nbytes: int, transport: str = "nccl") -> P2PCost:
        """One send of ``nbytes`` from GPU ``src`` to GPU ``dst``.

        ``nccl``: the ``sendrecv`` plan of the pair (protocol and channels picked by size, as
        NCCL's ``p2p`` path does) gives the latency, the wire bytes and the rate bound of its
        ``src`` → ``dst`` flow. ``userbuffers`` (TransformerEngine's comm-GEMM overlap): the same
        latency, but a copy of the payload itself: no NCCL channels or protocol."""
        key = (src, dst, nbytes, transport)
        got = self._p2p.get(key)
        if got is None:
            plan = plan_collective("sendrecv", [src, dst], nbytes, self.topology, algo=None, proto=self.proto,
                                   cache=self._patterns, geometry=self._geometry)
            flow = plan.phases[0][0] if plan.phases and plan.phases[0] else None
            if transport != "nccl" or flow is None:
                got = P2PCost(float(plan.latency_s), float(nbytes), None)
            else:
                got = P2PCost(float(plan.latency_s), flow.nbytes, flow.rate_cap_Bps)
            self._p2p[key] = got
        return got

    def compute_times(self, program: Sequence[Op]) -> list[float | None]:
        """Seconds of every compute op of ``program`` alone on its GPU (None for the others)."""
        return compute_times(program, self.gpu, self.host_time_scale)

    @property
    def host_time_scale(self) -> float:
        """The node's host against the one :mod:`simulator.costs.host` was timed on."""
        return self.topology.profile.node.host_time_scale

    def host_costs(self, program: Sequence[Op]) -> list[float]:
        """Seconds of host time to issue each op of ``program`` (:func:`~simulator.costs.host.host_cost_s`
        × the node's ``host_time_scale``): :meth:`issue_times` is their running sum."""
        scale = self.host_time_scale
        return [scale * host_cost_s(op) for op in program]

    def issue_times(self, program: Sequence[Op], start: float = 0.0) -> list[float]:
        """When the rank's host has issued each op of ``program`` (:mod:`simulator.costs.host`),
        the running sum continued from ``start``."""
        return issue_times(program, start, self.host_time_scale)

    def time_alone_s(self, plan: CollectivePlan) -> float:
        """Seconds ``plan`` takes alone on an empty network, in closed form: its latency, then
        per phase the busiest link or the tightest rate cap (:func:`phase_time_s`)."""
        return plan.latency_s + sum(phase_time_s(p, self.capacity_Bps) for p in plan.phases)

    def __repr__(self) -> str:
        return f"CostModel({self.topology!r}, algo={self.algo!r}, proto={self.proto!r})"

"""Small hand-built schedules, a 2-node H100-like topology and stand-in cost model/network for
engine tests, so they do not depend on the collective model's numbers.

The stand-in network gives every flow its bottleneck link's full capacity (no sharing) and the
stand-in cost model (``FakeCosts``: raw link capacities, the real kernel times) plans a ring: one phase in which each member sends (n-1)/n x size to its successor
(AllReduce twice that, SendRecv the whole size), after ``LAT`` seconds. The closed forms the tests assert follow from it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import simpy

from simulator.config.hardware import GPU, HardwareProfile, GemmPoint
from simulator.costs.compute import compute_times
from simulator.costs.model import P2PCost
from simulator.hardware.topology import build_topology
from simulator.schedule.groups import Grid

LAT = 10e-6
NVLINK_Bps = 450e9


def make_profile(gpus_per_node: int = 8, overlap_slowdown: float = 0.0) -> HardwareProfile:
    gpu = GPU(name="h100", arch="hopper", sms=132, bf16_TFLOPS=989.0, fp16_TFLOPS=989.0, fp8_TFLOPS=1979.0,
              fp32_TFLOPS=67.0, hbm_GiB=80.0, hbm_GBps=3350.0,
              gemm_efficiency=[GemmPoint(flops=1e9, efficiency=0.3), GemmPoint(flops=1e12, efficiency=0.75)],
              overlap_slowdown=overlap_slowdown, kernel_launch_us=4.0, kernel_gap_us=4.0)
    return HardwareProfile.model_validate({
        "name": "test-h100", "gpu": gpu.model_dump(),
        "node": {"gpus": gpus_per_node,
                 "scale_up": {"kind": "nvswitch", "link_GBps": NVLINK_Bps / 1e9, "latency_us": 0.5, "nvls": True},
                 "pcie": {"gen": 5, "GBps": 64.0}, "nics": {"count": gpus_per_node, "Gbps": 400.0, "latency_us": 2.0}},
    })


@dataclass(frozen=True)
class FakeFlow:
    links: tuple[int, ...]
    nbytes: float
    rate_cap_Bps: float | None = None


@dataclass(frozen=True)
class FakePlan:
    algorithm: str
    protocol: str
    latency_s: float
    phases: tuple[tuple[FakeFlow, ...], ...]


def ring_plan(op: str, gpus: list[int], size_bytes: int, topo: Any, *, algo=None, proto=None) -> FakePlan:
    n = len(gpus)
    per = size_bytes * (n - 1) / n * (2 if op == "allreduce" else 1)
    if op == "alltoall":
        per = size_bytes * (n - 1) / n
    if op == "sendrecv":  # each member sends the whole message to its successor
        per = size_bytes
    flows = tuple(FakeFlow(topo.route(g, gpus[(i + 1) % n]).links, per) for i, g in enumerate(gpus))
    return FakePlan(algo or "ring", proto or "simple", LAT, (flows,))


class FakeCosts:
    """The cost model's interface (``simulator.costs.model.CostModel``) over :func:`ring_plan`:
    raw link capacities, a send priced as its payload after ``LAT``, the real kernel times."""

    def __init__(self, topology: Any, algo: str | None = None, proto: str | None = None) -> None:
        self.topology, self.algo, self.proto = topology, algo, proto
        self.capacity_Bps = topology.capacity_Bps
        self.gpu = topology.profile.gpu

    def plan(self, op: str, gpus, size_bytes: int, *, algo=None, proto=None) -> FakePlan:
        return ring_plan(op, list(gpus), size_bytes, self.topology, algo=algo or self.algo, proto=proto or self.proto)

    def p2p(self, src: int, dst: int, nbytes: int, transport: str = "nccl") -> P2PCost:
        return P2PCost(LAT, float(nbytes), None)

    def compute_times(self, program):
        return compute_times(program, self.gpu)


def ring_time(op: str, n: int, size_bytes: int, bw: float = NVLINK_Bps) -> float:
    """Closed form of ring_plan on an idle NVSwitch under FakeNetwork."""
    per = size_bytes * (n - 1) / n * (2 if op == "allreduce" else 1)
    return LAT + per / bw


class FakeNetwork:
    """Each flow runs at its slowest link's full capacity, independent of others."""

    def __init__(self, env: simpy.Environment, capacity_Bps) -> None:
        self.env = env
        self.cap = capacity_Bps

    def transfer(self, links, nbytes, rate_cap_Bps=None):
        rate = min(float(self.cap[l]) for l in links) if links else float("inf")
        if rate_cap_Bps:
            rate = min(rate, rate_cap_Bps)
        return self.env.timeout(nbytes / rate)


@dataclass
class Sched:
    """A minimal Schedule: the grid, one program per role and the rank -> role map."""

    grid: Grid
    programs: dict[Any, list]
    roles: dict[int, Any] = field(default_factory=dict)
    meta: dict = field(default_factory=dict)

    def role_of(self, rank: int) -> Any:
        return self.roles.get(rank, 0)


def topo(nodes: int = 1, gpus_per_node: int = 8, overlap_slowdown: float = 0.0):
    return build_topology(make_profile(gpus_per_node, overlap_slowdown), nodes)


FAKES = dict(cost_model=FakeCosts, network_factory=FakeNetwork)

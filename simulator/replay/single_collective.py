"""Time one collective alone on the modeled network: SimPy + FlowNetwork, nothing else running.

This is what ``clustersim collective`` prints and what the nccl-tests validation compares. The
device time is the plan's latency term (NCCL's tuner formula) followed by its phases of flows on
a :class:`~simulator.replay.links.FlowNetwork` built on the profile's achievable link capacities.

nccl-tests reports the wall time per iteration of a pipelined loop of launches, so a
measurement can never be shorter than the host's launch rate: ``launch_floor_s`` (for example
the profile's ``gpu.kernel_launch_us`` × GPUs driven by one process) bounds the reported time
from below; it is zero by default (a collective inside a training step overlaps its launch).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import simpy

from simulator.costs.collectives import CollectivePlan, busbw_factor
from simulator.costs.model import CostModel
from simulator.replay.links import FlowNetwork

# Above this many flows a lone plan is timed in closed form (per phase, its busiest link or
# tightest cap), which equals the fluid simulation for the symmetric phases built by the costs
# layer (tests/unit/test_collectives.py checks that both agree where both run) at a fraction of
# the cost: a 1,024-rank ring has flows finishing at slightly different instants, each of which
# would trigger a max-min recompute.
EVENT_DRIVEN_MAX_FLOWS = 256


@dataclass(frozen=True)
class CollectiveResult:
    time_s: float  # reported time: max(launch floor, device time)
    algorithm: str
    protocol: str
    algbw: float  # bytes/s, size / time (nccl-tests)
    busbw: float  # bytes/s, algbw × the nccl-tests factor
    device_time_s: float = 0.0  # latency + flows, without the launch floor
    channels: int = 1
    flows: int = 0


def run_plan(plan: CollectivePlan, net: FlowNetwork, env: simpy.Environment):
    """SimPy process: the plan's latency, then each phase's flows; returns when the last byte lands."""
    if plan.latency_s > 0:
        yield env.timeout(plan.latency_s)
    for phase in plan.phases:
        yield net.transfer_many(phase)


def simulate_plans(plans: Sequence[CollectivePlan], costs: CostModel) -> list[float]:
    """Run plans concurrently on one empty network; each one's completion time (seconds)."""
    env = simpy.Environment()
    net = FlowNetwork(env, costs.capacity_Bps)
    done: list[float] = [0.0] * len(plans)

    def proc(i: int, plan: CollectivePlan):
        yield from run_plan(plan, net, env)
        done[i] = env.now

    for i, plan in enumerate(plans):
        env.process(proc(i, plan))
    env.run()
    return done


def time_collective(op: str, gpus: Sequence[int], size_bytes: int, costs: CostModel, *, algo: str | None = None,
                    proto: str | None = None, launch_floor_s: float = 0.0,
                    event_driven: bool | None = None, plan: CollectivePlan | None = None) -> CollectiveResult:
    """Plan and run one collective on ``costs``' cluster; times in seconds, bandwidths in bytes/s.

    ``algo``/``proto`` override the model's pins for this collective. ``event_driven``: True
    runs the SimPy FlowNetwork, False the closed form (:meth:`CostModel.time_alone_s`); None
    (default) picks the FlowNetwork up to :data:`EVENT_DRIVEN_MAX_FLOWS` flows. ``plan``: the
    plan of these arguments when the caller has made it already (it is not planned twice).
    """
    if plan is None:
        plan = costs.plan(op, gpus, size_bytes, algo=algo, proto=proto)
    if event_driven is None:
        event_driven = plan.n_flows <= EVENT_DRIVEN_MAX_FLOWS
    device = simulate_plans([plan], costs)[0] if event_driven else costs.time_alone_s(plan)
    t = max(device, launch_floor_s)
    algbw = size_bytes / t if t > 0 else 0.0
    return CollectiveResult(t, plan.algorithm, plan.protocol, algbw, algbw * busbw_factor(plan.op, plan.n_ranks),
                            device, plan.channels, plan.n_flows)

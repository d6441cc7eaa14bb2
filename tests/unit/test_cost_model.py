"""The cost model (simulator/costs/model.py): one object per topology for plans, send prices and
kernel times, with its caches on the instance."""

from __future__ import annotations

import gc
import weakref

import pytest

from simulator.config.hardware import load_profile
from simulator.costs.collectives import plan_collective
from simulator.costs.compute import compute_times
from simulator.costs.model import CostModel
from simulator.hardware.topology import build_topology
from simulator.schedule.ir import ComputeOp


@pytest.fixture(scope="module")
def h100_2nodes():
    return build_topology(load_profile("dgx-h100"), 2)


@pytest.mark.parametrize("src,dst", [(0, 1), (0, 8)])
def test_a_send_is_priced_by_the_sendrecv_plan_of_its_pair(h100_2nodes, src, dst):
    nbytes = 32 << 20
    cost = CostModel(h100_2nodes).p2p(src, dst, nbytes)
    plan = plan_collective("sendrecv", [src, dst], nbytes, h100_2nodes)
    flow = plan.phases[0][0]
    assert flow.links == h100_2nodes.route(src, dst).links  # the first flow is src -> dst
    assert (cost.latency_s, cost.wire_bytes, cost.rate_cap_Bps) == (plan.latency_s, flow.nbytes, flow.rate_cap_Bps)
    assert cost.rate_cap_Bps is not None and cost.wire_bytes >= nbytes


def test_a_userbuffers_copy_moves_its_payload_unbounded_after_the_same_latency(h100_2nodes):
    costs = CostModel(h100_2nodes)
    nccl, ub = costs.p2p(0, 1, 1 << 20), costs.p2p(0, 1, 1 << 20, "userbuffers")
    assert (ub.wire_bytes, ub.rate_cap_Bps) == (float(1 << 20), None)
    assert ub.latency_s == nccl.latency_s


def test_pins_apply_to_collectives_and_the_protocol_pin_to_sends(h100_2nodes):
    costs = CostModel(h100_2nodes, "ring", "ll128")
    plan = costs.plan("allreduce", range(16), 1 << 20)
    assert (plan.algorithm, plan.protocol) == ("ring", "ll128")
    assert costs.plan("allreduce", range(16), 1 << 20, algo="tree").algorithm == "tree"
    assert costs.p2p(0, 8, 1 << 20) == CostModel(h100_2nodes, None, "ll128").p2p(0, 8, 1 << 20)


def test_capacities_are_the_achievable_ones(h100_2nodes):
    costs = CostModel(h100_2nodes)
    kinds = h100_2nodes.kind
    nv = kinds.index("nvlink")
    assert costs.capacity_Bps[nv] == pytest.approx(h100_2nodes.capacity_Bps[nv]
                                                  * h100_2nodes.profile.node.scale_up.efficiency)


def test_compute_times_are_the_kernel_model(h100_2nodes):
    prog = [ComputeOp(name="g", kind="gemm", flops=2 * 4096**3), ComputeOp(name="e", kind="elementwise", hbm_bytes=1 << 30)]
    assert CostModel(h100_2nodes).compute_times(prog) == compute_times(prog, h100_2nodes.profile.gpu)


def test_nothing_outlives_the_model():
    """Caches live on the instance: once the model and its topology are dropped, no module
    state keeps either alive (the patterns of a 1,024-GPU All-to-All are tens of MB)."""
    topo = build_topology(load_profile("dgx-h100"), 2)
    costs = CostModel(topo)
    costs.plan("alltoall", range(16), 1 << 20)
    costs.p2p(0, 8, 1 << 20)
    refs = weakref.ref(topo), weakref.ref(costs)
    del topo, costs
    gc.collect()
    assert all(r() is None for r in refs)

"""Per-link loads and a plan's links sized by the flows, not by the fabric: the same numbers as
the fabric-sized bincount and the flow-by-flow sets they replace."""

from __future__ import annotations

import numpy as np
import pytest

from simulator.config.hardware import load_profile
from simulator.costs.collectives import phase_time_s
from simulator.costs.flow_patterns import Phase, link_loads
from simulator.costs.model import CostModel
from simulator.hardware.topology import build_topology
from simulator.replay.exclusive_links import plan_links


def test_link_loads_equal_a_bincount_over_every_link():
    rng = np.random.default_rng(3)
    for n_links, entries in ((10, 40), (827_904, 5_000), (7, 0)):
        links = rng.integers(0, n_links, entries)
        w = rng.random(entries) * 1e9
        full = np.bincount(links, weights=w, minlength=n_links)
        used, load = link_loads(links, w)
        assert used.tolist() == np.flatnonzero(full).tolist()
        assert load.tolist() == full[used].tolist()  # bit for bit: each link's entries summed in order


@pytest.mark.parametrize("op,gpus,algo", [
    ("allreduce", list(range(0, 256, 8)), "ring"),  # one GPU per node: a DP ring
    ("allreduce", list(range(64)), "tree"),
    ("allgather", list(range(3, 256, 16)), "ring"),
    ("alltoall", list(range(0, 64, 4)), None),
    ("sendrecv", [5, 200], None),
])
def test_plan_links_and_phase_time_match_the_flows(op, gpus, algo):
    topo = build_topology(load_profile("dgx-h100"), 32)
    plan = CostModel(topo, algo).plan(op, gpus, 64 << 20)
    want = sorted({link for phase in plan.phases for flow in phase for link in flow.links})
    assert plan_links(plan).tolist() == want
    for phase in plan.phases:
        if not phase:
            continue
        # the phase's busiest link from its flows, over every link of the fabric
        load = np.zeros(topo.n_links)
        for f in phase:
            load[list(f.links)] += f.nbytes
        caps = [f.rate_cap_Bps or np.inf for f in phase]
        ref = max(max(f.nbytes / c for f, c in zip(phase, caps)), float(np.max(load / topo.capacity_Bps)))
        got = phase_time_s(phase, topo.capacity_Bps)
        assert got == pytest.approx(ref, rel=1e-12)
        if isinstance(phase, Phase):  # the same phase as plain flows takes the generic path
            assert phase_time_s(tuple(phase), topo.capacity_Bps) == pytest.approx(ref, rel=1e-12)


@pytest.mark.parametrize("op,gpus,algo", [
    ("allreduce", list(range(0, 256, 8)), "ring"),
    ("allreduce", list(range(64)), "tree"),
    ("alltoall", list(range(0, 64, 4)), None),
    ("allreduce", list(range(16)), "nvls_tree"),
])
def test_checked_flows_of_a_phase_read_off_its_arrays_equal_flow_by_flow(op, gpus, algo):
    from simulator.replay.flow_records import checked_flows

    topo = build_topology(load_profile("dgx-h100"), 32)
    plan = CostModel(topo, algo).plan(op, gpus, 64 << 20)
    phases = [p for p in plan.phases if isinstance(p, Phase)]
    assert phases
    for phase in phases:
        got = checked_flows(phase, topo.n_links)
        assert got == checked_flows(tuple(phase), topo.n_links)
        assert all(type(x) is float for _, nbytes, cap in got for x in (nbytes, cap))
        with pytest.raises(ValueError, match="link id out of range"):  # a failed check: the same error
            checked_flows(phase, int(phase.arrays.links.max()))

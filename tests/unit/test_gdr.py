"""NCCL's GPUDirect RDMA rule (config/gdr.py) and the CPU-interconnect crossing of a GPU whose path to
its NIC is of type sys (hardware/topology.py): which GPUs stage through host memory, which routes
cross the link, and the All-to-All time it bounds, in closed form."""

from __future__ import annotations

import pytest

from simulator.config.hardware import load_profile
from simulator.costs import nccl_graph
from simulator.costs.collectives import effective_capacity_Bps, phase_time_s, plan_collective
from simulator.config.gdr import PATH_ORDER, host_staged_gpus, nccl_path_type, uses_gdr
from simulator.hardware.topology import build_topology

# ncclTopoCheckGdr: GPUDirect when the path is no farther than NCCL_NET_GDR_LEVEL (default PXB). A Grace
# superchip's C2C path (p2c) is PATH_PHB before 2.27 (v2.23.4-1 has no C2C path type: topo.h).
RULE = {  # level -> the paths that get GPUDirect under NCCL 2.23.4
    None: {"pix", "pxb"},
    "pix": {"pix"},
    "pxb": {"pix", "pxb"},
    "phb": {"pix", "pxb", "p2c", "phb"},
    "sys": {"pix", "pxb", "p2c", "phb", "sys"},
}
R2_23_4 = (2, 23, 4)


@pytest.mark.parametrize("level", list(RULE))
@pytest.mark.parametrize("path", PATH_ORDER)
def test_gdr_per_path_type_and_level(path, level):
    assert uses_gdr(path, level, release=R2_23_4) is (path in RULE[level])
    assert uses_gdr(path, level, gpu_direct=False, release=R2_23_4) is False  # no GPUDirect support
    # from 2.27 the C2C path is P2C and NCCL_NET_GDR_C2C (default 1) gives it GPUDirect at any level
    assert uses_gdr(path, level, release=(2, 27, 3)) is (path == "p2c" or path in RULE[level])


def test_c2c_path_is_phb_until_2_27():
    """paths.cc of v2.27.3-1 retypes a GPU -> C2C -> CPU -> PCIe -> NIC path from PHB to P2C; before, the
    C2C link is an NVLink to the CPU (topo.cc ncclTopoAddC2c) and the CPU's PCIe link makes the path PHB."""
    assert [nccl_path_type("p2c", r) for r in ((2, 23, 4), (2, 26, 2), (2, 27, 3), None)] == ["phb", "phb", "p2c", "p2c"]
    assert all(nccl_path_type(p, (2, 23, 4)) == p for p in PATH_ORDER if p != "p2c")


def test_gdr_reads_before_ampere_need_an_nvlink_peer():
    assert uses_gdr("pix", read=True, sm=70, nvlink_peer=False) is False
    assert uses_gdr("pix", read=True, sm=70, nvlink_peer=True) is True
    assert uses_gdr("pix", read=False, sm=70, nvlink_peer=False) is True  # receives are not reads
    assert uses_gdr("pix", read=True, sm=80, nvlink_peer=False) is True


def test_polaris_stages_gpu0_and_gpu2_through_host_memory():
    p = load_profile("polaris-a100")
    assert p.gpu_nic_paths == ("sys", "phb", "sys", "phb")
    assert host_staged_gpus(p) == (True, False, True, False)  # NCCL_NET_GDR_LEVEL=PHB
    # with NCCL's default level (PXB) every Polaris GPU would stage: even the PHB ones
    default = p.model_copy(update={"node": p.node.model_copy(update={"nics": p.node.nics.model_copy(
        update={"gdr_level": None})})})
    assert host_staged_gpus(default) == (True, True, True, True)
    assert p.sys_link_GBps == 16.0  # NCCL's AMD_BW (topo.h)


def test_only_sys_gpus_routes_cross_the_cpu_interconnect():
    t = build_topology(load_profile("polaris-a100"), 64)
    sys_links = {i for i, k in enumerate(t.kind) if k == "sys"}
    assert len(sys_links) == 64 * 2 * 2  # two GPUs per node, one link each way
    by_id = {d["link"]: (u, v) for u, v, d in t.graph.edges(data=True)}
    for src, dst, crossing in ((0, 4, 2), (1, 5, 0), (0, 5, 1), (3, 6, 1), (2, 130, 2), (0, 1, 0), (0, 2, 0)):
        links = t.route(src, dst).links
        assert sum(link in sys_links for link in links) == crossing
        hops = [by_id[link] for link in links]
        assert all(a[1] == b[0] for a, b in zip(hops, hops[1:]))  # still a path of the graph
        m = t.route_matrix([src], [dst])
        assert tuple(m.links[0][m.links[0] >= 0].tolist()) == links  # bulk path = scalar path
    # rings and trees enter and leave nodes at the NICs' local GPUs (1 and 3): no crossing
    for op, algo in (("allreduce", "ring"), ("allreduce", "tree"), ("allgather", "ring")):
        plan = plan_collective(op, list(range(32)), 64 << 20, t, algo=algo)
        assert not {link for phase in plan.phases for flow in phase for link in flow.links} & sys_links


def _with_sys(p, gbps):
    return p.model_copy(update={"node": p.node.model_copy(update={"pcie": p.node.pcie.model_copy(
        update={"sys_GBps": gbps})})})


@pytest.mark.parametrize("sys_GBps", [16.0, 4.0])
def test_alltoall_time_is_the_nic_or_the_host_staged_crossing(sys_GBps):
    """Two Polaris nodes, 1 GiB All-to-All: each GPU sends S/8 to each of the 4 GPUs of the other
    node. A NIC carries two GPUs' sends (its local GPU's and a staged one's) at 25 GB/s x 0.9;
    a staged GPU's crossing carries its own at ``sys_GBps``: the slower of the two is the phase."""
    p = _with_sys(load_profile("polaris-a100"), sys_GBps)
    t = build_topology(p, 2)
    size = 1 << 30
    plan = plan_collective("alltoall", list(range(8)), size, t, algo="direct", proto="simple")
    inflation = 1.0 / nccl_graph.context_from_profile(p, 8, 2, "p2p").constants.p2p_efficiency
    per_gpu = 4 * size / 8 * inflation  # bytes a GPU sends across nodes
    nic = 2 * per_gpu / (p.node.nics.Bps * p.node.nics.efficiency)
    staged = per_gpu / (sys_GBps * 1e9)
    (phase,) = plan.phases
    assert phase_time_s(phase, effective_capacity_Bps(t)) == pytest.approx(max(nic, staged), rel=1e-9)
    assert (staged > nic) is (sys_GBps == 4.0)


def _with_phb_p2p(p, gbps, gdr_level="phb"):
    node = p.node.model_copy(update={
        "pcie": p.node.pcie.model_copy(update={"phb_p2p_GBps": gbps}),
        "nics": p.node.nics.model_copy(update={"gdr_level": gdr_level})})
    return p.model_copy(update={"node": node})


def test_phb_p2p_rate_is_the_pcie_link_of_gpudirect_phb_gpus_only():
    """``pcie.phb_p2p_GBps`` sets the PCIe link of a GPU that reaches its NIC through the host bridge
    with GPUDirect RDMA (path phb, NCCL_NET_GDR_LEVEL >= PHB); a staged GPU (path sys on Polaris, or
    phb below the level) keeps the link's rate, and a profile without the field keeps it everywhere."""
    base = load_profile("polaris-a100")
    assert base.node.pcie.phb_p2p_GBps is None
    link = base.node.pcie.GBps * 1e9

    def gpu_links(p):
        t = build_topology(p, 2)
        # a cross-node route leaves over its GPU's PCIe link first; the topology keeps raw link rates
        return {g: t.capacity_Bps[t.route(g, 4 + g).links[0]] for g in range(4)}

    assert all(v == pytest.approx(link) for v in gpu_links(base).values())
    capped = gpu_links(_with_phb_p2p(base, 20.0))
    assert capped == pytest.approx({0: link, 1: 20e9, 2: link, 3: 20e9})  # GPUs 1 and 3: phb, GPUDirect
    assert all(v == pytest.approx(link) for v in gpu_links(_with_phb_p2p(base, 20.0, gdr_level=None)).values())


def test_perlmutter_ring_plateau_is_the_phb_p2p_rate_per_nic():
    """Two Perlmutter nodes (4 GPUs, 4 NICs each, every GPU on path phb with GPUDirect), 1 GiB Ring
    AllReduce: each GPU's ring crosses its own NIC, so a channel's network leg runs at the slower of the
    NIC (25 GB/s x 0.9) and the GPU's host-bridge peer-to-peer rate (``phb_p2p_GBps`` x 0.9, the links'
    achievable fraction): the latter, in closed form."""
    p = load_profile("perlmutter-a100")
    t = build_topology(p, 2)
    nic = p.node.nics.Bps * p.node.nics.efficiency
    p2p = p.node.pcie.phb_p2p_GBps * 1e9 * p.node.nics.efficiency
    assert p2p < nic
    cap = effective_capacity_Bps(t)
    for g in range(4):
        links = t.route(g, 4 + g).links
        assert min(cap[link] for link in links) == pytest.approx(p2p)

"""Whether NCCL uses GPUDirect RDMA between a GPU and its NIC, from the PCIe path between them.

NCCL's ``ncclTopoCheckGdr`` (``src/graph/paths.cc``; the same test from 2.8 to 2.28) enables
GPUDirect RDMA for a GPU / NIC pair only when the pair's path type is no farther than
``NCCL_NET_GDR_LEVEL``, whose default is ``PATH_PXB`` ("int netGdrLevel = PATH_PXB;" then
"if (distance > netGdrLevel) ... GPU Direct RDMA Disabled"). The path types are ordered by
distance (``src/graph/topo.h``): PIX (one PCIe switch) < PXB (several switches, not the CPU) <
PHB (through the CPU's host bridge) < SYS (across the CPU interconnect between NUMA nodes or
sockets). A send (the NIC reads GPU memory) has one more condition: before compute capability
8.0 NCCL reads through GDR only when the GPU has an NVLink peer (``NCCL_NET_GDR_READ`` default,
"Disable GDR Reads pre-Ampere when we have other PCI flows").

Without GPUDirect the network buffers of that connection live in host memory
(``src/transport/net.cc``: ``NCCL_NET_MAP_ADD_POINTER(map, 0, resources->useGdr, ...)`` places a
buffer in GPU memory only when ``useGdr``): the kernel writes a send into host-pinned memory over
the GPU's PCIe link and the NIC reads it from there; a receive is written there by the NIC and
read by the kernel. Those receives need no flush (``net_messages.gdr_flush`` is GPUDirect's). The
proxy copies nothing either way (the kernel reaches the host buffer through its device mapping), so
what the host path adds is the links it crosses: the GPU's PCIe link and, for a path of type sys,
the CPU interconnect (``hardware/topology.py``, ``HardwareProfile.sys_link_GBps``).

The rule reads only a profile's fields, so it sits in the config layer: the topology (which PCIe
links carry a GPU's network traffic, and at what rate) and the tuner (``costs/nccl_graph.py``)
both apply it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from simulator.config.nccl_overrides import version_key

if TYPE_CHECKING:
    from simulator.config.hardware import HardwareProfile

PathType = Literal["pix", "pxb", "p2c", "phb", "sys"]

# Distance order of the PCIe path types this model names (topo.h of v2.27.3-1: PATH_PIX < PATH_PXB <
# PATH_P2C < PATH_PHB < PATH_SYS; PATH_PXN, between PXB and P2C, is a route, not a profile's path).
PATH_ORDER: tuple[PathType, ...] = ("pix", "pxb", "p2c", "phb", "sys")

# ``p2c``: a Grace-Hopper (GH200) or Grace-Blackwell GPU whose NIC hangs off its Grace CPU's PCIe, reached
# over the chip-to-chip NVLink (C2C) and then the CPU's host bridge. NCCL adds C2C as an NVLink between
# GPU and CPU (``ncclTopoAddC2c``, src/graph/topo.cc of v2.23.4-1) and types any path through a CPU's
# PCIe link PATH_PHB (src/graph/paths.cc ``ncclTopoSetPaths``: "Consider a path going through the CPU
# as PATH_PHB"), so until 2.26 the GPU-to-NIC path is PHB: no LL128 across nodes (tuning.cc enables it up
# to PATH_PXN on compute capability 9.0) and GPUDirect only with NCCL_NET_GDR_LEVEL >= PHB (the Alps
# sweeps set PHB). v2.27.3-1 retypes it PATH_P2C ("update the GPU -> NIC path in the case of C2C + PHB",
# paths.cc), enables LL128 up to P2C (``NCCL_LL128_C2C``, default 1) and GPUDirect over it
# (``NCCL_NET_GDR_C2C``, default 1: the distance becomes PATH_C2C).
C2C_PATH_FROM = (2, 27, 0)


def nccl_path_type(path: PathType, release: tuple[int, int, int] | None = None) -> PathType:
    """The path type NCCL release ``release`` (:func:`version_key`; None: the newest) gives a
    profile's GPU-to-NIC ``path``: ``p2c`` is PHB before 2.27 (``C2C_PATH_FROM``), else unchanged."""
    if path == "p2c" and release is not None and release < C2C_PATH_FROM:
        return "phb"
    return path


# ncclTopoCheckGdr's default netGdrLevel (paths.cc), in every release the project models.
DEFAULT_GDR_LEVEL: PathType = "pxb"

# Compute capability from which NCCL reads (sends) through GDR without an NVLink peer (paths.cc).
GDR_READ_ANY_FROM_SM = 80


def uses_gdr(path: PathType, level: PathType | None = None, *, read: bool = False, sm: int = 80,
             nvlink_peer: bool = True, gpu_direct: bool = True,
             release: tuple[int, int, int] | None = None) -> bool:
    """Whether NCCL release ``release`` (None: the newest) runs a connection between a GPU and a NIC
    ``path`` apart with GPUDirect RDMA: the path no farther than ``level`` (``NCCL_NET_GDR_LEVEL``;
    None: NCCL's default, PXB), GPU and NIC supporting it (``gpu_direct``), and for a send (``read``)
    a GPU of compute capability ``sm`` >= 8.0 or one with an NVLink peer. A C2C path (``p2c``) is
    PHB before 2.27 and GPUDirect from 2.27 whatever the level (``nccl_path_type``)."""
    if not gpu_direct:
        return False
    if read and sm < GDR_READ_ANY_FROM_SM and not nvlink_peer:
        return False
    path = nccl_path_type(path, release)
    if path == "p2c":  # NCCL_NET_GDR_C2C (default 1 from 2.27): the distance becomes PATH_C2C
        return True
    return PATH_ORDER.index(path) <= PATH_ORDER.index(level or DEFAULT_GDR_LEVEL)


def host_staged_gpus(profile: HardwareProfile) -> tuple[bool, ...]:
    """Per local GPU of ``profile``, whether NCCL stages its network sends and receives through host
    memory: its path to its NIC (``HardwareProfile.gpu_nic_paths``) is farther than
    ``NCCL_NET_GDR_LEVEL`` (``node.nics.gdr_level``), or the node has no GPUDirect RDMA."""
    nics = profile.node.nics
    release = version_key(profile.nccl_version) if profile.nccl_version else None
    return tuple(not uses_gdr(p, nics.gdr_level, gpu_direct=nics.gpu_direct, release=release)
                 for p in profile.gpu_nic_paths)

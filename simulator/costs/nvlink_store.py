"""What a ring's LL128 CTAs carry on a node where NCCL moves Simple data by P2P read: the NVLink
store rate that NCCL's own LL ceiling states.

On two compute-capability-8.0 GPUs joined by NVLink NCCL enables P2P *read* (``src/graph/paths.cc``
of v2.30.7-1, lines 416-417, "Enable P2P Read for Ampere/NVLink only"; the same test from v2.8): a
Simple receive loads the chunk from the sender's buffer, because reads reach the better AllReduce
bandwidth on a DGX A100 (NVIDIA/nccl issue #512). The low-latency protocols never read: in read mode
``src/transport/p2p.cc`` keeps only the Simple buffer on the sender (``if (info->read) sendSize +=
comm->buffSizes[NCCL_PROTO_SIMPLE]``) and the LL and LL128 buffers on the receiver (``if (!(info->read &&
p == NCCL_PROTO_SIMPLE)) recvSize += comm->buffSizes[p]``, v2.30.7-1 line 489), into which the
sending CTAs *store* their lines over NVLink (``src/device/prims_ll.h``, ``prims_ll128.h``
``store128``). A profile's NVLink efficiency on A100 is a Simple plateau, the read path's rate
(:mod:`simulator.costs.ring_work`); the store path has its own.

NCCL states that rate in its tuner: ``llMaxBws`` (``src/graph/tuning.cc``), the ceiling of an LL
ring's bus bandwidth, is 87.7 GB/s on one Ampere node in every release from v2.8.4-1 to v2.30.7-1.
An LL line is 16 bytes carrying 8 of data, so that ceiling is ``2 x 87.7 = 175.4`` GB/s of lines
stored per GPU. LL128 stores the same way, 128-byte lines carrying 120 bytes
(``NCCL_LL128_DATAELEMS`` of ``NCCL_LL128_LINEELEMS``, ``src/include/device.h``), so at that store
rate its ring reaches::

    busbw <= 2 x llMaxBw x 120/128 = 164.4 GB/s

where NCCL's LL128 term rates it at ``min(0.92 x 12 x 20, 12 x 20) = 221`` (``perChMaxRingLL128Bws``
Ampere 20 GB/s per channel, 12 graph channels): 0.74 of it. Measured on one A100 NVSwitch node,
Ring/LL128 adds 8 -> 16 MiB at 159 GB/s busbw (vTrain's 8-GPU table, data/nccl/
a100x8_allreduce_1node_vtrain_dgx.csv, least squares over the 1 MiB steps) and 8 -> 32 MiB at 178
(an HGX A100 sweep described in data/nccl/INDEX.md), and Ring/LL on the latter at 93.8 GB/s busbw,
188 GB/s of 16-byte lines: the two write protocols meet on one store rate, below the reads'.

Hopper and later write with every protocol (no P2P read), their LL128 per-channel cap (36.7 GB/s,
``perChMaxRingLL128Bws``) is what NCCL rates them at, and an H100 node's Ring/LL128 rows run above
2 x llMaxBw x 120/128 (319-357 GB/s busbw against 264: data/nccl/h100x8_allreduce_1node_full_nvlsenv.csv),
so the bound is applied to the read path only, inside one node (across nodes the network binds far
below it).
"""

from __future__ import annotations

from simulator.costs import ring_work

LL_LINE_WIRE_PER_DATA = 2.0  # an LL line: 8 bytes of data and 8 of flag (prims_ll.h)
LL128_DATA_PER_LINE = 120 / 128  # an LL128 line: 15 data words and one flag word (device.h)


def store_rate_GBps(ll_max_bw_GBps: float) -> float:
    """The NVLink store rate of one GPU that NCCL's LL ceiling (``llMaxBw``, busbw of LL data)
    implies, GB/s of lines stored."""
    return LL_LINE_WIRE_PER_DATA * ll_max_bw_GBps


def ll128_busbw_cap_GBps(algorithm: str, protocol: str, n_nodes: int, arch: str, scale_up_kind: str,
                         ll_max_bw_GBps: float) -> float | None:
    """The busbw a Ring/LL128 collective of one P2P-read node reaches at the store rate of its
    ``llMaxBw`` (module docstring), GB/s; None where the bound does not apply (other algorithms or
    protocols, several nodes, GPUs or links NCCL does not read over)."""
    if algorithm != "ring" or protocol != "ll128" or n_nodes != 1:
        return None
    if not ring_work.uses_p2p_read(arch, scale_up_kind) or not ll_max_bw_GBps > 0:
        return None
    return store_rate_GBps(ll_max_bw_GBps) * LL128_DATA_PER_LINE

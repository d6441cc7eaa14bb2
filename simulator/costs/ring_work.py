"""What a Simple ring AllReduce's CTAs do per byte, and the rate that bounds on fewer GPUs than
the node has.

NCCL's ring AllReduce (``src/collectives/device/all_reduce.h`` of v2.15.5-1, ``runRing``; the same
steps in ``src/device/all_reduce.h`` of later releases) runs, per chunk of ``S/n`` bytes, one
``send``, ``n-2`` ``recvReduceSend``, one ``directRecvReduceCopySend``, ``n-2``
``directRecvCopySend`` and one final ``recv``. Counting the memory accesses each rank's CTAs make per
chunk byte (every received chunk is read from the peer's buffer and every sent one written to a
buffer, whichever side of NVLink the buffer sits on, ``src/transport/p2p.cc``):

* the ``2(n-1)`` sends write ``2(n-1)`` chunks and the ``2(n-1)`` receives read as many;
* the user input is read by the send and the ``n-1`` reduce steps (``n`` chunks);
* the output is written by the reduce-copy, the ``n-2`` copies and the final receive (``n``).

That is ``4(n-1) + 2n = 6n - 4`` chunk accesses for ``2(n-1)`` chunks on the wire, so per byte of
bus bandwidth (nccl-tests' busbw counts the ``2(n-1)/n · S`` a rank sends)::

    W(n) = (3n - 2) / (n - 1)        W(2) = 4, W(4) = 10/3, W(8) = 22/7

Two GPUs reduce on every received chunk but one; eight copy on half of them. When the CTAs' accesses
rather than the link bound the ring, busbw falls as ``1/W(n)``. On A100 NCCL moves Simple data by P2P
*read* over NVLink (``src/graph/paths.cc`` of v2.15.5-1 line 336, "Enable P2P Read for Ampere/NVLink
only", compute capability 80): every receive is a remote load whose round trip the receiving CTA
waits for, in the same warps that load the input and store the output, so the CTA's work per byte
sets its rate. The NVLink efficiency of an A100 profile is the 8-GPU AllReduce plateau
(``scale_up.efficiency``: 234.9 of 300 GB/s, nccl-tests on 8 A100), i.e. the rate of that work at
``W(node GPUs)``; a ring of fewer GPUs of the node then runs at::

    busbw(n) = efficiency · link_GBps · W(gpus) / W(n)

(a no-op at the full node). vTrain's tables of its A100 node (data/nccl/a100x{2,4,8}_allreduce_1node_
vtrain_dgx.csv) add 512 MiB -> 1 GiB at 206, 227 and 235 GB/s busbw on 2, 4 and 8 GPUs; the closed
form gives 184, 221 and 234. No constant is fitted: the count is NCCL's step sequence, the rate the
profile's measured 8-GPU plateau. Hopper and later write (no P2P read, ``paths.cc``) and no 2- or
4-GPU sweep of them is bundled, so the bound is applied to the read path only.
"""

from __future__ import annotations

# Compute capability NCCL enables P2P read for over NVLink (paths.cc: ``cudaCompCap == 80``).
P2P_READ_ARCHS = ("ampere",)


def allreduce_accesses_per_bus_byte(n: int) -> float:
    """Memory accesses a rank's CTAs make per byte of busbw in a ring AllReduce of ``n`` ranks,
    ``(3n - 2)/(n - 1)`` (module docstring); ``n`` >= 2."""
    if n < 2:
        raise ValueError(f"a ring needs at least 2 ranks, got {n}")
    return (3 * n - 2) / (n - 1)


def uses_p2p_read(arch: str, scale_up_kind: str) -> bool:
    """Whether NCCL moves a Simple ring's data between GPUs of this node by P2P read over an
    NVSwitch: NVLink between two compute-capability-8.0 GPUs (``paths.cc``). A full NVLink mesh
    reads too, but its profile's ``link_GBps`` is not one GPU's total, so it is left out."""
    return arch in P2P_READ_ARCHS and scale_up_kind == "nvswitch"


def allreduce_busbw_cap_GBps(op: str, protocol: str, n_ranks: int, n_nodes: int, gpus_per_node: int, arch: str,
                             scale_up_kind: str, link_GBps: float, efficiency: float) -> float | None:
    """The busbw a Simple ring AllReduce of ``n_ranks`` GPUs of one node can reach when its CTAs'
    memory accesses bind (module docstring), GB/s; None where the bound does not apply (other
    collectives, protocols or transports, several nodes, the full node)."""
    if op != "allreduce" or protocol != "simple" or n_nodes != 1 or not 2 <= n_ranks < gpus_per_node:
        return None
    if not uses_p2p_read(arch, scale_up_kind) or link_GBps <= 0 or efficiency <= 0:
        return None
    return efficiency * link_GBps * allreduce_accesses_per_bus_byte(gpus_per_node) / allreduce_accesses_per_bus_byte(n_ranks)

"""How NCCL runs the rounds of a grouped send/recv (All-to-All) across nodes: in batches, side by side.

A grouped All-to-All is one p2p round per peer distance (``p2pSchedule``). Across nodes NCCL puts
the rounds of one schedule group (``NCCL_P2P_SCHEDULE_GROUP_SIZE``, 8 by default: the ranks of one
node, or a divisor of them) on one channel base (``src/include/channel.h``,
``ncclP2pChannelBaseForRound``: ``base = groupDelta x ceil(groupSize / 8) + localDelta / 8``), and
a channel appends up to ``NCCL_MAX_DEV_WORK_P2P_PER_BATCH`` (8) p2p operations of one such group to
one work batch (``src/enqueue.cc``, ``ncclAddWorkBatchToPlan``). The kernel divides a CTA's warps
among the operations of its batch and runs them together (``src/device/sendrecv.h``:
``nWarpPerWork = nWarps / nWorks``; ``enqueue.cc``: "Each channel runs up to
NCCL_MAX_DEV_WORK_P2P_PER_BATCH tasks concurrently"), and the bases of different groups land on
different channels (one CTA and one proxy op each), which run side by side. So the network hops of
one node's peers overlap, and so do those of different nodes while the channels hold them all: a
channel runs in order only the batches that share it, ``ceil(batches x channels per round /
p2pnChannels)``. NCCL 2.18 fused the same 8 operations per work ("We can perform 8 send/recv per
round per CTA", ``enqueue.cc`` at v2.18.3-1), so the rule holds for every release the tables encode.

What stays in order is the proxy: one thread per GPU posts every remote peer's receive and send
through the network plugin and progresses them (``src/transport/net.cc``), so each remote peer
beyond the first adds ``p2p_peer_us`` (a deployed constant, one value for every transport, fitted on
the measured All-to-Alls: :mod:`simulator.costs.deployed`, :func:`simulator.calibration.deployed_fit.fit_peer_cost`).
Measured, 80 H100 over InfiniBand (10 nodes, NCCL 2.29.2) take 970 us for a 32 MiB All-to-All and
1,662 us for 64 MiB, about 300 us beyond the bytes for 72 remote peers, and 2 x 8 A100 over
InfiniBand 57 us at 64 B-16 KiB for 8 (data/nccl/h100x80_alltoall_10node_xxrjun_ib.csv,
a100x16_alltoall_2node_dgx_ib.csv): 4-6 us a peer, where one network hop per peer in order cost
1.4 ms for the 72.

Inside one node every round has its own base (``base = p2pRound``); the model keeps its in-order
local hops there (:func:`simulator.costs.collectives._alltoall_latency_us`). RCCL gives every round
its own base across nodes as well (:mod:`simulator.costs.rccl_p2p`); a transport whose messages a
host proxy handles one by one pays per message instead (``collectives.remote_hops_in_order``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

BATCH = 8  # NCCL_MAX_DEV_WORK_P2P_PER_BATCH, and the default NCCL_P2P_SCHEDULE_GROUP_SIZE


@dataclass(frozen=True)
class BatchesInOrder:
    """The batches the busiest p2p channel runs one after the other: ``remote`` of them to peers
    on other nodes (each costs one network hop), ``local`` to peers of the rank's own node."""

    local: int
    remote: int


def group_size(ranks_per_node: int) -> int:
    """``p2pSchedGroupSize`` across nodes (``src/init.cc`` ``ncclP2pSchedule``): 8, or its greatest
    common divisor with a node's ranks where 8 does not divide them."""
    if ranks_per_node % BATCH != 0:
        return math.gcd(BATCH, ranks_per_node)
    return BATCH


def batches_in_order(ranks_per_node: int, n_nodes: int, channels_per_round: int, p2p_channels: int) -> BatchesInOrder:
    """The batches of a grouped All-to-All over ``n_nodes`` nodes of ``ranks_per_node`` ranks that
    the busiest channel runs in order (module docstring): one batch per schedule group, whose
    rounds run together, each on ``channels_per_round`` of the ``p2p_channels``; the remote
    batches counted first, the chain's worst case."""
    local = ranks_per_node // group_size(ranks_per_node)
    remote = local * (n_nodes - 1)
    in_order = max(1, math.ceil((local + remote) * max(1, channels_per_round) / max(1, p2p_channels)))
    remote_in_order = min(remote, in_order)
    return BatchesInOrder(local=min(local, in_order - remote_in_order), remote=remote_in_order)


def proxied_peers(remote_peers: int) -> int:
    """Remote peers whose posting the proxy adds in order beyond a single send/recv's (module
    docstring): every remote peer but the first."""
    return max(0, remote_peers - 1)

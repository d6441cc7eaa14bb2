"""How RCCL spreads the rounds of a grouped send/recv (All-to-All) over its channels.

A grouped All-to-All is one p2p round per peer distance (``p2pSchedule``); each round's send and
receive run on the channels ``ncclP2pChannelBaseForRound`` gives it, and rounds that land on one
channel run in order there, while channels (one CTA each on the GPU, one proxy op each) run side
by side. NCCL gives the rounds of one node delta a shared base in batches of
``NCCL_MAX_DEV_WORK_P2P_PER_BATCH`` (8; ``src/include/channel.h``) whose operations its kernel runs
together (:mod:`simulator.costs.nccl_p2p`). RCCL does not batch across two nodes:

* RCCL 2.27.7 (ROCm 7.1-7.2; ROCm/rccl ``src/include/channel.h`` at e278ec9, the tree that adds
  ``RCCL_P2P_BATCH_ENABLE``, CHANGELOG "RCCL 2.27.7 for ROCm 7.1.0")::

      int batchSize = (comm->nNodes > 2 && p2pBatchEnable) ? NCCL_MAX_DEV_WORK_P2P_PER_BATCH : 1;
      int base = nodeDelta*divUp(comm->maxLocalRanks, batchSize);
      base += localDelta/batchSize;

  so on two nodes every round has its own base, ``base = p2pRound``, and on more too unless
  batching is asked for (``CHANGELOG.md``, RCCL 2.27.7 for ROCm 7.1.0: "Added
  ``RCCL_P2P_BATCH_ENABLE`` to enable batching P2P operations"; an opt-in the model does not take);
* RCCL 2.21.5 (ROCm/rccl ``src/include/channel.h``, 0cbce2a): ``base = delta + step /
  p2pGroupSize`` with ``p2pGroupSize = NCCL_MAX_WORK_ELEMENTS_P2P / 2`` and RCCL's
  ``NCCL_MAX_WORK_ELEMENTS_P2P`` 2 (``src/include/device.h``; NCCL's 16), so one round per base
  there too (``enqueue.cc`` ends a fused work at every round: ``i % (NCCL_MAX_WORK_ELEMENTS_P2P/2)``).

A round then takes ``nChannelsMin`` channels from its base, spread over ``p2pnChannels``
(``ncclP2pChannelForPart``), ``nChannelsMin`` being ``p2pnChannelsPerPeer`` halved while one round
of all ranks overflows ``p2pnChannels`` (``enqueue.cc``). With the bases all different, a channel
runs ``ceil(nRanks x nChannelsMin / p2pnChannels)`` rounds in order: one on a 2 x 8 communicator of
32 p2p channels, so its remote peers' latencies overlap instead of adding up.

What a round to a peer on another node costs is its Simple send's: a send over the network runs
Simple whatever the call's protocol (``enqueue.cc`` ``addP2pToPlan`` takes LL only where the
connection has LL buffers, which a network connection lacks unless ``NCCL_ALLOC_P2P_NET_LL_BUFFERS``
is set), so the overlapped remote hop is priced with the Simple row of the p2p latency.
"""

from __future__ import annotations

import math

from simulator.costs.nccl_graph import TunerContext, p2p_channels_min


def rounds_have_own_channels(ctx: TunerContext) -> bool:
    """RCCL gives every p2p round its own channel base (module docstring): always across two
    nodes, and across more while ``RCCL_P2P_BATCH_ENABLE`` is off (its default; the model takes the
    default). NCCL batches 8 rounds per base: False."""
    return ctx.library == "rccl" and ctx.n_nodes > 1


def rounds_in_order(ctx: TunerContext) -> int:
    """The p2p rounds one channel runs in order when every round has its own base: the ``n_ranks``
    rounds of ``nChannelsMin`` channels each over ``p2pnChannels``, at least one."""
    p2p = max(1, ctx.graph.p2p_channels)
    n_min = p2p_channels_min(max(1, ctx.graph.p2p_channels_per_peer), ctx.n_ranks, p2p)
    return max(1, math.ceil(ctx.n_ranks * n_min / p2p))

"""The pipeline fill of a Tree/Simple AllReduce across nodes: what its first chunk takes to cross
the tree before the chunks behind it stream at the slowest stage's rate.

NCCL runs a Tree AllReduce on Hopper and Ampere as ``runTreeUpDown`` (``src/device/all_reduce.h``
of v2.21.5-1, lines 83-143): each channel reduces its share up the tree in chunks, then broadcasts
it down. The tree of a channel (``connectTrees``, ``src/graph/connect.cc``) is a chain through the
GPUs of each node plus a binary tree over the nodes, so a chunk crosses ``ppn - 1`` NVLink stages
and ``ceil(log2(nodes))`` network stages up, and as many down. With Simple a stage forwards a
chunk only when it holds all of it: the receiver waits on the step's tail, which the sender posts
after the whole step is written (``src/device/prims_simple.h``: ``waitPeer`` / ``postPeer``). So the stages form a
store-and-forward pipeline: the call takes its slowest stage's time for every chunk, which the
flow model of the links prices (:func:`simulator.costs.collectives.plan_collective`), plus the
time the first chunk spends in every other stage, ``sum(stages) - max(stages)``: this module.

A chunk is at most one step (``net_messages.tree_simple_chunk_bytes``) and at most the channel's
share of the call (``enqueue.cc``: ``countPerChannel = DIVUP(count, nChannels)`` over the channels
the call launches, ``nccl_tuner.launched_channels``). An NVLink stage moves it at what one CTA
copies (``nccl_tuner.ring_cta_GBps``: 20.6 GB/s on Hopper, the rate a ring's and a send's CTA
measure); a network stage at the launched channel's share of the graph channels' network
bandwidth (NCCL launches two channels per graph channel, each with its own connection).

The fill matters where the chunk is large: from NCCL 2.20 a Tree/Simple chunk is a whole step at
every size, 1 MiB with the 8 MiB buffer of GPUDirect-TCPXO. Measured on 2 x 8 H100 of Google
Cloud A3 Mega (data/nccl/h100x16_allreduce_2node_gcp_a3mega_tcpxo.csv, NCCL 2.21.5): from 1 to
16 MiB, where each of the 16 channels' shares is one chunk of S/16, the time grows by ~55 us per
MiB (203 us at 1 MiB, 978 at 16), 14 NVLink stages and one network stage of a 64 KiB-1 MiB
chunk; from 16 to 32 MiB, where the chunk stays at 1 MiB and the second chunk only adds one
network stage, it grows by 82 us (1,060 us at 32 MiB), and from there at the network's rate
(~5.7 us per MiB: 183 GB/s over the 8 NICs). Before 2.20 the chunk is halved to 32-128 KiB for
calls of few chunks per channel, and the fill is a few tens of microseconds.
"""

from __future__ import annotations

import math


def tree_stages(ppn: int, n_nodes: int) -> tuple[int, int]:
    """(NVLink stages, network stages) one chunk of a Tree AllReduce crosses, up and back down."""
    net = 2 * math.ceil(math.log2(n_nodes)) if n_nodes > 1 else 0
    return 2 * max(0, ppn - 1), net


def tree_simple_fill_us(nbytes: float, channels: int, chunk_bytes: int, ppn: int, n_nodes: int,
                        nvlink_GBps: float, net_GBps: float) -> float:
    """The fill of a Tree/Simple AllReduce of ``nbytes`` on ``channels`` launched channels (module
    docstring), us: its first chunk (``chunk_bytes``, at most a channel's share of the call) through
    every stage but the slowest. ``nvlink_GBps``: one NVLink stage's rate; ``net_GBps``: one
    network stage's (per launched channel). 0 without bytes or rates."""
    if nbytes <= 0 or nvlink_GBps <= 0 or net_GBps <= 0:
        return 0.0
    chunk = min(float(chunk_bytes), nbytes / max(1, channels))
    n_nvl, n_net = tree_stages(ppn, n_nodes)
    stages = [chunk / (nvlink_GBps * 1e3)] * n_nvl + [chunk / (net_GBps * 1e3)] * n_net
    return sum(stages) - max(stages) if stages else 0.0

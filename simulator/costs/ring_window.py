"""What one ring channel carries across a node boundary when its slices are small: the window of
``NCCL_STEPS`` buffer slots that a network connection keeps in flight.

A Simple ring step sends its chunk in ``SlicePerChunk`` = CHUNKSTEPS / SLICESTEPS = 2 slices, and
each slice advances the connection by ``StepPerSlice`` = SLICESTEPS = 2 of its ``NCCL_STEPS`` = 8
slots whatever its size (``src/device/prims_simple.h`` ``genericOp``: ``sliceSize =
max(divUp(nelem, 16*SlicePerChunk)*16, sliceSize/32)``, ``step += StepPerSlice``; the sender waits
in ``waitPeer`` until ``connStepCache + NCCL_STEPS >= step + StepPerSlice``). So at most
``NCCL_STEPS / SLICESTEPS`` = 4 slices of one channel are in flight on its connection, however
small the slices are. Across the network a slot comes back only after a round trip through both
proxies (``src/transport/net.cc``: the receiving proxy reposts a slot's receive, for the IB
transport a clear-to-send written into the sender's FIFO, ``ncclIbIrecv``, once the receiving CTA
has consumed it, and the sending proxy posts the next slice only against it). One slot's cycle is
therefore the receiving CTA's copy of the slice, its time on the channel's share of the NIC, and one
network hop each way; a channel moves at most 4 slices per cycle. LL128 sends one message per
step, 8 in flight.

The slice follows from the call (``src/enqueue.cc`` ``calcCollChunking`` and the ring kernels of
v2.29.2-1): each launched channel gets ``nBytes / channels`` contiguous bytes
(``scheduleCollTasksToPlan``) and runs them in loops of ``nRanks`` chunks of at most ``stepSize x
CHUNKSTEPS`` (2 MiB with the 4 MiB buffer), the last loop's chunk shrunk to what is left over the
ranks. With many ranks and channels the chunk is small: 256 MiB AllGathered over 10 x 8 H100 on 16
channels is 210 KB per step, slices of 105 KB, while the same call over 2 x 8 is 1 MiB per step.

The network hop each way is NCCL's own per-hop estimate for the protocol (``tuning.cc`` hwLat NET
Ring: 14 us for Simple), the same figure the latency term counts per crossing, not a fitted value.
Where the window is slower than the channel's own rate, the difference is time the channel's links
sit idle: ``collectives.window_stall_us`` adds it to the call's latency term.

Where it binds: two CTAs per NIC (8 NICs, 8 GPUs per node on Hopper: ``nccl_graph`` keeps 8 graph
channels at 48 GB/s, each run by two CTAs), many ranks and channels per call (small slices), a hop
latency that is large against a slice's copy. Not measured as such: Google's a3-ultra AllGather
(data/nccl/h200x16_allgather_2node_gcp_a3ultra_roce.csv, Google's gIB plugin and tuner
configuration, not printed) runs its 64 MiB Simple row (131 KB slices) at the CTAs' rate, 27% faster
than the window gives; the 16 channels the model gives it may not be what that tuner configuration
launches.

Measured (data/nccl/h100x80_allgather_10node_xxrjun_ib.csv, 10 x 8 H100, 2 CTAs per 400 Gb/s NIC):
a ring step of a 210 KB chunk takes 22.4 us, of 420 KB 30.7 us, of 840 KB 50.6 us and of 1.68 MB
88.3 us (time / 79 steps), where the CTAs' 20.6 GB/s alone give 10.2, 20.4, 40.8 and 81.5 us; the
same cluster at 2 and 4 GPUs per node (4 CTAs per NIC, each channel a quarter of the NIC) runs the
same chunks at the NIC share with 3.5-6 us per step left, the window's cap then above the share.
"""

from __future__ import annotations

import math

from simulator.costs.net_messages import (
    DEFAULT_BUFF_BYTES, LL128_STEP_DATA_BYTES, NCCL_STEPS, RING_CHUNK_STEPS, RING_SLICE_STEPS, ring_loops, ring_steps,
)

# Slices of one ring chunk (CHUNKSTEPS / SLICESTEPS) and the smallest slice (sliceSize / 32).
SLICES_PER_CHUNK = RING_CHUNK_STEPS // RING_SLICE_STEPS
MIN_SLICE_FRACTION = 32


def ring_step_bytes(nbytes: float, channels: int, n_ranks: int, buff_bytes: int = DEFAULT_BUFF_BYTES,
                    protocol: str = "simple") -> float:
    """Bytes one launched channel moves per ring step (its chunk): the channel's share of the call
    over the ranks, at most a full chunk, in equal loops (module docstring)."""
    if nbytes <= 0:
        return 0.0
    chunk = float(LL128_STEP_DATA_BYTES if protocol == "ll128" else buff_bytes // NCCL_STEPS * RING_CHUNK_STEPS)
    per_rank = nbytes / max(1, channels) / max(1, n_ranks)
    return min(chunk, per_rank / ring_loops(nbytes, channels, n_ranks, chunk))


def message_bytes(step_bytes: float, protocol: str, buff_bytes: int = DEFAULT_BUFF_BYTES) -> float:
    """One network message of a ring step: a Simple slice (half the chunk, at least 1/32 of a slice
    slot), or an LL128 step."""
    if protocol == "ll128":
        return step_bytes
    floor = buff_bytes // NCCL_STEPS * RING_SLICE_STEPS / MIN_SLICE_FRACTION
    return min(step_bytes, max(step_bytes / SLICES_PER_CHUNK, floor))


def in_flight(protocol: str) -> int:
    """Messages a ring connection keeps in flight: NCCL_STEPS slots over the slots one takes."""
    return NCCL_STEPS // (RING_SLICE_STEPS if protocol == "simple" else 1)


def window_GBps(message: float, in_flight_msgs: int, cta_GBps: float, share_GBps: float, hop_us: float) -> float:
    """The most one channel's connection across nodes carries, GB/s: ``in_flight_msgs`` messages
    per slot cycle (the receiving CTA's copy at ``cta_GBps``, the wire at the channel's NIC share
    ``share_GBps``, one ``hop_us`` each way). Infinite for an empty message."""
    if message <= 0 or cta_GBps <= 0 or share_GBps <= 0:
        return math.inf
    cycle_us = message / (cta_GBps * 1e3) + message / (share_GBps * 1e3) + 2.0 * hop_us
    return in_flight_msgs * message / (cycle_us * 1e3)


def ring_messages(op: str, nbytes: float, channels: int, n_ranks: int, buff_bytes: int = DEFAULT_BUFF_BYTES) -> int:
    """Simple messages one ring connection carries in a call: every step of every loop, in
    ``SLICES_PER_CHUNK`` slices (2(n-1) steps for an AllReduce, n-1 for an AllGather or a
    ReduceScatter)."""
    if nbytes <= 0:
        return 0
    loops = ring_loops(nbytes, channels, n_ranks, buff_bytes // NCCL_STEPS * RING_CHUNK_STEPS)
    return ring_steps(op, n_ranks) * loops * SLICES_PER_CHUNK


def windowed_fraction(messages: int, protocol: str = "simple") -> float:
    """The share of a connection's messages that wait for a slot: none while the call's messages
    fit the window at once (the first window's round trip is the latency term's), then all but
    those."""
    w = in_flight(protocol)
    return 0.0 if messages <= w else 1.0 - w / messages


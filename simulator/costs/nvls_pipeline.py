"""The pipeline fill of an NVLSTree or NVLS AllReduce: what a call pays beyond its bytes at the
links' rate and NCCL's per-call latency, because the kernel moves the data in chunks through stages.

NCCL splits an NVLSTree call over ``nvlsChannels x nHeads`` concurrent operations (every channel
runs on every GPU, each GPU the head of one slice of each channel: ``src/device/all_reduce.h``,
``RunWorkColl<..., NCCL_ALGO_NVLS_TREE, ...>``, ``chunkOffset = elemOffset + nvls->headRank *
chunkCount``), and each operation in chunks of ``chunkSize`` bytes (``src/enqueue.cc`` of
v2.26.2-1 lines 1893-1905, the same rule in v2.30.7-1 lines 2276-2285 with the maximum from
``src/transport/nvls.cc``): ``NCCL_NVLS_CHUNKSIZE`` (128 KiB, ``src/init.cc``), at most 64 KiB on
4 nodes or more (``NCCL_NVLSTREE_MAX_CHUNKSIZE``'s default), halved to 64 KiB when the call
holds fewer than 4 rounds of ``concurrentOps x chunkSize`` and to 32 KiB below one round.

Within an operation a chunk passes through warp groups that run as a pipeline, each forwarding a
whole chunk before the next stage takes it: the scatter warps and the NVLS reduce
(``multimem.ld_reduce``) before the network, the broadcast (``multimem.st``) and gather warps after
it. The bandwidth-bound part of the call is therefore ``rounds + STAGES_BEHIND`` rounds, not
``rounds``: the last round still crosses the stages behind the bottleneck. Measured on two HGX
H100 nodes (data/nccl/h100x16_allreduce_2node_issue309_ib.csv), the time above
``69 us + S / 250.4 GB/s`` (the 4-8 GiB rows) is 140 us from 64 MiB to 2 GiB (128 KiB chunks:
2.1 rounds of 16.8 MB at 250 GB/s) and 70 us at 32 MiB (64 KiB chunks: 2.1 rounds): two
rounds, the two NVLS stages on either side of the network.
"""

from __future__ import annotations

NVLS_CHUNK_BYTES = 128 * 1024  # NCCL_NVLS_CHUNKSIZE default (src/init.cc)
NVLS_TREE_MAX_CHUNK_BYTES_4_NODES = 64 * 1024  # NCCL_NVLSTREE_MAX_CHUNKSIZE default from 4 nodes (nvls.cc)
STAGES_BEHIND = 2  # rounds a chunk still crosses after the bottleneck stage (module docstring)


def nvls_tree_chunk_bytes(nbytes: float, concurrent_ops: int, n_nodes: int) -> int:
    """NVLSTree's ``chunkSize`` for a call of `nbytes` over `concurrent_ops` (channels x heads)
    operations on `n_nodes` nodes (``src/enqueue.cc``, module docstring)."""
    chunk = NVLS_CHUNK_BYTES if n_nodes < 4 else min(NVLS_CHUNK_BYTES, NVLS_TREE_MAX_CHUNK_BYTES_4_NODES)
    ops = max(1, concurrent_ops)
    for rounds, floor in ((32, 262144), (16, 131072), (4, 65536), (1, 32768)):
        if nbytes < rounds * ops * chunk and chunk > floor:
            chunk = floor
    return chunk


def nvls_chunk_bytes(nbytes: float, concurrent_ops: int) -> int:
    """NVLS's (one NVLink domain) ``chunkSize`` for a call of `nbytes` over `concurrent_ops`
    (channels x heads) operations: ``NCCL_NVLS_CHUNKSIZE``, halved to 64 KiB below 64 rounds of
    ``concurrentOps x chunkSize``, to 32 KiB below 8 and to 16 KiB below 2 (``src/enqueue.cc`` of
    v2.26.2-1 lines 1877-1887; the same rule from v2.19.3-1 to v2.29.7-1)."""
    chunk = NVLS_CHUNK_BYTES
    ops = max(1, concurrent_ops)
    for rounds, floor in ((64, 65536), (8, 32768), (2, 16384)):
        if nbytes < rounds * ops * chunk and chunk > floor:
            chunk = floor
    return chunk


def nvls_fill_factor(nbytes: float, concurrent_ops: int) -> float:
    """:func:`nvls_tree_fill_factor` for NVLS inside one NVLink domain, whose kernel is a pipeline
    of three warp groups (``src/device/all_reduce.h`` of v2.26.2-1, RunWorkColl NVLS, oneNode,
    lines 408-455): the scatter into the GPU's NVLS buffer, the switch's reduce and multicast
    (``directRecvDirectSend``: ``multimem.ld_reduce`` then ``multimem.st``) and the gather out of
    it, each forwarding a whole chunk of every head before the next takes it: the call takes
    ``rounds + 2`` rounds at the reduction's rate, as NVLSTree's measured (module docstring).
    One GB200 NVL72 rack (72 heads x 32 channels: 75.5 MB rounds of 32 KiB chunks at 512 MiB and
    1 GiB, 151 MB of 64 KiB from 2 GiB) takes 3.0 and 3.1 rounds more than its bytes at the 8 GiB
    row's rate (423 GB/s algbw) at 512 MiB and 1 GiB, 1.4 at 2 GiB and none at 4 GiB
    (data/nccl/gb200x72_allreduce_1rack_nvl72.csv): the pipeline's 2 lie between. On 8 H100
    (16 channels x 8 heads) the 32-128 MiB rows, 26%, 18% and 12% too fast at the links' rate
    alone, come within 4% (data/nccl/h100x8_allreduce_1node.csv)."""
    if nbytes <= 0:
        return 1.0
    round_bytes = max(1, concurrent_ops) * nvls_chunk_bytes(nbytes, concurrent_ops)
    return 1.0 + min(STAGES_BEHIND * round_bytes, nbytes) / nbytes


def nvls_tree_fill_factor(nbytes: float, concurrent_ops: int, n_nodes: int) -> float:
    """How much longer than its bytes at the bottleneck's rate an NVLSTree call takes:
    ``1 + min(STAGES_BEHIND x round, S) / S``, with a round of ``concurrent_ops x chunk`` bytes.
    A call of fewer rounds than the stages behind the bottleneck drains only what it holds: its
    own bytes once more (two HGX H100 nodes, data/nccl/h100x16_allreduce_2node_xe9680_ib.csv: 8 MiB,
    one round of 128 x 64 KiB, takes 132.6 us, NCCL's 67 us latency and twice its bytes at
    ~250 GB/s give 135 us; 4 MiB 94.4 us against 101)."""
    if nbytes <= 0:
        return 1.0
    round_bytes = max(1, concurrent_ops) * nvls_tree_chunk_bytes(nbytes, concurrent_ops, n_nodes)
    return 1.0 + min(STAGES_BEHIND * round_bytes, nbytes) / nbytes

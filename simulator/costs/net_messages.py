"""How many network messages one channel of a Simple ring or tree sends per call.

NCCL's Simple protocol moves data through a connection's buffer in ``NCCL_STEPS`` (8) slots of
``NCCL_BUFFSIZE / NCCL_STEPS`` bytes; the proxy posts one network send per slice (a tree's chunk
is one step, a ring's chunk ``ALLREDUCE_CHUNKSTEPS`` = 4 steps sent in slices of
``ALLREDUCE_SLICESTEPS`` = 2). How big a message is therefore follows from the size of the call,
through the chunk-size rules of ``src/enqueue.cc`` (unchanged from NCCL 2.8 to 2.2x):

* Tree/Simple (``ncclPatternTreeUpDown``): the chunk is one step. Until NCCL 2.19 it is halved
  while the call gives each channel fewer than ``depth*8`` chunks (down to 128 KiB), fewer than
  ``depth*4`` (down to 64 KiB) and fewer than ``depth`` (down to 32 KiB), with ``depth =
  ranks per node - 1 + log2(nodes)`` (``connectTrees`` in ``src/graph/connect.cc``; the rule is
  ``src/enqueue.cc`` v2.18.5-1 lines 1313-1318, v2.19.3-1 lines 1334-1339). The test is integer
  arithmetic, ``info->nBytes / (info->nChannels*chunkSize)`` (``size_t``), over the channels the
  call launches: ``info->nChannels`` is what ``getAlgoInfo`` left of ``comm->nChannels`` (twice the
  graph's channels) after its thread-threshold reduction (v2.18.5-1 lines 1189 and 1207-1213;
  ``nccl_tuner.launched_channels``), and each of those channels sends ``nLoops = DIVUP(nBytes,
  nChannels * chunkSize)`` chunks on its own connection (``proxyOp->nsteps``, lines 1376-1377:
  a tree's loop is one step of one chunk, ``getLoopInfo`` line 1259). So a 16 MiB
  AllReduce over 2 x 8 GPUs on 4 launched channels moves 128 KiB messages, 32 per channel each
  way, and from 8 MiB down the count per channel halves with the size at 64 and then 32 KiB; over
  2 x 4 A100 (depth 4, 4 launched channels: Polaris, NCCL 2.18) 1-4 MiB move 64 KiB chunks, 4, 8
  and 16 per channel, where halving over the 2 graph channels gave 8, 16 and 16 (128 KiB at 4 MiB):
  the measured times rise by 110 us from 1 to 2 MiB and by 244 us from 2 to 4 MiB
  (data/nccl/a100x8_allreduce_2node_polaris_slingshot.csv; the bytes alone ~100 and ~200 us). NCCL 2.20
  moved the chunk rules into ``computeCollChunkInfo`` (v2.21.5-1 ``src/enqueue.cc`` line 1722)
  and kept the halving for CollNet, NVLS, NVLSTree and Tree/LL128 only: from 2.20 a Tree/Simple
  chunk is a whole step, ``NCCL_BUFFSIZE / 8`` (512 KiB by default, 1 MiB with the 8 MiB buffer
  GPUDirect-TCPXO requires), whatever the size (:func:`tree_chunk_halving`); a channel's share
  smaller than that is one chunk (``enqueue.cc`` ``countPerChannel = DIVUP(count, nChannels)``).
* Ring/Simple: each of the ``2(n-1)`` steps of an AllReduce (``n-1`` of an AllGather or a
  ReduceScatter) sends one chunk per loop of ``channels x n x chunk`` bytes, in slices; below a
  full chunk the slice shrinks with the data but is still one message per slice.

* All-to-All and SendRecv (``ncclSend``/``ncclRecv`` grouped): each send to a peer on another
  node is split into parts over the peer's channels, and each part moves in network messages of
  ``NCCL_P2P_NET_CHUNKSIZE`` (128 KiB, ``src/init.cc``) bytes, or a half or a quarter of that for a
  small part (:func:`p2p_peer_messages`, per NCCL release). The peers' rounds run at once on the p2p
  channels, so what keeps them in order is the one proxy thread of the rank that posts and
  progresses every one of them (``src/proxy.cc``): :func:`p2p_messages` counts the messages the
  rank sends, as a ring's count is of its sends. Measured, an All-to-All's time steps up where
  NCCL's count does, at the release's size: NCCL 2.18 (two channels a peer, parts of at least
  16 KiB) sends a 32 KiB send as two messages, 2.21.5 (one or two, parts of at least 64 KiB) as one
  and a 64 KiB send as two 32 KiB ones. Polaris at 256 nodes (2.21.5): 11.0-12.8 ms from 4 to
  32 MiB (1 message per remote peer), 22.7 ms at 64 MiB; at 540 nodes (2.18) 28.7 ms at 32 MiB
  (15.5 KiB a peer), 60.2 ms at 64 MiB; at 8 nodes (2.18) 354 us at 512 KiB (16 KiB a peer), 669 us
  at 1 MiB; on 2 nodes 76 us at 128 KiB, 124 us at 256 KiB (2.18) but 87 us under 2.21.5 on Sirius,
  whose step comes at 512 KiB (136 us) (data/nccl/a100x*_alltoall_*_{polaris,sirius*}_slingshot.csv;
  tests/unit/test_net_messages.py). The model counted 128 KiB messages, one per peer up to 128 KiB.
  Of those messages, the ones of 1 to 192 bytes the libfabric CXI provider injects, copying the
  payload out of GPU memory first (:func:`p2p_messages` with ``at_most``; ``TransportStack.inject_max_bytes``,
  costs/transports.py): each costs ``net_inject_copy_us`` beyond its message.

* LL and LL128 (:func:`ll_messages_per_channel`): the proxy sends one network message per step
  slot the kernel fills (``src/transport/net.cc``: LL's and LL128's buffers are sent slot by slot
  like Simple's), a slot holding 32 KiB of LL data (``DEFAULT_LL_BUFFSIZE / NCCL_STEPS``: 64 KiB of
  16-byte lines) or 576,000 bytes of LL128 data: a ring's ``steps x loops``, a tree's chunks.
  :func:`coll_message_bytes` is the size of one such message on the wire, which decides whether
  libfabric's CXI provider sends it eagerly (:mod:`simulator.costs.transports`). A ring's count is
  per channel; the channels a call launches (``nccl_tuner.launched_channels``) each send theirs.

On most transports a message costs nothing beyond its bytes and the hop latency NCCL already
counts. Where the transport's message protocol runs in host software (``TransportStack.
host_messages``: aws-ofi-nccl's SENDRECV protocol over the libfabric EFA RDM endpoint, and
GPUDirect-TCPXO; :mod:`simulator.costs.transports`), each message occupies the connection for a
fixed time, so the call pays that time once per message a channel sends, in order: the
``net_message_us`` deployed constant (:mod:`simulator.costs.deployed`) times :func:`messages_per_channel`.

* The flush of a Simple receive (:func:`gdr_flush`, :data:`FLUSHED_MESSAGE_WEIGHT`): a message costs
  its send and its receive, two operations of the proxies; where NCCL flushes the receive, the
  receiving proxy posts a third, so the message counts 3/2. With GPUDirect RDMA the receive buffers
  are in GPU memory (``src/transport/net.cc`` 2.18.3 ``recvProxyConnect``: every protocol's buffer
  ``NCCL_NET_MAP_ADD_POINTER(map, 0, resources->useGdr, ...)``), and after a Simple receive completes
  the proxy calls the plugin's ``iflush`` and tells the GPU only when that completes
  (``recvProxyProgress``: ``if (totalSize > 0 && p == NCCL_PROTO_SIMPLE && needFlush)``); LL's and
  LL128's receives are not flushed (their flag words tell the GPU the data has landed). Network p2p
  runs Simple (LL buffers only with ``NCCL_ALLOC_P2P_NET_LL_BUFFERS``, default 0: ``src/init.cc``), so
  an All-to-All's or SendRecv's messages are flushed too. ``needFlush`` holds on GPUs before Hopper,
  and on Hopper and later only up to 2.18, where ``NCCL_NET_FORCE_FLUSH`` defaults to 1
  (``src/graph/paths.cc`` ``ncclTopoNeedFlush``: ``cudaCompCap < 90 ? 1 : ncclParamNetForceFlush()``;
  default 0 from 2.19.1). aws-ofi-nccl's flush is one more libfabric operation with its own
  completion, an ``fi_read`` of the received buffer through the NIC ("Flush is an expensive
  operation": ``src/nccl_ofi_sendrecv.c`` ``flush()`` in v1.9.1-aws, ``src/nccl_ofi_net.c`` in
  v1.6.0), unless ``OFI_NCCL_CUDA_FLUSH_ENABLE`` selects CUDA's flush (off by default).
  Measured on Polaris (A100, alt_read; tests/unit/test_net_messages.py): with the per-message cost a
  Ring/LL step shows at 256 nodes (7.8-8.0 us per launched channel, unflushed), the 2-node
  All-to-All's 128 MiB-1 GiB rows (128 KiB flushed chunks; NCCL 2.18 on Polaris, 2.21.5 on Sirius)
  come 3-6% short of their measured times with the flush counted, 18-22% without it.
"""

from __future__ import annotations

import math

from simulator.config.nccl_overrides import version_key

NCCL_STEPS = 8
RING_CHUNK_STEPS = 4  # ALLREDUCE_CHUNKSTEPS = ALLGATHER_CHUNKSTEPS = REDUCESCATTER_CHUNKSTEPS = NCCL_STEPS/2
RING_SLICE_STEPS = 2  # the *_SLICESTEPS = NCCL_STEPS/4
DEFAULT_BUFF_BYTES = 1 << 22  # NCCL's DEFAULT_BUFFSIZE for Simple (4 MiB)


# A message whose receive the proxy flushes costs its send, its receive and the flush: three operations
# where an unflushed one has two (module docstring).
FLUSHED_MESSAGE_WEIGHT = 1.5
# NCCL_NET_FORCE_FLUSH's default became 0 (no flush on Hopper and later) in this release (paths.cc).
FORCE_FLUSH_DEFAULT_OFF = (2, 19, 0)
_FLUSHED_BEFORE_HOPPER = ("volta", "ampere")


def gdr_flush(arch: str, release: tuple[int, int, int], gpu_direct: bool) -> bool:
    """Whether NCCL flushes every Simple receive from the network (module docstring): with
    GPUDirect RDMA, on a GPU before Hopper, or on a later one under a release before 2.19
    (``release``: the release whose tables time the call, as :func:`version_key` gives it)."""
    if not gpu_direct:
        return False
    if arch in _FLUSHED_BEFORE_HOPPER:
        return True
    return arch in ("hopper", "blackwell") and release < FORCE_FLUSH_DEFAULT_OFF


def tree_depth(ppn: int, n_nodes: int) -> int:
    """NCCL's approximate tree depth: the chain inside a node plus a binary tree over nodes."""
    return ppn - 1 + (int(math.log2(n_nodes)) if n_nodes > 1 else 0)


# The first release whose Tree/Simple chunk is a whole step at every size (module docstring).
TREE_CHUNK_WHOLE_STEP_FROM = (2, 20, 0)


def tree_chunk_halving(version: str | None) -> bool:
    """Whether NCCL release ``version`` halves a small call's Tree/Simple chunk (before 2.20;
    module docstring). None is the newest release, which does not."""
    return version is not None and version_key(version) < TREE_CHUNK_WHOLE_STEP_FROM


def tree_simple_chunk_bytes(nbytes: int, n_channels: int, depth: int, buff_bytes: int = DEFAULT_BUFF_BYTES,
                            version: str | None = None) -> int:
    """The Tree/Simple chunk of ``enqueue.cc`` in NCCL release ``version`` (None: the newest;
    module docstring) for a call of ``nbytes`` on ``n_channels`` launched channels: NCCL's
    integer quotient ``nBytes / (nChannels * chunkSize)`` against ``depth`` x 8, 4 and 1."""
    chunk = buff_bytes // NCCL_STEPS
    if not tree_chunk_halving(version):
        return chunk
    ch = max(1, n_channels)
    nbytes = int(nbytes)
    while nbytes // (ch * chunk) < depth * 8 and chunk > 131072:
        chunk //= 2
    while nbytes // (ch * chunk) < depth * 4 and chunk > 65536:
        chunk //= 2
    while nbytes // (ch * chunk) < depth and chunk > 32768:
        chunk //= 2
    return chunk


def ring_steps(op: str, n: int) -> int:
    """Steps of one ring loop over ``n`` ranks: 2(n-1) for an AllReduce, n-1 otherwise."""
    return {"allreduce": 2 * (n - 1), "allgather": n - 1, "reducescatter": n - 1}.get(op, n - 1)


def ring_loops(nbytes: float, n_channels: int, n_ranks: int, chunk_bytes: float) -> int:
    """Loops a ring channel runs over a call of ``nbytes``: each moves ``n_ranks`` chunks of at
    most ``chunk_bytes`` per channel."""
    return max(1, math.ceil(nbytes / (max(1, n_channels) * max(1, n_ranks) * chunk_bytes)))


def messages_per_channel(op: str, algorithm: str, nbytes: int, n_channels: int, n_ranks: int, ppn: int,
                         n_nodes: int, buff_bytes: int = DEFAULT_BUFF_BYTES, version: str | None = None) -> int:
    """Network messages one channel sends, one after another, in one Simple call of ``nbytes``
    (nccl-tests size convention). For a tree, ``n_channels`` are the channels the call launches
    (``nccl_tuner.launched_channels``), each with its own connection, over which NCCL sizes the
    chunk (module docstring). A tree channel's reduce and broadcast run each way at once, so
    one direction's count is the one that adds up; a ring's count is that of the rank that
    sends across the node boundary. 0 for anything else (no Simple ring or tree across nodes)."""
    if nbytes <= 0 or n_nodes < 2:
        return 0
    ch = max(1, n_channels)
    if algorithm == "tree":
        chunk = tree_simple_chunk_bytes(nbytes, ch, tree_depth(ppn, n_nodes), buff_bytes, version)
        return math.ceil(nbytes / (ch * chunk))
    if algorithm == "ring":
        step = buff_bytes // NCCL_STEPS
        chunk = step * RING_CHUNK_STEPS
        loops = ring_loops(nbytes, ch, n_ranks, chunk)
        per_step = min(chunk, math.ceil(nbytes / (ch * n_ranks * loops)))
        slices = max(1, math.ceil(per_step / (step * RING_SLICE_STEPS)))
        return ring_steps(op, n_ranks) * loops * slices
    return 0


# Payload bytes one step slot holds per channel (src/device/prims_ll.h, prims_ll128.h, enqueue.cc):
# LL: DEFAULT_LL_BUFFSIZE / NCCL_STEPS = 64 KiB of 16-byte lines, 8 data bytes each; LL128:
# DEFAULT_LL128_BUFFSIZE / NCCL_STEPS = 614,400 bytes, 120 of each 128 data; Simple: a ring's slice
# of ALLREDUCE_SLICESTEPS steps (1 MiB with the 4 MiB buffer).
LL_STEP_DATA_BYTES = 32768
LL128_STEP_DATA_BYTES = 576000
WIRE_FACTOR = {"ll": 2.0, "ll128": 128.0 / 120.0, "simple": 1.0}


def coll_message_bytes(algorithm: str, protocol: str, nbytes: int, n_channels: int, n_ranks: int,
                       buff_bytes: int = DEFAULT_BUFF_BYTES) -> float:
    """Bytes on the wire of one network message of a ring or tree call: a channel's share of one
    step (a ring moves ``n_ranks`` chunks per channel and loop, a tree one), at most the protocol's
    step slot, times the protocol's wire factor (LL's flag words; LL128's 8 of 128 bytes)."""
    step = {"ll": LL_STEP_DATA_BYTES, "ll128": LL128_STEP_DATA_BYTES}.get(
        protocol, buff_bytes // NCCL_STEPS * RING_SLICE_STEPS)
    chunks = max(1, n_channels) * (n_ranks if algorithm == "ring" else 1)
    return min(step, nbytes / chunks) * WIRE_FACTOR[protocol]


def ll_messages_per_channel(op: str, algorithm: str, protocol: str, nbytes: int, n_channels: int, n_ranks: int) -> int:
    """Network messages one channel of an LL or LL128 ring or tree sends in order: one per step slot
    (:func:`coll_message_bytes`), a ring's ``steps x loops``, a tree's chunks."""
    if nbytes <= 0:
        return 0
    step = LL_STEP_DATA_BYTES if protocol == "ll" else LL128_STEP_DATA_BYTES
    ch = max(1, n_channels)
    if algorithm == "tree":
        return math.ceil(nbytes / (ch * step))
    if algorithm == "ring":
        return ring_steps(op, n_ranks) * math.ceil(nbytes / (ch * n_ranks * step))
    return 0


# Releases that changed how a send or receive across nodes is split (p2p_peer_messages).
P2P_HALVED_MIN_FROM = (2, 20, 0)  # minSize stepSize/2 across nodes (stepSize/8 before)
P2P_CHUNK_BY_SEND_FROM = (2, 22, 0)  # the network chunk follows the whole send, not each part


def p2p_network_chunk(nbytes: int, step: int) -> int:
    """The network chunk of a Simple send or receive of ``nbytes`` to a peer on another node:
    ``ncclProxyComputeP2p``'s "Tune chunk size for the network" (``src/proxy.cc`` v2.18.5-1 lines
    611-616, v2.21.5-1 lines 621-631; in ``src/enqueue.cc`` from v2.22.3-1): a quarter of
    ``NCCL_P2P_NET_CHUNKSIZE`` (``step``) below one step, half below eight steps, else a whole one."""
    if nbytes < step:
        return max(1, step // 4)
    if nbytes < 8 * step:
        return max(1, step // 2)
    return step


def p2p_parts(nbytes: int, n_min: int, n_max: int, step: int, version: str | None = None) -> list[int]:
    """The parts NCCL release ``version`` (None: the newest) splits one send (or receive) of ``nbytes``
    to a peer on another node into, each a proxy operation on one of the peer's channels. ``n_min`` /
    ``n_max``: ``scheduleP2pTasksToPlan``'s ``nChannelsMin`` / ``nChannelsMax``
    (``nccl_graph.p2p_split_channels``).

    Up to 2.21 (``calcP2pChunkSize``, ``src/enqueue.cc`` v2.18.5-1 lines 601-609 and 667-670) a part
    is ``max(minSize, nbytes / n_min)``, the channels doubled while it exceeds ``step``, aligned up to
    ``minSize`` (``step / 8``; from 2.20 ``step / 2`` across nodes, v2.21.5-1 line 933), and the send is
    cut into parts of that size, the last one shorter. From 2.22 (v2.22.3-1 lines 879-885) the part
    count is ``min(n_min, nbytes / minPartSize)``, doubled while a part exceeds ``step``, and the send
    is shared evenly among them."""
    if nbytes <= 0:
        return []
    rel = (99, 0, 0) if version is None else version_key(version)
    min_part = step // 2 if rel >= P2P_HALVED_MIN_FROM else step // 8
    lo, hi = max(1, n_min), max(1, n_max)
    if rel < P2P_CHUNK_BY_SEND_FROM:
        n, size = lo, max(min_part, math.ceil(nbytes / lo))
        while size > step and n <= hi // 2:
            n *= 2
            size = math.ceil(nbytes / n)
        size = math.ceil(size / min_part) * min_part
        full, rest = divmod(nbytes, size)
        return [size] * full + ([rest] if rest else [])
    n = min(lo, math.ceil(nbytes / min_part))
    size = max(min_part, math.ceil(nbytes / n))
    while size > step and n <= hi // 2:
        n *= 2
        size = math.ceil(nbytes / n)
    base, extra = divmod(nbytes, n)
    return [base + (1 if i < extra else 0) for i in range(n) if base or i < extra]


def p2p_peer_messages(nbytes: float, n_min: int, n_max: int, step: int, version: str | None = None,
                      at_most: int | None = None) -> int:
    """Network messages (proxy steps) of one send, or one receive, of ``nbytes`` to a peer on another
    node in NCCL release ``version``: each part (:func:`p2p_parts`) moves in network chunks
    (:func:`p2p_network_chunk`; ``op->nsteps = DIVUP(count, chunkSize)``, ``src/proxy.cc``), sized by
    the part up to 2.21 and by the whole send from 2.22, the last chunk of a part shorter. One message
    for an empty send (a sync).

    With ``at_most``, only the messages of 1 to ``at_most`` bytes: those the libfabric CXI provider
    injects, copying the payload out of the send buffer first (``TransportStack.inject_max_bytes``,
    costs/transports.py); an empty send takes the provider's eager DMA path and counts none."""
    size = int(math.ceil(nbytes))
    if size <= 0:
        return 1 if at_most is None else 0
    by_send = version is None or version_key(version) >= P2P_CHUNK_BY_SEND_FROM
    count = 0
    for b in p2p_parts(size, n_min, n_max, step, version):
        chunk = p2p_network_chunk(size if by_send else b, step)
        full, rest = divmod(b, chunk)
        if at_most is None or chunk <= at_most:
            count += full
        if rest and (at_most is None or rest <= at_most):
            count += 1
    return count


def p2p_messages(per_peer_bytes: float, remote_peers: int, n_min: int, n_max: int, step: int,
                 version: str | None = None, at_most: int | None = None) -> int:
    """Network messages one rank's proxy sends, in order, in a grouped send/receive: to each of
    ``remote_peers`` peers on other nodes, ``per_peer_bytes`` in the messages NCCL release ``version``
    splits them into (:func:`p2p_peer_messages`; module docstring), with ``at_most`` only those of 1 to
    ``at_most`` bytes. 0 without remote peers or bytes."""
    if per_peer_bytes <= 0 or remote_peers <= 0:
        return 0
    return remote_peers * p2p_peer_messages(per_peer_bytes, n_min, n_max, step, version, at_most)

"""One parameterised KV ring: the send/recv skeleton shared by Ring Attention
(``ring_attention.py``, ring-flash-attn) and Megatron/TE context parallelism
(``context_parallel.py``, ``AttnFuncWithCPAndKVP2P``). The two differ only in which attention
block each step computes (the caller passes them) and in how dK/dV travel back in backward
(``bundle_dkv``); the ring itself is the same.

Forward (ring-flash-attn ``ring_flash_attn_forward``; TE ``AttnFuncWithCPAndKVP2P.forward``),
``n`` steps on a ring of ``n`` ranks:
    step i: post send(KV_i → next) / recv(KV_{i+1} ← prev) if i < n−1; attention block i on KV_i.
Dependencies: block i needs KV_i (the receive of step i−1); the send of step i forwards KV_i, so
it waits for that receive too, and for block i−1: PyTorch's ProcessGroupNCCL makes the NCCL stream
wait for the issuing (compute) stream, and block i−1 was enqueued before step i's send. The
result: each step takes max(attention block, sendrecv). A final elementwise op (the out/LSE
correction into the output dtype) closes the pass once the last block and the last transfer
are done.

Backward, two flavours:
* ``bundle_dkv=False`` (ring-flash-attn ``ring_flash_attn_backward``): a KV ring (n−1 prefetch
  sends) plus a separate dKV ring that sends the accumulated dK/dV on *every* step (n sends, in
  ``dkv_bytes``, fp32 in ring-flash-attn); step i's dKV send waits for block i and the dKV
  received at step i−1.
* ``bundle_dkv=True`` (TE): one buffer per step: KV only at step 0, [KV; dKV] at steps 1..n−2,
  dKV only at step n−1 (MECHANICS.md §5.2), dKV in the activation dtype. Only byte counts and
  step dependencies are modelled, not which partial sum sits in which buffer.

Memory-bound work around each step's kernel, when the caller's blocks carry it
(``RingBlock.copy_fwd_bytes`` / ``copy_bwd_bytes`` / ``dq_accum_bytes`` / ``dkv_accum_bytes``;
TE's p2p does, see ``context_parallel.p2p_blocks``): a copy before the step's forward or
backward kernel, on the same stream; after the backward kernel the step's dQ partial is added into the running dQ, and its dK/dV partial into the
buffer the step's transfer received from the neighbour once that transfer is done; the next
step's send carries that sum, so it waits for the addition. With accumulation per step there is
no separate final pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from simulator.schedule.attention import FLASH_BWD_FACTOR
from simulator.schedule.ir import ComputeOp, P2POp, Phase, ProgramBuilder, Tag, Transfer


@dataclass(frozen=True)
class RingBlock:
    """Forward attention work of one ring step on this rank (backward scales it)."""

    flops: float
    causal_fraction: float
    hbm_bytes: float
    shape: tuple[int, int, int, bool] | None = None  # the kernel's ComputeOp.attention_shape
    copy_fwd_bytes: float = 0.0  # a copy before its forward kernel (memory-bound, same stream)
    copy_bwd_bytes: float = 0.0  # the same before its backward kernel
    dq_accum_bytes: float = 0.0  # adding the step's dQ into the running dQ after its backward kernel
    dkv_accum_bytes: float = 0.0  # adding its dK/dV into the received partial sum (after the transfer)


@dataclass(frozen=True)
class RingSpec:
    """Where the ring runs and how big its messages are.

    ``hop`` is the peer offset along ``axis`` of one ring hop (1 for a flat ring; the a2a degree in
    TE's hierarchical a2a+p2p, whose ring links every c1-th cp rank). ``direction`` +1 sends to
    the next rank and receives from the previous one; −1 the reverse (TE's backward ring).
    """

    axis: str
    hop: int
    size: int  # ranks on the ring (= steps)
    kv_bytes: int  # M_kv: this rank's K and V
    name: str  # op-name prefix, e.g. "L3.attn.ring"
    key: str  # message-key prefix unique per layer (ir.layer_key: the micro-batch is the tag's)
    layer: int
    mb_index: int  # which micro-batch of the step this op belongs to, 0 .. n_micro - 1
    dtype: str = "bf16"
    kernel: str = ""  # fused attention kernel of the blocks (flash2 | flash3; "": the GPU's default)
    deterministic_heads: int = 0  # the backward blocks' ComputeOp.deterministic_heads
    dropout: bool = False  # the blocks' ComputeOp.attention_dropout (in-kernel attention dropout)


def _p2p(pb: ProgramBuilder, spec: RingSpec, name: str, key: str, nbytes: int, direction: int,
         deps: tuple[int, ...], phase: Phase) -> int:
    off = direction * spec.hop
    return pb.add(P2POp(
        name=name, sends=(Transfer(spec.axis, off, nbytes, key),),
        recvs=(Transfer(spec.axis, -off, nbytes, key),), deps=deps, stream=spec.axis,
        tag=Tag(phase, spec.layer, spec.mb_index)))


def _block(pb: ProgramBuilder, spec: RingSpec, name: str, blk: RingBlock, bwd: bool, deps: tuple[int, ...]) -> int:
    scale = FLASH_BWD_FACTOR if bwd else 1.0
    return pb.add(ComputeOp(
        name=name, kind="attention", flops=blk.flops * scale, hbm_bytes=blk.hbm_bytes * (2 if bwd else 1),
        deps=deps, dtype=spec.dtype, causal_fraction=blk.causal_fraction,
        tag=Tag("bwd" if bwd else "fwd", spec.layer, spec.mb_index), attention_kernel=spec.kernel,
        attention_shape=blk.shape, deterministic_heads=spec.deterministic_heads if bwd else 0,
        attention_dropout=spec.dropout))


def _close(pb: ProgramBuilder, spec: RingSpec, name: str, hbm_bytes: float, phase: Phase, deps: tuple[int, ...],
           count: int = 1) -> int:
    return pb.add(ComputeOp(name=name, kind="elementwise", hbm_bytes=hbm_bytes, deps=tuple(sorted(set(deps))),
                            dtype=spec.dtype, tag=Tag(phase, spec.layer, spec.mb_index), count=count))


def _copy(pb: ProgramBuilder, spec: RingSpec, name: str, nbytes: float, phase: Phase, deps: tuple[int, ...]) -> int:
    """A memory-bound copy on the attention stream before a step's kernel."""
    return pb.add(ComputeOp(name=name, kind="copy", hbm_bytes=nbytes, deps=tuple(sorted(set(deps))), dtype=spec.dtype,
                            tag=Tag(phase, spec.layer, spec.mb_index)))


def ring_forward(pb: ProgramBuilder, spec: RingSpec, blocks: Sequence[RingBlock | None],
                 out_bytes: float, after: int, direction: int = +1, out_kernels: int = 1) -> int:
    """KV ring forward; ``blocks[i]`` is step i's attention (None: this rank skips it but still
    forwards KV). ``out_bytes`` is the out/LSE correction after the last step, in
    ``out_kernels`` kernels. Returns the op after which the attention output is ready."""
    assert len(blocks) == spec.size
    arrived, last_compute, xfer = after, after, after
    for i, blk in enumerate(blocks):
        if i < spec.size - 1:
            xfer = _p2p(pb, spec, f"{spec.name}.fwd.kv.step{i}", f"{spec.key}.fwd.kv.step{i}",
                        spec.kv_bytes, direction, tuple(sorted({arrived, last_compute})), "fwd")
        if blk is not None:
            ready = arrived
            if blk.copy_fwd_bytes:
                ready = _copy(pb, spec, f"{spec.name}.fwd.copy.step{i}", blk.copy_fwd_bytes, "fwd", (arrived,))
            last_compute = _block(pb, spec, f"{spec.name}.fwd.step{i}", blk, False, (ready,))
        arrived = xfer
    return _close(pb, spec, f"{spec.name}.fwd.correct", out_bytes, "fwd", (last_compute, xfer), out_kernels)


def ring_backward(pb: ProgramBuilder, spec: RingSpec, blocks: Sequence[RingBlock | None], dkv_bytes: int,
                  bundle_dkv: bool, after: int, direction: int = +1) -> int:
    """KV/dKV ring backward. Returns the op after which dQ and this rank's dK, dV are ready."""
    assert len(blocks) == spec.size
    n = spec.size
    kv_arrived, last_compute, kv_xfer, dkv_xfer = after, after, after, after
    for i, blk in enumerate(blocks):
        if bundle_dkv:
            nbytes = (spec.kv_bytes if i < n - 1 else 0) + (dkv_bytes if i >= 1 else 0)
            kind = "kv" if i == 0 else ("dkv" if i == n - 1 else "kv+dkv")
            if n > 1:
                kv_xfer = _p2p(pb, spec, f"{spec.name}.bwd.{kind}.step{i}", f"{spec.key}.bwd.{kind}.step{i}",
                               nbytes, direction, tuple(sorted({kv_arrived, last_compute})), "bwd")
            if blk is not None:
                ready = kv_arrived
                if blk.copy_bwd_bytes:
                    ready = _copy(pb, spec, f"{spec.name}.bwd.copy.step{i}", blk.copy_bwd_bytes, "bwd", (kv_arrived,))
                last_compute = _block(pb, spec, f"{spec.name}.bwd.step{i}", blk, True, (ready,))
                if blk.dq_accum_bytes:
                    last_compute = _close(pb, spec, f"{spec.name}.bwd.dq_accum.step{i}", blk.dq_accum_bytes, "bwd",
                                          (last_compute,))
                if blk.dkv_accum_bytes:
                    last_compute = _close(pb, spec, f"{spec.name}.bwd.dkv_accum.step{i}", blk.dkv_accum_bytes, "bwd",
                                          (last_compute, kv_xfer))
            kv_arrived = kv_xfer
            dkv_xfer = kv_xfer
        else:
            if i < n - 1:
                kv_xfer = _p2p(pb, spec, f"{spec.name}.bwd.kv.step{i}", f"{spec.key}.bwd.kv.step{i}",
                               spec.kv_bytes, direction, tuple(sorted({kv_arrived, last_compute})), "bwd")
            if blk is not None:
                last_compute = _block(pb, spec, f"{spec.name}.bwd.step{i}", blk, True, (kv_arrived,))
            kv_arrived = kv_xfer
            if n > 1:
                dkv_xfer = _p2p(pb, spec, f"{spec.name}.bwd.dkv.step{i}", f"{spec.key}.bwd.dkv.step{i}",
                                dkv_bytes, direction, tuple(sorted({dkv_xfer, last_compute})), "bwd")
    if any(b is not None and b.dkv_accum_bytes for b in blocks):
        return last_compute  # the last step's accumulation waited for the last transfer
    # Final dK/dV: add the last received partial to the local one and cast to the param dtype.
    return _close(pb, spec, f"{spec.name}.bwd.dkv_final", 2 * dkv_bytes, "bwd", (last_compute, dkv_xfer))

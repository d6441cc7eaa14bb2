"""Megatron / TE context parallelism against MECHANICS.md §5 (simulator/schedule/context_parallel.py)."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

from simulator.errors import InputError
from simulator.schedule import context_parallel
from simulator.schedule.attention import AttentionContext, attention_flops, causal_fraction_diagonal
from simulator.schedule.ir import CommOp, ComputeOp, P2POp, transfer_key
from tests.unit.attention_helpers import attn_flops, run_pattern, sent

B, S, D, A, G = 1, 16384, 128, 16, 4


def ctx(c=4, rank=0, comm="p2p", causal=True, heads=A, kv=G, qkv_format="sbhd") -> AttentionContext:
    return AttentionContext(micro_batch_size=B, seq=S, seq_local=S // c, heads=heads, kv_heads=kv, head_dim=D,
                            dtype_bytes=2, causal=causal, cp=c, cp_rank=rank, ulysses=1, cp_comm=comm, layer=7,
                            mb_index=2, cp_qkv_format=qkv_format)


def run(c: AttentionContext) -> tuple[list, list]:
    return run_pattern(context_parallel, c)


def full_causal() -> float:
    return attention_flops(B, A, S, S, D, causal_fraction_diagonal(S))


def check_sends_match(c: int, comm: str, **kw) -> Counter:
    sends, recvs = Counter(), Counter()
    for r in range(c):
        for op in sum(run(ctx(c, r, comm, **kw)), []):
            if isinstance(op, P2POp):
                for x in op.sends:
                    sends[(r, (r + x.offset) % c, transfer_key(op, x), x.nbytes)] += 1
                for x in op.recvs:
                    recvs[((r + x.offset) % c, r, transfer_key(op, x), x.nbytes)] += 1
    assert sends == recvs and sends
    assert max(sends.values()) == 1
    return sends


# --------------------------------------------------------------------------------------------- p2p


@pytest.mark.parametrize("c", [2, 4, 8])
def test_p2p_volumes_3_kv_blocks_per_step(c):
    m_kv = 2 * B * (S // c) * G * D * 2
    fwd, bwd = run(ctx(c, rank=c // 2))
    assert sent(fwd) == (c - 1) * m_kv
    assert sent(bwd) == 2 * (c - 1) * m_kv  # KV + bf16 dKV, bundled
    assert sent(fwd + bwd) == 3 * (c - 1) * m_kv


def test_p2p_backward_bundles_dkv_with_kv():
    c = 4
    m_kv = 2 * B * (S // c) * G * D * 2
    _, bwd = run(ctx(c))
    steps = [op for op in bwd if isinstance(op, P2POp)]
    assert [op.sends[0].nbytes for op in steps] == [m_kv, 2 * m_kv, 2 * m_kv, m_kv]
    assert all(op.sends[0].offset == -1 and op.recvs[0].offset == +1 for op in steps)


@pytest.mark.parametrize("c", [2, 4])
def test_p2p_sends_match_receives(c):
    check_sends_match(c, "p2p")


@pytest.mark.parametrize("comm", ["p2p", "all_gather", "a2a", "a2a+p2p"])
@pytest.mark.parametrize("causal", [True, False])
def test_load_balanced_and_flops_conserved(comm, causal):
    c = 4
    per_rank = [attn_flops(run(ctx(c, r, comm, causal=causal))[0]) for r in range(c)]
    assert per_rank == pytest.approx([per_rank[0]] * c)  # every rank does the same work
    whole = full_causal() if causal else attention_flops(B, A, S, S, D)
    assert sum(per_rank) == pytest.approx(whole)


def test_p2p_sections_are_half_blocks_after_the_diagonal():
    c = 4
    fwd, _ = run(ctx(c, rank=1))
    blocks = [op for op in fwd if isinstance(op, ComputeOp) and op.kind == "attention"]
    u = attention_flops(B, A, S // (2 * c), S // (2 * c), D)
    assert len(blocks) == c
    assert blocks[0].flops == pytest.approx((2 * causal_fraction_diagonal(S // (2 * c)) + 1) * u)
    assert [b.flops for b in blocks[1:]] == pytest.approx([2 * u] * (c - 1))


def test_p2p_kernel_shapes():
    """TE's p2p steps as kernels (the shape sets their efficiency, costs/attention_shape.py): the
    diagonal step is one causal kernel over both local chunks, every other step one unmasked
    kernel of the local queries against one incoming KV chunk."""
    c, n = 4, S // 4
    fwd, bwd = run(ctx(c, rank=2))
    for ops in (fwd, bwd):
        shapes = [op.attention_shape for op in ops if isinstance(op, ComputeOp) and op.kind == "attention"]
        assert shapes == [(n, n, D, True)] + [(n, n // 2, D, False)] * (c - 1)


def _memory_passes(ops: list, name: str) -> list:
    return [op for op in ops if isinstance(op, ComputeOp) and op.kind in ("copy", "elementwise") and name in op.name]


@pytest.mark.parametrize("c", [2, 4, 8])
def test_p2p_forward_merges_the_output_once_per_step(c):
    """TE's forward (v2.2 ``AttnFuncWithCPAndKVP2P``, v1.4 ``AttnFuncWithCP``): K and V are
    concatenated into the first send buffer (read and written: 2·b·(s/c)·g·d·B each way) before
    the ring, and after it the running output takes one correction per step: 2 passes over the
    local b·(s/c)·a·d bf16 output for the first step (scale, write), 3 for each other (read the
    step's and the running output, write)."""
    q = B * (S // c) * A * D * 2
    m = 2 * B * (S // c) * G * D * 2  # local K + V
    fwd, _ = run(ctx(c, rank=c - 1))
    (cat,) = _memory_passes(fwd, ".fwd.kv_cat")
    assert cat.hbm_bytes == 2 * m
    first_kernel = next(op for op in fwd if isinstance(op, ComputeOp) and op.kind == "attention")
    assert fwd.index(first_kernel) > fwd.index(cat)
    (corr,) = _memory_passes(fwd, ".fwd.correct")
    assert corr.hbm_bytes == (2 + 3 * (c - 1)) * q
    assert corr.count == c


@pytest.mark.parametrize("c", [2, 4])
def test_p2p_backward_accumulates_dq_and_dkv_every_step(c):
    """TE's backward: the local KV copied into the first send buffer (read + write of K and V),
    then per step dQ added into the running dQ (3 passes over the local q) and dK/dV added into
    the partial received from the neighbour (3 passes), over all of the local KV on the diagonal
    and its first half on rank c−1's other steps."""
    q = B * (S // c) * A * D * 2
    m = 2 * B * (S // c) * G * D * 2  # local K + V
    _, bwd = run(ctx(c, rank=c - 1))
    assert [op.hbm_bytes for op in _memory_passes(bwd, ".bwd.copy.")] == [2 * m]
    assert [op.hbm_bytes for op in _memory_passes(bwd, ".bwd.dq_accum.")] == [3 * q] * c
    assert [op.hbm_bytes for op in _memory_passes(bwd, ".bwd.dkv_accum.")] == [3 * m] + [1.5 * m] * (c - 1)
    assert not _memory_passes(bwd, "dkv_final")  # accumulated per step, no closing pass


@pytest.mark.parametrize("c", [2, 4])
@pytest.mark.parametrize("b", [1, 2])
def test_p2p_in_bshd_transposes_and_copies_kv_halves(c, b):
    """TE <= 1.6 (v1.4 ``FusedAttention.forward``, ``AttnFuncWithCP``) ran CP attention in bshd:
    q, k, v transposed from Megatron's sbhd on entry (read + write of each), the output back and
    the output gradient in; the first halves of K and V of each off-diagonal step made contiguous
    before its kernel (read + write: the local K and V bytes), forward and backward; dK and dV
    concatenated (read + write) before being added into the received partial. At micro-batch 1
    ``transpose(0, 1)`` of a contiguous [s, 1, h, d] tensor is contiguous already (PyTorch skips
    size-1 dimensions), so ``contiguous()`` copies only V, a strided slice of the fused QKV
    output: read + write of half the local K + V bytes, and no pass for the output or its
    gradient."""
    q = b * (S // c) * A * D * 2
    m = 2 * b * (S // c) * G * D * 2  # local K + V
    fwd, bwd = run(replace(ctx(c, rank=c - 1, qkv_format="bshd"), micro_batch_size=b))
    if b == 1:
        assert [op.hbm_bytes for op in _memory_passes(fwd, ".fwd.to_bshd")] == [2 * (m // 2)]
        assert not _memory_passes(fwd, ".fwd.to_sbhd") + _memory_passes(bwd, ".bwd.to_bshd")
    else:
        assert [op.hbm_bytes for op in _memory_passes(fwd, ".fwd.to_bshd")] == [2 * (q + m)]
        assert [op.hbm_bytes for op in _memory_passes(fwd, ".fwd.to_sbhd")] == [2 * q]
        assert [op.hbm_bytes for op in _memory_passes(bwd, ".bwd.to_bshd")] == [2 * q]
    assert [op.hbm_bytes for op in _memory_passes(fwd, ".fwd.copy.")] == [m] * (c - 1)
    assert [op.hbm_bytes for op in _memory_passes(bwd, ".bwd.copy.")] == [2 * m] + [m] * (c - 1)
    assert [op.hbm_bytes for op in _memory_passes(bwd, ".bwd.dkv_accum.")] == [5 * m] + [2.5 * m] * (c - 1)
    # Megatron's own sbhd (TE >= 1.7): none of these
    sb_fwd, sb_bwd = run(ctx(c, rank=c - 1))
    assert not _memory_passes(sb_fwd, "sbhd") + _memory_passes(sb_fwd, ".fwd.copy.")
    assert not _memory_passes(sb_bwd, "to_bshd")


def test_p2p_backward_send_carries_the_accumulated_dkv():
    """The dK/dV addition of step i waits for step i's transfer (it brings the neighbour's
    partial), and step i+1's send (which carries the sum) waits for the addition."""
    c = 4
    pb_ops = sum(run(ctx(c, rank=c - 1)), [])
    index = {id(op): i for i, op in enumerate(pb_ops)}
    xfers = [op for op in pb_ops if isinstance(op, P2POp) and ".bwd." in op.name]
    accums = _memory_passes(pb_ops, ".bwd.dkv_accum.")
    assert len(accums) == len(xfers) == c
    for i, acc in enumerate(accums):
        assert index[id(xfers[i])] in acc.deps
        if i + 1 < len(xfers):
            assert index[id(acc)] in xfers[i + 1].deps


def test_all_gather_chunks_attend_their_causal_prefix():
    c, rank = 4, 1
    chunk = S // (2 * c)
    fwd, _ = run(ctx(c, rank, comm="all_gather"))
    shapes = [op.attention_shape for op in fwd if isinstance(op, ComputeOp) and op.kind == "attention"]
    assert shapes == [(chunk, (rank + 1) * chunk, D, True), (chunk, (2 * c - rank) * chunk, D, True)]


# --------------------------------------------------------------------------------------------- all_gather


def test_all_gather_volumes():
    c = 4
    kv_full = B * S * G * D * 2  # K (or V) of the whole sequence
    fwd, bwd = run(ctx(c, comm="all_gather"))
    assert [(op.op, op.size_bytes) for op in fwd if isinstance(op, CommOp)] == [("allgather", kv_full)] * 2
    assert sorted((op.op, op.size_bytes) for op in bwd if isinstance(op, CommOp)) == sorted(
        [("allgather", kv_full)] * 2 + [("reducescatter", kv_full)] * 2)
    assert all(op.axes == ("cp",) for op in fwd + bwd if isinstance(op, CommOp))


def test_collective_sequences_equal_across_cp_ranks():
    """Every member of a group must issue the same collectives in the same order."""
    for comm in ("all_gather", "a2a", "a2a+p2p"):
        seqs = {tuple((op.op, op.axes, op.size_bytes) for op in sum(run(ctx(4, r, comm)), []) if isinstance(op, CommOp))
                for r in range(4)}
        assert len(seqs) == 1


# --------------------------------------------------------------------------------------------- a2a


def test_a2a_is_ulysses_over_cp():
    c = 4
    fwd, bwd = run(ctx(c, comm="a2a"))
    ops = [op for op in fwd + bwd if isinstance(op, CommOp)]
    assert len(ops) == 8 and all(op.op == "alltoall" and op.axes == ("cp",) for op in ops)
    m_q, m_kv = B * (S // c) * A * D * 2, B * (S // c) * G * D * 2
    assert sum(op.size_bytes for op in ops) == 2 * (2 * m_q + 2 * m_kv)


@pytest.mark.parametrize("comm", ["a2a", "a2a+p2p"])
def test_a2a_copies_each_tensor_on_both_sides_of_its_all_to_all(comm):
    """TE's ``flash_attn_a2a_communicate``: before the All-to-All the head groups are moved to
    the front (``movedim(...).contiguous()``) or the sequence chunks reordered
    (``index_select``), after it the other of the two: each exchanged tensor is read and written
    twice more, Q, K, V and O forward, dO, dQ, dK, dV backward."""
    c = 4
    fwd, bwd = run(ctx(c, comm=comm))
    for ops in (fwd, bwd):
        a2a = [op for op in ops if isinstance(op, CommOp) and op.op == "alltoall"]
        assert len(a2a) == 4
        for x in a2a:
            pre = _memory_passes(ops, x.name + ".pre")
            post = _memory_passes(ops, x.name + ".post")
            assert [op.hbm_bytes for op in pre + post] == [2 * x.size_bytes] * 2
            assert ops.index(pre[0]) < ops.index(x) < ops.index(post[0])


def test_a2a_needs_kv_heads_divisible():
    with pytest.raises(InputError, match="kv_heads"):
        run(ctx(8, comm="a2a", kv=4))


# --------------------------------------------------------------------------------------------- a2a+p2p


def test_a2a_degree_default_and_explicit():
    assert context_parallel.a2a_degree(ctx(16, heads=32, kv=8)) == 8
    assert context_parallel.a2a_degree(ctx(8, heads=16, kv=2)) == 2
    assert context_parallel.a2a_degree(ctx(6, heads=12, kv=12)) == 2

    knob = replace(ctx(8, comm="a2a+p2p", heads=16, kv=8), cp_a2a=2)
    assert context_parallel.a2a_degree(knob) == 2
    with pytest.raises(InputError, match="cp_a2a=3 does not divide cp=8"):
        context_parallel.a2a_degree(replace(knob, cp_a2a=3))


def test_hierarchical_volumes_and_ring_hop():
    c, heads, kv = 8, 16, 4  # c1 = 4 (kv heads limit it), c2 = 2
    c1, c2 = 4, 2
    fwd, bwd = run(ctx(c, comm="a2a+p2p", heads=heads, kv=kv))
    a2a = [op for op in fwd + bwd if isinstance(op, CommOp)]
    assert len(a2a) == 8 and all(op.axes == ("cp_a2a",) for op in a2a)
    m_q, m_k = B * (S // c) * heads * D * 2, B * (S // c) * kv * D * 2
    assert sum(op.size_bytes for op in a2a) == 2 * (2 * m_q + 2 * m_k)
    # the ring over c2 ranks carries M_kv' = 2·b·(s/c2)·(g/c1)·d·B, as many bytes per step as flat p2p
    m_kv = 2 * B * (S // c2) * (kv // c1) * D * 2
    assert m_kv == 2 * B * (S // c) * kv * D * 2
    assert sent(fwd) == (c2 - 1) * m_kv and sent(bwd) == 2 * (c2 - 1) * m_kv
    assert {x.offset for op in fwd if isinstance(op, P2POp) for x in op.sends} == {c1}
    check_sends_match(c, "a2a+p2p", heads=heads, kv=kv)
    per_rank = [attn_flops(run(ctx(c, r, "a2a+p2p", heads=heads, kv=kv))[0]) for r in range(c)]
    assert per_rank == pytest.approx([per_rank[0]] * c)
    assert sum(per_rank) == pytest.approx(attention_flops(B, heads, S, S, D, causal_fraction_diagonal(S)))


def test_hierarchical_degenerates_without_empty_subgroups():
    ops = sum(run(ctx(4, comm="a2a+p2p", heads=16, kv=1)), [])  # c1 = 1: the flat p2p ring
    assert not any(isinstance(op, CommOp) for op in ops) and sent(ops) == 3 * 3 * 2 * B * (S // 4) * 1 * D * 2
    ops = sum(run(ctx(4, comm="a2a+p2p", heads=16, kv=4)), [])  # c1 = cp: plain a2a over cp
    assert not any(isinstance(op, P2POp) for op in ops)
    assert {op.axes for op in ops if isinstance(op, CommOp)} == {("cp",)}


def test_unknown_cp_comm_is_an_input_error():
    with pytest.raises(InputError, match="cp_comm"):
        run(ctx(4, comm="ring"))

"""Ring Attention (ring-flash-attn) against MECHANICS.md §4 (simulator/schedule/ring_attention.py)."""

from __future__ import annotations

from collections import Counter

import pytest

from simulator.schedule import ring_attention
from simulator.schedule.attention import AttentionContext, attention_flops, causal_fraction_diagonal
from simulator.schedule.ir import CommOp, ComputeOp, P2POp, ProgramBuilder, transfer_key
from tests.unit.attention_helpers import attn_flops, run_pattern, sent

B, S, D, A, G = 1, 8192, 128, 8, 2


def ctx(c=4, rank=0, causal=True) -> AttentionContext:
    return AttentionContext(micro_batch_size=B, seq=S, seq_local=S // c, heads=A, kv_heads=G, head_dim=D, dtype_bytes=2,
                            causal=causal, cp=c, cp_rank=rank, ulysses=1, cp_comm="ring", layer=2, mb_index=3)


def run(c: AttentionContext) -> tuple[list, list]:
    return run_pattern(ring_attention, c)


@pytest.mark.parametrize("c", [2, 4, 8])
def test_volumes_per_layer(c):
    m_kv = 2 * B * (S // c) * G * D * 2
    fwd, bwd = run(ctx(c, rank=1 % c))
    assert sent(fwd) == (c - 1) * m_kv
    # KV prefetch c−1 times, fp32 dK+dV (2·M_kv) on every one of the c steps
    assert sent(bwd) == (c - 1) * m_kv + c * 2 * m_kv
    n_msgs = sum(len(op.sends) for op in fwd + bwd if isinstance(op, P2POp))
    assert n_msgs == 3 * c - 2  # ≈ 3(c−1) KV-sized messages: c−1 fwd, c−1 KV + c dKV bwd
    assert not any(isinstance(op, CommOp) for op in fwd + bwd)


@pytest.mark.parametrize("c", [2, 4])
def test_sends_match_receives_across_the_ring(c):
    sends, recvs = Counter(), Counter()
    for r in range(c):
        fwd, bwd = run(ctx(c, rank=r))
        for op in fwd + bwd:
            if isinstance(op, P2POp):
                assert op.stream == "cp"
                for x in op.sends:
                    assert x.axis == "cp" and x.offset == +1
                    sends[(r, (r + x.offset) % c, transfer_key(op, x), x.nbytes)] += 1
                for x in op.recvs:
                    assert x.axis == "cp" and x.offset == -1
                    recvs[((r + x.offset) % c, r, transfer_key(op, x), x.nbytes)] += 1
    assert sends == recvs
    assert max(sends.values()) == 1  # keys unique per layer / micro-batch / step / direction


def test_causal_imbalance_of_contiguous_layout():
    c = 4
    w = attention_flops(B, A, S // c, S // c, D)  # one full block
    diag = w * causal_fraction_diagonal(S // c)
    for r in range(c):
        fwd, _ = run(ctx(c, rank=r))
        blocks = [op for op in fwd if isinstance(op, ComputeOp) and op.kind == "attention"]
        assert len(blocks) == r + 1  # rank r computes steps 0..r
        assert attn_flops(fwd) == pytest.approx(diag + r * w)
        assert blocks[0].causal_fraction == pytest.approx(causal_fraction_diagonal(S // c))
        assert all(b.causal_fraction == 1.0 for b in blocks[1:])
        # it still forwards every KV block
        assert sum(isinstance(op, P2POp) for op in fwd) == c - 1
    last, first = run(ctx(c, rank=c - 1))[0], run(ctx(c, rank=0))[0]
    assert attn_flops(last) > 3 * attn_flops(first)  # the last rank is the straggler


@pytest.mark.parametrize("causal", [True, False])
def test_flops_conservation_over_ranks(causal):
    c = 4
    total_fwd = total_bwd = 0.0
    for r in range(c):
        fwd, bwd = run(ctx(c, rank=r, causal=causal))
        total_fwd += attn_flops(fwd)
        total_bwd += attn_flops(bwd)
    frac = causal_fraction_diagonal(S) if causal else 1.0
    assert total_fwd == pytest.approx(attention_flops(B, A, S, S, D, frac))
    assert total_bwd == pytest.approx(2.5 * total_fwd)


def test_step_dependencies():
    """Block i needs KV of step i (the receive of step i−1); the send of step i forwards it."""
    c = 4
    pb = ProgramBuilder()
    start = pb.add(ComputeOp(name="qkv", kind="gemm"))
    ring_attention.forward(pb, ctx(c, rank=c - 1), start)
    idx = {op.name: i for i, op in enumerate(pb.ops)}
    for i in range(1, c):
        kv_prev = idx[f"L2.attn.ring.fwd.kv.step{i - 1}"]
        assert pb.ops[idx[f"L2.attn.ring.fwd.step{i}"]].deps == (kv_prev,)
        if i < c - 1:
            assert kv_prev in pb.ops[idx[f"L2.attn.ring.fwd.kv.step{i}"]].deps
    close = pb.ops[-1]
    assert idx[f"L2.attn.ring.fwd.kv.step{c - 2}"] in close.deps and idx[f"L2.attn.ring.fwd.step{c - 1}"] in close.deps


def test_single_rank_ring_is_local_attention():
    fwd, bwd = run(ctx(1))
    assert not any(isinstance(op, P2POp) for op in fwd + bwd)
    assert attn_flops(fwd) == pytest.approx(attention_flops(B, A, S, S, D, causal_fraction_diagonal(S)))


def test_kernel_shapes_causal_only_on_the_diagonal():
    """Rank r runs a causal kernel on its own block and unmasked ones on the r earlier blocks,
    each s/c queries by s/c keys (their efficiency: costs/attention_shape.py)."""
    c, r, n = 4, 2, S // 4
    fwd, _ = run(ctx(c, rank=r))
    shapes = [op.attention_shape for op in fwd if isinstance(op, ComputeOp) and op.kind == "attention"]
    assert shapes == [(n, n, D, True)] + [(n, n, D, False)] * r

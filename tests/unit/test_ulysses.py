"""DeepSpeed-Ulysses All-to-Alls against MECHANICS.md §3 (simulator/schedule/ulysses.py)."""

from __future__ import annotations

import pytest

from simulator.errors import InputError
from simulator.schedule import ulysses
from simulator.schedule.attention import AttentionContext, attention_flops, causal_fraction_diagonal
from simulator.schedule.ir import CommOp, ComputeOp
from tests.unit.attention_helpers import run_pattern

B, S, D = 2, 4096, 64


def ctx(P=4, heads=16, kv_heads=16, cp=1, cp_rank=0, cp_comm="p2p", causal=True) -> AttentionContext:
    return AttentionContext(micro_batch_size=B, seq=S, seq_local=S // P // cp, heads=heads, kv_heads=kv_heads,
                            head_dim=D, dtype_bytes=2, causal=causal, cp=cp, cp_rank=cp_rank, ulysses=P,
                            cp_comm=cp_comm, layer=5, mb_index=0)


def run(c: AttentionContext) -> tuple[list, list]:
    return run_pattern(ulysses, c)


def a2as(ops) -> list[CommOp]:
    return [op for op in ops if isinstance(op, CommOp)]


@pytest.mark.parametrize("P", [2, 4, 8])
def test_mha_volume_is_8bsh_over_P(P):
    heads = 16
    fwd, bwd = run(ctx(P=P, heads=heads, kv_heads=heads))
    assert len(a2as(fwd)) == 4 and len(a2as(bwd)) == 4
    assert all(op.op == "alltoall" and op.axes == ("ulysses",) for op in a2as(fwd + bwd))
    h = heads * D
    assert sum(op.size_bytes for op in a2as(fwd + bwd)) == 8 * B * (S // P) * h * 2


def test_gqa_sizes():
    P, a, g = 4, 32, 8
    fwd, bwd = run(ctx(P=P, heads=a, kv_heads=g))
    m_q, m_kv = B * (S // P) * a * D * 2, B * (S // P) * g * D * 2
    assert [(op.name.rsplit(".", 1)[1], op.size_bytes) for op in a2as(fwd)] == [
        ("a2a_q", m_q), ("a2a_k", m_kv), ("a2a_v", m_kv), ("a2a_o", m_q)]
    assert [(op.name.rsplit(".", 1)[1], op.size_bytes) for op in a2as(bwd)] == [
        ("a2a_do", m_q), ("a2a_dq", m_q), ("a2a_dk", m_kv), ("a2a_dv", m_kv)]


def test_fewer_kv_heads_than_degree_replicates_kv():
    """ALST: P/g copies of each KV head, so each rank's K and V buffer holds P heads."""
    P, g = 8, 2
    fwd, _ = run(ctx(P=P, heads=32, kv_heads=g))
    k = next(op for op in fwd if op.name.endswith("a2a_k"))
    assert k.size_bytes == B * (S // P) * P * D * 2


@pytest.mark.parametrize("heads,kv", [(12, 12), (16, 3)])
def test_indivisible_heads_are_input_errors(heads, kv):
    with pytest.raises(InputError, match="parallel.ulysses"):
        run(ctx(P=8, heads=heads, kv_heads=kv))


def test_attention_runs_on_full_sequence_with_head_shard_and_conserves_flops():
    P, a = 4, 16
    fwd, bwd = run(ctx(P=P, heads=a, kv_heads=4))
    attn = [op for op in fwd if isinstance(op, ComputeOp) and op.kind == "attention"]
    assert len(attn) == 1
    full = attention_flops(B, a, S, S, D, causal_fraction_diagonal(S))
    assert attn[0].flops * P == pytest.approx(full)  # every Ulysses rank does 1/P of the heads


def test_order_and_dependencies():
    fwd, _ = run(ctx())
    names = [op.name.rsplit(".", 1)[-1] for op in fwd]
    assert names == ["qkv", "a2a_q", "a2a_k", "a2a_v", "fwd", "a2a_o"]
    attn = fwd[4]
    assert attn.deps == (3,)  # after the V a2a, the last of three FIFO calls on the ulysses stream
    assert fwd[5].deps == (4,)


def test_ulysses_with_context_parallel_composes_usp():
    """a2a over ulysses then Megatron CP p2p over cp: FLOPs over all P·c ranks add up to the whole."""
    P, c, a = 2, 2, 8
    total = 0.0
    for r in range(c):
        fwd, _ = run(ctx(P=P, heads=a, kv_heads=a, cp=c, cp_rank=r))
        total += sum(op.flops for op in fwd if isinstance(op, ComputeOp) and op.kind == "attention") * P
        assert any(op.name.startswith("L5.attn.cp") for op in fwd)
    assert total == pytest.approx(attention_flops(B, a, S, S, D, causal_fraction_diagonal(S)))

"""Megatron's scale-mask-softmax on materialised scores: when its fused kernel runs
(``FusedScaleMaskSoftmax.is_kernel_available``, with Megatron-DeepSpeed's swapped
``get_batch_per_block`` arguments of Oct 2021 - Mar 2022), what its PyTorch fallback moves
through HBM (``forward_torch_softmax``: fp32, five kernels each way), and the BLOOM rows that ran
each. Expected values are written out from the framework's code, not read from the builders."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest

from simulator.config.scenario import build_scenario
from simulator.errors import InputError
from simulator.schedule import attention
from simulator.schedule.attention import AttentionContext, megatron_fused_softmax_available
from simulator.schedule.ir import ComputeOp, ProgramBuilder


def _ctx(seq: int, **kw) -> AttentionContext:
    base = dict(micro_batch_size=2, seq=seq, seq_local=seq, heads=8, kv_heads=8, head_dim=128, dtype_bytes=2,
                causal=True, cp=1, cp_rank=0, ulysses=1, cp_comm="p2p", layer=0, mb_index=0, dtype="fp16")
    return AttentionContext(**{**base, **kw})


def _ops(fn, ctx: AttentionContext) -> list[ComputeOp]:
    pb = ProgramBuilder()
    pb.add(ComputeOp(name="qkv", kind="gemm"))
    fn(pb, ctx, 0)
    return pb.ops[1:]


def test_fused_kernel_rule_at_the_key_length():
    """Megatron-LM's rule (and Megatron-DeepSpeed's from 1cb76a64): 16 < s <= 2,048 (4,096 later),
    s % 4 == 0, b·np % 4 == 0 and b·np a multiple of the rows a 128-thread block takes at the key
    length: 2,048 keys are one row per 32-thread warp, 4 rows a block."""
    for b, np in ((1, 8), (2, 8), (6, 8), (1, 28), (2, 28), (1, 4)):
        assert megatron_fused_softmax_available(b, np, 2048)
    assert not megatron_fused_softmax_available(1, 7, 2048)  # b·np = 7
    assert not megatron_fused_softmax_available(1, 6, 2048)  # 6 % 4
    assert not megatron_fused_softmax_available(4, 8, 4096)  # past the 2,048 keys of the 2021 kernels
    assert megatron_fused_softmax_available(4, 8, 4096, max_seq=4096)
    assert not megatron_fused_softmax_available(4, 8, 16)  # 16 < s
    # 64 keys: 32-thread warps of 2 rows each (up to 128 keys), 8 rows a block
    assert megatron_fused_softmax_available(2, 4, 64) and not megatron_fused_softmax_available(1, 4, 64)


@pytest.mark.parametrize("b,np,fused", [
    (4, 8, True), (8, 8, True), (1, 8, False), (2, 8, False), (6, 8, False),  # 64 heads at TP 8: 32 rows a block
    (4, 14, False), (8, 14, True),  # 112 heads at TP 8: np 14 -> 16 keys: 16-thread warps, 2 rows, 16 a block
    (4, 16, True), (1, 16, True),  # 128 heads at TP 8 (16 a block)
    (1, 28, False), (2, 28, True),  # 112 heads at TP 4: np 28 -> 32 keys, 8 a block
    (4, 2, False), (4, 4, False),  # 16 and 32 heads at TP 8: 128 and 64 a block
])
def test_megatron_deepspeed_swapped_rows_per_block(b, np, fused):
    """Megatron-DeepSpeed 9f5f5d4c..1cb76a64 passes np as the CUDA helper's key length:
    rows a block = (128 / min(pow2(np), 32)) x (2 if pow2(np) <= 128 else 1)."""
    assert megatron_fused_softmax_available(b, np, 2048, swapped_batch_per_block=True) is fused
    assert megatron_fused_softmax_available(b, np, 2048)  # the fixed rule takes every one of them


@pytest.mark.parametrize("seq,fwd_bytes,bwd_bytes", [
    # 2,048 fp32 keys are 8 KB a row: softmax three reads and a write, backward five passes
    (2048, (2 + 4) + 8 + 8 + 4 * 4 + (4 + 2), (2 + 4) + 5 * 4 + 8 + 8 + (4 + 2)),
    # 1,024 fp32 keys are 4 KB: the warp softmax holds the row (a read and a write; backward three)
    (1024, (2 + 4) + 8 + 8 + 2 * 4 + (4 + 2), (2 + 4) + 3 * 4 + 8 + 8 + (4 + 2)),
])
def test_torch_fallback_moves_the_scores_in_fp32(seq, fwd_bytes, bwd_bytes):
    """forward_torch_softmax: float() (2 + 4 bytes an element), * scale (4 + 4), masked_fill_ in place
    (4 + 4), fp32 softmax, the cast back (4 + 2); autograd the reverse. The fused kernel: read and
    write in fp16 (2 x 2), backward two reads and a write (3 x 2). Same FLOPs, four more kernels
    each way, nothing else changes."""
    score = 2 * 8 * seq * seq
    for fn, fused_bytes, torch_bytes in ((attention.unfused_forward, 2 * 2, fwd_bytes),
                                         (attention.unfused_backward, 3 * 2, bwd_bytes)):
        fused, torch = _ops(fn, _ctx(seq)), _ops(fn, _ctx(seq, softmax="torch"))
        assert [o.name for o in fused] == [o.name for o in torch]
        assert sum(o.hbm_bytes for o in torch) - sum(o.hbm_bytes for o in fused) == \
            pytest.approx(score * (torch_bytes - fused_bytes))
        assert sum(o.count for o in torch) - sum(o.count for o in fused) == 4
        assert sum(o.flops for o in torch) == sum(o.flops for o in fused)
    # eager layers (Megatron-LM 2020) have their own softmax path: the knob does not touch them
    assert _ops(attention.unfused_forward, _ctx(2048, eager=True, softmax="torch")) == \
        _ops(attention.unfused_forward, _ctx(2048, eager=True))


def _scenario(**training) -> dict:
    return {"name": "s", "hardware": "dgx-a100", "nodes": 1,
            "model": {"layers": 2, "hidden": 1024, "heads": 16, "vocab": 1000, "mlp": "gelu", "seq_len": 2048},
            "training": {"micro_batch": 2, "global_batch": 16, "dtype": "fp16", **training}, "parallel": {"tp": 2}}


def test_torch_softmax_needs_unfused_attention_with_fused_kernels():
    build_scenario(_scenario(attention="unfused", masked_softmax="torch"), source="s.yaml")
    for bad in (dict(masked_softmax="torch"), dict(attention="flash2", masked_softmax="torch"),
                dict(attention="unfused", fused_kernels=False, masked_softmax="torch")):
        with pytest.raises(InputError, match="masked_softmax"):
            build_scenario(_scenario(**bad), source="s.yaml")


def _bloom_cases():
    from simulator.e2e_validation import sources
    return sources.cases([s for s in sources.SOURCES if s.key == "bloom"])


def test_bloom_rows_take_the_kernel_their_tree_chose():
    """The final run (TP 4, 28 heads a rank, micro-batch 2; the fixed tree) and the search's
    micro-batch-4 rows at TP 8 run the fused kernel; its micro-batch 2 and 6 rows (b·np 16 and 48,
    not multiples of 32) PyTorch's fp32 softmax."""
    torch = {c.label for c in _bloom_cases() if c.scenario["training"].get("masked_softmax") == "torch"}
    labels = {c.label for c in _bloom_cases()}
    assert torch == {lab for lab in labels if "tp8" in lab and ("mbs2" in lab or "mbs6" in lab)}
    assert len(torch) == 3 and not any("final run" in lab for lab in torch)


@pytest.mark.slow
def test_bloom_heads_sweep_is_one_offset_with_the_fallback():
    """BigScience's "NHEADs comparison" (chronicles-prequel.md, 02-23, TP 8 PP 6 DP 8, micro-batch 4,
    72 layers of h 14,336): 64, 112 and 128 heads took 120.18, 138.72 and 124.89 s. 112 heads
    (np 14) is the one plan of the three that misses the swapped rule. Priced with PyTorch's
    softmax, the model's 112/64 and 112/128 step ratios fall within 3% of the measured 1.154 and
    1.111; priced as fused they would be 1.02 and 0.99."""
    base = next(c for c in _bloom_cases() if "tp8 pp6 dp8 mbs4" in c.label)
    from simulator.e2e_validation.scoring import run_case

    def step(heads: int, softmax: str) -> float:
        scn = copy.deepcopy(base.scenario)
        scn["model"].update(heads=heads, kv_heads=heads)
        scn["training"]["masked_softmax"] = softmax
        return run_case(replace(base, scenario=scn)).step_time_s

    t64, t112, t128 = step(64, "fused"), step(112, "torch"), step(128, "fused")
    assert t112 / t64 == pytest.approx(138.72 / 120.18, rel=0.03)
    assert t112 / t128 == pytest.approx(138.72 / 124.89, rel=0.03)


def test_vtrain_plans_off_the_fixed_rule_take_the_fallback():
    """vTrain's Megatron-DeepSpeed (2023) has the fixed rule, b·np % 4 == 0: of its multi-node
    plans only GPT-18.4B (48 heads) at TP 16, np 3, micro-batch 2 (b·np 6) misses it."""
    from simulator.e2e_validation import sources
    cs = sources.cases([s for s in sources.SOURCES if s.key == "vtrain_multi"])
    torch = [c.label for c in cs if c.scenario["training"].get("masked_softmax") == "torch"]
    assert torch == ["GPT-18.4B tp16 pp1 dp16 mbs2 gbs1024 256 GPUs"]

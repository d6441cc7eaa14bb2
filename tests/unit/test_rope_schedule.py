"""Rotary position embedding (``position_embedding: rope``): the rotation of the queries and keys
after the QKV GEMM and its inverse on their gradients, in closed form per stack."""

import pytest

from simulator.config.scenario import build_scenario
from simulator.schedule.build import build_schedule
from tests.unit.test_schedule_invariants import PROFILE

# Llama 3 8B, one layer
LLAMA3_8B = {"layers": 1, "hidden": 4096, "heads": 32, "kv_heads": 8, "ffn_hidden": 14336, "vocab": 128256,
             "mlp": "swiglu", "seq_len": 8192, "tied_embeddings": False, "position_embedding": "rope"}


@pytest.fixture
def make(tmp_path):
    (tmp_path / "p.yaml").write_text(PROFILE)

    def _make(parallel, model=None, training=None):
        data = {"name": "rope", "hardware": "p.yaml", "nodes": 2, "model": {**LLAMA3_8B, **(model or {})},
                "training": {"micro_batch": 1, "global_batch": 8, **(training or {})}, "parallel": parallel}
        return build_scenario(data, source="rope.yaml", base_dir=tmp_path)
    return _make


def _rope(scn, direction):
    return [op for op in build_schedule(scn).programs["pp0.cp0"] if op.name.endswith(f".rope.{direction}")]


@pytest.mark.parametrize("tp", [1, 2])
def test_fused_rope_reads_and_writes_the_local_query_and_key_heads_once(make, tp):
    """TE's fused_apply_rotary_pos_emb (Megatron-Core's apply_rope_fusion): one kernel per tensor,
    reading it and writing the rotated copy, forward and backward: 2 B · 8192 tokens ·
    (32 + 8)/tp heads · 128 dims, 160 MiB at TP 1, 80 MiB at TP 2, per micro-batch."""
    scn = make({"tp": tp, "sequence_parallel": tp > 1})
    fwd, bwd = _rope(scn, "fwd"), _rope(scn, "bwd")
    assert len(fwd) == len(bwd) == scn.n_micro
    nbytes = 2 * 2 * 8192 * (32 + 8) // tp * 128
    assert nbytes == 160 * 2**20 // tp
    assert {op.hbm_bytes for op in fwd + bwd} == {nbytes}
    assert {op.count for op in fwd + bwd} == {2}


@pytest.mark.parametrize("tp", [1, 2])
def test_eager_rope_is_torchtitans_cast_complex_multiply_and_cast_back(make, tp):
    """torchtitan's apply_rotary_emb in eager PyTorch: per tensor ``float()`` (2 + 4 bytes per
    element), the complex64 multiply (4 + 4), ``type_as`` (4 + 2): 20 bytes per element in three
    kernels, and the same three on the gradients."""
    scn = make({"tp": tp, "sequence_parallel": tp > 1}, training={"fused_kernels": False})
    fwd, bwd = _rope(scn, "fwd"), _rope(scn, "bwd")
    assert len(fwd) == len(bwd) == scn.n_micro
    assert {op.hbm_bytes for op in fwd + bwd} == {20 * 8192 * (32 + 8) // tp * 128}
    assert {op.count for op in fwd + bwd} == {6}


def test_context_parallel_rotates_the_local_sequence(make):
    fwd = _rope(make({"cp": 2}), "fwd")
    assert {op.hbm_bytes for op in fwd} == {2 * 2 * 4096 * (32 + 8) * 128}


def test_mla_rotates_only_its_rope_dims_and_the_shared_key(make):
    """DeepSeek's MLA: each query head's qk_rope_head_dim (64) part and the one k_pe of the token,
    which every TP rank computes whole: 8192 · (32/2 + 1) · 64 elements at TP 2."""
    mla = {"kv_heads": 32, "head_dim": 128, "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
           "v_head_dim": 128}
    fwd = _rope(make({"tp": 2, "sequence_parallel": True}, model=mla), "fwd")
    assert {op.hbm_bytes for op in fwd} == {2 * 2 * 8192 * (16 + 1) * 64}


@pytest.mark.parametrize("position", ["learned", "alibi"])
def test_no_rope_without_rotary_positions(make, position):
    scn = make({"tp": 2, "sequence_parallel": True}, model={"position_embedding": position})
    assert not [op for op in build_schedule(scn).programs["pp0.cp0"] if ".rope." in op.name]


def test_rope_follows_the_qk_norms_and_its_backward_precedes_theirs(make):
    prog = build_schedule(make({}, model={"qk_norm": True})).programs["pp0.cp0"]
    order = [op.name.split(".", 1)[1] for op in prog if op.tag.layer == 0 and op.tag.mb_index == 0]
    assert order.index("qkv.fwd.gemm") < order.index("qk_norm.fwd") < order.index("rope.fwd") \
        < order.index("attn.core.fwd")
    assert order.index("attn.core.bwd") < order.index("rope.bwd") < order.index("qk_norm.bwd") \
        < order.index("qkv.bwd.dgrad")


def test_op_level_recompute_reruns_the_rotation(make):
    """torchtitan's op-level checkpointing saves the mm outputs, not the rotated q and k that
    SDPA's backward reads: the recompute re-runs RoPE before the backward's own inverse rotation."""
    scn = make({"zero": 3, "zero3_impl": "fsdp2"}, training={"fused_kernels": False, "recompute": "selective_op"})
    ops = [op for op in build_schedule(scn).programs["pp0.cp0"] if ".rope." in op.name and op.tag.mb_index == 0]
    assert [op.tag.phase for op in ops] == ["fwd", "bwd", "bwd"]
    assert ops[1].hbm_bytes == ops[2].hbm_bytes == ops[0].hbm_bytes


def test_eager_layers_with_te_fused_rope(make):
    """NeMo AutoModel: eager PyTorch layers, TE's fused RoPE (``rope_kernel: fused``): 2 B per
    element in one kernel per tensor, as Megatron-Core's."""
    scn = make({}, training={"fused_kernels": False, "rope_kernel": "fused"})
    ops = _rope(scn, "fwd") + _rope(scn, "bwd")
    assert {(op.hbm_bytes, op.count) for op in ops} == {(2 * 2 * 8192 * (32 + 8) * 128, 2)}


def test_megatron_unfused_rope_is_rotate_half_in_separate_kernels(make):
    """Megatron-Core's ``_apply_rotary_pos_emb_bshd`` (``rope_kernel: unfused``; what GPT-OSS's YaRN
    factor forces under ``apply_rope_fusion``): forward per tensor ``t * cos`` (2 B per element),
    ``-x2`` on half of it (1 B), ``cat`` (2 B), ``* sin`` (2 B), the add (3 B) and the concatenation
    with the empty pass-through part (2 B): 12 B = 24 bytes in bf16, in 6 kernels and 6 more on the
    cos/sin tables; backward 17 B = 34 bytes in 9 kernels (two multiplies, the negation, the
    halves' concatenation, two sums, two zero fills and a copy of SliceBackward). Against the fused
    kernel's 2 B: 12 and 17 times the traffic."""
    from simulator.schedule.transformer import unfused_rope_cost

    scn = make({}, training={"rope_kernel": "unfused"})
    elems = 8192 * (32 + 8) * 128
    fwd, bwd = _rope(scn, "fwd"), _rope(scn, "bwd")
    assert {(op.hbm_bytes, op.count) for op in fwd} == {(24 * elems, 24)}
    assert {(op.hbm_bytes, op.count) for op in bwd} == {(34 * elems, 18)}
    assert unfused_rope_cost(2, False) == ((2 + 1 + 2 + 2 + 3 + 2) * 2, 6 + 6)
    assert unfused_rope_cost(2, True) == ((2 + 2 + 1 + 2 + 3 + 1 + 2 + 1 + 3) * 2, 9)


def test_bridge_gpt_oss_rows_rotate_unfused_and_qwen3_fused():
    """Megatron-Bridge's GPT-OSS rows take Megatron-Core's unfused RoPE (YaRN concentration factor
    0.1 ln 32 + 1 = 1.347, which TE's fused kernel does not take); the Qwen3 rows keep the fused one."""
    import math

    from simulator.e2e_validation.sources import cases

    assert 0.1 * math.log(32) + 1 == pytest.approx(1.3466, abs=1e-4)
    kernels = {c.label.split(" H100")[0].split(" B200")[0]: c.scenario["training"].get("rope_kernel", "auto")
               for c in cases() if c.source == "bridge_moe"}
    assert kernels["GPT OSS 120B"] == "unfused"
    assert kernels["Qwen3_30B_a3B"] == kernels["Qwen3_235B_a22B"] == "auto"

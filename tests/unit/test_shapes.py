"""Per-rank shapes (simulator/schedule/shapes.py): the parameters the schedule's gradient
reductions and ZeRO AllGathers carry equal the parameters the memory model keeps, and both equal
closed forms written out here for a small GPT, a small MoE and a small MLA model."""

from __future__ import annotations

import pytest

from simulator.config.scenario import build_scenario
from simulator.schedule.build import build_schedule
from simulator.schedule.ir import CommOp
from simulator.schedule.memory import WEIGHT_BYTES, estimate_memory
from simulator.schedule.shapes import RankShapes, stage_params
from tests.unit.test_schedule_invariants import PROFILE  # 4 GPUs per node

L, H, A, V, S = 4, 256, 8, 1024, 512
GPT = {"layers": L, "hidden": H, "heads": A, "vocab": V, "mlp": "gelu", "seq_len": S}
# 8 experts of 128 (SwiGLU), top-2, one shared expert, one dense layer first; GQA with 4 KV heads
FE, FS, E, G, F_DENSE = 128, 128, 8, 4, 512
MOE = {"layers": L, "hidden": H, "heads": A, "kv_heads": G, "ffn_hidden": F_DENSE, "vocab": V, "mlp": "swiglu",
       "seq_len": S, "experts": E, "top_k": 2, "moe_ffn_hidden": FE, "shared_experts": 1, "first_dense_layers": 1}
# DeepSeek-style MLA (no MoE): query rank 64, KV rank 32, RoPE dims 16, head dim 32, value dim 32
QR, KVR, DR, D = 64, 32, 16, 32
MLA = {**GPT, "mlp": "swiglu", "ffn_hidden": 512, "head_dim": D, "q_lora_rank": QR, "kv_lora_rank": KVR,
       "qk_rope_head_dim": DR, "v_head_dim": D}


@pytest.fixture
def make(tmp_path):
    (tmp_path / "p.yaml").write_text(PROFILE)

    def _make(model, parallel, nodes=4, global_batch=16):
        data = {"name": "shapes", "hardware": "p.yaml", "nodes": nodes, "model": model,
                "training": {"micro_batch": 1, "global_batch": global_batch}, "parallel": parallel}
        return build_scenario(data, source="shapes.yaml", base_dir=tmp_path)
    return _make


def gpt_stage(stage: int, pp: int, tp: int) -> int:
    """Closed form: L/pp layers of 4h² attention + 8h² MLP split over tp, two replicated norms;
    the word embedding (V·h / tp) on the first stage, the final norm and output layer on the last."""
    n = L // pp * ((4 * H * H + 8 * H * H) // tp + 2 * H)
    if stage == 0:
        n += V * H // tp
    if stage == pp - 1:
        n += H + V * H // tp
    return n


def moe_stage(stage: int, pp: int, tp: int, ep: int, etp: int) -> tuple[int, int]:
    """Closed form (dense, expert) of the MoE model: attention with GQA h·d·(a + 2g) + a·d·h over
    tp; layer 0 a dense SwiGLU MLP 3·h·f over tp, the others a replicated router h·E, the shared
    expert 3·h·f_s over tp and E/ep routed experts of 3·h·f_e each over etp."""
    d = H // A
    attn = (H * d * (A + 2 * G) + A * d * H) // tp + 2 * H
    dense = expert = 0
    per_stage = L // pp
    for layer in range(stage * per_stage, (stage + 1) * per_stage):
        dense += attn
        if layer == 0:
            dense += 3 * H * F_DENSE // tp
        else:
            dense += H * E + 3 * H * FS // tp
            expert += E // ep * 3 * H * FE // etp
    if stage == 0:
        dense += V * H // tp
    if stage == pp - 1:
        dense += H + V * H // tp
    return dense, expert


def reduced_params(scn, stage: int) -> tuple[int, int]:
    """(dense, expert) elements the stage's gradient reductions carry in the step's last
    micro-batch (DDP AllReduce / ZeRO ReduceScatter of every bucket, in grad_reduce_dtype)."""
    prog = build_schedule(scn).programs[f"pp{stage}.cp0"]
    out = {"dp": 0, "edp": 0}
    for op in prog:
        if isinstance(op, CommOp) and ".grad." in op.name and op.name.endswith(f".mb{scn.n_micro - 1}"):
            out[op.name.split(".")[0]] += op.size_bytes // 2  # bf16 gradients
    return out["dp"], out["edp"]


def gathered_params(scn, stage: int) -> tuple[int, int]:
    """(dense, expert) elements the ZeRO-1 parameter AllGathers after the step carry (bf16)."""
    prog = build_schedule(scn).programs[f"pp{stage}.cp0"]
    out = {"dp": 0, "edp": 0}
    for op in prog:
        if isinstance(op, CommOp) and ".param.allgather." in op.name:
            out[op.name.split(".")[0]] += op.size_bytes // 2
    return out["dp"], out["edp"]


GPT_PLANS = {
    "tp2_pp2": {"tp": 2, "sequence_parallel": True, "pp": 2},
    "tp4_pp2_nosp": {"tp": 4, "pp": 2},
    "tp2_cp2_pp2": {"tp": 2, "sequence_parallel": True, "cp": 2, "pp": 2},
    "pp4": {"pp": 4},
}


@pytest.mark.parametrize("name", list(GPT_PLANS))
def test_gpt_params_schedule_memory_and_closed_form_agree(make, name):
    scn = make(GPT, GPT_PLANS[name])
    p = scn.parallel
    assert scn.dp > 1
    for stage in range(p.pp):
        expected = gpt_stage(stage, p.pp, p.tp)
        assert stage_params(scn, stage).total == expected
        assert reduced_params(scn, stage) == (expected, 0)
        assert estimate_memory(scn, stage).params == WEIGHT_BYTES * expected


MOE_PLANS = {
    "tp2_ep2_pp2": {"tp": 2, "sequence_parallel": True, "ep": 2, "pp": 2},
    "tp2_etp1_ep4": {"tp": 2, "sequence_parallel": True, "etp": 1, "ep": 4},
    "tp2_etp2_ep2_cp2": {"tp": 2, "sequence_parallel": True, "ep": 2, "cp": 2},
    "ep4_pp2": {"ep": 4, "pp": 2},
}


@pytest.mark.parametrize("name", list(MOE_PLANS))
def test_moe_params_schedule_memory_and_closed_form_agree(make, name):
    scn = make(MOE, MOE_PLANS[name])
    p = scn.parallel
    assert scn.dp > 1 and scn.expert_dp > 1  # both gradient groups have something to reduce
    for stage in range(p.pp):
        dense, expert = moe_stage(stage, p.pp, p.tp, p.ep, p.expert_tp)
        got = stage_params(scn, stage)
        assert (got.dense, got.expert) == (dense, expert)
        assert reduced_params(scn, stage) == (dense, expert)
        assert estimate_memory(scn, stage).params == WEIGHT_BYTES * (dense + expert)


def test_zero1_allgathers_carry_the_parameters_memory_keeps(make):
    """ZeRO-1: the AllGather of the updated parameters after the step carries every parameter of
    the stage once, dense over DP x CP and experts over the expert-DP group; the memory model's
    optimizer states are 12 bytes of each, divided by the same two groups."""
    scn = make(MOE, {"tp": 2, "sequence_parallel": True, "ep": 2, "pp": 2, "zero": 1})
    shape = RankShapes.of(scn)
    for stage in range(2):
        dense, expert = moe_stage(stage, 2, 2, 2, 2)
        assert gathered_params(scn, stage) == (dense, expert)
        mem = estimate_memory(scn, stage)
        assert mem.optimizer == pytest.approx(12 * (dense / shape.grad_shard + expert / shape.expert_dp))


def test_fsdp2_gathers_carry_the_parameters_memory_shards(make):
    """FSDP2 (zero 3) on tp 2, ep 2, pp 2: each micro-batch's forward AllGathers carry every
    parameter of the stage once (every tensor here divides the shard group, so no padding),
    dense over DP x CP = 4 ranks and experts over the 2 expert-DP ranks; the memory model keeps
    1/4 and 1/2 of them, as fp32 shards (4 bytes: FSDP2 casts only the gathered copy to bf16)."""
    scn = make(MOE, {"tp": 2, "sequence_parallel": True, "ep": 2, "pp": 2, "zero": 3, "zero3_impl": "fsdp2"})
    shape = RankShapes.of(scn)
    assert (shape.grad_shard, shape.expert_dp) == (4, 2)
    for stage in range(2):
        dense, expert = moe_stage(stage, 2, 2, 2, 2)
        out = {"dense": 0, "expert": 0}
        for op in build_schedule(scn).programs[f"pp{stage}.cp0"]:
            if isinstance(op, CommOp) and op.name.startswith("fsdp.ag.") and op.name.endswith(".fwd.mb0"):
                out["expert" if ".experts." in op.name else "dense"] += op.size_bytes // 2
        assert (out["dense"], out["expert"]) == (dense, expert)
        assert estimate_memory(scn, stage).params == pytest.approx(4 * (dense / 4 + expert / 2))


def test_mla_down_projections_are_replicated_over_tp(make):
    """MLA on tp 2: the down projections h→r_q and h→r_kv+d_r and their norms are whole on every
    TP rank (Megatron builds them duplicated), the up projections and the output projection are
    split; the schedule reduces and the memory model keeps the same count."""
    scn = make(MLA, {"tp": 2, "sequence_parallel": True, "pp": 2})
    down = H * QR + QR + H * (KVR + DR) + KVR
    up = QR * A * (D + DR) + KVR * A * (D + D)
    attn = down + (up + A * D * H) // 2 + 2 * H
    per_layer = attn + 3 * H * 512 // 2
    first = L // 2 * per_layer + V * H // 2
    last = L // 2 * per_layer + H + V * H // 2
    for stage, expected in enumerate((first, last)):
        assert stage_params(scn, stage).total == expected
        assert reduced_params(scn, stage) == (expected, 0)
        assert estimate_memory(scn, stage).params == WEIGHT_BYTES * expected


def test_interleaved_stage_holds_its_chunks_layers(make):
    """pp 2 x vp 2 on 8 layers with 3 dense layers first: stage 0 holds layers 0-1 and 4-5, so two
    dense layers and two MoE layers (not layers 0-3, three dense). Schedule and memory agree."""
    model = {**MOE, "layers": 8, "first_dense_layers": 3}
    scn = make(model, {"ep": 4, "pp": 2, "vp": 2, "pp_schedule": "interleaved"}, global_batch=32)
    got = stage_params(scn, 0)
    assert got.expert == 2 * (E // 4) * 3 * H * FE
    assert reduced_params(scn, 0) == (got.dense, got.expert)
    assert estimate_memory(scn, 0).params == WEIGHT_BYTES * got.total


@pytest.mark.parametrize("parallel,sp,tokens,sp_tokens", [
    ({"tp": 4, "sequence_parallel": True}, True, 512, 128),
    ({"tp": 4}, False, 512, 512),
    ({"tp": 1, "sequence_parallel": True}, False, 512, 512),  # Megatron turns SP off at tp = 1
    ({"tp": 2, "sequence_parallel": True, "cp": 2}, True, 256, 128),
    ({"ulysses": 4}, False, 128, 128),
])
def test_rank_shapes(make, parallel, sp, tokens, sp_tokens):
    shape = RankShapes.of(make(GPT, parallel))
    assert (shape.sequence_parallel, shape.tokens, shape.sp_tokens) == (sp, tokens, sp_tokens)
    p = {"tp": 1, "cp": 1, "ulysses": 1, "pp": 1, **parallel}
    assert shape.model_parallel == p["tp"] * p["cp"] * p["ulysses"] * p["pp"]
    assert shape.dp * shape.model_parallel == 16
    assert shape.heads == A // p["tp"] and shape.kv_heads == A // p["tp"]
    assert shape.grad_shard == shape.dp * p["cp"] * p["ulysses"]

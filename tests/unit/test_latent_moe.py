"""LatentMoE (model.moe_latent_size): the routed experts and their token exchange in a latent space
narrower than the hidden size, with an h -> latent projection before the dispatch and latent -> h
after the combine; the router and the shared experts stay at h (NeMo AutoModel
``components/moe/layers.py`` ``MoE.forward``, Megatron-Core ``moe_layer.py``). Parameter counts,
FLOPs and All-to-All volumes in closed form."""

from collections import Counter

import pytest

from simulator.config.scenario import build_scenario
from simulator.config.workload import Model
from simulator.errors import InputError
from simulator.e2e_validation.sources import SOURCES, cases
from simulator.schedule.build import build_schedule
from simulator.schedule.flops import (active_mlp_params, active_param_count, layer_params, megatron_flops_per_step,
                                      param_count)
from simulator.schedule.ir import CommOp, ComputeOp
from tests.unit.test_moe_schedule import MOE, moe_scenario_maker
from tests.unit.test_schedule_invariants import PROFILE

SUPER = "nemotron-3-super-120b-a12b"


def super_model() -> Model:
    return Model.model_validate({"preset": SUPER})


def test_nemotron3_super_parameters_closed_form_and_model_card():
    """nvidia/NVIDIA-Nemotron-3-Super-120B-A12B config.json term by term: h 4096, vocabulary 131072
    (untied); 40 Mamba2 mixers of 128 heads x 64 (d_inner 8192, 8 groups of state 128, conv 4); 8
    GQA blocks of 32 x 128 with 2 KV heads; 40 LatentMoE blocks: router h x 512, h <-> 1024 latent
    projections, 512 squared-ReLU experts of 1024 -> 2688 -> 1024, one shared expert of 5376 at h;
    one norm per block and the final norm. NVIDIA's page: "a 12B active 120B total parameter"
    model (active without the input embedding, as its Nano figure of 3.2B is)."""
    h, v, d_in, gn, heads = 4096, 131072, 8192, 8 * 128, 128
    mamba = h * (2 * d_in + 2 * gn + heads) + (d_in + 2 * gn) * 5 + 3 * heads + d_in + d_in * h
    attn = h * 128 * (32 + 2 * 2) + 32 * 128 * h
    expert = 2 * 1024 * 2688
    moe = h * 512 + 2 * h * 1024 + 512 * expert + 2 * h * 5376
    total = 40 * mamba + 8 * attn + 40 * moe + 88 * h + 2 * v * h + h
    m = super_model()
    assert param_count(m) == total
    assert layer_params(m, 1) == moe + h  # an E block: its pre-norm and the LatentMoE
    idle = 40 * (512 - 22) * expert
    assert active_param_count(m) == total - idle
    assert param_count(m) == pytest.approx(120e9, rel=0.01)
    assert active_param_count(m, input_embedding=False) == pytest.approx(12e9, rel=0.025)
    # without the latent space the same experts at h would hold four times as much: a 460B model
    wide = Model.model_validate({"preset": SUPER, "moe_latent_size": 0})
    assert param_count(wide) - param_count(m) == 40 * (512 * 2 * 2688 * (h - 1024) - 2 * h * 1024)


def test_latent_moe_block_flops_match_automodel_formula():
    """Model FLOPs of one LatentMoE block per token as NeMo AutoModel counts them
    (``_nemotronh_moe_layer_flops``, components/utils/flops_utils.py at c0e4fe1b): 6 x (k experts of
    2·latent·f + the shared expert's 2·h·f_s + the router's h·E + the projections' 2·h·latent)."""
    m = super_model()
    automodel = 6 * (22 * 1024 * 2688 * 2 + 4096 * 5376 * 2 + 4096 * 512 + 4096 * 1024 * 2)
    assert 6 * active_mlp_params(m, 1) == automodel


def test_megatron_flops_count_latent_experts_and_projections():
    """Megatron-Core's ``transformer_flops`` (megatron/training/training.py) with moe_latent_size d:
    per MoE layer 6·h·(f·k·k_m·d/h + 2d + f_s·k_m) instead of 6·h·(f·k·k_m + f_s·k_m)."""
    base = {k: v for k, v in MOE.items() if k != "first_dense_layers"}
    m0 = Model.model_validate(base)
    m1 = Model.model_validate({**base, "moe_latent_size": 64})
    h, f, k, km, d, s = 256, 128, 2, 3, 64, 512
    per_layer = 6 * h * (f * k * km * d / h + 2 * d) - 6 * h * (f * k * km)
    assert megatron_flops_per_step(m1, 1) - megatron_flops_per_step(m0, 1) == pytest.approx(4 * s * per_layer)


@pytest.fixture
def make(tmp_path):
    return moe_scenario_maker(tmp_path, {**MOE, "moe_latent_size": 64, "shared_experts": 1})


def _a2a(program):
    return [op for op in program if isinstance(op, CommOp) and op.op == "alltoall" and ".probs." not in op.name]


def test_latent_all_to_all_volume_per_gpu_per_layer(make):
    """The alltoall dispatcher sends T·k·d·B bytes per GPU in each of a layer's four exchanges, d = 64
    the latent width instead of h = 256 (a quarter); the probabilities' exchange keeps T·k values;
    every row dispatched is combined."""
    scn = make({"ep": 4})
    prog = build_schedule(scn).programs["pp0.cp0"]
    T, k, d, B = 512, 2, 64, 2
    a2a = _a2a(prog)
    assert {op.size_bytes for op in a2a} == {T * k * d * B}
    assert len(a2a) == 4 * 3 * scn.n_micro
    sizes: Counter = Counter()
    for op in a2a:
        sizes[(op.tag.layer, op.tag.phase, "dispatch" if ".dispatch." in op.name else "combine")] += op.size_bytes
    assert all(sizes[(layer, ph, "dispatch")] == sizes[(layer, ph, "combine")] for layer, ph, _ in sizes)
    probs = [op for op in prog if isinstance(op, CommOp) and ".probs." in op.name]
    assert {op.size_bytes for op in probs} == {T * k * B}


def test_latent_projections_and_expert_gemms(make):
    """Forward: h -> d projection (T, d, h) before the dispatch, the grouped GEMMs at width d, d ->
    h (T, h, d) after the combine; the router stays (T, E, h). Backward: each projection's dgrad and
    wgrad. The routed experts' forward FLOPs are 2·T·k·3·d·f."""
    prog = build_schedule(make({"ep": 4})).programs["pp0.cp0"]
    T, k, d, h, f = 512, 2, 64, 256, 128
    ops = {op.name: op for op in prog if isinstance(op, ComputeOp) and op.tag.layer == 1 and op.tag.mb_index == 0}
    assert ops["L1.moe.latent.fc1.fwd"].gemm == (T, d, h) and ops["L1.moe.latent.fc2.fwd"].gemm == (T, h, d)
    assert ops["L1.moe.router.fwd"].gemm == (T, 8, h)
    assert ops["L1.moe.latent.fc2.dgrad"].gemm == (T, d, h) and ops["L1.moe.latent.fc2.wgrad"].gemm == (d, h, T)
    assert ops["L1.moe.latent.fc1.dgrad"].gemm == (T, h, d) and ops["L1.moe.latent.fc1.wgrad"].gemm == (h, d, T)
    assert ops["L1.moe.experts.fc1.fwd"].gemm == (T * k // 2, 2 * f, d)
    fwd = sum(op.flops for op in ops.values() if op.tag.phase == "fwd" and ".experts.fc" in op.name)
    assert fwd == 2 * T * k * 3 * d * f
    # the shared experts run at h: FC1's column-parallel GEMM (T, 2·f_s, h)
    assert [op.gemm for n, op in ops.items() if n.startswith("L1.moe.shared.fc1.fwd")][0] == (T, 2 * f, h)


def test_latent_projection_weights_are_dense_and_replicated_over_tp(make):
    """The projections are dense weights (reduced over DP, not the expert-DP group) replicated on
    every TP rank (Megatron-Core builds them ``parallel_mode="duplicated"``)."""
    from simulator.schedule.shapes import layer_unit

    scn = make({"ep": 2, "tp": 2, "sequence_parallel": True})
    mods = {m.name: m for m in layer_unit(scn, 1).modules}
    assert mods["L1.latent.fc1"].numel == mods["L1.latent.fc2"].numel == 256 * 64
    assert not mods["L1.latent.fc1"].expert and mods["L1.experts"].expert
    assert mods["L1.experts"].numel == 8 // 2 * 3 * 64 * 128 // 2  # E/ep experts of 3·d·f, split over etp = tp


def test_nemotron3_super_row_deepep_volume_closed_form():
    """The AutoModel Super row (64 H100, EP 64, 8 local experts, DeepEP, the round-robin gate): a
    micro-batch of T = 2 x 4096 tokens, each to experts 22t .. 22t+21 (mod 512). A token's window
    starts at an even expert: at offset 0 or 2 within its rank's 8 it spans 3 ranks, at 4 or 6 four
    (3.5 on average); at offsets 44..62 within a node's 64 it spans 2 nodes, else 1 (1 + 10/32).
    DeepEP sends one BF16 row of d = 1024 per destination node over RDMA and per destination rank
    in the node: 4x less than at h = 4096."""
    case = next(c for c in cases([s for s in SOURCES if s.key == "automodel_moe"]) if "Super" in c.label)
    assert case.measured == 7.286 and case.n_gpus == 64
    scn = build_scenario(case.scenario)
    T, d, B = 2 * 4096, 1024, 2
    prog = build_schedule(scn).programs["pp0.cp0"]
    layer = 1  # the first E block
    fwd = [op for op in prog if isinstance(op, CommOp) and op.tag.layer == layer and op.tag.mb_index == 0
           and op.name.startswith(f"L{layer}.moe.dispatch.fwd") and ".recompute" not in op.name]
    sizes = {op.axes: op.size_bytes for op in fwd}
    assert sizes[("ep_intra",)] == int(T * 3.5 * d * B)
    assert sizes[("ep_inter",)] == int(T * (1 + 10 / 32) * d * B)


def test_nemotron3_super_mtp_depth_is_an_attention_and_a_latent_moe_block():
    """Super's MTP block (num_nextn_predict_layers 1, mtp_hybrid_override_pattern "*E"): enorm,
    hnorm and the 2h -> h eh_proj, an attention block and a LatentMoE block with their pre-norms,
    and the depth's final norm, all on the last stage; its layer runs attention and the MoE
    exchange like the model's own blocks."""
    from simulator.schedule.shapes import stage_params

    case = next(c for c in cases([s for s in SOURCES if s.key == "automodel_moe"]) if "Super" in c.label)
    base = build_scenario(case.scenario)
    mtp = build_scenario({**case.scenario, "model": {**case.scenario["model"], "mtp_layers": 1}})
    h, e, f, fs, d = 4096, 512, 2688, 5376, 1024
    attn = h * 128 * (32 + 2 * 2) + 32 * 128 * h
    dense = 3 * h + 2 * h * h + 2 * h + attn + h * e + 2 * h * fs + 2 * h * d
    p0, p1 = stage_params(base, 0), stage_params(mtp, 0)
    assert p1.dense - p0.dense == dense
    assert p1.expert - p0.expert == e // 64 * 2 * d * f
    names = {op.name for op in build_schedule(mtp).programs["pp0.cp0"] if op.name.startswith("L88.")}
    assert {"L88.attn.core.fwd", "L88.moe.latent.fc1.fwd", "L88.moe.dispatch.fwd.deepep.ep_intra"} <= names


def test_hybrid_mtp_needs_experts(tmp_path):
    """A hybrid model's MTP depth is "*E": without experts there is no MoE block to build."""
    (tmp_path / "p.yaml").write_text(PROFILE)
    model = {"layers": 3, "hidden": 256, "heads": 8, "kv_heads": 4, "vocab": 1000, "seq_len": 512,
             "layer_pattern": "M*-", "mamba_heads": 8, "mamba_groups": 8, "mtp_layers": 1}
    with pytest.raises(InputError, match="needs experts"):
        build_scenario({"name": "x", "hardware": "p.yaml", "nodes": 1, "model": model,
                        "training": {"micro_batch": 1, "global_batch": 4}, "parallel": {}},
                       base_dir=tmp_path)

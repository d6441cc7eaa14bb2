"""Nemotron-3 Ultra as NeMo AutoModel's benchmark runs it: the 550B shape, two MTP depths through one
physical layer (model.mtp_repeated_layer) and the fused linear cross-entropy
(training.cross_entropy: fused_linear, Cut Cross-Entropy). Closed forms."""

import pytest

from simulator.config.workload import Model
from simulator.e2e_validation.sources import SOURCES, cases
from simulator.schedule.build import build_schedule
from simulator.schedule.flops import active_param_count, param_count
from simulator.schedule.ir import CommOp, ComputeOp
from simulator.schedule.memory import loss_buffer_bytes
from simulator.schedule.shapes import stage_params
from tests.unit.test_moe_schedule import MOE, moe_scenario_maker

ULTRA = "nemotron-3-ultra-550b-a55b"


def test_nemotron3_ultra_parameters_closed_form_and_model_card():
    """NVIDIA-Nemotron-3-Ultra-550B-A55B as Megatron-LM's modelopt config passes it, term by term: h
    8192, vocabulary 131072 (untied); 48 Mamba2 mixers of 256 heads x 64 (d_inner 16384, 8 groups
    of state 128, conv 4); 12 GQA blocks of 64 x 128 with 2 KV heads; 48 LatentMoE blocks: router
    h x 512, h <-> 2048 latent projections, 512 squared-ReLU experts of 2048 -> 5120 -> 2048, one
    shared expert of 10240 at h; one norm per block and the final norm. The model card: 550B total,
    55B active (without the input embedding, as Nano's and Super's figures are)."""
    m = Model.model_validate({"preset": ULTRA})
    assert (m.layer_pattern.count("M"), m.layer_pattern.count("E"), m.layer_pattern.count("*")) == (48, 48, 12)
    h, v, d_in, gn, heads = 8192, 131072, 16384, 8 * 128, 256
    mamba = h * (2 * d_in + 2 * gn + heads) + (d_in + 2 * gn) * 5 + 3 * heads + d_in + d_in * h
    attn = h * 128 * (64 + 2 * 2) + 64 * 128 * h
    expert = 2 * 2048 * 5120
    moe = h * 512 + 2 * h * 2048 + 512 * expert + 2 * h * 10240
    total = 48 * mamba + 12 * attn + 48 * moe + 108 * h + 2 * v * h + h
    assert param_count(m) == total
    assert active_param_count(m) == total - 48 * (512 - 22) * expert
    assert param_count(m) == pytest.approx(550e9, rel=0.005)
    assert active_param_count(m, input_embedding=False) == pytest.approx(55e9, rel=0.005)


@pytest.fixture
def make(tmp_path):
    return moe_scenario_maker(tmp_path, {**MOE, "mtp_layers": 2})


FSDP2 = {"ep": 4, "zero": 3, "zero3_impl": "fsdp2"}


def test_repeated_mtp_holds_one_depth_and_computes_both(make):
    """Two MTP depths through one physical depth: the stage holds one depth's enorm, hnorm, 2h -> h
    eh_proj, MoE layer (attention, its two norms, the router, E/ep experts of 3·h·f) and final norm
    fewer; both depths' layers still run forward and backward."""
    sep, rep = make(FSDP2), make(FSDP2, model={"mtp_repeated_layer": True})
    h, d, a, g, e, f = 256, 32, 8, 4, 8, 128
    dense = 2 * h + 2 * h * h + (h * d * (a + 2 * g) + a * d * h) + 2 * h + h * e + h
    p0, p1 = stage_params(sep, 0), stage_params(rep, 0)
    assert (p0.dense - p1.dense, p0.expert - p1.expert) == (dense, e // 4 * 3 * h * f)

    n0 = [op.name for op in build_schedule(sep).programs["pp0.cp0"]]
    prog = build_schedule(rep).programs["pp0.cp0"]
    n1 = [op.name for op in prog]
    for layer in (4, 5):  # the depths' layers, after the model's four
        assert n1.count(f"L{layer}.attn.core.fwd") == n0.count(f"L{layer}.attn.core.fwd") > 0
        assert n1.count(f"L{layer}.moe.experts.fc1.fwd") == n0.count(f"L{layer}.moe.experts.fc1.fwd") > 0
    # FSDP2 unshards the one layer at each call and reduce-scatters after each call's backward: the
    # second depth's gathers and reductions move the first depth's bytes, dense over the 8 DP ranks,
    # the experts over the 2 expert-DP ranks (bf16 weights and gradients)
    comm = {(op.name.split(".mb")[0], op.size_bytes) for op in prog if isinstance(op, CommOp)}
    dense_layer = dense - (2 * h + 2 * h * h + h)
    experts = e // 4 * 3 * h * f
    for layer in (4, 5):
        assert (f"fsdp.ag.L{layer}.fwd", dense_layer * 2) in comm
        assert (f"fsdp.ag.L{layer}.experts.fwd", experts * 2) in comm
        assert (f"fsdp.ag.L{layer}.bwd", dense_layer * 2) in comm
        assert (f"fsdp.rs.L{layer}", dense_layer * 2) in comm and (f"fsdp.rs.L{layer}.experts", experts * 2) in comm


def test_repeated_mtp_optimizer_updates_one_depth(make):
    """The optimizer step reads and writes the parameters once: its bytes drop by the depth's share."""
    sep, rep = make({"ep": 4}), make({"ep": 4}, model={"mtp_repeated_layer": True})

    def opt_bytes(scn):
        return sum(op.hbm_bytes for op in build_schedule(scn).programs["pp0.cp0"]
                   if isinstance(op, ComputeOp) and op.tag.phase == "opt")
    b0, b1 = opt_bytes(sep), opt_bytes(rep)
    p0, p1 = stage_params(sep, 0).total, stage_params(rep, 0).total
    assert b1 < b0
    assert b1 / b0 == pytest.approx(p1 / p0, rel=0.02)


def test_fused_linear_cross_entropy_head(make):
    """Cut Cross-Entropy: forward is the head's GEMM (T, V, h) with no pass over logits; backward
    computes each tile again and its dgrad and wgrad: 8·T·V·h FLOPs per head against 6·T·V·h, and
    no logits buffers (0 bytes per logit against torch's 12)."""
    base = {"ep": 4}
    ref = make(base, model={"mtp_layers": 0}, training={"cross_entropy": "torch"})
    cce = make(base, model={"mtp_layers": 0}, training={"cross_entropy": "fused_linear"})
    T, V, h = 512, 1000, 256

    def head(scn):
        return [op for op in build_schedule(scn).programs["pp0.cp0"]
                if op.tag.mb_index == 0 and (".lm_head." in op.name or ".loss." in op.name or
                                             op.name.startswith("loss."))]
    ops = head(cce)
    assert not [op for op in ops if "loss" in op.name]
    gemms = {op.name: op.gemm for op in ops if isinstance(op, ComputeOp)}
    assert gemms == {"L-1.lm_head.fwd.gemm": (T, V, h), "L-1.lm_head.fwd.gemm.recompute": (T, V, h),
                     "L-1.lm_head.bwd.dgrad": (T, h, V), "L-1.lm_head.bwd.wgrad": (V, h, T)}
    assert sum(op.flops for op in ops if isinstance(op, ComputeOp)) == 8 * T * V * h
    assert sum(op.flops for op in head(ref) if isinstance(op, ComputeOp) and op.kind == "gemm") == 6 * T * V * h
    assert loss_buffer_bytes(cce) == 0 and loss_buffer_bytes(ref) == T * V * 12
    assert not [op for op in ops if isinstance(op, CommOp)]


def test_ultra_row_runs_its_benchmark_config():
    """The AutoModel Ultra row: 128 H100, EP 64, FSDP2 over 128, LBS 2, activation checkpointing, TE
    attention, two MTP depths through one layer and the fused linear cross-entropy; 10.05 s."""
    case = next(c for c in cases([s for s in SOURCES if s.key == "automodel_moe"]) if "Ultra" in c.label)
    assert case.measured == 10.05 and case.n_gpus == 128
    m, t, p = case.scenario["model"], case.scenario["training"], case.scenario["parallel"]
    assert (m["preset"], m["mtp_layers"], m["mtp_repeated_layer"]) == (ULTRA, 2, True)
    assert (t["recompute"], t["attention"], t["cross_entropy"], t["micro_batch"]) == ("full", "auto", "fused_linear", 2)
    assert (p["ep"], p["zero3_impl"], p["fsdp_reshard_after_forward"]) == (64, "fsdp2", True)

"""Hybrid Mamba2-Transformer models: the Mamba2 mixer's closed forms, the Nemotron-3 Nano preset
against its model card, the layer pattern's validation and the schedule built from it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from simulator.cli import main
from simulator.config.scenario import build_scenario
from simulator.config.workload import Model
from simulator.costs.compute import SSD_SCAN_EFFICIENCY, compute_time
from simulator.schedule.build import build_program
from simulator.schedule.flops import active_param_count, layer_flops, layer_params, model_flops_per_token, param_count
from simulator.schedule.ir import CommOp, ComputeOp
from simulator.schedule.mamba import MambaShape, ssd_bytes, ssd_flops
from simulator.schedule.shapes import layer_unit

NANO = "nemotron-3-nano-30b-a3b"
SMALL = dict(layers=4, hidden=256, heads=4, kv_heads=2, vocab=1024, seq_len=512, layer_pattern="M*M-",
             mamba_heads=8, mamba_head_dim=32, mamba_state=16, mamba_groups=2, mamba_conv=4, mamba_chunk=64)


def nano(**kw) -> Model:
    return Model.model_validate({"preset": NANO, **kw})


def test_mamba2_mixer_parameters_closed_form():
    """Nano's mixer (h 2688, 64 heads x 64, N 128, G 8, conv 4): in_proj h x (2·4096 + 2·8·128 + 64),
    conv1d (4096 + 2048) x (4 + 1 bias), dt_bias, A_log and D per head, the gated norm's 4096 and
    out_proj 4096 x h (HF NemotronH / Megatron-Core MambaMixer tensors)."""
    s = MambaShape.of(nano())
    h = 2688
    assert s.in_proj_out == 10304
    assert s.params == h * 10304 + 6144 * 5 + 3 * 64 + 4096 + 4096 * h
    assert layer_params(nano(), 0) == s.params + h  # an M block: the mixer and its pre-norm


def test_mamba2_mixer_tensor_parallel_split():
    """Megatron-Core splits the heads and the groups over TP: every tensor divides by tp."""
    m = nano()
    assert MambaShape.of(m, 8).params * 8 == MambaShape.of(m).params
    with pytest.raises(ValueError, match="tp=16"):
        MambaShape.of(m, 16)  # 8 groups


def test_ssd_flops_of_the_chunked_algorithm():
    """Per token, forward: C·Bᵀ per group over a chunk (2·G·Q·N), the chunk states and C·states
    (2·H·P·N each), the causal half of the Q x Q block times x (H·P·Q); backward 6·G·Q·N +
    10·H·P·N + 3·H·P·Q (module docstring of schedule/mamba.py)."""
    s = MambaShape.of(nano())
    fwd, bwd = ssd_flops(s)
    assert fwd == 2 * 8 * 128 * 128 + 4 * 64 * 64 * 128 + 64 * 64 * 128 == 2_883_584
    assert bwd == 6 * 8 * 128 * 128 + 10 * 64 * 64 * 128 + 3 * 64 * 64 * 128 == 7_602_176
    lf = layer_flops(nano(), tokens=4096, seq=4096, layer=0)
    assert lf.qkv == 2 * 4096 * 2688 * 10304 and lf.out_proj == 2 * 4096 * 4096 * 2688
    assert lf.ssd == fwd * 4096 and lf.attention == 0 and lf.mlp == 0
    assert lf.backward == 2 * (lf.qkv + lf.out_proj) + bwd * 4096


def test_ssd_kernels_are_memory_bound_at_state_128():
    """Nano's SSD traffic (fp32 chunk states) outlasts its FLOPs at the published chunk-scan rate on
    an H100: the op's time is its bytes over the achieved bandwidth."""
    scn = build_scenario(_small_scenario(NANO))
    gpu = scn.profile.gpu
    s = MambaShape.of(scn.model)
    (f, b), t = ssd_flops(s), 16384
    rate, bandwidth = gpu.peak_flops("bf16") * SSD_SCAN_EFFICIENCY, gpu.hbm_Bps * gpu.hbm_efficiency
    assert f / rate < ssd_bytes(s, 2)[0] / bandwidth and b / rate < ssd_bytes(s, 2)[1] / bandwidth
    op = ComputeOp(name="ssd", kind="scan", flops=f * t, hbm_bytes=ssd_bytes(s, 2)[0] * t, count=5)
    expected = ssd_bytes(s, 2)[0] * t / (gpu.hbm_Bps * gpu.hbm_efficiency) + 5 * gpu.kernel_gap_us * 1e-6
    assert compute_time(op, gpu) == pytest.approx(expected)


def test_nemotron3_nano_parameter_counts_match_the_model_card():
    """NVIDIA's Nemotron 3 page: "a 3.2B active (3.6B with embeddings), 31.6B total parameter model"."""
    m = nano()
    assert param_count(m) == pytest.approx(31.6e9, rel=0.005)
    assert active_param_count(m) == pytest.approx(3.6e9, rel=0.01)
    assert active_param_count(m, input_embedding=False) == pytest.approx(3.2e9, rel=0.01)
    assert (m.layer_pattern.count("M"), m.layer_pattern.count("*"), m.moe_layers) == (23, 6, 23)


def test_model_flops_count_attention_only_in_attention_blocks():
    """6·N over the GEMM weights (no conv, norms or per-head vectors), 12·a·d·s over the 6 attention
    blocks only, three times each mixer's SSD forward."""
    m = nano()
    s = MambaShape.of(m)
    attn = 2688 * 128 * (32 + 2 * 2) + 32 * 128 * 2688
    moe = 2688 * 128 + 6 * 2 * 2688 * 1856 + 2 * 2688 * 3712
    n_gemm = 23 * s.gemm_params + 6 * attn + 23 * moe + 131072 * 2688
    expected = 6 * n_gemm + 12 * 6 * 32 * 128 * 4096 + 23 * 3 * ssd_flops(s)[0]
    assert model_flops_per_token(m) == pytest.approx(expected)


@pytest.mark.parametrize("patch,message", [
    (dict(layer_pattern="M*X-"), "unknown block 'X'"),
    (dict(layer_pattern="M*M"), "layer_pattern has 3 blocks but layers=4"),
    (dict(layer_pattern="M*ME"), "E (MoE) blocks need experts > 0"),
    (dict(layer_pattern="-*--"), "M (Mamba2) blocks need mamba_heads > 0"),
    (dict(mamba_groups=3), "does not divide mamba_heads"),
])
def test_layer_pattern_validation(patch, message):
    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Model.model_validate({**SMALL, **patch})


def test_bad_layer_pattern_exits_2(tmp_path: Path, capsys):
    scn = _small_scenario(None)
    scn["model"] = {**SMALL, "layer_pattern": "M*MQ"}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scn))
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert "layer_pattern" in err and "Traceback" not in err


def _small_scenario(preset: str | None) -> dict:
    model = {"preset": preset, "seq_len": 4096} if preset else dict(SMALL)
    return {"name": "hybrid", "hardware": "dgx-h100", "nodes": 1, "model": model,
            "training": {"micro_batch": 1, "global_batch": 8},
            "parallel": {"tp": 2} if not preset else {"ep": 8, "zero": 3, "zero3_impl": "fsdp2"}}


def test_schedule_runs_each_block_of_the_pattern():
    """M*M-: Mamba2 mixers (in_proj, conv, scan, norm, out_proj) in layers 0 and 2, attention in 1,
    a dense MLP in 3; with tp 2 in_proj has (2·128 + 2·1·16 + 4) columns per rank."""
    scn = build_scenario(_small_scenario(None))
    prog = build_program(scn, 0)
    names = [op.name for op in prog]
    for layer in (0, 2):
        for part in ("in_proj.fwd", "mamba.conv1d.fwd", "mamba.ssd.fwd", "mamba.norm.fwd", "out_proj.fwd",
                     "mamba.ssd.bwd", "in_proj.bwd.dgrad"):
            assert any(n.startswith(f"L{layer}.") and part in n for n in names), (layer, part)
    assert any(n.startswith("L1.attn") for n in names) and not any(n.startswith("L1.fc1") for n in names)
    assert any(n.startswith("L3.fc1") for n in names) and not any(n.startswith("L3.qkv") for n in names)
    gemm = next(op for op in prog if isinstance(op, ComputeOp) and op.name.startswith("L0.in_proj.fwd"))
    assert gemm.gemm is not None and gemm.gemm[1] == 2 * 128 + 2 * 16 + 4
    scans = [op for op in prog if isinstance(op, ComputeOp) and op.kind == "scan"]
    fwd, bwd = ssd_flops(MambaShape.of(scn.model, 2))
    # two M layers, each micro-batch's 512 tokens forward and backward
    assert sum(op.flops for op in scans) == pytest.approx(2 * scn.n_micro * 512 * (fwd + bwd))


def test_hybrid_units_hold_one_block_each():
    scn = build_scenario(_small_scenario(None))
    mods = {layer: [m.name.split(".", 1)[1] for m in layer_unit(scn, layer).modules] for layer in range(4)}
    assert mods[0] == ["ln1", "mamba"] and mods[1] == ["ln1", "q", "k", "v", "o"] and mods[3] == ["ln2", "fc1", "fc2"]


@pytest.mark.parametrize("parallel,field", [
    ({"tp": 4}, "parallel.tp"),  # 2 groups
    ({"tp": 2, "cp": 2}, "parallel.cp"),
])
def test_plans_the_mixers_cannot_run_exit_2(tmp_path: Path, capsys, parallel, field):
    scn = _small_scenario(None)
    scn["parallel"] = {**parallel, "sequence_parallel": False}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scn))
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert field in err and "Traceback" not in err


def test_a2a_overlap_of_hybrid_blocks_exits_2(tmp_path: Path, capsys):
    """Megatron-Core builds the combined-1F1B schedule plan for GPTModel only."""
    scn = _small_scenario(NANO)
    scn["parallel"] = {"ep": 8, "overlap_moe_expert_parallel_comm": True}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scn))
    assert main(["check", str(path)]) == 2
    assert "parallel.overlap_moe_expert_parallel_comm" in capsys.readouterr().err


def test_hybrid_block_activations_closed_form():
    """SMALL (h 256, 8 mixer heads x 32, N 16, G 2) at tp 1, one micro-batch of 512 tokens, no
    dropout and flash attention: a Mamba2 block keeps its input and norm output (4·T·h) and the
    mixer's in_proj output (z, x, B, C, dt: 2·256 + 2·2·16 + 8 = 584 columns), the scan's ungated
    output out_x, the gated output's copy and the norm's output (3·256), in bf16; with dropout
    p > 0 every block adds its residual mask (T·h bytes); an attention block with unfused attention
    adds the score matrix, 5·a·s²·b bytes (arXiv:2205.05198)."""
    from simulator.schedule.mamba import activation_bytes
    from simulator.schedule.memory import hybrid_block_activation_bytes, unfused_scores_bytes

    base = _small_scenario(None)
    base["parallel"] = {"tp": 1}
    base["training"].update(dropout=False)
    scn = build_scenario(base)
    t, h = 512, 256
    assert MambaShape.of(scn.model).in_proj_out == 584
    assert activation_bytes(MambaShape.of(scn.model), t, 2) == t * 2 * (584 + 3 * 256)
    assert hybrid_block_activation_bytes(scn, 0) == 4 * t * h + t * 2 * (584 + 3 * 256)
    with_dropout = build_scenario({**base, "training": {**base["training"], "dropout": True}})
    for layer in range(4):
        assert (hybrid_block_activation_bytes(with_dropout, layer)
                - hybrid_block_activation_bytes(scn, layer)) == t * h
    unfused = build_scenario({**base, "training": {**base["training"], "attention": "unfused"}})
    assert unfused_scores_bytes(scn) == 0.0
    assert unfused_scores_bytes(unfused) == 5 * 4 * 512 * 512 * 1
    assert (hybrid_block_activation_bytes(unfused, 1) - hybrid_block_activation_bytes(scn, 1)
            == 5 * 4 * 512 * 512)
    assert hybrid_block_activation_bytes(unfused, 0) == hybrid_block_activation_bytes(scn, 0)


def test_fp8_delayed_scaling_of_hybrid_blocks():
    """FP8 with delayed scaling on M, * and - blocks (Nemotron-H's recipe): the mixers' in_proj and
    out_proj and the attention and MLP GEMMs run in fp8, each at exactly half the bytes of its bf16
    twin's operands; the SSD scan, whose kernels are not TE modules, is the same op in both runs; the
    output layer stays bf16. TransformerEngine's casts (schedule/fp8.py), on an M block with TP 2
    and sequence parallelism, 512 tokens, hidden 256: forward the transpose of in_proj's FP8 input
    (the block's norm writes it; 2 bytes per element) and the cast-transpose of out_proj's input
    from the gated norm (128 per rank; read 2, write 1 + 1); backward the cast-transpose of
    in_proj's output gradient (2·128 + 2·16 + 4 = 292 per rank, 4 bytes) and out_proj's, cast
    on the rank's 256 rows (3 bytes), all-gathered in FP8 and transposed (2 bytes)."""
    bf16 = build_scenario(_small_scenario(None))
    data = _small_scenario(None)
    data["training"] = {**data["training"], "dtype": "fp8", "fp8_recipe": "delayed"}
    data["parallel"] = {**data["parallel"], "sequence_parallel": True}
    fp8 = build_scenario(data)
    p8, p16 = build_program(fp8, 0), build_program(bf16, 0)
    def layer_gemms(prog):
        return {op.name: op for op in prog if isinstance(op, ComputeOp) and op.kind == "gemm"
                and op.tag.layer is not None and op.tag.layer >= 0}

    gemms8, gemms16 = layer_gemms(p8), layer_gemms(p16)
    assert gemms8.keys() == gemms16.keys() and any(".in_proj." in n for n in gemms8)
    for name, op in gemms8.items():
        assert op.dtype == "fp8" and op.hbm_bytes == pytest.approx(gemms16[name].hbm_bytes / 2), name
    scans = [(op.flops, op.hbm_bytes) for op in p8 if isinstance(op, ComputeOp) and op.kind == "scan"]
    assert scans == [(op.flops, op.hbm_bytes) for op in p16 if isinstance(op, ComputeOp) and op.kind == "scan"]
    casts = {op.tag.phase: op for op in p8 if isinstance(op, ComputeOp) and ".quantize." in op.name
             and op.tag.layer == 0 and op.tag.mb_index == 0}
    t, h = 512, 256
    assert casts["fwd"].hbm_bytes == pytest.approx(t * (2 * h + 4 * 128)) and casts["fwd"].count == 2
    assert casts["bwd"].hbm_bytes == pytest.approx(t * (4 * 292 + (3 / 2 + 2) * h)) and casts["bwd"].count == 3
    assert not any(".quantize." in op.name for op in p16)
    assert {op.dtype for op in p8 if isinstance(op, ComputeOp) and op.kind == "gemm" and "lm_head" in op.name} == {"bf16"}


def _block_casts(scn, layer: int) -> dict:
    """The quantisation op of each pass of ``layer``'s first micro-batch, by phase."""
    return {op.tag.phase: op for op in build_program(scn, 0) if isinstance(op, ComputeOp) and ".quantize." in op.name
            and op.tag.layer == layer and op.tag.mb_index == 0}


@pytest.mark.parametrize("recipe,hardware", [("current", "dgx-h100"), ("mxfp8", "dgx-b200")])
def test_fp8_current_and_mx_scaling_of_hybrid_blocks(recipe, hardware):
    """The other recipes on an M block (TP 2, SP, 512 tokens, hidden 256; in_proj 292 columns and
    out_proj 128 rows per rank, as in the delayed-scaling test above). Current scaling on Hopper:
    the norm writes BF16 and in_proj's input is cast from it (read 2, write 2 copies) and, like
    every operand, read once more for its amax (2): 6 bytes per element, out_proj's cast input the
    same; backward in_proj's cast gradient 6, out_proj's gathered one 3/2 + 2 (transpose) + 2;
    4 kernels per operand (2 for the norm-fed one) and one amax AllReduce over TP per pass (the
    gathered input of in_proj, the gathered gradient of out_proj). MXFP8 on Blackwell: the norm
    writes the row-wise copy, the column-wise copy and both scales cost 1 + 2/32 bytes per element
    of every operand, a cast operand 2 + 1 more; one kernel per operand, no amax."""
    data = _small_scenario(None)
    data["hardware"] = hardware
    data["training"] = {**data["training"], "dtype": "fp8", "fp8_recipe": recipe}
    data["parallel"] = {**data["parallel"], "sequence_parallel": True}
    scn = build_scenario(data)
    casts = _block_casts(scn, 0)
    t, h = 512, 256
    if recipe == "current":
        assert casts["fwd"].hbm_bytes == pytest.approx(t * (6 * h + 6 * 128)) and casts["fwd"].count == 6
        assert casts["bwd"].hbm_bytes == pytest.approx(t * (6 * 292 + (3 / 2 + 2 + 2) * h)) and casts["bwd"].count == 8
        amax = [op.name for op in build_program(scn, 0) if isinstance(op, CommOp) and "fp8_amax" in op.name
                and op.tag.layer == 0 and op.tag.mb_index == 0]
        assert sorted(amax) == ["L0.in_proj.fwd.fp8_amax.allreduce", "L0.out_proj.bwd.fp8_amax.allreduce"]
    else:
        mx = 1 + 2 / 32
        assert casts["fwd"].hbm_bytes == pytest.approx(t * (mx * h + (3 + mx) * 128)) and casts["fwd"].count == 2
        assert casts["bwd"].hbm_bytes == pytest.approx(t * ((3 + mx) * 292 + (3 / 2 + mx) * h))
        assert casts["bwd"].count == 2
        gemms = [op for op in build_program(scn, 0) if isinstance(op, ComputeOp) and op.kind == "gemm"
                 and op.tag.layer == 0]
        assert gemms and {(op.dtype, op.scaling) for op in gemms} == {("fp8", "mxfp8")}


def test_fp8_moe_blocks_of_a_hybrid_model_quantise_their_routed_rows():
    """An E block of Nemotron-3 Nano (hidden 2688, 128 experts of 1856, 6 per token, a shared expert
    of 3712) in FP8 with current scaling on 8 H100 (EP 8, 512 tokens per rank, the round-robin gate:
    3,072 routed rows on every rank): its grouped GEMMs run in fp8 and its forward quantisation reads
    each routed row's FC1 input (2688) and FC2 input (1856) and writes its row-wise and transposed
    copies after the amax read, 6 bytes per element, as the shared expert's two cast inputs (2688,
    3712 per token); 4 kernels per operand: the shared expert's two and each of the 16 local
    experts' two splits."""
    data = _small_scenario(NANO)
    data["model"] = {"preset": NANO, "seq_len": 512, "layers": 4, "layer_pattern": "ME*E"}
    data["training"] = {**data["training"], "dtype": "fp8", "fp8_recipe": "current", "moe_routing": "round_robin"}
    scn = build_scenario(data)
    fwd = _block_casts(scn, 1)["fwd"]
    t, rows = 512, 512 * 6
    assert fwd.hbm_bytes == pytest.approx(6 * (rows * (2688 + 1856) + t * (2688 + 3712)))
    assert fwd.count == 4 * 2 + 4 * 2 * 16
    experts = [op for op in build_program(scn, 0) if isinstance(op, ComputeOp) and ".experts.fc" in op.name]
    assert experts and {op.dtype for op in experts} == {"fp8"}


def test_recompute_modules_of_hybrid_moe_blocks():
    """Nemotron-3's H100 recipe recomputes its E blocks (``recompute_modules`` layernorm and moe):
    in each E block's backward the block's pre-norm is rebuilt, then the block's whole MoE forward
    (router, dispatch and combine, experts, shared expert) with, in FP8, TransformerEngine's
    quantisation of the routed rows and shared-expert inputs: the same bytes as the forward's own
    (an E block has no other GEMM), before the block's backward; the M and attention blocks
    recompute nothing."""
    data = _small_scenario(NANO)
    data["model"] = {"preset": NANO, "seq_len": 512, "layers": 4, "layer_pattern": "ME*E"}
    data["training"] = {**data["training"], "dtype": "fp8", "fp8_recipe": "current", "moe_routing": "round_robin",
                        "recompute_modules": ["layernorm", "moe"]}
    prog = build_program(build_scenario(data), 0)
    again = [op for op in prog if op.name.endswith(".recompute") and op.tag.mb_index == 0]
    assert {op.tag.layer for op in again} == {1, 3} and {op.tag.phase for op in again} == {"bwd"}
    order = [op.name for op in prog if op.tag.layer == 1 and op.tag.mb_index == 0 and op.tag.phase == "bwd"]
    assert order.index("L1.ln1.recompute") < order.index("L1.moe.dispatch.fwd.alltoall.recompute")
    assert order.index("L1.moe.combine.fwd.alltoall.recompute") < order.index("L1.moe.combine.bwd.alltoall")
    quantized = {op.name: op.hbm_bytes for op in prog if op.tag.layer == 1 and op.tag.mb_index == 0
                 and ".quantize." in op.name}
    assert quantized["L1.moe.fp8_current.quantize.fwd.recompute"] == quantized["L1.fp8_current.quantize.fwd"]


def test_no_position_embedding():
    """``position_embedding: none`` (Megatron-Core MambaModel's default, Nemotron-H's): no RoPE
    kernels, where ``rope`` adds them to a GPT model's attention (a hybrid model's attention blocks
    never rotate), and no learned position table, which ``learned`` adds (seq x hidden parameters)."""
    dense = {k: v for k, v in SMALL.items() if not k.startswith("mamba") and k != "layer_pattern"}

    def scenario(position: str) -> dict:
        return {**_small_scenario(None), "model": {**dense, "position_embedding": position}}

    none, rope, learned = (build_scenario(scenario(p)) for p in ("none", "rope", "learned"))
    assert not any(".rope." in op.name for op in build_program(none, 0))
    assert any(".rope." in op.name for op in build_program(rope, 0))
    assert param_count(learned.model) - param_count(none.model) == 512 * 256
    assert param_count(rope.model) == param_count(none.model)

"""FP8 recipes: what each adds to a step, in closed form."""

import dataclasses

import pytest

from simulator.config.scenario import build_scenario
from simulator.costs.compute import compute_time
from simulator.errors import InputError
from simulator.schedule.build import build_schedule
from simulator.schedule.ir import CommOp, ComputeOp
from tests.unit.test_schedule_invariants import PROFILE, SMALL, check_invariants

B200 = PROFILE.replace("arch: hopper", "arch: blackwell")


@pytest.fixture
def make(tmp_path):
    (tmp_path / "p.yaml").write_text(PROFILE)
    (tmp_path / "b.yaml").write_text(B200)

    def _make(recipe, parallel=None, hardware="p.yaml", dtype="fp8"):
        data = {"name": "fp8", "hardware": hardware, "nodes": 2, "model": SMALL,
                "training": {"micro_batch": 1, "global_batch": 8, "dtype": dtype, "fp8_recipe": recipe},
                "parallel": parallel or {"tp": 2, "sequence_parallel": True}}
        return build_scenario(data, source="fp8.yaml", base_dir=tmp_path)
    return _make


def _ops(scn):
    return build_schedule(scn).programs["pp0.cp0"]


def _quantize_bytes(prog, phase):
    return sum(op.hbm_bytes for op in prog if isinstance(op, ComputeOp) and ".quantize." in op.name
               and op.tag.phase == phase and op.tag.layer == 0 and op.tag.mb_index == 0)


# The dense layer pass of every test below: hidden 256, FFN 512 (SwiGLU), 8 heads and 4 KV heads of
# 32, TP 2 with sequence parallelism, b·s = 512 tokens in the TP GEMMs.
H, F, TP, T = 256, 512, 2, 512
QKV_OUT, PROJ_IN = (8 + 2 * 4) * 32 // TP, 8 * 32 // TP
FWD = T * (H + PROJ_IN + H + F // TP)  # the inputs of QKV, proj, FC1 and FC2
BWD = T * (QKV_OUT + H + 2 * F // TP + H)  # their output gradients (FC1's is gated: 2·f/tp)


def test_delayed_scaling_reduces_amaxes_once_per_pass(make):
    """One AllReduce per micro-batch forward and backward over TP x DP (tp 2, dp 4), 4 bytes per
    FP8 tensor: 3 per GEMM x 4 GEMMs x 4 layers."""
    scn = make("delayed")
    prog = _ops(scn)
    amax = [op for op in prog if isinstance(op, CommOp) and op.name.startswith("fp8.amax_reduction")]
    assert len(amax) == 2 * scn.n_micro
    assert {op.axes for op in amax} == {("tp", "dp")} and {op.size_bytes for op in amax} == {4 * 3 * 4 * 4}
    check_invariants(build_schedule(scn))


def test_delayed_scaling_casts_what_no_norm_writes(make):
    """TransformerEngine's casts under delayed scaling (schedule/fp8.py), per dense layer pass on
    Hopper. Forward: the norms write the QKV and FC1 inputs in FP8, and the transposes the wgrad
    GEMMs need are passes of their own (read and write 1 byte); the proj and FC2 inputs come in
    BF16 from the attention core and the activation: cast-transpose, read 2 and write 1 + 1.
    Backward: the QKV and FC1 output gradients cast-transposed (4 bytes); the proj and FC2 ones,
    row-parallel under SP, cast on the rank's t/tp rows (read 2, write 1), all-gathered in FP8,
    then transposed (2 bytes). Kernels: forward 2 transposes + 2 casts, backward 2 + 2 x 2. On
    Blackwell no transpose: 3 bytes per cast operand, the norm-fed inputs free."""
    prog = _ops(make("delayed"))
    fwd = T * (2 * H + 4 * PROJ_IN + 2 * H + 4 * F // TP)
    bwd = T * (4 * QKV_OUT + (3 / TP + 2) * H + 4 * 2 * F // TP + (3 / TP + 2) * H)
    assert _quantize_bytes(prog, "fwd") == pytest.approx(fwd)
    assert _quantize_bytes(prog, "bwd") == pytest.approx(bwd)
    counts = {op.tag.phase: op.count for op in prog if isinstance(op, ComputeOp) and ".quantize." in op.name
              and op.tag.layer == 0 and op.tag.mb_index == 0}
    assert counts == {"fwd": 4, "bwd": 6}
    b200 = _ops(make("delayed", hardware="b.yaml"))
    assert _quantize_bytes(b200, "fwd") == pytest.approx(T * 3 * (PROJ_IN + F // TP))
    assert _quantize_bytes(b200, "bwd") == pytest.approx(T * (3 * (QKV_OUT + 2 * F // TP) + 2 * (3 / TP) * H))


def test_current_scaling_reads_every_quantised_tensor_once_more(make):
    """Current scaling reads each operand once more for its amax (2 bytes) over the casts (4 bytes
    each on Hopper: the norm-fed inputs are written in BF16 and cast like the others) and
    AllReduces two SP amaxes over TP."""
    prog = _ops(make("current"))
    assert _quantize_bytes(prog, "fwd") == pytest.approx((4 + 2) * FWD)
    # backward: the QKV and FC1 gradients cast-transposed (4 bytes), the proj and FC2 ones cast on
    # t/tp rows (3/tp) and transposed after the gather (2), and every gradient's amax read (2)
    casts = 4 * T * (QKV_OUT + 2 * F // TP) + (3 / TP + 2) * 2 * T * H
    assert _quantize_bytes(prog, "bwd") == pytest.approx(casts + 2 * BWD)
    amax = [op for op in prog if isinstance(op, CommOp) and "fp8_amax" in op.name and op.tag.layer == 0
            and op.tag.mb_index == 0]
    assert len(amax) == 4 and all(op.axes == ("tp",) and op.size_bytes == 4 for op in amax)


def test_block_scaling_writes_a_column_wise_copy(make):
    """Over the casts (one row-wise copy: the norm-fed inputs free, the others read 2 and write 1,
    the gathered gradients on their t/tp rows): the column-wise FP8 copy and the scales of both."""
    fwd_casts = 3 * T * (PROJ_IN + F // TP)
    bwd_casts = 3 * T * (QKV_OUT + 2 * F // TP) + (3 / TP) * 2 * T * H
    prog = _ops(make("blockwise"))
    assert _quantize_bytes(prog, "fwd") == pytest.approx(fwd_casts + (1 + 2 * 4 / 128) * FWD)
    assert _quantize_bytes(prog, "bwd") == pytest.approx(bwd_casts + (1 + 2 * 4 / 128) * BWD)
    prog = _ops(make("mxfp8", hardware="b.yaml"))
    assert _quantize_bytes(prog, "fwd") == pytest.approx(fwd_casts + (1 + 2 / 32) * FWD)
    assert _quantize_bytes(prog, "bwd") == pytest.approx(bwd_casts + (1 + 2 / 32) * BWD)


def test_recipe_rules(make):
    with pytest.raises(InputError, match="mxfp8 needs Blackwell"):
        make("mxfp8")
    with pytest.raises(InputError, match="needs dtype: fp8"):
        make("current", dtype="bf16")


def test_moe_layer_quantises_the_routed_rows_per_expert(tmp_path):
    """Current scaling on an MoE layer (8 experts, top-2, ep 4, one shared expert, balanced): the
    attention operands as in a dense layer (the amax read, 2 bytes), then each local expert's split
    of the T·k = 1,024 routed rows (TransformerEngine's split_quantize), forward FC1 inputs (h) and
    FC2 inputs (f_e), backward the output gradients (h and 2·f_e), in a pass of their own: the
    amax read, the cast's read and, on Hopper, an FP8 copy and its transpose (2 + 2 + 2 bytes);
    the shared expert's T tokens (h, f_s; h, 2·f_s) as dense operands. Kernels: TransformerEngine's
    current-scaling quantize is 4 per tensor (amax zeroing and reduction, scale, cast), 2 for the
    norm-fed QKV input (the norm computes the amax): forward 2 + 4 (attention) + 4 + 4 (shared) and
    4 per local expert for each of the two grouped GEMMs, 14 + 16; backward 4 per output gradient,
    16 + 16. The dense first layer: QKV 2, projection 4, FC1 2 (norm-fed), FC2 4."""
    from tests.unit.test_moe_schedule import MOE, moe_scenario_maker

    make = moe_scenario_maker(tmp_path, MOE)
    scn = make({"ep": 4}, training={"dtype": "fp8", "fp8_recipe": "current"}, model={"shared_experts": 1})
    prog = build_schedule(scn).programs["pp0.cp0"]
    h, t, k, fe, fs, f, d = 256, 512, 2, 128, 128, 512, 32
    rows, qkv_out, proj_in = t * k, (8 + 2 * 4) * d, 8 * d
    fwd, routed_fwd = t * (h + proj_in) + t * (h + fs), rows * (h + fe)
    bwd, routed_bwd = t * (qkv_out + h) + t * (2 * fs + h), rows * (2 * fe + h)

    def quant(prog, layer, phase):
        ops = [op for op in prog if isinstance(op, ComputeOp) and ".quantize." in op.name
               and op.tag.phase == phase and op.tag.layer == layer and op.tag.mb_index == 0]
        assert len(ops) <= 1
        return ops[0] if ops else None

    # the dense operands (TP 1: no gathered gradient): the casts, 4 bytes each on Hopper (current
    # scaling casts the norm-fed QKV input too), and the amax read, 2
    assert quant(prog, 1, "fwd").hbm_bytes == pytest.approx(6 * fwd + 6 * routed_fwd)
    assert quant(prog, 1, "bwd").hbm_bytes == pytest.approx(6 * bwd + 6 * routed_bwd)
    assert quant(prog, 1, "fwd").count == 2 + 4 + 4 + 4 + 2 * (8 // 4) * 4
    assert quant(prog, 1, "bwd").count == 4 * 4 + 2 * (8 // 4) * 4
    assert quant(prog, 0, "fwd").hbm_bytes == pytest.approx(6 * t * (h + proj_in + h + f))
    assert quant(prog, 0, "fwd").count == 2 + 4 + 2 + 4

    # Delayed scaling: the norm writes the QKV input in FP8 (its transpose a pass of 2 bytes); the
    # proj input, the shared experts' inputs (after the MoE block's own norm) and every output
    # gradient are cast-transposed (4 bytes); the routed rows read 2, FP8 copy and transpose 1 + 1
    # on Hopper; 2 + 1 on Blackwell, whose FP8 GEMMs need no transpose; one multi-tensor
    # cast-transpose kernel over the splits per grouped GEMM. MXFP8 writes a row-wise and a
    # column-wise copy with one E8M0 scale per 32 values: 2 + 2·(1 + 1/32).
    delayed = build_schedule(make({"ep": 4}, training={"dtype": "fp8", "fp8_recipe": "delayed"},
                                  model={"shared_experts": 1})).programs["pp0.cp0"]
    assert quant(delayed, 1, "fwd").hbm_bytes == pytest.approx(4 * fwd - 2 * t * h + 4 * routed_fwd)
    assert quant(delayed, 1, "bwd").hbm_bytes == pytest.approx(4 * bwd + 4 * routed_bwd)
    assert quant(delayed, 1, "fwd").count == 2 + 1 + 3
    assert quant(delayed, 0, "fwd").hbm_bytes == pytest.approx(t * (2 * h + 4 * proj_in + 2 * h + 4 * f))
    (tmp_path / "p.yaml").write_text(B200)
    delayed_b200 = build_schedule(make({"ep": 4}, training={"dtype": "fp8", "fp8_recipe": "delayed"},
                                       model={"shared_experts": 1})).programs["pp0.cp0"]
    assert quant(delayed_b200, 1, "bwd").hbm_bytes == pytest.approx(3 * bwd + 3 * routed_bwd)
    mx = build_schedule(make({"ep": 4}, training={"dtype": "fp8", "fp8_recipe": "mxfp8"},
                             model={"shared_experts": 1})).programs["pp0.cp0"]
    assert quant(mx, 1, "fwd").hbm_bytes == pytest.approx(3 * t * (proj_in + h + fs) + (1 + 2 / 32) * fwd
                                                          + (2 + 2 * (1 + 1 / 32)) * routed_fwd)
    assert quant(mx, 1, "fwd").count == 4 + 2 * (8 // 4)  # one kernel per operand and per split


def test_quantisation_kernels_and_bytes_per_recipe(make):
    """Per dense layer pass on Blackwell (no FP8 transposes), from TransformerEngine's quantizers
    (v2.9): current scaling zeroes the amax, reduces it, computes the scale and casts (4 kernels
    per operand; the QKV and FC1 inputs take their amax from the norm: 2), reads each operand
    once to cast it and once more for its amax (2 + 2 bytes) and writes it (1); a gathered output
    gradient is cast on its t/tp rows. MXFP8 casts each operand in one kernel that writes a
    row-wise and a column-wise copy with their 1x32 scales (the norm-fed ones from the norm)."""
    def quantize(prog, phase):
        return next(op for op in prog if isinstance(op, ComputeOp) and ".quantize." in op.name
                    and op.tag.phase == phase and op.tag.layer == 0 and op.tag.mb_index == 0)

    cur, mx = _ops(make("current", hardware="b.yaml")), _ops(make("mxfp8", hardware="b.yaml"))
    assert (quantize(cur, "fwd").count, quantize(cur, "bwd").count) == (4 * 4 - 2 * 2, 4 * 4)
    assert (quantize(mx, "fwd").count, quantize(mx, "bwd").count) == (4, 4)
    gathered = 2 * T * H  # the proj and FC2 output gradients
    casts = 3 * (FWD + BWD - gathered) + (3 / TP) * gathered
    assert quantize(cur, "fwd").hbm_bytes + quantize(cur, "bwd").hbm_bytes == pytest.approx(casts + 2 * (FWD + BWD))
    mx_casts = casts - 3 * T * 2 * H  # the norm-fed QKV and FC1 inputs
    assert quantize(mx, "fwd").hbm_bytes + quantize(mx, "bwd").hbm_bytes == pytest.approx(
        mx_casts + (1 + 2 / 32) * (FWD + BWD))


def test_mxfp8_gemms_run_at_the_block_scaled_rate(make):
    """The layers' GEMMs of an MXFP8 run carry ``scaling: mxfp8`` (the output layer, Megatron's
    plain ColumnParallelLinear, does not; nor does any GEMM under current scaling), and one takes
    7.161 / 6.812 of its per-tensor time, launch floor aside: the pre-quantised per-layer GEMM times
    of TransformerEngine's GEMM profiling guide (B300, hidden 4,096, FFN 16,384, 15,872 tokens)."""
    mx, cur = _ops(make("mxfp8", hardware="b.yaml")), _ops(make("current", hardware="b.yaml"))
    gemms = [op for op in mx if isinstance(op, ComputeOp) and op.kind == "gemm"]
    assert {op.scaling for op in gemms if op.tag.layer is not None and op.tag.layer >= 0} == {"mxfp8"}
    assert {op.scaling for op in gemms if "lm_head" in op.name} == {""}
    assert {op.scaling for op in cur if isinstance(op, ComputeOp) and op.kind == "gemm"} == {""}
    gpu = make("mxfp8", hardware="b.yaml").profile.gpu
    op = next(op for op in gemms if op.scaling == "mxfp8" and op.tag.phase == "fwd")
    floor = max(op.count, 1) * gpu.kernel_gap_us * 1e-6
    t_mx, t_pt = compute_time(op, gpu), compute_time(dataclasses.replace(op, scaling=""), gpu)
    assert (t_mx - floor) / (t_pt - floor) == pytest.approx(7.161 / 6.812)


def test_block_scaled_fp8_gemms_on_hopper_and_as_mxfp8_on_blackwell(make):
    """The layers' GEMMs of a ``blockwise`` run carry ``scaling: blockwise``; on Hopper one takes
    (22.882 - 0.677 x 3.500) / 16.785 = 1.222 of its per-tensor time (TransformerEngine's GEMM
    profiling guide on an H200 NVL: the block recipe's autocast layer less its casts, priced as
    ``schedule/fp8.py`` prices them, 4.0625 of current scaling's 6 bytes an element, over current
    scaling's pre-quantised layer), on Blackwell MXFP8's 7.161 / 6.812 (the recipe runs as MXFP8)."""
    assert (22.882 - 4.0625 / 6 * (20.285 - 16.785)) / 16.785 == pytest.approx(1.2221, abs=1e-4)
    for hardware, ratio in (("p.yaml", 1.2221), ("b.yaml", 7.161 / 6.812)):
        scn = make("blockwise", hardware=hardware)
        gemms = [op for op in _ops(scn) if isinstance(op, ComputeOp) and op.kind == "gemm"]
        assert {op.scaling for op in gemms if op.tag.layer is not None and op.tag.layer >= 0} == {"blockwise"}
        assert {op.scaling for op in gemms if "lm_head" in op.name} == {""}
        gpu = scn.profile.gpu
        op = next(op for op in gemms if op.scaling == "blockwise" and op.tag.phase == "fwd")
        floor = max(op.count, 1) * gpu.kernel_gap_us * 1e-6
        t_bl, t_pt = compute_time(op, gpu), compute_time(dataclasses.replace(op, scaling=""), gpu)
        assert (t_bl - floor) / (t_pt - floor) == pytest.approx(ratio, abs=1e-4), hardware


def _head_ops(prog):
    return [op for op in prog if "lm_head" in op.name]


@pytest.mark.parametrize("recipe", ["delayed", "current", "mxfp8"])
def test_output_layer_runs_in_bf16_in_an_fp8_run(make, tmp_path, recipe):
    """Megatron-Core's output layer is its own ColumnParallelLinear (a torch matmul outside TE's
    fp8_autocast): in an fp8 run the LM head's GEMMs are bf16 GEMMs, each costing exactly what the
    same GEMM costs in a bf16 run, and its sequence-parallel AllGather carries 2 bytes per element
    (tokens 512 x hidden 256 = 262,144 B), while the layers' GEMMs stay fp8.
    ``training.fp8_output_layer`` (torchtitan's Float8 without ``output`` in ``filter_fqns``) runs
    them in fp8 and gathers 1 byte per element."""
    hw = "b.yaml" if recipe == "mxfp8" else "p.yaml"
    fp8, bf16 = _ops(make(recipe, hardware=hw)), _ops(make("delayed", hardware=hw, dtype="bf16"))
    gpu = make(recipe, hardware=hw).profile.gpu
    head8 = [op for op in _head_ops(fp8) if isinstance(op, ComputeOp) and op.kind == "gemm"]
    head16 = [op for op in _head_ops(bf16) if isinstance(op, ComputeOp) and op.kind == "gemm"]
    assert len(head8) == len(head16) >= 3 and {op.dtype for op in head8} == {"bf16"}
    assert [compute_time(a, gpu) for a in head8] == pytest.approx([compute_time(b, gpu) for b in head16])
    assert {op.dtype for op in fp8 if isinstance(op, ComputeOp) and op.kind == "gemm"
            and op.tag.layer is not None and op.tag.layer >= 0} == {"fp8"}
    ag = [op for op in _head_ops(fp8) if isinstance(op, CommOp) and op.op == "allgather"]
    assert ag and {op.size_bytes for op in ag} == {512 * 256 * 2}

    data = {"name": "fp8", "hardware": hw, "nodes": 2, "model": SMALL,
            "training": {"micro_batch": 1, "global_batch": 8, "dtype": "fp8", "fp8_recipe": recipe,
                         "fp8_output_layer": True},
            "parallel": {"tp": 2, "sequence_parallel": True}}
    on = _ops(build_scenario(data, source="fp8.yaml", base_dir=tmp_path))
    assert {op.dtype for op in _head_ops(on) if isinstance(op, ComputeOp) and op.kind == "gemm"} == {"fp8"}
    assert {op.size_bytes for op in _head_ops(on) if isinstance(op, CommOp) and op.op == "allgather"} == {512 * 256}


def test_fp8_output_layer_needs_an_fp8_run(tmp_path):
    """``fp8_output_layer`` on a bf16 run is an input error naming the field."""
    (tmp_path / "p.yaml").write_text(PROFILE)
    data = {"name": "x", "hardware": "p.yaml", "nodes": 2, "model": SMALL,
            "training": {"micro_batch": 1, "global_batch": 8, "dtype": "bf16", "fp8_output_layer": True},
            "parallel": {"tp": 2, "sequence_parallel": True}}
    with pytest.raises(InputError, match="fp8_output_layer needs dtype: fp8"):
        build_scenario(data, source="x.yaml", base_dir=tmp_path)

"""PyTorch eager layers as the frameworks ran them: dropout of p = 0 launches nothing, autograd
adds the two gradients where the residual stream forks, apex's norm beside eager layers, biases
as kernels of their own (F.linear of torch <= 1.7), and the unfused attention core in PyTorch ops
(Megatron-LM of Sep 2020)."""

from __future__ import annotations

import pytest

from simulator.config.scenario import build_scenario
from simulator.errors import InputError
from simulator.schedule.build import build_schedule
from simulator.schedule.ir import ComputeOp
from simulator.schedule.transformer import Elementwise

H, FFN, SEQ, MB, HEADS, VOCAB = 512, 2048, 1024, 2, 8, 32000
T = MB * SEQ  # tokens of a micro-batch
HB = T * H * 2  # one bf16 hidden activation


def _ops(tmp_path, seq: int = SEQ, parallel: dict | None = None, **training) -> list[ComputeOp]:
    data = {"name": "s", "hardware": "dgx-a100", "nodes": 1,
            "model": {"layers": 2, "hidden": H, "heads": HEADS, "vocab": VOCAB, "mlp": "gelu", "seq_len": seq},
            "training": {"micro_batch": MB, "global_batch": 16, **training}, "parallel": parallel or {"tp": 1}}
    sched = build_schedule(build_scenario(data, source="s.yaml", base_dir=tmp_path))
    prog = next(iter(sched.programs.values()))
    return [op for op in prog if isinstance(op, ComputeOp)]


def test_dropout_of_p_zero_is_no_kernel():
    """p > 0: dropout (2.5 hb) + add (3 hb) forward; backward the gradient sum where the residual
    forks (3 hb) + dropout' (2.5 hb). p = 0: the adds alone, one kernel each."""
    on, off = Elementwise.of(False, False), Elementwise.of(False, False, dropout=False)
    for name in ("res_ln_fwd", "res_fwd", "res_bwd", "res_ln_bwd"):
        assert getattr(on, name) == (5.5, 2) and getattr(off, name) == (3, 1)
    # a fused stack's blocks do not depend on it
    assert Elementwise.of(True, False) == Elementwise.of(True, False, dropout=False)


def test_every_layer_backward_adds_the_two_gradients_of_each_residual_fork(tmp_path):
    """A layer's input and its mid-point each feed a norm and a residual add: two 3-hb sums."""
    ops = _ops(tmp_path, fused_kernels=False, dropout=False)
    sums = [o for o in ops if o.name in ("L0.res2.bwd", "L0.res1.bwd")]
    assert len(sums) == 2 and all(o.hbm_bytes == 3 * HB and o.count == 1 for o in sums)


def test_attention_dropout_follows_the_switch(tmp_path):
    on = _ops(tmp_path, attention="unfused", fused_kernels=False)
    off = _ops(tmp_path, attention="unfused", fused_kernels=False, dropout=False)
    assert any(o.name.endswith("attn.dropout.fwd") for o in on)
    assert not any("dropout" in o.name for o in off)


def test_apex_norm_beside_eager_layers(tmp_path):
    """norm_kernel fused: the eager layout (norm a kernel of its own, 2 hb / 5 hb in 1 / 2
    kernels) at the streaming bandwidth (no eager impl)."""
    ops = _ops(tmp_path, fused_kernels=False, norm_kernel="fused")
    norms = [o for o in ops if o.kind == "norm"]
    assert norms and not any(o.impl for o in norms)
    assert {(o.hbm_bytes, o.count) for o in norms if o.name.startswith("L") and o.name.endswith(".fwd")} == {(2 * HB, 1)}
    assert {(o.hbm_bytes, o.count) for o in norms if o.name.startswith("L") and o.name.endswith(".bwd")} == {(5 * HB, 2)}
    with pytest.raises(InputError, match="norm_kernel"):
        _ops(tmp_path, norm_kernel="fused")  # a fused stack has no separate norm kernel


@pytest.mark.parametrize("tp", [1, 2])
def test_separate_biases_read_and_write_every_linear_output(tmp_path, tp):
    """Forward: an in-place add over each GEMM's output (read + write): QKV and FC1 on this rank's
    columns, the projection and FC2 on h after the AllReduce. Backward: one read of each output
    gradient for the bias gradient."""
    ops = _ops(tmp_path, parallel={"tp": tp}, fused_kernels=False, linear_bias="separate")
    fwd = {o.name: o.hbm_bytes for o in ops if ".bias.fwd" in o.name and o.name.startswith("L0.")}
    bwd = {o.name: o.hbm_bytes for o in ops if ".bias.bwd" in o.name and o.name.startswith("L0.")}
    cols = {"qkv": 3 * H // tp, "proj": H, "fc1": FFN // tp, "fc2": H}
    assert fwd == {f"L0.{g}.bias.fwd": 2 * n * T * 2 for g, n in cols.items()}
    assert bwd == {f"L0.{g}.bias.bwd": 1 * n * T * 2 for g, n in cols.items()}
    assert not any(".bias." in o.name for o in _ops(tmp_path, fused_kernels=False))


def test_full_recompute_adds_the_forward_biases_again(tmp_path):
    ops = _ops(tmp_path, fused_kernels=False, linear_bias="separate", recompute="full")
    assert sum(o.name == "L0.qkv.bias.fwd" for o in ops) == 1
    assert sum(o.name == "L0.qkv.bias.fwd.recompute" for o in ops) == 1


@pytest.mark.parametrize("seq, softmax_passes", [(1024, (2, 3)), (2048, (4, 5))])
def test_unfused_attention_in_pytorch_ops(tmp_path, seq, softmax_passes):
    """Megatron-LM 2020's core: q and k scaled (two kernels), masked_fill_ on the scores forward
    and backward (2 passes each), PyTorch's softmax (register-resident rows up to 1,024
    elements: 2 passes forward, 3 backward; longer: 4 and 5), the context copied back."""
    scores = MB * HEADS * seq * seq * 2  # bf16 score matrix
    q = MB * seq * H * 2
    eager = {o.name: o for o in _ops(tmp_path, seq=seq, attention="unfused", fused_kernels=False)
             if o.name.startswith("L0.attn.")}
    assert eager["L0.attn.mask.fwd"].hbm_bytes == 2 * scores == eager["L0.attn.mask.bwd"].hbm_bytes
    assert eager["L0.attn.softmax.fwd"].hbm_bytes == softmax_passes[0] * scores
    assert eager["L0.attn.softmax.bwd"].hbm_bytes == softmax_passes[1] * scores
    assert eager["L0.attn.scale_qk.fwd"].hbm_bytes == 2 * (q + q) and eager["L0.attn.scale_qk.fwd"].count == 2
    assert eager["L0.attn.context_copy.fwd"].hbm_bytes == 2 * q
    fused = {o.name for o in _ops(tmp_path, seq=seq, attention="unfused") if o.name.startswith("L0.attn.")}
    assert not fused & {"L0.attn.mask.fwd", "L0.attn.scale_qk.fwd", "L0.attn.context_copy.fwd"}


def test_the_sources_stacks():
    """Megatron-LM 2020 ran eager layers with apex's norm and separate biases, dropout on;
    llm-foundry's MPT eager layers with every dropout at 0."""
    from simulator.e2e_validation.sources import SOURCES, cases

    m20 = cases([s for s in SOURCES if s.key == "megatron2020"])
    assert m20 and all(c.scenario["training"]["fused_kernels"] is False
                       and c.scenario["training"]["norm_kernel"] == "fused"
                       and c.scenario["training"]["linear_bias"] == "separate"
                       and c.scenario["training"].get("dropout", True) for c in m20)
    mpt = cases([s for s in SOURCES if s.key == "mpt_small"])
    assert mpt and all(c.scenario["training"]["dropout"] is False
                       and c.scenario["training"]["linear_bias"] == "epilogue" for c in mpt)


def test_epilogue_biases_cost_only_their_gradient(tmp_path):
    """addmm's cuBLASLt bias epilogue adds the bias inside the GEMM; the backward reduction stays."""
    ops = _ops(tmp_path, fused_kernels=False, linear_bias="epilogue")
    assert not any(".bias.fwd" in o.name for o in ops)
    bwd = {o.name: o.hbm_bytes for o in ops if ".bias.bwd" in o.name and o.name.startswith("L0.")}
    assert sum(bwd.values()) == (3 * H + H + FFN + H) * T * 2


def test_norm_fed_an_fp32_copy(tmp_path):
    """norm_input fp32 (InternLM's ``norm(x.float())`` into apex's MixedFusedRMSNorm): forward the
    cast (read 1 hb, write 2) and the norm (read 2, write 1): 6 hb in 2 kernels; backward the norm's
    two passes, each reading dy (1) and the fp32 x (2), the first writing the fp32 dx (2), then the
    cast back (read 2, write 1): 11 hb in 3 kernels. Every norm (both of each layer, the final one)."""
    ops = _ops(tmp_path, fused_kernels=False, norm_kernel="fused", dropout=False, norm_input="fp32")
    norms = {o.name: (o.hbm_bytes, o.count) for o in ops if o.kind == "norm"}
    fwd = ["L0.ln1.fwd", "L0.ln2.fwd", "L1.ln1.fwd", "final_norm.fwd"]
    bwd = ["L0.ln1.bwd", "L0.ln2.bwd", "L1.ln2.bwd", "final_norm.bwd"]
    assert {norms[n] for n in fwd} == {(6 * HB, 2)}
    assert {norms[n] for n in bwd} == {(11 * HB, 3)}
    with pytest.raises(InputError, match="norm_input"):
        _ops(tmp_path, fused_kernels=False, norm_input="fp32")  # PyTorch's own norm has no fp32-in, bf16-out form


def test_recomputed_norm_blocks(tmp_path):
    """recompute_norm_blocks (InternLM's dropout_selective_checkpoint): before the MLP norm's
    backward the residual add (3 hb) and that norm re-run, before the attention norm's backward
    that norm; each re-run ahead of the backward it feeds, and nothing else re-run."""
    base = dict(fused_kernels=False, norm_kernel="fused", dropout=False, norm_input="fp32")
    plain = _ops(tmp_path, **base)
    ops = _ops(tmp_path, **base, recompute_norm_blocks=True)
    names = [o.name for o in ops]
    rec = {o.name: (o.hbm_bytes, o.count) for o in ops if o.name.endswith(".recompute")}
    assert rec == {f"L{i}.{n}.recompute": v for i in range(2) for n, v in
                   (("res1.fwd", (3 * HB, 1)), ("ln2.fwd", (6 * HB, 2)), ("ln1.fwd", (6 * HB, 2)))}
    for i in range(2):
        assert names.index(f"L{i}.ln2.fwd.recompute") + 1 == names.index(f"L{i}.ln2.bwd")
        assert names.index(f"L{i}.ln1.fwd.recompute") + 1 == names.index(f"L{i}.ln1.bwd")
    extra = sum(o.hbm_bytes for o in ops) - sum(o.hbm_bytes for o in plain)
    assert extra == pytest.approx(2 * (3 + 6 + 6) * HB)
    for bad in (dict(base, recompute="full"), dict(base, fused_kernels=True, norm_kernel="auto", norm_input="act")):
        with pytest.raises(InputError, match="recompute_norm_blocks"):
            _ops(tmp_path, **bad, recompute_norm_blocks=True)


def test_internlm_rows_feed_fp32_norms_and_recompute_their_blocks():
    """InternLM fa7337b: every row's norms read an fp32 copy; the norm blocks are checkpointed
    unless the whole layer is (the FLOPS table's full-recompute row)."""
    from simulator.e2e_validation.sources import SOURCES, cases

    rows = cases([s for s in SOURCES if s.key == "internlm"])
    assert rows and all(c.scenario["training"]["norm_input"] == "fp32" for c in rows)
    assert {(c.scenario["training"]["recompute"], c.scenario["training"].get("recompute_norm_blocks", False))
            for c in rows} == {("none", True), ("full", False)}

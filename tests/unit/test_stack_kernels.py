"""The software-stack knobs of the schedule: the attention implementation
(``training.attention``: auto | flash1 | flash2 | flash3 | unfused) and unfused memory-bound kernels
(``training.fused_kernels: false``). Expected values are closed forms of the HBM traffic and
FLOPs written out here, independently of the builders."""

import pytest

from simulator.config.scenario import build_scenario
from simulator.costs.attention_shape import shape_factor
from simulator.costs.compute import compute_time
from simulator.config.hardware import load_profile
from simulator.schedule import attention
from simulator.schedule.attention import AttentionContext
from simulator.schedule.build import build_schedule
from simulator.schedule.ir import ComputeOp, ProgramBuilder
from simulator.schedule.transformer import Elementwise

B, A, S, D = 2, 16, 1024, 64  # micro-batch, heads on this rank, sequence, head dim
BYTES = 2


def _ctx(**kw) -> AttentionContext:
    base = dict(micro_batch_size=B, seq=S, seq_local=S, heads=A, kv_heads=A, head_dim=D, dtype_bytes=BYTES,
                causal=True, cp=1, cp_rank=0, ulysses=1, cp_comm="p2p", layer=0, mb_index=0, dtype="fp16")
    return AttentionContext(**{**base, **kw})


def _ops(fn, ctx) -> list[ComputeOp]:
    pb = ProgramBuilder()
    pb.add(ComputeOp(name="qkv", kind="gemm"))
    fn(pb, ctx, 0)
    return pb.ops[1:]


def test_unfused_attention_moves_the_score_matrix_through_hbm():
    """Forward: write scores (1), softmax read+write (2), dropout read+write (2) + 1-byte mask,
    ·V reads P (1): 6 score-matrix passes of 2 bytes plus the mask (arXiv:2205.14135 Alg. 0 with
    dropout). The rest is Q, K, V and the output, 4·b·s·a·d elements."""
    ops = _ops(attention.unfused_forward, _ctx())
    score = B * A * S * S
    qkvo = 4 * B * S * A * D * BYTES
    assert sum(o.hbm_bytes for o in ops) == pytest.approx(score * (6 * BYTES + 1) + qkvo)
    # both GEMMs cover the whole s×s block: 2·(2·b·a·s²·d), no causal halving
    gemm = [o for o in ops if o.kind == "gemm"]
    assert len(gemm) == 2 and sum(o.flops for o in gemm) == pytest.approx(4 * B * A * S * S * D)
    assert not any(o.kind == "attention" for o in ops)


def test_alibi_on_materialised_scores_copies_the_bias_in_and_reads_it_back():
    """Megatron-DeepSpeed's ALiBi (BLOOM): torch.baddbmm(alibi, q, k^T, beta=1) copies the
    [b·a, 1, s] bias broadcast into the score buffer (one more write of the scores) and the GEMM
    reads it back as C (one more read): 2 more score passes in forward, one more kernel, the
    same FLOPs, and nothing in backward (the bias is a constant)."""
    plain, alibi = _ops(attention.unfused_forward, _ctx()), _ops(attention.unfused_forward, _ctx(alibi=True))
    score = B * A * S * S
    bias = B * A * S * BYTES
    assert sum(o.hbm_bytes for o in alibi) - sum(o.hbm_bytes for o in plain) == pytest.approx(2 * score * BYTES + bias)
    assert len(alibi) == len(plain) + 1 and sum(o.flops for o in alibi) == sum(o.flops for o in plain)
    assert sum(o.hbm_bytes for o in _ops(attention.unfused_backward, _ctx(alibi=True))) == \
        sum(o.hbm_bytes for o in _ops(attention.unfused_backward, _ctx()))
    # a fused kernel adds the bias in registers: FlashAttention's alibi_slopes move no scores
    assert _ops(attention.local_forward, _ctx(alibi=True)) == _ops(attention.local_forward, _ctx())


def test_unfused_attention_backward_is_four_gemms_and_two_elementwise_passes():
    ops = _ops(attention.unfused_backward, _ctx())
    gemm = [o for o in ops if o.kind == "gemm"]
    assert sum(o.flops for o in gemm) == pytest.approx(8 * B * A * S * S * D)  # dV, dP, dQ, dK
    score = B * A * S * S
    # P and dP (2 + 2 passes), dropout' (2 + mask), softmax' (3)
    elementwise = sum(o.hbm_bytes for o in ops if o.kind == "elementwise")
    assert elementwise == pytest.approx(score * (5 * BYTES + 1))


def test_unfused_attention_is_slower_than_flash_on_a100():
    """At GPT-2 shapes (d = 64) the materialised scores make attention HBM-bound."""
    gpu = load_profile("dgx-a100").gpu
    ctx = _ctx()
    t_flash = sum(compute_time(o, gpu) for o in _ops(attention.local_forward, ctx))
    unfused = _ops(attention.unfused_forward, ctx)
    t_unfused = sum(compute_time(o, gpu) for o in unfused)
    assert t_unfused > 1.5 * t_flash
    # and the memory bound is what decides: bytes / achieved bandwidth is a lower bound
    hbm = sum(o.hbm_bytes for o in unfused) / (gpu.hbm_Bps * gpu.hbm_efficiency)
    assert t_unfused >= hbm


@pytest.mark.parametrize("gated", [False, True])
def test_unfused_elementwise_moves_more_bytes_in_more_kernels(gated):
    fused, unfused = Elementwise.of(True, gated), Elementwise.of(False, gated)
    # eager: the residual block plus PyTorch's own norm kernel, a block of its own
    for name, norm in (("res_ln_fwd", "ln_fwd"), ("res_fwd", None), ("res_ln_bwd", "ln_bwd")):
        (bf, kf), (bu, ku) = getattr(fused, name), getattr(unfused, name)
        nb, nk = getattr(unfused, norm) if norm else (0, 0)
        assert bu + nb > bf and ku + nk > kf and kf == 1
    assert fused.ln_fwd == (0, 0) and not fused.norm_impl and unfused.norm_impl == "eager"
    # dropout (read, write, 1-byte mask per 2-byte element) + add (2 reads, 1 write); norm (1, 1)
    assert unfused.res_ln_fwd[0] == pytest.approx(2 + 0.5 + 3) and unfused.ln_fwd == (2, 1)
    # LayerNorm backward: grad-input kernel (x, dy in; dx out) + gamma/beta kernel (x, dy again)
    assert unfused.ln_bwd == (3 + 2, 2) and unfused.norm_bwd == unfused.ln_bwd and fused.norm_bwd == (3, 1)


PROFILE = """name: test-gpu
gpu: {name: T, arch: ampere, sms: 108, bf16_TFLOPS: 312, fp16_TFLOPS: 312, fp32_TFLOPS: 19.5,
      hbm_GiB: 80, hbm_GBps: 2039, gemm_efficiency: [{flops: 1.0e12, efficiency: 0.7}]}
node: {gpus: 8, scale_up: {kind: nvswitch, link_GBps: 300, latency_us: 1.0},
       pcie: {gen: 4, GBps: 31}, nics: {count: 8, Gbps: 200, latency_us: 2.0}}
"""


def _schedule(tmp_path, position_embedding="rope", **training):
    (tmp_path / "p.yaml").write_text(PROFILE)
    data = {"name": "s", "hardware": "p.yaml", "nodes": 1,
            "model": {"layers": 2, "hidden": 256, "heads": 8, "vocab": 1000, "mlp": "gelu", "seq_len": 512,
                      "position_embedding": position_embedding},
            "training": {"micro_batch": 1, "global_batch": 8, **training}, "parallel": {"tp": 2}}
    return build_schedule(build_scenario(data, source="s.yaml", base_dir=tmp_path))


def _compute(sched):
    return [op for prog in sched.programs.values() for op in prog if isinstance(op, ComputeOp)]


def test_scenario_knobs_reach_the_schedule(tmp_path):
    modern = _compute(_schedule(tmp_path))
    legacy = _compute(_schedule(tmp_path, attention="unfused"))
    eager = _compute(_schedule(tmp_path, fused_kernels=False))
    assert any(o.kind == "attention" for o in modern)
    assert not any(o.kind == "attention" for o in legacy)
    assert any(".attn.softmax." in o.name for o in legacy)
    # ALiBi: one bias copy per layer forward (2 layers x 2 micro-batches) on materialised scores,
    # none in a fused kernel
    alibi = _compute(_schedule(tmp_path, "alibi", attention="unfused"))
    assert sum(".attn.alibi_bias." in o.name for o in alibi) == 2 * 2 and not any(".alibi_bias." in o.name for o in legacy)
    assert not any(".alibi_bias." in o.name for o in _compute(_schedule(tmp_path, "alibi")))
    kernels = lambda ops: sum(o.count for o in ops)  # noqa: E731
    assert kernels(eager) > kernels(modern)
    mem = lambda ops: sum(o.hbm_bytes for o in ops if o.kind in ("norm", "elementwise"))  # noqa: E731
    assert mem(eager) > mem(modern)


def test_legacy_flash_attention_boolean_maps_to_the_attention_knob(tmp_path):
    from simulator.config.workload import Training
    from simulator.errors import InputError

    assert Training(micro_batch=1, global_batch=8, flash_attention=False).attention == "unfused"
    assert Training(micro_batch=1, global_batch=8, flash_attention=True).attention == "auto"
    assert not Training(micro_batch=1, global_batch=8, attention="unfused").flash_attention
    legacy = _compute(_schedule(tmp_path, flash_attention=False))
    assert [o.name for o in legacy] == [o.name for o in _compute(_schedule(tmp_path, attention="unfused"))]
    with pytest.raises(InputError):
        _schedule(tmp_path, flash_attention=True, attention="unfused")


def _attention_ops(tmp_path, profile: str, parallel: dict | None = None, **training) -> list[ComputeOp]:
    data = {"name": "s", "hardware": profile, "nodes": 1,
            "model": {"layers": 2, "hidden": 512, "heads": 8, "vocab": 1000, "mlp": "gelu", "seq_len": 1024},
            "training": {"micro_batch": 1, "global_batch": 8, **training}, "parallel": parallel or {"tp": 2}}
    sched = build_schedule(build_scenario(data, source="s.yaml", base_dir=tmp_path))
    return [o for o in _compute(sched) if o.kind == "attention"]


@pytest.mark.parametrize("profile, expected", [("dgx-h100", "flash3"), ("dgx-a100", "flash2"),
                                               ("dgx-b200", "flash3"), ("mi300x", "flash2")])
def test_auto_attention_is_what_a_te_stack_runs_on_the_gpu(tmp_path, profile, expected):
    """auto = cuDNN / FA3-class kernels on Hopper and Blackwell, FA2-class before."""
    ops = _attention_ops(tmp_path, profile)
    assert ops and {o.attention_kernel for o in ops} == {expected}


@pytest.mark.parametrize("parallel", [{"tp": 2}, {"cp": 2, "cp_comm": "p2p"}, {"cp": 2, "cp_comm": "ring"},
                                      {"cp": 2, "cp_comm": "all_gather"}, {"ulysses": 2}])
def test_the_chosen_kernel_reaches_every_attention_pattern(tmp_path, parallel):
    ops = _attention_ops(tmp_path, "dgx-h100", parallel, attention="flash2")
    assert ops and {o.attention_kernel for o in ops} == {"flash2"}


def test_flash2_on_h100_costs_the_ratio_of_the_profile_efficiencies(tmp_path):
    """Same FLOPs, different kernel: compute-bound attention time scales with 1/efficiency; the
    fwd and bwd ratios are those of the profile's pairs (FA3 abstract: FA2 ~35% of H100 peak),
    times the ratio of the two generations' shape factors at the kernel's shape (the backward's
    with each generation's per-CTA cost on this GPU)."""
    gpu = load_profile("dgx-h100").gpu
    fa2 = _attention_ops(tmp_path, "dgx-h100", attention="flash2")
    fa3 = _attention_ops(tmp_path, "dgx-h100", attention="flash3")
    gap = gpu.kernel_gap_us * 1e-6
    eff = gpu.attention_efficiency
    for a, b in zip(fa2, fa3):
        assert a.flops == b.flops and a.name == b.name
        bwd = a.tag.phase == "bwd"
        ratio = (eff["flash3"].bwd / eff["flash2"].bwd) if bwd else (eff["flash3"].fwd / eff["flash2"].fwd)
        s_q, s_k, d, causal = a.attention_shape
        c3, c2 = ((gpu.attention_cta_overhead("flash3", True), gpu.attention_cta_overhead("flash2", True)) if bwd
                  else (None, None))  # a backward's per-CTA cost on Hopper (costs/attention_shape.py)
        ratio *= shape_factor(s_q, s_k, causal, d, "flash3", c3) / shape_factor(s_q, s_k, causal, d, "flash2", c2)
        assert compute_time(a, gpu) - gap == pytest.approx(ratio * (compute_time(b, gpu) - gap))
    assert eff["flash2"].fwd == pytest.approx(0.35)  # "only 35% utilization", arXiv:2407.08608


def test_flash1_prices_the_fa1_generation_and_only_where_a_profile_has_it(tmp_path):
    """flash1 (FlashAttention-1: flash-attn 1.x and its Triton ports) on A100 runs at FA1's
    "up to 124 TFLOP/s" (0.40 of 312) forward; the backward keeps FA2's bwd/fwd ratio. Compared
    with flash2 on the same ops, attention time scales by the efficiency ratio. B200 has no
    FA1 entry: asking for it is an input error naming the field."""
    from simulator.errors import InputError

    gpu = load_profile("dgx-a100").gpu
    eff = gpu.attention_efficiency
    assert eff["flash1"].fwd == pytest.approx(124 / 312, abs=0.005)
    # FA1's backward was assumed at FA2's bwd/fwd ratio when that was 0.5/0.6; FA2's own A100 sweep now
    # gives 0.579/0.686 = 0.844 (hardware_profiles/dgx-a100.yaml), 1.3% from the assumed 0.833
    assert eff["flash1"].bwd / eff["flash1"].fwd == pytest.approx(eff["flash2"].bwd / eff["flash2"].fwd, rel=0.02)
    fa1 = _attention_ops(tmp_path, "dgx-a100", attention="flash1")
    fa2 = _attention_ops(tmp_path, "dgx-a100", attention="flash2")
    gap = gpu.kernel_gap_us * 1e-6
    assert fa1 and {o.attention_kernel for o in fa1} == {"flash1"}
    for a, b in zip(fa1, fa2):
        bwd = a.tag.phase == "bwd"
        ratio = (eff["flash2"].bwd / eff["flash1"].bwd) if bwd else (eff["flash2"].fwd / eff["flash1"].fwd)
        assert compute_time(a, gpu) - gap == pytest.approx(ratio * (compute_time(b, gpu) - gap))
    with pytest.raises(InputError) as err:
        _attention_ops(tmp_path, "dgx-b200", attention="flash1")
    assert "training.attention" in str(err.value)


def test_flash3_on_an_ampere_profile_is_an_input_error(tmp_path):
    from simulator.errors import InputError

    with pytest.raises(InputError) as err:
        _attention_ops(tmp_path, "dgx-a100", attention="flash3")
    assert "training.attention" in str(err.value)


def test_nemo_launcher_rows_price_attention_at_flash_attention_2():
    """NeMo-Framework-Launcher 24.01-24.07 exports ``NVTE_FUSED_ATTN: 0``, so TransformerEngine
    runs flash-attn 2 (``NEMO_LAUNCHER_2024``). The 16K Llama2-7B row of NeMo's long-context page
    (TP 2, no CP) then prices its causal forward kernel at the profile's flash2 figure: credited
    FLOPs 4·s(s+1)/2·(a/t)·d (the lower triangle with its diagonal) at 0.35 of the bf16 peak (989.4 TFLOP/s) × FA2's shape factor for a
    16K causal kernel of d = 128 (1 at that reference), plus the GPU's gap between kernels; the B200 rows
    of the same page (NeMo 25.04, no launcher) keep ``auto``."""
    from simulator.e2e_validation import sources

    nemo = [c for c in sources.cases([s for s in sources.SOURCES if s.key == "nemo_cp"])]
    row = next(c for c in nemo if c.scenario["hardware"] == "dgx-h100" and c.scenario["model"]["seq_len"] == 16384)
    assert {c.scenario["training"]["attention"] for c in nemo if c.scenario["hardware"] == "dgx-b200"} == {"auto"}
    scn = build_scenario(row.scenario, source="nemo.yaml")
    fwd = next(op for prog in build_schedule(scn).programs.values() for op in prog
               if isinstance(op, ComputeOp) and op.kind == "attention" and op.tag.phase == "fwd")
    s, heads, d = 16384, 32 // 2, 128
    assert fwd.attention_kernel == "flash2" and fwd.flops == pytest.approx(4 * s * (s + 1) / 2 * heads * d)
    gpu = load_profile("dgx-h100").gpu
    expected = fwd.flops / (0.35 * 989.4e12 * shape_factor(s, s, True, d, "flash2")) + 1.2e-6
    assert compute_time(fwd, gpu) == pytest.approx(expected, rel=1e-9)
    assert shape_factor(s, s, True, d, "flash2") == pytest.approx(1.0)

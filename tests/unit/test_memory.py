"""Memory per GPU against arXiv:2205.05198 and ZeRO (arXiv:1910.02054) closed forms."""

import pytest

from simulator.config.scenario import build_scenario
from simulator.schedule.flops import param_count
from simulator.schedule.memory import (estimate_memory, layer_activation_bytes, memory_per_gpu,
                                       model_state_bytes_per_param)
from simulator.units import GiB

PROFILE = """name: test-gpu
gpu: {name: T, arch: hopper, sms: 132, bf16_TFLOPS: 989, fp16_TFLOPS: 989, fp8_TFLOPS: 1979, fp32_TFLOPS: 67,
      hbm_GiB: 80, hbm_GBps: 3350, gemm_efficiency: [{flops: 1.0e12, efficiency: 0.7}]}
node: {gpus: 8, scale_up: {kind: nvswitch, link_GBps: 450, latency_us: 1.0},
       pcie: {gen: 5, GBps: 64}, nics: {count: 8, Gbps: 400, latency_us: 2.0}}
"""


@pytest.fixture
def scn(tmp_path):
    (tmp_path / "p.yaml").write_text(PROFILE)

    def make(model, training, parallel=None, nodes=1):
        data = {"name": "m", "hardware": "p.yaml", "nodes": nodes, "model": model, "training": training,
                "parallel": parallel or {}}
        return build_scenario(data, source="m.yaml", base_dir=tmp_path)
    return make


GPT = {"layers": 4, "hidden": 1024, "heads": 16, "vocab": 1000, "seq_len": 2048, "mlp": "gelu"}


def test_34sbh_plus_5as2b_without_parallelism(scn):
    s = scn(GPT, {"micro_batch": 2, "global_batch": 16, "flash_attention": False})
    S, b, h, a = 2048, 2, 1024, 16
    assert layer_activation_bytes(s) == S * b * h * 34 + 5 * a * S * S * b


@pytest.mark.parametrize("sp,recompute,expected", [
    (True, "none", lambda S, b, h, a, t: S * b * h * (34 / t + 5 * a * S / (h * t))),
    (False, "none", lambda S, b, h, a, t: S * b * h * (10 + 24 / t + 5 * a * S / (h * t))),
    (True, "selective", lambda S, b, h, a, t: S * b * h * 34 / t),
    (True, "full", lambda S, b, h, a, t: 2 * S * b * h / t),
    (False, "full", lambda S, b, h, a, t: 2 * S * b * h),
])
def test_tensor_parallel_activation_table(scn, sp, recompute, expected):
    """Table 2 of arXiv:2205.05198 (t = 4)."""
    s = scn(GPT, {"micro_batch": 1, "global_batch": 8, "recompute": recompute, "flash_attention": False},
            {"tp": 4, "sequence_parallel": sp})
    assert layer_activation_bytes(s) == pytest.approx(expected(2048, 1, 1024, 16, 4))


def test_flash_attention_drops_score_term_and_cp_divides_s(scn):
    base = scn(GPT, {"micro_batch": 1, "global_batch": 8})
    assert layer_activation_bytes(base) == 34 * 2048 * 1024
    cp = scn(GPT, {"micro_batch": 1, "global_batch": 4}, {"cp": 2})
    assert layer_activation_bytes(cp) == 34 * 1024 * 1024


@pytest.mark.parametrize("zero,n,expected", [(0, 8, 16), (1, 8, 4 + 12 / 8), (2, 8, 2 + 14 / 8), (3, 8, 16 / 8),
                                             (1, 64, 4 + 12 / 64)])
def test_zero_bytes_per_param(zero, n, expected):
    assert sum(model_state_bytes_per_param(zero, n)) == pytest.approx(expected)


@pytest.mark.parametrize("zero,grads_per_param", [(1, 4), (2, 4 / 16)])
def test_zero2_shards_the_gradient_over_dp(scn, zero, grads_per_param):
    """A 16-GPU data-parallel replica of every parameter P (tp = pp = 1): fp32 gradients (Megatron's
    main_grad, Llama 3's FP32 reduce-scatter) take 4·P bytes on every rank with the distributed
    optimizer (zero 1, the whole buffer accumulates over the micro-batches) and 4·P/16 once they are
    sharded (zero 2: each rank keeps only its partition, DeepSpeed's
    ``averaged_gradients``/``partition_gradients`` in deepspeed/runtime/zero/stage_1_and_2.py);
    the bf16 weights stay whole (2·P) and the optimizer states are sharded in both (12·P/16)."""
    s = scn(LLAMA, {"micro_batch": 1, "global_batch": 32}, {"zero": zero, "grad_reduce_dtype": "fp32"}, nodes=2)
    P = param_count(s.model)
    m = estimate_memory(s, 0)
    assert s.dp == 16
    assert (m.params, m.grads, m.optimizer) == pytest.approx((2 * P, grads_per_param * P, 12 * P / 16), rel=1e-12)


def test_pipeline_in_flight_first_stage(scn):
    """1F1B keeps pp micro-batches on stage 0; interleaving multiplies by 1 + (pp-1)/(pp·vp)."""
    model = dict(GPT, layers=8)
    plain = scn(model, {"micro_batch": 1, "global_batch": 16}, {"pp": 4})
    inter = scn(model, {"micro_batch": 1, "global_batch": 16}, {"pp": 4, "pp_schedule": "interleaved", "vp": 2})
    per_layer = layer_activation_bytes(plain)
    emb = 2048 * 1024 * 4  # embedding dropout masks of 4 in-flight micro-batches
    assert estimate_memory(plain, 0).activations == pytest.approx(2 * per_layer * 4 + emb)
    assert estimate_memory(inter, 0).activations == pytest.approx(2 * per_layer * 4 * (1 + 3 / 8) + emb)
    assert estimate_memory(plain, 3).activations < estimate_memory(plain, 0).activations


def test_gpt3_175b_megatron_plan_fits_like_the_paper(scn):
    """arXiv:2205.05198 Fig. 7-style check: GPT-3 175B, TP8 PP8 SP + selective recompute, DP
    distributed optimizer. Weights+grads+Adam with ZeRO-1 over dp=16: 16 B/param → 4 + 12/16;
    stage 0 holds 12 layers (+ embedding) / 8 of the parameters."""
    s = scn({"preset": "gpt3-175b"}, {"micro_batch": 1, "global_batch": 1536, "recompute": "selective"},
            {"tp": 8, "sequence_parallel": True, "pp": 8, "zero": 1}, nodes=128)
    mem = estimate_memory(s, 0)
    n_local = param_count(s.model) / 64  # roughly even over 64 model-parallel ranks
    assert (mem.params + mem.grads + mem.optimizer) / n_local == pytest.approx(4 + 12 / 16, rel=0.03)
    # activations: 34·s·b·h/t per layer × 96 layers (pp in flight × L/pp) ≈ 96·34·2048·12288/8
    assert mem.activations / GiB == pytest.approx(96 * 34 * 2048 * 12288 / 8 / GiB, rel=0.02)
    assert mem.fits and memory_per_gpu(s).total >= mem.total * 0.9


# --- allocated / reserved / device total, and the terms beyond model states and activations -----

LLAMA = {"layers": 4, "hidden": 1024, "heads": 16, "kv_heads": 4, "ffn_hidden": 2816, "vocab": 32000,
         "seq_len": 2048, "mlp": "swiglu"}


def test_reserved_is_allocated_plus_fragmentation_of_the_dynamic_bytes(scn):
    s = scn(LLAMA, {"micro_batch": 2, "global_batch": 16, "allocator_fragmentation": 0.25})
    m = estimate_memory(s, 0)
    dynamic = m.activations + m.loss_buffers + m.recompute + m.comm_buffers
    assert m.allocated == pytest.approx(m.params + m.grads + m.optimizer + dynamic + m.workspaces + m.dummy_wgrads)
    assert m.reserved - m.allocated == pytest.approx(0.25 * dynamic)
    assert m.total == pytest.approx(m.reserved + m.cuda_context + m.nccl_buffers)
    assert m.cuda_context == 0.5 * GiB  # the profile default
    g = m.gib()
    assert {"params", "grads", "optimizer", "activations", "allocated", "reserved", "non_pytorch",
            "total"} <= set(g)


def test_fits_is_judged_on_reserved_plus_non_pytorch(scn, tmp_path):
    """A plan whose allocated peak fits but whose device total does not is reported as not fitting."""
    s = scn(LLAMA, {"micro_batch": 8, "global_batch": 64})
    m = estimate_memory(s, 0)
    import dataclasses
    between = dataclasses.replace(m, hbm_bytes=(m.allocated + m.total) / 2)
    assert between.allocated < between.hbm_bytes < between.total and not between.fits
    assert dataclasses.replace(m, hbm_bytes=m.total).fits


@pytest.mark.parametrize("impl,per_logit", [("vocab_parallel", 6), ("torch", 16)])
def test_loss_buffers_per_logit(scn, impl, per_logit):
    """Megatron's in-place vocab-parallel CE: bf16 logits + fp32 copy = 6 B; F.cross_entropy on
    fp32 logits sharded over TP 2 (loss_parallel): 16 B; both per token and vocabulary column of
    the rank (V/t)."""
    s = scn(LLAMA, {"micro_batch": 2, "global_batch": 16, "cross_entropy": impl}, {"tp": 2})
    m = estimate_memory(s, 0)
    assert m.loss_buffers == 2 * 2048 * 32000 / 2 * per_logit


def test_torch_loss_parallel_with_tp(scn):
    """F.cross_entropy on vocabulary-sharded DTensor logits (loss_parallel, TP > 1): the decomposed
    log-softmax's backward holds output, incoming gradient, product and result: 16 B per logit."""
    s = scn(LLAMA, {"micro_batch": 2, "global_batch": 16, "cross_entropy": "torch"}, {"tp": 2})
    assert estimate_memory(s, 0).loss_buffers == 2 * 2048 * 32000 / 2 * 16
    one = scn(LLAMA, {"micro_batch": 2, "global_batch": 16, "cross_entropy": "torch"})
    assert estimate_memory(one, 0).loss_buffers == 2 * 2048 * 32000 * 12


def test_loss_buffers_only_on_the_last_stage(scn):
    s = scn(dict(LLAMA, layers=8), {"micro_batch": 1, "global_batch": 16}, {"pp": 2})
    assert estimate_memory(s, 0).loss_buffers == 0
    assert estimate_memory(s, 1).loss_buffers == 2048 * 32000 * 6


def test_megatron_fp32_main_grads_are_4_bytes_per_parameter(scn):
    """Megatron bf16 (grad_reduce_dtype fp32): 2 B weights + 4 B main_grad + 12/N B optimizer,
    the "bf16 param, fp32 grads" row of Megatron's distributed-optimizer table (6 + 12/d)."""
    s = scn(LLAMA, {"micro_batch": 1, "global_batch": 16}, {"zero": 1, "grad_reduce_dtype": "fp32"}, nodes=1)
    m = estimate_memory(s, 0)
    n = m.params / 2
    assert m.grads == 4 * n and m.optimizer == pytest.approx(12 * n / 8)
    assert (m.params + m.grads + m.optimizer) / n == pytest.approx(6 + 12 / 8)


def test_fsdp2_keeps_fp32_shards(scn):
    """FSDP2: fp32 sharded parameter (4 B), fp32 sharded gradient (4 B), Adam (8 B), over N."""
    assert model_state_bytes_per_param(3, 8, 4, "fsdp2") == (0.5, 0.5, 1.0)
    assert sum(model_state_bytes_per_param(3, 8, 2, "deepspeed")) == pytest.approx(2)


def test_full_recompute_working_set_is_one_layer_without_recompute(scn):
    model = dict(LLAMA, vocab=8)  # a tiny vocabulary: the layer's backward is the peak
    s = scn(model, {"micro_batch": 2, "global_batch": 16, "recompute": "full"})
    m = estimate_memory(s, 0)
    assert m.loss_buffers == 0
    assert m.recompute == pytest.approx(layer_activation_bytes(s, "none"))
    # with the default vocabulary the loss is larger and sets the peak instead
    big = estimate_memory(scn(LLAMA, {"micro_batch": 2, "global_batch": 16, "recompute": "full"}), 0)
    assert big.recompute == 0 and big.loss_buffers == 2 * 2048 * 32000 * 6


def test_fsdp2_gathered_working_set(scn):
    """At the loss: the root group (embedding + final norm + LM head) and one layer gathered in
    bf16; in a layer's backward: the root, two layers, and the unsharded gradient (bf16, plus an
    fp32 copy for an fp32 reduction)."""
    from simulator.schedule.memory import zero3_working_bytes
    from simulator.schedule.shapes import embedding_unit, head_unit, layer_unit

    s = scn(LLAMA, {"micro_batch": 1, "global_batch": 8},
            {"zero": 3, "zero3_impl": "fsdp2", "grad_reduce_dtype": "fp32"})
    root = embedding_unit(s).numel + head_unit(s).numel
    layer = layer_unit(s, 0).numel
    h, f, kv = 1024, 2816, 4 * 64
    assert layer == 2 * h + h * h * 2 + 2 * h * kv + 3 * h * f
    assert root == 32000 * h * 2 + h
    at_loss, in_bwd = zero3_working_bytes(s, 0)
    assert at_loss == 2 * (root + layer)
    assert in_bwd == 2 * (root + 2 * layer) + (2 + 4) * layer


def test_deepspeed_zero3_window_and_reduce_bucket(scn):
    from simulator.schedule.memory import zero3_working_bytes
    from simulator.schedule.shapes import layer_unit

    s = scn(LLAMA, {"micro_batch": 1, "global_batch": 8},
            {"zero": 3, "zero3_prefetch_bucket_elements": 1_000_000, "zero3_reduce_bucket_elements": 3_000_000})
    window = (layer_unit(s, 0).numel + 1_000_000) * 2
    assert zero3_working_bytes(s, 0) == (window + 6_000_000, window + 6_000_000)


def test_pipeline_buffers_workspaces_and_nccl(scn):
    from simulator.schedule.memory import NCCL_CHANNELS, communicators, nccl_buffer_bytes
    from simulator.units import MiB

    s = scn(dict(LLAMA, layers=8), {"micro_batch": 2, "global_batch": 32},
            {"pp": 2, "tp": 2, "sequence_parallel": True})  # 8 GPUs: tp 2, pp 2, dp 2
    m = estimate_memory(s, 0)
    assert m.comm_buffers == 2 * (2 * 2048 // 2) * 1024 * 2  # a received activation + a sent gradient, SP-split
    # Hopper: PyTorch's :4096:8 cuBLAS workspace on the forward thread and on autograd's device
    # thread, + TE's cuBLASLt workspace
    assert m.workspaces == 2 * 32 * MiB + 32 * MiB
    assert communicators(s) == 3  # TP, DP, PP
    per_channel = 4 * MiB + 512 * 1024 + 4_915_200
    assert nccl_buffer_bytes(s) == 3 * NCCL_CHANNELS * per_channel
    single = scn(LLAMA, {"micro_batch": 1, "global_batch": 8}, {"tp": 4, "cp": 2})
    assert estimate_memory(single, 0).comm_buffers == 0 and communicators(single) == 3  # TP, CP, DP x CP


def test_bundled_scenarios_fit_with_their_numbers():
    """Every bundled scenario fits in its GPU's HBM by the device total (reserved + CUDA context
    + NCCL); the totals sit between 15 and 70 GiB of the 80 GiB parts (see the goldens)."""
    from pathlib import Path

    from simulator.config.scenario import load_scenario

    root = Path(__file__).resolve().parents[2] / "scenarios"
    for path in sorted(root.glob("*.yaml")):
        mem = memory_per_gpu(load_scenario(path))
        assert mem.allocated < mem.reserved < mem.total, path.name
        assert mem.fits and 10 * GiB < mem.total < mem.hbm_bytes, (path.name, mem.gib())


def test_fsdp2_under_a_pipeline_keeps_the_stage_gathered_and_accumulates_unsharded_grads(scn):
    """torch.distributed.pipelining skips FSDP2's reshard and gradient sync on every backward but
    the last: the stage's parameters stay gathered (2 B) and its gradients accumulate unsharded
    in the reduce dtype (4 B for fp32), whatever the moment of the peak."""
    from simulator.schedule.memory import zero3_working_bytes
    from simulator.schedule.shapes import stage_params

    s = scn(dict(LLAMA, layers=8), {"micro_batch": 1, "global_batch": 16, "recompute": "full"},
            {"pp": 2, "zero": 3, "zero3_impl": "fsdp2", "grad_reduce_dtype": "fp32"})
    for stage in (0, 1):
        n = stage_params(s, stage).total
        assert zero3_working_bytes(s, stage) == (6 * n, 6 * n)
    # torch.distributed.pipelining: stage 0 of 2 keeps one gradient receive buffer per micro-batch
    assert estimate_memory(s, 0).comm_buffers == pytest.approx(6 * stage_params(s, 0).total
                                                               + s.n_micro * 2048 * 1024 * 2)


def test_torch_pipelining_keeps_a_receive_buffer_per_micro_batch(scn):
    """torch.distributed.pipelining allocates a receive buffer per micro-batch for the activation
    (every stage but the first) and for the gradient (every stage but the last) and keeps them;
    Megatron's p2p keeps one of each. 8 GPUs: pp 4 x dp 2, 32 / (1 x 2) = 16 micro-batches of
    2048 tokens x 1024 hidden x 2 B."""
    from simulator.schedule.memory import pipeline_buffer_bytes

    fsdp = scn(dict(LLAMA, layers=8), {"micro_batch": 1, "global_batch": 32, "recompute": "full"},
               {"pp": 4, "zero": 3, "zero3_impl": "fsdp2"})
    msg = 2048 * 1024 * 2
    assert fsdp.n_micro == 16
    assert [pipeline_buffer_bytes(fsdp, i) for i in range(4)] == [16 * msg, 32 * msg, 32 * msg, 16 * msg]
    megatron = scn(dict(LLAMA, layers=8), {"micro_batch": 1, "global_batch": 32}, {"pp": 4, "zero": 1})
    assert {pipeline_buffer_bytes(megatron, i) for i in range(4)} == {2 * msg}


def test_torch_pipelining_keeps_every_micro_batchs_logits_on_the_last_stage(scn):
    """``forward_one_chunk`` appends each output to ``output_chunks`` until the step ends: the last
    stage keeps n_micro fp32 logits (torchtitan's ``.float()``) of 2048 tokens x 32000 / tp 2."""
    s = scn(dict(LLAMA, layers=8), {"micro_batch": 1, "global_batch": 16, "recompute": "full",
                                    "cross_entropy": "torch"},
            {"pp": 2, "tp": 2, "zero": 3, "zero3_impl": "fsdp2"})  # dp 2: 8 micro-batches
    assert s.n_micro == 8
    last, first = estimate_memory(s, 1), estimate_memory(s, 0)
    assert last.pipeline_outputs == 8 * 2048 * 32000 / 2 * 4 and first.pipeline_outputs == 0
    plain = scn(dict(LLAMA, layers=8), {"micro_batch": 1, "global_batch": 16}, {"pp": 2})
    assert estimate_memory(plain, 1).pipeline_outputs == 0


def test_torch_loss_strands_the_freed_bf16_logits_in_reserved(scn):
    """F.cross_entropy on logits cast from bf16: the 2-byte block freed by the cast cannot serve
    the 4-byte requests after it, so it stays reserved at the loss's peak: reserved − allocated =
    factor x dynamic + tokens x V x 2 B; the allocated peak is unchanged; Megatron's in-place
    vocab-parallel loss keeps its bf16 logits alive and strands nothing."""
    s = scn(LLAMA, {"micro_batch": 2, "global_batch": 16, "cross_entropy": "torch",
                    "allocator_fragmentation": 0.25})
    m = estimate_memory(s, 0)
    assert m.stranded == 2 * 2048 * 32000 * 2
    assert m.reserved - m.allocated == pytest.approx(0.25 * m.dynamic + 2 * 2048 * 32000 * 2)
    assert m.allocated == pytest.approx(m.model_states + m.dynamic + m.workspaces + m.dummy_wgrads)
    mega = scn(LLAMA, {"micro_batch": 2, "global_batch": 16})
    assert estimate_memory(mega, 0).stranded == 0


@pytest.mark.parametrize("mlp,b,extra", [("swiglu", 2, 2 * 2816 + 2 * 1024), ("swiglu", 1, 2 * 2816),
                                         ("gelu", 2, 2 * 1024)])
def test_legacy_model_saves_the_silu_output_and_the_flash_output_copy(scn, mlp, b, extra):
    """Megatron-LM's legacy model: the unfused SwiGLU saves F.silu's output (2 B x s x b x f) and,
    for b > 1, flash-attn's output stays beside its s-b-h copy (2 B x s x b x h); over TP 2."""
    from simulator.schedule.memory import layer_activation_bytes

    model = dict(LLAMA, mlp=mlp)
    base = scn(model, {"micro_batch": b, "global_batch": 8 * b}, {"tp": 2})
    legacy = scn(model, {"micro_batch": b, "global_batch": 8 * b, "legacy_model": True}, {"tp": 2})
    diff = layer_activation_bytes(legacy) - layer_activation_bytes(base)
    assert diff == 2048 * b * extra / 2
    full = scn(model, {"micro_batch": b, "global_batch": 8 * b, "legacy_model": True, "recompute": "full"})
    assert layer_activation_bytes(full) == 2 * 2048 * b * 1024  # only the layer input kept


def test_training_default_fragmentation_is_the_documented_one():
    from simulator.config.workload import Training
    from simulator.schedule.memory import DEFAULT_FRAGMENTATION

    assert Training(micro_batch=1, global_batch=1).allocator_fragmentation == DEFAULT_FRAGMENTATION


def test_moe_layer_keeps_the_grouped_mlps_saved_tensors(scn):
    """An MoE layer (Qwen3-30B-A3B shape: h 2048, 128 experts of f = 768, top-8, SwiGLU) at EP 8
    on 8 GPUs, s = 4096, b = 1, balanced routing: each rank's experts take T·k = 4096·8 rows and
    keep, per Megatron-Core's TEGroupedMLP (probabilities applied in the weighted SwiGLU), FC1's
    input (h), FC1's output (2f) and the SwiGLU output (f) in bf16, plus the router's fp32 logits:
    T·k·(h + 3f)·2 + T·E·4 bytes; the permute, All-to-All and unpermute keep no token buffer."""
    from simulator.schedule.memory import moe_layer_activation_bytes

    model = {"preset": "qwen3-30b-a3b", "seq_len": 4096}
    s = scn(model, {"micro_batch": 1, "global_batch": 8, "moe_routing": "round_robin"}, {"ep": 8})
    t, k, h, f, e = 4096, 8, 2048, 768, 128
    assert moe_layer_activation_bytes(s) == pytest.approx(t * k * (h + 3 * f) * 2 + t * e * 4, rel=1e-12)


def test_lazy_gradients_exist_only_for_the_layers_back_propagated_before_the_peak(scn):
    """Lazy gradients (FSDP2, or ``grad_allocation: lazy``): N = 8 layers in 4 pipeline stages of
    vp = 2 one-layer chunks (stage 1: layers 1 and 5, no embedding or head), DP 2. Stage 1's
    interleaved schedule holds C = (4 − 1 − 1)·2 + (2 − 1)·4 + 1 = 9 chunk forwards at its peak;
    with 4 micro-batches (F = 8 chunk forwards, C capped at 8) every forward runs before the first
    backward: no gradient at the peak. With 8 (F = 16) F − C = 7 backwards precede the last
    steady-state forward: ceil(7 / 4) = 2 chunks, the whole gradient. Megatron's buffer (the
    default under zero 1) keeps the whole gradient at any moment."""
    from simulator.schedule.memory import backpropagated_fraction
    from simulator.schedule.shapes import stage_params

    def plan(gbs, lazy):
        par = {"pp": 4, "pp_schedule": "interleaved", "vp": 2, "zero": 1, "grad_reduce_dtype": "fp32"}
        if lazy:
            par["grad_allocation"] = "lazy"
        return scn(dict(LLAMA, layers=8), {"micro_batch": 1, "global_batch": gbs}, par)

    lazy4, lazy8, buffer4 = plan(8, True), plan(16, True), plan(8, False)
    assert (lazy4.n_micro, lazy8.n_micro) == (4, 8)
    p = stage_params(lazy4, 1).total
    assert estimate_memory(buffer4, 1).grads == 4 * p
    assert backpropagated_fraction(lazy4, 1) == 0 and estimate_memory(lazy4, 1).grads == 0
    assert backpropagated_fraction(lazy8, 1) == 1 and estimate_memory(lazy8, 1).grads == 4 * p
    # stage 3 with 4 micro-batches: C = 5 of F = 8, so 3 backwards before its last peak, all on its
    # last chunk (layer 7 and the output projection): k = 1 of its 2 layers, plus the head
    from simulator.schedule.shapes import head_unit, layer_unit
    k = layer_unit(lazy4, 7).numel + head_unit(lazy4).numel
    assert backpropagated_fraction(lazy4, 3) == pytest.approx(k / stage_params(lazy4, 3).total, rel=1e-12)
    assert estimate_memory(lazy4, 3).grads == pytest.approx(4 * k, rel=1e-12)


def test_fsdp2_one_micro_batch_peak_holds_no_gradient(scn):
    """FSDP2 without a pipeline and one micro-batch a step: the loss's peak comes before any backward,
    so the model states are the fp32 shard and Adam's moments only (4 + 8 B over N); with two
    micro-batches the first backward has made every sharded gradient (4 B over N more)."""
    par = {"zero": 3, "zero3_impl": "fsdp2", "grad_reduce_dtype": "fp32"}
    one = estimate_memory(scn(LLAMA, {"micro_batch": 1, "global_batch": 8}, par), 0)
    two = estimate_memory(scn(LLAMA, {"micro_batch": 1, "global_batch": 16}, par), 0)
    n = one.params / 4 * 8  # the fp32 shard: 4 B over 8 ranks
    assert one.grads == 0 and one.optimizer == pytest.approx(8 * n / 8)
    assert two.grads == pytest.approx(4 * n / 8)
    assert two.allocated == pytest.approx(one.allocated + 4 * n / 8)


@pytest.mark.parametrize("dtype, bytes_per_token_hidden", [("bf16", 10 * 2), ("fp8", 6 * 1 + 4 * 2)])
def test_tp_comm_overlap_userbuffers_sit_outside_pytorch(scn, dtype, bytes_per_token_hidden):
    """TE's initialize_ub: ten buffers of (seq·mbs/cp, hidden), FP8 for the six AllGather ones in
    an FP8 run, outside the allocator (in total only); two more 32 MiB cuBLAS workspaces (allocated)."""
    from simulator.units import MiB

    par = {"tp": 4, "cp": 2, "sequence_parallel": True}
    training = {"micro_batch": 2, "global_batch": 16, "dtype": dtype}
    off = estimate_memory(scn(LLAMA, training, par), 0)
    on = estimate_memory(scn(LLAMA, training, dict(par, tp_overlap="te_default")), 0)
    tokens = 2 * 2048 // 2  # micro-batch × seq_len / cp
    assert off.userbuffers == 0 and off.ub_workspaces == 0
    assert on.userbuffers == tokens * 1024 * bytes_per_token_hidden
    assert on.ub_workspaces == 2 * 32 * MiB
    assert on.allocated - off.allocated == 2 * 32 * MiB
    assert on.reserved - off.reserved == 2 * 32 * MiB  # workspaces are not dynamic: no fragmentation
    assert on.total - off.total == 2 * 32 * MiB + on.userbuffers


def test_pytorch_cublas_workspace_per_gemm_thread(scn):
    """PyTorch keeps a cuBLAS workspace per (thread-local handle, stream): one for the forward's
    thread and one for autograd's device thread. Hopper: 2 x 32 MiB (+ 32 MiB of TE's own with
    fused kernels); before Hopper 2 x (8 MiB + 128 KiB) (+ TE's 4 MiB)."""
    from simulator.schedule.memory import CUBLAS_THREADS
    from simulator.units import KiB, MiB

    assert CUBLAS_THREADS == 2
    te = scn(GPT, {"micro_batch": 1, "global_batch": 8})
    eager = scn(GPT, {"micro_batch": 1, "global_batch": 8, "fused_kernels": False})
    assert estimate_memory(te, 0).workspaces == 2 * 32 * MiB + 32 * MiB
    assert estimate_memory(eager, 0).workspaces == 2 * 32 * MiB
    a100 = build_scenario({"name": "a", "hardware": "dgx-a100", "nodes": 1, "model": GPT,
                           "training": {"micro_batch": 1, "global_batch": 8}})
    assert estimate_memory(a100, 0).workspaces == 2 * (8 * MiB + 128 * KiB) + 4 * MiB


MHA_LEARNED = dict(GPT, position_embedding="learned")


@pytest.mark.parametrize("tp,sp", [(1, False), (2, True), (4, False)])
def test_te_p2p_context_parallel_keeps_the_received_kv_chunk(scn, tp, sp):
    """TE's P2P CP attention saves the last received K/V chunk while the saved q (a view of the QKV
    projection's output under MHA without RoPE) keeps the rank's own K and V: per layer and
    micro-batch 2 tensors of (s/cp)·b·h/t bf16 elements more than the same plan's all-gather CP."""
    cp, b = 2, 2
    kw = dict(tp=tp, sequence_parallel=sp, cp=cp)
    p2p = scn(MHA_LEARNED, {"micro_batch": b, "global_batch": 8 * b}, dict(kw, cp_comm="p2p"))
    ag = scn(MHA_LEARNED, {"micro_batch": b, "global_batch": 8 * b}, dict(kw, cp_comm="all_gather"))
    extra = 2 * (2048 // cp) * b * 1024 * 2 / tp
    assert layer_activation_bytes(p2p) - layer_activation_bytes(ag) == pytest.approx(extra, rel=1e-12)
    # one stage, one micro-batch in flight: the peak's activations hold it once per layer
    assert estimate_memory(p2p, 0).activations - estimate_memory(ag, 0).activations == pytest.approx(
        4 * extra, rel=1e-12)


@pytest.mark.parametrize("model,training,parallel", [
    (GPT, {}, {}),  # RoPE writes new q and k: the QKV output is freed
    (dict(MHA_LEARNED, kv_heads=4), {}, {}),  # GQA: the query reshape copies
    (MHA_LEARNED, {"recompute": "selective"}, {}),  # core attention recomputed
    (MHA_LEARNED, {}, {"cp_qkv_format": "bshd"}),  # TE <= 1.6 transposes q, k, v on entry
    (MHA_LEARNED, {"dtype": "fp8"}, {}),  # quantised saved tensors
    (MHA_LEARNED, {"fused_kernels": False}, {}),  # not TransformerEngine
])
def test_cp_received_kv_only_where_q_views_the_qkv_output(scn, model, training, parallel):
    """Where q is a tensor of its own the QKV output is freed and P2P CP holds what all-gather CP
    holds; the full-recompute working set (the layer rebuilt) does keep the chunk."""
    from simulator.schedule.memory import cp_received_kv_bytes

    def build(cp_comm: str):
        return scn(model, dict({"micro_batch": 1, "global_batch": 4}, **training),
                   dict({"cp": 2, "cp_comm": cp_comm}, **parallel))
    if "recompute" not in training:  # under selective recompute the term is there but not stored
        assert cp_received_kv_bytes(build("p2p")) == 0.0
    if "cp_qkv_format" not in parallel:  # bshd is a layout of p2p only
        assert layer_activation_bytes(build("p2p")) == layer_activation_bytes(build("all_gather"))
    assert cp_received_kv_bytes(scn(MHA_LEARNED, {"micro_batch": 1, "global_batch": 8})) == 0.0  # no CP
    full = {"micro_batch": 1, "global_batch": 4, "recompute": "full"}
    rebuilt = [layer_activation_bytes(scn(MHA_LEARNED, full, {"cp": 2, "cp_comm": c}), "none")
               for c in ("p2p", "all_gather")]
    assert rebuilt[0] - rebuilt[1] == 2 * 1024 * 1024 * 2  # K and V of 1024 tokens x 1024 hidden, bf16


def test_fsdp2_freed_gradients_stay_reserved_for_the_reduce_scatter_stream(scn):
    """FSDP2 views each sharded gradient out of a reduce-scatter output allocated on the
    reduce-scatter stream; freed by zero_grad, the block is cached for that stream only, so at the
    forward's peak (no gradient allocated) reserved still holds them: 4 B over N per parameter
    beyond allocated, none once the first backward has made them (two micro-batches), none for
    DeepSpeed's stage 3 or Megatron's grad buffer."""
    par = {"zero": 3, "zero3_impl": "fsdp2", "grad_reduce_dtype": "fp32"}
    one = estimate_memory(scn(LLAMA, {"micro_batch": 1, "global_batch": 8}, par), 0)
    two = estimate_memory(scn(LLAMA, {"micro_batch": 1, "global_batch": 16}, par), 0)
    n = one.params / 4 * 8
    assert one.reserved - one.allocated == pytest.approx(one.fragmentation_factor * one.dynamic + 4 * n / 8)
    assert one.stranded == pytest.approx(4 * n / 8) and two.stranded == 0
    assert one.reserved == pytest.approx(two.reserved - (two.dynamic - one.dynamic) * two.fragmentation_factor)
    for other in ({"zero": 3, "zero3_impl": "deepspeed"}, {"zero": 1}):
        assert estimate_memory(scn(LLAMA, {"micro_batch": 1, "global_batch": 8}, other), 0).stranded == 0


def test_te_cached_dummy_weight_gradients(scn):
    """TransformerEngine >= 2.3 hands autograd one cached bf16 placeholder per distinct weight shape
    when Megatron's fused accumulation writes the real gradient into main_grad (and Megatron-Core
    0.14 takes its output layer's from the same cache): Llama-style GQA layer at TP 2, QKV
    [(16 + 2·4)·64 / 2, 1024], projection [1024, 512], FC1 [2·2816 / 2, 1024], FC2 [1024, 1408],
    every layer the same four shapes; the LM head [32000 / 2, 1024] on the last stage only."""
    from simulator.schedule.memory import dummy_wgrad_bytes

    layer = (24 * 64 // 2) * 1024 + 1024 * 512 + (2 * 2816 // 2) * 1024 + 1024 * 1408
    head = 32000 // 2 * 1024
    s = scn(LLAMA, {"micro_batch": 1, "global_batch": 8}, {"tp": 2, "pp": 2, "sequence_parallel": True})
    assert dummy_wgrad_bytes(s, 0) == 2 * layer
    assert dummy_wgrad_bytes(s, 1) == 2 * (layer + head)
    last = estimate_memory(s, 1)
    assert last.dummy_wgrads == 2 * (layer + head) and last.allocated - last.dummy_wgrads == pytest.approx(
        estimate_memory(scn(LLAMA, {"micro_batch": 1, "global_batch": 8, "te_dummy_wgrad": False},
                            {"tp": 2, "pp": 2, "sequence_parallel": True}), 1).allocated)
    # none without TE's layers, without fused accumulation, under ZeRO-3, or with an older TE
    for training, parallel in (({"fused_kernels": False}, {}), ({}, {"gradient_accumulation_fusion": False}),
                               ({}, {"zero": 3}), ({"te_dummy_wgrad": False}, {})):
        other = scn(LLAMA, {"micro_batch": 1, "global_batch": 8, **training}, {"tp": 2, **parallel})
        assert dummy_wgrad_bytes(other, 0) == 0.0

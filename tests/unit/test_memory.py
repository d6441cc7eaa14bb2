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

"""What TransformerEngine saves for backward in FP8, and dropout of p = 0, in the memory model
(simulator/schedule/memory.py: fp8_saved_bytes, dense_mlp_bytes, the dropout masks)."""

import pytest

from simulator.config.scenario import build_scenario
from simulator.schedule.memory import estimate_memory, fp8_saved_bytes, layer_activation_bytes
from tests.unit.test_schedule_invariants import PROFILE  # 4 GPUs per node: a node per 4 ranks of the plan

LLAMA = {"layers": 8, "hidden": 1024, "heads": 16, "kv_heads": 4, "ffn_hidden": 3584, "vocab": 1024,
         "seq_len": 2048, "mlp": "swiglu"}
S, H, F, T = 2048, 1024, 3584, 4


@pytest.fixture
def scn(tmp_path):
    (tmp_path / "p.yaml").write_text(PROFILE)

    def make(training, parallel=None):
        par = parallel or {"tp": T, "sequence_parallel": True}
        ranks = par.get("tp", 1) * par.get("pp", 1)  # dp = 1 in every case: the memory of one replica
        data = {"name": "m", "hardware": "p.yaml", "nodes": ranks // 4, "model": LLAMA,
                "training": {"micro_batch": 1, "global_batch": 8, **training},
                "parallel": par}
        return build_scenario(data, source="m.yaml", base_dir=tmp_path)
    return make


def test_te_fp8_saves_the_gemm_inputs_in_one_byte(scn):
    """TE 2.9 keeps one FP8 usage of each linear input instead of the bf16 tensor: the QKV and
    FC1 inputs (1 B instead of 2, sbh each) and FC2's input (sbf) shrink; the output projection
    keeps an FP8 copy (1 B) beside the attention output the kernel saves in bf16. Difference per
    layer under TP+SP: (−2·sbh + sbh − sbf) / t."""
    bf16, fp8 = scn({}), scn({"dtype": "fp8", "fp8_recipe": "current"})
    assert fp8_saved_bytes(fp8) == 1.0 and fp8_saved_bytes(bf16) == 0.0
    diff = layer_activation_bytes(fp8) - layer_activation_bytes(bf16)
    assert diff == pytest.approx((-2 * S * H + S * H - S * F) / T, rel=1e-12)


def test_block_scaled_fp8_adds_its_scales(scn):
    """1x128 block scaling keeps a 4-byte scale per 128 elements of each FP8 tensor saved:
    (2·sbh + sbh + sbf)·4/128 bytes more per layer than per-tensor FP8 (over t)."""
    cs, bw = scn({"dtype": "fp8", "fp8_recipe": "current"}), scn({"dtype": "fp8", "fp8_recipe": "blockwise"})
    diff = layer_activation_bytes(bw) - layer_activation_bytes(cs)
    assert diff == pytest.approx((3 * S * H + S * F) * 4 / 128 / T, rel=1e-12)


def test_torchao_float8_keeps_bf16_inputs(scn):
    """torchao's Float8Linear (eager PyTorch layers, fused_kernels false) saves its bf16 inputs:
    the same bytes as bf16."""
    bf16 = scn({"fused_kernels": False})
    fp8 = scn({"fused_kernels": False, "dtype": "fp8", "fp8_recipe": "current"})
    assert layer_activation_bytes(fp8) == layer_activation_bytes(bf16)


def test_dropout_of_zero_keeps_no_masks(scn):
    """A dropout of p = 0 returns its input (ATen's dropout): the two 1-byte hidden-dropout masks
    per layer (2·sbh/t bytes under SP) and, on the first pipeline stage, the embedding dropout
    mask of each micro-batch in flight (sbh/t) are not stored."""
    par = {"tp": T, "sequence_parallel": True, "pp": 2}
    with_p, without = scn({}, par), scn({"dropout": False}, par)
    assert layer_activation_bytes(with_p) - layer_activation_bytes(without) == pytest.approx(2 * S * H / T)
    layers, in_flight = 4, 2  # stage 0 of 1F1B over pp 2 holds pp micro-batches
    acts = estimate_memory(with_p, 0).activations - estimate_memory(without, 0).activations
    assert acts == pytest.approx(in_flight * (layers * 2 * S * H / T + S * H / T))

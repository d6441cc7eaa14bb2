"""Fitting gpu.attention_efficiency to measured attention kernels (calibration/attention_fit.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.calibration.attention_fit import computed_fraction, fit_attention_efficiency, kernel_generation
from simulator.calibration.kineto import AttentionEvent
from simulator.cli import main
from simulator.config.hardware import load_profile
from simulator.costs.attention_shape import shape_factor

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "kineto"


@pytest.fixture(scope="module")
def h100():
    return load_profile("dgx-h100")


@pytest.mark.parametrize("name,kernel", [
    ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>>(pytorch_flash::Flash_fwd_params)", "flash2"),
    ("void flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128>>(Flash_bwd_params)", "flash2"),
    ("void cutlass::device_kernel<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwd<>>>(Params)", "flash3"),
    ("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x64x128_4x1x1_kernel0_0", "flash3"),
    ("fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<>::Params)", None),
    ("fmha_cutlassB_bf16_aligned_128x64_k128_sm90(PyTorchMemEffAttention::AttentionBackwardKernel<>::Params)", None),
])
def test_kernel_generation_from_the_kernel_name(name, kernel):
    assert kernel_generation(name) == kernel


def _event(name, backward, seq, eff, peak, causal=True, b=2, h=16, d=128):
    """A kernel whose duration the model gives it when its generation's long-sequence figure is
    `eff` of `peak`: its computed FLOPs at eff × the shape factor of its length (a backward with
    dgx-h100's per-CTA cost of the backward)."""
    fwd = 4.0 * b * h * seq * seq * d
    flops = fwd * (2.5 if backward else 1.0)
    frac = (seq + 1) / (2 * seq) if causal else 1.0
    kernel = kernel_generation(name)
    c0 = load_profile("dgx-h100").gpu.attention_cta_overhead(kernel, backward)
    factor = shape_factor(seq, seq, causal, d, kernel, c0)
    return AttentionEvent(name, None, backward, b, h, h, seq, seq, d, "c10::BFloat16", 0.0,
                          flops * frac / (eff * factor * peak))


def test_median_fraction_of_peak_per_generation_and_direction(h100):
    peak = h100.gpu.peak_flops("bf16")
    fa2, fa3 = "pytorch_flash::flash_fwd_kernel", "flash::FlashAttnFwdSm90"
    events = [_event(fa2, False, s, e, peak) for s, e in ((1024, 0.30), (2048, 0.40), (4096, 0.50))]
    events += [_event(fa2.replace("fwd", "bwd"), True, 4096, 0.25, peak)]
    events += [_event(fa3, False, 8192, 0.62, peak), _event(fa3.replace("Fwd", "Bwd"), True, 8192, 0.48, peak)]
    fit = fit_attention_efficiency(events, h100)
    assert fit.overlay == {"flash2": {"fwd": 0.4, "bwd": 0.25}, "flash3": {"fwd": 0.62, "bwd": 0.48}}
    assert fit.samples[("flash2", "fwd")] == 3 and fit.warnings == []
    # the same kernels read with a full mask did 2s/(s+1) times the work the causal reading says
    full = fit_attention_efficiency(events, h100, causal=False)
    reread = 2 * 2048 / 2049 * shape_factor(2048, 2048, True, 128, "flash2") / shape_factor(2048, 2048, False, 128,
                                                                                          "flash2")
    assert full.overlay["flash2"]["fwd"] == pytest.approx(0.40 * reread, abs=1e-4)
    # ... and for FA3 that is above the peak: capped, with a warning naming the option
    assert full.overlay["flash3"]["fwd"] == 1.0
    assert any("flash3.fwd" in w and "--attention-mask" in w for w in full.warnings)


def test_one_direction_only_keeps_the_datasheet_for_the_other(h100):
    peak = h100.gpu.peak_flops("bf16")
    fit = fit_attention_efficiency([_event("pytorch_flash::flash_fwd_kernel", False, 2048, 0.3, peak)], h100)
    assert fit.overlay == {"flash2": {"fwd": 0.3}}
    assert any("flash2.bwd" in w and "datasheet" in w for w in fit.warnings)
    a100 = load_profile("dgx-a100")  # no flash3 entry: one direction cannot make one
    fit = fit_attention_efficiency([_event("flash::FlashAttnFwdSm90", False, 2048, 0.5, peak)], a100)
    assert fit.overlay == {} and any("not added" in w for w in fit.warnings)


def test_computed_fraction():
    ev = _event("flash_fwd", False, 8, 0.5, 1e15)
    assert computed_fraction(ev, True) == pytest.approx(9 / 16)
    assert computed_fraction(ev, False) == 1.0


def test_cli_fits_attention_from_a_trace_and_the_overlay_loads(tmp_path, h100, capsys):
    out = tmp_path / "att.yaml"
    assert main(["calibrate", str(FIXTURES / "gpu_style_trace.json"), "--hardware", "dgx-h100", "-o", str(out)]) == 0
    assert "gpu.attention_efficiency.flash2.fwd" in capsys.readouterr().out
    cal = load_profile(str(out))
    # the fixture's forward kernel: b1 h32 s8192 d128 causal bf16 in 1650 us, read as the figure
    # of a 16K kernel (its 8K length costs shape_factor of it)
    flops = 4.0 * 32 * 8192 * 8192 * 128 * (8193 / 16384)
    achieved = flops / (1650e-6 * h100.gpu.peak_flops("bf16"))
    assert cal.gpu.attention_efficiency["flash2"].fwd == pytest.approx(
        achieved / shape_factor(8192, 8192, True, 128, "flash2"), abs=1e-4)
    assert cal.gpu.attention_efficiency["flash3"] == h100.gpu.attention_efficiency["flash3"]

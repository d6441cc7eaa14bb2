"""The reference Llama RMSNorm written as PyTorch ops (``training.norm_kernel: composite``,
schedule/transformer.py ``composite_rms_norm``): its op-by-op bytes and kernels, Liger-Kernel's
measured Hugging Face ``LlamaRMSNorm`` (held out of the kernel fit), and the stacks that run it."""

from __future__ import annotations

import dataclasses
import statistics

import pytest

from simulator.calibration.kernel_bandwidth import KernelFit, composite_norm_points, predict
from simulator.costs.memory_bound import EFFICIENCY, RAMP_US
from simulator.e2e_validation.sources import SOURCES, cases
from simulator.schedule.transformer import (COMPOSITE_NORM_BWD_HB, COMPOSITE_NORM_FWD_HB, Elementwise,
                                             composite_rms_norm)


def test_chain_bytes_and_kernels_op_by_op():
    """bf16 activations and weight: forward upcast 2+4, pow 8, mean 4, multiply 8, cast back 4+2,
    scale 2+2 = 36 bytes per element in 8 kernels (with + eps and rsqrt on the row values);
    backward 4 + 6 + 2 (scale), 6 (cast back), 8 + 12 + 4 (multiply), 4 (mean), 8 + 8 + 12 (pow),
    12 (the two gradients added), 6 (upcast) = 92 in 15. An fp32 weight makes the product fp32
    (scale 2+4) and adds the gradient's cast back to bf16; fp32 activations drop both casts."""
    assert composite_rms_norm(2, 2) == ((36.0, 8), (92.0, 15))
    assert composite_rms_norm(2, 4) == ((38.0, 8), (108.0, 16))
    assert composite_rms_norm(4, 4) == ((28.0, 6), (92.0, 13))
    assert (COMPOSITE_NORM_FWD_HB, COMPOSITE_NORM_BWD_HB) == ((18.0, 8), (46.0, 15))  # in 2-byte activations


def test_eager_layers_take_the_chain_as_their_norm():
    """norm_kernel composite: the chain at the streaming rate, 9 and 9.2 times the bytes of
    PyTorch's own norm kernel (2 and 5 activations' worth); auto keeps that kernel."""
    comp = Elementwise.of(False, True, dropout=False, norm_kernel="composite")
    native = Elementwise.of(False, True, dropout=False)
    assert (comp.ln_fwd, comp.ln_bwd, comp.norm_impl) == ((18.0, 8), (46.0, 15), "")
    assert (native.ln_fwd, native.ln_bwd, native.norm_impl) == ((2, 1), (5, 2), "eager")
    assert comp.norm_fwd == comp.ln_fwd and comp.norm_bwd == comp.ln_bwd  # the final and q/k norms too


def test_liger_llama_rmsnorm_rows_held_out():
    """Liger-Kernel's A100 timings of HF's LlamaRMSNorm (M = 2,048 rows, H = 1K-32K; fp32 weight,
    bf16 input and dy), priced as the chain with the committed kernel constants: forward 18% fast
    in the median and backward 6%, every row within -19% .. +14%; one native norm kernel's bytes
    would be 85-89% fast."""
    pts = composite_norm_points()
    committed = KernelFit(RAMP_US, dict(EFFICIENCY))
    assert len(pts) == 12 and {p.gpu for p in pts} == {"NVIDIA A100-SXM4-80GB"}
    for mode, median in (("forward", -0.178), ("backward", -0.064)):
        errs = [predict(p, committed) / p.seconds - 1 for p in pts if p.mode == mode]
        assert statistics.median(errs) == pytest.approx(median, abs=0.01)
        assert all(-0.19 <= e <= 0.14 for e in errs), errs
    for p in pts:  # the same calls as PyTorch's one norm kernel (2 or 5 activations of 2 bytes)
        per, kernels = (4, 1) if p.mode == "forward" else (10, 2)
        native = dataclasses.replace(p, klass="norm_eager", nbytes=p.nbytes / (38 if p.mode == "forward" else 114) * per,
                                     kernels=kernels)
        assert -0.90 <= predict(native, committed) / p.seconds - 1 <= -0.84


@pytest.mark.parametrize("source, composite", [("torchtitan", {"Llama 3 70B", "Llama 2 70B"}),
                                               ("fms_fsdp", {"Llama 2 13B", "Llama 2 34B", "Llama 2 70B"})])
def test_torchtitan_rmsnorm_and_fms_layernorm_run_the_chain(source, composite):
    """torchtitan's "rmsnorm" configs (the 70B tomls of f38766edb; 8B and 13B set "fused_rmsnorm",
    its Triton kernel) and FMS's LayerNormParameterized(use_high_precision_pow=True) run the chain
    in eager mode; torchtitan's compiled H200 rows fuse it."""
    src = [s for s in SOURCES if s.key == source]
    for c in cases(src):
        t = c.scenario["training"]
        model = " ".join(c.label.split()[:3])
        expected = model in composite and t.get("fused_kernels") is False
        assert (t.get("norm_kernel") == "composite") == expected, c.label


def test_chain_keeps_its_fp32_upcast_for_backward():
    """Without recompute a layer of composite norms keeps, per norm, the fp32 upcast and the bf16
    normalised output (6 bytes per activation) where PyTorch's kernel keeps its bf16 input (2):
    8·s·b·h more per layer; under full recompute only the layer input is kept either way."""
    from simulator.config.scenario import build_scenario
    from simulator.schedule.memory import layer_activation_bytes

    base = {"name": "n", "hardware": "dgx-a100", "nodes": 1,
            "model": {"preset": "llama2-7b", "seq_len": 4096},
            "training": {"micro_batch": 1, "global_batch": 8, "fused_kernels": False, "dropout": False,
                         "recompute": "none"},
            "parallel": {"zero": 3, "zero3_impl": "fsdp2"}}
    native = build_scenario(base)
    comp = build_scenario({**base, "training": {**base["training"], "norm_kernel": "composite"}})
    sbh = 4096 * 1 * 4096
    assert layer_activation_bytes(comp) - layer_activation_bytes(native) == 8 * sbh
    assert layer_activation_bytes(comp, "full") == layer_activation_bytes(native, "full") == 2 * sbh


def test_chain_is_not_combined_with_autocast():
    """Under autocast the norms read the fp32 residual stream, priced by autocast's own norm traffic:
    the chain's 2-byte count would not hold, so the pairing is refused with the field named."""
    from simulator.config.scenario import build_scenario
    from simulator.errors import InputError

    with pytest.raises(InputError, match="norm_kernel: composite"):
        build_scenario({"name": "n", "hardware": "dgx-h100", "nodes": 1,
                        "model": {"layers": 2, "hidden": 512, "heads": 8, "seq_len": 128, "vocab": 4096},
                        "training": {"micro_batch": 1, "global_batch": 8, "fused_kernels": False,
                                     "norm_kernel": "composite", "autocast": True}}, source="<test>")

"""torchtitan's published FSDP2 throughput (``data/e2e/torchtitan_benchmarks.csv``, source
``torchtitan``): the rows build torchtitan's configuration of the commit that measured them and
are held out; their error is bounded at what the model reaches today."""

from __future__ import annotations

import statistics

import pytest

from simulator.config.scenario import build_scenario
from simulator.e2e_validation import scoring, sources


def _cases() -> list[sources.Case]:
    return sources.cases([s for s in sources.SOURCES if s.key == "torchtitan"])


def test_rows_build_torchtitans_configuration_and_are_held_out():
    """Eight A100 rows (docs/performance.md @f38766edb; the two selective-layer rows at the option's
    default N = 2, the page printing none) and two H200 rows (Trainy's benchmark): FSDP2 reducing
    in fp32, eager on A100 (the Triton RMSNorm for 8B and 13B), compiled Float8 tensorwise with fp8
    all-gather on H200."""
    cs = _cases()
    assert len(cs) == 10 and not any(sources.is_fit_case(c) for c in cs)
    assert "torchtitan" in sources.HELD_OUT_SOURCES
    layer = [c.scenario["training"] for c in cs if "selective layer" in c.label]
    assert [(t["recompute"], t["recompute_method"], t["recompute_num_layers"]) for t in layer] == [("full", "every", 2)] * 2
    for c in cs:
        build_scenario(c.scenario)
        t, p = c.scenario["training"], c.scenario["parallel"]
        assert p == dict(zero=3, zero3_impl="fsdp2", grad_reduce_dtype="fp32")
        assert t["micro_batch"] * c.n_gpus == t["global_batch"]
        assert t["cross_entropy"] == "torch" and t["attention"] == "flash2" and not t["dropout"]
        if c.scenario["hardware"] == "dgx-a100":
            assert c.n_gpus == 64 and t["dtype"] == "bf16" and not t["fused_kernels"] and t["optimizer"] == "foreach"
            assert (t.get("norm_kernel") == "fused") == c.label.startswith(("Llama 3 8B", "Llama 2 13B"))
        else:
            assert c.scenario["hardware"] == "dgx-h200" and c.n_gpus in (32, 64)
            assert t["dtype"] == "fp8" and t["fp8_recipe"] == "current" and t["fp8_param_gather"] and t["fused_kernels"]
    # torchtitan's op-level selective checkpointing as its own mode
    assert {c.scenario["training"]["recompute"] for c in cs if "selective op" in c.label} == {"selective_op"}


def test_held_out_error():
    """Measured (tokens/s/GPU, positive = predicted too fast): full recompute +0.8% (Llama 3 70B)
    and -0.2% (Llama 2 70B); no recompute +10.2% (Llama 2 13B); every second block checkpointed
    (``recompute_method: every``) +8.3% (Llama 3 8B) and +7.7% (Llama 2 13B); op-level selective
    checkpointing (``recompute: selective_op``) +9.6% (Llama 3 8B), +11.1% (Llama 2 13B), +8.0%
    (Llama 2 70B); the H200 Float8 rows -4.0% and -2.8%. Median |error| 7.8%, hence <= 0.09. The
    70B rows run torchtitan's RMSNorm of PyTorch ops (norm_kernel: composite): +4.7%, +3.8% and
    +12.8% when it was priced as one native norm kernel. The A100 rows without full recompute share
    a +8-11% gap that the no-recompute row has too: not the checkpointing policy."""
    rs = list(scoring.run_cases(_cases()))
    assert statistics.median(abs(r.error) for r in rs) <= 0.09, [(r.case.label, round(r.error, 3)) for r in rs]
    full = [r.error for r in rs if r.case.scenario["training"]["recompute"] == "full"
            and "selective layer" not in r.case.label]
    assert len(full) == 2 and all(abs(e) <= 0.03 for e in full), full
    layer = [r.error for r in rs if "selective layer" in r.case.label]
    assert len(layer) == 2 and all(0 < e <= 0.10 for e in layer), layer
    op_sac = [r.error for r in rs if "selective op" in r.case.label and "A100" in r.case.label]
    assert len(op_sac) == 3 and all(abs(e) <= 0.18 for e in op_sac), op_sac
    h200 = [r.error for r in rs if "H200" in r.case.label]
    assert len(h200) == 2 and all(-0.07 <= e <= 0.0 for e in h200), h200


def test_every_second_block_costs_what_the_page_measures():
    """Llama 2 13B, local batch 2: no checkpointing 2,162 tokens/s/GPU, every second block
    checkpointed 1,914 (1.130 times slower), op-level 1,904. Simulated: 1.156 and, against op-level,
    0.975 (measured 1.005); Llama 3 8B layer/op 0.965 (measured 0.977). Re-running half the blocks'
    forward prices within 3% of what the page shows, and so does its order against op-level SAC."""
    rs = {r.case.label: r.predicted for r in scoring.run_cases(_cases()) if "A100" in r.case.label}
    meas = {c.label: c.measured for c in _cases()}

    def ratio(table: dict[str, float], a: str, b: str) -> float:
        return table[a] / table[b]

    none, layer, op = (f"Llama 2 13B A100-80GB FSDP64 mbs2 {k} eager" for k in ("none", "selective layer", "selective op"))
    assert ratio(rs, none, layer) / ratio(meas, none, layer) == pytest.approx(1.0, abs=0.03)
    assert ratio(rs, layer, op) / ratio(meas, layer, op) == pytest.approx(1.0, abs=0.04)
    l8, o8 = (f"Llama 3 8B A100-80GB FSDP64 mbs1 {k} eager" for k in ("selective layer", "selective op"))
    assert ratio(rs, l8, o8) / ratio(meas, l8, o8) == pytest.approx(1.0, abs=0.03)

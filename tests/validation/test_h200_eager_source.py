"""This project's GPT-2 steps on one H200 (source ``h200_eager``): the rows are consistent as
measured, the built rows are what ``benchmarks/measure_gpt_step.py`` runs, held out, and they score
as the page's findings say: the GPU-bound rows within a few percent, the two host-bound rows far
optimistic, for reasons the model's own program and the measured host figures show."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from simulator.config.scenario import build_scenario
from simulator.costs.compute import compute_time
from simulator.costs.host import host_cost_s
from simulator.e2e_validation import scoring, sources
from simulator.e2e_validation.h200_step_sources import h200_eager
from simulator.e2e_validation.loso import fit_family, refit_without
from simulator.e2e_validation.memory import memory_results
from simulator.e2e_validation.rows import parse_int, read_rows
from simulator.schedule.ir import ComputeOp
from simulator.simulation import simulate_scenario
from simulator.units import GiB

ROOT = Path(__file__).resolve().parents[2]
VOCAB = 50304


def _rows() -> list[dict[str, str]]:
    return read_rows(sources.DATA_DIR / "h200_gpt2_eager_single_gpu.csv")


def test_rows_are_consistent_as_measured():
    """Six rows; the params column is the GPT-2 layout's count (tied embedding, learned positions,
    biased QKV/projection/FC1/FC2, two LayerNorms per block and the final one):
    V·h + s·h + L·(12h² + 13h) + 2h; fastest <= median step, GPU busy <= step, allocated <= reserved."""
    rows = _rows()
    assert len(rows) == 6
    for r in rows:
        h, layers, s = parse_int(r["hidden"]), parse_int(r["layers"]), parse_int(r["seq_len"])
        assert parse_int(r["params"]) == VOCAB * h + s * h + layers * (12 * h * h + 13 * h) + 2 * h
        assert float(r["step_ms_min"]) <= float(r["step_ms"])
        assert float(r["gpu_busy_ms"]) <= float(r["step_ms"])
        assert float(r["max_allocated_GiB"]) <= float(r["max_reserved_GiB"])


def test_the_mapping_is_what_the_script_runs():
    """Each knob against the script's text (so a change of the script fails here) and the built scenario."""
    script = (ROOT / "benchmarks" / "measure_gpt_step.py").read_text()
    for needle in ("is_causal=True", 'approximate="tanh"', "logits.float()", "fused=dev == \"cuda\"",
                   "set_to_none=True", "F.linear(self.ln_f(x), self.wte.weight)", "nn.Embedding(seq, hidden)",
                   "torch.autocast(dev, dtype=torch.bfloat16)"):
        assert needle in script, needle
    for absent in ("Dropout", "clip_grad", "compile(", "checkpoint"):
        assert absent not in script, absent
    cases = h200_eager(_rows())
    assert len(cases) == 6
    for c in cases:
        scn = c.scenario
        assert scn["hardware"] == "dgx-h200" and scn["nodes"] == 1 and scn["gpus_per_node"] == 1 and c.n_gpus == 1
        t, m = scn["training"], scn["model"]
        assert t["global_batch"] == t["micro_batch"] and t["recompute"] == "none" and t["dtype"] == "bf16"
        assert (t["attention"], t["fused_kernels"], t["optimizer"], t["cross_entropy"]) == ("flash3", False, "fused",
                                                                                             "torch")
        assert (t["dropout"], t["linear_bias"], t["grad_clip"], t["master_dtype"]) == (False, "epilogue", False, "fp32")
        assert "norm_kernel" not in t and "train_metrics" not in t  # eager LayerNorm (auto), no metrics
        assert (m["position_embedding"], m["tied_embeddings"], m["mlp"], m["vocab"]) == ("learned", True, "gelu", VOCAB)
        assert m["ffn_hidden"] == 4 * m["hidden"] and m["kv_heads"] == m["heads"]
        assert scn["parallel"] == dict(zero=0, grad_allocation="lazy")
        assert build_scenario(scn, source="test").dp == 1


def test_rows_are_held_out_and_fit_nothing():
    """One GPU each, so no fitting row (is_fit_case takes 8-GPU rows); listed held out as well. dgx-h200
    inherits dgx-h100's fitted curve, and leaving this source out keeps the committed fit."""
    cases = h200_eager(_rows())
    assert "h200_eager" in sources.HELD_OUT_SOURCES and not any(sources.is_fit_case(c) for c in cases)
    assert fit_family("dgx-h200") == "dgx-h100"
    refit = refit_without("h200_eager", "dgx-h100", {})
    assert refit.scale == 1.0 and refit.how.startswith("committed fit")


def test_errors():
    """Findings: GPT-2 124M mb16, 350M, 760M and 1.3B (GPU-bound: measured step 3.5-7.2% over the
    GPU busy time) -1.9%, -0.9%, -6.0%, -7.4%; the host-bound 124M mb1 and mb4 +172% and +32%.
    Tolerance 0.006, as the other sources' tests: the simulation is deterministic, so this only lets
    changes elsewhere of under about half a point through (2 points on the +172% row, whose error
    moves 2.7 times as fast as its predicted step). Median |error| of the four: 3.9%."""
    errors = [r.error for r in scoring.run_cases(h200_eager(_rows()))]
    assert errors[2:] == pytest.approx([-0.019, -0.009, -0.060, -0.074], abs=0.006)
    assert errors[:2] == pytest.approx([1.722, 0.315], abs=0.02)
    assert statistics.median(abs(e) for e in errors[2:]) <= 0.045


def _program_figures(case) -> tuple[int, float, float, float]:
    """(kernels, summed GPU time, summed host issue time, host time at the measured tiny-op figures)
    of the case's one-rank program. The measured figures (data/kernels/h200_host_overhead.csv, the
    means of its two machines): a forward op with autograd 10.5 us plus 4.2 us of nn.Module Python
    (nn.Linear over F.linear), a backward node 16.2 us, an optimizer launch as a forward op."""
    scn = build_scenario(case.scenario, source="test")
    sim = simulate_scenario(scn)
    (program,) = sim.schedule.programs.values()
    ops = [op for op in program if isinstance(op, ComputeOp)]
    kernels = sum(max(op.count, 1) for op in ops)
    gpu = sum(compute_time(op, scn.profile.gpu) for op in ops)
    host = sum(host_cost_s(op) for op in ops)
    per = {"fwd": 14.7e-6, "bwd": 16.2e-6, "opt": 14.7e-6}
    measured_host = sum(max(op.count, 1) * per[op.tag.phase] for op in ops)
    return kernels, gpu, host, measured_host


def test_host_bound_rows_are_gpu_bound_in_the_model():
    """GPT-2 124M at micro-batch 1: the model launches 388 kernels (the profiler counts 773 in the
    script's step: data/e2e/h200_gpt2_step_phases.csv, autocast's casts most of the difference) and
    issues them in 3.0 ms of host time (11 us per forward kernel, 6 per backward), under their 6.9 ms
    of GPU time, so its step is the GPU's. Priced at the measured tiny-op host figures the same kernels
    take 6.1 ms, still under the GPU time: the constants alone do not make the row host-bound; the
    measured step (18.9 ms) is about 24 us of host time for each of the 773 kernels."""
    rows, cases = _rows(), h200_eager(_rows())
    kernels, gpu, host, measured_host = _program_figures(cases[0])
    assert kernels == 388
    assert host == pytest.approx(3.03e-3, rel=0.01) and gpu == pytest.approx(6.93e-3, rel=0.01)
    assert measured_host == pytest.approx((126 + 14) * 14.7e-6 + 248 * 16.2e-6, rel=1e-9) and measured_host < gpu
    predicted = scoring.run_case(cases[0]).step_time_s
    assert predicted == pytest.approx(gpu, rel=0.01)
    step, busy = float(rows[0]["step_ms"]) * 1e-3, float(rows[0]["gpu_busy_ms"]) * 1e-3
    assert step - busy > 4 * host  # the GPU's wait alone is four times the model's host time
    assert step / 773 == pytest.approx(24.5e-6, rel=0.01)


def test_memory_gap_is_the_fp32_residual_stream():
    """The memory rows (peak_memory.csv, source h200_gpt2_eager, allocated) read -2.6% to -5.0%.
    Under autocast the embedding's output is fp32, so each block's two LayerNorms save fp32 inputs
    where the model saves bf16: 2 bytes x 2 x s·b·h per layer more. That closed form leaves 0.03-0.09
    GiB of each row's gap (the 1.3B row's 1.58 GiB included)."""
    res = [r for r in memory_results() if r.source == "h200_gpt2_eager"]
    assert len(res) == 6 and all(-0.051 <= r.error <= -0.025 for r in res)
    for r, row in zip(res, _rows()):
        h, layers, s, b = (parse_int(row[k]) for k in ("hidden", "layers", "seq_len", "micro_batch"))
        fp32_residual = layers * 2 * s * b * h * 2 / GiB
        rest = r.measured_gib - r.predicted_gib - fp32_residual
        assert 0.0 < rest < 0.1, (r.label, rest)

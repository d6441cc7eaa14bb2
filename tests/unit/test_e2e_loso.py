"""Leave-one-source-out scoring of the fitted GEMM derates (simulator/e2e_validation/loso.py),
checked on synthetic step-time models T(s) = A + B/s so that every expected figure is closed-form."""

from __future__ import annotations

import re
import statistics

import pytest

from simulator.config.hardware import load_profile
from simulator.e2e_validation import loso, sources
from simulator.e2e_validation.scoring import Result, predicted_metric, speed_error


def _result(case: sources.Case, step: float) -> Result:
    pred = predicted_metric(case, step)
    return Result(case, pred, step, speed_error(case, pred), 0.4, 0.0)


def _step_case(source: str, measured: float, n_gpus: int = 8, hw: str = "dgx-a100") -> sources.Case:
    scn = dict(hardware=hw, model=dict(hidden=4096, seq_len=2048), training=dict(dtype="bf16", global_batch=8),
               parallel=dict(tp=1))
    return sources.Case(source, f"{source}-{measured}-{n_gpus}", scn, "step_time_s", measured, n_gpus)


def test_probe_interpolates_a_step_made_of_fixed_time_and_gemm_time():
    """T(s) = A + B/s through two simulations is exact when only the GEMMs scale."""
    a, b = 0.3, 0.7
    c = _step_case("x", measured=1.2)
    p = loso.Probe(_result(c, a + b), a + b / loso.PROBE_SCALE)
    for s in (0.7, 0.95, 1.3):
        assert p.step_at(s) == pytest.approx(a + b / s, rel=1e-12)
        assert p.error_at(s) == pytest.approx(1.2 / (a + b / s) - 1, rel=1e-12)
    tput = sources.Case("x", "x", dict(c.scenario, model=dict(hidden=4096, seq_len=2048)), "tokens_per_s_per_gpu",
                        1000.0, 8)
    q = loso.Probe(_result(tput, 1.0), a + b / loso.PROBE_SCALE)
    # tokens/s/GPU = 8·2048 / T / 8; the error follows 1/T whatever the metric
    assert q.result_at(1.3).predicted == pytest.approx(2048 / (a + b / 1.3), rel=1e-12)
    assert q.error_at(1.3) == pytest.approx(2048 / (a + b / 1.3) / 1000 - 1, rel=1e-12)


def test_fit_scale_zeroes_the_median_signed_error():
    """All-GEMM rows (A = 0): error(s) = (1 + e1)·s − 1, zero at s = 1/(1 + e1); with three rows the
    median row decides."""
    probes = []
    for e1 in (-0.2, 0.1, 0.3):
        c = _step_case("x", measured=1.0 + e1)
        probes.append(loso.Probe(_result(c, 1.0), 1.0 / loso.PROBE_SCALE))
    s = loso.fit_scale(probes)
    assert s == pytest.approx(1 / 1.1, rel=1e-9)
    assert statistics.median(p.error_at(s) for p in probes) == pytest.approx(0, abs=1e-9)


def test_refit_without_a_source():
    def probe(src: str, e1: float) -> loso.Probe:
        return loso.Probe(_result(_step_case(src, 1.0 + e1), 1.0), 1.0 / loso.PROBE_SCALE)

    probes = {"dgx-a100": [probe("a", 0.1), probe("b", -0.1), probe("b", 0.0)], "dgx-b200": [probe("c", 0.0)]}
    same = loso.refit_without("z", "dgx-a100", probes)
    assert same.scale == 1.0 and same.rows == 3
    # without b: only a's row (+10%) → s = 1/1.1
    assert loso.refit_without("b", "dgx-a100", probes).scale == pytest.approx(1 / 1.1, rel=1e-9)
    borrowed = loso.refit_without("c", "dgx-b200", probes)
    assert borrowed.rows == 0 and "dgx-h100" in borrowed.how
    transfer = loso.kernel_transfer("dgx-b200", "dgx-h100")
    assert borrowed.derate == pytest.approx(loso.fitted_derate("dgx-h100") * transfer, rel=1e-12)


def test_borrowed_derate_carries_the_kernel_tables():
    """B200's XLA-measured GEMMs sit at 0.973 of its MAMF plateau at the reference shape, H100's at
    1.052 of its own (HARDWARE.md §1e, data/kernels/xla_sm100_gemm.csv): the borrowed derate × 0.92.
    A GPU without a table borrows unchanged."""
    assert loso.kernel_transfer("dgx-b200", "dgx-h100") == pytest.approx(0.923, abs=0.005)
    assert loso.kernel_transfer("dgx-a100", "dgx-h100") == 1.0


@pytest.mark.parametrize("profile, family", [("dgx-a100", "dgx-a100"), ("jean-zay-a100", "dgx-a100"),
                                             ("abci-a100", "dgx-a100"), ("aws-p5", "dgx-h100"),
                                             ("dgx-h200", "dgx-h100"), ("dgx-b200", "dgx-b200")])
def test_fit_family_follows_the_base_chain(profile, family):
    assert loso.fit_family(profile) == family


def test_fitted_derates_are_what_the_curves_carry():
    """The header's derate × the MAMF-shape value in brackets = the curve's efficiency, point by point."""
    from simulator.config.hardware import load_profile, profile_path

    for prof in loso.FITTED_PROFILES:
        d = loso.fitted_derate(prof)
        shapes = [float(x) for x in re.findall(r"MAMF-shape ([0-9.]+) x", profile_path(prof).read_text())]
        curve = [p.efficiency for p in load_profile(prof).gpu.gemm_efficiency]
        assert len(shapes) == len(curve) >= 6
        for shape, eff in zip(shapes, curve):
            assert shape * d == pytest.approx(eff, abs=0.0011), prof


def test_leave_one_source_out_plumbing(monkeypatch):
    """Synthetic rows on dgx-a100: T(s) = 0.4 + 0.6/s for every row. A source without fitting rows
    keeps its result; a source with fitting rows gets the scale that zeroes the other sources'
    median error, its fitting row interpolated, its multi-node row re-simulated at that scale."""
    fit_a = [_step_case("a", m) for m in (1.05, 1.0, 0.9)]  # errors +5%, 0%, -10% at s = 1
    fit_b = [_step_case("b", 1.2)]
    multi_b = _step_case("b", 1.2, n_gpus=64)
    multi_c = _step_case("c", 0.8, n_gpus=64)
    cases = fit_a + fit_b + [multi_b, multi_c]
    assert [sources.is_fit_case(c) for c in cases] == [True] * 4 + [False] * 2
    calls: list[float] = []
    committed = load_profile("dgx-a100").gpu.gemm_efficiency[0].efficiency  # the curve's lowest point

    def simulate(jobs):
        out = []
        for case, hw in jobs:
            s = hw.gpu.gemm_efficiency[0].efficiency / committed  # the scale of the profile it was given
            calls.append(s)
            out.append(_result(case, 0.4 + 0.6 / s))
        return out

    results = [_result(c, 1.0) for c in cases]
    held = loso.leave_one_source_out(results, simulate)
    assert calls[:4] == [pytest.approx(loso.PROBE_SCALE)] * 4
    by = {c.source: [h for h in held if h.result.case.source == c.source] for c in cases}
    # c has no fitting row: committed fit, result untouched
    assert by["c"][0].refit.scale == 1.0 and by["c"][0].result is results[5]
    # without b, a's median row (0%) is already centred: scale 1 (to the bisection's precision)
    assert by["b"][0].refit.scale == pytest.approx(1.0, abs=1e-9)
    # without a, b's single row (+20%) fixes the scale: 1.2·1/(0.4 + 0.6/s) = 1 → s = 0.6/0.8
    s_a = 0.6 / 0.8
    assert all(h.refit.scale == pytest.approx(s_a, rel=1e-9) for h in by["a"])
    for h, m in zip(by["a"], (1.05, 1.0, 0.9)):
        assert h.result.step_time_s == pytest.approx(0.4 + 0.6 / s_a, rel=1e-9)
        assert h.result.error == pytest.approx(m / (0.4 + 0.6 / s_a) - 1, rel=1e-9)
        assert h.in_sample_error == pytest.approx(m - 1, rel=1e-9)
    assert by["b"][1].result.error == pytest.approx(0.2, abs=1e-6) and by["b"][1].result.case is multi_b


def test_regimes_cover_the_issue_list():
    cs = sources.cases()
    counts = {k: sum(f(c) for c in cs) for k, f in loso.REGIMES.items()}
    assert all(n > 0 for n in counts.values()), counts
    assert counts["ZeRO-3 / FSDP"] == sum(c.scenario["parallel"].get("zero") == 3 for c in cs)


def test_stats():
    st = loso.stats([0.1, -0.3, 0.05])
    assert (st.rows, st.median, st.max, st.signed_median) == (3, 0.1, 0.3, 0.05)
    assert st.mean == pytest.approx(0.15)


def test_a_case_runs_with_its_own_nccl_release():
    """A case whose source dates its NCCL (``Case.nccl_version``: the Megatron-Core 2024 rows,
    NCCL 2.21.5) runs on its profile with that release's tuner tables, also when scored on a profile
    built in memory (the leave-one-source-out GEMM rescaling keeps its curve), and the release
    enters the simulation's cache key; a case without one runs on the profile as it is."""
    from dataclasses import replace

    from simulator.e2e_validation.gemm_fit import gemm_scaled
    from simulator.e2e_validation.scoring import _simulation_key, case_profile

    (c, *_) = [c for c in sources.cases() if c.source == "mcore2024"]
    assert c.nccl_version == "2.21.5"
    assert case_profile(c).nccl_version == "2.21.5" and case_profile(c).name == "dgx-h100"
    scaled = gemm_scaled("dgx-h100", 1.1)
    p = case_profile(c, scaled)
    assert p.nccl_version == "2.21.5" and p.gpu.gemm_efficiency == scaled.gpu.gemm_efficiency
    plain = _step_case("x", measured=1.0)
    assert case_profile(plain) is None and case_profile(plain, scaled) is scaled
    assert _simulation_key(c, None) != _simulation_key(replace(c, nccl_version=None), None)


def test_the_2021_megatron_rows_run_the_nccl_of_their_container():
    """The 2021 paper's runs used NGC PyTorch 20.12 (examples/sc21/SRUN.sh @de7dc40f), NCCL 2.8.3:
    every row of the three 2021 sources carries it and runs with 2.8.4's tables, not the newest."""
    from simulator.costs.nccl_versions import resolve

    cs = [c for c in sources.cases() if c.source in ("megatron2021_zero3", "megatron2021_ptdp", "megatron2021_weak")]
    assert {c.source for c in cs} == {"megatron2021_zero3", "megatron2021_ptdp", "megatron2021_weak"}
    assert {c.nccl_version for c in cs} == {"2.8.3"} and resolve("2.8.3") == "2.8.4"


def test_the_longest_rows_are_started_first():
    """replay_work: micro-batches per pipeline x layers, x 4 for MoE. The Megatron-Bridge
    Qwen3-235B H100 row (global batch 8,192, micro-batch 1, dp 256 / (tp 2 x pp 8) = 16: 512
    micro-batches, 94 MoE layers) is the heaviest of every source, so a pool of workers starts it
    first rather than leaving it to run alone at the end."""
    from simulator.e2e_validation.scoring import replay_work

    every = sources.cases(sources.SOURCES)
    qwen = [c for c in every if c.source == "bridge_moe" and "235B" in c.label and "H100" in c.label]
    assert len(qwen) == 1
    assert replay_work(qwen[0]) == 512 * 94 * 4
    assert max(every, key=replay_work) is qwen[0]
    # a dense row: GPT-3 175B at tp8 pp12 dp4 (384 GPUs), global batch 1,536 of micro-batch 1
    dense = _step_case("x", 1.0, n_gpus=384)
    dense.scenario.update(model=dict(layers=96, hidden=12288, heads=96, seq_len=2048, vocab=51200),
                          training=dict(dtype="bf16", global_batch=1536, micro_batch=1), parallel=dict(tp=8, pp=12))
    assert replay_work(dense) == 384 * 96

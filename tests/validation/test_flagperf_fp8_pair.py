"""FlagPerf's Llama 3 8B plan on H100 in BF16 and in FP8: one plan, one image, one cluster, two
precisions (data/e2e/flagperf_nvidia.csv, FlagPerf training/nvidia/llama3_8B-megatron)."""

from __future__ import annotations

import pytest

from simulator.e2e_validation import sources
from simulator.e2e_validation.rows import read_rows


def _pairs() -> list[tuple[sources.Case, sources.Case]]:
    src = [s for s in sources.SOURCES if s.key == "flagperf"]
    rows = sources.cases(src)
    fp8 = [c for c in rows if c.scenario["training"]["dtype"] == "fp8"]
    by_label = {c.label: c for c in rows}
    return [(by_label[c.label.removesuffix(" FP8")], c) for c in fp8]


def test_fp8_rows_run_the_bf16_plan_with_delayed_scaling():
    """Each FP8 row has a BF16 twin whose scenario differs only in the precision and the recipe
    (training_adapter_H100_fp8.sh adds ``--fp8-format hybrid --fp8-amax-history-len 1024`` to the
    BF16 arguments: Megatron's DelayedScaling), and neither fits the GEMM derate."""
    pairs = _pairs()
    assert sorted(c.n_gpus for _, c in pairs) == [8, 16]
    for bf16, fp8 in pairs:
        assert bf16.scenario["training"]["dtype"] == "bf16"
        a, b = dict(bf16.scenario["training"]), dict(fp8.scenario["training"])
        assert b.pop("fp8_recipe") == "delayed" and b.pop("dtype") == "fp8" and a.pop("dtype") == "bf16"
        assert a == b
        assert bf16.scenario["parallel"] == fp8.scenario["parallel"] and bf16.scenario["model"] == fp8.scenario["model"]
        assert bf16.scenario["hardware"] == fp8.scenario["hardware"] == "dgx-h100"
        assert not sources.is_fit_case(fp8)


def test_measured_fp8_gain_agrees_with_the_printed_mfu():
    """The tokens/s of the pair against the MFU FlagPerf printed beside them (the FP8 rows' range
    ends on the BF16 peak: 50.6% and 49.9%, against the BF16 rows' 39.3% and 38.4%): the two
    transcriptions give the same FP8/BF16 throughput ratio to the MFU's rounding (1.29-1.30)."""
    rows = read_rows(sources.DATA_DIR / "flagperf_nvidia.csv")
    upper = {8: 50.6, 16: 49.9}  # notes of the bf16+fp8 rows: "MFU printed as a range a-b%"
    for bf16, fp8 in _pairs():
        mfu = next(float(r["value"]) for r in rows
                   if r["metric"] == "mfu" and "H100" in r["gpu"] and int(r["num_gpus"]) == bf16.n_gpus
                   and "prec=bf16;" in r["notes"] and r["model_name"] == "Llama 3 8B")
        assert f"{upper[fp8.n_gpus]}%" in next(r["notes"] for r in rows if r["metric"] == "tokens_per_s_per_gpu"
                                               and "prec=bf16+fp8" in r["notes"] and int(r["num_gpus"]) == fp8.n_gpus)
        ratio = fp8.measured / bf16.measured
        assert ratio == pytest.approx(upper[fp8.n_gpus] / mfu, rel=0.01)
        assert 1.28 < ratio < 1.31


@pytest.mark.slow
def test_simulated_fp8_gain_on_the_plan_is_within_15_percent_of_the_measured():
    """The simulated BF16/FP8 step ratio of the pair (the share of the step FP8 speeds up, and by
    how much) against the measured 1.29-1.30. Precision is the only difference, so communication,
    attention and the GEMM derate's level cancel. The model over-prices the gain by 8.8% (1.407
    against 1.294 on 8 GPUs; 8.2% on 16: FP8 GEMMs at MAMF's best-shape FP8/BF16 ratio, and the
    casts outside the norms unpriced), with the LM head in BF16 as Megatron-Core runs it (13%,
    1.464, while it was priced in FP8); the bound keeps it from drifting further either way."""
    from simulator.e2e_validation.scoring import run_case

    for bf16, fp8 in _pairs():
        simulated = run_case(bf16).step_time_s / run_case(fp8).step_time_s
        measured = fp8.measured / bf16.measured
        assert abs(simulated / measured - 1) < 0.15, (bf16.label, simulated, measured)

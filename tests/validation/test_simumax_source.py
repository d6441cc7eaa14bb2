"""SimuMax's measured Megatron-LM steps on one B200 node (source ``simumax_b200``): the rows'
arithmetic, the plan the launcher sets, their place among dgx-b200's fitting rows, and the errors
the page's findings give in sample and held out."""

from __future__ import annotations

import statistics

import pytest

from simulator.e2e_validation import scoring, sources
from simulator.e2e_validation.rows import parse_int, read_rows
from simulator.e2e_validation.simumax_sources import buildable, simumax_b200


def _rows() -> list[dict[str, str]]:
    return read_rows(sources.DATA_DIR / "simumax_b200_megatron.csv")


def _mbc(r: dict[str, str]) -> int:
    return int(r["notes"].split("mbc=", 1)[1].split(";")[0])


def test_rows_arithmetic():
    """43 measured runs, 31 of them Llama; every plan fills the 8 GPUs, and the global batch is the
    micro-batch count x DP of one-sequence micro-batches, as run_llama3.sh computes it."""
    rows = _rows()
    assert len(rows) == 43 and sum(buildable(r) for r in rows) == 31
    for r in filter(buildable, rows):
        tp, pp, dp, cp = (parse_int(r[k], 1) for k in ("tp", "pp", "dp", "cp"))
        assert tp * pp * dp * cp == 8 and parse_int(r["micro_batch"]) == 1
        assert parse_int(r["global_batch"]) == _mbc(r) * dp
        size = "70b" if r["model_name"].startswith("LLAMA3_70B") else "405b"
        assert r["notes"].startswith(f"case=llama3_{size}_") and f"_tp{tp}_" in r["notes"]


def test_cases_build_the_launchers_plan_and_fit_dgx_b200():
    """Every setting from run_pretrain_llama3.sh; one node in BF16, so each row is a fitting row of
    the dgx-b200 derate (sources.is_fit_case)."""
    cases = simumax_b200(_rows())
    assert len(cases) == 31 and {c.scenario["hardware"] for c in cases} == {"dgx-b200"}
    for c in cases:
        p, t = c.scenario["parallel"], c.scenario["training"]
        assert (p["zero"], p["overlap_grad_reduce"], p["overlap_param_gather"], p["grad_reduce_dtype"]) == \
            (1, False, False, "fp32")
        assert p["sequence_parallel"] == (p["tp"] > 1) and "tp_overlap" not in p
        assert p.get("cp_comm", "p2p") == ("a2a" if p["cp"] > 1 else "p2p")
        assert (t["dtype"], t["recompute"], t["dropout"], t["cross_entropy"]) == ("bf16", "none", False, "vocab_parallel")
        assert c.scenario["model"]["vocab"] % (128 * p["tp"]) == 0
        assert sources.is_fit_case(c)
    assert {c.scenario["model"]["seq_len"] for c in cases} == {4096, 32768, 131072}


def test_tensor_parallel_4_rows():
    """The TP 4 x DP 2 runs (the plan between the two outliers of the findings) at the committed
    curve, whose fit they are part of: within 3% of the measured steps (-1.1% to +2.5%)."""
    cases = [c for c in simumax_b200(_rows()) if c.scenario["parallel"]["tp"] == 4]
    assert len(cases) == 6
    errors = [r.error for r in scoring.run_cases(cases)]
    assert all(abs(e) <= 0.03 for e in errors), errors


@pytest.mark.slow
def test_errors_in_sample_and_held_out():
    """Findings: at the committed curve (fitted on these 31 rows and three FP8 rows) median |error|
    2.1%, the TP 1 x PP 2 rows -6..-9% and 70B at TP 8 +17..+24%. Held out, the derate refitted on
    the three FP8 rows alone (x 0.976 of the committed curve: 0.531) reads them 2.7% slow in the
    median (signed -2.1%): that is the page's headline for this source. Before TransformerEngine's
    FP8 casts were priced that refit was 0.513 (x 0.94) and read them 5.7% slow (-4.9%); while the
    FP8 rows' output layer was also priced in FP8 (Megatron-Core runs it in BF16, the page's
    findings on Grok-1), 0.480 (x 0.88), 10.3% slow."""
    from simulator.e2e_validation import loso

    fit = [c for c in sources.cases() if sources.is_fit_case(c) and c.scenario["hardware"] == "dgx-b200"]
    assert len(fit) == 34 and sum(c.source == "simumax_b200" for c in fit) == 31
    results = list(scoring.run_cases(fit))
    mine = [r for r in results if r.case.source == "simumax_b200"]
    errors = [r.error for r in mine]
    assert statistics.median(abs(e) for e in errors) == pytest.approx(0.021, abs=0.01)
    pp2 = [r.error for r in mine if r.case.scenario["parallel"]["pp"] == 2]
    assert len(pp2) == 6 and all(-0.10 <= e <= -0.05 for e in pp2), pp2
    tp8_70b = [r.error for r in mine if r.case.scenario["parallel"]["tp"] == 8 and "70B" in r.case.label]
    assert len(tp8_70b) == 3 and all(0.15 <= e <= 0.26 for e in tp8_70b), tp8_70b
    held = [h for h in loso.leave_one_source_out(results) if h.result.case.source == "simumax_b200"]
    assert len(held) == 31 and held[0].refit.rows == 3
    assert held[0].refit.derate == pytest.approx(0.531, abs=0.005)
    st = loso.stats(h.result.error for h in held)
    assert st.median == pytest.approx(0.027, abs=0.01) and st.signed_median == pytest.approx(-0.021, abs=0.01)

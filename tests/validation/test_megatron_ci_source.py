"""Megatron-LM's functional-test golden values (``megatron_ci``, ``megatron_ci_small``): the rows are
consistent as transcribed, agree with the independent transcription of the same test cases in
``peak_memory.csv``, build the plans of their model_config.yaml, are held out, and miss as the page's
findings say."""

from __future__ import annotations

import statistics

import pytest

from simulator.config.scenario import build_scenario
from simulator.e2e_validation import scoring, sources
from simulator.e2e_validation.megatron_ci_sources import megatron_ci, megatron_ci_small
from simulator.e2e_validation.rows import parse_int, read_rows
from simulator.e2e_validation.scenarios import padded_vocab

FILE = "megatron_ci_golden_values.csv"


def _rows() -> list[dict[str, str]]:
    return read_rows(sources.DATA_DIR / FILE)


def _note(r: dict[str, str], key: str) -> str:
    return r["notes"].split(key, 1)[1].split(";")[0].strip()


def test_rows_are_consistent_as_transcribed():
    """14 rows, 7 test cases on DGX H100 and DGX A100: TP x PP x DP x CP = 8, the global batch a multiple
    of DP x micro-batch, the vocabulary Megatron's padding (a multiple of 128 x TP) of the tokenizer's
    size (NullTokenizer: --vocab-size + 1 for the eod token; GPT-2 BPE: 50,257), the value the median
    of the logged iteration times, so between their min and max."""
    rows = _rows()
    assert len(rows) == 14
    assert sorted(r["gpu"].split("-")[0] for r in rows) == ["A100"] * 7 + ["H100"] * 7
    for r in rows:
        tp, pp, dp, cp = (parse_int(r[k]) for k in ("tp", "pp", "dp", "cp"))
        assert tp * pp * dp * cp == parse_int(r["num_gpus"]) == 8
        assert parse_int(r["global_batch"]) % (dp * parse_int(r["micro_batch"])) == 0
        tok = _note(r, "tokenizer ")
        size = int(tok.split("= ", 1)[1].rstrip(")")) if tok.startswith("NullTokenizer") else 50257
        assert parse_int(r["vocab"]) == padded_vocab(size, tp), r["notes"][:60]
        lo = float(r["notes"].split("min ", 1)[1].split()[0])
        hi = float(r["notes"].split("max ", 1)[1].split(")")[0])
        assert lo <= float(r["value"]) <= hi
    # one layer per virtual stage: vp = layers / pp
    assert {(r["layers"], r["pp"], r["vp"]) for r in rows if r["vp"] != "1"} == {("32", "4", "8"), ("12", "4", "3")}


def test_rows_agree_with_the_peak_memory_transcription():
    """``peak_memory.csv`` transcribes the same test cases' model_config.yaml for their memory: the
    shape, the padded vocabulary and the plan agree wherever both files have the case."""
    mem = {r["config"]: r for r in read_rows(sources.DATA_DIR / "peak_memory.csv")
           if r["source"] == "megatron_functional_tests"}
    matched = 0
    for r in _rows():
        key = f"{_note(r, 'test_case=')} {_note(r, 'platform=')}"
        m = mem.get(key)
        if m is None:
            continue
        matched += 1
        for k in ("layers", "hidden", "heads", "kv_heads", "ffn_hidden", "vocab", "seq_len", "tp", "pp", "vp", "cp",
                  "micro_batch", "global_batch"):
            assert r[k] == m[k], (key, k)
        assert (r["recompute"], r["sequence_parallel"]) == (m["recompute"], m["sequence_parallel"])
    assert matched == 8  # the two 7B cases and the CP and vp1 cases, on H100 and A100


def test_builders_build_the_config_plans_held_out():
    """Four 7B cases (scored) and ten small ones (not among the sources: the page's findings), every one
    held out; the arguments of model_config.yaml: no gradient-accumulation fusion, fp32 main-gradient
    reduction, interleaved 1F1B where virtual stages are set, the distributed optimizer only where the
    case sets it, the attention backend it names, dropout off only in the CP case."""
    rows = _rows()
    ci, small = megatron_ci(rows), megatron_ci_small(rows)
    assert len(ci) == 4 and len(small) == 10
    assert [c.key for c in sources.SOURCES].count("megatron_ci") == 1
    assert "megatron_ci_small" not in {s.key for s in sources.SOURCES}
    assert {"megatron_ci", "megatron_ci_small"} <= sources.HELD_OUT_SOURCES
    for c in ci + small:
        build_scenario(c.scenario)
        assert not sources.is_fit_case(c)
        p, t = c.scenario["parallel"], c.scenario["training"]
        assert p["gradient_accumulation_fusion"] is False and p["grad_reduce_dtype"] == "fp32"
        assert (p.get("pp_schedule") == "interleaved") == (p.get("vp", 1) > 1)
        assert t["dtype"] == "bf16" and c.n_gpus == 8
        assert t.get("dropout", True) or p["cp"] == 2
    assert {(c.scenario["parallel"]["tp"], c.scenario["parallel"]["zero"]) for c in ci} == {(1, 1), (4, 1)}
    attention = {c.label.split(" ", 4)[-1]: c.scenario["training"]["attention"] for c in small}
    assert attention["tp1 pp4 vp3 dp2"] == attention["tp4 pp1 dp2"] == "unfused"
    assert attention["tp2 pp2 cp2 dp1"] == "flash2" and attention["tp2 pp2 dp2"] == "auto"


def test_7b_cases_held_out_error():
    """Held out (step time, positive = predicted too fast): TP 1 x PP 4 vp 8 +7.7% (H100) and +17.6%
    (A100), TP 4 without sequence parallelism +21.3% and +23.4%: median 19.5%, every row optimistic.
    Not modelled: the deterministic attention backward (NVTE_ALLOW_NONDETERMINISTIC_ALGO=0), the
    CI's per-step logging and the per-layer host floor of the small cases below. Bounds at what the
    model reaches today."""
    rs = list(scoring.run_cases(megatron_ci(_rows())))
    errors = [r.error for r in rs]
    assert all(0.0 < e <= 0.27 for e in errors), errors
    assert statistics.median(abs(e) for e in errors) <= 0.22


def test_small_cases_show_a_per_layer_floor_the_model_lacks():
    """The small GPT (hidden 512) measured 6.1-9.2 ms per layer and micro-batch on a rank (forward and
    backward; 8.5-17.1 ms on A100), where the model's step is 0.8-5.7 ms per layer and micro-batch:
    the measured step is a per-layer, per-micro-batch host floor, not the kernels (+146% to +783%).
    Bounds at what the model reaches today: tighten them when that cost is priced."""
    rs = list(scoring.run_cases(megatron_ci_small(_rows())))
    for r in rs:
        p, t = r.case.scenario["parallel"], r.case.scenario["training"]
        dp = 8 // (p["tp"] * p["pp"] * p["cp"])
        passes = r.case.scenario["model"]["layers"] // p["pp"] * t["global_batch"] // (dp * t["micro_batch"])
        assert r.case.measured / passes >= 0.006, r.case.label
        assert 1.0 <= r.error <= 9.0, (r.case.label, r.error)
    assert statistics.median(r.error for r in rs) == pytest.approx(6.4, abs=1.5)

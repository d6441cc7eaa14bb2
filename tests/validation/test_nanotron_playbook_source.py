"""Hugging Face's Ultra-Scale Playbook summary (source ``nanotron_playbook``): the figure's cells are
consistent as transcribed, the MFU converts with nanotron's own FLOP count, the rows build the
printed plans with nanotron's pipeline split, are held out, and score as the findings say."""

from __future__ import annotations

import statistics

import pytest

from simulator.e2e_validation import scoring, sources
from simulator.e2e_validation.nanotron_sources import (H100_BF16_PEAK, measured_tokens_per_gpu,
                                                       nanotron_model_flops_per_token, nanotron_playbook,
                                                       nanotron_pp_layers)
from simulator.e2e_validation.rows import parse_int, read_rows

VOCAB, SEQ = 131072, 4096
# (layers, hidden, heads, ffn) of scripts/scaling_benchmarks.py's model_configs, and the figure's size label
SHAPES = {"nanotron-1.34B": (16, 2048, 32, 8192, "1.34"), "nanotron-3.57B": (28, 3072, 32, 8192, "3.57"),
          "nanotron-8.86B": (32, 4096, 32, 14336, "8.86"), "nanotron-80B": (80, 8192, 64, 28672, "80.0")}


def _rows() -> list[dict[str, str]]:
    return read_rows(sources.DATA_DIR / "nanotron_playbook_h100.csv")


def _params(layers: int, hidden: int, ffn: int) -> float:
    """scaling_benchmarks.estimate_num_params with MHA: embeddings tied below ffn 10,000."""
    vocab = VOCAB * hidden * (1 if ffn < 10_000 else 2)
    return vocab + layers * (3 * hidden * ffn + 4 * hidden * hidden)


def test_cells_are_consistent_as_transcribed():
    """26 cells (7 node counts x 4 models, 80B missing on 1 and 2 nodes); DP x TP x PP = 8 x nodes;
    DP x GAS x MBS = 256 sequences of 4,096 (the playbook's 1M tokens); the shapes give the figure's
    size labels (estimate_num_params: 1.342, 3.571, 8.861, 79.99 B)."""
    rows = _rows()
    assert len(rows) == 26 and all(r["metric"] == "mfu" for r in rows)
    assert sum(r["model_name"] == "nanotron-80B" for r in rows) == 5
    for r in rows:
        n, tp, pp, dp, mb = (parse_int(r[k]) for k in ("num_gpus", "tp", "pp", "dp", "micro_batch"))
        gas = int(r["notes"].split("gas=")[1].split(";")[0])
        assert dp * tp * pp == n and dp * gas * mb == parse_int(r["global_batch"]) == 256
        layers, hidden, heads, ffn, label = SHAPES[r["model_name"]]
        assert (parse_int(r["layers"]), parse_int(r["hidden"]), parse_int(r["heads"]), parse_int(r["ffn_hidden"])) == \
            (layers, hidden, heads, ffn)
        assert parse_int(r["kv_heads"]) == heads and parse_int(r["seq_len"]) == SEQ
        decimals = len(label.split(".")[1])
        assert f"{_params(layers, hidden, ffn) / 1e9:.{decimals}f}" == label == r["params_b"]
        assert 0 < float(r["value"]) < 50


def test_flop_count_matches_nanotrons_own_print():
    """scaling_benchmarks.py's comment for the 3.57B model at TP 2, MBS 3: "363.66 TFLOPs,
    14167.25 tok/s/gpu", i.e. 25.669 GFLOP per token; the MHA count with the full score matrix:
    3 x (l (8h^2 + 4sh + 6hF) + 2hV) per token."""
    per_token = nanotron_model_flops_per_token(28, 3072, 32, 32, 8192, VOCAB, SEQ)
    assert per_token == 3 * (28 * (8 * 3072**2 + 4 * SEQ * 3072 + 6 * 3072 * 8192) + 2 * 3072 * VOCAB)
    assert per_token == pytest.approx(363.66e12 / 14167.25, rel=1e-5)
    # The 1-node 1.34B cell: 44.32% of 989 TFLOP/s over 9.664 GFLOP per token
    r = next(r for r in _rows() if r["model_name"] == "nanotron-1.34B" and r["num_gpus"] == "8")
    assert measured_tokens_per_gpu(r) == pytest.approx(0.4432 * H100_BF16_PEAK / 9.663676416e9, rel=1e-9)


def test_pipeline_split_follows_nanotrons_cost_balance():
    """A layer costs 4h^2 + 3hF, the head Vh: for the 1.34B model the head weighs four layers, so
    PP 2 puts 11 layers on stage 0 and 5 beside the head; every split covers all layers."""
    assert nanotron_pp_layers(16, 2048, 8192, VOCAB, 2) == (11, 5)
    assert nanotron_pp_layers(28, 3072, 8192, VOCAB, 2) == (16, 12)
    assert nanotron_pp_layers(80, 8192, 28672, VOCAB, 4) == (21, 20, 20, 19)
    split = nanotron_pp_layers(80, 8192, 28672, VOCAB, 32)
    assert sum(split) == 80 and len(split) == 32 and min(split) >= 1


def test_rows_build_the_printed_plans_held_out():
    """Every cell: bf16, no recompute, fp32 gradients reduced in DDP buckets during the backward,
    ZeRO stage as printed, sequence parallel with TP, nanotron's split with PP; flash-attn 2,
    PyTorch ops; the dgx-h100 profile; held out."""
    cs = nanotron_playbook(_rows())
    assert len(cs) == 26
    assert "nanotron_playbook" in sources.HELD_OUT_SOURCES and not any(sources.is_fit_case(c) for c in cs)
    for c in cs:
        p, t, m = c.scenario["parallel"], c.scenario["training"], c.scenario["model"]
        assert (t["dtype"], t["recompute"], t["attention"], t["fused_kernels"]) == ("bf16", "none", "flash2", False)
        assert (p["grad_reduce_dtype"], p["overlap_grad_reduce"], p["gradient_accumulation_fusion"]) == ("fp32", True, False)
        assert p.get("sequence_parallel", False) == (p["tp"] > 1)
        assert ("pp_layers" in p) == (p["pp"] > 1)
        assert m["tied_embeddings"] == (m["ffn_hidden"] < 10_000)
        assert c.scenario["hardware"] == "dgx-h100" and c.metric == "tokens_per_s_per_gpu"


@pytest.mark.slow
def test_nanotron_playbook_errors():
    """Held out, nothing fitted on them (about 40 CPU seconds). Doc: 26 rows, median |error| 7.2%,
    signed median +0.0%. Up to 32 nodes (21 rows) within -18% to +30%, median |error| 5.7%, signed
    -2.4% (the 1.34B plans on 1-4 nodes the most pessimistic, -15% to -18%); the four 64-node rows
    +56% to +168% (0.22-0.29 s per step missing whatever their data-parallel traffic, 2-18 GB per
    GPU) and 80B on 4 nodes +157% (the source's memory-pressure run, 14.8% MFU): the page's
    findings."""
    results = list(scoring.run_cases(nanotron_playbook(_rows())))
    errors = {r.case.label: r.error for r in results}
    assert statistics.median(abs(e) for e in errors.values()) <= 0.08
    assert abs(statistics.median(errors.values())) <= 0.03
    far = {k for k, e in errors.items() if abs(e) > 0.40}
    assert far == {k for k in errors if k.endswith("512 GPUs")} | {"nanotron-80B dp1 tp8 pp4 mbs1 gas256 zero0 32 GPUs"}
    assert all(e > 0.5 for k, e in errors.items() if k in far)
    near = [e for k, e in errors.items() if k not in far]
    assert len(near) == 21 and statistics.median(abs(e) for e in near) <= 0.065
    assert -0.20 <= min(near) and max(near) <= 0.32
    small = [e for k, e in errors.items() if k.startswith("nanotron-1.34B") and " pp2 " in k and k not in far]
    assert len(small) == 4 and all(-0.20 <= e <= -0.05 for e in small)

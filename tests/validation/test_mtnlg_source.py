"""Megatron-Turing NLG 530B (arXiv:2201.11990 sec. 2.4, source ``mtnlg``): the three timings are
consistent with the printed TFLOP/s, the rows build the printed plan, are held out, and score as
the page's findings say."""

from __future__ import annotations

import pytest

from simulator.config.scenario import build_scenario
from simulator.e2e_validation import scoring, sources
from simulator.e2e_validation.mtnlg_sources import mtnlg
from simulator.e2e_validation.rows import parse_int, read_rows


def _rows() -> list[dict[str, str]]:
    return read_rows(sources.DATA_DIR / "mtnlg_530b_2201_11990.csv")


def test_printed_tflops_are_megatron_eq3_with_recompute_of_the_printed_times():
    """96 B s l h^2 (1 + s/6h + V/16lh) with B 1,920, s 2,048, l 105, h 20,480 and Megatron's
    padded vocabulary (51,200) over time x GPUs: 125.7, 120.4, 113.5 against 126, 121, 113 (within
    0.6%); TP x PP x DP = GPUs on every row."""
    rows = _rows()
    assert len(rows) == 6
    by_n: dict[int, dict[str, float]] = {}
    for r in rows:
        n = parse_int(r["num_gpus"])
        assert parse_int(r["tp"]) * parse_int(r["pp"]) * parse_int(r["dp"]) == n
        by_n.setdefault(n, {})[r["metric"]] = float(r["value"])
    h, s, l, v, b = 20480, 2048, 105, 51200, 1920
    flops = 96 * b * s * l * h**2 * (1 + s / (6 * h) + v / (16 * l * h))
    assert sorted(by_n) == [2240, 2800, 3360]
    for n, m in by_n.items():
        assert flops / (m["step_time_s"] * n) / 1e12 == pytest.approx(m["tflops_per_gpu"], rel=6e-3)


def test_rows_build_the_printed_plan_held_out():
    """TP 8 x PP 35 as printed, DP 8/10/12 at a fixed batch (240, 192, 160 micro-batches of 1 per
    pipeline), ZeRO-1, fp16, full recompute, unfused gradient accumulation (Megatron-DeepSpeed's
    plain wgrad matmul), the vocabulary padded to 51,200; no row fits."""
    cs = mtnlg(_rows())
    assert [c.n_gpus for c in cs] == [2240, 2800, 3360]
    assert "mtnlg" in sources.HELD_OUT_SOURCES and [s.key for s in sources.SOURCES].count("mtnlg") == 1
    micro = []
    for c in cs:
        build_scenario(c.scenario)
        p, t = c.scenario["parallel"], c.scenario["training"]
        assert not sources.is_fit_case(c) and c.metric == "step_time_s"
        assert (p["tp"], p["pp"], p["zero"], p.get("vp", 1)) == (8, 35, 1, 1)
        assert p["pp_engine"] == "deepspeed" and p["scatter_gather_tensors_in_pipeline"]
        assert p["gradient_accumulation_fusion"] is False
        assert (t["dtype"], t["recompute"], t["micro_batch"]) == ("fp16", "full", 1)
        assert c.scenario["model"]["vocab"] == 51200
        micro.append(t["global_batch"] // (c.n_gpus // 280))
    assert micro == [240, 192, 160]


@pytest.mark.slow
def test_held_out_error_is_pinned():
    """Held out (about 20 s of simulation): +22.8%, +24.3%, +28.0% (positive: the simulator faster;
    +28.0%, +29.6%, +33.5% with fused gradient accumulation, which the 2021 stack did not have),
    growing with DP at the fixed batch. The gap is pinned, not closed: the model prices Megatron-LM's
    own 530B runs at this split within 5% (the page's findings)."""
    errs = [r.error for r in scoring.run_cases(mtnlg(_rows()))]
    assert all(0.20 <= e <= 0.31 for e in errs), errs
    assert errs[0] < errs[1] < errs[2]

"""`clustersim compare` and `clustersim sweep`: exit codes, error messages naming the field,
the JSON contract of DESIGN.md, the table and the plot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from simulator.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_PLANS = ROOT / "scenarios" / "plans" / "llama3-8b-h100-plans.yaml"
QUICK = ROOT / "scenarios" / "quickstart.yaml"
PLAN_KEYS = {"parallel", "step_time_s", "fits_in_memory", "memory_gib_per_gpu", "reason"}
PARALLEL_KEYS = {"tp", "pp", "cp", "ulysses", "dp", "zero", "micro_batch"}


@pytest.fixture()
def tiny(tmp_path: Path) -> Path:
    """A 2-layer 0.2B model on one DGX H100 node (8 GPUs), 8 sequences per step."""
    doc = dict(name="tiny", hardware="dgx-h100", nodes=1,
               model=dict(layers=2, hidden=1024, heads=16, kv_heads=8, vocab=32000, mlp="gelu", seq_len=1024),
               training=dict(micro_batch=1, global_batch=8), parallel=dict(tp=2, sequence_parallel=True))
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def write_plans(tmp_path: Path, plans) -> Path:
    path = tmp_path / "plans.yaml"
    path.write_text(yaml.safe_dump({"plans": plans}))
    return path


def test_compare_ranks_plans_and_writes_json_and_plot(tiny, tmp_path, capsys):
    plans = write_plans(tmp_path, [
        {"name": "tp8", "tp": 8},
        {"name": "dp8", "tp": 1, "sequence_parallel": False, "zero": 1},
        {"name": "tp16", "tp": 16},            # 16 does not divide 8 GPUs: reason
        {"name": "dp4-mb2", "tp": 2, "micro_batch": 2, "zero": 1},  # 8 / (2 x 4) = 1 micro-batch
    ])
    out, png = tmp_path / "c.json", tmp_path / "c.png"
    assert main(["compare", str(tiny), "--plans", str(plans), "--json", str(out), "--plot", str(png)]) == 0
    text = capsys.readouterr().out
    assert "step ms" in text and "best:" in text and "tp16" in text
    doc = json.loads(out.read_text())
    assert {"plans", "best"} <= set(doc)
    assert len(doc["plans"]) == 4
    for plan in doc["plans"]:
        assert PLAN_KEYS <= set(plan) and PARALLEL_KEYS <= set(plan["parallel"])
    ran = [p for p in doc["plans"] if p["step_time_s"] is not None]
    assert len(ran) == 3
    assert [p["step_time_s"] for p in ran] == sorted(p["step_time_s"] for p in ran)
    assert doc["plans"][:3] == ran  # simulated plans first
    assert doc["best"]["parallel"] == ran[0]["parallel"]
    bad = doc["plans"][3]
    assert bad["label"] == "tp16" and "does not divide 8 GPUs" in bad["reason"]
    mb2 = next(p for p in doc["plans"] if p["label"] == "dp4-mb2")
    assert mb2["parallel"]["micro_batch"] == 2 and mb2["parallel"]["dp"] == 4
    for p in ran:  # the breakdown partitions the step
        bd = p["breakdown_s"]
        total = bd["compute"] + sum(bd["exposed_comm"].values()) + bd["pipeline_bubble"]
        assert total == pytest.approx(p["step_time_s"], rel=1e-6)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("plans, field", [
    ([{"tp": 2}, {"tp": 4}, {"tpp": 8}], "plans[2].tpp"),
    ([{"tp": "eight"}], "plans[0].tp"),
    ([{"tp": 2, "micro_batch": 0}], "plans[0].micro_batch"),
    ([{"tp": 2, "vp": 2}], "plans[0].vp"),      # vp needs the interleaved schedule
    ([], "plans"),
])
def test_bad_plans_file_exits_2_naming_file_and_field(tiny, tmp_path, capsys, plans, field):
    path = write_plans(tmp_path, plans)
    assert main(["compare", str(tiny), "--plans", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and field in err
    assert "Traceback" not in err


def test_plans_file_must_have_a_plans_list(tiny, tmp_path, capsys):
    path = tmp_path / "p.yaml"
    path.write_text("- tp: 2\n")
    assert main(["compare", str(tiny), "--plans", str(path)]) == 2
    assert str(path) in capsys.readouterr().err
    assert main(["compare", str(tiny), "--plans", str(tmp_path / "missing.yaml")]) == 2


def test_sweep_with_fixed_axis_and_json_to_stdout(tiny, capsys):
    assert main(["sweep", str(tiny), "--fix", "tp=2", "--max", "pp=2", "--json", "-"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["plans"] and all(p["parallel"]["tp"] == 2 for p in doc["plans"])
    assert {p["parallel"]["pp"] for p in doc["plans"]} <= {1, 2}
    ran = [p["step_time_s"] for p in doc["plans"] if p["step_time_s"] is not None]
    assert ran == sorted(ran) and doc["best"]["step_time_s"] == ran[0]


@pytest.mark.parametrize("argv", [["--fix", "tq=2"], ["--fix", "tp=x"], ["--jobs", "0"], ["--max-plans", "0"],
                                  ["--fix", "tp=3"]])
def test_sweep_bad_options_exit_2(tiny, capsys, argv):
    assert main(["sweep", str(tiny), *argv]) == 2
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.slow
def test_bundled_plans_example_runs_on_the_quickstart(tmp_path):
    out = tmp_path / "c.json"
    assert main(["compare", str(QUICK), "--plans", str(EXAMPLE_PLANS), "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    by_label = {p["label"]: p for p in doc["plans"]}
    assert by_label["cp2-dp4-nozero"]["fits_in_memory"] is False
    assert by_label["cp2-dp4-nozero"]["step_time_s"] is None
    assert "global_batch" in by_label["dp8-zero3"]["reason"]
    assert doc["best"]["step_time_s"] == doc["plans"][0]["step_time_s"] is not None

"""`clustersim run`: the JSON contract of DESIGN.md, exit codes, outputs, and the physics the
user relies on (ring-exchange TP overlap beats no overlap when GEMMs dominate)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from simulator.cli import main

ROOT = Path(__file__).resolve().parents[2]
QUICK = ROOT / "scenarios" / "quickstart.yaml"

TOP_KEYS = {"scenario", "step_time_s", "tokens_per_s", "mfu", "breakdown_s", "comm_bytes_per_gpu",
            "memory_gib_per_gpu", "fits_in_memory", "sim"}
COMM = {"allgather", "reducescatter", "allreduce", "alltoall", "sendrecv"}


def small_scenario(tmp_path: Path, **parallel) -> Path:
    """The quickstart cut to 2 layers and 2 micro-batches, with `parallel` overrides."""
    doc = yaml.safe_load(QUICK.read_text())
    doc["model"]["layers"] = 2
    doc["training"]["global_batch"] = 2
    doc["parallel"].update(parallel)
    path = tmp_path / f"s-{len(list(tmp_path.iterdir()))}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def run_json(path: Path, tmp_path: Path, *extra: str) -> dict:
    out = tmp_path / "out.json"
    assert main(["run", str(path), "--json", str(out), *extra]) == 0
    return json.loads(out.read_text())


def test_run_json_has_the_design_keys(tmp_path, capsys):
    trace, plot = tmp_path / "t.json", tmp_path / "p.png"
    doc = run_json(small_scenario(tmp_path), tmp_path, "--trace", str(trace), "--plot", str(plot))
    assert TOP_KEYS <= set(doc)
    assert set(doc["breakdown_s"]) >= {"compute", "exposed_comm", "pipeline_bubble"}
    assert set(doc["breakdown_s"]["exposed_comm"]) == COMM
    assert set(doc["comm_bytes_per_gpu"]) == COMM
    assert set(doc["memory_gib_per_gpu"]) >= {"params", "grads", "optimizer", "activations", "total"}
    assert set(doc["sim"]) >= {"ranks", "ranks_simulated", "events"}
    assert set(doc["meta"]) == {"wall_s"} and doc["meta"]["wall_s"] > 0
    assert doc["sim"]["ranks"] == 8 and doc["sim"]["events"] > 0
    bd = doc["breakdown_s"]
    total = bd["compute"] + sum(bd["exposed_comm"].values()) + bd["pipeline_bubble"]
    assert total == pytest.approx(doc["step_time_s"], rel=0.05)
    assert 0 < doc["mfu"] <= 1
    # tokens/s is the step's tokens over the step time: 2 sequences of 4096 tokens
    assert doc["tokens_per_s"] == pytest.approx(2 * 4096 / doc["step_time_s"])
    # TP with SP: every GPU takes part in AllGathers and ReduceScatters, nothing else
    assert doc["comm_bytes_per_gpu"]["allgather"] > 0 and doc["comm_bytes_per_gpu"]["reducescatter"] > 0
    events = json.loads(trace.read_text())["traceEvents"]
    assert {e["pid"] for e in events} == set(range(8)) | {1_000_000}  # one process per rank, one of link counters
    assert {e["pid"] for e in events if e["ph"] == "C"} == {1_000_000}
    assert any(e.get("args", {}).get("algorithm") for e in events)
    assert (tmp_path / "p-gantt.png").stat().st_size > 0 and (tmp_path / "p-breakdown.png").stat().st_size > 0
    assert "step time" in capsys.readouterr().out


def test_step_time_is_at_least_the_compute_lower_bound(tmp_path):
    from simulator.config.scenario import load_scenario
    from simulator.costs.compute import compute_time
    from simulator.schedule.build import build_schedule
    from simulator.schedule.ir import ComputeOp

    path = small_scenario(tmp_path)
    doc = run_json(path, tmp_path)
    scn = load_scenario(path)
    sched = build_schedule(scn)
    busy = max(sum(compute_time(op, scn.profile.gpu) for op in prog if isinstance(op, ComputeOp))
               for prog in sched.programs.values())
    assert doc["step_time_s"] >= busy * (1 - 1e-9)
    assert doc["breakdown_s"]["compute"] >= busy * (1 - 1e-9)


def test_bad_scenario_exits_2_naming_the_field(tmp_path, capsys):
    doc = yaml.safe_load(QUICK.read_text())
    doc["parallel"]["tp"] = 3
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(doc))
    assert main(["run", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.yaml" in err and "tp" in err and "Traceback" not in err


def test_missing_file_exits_2(tmp_path, capsys):
    assert main(["run", str(tmp_path / "nope.yaml")]) == 2
    assert "nope.yaml" in capsys.readouterr().err


def test_ring_exchange_overlap_beats_no_overlap_when_compute_dominates(tmp_path):
    """GPT-3 175B layers (hidden 12288) on TP8: GEMMs are long enough to hide the TP traffic."""
    src = yaml.safe_load((ROOT / "scenarios" / "gpt3-175b-tp8-ringexchange.yaml").read_text())
    src["model"]["layers"] = 2
    src["training"]["global_batch"] = 2
    results = {}
    for mode in ("none", "ring_exchange"):
        src["parallel"]["tp_overlap"] = mode
        path = tmp_path / f"{mode}.yaml"
        path.write_text(yaml.safe_dump(src))
        results[mode] = run_json(path, tmp_path)
    none, ring = results["none"], results["ring_exchange"]
    exposed = lambda d: d["breakdown_s"]["exposed_comm"]["allgather"] + d["breakdown_s"]["exposed_comm"]["reducescatter"]
    assert exposed(none) > 0
    assert ring["step_time_s"] < none["step_time_s"]
    assert ring["breakdown_s"]["exposed_comm"]["allgather"] + ring["breakdown_s"]["exposed_comm"]["reducescatter"] \
        + ring["breakdown_s"]["exposed_comm"]["sendrecv"] < exposed(none)


def test_same_scenario_twice_gives_identical_json_apart_from_meta(tmp_path):
    """Byte-identical once the ``meta`` block (the wall time) is dropped: nothing else in the
    document depends on the run."""
    path = small_scenario(tmp_path)
    texts = []
    for name in ("a.json", "b.json"):
        assert main(["run", str(path), "--json", str(tmp_path / name)]) == 0
        doc = json.loads((tmp_path / name).read_text())
        assert list(doc)[0] == "inputs" and list(doc)[-1] == "meta"
        doc.pop("meta")
        texts.append(json.dumps(doc, indent=2))
    assert texts[0] == texts[1]


def test_hardware_option_runs_the_scenario_on_another_profile(tmp_path, capsys, monkeypatch):
    """--hardware replaces the scenario's hardware: a bundled name, or an overlay path relative
    to the working directory (what `clustersim calibrate` writes). The scenario's own profile by
    name gives the same step; an overlay that halves every GEMM's efficiency a slower one, by
    no more than twice."""
    from simulator.config.hardware import load_profile

    scn = small_scenario(tmp_path)
    base = run_json(scn, tmp_path)
    same = run_json(scn, tmp_path, "--hardware", "dgx-h100")
    assert (same["step_time_s"], same["breakdown_s"]) == (base["step_time_s"], base["breakdown_s"])
    h100 = load_profile("dgx-h100")
    half = [{"flops": p.flops, "efficiency": p.efficiency / 2} for p in h100.gpu.gemm_efficiency]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "slow.yaml").write_text(yaml.safe_dump({"base": "dgx-h100", "gpu": {"gemm_efficiency": half}}))
    slow = run_json(scn, tmp_path, "--hardware", "slow.yaml")
    assert base["breakdown_s"]["compute"] < slow["breakdown_s"]["compute"] < 2 * base["breakdown_s"]["compute"]
    assert main(["check", str(scn), "--hardware", "slow.yaml"]) == 0
    capsys.readouterr()
    assert main(["run", str(scn), "--hardware", "no-such-profile"]) == 2
    err = capsys.readouterr().err
    assert "command line: --hardware: unknown hardware profile 'no-such-profile'" in err and "Traceback" not in err

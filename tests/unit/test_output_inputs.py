"""Every number beside its inputs: the GPU count, the model and sequence length, the global batch,
the NCCL tables and the command line's algorithm pins appear in `run`'s JSON, table and trace,
and a plan comparison's plot title names what its plans share."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from simulator.cli import main

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "scenarios" / "quickstart.yaml"


def test_run_echoes_gpus_model_batch_nccl_and_pins(tmp_path, capsys):
    out, trace = tmp_path / "r.json", tmp_path / "r.trace.json.gz"
    assert main(["run", str(QUICKSTART), "--algo", "ring", "--json", str(out), "--trace", str(trace)]) == 0
    table = capsys.readouterr().out
    inputs = json.loads(out.read_text())["inputs"]
    # quickstart.yaml: 1 dgx-h100 node of 8 GPUs, llama3-8b at seq 4096, global batch 4, no nccl.version
    assert inputs["nodes"] == 1 and inputs["gpus"] == 8
    assert inputs["model"] == {"preset": "llama3-8b", "seq_len": 4096, "dtype": "bf16", "recompute": "none"}
    assert inputs["plan"]["global_batch"] == 4
    assert inputs["nccl_version"] is None and inputs["nccl_tables"] == "2.30.7"
    assert inputs["algo"] == "ring" and "proto" not in inputs
    line = next(s for s in table.splitlines() if s.startswith("inputs: "))
    for part in ("1 nodes x 8 GPUs = 8 GPUs", "NCCL 2.30.7 tuner tables", "model llama3-8b seq 4096 bf16",
                 "global_batch=4", "pinned algo ring"):
        assert part in line
    assert json.loads(gzip.decompress(trace.read_bytes()))["otherData"]["inputs"] == inputs


def test_profile_nccl_version_is_echoed_with_the_tables_it_selects(tmp_path):
    from simulator.config.scenario import load_scenario
    from simulator.report.inputs import inputs_line, scenario_inputs

    profile = tmp_path / "old-nccl.yaml"
    profile.write_text("base: dgx-h100\nnccl:\n  version: 2.18.5\n")
    inputs = scenario_inputs(load_scenario(QUICKSTART, str(profile)))
    assert inputs["nccl_version"] == "2.18.5" and inputs["nccl_tables"] == "2.18.3"
    assert "NCCL 2.18.5 tuner tables (those of 2.18.3)" in inputs_line(inputs)


def test_comparison_title_names_what_the_plans_share():
    from simulator.config.scenario import load_scenario
    from simulator.report.inputs import fixed_inputs_title, inputs_line, scenario_inputs

    inputs = scenario_inputs(load_scenario(QUICKSTART))
    assert fixed_inputs_title(inputs) == ("quickstart: dgx-h100, 1 x 8 GPUs, llama3-8b seq 4096 bf16, "
                                          "global batch 4, NCCL 2.30.7")
    assert "base plan (each row overrides it) tp=8" in inputs_line(inputs, "base plan (each row overrides it)")


def test_the_hosts_pace_is_echoed_where_it_is_not_the_reference():
    """A profile whose host is slower than a DGX H100's (``node.host_time_scale``) says so beside
    the step it paces; a DGX H100 node prints nothing more."""
    from simulator.config.scenario import load_scenario
    from simulator.report.inputs import inputs_line, scenario_inputs

    h100 = scenario_inputs(load_scenario(QUICKSTART))
    assert h100["host_time_scale"] == 1.0 and "host x" not in inputs_line(h100)
    a100 = scenario_inputs(load_scenario(QUICKSTART, "dgx-a100"))
    assert a100["host_time_scale"] == 1.47
    assert "hardware dgx-a100; host x1.47 a DGX H100's time per op; 1 nodes" in inputs_line(a100)

"""docs/scenario-reference.md is generated from the schema and committed up to date."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _generator():
    spec = importlib.util.spec_from_file_location("gen_scenario_reference", ROOT / "docs" / "gen_scenario_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_reference_matches_the_schema():
    gen = _generator()
    assert (ROOT / "docs" / "scenario-reference.md").read_text() == gen.render(), \
        "run: python docs/gen_scenario_reference.py"


def test_reference_lists_every_design_key():
    text = _generator().render()
    for key in ("hardware", "nodes", "preset", "seq_len", "micro_batch", "global_batch", "dtype", "recompute",
                "tp", "sequence_parallel", "tp_overlap", "pp", "pp_schedule", "vp", "cp", "cp_comm", "ulysses",
                "zero", "order"):
        assert f"| `{key}` |" in text, key

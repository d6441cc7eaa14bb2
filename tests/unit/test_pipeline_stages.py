"""Pipeline stages in `run`'s report: each stage's compute per step (report.summary.stage_compute_s)
and the split of the layers that evens them out (report/stage_balance.py). The breakdown is read on
the first stage, whose idle time is both the pipeline's warm-up and flush and its wait for a stage
that computes longer; the per-stage figures tell the two apart. The min-max split is checked
against every split of small cases, and the suggestion against a replay of it."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import pytest
import yaml

from simulator.report.stage_balance import balanced_split
from simulator.report.summary import format_table, report_to_json
from simulator.simulation import simulate

ROOT = Path(__file__).resolve().parents[2]
QUICK = ROOT / "scenarios" / "quickstart.yaml"


def _scenario(tmp_path: Path, layers: int, pp: int, pp_layers: list[int] | None = None) -> Path:
    """The quickstart (Llama 3 8B) cut to `layers`, TP 4 on half a node, 8 micro-batches."""
    doc = yaml.safe_load(QUICK.read_text())
    doc["model"]["layers"] = layers
    doc["training"]["global_batch"] = 8
    doc["parallel"].update(tp=4, pp=pp, pp_layers=pp_layers)
    path = tmp_path / f"l{layers}-pp{pp}-{pp_layers}.yaml".replace(" ", "")
    path.write_text(yaml.safe_dump(doc))
    return path


def test_one_stage_reports_none(tmp_path):
    sim = simulate(_scenario(tmp_path, 4, 1))
    assert sim.report.stage_compute_s is None
    assert report_to_json(sim.report)["pipeline_stage_compute_s"] is None
    assert "pipeline stages" not in format_table(sim.report)


def test_stages_are_the_busiest_rank_of_each_and_follow_their_layers(tmp_path):
    even = simulate(_scenario(tmp_path, 4, 2, [2, 2]))
    uneven = simulate(_scenario(tmp_path, 4, 2, [3, 1]))
    for sim in (even, uneven):
        grid = sim.schedule.grid
        by_stage = [max(sim.trace.compute_busy(r) for r in sim.trace.ranks if grid.coord(r, "pp") == s)
                    for s in range(2)]
        assert sim.report.stage_compute_s == by_stage
        assert report_to_json(sim.report)["pipeline_stage_compute_s"] == by_stage
    # moving a layer moves its kernels: the step's compute summed over the stages is conserved,
    # and the stage given the third layer computes that much longer
    a, b = even.report.stage_compute_s, uneven.report.stage_compute_s
    assert sum(b) == pytest.approx(sum(a), rel=0.01)
    per_layer = (b[0] - a[0] + a[1] - b[1]) / 2
    assert per_layer > 0
    assert b[0] - a[0] == pytest.approx(per_layer, rel=0.02)
    assert uneven.report.stage_layers == [3, 1]
    lines = format_table(uneven.report).splitlines()
    at = lines.index("pipeline stages (compute per step; parallel.pp_layers moves layers between them):")
    # Llama 3 8B's LM head (128,256 x 4,096) and loss on the last stage outweigh two layers
    assert b[1] > b[0]
    assert lines[at + 1] == (f"  least stage 0 (3 layers) {b[0] * 1e3:.1f} ms   most stage 1 (1 layer) "
                             f"{b[1] * 1e3:.1f} ms   least/most {100 * b[0] / b[1]:.0f}%")
    # with the head's stage made heavier still, the first stage (the critical rank) idles longer
    mirror = simulate(_scenario(tmp_path, 4, 2, [1, 3]))
    crit = mirror.report.critical_rank
    assert mirror.schedule.grid.coord(crit, "pp") == 0
    assert mirror.report.breakdown_s.pipeline_bubble > even.report.breakdown_s.pipeline_bubble


def _loads(layer_s: list[float], fixed_s: list[float], counts: list[int]) -> list[float]:
    """Each stage's fixed load plus its layers, the stages' bounds taken from running totals."""
    bounds = list(itertools.accumulate(counts, initial=0))
    return [f + sum(layer_s[a:b]) for f, a, b in zip(fixed_s, bounds, bounds[1:])]


def _best_by_enumeration(layer_s: list[float], fixed_s: list[float]) -> float:
    n, pp = len(layer_s), len(fixed_s)
    best = float("inf")
    for cuts in itertools.combinations(range(1, n), pp - 1):
        bounds = (0, *cuts, n)
        counts = [bounds[i + 1] - bounds[i] for i in range(pp)]
        best = min(best, max(_loads(layer_s, fixed_s, counts)))
    return best


def test_even_layers_split_evenly_and_a_loaded_stage_takes_fewer():
    assert balanced_split([1.0] * 8, [0.0] * 4) == [2, 2, 2, 2]
    # the last stage's head worth two layers: it keeps one layer, the others share seven
    counts = balanced_split([1.0] * 8, [0.0, 0.0, 0.0, 2.0])
    assert sum(counts) == 8 and min(counts) >= 1 and counts[-1] == 1
    assert max(_loads([1.0] * 8, [0.0, 0.0, 0.0, 2.0], counts)) == pytest.approx(3.0)


def _best_counts_by_enumeration(layer_s: list[float], fixed_s: list[float], mins: list[int]) -> float:
    n = len(layer_s)
    best = float("inf")
    for counts in itertools.product(range(n + 1), repeat=len(fixed_s)):
        if sum(counts) == n and all(c >= m for c, m in zip(counts, mins)):
            best = min(best, max(_loads(layer_s, fixed_s, list(counts))))
    return best


def test_the_split_with_empty_end_parts_is_the_best_of_every_split():
    """Interleaved plans: the first and the last virtual stage may hold no layer."""
    rng = random.Random(11)
    for _ in range(150):
        n, parts = rng.randint(2, 7), rng.randint(2, 4)
        mins = [0] + [1] * (parts - 2) + [0]
        if sum(mins) > n:
            continue
        layer_s = [rng.uniform(0.5, 2.0) for _ in range(n)]
        fixed_s = [rng.choice([0.0, rng.uniform(0.0, 4.0)]) for _ in range(parts)]
        counts = balanced_split(layer_s, fixed_s, mins)
        assert sum(counts) == n and all(c >= m for c, m in zip(counts, mins))
        assert max(_loads(layer_s, fixed_s, counts)) == pytest.approx(
            _best_counts_by_enumeration(layer_s, fixed_s, mins), rel=1e-9)


def test_the_split_is_the_best_of_every_split():
    rng = random.Random(7)
    for _ in range(200):
        n, pp = rng.randint(2, 9), rng.randint(1, 4)
        if pp > n:
            continue
        layer_s = [rng.uniform(0.5, 2.0) for _ in range(n)]
        fixed_s = [rng.choice([0.0, 0.0, rng.uniform(0.0, 3.0)]) for _ in range(pp)]
        counts = balanced_split(layer_s, fixed_s)
        assert len(counts) == pp and sum(counts) == n and min(counts) >= 1
        assert max(_loads(layer_s, fixed_s, counts)) == pytest.approx(_best_by_enumeration(layer_s, fixed_s), rel=1e-9)


def test_run_suggests_a_split_its_replay_confirms(tmp_path):
    sim = simulate(_scenario(tmp_path, 8, 2))
    # Llama 3 8B's head and loss on the last stage: four layers each leave that stage the heavier
    assert sim.report.stage_compute_s[1] > sim.report.stage_compute_s[0]
    bal = sim.report.balanced_split
    split, estimate, current = bal.pp_layers, bal.most_loaded_s, bal.current_most_loaded_s
    assert split == [5, 3] and current == pytest.approx(max(sim.report.stage_compute_s))
    assert sim.report.to_dict()["pipeline_balanced_pp_layers"] == [5, 3]
    again = simulate(_scenario(tmp_path, 8, 2, split))
    assert max(again.report.stage_compute_s) == pytest.approx(estimate, rel=0.02)
    # the memory printed beside the split is the evened plan's (more on the first stage, which now
    # stashes five layers' activations)
    gib, fits = bal.memory_gib, bal.fits
    assert fits and gib == pytest.approx(again.report.memory_gib_per_gpu["total"])
    assert gib > sim.report.memory_gib_per_gpu["total"]
    assert again.report.step_time_s < sim.report.step_time_s
    assert again.report.balanced_split is None  # nothing left to even out


def test_compare_lists_the_plans_a_split_would_even_out(capsys):
    """The bundled plans file's tp4-pp2 plan (Llama 3 8B, 16 layers a stage, the head on the
    second): `compare` prints the split that evens its stages out under the ranking."""
    from simulator.cli import main

    plans = ROOT / "scenarios" / "plans" / "llama3-8b-h100-plans.yaml"
    assert main(["compare", str(QUICK), "--plans", str(plans)]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = next(i for i, x in enumerate(lines) if x.startswith("stages a split of the layers would even out"))
    entry = lines[at + 1]
    assert entry.startswith("  #") and " tp4-pp2: pp_layers [" in entry
    split = [int(x) for x in entry.split("[")[1].split("]")[0].split(", ")]
    assert len(split) == 2 and sum(split) == 32 and split[0] > split[1]  # layers leave the head's stage
    before, after = (float(x) for x in entry.split("most loaded stage ")[1].removesuffix(" ms").split(" -> "))
    assert after < 0.98 * before


def test_sweep_tries_each_evenly_split_plan_with_the_split_that_evens_it_out(tmp_path):
    """The sweep follows each pipelined plan whose layers are split evenly with the same plan split
    by the passes' lower-bound times (sweep.plans.with_balanced_splits): on Llama 3 8B cut to 8
    layers over 2 stages it proposes [5, 3], the split the replay suggests too, and ranks it first."""
    import json

    from simulator.cli import main
    from simulator.config.scenario import load_scenario
    from simulator.sweep.plans import Candidate, with_balanced_splits

    path = _scenario(tmp_path, 8, 2)
    base = load_scenario(path)
    even = Candidate(base.parallel, 1)
    flat = Candidate(base.parallel.model_copy(update={"pp": 1, "tp": 8, "pp_layers": None}), 1)
    given = Candidate(base.parallel.model_copy(update={"pp_layers": (4, 4)}), 1)
    out = with_balanced_splits(base, [flat, even, given])
    assert [c.parallel.pp_layers for c in out] == [None, None, (5, 3), (4, 4)]  # one variant, after its plan

    doc = tmp_path / "sweep.json"
    assert main(["sweep", str(path), "--fix", "tp=4", "--fix", "pp=2", "--fix", "zero=0", "--no-prune",
                 "--quiet", "--json", str(doc)]) == 0
    plans = [p for p in json.loads(doc.read_text())["plans"] if p["simulated"]]
    assert [p["parallel"]["pp_layers"] for p in plans] == [[5, 3], None]
    assert plans[0]["label"] == "tp4sp pp2 layers=5,3 dp1 z0 mb1"
    assert plans[0]["step_time_s"] < 0.95 * plans[1]["step_time_s"]
    # the even split's own report names the same split
    assert plans[1]["balanced_split"]["pp_layers"] == [5, 3]
    # the CSV gives the split a column of its own
    table = tmp_path / "sweep.csv"
    assert main(["sweep", str(path), "--fix", "tp=4", "--fix", "pp=2", "--fix", "zero=0", "--no-prune",
                 "--quiet", "--csv", str(table)]) == 0
    import csv

    rows = list(csv.DictReader(line for line in table.read_text().splitlines() if not line.startswith("#")))
    assert [r["pp_layers"] for r in rows] == ["5,3", ""]
    assert main(["sweep", str(path), "--fix", "tp=4", "--fix", "pp=2", "--fix", "zero=0", "--no-prune",
                 "--quiet", "--even-split", "--json", str(doc)]) == 0
    assert [p["parallel"]["pp_layers"] for p in json.loads(doc.read_text())["plans"] if p["simulated"]] == [None]


def test_check_names_the_split_before_any_replay(tmp_path, capsys):
    from simulator.cli import main

    assert main(["check", str(_scenario(tmp_path, 8, 2))]) == 0
    out = capsys.readouterr().out
    assert "stage layers [4, 4]" in out and "stages evened out by pp_layers: [5, 3]" in out
    assert main(["check", str(_scenario(tmp_path, 8, 2, [5, 3]))]) == 0
    assert "stages evened out" not in capsys.readouterr().out


def test_interleaved_stages_evened_out_by_their_chunks(tmp_path):
    """Llama 3 8B cut to 16 layers over 2 stages of 2 chunks (virtual stages [4, 4, 4, 4], the head
    on the last): the split moves layers off the last chunk and its replay meets the estimate. Stage 0
    runs chunks 0 and 2, stage 1 chunks 1 and 3: 9 and 7 layers ([4, 5, 5, 2] while each kernel paid
    the host's 4 us launch, the same per stage)."""
    path = _scenario(tmp_path, 16, 2)
    doc = yaml.safe_load(path.read_text())
    doc["parallel"].update(vp=2, pp_schedule="interleaved")
    path.write_text(yaml.safe_dump(doc))
    sim = simulate(path)
    bal = sim.report.balanced_split
    split, estimate, current = bal.pp_layers, bal.most_loaded_s, bal.current_most_loaded_s
    assert split == [5, 5, 4, 2] and current == pytest.approx(max(sim.report.stage_compute_s))
    doc["parallel"]["pp_layers"] = split
    path.write_text(yaml.safe_dump(doc))
    again = simulate(path)
    assert max(again.report.stage_compute_s) == pytest.approx(estimate, rel=0.02)
    assert again.report.step_time_s < 0.95 * sim.report.step_time_s
    assert again.report.balanced_split is None

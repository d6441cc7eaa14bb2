"""`run` reports each pipeline stage's compute per step (report.summary.stage_compute_s): the
breakdown is read on the first stage, whose idle time is both the pipeline's warm-up and flush and
its wait for a stage that computes longer; the per-stage figures tell the two apart."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from simulator.report.summary import format_table, report_to_json
from simulator.simulation import simulate

ROOT = Path(__file__).resolve().parents[2]
QUICK = ROOT / "scenarios" / "quickstart.yaml"


def _scenario(tmp_path: Path, pp: int, pp_layers: list[int] | None) -> Path:
    """The quickstart (Llama 3 8B) cut to 4 layers, TP 4 on half a node, 8 micro-batches."""
    doc = yaml.safe_load(QUICK.read_text())
    doc["model"]["layers"] = 4
    doc["training"]["global_batch"] = 8
    doc["parallel"].update(tp=4, pp=pp, pp_layers=pp_layers)
    path = tmp_path / f"pp{pp}-{pp_layers}.yaml".replace(" ", "")
    path.write_text(yaml.safe_dump(doc))
    return path


def test_one_stage_reports_none(tmp_path):
    sim = simulate(_scenario(tmp_path, 1, None))
    assert sim.report.stage_compute_s is None
    assert report_to_json(sim.report)["pipeline_stage_compute_s"] is None
    assert "pipeline stages" not in format_table(sim.report)


def test_stages_are_the_busiest_rank_of_each_and_follow_their_layers(tmp_path):
    even = simulate(_scenario(tmp_path, 2, [2, 2]))
    uneven = simulate(_scenario(tmp_path, 2, [3, 1]))
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
    mirror = simulate(_scenario(tmp_path, 2, [1, 3]))
    crit = mirror.report.critical_rank
    assert mirror.schedule.grid.coord(crit, "pp") == 0
    assert mirror.report.breakdown_s.pipeline_bubble > even.report.breakdown_s.pipeline_bubble

"""The plots of `clustersim run --plot`: what the Gantt shows by default (one steady-state layer,
forward and backward, on the critical rank and its peers), that each row is drawn as one
collection holding exactly the row's ops, titles, the breakdown's values and legend, and that no
plotting module takes over matplotlib's backend."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from matplotlib.collections import PolyCollection

from simulator.cli import main
from simulator.report.plots import gantt_ranks, plot_breakdown, plot_gantt, steady_state_panels

ROOT = Path(__file__).resolve().parents[2]
QUICK = ROOT / "scenarios" / "quickstart.yaml"


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    """The quickstart cut to 4 layers and 4 micro-batches (TP8, one node)."""
    from simulator.simulation import simulate

    doc = yaml.safe_load(QUICK.read_text())
    doc["model"]["layers"] = 4
    doc["training"]["global_batch"] = 4
    path = tmp_path_factory.mktemp("plots") / "small.yaml"
    path.write_text(yaml.safe_dump(doc))
    return simulate(path)


def _layer_span(sim, rank, phase, layer, mb):
    recs = [r for r in sim.trace.records(rank) if r.stream == "compute"]
    prog = sim.trace.timelines[rank].program
    mine = [r for r in recs if prog[r.index].tag.phase == phase and prog[r.index].tag.layer == layer
            and prog[r.index].tag.mb_index == mb]
    return min(r.start for r in mine), max(r.end for r in mine)


def test_default_window_is_the_middle_layer_of_the_middle_micro_batch(sim):
    crit = sim.trace.critical_rank()
    fwd, bwd = steady_state_panels(sim.trace, crit)
    # 4 micro-batches -> micro-batch 2; 4 layers -> layer 2
    assert fwd.label == "forward, layer 2, micro-batch 2" and bwd.label == "backward, layer 2, micro-batch 2"
    for panel, phase in ((fwd, "fwd"), (bwd, "bwd")):
        lo, hi = _layer_span(sim, crit, phase, 2, 2)
        pad = 0.05 * (hi - lo)
        assert panel.lo == pytest.approx(lo - pad) and panel.hi == pytest.approx(hi + pad)
    assert fwd.hi < bwd.lo  # the layer's forward ends before its backward starts


def test_rows_are_the_critical_rank_and_its_tp_peer(sim):
    ranks, mirrored = gantt_ranks(sim.trace, sim.schedule.grid)
    crit = sim.trace.critical_rank()
    assert ranks == [crit, sim.schedule.grid.peer(crit, "tp", 1)] and mirrored == []


def test_each_row_is_one_collection_holding_exactly_its_ops(sim):
    fig = plot_gantt(sim.trace, grid=sim.schedule.grid, window="step")
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    bars = [c for c in ax.collections if isinstance(c, PolyCollection) and c.get_hatch() is None]
    assert len(bars) == len(labels)  # one collection per row, whatever the number of ops
    for label, coll in zip(labels, bars):
        words = label.split()
        rank, stream = int(words[1]), words[-1]
        expected = sum(1 for r in sim.trace.records(rank) if r.stream == stream)
        assert len(coll.get_paths()) == expected, label
    assert sum(len(c.get_paths()) for c in bars) == sum(len(sim.trace.timelines[r].program)
                                                        for r in gantt_ranks(sim.trace, sim.schedule.grid)[0])


def test_a_time_range_keeps_only_the_ops_it_overlaps(sim):
    crit = sim.trace.critical_rank()
    lo, hi = 0.3 * sim.trace.step_time_s, 0.31 * sim.trace.step_time_s
    fig = plot_gantt(sim.trace, ranks=[crit], window=(lo, hi))
    ax = fig.axes[0]
    assert ax.get_xlim() == pytest.approx((lo * 1e3, hi * 1e3))
    drawn = sum(len(c.get_paths()) for c in ax.collections if c.get_hatch() is None)
    assert drawn == sum(1 for r in sim.trace.records(crit) if r.end >= lo and r.start <= hi)


def test_titles_name_scenario_hardware_plan_and_step(sim, tmp_path):
    from simulator.report.plots import save_plots

    gantt, breakdown = save_plots(sim.trace, sim.report, tmp_path / "q.png", scenario=sim.scenario,
                                  grid=sim.schedule.grid)
    assert gantt.stat().st_size > 0 and breakdown.stat().st_size > 0
    fig = plot_gantt(sim.trace, grid=sim.schedule.grid, title="T")
    assert fig._suptitle.get_text() == "T"
    from simulator.report.labels import run_title

    title = run_title(sim.scenario, sim.report.step_time_s)
    assert title.startswith("small") or sim.scenario.name in title
    assert "dgx-h100" in title and "tp8sp pp1 dp1 z0 mb1" in title
    assert f"step {sim.report.step_time_s * 1e3:.1f} ms" in title


def test_breakdown_prints_its_values_and_lists_only_parts_present(sim):
    fig = plot_breakdown([sim.report])
    ax = fig.axes[0]
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    bd = sim.report.breakdown_s
    present = ["compute"] + [f"exposed {k}" for k, v in bd.exposed_comm.items() if v > 0] + \
              (["pipeline bubble"] if bd.pipeline_bubble > 0 else [])
    assert [t.rsplit(" ", 2)[0] for t in legend] == present
    texts = [t.get_text() for t in ax.texts]
    assert f"{sim.report.step_time_s * 1e3:.1f} ms" in texts  # the bar's total
    assert f"{bd.compute * 1e3:.1f} ms ({100 * bd.compute / bd.total:.0f}%)" in texts


def test_plotting_leaves_the_backend_alone():
    code = ("import matplotlib, sys; b = dict.__getitem__(matplotlib.rcParams, 'backend'); "
            "import simulator.report.plots, simulator.report.compare_plots, simulator.calibration.plots; "
            "import simulator.calibration.compare_plots; "
            "assert 'matplotlib.pyplot' not in sys.modules; "
            "assert dict.__getitem__(matplotlib.rcParams, 'backend') == b; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr


def test_figures_render_themselves_as_png(sim):
    png = plot_breakdown([sim.report])._repr_png_()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_run_prints_the_paths_it_wrote_and_checks_the_window(tmp_path, capsys):
    doc = yaml.safe_load(QUICK.read_text())
    doc["model"]["layers"] = 2
    doc["training"]["global_batch"] = 2
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert main(["run", str(path), "--plot", str(tmp_path / "p.png"), "--plot-window", "0:5"]) == 0
    out = capsys.readouterr().out
    assert f"wrote {tmp_path / 'p-gantt.png'}" in out and f"wrote {tmp_path / 'p-breakdown.png'}" in out
    for bad in ("5:1", "x", "1:", "-1:2", "inf:nan"):
        assert main(["run", str(path), "--plot", str(tmp_path / "p.png"), "--plot-window", bad]) == 2
        assert "--plot-window" in capsys.readouterr().err


def test_waits_are_hatched_where_ranks_wait_for_peers(tmp_path):
    """Two pipeline stages: the second waits for the first's activations, so its sends and
    receives have rendezvous waits, drawn as hatched spans."""
    from simulator.simulation import simulate

    doc = yaml.safe_load(QUICK.read_text())
    doc["model"]["layers"] = 2
    doc["training"]["global_batch"] = 4
    doc["parallel"].update(tp=4, pp=2)
    path = tmp_path / "pp.yaml"
    path.write_text(yaml.safe_dump(doc))
    s = simulate(path)
    fig = plot_gantt(s.trace, ranks=s.trace.ranks, window="step")
    hatched = [c for c in fig.axes[0].collections if c.get_hatch()]
    waits = sum(1 for r in s.trace.ranks for rec in s.trace.records(r) if rec.kind != "compute" and rec.wait > 0)
    assert waits > 0 and sum(len(c.get_paths()) for c in hatched) == waits
    assert "wait for peers" in [t.get_text() for t in fig.legends[0].get_texts()]
    assert np.isfinite(fig.axes[0].get_xlim()).all()

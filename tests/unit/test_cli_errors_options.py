"""A bad option value is exit 2 naming the option (`command line: --algo: ...`), before anything
is simulated; no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.cli import main

QUICKSTART = str(Path(__file__).resolve().parents[2] / "scenarios" / "quickstart.yaml")
PLANS = str(Path(__file__).resolve().parents[2] / "scenarios" / "plans" / "llama3-8b-h100-plans.yaml")


@pytest.mark.parametrize("argv, expected", [
    (["run", QUICKSTART, "--algo", "foo"], "command line: --algo: 'foo': expected one of ring, tree, nvls"),
    (["run", QUICKSTART, "--proto", "ll256"], "command line: --proto: 'll256': expected one of ll, ll128, simple"),
    (["collective", "--hardware", "nope", "--op", "allreduce", "--ranks", "8"],
     "command line: --hardware: unknown hardware profile 'nope'; expected one of"),
    (["run", QUICKSTART, "--max-ranks", "0"], "command line: --max-ranks: 0: expected a number of ranks >= 1"),
    (["sweep", QUICKSTART, "--fix", "tp=8", "--fix", "tp=4"],
     "command line: --fix: tp is given twice (tp=8 and tp=4); expected one value"),
    (["sweep", QUICKSTART, "--max", "pp=2", "--max", "pp=4"], "command line: --max: pp is given twice"),
    (["sweep", QUICKSTART, "--vary", ","], "argument --vary: expected knobs separated by commas"),
    (["compare", QUICKSTART, "--plans", PLANS, "--ray", "nohost.invalid:6379"],
     "command line: --ray: cannot reach a Ray cluster at 'nohost.invalid:6379'"),
    (["compare", QUICKSTART, "--plans", PLANS, "--ray", "6379"],
     "command line: --ray: '6379': expected 'auto', HOST:PORT or ray://HOST:PORT"),
])
def test_bad_option_is_exit_2_naming_it(capsys, monkeypatch, argv, expected):
    import simulator.simulation as simulation

    monkeypatch.setattr(simulation, "simulate_scenario", lambda *a, **k: pytest.fail("simulated a bad input"))
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err


def test_a_sweep_with_no_plan_that_can_run_is_exit_2(capsys, tmp_path):
    """An empty sweep is bad input, not a table of nothing: every plan invalid (micro-batch 3
    divides no share of a global batch of 4) is exit 2 with the plans' reasons and no output
    written. Plans that do not fit in memory stay a result (exit 0, with their numbers)."""
    out = tmp_path / "plans.json"
    assert main(["sweep", QUICKSTART, "--fix", "micro_batch=3", "--quiet", "--json", str(out)]) == 2
    err = capsys.readouterr().err
    assert "command line: --fix/--max: none of the 28 plans can run: tp1 pp1 dp8 z0 mb3: training.global_batch: " \
           "global_batch=4 is not divisible by micro_batch=3 x dp=8 = 24" in err
    assert "Traceback" not in err and not out.exists()
    plans = tmp_path / "p.yaml"
    plans.write_text("plans:\n  - {tp: 3}\n")
    assert main(["compare", QUICKSTART, "--plans", str(plans), "--quiet"]) == 2
    assert f"{plans}: plans: none of the 1 plans can run: tp3sp pp1 z0 mb1: parallel.tp: tp=3 does not divide 8 GPUs" \
        in capsys.readouterr().err
    assert main(["sweep", QUICKSTART, "--memory-cap", "1", "--quiet", "--json", str(out)]) == 0  # none fits: a result
    assert out.exists()

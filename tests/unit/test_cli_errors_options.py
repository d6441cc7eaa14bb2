"""A bad option value is exit 2 naming the option (`command line: --algo: ...`), before anything
is simulated; no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.cli import main

QUICKSTART = str(Path(__file__).resolve().parents[2] / "scenarios" / "quickstart.yaml")


@pytest.mark.parametrize("argv, expected", [
    (["run", QUICKSTART, "--algo", "foo"], "command line: --algo: 'foo': expected one of ring, tree, nvls"),
    (["run", QUICKSTART, "--proto", "ll256"], "command line: --proto: 'll256': expected one of ll, ll128, simple"),
    (["collective", "--hardware", "nope", "--op", "allreduce", "--ranks", "8"],
     "command line: --hardware: unknown hardware profile 'nope'; expected one of"),
])
def test_bad_option_is_exit_2_naming_it(capsys, monkeypatch, argv, expected):
    import simulator.simulation as simulation

    monkeypatch.setattr(simulation, "simulate_scenario", lambda *a, **k: pytest.fail("simulated a bad input"))
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err

"""The command line draws on ``Figure`` objects and chooses no matplotlib backend, not even
through the environment: a notebook that calls ``main`` (notebook 02 does) and the kernels
started after it in the same process tree keep their inline backend."""

from __future__ import annotations

import os

from simulator.cli import main


def test_main_leaves_the_matplotlib_backend_alone(tmp_path, monkeypatch):
    monkeypatch.delenv("MPLBACKEND", raising=False)
    out = tmp_path / "q.png"
    assert main(["run", "scenarios/quickstart.yaml", "--plot", str(out)]) == 0
    assert "MPLBACKEND" not in os.environ
    assert (tmp_path / "q-gantt.png").stat().st_size > 1000

"""The notebooks execute top to bottom (nbclient)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(name: str) -> str:
    """Execute a notebook; the text it printed."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(ROOT / "notebooks" / name, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(ROOT / "notebooks")}})
    client.execute()
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []))


@pytest.mark.slow
def test_first_scenario_notebook_runs():
    text = _run("01-first-scenario.ipynb")
    assert "step time" in text and "ring_exchange" in text


@pytest.mark.slow
def test_calibration_notebook_runs():
    text = _run("02-calibrate.ipynb")
    assert "exit code 0" in text and "proto_efficiency.net.ll128" in text  # the overlay it printed
    assert "datasheet: step" in text and "calibrated: step" in text

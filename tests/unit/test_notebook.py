"""The notebooks execute top to bottom (nbclient)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(name: str) -> str:
    """Execute a notebook; the text it printed. Every cell that draws (calls a ``plot_``
    function or pyplot) must have shown a PNG: a library that picks matplotlib's backend at
    import replaces the notebook's inline backend and the pictures silently vanish."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(ROOT / "notebooks" / name, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(ROOT / "notebooks")}})
    client.execute()
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and ("plot_" in cell.source or "plt." in cell.source):
            kinds = [k for o in cell.get("outputs", []) for k in o.get("data", {})]
            assert "image/png" in kinds, f"{name} cell {i} drew no picture: {cell.source[:80]!r}"
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

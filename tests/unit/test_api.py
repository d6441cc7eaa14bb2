"""The documented Python API (README, notebook 01): everything a notebook needs from the package
itself, nothing private."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
QUICK = ROOT / "scenarios" / "quickstart.yaml"


@pytest.fixture
def small(tmp_path) -> Path:
    doc = yaml.safe_load(QUICK.read_text())
    doc["model"]["layers"] = 2
    doc["training"]["global_batch"] = 2
    path = tmp_path / "small.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_load_simulate_report_trace(small, tmp_path):
    from simulator import load_scenario, simulate
    from simulator.cli import main

    scenario = load_scenario(small)
    result = simulate(scenario)
    doc = result.report.to_dict()
    # the same document `clustersim run --json` writes, apart from the wall time
    assert main(["run", str(small), "--json", str(tmp_path / "r.json")]) == 0
    cli = json.loads((tmp_path / "r.json").read_text())
    doc.pop("meta"), cli.pop("meta")
    assert json.loads(json.dumps(doc)) == cli
    assert result.trace.step_time_s == pytest.approx(doc["step_time_s"])
    assert sorted(result.trace.ranks) == list(range(8))
    # a path works as well as a loaded scenario, and hardware= swaps the profile
    assert simulate(small).report.step_time_s == pytest.approx(doc["step_time_s"])
    overlay = tmp_path / "o.yaml"
    overlay.write_text(yaml.safe_dump({"base": "dgx-h100", "gpu": {"kernel_gap_us": 50.0}}))
    assert simulate(small, hardware=str(overlay)).report.step_time_s > doc["step_time_s"]


def test_plots_are_exported_and_return_figures(small):
    from matplotlib.figure import Figure

    from simulator import plot_breakdown, plot_gantt, simulate

    result = simulate(small)
    assert isinstance(plot_gantt(result.trace, ranks=[0, 1]), Figure)
    assert isinstance(plot_breakdown([result.report]), Figure)
    assert isinstance(plot_breakdown(result.report), Figure)  # one report alone


def test_import_simulator_stays_light():
    """`import simulator` loads no matplotlib, simpy or pydantic: each API function imports
    what it needs when called."""
    code = ("import sys, simulator; from simulator import load_scenario, simulate, plot_gantt, plot_breakdown; "
            "print(sorted(m for m in ('matplotlib', 'simpy', 'pydantic', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_package_attribute_simulate_stays_the_function_after_the_cli_ran(small):
    """The pipeline module is ``simulator.simulation`` so that importing it (every command does)
    never rebinds ``simulator.simulate``."""
    import simulator
    from simulator.cli import main

    assert main(["check", str(small)]) == 0
    import simulator.simulation  # noqa: F401

    assert callable(simulator.simulate) and simulator.simulate.__module__ == "simulator"


def test_the_readme_python_block_runs(monkeypatch):
    """The README's "From Python" block, executed as written from the repository root."""
    import re

    text = (ROOT / "README.md").read_text()
    block = re.search(r"## From Python\n\n```python\n(.*?)```", text, re.S).group(1)
    monkeypatch.chdir(ROOT)
    scope: dict = {}
    exec(compile(block, "README.md", "exec"), scope)
    assert scope["tp4"].report.to_dict()["inputs"]["plan"]["tp"] == 4 and scope["tp4"].report.n_gpus == 8
    assert scope["result"].report.to_dict()["inputs"]["scenario"]["path"] == "scenarios/quickstart.yaml"


def test_notebook_01_uses_only_the_package_api():
    nb = json.loads((ROOT / "notebooks" / "01-first-scenario.ipynb").read_text())
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    imports = [line for line in code.splitlines() if "import" in line and "simulator" in line]
    assert imports == ["from simulator import load_scenario, simulate", "from simulator import plot_breakdown, plot_gantt"]


def test_nothing_imports_the_old_pipeline_module_name():
    """`simulator.simulate` is the API function; the pipeline module is `simulator.simulation`."""
    stale = [str(p.relative_to(ROOT)) for folder in ("simulator", "tests", "benchmarks", "notebooks", "docs")
             for p in (ROOT / folder).rglob("*") if p.suffix in (".py", ".ipynb", ".md") and p.is_file()
             and "from simulator." + "simulate import" in p.read_text(errors="replace")]
    assert stale == []

"""Installs that work however pip is used: the profiles, scenarios and measured data are package
data of the built package (setup.py copies the top-level folders in), found through
importlib.resources, so a wheel, ``pip install .``, ``--user`` and ``--target`` all find them."""

from __future__ import annotations

import ast
import fnmatch
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("hardware_profiles", "scenarios", "data/nccl", "data/e2e", "data/kernels")


def _bundled_patterns() -> dict[str, tuple[str, ...]]:
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "BUNDLED" for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError("setup.py has no BUNDLED table")


@pytest.mark.parametrize("folder", FOLDERS)
def test_the_build_step_ships_every_file_the_modules_read(folder):
    from simulator.files import bundled_dir

    patterns = _bundled_patterns()[folder]
    shipped = [p for p in (ROOT / folder).rglob("*") if p.is_file() and p.suffix in (".yaml", ".csv", ".md")]
    assert shipped
    for path in shipped:
        assert any(fnmatch.fnmatch(str(path.relative_to(ROOT / folder)), pat) for pat in patterns), path
    assert bundled_dir(folder) == ROOT / folder  # a checkout reads its own folders


def test_sdist_manifest_carries_the_folders():
    manifest = (ROOT / "MANIFEST.in").read_text()
    for folder in ("hardware_profiles", "scenarios", "data"):
        assert f"recursive-include {folder} " in manifest


def test_scenarios_lists_and_copies(tmp_path, capsys, monkeypatch):
    from simulator.cli import main

    assert main(["scenarios"]) == 0
    listed = capsys.readouterr().out
    assert "quickstart" in listed and "plans/llama3-8b-h100-plans" in listed
    monkeypatch.chdir(tmp_path)
    assert main(["scenarios", "copy", "quickstart"]) == 0
    assert (tmp_path / "quickstart.yaml").read_text() == (ROOT / "scenarios" / "quickstart.yaml").read_text()
    assert main(["scenarios", "copy", "quickstart"]) == 2  # no silent overwrite
    assert "--force" in capsys.readouterr().err
    (tmp_path / "mine").mkdir()
    assert main(["scenarios", "copy", "plans/llama3-8b-h100-plans", "mine"]) == 0
    assert (tmp_path / "mine" / "llama3-8b-h100-plans.yaml").is_file()
    assert main(["scenarios", "copy", "no-such-scenario"]) == 2
    assert "expected one of" in capsys.readouterr().err and "quickstart" in capsys.readouterr().err + listed


@pytest.mark.slow
def test_a_built_wheel_installed_with_target_finds_everything(tmp_path):
    """Build a wheel from a copy of the source (no build isolation, no network), check it carries
    the bundled folders, install it with ``pip install --target``, and from a directory with no
    source tree run a copied bundled scenario: the same step time as the checkout gives."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for folder in ("simulator", "hardware_profiles", "scenarios", "data"):
        shutil.copytree(ROOT / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__"))
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input", "-q"]
    subprocess.run(pip + ["wheel", "--no-build-isolation", "--no-deps", "-w", str(tmp_path / "dist"), str(src)],
                   check=True, capture_output=True, text=True)
    (wheel,) = (tmp_path / "dist").glob("clustersim-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for member in ("simulator/bundled/hardware_profiles/dgx-h100.yaml", "simulator/bundled/scenarios/quickstart.yaml",
                   "simulator/bundled/scenarios/plans/llama3-8b-h100-plans.yaml",
                   "simulator/bundled/data/nccl/INDEX.md", "simulator/bundled/data/e2e/INDEX.md"):
        assert member in names
    target = tmp_path / "target"
    subprocess.run(pip + ["install", "--no-deps", "--target", str(target), str(wheel)], check=True,
                   capture_output=True, text=True)
    work = tmp_path / "work"
    work.mkdir()
    env = dict(os.environ, PYTHONPATH=str(target))
    run = lambda *a: subprocess.run([sys.executable, *a], cwd=work, env=env, capture_output=True, text=True)  # noqa: E731
    where = run("-c", "import simulator.files as f, simulator.config.hardware as h; "
                      "print(f.__file__); print(h.profile_path('dgx-h100'))")
    assert where.returncode == 0, where.stderr
    module, profile = where.stdout.split()
    assert module.startswith(str(target)) and profile.startswith(str(target)) and Path(profile).is_file()
    assert run("-m", "simulator", "scenarios", "copy", "quickstart").returncode == 0
    done = run("-m", "simulator", "run", "quickstart.yaml", "--json", "r.json")
    assert done.returncode == 0, done.stderr
    got = json.loads((work / "r.json").read_text())

    from simulator import simulate

    assert got["step_time_s"] == pytest.approx(simulate(ROOT / "scenarios" / "quickstart.yaml").report.step_time_s,
                                               rel=1e-12)

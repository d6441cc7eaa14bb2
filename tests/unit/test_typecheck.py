"""mypy reports no error on simulator/ (its configuration: [tool.mypy] in pyproject.toml).

CI runs ``python -m pytest``, so this test is how the type check runs there. The cache is mypy's
default ``.mypy_cache`` in the repository root: a fresh clone checks everything once (about 20 s
of CPU), a repeated run only what changed (a few seconds).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_mypy_finds_no_errors_in_the_package():
    pytest.importorskip("mypy", reason="mypy comes with the [test] extra")
    run = subprocess.run([sys.executable, "-m", "mypy", "simulator"], cwd=ROOT, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert "Success: no issues found" in run.stdout

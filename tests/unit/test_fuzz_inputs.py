"""Fuzzing of every input a user hands clustersim (tests/fuzz_inputs.py): exit 0 or 2, no
traceback, bounded memory and time, finite numbers in every output. A fast default of a few
cases per input kind; a long ``slow`` run with other seeds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fuzz_inputs import CATEGORIES, failures

ROOT = Path(__file__).resolve().parents[2]
MEMORY_MB = 3072  # the child's address-space limit: a case that needs more fails as itself


def _fuzz(seed: int, cases: int, quick: bool, timeout_s: int) -> list[dict]:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg",
           "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    cmd = [sys.executable, "-m", "tests.fuzz_inputs", "--seed", str(seed), "--cases", str(cases),
           "--memory-mb", str(MEMORY_MB), "--case-timeout", "120"] + (["--quick"] if quick else [])
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout_s)
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["category"] for r in results] == [c for c in CATEGORIES for _ in range(cases)]
    return results


def _check(results: list[dict]) -> None:
    bad = failures(results)
    assert not bad, f"{len(bad)} of {len(results)} fuzz cases broke the contract:\n" + "\n".join(bad[:20])
    assert max(r["max_rss_mb"] for r in results) < MEMORY_MB / 2
    # the mutations must reach past validation sometimes: some cases of each kind succeed or
    # fail on their own terms, not all on the first parse
    assert {r["rc"] for r in results} == {0, 2}


def test_fuzz_fast_default():
    _check(_fuzz(seed=0, cases=2, quick=True, timeout_s=600))


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_fuzz_long_run(seed):
    _check(_fuzz(seed=seed, cases=12, quick=False, timeout_s=1200))

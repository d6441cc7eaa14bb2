"""The suite's own scheduling (tests/conftest.py): under pytest-xdist's ``--dist loadfile`` the
files are handed to the workers in collection order, the longest first."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import LONGEST_FIRST

TESTS = Path(__file__).resolve().parents[1]


def test_longest_first_names_test_files_that_exist():
    """A renamed or split file would drop out of the order silently."""
    assert LONGEST_FIRST and len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)
    for p in LONGEST_FIRST:
        assert (TESTS / p).is_file() and Path(p).name.startswith("test_"), p


def test_xdist_keeps_the_collection_order(request):
    """pytest-xdist (>= 3.6) reorders loadfile's work units by their number of tests unless
    ``--loadscope-reorder`` is off, which would hand out a long file of few tests last."""
    pytest.importorskip("xdist")
    assert request.config.option.loadscopereorder is False


def test_the_workers_share_one_folder_of_e2e_simulations(request, tmp_path_factory):
    """Every worker scores the e2e rows through the same folder of the run's temporary directory
    (the controller's, above each worker's own), so a row is simulated once per run; without
    xdist the session's own temporary directory holds it."""
    from simulator.e2e_validation import scoring

    assert scoring._SHARED is not None
    folder = scoring._SHARED.directory
    assert folder.name == "e2e-simulations" and folder.is_dir()
    if hasattr(request.config, "workerinput"):
        assert folder.parent == tmp_path_factory.getbasetemp().parent  # the controller's: popen-gwN's parent
    else:
        assert folder.parent == tmp_path_factory.getbasetemp()

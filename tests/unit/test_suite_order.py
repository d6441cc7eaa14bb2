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

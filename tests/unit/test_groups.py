"""Rank grid: placement order, groups, peers (independent arithmetic, no knowledge of the code)."""

import pytest
from hypothesis import given, settings, strategies as st

from simulator.schedule.groups import Grid


def test_megatron_default_tp_innermost():
    g = Grid.from_sizes({"tp": 8, "cp": 1, "ulysses": 1, "dp": 16, "pp": 8})
    assert g.n_ranks == 1024
    assert g.group(13, ("tp",)) == tuple(range(8, 16))  # one node of 8 consecutive GPUs
    assert g.group(13, ("dp",)) == tuple(5 + 8 * i for i in range(16))
    assert g.group(13, ("pp",)) == tuple(13 + 128 * i for i in range(8))
    assert g.coords(13) == {"tp": 5, "cp": 0, "ulysses": 0, "dp": 1, "pp": 0}


def test_order_changes_placement():
    g = Grid.from_sizes({"tp": 2, "dp": 4}, order=["dp", "tp"])
    assert g.group(0, ("dp",)) == (0, 1, 2, 3)
    assert g.group(0, ("tp",)) == (0, 4)


def test_peer_is_cyclic_and_multi_axis_group():
    g = Grid.from_sizes({"tp": 2, "cp": 4, "dp": 2})
    assert g.peer(0, "cp", 1) == 2 and g.peer(6, "cp", 1) == 0 and g.peer(0, "cp", -1) == 6
    assert g.group(1, ("dp", "cp")) == (1, 3, 5, 7, 9, 11, 13, 15)
    assert g.degree(("dp", "cp")) == 8
    assert g.peer(5, "pp", 1) == 5  # an absent axis has size 1


def test_omitting_a_real_axis_is_rejected():
    with pytest.raises(ValueError):
        Grid.from_sizes({"tp": 2, "dp": 4}, order=["tp"])


@settings(deadline=None, max_examples=40)
@given(st.lists(st.integers(1, 3), min_size=5, max_size=5), st.permutations(["tp", "cp", "ulysses", "dp", "pp"]))
def test_coords_roundtrip_and_groups_partition(sizes, order):
    g = Grid.from_sizes(dict(zip(["tp", "cp", "ulysses", "dp", "pp"], sizes)), order)
    for r in range(g.n_ranks):
        assert g.rank_of(g.coords(r)) == r
    for axes in (("tp",), ("dp", "cp"), ("pp",)):
        seen = set()
        for r in range(g.n_ranks):
            grp = g.group(r, axes)
            assert r in grp and len(grp) == g.degree(axes)
            assert all(g.group(m, axes) == grp for m in grp)
            seen.add(grp)
        assert sum(len(x) for x in seen) == g.n_ranks


def test_split_axis_groups_blocks_of_consecutive_parent_coordinates():
    g = Grid.from_sizes({"tp": 2, "cp": 8, "dp": 2}, ("tp", "cp", "dp"), splits={"cp_a2a": ("cp", 4)})
    assert g.size("cp_a2a") == 4
    # rank 2 has tp=0, cp=1: its block is cp 0..3 with tp=0, dp=0
    assert g.group(2, ("cp_a2a",)) == (0, 2, 4, 6)
    assert g.group(10, ("cp_a2a",)) == (8, 10, 12, 14)
    assert g.peer(6, "cp_a2a", 1) == 0  # cyclic inside the block
    with pytest.raises(ValueError, match="does not divide"):
        Grid.from_sizes({"cp": 6}, ("cp",), splits={"cp_a2a": ("cp", 4)})


def test_unknown_axis_is_an_error_not_a_one_member_group():
    g = Grid.from_sizes({"tp": 2, "dp": 2}, ("tp", "dp"))
    with pytest.raises(ValueError, match="unknown parallel axis 'cp_a2a'"):
        g.group(0, ("cp_a2a",))

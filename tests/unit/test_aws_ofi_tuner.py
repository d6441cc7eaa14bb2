"""aws-ofi-nccl 1.16's region tuner (simulator/costs/aws_ofi_tuner.py) against its p5 table.

The boundaries below are read off the polygon vertices of src/tuner/nccl_ofi_regions.cpp (aws-ofi-nccl
v1.16.3) by hand: where a region's edge crosses a rank count, by linear interpolation between its two
vertices. They are not computed by the module under test.
"""

from __future__ import annotations

import pytest

from simulator.cli import main
from simulator.config.hardware import apply_overlay, load_profile
from simulator.costs import nccl_graph, nccl_tuner
from simulator.config.nccl_overrides import check_tuner_plugin
from simulator.costs.aws_ofi_tuner import contains, plugin_choice

P5 = "aws-ofi-nccl-1.16:p5.48xlarge"
ALL = frozenset({("tree", "ll128"), ("tree", "simple"), ("tree", "ll"), ("ring", "ll128"), ("ring", "simple"),
                 ("ring", "ll"), ("nvls_tree", "simple")})
MiB = 1 << 20

# Ring/LL128's right edge (1073741824, 17) -> (2147483648, 64) at 32 ranks: 1 GiB x (1 + 15/47)
RING_LL128_END_32 = 1073741824 * 62 / 47
# Ring/Simple's upper-left edge (2684354560, 64) -> (8053063680, 160) at 128 ranks: 2.5 GiB + 2/3 x 5 GiB
RING_SIMPLE_START_128 = 2684354560 + (8053063680 - 2684354560) * 64 / 96


def choice(nbytes: float, nodes: int, enabled=ALL, ppn: int = 8, coll: str = "allreduce"):
    return plugin_choice(P5, coll, int(nbytes), ppn * nodes, nodes, enabled)


@pytest.mark.parametrize("nbytes, nodes, expected", [
    # 4 nodes (32 ranks): Tree/LL128 to its vertex (37748736, 32) = 36 MiB, then Ring/LL128 to 1.32 GiB,
    # a gap (NCCL's own choice) to Ring/Simple's vertex (1610612736, 32) = 1.5 GiB
    (32 * MiB, 4, ("tree", "ll128")),
    (36 * MiB, 4, ("tree", "ll128")),  # on the shared vertex: the first region listed wins
    (37 * MiB, 4, ("ring", "ll128")),
    (1024 * MiB, 4, ("ring", "ll128")),
    (RING_LL128_END_32 - 2, 4, ("ring", "ll128")),
    (RING_LL128_END_32 + 2, 4, None),
    (1500 * MiB, 4, None),
    (1536 * MiB, 4, ("ring", "simple")),
    (8192 * MiB, 4, ("ring", "simple")),
    # 8 nodes (64 ranks): Tree/LL128 to 112 MiB, Ring/LL128 to 2 GiB, Ring/Simple from 2.5 GiB
    (112 * MiB, 8, ("tree", "ll128")),
    (113 * MiB, 8, ("ring", "ll128")),
    (2048 * MiB, 8, ("ring", "ll128")),
    (2304 * MiB, 8, None),
    (2560 * MiB, 8, ("ring", "simple")),
    # 16 nodes (128 ranks): Tree/LL128 to 288 MiB, Ring/LL128 to 2 GiB, NVLSTree/Simple along its edge
    # from 2 GiB to 6 GiB, Ring/Simple beyond
    (288 * MiB, 16, ("tree", "ll128")),
    (289 * MiB, 16, ("ring", "ll128")),
    (2048 * MiB, 16, ("ring", "ll128")),  # on both edges: Ring/LL128 is listed first
    (4096 * MiB, 16, ("nvls_tree", "simple")),
    (6144 * MiB, 16, ("nvls_tree", "simple")),
    (6144 * MiB + 1, 16, ("ring", "simple")),
    (8192 * MiB, 16, ("ring", "simple")),
    # 32 nodes (256 ranks): Ring/LL128 is the edge 1074790400..2147483648 only
    (288 * MiB, 32, ("tree", "ll128")),
    (2048 * MiB, 32, ("ring", "ll128")),
])
def test_p5_allreduce_regions(nbytes, nodes, expected):
    assert choice(nbytes, nodes) == expected


def test_nvls_tree_edge_gives_way_to_ring_simple_between_the_two_edges():
    """At 128 ranks NVLSTree's edge runs to 6 GiB and Ring/Simple starts at 5.83 GiB: NVLSTree is listed
    first, so it wins on the overlap; without NVLS (NCCL marks it ignored) Ring/Simple takes it."""
    x = RING_SIMPLE_START_128 + MiB
    assert choice(x, 16) == ("nvls_tree", "simple")
    assert choice(x, 16, enabled=ALL - {("nvls_tree", "simple")}) == ("ring", "simple")
    assert choice(RING_SIMPLE_START_128 - MiB, 16, enabled=ALL - {("nvls_tree", "simple")}) is None


def test_where_the_plugin_leaves_the_choice_to_nccl():
    assert all(choice(s * MiB, 2) is None for s in (32, 1024, 8192))  # two nodes: NCCL's own tuner
    assert choice(1024 * MiB, 8, ppn=4) is None  # a layout whose regions are not encoded
    assert choice(1024 * MiB, 8, coll="allgather") is None  # no p5 AllGather regions
    assert plugin_choice("aws-ofi-nccl-1.16:p5en.48xlarge", "allreduce", 1024 * MiB, 64, 8, ALL) is None
    # a pinned protocol (NCCL_PROTO=Simple) skips the LL128 regions; 32 MiB at 32 ranks is in no other
    assert choice(32 * MiB, 4, enabled={("ring", "simple"), ("tree", "simple")}) is None


def test_contains_counts_edges_and_uses_even_odd():
    square = ((0, 0), (4, 0), (4, 4), (0, 4))
    assert contains(square, (2, 2)) and contains(square, (4, 2)) and contains(square, (0, 0))
    assert not contains(square, (5, 2))
    line = ((1, 1), (3, 1), (1, 1))  # a degenerate polygon: its segment only
    assert contains(line, (2, 1)) and not contains(line, (2, 1.5))


@pytest.mark.parametrize("value, ok", [(P5, True), ("aws-ofi-nccl-1.16.3:p5.48xlarge", True),
                                       ("aws-ofi-nccl-1.15:p5.48xlarge", False), ("ofi-1.16", False), (1.16, False)])
def test_check_tuner_plugin(value, ok):
    assert (check_tuner_plugin(value) is None) == ok


def test_profile_key_drives_the_choice():
    """On aws-p5 at 8 x 8 ranks, 1 GiB: NCCL's tables (as modelled) give NVLSTree, the plugin Ring/LL128."""
    plain = load_profile("aws-p5")
    plugged = apply_overlay(plain, {"nccl": {"version": "2.27.7", "tuner_plugin": P5}})
    assert plugged.nccl_tuner_plugin == P5 and "tuner_plugin" not in plugged.nccl_overrides
    ctx = nccl_graph.context_from_profile(plugged, 64, 8)
    assert nccl_tuner.select(ctx, "allreduce", 1024 * MiB) == ("ring", "ll128")
    ctx_plain = nccl_graph.context_from_profile(apply_overlay(plain, {"nccl": {"version": "2.27.7"}}), 64, 8)
    assert nccl_tuner.select(ctx_plain, "allreduce", 1024 * MiB) != ("ring", "ll128")
    # NCCL_ALGO=Tree pins: the plugin's Ring/LL128 is not enabled, and no other region holds the point
    assert nccl_tuner.select(ctx, "allreduce", 1024 * MiB, algo="tree")[0] == "tree"


def test_bad_tuner_plugin_exits_2_naming_file_and_field(tmp_path, capsys):
    f = tmp_path / "p5.yaml"
    f.write_text("base: aws-p5\nnccl:\n  tuner_plugin: aws-ofi-nccl-1.9:p5.48xlarge\n")
    assert main(["check", "scenarios/quickstart.yaml", "--hardware", str(f)]) == 2
    err = capsys.readouterr().err
    assert str(f) in err and "tuner_plugin" in err and "1.16" in err and "Traceback" not in err

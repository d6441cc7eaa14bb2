"""A scenario's ``nodes_per_nvlink_domain``: K consecutive nodes of every multi-node NVLink domain
(Slurm's ``--segment`` on GB200 NVL72; config/node_subset.py), and HybridEP's hierarchy at the
NVLink domain (schedule/shapes.py ``hybridep_domain_gpus``).

Checked: bad values exit 2 naming the file, the field and the expectation; with segments of 16
trays two GPUs of different segments route over the network and two of one segment over NVLink;
a HybridEP group inside one rack is one exchange while DeepEP's normal kernels keep the tray as
their NVLink group; Megatron-Bridge's segment rule.
"""

from __future__ import annotations

import json

import pytest

from simulator.cli import main
from simulator.config.hardware import load_profile
from simulator.config.node_subset import domain_segment
from simulator.config.scenario import load_scenario
from simulator.e2e_validation.moe_sources import bridge_segment
from simulator.hardware.topology import build_topology
from simulator.schedule.shapes import RankShapes
from tests.unit.scenario_files import write_scenario

SCENARIO = {"name": "seg", "hardware": "gb200-nvl72", "nodes": 32,
            "model": {"preset": "qwen3-30b-a3b", "seq_len": 4096},
            "training": {"micro_batch": 1, "global_batch": 128, "recompute": "none"},
            "parallel": {"ep": 32, "moe_dispatcher": "deepep", "moe_deepep_backend": "hybridep"}}


def _write(tmp_path, **top) -> str:
    return write_scenario(tmp_path, SCENARIO, **top)


@pytest.mark.parametrize("top,expected", [
    (dict(nodes_per_nvlink_domain=19),
     "nodes_per_nvlink_domain: expected 1 <= nodes_per_nvlink_domain <= 18 (the nodes of one gb200-nvl72 NVLink domain), got 19"),
    (dict(nodes_per_nvlink_domain=12), "nodes_per_nvlink_domain: nodes: 32 is not a whole number of segments of "
                                       "nodes_per_nvlink_domain = 12"),
    (dict(nodes_per_nvlink_domain=0), "nodes_per_nvlink_domain: Input should be greater than or equal to 1"),
    (dict(nodes_per_nvlink_domain="16"), "nodes_per_nvlink_domain: Input should be a valid integer"),
    (dict(hardware="dgx-b200", nodes=4, nodes_per_nvlink_domain=2),
     "nodes_per_nvlink_domain: dgx-b200's NVLink domain is one node"),
])
def test_bad_value_exits_2_naming_file_and_field(tmp_path, capsys, top, expected):
    path = _write(tmp_path, **top)
    assert main(["check", path]) == 2
    err = capsys.readouterr().err
    assert f"{path}: {expected}" in err
    assert "Traceback" not in err


def test_segments_are_the_job_s_nvlink_domains(tmp_path):
    scn = load_scenario(_write(tmp_path, nodes_per_nvlink_domain=16))
    assert scn.profile.node.scale_up.domain_gpus == 64 and scn.profile.name == "gb200-nvl72"
    topo = build_topology(scn.profile, scn.nodes)
    # 32 trays in two segments of 16: GPUs 0-63 and 64-127, each its own NVLink domain
    assert (topo.domain_gpus, topo.domains) == (64, 2)
    assert topo.route(0, 63).link_class == "nvlink"
    assert topo.route(63, 64).link_class == "net"
    # without the key the job packs 18 trays per rack: GPU 64 shares GPU 63's rack
    packed = build_topology(load_profile("gb200-nvl72"), 32)
    assert packed.route(63, 64).link_class == "nvlink" and packed.route(71, 72).link_class == "net"


def test_whole_domains_and_single_nodes():
    prof = load_profile("gb200-nvl72")
    assert domain_segment(prof, 18) is prof
    one = domain_segment(prof, 1)
    assert one.node.scale_up.domain_gpus is None and one.nodes_per_domain == 1


def test_segment_is_in_the_report_inputs(tmp_path, capsys):
    path = _write(tmp_path, nodes_per_nvlink_domain=16)
    out_json = tmp_path / "out.json"
    assert main(["run", path, "--json", str(out_json)]) == 0
    assert json.loads(out_json.read_text())["inputs"]["nodes_per_nvlink_domain"] == 16
    assert "32 nodes x 4 GPUs = 128 GPUs, 16 nodes per NVLink domain" in capsys.readouterr().out


def test_hybridep_reaches_a_rack_over_nvlink_in_one_exchange(tmp_path):
    """EP 32 over 8 trays of one rack: HybridEP's NVLink group is the rack (one exchange of the
    32 ranks), DeepEP's normal kernels keep the tray's 4 GPUs (RDMA-style stage across 8 trays)."""
    hybrid = RankShapes.of(load_scenario(_write(tmp_path)))
    assert (hybrid.ep_intra, hybrid.ep_nodes) == (32, 1)
    deepep = RankShapes.of(load_scenario(_write(tmp_path, parallel_moe_deepep_backend="deepep")))
    assert (deepep.ep_intra, deepep.ep_nodes) == (4, 8)
    # segments of 4 trays: the rack's NVLink group is the segment's 16 GPUs
    seg = RankShapes.of(load_scenario(_write(tmp_path, nodes_per_nvlink_domain=4)))
    assert (seg.ep_intra, seg.ep_nodes) == (16, 2)
    # on a DGX node the NVLink domain is the node: both agree
    b200 = RankShapes.of(load_scenario(_write(tmp_path, hardware="dgx-b200", nodes=4)))
    assert (b200.ep_intra, b200.ep_nodes) == (8, 4)


@pytest.mark.parametrize("nodes,segment", [(2, 2), (16, 16), (18, 18), (64, 16), (36, 18), (40, 10), (38, 2)])
def test_megatron_bridge_segment_rule(nodes, segment):
    """scripts/performance/utils/executors.py: the job up to 18 trays, else its largest divisor <= 18."""
    assert bridge_segment(nodes) == segment


def test_a_part_filled_domain_is_pointed_out(tmp_path, capsys):
    """32 trays packed into racks of 18: one full rack and 14 trays of a second; `check` (and `run`,
    under its breakdown) say so and name the segments that divide the job; with the key, nothing."""
    from simulator.report.inputs import domain_inputs

    packed = load_scenario(_write(tmp_path))
    assert domain_inputs(packed) == {"nvlink_domain": {"nodes": 18, "full": 1, "partial_nodes": 14}}
    assert main(["check", _write(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "NVLink domains: 32 nodes fill 1 domain of 18 and 14 nodes of one more" in out
    assert "sets nodes_per_nvlink_domain (16, 8, 4, 2 divide 32 nodes)" in out
    segmented = load_scenario(_write(tmp_path, nodes_per_nvlink_domain=16))
    assert domain_inputs(segmented) == {"nvlink_domain": {"nodes": 16, "full": 2, "partial_nodes": 0}}
    assert main(["check", _write(tmp_path, nodes_per_nvlink_domain=16)]) == 0
    assert "NVLink domains" not in capsys.readouterr().out
    # a node-sized NVLink domain: nothing to say
    assert domain_inputs(load_scenario(_write(tmp_path, hardware="dgx-b200", nodes=4))) == {}


def test_hybridep_group_larger_than_a_domain(tmp_path):
    """EP 128 on GB200 trays: a rack of 72 GPUs holds no whole number of 128-rank groups' shares
    but groups of 8 (gcd); in segments of 16 trays (64 GPUs) two halves of 64 on NVLink."""
    packed = RankShapes.of(load_scenario(_write(tmp_path, parallel_ep=128)))
    assert (packed.ep_intra, packed.ep_nodes) == (8, 16)
    seg = RankShapes.of(load_scenario(_write(tmp_path, parallel_ep=128, nodes=64, nodes_per_nvlink_domain=16,
                                             training={"micro_batch": 1, "global_batch": 256, "recompute": "none"})))
    assert (seg.ep_intra, seg.ep_nodes) == (64, 2)

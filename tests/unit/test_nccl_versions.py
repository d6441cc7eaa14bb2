"""NCCL's tuner tables per release (``nccl.version``): the numbers of NCCL-COST-MODEL.md §5, the
profile key and its errors, the version in logs, and what a release changes in a prediction."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from simulator.calibration.fit import MeasuredCollective, from_sweep
from simulator.calibration.nccl_log import parse_nccl_text
from simulator.calibration.profile_fit import logged_nccl_version
from simulator.cli import main
from simulator.config.hardware import apply_overlay, load_profile
from simulator.costs import nccl_constants, nccl_graph, nccl_tuner
from simulator.costs.model import CostModel
from simulator.costs.nccl_versions import ENCODED, NEWEST, resolve, tables_for
from simulator.hardware.topology import build_topology
from simulator.replay.single_collective import time_collective

SIMPLE = 2  # index of the Simple protocol in a (LL, LL128, Simple) row


def test_tree_simple_hop_28us_in_2_21_only():
    """§5: 2.21.5 set the Tree/Simple hop to 28 us on NVLink, PCI and NET (4/4/14 before and after)
    and had no Tree/Simple base latency (8.4 from 2.23.4)."""
    hops = {v: tuple(tables_for(v).hw_latency_us[link]["tree"][SIMPLE] for link in ("nvlink", "pci", "net"))
            for v in ENCODED}
    assert hops["2.21.5"] == (28.0, 28.0, 28.0)
    assert hops["2.23.4"] == hops["2.27.3"] == hops["2.28.3"] == hops["2.30.7"] == (4.0, 4.0, 14.0)
    assert hops["2.18.3"] == (4.0, 6.0, 14.0)  # PCI 6 us in the v2.18.3-1 tuning.cc
    assert tables_for("2.21.5").base_latency_us["tree"][SIMPLE] == 0.0
    assert tables_for("2.23.4").base_latency_us["tree"][SIMPLE] == 8.4


def test_caps_and_pat_per_release():
    """§5: Hopper's LL cap equal to Ampere's in 2.18.3, raised to 141/45/35 in 2.21.5; PAT from
    2.23.4 at x0.85, x0.75 from 2.27; Blackwell rows from 2.27 (LL cap twice Hopper's); the NET
    NVLSTree hop 19 (2.18.3), 14 (2.21.5 to 2.28.3), 20.9 (2.30.7)."""
    assert tables_for("2.18.3").ll_max_bw["hopper"] == (87.7, 22.5, 19.0) == tables_for("2.18.3").ll_max_bw["ampere"]
    assert tables_for("2.21.5").ll_max_bw["hopper"] == (141.0, 45.0, 35.0)
    assert [tables_for(v).pat_bw_factor for v in ENCODED] == [0.0, 0.0, 0.85, 0.75, 0.75, 0.75]
    assert "blackwell" not in tables_for("2.23.4").ll_max_bw
    assert tables_for("2.27.3").ll_max_bw["blackwell"] == (282.0, 90.0, 70.0)
    assert tables_for("2.23.4").arch_row("blackwell") == "hopper"
    assert [tables_for(v).hw_latency_us["net"]["nvls_tree"][SIMPLE] for v in ENCODED] == [19.0, 14.0, 14.0, 14.0, 14.0, 20.9]


def test_newest_tables_are_the_module_defaults():
    assert NEWEST == "2.30.7"
    k = nccl_constants.TunerConstants()
    assert k == nccl_constants.TunerConstants.for_version(NEWEST) == nccl_constants.TunerConstants.for_version(None)
    assert k.base_latency_us == tables_for(NEWEST).base_latency_us
    assert k.hw_latency_us == tables_for(NEWEST).hw_latency_us


@pytest.mark.parametrize("asked, used", [
    ("2.22.3", "2.21.5"), ("2.26.2", "2.23.4"), ("2.27.7", "2.27.3"), ("2.29.2", "2.28.3"), ("2.23.4", "2.23.4"),
    ("2.8.4", "2.18.3"), ("2.31.0", "2.30.7"), ("2.21", "2.18.3"), (None, "2.30.7"),
])
def test_release_between_encoded_ones_uses_the_latest_not_newer(asked, used):
    assert resolve(asked) == used


def _h100(version: str | None):
    base = load_profile("dgx-h100")
    return base if version is None else apply_overlay(base, {"nccl": {"version": version}})


def test_small_tree_allreduce_latency_follows_the_release():
    """16 H100 on 2 nodes, Tree/Simple AllReduce of 8 B: the time is NCCL's latency term
    base + 2·[(ppn-1)·intra + log2(N)·inter]. From 2.30.7 to 2.21.5 the base drops by 8.4 us and
    the NVLink and NET hops rise by 24 and 14 us: + 2·(7·24 + 14) - 8.4 = +355.6 us."""
    times = {}
    for v in ("2.21.5", "2.30.7"):
        costs = CostModel(build_topology(_h100(v), 2), "tree", "simple")
        times[v] = time_collective("allreduce", list(range(16)), 8, costs).time_s * 1e6
    assert times["2.21.5"] - times["2.30.7"] == pytest.approx(2 * (7 * 24 + 14) - 8.4, abs=1e-6)
    ctx = nccl_graph.context_from_profile(_h100("2.21.5"), 16, 2)
    extra = ctx.constants.net_hop_extra_us  # the deployed fabric's hop cost, the same in every release
    assert nccl_tuner.latency_us(ctx, "allreduce", "tree", "simple") == pytest.approx(2 * (7 * 28 + 28 + extra))


def test_release_changes_the_choice_not_only_the_time():
    """A costlier Tree/Simple (2.21.5) and a cheaper NVLSTree network hop (14 vs 20.9 us) move
    NCCL's choice at 1 MiB on 2 H100 nodes from Tree/LL128 to NVLSTree."""
    picks = {}
    for v in ("2.21.5", "2.30.7"):
        ctx = nccl_graph.context_from_profile(_h100(v), 16, 2)
        picks[v] = nccl_tuner.select(ctx, "allreduce", 1 << 20)
    assert picks == {"2.21.5": ("nvls_tree", "simple"), "2.30.7": ("tree", "ll128")}


def test_ring_allreduce_counted_2n_network_steps_before_2_23():
    ctx_old = nccl_graph.context_from_profile(_h100("2.21.5"), 16, 2)
    ctx_new = nccl_graph.context_from_profile(_h100("2.23.4"), 16, 2)
    k = ctx_new.constants
    inter = k.hw_latency_us["net"]["ring"][0] + k.net_hop_extra_us + nccl_tuner.net_plugin_latency_us(ctx_new, "ll")
    intra = max(k.hw_latency_us["nvlink"]["ring"][0], 1.0)  # the net overhead of an Intel host, 1 us for LL
    # 2(n-1) = 30 steps; 2(N-1) = 2 of them on the network from 2.23, 2N = 4 before
    assert nccl_tuner.latency_us(ctx_new, "allreduce", "ring", "ll") == pytest.approx(6.6 + 28 * intra + 2 * inter)
    assert nccl_tuner.latency_us(ctx_old, "allreduce", "ring", "ll") == pytest.approx(6.6 + 26 * intra + 4 * inter)


def test_profile_overrides_replace_the_release_tables():
    p = apply_overlay(load_profile("dgx-h100"), {"nccl": {"version": "2.21.5", "hw_latency_us.nvlink.tree.simple": 5.0}})
    k = nccl_graph.context_from_profile(p, 8, 1).constants
    assert k.hw_latency_us["nvlink"]["tree"][SIMPLE] == 5.0 and k.hw_latency_us["net"]["tree"][SIMPLE] == 28.0
    assert k.for_selection.hw_latency_us["nvlink"]["tree"][SIMPLE] == 28.0  # NCCL chooses with its own table
    assert k.for_selection.nccl_version == "2.21.5"


@pytest.mark.parametrize("value", ["2.23", "2.x", "v2.23.4", "1.3.0", "[2, 23]"])
def test_bad_version_exits_2_naming_file_and_field(tmp_path, capsys, value):
    f = tmp_path / "old-nccl.yaml"
    f.write_text(f"base: dgx-h100\nnccl:\n  version: {value}\n")
    assert main(["check", "scenarios/quickstart.yaml", "--hardware", str(f)]) == 2
    err = capsys.readouterr().err
    assert str(f) in err and "nccl.version" in err and "2.23.4" in err and "Traceback" not in err


def test_collective_option_and_its_errors(capsys):
    args = ["collective", "--hardware", "dgx-h100", "--op", "allreduce", "--ranks", "16", "-b", "8", "-e", "8"]
    assert main([*args, "--nccl-version", "2.22.3"]) == 0
    assert "NCCL 2.22.3 tuner tables (those of 2.21.5)" in capsys.readouterr().out
    assert main([*args, "--nccl-version", "two"]) == 2
    err = capsys.readouterr().err
    assert "--nccl-version" in err and "Traceback" not in err


HEADER = """# nccl-tests version 2.17.6 nccl-headers=22602 nccl-library=22602
# Collective test starting: all_reduce_perf
# nThread 1 nGpus 1 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid   1 on      node0 device  0 [0000:18:00] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid   2 on      node0 device  1 [0000:2a:00] NVIDIA H100 80GB HBM3
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)
           8             2     float     sum      -1    10.00    0.00    0.00       0    10.00    0.00    0.00       0
          16             4     float     sum      -1    10.00    0.00    0.00       0    10.00    0.00    0.00       0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 0.00
"""


def test_log_header_gives_the_version_and_calibrate_records_it():
    (sweep,) = parse_nccl_text(HEADER, "a.txt")
    assert sweep.nccl_version == "2.26.2"  # nccl-library=22602
    (info,) = parse_nccl_text("NCCL version 2.18.3+cuda12.2\n" + HEADER.split("\n", 1)[1], "b.txt")
    assert info.nccl_version == "2.18.3"
    m = from_sweep(sweep, load_profile("dgx-h100"))
    assert m.nccl_version == "2.26.2"
    assert logged_nccl_version([m, m])[0] == "2.26.2"
    other = MeasuredCollective("c.txt", "allreduce", 2, 1, 2, (8,), (1e-5,), nccl_version="2.18.3")
    version, warning = logged_nccl_version([m, other])
    assert version is None and "2.18.3" in warning and "2.26.2" in warning
    assert logged_nccl_version([MeasuredCollective("d.txt", "allreduce", 2, 1, 2, (8,), (1e-5,))]) == (None, None)


def test_calibrate_overlay_names_the_logs_release(tmp_path, capsys):
    logs = Path(__file__).parents[1] / "fixtures" / "nccl_logs"
    log = logs / "gh200x8_allreduce_2node_alps_slingshot.txt"
    out = tmp_path / "cal.yaml"
    assert main(["calibrate", str(log), "--hardware", "gh200-alps", "-o", str(out)]) == 0
    assert yaml.safe_load(out.read_text())["nccl"]["version"] == "2.23.4"
    assert load_profile(str(out)).nccl_version == "2.23.4"
    # the same log as run with 2.21.5: the logs disagree, so no release is recorded, with a warning
    older = tmp_path / "gh200x8_nccl2215.txt"
    older.write_text(log.read_text().replace("nccl-library=22304", "nccl-library=22105"))
    capsys.readouterr()
    assert main(["calibrate", str(log), str(older), "--hardware", "gh200-alps", "-o", str(out)]) == 0
    assert "version" not in (yaml.safe_load(out.read_text()).get("nccl") or {})
    err = capsys.readouterr().err
    assert "different NCCL releases (2.21.5: gh200x8_nccl2215.txt; 2.23.4: gh200x8" in err


def test_sweep_csv_software_line_gives_the_version():
    from simulator.calibration.measured import read_sweep

    data = Path(__file__).parents[2] / "data" / "nccl"
    assert read_sweep(data / "h100x16_allreduce_2node_awsp5_efa.csv").nccl_version == "2.22.3"
    assert read_sweep(data / "a100x16_allreduce_2node_abci.csv").nccl_version == "2.8.4"  # "NCCL 2.8.4-1"
    assert read_sweep(data / "mi355x16_allreduce_2node_aac14_pollara.csv").nccl_version == "2.26.6"  # RCCL
    assert read_sweep(data / "h100x16_allreduce_2node_gcp_a3mega_tcpxo.csv").nccl_version is None


def test_collective_log_carries_the_release_calibrate_reads(tmp_path):
    from simulator.calibration.nccl_log import parse_nccl_log

    log = tmp_path / "pred.txt"
    assert main(["collective", "--hardware", "dgx-h100", "--op", "allreduce", "--ranks", "8", "-b", "1K", "-e", "4K",
                 "--nccl-version", "2.23.4", "--log", str(log)]) == 0
    assert [s.nccl_version for s in parse_nccl_log(log)] == ["2.23.4"]


def _ctx_at(profile: str, version: str, ranks: int, nodes: int):
    p = apply_overlay(load_profile(profile), {"nccl": {"version": version}}, source="test")
    return nccl_graph.context_from_profile(p, ranks, nodes)


def test_nvls_bandwidth_before_2_28_follows_each_tag():
    """tuning.cc of v2.19.3-1 .. v2.27.7-1: NVLS busBw = nCh x min(bwIntra, bwInter) and NVLSTree
    nCh x min(bwIntra, bwInter on <= 2 nodes, bwInter/2 beyond), both x 5/6 to algorithm bandwidth,
    without nvlsEfficiency; v2.18.3-1 rates them as any algorithm (bwIntra on <= 2 nodes) and
    converts NVLSTree by 0.70 N / (2(N-1)); v2.27 gives NVLS AllGather its own rule,
    min(bwIntra (ppn-1)/ppn, 0.9 bwInter), unconverted. bwIntra is the NVLS graph's NVLink total
    over its channels, bwInter the network speed."""
    one = _ctx_at("dgx-h100", "2.23.4", 8, 1)
    g = one.graph
    total, n_ch = g.nvls_intra_total_GBps, g.nvls_channels
    assert nccl_tuner.algo_bandwidth_GBps(one, "allreduce", "nvls", "simple") == pytest.approx(total * 5 / 6)
    two = _ctx_at("aws-p5", "2.22.3", 16, 2)
    inter = two.graph.bw_inter_GBps
    expected = n_ch * min(total / n_ch, inter) * 5 / 6
    assert nccl_tuner.algo_bandwidth_GBps(two, "allreduce", "nvls_tree", "simple") == pytest.approx(expected)
    four = _ctx_at("aws-p5", "2.22.3", 32, 4)
    expected = n_ch * min(total / n_ch, four.graph.bw_inter_GBps / 2) * 5 / 6
    assert nccl_tuner.algo_bandwidth_GBps(four, "allreduce", "nvls_tree", "simple") == pytest.approx(expected)
    old = _ctx_at("aws-p5", "2.18.3", 16, 2)
    assert nccl_tuner.algo_bandwidth_GBps(old, "allreduce", "nvls_tree", "simple") == pytest.approx(
        n_ch * (total / n_ch) * 0.70 * 2 / 2)
    ag = _ctx_at("dgx-h100", "2.27.3", 8, 1)
    assert nccl_tuner.algo_bandwidth_GBps(ag, "allgather", "nvls", "simple") == pytest.approx(
        n_ch * min(total / n_ch * 7 / 8, total / n_ch * 0.9))
    # 2.28 on: nvlsEfficiency and the n/nsteps conversion (NCCL-COST-MODEL.md §2)
    new = _ctx_at("dgx-h100", "2.28.3", 8, 1)
    eff = nccl_tuner.nvls_efficiency(new)
    assert nccl_tuner.algo_bandwidth_GBps(new, "allreduce", "nvls", "simple") == pytest.approx(
        n_ch * (total / n_ch) * eff * (n_ch - 1) / n_ch * 2 * 8 / 14)

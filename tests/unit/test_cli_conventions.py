"""Conventions users already know: nccl-tests' short options and op spellings for `collective`,
its `--log` read back by `calibrate`, `calibrate` on the measured CSVs of data/nccl/, and the
sub-command's usage on an unknown option."""

from __future__ import annotations

import json

import pytest

from simulator.cli import main
from simulator.files import bundled_dir


def _json(capsys, argv):
    assert main(argv + ["--json", "-"]) == 0
    return json.loads(capsys.readouterr().out)


def test_nccl_tests_short_options_mean_the_long_ones(capsys):
    long = _json(capsys, ["collective", "--hardware", "dgx-h100", "--op", "allreduce", "--ranks", "8",
                          "--min-bytes", "1K", "--max-bytes", "1M", "--step-factor", "4"])
    short = _json(capsys, ["collective", "--hardware", "dgx-h100", "--op", "allreduce", "--ranks", "8",
                           "-b", "1K", "-e", "1M", "-f", "4"])
    assert short["rows"] == long["rows"] and [r["size_bytes"] for r in short["rows"]] == [1 << 10, 1 << 12, 1 << 14,
                                                                                          1 << 16, 1 << 18, 1 << 20]


def test_g_is_gpus_per_process_as_in_nccl_tests(capsys):
    """`all_reduce_perf -g 8` is one process driving 8 GPUs: 8 ranks, and each collective pays
    at least 8 kernel launches from the one host thread."""
    from simulator.config.hardware import load_profile

    one = _json(capsys, ["collective", "--hardware", "dgx-h100", "--op", "allreduce", "--ranks", "8", "-b", "8", "-e", "8"])
    g8 = _json(capsys, ["collective", "--hardware", "dgx-h100", "--op", "allreduce", "-g", "8", "-b", "8", "-e", "8"])
    assert g8["ranks"] == 8
    launch = load_profile("dgx-h100").gpu.kernel_launch_us
    assert g8["rows"][0]["time_us"] == pytest.approx(max(8 * launch, one["rows"][0]["time_us"]))


@pytest.mark.parametrize("spelling", ["all_reduce", "AllReduce", "all-reduce", "ncclAllReduce", "all_reduce_perf"])
def test_op_accepts_nccl_spellings(capsys, spelling):
    doc = _json(capsys, ["collective", "--hardware", "dgx-h100", "--op", spelling, "--ranks", "8", "-b", "1M", "-e", "1M"])
    assert doc["op"] == "allreduce"


def test_one_alias_table_for_every_reader():
    from simulator import vocabulary
    from simulator.calibration import kineto, nccl_log
    from simulator.commands import collective
    from simulator.costs import collectives

    assert nccl_log.canonical_op is collectives.canonical_op is vocabulary.canonical_op
    assert collectives.normalize_op is vocabulary.normalize_op
    assert collectives.OPS == collective.OPS == vocabulary.PREDICTED_OPS
    # the profiler-trace reader knows every spelling the logs' reader does, and reads it alike
    # (PyTorch's uneven all_to_allv aside: NCCL runs it as the AllToAll kernel)
    assert {k: kineto._COLLECTIVE[k] for k in vocabulary.OP_ALIASES if k != "alltoallv"} == \
        {k: v for k, v in vocabulary.OP_ALIASES.items() if k != "alltoallv"}
    for name, op in [("all_gather", "allgather"), ("reduce_scatter_perf", "reducescatter"), ("all_to_all", "alltoall"),
                     ("a2a", "alltoall"), ("send_recv", "sendrecv")]:
        assert collectives.normalize_op(name) == op
        assert collectives.busbw_factor(name, 4) == collectives.busbw_factor(op, 4)


@pytest.mark.parametrize("spelling,algo", [("Ring", "ring"), ("TREE", "tree"), ("NVLSTree", "nvls_tree"),
                                           ("nvls_tree", "nvls_tree"), ("NVLS", "nvls"), ("Ring,Tree", None),
                                           ("^NVLS", None), ("PAT", None)])
def test_one_reading_of_a_pinned_algorithm(spelling, algo):
    """``NCCL_ALGO`` as the logs, the measured CSVs and the command line spell it: one pinned
    algorithm the model has flows for, or none."""
    from simulator.costs.collectives import FLOWED
    from simulator.vocabulary import canonical_algo

    assert canonical_algo(spelling, among=FLOWED) == algo


def test_unknown_op_exits_2_naming_op(capsys):
    assert main(["collective", "--hardware", "dgx-h100", "--op", "allshuffle", "--ranks", "8"]) == 2
    assert "--op" in capsys.readouterr().err


def test_collective_log_round_trips_through_calibrate(tmp_path, capsys):
    """What `collective --log` writes, `calibrate` reads back as a measurement of those exact
    times: the datasheet profile reproduces them (0.0% error before any fit)."""
    from simulator.calibration.nccl_log import parse_nccl_log

    log, out = tmp_path / "ag.log", tmp_path / "o.yaml"
    assert main(["collective", "--hardware", "dgx-h100", "--op", "all_gather", "--ranks", "16", "-b", "64K",
                 "-e", "256M", "-f", "4", "--log", str(log), "--json", str(tmp_path / "ag.json")]) == 0
    rows = json.loads((tmp_path / "ag.json").read_text())["rows"]
    (sweep,) = parse_nccl_log(log)
    assert (sweep.op, sweep.nranks, sweep.nodes) == ("allgather", 16, 2)
    measured = sweep.out_of_place()
    assert [r.size_bytes for r in measured] == [r["size_bytes"] for r in rows]
    for got, want in zip(measured, rows):
        assert got.time_us == pytest.approx(want["time_us"], rel=5e-3, abs=5e-3)  # as printed (%7.2f ...)
        assert got.busbw == pytest.approx(want["busbw_GBps"], abs=6e-3)
    capsys.readouterr()
    assert main(["calibrate", str(log), "--hardware", "dgx-h100", "-o", str(out)]) == 0
    report = capsys.readouterr().out
    line = next(x for x in report.splitlines() if "allgather x16" in x)
    assert line.split()[-8:-6] == ["0.0%->", "0.0%"]  # >= 1 MiB median, before the fit


def test_calibrate_reads_the_measured_csvs(tmp_path, capsys):
    """data/nccl/*.csv are read like logs: op and ranks from the header, nodes from the
    hardware line (2 nodes x 1 GPU for the PCIe pair over InfiniBand)."""
    data = bundled_dir("data/nccl")
    out = tmp_path / "o.yaml"
    assert main(["calibrate", str(data / "h100x8_allreduce_1node.csv"), str(data / "h100x8_allgather_1node.csv"),
                 "--hardware", "dgx-h100", "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "allreduce x8" in printed and "allgather x8" in printed and out.is_file()

    from simulator.calibration.fit import from_measured_csv
    from simulator.calibration.measured import read_sweep
    from simulator.config.hardware import load_profile

    m = from_measured_csv(read_sweep(data / "a100pcie_x2_sendrecv_2node_ib_linear1k.csv"), load_profile("a100-pcie"))
    assert (m.op, m.ranks, m.nodes, m.gpus_per_node) == ("sendrecv", 2, 2, 1)
    m = from_measured_csv(read_sweep(data / "h100x8_allgather_1node_full_ringalgo.csv"), load_profile("dgx-h100"))
    assert (m.op, m.ranks, m.algo, m.gpus_per_process) == ("allgather", 8, "ring", 8)


def test_calibrate_csv_it_cannot_use_exits_2_saying_why(tmp_path, capsys):
    data = bundled_dir("data/nccl")
    out = str(tmp_path / "o.yaml")
    # a PyTorch benchmark, not nccl-tests: no '# collective:' line
    assert main(["calibrate", str(data / "h200x8_allreduce_1node_torchdist.csv"), "--hardware", "dgx-h100", "-o", out]) == 2
    assert "collective: expected a '# collective:" in capsys.readouterr().err
    # an nccl-tests sweep whose time column was left empty
    lines = (data / "h100x8_allreduce_1node.csv").read_text().splitlines()
    blank = [",".join(c if i != 3 else "" for i, c in enumerate(x.split(","))) if x[:1].isdigit() else x for x in lines]
    (tmp_path / "notime.csv").write_text("\n".join(blank) + "\n")
    assert main(["calibrate", str(tmp_path / "notime.csv"), "--hardware", "dgx-h100", "-o", out]) == 2
    assert "notime.csv: no row with a size and a time" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["collective", "--hardware", "dgx-h100", "--op", "allreduce", "--ranks", "8", "--frob"],
                                  ["run", "scenarios/quickstart.yaml", "--frob"]])
def test_unknown_option_prints_the_subcommands_usage(capsys, argv):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: clustersim {argv[0]} ") and "unrecognized arguments: --frob" in err

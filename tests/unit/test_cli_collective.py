"""`clustersim collective`: table, JSON contract, size suffixes, and bad input -> exit 2."""

from __future__ import annotations

import json

import pytest
import yaml

from simulator.cli import main
from simulator.config.hardware import PROFILE_DIR

H100 = "dgx-h100"


def _no_nvls_profile(tmp_path) -> str:
    """A copy of the bundled H100 profile with in-switch reduction switched off, named like A100."""
    data = yaml.safe_load((PROFILE_DIR / f"{H100}.yaml").read_text())
    data["name"] = "dgx-a100"
    data["node"]["scale_up"]["nvls"] = False
    path = tmp_path / "dgx-a100.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_table_lists_every_size_with_algorithm(capsys):
    assert main(["collective", "--hardware", H100, "--op", "allreduce", "--ranks", "8",
                 "--min-bytes", "1K", "--max-bytes", "1M"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line and not line.startswith("#")]
    assert [int(r[0]) for r in rows] == [1024 << i for i in range(11)]
    for r in rows:
        size, count, time_us, algbw, busbw = int(r[0]), int(r[1]), float(r[3]), float(r[4]), float(r[5])
        assert count == size // 4
        assert algbw == pytest.approx(size / time_us / 1e3, rel=0.02, abs=0.01)
        assert busbw == pytest.approx(algbw * 2 * 7 / 8, rel=0.02, abs=0.01)
        assert "/" in r[6]


def test_json_contract_and_suffixes(tmp_path, capsys):
    out = tmp_path / "c.json"
    assert main(["collective", "--hardware", H100, "--op", "allgather", "--ranks", "16", "--min-bytes", "32M",
                 "--max-bytes", "128M", "--step-factor", "2", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert {"op", "ranks", "gpus_per_node", "hardware", "rows"} <= set(doc)
    assert (doc["op"], doc["ranks"], doc["gpus_per_node"], doc["hardware"]) == ("allgather", 16, 8, H100)
    assert [r["size_bytes"] for r in doc["rows"]] == [32 << 20, 64 << 20, 128 << 20]
    for r in doc["rows"]:
        assert {"size_bytes", "time_us", "algbw_GBps", "busbw_GBps", "algorithm", "protocol"} <= set(r)
        assert r["busbw_GBps"] == pytest.approx(r["algbw_GBps"] * 15 / 16)
        assert r["algbw_GBps"] == pytest.approx(r["size_bytes"] / r["time_us"] / 1e3)


def test_pinned_algorithm_and_protocol(capsys):
    assert main(["collective", "--hardware", H100, "--op", "allreduce", "--ranks", "8", "--min-bytes", "1G",
                 "--max-bytes", "1G", "--algo", "ring", "--proto", "ll128"]) == 0
    assert "ring/ll128" in capsys.readouterr().out


def test_gpus_per_node_spreads_ranks(tmp_path):
    out = tmp_path / "c.json"
    assert main(["collective", "--hardware", H100, "--op", "allreduce", "--ranks", "8", "--gpus-per-node", "4",
                 "--min-bytes", "1G", "--max-bytes", "1G", "--json", str(out)]) == 0
    two_nodes = json.loads(out.read_text())["rows"][0]
    assert main(["collective", "--hardware", H100, "--op", "allreduce", "--ranks", "8",
                 "--min-bytes", "1G", "--max-bytes", "1G", "--json", str(out)]) == 0
    one_node = json.loads(out.read_text())["rows"][0]
    assert two_nodes["time_us"] > one_node["time_us"]  # half the ring crosses NICs


def test_nvlink_domain_segments_split_a_rack(tmp_path):
    """An All-to-All of 1 GiB per rank over 32 GB200s on 8 trays: one NVLink domain, or two segments
    of 4 trays (a scenario's nodes_per_nvlink_domain), where half of every rank's bytes cross to the
    other segment through its own 400 Gb/s NIC at the profile's 0.95: 0.5 GiB / 47.5 GB/s."""
    out = tmp_path / "c.json"
    common = ["collective", "--hardware", "gb200-nvl72", "--op", "alltoall", "--ranks", "32",
              "--min-bytes", "1G", "--max-bytes", "1G", "--json", str(out)]
    assert main(common) == 0
    rack = json.loads(out.read_text())
    assert main(common + ["--nodes-per-nvlink-domain", "4"]) == 0
    segments = json.loads(out.read_text())
    assert segments["inputs"]["nodes_per_nvlink_domain"] == 4 and "nodes_per_nvlink_domain" not in rack["inputs"]
    assert segments["rows"][0]["time_us"] * 1e-6 == pytest.approx(0.5 * 2**30 / (400e9 / 8 * 0.95), rel=0.05)
    assert segments["rows"][0]["time_us"] > 5 * rack["rows"][0]["time_us"]


@pytest.mark.parametrize("argv,field", [
    (["--hardware", "no-such-gpu", "--op", "allreduce", "--ranks", "8"], "hardware"),
    (["--hardware", H100, "--op", "allsmash", "--ranks", "8"], "--op"),
    (["--hardware", H100, "--op", "allreduce", "--ranks", "0"], "--ranks"),
    (["--hardware", H100, "--op", "allreduce", "--ranks", "12"], "--ranks"),
    (["--hardware", H100, "--op", "allreduce", "--ranks", "8", "--min-bytes", "0"], "--min-bytes"),
    (["--hardware", H100, "--op", "allreduce", "--ranks", "8", "--min-bytes", "-5"], "--min-bytes"),
    (["--hardware", H100, "--op", "allreduce", "--ranks", "8", "--max-bytes", "12Q"], "--max-bytes"),
    (["--hardware", H100, "--op", "allreduce", "--ranks", "8", "--min-bytes", "2M", "--max-bytes", "1M"], "--min-bytes"),
    (["--hardware", H100, "--op", "allreduce", "--ranks", "8", "--algo", "magic"], "--algo"),
    (["--hardware", H100, "--op", "allreduce", "--ranks", "16", "--nodes-per-nvlink-domain", "2"],
     "--nodes-per-nvlink-domain"),
    (["--hardware", "gb200-nvl72", "--op", "allreduce", "--ranks", "32", "--nodes-per-nvlink-domain", "3"],
     "--nodes-per-nvlink-domain"),
    (["--hardware", "gb200-nvl72", "--op", "allreduce", "--ranks", "32", "--nodes-per-nvlink-domain", "19"],
     "--nodes-per-nvlink-domain"),
    (["--hardware", H100, "--op", "allreduce", "--ranks", "8", "--proto", "fast"], "--proto"),
    (["--hardware", H100, "--op", "allgather", "--ranks", "8", "--algo", "tree"], "--algo"),
    (["--hardware", H100, "--op", "allreduce", "--ranks", "8", "--step-factor", "1"], "--step-factor"),
])
def test_bad_input_exits_2_naming_the_field(argv, field, capsys):
    assert main(["collective", *argv]) == 2
    err = capsys.readouterr().err
    assert field in err
    assert "Traceback" not in err


def test_nvls_on_hardware_without_it(tmp_path, capsys):
    path = _no_nvls_profile(tmp_path)
    assert main(["collective", "--hardware", path, "--op", "allreduce", "--ranks", "8", "--algo", "nvls"]) == 2
    err = capsys.readouterr().err
    assert "--algo: nvls needs an NVSwitch with in-switch reduction; dgx-a100 has none" in err


def test_malformed_profile_exits_2(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    data = yaml.safe_load((PROFILE_DIR / f"{H100}.yaml").read_text())
    data["node"]["scale_up"]["warp_drive"] = 1
    bad.write_text(yaml.safe_dump(data))
    assert main(["collective", "--hardware", str(bad), "--op", "allreduce", "--ranks", "8"]) == 2
    assert "node.scale_up.warp_drive" in capsys.readouterr().err


@pytest.mark.parametrize("op, factor", [("allreduce", 0.0), ("allgather", 0.0), ("alltoall", 0.0),
                                        ("broadcast", 1.0), ("sendrecv", 1.0)])
def test_one_rank_is_a_local_copy(tmp_path, op, factor):
    """One rank: NCCL copies the send buffer into the receive buffer (ncclLaunchOneRank), so the
    out-of-place time is the launch floor or the copy, 2 x size bytes at a streaming kernel's
    share of HBM plus its ramp (costs/memory_bound.py), whichever is longer; busbw is what
    nccl-tests prints on one rank: 0 where its factor is (n - 1)/n, algbw for Broadcast and
    SendRecv. In place there is nothing to copy: the log's in-place columns are the launch."""
    from simulator.calibration.nccl_log import parse_nccl_log
    from simulator.config.hardware import load_profile

    gpu = load_profile("dgx-a100").gpu
    out, log = tmp_path / "one.json", tmp_path / "one.log"
    assert main(["collective", "--hardware", "dgx-a100", "--op", op, "--ranks", "1", "-b", "1K", "-e", "1G",
                 "-f", "1024", "--json", str(out), "--log", str(log)]) == 0
    rows = json.loads(out.read_text())["rows"]
    for r in rows:
        copy_us = 0.6 + 2 * r["size_bytes"] / (0.90 * gpu.hbm_Bps * gpu.hbm_efficiency) * 1e6
        assert r["time_us"] == pytest.approx(max(gpu.kernel_launch_us, copy_us), rel=1e-9)
        assert r["algorithm"] == "copy"
        assert r["busbw_GBps"] == pytest.approx(r["algbw_GBps"] * factor)
    assert rows[-1]["time_us"] > 1000  # 1 GiB read and written: over a millisecond on A100 (~2 TB/s)
    (sweep,) = parse_nccl_log(log)
    inplace = [row for row in sweep.rows if row.inplace]
    assert [row.time_us for row in inplace] == pytest.approx([gpu.kernel_launch_us] * 3)


def test_nccl_tests_type_names(tmp_path):
    """``-d`` takes nccl-tests' spellings as well as a scenario's; the log names the type as
    nccl-tests would (bf16 -> bfloat16), with its element count."""
    from simulator.calibration.nccl_log import parse_nccl_log

    for given in ("bfloat16", "bf16"):
        log = tmp_path / f"{given}.log"
        assert main(["collective", "--hardware", H100, "--op", "allreduce", "--ranks", "8", "-b", "1M", "-e", "1M",
                     "-d", given, "--log", str(log)]) == 0
        (sweep,) = parse_nccl_log(log)
        assert {(row.dtype, row.count) for row in sweep.rows} == {("bfloat16", 1 << 19)}
    assert main(["collective", "--hardware", H100, "--op", "allreduce", "--ranks", "8", "-d", "int32"]) == 0

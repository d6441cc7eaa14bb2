"""nccl-tests log parser and writer: round trips from the transcribed sweeps and every quirk of
the real layout (old/new column headers, N/A, INFO lines, several runs, truncation)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from simulator.calibration.nccl_log import OPS, canonical_op, parse_nccl_log, parse_nccl_text
from simulator.costs.collectives import busbw_factor
from simulator.calibration.nccl_log_writer import format_log, make_row, synthetic_devices, write_nccl_log
from simulator.calibration.nccl_log import Sweep
from simulator.errors import InputError

LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "nccl_logs"
DATA = Path(__file__).resolve().parents[2] / "data" / "nccl"
# Every transcribed nccl-tests sweep (the PyTorch-measured tables (*_torchdist) and the B200 summary
# have no nccl-tests rows, so no log is reconstructed from them).
CSVS = sorted(c for c in DATA.glob("*.csv") if not (c.stem.endswith("_torchdist") or c.stem.startswith("supplement_")))
HANDMADE = LOGS / "handmade_a100x16_two_runs_info.txt"


def _csv_rows(path: Path) -> list[dict[str, str]]:
    body = [ln for ln in path.read_text().splitlines() if ln and not ln.startswith("#")]
    return list(csv.DictReader(body))


def _header_ranks(path: Path) -> int:
    """Rank count as the transcription's '# collective:' line states it ('16 ranks')."""
    import re

    line = next(ln for ln in path.read_text().splitlines() if ln.startswith("# collective:"))
    return int(re.search(r"(\d+) ranks", line).group(1))


def test_every_transcribed_sweep_has_a_log():
    assert len(CSVS) >= 20
    for c in CSVS:
        assert (LOGS / f"{c.stem}.txt").is_file(), c.stem


@pytest.mark.parametrize("csv_path", CSVS, ids=[c.stem for c in CSVS])
def test_round_trip_from_csv(csv_path: Path):
    (sweep,) = parse_nccl_log(LOGS / f"{csv_path.stem}.txt")
    expected = _csv_rows(csv_path)
    assert sweep.nranks == _header_ranks(csv_path)
    assert canonical_op(sweep.op) == sweep.op and sweep.op in csv_path.stem
    # the out-of-place half was transcribed, or the in-place half where a page prints only that
    assert [r.inplace for r in sweep.rows] == [rec["inplace"] == "1" for rec in expected]
    assert len(sweep.rows) == len(expected)
    for row, rec in zip(sweep.rows, expected):
        assert row.size_bytes == int(rec["size_bytes"])
        assert row.count == int(rec["count"])
        assert row.dtype == rec["dtype"]
        t = float(rec["time_us"])
        assert row.time_us == t  # transcribed digits are kept
        assert row.algbw == float(rec["algbw_GBps"])
        assert row.busbw == float(rec["busbw_GBps"])
    # busbw/algbw is the nccl-tests factor for the rank count named in the transcription's header
    factor = busbw_factor(sweep.op, sweep.nranks)
    for row in sweep.rows:
        if row.algbw >= 5:
            assert row.busbw / row.algbw == pytest.approx(factor, rel=0.01)


def test_handmade_two_runs_with_nccl_info_lines():
    runs = parse_nccl_log(HANDMADE)
    assert [r.op for r in runs] == ["allreduce", "allgather"]
    ar, ag = runs
    for run in runs:
        assert run.nranks == 16 and run.nodes == 2 and run.gpus_per_node == 8
        assert run.hosts == ("sophia-gpu-04", "sophia-gpu-09")
        assert run.nccl_version == "2.22.3"
        assert run.device_name == "NVIDIA A100-SXM4-40GB"
        assert len(run.out_of_place()) == len(run.in_place()) == 7
        # the footer is the mean busbw over both halves of every row
        assert run.avg_busbw == pytest.approx(sum(r.busbw for r in run.rows) / len(run.rows), abs=1e-3)
        assert run.min_bytes == 262144 and run.max_bytes == 16777216 and run.iters == 20
    assert ar.tool == "all_reduce_perf" and ag.tool == "all_gather_perf"
    assert ar.first_line < ag.first_line
    # allgather: count is per rank, size the gathered total
    assert all(r.size_bytes == r.count * 4 * 16 for r in ag.rows)
    assert all(r.size_bytes == r.count * 4 for r in ar.rows)
    assert {r.redop for r in ar.rows} == {"sum"} and {r.redop for r in ag.rows} == {"none"}
    assert all(r.root == -1 and r.wrong == 0 for r in ar.rows)
    # SI views
    r = ar.rows[0]
    assert r.time_s == pytest.approx(73.21e-6) and r.algbw_Bps == pytest.approx(3.58e9)


OLD_FORMAT = """\
# nThread 1 nGpus 1 minBytes 8 maxBytes 64 step: 2(factor) warmup iters: 5 iters: 20 validation: 0
#
# Using devices
#   Rank  0 Pid  12001 on     a0001 device  0 [0x07] A100-SXM4-40GB
#   Rank  1 Pid  12002 on     a0001 device  1 [0x0f] A100-SXM4-40GB
#   Rank  2 Pid  12003 on     a0001 device  2 [0x47] A100-SXM4-40GB
#   Rank  3 Pid  12004 on     a0001 device  3 [0x4e] A100-SXM4-40GB
#
#                                                 out-of-place                       in-place
#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
           8             2   float     sum    17.03    0.00    0.00    N/A    16.90    0.00    0.00    N/A
          16             4   float     sum    17.15    0.00    0.00  1e-07    17.01    0.00    0.00  0e+00
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 0
#
"""


def test_old_layout_error_column_and_na():
    (run,) = parse_nccl_text(OLD_FORMAT, "logs/all_reduce_old.log")
    assert run.op == "allreduce"  # from the file name
    assert run.nranks == 4 and run.nodes == 1 and run.nccl_version is None
    assert [r.wrong for r in run.rows] == [None, None, 1e-07, 0.0]
    assert [r.inplace for r in run.rows] == [False, True, False, True]
    assert all(r.root is None for r in run.rows)
    assert run.devices[0].group is None and run.devices[3].host == "a0001"


def test_rccl_style_bus_id_and_current_header():
    text = (
        "# nccl-tests version 2.13.8 nccl-headers=21803 nccl-library=21803\n"
        "# Collective test starting: alltoall_perf\n"
        "# nThread 1 nGpus 1 minBytes 1024 maxBytes 2048 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n"
        "#\n# Using devices\n"
        "#  Rank  0 Group  0 Pid  77 on mi-node device  0 [0000:0c:00.0] AMD Instinct MI300X\n"
        "#  Rank  1 Group  0 Pid  78 on mi-node device  1 [0000:22:00.0] AMD Instinct MI300X\n"
        "#\n#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
        "        1024           128     float    none      -1    20.00    0.05    0.03      0    21.00    0.05    0.02      0\n"
        "        2048           256     float    none      -1    20.48    0.10    0.05      0    22.00    0.09    0.05      0\n"
        "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0.0375 \n#\n"
        "# Collective test concluded: alltoall_perf\n")
    (run,) = parse_nccl_text(text, "rccl.txt")
    assert run.op == "alltoall" and run.nccl_version == "2.18.3" and run.nranks == 2
    assert run.devices[1].bus_id == "0000:22:00.0" and run.device_name == "AMD Instinct MI300X"
    assert run.rows[2].size_bytes == 2048 and run.rows[3].time_us == 22.0 and run.rows[3].inplace


@pytest.mark.parametrize("op", [o for o in OPS if o != "alltoallv"])
def test_writer_round_trip_every_op(tmp_path: Path, op: str):
    n = 8
    rows = []
    for size in (1024, 1 << 20, 1 << 26):
        t = 10e-6 + size / 100e9
        rows += [make_row(op, size, "bfloat16", t, n), make_row(op, size, "bfloat16", t * 1.1, n, inplace=True)]
    sweep = Sweep(op=op, nranks=n, ngpus=1, devices=synthetic_devices(n, 4, "NVIDIA H100 80GB HBM3"),
                  rows=tuple(rows), nccl_version="2.21.5", source="mem", first_line=0)
    path = write_nccl_log(tmp_path / "out.txt", [sweep, sweep])
    runs = parse_nccl_log(path)
    assert len(runs) == 2
    for run in runs:
        assert run.op == op and run.nranks == n and run.nodes == 2 and run.nccl_version == "2.21.5"
        assert len(run.rows) == len(rows)
        for got, want in zip(run.rows, rows):
            assert (got.size_bytes, got.count, got.inplace) == (want.size_bytes, want.count, want.inplace)
            t = want.time_us  # printed %7.0f / %7.1f / %7.2f by magnitude (nccl-tests common.cu)
            assert got.time_us == pytest.approx(t, abs=0.5 if t >= 1e4 else 0.05 if t >= 100 else 0.005)
            # busbw printed with 2 decimals; factor per nccl-tests, computed here independently
            factor = {"allreduce": 2 * (n - 1) / n, "allgather": (n - 1) / n, "reducescatter": (n - 1) / n,
                      "alltoall": (n - 1) / n, "gather": (n - 1) / n, "scatter": (n - 1) / n}.get(op, 1.0)
            assert got.algbw == pytest.approx(want.size_bytes / (want.time_us * 1e3), abs=0.006)
            assert got.busbw == pytest.approx(want.size_bytes / (want.time_us * 1e3) * factor, abs=0.006)


def test_truncated_mid_row_names_file_and_line(tmp_path: Path):
    lines = HANDMADE.read_text().splitlines()
    cut = next(i for i, ln in enumerate(lines) if ln.strip().startswith("2097152"))
    p = tmp_path / "cut.txt"
    p.write_text("\n".join(lines[:cut] + [lines[cut][:60]]) + "\n")
    with pytest.raises(InputError) as exc:
        parse_nccl_log(p)
    msg = str(exc.value)
    assert str(p) in msg and f"line {cut + 1}" in msg and "truncated" in msg


def test_truncated_without_footer(tmp_path: Path):
    lines = HANDMADE.read_text().splitlines()
    cut = next(i for i, ln in enumerate(lines) if ln.strip().startswith("4194304"))
    p = tmp_path / "cut.txt"
    p.write_text("\n".join(lines[:cut + 1]) + "\n")
    with pytest.raises(InputError, match=rf"line {cut + 1}:.*truncated"):
        parse_nccl_log(p)


def test_first_run_truncated_then_second_run(tmp_path: Path):
    text = HANDMADE.read_text()
    broken = text.replace("# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 47.6071 \n", "", 1)
    with pytest.raises(InputError, match="truncated"):
        parse_nccl_text(broken, "two.txt")


@pytest.mark.parametrize("text", ["", "hello world\n", '{"traceEvents": []}\n'])
def test_not_an_nccl_log(text: str):
    with pytest.raises(InputError, match="no nccl-tests results"):
        parse_nccl_text(text, "x.txt", op="allreduce")


def test_missing_file():
    with pytest.raises(InputError, match="no such file"):
        parse_nccl_log("/nonexistent/log.txt")


def test_table_without_header_infers_ranks_from_busbw():
    text = (
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
        "    33554432       8388608     float     sum      -1    182.87  183.49  321.10      0   182.00  184.37  322.64      0\n"
        "# Avg bus bandwidth    : 321.87\n")
    (run,) = parse_nccl_text(text, "paste.txt", op="all_reduce_perf")
    assert run.op == "allreduce" and run.nranks == 8 and run.devices == ()


def test_unknown_op_and_unnamed_op():
    with pytest.raises(InputError, match="unknown collective"):
        parse_nccl_text(OLD_FORMAT, "x.txt", op="allshuffle")
    with pytest.raises(InputError, match="cannot tell which collective"):
        parse_nccl_text(OLD_FORMAT, "x.txt")


def test_canonical_names():
    assert canonical_op("all_reduce_perf") == "allreduce"
    assert canonical_op("reduce_scatter_perf_mpi") == "reducescatter"
    assert canonical_op("AllGather") == "allgather"
    assert canonical_op("all-to-all") == "alltoall"
    assert canonical_op("frobnicate") is None


def test_format_log_is_deterministic():
    (run,) = parse_nccl_log(LOGS / "h100x8_allgather_1node.txt")
    assert format_log([run]) == format_log([run])


@pytest.mark.parametrize("column,value", [(5, "nan"), (6, "inf"), (7, "-inf"), (5, "1e400"), (7, "-3")])
def test_non_finite_or_negative_numbers_are_exit_2_with_the_line(tmp_path, capsys, column, value):
    """A NaN, inf or negative time or bandwidth would make the fit non-finite: the row is refused."""
    from simulator.cli import main

    lines = (Path(__file__).resolve().parents[1] / "fixtures" / "nccl_logs" / "h100x8_allreduce_1node.txt").read_text().splitlines(True)
    rows = [i for i, line in enumerate(lines) if line.strip() and not line.startswith("#")]
    fields = lines[rows[2]].split()
    fields[column] = value
    lines[rows[2]] = "  " + "  ".join(fields) + "\n"
    log = tmp_path / "log.txt"
    log.write_text("".join(lines))
    out = tmp_path / "o.yaml"
    assert main(["calibrate", str(log), "--hardware", "dgx-h100", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{log}: line {rows[2] + 1}: expected a finite number >= 0" in err and "Traceback" not in err
    assert not out.exists()


def test_a_time_no_call_could_take_is_refused_naming_the_line(tmp_path):
    """A time of 1e308 us would make the row's bandwidth vanish and its error infinite."""
    from simulator.calibration.nccl_log import parse_nccl_log
    from simulator.errors import InputError

    src = Path(__file__).resolve().parents[1] / "fixtures" / "nccl_logs" / "h100x8_allreduce_1node.txt"
    lines = src.read_text().splitlines()
    i = next(k for k, line in enumerate(lines) if line.strip() and not line.lstrip().startswith("#"))
    cols = lines[i].split()
    cols[5] = "1e308"
    lines[i] = "  ".join(cols)
    log = tmp_path / "log.txt"
    log.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=f"line {i + 1}: expected a time up to"):
        parse_nccl_log(log)

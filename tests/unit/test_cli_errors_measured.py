"""A measured sweep CSV (data/nccl/ layout) with a bad row: `calibrate` exits 2 naming the file,
the line and the column, and says what was expected; no traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.cli import main
from simulator.files import bundled_dir

SWEEP = "a100x16_allgather_2node_dgx_ib.csv"


def _with_row(tmp_path: Path, edit) -> tuple[Path, int]:
    """A copy of a bundled sweep whose first data row is ``edit(cells)``; its 1-based line."""
    lines = (bundled_dir("data") / "nccl" / SWEEP).read_text().splitlines()
    k = next(i for i, line in enumerate(lines) if line.startswith("size_bytes")) + 1
    lines[k] = ",".join(edit(lines[k].split(",")))
    out = tmp_path / "bad.csv"
    out.write_text("\n".join(lines) + "\n")
    return out, k + 1


@pytest.mark.parametrize("edit, expected", [
    (lambda c: c[:3] + ["abc"] + c[4:], "time_us: expected a finite number >= 0, got 'abc'"),
    (lambda c: c[:3] + ["nan"] + c[4:], "time_us: expected a finite number >= 0, got 'nan'"),
    (lambda c: c[:3] + ["-3.5"] + c[4:], "time_us: expected a finite number >= 0, got '-3.5'"),
    (lambda c: ["1.5"] + c[1:], "size_bytes: expected a whole number >= 0, got '1.5'"),
    (lambda c: c[:3], "expected 7 cells (size_bytes,count,dtype,time_us,algbw_GBps,busbw_GBps,inplace), got 3"),
    (lambda c: c + ["7"], "expected 7 cells (size_bytes,count,dtype,time_us,algbw_GBps,busbw_GBps,inplace), got 8"),
])
def test_bad_row_of_a_measured_csv_is_exit_2_naming_line_and_column(tmp_path, capsys, edit, expected):
    bad, line = _with_row(tmp_path, edit)
    rc = main(["calibrate", str(bad), "--hardware", "dgx-a100", "-o", str(tmp_path / "out.yaml")])
    err = capsys.readouterr().err
    assert rc == 2
    assert f"{bad}:{line}: {expected}" in err
    assert "Traceback" not in err and not (tmp_path / "out.yaml").exists()


def test_a_measured_csv_that_is_not_text_is_exit_2(tmp_path, capsys):
    """A binary file named .csv was an internal error (UnicodeDecodeError)."""
    bad = tmp_path / "bin.csv"
    bad.write_bytes(b"size_bytes,count\n" + bytes(range(128, 256)))
    rc = main(["calibrate", str(bad), "--hardware", "dgx-a100", "-o", str(tmp_path / "out.yaml")])
    err = capsys.readouterr().err
    assert rc == 2 and f"{bad}: not UTF-8 text: byte 17 (line 2)" in err
    assert "Traceback" not in err and not (tmp_path / "out.yaml").exists()

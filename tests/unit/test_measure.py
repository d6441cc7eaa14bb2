"""Measurement harness on CPU: real gloo process groups launched by torchrun, real timings,
written in nccl-tests format and read back by the nccl-tests parser."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from simulator import measure
from simulator.calibration.kineto import parse_kineto_trace
from simulator.calibration.nccl_log import parse_nccl_log
from simulator.cli import main as cli_main
from simulator.errors import InputError

ROOT = Path(__file__).resolve().parents[2]

try:
    import torch  # noqa: F401

    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False
needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="torch is not installed (pip install 'clustersim[measure]')")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _torchrun(nproc: int, *args: str, timeout: int = 240) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(nproc),
           "--master_addr", "127.0.0.1", "--master_port", str(_free_port()), "-m", "simulator.measure", *args]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


@needs_torch
@pytest.mark.slow
def test_two_ranks_gloo_round_trip(tmp_path: Path):
    out, trace = tmp_path / "m.txt", tmp_path / "trace.json"
    r = _torchrun(2, "--op", "allreduce", "--op", "allgather", "--op", "reducescatter",
                  "-b", "1K", "-e", "16K", "-n", "3", "-w", "1", "-o", str(out), "--profile", str(trace))
    assert r.returncode == 0, r.stderr[-2000:]
    runs = parse_nccl_log(out)
    assert [s.op for s in runs] == ["allreduce", "allgather", "reducescatter"]
    sizes = [1024, 2048, 4096, 8192, 16384]
    for s in runs:
        assert s.nranks == 2 and s.nodes == 1 and len(s.devices) == 2 and s.iters == 3 and s.warmup_iters == 1
        assert [r.size_bytes for r in s.measured()] == sizes
        assert all(r.time_us > 0 and r.wrong is None for r in s.rows)
        for row in s.rows:
            # algbw = size / time (GB/s), printed with 2 decimals; busbw factor for n = 2
            assert row.algbw == pytest.approx(row.size_bytes / (row.time_us * 1e3), abs=0.006 + 1e-3 * row.algbw)
            factor = 1.0 if s.op == "allreduce" else 0.5
            assert row.busbw == pytest.approx(row.algbw * factor, abs=0.011)
        # nccl-tests averages the unrounded busbw; each printed value is within 0.005 of it
        assert s.avg_busbw == pytest.approx(sum(r.busbw for r in s.rows) / len(s.rows), abs=0.0051)
    allreduce, allgather, _ = runs
    assert allreduce.out_of_place() == [] and len(allreduce.in_place()) == 5  # torch: in-place only
    assert len(allgather.out_of_place()) == len(allgather.in_place()) == 5
    assert all(r.count == r.size_bytes // 4 // 2 for r in allgather.rows)  # per-rank elements
    # the profiler trace of the same run holds the same collectives
    t = parse_kineto_trace(trace)
    ops = {(c.op, c.size_bytes) for c in t.collectives if c.dtype == "float"}
    assert ops == {(op, size) for op in ("allreduce", "allgather", "reducescatter") for size in sizes}


@needs_torch
@pytest.mark.slow
def test_four_ranks_other_collectives(tmp_path: Path):
    out = tmp_path / "m4.txt"
    r = _torchrun(4, "--op", "alltoall", "--op", "sendrecv", "--op", "broadcast", "--op", "reduce",
                  "-b", "4K", "-e", "8K", "-n", "2", "-w", "1", "-d", "bfloat16", "-o", str(out))
    assert r.returncode == 0, r.stderr[-2000:]
    runs = parse_nccl_log(out)
    assert [s.op for s in runs] == ["alltoall", "sendrecv", "broadcast", "reduce"]
    for s in runs:
        assert s.nranks == 4 and {r.dtype for r in s.rows} == {"bfloat16"}
        assert [r.size_bytes for r in s.measured()] == [4096, 8192]
    alltoall = runs[0]
    assert [r.count for r in alltoall.rows] == [4096 // 2 // 4, 8192 // 2 // 4]  # per-peer elements
    assert all(not r.inplace for r in alltoall.rows + runs[1].rows)


def test_sweep_sizes_like_nccl_tests():
    assert measure.sweep_sizes(8, 64) == (8, 16, 32, 64)
    assert measure.sweep_sizes(1024, 4096, step_factor=4) == (1024, 4096)
    assert measure.sweep_sizes(1024, 3072, step_bytes=1024) == (1024, 2048, 3072)
    with pytest.raises(InputError):
        measure.sweep_sizes(64, 8)


def test_bad_options_exit_2_before_any_process_group(capsys):
    assert cli_main(["measure", "--op", "allshuffle"]) == 2
    assert "allshuffle" in capsys.readouterr().err
    assert cli_main(["measure", "--op", "allreduce", "--min-bytes", "12Q"]) == 2
    assert cli_main(["measure", "--op", "allreduce", "--dtype", "complex128"]) == 2


def test_bad_options_are_named_even_without_torch(monkeypatch, capsys):
    """A fresh install has no torch: a wrong option is still reported as itself, not as the
    missing PyTorch, because options are checked before torch is imported."""
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    assert cli_main(["measure", "--op", "allshuffle"]) == 2
    err = capsys.readouterr().err
    assert "allshuffle" in err and "PyTorch" not in err
    assert cli_main(["measure", "--op", "allreduce", "--dtype", "complex128"]) == 2
    assert "complex128" in capsys.readouterr().err
    # valid options get as far as the import, which then says what to install
    assert cli_main(["measure", "--op", "allreduce"]) == 2
    assert "pip install" in capsys.readouterr().err


def test_bad_world_size_is_exit_2(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setenv("WORLD_SIZE", "eight")
    assert cli_main(["measure", "--op", "allreduce"]) == 2
    assert "WORLD_SIZE" in capsys.readouterr().err


def test_missing_torch_is_an_input_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    with pytest.raises(InputError, match="pip install"):
        measure._torch()


SCENARIO = """\
name: tiny-tp2
hardware: {hw}
nodes: 1
model:
  preset: llama3-8b
  layers: 2
  seq_len: 512
training:
  micro_batch: 1
  global_batch: 1
  dtype: bf16
parallel:
  tp: 2
  sequence_parallel: true
"""


def _tiny_scenario(tmp_path: Path) -> Path:
    hw = tmp_path / "two-gpu.yaml"
    hw.write_text("base: dgx-h100\nnode:\n  gpus: 2\n")
    scn = tmp_path / "tiny.yaml"
    scn.write_text(SCENARIO.format(hw=hw))
    return scn


def test_scenario_jobs_follow_the_plan(tmp_path: Path):
    """TP=2 with sequence parallelism: AllGather/ReduceScatter of the activations (s x h x 2 bytes
    over the TP group) and the AllReduces of the TP group, on the group {0, 1}."""
    jobs = {j.op: j for j in measure.scenario_jobs(_tiny_scenario(tmp_path), 2)}
    assert {"allgather", "reducescatter"} <= set(jobs)
    seq, hidden, bf16 = 512, 4096, 2
    assert seq * hidden * bf16 in jobs["allgather"].sizes
    for j in jobs.values():
        assert j.groups == ((0, 1),) and j.dtype == "bfloat16" and j.label == "tp"
    with pytest.raises(InputError, match="2 GPUs but this job has 4"):
        measure.scenario_jobs(_tiny_scenario(tmp_path), 4)


@needs_torch
@pytest.mark.slow
def test_scenario_measured_on_real_groups(tmp_path: Path):
    out = tmp_path / "scn.txt"
    r = _torchrun(2, "--scenario", str(_tiny_scenario(tmp_path)), "--max-bytes", "256K", "-n", "2", "-w", "1",
                  "-o", str(out))
    assert r.returncode == 0, r.stderr[-2000:]
    runs = {s.op: s for s in parse_nccl_log(out)}
    expected = {j.op: j for j in measure.scenario_jobs(_tiny_scenario(tmp_path), 2, max_bytes=256 * 1024)}
    assert set(runs) == set(expected)
    for op, s in runs.items():
        assert s.nranks == 2
        assert [r.size_bytes for r in s.measured()] == list(expected[op].sizes)
        assert all(r.time_us > 0 for r in s.rows)

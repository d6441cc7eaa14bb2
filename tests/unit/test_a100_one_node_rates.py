"""One A100 NVSwitch node: where the measured sweeps that the model predicts too fast
(ABCI's NCCL 2.8.4 node, one rank per GPU; Galvatron's DGX A100 under ``-g 8``) agree with it.

The bandwidth the rows add between two Ring/Simple sizes, and Galvatron's 1 GiB plateau, match the
model's NVLink rate: the node ran its NVLink/NVSwitch path with all of NCCL's channels (not PCIe or
shared memory, not fewer channels), so what the model misses there is a per-call cost, not a rate
(data/nccl/INDEX.md, "One A100 NVSwitch node: what the ABCI and Galvatron shortfalls are not")."""

from __future__ import annotations

import pytest

from simulator.calibration.measured import bundled_sweeps
from simulator.calibration.sweep_prediction import case_for, predict_sweep

MiB = 1 << 20


def _result(name: str):
    sweep = next(s for s in bundled_sweeps() if s.name == name)
    return sweep, predict_sweep(sweep, case_for(sweep))


def _increment_busbw(points, lo: int, hi: int, measured: bool, ranks: int) -> float:
    """busbw (GB/s) of the bytes added from size lo to hi: 2(n-1)/n x (hi - lo) / (t_hi - t_lo)."""
    by_size = {p.size_bytes: (p.measured_time_us if measured else p.predicted_time_us) for p in points}
    return 2 * (ranks - 1) / ranks * (hi - lo) / ((by_size[hi] - by_size[lo]) * 1e3)


@pytest.mark.parametrize("name, ranks, lo, model_busbw, measured_busbw", [
    # 8 GPUs, 16 -> 32 MiB: 134.1 us measured for 16 MiB (219 GB/s), 125.4 us modelled (234: NCCL's 235 cap)
    ("a100x8_allreduce_1node_abci", 8, 16 * MiB, 234.1, 218.9),
    # 4 GPUs, 8 -> 32 MiB: 159.8 us measured for 24 MiB (236 GB/s), 171.1 us modelled (221: costs/ring_work.py)
    ("a100x4_allreduce_1node_abci", 4, 8 * MiB, 220.6, 236.2),
])
def test_abci_ring_simple_adds_bytes_at_the_model_rate(name, ranks, lo, model_busbw, measured_busbw):
    """ABCI's one-node rows from the first Ring/Simple size to 32 MiB add bytes within 8% of the
    model's rate: the NVLink path and every channel ran (PCIe Gen4 x16 or a shared-memory path would
    carry a tenth of it). The rows sit 40-70 us above the model per call (data/nccl/INDEX.md)."""
    sweep, result = _result(name)
    assert sweep.gpus_per_process == 1  # one MPI rank per GPU (-g 1): no -g launch floor
    simple = [p for p in result.points if p.size_bytes >= lo]
    assert {(p.algorithm, p.protocol) for p in simple} == {("ring", "simple")}
    model = _increment_busbw(result.points, lo, 32 * MiB, measured=False, ranks=ranks)
    measured = _increment_busbw(result.points, lo, 32 * MiB, measured=True, ranks=ranks)
    assert model == pytest.approx(model_busbw, abs=0.5)
    assert measured == pytest.approx(measured_busbw, abs=0.5)
    assert measured / model == pytest.approx(1.0, abs=0.08)
    excess = [p.measured_time_us - p.predicted_time_us for p in simple]
    assert all(35 < e < 75 for e in excess)  # a per-call cost, the same order at every Simple size


def test_galvatron_g8_plateau_is_the_model_ring():
    """Galvatron's -g 8 DGX A100 at 1 GiB: 8139.9 us measured, Ring/Simple at the model's NVLink
    rate within 1% (8086 us): one process driving the 8 GPUs costs no channel and no bandwidth at
    the plateau, while 64-512 MiB run 13-19% over the model."""
    sweep, result = _result("a100x8_allreduce_1node_galvatron_dgx")
    assert sweep.gpus_per_process == 8
    last = result.points[-1]
    assert last.size_bytes == 1024 * MiB
    assert (last.algorithm, last.protocol) == ("ring", "simple")
    assert last.measured_time_us / last.predicted_time_us - 1 == pytest.approx(0.0, abs=0.02)
    mid = [p.measured_time_us / p.predicted_time_us - 1 for p in result.points if 64 * MiB <= p.size_bytes <= 512 * MiB]
    assert all(0.10 < e < 0.20 for e in mid)

"""Jean Zay's Omni-Path as NCCL used it: the jean-zay-a100 profile against BigScience's own AllReduce
benchmark of those nodes (data/nccl/a100x32_allreduce_4node_jeanzay_opa_torchdist.csv).

NCCL 2.10.3 built one ring over the 4 x 8 GPUs, entering each node through one HFI and leaving
through another, so every ring link across nodes was one HFI and carried the busbw the benchmark
measured (5.07 GB/s). The profile's per-NIC efficiency is that rate over the 100 Gb/s line rate.
A ring of one GPU per node (every link across nodes one HFI, each way) must run at it."""

from __future__ import annotations

import pytest

from simulator.calibration.measured import DATA_DIR, read_sweep
from simulator.config.hardware import load_profile
from simulator.costs.model import CostModel
from simulator.hardware.topology import build_topology
from simulator.replay.single_collective import time_collective


def test_one_hfi_per_ring_link_runs_at_the_measured_busbw() -> None:
    sweep = read_sweep(DATA_DIR / "a100x32_allreduce_4node_jeanzay_opa_torchdist.csv")
    (row,) = sweep.rows
    measured_busbw = row.busbw_GBps * 1e9
    assert measured_busbw == pytest.approx(row.size_bytes / (row.time_us * 1e-6) * 2 * 31 / 32, rel=1e-3)
    profile = load_profile("jean-zay-a100")
    nodes = 4
    costs = CostModel(build_topology(profile, nodes))
    gpus = [n * profile.node.gpus for n in range(nodes)]
    r = time_collective("allreduce", gpus, row.size_bytes, costs)
    assert r.busbw == pytest.approx(measured_busbw, rel=0.05)

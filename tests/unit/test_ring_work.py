"""The ring AllReduce's memory accesses per busbw byte and the rate they bound on fewer GPUs
than an A100 NVSwitch node has (simulator/costs/ring_work.py), against vTrain's nccl-tests tables
of its A100 node (data/nccl/a100x{2,4,8}_allreduce_1node_vtrain_dgx.csv)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from simulator.costs import ring_work


def _count_accesses(n: int) -> Fraction:
    """Walk NCCL's runRing step list (all_reduce.h) and count each rank's chunk accesses: a send
    writes a buffer, a receive reads one, a step that reads the user input or writes the output
    counts that too; per busbw chunk (the 2(n-1) chunks a rank sends)."""
    steps = (["send"] + ["recvReduceSend"] * (n - 2) + ["recvReduceCopySend"]
             + ["recvCopySend"] * (n - 2) + ["recv"])
    reads_input = {"send", "recvReduceSend", "recvReduceCopySend"}
    writes_output = {"recvReduceCopySend", "recvCopySend", "recv"}
    accesses = 0
    sent = 0
    for s in steps:
        if s.endswith("Send") or s == "send":
            accesses += 1  # the chunk written to a (local or peer) buffer
            sent += 1
        if s.startswith("recv"):
            accesses += 1  # the chunk read from a buffer
        accesses += (s in reads_input) + (s in writes_output)
    assert sent == 2 * (n - 1)
    return Fraction(accesses, sent)


@pytest.mark.parametrize("n", range(2, 17))
def test_access_count_matches_the_step_walk(n):
    assert ring_work.allreduce_accesses_per_bus_byte(n) == pytest.approx(float(_count_accesses(n)), rel=1e-12)


def test_access_count_closed_forms():
    assert ring_work.allreduce_accesses_per_bus_byte(2) == 4
    assert ring_work.allreduce_accesses_per_bus_byte(4) == pytest.approx(10 / 3)
    assert ring_work.allreduce_accesses_per_bus_byte(8) == pytest.approx(22 / 7)
    with pytest.raises(ValueError):
        ring_work.allreduce_accesses_per_bus_byte(1)


def test_cap_on_a100_nvswitch():
    # dgx-a100: 300 GB/s x 0.78 at the full node; 2 GPUs: x (22/7)/4, 4 GPUs: x (22/7)/(10/3)
    cap = lambda n: ring_work.allreduce_busbw_cap_GBps("allreduce", "simple", n, 1, 8, "ampere", "nvswitch", 300, 0.78)
    assert cap(2) == pytest.approx(234 * 22 / 28)
    assert cap(4) == pytest.approx(234 * 66 / 70)
    assert cap(8) is None  # the full node: the profile's plateau itself
    args = ("nvswitch", 300, 0.78)
    assert ring_work.allreduce_busbw_cap_GBps("allreduce", "simple", 2, 1, 8, "hopper", *args) is None  # P2P write
    assert ring_work.allreduce_busbw_cap_GBps("allreduce", "ll128", 2, 1, 8, "ampere", *args) is None
    assert ring_work.allreduce_busbw_cap_GBps("allgather", "simple", 2, 1, 8, "ampere", *args) is None
    assert ring_work.allreduce_busbw_cap_GBps("allreduce", "simple", 16, 2, 8, "ampere", *args) is None
    assert ring_work.allreduce_busbw_cap_GBps("allreduce", "simple", 2, 1, 4, "ampere", "mesh", 300, 0.78) is None


def _vtrain(n: int):
    from simulator.calibration.measured import bundled_sweeps
    from simulator.calibration.sweep_prediction import case_for, predict_sweep

    sweep = next(s for s in bundled_sweeps() if s.name == f"a100x{n}_allreduce_1node_vtrain_dgx")
    return predict_sweep(sweep, case_for(sweep))


SIZES_MIB = (64, 128, 256, 512, 1024)


@pytest.mark.parametrize("n", [2, 4])
def test_vtrain_two_and_four_gpus_from_64_mib(n):
    """From 64 MiB (Simple) the 2- and 4-GPU rows are within 13% of the measured time, where
    NVLink at the 8-GPU rate alone predicted 2 GPUs 18-34% fast (4 GPUs: 5-19%)."""
    points = [p for p in _vtrain(n).points if p.size_bytes in {s << 20 for s in SIZES_MIB}]
    assert len(points) == len(SIZES_MIB)
    for p in points:
        assert p.protocol == "simple"
        assert abs(p.measured_time_us / p.predicted_time_us - 1) < 0.13, (n, p.size_bytes, p.predicted_time_us)
    # the plateau's order follows W(n): 2 GPUs below 4 below the 8-GPU plateau (229 GB/s measured at 1 GiB)
    gib = {n: next(p for p in _vtrain(n).points if p.size_bytes == 1 << 30) for n in (2, 4, 8)}
    assert gib[2].predicted_busbw_GBps < gib[4].predicted_busbw_GBps < gib[8].predicted_busbw_GBps
    assert gib[n].predicted_busbw_GBps == pytest.approx(gib[n].measured_busbw_GBps, rel=0.08)

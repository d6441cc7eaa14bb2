"""The window of NCCL_STEPS slots a ring's network connection keeps in flight
(costs/ring_window.py) and where it binds in the plan."""

from __future__ import annotations

import math

import pytest

from simulator.config.hardware import load_profile
from simulator.costs.collectives import window_stall_us
from simulator.costs.nccl_graph import context_from_profile
from simulator.costs.nccl_tuner import channel_bw_GBps, ring_window_GBps
from simulator.costs.ring_window import (
    in_flight, message_bytes, ring_messages, ring_step_bytes, window_GBps, windowed_fraction,
)

MiB = 1 << 20


def test_ring_step_is_the_channels_share_over_the_ranks_at_most_a_chunk():
    # 256 MiB over 16 channels and 80 ranks: one loop of 268435456 / 1280 bytes per step
    assert ring_step_bytes(256 * MiB, 16, 80) == pytest.approx(256 * MiB / 1280)
    # 4 GiB: 3.36 MB per rank and channel, over the 2 MiB chunk, so two equal loops
    assert ring_step_bytes(4096 * MiB, 16, 80) == pytest.approx(4096 * MiB / 1280 / 2)
    # a larger buffer (NCCL_BUFFSIZE 8 MiB) makes the chunk 4 MiB: one loop
    assert ring_step_bytes(4096 * MiB, 16, 80, buff_bytes=8 * MiB) == pytest.approx(4096 * MiB / 1280)
    assert ring_step_bytes(0, 16, 80) == 0.0


def test_simple_slices_are_half_a_chunk_at_least_a_32nd_of_a_slice_slot():
    assert message_bytes(200_000, "simple") == 100_000
    assert message_bytes(40_000, "simple") == 32_768  # 1 MiB slice slot / 32
    assert message_bytes(20_000, "simple") == 20_000  # never more than the step
    assert in_flight("simple") == 4 and in_flight("ll128") == 8


def test_window_is_the_messages_in_flight_per_slot_cycle():
    # 100 KB: 100e3 / 20e3 = 5 us of copy, 100e3 / 25e3 = 4 us of wire, 2 x 14 us of hops
    assert window_GBps(100e3, 4, 20.0, 25.0, 14.0) == pytest.approx(4 * 100e3 / 37e3)
    # large messages: the window exceeds the slower of copy and wire
    assert window_GBps(1e6, 4, 20.0, 25.0, 14.0) > 20.0


def _ctx(ranks: int, per_node: int):
    profile = load_profile("dgx-h100").model_copy(update={"nccl": {"version": "2.29.2"}})
    return context_from_profile(profile, ranks, ranks // per_node, "coll")


def test_window_binds_two_ctas_per_nic_at_small_slices_only():
    """10 x 8 H100 (2 CTAs per 400 Gb/s NIC): 256 MiB is 105 KB slices, a cycle of 5.1 us of copy,
    4.4 of wire and 2 x 14 of hops, 4 slices per cycle: 11.2 GB/s per CTA where the CTAs move 20.6;
    16 GiB (1.68 MB chunks) leaves the window above the CTAs' rate. With 4 GPUs per node each NIC
    has 4 CTAs at a quarter of it, and the window stays above that share (24 GB/s per graph channel)."""
    ctx = _ctx(80, 8)
    small = ring_window_GBps(ctx, "ring", "simple", 256 * MiB)
    assert small == pytest.approx(2 * window_GBps(256 * MiB / 1280 / 2, 4, 20.6, 24.0, 14.0))
    assert small == pytest.approx(2 * 11.2, rel=0.02)
    assert ring_window_GBps(ctx, "ring", "simple", 16384 * MiB) > channel_bw_GBps(ctx, "ring", "simple", 16384 * MiB,
                                                                                   "allgather")
    assert ring_window_GBps(_ctx(40, 4), "ring", "simple", 256 * MiB) > channel_bw_GBps(
        _ctx(40, 4), "ring", "simple", 256 * MiB, "allgather")
    assert ring_window_GBps(_ctx(8, 8), "ring", "simple", 256 * MiB) == math.inf  # one node: no network
    assert ring_window_GBps(ctx, "ring", "ll128", 256 * MiB) == math.inf


def test_the_stall_is_the_volume_at_the_window_less_its_time_at_the_channel_rate():
    ctx = _ctx(80, 8)
    volume = 256 * MiB * 79 / 80
    window = ring_window_GBps(ctx, "ring", "simple", 256 * MiB)
    # 8 graph channels at 2 x 20.6 GB/s; 79 steps x 2 slices per connection, the first 4 not waiting
    want = volume / 8 / 1e3 * (1 / window - 1 / 41.2) * (1 - 4 / 158)
    assert window_stall_us(ctx, "allgather", "ring", "simple", 256 * MiB, 8, 41.2, volume) == pytest.approx(want)
    assert window_stall_us(ctx, "allgather", "ring", "simple", 16384 * MiB, 8, 41.2, volume * 64) == 0.0
    assert window_stall_us(ctx, "allgather", "tree", "simple", 256 * MiB, 8, 41.2, volume) == 0.0


def test_a_call_within_one_window_never_waits():
    # 2 ranks: an AllReduce is 2 steps of 2 slices, the window's 4 at once; 3 ranks: 8 of them
    assert ring_messages("allreduce", 4096, 2, 2) == 4 and windowed_fraction(4) == 0.0
    assert ring_messages("allreduce", 4096, 2, 3) == 8 and windowed_fraction(8) == 0.5
    # 4 GiB AllGathered on 16 channels over 80 ranks: two loops of 79 steps
    assert ring_messages("allgather", 4096 * MiB, 16, 80) == 2 * 79 * 2

"""Image ranks: on nodes with fewer NICs than GPUs, the ranks that share a simulated rank's NIC
are not simulated but their traffic off the groups that span their axis is put on the network
beside the simulated rank's (``symmetry.choose_ranks_with_images``). Against the replay that
simulates them (``image_ranks=False``): the same step, with half the ranks or fewer."""

from __future__ import annotations

import numpy as np
import pytest

from simulator.config.scenario import build_scenario
from simulator.hardware.topology import build_topology
from simulator.replay.engine import replay
from simulator.replay.symmetry import choose_ranks, choose_ranks_with_images
from simulator.schedule.build import Schedule, build_schedule, role_name
from simulator.schedule.groups import Grid

SMALL = {"layers": 4, "hidden": 256, "heads": 8, "kv_heads": 8, "ffn_hidden": 1024, "vocab": 1000,
         "mlp": "gelu", "seq_len": 512}


def _two_gpus_per_nic(n: int) -> np.ndarray:
    return np.array([(g // 8) * 4 + (g % 8) // 2 for g in range(n)])


def test_the_axis_mirrored_in_blocks_is_mirrored_whole_with_images() -> None:
    """tp 4 innermost, dp 4, 8 GPUs and 4 NICs a node (NIC r: GPUs 2r, 2r+1): choose_ranks keeps
    ranks 0 and 1 (tp in blocks of two); with images only rank 0, rank 1 its image (tp + 1)."""
    grid = Grid.from_sizes({"tp": 4, "dp": 4})
    n = grid.n_ranks
    sched = Schedule(grid, {role_name(0, 0): []})
    key = _two_gpus_per_nic(n)
    assert choose_ranks(sched, n, max_ranks=None, op_budget=0, symmetric=True, nic_key=key) == ([0, 1], ["dp"])
    ranks, axes, images = choose_ranks_with_images(sched, n, max_ranks=None, op_budget=0, symmetric=True,
                                                   nic_key=key)
    assert ranks == [0] and sorted(axes) == ["dp", "tp"] and images == ((("tp", 1),),)
    # a NIC per GPU: no images, choose_ranks' answer
    own = choose_ranks_with_images(sched, n, max_ranks=None, op_budget=0, symmetric=True, nic_key=np.arange(n))
    assert own == ([0], ["tp", "dp"], ())


def test_an_axis_never_mirrored_has_every_other_coordinate_as_image() -> None:
    """tp 2 with two GPUs a NIC: no block of tp has a NIC of its own, so choose_ranks simulates
    both tp ranks; with images rank 0 alone, tp rank 1 its image."""
    grid = Grid.from_sizes({"tp": 2, "dp": 8})
    n = grid.n_ranks
    sched = Schedule(grid, {role_name(0, 0): []})
    key = _two_gpus_per_nic(n)
    assert choose_ranks(sched, n, max_ranks=None, op_budget=0, symmetric=True, nic_key=key)[0] == [0, 1]
    ranks, _, images = choose_ranks_with_images(sched, n, max_ranks=None, op_budget=0, symmetric=True, nic_key=key)
    assert ranks == [0] and images == ((("tp", 1),),)


def _with_and_without_images(data: dict):
    """The symmetric replay of the scenario ``data``, with image ranks and with the ranks they
    stand for simulated."""
    scn = build_scenario(data, source="img.yaml")
    sched, topo = build_schedule(scn), build_topology(scn.profile, scn.nodes)
    return replay(sched, topo, symmetric=True), replay(sched, topo, symmetric=True, image_ranks=False)


@pytest.mark.parametrize("parallel", [{"tp": 4, "pp": 1}, {"tp": 4, "pp": 2}, {"tp": 2, "pp": 2}, {"tp": 1, "pp": 2}])
def test_images_give_the_step_of_the_ranks_they_stand_for(parallel: dict) -> None:
    """vtrain-a100 (4 NICs for 8 GPUs) on 4 nodes: the step with image ranks is the step with
    the NIC-sharing ranks simulated (the same flows on the same links at the same moments; the
    same sums in another order), on half the simulated ranks. With pp 2 the stages' send/recv
    cross nodes through the shared NICs (tp 4: two stages a node)."""
    data = {"name": "img", "hardware": "vtrain-a100", "nodes": 4, "model": SMALL,
            "training": {"micro_batch": 2, "global_batch": 64, "dtype": "fp16"},
            "parallel": {**parallel, "zero": 1}}
    with_images, simulated = _with_and_without_images(data)
    assert with_images.stats.ranks_simulated * 2 == simulated.stats.ranks_simulated
    assert with_images.step_time_s == pytest.approx(simulated.step_time_s, rel=1e-12)


@pytest.mark.parametrize("parallel", [
    {"tp": 4, "pp": 1, "sequence_parallel": True, "tp_overlap": "ring_exchange"},
    {"tp": 8, "pp": 1, "sequence_parallel": True, "tp_overlap": "ring_exchange"},
])
def test_send_recv_along_the_image_axis_runs_once(parallel: dict) -> None:
    """Send/recv along the imaged axis itself (a TP ring exchange): the image of
    rank 0's send to 1 is 1's send to 2, that of its receive from the last rank is its own
    send to 1 (already on the network) or a send another image already put there: each runs
    once, as with the ranks simulated."""
    data = {"name": "img", "hardware": "vtrain-a100", "nodes": 2, "model": {**SMALL, "seq_len": 2048},
            "training": {"micro_batch": 1, "global_batch": 8, "dtype": "bf16"},
            "parallel": {**parallel, "zero": 1}}
    with_images, simulated = _with_and_without_images(data)
    assert with_images.stats.ranks_simulated < simulated.stats.ranks_simulated
    assert with_images.step_time_s == pytest.approx(simulated.step_time_s, rel=1e-12)


@pytest.mark.parametrize("ep", [2, 4])
def test_expert_groups_inside_the_imaged_block(ep: int) -> None:
    """Expert parallelism at tp 1 on vtrain-a100 (a NIC per two GPUs): the data-parallel axis is
    imaged by one step, and the EP groups are blocks of it, so shifting an EP group member by
    member gives no group ((0, 1) -> (1, 2)). The image of the All-to-All of ranks (0, 1) is
    the group rank 1 runs, itself: the step is the step with the NIC-sharing ranks simulated
    (it stopped with "image group (1, 2) of (0, 1) overlaps it" before)."""
    model = {**SMALL, "mlp": "swiglu", "experts": 4, "top_k": 2, "moe_ffn_hidden": 512}
    data = {"name": "img", "hardware": "vtrain-a100", "nodes": 2, "model": model,
            "training": {"micro_batch": 1, "global_batch": 16, "dtype": "bf16"},
            "parallel": {"tp": 1, "pp": 2, "ep": ep, "zero": 1}}
    with_images, simulated = _with_and_without_images(data)
    assert with_images.stats.ranks_simulated < simulated.stats.ranks_simulated
    assert with_images.step_time_s == pytest.approx(simulated.step_time_s, rel=1e-12)

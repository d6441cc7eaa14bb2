"""Megatron-Core DDP's passes over each gradient bucket before its collective
(``parallel.ddp_grad_check``, ``ddp_grad_scaling``; schedule/data_parallel.py): the NaN check's
norm (one read of the bucket), its one-element tests read back by the host, and the in-place
1/(dp x cp) average (a read and a write), for every bucket, on the compute stream."""

from __future__ import annotations

import pytest

from simulator.config.scenario import build_scenario
from simulator.costs.compute import compute_time
from simulator.errors import InputError
from simulator.schedule.build import build_schedule
from simulator.schedule.ir import CommOp, ComputeOp
from simulator.schedule.shapes import stage_units
from tests.unit.test_schedule_invariants import PROFILE, SMALL

GRAD_BYTES = 4  # grad_reduce_dtype fp32 (Megatron's main grads for bf16)


@pytest.fixture
def make(tmp_path):
    (tmp_path / "p.yaml").write_text(PROFILE)

    def _make(parallel):
        data = {"name": "ddp", "hardware": "p.yaml", "nodes": 2, "model": SMALL,
                "training": {"micro_batch": 1, "global_batch": 16},
                "parallel": {"ddp_bucket_elements": 200_000, "grad_reduce_dtype": "fp32", **parallel}}
        return build_scenario(data, source="ddp.yaml", base_dir=tmp_path)
    return _make


def _params(scn) -> int:
    return sum(m.numel for c in stage_units(scn, 0) for u in c for m in u.modules)


def _passes(prog, suffix: str) -> list[ComputeOp]:
    return [op for op in prog if isinstance(op, ComputeOp) and op.name.startswith("dp.grad.")
            and op.name.endswith(suffix)]


@pytest.mark.parametrize("zero", [0, 1])
@pytest.mark.parametrize("overlap", [True, False])
def test_each_bucket_is_checked_and_averaged_before_its_collective(make, zero, overlap):
    scn = make({"zero": zero, "overlap_grad_reduce": overlap, "ddp_grad_check": "nan_inf",
                "ddp_grad_scaling": "buffer"})
    prog = build_schedule(scn).programs["pp0.cp0"]
    grads = [op for op in prog if isinstance(op, CommOp) and op.name.startswith("dp.grad.")]
    assert len(grads) >= 2
    n = _params(scn)  # every parameter of the rank sits in one bucket
    norms, scales = _passes(prog, ".check_grads.norm"), _passes(prog, ".scale")
    assert sum(op.hbm_bytes for op in norms) == GRAD_BYTES * n  # the norm reads the fp32 buffer once
    assert sum(op.hbm_bytes for op in scales) == 2 * GRAD_BYTES * n  # grad_data *= 1/dp: read + write
    # isnan and isinf per bucket, each read back by the host
    assert len(_passes(prog, ".isnan")) == len(_passes(prog, ".isinf")) == len(grads)
    assert all(op.host_sync for op in _passes(prog, ".isnan") + _passes(prog, ".isinf"))
    # each collective waits for its own bucket's average
    for comm in grads:
        (dep,) = comm.deps
        assert prog[dep].name == comm.name + ".scale"
        assert prog[dep].hbm_bytes == 2 * comm.size_bytes


def test_average_in_collective_and_the_0_10_norm_leave_no_scaling_and_no_read(make):
    prog = build_schedule(make({"zero": 1, "ddp_grad_check": "norm",
                                "ddp_grad_scaling": "collective"})).programs["pp0.cp0"]
    assert _passes(prog, ".check_grads.norm") and not _passes(prog, ".scale")
    assert not [op for op in prog if isinstance(op, ComputeOp) and op.host_sync]


def test_without_overlap_the_step_grows_by_the_passes_exactly(make, no_host_costs):
    """Without ``--overlap-grad-reduce`` the buckets are reduced one after another after the
    backward, each collective synchronous (the compute stream waits for it), so every pass is
    on the critical path: the step grows by the sum of the passes' kernel times."""
    from simulator.simulation import simulate_scenario

    base = {"zero": 1, "overlap_grad_reduce": False}
    with_passes = make({**base, "ddp_grad_check": "norm", "ddp_grad_scaling": "buffer"})
    prog = build_schedule(with_passes).programs["pp0.cp0"]
    added = sum(compute_time(op, with_passes.profile.gpu)
                for op in _passes(prog, ".check_grads.norm") + _passes(prog, ".scale"))
    t0 = simulate_scenario(make(base)).report.step_time_s
    t1 = simulate_scenario(with_passes).report.step_time_s
    assert t1 - t0 == pytest.approx(added, rel=1e-6)


@pytest.mark.parametrize("parallel", [{"zero": 3}, {"zero": 2}, {"zero": 1, "zero1_impl": "deepspeed-bf16"}])
def test_the_passes_need_megatron_core_ddp(make, parallel):
    with pytest.raises(InputError, match="parallel.ddp_grad_check"):
        make({**parallel, "ddp_grad_check": "nan"})


def test_average_in_collective_still_scales_expert_buckets_by_edp_over_dp(tmp_path):
    """With ``average_in_collective`` the dense buckets are averaged by NCCL, but the expert
    buckets, reduced over the smaller expert-data-parallel group, are pre-scaled by edp / dp so
    that both end divided by dp (``DistributedDataParallel.__init__``: expert_gradient_scaling_factor
    = expt_dp_group.size() / dp_cp_group.size())."""
    from simulator.schedule.data_parallel import BucketedSync
    from tests.unit.test_moe_schedule import MOE, moe_scenario_maker

    make = moe_scenario_maker(tmp_path, MOE)
    scn = make({"ep": 2, "zero": 1, "ddp_grad_scaling": "collective"})  # 8 GPUs: dp 8, edp 4
    sync = BucketedSync(scn, stage_units(scn, 0))
    assert (sync.group_size, sync.expert_group_size) == (8, 4)
    assert sync.scaling_factor(expert=False) == 1.0
    assert sync.scaling_factor(expert=True) == pytest.approx(4 / 8)
    prog = next(iter(build_schedule(scn).programs.values()))
    scaled = [op for op in prog if isinstance(op, ComputeOp) and ".grad." in op.name and op.name.endswith(".scale")]
    assert scaled and all(op.name.startswith("edp.grad.") for op in scaled)  # only the expert buckets
    buffer = BucketedSync(make({"ep": 2, "zero": 1, "ddp_grad_scaling": "buffer"}), stage_units(scn, 0))
    assert buffer.scaling_factor(expert=False) == buffer.scaling_factor(expert=True) == pytest.approx(1 / 8)

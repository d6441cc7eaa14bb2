"""fp8_param_gather: the linear weights cross the wire as FP8 in FSDP2's and the distributed
optimizer's parameter AllGathers, after one amax AllReduce per step; volumes in closed form."""

import pytest

from simulator.config.scenario import build_scenario
from simulator.errors import InputError
from simulator.schedule.build import build_schedule
from simulator.schedule.ir import CommOp
from tests.unit.test_schedule_invariants import PROFILE, SMALL, check_invariants

# One layer of SMALL on one rank (tp 1): norms 2 x 256; q, o 256·8·32; k, v 256·4·32; SwiGLU
# gate, up, down 256·512 each. 8 ranks: every count is a multiple of 8, so no padding.
NORMS = 2 * 256
LINEARS = 2 * 65536 + 2 * 32768 + 3 * 131072
PER_LAYER_TENSORS = 7  # q, k, v, o, gate, up, down


@pytest.fixture
def make(tmp_path):
    (tmp_path / "p.yaml").write_text(PROFILE)

    def _make(parallel, fp8_param_gather=True, recipe="current", dtype="fp8"):
        training = {"micro_batch": 1, "global_batch": 8, "dtype": dtype, "fp8_param_gather": fp8_param_gather}
        if dtype == "fp8":
            training["fp8_recipe"] = recipe
        data = {"name": "fp8pg", "hardware": "p.yaml", "nodes": 2, "model": SMALL, "training": training,
                "parallel": parallel}
        return build_scenario(data, source="fp8pg.yaml", base_dir=tmp_path)
    return _make


def _prog(scn):
    sched = build_schedule(scn)
    check_invariants(sched, execute=False)
    return sched.programs["pp0.cp0"]


def _sizes(prog, prefix):
    return [op.size_bytes for op in prog if isinstance(op, CommOp) and op.name.startswith(prefix)]


FSDP2 = {"zero": 3, "zero3_impl": "fsdp2"}


def test_fsdp2_gathers_linear_weights_in_fp8(make):
    """torchtitan's enable_fsdp_float8_all_gather: a layer's AllGather carries its linear weights at
    1 byte and its norms at 2; precompute_float8_dynamic_scale_for_fsdp AllReduces one fp32 amax
    per linear weight (7 per layer, 4 layers) over the FSDP group after the step."""
    fp8 = _prog(make(FSDP2))
    plain = _prog(make(FSDP2, fp8_param_gather=False))
    assert _sizes(plain, "fsdp.ag.L1.fwd.mb0") == [2 * (NORMS + LINEARS)]
    assert _sizes(fp8, "fsdp.ag.L1.fwd.mb0") == [2 * NORMS + LINEARS]
    assert _sizes(fp8, "fp8.param_amax.dp.allreduce") == [4 * PER_LAYER_TENSORS * 4]
    assert not _sizes(plain, "fp8.param_amax")
    step = next(i for i, op in enumerate(fp8) if op.name == "optimizer.step")
    amax = next(op for op in fp8 if op.name == "fp8.param_amax.dp.allreduce")
    assert amax.deps == (step,)


def test_distributed_optimizer_gathers_fp8_after_the_amax_allreduce(make):
    """Megatron's --fp8-param-gather with ZeRO-1: the step's parameter AllGathers carry every
    linear weight at 1 byte (4 layers x LINEARS bytes fewer) and wait for the amax AllReduce."""
    for recipe in ("delayed", "current", "blockwise"):
        fp8 = _prog(make({"zero": 1}, recipe=recipe))
        plain = _prog(make({"zero": 1}, fp8_param_gather=False, recipe=recipe))
        saved = sum(_sizes(plain, "dp.param.allgather")) - sum(_sizes(fp8, "dp.param.allgather"))
        per_element = {"blockwise": 1 - 4 / 128 ** 2}.get(recipe, 1.0)
        assert saved == pytest.approx(4 * LINEARS * per_element, abs=len(_sizes(fp8, "dp.param.allgather")))
        amax = next(i for i, op in enumerate(fp8) if op.name == "fp8.param_amax.dp.allreduce")
        assert all(op.deps == (amax,) for op in fp8 if op.name.startswith("dp.param.allgather"))


@pytest.mark.parametrize("parallel,extra,needle", [
    ({}, {}, "needs sharded weights"),
    ({"zero": 3}, {}, "DeepSpeed gathers bf16"),
    (FSDP2, {"recipe": "delayed"}, "needs fp8_recipe: current"),
    ({"zero": 1}, {"recipe": "rowwise"}, "rowwise is torchao's recipe"),
    ({"zero": 1}, {"dtype": "bf16"}, "needs dtype: fp8"),
])
def test_fp8_param_gather_rules(make, parallel, extra, needle):
    with pytest.raises(InputError, match=needle):
        make(parallel, **extra)

"""NeMo AutoModel's rows keep the model states their runs kept: bf16 parameters stepped in place
(no fp32 master), torch.optim's bf16 moments for the MoE rows and TransformerEngine FusedAdam's fp32
ones for the dense row, no gradient clipping; the MoE parallelizer reduces in fp32."""

from __future__ import annotations

import copy

import pytest

from simulator.config.scenario import build_scenario
from simulator.e2e_validation import sources
from simulator.schedule.memory import memory_per_gpu
from simulator.units import GiB


def _cases(source: str) -> list[sources.Case]:
    return [c for c in sources.cases() if c.source == source]


def test_automodel_rows_step_bf16_parameters_without_clipping():
    moe, dense = _cases("automodel_moe"), _cases("automodel")
    assert moe and dense
    for c in moe + dense:
        t = c.scenario["training"]
        assert t["master_dtype"] == "bf16" and t["grad_clip"] is False
    for c in moe:  # torch.optim.Adam: moments in the parameters' dtype; MixedPrecisionPolicy reduce_dtype fp32
        t, p = c.scenario["training"], c.scenario["parallel"]
        assert t["optimizer"] == "foreach" and "optimizer_state_dtype" not in t
        assert p["grad_reduce_dtype"] == "fp32"
    for c in dense:  # TE FusedAdam without master weights: fp32 moments; FSDP2Config then reduced in bf16
        t, p = c.scenario["training"], c.scenario["parallel"]
        assert t["optimizer"] == "fused" and t["optimizer_state_dtype"] == "fp32"
        assert p.get("grad_reduce_dtype", "bf16") == "bf16"


def test_nemotron_ultra_fits_the_h100_it_ran_on():
    """Nemotron-3 Ultra 550B on 128 H100 (FSDP2 128, EP 64): 2 + 2 + 4 bytes of model states per
    parameter over the shard group, half the 4 + 4 + 8 of fp32 master weights, and the plan fits the
    80 GB the run had (with fp32 states the model put it at 99.3 GiB). Its one micro-batch a step
    reaches the activation peak before any backward, so no sharded gradient is alive then."""
    (case,) = [c for c in _cases("automodel_moe") if c.label.startswith("Nemotron V3 Ultra")]
    scn = build_scenario(case.scenario, source=case.label)
    fp32 = copy.deepcopy(case.scenario)
    fp32["training"]["master_dtype"] = "fp32"
    mixed = build_scenario(fp32, source=case.label)
    bf16_mem, fp32_mem = memory_per_gpu(scn), memory_per_gpu(mixed)
    assert bf16_mem.model_states == pytest.approx(fp32_mem.model_states / 2)
    assert bf16_mem.fits and not fp32_mem.fits
    assert bf16_mem.grads == 0
    assert 50 * GiB < bf16_mem.total < 75 * GiB

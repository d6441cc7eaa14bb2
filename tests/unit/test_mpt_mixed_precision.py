"""llm-foundry's MPT tables ran Composer's FSDP mixed precision ``DEFAULT``: bf16 parameters,
gradients reduced in fp32 (composer/trainer/mosaic_fsdp_utils.py ``get_mixed_precision``,
v0.16). The rows' gradient ReduceScatter therefore moves 4 bytes per parameter per
micro-batch, twice what a bf16 reduction moves."""

from __future__ import annotations

import copy
from dataclasses import replace

import pytest

from simulator.config.scenario import build_scenario
from simulator.e2e_validation import sources
from simulator.schedule.build import build_schedule
from simulator.schedule.ir import CommOp

MPT_7B_PARAMS = 6_658_859_008  # the table's NumParams (llm-foundry scripts/train/benchmarking/README.md)


def _mpt_7b_h100() -> sources.Case:
    return next(c for c in sources.cases(sources.SOURCES)
                if c.source == "mpt" and c.label.startswith("MPT-7b H100-80GB 8 GPUs"))


def _reduce_scatter_bytes(case: sources.Case) -> float:
    sched = build_schedule(build_scenario(case.scenario, source=f"<test:{case.label}>"))
    program = next(iter(sched.programs.values()))
    return sum(op.size_bytes for op in program if isinstance(op, CommOp) and op.op == "reducescatter")


@pytest.mark.parametrize("key", ["mpt", "mpt_seq", "mpt_small"])
def test_every_mpt_row_reduces_gradients_in_fp32(key):
    rows = [c for c in sources.cases(sources.SOURCES) if c.source == key]
    assert rows and all(c.scenario["parallel"]["grad_reduce_dtype"] == "fp32" for c in rows)


def test_mpt_7b_reduce_scatter_is_four_bytes_per_parameter():
    case = _mpt_7b_h100()
    assert case.scenario["training"]["global_batch"] == 8 * case.scenario["training"]["micro_batch"]  # one micro-batch
    fp32 = _reduce_scatter_bytes(case)
    # 4 B per parameter; the model counts MPT without learned positions and pads each unit to the
    # 8 ranks, so within 1% of the table's NumParams
    assert fp32 / 4 == pytest.approx(MPT_7B_PARAMS, rel=0.01)
    bf16 = copy.deepcopy(case.scenario)
    bf16["parallel"]["grad_reduce_dtype"] = "bf16"
    assert fp32 == pytest.approx(2 * _reduce_scatter_bytes(replace(case, scenario=bf16)), rel=1e-12)

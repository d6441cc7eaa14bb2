"""parallel.pp_flushes: pipeline passes per step, each filling and draining the pipeline (a trainer
on torch.distributed.pipelining calls schedule.step once per gradient-accumulation step)."""

import pytest

from simulator.config.scenario import build_scenario
from simulator.errors import InputError
from simulator.schedule.build import build_schedule
from simulator.simulation import simulate_scenario
from tests.unit.test_schedule_invariants import PROFILE, SMALL, check_invariants


@pytest.fixture
def make(tmp_path):
    (tmp_path / "p.yaml").write_text(PROFILE)

    def _make(parallel, global_batch=8):
        data = {"name": "flush", "hardware": "p.yaml", "nodes": 1, "model": SMALL,
                "training": {"micro_batch": 1, "global_batch": global_batch}, "parallel": parallel}
        return build_scenario(data, source="flush.yaml", base_dir=tmp_path)
    return _make


@pytest.mark.parametrize("parallel", [{"pp": 4}, {"pp": 2, "pp_schedule": "interleaved", "vp": 2}])
def test_passes_keep_the_invariants_and_every_micro_batch(make, parallel):
    sched = build_schedule(make({**parallel, "pp_flushes": 2}))
    check_invariants(sched)
    plain = build_schedule(make(parallel))
    for role, prog in sched.programs.items():  # the same kernels, only the sends and receives regroup
        assert sorted(op.name for op in prog if not op.name.startswith("pp.")) == \
            sorted(op.name for op in plain.programs[role] if not op.name.startswith("pp."))


def test_each_pass_pays_the_fill_and_drain(make, no_host_costs):
    """1F1B on pp = 4 stages of one layer, 8 micro-batches: one pass takes (M + pp − 1) slots of
    F + B on the critical path, two passes of 4 take 2·(4 + pp − 1): the step grows by about
    (pp − 1)/(M + pp − 1) = 3/11 of itself. The layers are so small that the host would set the
    pace (costs/host.py), so host costs are off: this is the GPU-side closed form."""
    one = simulate_scenario(make({"pp": 4})).report.step_time_s
    two = simulate_scenario(make({"pp": 4, "pp_flushes": 2})).report.step_time_s
    assert two / one == pytest.approx(14 / 11, rel=0.08)


def test_pp_flushes_rules(make):
    with pytest.raises(InputError, match="needs pp > 1"):
        make({"pp_flushes": 2})
    with pytest.raises(InputError, match="divides the micro-batches"):
        make({"pp": 2, "pp_flushes": 3})

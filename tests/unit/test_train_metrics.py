"""Training metrics computed on the logits besides the loss (``training.train_metrics``):
Composer's LanguageCrossEntropy and LanguagePerplexity, each a torch cross-entropy forward over
every micro-batch's bf16 logits under autocast (schedule/loss.py)."""

from __future__ import annotations

import pytest

from simulator.config.hardware import load_profile
from simulator.config.scenario import build_scenario
from simulator.costs.compute import compute_time
from simulator.costs.memory_bound import memory_time
from simulator.schedule.build import build_schedule
from simulator.schedule.ir import ComputeOp
from simulator.schedule.loss import metric_kernels
from simulator.simulation import simulate_scenario

VOCAB = 32000
TOKENS = 2 * 1024  # micro-batch 2 × seq 1024


def _scenario(tmp_path, parallel: dict | None = None, **training):
    data = {"name": "s", "hardware": "dgx-a100", "nodes": 1,
            "model": {"layers": 2, "hidden": 512, "heads": 8, "vocab": VOCAB, "mlp": "gelu", "seq_len": 1024},
            "training": {"micro_batch": 2, "global_batch": 32, **training}, "parallel": parallel or {"tp": 1}}
    return build_scenario(data, source="s.yaml", base_dir=tmp_path)


def _metric_ops(scn) -> list[ComputeOp]:
    sched = build_schedule(scn)
    return [op for prog in sched.programs.values() for op in prog
            if isinstance(op, ComputeOp) and op.name == "train_metrics"]


def test_one_metric_is_a_bf16_log_softmax_and_the_fp32_copy_nll_loss_makes():
    """log_softmax in bf16: three reads and a write of 2 B; nll_loss's autocast copy to fp32:
    2 B read, 4 B written; three kernels. fp32 logits need no copy."""
    one = metric_kernels(2)
    assert (one.bytes_per_logit, one.kernels) == (3 * 2 + 2 + (2 + 4), 3)
    fp32 = metric_kernels(4)
    assert (fp32.bytes_per_logit, fp32.kernels) == (16, 2)


def test_every_micro_batch_pays_its_metrics_after_its_backward(tmp_path):
    scn = _scenario(tmp_path, train_metrics=2)
    ops = _metric_ops(scn)
    per_rank = scn.n_micro  # 32 sequences / (2 per micro-batch × dp 8)
    assert per_rank == 2 and len(ops) == per_rank  # one role program: every rank holds the head
    one = metric_kernels(2)
    assert all(o.hbm_bytes == 2 * one.bytes_per_logit * TOKENS * VOCAB and o.count == 2 * one.kernels
               and o.tag.phase == "other" for o in ops)
    assert not _metric_ops(_scenario(tmp_path))  # the default: no metrics (Megatron, torchtitan, NeMo)


def test_only_the_last_pipeline_stage_computes_them(tmp_path):
    scn = _scenario(tmp_path, parallel={"tp": 1, "pp": 2}, train_metrics=1)
    sched = build_schedule(scn)
    holders = {role for role, prog in sched.programs.items()
               if any(isinstance(op, ComputeOp) and op.name == "train_metrics" for op in prog)}
    assert len(holders) == 1 and len(sched.programs) == 2


def test_the_step_grows_by_the_metrics_kernel_time(tmp_path, no_host_costs):
    """With dp = 1 nothing overlaps the end of the backward: the step grows by exactly the
    metrics' kernels, priced as streaming kernels over their bytes."""
    par = {"tp": 8}  # dp 1; the logits are vocab-sharded: V/8 columns per rank
    base = simulate_scenario(_scenario(tmp_path, parallel=par, global_batch=4)).report.step_time_s
    scn = _scenario(tmp_path, parallel=par, global_batch=4, train_metrics=2)
    with_metrics = simulate_scenario(scn).report.step_time_s
    gpu = load_profile("dgx-a100").gpu
    ops = _metric_ops(scn)
    assert len(ops) == scn.n_micro == 2
    one = metric_kernels(2)
    nbytes = 2 * one.bytes_per_logit * TOKENS * VOCAB / 8
    expected = scn.n_micro * (memory_time(nbytes, 2 * one.kernels, "stream", gpu)
                              + 2 * one.kernels * gpu.kernel_gap_us * 1e-6)
    assert sum(compute_time(o, gpu) for o in ops) == pytest.approx(expected, rel=1e-9)
    assert with_metrics - base == pytest.approx(expected, rel=0.01)


def test_llm_foundry_rows_run_composers_two_metrics():
    from simulator.e2e_validation.sources import SOURCES, cases as load_cases

    cases = load_cases([s for s in SOURCES if s.key in ("mpt", "mpt_small")])
    assert cases and all(c.scenario["training"]["train_metrics"] == 2 for c in cases)

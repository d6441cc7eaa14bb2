"""training.dataloader_attention_mask: Megatron's per-micro-batch mask copy and TP broadcast (schedule/data_loading.py)."""

from __future__ import annotations

import pytest

from simulator.config.hardware import load_profile
from simulator.config.scenario import build_scenario
from simulator.costs.compute import compute_time
from simulator.schedule import data_loading
from simulator.schedule.build import build_schedule
from simulator.schedule.ir import CommOp, ComputeOp


def _scenario(tp: int, pp: int, mask: bool, micro_batch: int = 2) -> dict:
    model = dict(layers=4, hidden=1024, heads=8, kv_heads=8, ffn_hidden=4096, vocab=32768, mlp="gelu", seq_len=4096,
                 tied_embeddings=False, position_embedding="learned")
    return dict(name="mask", hardware="dgx-h100", nodes=1, model=model,
                training=dict(micro_batch=micro_batch, global_batch=8 * micro_batch * 8 // (tp * pp), dtype="bf16",
                              recompute="none", dataloader_attention_mask=mask),
                parallel=dict(tp=tp, pp=pp))


def _ops(scenario: dict) -> dict[str, list]:
    return build_schedule(build_scenario(scenario)).programs


def test_the_copy_is_the_mask_over_pcie():
    # 2 sequences of 8,192 tokens: 134,217,728 bytes at 55.43 GB/s (nvbandwidth, Gen5 x16): 2.42 ms
    nbytes = data_loading.mask_bytes(2, 8192)
    assert nbytes == 134_217_728
    h100 = load_profile("dgx-h100")
    us = data_loading.h2d_us(nbytes, h100.node.pcie.Bps)
    assert us == pytest.approx(nbytes / 55.43e9 * 1e6)
    op = ComputeOp(name="embedding.mask.h2d", kind="host", impl="dma", host_us=us)
    assert compute_time(op, h100.gpu) == pytest.approx(2.4214e-3, rel=1e-3)
    # a DMA: the slower host of a DGX A100 (node.host_time_scale) does not lengthen it
    assert compute_time(op, h100.gpu, host_time_scale=1.47) == compute_time(op, h100.gpu)
    # Gen4 x16 (DGX A100, the profile's 31 GB/s): the same fraction of its link
    a100 = load_profile("dgx-a100")
    assert data_loading.h2d_us(nbytes, a100.node.pcie.Bps) / us == pytest.approx(63.0 / a100.node.pcie.GBps)


def test_one_copy_and_broadcast_per_micro_batch_on_the_loading_stages():
    n_micro = 8
    one_stage = _ops(_scenario(tp=2, pp=1, mask=True))
    for ops in one_stage.values():
        copies = [op for op in ops if isinstance(op, ComputeOp) and op.name.endswith(".mask.h2d")]
        assert all(c.kind == "host" and c.impl == "dma" for c in copies)
        casts = [op for op in ops if isinstance(op, CommOp) and op.name.endswith(".mask.bcast")]
        assert len(copies) == len(casts) == n_micro
        assert all(c.op == "broadcast" and c.size_bytes == 2 * 4096 * 4096 for c in casts)
    two_stages = _ops(_scenario(tp=2, pp=2, mask=True))
    per_stage = sorted(sum(1 for op in ops if op.name.endswith(".mask.h2d")) for ops in two_stages.values())
    assert per_stage == [n_micro, n_micro]  # the first stage before the embedding, the last before the LM head
    no_tp = _ops(_scenario(tp=1, pp=1, mask=True))
    assert not any(op.name.endswith(".mask.bcast") for ops in no_tp.values() for op in ops)


def test_off_loads_nothing():
    ops = _ops(_scenario(tp=2, pp=2, mask=False))
    assert not any(".mask." in op.name for prog in ops.values() for op in prog)

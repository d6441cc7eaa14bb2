"""torchtitan's op-level selective activation checkpointing (``recompute: selective_op``).

The policy (pytorch/torchtitan torchtitan/models/llama3/parallelize_llama.py, ``_save_list`` and
``_get_custom_policy``; the same rule in torchtitan/parallelisms/parallelize_llama.py of f38766edb)
saves the output of every ``aten.mm`` but every second one of a block, of SDPA and of
reduce-scatter. A Llama block calls wq, wk, wv, wo, w1, w3, w2 in that order, so wk, wo and w3 run
again before the block's backward, with the norms and SiLU-times-w3; the attention core does not.
torchao's Float8 linears call ``aten._scaled_mm``, not in the list: in fp8 every GEMM but w2 re-runs.
"""

from __future__ import annotations

import pytest

from simulator.config.scenario import build_scenario
from simulator.errors import InputError
from simulator.schedule.build import build_schedule
from simulator.schedule.flops import recompute_flops
from simulator.schedule.ir import ComputeOp
from simulator.schedule.memory import layer_activation_bytes

H, FFN, HEADS, KV, SEQ, MB = 1024, 3584, 16, 4, 2048, 2
T = MB * SEQ
HD = H // HEADS


def _data(recompute: str, dtype: str = "bf16", **parallel) -> dict:
    return {"name": "s", "hardware": "dgx-h100", "nodes": 1,
            "model": {"layers": 2, "hidden": H, "heads": HEADS, "kv_heads": KV, "ffn_hidden": FFN, "vocab": 32000,
                      "mlp": "swiglu", "position_embedding": "rope", "tied_embeddings": False, "seq_len": SEQ},
            "training": {"micro_batch": MB, "global_batch": 16, "dtype": dtype, "recompute": recompute},
            "parallel": {"tp": 1, "zero": 3, "zero3_impl": "fsdp2", **parallel}}


def _recomputed(recompute: str, dtype: str = "bf16") -> list[ComputeOp]:
    sched = build_schedule(build_scenario(_data(recompute, dtype), source="s.yaml"))
    prog = next(iter(sched.programs.values()))
    return [op for op in prog if isinstance(op, ComputeOp) and op.name.startswith("L0.")
            and op.name.endswith(".recompute") and op.tag.mb_index == 0]


def test_bf16_reruns_wk_wo_w3_and_not_the_attention_core():
    ops = _recomputed("selective_op")
    gemms = sorted(op.flops for op in ops if op.kind == "gemm")
    wk, wo, w3 = 2.0 * T * KV * HD * H, 2.0 * T * H * H, 2.0 * T * FFN * H
    assert gemms == pytest.approx(sorted([wk, wo, w3]))
    assert not any(op.kind == "attention" or ".attn" in op.name for op in ops)
    # the input norm, the residual add and norm before w3, SiLU x w3: memory-bound kernels re-run too
    assert any(op.kind == "norm" for op in ops) and any(op.name.startswith("L0.act.fwd") for op in ops)
    # flops.recompute_flops counts the same GEMMs (37% of the block's forward GEMM FLOPs at Llama 3 8B)
    assert recompute_flops(build_scenario(_data("selective_op")).model, T, SEQ, "selective_op") == \
        pytest.approx(wk + wo + w3)


def test_fp8_reruns_every_gemm_but_w2():
    """Float8 GEMMs (aten._scaled_mm) are not in the save list: wq, wk, wv, wo, w1, w3 re-run."""
    gemm = sum(op.flops for op in _recomputed("selective_op", "fp8") if op.kind == "gemm")
    assert gemm == pytest.approx(2.0 * T * H * ((HEADS + 2 * KV) * HD + H + 2 * FFN))


def test_between_selective_and_full_in_cost_and_memory():
    """Attention-core recompute re-runs less, full recompute more; the saved activations of the
    op-level policy are the block input, wq, wv, w1, w2 and the attention output."""
    flops = {m: sum(op.flops for op in _recomputed(m) if op.kind == "gemm") for m in ("selective", "selective_op", "full")}
    assert flops["selective"] == 0 < flops["selective_op"] < flops["full"]
    scn = build_scenario(_data("selective_op"))
    sbh = T * H
    assert layer_activation_bytes(scn) == pytest.approx(8 * sbh + 2 * sbh * KV / HEADS + 2 * T * FFN)
    assert layer_activation_bytes(scn, "full") < layer_activation_bytes(scn) < layer_activation_bytes(scn, "none")


def _compiled(recompute: str, dtype: str = "bf16", compile: str = "blocks") -> dict:
    data = _data(recompute, dtype)
    data["training"]["compile"] = compile
    return data


@pytest.mark.parametrize("compile", ["blocks", "blocks_and_loss"])
def test_compiled_block_does_not_keep_w2_output(compile):
    """A compiled block keeps only what its backward reads (AOTAutograd's min-cut partition):
    eager op-level checkpointing stores w2's output, which only the residual add consumes; the
    compiled block drops it, 2·s·b·h bytes per layer: input, wq, wv, w1 and the attention output."""
    sbh = T * H
    scn = build_scenario(_compiled("selective_op", compile=compile))
    assert layer_activation_bytes(scn) == pytest.approx(6 * sbh + 2 * sbh * KV / HEADS + 2 * T * FFN)
    eager = build_scenario(_data("selective_op"))
    assert layer_activation_bytes(eager) - layer_activation_bytes(scn) == pytest.approx(2 * sbh)


@pytest.mark.parametrize("recompute, dtype", [("full", "bf16"), ("none", "bf16"), ("selective", "bf16"),
                                              ("selective_op", "fp8")])
def test_compile_changes_nothing_where_every_saved_tensor_is_read(recompute, dtype):
    """Full checkpointing saves the input, the fused layer's set and Float8's op-level set (input,
    attention output) are all read by the backward: compiling changes none of them."""
    eager = layer_activation_bytes(build_scenario(_data(recompute, dtype)))
    assert layer_activation_bytes(build_scenario(_compiled(recompute, dtype))) == pytest.approx(eager)


@pytest.mark.parametrize("change, why", [({"parallel": {"tp": 2}}, "tp=2"),
                                         ({"model": {"mlp": "gelu"}}, "mlp gelu"),
                                         ({"parallel": {"zero3_impl": "deepspeed"}}, "zero3_impl deepspeed")])
def test_only_where_modelled(change, why):
    data = _data("selective_op")
    for k, v in change.items():
        data[k].update(v)
    with pytest.raises(InputError, match=why):
        build_scenario(data, source="s.yaml")

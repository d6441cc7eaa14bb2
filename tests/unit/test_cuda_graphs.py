"""Partial CUDA graphs (training.cuda_graph_scope) and kernels launched from C++ loops
(ComputeOp.host_calls): what each costs the host and the GPU, in closed form."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from simulator.cli import main
from simulator.config.hardware import CUDA_GRAPH_GAP_SAVING_US
from simulator.config.scenario import build_scenario
from simulator.costs.compute import compute_time
from simulator.costs.host import BWD_KERNEL_US, CUDA_LAUNCH_US, FWD_KERNEL_US, host_cost_s
from simulator.schedule.build import build_program
from simulator.schedule.cuda_graphs import scope_of
from simulator.schedule.ir import CommOp, ComputeOp

NANO = "nemotron-3-nano-30b-a3b"


def _hybrid(scopes: list[str], **training) -> dict:
    """Four blocks of Nemotron-3 Nano (a Mamba2 block, an MoE block, attention, MoE) on 8 H100, EP 8."""
    return {"name": "graphs", "hardware": "dgx-h100", "nodes": 1,
            "model": {"preset": NANO, "seq_len": 512, "layers": 4, "layer_pattern": "ME*E"},
            "training": {"micro_batch": 1, "global_batch": 16, "moe_routing": "round_robin",
                         "cuda_graph_scope": scopes, **training},
            "parallel": {"ep": 8}}


def _pass(prog, layer: int, phase: str, mb: int = 1) -> list:
    """The ops of one layer pass (the data-parallel reductions its backward triggers left out)."""
    return [op for op in prog if isinstance(op, (ComputeOp, CommOp)) and op.tag.layer == layer
            and op.tag.mb_index == mb and op.tag.phase == phase and op.name.startswith(f"L{layer}.")]


def test_each_graph_is_one_launch_and_its_other_ops_cost_the_host_nothing():
    """With the Nemotron-3 recipes' scopes (attn, mamba, moe_router, moe_preprocess), the Mamba2
    and attention blocks are replayed whole: each pass one launch (the host cost of one kernel,
    forward 38 us and backward 29.9 us) and every other op captured; an MoE block replays its
    pre-norm, router, top-k, shared expert and permutation as one graph and issues its dispatch,
    experts and combine eagerly. Without scopes every op is eager."""
    prog = build_program(build_scenario(_hybrid(["attn", "mamba", "moe_router", "moe_preprocess"])), 0)
    for layer in (0, 2):
        for phase, per in (("fwd", FWD_KERNEL_US), ("bwd", BWD_KERNEL_US)):
            ops = _pass(prog, layer, phase)
            assert [op.cuda_graph for op in ops] == ["launch"] + ["captured"] * (len(ops) - 1)
            assert sum(host_cost_s(op) for op in ops) == pytest.approx(per * 1e-6)
    moe = _pass(prog, 1, "fwd")
    graphed = [op.name.split(".", 1)[1] for op in moe if op.cuda_graph]
    assert graphed[0] == "ln1.fwd" and [op.cuda_graph for op in moe].count("launch") == 1
    assert {"moe.router.fwd", "moe.topk.fwd", "moe.permute.fwd"} <= set(graphed)
    assert any(n.startswith("moe.shared.") for n in graphed)
    eager = {op.name.split(".", 1)[1] for op in moe if not op.cuda_graph}
    assert {"moe.dispatch.fwd.alltoall", "moe.experts.fc1.fwd", "moe.combine.fwd.alltoall"} <= eager
    plain = build_program(build_scenario(_hybrid([])), 0)
    assert not any(getattr(op, "cuda_graph", "") for op in plain)


def test_captured_kernels_follow_each_other_with_the_graph_gap():
    """A captured op's kernels pay kernel_gap_us - 0.7 us each (the H200 chains replayed from a graph,
    config/hardware.py), the same op issued eagerly the full gap: count x 0.7 us apart."""
    scn = build_scenario(_hybrid(["mamba"]))
    gpu = scn.profile.gpu
    captured = [op for op in build_program(scn, 0) if isinstance(op, ComputeOp) and op.cuda_graph]
    for op in captured[:20]:
        eager = compute_time(op.__class__(**{**{f: getattr(op, f) for f in op.__slots__}, "cuda_graph": ""}), gpu)
        assert eager - compute_time(op, gpu) == pytest.approx(max(op.count, 1) * CUDA_GRAPH_GAP_SAVING_US * 1e-6)


def test_scopes_of_a_gpt_layer():
    """In a GPT layer attn holds the norm, QKV, core, projection and the residual add with the next
    norm; mlp the dense MLP; moe_router an MoE layer's router, top-k and shared experts and
    moe_preprocess its permutation; FP8's quantisation op (one over every GEMM of the layer) and
    recomputed ops stay eager."""
    assert scope_of("qkv.fwd.gemm", "") == "attn" and scope_of("res1_ln2.bwd", "moe") == "attn"
    assert scope_of("fc2.bwd.dgrad", "") == "mlp" and scope_of("res2.fwd", "moe") == ""
    assert scope_of("moe.router.random.fwd", "moe") == "moe_router" and scope_of("moe.permute.bwd", "moe") == "moe_preprocess"
    assert scope_of("moe.experts.fc1.fwd", "moe") == "" and scope_of("moe.dispatch.fwd.alltoall", "moe") == ""
    assert scope_of("fp8_current.quantize.fwd", "") == "" and scope_of("ln1.fwd.recompute", "") == ""
    assert scope_of("mamba.ssd.fwd", "M") == "mamba" and scope_of("fp8_mxfp8.quantize.fwd", "M") == "mamba"


def test_graphs_shorten_a_host_bound_step():
    """A small dense GPT on one H100 at micro-batch 1 is host-bound (the host issues a kernel in
    38 us, longer than most of them run): graphing attention and the MLP cuts the step, and never
    lengthens one."""
    base = {"name": "small", "hardware": "dgx-h100", "nodes": 1,
            "model": {"layers": 4, "hidden": 512, "heads": 8, "vocab": 1024, "seq_len": 256},
            "training": {"micro_batch": 1, "global_batch": 8}, "parallel": {"dp": 8}}
    from simulator.simulation import simulate_scenario

    eager = simulate_scenario(build_scenario(base)).report.step_time_s
    graphed = {**base, "training": {**base["training"], "cuda_graph_scope": ["attn", "mlp"]}}
    assert simulate_scenario(build_scenario(graphed)).report.step_time_s < 0.8 * eager


@pytest.mark.parametrize("training,model,field", [
    ({"cuda_graph_scope": ["moe_preprocess"]}, None, "training.cuda_graph_scope"),
    ({"cuda_graph_scope": ["mamba"], "recompute": "full"}, None, "training.cuda_graph_scope"),
    ({"cuda_graph_scope": ["moe_router"], "recompute_modules": ["moe"]}, None, "training.cuda_graph_scope"),
    ({"cuda_graph_scope": ["mlp"]}, {"preset": "qwen3-30b-a3b", "layers": 2, "seq_len": 512}, "training.cuda_graph_scope"),
    ({"cuda_graph_scope": ["mamba"]}, {"preset": "qwen3-30b-a3b", "layers": 2, "seq_len": 512}, "training.cuda_graph_scope"),
    ({"cuda_graph_scope": ["moe_router"]}, {"preset": "llama3-8b", "layers": 2, "seq_len": 512}, "training.cuda_graph_scope"),
])
def test_scopes_the_model_cannot_have_exit_2(tmp_path: Path, capsys, training, model, field):
    """The combinations Megatron-Core's TransformerConfig refuses: moe_preprocess without moe_router
    (one graph), per-layer graphs with full recompute, moe_router under the moe recompute module,
    mlp in a model whose every MLP is an MoE layer; and mamba without Mamba2 blocks, moe_router
    without experts: exit 2 naming the field."""
    data = _hybrid([])
    data["training"] = {"micro_batch": 1, "global_batch": 16, **training}
    if model:
        data["model"] = model
        data["parallel"] = {"ep": 8} if "qwen3" in model["preset"] else {}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert field in err and "Traceback" not in err


def test_kernels_launched_from_cpp_loops_cost_a_launch_each():
    """TransformerEngine issues the grouped GEMM of 16 local experts from one Python call and
    quantises every expert's rows in one split_quantize call: the host pays one kernel's cost for
    the call and CUDA_LAUNCH_US (5 us) for each further kernel. The forward FC1 of an MoE block:
    38 + 15 x 5 us. Current scaling's quantisation of the E block's forward (the shared expert's two
    inputs, then the routed rows of FC1 and FC2): four calls, 4 kernels per tensor and per split,
    4 x 38 + (8 + 2 x 16 x 4 - 4) x 5 us."""
    prog = build_program(build_scenario(_hybrid([], dtype="fp8", fp8_recipe="current")), 0)
    fc1 = next(op for op in prog if op.name == "L1.moe.experts.fc1.fwd" and op.tag.mb_index == 0)
    assert fc1.count == 16 and host_cost_s(fc1) == pytest.approx((FWD_KERNEL_US + 15 * CUDA_LAUNCH_US) * 1e-6)
    quant = next(op for op in prog if op.name == "L1.fp8_current.quantize.fwd" and op.tag.mb_index == 0)
    assert quant.count == 8 + 2 * 16 * 4
    assert host_cost_s(quant) == pytest.approx((4 * FWD_KERNEL_US + (quant.count - 4) * CUDA_LAUNCH_US) * 1e-6)

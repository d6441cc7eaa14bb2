"""Partial CUDA graphs: the parts of a layer TransformerEngine replays from captured graphs.

Megatron-Core's ``cuda_graph_impl: transformer_engine`` with ``cuda_graph_scope`` (training.cuda_graph_scope)
captures chosen submodules of every layer with TransformerEngine's ``make_graphed_callables``
(megatron/core/transformer/transformer_layer.py, ``CudaGraphScope``): each becomes one graph
replayed forward and one replayed backward per micro-batch, while the rest of the layer is issued
eagerly. The scopes, and the ops of a layer pass (``schedule/transformer.py``) each holds:

* ``attn``: the attention submodule of a layer, its input norm to the residual add after it
  (``ln1``, ``qkv``, the core, ``proj``, ``res1``; a hybrid ``*`` block whole);
* ``mlp``: a dense MLP (``fc1``, the activation, ``fc2``, its residual add; a hybrid ``-`` block
  whole);
* ``moe_router``: an MoE layer's pre-MLP norm, router and top-k, and the shared experts that the
  route step computes (``MoELayer.forward``'s route part, ``shared_experts_compute``); with
  ``moe_preprocess`` also the dispatcher's preprocessing (the permutation before the dispatch),
  in the same graph: the partial capture returns at ``MoECudaGraphPartialCaptureSignal``, after
  the route and preprocess steps, and the dispatch, experts and combine run eagerly;
* ``mamba``: a hybrid ``M`` block whole (``MambaLayer``: norm, in_proj, conv, scan, gated norm,
  out_proj, residual add).

What a graph changes is the host's issue of its ops and the gaps between its kernels
(``ComputeOp.cuda_graph``: costs/host.py, costs/compute.py); the kernels themselves are the
same. An op that synchronises the host (``host_sync``) cannot be captured and stays eager; a
recomputed op (selective ``recompute_modules``) runs eagerly inside the backward; the FP8
quantisation op of a GPT layer, one op over every GEMM of the layer (schedule/fp8.py), stays
eager unless the layer is a hybrid block captured whole.
"""

from __future__ import annotations

from dataclasses import replace

from simulator.schedule.ir import CommOp, ComputeOp, ProgramBuilder

# The graphs a layer's scopes make: moe_router and moe_preprocess are captured together.
_GRAPH_OF = {"attn": "attn", "mlp": "mlp", "moe_router": "moe", "moe_preprocess": "moe", "mamba": "mamba"}

# Op name prefixes (after "L<layer>.") of each scope's ops in a layer's passes
_ATTN = ("ln1.", "qkv.", "qk_norm.", "rope.", "attn.", "proj.", "res1_ln2.", "res1.")
_MLP = ("fc1.", "act.", "fc2.", "res2.")
_ROUTER = ("ln2.", "moe.router.", "moe.topk.", "moe.shared.")
_PREPROCESS = ("moe.permute.",)
_HYBRID_SCOPES = {"M": "mamba", "*": "attn", "-": "mlp"}


def scope_of(name: str, block: str) -> str:
    """The scope that captures the op named ``name`` (its layer prefix removed) of a layer pass,
    "" where none does. ``block``: the layer's block in a hybrid model (``model.layer_pattern``),
    else "moe" for a GPT layer with routed experts and "" for a dense one."""
    if name.endswith(".recompute"):
        return ""
    if block in _HYBRID_SCOPES:
        return _HYBRID_SCOPES[block]
    if ".fp8_" in name or name.startswith("fp8_"):
        return ""
    if block == "E":  # an MoE block: its own pre-norm is ln1
        return "moe_router" if name.startswith(("ln1.",) + _ROUTER) else (
            "moe_preprocess" if name.startswith(_PREPROCESS) else "")
    if name.startswith(_ATTN):
        return "attn"
    if block == "moe":
        return "moe_router" if name.startswith(_ROUTER) else (
            "moe_preprocess" if name.startswith(_PREPROCESS) else "")
    return "mlp" if name.startswith(_MLP) else ""


def mark(pb: ProgramBuilder, start: int, scopes: frozenset[str], block: str) -> None:
    """Mark the ops of the layer pass ``pb.ops[start:]`` that ``scopes`` capture: each graph is
    replayed once per pass, its first op the replay's launch. (The shared experts of an MoE layer,
    which the route step computes inside the router's graph, come after the combine in the pass's
    issue order: they count in that graph's replay.)"""
    if not scopes:
        return
    launched: set[str] = set()
    for i in range(start, len(pb.ops)):
        op = pb.ops[i]
        if not isinstance(op, (ComputeOp, CommOp)) or op.host_sync:
            continue
        name = op.name.split(".", 1)[1] if op.name.startswith("L") else op.name
        scope = scope_of(name, block)
        graph = _GRAPH_OF[scope] if scope in scopes else ""
        if not graph:
            continue
        pb.ops[i] = replace(op, cuda_graph="captured" if graph in launched else "launch")
        launched.add(graph)

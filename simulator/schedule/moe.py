"""The Mixture-of-Experts MLP block of one layer, forward and backward, on one rank.

Megatron-Core's ``MoELayer`` (megatron/core/transformer/moe/moe_layer.py) runs, per micro-batch:
router (a h×E GEMM, softmax/top-k) → token dispatch → the local experts as one grouped GEMM
(``TEGroupedMLP``: one GEMM per local expert) → token combine → plus the shared experts, a
TP-parallel dense MLP on the same input. The dispatchers (moe/token_dispatcher.py):

* ``alltoall`` (``MoEAlltoAllTokenDispatcher``): permute the T local tokens into T·k rows sorted
  by expert, All-to-All over the EP group (each rank sends T·k·h elements and, balanced, receives
  as many), then AllGather-V over the expert-TP group when etp > 1 so every expert-TP rank holds
  the rows of its experts; combine mirrors it: ReduceScatter-V over etp, All-to-All back,
  unpermute and sum the k expert outputs of each token weighted by its router probabilities.
  Two more steps of ``MoEAlltoAllTokenDispatcher`` (``token_dispatch``, ``dispatch_postprocess``,
  ``combine_preprocess``): the routed rows' probabilities travel in an All-to-All of their own
  after the tokens' (the experts weight their activations by them; backward returns their
  gradients the same way), and with more than one local expert the rows that arrive grouped by
  source rank are sorted by expert (``sort_chunks_by_idxs``, "permutation 2") and put back in
  source order before the combine: one more read and write of the rows each way, forward and
  backward (:func:`_sort_chunks`).
* ``allgather`` (``MoEAllGatherTokenDispatcher``): AllGather of the T tokens over the etp×ep group,
  each rank picks the rows of its local experts; combine is a ReduceScatter over the same group.
* ``deepep`` (``MoEFlexTokenDispatcher`` with DeepEP, github.com/deepseek-ai/DeepEP normal
  kernels, or its HybridEP backend, ``moe_deepep_backend: hybridep``, which first AllGathers the
  routing map, :func:`_routing_map_allgather`): a token is sent over RDMA at most once per destination node (to the GPU of the same
  local index), which forwards it over NVLink to the GPUs holding its experts; the combine goes
  back the same way. Modelled as an All-to-All over the EP ranks of the other nodes sized by the
  expected number of distinct nodes a token's k experts fall on, then an All-to-All inside the node
  of the T·k rows; with FP8 training the dispatch is FP8 with one fp32 scale per 128 values
  (DeepSeek-V3, arXiv:2412.19437 §3.3) unless ``parallel.moe_dispatch_dtype`` is ``bf16``
  (Megatron-Core's paths, :func:`fp8_dispatch_wanted`), the combine stays BF16. The DeepEP kernels hold
  ``moe_deepep_sms`` SMs; the GEMMs that run beside them (the shared experts under
  ``moe_shared_expert_overlap``, the paired nodes of the combined 1F1B) keep the rest
  (:func:`beside_exchange_sm_fraction`).

Backward is the mirror: the combine's All-to-All carries the output gradient to the experts,
grouped dgrad and wgrad GEMMs, the dispatch's All-to-All carries the input gradient back. The
dispatch's backward waits for the last wgrad: TransformerEngine's ``GroupedLinear`` backward
computes the dgrad and then the wgrad before it returns (``_GroupedLinear.backward``; Megatron's
``delay_wgrad_compute`` would defer it), and autograd runs the dispatcher's backward node after
it, so the exchange cannot hide under the expert wgrad (Megatron-Bridge's profile of a 16-H100
Qwen3-30B-A3B run without A2A overlap finds 0.11% of its communication under compute).

**Routing imbalance.** All ranks of the EP group meet at every All-to-All, so the slowest one (the
one holding the most-loaded experts) sets the pace. ``training.moe_imbalance`` is the expected
max/mean tokens per expert (1.0: a balanced router, such as a forced-balanced benchmark gate); the
rank holding the hottest expert carries ``1 + (imbalance − 1)/E_local`` times the mean, its other
experts being average. ``training.moe_routing_seed`` instead draws the routing of the EP group's
tokens as a seeded multinomial over the experts and takes the most loaded rank. With a capacity
factor c, no expert takes more than c times its balanced share (Megatron's token dropping with
``moe_expert_capacity_factor``); the rest are dropped. The All-to-All is sized by the slowest
rank's rows (what bounds it); every row dispatched is combined (same size both ways).
``training.moe_routing: round_robin`` is the benchmark gate of NeMo AutoModel
(``FakeBalancedGate``: token t to experts t·k … t·k+k−1 mod E): perfectly balanced, and a
token's experts are neighbours, so they sit on one or two nodes, which is what DeepEP's RDMA
volume depends on (:func:`nodes_hit`).

Shared experts run after the combine, or, with ``moe_shared_expert_overlap``, between the
dispatch and the combine so the All-to-Alls hide behind them (Megatron's shared-expert overlap).
With ``overlap_moe_expert_parallel_comm`` they are part of the expert node (Megatron's
``routed_experts_compute`` runs them beside the routed experts), issued after the dispatch so a
layer's ops fall into the five nodes :mod:`simulator.schedule.moe_overlap` interleaves.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Iterable

import numpy as np

from simulator.config.scenario import Scenario
from simulator.schedule import deterministic_fill, fp8, tensor_parallel
from simulator.schedule.ir import CollectiveKind, CommOp, ComputeOp, Phase, ProgramBuilder, Tag
from simulator.schedule.shapes import RankShapes

SCALE_BLOCK = 128  # DeepEP / DeepSeek-V3 FP8 dispatch: one fp32 scale per 128 activations


@dataclass(frozen=True)
class MoESpec:
    """Per-rank shape of the MoE block of one role."""

    experts: int
    top_k: int
    hidden: int
    ffn: int  # one routed expert's FFN size
    shared_ffn: int  # all shared experts together
    gated: bool
    ep: int
    etp: int
    tp: int
    tokens: int  # T: tokens entering the block on this rank (the SP shard under TP)
    act_bytes: int
    dtype: str  # GEMM dtype
    dispatcher: str
    dispatch_bytes: float  # bytes per dispatched element (FP8 + scales, or the activation dtype)
    load: float  # rows of the slowest EP rank over the balanced share (>= dropped-capped)
    nodes_hit: float  # deepep: expected distinct nodes of the EP group a token's k experts fall on
    ranks_hit: float  # deepep: expected distinct EP ranks a token's k experts fall on
    ep_nodes: int  # deepep: nodes the EP group spans
    shared_overlap: bool
    a2a_overlap: bool = False  # combined 1F1B (Megatron's overlap_moe_expert_parallel_comm)
    hybridep: bool = False  # deepep dispatcher on the HybridEP backend
    beside_exchange_sm_fraction: float = 1.0  # SMs compute keeps beside the exchange (deepep: 1 − its SMs)
    bias_per_expert: bool = False  # the experts' output bias added per local expert (training.moe_expert_bias)
    bias_fc1_per_expert: bool = False  # FC1's bias added per local expert too (moe_expert_bias per_expert_fc1_fc2)
    fp8_padding: bool = False  # FP8 rows copied to and from per-expert aligned splits (fp8_row_padding)
    recompute_act: bool = False  # the experts' activation rebuilt in backward (recompute_modules moe_act)
    clamp_unfused: bool = False  # the GLU's clamp run as eager kernels before the activation (_glu_clamp)
    latent: int = 0  # LatentMoE: width of the routed tokens (model.moe_latent_size; 0: the hidden size)
    gemm_scaling: str = ""  # block scaling of the fp8 expert GEMMs' operands (ComputeOp.scaling)
    random_logits: bool = False  # forced-balanced router: RandomSTE's logits (training.moe_router_kernels)
    aux_loss: bool = False  # a load-balancing loss on the router's scores (training.moe_router_kernels)
    # which grouped-GEMM outputs PyTorch fills with NaN as TE allocates them
    # (training.torch_deterministic, schedule/deterministic_fill.py); default: none
    fill: deterministic_fill.Fill = deterministic_fill.Fill()

    @classmethod
    def from_scenario(cls, scn: Scenario) -> "MoESpec":
        m, t, p = scn.model, scn.training, scn.parallel
        shape = RankShapes.of(scn)
        tokens, etp, ep_nodes = shape.sp_tokens, shape.etp, shape.ep_nodes
        fp8_dispatch = t.dtype == "fp8" and fp8_dispatch_wanted(p.moe_dispatch_dtype, p.moe_dispatcher)
        dispatch_bytes = (1 + 4 / SCALE_BLOCK) if fp8_dispatch else float(t.act_bytes)
        load = rank_load(m.experts, m.top_k, p.ep, tokens, t.moe_imbalance, m.capacity_factor,
                         t.moe_routing_seed)
        return cls(experts=m.experts, top_k=m.top_k, hidden=m.hidden, ffn=m.moe_ffn_hidden,
                   shared_ffn=m.shared_ffn_hidden, gated=m.gated, ep=p.ep, etp=etp, tp=p.tp, tokens=tokens,
                   act_bytes=t.act_bytes, dtype=t.dtype, dispatcher=p.moe_dispatcher, dispatch_bytes=dispatch_bytes,
                   load=load, nodes_hit=nodes_hit(m.experts, m.top_k, ep_nodes, t.moe_routing, m.expert_groups,
                                                  m.topk_groups), ep_nodes=ep_nodes,
                   ranks_hit=nodes_hit(m.experts, m.top_k, p.ep, t.moe_routing, m.expert_groups, m.topk_groups),
                   shared_overlap=p.moe_shared_expert_overlap, a2a_overlap=p.overlap_moe_expert_parallel_comm,
                   hybridep=p.moe_dispatcher == "deepep" and p.moe_deepep_backend == "hybridep",
                   beside_exchange_sm_fraction=beside_exchange_sm_fraction(scn),
                   bias_per_expert=t.moe_expert_bias != "none",
                   bias_fc1_per_expert=t.moe_expert_bias == "per_expert_fc1_fc2",
                   fp8_padding=fp8_row_padding(scn),
                   recompute_act="moe_act" in t.recompute_modules, latent=m.moe_latent_size,
                   clamp_unfused=bool(m.glu_clamp) and t.glu_clamp_kernel == "unfused",
                   gemm_scaling=fp8.gemm_scaling(t.dtype, t.fp8_recipe),
                   random_logits="random_logits" in t.moe_router_kernels, aux_loss="aux_loss" in t.moe_router_kernels,
                   fill=deterministic_fill.Fill.of(scn))

    @property
    def width(self) -> int:
        """Width of a routed row: what the dispatch and the combine carry and the experts' GEMMs
        take and return (the latent size under LatentMoE, else the hidden size)."""
        return self.latent or self.hidden

    @property
    def local_experts(self) -> int:
        return self.experts // self.ep

    @property
    def rows(self) -> int:
        """Rows the slowest rank's grouped GEMMs process: T·k routed copies, gathered over etp."""
        return max(1, round(self.tokens * self.top_k * self.etp * self.load))

    @property
    def copies(self) -> float:
        """Copies of a token the EP exchange moves: one per routed expert (k), or with DeepEP one per
        destination rank. DeepEP's dispatch sends a token once to every rank holding at least one of
        its experts (``is_token_in_rank``; ``recv_x`` has one row per received token, its k expert
        slots in ``recv_topk_idx``, and ``tests/test_intranode.py`` checks ``recv_x.size(0)`` against
        the count of tokens per rank), the receiver permutes it to its local experts, and the
        combine reduces a token's local expert outputs before sending one row back
        (deepseek-ai/DeepEP ``csrc/kernels/intranode.cu`` at 9249c25)."""
        return self.ranks_hit if self.dispatcher == "deepep" else float(self.top_k)

    @property
    def dispatch_size(self) -> int:
        """All-to-All send buffer of one rank (nccl-tests size), dispatch direction."""
        return int(self.tokens * self.copies * self.load * self.width * self.dispatch_bytes)

    @property
    def combine_size(self) -> int:
        return int(self.tokens * self.copies * self.load * self.width * self.act_bytes)

    @property
    def up(self) -> int:
        """Output features of the first expert GEMM per expert-TP rank (gate and up for SwiGLU)."""
        return (2 if self.gated else 1) * self.ffn // self.etp


def fp8_dispatch_wanted(dispatch_dtype: str, dispatcher: str) -> bool:
    """Whether an fp8 run sends its dispatch in FP8 (``parallel.moe_dispatch_dtype``).

    DeepSeek-V3's own stack quantises the tokens before DeepEP's dispatch (arXiv:2412.19437
    §3.3.2), which ``auto`` follows for ``deepep``. Megatron-Core does not: its alltoall dispatcher
    sends the permuted activations, its DeepEP path passes the BF16 hidden states to
    ``fused_dispatch``, and its HybridEP path asserts ``not fp8_dispatch`` ("HybridEP dispatcher
    does not support fp8 dispatch now", megatron/core/transformer/moe/fused_a2a.py at 4415119 of
    Megatron-Core, NeMo 26.04); TransformerEngine's grouped linear quantises the rows after the
    exchange. Megatron-Core's runs therefore set ``bf16``."""
    if dispatch_dtype == "auto":
        return dispatcher == "deepep"
    return dispatch_dtype == "fp8"


def fp8_row_padding(scn: Scenario) -> bool:
    """Whether an FP8 run copies the routed rows into per-expert splits padded to the quantisation
    alignment and back. Megatron-Core's ``TEGroupedMLP`` (megatron/core/transformer/moe/experts.py
    at 4415119) pads ``permuted_local_hidden_states`` and the probabilities with TransformerEngine's
    ``Fp8Padding`` before FC1 and unpads FC2's output with ``Fp8Unpadding`` whenever
    ``skip_routed_expert_padding`` is false: neither the router pads the counts
    (``moe_router_padding_for_quantization``, off in the recipes here) nor the dispatcher is
    HybridEP, which writes padded splits itself. TransformerEngine skips the copy only when every
    split is already a multiple of the alignment (16 rows, 32 for MXFP8;
    ``transformer_engine/pytorch/module/fp8_padding.py``): a learned or forced-balanced router's
    counts vary from micro-batch to micro-batch, so they almost never are; the round-robin gate's
    equal splits are when T·k/E is a multiple of it."""
    t, p, m = scn.training, scn.parallel, scn.model
    if t.dtype != "fp8" or (p.moe_dispatcher == "deepep" and p.moe_deepep_backend == "hybridep"):
        return False
    if t.moe_routing == "round_robin":
        align = 32 if t.fp8_recipe == "mxfp8" else 16
        per_expert = RankShapes.of(scn).sp_tokens * m.top_k * p.ep // m.experts
        return per_expert % align != 0
    return True


def beside_exchange_sm_fraction(scn: Scenario) -> float:
    """Share of the SMs left to compute that runs beside a token exchange. DeepEP's kernels are
    persistent and hold ``moe_deepep_sms`` SMs while they move tokens (Megatron's
    ``moe_deepep_num_sms``, default 20; DeepEP v1's README example sets 24; DeepSeek-V3,
    arXiv:2412.19437 §3.2.2, dedicates 20 of the H800's 132 SMs to communication), so a GEMM beside
    them runs on the rest. NCCL's All-to-All is priced by the profile's ``overlap_slowdown``."""
    p = scn.parallel
    if p.moe_dispatcher != "deepep":
        return 1.0
    return 1.0 - p.moe_deepep_sms / scn.profile.gpu.sms


def hold_sms(pb: ProgramBuilder, indices: Iterable[int], fraction: float) -> None:
    """The compute-bound kernels among ``indices`` run beside a token exchange that holds SMs: they
    keep ``fraction`` of them (``ComputeOp.sm_fraction``, which the replay does not slow again)."""
    if fraction >= 1.0:
        return
    for i in indices:
        op = pb.ops[i]
        if isinstance(op, ComputeOp) and op.kind in ("gemm", "attention"):
            pb.ops[i] = held(op, fraction)


def held(op: ComputeOp, fraction: float) -> ComputeOp:
    """``op`` keeping ``fraction`` of the SMs it had (:func:`hold_sms`)."""
    return replace(op, sm_fraction=op.sm_fraction * fraction)


def expected_nodes_hit(experts: int, top_k: int, nodes: int) -> float:
    """Expected distinct nodes among a token's k experts, experts spread evenly over `nodes` and
    chosen uniformly without replacement: nodes·(1 − C(E − E/nodes, k)/C(E, k))."""
    if nodes <= 1:
        return 1.0
    per_node = experts // nodes
    miss = math.comb(experts - per_node, top_k) / math.comb(experts, top_k)
    return nodes * (1 - miss)


def nodes_hit(experts: int, top_k: int, nodes: int, routing: str = "learned", groups: int = 0,
              topk_groups: int = 0) -> float:
    """Distinct nodes a token's experts fall on (what DeepEP sends over RDMA once each).

    ``round_robin``: token t takes experts t·k … t·k+k−1 (mod E), so the count is averaged over the
    E/gcd(E, k) distinct windows. ``learned``: uniform without replacement, restricted with
    group-limited routing to ``topk_groups`` of ``groups`` expert groups, which span
    nodes/groups nodes each when there are more nodes than groups (DeepSeek-V3's node-limited
    routing, arXiv:2412.19437 §2.1.2: groups = nodes, at most 4 nodes per token)."""
    if nodes <= 1:
        return 1.0
    per_node = experts // nodes
    if routing == "round_robin":
        starts = range(0, experts * top_k // math.gcd(experts, top_k), top_k)
        return sum(len({((s + j) % experts) // per_node for j in range(top_k)}) for s in starts) / len(starts)
    if groups and topk_groups < groups and nodes % groups == 0:
        span = topk_groups * nodes // groups  # nodes of the allowed groups
        return expected_nodes_hit(experts * topk_groups // groups, top_k, span)
    return expected_nodes_hit(experts, top_k, nodes)


def rank_load(experts: int, top_k: int, ep: int, tokens: int, imbalance: float, capacity: float | None,
              seed: int | None) -> float:
    """Rows of the most loaded EP rank over the balanced share T·k (see module docstring)."""
    local = experts // ep
    if seed is None:
        per_expert = imbalance if capacity is None else min(imbalance, capacity)
        return 1 + (per_expert - 1) / local
    rng = np.random.default_rng(seed)
    n = tokens * ep  # the EP group's tokens of one micro-batch
    counts = np.zeros(experts, dtype=np.int64)
    for _ in range(top_k):  # k draws per token, uniform over the experts
        counts += rng.multinomial(n, np.full(experts, 1 / experts))
    if capacity is not None:
        counts = np.minimum(counts, math.ceil(capacity * n * top_k / experts))
    per_rank = counts.reshape(ep, local).sum(axis=1)
    return float(per_rank.max() / (n * top_k / ep))


# ---------------------------------------------------------------------------------------------


def _tag(phase: Phase, layer: int, mb: int) -> Tag:
    return Tag(phase, layer, mb)


def _mem(pb: ProgramBuilder, name: str, nbytes: float, deps: tuple[int, ...], tag: Tag, count: int = 1) -> int:
    """A memory-bound op of ``count`` kernels moving ``nbytes`` in all."""
    return pb.add(ComputeOp(name=name, kind="elementwise", flops=nbytes / 2, hbm_bytes=nbytes, deps=deps, count=count,
                            tag=tag))


def expert_gemm(pb: ProgramBuilder, s: MoESpec, name: str, m: int, n: int, k: int, deps: tuple[int, ...],
                tag: Tag, wgrad: bool = False) -> int:
    """One grouped GEMM over ``m`` routed rows (TE GroupedLinear): E_local GEMMs of (m/E_local, n, k),
    or for a weight gradient (``wgrad``) of (n, k, m/E_local), the rows being the reduced dimension,
    issued by one call (``general_grouped_gemm``, whose C++ loop launches the experts' GEMMs).
    Under PyTorch's deterministic fill the call's one output (forward, dgrad) or, without
    gradient-accumulation fusion, each expert's weight gradient is filled as allocated."""
    e = s.local_experts
    elem = 1 if s.dtype == "fp8" else s.act_bytes
    io = (m * k + e * k * n + m * n) * elem
    rows = max(m // e, 1)
    fill = s.fill.gemm(wgrad)
    out = deterministic_fill.gemm_output_bytes(e * n if wgrad else m, k if wgrad else n, s.dtype, s.act_bytes)
    return pb.add(ComputeOp(name=name, kind="gemm", flops=2.0 * m * n * k, hbm_bytes=io, deps=deps,
                            gemm=(n, k, rows) if wgrad else (rows, n, k), count=e, dtype=s.dtype, tag=tag,
                            scaling=s.gemm_scaling, host_calls=1, fill_bytes=out if fill else 0.0,
                            fill_kernels=(e if wgrad else 1) if fill else 0))


def _latent_proj(pb: ProgramBuilder, s: MoESpec, name: str, m: int, n: int, k: int, dep: int, tag: Tag,
                 gemm: tuple[int, int, int] | None = None) -> int:
    """One GEMM of a LatentMoE projection on this rank's T tokens (a TE linear layer of its own,
    replicated over TP, in the GEMM dtype): forward (m, n, k) = (T, latent, h) into the latent
    space or (T, h, latent) out of it; ``gemm`` gives a backward GEMM's shape. ``dep`` when the
    model has no latent space."""
    if not s.latent:
        return dep
    elem = 1 if s.dtype == "fp8" else s.act_bytes
    return pb.add(ComputeOp(name=name, kind="gemm", flops=2.0 * m * n * k, hbm_bytes=(m * k + k * n + m * n) * elem,
                            deps=(dep,), gemm=gemm or (m, n, k), dtype=s.dtype, tag=tag, scaling=s.gemm_scaling))


def _latent_proj_bwd(pb: ProgramBuilder, s: MoESpec, name: str, m: int, n: int, k: int, dep: int, tag: Tag) -> int:
    """The backward of the projection whose forward was (m, n, k): the input gradient (m, k, n),
    then the weight gradient (k, n, m), both before the linear layer's backward returns."""
    if not s.latent:
        return dep
    d = _latent_proj(pb, s, f"{name}.dgrad", m, n, k, dep, tag, gemm=(m, k, n))
    return _latent_proj(pb, s, f"{name}.wgrad", m, n, k, d, tag, gemm=(k, n, m))


def _comm(pb: ProgramBuilder, name: str, op: CollectiveKind, axes: tuple[str, ...], size: int, deps: tuple[int, ...],
          tag: Tag, dtype: str, host_sync: bool = False) -> int:
    return pb.add(CommOp(name=name, op=op, axes=axes, size_bytes=int(size), deps=deps, dtype=dtype,
                         tag=tag, host_sync=host_sync))


def _wire_dtype(s: MoESpec, dispatch: bool) -> str:
    return "fp8" if dispatch and s.dispatch_bytes < 2 else ("bf16" if s.act_bytes == 2 else "fp32")


def _exchange(pb: ProgramBuilder, s: MoESpec, name: str, dep: int, tag: Tag, dispatch: bool,
              also: tuple[int, ...] = ()) -> int:
    """Token exchange toward the experts (`dispatch`) or back (combine), the All-to-All part; it
    waits for `dep` and the ops in `also`."""
    size = s.dispatch_size if dispatch else s.combine_size
    dtype = _wire_dtype(s, dispatch)
    if s.dispatcher == "allgather":
        gathered = s.tokens * s.ep * s.etp * s.width * s.act_bytes
        if s.ep * s.etp == 1:
            return dep
        return _comm(pb, f"{name}.{'allgather' if dispatch else 'reducescatter'}",
                     "allgather" if dispatch else "reducescatter", ("etp", "ep"), gathered, (dep, *also), tag, dtype)
    if s.ep == 1:
        return dep
    if s.dispatcher == "deepep" and s.ep_nodes > 1:
        inter = int(s.tokens * s.nodes_hit * s.width * (s.dispatch_bytes if dispatch else s.act_bytes))
        first, second = ("ep_inter", "ep_intra") if dispatch else ("ep_intra", "ep_inter")
        sizes = {"ep_inter": inter, "ep_intra": size}
        a = _comm(pb, f"{name}.deepep.{first}", "alltoall", (first,), sizes[first], (dep, *also), tag, dtype)
        return _comm(pb, f"{name}.deepep.{second}", "alltoall", (second,), sizes[second], (a,), tag, dtype)
    return _comm(pb, f"{name}.alltoall", "alltoall", ("ep",), size, (dep, *also), tag, dtype)


def _routing_map_allgather(pb: ProgramBuilder, s: MoESpec, name: str, dep: int, tag: Tag) -> int:
    """HybridEP's metadata preprocessing before every forward dispatch: each rank's T×E routing map
    (one bool byte per token and expert) AllGathered over the EP group
    (``torch.distributed.all_gather_into_tensor(global_routing_map, routing_map, self.group)`` in
    deepseek-ai/DeepEP ``deep_ep/hybrid_ep_buffer.py``, ``dispatch_with_permute`` without a
    handle), which the dispatch waits for. Backward reuses the handle: no gather.

    The host then blocks: without a static budget of permuted rows (Megatron-Core's
    ``MoEFlexTokenDispatcher`` passes ``num_permuted_tokens`` only under
    ``moe_expert_rank_capacity_factor`` or drop-and-pad, neither set by these recipes;
    token_dispatcher.py at Megatron-LM 4415119: "HybridEP sizes buffers dynamically (CPU sync in
    dispatch)"), ``hybrid_ep_dispatch`` calls ``dispatch_with_permute`` with ``non_blocking=False``
    (moe/fused_a2a.py), which synchronises the stream to read the received-token counts from pinned
    memory before it launches the dispatch (deepseek-ai/DeepEP hybrid-ep branch,
    docs/Hybrid-EP_Implementation.md, "Non-blocking Mode"): the gather, the metadata step it feeds,
    is a host synchronisation (``CommOp.host_sync``)."""
    if not s.hybridep or s.ep * s.etp == 1:
        return dep
    return _comm(pb, f"{name}.routing_map.allgather", "allgather", ("etp", "ep"),
                 s.tokens * s.experts * s.ep * s.etp, (dep,), tag, "bf16", host_sync=True)


def _deepep_host_sync(pb: ProgramBuilder, s: MoESpec, before: int) -> None:
    """DeepEP's normal-mode dispatch blocks the host on every forward dispatch (the recomputed
    one too; backward reuses the handle and does not): ``Buffer::intranode_dispatch`` /
    ``internode_dispatch`` (deepseek-ai/DeepEP csrc/deep_ep.cpp) launch ``notify_dispatch`` on
    the communication stream, which first waits for the compute stream, then busy-wait on the
    CPU until the kernel has written the received-token counts to host-mapped memory
    (``moe_recv_counter``, ``moe_recv_expert_counter``; "DeepEP error: CPU recv timeout"), to
    size the receive buffers before the dispatch kernel is launched. The caller is told so:
    "the CPU will wait for GPU's signal to arrive, so this is not compatible with CUDA graph"
    (``FusedDispatch.forward``, megatron/core/transformer/moe/fused_a2a.py of Megatron-Core and
    nemo_automodel/components/moe/megatron/fused_a2a.py of NeMo AutoModel at 037d6c9f, which
    then builds ``tokens_per_expert = torch.tensor(num_recv_tokens_per_expert_list)`` on the
    CPU, so grouped_gemm's cuBLAS path needs no second device-to-host copy). The host therefore
    waits for the GPU to finish the op the dispatch waits for (``before``); HybridEP is not
    DeepEP's normal mode."""
    if s.dispatcher != "deepep" or s.hybridep or s.ep == 1:
        return
    op = pb.ops[before]
    if isinstance(op, (ComputeOp, CommOp)):
        pb.ops[before] = replace(op, host_sync=True)


def _counts_allgather(pb: ProgramBuilder, s: MoESpec, name: str, dep: int, tag: Tag) -> int:
    """The alltoall dispatcher's preprocessing before every forward dispatch: each rank's tokens per
    expert (E int64 counts, ``routing_map.sum(dim=0).long()``) AllGathered over the expert-TP × EP
    group (``gather_from_sequence_parallel_region(num_local_tokens_per_expert,
    group=self.tp_ep_group)`` in ``MoEAlltoAllTokenDispatcher.preprocess``,
    megatron/core/transformer/moe/token_dispatcher.py at Megatron-LM 4415119), from which the
    All-to-All's split sizes come, so the dispatch waits for it. Backward reuses the splits.
    The splits are read on the host: without drop-and-pad, ``preprocess`` sets
    ``cuda_sync_point = "before_ep_alltoall"`` (dropless, "A synchronization is needed before
    expert parallel AlltoAll communication to get the `input_splits` and `output_splits` CPU
    values") or ``"before_permutation_1"`` (capacity without padding), and
    ``_maybe_dtoh_and_synchronize`` blocks the host there on the copy of the gathered counts:
    the gather is a host synchronisation (``CommOp.host_sync``)."""
    if s.dispatcher != "alltoall" or s.ep * s.etp == 1:
        return dep
    return _comm(pb, f"{name}.counts.allgather", "allgather", ("etp", "ep"), 8 * s.experts * s.ep * s.etp, (dep,),
                 tag, "fp32", host_sync=s.ep > 1)


def _probs_exchange(pb: ProgramBuilder, s: MoESpec, name: str, dep: int, tag: Tag) -> int:
    """The alltoall dispatcher's second All-to-All: one router probability per routed row, in the
    activation dtype (the router's logits dtype), after the tokens' (forward) or their gradients
    (backward, the mirror)."""
    if s.dispatcher != "alltoall" or s.ep == 1:
        return dep
    size = int(s.tokens * s.top_k * s.load * s.act_bytes)
    return _comm(pb, f"{name}.probs.alltoall", "alltoall", ("ep",), size, (dep,), tag, _wire_dtype(s, False))


def _sort_chunks(pb: ProgramBuilder, s: MoESpec, name: str, dep: int, tag: Tag) -> int:
    """Megatron's permutation 2 (``sort_chunks_by_idxs``) of the alltoall dispatcher with more
    than one local expert: the received rows (and their probabilities) read and written once."""
    if s.dispatcher != "alltoall" or s.ep == 1 or s.local_experts == 1:
        return dep
    return _mem(pb, name, 2 * s.rows * (s.width + 1) * s.act_bytes, (dep,), tag)


def _expert_bias(pb: ProgramBuilder, s: MoESpec, name: str, dep: int, tag: Tag, backward: bool) -> int:
    """The experts' output bias weighted by each row's router probability, as Megatron-Core adds it
    (``TEGroupedMLP._apply_bias``, megatron/core/transformer/moe/experts.py at 4415119: FC2 is built
    with ``skip_bias_add=True``, FC1's bias stays in TransformerEngine's GEMM epilogue):
    ``torch.cat([t + b * p for t, b, p in zip(split(out, tokens_per_expert), biases,
    split(probs, tokens_per_expert))])``. Forward, per local expert, ``b * p`` writes an [n_e, h]
    product (1 unit of the expert's rows × h) and the add reads it and the rows and writes the sum
    (3), then the concatenation reads and writes every row (2): 6 units in 2·E_local + 1 kernels.
    Backward, autograd's MulBackward per expert: ``grad * p`` and ``grad * b`` (read and write
    each) and their reductions to the bias [h] and the probabilities [n_e] (one read each), and the
    bias gradient's accumulation into its main_grad; SplitBackward concatenates the rows' gradients
    (read and write) and the probabilities': 8 units in 5·E_local + 2 kernels. A unit is rows × h
    activations (h / etp per expert-TP rank is not split: FC2's output is the full hidden size)."""
    if not s.bias_per_expert:
        return dep
    e = s.local_experts
    unit = s.rows * s.width * s.act_bytes
    nbytes, kernels = (8 * unit, 5 * e + 2) if backward else (6 * unit, 2 * e + 1)
    return _mem(pb, name, nbytes, (dep,), tag, count=kernels)


def _fc1_bias(pb: ProgramBuilder, s: MoESpec, name: str, dep: int, tag: Tag, backward: bool) -> int:
    """FC1's bias where the experts' grouped GEMM has no bias epilogue: NeMo AutoModel's
    ``GroupedExpertsDeepEP`` with ``experts: gmm`` (grouped_gemm's ``ops.gmm``) adds it with
    ``_apply_bias(output1, gate_up_proj_bias, tokens_per_expert)``, i.e. ``torch.cat([t + b for t, b
    in zip(split(out, tokens_per_expert), biases)])`` (nemo_automodel/components/moe/experts.py at
    cb976544). A unit is rows × FC1's output width (gate and up). Forward, per local expert, the add
    reads the rows and writes the sum (2), then the concatenation reads and writes every row (2):
    4 units in E_local + 1 kernels. Backward, AddBackward hands the gradient through and reduces it
    to each expert's bias (one read), and SplitBackward concatenates the rows' gradients (read and
    write): 3 units in E_local + 1 kernels."""
    if not s.bias_fc1_per_expert:
        return dep
    e = s.local_experts
    unit = s.rows * s.up * s.act_bytes
    nbytes = (3 if backward else 4) * unit
    return _mem(pb, name, nbytes, (dep,), tag, count=e + 1)


def _glu_clamp(pb: ProgramBuilder, s: MoESpec, name: str, dep: int, tag: Tag, backward: bool) -> int:
    """GPT-OSS's clamp (``model.glu_clamp``) as Megatron-Core's bias-activation fusion path runs it
    before the fused activation: ``weighted_bias_quick_geglu_impl`` (megatron/core/fusions/
    fused_bias_geglu.py at Megatron-LM 4415119) chunks FC1's output, clamps the gate half from above
    and the linear half to ±limit, each into a new tensor, and concatenates them again. A unit is
    rows × f (one half) elements of B bytes. Forward: two clamps (read and write a half: 2B each)
    and the concatenation (read and write both halves: 4B), 8B per unit in 3 kernels. Backward:
    the concatenation's gradient is split into views; PyTorch's ``clamp_backward`` is a ``where``
    over a comparison, one for the gate half (compare: read B, write a bool; where: read the bool
    and B, write B: 3B + 2) and two joined by ``logical_and_`` for the linear half (4B + 6); the
    chunk's backward concatenates the halves' gradients (4B): 11B + 8 per unit in 7 kernels.
    ``recompute_modules: moe_act`` runs the forward again in backward (its checkpoint wraps the
    whole activation function)."""
    if not s.clamp_unfused:
        return dep
    unit = s.rows * (s.ffn // s.etp)
    B = s.act_bytes
    nbytes, kernels = ((11 * B + 8) * unit, 7) if backward else (8 * B * unit, 3)
    return _mem(pb, name, nbytes, (dep,), tag, count=kernels)


def _fp8_padding(pb: ProgramBuilder, s: MoESpec, name: str, dep: int, tag: Tag) -> int:
    """One of TransformerEngine's ``fused_multi_row_padding`` / ``fused_multi_row_unpadding``
    copies of the routed rows (:func:`fp8_row_padding`): every row of h activations read and
    written once. Forward pads FC1's input and the probabilities and unpads FC2's output; backward
    runs each copy's mirror (autograd of ``_Fp8Padding`` unpads, of ``_Fp8Unpadding`` pads). The
    probabilities' copy is a kernel of its own, with the hidden rows' one where it applies."""
    if not s.fp8_padding:
        return dep
    probs = name.endswith(".pad.fwd") or name.endswith(".pad.bwd")
    nbytes = 2 * s.rows * (s.width + (1 if probs else 0)) * s.act_bytes
    return _mem(pb, name, nbytes, (dep,), tag, count=2 if probs else 1)


def router_extra_cost(logit_bytes: int, random_logits: bool, aux_loss: bool, backward: bool) -> tuple[float, int]:
    """Bytes per routing-map element (token x expert) and kernels of Megatron-Core's router beside
    the gating GEMM and the fused top-k (``TopKRouter.forward`` / ``routing``,
    megatron/core/transformer/moe/router.py and moe_utils.py at Megatron-LM 4415119, with
    ``moe_router_fusion``), logits of ``logit_bytes``.

    ``random_logits`` (``moe_router_force_load_balancing``, ``RandomSTE``): ``logits.clone()``
    (read and write) and ``.normal_()`` (write): 3 units in 2 kernels forward; its backward hands
    the gradient through.

    ``aux_loss`` (``aux_loss`` or ``seq_aux_loss``): forward, TE's
    ``fused_compute_score_for_moe_aux_loss`` (reads the logits, writes fp32 scores and a bool
    routing map: L + 4 + 1 bytes), the tokens-per-expert sum of that map (1), TE's
    ``fused_moe_aux_loss`` (reads the scores, 4), and the tracker's ``aux_loss / coeff`` and ``+=``
    on scalars: L + 10 bytes in 5 kernels. Backward, ``MoEAuxLossAutoScaler`` (``ones_like`` x the
    scale, two scalar kernels), the loss's backward (writes fp32 score gradients, 4), the scores'
    backward (reads them and the saved scores, writes the logits' gradient: 8 + L) and that
    gradient summed with the top-k's (3 L): 12 + 4 L bytes in 5 kernels."""
    L = logit_bytes
    nbytes, kernels = 0.0, 0
    if random_logits and not backward:
        nbytes, kernels = 3.0 * L, 2
    if aux_loss:
        nbytes += (12.0 + 4 * L) if backward else (L + 10.0)
        kernels += 5
    return nbytes, kernels


def _router_extra(pb: ProgramBuilder, s: MoESpec, name: str, dep: int, tag: Tag, random_logits: bool,
                  aux_loss: bool, backward: bool) -> int:
    """The router kernels of :func:`router_extra_cost` on this rank's T x E routing map."""
    per, kernels = router_extra_cost(s.act_bytes, random_logits, aux_loss, backward)
    if kernels == 0:
        return dep
    nbytes = per * s.tokens * s.experts
    return _mem(pb, name, nbytes, (dep,), tag, count=kernels)


def _etp(pb: ProgramBuilder, s: MoESpec, name: str, op: CollectiveKind, dep: int, tag: Tag) -> int:
    """Expert-TP AllGather-V / ReduceScatter-V of the rows (alltoall and deepep dispatchers)."""
    if s.etp == 1 or s.dispatcher == "allgather":
        return dep
    return _comm(pb, f"{name}.{op}", op, ("etp",), s.rows * s.width * s.act_bytes, (dep,), tag,
                 "bf16" if s.act_bytes == 2 else "fp32")


def forward(pb: ProgramBuilder, s: MoESpec, tp: tensor_parallel.TPContext, layer: int, mb: int, after: int) -> int:
    """Router, dispatch, grouped expert GEMMs, combine and shared experts; returns the op after
    which the block's output (routed + shared) is ready."""
    tag = _tag("fwd", layer, mb)
    p = f"L{layer}.moe"
    T, h, B, w = s.tokens, s.hidden, s.act_bytes, s.width
    into = _latent_proj(pb, s, f"{p}.latent.fc1.fwd", T, w, h, after, tag)
    router = pb.add(ComputeOp(name=f"{p}.router.fwd", kind="gemm", flops=2.0 * T * s.experts * h,
                              hbm_bytes=(T * h + h * s.experts + T * s.experts) * B, deps=(into,),
                              gemm=(T, s.experts, h), dtype="bf16" if B == 2 else "fp32", tag=tag))
    router = _router_extra(pb, s, f"{p}.router.random.fwd", router, tag, s.random_logits, False, backward=False)
    topk = _mem(pb, f"{p}.topk.fwd", 2 * T * s.experts * 4, (router,), tag)
    topk = _router_extra(pb, s, f"{p}.router.aux_loss.fwd", topk, tag, False, s.aux_loss, backward=False)
    permute = _mem(pb, f"{p}.permute.fwd", T * w * B + T * s.top_k * w * B, (topk,), tag)
    _deepep_host_sync(pb, s, permute)
    permute = _routing_map_allgather(pb, s, f"{p}.dispatch.fwd", permute, tag)
    # issued after the permutation, next to the exchange it feeds (one run of exchanges for the
    # combined 1F1B's node split, moe_overlap.nodes); it waits only for the routing
    counts = _counts_allgather(pb, s, f"{p}.dispatch.fwd", topk, tag)
    dispatched = _exchange(pb, s, f"{p}.dispatch.fwd", permute, tag, dispatch=True,
                           also=(counts,) if counts != topk else ())
    shared_done = -1
    if s.shared_ffn and s.shared_overlap:
        start = len(pb)
        shared_done = _shared_fwd(pb, s, tp, after)
        hold_sms(pb, range(start, len(pb)), s.beside_exchange_sm_fraction)
    dispatched = _probs_exchange(pb, s, f"{p}.dispatch.fwd", dispatched, tag)
    rows = _etp(pb, s, f"{p}.dispatch.fwd", "allgather", dispatched, tag)
    if s.shared_ffn and s.a2a_overlap:
        shared_done = _shared_fwd(pb, s, tp, after)
    rows = _sort_chunks(pb, s, f"{p}.sort_chunks.fwd", rows, tag)
    rows = _fp8_padding(pb, s, f"{p}.experts.fp8.pad.fwd", rows, tag)
    fc1 = expert_gemm(pb, s, f"{p}.experts.fc1.fwd", s.rows, s.up, w, (rows,), tag)
    fc1 = _fc1_bias(pb, s, f"{p}.experts.fc1_bias.fwd", fc1, tag, backward=False)
    fc1 = _glu_clamp(pb, s, f"{p}.experts.act.clamp.fwd", fc1, tag, backward=False)
    act = _mem(pb, f"{p}.experts.act.fwd", (3 if s.gated else 2) * s.rows * s.ffn // s.etp * B, (fc1,), tag)
    fc2 = expert_gemm(pb, s, f"{p}.experts.fc2.fwd", s.rows, w, s.ffn // s.etp, (act,), tag)
    fc2 = _fp8_padding(pb, s, f"{p}.experts.fp8.unpad.fwd", fc2, tag)
    fc2 = _expert_bias(pb, s, f"{p}.experts.bias.fwd", fc2, tag, backward=False)
    fc2 = _sort_chunks(pb, s, f"{p}.unsort_chunks.fwd", fc2, tag)
    back = _etp(pb, s, f"{p}.combine.fwd", "reducescatter", fc2, tag)
    combined = _exchange(pb, s, f"{p}.combine.fwd", back, tag, dispatch=False)
    out = _mem(pb, f"{p}.unpermute.fwd", T * s.top_k * w * B + T * w * B, (combined,), tag)
    out = _latent_proj(pb, s, f"{p}.latent.fc2.fwd", T, h, w, out, tag)
    if s.shared_ffn:
        if shared_done < 0:
            shared_done = _shared_fwd(pb, s, tp, out)
        out = _mem(pb, f"{p}.shared_add.fwd", 3 * T * h * B, (out, shared_done), tag)
    return out


def backward(pb: ProgramBuilder, s: MoESpec, tp: tensor_parallel.TPContext, layer: int, mb: int, after: int) -> int:
    """The mirror of :func:`forward`; returns the op after which the input gradient and every
    weight gradient of the block are ready."""
    tag = _tag("bwd", layer, mb)
    p = f"L{layer}.moe"
    T, h, B, w = s.tokens, s.hidden, s.act_bytes, s.width
    grad = _latent_proj_bwd(pb, s, f"{p}.latent.fc2", T, h, w, after, tag)
    unpermute = _mem(pb, f"{p}.unpermute.bwd", T * s.top_k * w * B + T * w * B, (grad,), tag)
    to_experts = _exchange(pb, s, f"{p}.combine.bwd", unpermute, tag, dispatch=False)
    shared_done = -1
    if s.shared_ffn and s.shared_overlap:
        start = len(pb)
        shared_done = _shared_bwd(pb, s, tp, after)
        hold_sms(pb, range(start, len(pb)), s.beside_exchange_sm_fraction)
    rows = _etp(pb, s, f"{p}.combine.bwd", "allgather", to_experts, tag)
    if s.shared_ffn and s.a2a_overlap:
        shared_done = _shared_bwd(pb, s, tp, after)
    rows = _sort_chunks(pb, s, f"{p}.unsort_chunks.bwd", rows, tag)
    f = s.ffn // s.etp
    if s.recompute_act:
        # Megatron's CheckpointWithoutOutput around the activation (TEGroupedMLP, moe_act): the
        # output FC2 consumed is dropped in forward and rebuilt when the gradient reaches FC2's
        # output, before FC2's backward, which needs it for the wgrad
        rows = _glu_clamp(pb, s, f"{p}.experts.act.clamp.recompute", rows, tag, backward=False)
        rows = _mem(pb, f"{p}.experts.act.recompute", (3 if s.gated else 2) * s.rows * (s.ffn // s.etp) * B, (rows,),
                    tag)
    rows = _expert_bias(pb, s, f"{p}.experts.bias.bwd", rows, tag, backward=True)
    rows = _fp8_padding(pb, s, f"{p}.experts.fp8.unpad.bwd", rows, tag)
    fc2_d = expert_gemm(pb, s, f"{p}.experts.fc2.dgrad", s.rows, f, w, (rows,), tag)
    fc2_w = expert_gemm(pb, s, f"{p}.experts.fc2.wgrad", s.rows, w, f, (fc2_d,), tag, wgrad=True)
    act = _mem(pb, f"{p}.experts.act.bwd", (5 if s.gated else 3) * s.rows * f * B, (fc2_w,), tag)
    act = _glu_clamp(pb, s, f"{p}.experts.act.clamp.bwd", act, tag, backward=True)
    act = _fc1_bias(pb, s, f"{p}.experts.fc1_bias.bwd", act, tag, backward=True)
    fc1_d = expert_gemm(pb, s, f"{p}.experts.fc1.dgrad", s.rows, w, s.up, (act,), tag)
    fc1_w = expert_gemm(pb, s, f"{p}.experts.fc1.wgrad", s.rows, s.up, w, (fc1_d,), tag, wgrad=True)
    # The grouped linear's backward returns its input and weight gradients together (dgrad, then
    # wgrad), so autograd reaches the dispatcher's backward only after the wgrad (no delay_wgrad).
    padded_back = _fp8_padding(pb, s, f"{p}.experts.fp8.pad.bwd", fc1_w, tag)
    sorted_back = _sort_chunks(pb, s, f"{p}.sort_chunks.bwd", padded_back, tag)
    back = _etp(pb, s, f"{p}.dispatch.bwd", "reducescatter", sorted_back, tag)
    back = _probs_exchange(pb, s, f"{p}.dispatch.bwd", back, tag)
    returned = _exchange(pb, s, f"{p}.dispatch.bwd", back, tag, dispatch=True)
    permute = _mem(pb, f"{p}.permute.bwd", T * s.top_k * w * B + T * w * B, (returned,), tag)
    permute = _latent_proj_bwd(pb, s, f"{p}.latent.fc1", T, w, h, permute, tag)
    permute = _router_extra(pb, s, f"{p}.router.aux_loss.bwd", permute, tag, False, s.aux_loss, backward=True)
    topk = _mem(pb, f"{p}.topk.bwd", 2 * T * s.experts * 4, (permute,), tag)
    r_d = pb.add(ComputeOp(name=f"{p}.router.dgrad", kind="gemm", flops=2.0 * T * s.experts * h,
                           hbm_bytes=(T * h + h * s.experts + T * s.experts) * B, deps=(topk,),
                           gemm=(T, h, s.experts), dtype="bf16" if B == 2 else "fp32", tag=tag))
    r_w = pb.add(ComputeOp(name=f"{p}.router.wgrad", kind="gemm", flops=2.0 * T * s.experts * h,
                           hbm_bytes=(T * h + h * s.experts + T * s.experts) * B, deps=(r_d,),
                           gemm=(h, s.experts, T), dtype="bf16" if B == 2 else "fp32", tag=tag))
    # the input's gradients summed: the router's and the shared experts' (and, under LatentMoE,
    # the projection's, one more add)
    adds = 3 * T * h * B * (2 if s.latent else 1)
    if s.shared_ffn:
        if shared_done < 0:
            shared_done = _shared_bwd(pb, s, tp, r_w)
        out = _mem(pb, f"{p}.grad_add.bwd", adds, (r_w, shared_done, fc1_w), tag)
    else:
        out = _mem(pb, f"{p}.grad_add.bwd", adds, (r_w, fc1_w), tag)
    return out


def _shared_fwd(pb: ProgramBuilder, s: MoESpec, tp: tensor_parallel.TPContext, after: int) -> int:
    """Shared experts: a TP dense MLP (Megatron SharedExpertMLP) of all shared experts together."""
    up = (2 if s.gated else 1) * s.shared_ffn // s.tp
    fc1 = tensor_parallel.column_parallel_fwd(pb, tp, "moe.shared.fc1", up, after)
    act = _mem(pb, f"L{tp.layer}.moe.shared.act.fwd", (3 if s.gated else 2) * tp.tokens * s.shared_ffn // s.tp * s.act_bytes,
               (fc1,), _tag("fwd", tp.layer, tp.mb_index))
    return tensor_parallel.row_parallel_fwd(pb, tp, "moe.shared.fc2", s.shared_ffn // s.tp, act)


def _shared_bwd(pb: ProgramBuilder, s: MoESpec, tp: tensor_parallel.TPContext, after: int) -> int:
    up = (2 if s.gated else 1) * s.shared_ffn // s.tp
    fc2 = tensor_parallel.row_parallel_bwd(pb, tp, "moe.shared.fc2", s.shared_ffn // s.tp, after)
    act = _mem(pb, f"L{tp.layer}.moe.shared.act.bwd", (5 if s.gated else 3) * tp.tokens * s.shared_ffn // s.tp * s.act_bytes,
               (fc2,), _tag("bwd", tp.layer, tp.mb_index))
    return tensor_parallel.column_parallel_bwd(pb, tp, "moe.shared.fc1", up, act)

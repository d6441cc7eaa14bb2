"""Per-rank shapes of a scenario, worked out once: what every builder and the memory model read.

In the spirit of torchtitan's ``ParallelDims`` (torchtitan/distributed/parallel_dims.py): the
degrees of the plan and the sizes they imply on one rank live in one frozen record,
:class:`RankShapes`, and the parameters one rank holds are listed once, module by module
(:func:`layer_unit`, :func:`embedding_unit`, :func:`head_unit`, :func:`stage_units`). The
schedule packs those modules into gradient buckets and ZeRO AllGathers
(:mod:`simulator.schedule.data_parallel`, :mod:`simulator.schedule.zero`) and the memory model
(:mod:`simulator.schedule.memory`) sums the same modules, so the bytes a rank reduces and the
bytes it keeps cannot drift apart.

Sizes per rank (Megatron-Core's conventions, arXiv:2205.05198):

* a sequence of ``s`` tokens is split over ``cp x ulysses`` (``seq_local``); the TP GEMMs see
  ``b x seq_local`` rows (``tokens``);
* with sequence parallelism in effect the tensors outside the TP region (norms, residual, dropout,
  the pipeline message, the MoE block's input) hold ``tokens / tp`` rows (``sp_tokens``);
* each TP rank owns ``heads / tp`` query heads and ``kv_heads / tp`` KV heads (whole heads,
  ``ColumnParallelLinear`` over the QKV output);
* TP splits the QKV / output projections, the MLP and the shared experts, the word embedding
  (``VocabParallelEmbedding``) and the output layer; norms and the router are replicated; MLA's
  down projections are replicated (Megatron builds them ``duplicated``, ``multi_latent_attention.py``),
  and so are LatentMoE's h <-> latent projections (``fc1_latent_proj`` / ``fc2_latent_proj``,
  ``TELinear(parallel_mode="duplicated")`` in megatron/core/transformer/moe/moe_layer.py);
  a rank holds ``experts / ep`` routed experts, each split over the expert-TP degree ``etp``
  (``TEGroupedMLP``); the first pipeline stage holds the embedding, the last the final norm and
  the output layer, plus a copy of the word embedding when it is tied and ``pp > 1`` (Megatron's
  ``shared_embedding_or_output_weight``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

from simulator.config.scenario import Scenario
from simulator.schedule.flops import embedding_params, expert_params, mlp_matrices
from simulator.schedule.mamba import MambaShape

_T = TypeVar("_T")


def _for_last_scenario(fn: Callable[[Scenario], _T]) -> Callable[[Scenario], _T]:
    """``fn`` kept for the last scenario it was asked about, by identity (a Scenario is frozen):
    the memory model asks for a plan's shapes and layer split on every stage of every plan a
    sweep screens (a third of the screening's time went to the layer split alone)."""
    last: list[Any] = [None, None]

    def of(scn: Scenario) -> _T:
        if last[0] is not scn:
            value = fn(scn)
            last[:] = [scn, value]
        return last[1]
    return of


@dataclass(frozen=True)
class RankShapes:
    """Degrees of the plan and the per-rank sizes they imply (module docstring)."""

    tp: int
    cp: int
    ulysses: int
    pp: int
    vp: int
    dp: int
    ep: int
    etp: int  # expert tensor-parallel degree (Megatron's expert_tensor_parallel_size; tp when unset)
    expert_dp: int  # ranks of one stage holding the same experts (expert_data_parallel_group)
    ep_intra: int  # EP ranks inside one node (DeepEP forwards over NVLink among them)
    ep_nodes: int  # nodes the EP group spans (DeepEP sends over RDMA once per node)
    sequence_parallel: bool  # in effect: asked for and tp > 1 (Parallel.sp_enabled)
    micro_batch_size: int  # b: sequences per micro-batch
    seq_len: int  # s: tokens of one sequence
    seq_local: int  # s / (cp x ulysses): tokens of a sequence on this rank before the SP split
    tokens: int  # b x seq_local: rows of every TP GEMM
    sp_tokens: int  # tokens / tp under SP, else tokens: rows outside the TP region
    heads: int  # query heads per TP rank (before any Ulysses split)
    kv_heads: int  # KV heads per TP rank
    ffn: int  # FFN features of a dense MLP per TP rank (ffn_hidden / tp; FC1 has twice as many when gated)
    vocab: int  # output-layer columns (logits) per TP rank: vocab // tp, unpadded (Megatron pads to 128·tp)
    model_parallel: int  # tp x cp x ulysses x pp: GPUs of one model replica
    grad_shard: int  # dp x cp x ulysses: the gradient-reduction / ZeRO shard group (dense params)
    layer_split: int  # tp x cp x ulysses: ranks one layer's compute of a micro-batch is split over

    @classmethod
    def of(cls, scn: Scenario) -> "RankShapes":
        return _rank_shapes(scn)

    @classmethod
    def _of(cls, scn: Scenario) -> "RankShapes":
        m, t, p = scn.model, scn.training, scn.parallel
        sp = p.sp_enabled
        seq_local = m.seq_len // (p.cp * p.ulysses)
        tokens = t.micro_batch * seq_local
        # the EP ranks of a node are the etp-strided ranks of its GPUs (Megatron's tp-ep-dp-pp order);
        # HybridEP's hierarchy is the NVLink domain instead (hybridep_domain_gpus), of which an EP group
        # larger than one domain holds a whole number only where the two divide (a rack of 72 GPUs and
        # EP 128: groups of 8 stay on NVLink; in Slurm segments of 16 trays, 64)
        domain = hybridep_domain_gpus(scn) // p.expert_tp
        ep_intra = max(1, min(p.ep, domain) if domain <= scn.gpus_per_node or p.ep <= domain
                       else math.gcd(p.ep, domain))
        return cls(tp=p.tp, cp=p.cp, ulysses=p.ulysses, pp=p.pp, vp=p.vp, dp=scn.dp, ep=p.ep, etp=p.expert_tp,
                   expert_dp=scn.expert_dp if m.moe else 1, ep_intra=ep_intra, ep_nodes=p.ep // ep_intra,
                   sequence_parallel=sp, micro_batch_size=t.micro_batch,
                   seq_len=m.seq_len, seq_local=seq_local, tokens=tokens, sp_tokens=tokens // p.tp if sp else tokens,
                   heads=m.heads // p.tp, kv_heads=m.kv_heads // p.tp, ffn=m.ffn_hidden // p.tp,
                   vocab=m.vocab // p.tp, model_parallel=p.model_parallel,
                   grad_shard=scn.dp * p.cp * p.ulysses, layer_split=p.tp * p.cp * p.ulysses)


_rank_shapes = _for_last_scenario(RankShapes._of)


# ---------------------------------------------------------------------------------------------
# parameters per module and per rank


@dataclass(frozen=True)
class Module:
    """One parameter tensor (as frameworks hook it) with its local (TP-sharded) element count."""

    name: str
    numel: int
    block: str  # attn | mlp | emb | head: which compute block uses it
    expert: bool = False  # routed-expert weights: reduced and sharded over the expert-DP group


@dataclass(frozen=True)
class ParamUnit:
    """The parameters of the embedding, one transformer layer, or the LM head, on one rank."""

    name: str
    layer: int | None
    modules: tuple[Module, ...]
    # a layer run again with another unit's weights (a repeated MTP depth): the modules it calls,
    # which FSDP2 gathers and reduce-scatters per call, held and updated with their own unit
    shares: tuple[Module, ...] = ()

    @property
    def numel(self) -> int:
        return sum(m.numel for m in self.modules)


@dataclass(frozen=True)
class MlaWeights:
    """Weights of one multi-head latent attention block (DeepSeek-V2, arXiv:2405.04434 §2.1) by
    how tensor parallelism treats them (Megatron-Core ``multi_latent_attention.py``)."""

    down: int  # h→r_q (with query compression) and h→r_kv+d_r: replicated on every TP rank
    norms: int  # the LayerNorms of the query and KV latents: replicated
    up: int  # r_q→a·(d+d_r) (or h→a·(d+d_r)) and r_kv→a·(d+d_v): column-parallel
    out: int  # the output projection a·d_v→h: row-parallel


def mla_weights(scn: Scenario) -> MlaWeights:
    m = scn.model
    h, a, d, d_r, d_v = m.hidden, m.heads, m.head_dim, m.qk_rope_head_dim, m.v_head_dim
    q_r, kv_r = m.q_lora_rank, m.kv_lora_rank
    return MlaWeights(down=(h * q_r if q_r else 0) + h * (kv_r + d_r), norms=q_r + kv_r,
                      up=(q_r if q_r else h) * a * (d + d_r) + kv_r * a * (d + d_v), out=a * d_v * h)


# layer_unit by what it reads: the model (frozen, by identity, kept alive by its entry), tp, ep,
# the expert TP degree and the layer. A sweep's plans share the model, and its bound, memory
# model and schedules ask for the same layers of every plan of one tp again and again.
_LAYER_UNITS: dict[tuple, tuple[Any, "ParamUnit"]] = {}
_LAYER_UNITS_KEPT = 4096


def layer_unit(scn: Scenario, layer: int) -> ParamUnit:
    """Parameters of transformer layer `layer` on one rank, one :class:`Module` per tensor; a
    hybrid model's layer holds its block's norm and its mixer, attention or MLP alone."""
    m, p = scn.model, scn.parallel
    key = (id(m), p.tp, p.ep, p.expert_tp, layer)
    hit = _LAYER_UNITS.get(key)
    if hit is not None and hit[0] is m:
        return hit[1]
    if len(_LAYER_UNITS) >= _LAYER_UNITS_KEPT:
        _LAYER_UNITS.clear()
    unit = _layer_unit(scn, layer)
    _LAYER_UNITS[key] = (m, unit)
    return unit


def _layer_unit(scn: Scenario, layer: int) -> ParamUnit:
    m, p = scn.model, scn.parallel
    t, h, d = p.tp, m.hidden, m.head_dim
    block = m.block(layer)
    if block == "M":  # the Mamba2 mixer: every tensor sharded over tp with its heads (schedule/mamba.py)
        mods = [Module("ln1", h, "attn"), Module("mamba", MambaShape.of(m, t).params, "attn")]
    elif m.mla:
        w = mla_weights(scn)
        mods = [Module("ln1", h, "attn"), Module("mla_down", w.down + w.norms, "attn"),
                Module("mla_up", w.up // t, "attn"), Module("o", w.out // t, "attn"), Module("ln2", h, "mlp")]
    else:
        mods = [Module("ln1", h, "attn"), Module("q", h * m.heads * d // t, "attn"),
                Module("k", h * m.kv_heads * d // t, "attn"), Module("v", h * m.kv_heads * d // t, "attn"),
                Module("o", m.heads * d * h // t, "attn"), Module("ln2", h, "mlp")]
    if block == "*":
        mods = mods[:-1]
    elif block in ("E", "-"):
        mods = [Module("ln2", h, "mlp")]
    names = ("gate", "up", "down") if mlp_matrices(m) == 3 else ("fc1", "fc2")
    if m.is_moe_layer(layer):
        mods.append(Module("router", h * m.experts, "mlp"))
        mods += [Module(f"shared.{n}", h * m.shared_ffn_hidden // t, "mlp") for n in names if m.shared_ffn_hidden]
        if m.moe_latent_size:  # LatentMoE's h <-> latent projections: replicated over TP ("duplicated")
            mods += [Module(f"latent.{n}", h * m.moe_latent_size, "mlp") for n in ("fc1", "fc2")]
        mods.append(Module("experts", m.experts // p.ep * expert_params(m) // p.expert_tp, "mlp", expert=True))
    elif m.has_mlp(layer):
        mods += [Module(n, h * m.ffn_hidden // t, "mlp") for n in names]
    return ParamUnit(f"L{layer}", layer, tuple(Module(f"L{layer}.{x.name}", x.numel, x.block, x.expert) for x in mods))


def embedding_unit(scn: Scenario) -> ParamUnit:
    return ParamUnit("embedding", None, (Module("embedding", embedding_params(scn.model) // scn.parallel.tp, "emb"),))


def head_unit(scn: Scenario) -> ParamUnit:
    """Final norm and output layer; with tied embeddings the output layer is the embedding itself
    on one stage, and a copy of it on the last stage when pp > 1."""
    m, p = scn.model, scn.parallel
    out = m.vocab * m.hidden if (not m.tied_embeddings or p.pp > 1) else 0
    mods = [Module("final_norm", m.hidden, "head")]
    if out:
        mods.append(Module("lm_head", out // p.tp, "head"))
    return ParamUnit("head", None, tuple(mods))


def mtp_unit(scn: Scenario, depth: int) -> ParamUnit:
    """The parameters of multi-token-prediction depth `depth` before its transformer layer:
    ``enorm`` and ``hnorm`` (RMSNorms of the shifted token embedding and of the hidden state) and
    ``eh_proj``, the column-parallel 2h -> h projection of their concatenation
    (megatron/core/transformer/multi_token_prediction.py, ``MultiTokenPredictionLayer``); with
    pp > 1 the stage also holds a copy of the input embedding (``GPTModel`` builds it where
    ``pre_process or mtp_process``)."""
    m, p = scn.model, scn.parallel
    h = m.hidden
    mods = [Module(f"mtp{depth}.enorm", h, "head"), Module(f"mtp{depth}.hnorm", h, "head"),
            Module(f"mtp{depth}.eh_proj", 2 * h * h // p.tp, "head")]
    if depth == 0 and p.pp > 1:  # GPTModel builds the embedding on the MTP stage too (shared with stage 0's)
        mods.append(Module("mtp.embedding", embedding_params(m) // p.tp, "head"))
    return ParamUnit(f"mtp{depth}", None, tuple(mods))


def mtp_head_unit(scn: Scenario, depth: int) -> ParamUnit:
    """MTP depth `depth`'s own final norm after its layer; its logits use the shared output layer."""
    return ParamUnit(f"mtp{depth}.head", None, (Module(f"mtp{depth}.final_norm", scn.model.hidden, "head"),))


def mtp_layers(scn: Scenario) -> list[int]:
    """Global indices of the MTP depths' transformer layers, after the model's: layer
    ``layers + k`` is an MoE layer when the model's last one is (DeepSeek-V3), as Megatron-Core
    builds it from the decoder's last layer spec."""
    m = scn.model
    return list(range(m.layers, m.layers + m.mtp_layers))


def repeated_mtp_depths(scn: Scenario) -> range:
    """The MTP depths that run through depth 0's weights under ``model.mtp_repeated_layer``
    (NeMo AutoModel ``MTPModule.forward``, nemo_automodel/components/models/common/mtp/mtp.py at
    cb976544: ``physical_depth = 0 if use_repeated else depth``, every sublayer and its fusion
    modules; Megatron-Core ``--mtp-use-repeated-layer``): their compute runs, their parameters are
    depth 0's."""
    m = scn.model
    return range(1, m.mtp_layers) if m.mtp_repeated_layer else range(0)


def reused(unit: ParamUnit) -> ParamUnit:
    """`unit` run again with weights another unit holds: no parameters of its own to update, keep
    or reduce in a bucket. A layer's weights are ``shares``: FSDP2 unshards a module at every call
    and reshards it after (``FSDPParamGroup.pre_forward`` / ``post_forward``, and per call in
    backward ``pre_backward`` / ``post_backward``'s ReduceScatter, torch/distributed/fsdp/
    _fully_shard/_fsdp_param_group.py), so its gathers and reductions run again; the MTP fusion
    norms and projection sit in the root group, gathered once."""
    return ParamUnit(unit.name, unit.layer, (), unit.modules if unit.layer is not None else ())


def virtual_layers(scn: Scenario) -> list[list[int]]:
    """Global layer indices of every virtual stage v = chunk·pp + stage; the last one also holds
    the MTP depths' layers (Megatron-Core builds the MTP block on the stage with the loss, the
    ``m`` before ``L`` of a ``pipeline_model_parallel_layout``). New lists on every call."""
    ranges, mtp = _stage_layer_ranges(scn)
    vl = [list(r) for r in ranges]
    vl[-1] += mtp
    return vl


@_for_last_scenario
def _stage_layer_ranges(scn: Scenario) -> tuple[tuple[range, ...], list[int]]:
    """Every virtual stage's layer range, and the MTP depths' layers (:func:`virtual_layers`)."""
    out, start = [], 0
    for n in scn.virtual_stage_layers:
        out.append(range(start, start + n))
        start += n
    return tuple(out), mtp_layers(scn)


def stage_units(scn: Scenario, stage: int) -> list[list[ParamUnit]]:
    """Parameter units of each model chunk on pipeline stage `stage`, in forward order."""
    p = scn.parallel
    vl = virtual_layers(scn)
    chunks = []
    for c in range(p.vp):
        v = c * p.pp + stage
        units = [embedding_unit(scn)] if v == 0 else []
        units += [layer_unit(scn, layer) for layer in vl[v] if layer < scn.model.layers]
        if v == p.pp * p.vp - 1:
            for k, layer in enumerate(mtp_layers(scn)):
                depth = [mtp_unit(scn, k), layer_unit(scn, layer), mtp_head_unit(scn, k)]
                units += [reused(u) for u in depth] if k in repeated_mtp_depths(scn) else depth
            units.append(head_unit(scn))
        chunks.append(units)
    return chunks


def stage_layers(scn: Scenario, stage: int) -> list[int]:
    """Global indices of the transformer layers pipeline stage `stage` holds (all its chunks)."""
    vl = virtual_layers(scn)
    return [layer for c in range(scn.parallel.vp) for layer in vl[c * scn.parallel.pp + stage]]


@dataclass(frozen=True)
class StageParams:
    """Parameters one GPU of a pipeline stage holds before ZeRO sharding (TP/EP-sharded)."""

    dense: int  # everything reduced over the DP x CP x Ulysses group
    expert: int  # routed experts, reduced over the expert-DP group

    @property
    def total(self) -> int:
        return self.dense + self.expert


def stage_params(scn: Scenario, stage: int) -> StageParams:
    """The parameters of :func:`stage_units`, each kind of transformer layer (dense, MoE) counted
    once: the memory model asks for every stage of every plan a sweep screens."""
    p = scn.parallel
    units = ([embedding_unit(scn)] if stage == 0 else []) + ([head_unit(scn)] if stage == p.pp - 1 else [])
    shared = {layer for k, layer in enumerate(mtp_layers(scn)) if k in repeated_mtp_depths(scn)}
    if stage == p.pp - 1:
        units += [u for k in range(scn.model.mtp_layers) if k not in repeated_mtp_depths(scn)
                  for u in (mtp_unit(scn, k), mtp_head_unit(scn, k))]
    dense = sum(m.numel for u in units for m in u.modules if not m.expert)
    expert = sum(m.numel for u in units for m in u.modules if m.expert)
    for (d, e), n in layer_kinds(scn, [layer for layer in stage_layers(scn, stage) if layer not in shared]):
        dense, expert = dense + n * d, expert + n * e
    return StageParams(dense=dense, expert=expert)


def layer_kinds(scn: Scenario, layers: list[int]) -> list[tuple[tuple[int, int], int]]:
    """((dense, expert) parameters of one layer, how many of ``layers`` hold that many) per kind
    of layer: the layers of one kind (dense or MoE; a hybrid model's block) hold the same
    parameters."""
    count: dict[tuple[bool, str], int] = {}
    first: dict[tuple[bool, str], int] = {}
    for layer in layers:
        kind = (scn.model.is_moe_layer(layer), scn.model.block(layer))
        count[kind] = count.get(kind, 0) + 1
        first.setdefault(kind, layer)
    out = []
    for kind, n in count.items():
        mods = layer_unit(scn, first[kind]).modules
        out.append(((sum(m.numel for m in mods if not m.expert), sum(m.numel for m in mods if m.expert)), n))
    return out


def hybridep_domain_gpus(scn: Scenario) -> int:
    """The GPUs among which a DeepEP-style dispatch forwards tokens over NVLink (``RankShapes.ep_intra``).

    DeepEP's normal kernels send over RDMA to one GPU per node and forward inside the node over
    NVLink (at most ``NUM_MAX_NVL_PEERS`` = 8 peers, csrc/kernels/configs.cuh): the node. NVIDIA's
    HybridEP takes the NVLink domain as its unit (``NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN``;
    ``USE_MNNVL=1`` on GB200 NVL72, where Megatron-Bridge's performance scripts set it to the EP
    size, at most 72: scripts/performance/perf_plugins.py ``_set_nvl_domain_size`` at 21d102f5e):
    every EP rank of the domain is reached over NVLink in one exchange, and only a group that spans
    domains sends over the network. On a node-sized NVLink domain (DGX H100, B200) the two agree."""
    p = scn.parallel
    if p.moe_dispatcher == "deepep" and p.moe_deepep_backend == "hybridep":
        return scn.profile.nvlink_domain_gpus
    return scn.gpus_per_node

"""FLOPs of a transformer, per op, and the model-FLOPs convention used for MFU.

A GEMM of (m, n, k) is 2·m·n·k FLOPs. Per layer and per token (h hidden, a query heads, g KV
heads, d = h/a, f FFN size):

* QKV projection: 2·h·d·(a + 2g) (GQA shrinks K and V);
* attention core: 4·s_k·a·d per query token (QK^T and PV), times the computed fraction
  (about half under causal masking; :mod:`simulator.schedule.attention`);
* output projection: 2·a·d·h;
* MLP: 2·k_m·h·f, k_m = 3 for SwiGLU (gate, up, down), 2 for GeLU;
* logits: 2·h·V on the last stage.

Backward of a GEMM = dgrad + wgrad = 2× forward; attention backward is 2.5× forward
(FlashAttention-2). Recompute adds a forward: the whole layer (full) or the attention core
(selective, Megatron's ``recompute_granularity=selective``).

**MFU convention.** Model FLOPs per token = 6·N + 12·l·a·d·s with N the parameters that take
part in GEMMs (all layer weights plus the output layer; the input-embedding lookup has no
FLOPs) and the attention term counted for the full, unmasked score matrix. This is PaLM's
definition (arXiv:2204.02311 App. B) and equals Megatron's eq. 3 of arXiv:2104.04473 without
its recompute pass (96·B·s·l·h²·(1 + s/6h + V/16lh) with it, 72·B·s·l·h²·(1 + s/6h + V/12lh)
without) for MHA with 4h MLPs;
it excludes recompute, so it is the "model" (not "hardware") FLOPs that MFU divides, and it
ignores causal masking as both papers and NVIDIA's published model TFLOP/s do, so our MFU
compares with theirs. A sliding window (``model.sliding_window``) is ignored the same way, as
Megatron-LM's ``num_floating_point_operations`` does; the attention ops themselves count only
the band (``schedule.attention.window_fraction``).

**Mixture of Experts and MLA.** An MoE layer's MLP is a router (h×E GEMM), ``top_k`` routed
experts of size f_e per token and the shared experts (f_s together); the layer holds all E
experts (total parameters) but a token passes through k of them (active parameters), so model
FLOPs count the active ones: 6·N_active. Multi-head latent attention (DeepSeek-V2,
arXiv:2405.04434 §2.1) replaces the QKV projection by a query path h→r_q→a·(d+d_r) (or h→a·(d+d_r)
without query compression), a KV path h→(r_kv+d_r) then r_kv→a·(d+d_v), and the output
projection a·d_v→h; its attention core multiplies a·(d+d_r) by the keys and a·d_v by the values.
:func:`megatron_flops_per_step` reproduces Megatron-Core's ``num_floating_point_operations``
(megatron/training/training.py) for the published-TFLOP/s comparisons.

**Hybrid Mamba2-Transformer models** (``model.layer_pattern``, Megatron-Core's
``hybrid_override_pattern``): every layer is one pre-norm block, a Mamba2 mixer (M), attention
(*), a dense MLP (-) or an MoE block (E), so a layer holds one norm and one of the terms above. A
Mamba2 mixer's GEMMs are in_proj (h -> 2·d_inner + 2·G·N + H) and out_proj (d_inner -> h), its
SSD scan has the chunked algorithm's FLOPs (:mod:`simulator.schedule.mamba`); model FLOPs count
6·N over the GEMM weights, the attention term over the attention blocks only, and three times
the scan's forward FLOPs.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.config.workload import Model
from simulator.schedule.attention import FLASH_BWD_FACTOR, attention_flops, causal_fraction_diagonal
from simulator.schedule.mamba import MambaShape, ssd_flops

BWD_GEMM_FACTOR = 2.0  # dgrad + wgrad


def gemm_flops(m: int, n: int, k: int) -> float:
    return 2.0 * m * n * k


def mlp_matrices(model: Model) -> int:
    return 3 if model.gated else 2


def attention_params(model: Model) -> int:
    """Weights of the attention block: QKV (or the MLA projections and their norms) and the
    output projection, no biases."""
    h, d, a = model.hidden, model.head_dim, model.heads
    if not model.mla:
        return h * d * (a + 2 * model.kv_heads) + a * d * h
    q_r, kv_r, d_r, d_v = model.q_lora_rank, model.kv_lora_rank, model.qk_rope_head_dim, model.v_head_dim
    q = h * a * (d + d_r) if not q_r else h * q_r + q_r + q_r * a * (d + d_r)
    kv = h * (kv_r + d_r) + kv_r + kv_r * a * (d + d_v)
    return q + kv + a * d_v * h


def expert_params(model: Model) -> int:
    """Weights of one routed expert (at the latent width under LatentMoE)."""
    return mlp_matrices(model) * model.expert_hidden * model.moe_ffn_hidden


def latent_proj_params(model: Model) -> int:
    """LatentMoE's two projections of an MoE block, h -> latent before the dispatch and latent ->
    h after the combine (``fc1_latent_proj`` / ``fc2_latent_proj``, no biases), which every token
    passes through; 0 without ``moe_latent_size``."""
    return 2 * model.hidden * model.moe_latent_size


def mlp_params(model: Model, layer: int) -> int:
    """MLP weights of layer `layer`: the dense MLP, or router + all routed + shared experts (+
    LatentMoE's projections) (0 for a hybrid model's attention or Mamba block)."""
    h = model.hidden
    if not model.has_mlp(layer):
        return 0
    if not model.is_moe_layer(layer):
        return mlp_matrices(model) * h * model.ffn_hidden
    return (h * model.experts + model.experts * expert_params(model) + mlp_matrices(model) * h * model.shared_ffn_hidden
            + latent_proj_params(model))


def active_mlp_params(model: Model, layer: int) -> int:
    """MLP weights one token passes through: router, its top_k experts, the shared experts and
    LatentMoE's projections."""
    if not model.is_moe_layer(layer):
        return mlp_params(model, layer)
    h = model.hidden
    return (h * model.experts + model.top_k * expert_params(model) + mlp_matrices(model) * h * model.shared_ffn_hidden
            + latent_proj_params(model))


def mamba_params(model: Model) -> int:
    """Parameters of one Mamba2 mixer (:class:`~simulator.schedule.mamba.MambaShape`), its
    block's pre-norm not included."""
    return MambaShape.of(model).params


def layer_params(model: Model, layer: int = 0) -> int:
    """Parameters of layer `layer`: attention, MLP (all experts), two norms (no biases); a hybrid
    model's block: its mixer, attention or MLP and one norm."""
    block = model.block(layer)
    if not block:
        return attention_params(model) + mlp_params(model, layer) + 2 * model.hidden
    mixer = attention_params(model) if block == "*" else mamba_params(model) if block == "M" else 0
    return mixer + mlp_params(model, layer) + model.hidden


def embedding_params(model: Model) -> int:
    """Input embedding (plus learned positions)."""
    pos = model.seq_len * model.hidden if model.position_embedding == "learned" else 0
    return model.vocab * model.hidden + pos


def output_params(model: Model) -> int:
    """Output layer weights not shared with the input embedding, plus the final norm."""
    return (0 if model.tied_embeddings else model.vocab * model.hidden) + model.hidden


def param_count(model: Model) -> int:
    """Total parameters, each counted once (every expert)."""
    return sum(layer_params(model, i) for i in range(model.layers)) + embedding_params(model) + output_params(model)


def active_param_count(model: Model, input_embedding: bool = True) -> int:
    """Parameters a token passes through (the "activated" count of MoE model cards). Model cards
    differ on the input-embedding lookup: Mixtral and Qwen3 count it, DeepSeek and GPT-OSS do not
    (``input_embedding=False``)."""
    idle = sum(mlp_params(model, i) - active_mlp_params(model, i) for i in range(model.layers))
    return param_count(model) - idle - (0 if input_embedding else embedding_params(model))


@dataclass(frozen=True)
class LayerFlops:
    """Forward FLOPs of one layer for `tokens` query tokens of sequences of length `seq`."""

    qkv: float  # the QKV projection, or a Mamba2 mixer's in_proj
    attention: float
    out_proj: float  # the attention's or the Mamba2 mixer's output projection
    mlp: float
    ssd: float = 0.0  # a Mamba2 mixer's SSD scan, forward
    ssd_bwd: float = 0.0  # and backward (schedule/mamba.py ssd_flops)

    @property
    def forward(self) -> float:
        return self.qkv + self.attention + self.out_proj + self.mlp + self.ssd

    @property
    def gemms(self) -> float:
        return self.qkv + self.out_proj + self.mlp

    @property
    def backward(self) -> float:
        return BWD_GEMM_FACTOR * self.gemms + FLASH_BWD_FACTOR * self.attention + self.ssd_bwd


def attention_core_dim(model: Model) -> float:
    """Head dim that makes ``attention_flops`` count QKᵀ over d + d_r and PV over d_v (MLA)."""
    return (model.qk_head_dim + model.v_head_dim) / 2


def layer_flops(model: Model, tokens: int, seq: int, causal_fraction: float = 1.0, layer: int = 0) -> LayerFlops:
    """Forward FLOPs of layer `layer`; an MoE layer's MLP counts the active experts (balanced)."""
    h, a = model.hidden, model.heads
    o_in = a * model.v_head_dim
    block = model.block(layer)
    if block == "M":
        ms = MambaShape.of(model)
        fwd, bwd = ssd_flops(ms)
        return LayerFlops(qkv=gemm_flops(tokens, ms.in_proj_out, h), attention=0.0,
                          out_proj=gemm_flops(tokens, h, ms.inner), mlp=0.0, ssd=fwd * tokens, ssd_bwd=bwd * tokens)
    if block in ("E", "-"):
        return LayerFlops(qkv=0.0, attention=0.0, out_proj=0.0, mlp=2.0 * tokens * active_mlp_params(model, layer))
    return LayerFlops(
        qkv=2.0 * tokens * (attention_params(model) - o_in * h),
        attention=attention_flops(1, a, tokens, seq, attention_core_dim(model), causal_fraction),  # tokens = b·s rows
        out_proj=gemm_flops(tokens, h, o_in),
        mlp=2.0 * tokens * active_mlp_params(model, layer),
    )


def logits_flops(model: Model, tokens: int) -> float:
    return gemm_flops(tokens, model.vocab, model.hidden)


def _redone(model: Model, lf: LayerFlops, recompute: str) -> float:
    """Forward FLOPs of one layer re-run in backward: selective_op (torchtitan's op-level policy,
    bf16) re-runs wk, wo and w3 (``TransformerLayer._op_level_recompute``)."""
    if recompute == "selective_op":
        kv = model.kv_heads / (model.heads + 2 * model.kv_heads)
        return kv * lf.qkv + lf.out_proj + lf.mlp / 3
    return {"none": 0.0, "selective": lf.attention, "full": lf.forward}[recompute]


def recompute_flops(model: Model, tokens: int, seq: int, recompute: str, causal_fraction: float = 1.0) -> float:
    """Extra forward FLOPs per layer that recompute adds in backward."""
    return _redone(model, layer_flops(model, tokens, seq, causal_fraction), recompute)


def step_flops(model: Model, tokens: int, seq: int, recompute: str = "none", causal: bool = True) -> float:
    """Hardware FLOPs of fwd + bwd (+ recompute) over all layers and the logits for `tokens` tokens."""
    frac = causal_fraction_diagonal(seq) if causal else 1.0
    total = 3 * logits_flops(model, tokens)
    for layer in range(model.layers):
        lf = layer_flops(model, tokens, seq, frac, layer)
        redo = _redone(model, lf, recompute)
        total += lf.forward + lf.backward + redo
    return total


def model_flops_per_token(model: Model, seq: int | None = None) -> float:
    """6·N_gemm + 12·l·a·d·s (PaLM / Megatron convention, see module docstring)."""
    s = model.seq_len if seq is None else seq
    attention = 12.0 * model.attention_layers * model.heads * attention_core_dim(model) * s
    if model.hybrid:
        ms = MambaShape.of(model) if model.mamba_heads else None
        n_gemm = model.vocab * model.hidden
        ssd = 0.0
        for i, block in enumerate(model.layer_pattern):
            if block == "M" and ms is not None:
                n_gemm += ms.gemm_params
                ssd += 3.0 * ssd_flops(ms)[0]
            else:
                n_gemm += attention_params(model) if block == "*" else active_mlp_params(model, i)
        return 6.0 * n_gemm + attention + ssd
    n_gemm = active_param_count(model) - embedding_params(model) - output_params(model) \
        - model.layers * 2 * model.hidden + model.vocab * model.hidden
    return 6.0 * n_gemm + attention


def megatron_flops_per_step(model: Model, batch: int, seq: int | None = None, mtp_layers: int = 0) -> float:
    """Model FLOPs of `batch` sequences as Megatron-Core's ``num_floating_point_operations``
    (megatron/training/training.py, ``transformer_flops``, 2025) counts them: 3 passes × 2 FLOPs
    per multiply-add over the QKV/MLA projections, half of the score matrix (causal), the output
    projection, the dense MLPs of the first layers, top_k routed experts and the shared experts
    of the MoE layers (at the latent width with LatentMoE, plus its two projections), and the
    logits. The router GEMM and the norms are not counted (only MLA's
    "+1" norm terms are, as there). ``mtp_layers`` adds DeepSeek-V3's multi-token-prediction
    modules as Megatron does (one more MoE/dense layer each, its projection and a logits pass)."""
    if model.hybrid:
        raise ValueError("megatron_flops_per_step: a hybrid (layer_pattern) model is counted by Megatron's "
                         "hybrid_flops, not transformer_flops")
    s = model.seq_len if seq is None else seq
    h, a, d = model.hidden, model.heads, model.head_dim
    km = mlp_matrices(model)
    last_moe = 1 if model.is_moe_layer(model.layers - 1) else 0
    n_moe = model.moe_layers + last_moe * mtp_layers
    n_dense = model.layers - model.moe_layers + (1 - last_moe) * mtp_layers
    n_layers = model.layers + mtp_layers
    if model.mla:
        d_r, d_v, q_r, kv_r = model.qk_rope_head_dim, model.v_head_dim, model.q_lora_rank, model.kv_lora_rank
        q_term = h * a * (d + d_r) if not q_r else q_r * (h + a * (d + d_r) + 1)
        attn = 6 * (q_term + kv_r * (h + a * (d + d_v) + 1) + h * d_r + a * d_v * h
                    + s * a * (d + d_r) / 2 + s * a * d_v / 2)
    else:
        q, kv = d * a, d * model.kv_heads
        attn = 6 * (h * (q + 2 * kv) + q * s / 2 * 2 + q * h)
    # LatentMoE: the routed experts at the latent width d plus the two h x d projections, as
    # transformer_flops counts them (f·k·km·d/h + 2d, times 6h)
    d = model.expert_hidden
    routed = model.moe_ffn_hidden * model.top_k * km * d / h + (2 * d if model.moe_latent_size else 0)
    mlp = 6 * h * (model.ffn_hidden * km * n_dense + (routed + model.shared_ffn_hidden * km) * n_moe)
    mtp = 6 * mtp_layers * (3 * h + 2 * h * h)
    logits = 6 * h * model.vocab * (mtp_layers + 1)
    return float(batch) * s * (mlp + attn * n_layers + mtp + logits)

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
compares with theirs.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.config.workload import Model
from simulator.schedule.attention import FLASH_BWD_FACTOR, attention_flops, causal_fraction_diagonal

BWD_GEMM_FACTOR = 2.0  # dgrad + wgrad


def gemm_flops(m: int, n: int, k: int) -> float:
    return 2.0 * m * n * k


def mlp_matrices(model: Model) -> int:
    return 3 if model.gated else 2


def layer_params(model: Model) -> int:
    """Parameters of one transformer layer: QKV, output projection, MLP, two norms (no biases)."""
    h, d = model.hidden, model.head_dim
    qkv = h * d * (model.heads + 2 * model.kv_heads)
    proj = model.heads * d * h
    mlp = mlp_matrices(model) * h * model.ffn_hidden
    return qkv + proj + mlp + 2 * h


def embedding_params(model: Model) -> int:
    """Input embedding (plus learned positions)."""
    pos = model.seq_len * model.hidden if model.position_embedding == "learned" else 0
    return model.vocab * model.hidden + pos


def output_params(model: Model) -> int:
    """Output layer weights not shared with the input embedding, plus the final norm."""
    return (0 if model.tied_embeddings else model.vocab * model.hidden) + model.hidden


def param_count(model: Model) -> int:
    """Total parameters, each counted once."""
    return model.layers * layer_params(model) + embedding_params(model) + output_params(model)


@dataclass(frozen=True)
class LayerFlops:
    """Forward FLOPs of one layer for `tokens` query tokens of sequences of length `seq`."""

    qkv: float
    attention: float
    out_proj: float
    mlp: float

    @property
    def forward(self) -> float:
        return self.qkv + self.attention + self.out_proj + self.mlp

    @property
    def gemms(self) -> float:
        return self.qkv + self.out_proj + self.mlp

    @property
    def backward(self) -> float:
        return BWD_GEMM_FACTOR * self.gemms + FLASH_BWD_FACTOR * self.attention


def layer_flops(model: Model, tokens: int, seq: int, causal_fraction: float = 1.0) -> LayerFlops:
    h, d, a, g = model.hidden, model.head_dim, model.heads, model.kv_heads
    return LayerFlops(
        qkv=gemm_flops(tokens, d * (a + 2 * g), h),
        attention=attention_flops(1, a, tokens, seq, d, causal_fraction),  # tokens = b·s query rows
        out_proj=gemm_flops(tokens, h, a * d),
        mlp=mlp_matrices(model) * gemm_flops(tokens, model.ffn_hidden, h),
    )


def logits_flops(model: Model, tokens: int) -> float:
    return gemm_flops(tokens, model.vocab, model.hidden)


def recompute_flops(model: Model, tokens: int, seq: int, recompute: str, causal_fraction: float = 1.0) -> float:
    """Extra forward FLOPs per layer that recompute adds in backward."""
    lf = layer_flops(model, tokens, seq, causal_fraction)
    return {"none": 0.0, "selective": lf.attention, "full": lf.forward}[recompute]


def step_flops(model: Model, tokens: int, seq: int, recompute: str = "none", causal: bool = True) -> float:
    """Hardware FLOPs of fwd + bwd (+ recompute) over all layers and the logits for `tokens` tokens."""
    frac = causal_fraction_diagonal(seq) if causal else 1.0
    lf = layer_flops(model, tokens, seq, frac)
    per_layer = lf.forward + lf.backward + recompute_flops(model, tokens, seq, recompute, frac)
    return model.layers * per_layer + 3 * logits_flops(model, tokens)


def model_flops_per_token(model: Model, seq: int | None = None) -> float:
    """6·N_gemm + 12·l·a·d·s (PaLM / Megatron convention, see module docstring)."""
    s = model.seq_len if seq is None else seq
    n_gemm = model.layers * (layer_params(model) - 2 * model.hidden) + model.vocab * model.hidden
    return 6.0 * n_gemm + 12.0 * model.layers * model.heads * model.head_dim * s

"""Model shape and training settings of a scenario (the ``model:`` and ``training:`` keys).

A model is a preset, an explicit shape, or a preset with some fields overridden. Every preset
cites the table its shape was read from; parameter counts follow from the shape
(:func:`simulator.schedule.flops.param_count`), they are not stored.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from simulator.config.strict import STRICT_CONFIG
from simulator.errors import quote
from simulator.units import BYTES_PER_ELEMENT

# The MLP's activation: swiglu (gate and up projections, three matrices), gelu or squared_relu
# (Primer, arXiv:2109.08668: relu(x)^2; Nemotron-4, Nemotron-H), two matrices each.
Mlp = Literal["swiglu", "gelu", "squared_relu"]
# Megatron-Core's hybrid_override_pattern symbols (megatron/core/ssm/mamba_hybrid_layer_allocation.py)
HYBRID_BLOCKS = ("M", "*", "-", "E")


def _gpt(layers: int, hidden: int, heads: int, vocab: int = 51200, seq_len: int = 2048) -> dict[str, Any]:
    """A Megatron GPT shape: MHA, GeLU MLP of 4h, learned positions, tied embeddings."""
    return dict(layers=layers, hidden=hidden, heads=heads, kv_heads=heads, ffn_hidden=4 * hidden, vocab=vocab,
                mlp="gelu", seq_len=seq_len, tied_embeddings=True, position_embedding="learned")


def _llama(layers: int, hidden: int, heads: int, kv_heads: int, ffn: int, vocab: int, seq_len: int) -> dict[str, Any]:
    """A Llama shape: GQA, SwiGLU, RoPE, untied input and output embeddings."""
    return dict(layers=layers, hidden=hidden, heads=heads, kv_heads=kv_heads, ffn_hidden=ffn, vocab=vocab,
                mlp="swiglu", seq_len=seq_len, tied_embeddings=False, position_embedding="rope")


def _moe(layers: int, hidden: int, heads: int, kv_heads: int, vocab: int, seq_len: int, *, experts: int, top_k: int,
         moe_ffn: int, ffn: int = 0, head_dim: int = 0, shared: int = 0, first_dense: int = 0, shared_ffn: int = 0,
         mlp: Mlp = "swiglu", **extra: Any) -> dict[str, Any]:
    """An MoE shape with RoPE and untied embeddings (Mixtral, DeepSeek, Qwen3-MoE, GPT-OSS: SwiGLU;
    Nemotron-3: two-matrix squared-ReLU experts, ``mlp: squared_relu``)."""
    return dict(layers=layers, hidden=hidden, heads=heads, kv_heads=kv_heads, ffn_hidden=ffn or moe_ffn, vocab=vocab,
                mlp=mlp, seq_len=seq_len, tied_embeddings=False, position_embedding="rope", head_dim=head_dim,
                experts=experts, top_k=top_k, moe_ffn_hidden=moe_ffn, shared_experts=shared,
                shared_ffn_hidden=shared_ffn, first_dense_layers=first_dense, **extra)


def _deepseek_mla(q_lora_rank: int) -> dict[str, Any]:
    """DeepSeek-V2/V3 multi-head latent attention: 128 no-RoPE + 64 RoPE dims per query/key head,
    128 per value head, a 512-rank compressed KV (arXiv:2405.04434 §2.1, HF config.json)."""
    return dict(head_dim=128, q_lora_rank=q_lora_rank, kv_lora_rank=512, qk_rope_head_dim=64, v_head_dim=128)


PRESETS: dict[str, dict[str, Any]] = {
    # GPT-3, arXiv:2005.14165 Table 2.1 (GPT-2 BPE vocabulary of 50257, context 2048).
    "gpt3-175b": _gpt(96, 12288, 96, vocab=50257),
    # Llama 2, arXiv:2307.09288 Table 1 / HF configs (ffn from the multiple_of rule, 32000 vocab).
    "llama2-7b": _llama(32, 4096, 32, 32, 11008, 32000, 4096),
    "llama2-70b": _llama(80, 8192, 64, 8, 28672, 32000, 4096),
    # Llama 3, arXiv:2407.21783 Table 3 (128256 vocab incl. special tokens, 8K pre-training context).
    "llama3-8b": _llama(32, 4096, 32, 8, 14336, 128256, 8192),
    "llama3-70b": _llama(80, 8192, 64, 8, 28672, 128256, 8192),
    "llama3-405b": _llama(126, 16384, 128, 8, 53248, 128256, 8192),
    # Megatron-LM weak-scaling GPT family, arXiv:2104.04473 Table 1 (vocab 51200, seq 2048).
    "gpt-1.7b": _gpt(24, 2304, 24),
    "gpt-3.6b": _gpt(30, 3072, 32),
    "gpt-7.5b": _gpt(36, 4096, 32),
    "gpt-18b": _gpt(40, 6144, 48),
    "gpt-39b": _gpt(48, 8192, 64),
    "gpt-76b": _gpt(60, 10240, 80),
    "gpt-145b": _gpt(80, 12288, 96),
    "gpt-310b": _gpt(96, 16384, 128),
    "gpt-530b": _gpt(105, 20480, 128),
    "gpt-1t": _gpt(128, 25600, 160),
    # Sequence-parallel/selective-recompute paper, arXiv:2205.05198 Table 3.
    "gpt-22b": _gpt(48, 6144, 64),
    "gpt-175b": _gpt(96, 12288, 96),
    # --- Mixture-of-Experts (shapes from each model's Hugging Face config.json) ---
    # Mixtral, arXiv:2401.04088 Table 1; mistralai/Mixtral-8x7B-v0.1 and -8x22B-v0.1 config.json.
    "mixtral-8x7b": _moe(32, 4096, 32, 8, 32000, 4096, experts=8, top_k=2, moe_ffn=14336),
    "mixtral-8x22b": _moe(56, 6144, 48, 8, 32768, 4096, experts=8, top_k=2, moe_ffn=16384),
    # deepseek-ai/DeepSeek-V2-Lite config.json (arXiv:2405.04434 App. B): no query compression,
    # first layer dense (10944), 64 routed experts of 1408, 6 per token, 2 shared.
    "deepseek-v2-lite": _moe(27, 2048, 16, 16, 102400, 4096, experts=64, top_k=6, moe_ffn=1408, ffn=10944,
                             shared=2, first_dense=1, **_deepseek_mla(0)),
    # deepseek-ai/DeepSeek-V3 config.json (arXiv:2412.19437 §4.2): 61 layers, the first 3 dense
    # (18432), 256 routed experts of 2048, 8 per token, 1 shared; the MTP module only with model.mtp_layers.
    "deepseek-v3": _moe(61, 7168, 128, 128, 129280, 4096, experts=256, top_k=8, moe_ffn=2048, ffn=18432,
                        shared=1, first_dense=3, expert_groups=8, topk_groups=4, **_deepseek_mla(1536)),
    # moonshotai/Kimi-K2-Base config.json: the DeepSeek-V3 design with 64 heads, 384 experts, 1 dense layer.
    "kimi-k2": _moe(61, 7168, 64, 64, 163840, 4096, experts=384, top_k=8, moe_ffn=2048, ffn=18432,
                    shared=1, first_dense=1, **_deepseek_mla(1536)),
    # Qwen/Qwen3-30B-A3B and Qwen3-235B-A22B config.json (head_dim 128, no shared experts).
    "qwen3-30b-a3b": _moe(48, 2048, 32, 4, 151936, 4096, experts=128, top_k=8, moe_ffn=768, head_dim=128,
                          qk_norm=True),
    "qwen3-235b-a22b": _moe(94, 4096, 64, 4, 151936, 4096, experts=128, top_k=8, moe_ffn=1536, head_dim=128,
                            qk_norm=True),
    # openai/gpt-oss-120b and -20b config.json (model card arXiv:2508.10925 Table 1): sliding_window
    # 128, layer_types alternating sliding_attention / full_attention from the first layer (Megatron-
    # Bridge's GPTOSSBridge: window_size (127, 0), window_attn_skip_freq 2).
    # Its experts' GLU clamps the gate from above and the linear half to +-7 (swiglu_limit 7.0;
    # Megatron-Core activation_func_clamp_value); each attention head has a learned sink logit
    # (HF self_attn.sinks; Megatron-Core softmax_type "learnable").
    "gpt-oss-120b": _moe(36, 2880, 64, 8, 201088, 4096, experts=128, top_k=4, moe_ffn=2880, head_dim=64,
                         sliding_window=128, full_attention_every=2, glu_clamp=7.0, attention_sinks=True),
    "gpt-oss-20b": _moe(24, 2880, 64, 8, 201088, 4096, experts=32, top_k=4, moe_ffn=2880, head_dim=64,
                        sliding_window=128, full_attention_every=2, glu_clamp=7.0, attention_sinks=True),
    # --- Hybrid Mamba2-Transformer (Megatron's hybrid_override_pattern, model.layer_pattern) ---
    # nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16 config.json (the checkpoint NeMo AutoModel's
    # examples/benchmark/configs/nemotron_nano_v3_te_deepep.yaml loads, Automodel @08a48f76): 52
    # blocks "MEMEM*EMEMEM*...", hidden 2688; 23 Mamba2 mixers of 64 heads x 64 (d_inner 4096),
    # state 128, 8 groups, conv 4, chunk 128; 6 GQA attention blocks of 32 x 128 with 2 KV heads;
    # 23 MoE blocks of 128 squared-ReLU experts of 1856, 6 per token, one shared expert of 3712;
    # vocabulary 131072, untied embeddings, no position embedding in attention.
    "nemotron-3-nano-30b-a3b": _moe(52, 2688, 32, 2, 131072, 4096, experts=128, top_k=6, moe_ffn=1856,
                                    head_dim=128, shared=1, shared_ffn=3712, mlp="squared_relu",
                                    layer_pattern="MEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME",
                                    mamba_heads=64, mamba_head_dim=64, mamba_state=128, mamba_groups=8,
                                    mamba_conv=4, mamba_chunk=128),
    # nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-BF16 config.json (the checkpoint NeMo AutoModel's
    # nemotron_super_v3_te_deepep.yaml loads; its shape as NVIDIA-NeMo/Automodel
    # tests/unit_tests/utils/test_flops_utils.py pins it at c0e4fe1b): 88 blocks, hidden 4096; 40
    # Mamba2 mixers of 128 heads x 64 (d_inner 8192), state 128, 8 groups; 8 GQA attention blocks of
    # 32 x 128 with 2 KV heads; 40 LatentMoE blocks of 512 squared-ReLU experts of 2688 in a
    # 1024-wide latent space (moe_latent_size), 22 per token, one shared expert of 5376 at the full
    # width; vocabulary 131072, untied. Its MTP block (num_nextn_predict_layers 1,
    # mtp_hybrid_override_pattern "*E") only with model.mtp_layers: 1.
    "nemotron-3-super-120b-a12b": _moe(88, 4096, 32, 2, 131072, 4096, experts=512, top_k=22, moe_ffn=2688,
                                       head_dim=128, shared=1, shared_ffn=5376, mlp="squared_relu",
                                       moe_latent_size=1024,
                                       layer_pattern="MEMEMEM*EMEMEMEM*EMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*"
                                                     "EMEMEMEMEM*EMEMEMEM*EMEMEMEME",
                                       mamba_heads=128, mamba_head_dim=64, mamba_state=128, mamba_groups=8,
                                       mamba_conv=4, mamba_chunk=128),
    # nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16 (the checkpoint NeMo AutoModel's
    # nemotron_ultra_v3_te_deepep.yaml loads, Automodel @cb976544), its shape as NVIDIA/Megatron-LM
    # examples/post_training/modelopt/conf/nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16.sh (@453761c5)
    # passes it: 108 blocks, hidden 8192; 48 Mamba2 mixers of 256 heads x 64 (d_inner 16384), Megatron's
    # default state 128 and 8 groups; 12 GQA attention blocks of 64 x 128 with 2 KV heads; 48 LatentMoE
    # blocks of 512 squared-ReLU experts of 5120 in a 2048-wide latent space, 22 per token, one shared
    # expert of 10240 at the full width; vocabulary 131072, untied. Its MTP block (two depths through one
    # "*E" layer, mtp_use_repeated_layer) only with model.mtp_layers: 2, model.mtp_repeated_layer: true.
    "nemotron-3-ultra-550b-a55b": _moe(108, 8192, 64, 2, 131072, 4096, experts=512, top_k=22, moe_ffn=5120,
                                       head_dim=128, shared=1, shared_ffn=10240, mlp="squared_relu",
                                       moe_latent_size=2048,
                                       layer_pattern="MEMEMEM*EMEMEM*EMEMEMEM*EMEMEMEM*EMEMEM*EMEMEMEM*EMEMEMEM*"
                                                     "EMEMEM*EMEMEMEM*EMEMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME",
                                       mamba_heads=256, mamba_head_dim=64, mamba_state=128, mamba_groups=8,
                                       mamba_conv=4, mamba_chunk=128),
}


def attention_window(sliding_window: int, full_attention_every: int, layer: int) -> int:
    """Keys each query of layer ``layer`` (0-based) sees, itself included; 0: its whole causal
    prefix. Megatron-Core's ``is_layer_window_attention`` (megatron/core/transformer/utils.py):
    layer number n = layer + 1 is windowed unless ``n % window_attn_skip_freq == 0``, the same as
    Hugging Face Gemma's ``(layer_idx + 1) % sliding_window_pattern`` and GPT-OSS's layer_types,
    which start with a sliding layer."""
    if not sliding_window or (full_attention_every and (layer + 1) % full_attention_every == 0):
        return 0
    return sliding_window


class _Strict(BaseModel):
    model_config = STRICT_CONFIG


class Model(_Strict):
    """Transformer shape. ``preset`` fills every field not given explicitly."""

    preset: str | None = None
    layers: int = Field(gt=0)
    hidden: int = Field(gt=0)
    heads: int = Field(gt=0)
    kv_heads: int = Field(default=0, ge=0)  # 0: same as heads (MHA)
    ffn_hidden: int = Field(default=0, ge=0)  # 0: 4·hidden (gelu, squared_relu) or the Llama rule (swiglu)
    vocab: int = Field(gt=0)
    mlp: Mlp = "gelu"
    seq_len: int = Field(gt=0)
    tied_embeddings: bool = False
    # rope and alibi have no weights; alibi (BLOOM, MPT) adds a per-head linear bias to the scores,
    # which costs traffic only where the scores are materialised (schedule/attention.py).
    # none: no position embedding at all (Megatron-Core MambaModel's default, Nemotron-H's attention layers)
    position_embedding: Literal["rope", "learned", "alibi", "none"] = "rope"
    # Query/key head dimension (Megatron's kv_channels); 0: hidden / heads. Qwen3 and GPT-OSS
    # use 128 and 64 with hidden/heads = 64 and 45; under MLA it is the no-RoPE part (qk_nope_head_dim).
    head_dim: int = Field(default=0, ge=0)
    # Qwen3's per-head RMSNorm of the queries and keys before RoPE (HF Qwen3MoeAttention q_norm /
    # k_norm; Megatron-Core's qk_layernorm, which Megatron-Bridge's Qwen3MoEBridge sets:
    # src/megatron/bridge/models/qwen/qwen3_moe_bridge.py).
    qk_norm: bool = Field(default=False, description="a norm over head_dim on every query and key head")
    sliding_window: int = Field(default=0, ge=0, description="keys each query attends to in a sliding-window "
                                "attention layer, itself included (HF sliding_window; Megatron-Core window_size "
                                "(W-1, 0)); the fused kernel skips the key tiles outside the band (0: full causal "
                                "attention)")
    full_attention_every: int = Field(default=0, ge=0, description="with sliding_window: every Nth layer, counted "
                                      "from 1, attends to its whole causal prefix and the others to the window "
                                      "(Megatron-Core window_attn_skip_freq, HF Gemma sliding_window_pattern; GPT-OSS: "
                                      "2); 0: every layer windowed")
    attention_sinks: bool = Field(default=False, description="a learned logit per attention head that every "
                                  "query's softmax also normalises over (GPT-OSS's sinks; Megatron-Core softmax_type "
                                  "learnable); training.attention_sink_kernel says where it runs")
    # --- Mixture of Experts (Megatron-Core's --num-experts, --moe-router-topk, ...) -----------
    experts: int = Field(default=0, ge=0, description="routed experts per MoE layer (0: a dense model)")
    top_k: int = Field(default=0, ge=0, description="experts each token is routed to (0: 1 when experts > 0)")
    moe_ffn_hidden: int = Field(default=0, ge=0, description="FFN size of one routed expert (0: ffn_hidden)")
    shared_experts: int = Field(default=0, ge=0, description="always-active shared experts per MoE layer")
    shared_ffn_hidden: int = Field(default=0, ge=0, description="FFN size of all shared experts together "
                                                                  "(0: shared_experts x moe_ffn_hidden)")
    first_dense_layers: int = Field(default=0, ge=0, description="leading layers with a dense MLP (DeepSeek's "
                                                                   "first_k_dense_replace)")
    mtp_layers: int = Field(default=0, ge=0, description="multi-token-prediction depths on the last pipeline "
                            "stage (DeepSeek-V3's MTP module, Megatron-Core --mtp-num-layers; with layer_pattern "
                            "each depth is an attention and an MoE block, Nemotron-3's \"*E\"; 0: none)")
    mtp_repeated_layer: bool = Field(default=False, description="the MTP depths run through one physical depth "
                                     "(Megatron-Core --mtp-use-repeated-layer, NeMo AutoModel mtp_use_repeated_layer, "
                                     "Nemotron-3 Ultra): every depth computed, its weights, gradients and optimizer "
                                     "state held once")
    moe_latent_size: int = Field(default=0, ge=0, description="LatentMoE (Nemotron-3 Super/Ultra, Megatron-Core "
                                 "--moe-latent-size): the routed experts' width; each MoE block projects its input "
                                 "h -> latent before the dispatch and the combined output latent -> h after it, the "
                                 "router and the shared experts staying at h (0: experts at the hidden size)")
    glu_clamp: float = Field(default=0.0, ge=0, description="the routed experts' GLU clamps its gate half from "
                             "above and its linear half to +-this before the activation (GPT-OSS: 7.0, HF "
                             "swiglu_limit, Megatron-Core activation_func_clamp_value; training.glu_clamp_kernel "
                             "says how it runs); 0: no clamp")
    capacity_factor: float | None = Field(default=None, gt=0, description="expert capacity as a multiple of the "
                                          "balanced load; tokens beyond it are dropped (None: dropless)")
    expert_groups: int = Field(default=0, ge=0, description="groups the experts are split into for "
                               "group-limited routing (DeepSeek n_group, Megatron moe_router_num_groups; 0: none)")
    topk_groups: int = Field(default=0, ge=0, description="groups a token's experts may come from "
                             "(DeepSeek topk_group, Megatron moe_router_group_topk)")
    # --- Multi-head latent attention (DeepSeek-V2/V3; 0 = plain MHA/GQA) ----------------------
    q_lora_rank: int = Field(default=0, ge=0, description="MLA query compression rank (0: no query compression)")
    kv_lora_rank: int = Field(default=0, ge=0, description="MLA key/value compression rank (0: not MLA)")
    qk_rope_head_dim: int = Field(default=0, ge=0, description="MLA decoupled RoPE dims per query/key head")
    v_head_dim: int = Field(default=0, ge=0, description="value head dim (0: head_dim)")
    # --- Hybrid Mamba2-Transformer (Megatron-Core MambaModel, HF NemotronH) ---------------------
    layer_pattern: str = Field(default="", description="one character per layer, Megatron-Core's "
                               "hybrid_override_pattern: M a Mamba2 mixer, * self-attention, - a dense MLP, E an "
                               "MoE block, each a pre-norm residual block of its own (\"\": every layer is "
                               "attention + MLP/MoE)")
    mamba_heads: int = Field(default=0, ge=0, description="Mamba2 heads per mixer (d_inner = heads x head dim)")
    mamba_head_dim: int = Field(default=64, gt=0, description="Mamba2 head dim P")
    mamba_state: int = Field(default=128, gt=0, description="Mamba2 state size N (d_state)")
    mamba_groups: int = Field(default=8, gt=0, description="Mamba2 B/C groups (ngroups)")
    mamba_conv: int = Field(default=4, gt=0, description="width of the causal depthwise conv1d")
    mamba_chunk: int = Field(default=128, gt=0, description="chunk length Q of the SSD scan")

    @model_validator(mode="before")
    @classmethod
    def _apply_preset(cls, data: Any) -> Any:
        if not isinstance(data, dict) or data.get("preset") is None:
            return data
        name = data["preset"]
        if not isinstance(name, str) or name not in PRESETS:
            raise ValueError(f"preset: unknown model preset {quote(name)}; expected one of {', '.join(sorted(PRESETS))}")
        return {**PRESETS[name], **data}

    @model_validator(mode="after")
    def _defaults(self) -> "Model":
        if self.kv_heads == 0:
            object.__setattr__(self, "kv_heads", self.heads)
        if self.ffn_hidden == 0:
            if not self.gated:
                ffn = 4 * self.hidden
            else:  # Llama rule: 2/3 of 4h, rounded up to a multiple of 256
                ffn = -(-int(8 * self.hidden / 3) // 256) * 256
            object.__setattr__(self, "ffn_hidden", ffn)
        if self.head_dim == 0:
            if self.hidden % self.heads:
                raise ValueError(f"hidden={self.hidden} is not divisible by heads={self.heads} (or give head_dim)")
            object.__setattr__(self, "head_dim", self.hidden // self.heads)
        if self.v_head_dim == 0:
            object.__setattr__(self, "v_head_dim", self.head_dim)
        if self.glu_clamp and not (self.gated and self.experts):
            raise ValueError(f"glu_clamp={self.glu_clamp} clamps the gated (mlp: swiglu) routed experts' GLU; this "
                             f"model has {'no experts' if not self.experts else 'mlp: ' + self.mlp}")
        if self.glu_clamp and (self.shared_experts or self.first_dense_layers or "-" in self.layer_pattern):
            raise ValueError(f"glu_clamp={self.glu_clamp} is priced on the routed experts, as GPT-OSS has only "
                             "those: this model has shared experts or dense MLP layers too")
        if self.full_attention_every and not self.sliding_window:
            raise ValueError(f"full_attention_every={self.full_attention_every} needs sliding_window > 0 (the "
                             "layers between the full ones attend to a window)")
        if self.experts:
            if self.top_k == 0:
                object.__setattr__(self, "top_k", 1)
            if self.moe_ffn_hidden == 0:
                object.__setattr__(self, "moe_ffn_hidden", self.ffn_hidden)
            if self.shared_ffn_hidden == 0:
                object.__setattr__(self, "shared_ffn_hidden", self.shared_experts * self.moe_ffn_hidden)
            if self.top_k > self.experts:
                raise ValueError(f"top_k={self.top_k} exceeds experts={self.experts}")
            if self.expert_groups and (self.experts % self.expert_groups or not 0 < self.topk_groups <= self.expert_groups):
                raise ValueError(f"expert_groups={self.expert_groups} must divide experts={self.experts} and "
                                 f"topk_groups={self.topk_groups} lie in 1..expert_groups")
            if self.first_dense_layers >= self.layers:
                raise ValueError(f"first_dense_layers={self.first_dense_layers} leaves no MoE layer of "
                                 f"layers={self.layers}")
        else:
            moe_keys = [k for k in ("top_k", "moe_ffn_hidden", "shared_experts", "shared_ffn_hidden",
                                    "first_dense_layers", "moe_latent_size") if getattr(self, k)]
            if moe_keys or self.capacity_factor is not None:
                raise ValueError(f"{(moe_keys or ['capacity_factor'])[0]} needs experts > 0 (a Mixture-of-Experts model)")
        if (self.q_lora_rank or self.qk_rope_head_dim) and not self.kv_lora_rank:
            raise ValueError("q_lora_rank / qk_rope_head_dim describe multi-head latent attention: "
                             "give kv_lora_rank > 0 as well")
        if self.kv_lora_rank and self.kv_heads != self.heads:
            raise ValueError(f"kv_heads={self.kv_heads}: multi-head latent attention has one key/value head "
                             f"per query head (kv_heads = heads = {self.heads})")
        if self.heads % self.kv_heads:
            raise ValueError(f"kv_heads={self.kv_heads} does not divide heads={self.heads} (GQA groups)")
        self._check_pattern()
        return self

    def _check_pattern(self) -> None:
        """``layer_pattern``: one known block per layer, MoE blocks only with experts, Mamba
        blocks only with mamba_heads (Megatron-Core's ``allocate_layers`` rejects the same)."""
        pat = self.layer_pattern
        if not pat:
            if self.mamba_heads:
                raise ValueError("mamba_heads needs layer_pattern (which layers are Mamba2 mixers, 'M')")
            return
        bad = sorted(set(pat) - set(HYBRID_BLOCKS))
        if bad:
            raise ValueError(f"layer_pattern: unknown block {quote(bad[0])}; expected M (Mamba2), * (attention), "
                             f"- (MLP) or E (MoE)")
        if len(pat) != self.layers:
            raise ValueError(f"layer_pattern has {len(pat)} blocks but layers={self.layers}")
        if ("E" in pat) != (self.experts > 0):
            raise ValueError("layer_pattern: E (MoE) blocks need experts > 0, and experts > 0 needs E blocks")
        if ("M" in pat) != (self.mamba_heads > 0):
            raise ValueError("layer_pattern: M (Mamba2) blocks need mamba_heads > 0, and mamba_heads needs M blocks")
        if self.first_dense_layers or self.mla:
            raise ValueError("layer_pattern places the MoE blocks itself (no first_dense_layers) and its attention "
                             "blocks are plain MHA/GQA (no MLA)")
        if self.mamba_heads and self.mamba_heads % self.mamba_groups:
            raise ValueError(f"mamba_groups={self.mamba_groups} does not divide mamba_heads={self.mamba_heads}")

    def block(self, layer: int) -> str:
        """The block of layer `layer` in ``layer_pattern`` (M, *, -, E), or "" for a transformer
        layer (attention + MLP/MoE)."""
        return self.layer_pattern[layer] if self.layer_pattern and layer < len(self.layer_pattern) else ""

    @property
    def hybrid(self) -> bool:
        return bool(self.layer_pattern)

    def attention_window(self, layer: int) -> int:
        """Keys each query of layer ``layer`` attends to (0: all before it): :func:`attention_window`."""
        return attention_window(self.sliding_window, self.full_attention_every, layer)

    @property
    def windowed(self) -> bool:
        """Whether the sliding window is shorter than the sequence (else it changes nothing)."""
        return 0 < self.sliding_window < self.seq_len

    def has_mlp(self, layer: int) -> bool:
        """Whether layer `layer` has an MLP or MoE block."""
        return self.block(layer) in ("", "-", "E")

    @property
    def attention_layers(self) -> int:
        return self.layer_pattern.count("*") if self.layer_pattern else self.layers

    @property
    def moe(self) -> bool:
        return self.experts > 0

    @property
    def mla(self) -> bool:
        """Multi-head latent attention (DeepSeek-V2/V3)."""
        return self.kv_lora_rank > 0

    @property
    def qk_head_dim(self) -> int:
        """Dimension of the query-key dot product per head (no-RoPE + RoPE parts under MLA)."""
        return self.head_dim + self.qk_rope_head_dim

    def is_moe_layer(self, layer: int) -> bool:
        """Whether transformer layer `layer` (0-based) has routed experts."""
        if self.layer_pattern and layer < len(self.layer_pattern):
            return self.layer_pattern[layer] == "E"
        return self.experts > 0 and layer >= self.first_dense_layers

    @property
    def moe_layers(self) -> int:
        if self.layer_pattern:
            return self.layer_pattern.count("E")
        return self.layers - self.first_dense_layers if self.experts else 0

    @property
    def expert_hidden(self) -> int:
        """Width of the tokens the routed experts take and return: ``moe_latent_size`` under
        LatentMoE, else the hidden size."""
        return self.moe_latent_size or self.hidden

    @property
    def gated(self) -> bool:
        """SwiGLU has a gate and an up projection: 3 MLP matrices instead of 2."""
        return self.mlp == "swiglu"


class Training(_Strict):
    micro_batch: int = Field(gt=0)  # sequences per micro-batch
    global_batch: int = Field(gt=0)  # sequences per optimizer step
    dtype: Literal["bf16", "fp16", "fp8"] = "bf16"  # fp8: GEMMs in fp8, everything else bf16
    recompute: Literal["none", "selective", "full", "selective_op"] = Field(
        default="none", description="activation recompute: none | selective (Megatron's: the attention core "
        "re-run before its backward) | full (the whole layer re-run before its backward) | selective_op "
        "(torchtitan's op-level selective checkpointing, selective_ac_option \"op\": the outputs of every "
        "second GEMM of a block and of the attention core are kept; wk, wo, w3 (every GEMM but w2 in fp8), the "
        "norms and the activation re-run before the block's backward; dense SwiGLU layers without TP)")
    recompute_method: Literal["uniform", "block", "every"] = Field(
        default="uniform", description="which layers recompute: full re-runs (simulator/schedule/checkpointing.py): "
        "uniform (every layer; the layers of each model chunk checkpointed in groups of recompute_num_layers, so "
        "one input is kept per group and a whole group is rebuilt at once: Megatron's --recompute-method uniform) "
        "| block (only the first recompute_num_layers layers of each model chunk, the others keep their "
        "activations: Megatron's --recompute-method block, Megatron-Bridge's --recompute_num_layers) | every "
        "(every recompute_num_layers-th layer of a rank, counted from 1, the others kept: torchtitan's "
        "activation_checkpoint mode selective with selective_ac_option \"N\"); needs recompute: full")
    recompute_num_layers: int = Field(
        default=1, ge=0, description="the N of recompute_method: layers per checkpointed group (uniform, at "
        "least 1), checkpointed layers per model chunk (block; 0: none, as Megatron takes "
        "--recompute-num-layers 0), or the period of the checkpointed layers (every; 0: every layer, as "
        "torchtitan reads selective_ac_option \"0\")")
    cuda_graph_scope: list[Literal["attn", "mlp", "moe_router", "moe_preprocess", "mamba"]] = Field(
        default_factory=list, description="the parts of every layer replayed from CUDA graphs (Megatron-Core's "
        "cuda_graph_impl transformer_engine with cuda_graph_scope; none: eager): attn (a layer's attention, from its "
        "norm to the residual add) | mlp (a dense MLP) | moe_router (an MoE layer's norm, router and shared "
        "experts) | moe_preprocess (with moe_router: the permutation before the dispatch, in the same graph) | "
        "mamba (a Mamba2 block). Each graph costs the host one launch per pass instead of one per kernel, and its "
        "kernels follow each other with a shorter gap")
    recompute_modules: list[Literal["layernorm", "moe_act", "moe"]] = Field(
        default_factory=list, description="modules of the MoE layers whose outputs are dropped in forward and "
        "rebuilt in backward (Megatron's selective recompute_modules besides core_attn, which is recompute: "
        "selective): layernorm (the pre-MLP norm, a TENorm of its own in an MoE layer: TransformerEngine fuses "
        "the other norms into the linear layer after them) | moe_act (the experts' activation, rebuilt before "
        "FC2's backward) | moe (the whole MoE layer: router, dispatch, experts, combine and shared experts run "
        "again, their All-to-Alls included, before its backward)")
    # The attention implementation. Fused kernels (FlashAttention and kin) keep only O(s)
    # softmax statistics, so the 5as²b score term of arXiv:2205.05198 is not stored even without
    # recompute; ``unfused`` materialises the scores (Megatron-LM 2020-2022; the paper's formula).
    attention: Literal["auto", "flash1", "flash2", "flash3", "unfused"] = Field(
        default="auto",
        description="attention kernel: auto (what Megatron-Core/TransformerEngine runs on the GPU: "
                    "the profile's gpu.default_attention, flash3-class on Hopper and later, flash2 "
                    "before; flash2 on Blackwell for a deterministic run with fused_attention_dropout, "
                    "which TE's cuDNN backend refuses there: schedule/attention.py resolve_kernel) | "
                    "flash1 (FlashAttention-1: flash-attn 1.x, Triton ports, 2022-2023 stacks) | "
                    "flash2 (FlashAttention-2, PyTorch SDPA) | flash3 (FlashAttention-3 / cuDNN fused "
                    "attention) | unfused (scores materialised in HBM; the older flash_attention: false)")
    # Whether the stack fuses the memory-bound kernels around the GEMMs (Megatron-Core/TE:
    # fused LayerNorm, bias-GeLU/SwiGLU, bias-dropout-add, fused softmax). false models PyTorch
    # eager layers (one kernel per bias add, dropout, residual add, activation and norm), each
    # re-reading and re-writing the activation in HBM, e.g. llm-foundry/Composer 2023.
    fused_kernels: bool = True
    activation_kernel: Literal["auto", "fused", "eager"] = Field(
        default="auto", description="the dense MLP's activation: fused (one kernel forward and one backward: "
        "Megatron's bias_gelu / bias_swiglu fusions, or an activation function under jit_fuser such as "
        "Megatron-Core's squared_relu) | eager (its PyTorch ops, one kernel each: NeMo 2.0's squared_relu and "
        "NemotronH's torch.pow(F.relu(x), 2) lambda, two kernels forward and four backward) | auto (fused with "
        "fused_kernels, else eager)")
    norm_kernel: Literal["auto", "eager", "fused", "composite"] = Field(
        default="auto", description="the norm kernels of eager layers (fused_kernels: false): auto = eager "
        "(PyTorch's own LayerNorm/RMSNorm kernels) | fused (apex's FusedLayerNorm or a Triton norm, a kernel of "
        "its own at streaming bandwidth: Megatron-LM 2020) | composite (the reference Llama RMSNorm written as "
        "PyTorch ops on an fp32 upcast, x.float(), pow, mean, rsqrt, multiply, cast back, scale: Hugging Face's "
        "LlamaRMSNorm, torchtitan's RMSNorm of 2024, FMS's LayerNormParameterized; 8 kernels forward, 15 "
        "backward, schedule/transformer.py composite_rms_norm)")
    norm_input: Literal["act", "fp32"] = Field(
        default="act", description="what the norms of eager layers read (fused_kernels: false, norm_kernel: fused): "
        "act (the activation itself) | fp32 (an fp32 copy of it: InternLM 2023's norm(x.float()) into apex's "
        "MixedFusedRMSNorm, which reads 4-byte inputs and writes the activation dtype, and whose input gradient is "
        "fp32 again; a cast kernel before the norm forward and after its backward)")
    recompute_norm_blocks: bool = Field(
        default=False, description="the dropout, residual add and norm ahead of the attention and of the MLP of "
        "every layer are re-run before their backward instead of kept (InternLM 2023's dropout_selective_checkpoint, "
        "on unless the whole layer is checkpointed); eager layers, not with recompute: full or selective_op")
    rope_kernel: Literal["auto", "fused", "complex", "unfused"] = Field(
        default="auto", description="the RoPE kernels of position_embedding rope: auto = fused with fused_kernels, "
        "complex with eager layers | fused (TransformerEngine's fused_apply_rotary_pos_emb, one kernel per q and "
        "k: Megatron-Core's apply_rope_fusion, NeMo AutoModel's rope_fusion with TE) | complex (torchtitan's eager "
        "apply_rotary_emb: fp32 cast, complex multiply, cast back) | unfused (Megatron-Core's "
        "_apply_rotary_pos_emb_bshd: cos/sin multiplies, rotate_half's negate and concatenation, the add and the "
        "final concatenation as kernels of their own; taken with apply_rope_fusion when YaRN's mscale is not 1, "
        "as for GPT-OSS)")
    masked_softmax: Literal["fused", "torch"] = Field(
        default="fused", description="what runs the scale-mask-softmax of unfused attention with fused kernels: "
        "fused (Megatron's scaled_upper_triang_masked_softmax kernel: one read, one write of the scores) | torch "
        "(Megatron's FusedScaleMaskSoftmax.forward_torch_softmax, taken when is_kernel_available fails for the "
        "rank's shape: the scores cast to fp32, scaled, masked in place, softmaxed and cast back, five kernels "
        "each way; schedule/attention.py megatron_fused_softmax_available gives the rule)")
    dropout: bool = Field(
        default=True, description="hidden and attention dropout active (p > 0). With p = 0 PyTorch launches no "
        "dropout kernel (llm-foundry's MPT, Llama-style models); the eager layers and unfused attention then "
        "skip the dropout passes")
    deterministic: bool = Field(
        default=False, description="the fused attention backward runs its deterministic algorithm (Megatron's "
        "--deterministic-mode, TransformerEngine's NVTE_ALLOW_NONDETERMINISTIC_ALGO=0, flash-attn's "
        "deterministic=True). Priced for FlashAttention-2 (flash2, what TE runs on Ampere then, and on Blackwell "
        "with fused_attention_dropout): its backward "
        "launches ceil(SMs / (batch x heads)) thread blocks per head instead of one per key block, and sums "
        "that many fp32 dQ copies (costs/attention_determinism.py); cuDNN's deterministic backward on Blackwell "
        "(flash3) at its measured ratio to the default one (x 1.13-1.28 at 16-bit head dims up to 128, none for "
        "MLA or fp8); cuDNN's Hopper path and the unfused attention keep their cost")
    torch_deterministic: bool = Field(
        default=False, description="torch.use_deterministic_algorithms(True) (Megatron's --deterministic-mode calls "
        "it) with PyTorch's default torch.utils.deterministic.fill_uninitialized_memory: every tensor the CUDA "
        "empty factories hand out is filled with NaN first (ATen's fill_empty_deterministic_), one streaming "
        "write and one kernel per allocation (schedule/deterministic_fill.py). Priced on a TransformerEngine stack "
        "(fused_kernels) for what TE allocates: its linear layers' GEMM outputs (the weight gradients too without "
        "gradient_accumulation_fusion; the MoE experts' grouped GEMMs too), its norms' outputs and the fused "
        "attention's output and dQ/dK/dV (not in Mamba mixers or context-parallel chunks); what ATen's "
        "structured kernels and torch.compile allocate (elementwise ops, torch.matmul: Megatron's output layer) "
        "is not filled")
    fused_attention_dropout: bool = Field(
        default=False, description="the fused attention kernel applies an attention dropout of p > 0 itself "
        "(Megatron's --attention-dropout, default 0.1, run by TransformerEngine's cuDNN or flash-attn backend): a "
        "Philox draw per computed score element, forward and again in the backward, priced per element from "
        "published pairs with and without dropout (costs/attention_dropout.py: cuDNN on Hopper, flash-attn 2). "
        "Off by default: set where the run's attention dropout is known to be > 0; needs dropout: true")
    dataloader_attention_mask: bool = Field(
        default=False, description="the data loader builds a b x 1 x s x s bool causal mask each micro-batch and "
        "the first and last pipeline stages copy it to the GPU on the compute stream and broadcast it over TP "
        "(Megatron-LM's GPTDataset unless --no-create-attention-mask-in-dataloader; schedule/data_loading.py)")
    linear_bias: Literal["none", "epilogue", "separate"] = Field(
        default="none", description="linear-layer biases as kernels of their own: none (no biases, or biases "
        "folded into fused kernels forward and backward: GEMM epilogues, bias-GeLU, bias-dropout-add) | epilogue "
        "(PyTorch eager F.linear since torch 1.11 on a contiguous input: addmm's cuBLASLt bias epilogue forward, "
        "autograd's reduction of each output gradient over the tokens backward: llm-foundry MPT) | separate "
        "(F.linear of torch <= 1.7 on a 3-D input: matmul then an in-place bias add, and the same reduction: "
        "Megatron-LM 2020)")
    # Routing of MoE tokens (simulator/schedule/moe.py): the expected max/mean tokens per expert
    # (1.0: balanced), or a seeded multinomial draw of the routing of each micro-batch.
    moe_imbalance: float = Field(default=1.0, ge=1.0, description="expected max/mean tokens per expert "
                                 "(1.0: a balanced router); the EP rank with the hottest expert sets the pace")
    moe_routing_seed: int | None = Field(default=None, description="draw the routing as a seeded uniform "
                                         "multinomial instead of moe_imbalance")
    moe_expert_bias: Literal["none", "per_expert", "per_expert_fc1_fc2"] = Field(
        default="none", description="the routed experts' output bias, weighted by each row's router probability: "
        "none (no expert biases, or biases added inside the GEMM and activation kernels) | per_expert "
        "(Megatron-Core's TEGroupedMLP._apply_bias for models with add_bias_linear, GPT-OSS: per local expert a "
        "multiply and an add, then a concatenation of the rows; backward two multiplies and two reductions per "
        "expert and the concatenation of the split gradients) | per_expert_fc1_fc2 (NeMo AutoModel's grouped_gemm experts, "
        "GroupedExpertsDeepEP: the same for FC2, and FC1's bias added by a split, an add per local expert and a "
        "concatenation too)")
    moe_grouped_gemm: bool = Field(
        default=False, description="Megatron-Core's --moe-grouped-gemm (default off) with TransformerEngine "
        "(fused_kernels): the experts run as TE GroupedLinear, whose grouped GEMM keeps one cuBLAS workspace per "
        "compute stream (transformer_engine/pytorch/cpp_extensions/gemm.py get_cublas_workspace: "
        "get_num_cublas_streams() = 4, common/util/multi_stream.cpp) for the whole run: 4 x 32 MiB on Hopper "
        "and later, 4 x 4 MiB before. Memory only: the step-time model runs the experts as grouped GEMMs either way")
    moe_activation: Literal["fused", "unfused"] = Field(
        default="fused", description="how the routed experts weight their rows by the router probabilities: "
        "fused (Megatron-Core's weighted_bias_swiglu_impl / weighted_squared_relu_impl: the probabilities "
        "multiplied inside the activation kernel, which saves its input and the probabilities) | unfused (the "
        "activation, then a multiply by the probabilities, megatron/core/transformer/moe/experts.py "
        "TEGroupedMLP.forward and mlp.py MLP.forward without bias_activation_fusion: the multiply saves the "
        "activation's output as well, one more moe_ffn_hidden/etp elements per routed row; the only path for "
        "GeLU experts, for which Megatron-Core has no weighted kernel; modelled for non-gated experts)")
    attention_sink_kernel: Literal["fused", "rescale"] = Field(
        default="fused", description="where the attention sinks (model.attention_sinks) are applied: fused (inside "
        "the fused attention kernel: TransformerEngine's FusedAttention with softmax_type learnable, as Megatron-Core "
        "runs GPT-OSS) | rescale (the kernel runs without them and its output is rescaled by sigmoid(lse - sink) in "
        "eager PyTorch, fp32 by type promotion and cast back: NeMo AutoModel's FlexAttention path; "
        "schedule/attention.py)")
    glu_clamp_kernel: Literal["unfused", "fused"] = Field(
        default="unfused", description="how the routed experts' clamp (model.glu_clamp) runs: unfused "
        "(Megatron-Core's bias-activation fusion path, weighted_bias_quick_geglu_impl: each half of FC1's output "
        "clamped into a new tensor and the two concatenated again in eager PyTorch before the fused activation; "
        "backward the clamps' masked gradients and the split's concatenation) | fused (inside the activation "
        "kernel: TransformerEngine's op fuser ScaledClampedQGeGLU, NeMo AutoModel's torch.compile'd "
        "quick_geglu_deepep)")
    moe_router_kernels: list[Literal["random_logits", "aux_loss"]] = Field(
        default_factory=list, description="Megatron-Core router kernels beside the gating GEMM and the fused "
        "top-k (schedule/moe.py router_extra_cost): random_logits (moe_router_force_load_balancing's RandomSTE: "
        "the logits cloned and overwritten by normal_ draws) | aux_loss (a load-balancing loss, aux_loss or "
        "seq_aux_loss with moe_router_fusion: TE's fused scores for the loss, the tokens-per-expert sum, TE's "
        "fused loss and its tracker; backward the loss's and the scores' gradients summed into the logits')")
    moe_routing: Literal["learned", "round_robin"] = Field(
        default="learned", description="learned: a trained router (experts of a token spread at random, within "
        "topk_groups if set); round_robin: token t goes to experts t·k .. t·k+k-1 mod E, perfectly balanced "
        "(NeMo AutoModel's fake_balanced_gate benchmarks)")

    # Memory (simulator/schedule/memory.py): the loss implementation, whose logits buffers set the
    # last stage's peak, and the caching allocator's fragmentation (reserved − allocated).
    cross_entropy: Literal["vocab_parallel", "torch", "torch_lowp", "fused", "fused_linear"] = Field(
        default="vocab_parallel", description="loss implementation (its kernels' traffic and memory): vocab_parallel "
        "(Megatron's vocab_parallel_cross_entropy on fp32 logits, in place: 6 bytes per logit at its peak, six "
        "forward passes over them) | torch (F.cross_entropy(logits.float()), torchtitan/HF: 12 bytes per logit; "
        "16 with TP > 1, DTensor loss_parallel) | torch_lowp (F.cross_entropy on the bf16/fp16 logits as the model "
        "returns them: a Hugging Face causal LM called without labels, whose logits transformers no longer upcasts "
        "from 4.45: 6 bytes per logit) | fused (one cross-entropy kernel on the bf16 logits: flash-attn's, "
        "llm-foundry's default: 4 bytes per logit) | fused_linear (the LM head and the loss in one blockwise kernel "
        "that never writes the logits: Cut Cross-Entropy, NeMo AutoModel's FusedLinearCrossEntropy; no logits "
        "buffers, the head's GEMM run again in backward)")
    train_metrics: int = Field(
        default=0, ge=0, description="cross-entropy metrics computed on every micro-batch's logits besides the "
        "loss, after its backward (Composer's default training metrics of a causal LM, LanguageCrossEntropy and "
        "LanguagePerplexity: 2). Each is torch.nn.CrossEntropyLoss on the low-precision logits under autocast: a "
        "log-softmax in their dtype (three reads and a write) and the fp32 copy that nll_loss's autocast makes of "
        "its output")
    legacy_model: bool = Field(
        default=False, description="Megatron-LM's legacy GPT model (megatron/model/transformer.py: the default "
        "before --use-mcore-models, --use-legacy-models since; memory only): SwiGLU unfused (torch.chunk, "
        "F.silu, a multiply: the SiLU output is saved too, 2 bytes per FFN feature and token more than a fused "
        "bias-SwiGLU), and the flash-attn path keeps the kernel's output beside the contiguous s-b-h copy the "
        "output projection saves (micro-batch > 1)")
    compile: Literal["none", "blocks", "blocks_and_loss"] = Field(
        default="none", description="torch.compile of an FSDP2/PyTorch-layer stack (memory only): none (eager) | "
        "blocks (each transformer block compiled, torchtitan's apply_compile: AOTAutograd's min-cut partition "
        "saves only what the block's backward reads, so an op-level checkpointing policy's saved output that no "
        "backward op uses is not kept, schedule/memory.py compiled_unsaved_bytes) | blocks_and_loss (also the "
        "loss function, torchtitan's build_cross_entropy_loss from 2025: recorded, not modelled; see "
        "data/e2e/INDEX.md)")
    allocator_fragmentation: float = Field(
        default=0.10, ge=0, le=2, description="PyTorch caching-allocator fragmentation: reserved − allocated "
        "as a fraction of the activation and transient bytes (memory)")

    # The end of the step (simulator/schedule/optimizer.py): the Adam implementation and whether
    # gradients are clipped by their global norm.
    optimizer: Literal["fused", "foreach", "for_loop", "fp16_optimizer"] = Field(
        default="fused", description="Adam/AdamW implementation: fused (apex/TransformerEngine FusedAdam: "
        "Megatron-Core, NeMo, DeepSpeed) | foreach (torch.optim.AdamW's default on CUDA: torchtitan, FSDP2 "
        "stacks) | for_loop (one kernel per op per tensor: torch's foreach=False, Composer's DecoupledAdamW) | "
        "fp16_optimizer (Megatron-LM 2020's FP16_Optimizer: a per-tensor overflow check and gradient norm that "
        "synchronise the host on every tensor, fp32 master gradients, apex FusedAdam, the master weights copied "
        "back tensor by tensor)")
    optimizer_algorithm: Literal["adam", "sgd"] = Field(
        default="adam", description="the update rule: adam (Adam/AdamW, two moments per parameter) | sgd "
        "(torch.optim.SGD without momentum or weight decay: the gradients added into the weights, one pass over "
        "both and no optimizer state, in the optimizer implementation's launches; not with fp16_optimizer)")
    grad_clip: bool = Field(default=True, description="clip gradients by their global norm (Megatron's "
                            "--clip-grad, DeepSpeed's gradient_clipping, max_norm in torchtitan and llm-foundry): "
                            "a norm pass, a one-element AllReduce over the ranks holding different gradients, "
                            "a scaling pass")
    # What the optimizer updates, in which dtype (memory: model states; costs: the step's HBM bytes).
    master_dtype: Literal["fp32", "bf16"] = Field(
        default="fp32", description="dtype of the weights the optimizer updates and of the gradients it reads: "
        "fp32 (mixed precision: an fp32 master copy beside the bf16 weights, Megatron and DeepSpeed; FSDP2 over "
        "an fp32 model, torchtitan, whose sharded parameters and gradients are fp32) | bf16 (the model built and "
        "stepped in bf16, no fp32 copy anywhere: FSDP2 keeps bf16 shards and casts each reduced gradient back to "
        "them; NeMo AutoModel, whose from_config/from_pretrained torch_dtype defaults to bf16)")
    autocast: bool = Field(
        default=False, description="the forward runs under torch.autocast over fp32 parameters (nanoGPT, the "
        "Hugging Face Trainer's bf16/fp16 with DDP or one GPU): each linear's weight and bias cast to dtype every "
        "forward and their gradients cast back, the norms and the residual stream in fp32, each norm's output "
        "cast before its GEMM (schedule/autocast.py); eager layers (fused_kernels: false) with master_dtype fp32")
    te_dummy_wgrad: bool = Field(
        default=True, description="TransformerEngine >= 2.3 (with Megatron-Core >= 0.14 for its output layer) "
        "keeps one cached bf16 placeholder weight gradient per distinct weight shape when gradients accumulate "
        "into Megatron's main_grad (fused_kernels with gradient_accumulation_fusion, ZeRO 0-2): memory only "
        "(schedule/memory.py dummy_wgrad_bytes); false for older TransformerEngine, which returned none")
    optimizer_state_dtype: Literal["fp32", "bf16"] | None = Field(
        default=None, description="dtype of Adam's moments (exp_avg, exp_avg_sq); none: master_dtype's, as "
        "torch.optim allocates them (zeros_like the parameter). TransformerEngine's FusedAdam keeps them fp32 "
        "(exp_avg_dtype, exp_avg_sq_dtype) over bf16 parameters")

    fp8_recipe: Literal["delayed", "current", "rowwise", "blockwise", "mxfp8"] = Field(
        default="delayed", description="FP8 scaling recipe with dtype fp8 (simulator/schedule/fp8.py): delayed "
        "(TransformerEngine's default, amax history + amax AllReduce per pass) | current (per-tensor current "
        "scaling) | rowwise (per-row scales, torchao) | blockwise (1x128/128x128, DeepSeek-V3) | mxfp8 "
        "(1x32 MX blocks, Blackwell)")
    fp8_param_gather: bool = Field(
        default=False, description="gather the linear weights as FP8 (1 byte) instead of bf16, after one amax "
        "AllReduce per step: Megatron's --fp8-param-gather with the distributed optimizer (zero 1/2), "
        "torchtitan's enable_fsdp_float8_all_gather with FSDP2 (zero 3, fp8_recipe: current)")
    fp8_output_layer: bool = Field(
        default=False, description="with dtype fp8, run the output layer (the LM head's GEMMs and its sequence-"
        "parallel AllGather) in fp8 too: torchtitan's Float8 converter when filter_fqns leaves out \"output\". "
        "False: in the activation dtype, as every Megatron-Core stack runs it (GPTModel's output_layer is "
        "tensor_parallel.ColumnParallelLinear, a torch matmul outside TransformerEngine's fp8_autocast)")

    @model_validator(mode="after")
    def _routing(self) -> "Training":
        if self.norm_kernel != "auto" and self.fused_kernels:
            raise ValueError(f"norm_kernel: {self.norm_kernel} describes eager layers: it needs fused_kernels: false")
        if self.norm_input == "fp32" and (self.fused_kernels or self.norm_kernel != "fused"):
            raise ValueError("norm_input: fp32 is apex's mixed-dtype norm beside eager layers: it needs fused_kernels: "
                             f"false and norm_kernel: fused (got fused_kernels: {str(self.fused_kernels).lower()}, "
                             f"norm_kernel: {self.norm_kernel})")
        if self.recompute_norm_blocks and (self.fused_kernels or self.recompute in ("full", "selective_op")):
            raise ValueError("recompute_norm_blocks re-runs the eager dropout/add/norm blocks: it needs fused_kernels: "
                             f"false and recompute none or selective (got fused_kernels: "
                             f"{str(self.fused_kernels).lower()}, recompute: {self.recompute})")
        if self.masked_softmax == "torch" and (self.attention != "unfused" or not self.fused_kernels):
            raise ValueError("masked_softmax: torch is Megatron's fallback for unfused attention with fused kernels: "
                             f"it needs attention: unfused and fused_kernels: true (got attention: {self.attention}, "
                             f"fused_kernels: {str(self.fused_kernels).lower()})")
        if self.fused_attention_dropout and not self.dropout:
            raise ValueError("fused_attention_dropout prices an attention dropout of p > 0: it needs dropout: true "
                             "(got dropout: false)")
        if self.recompute_layers_chosen and self.recompute != "full":
            raise ValueError(f"recompute_method and recompute_num_layers choose the layers full recompute re-runs: "
                             f"they need recompute: full (got recompute: {self.recompute}, recompute_method: "
                             f"{self.recompute_method}, recompute_num_layers: {self.recompute_num_layers})")
        if self.recompute_method == "uniform" and self.recompute_num_layers < 1:
            raise ValueError("recompute_method: uniform checkpoints groups of recompute_num_layers layers: it needs "
                             f"at least 1 (got {self.recompute_num_layers})")
        if "moe_preprocess" in self.cuda_graph_scope and "moe_router" not in self.cuda_graph_scope:
            raise ValueError("cuda_graph_scope: moe_preprocess is captured in the moe_router graph (Megatron-Core "
                             "requires moe_router with it); add moe_router")
        # Megatron-Core's TransformerConfig: "full recompute is only supported with full iteration CUDA
        # graph", and a recompute module may not cover a graph's scope ("moe recompute is not supported
        # with moe_router CUDA graph")
        if self.cuda_graph_scope and self.recompute == "full":
            raise ValueError("cuda_graph_scope: per-layer CUDA graphs run with selective recompute or none, not "
                             "recompute: full (Megatron-Core allows full recompute only with a whole-iteration graph)")
        if "moe" in self.recompute_modules and "moe_router" in self.cuda_graph_scope:
            raise ValueError("cuda_graph_scope: moe_router is inside the MoE layer that recompute_modules moe "
                             "re-runs (Megatron-Core refuses a recompute module covering a graph); drop one of them")
        if self.recompute_modules and self.recompute == "full":
            raise ValueError("recompute_modules: full recompute already rebuilds every module; give one or the other")
        if self.fp8_recipe != "delayed" and self.dtype != "fp8":
            raise ValueError(f"fp8_recipe: {self.fp8_recipe} needs dtype: fp8 (got {self.dtype})")
        if self.fp8_param_gather and self.dtype != "fp8":
            raise ValueError(f"fp8_param_gather needs dtype: fp8 (got {self.dtype})")
        if self.fp8_output_layer and self.dtype != "fp8":
            raise ValueError(f"fp8_output_layer needs dtype: fp8 (got {self.dtype})")
        if self.moe_routing == "round_robin" and (self.moe_routing_seed is not None or self.moe_imbalance != 1.0):
            raise ValueError("moe_routing: round_robin is perfectly balanced; it takes no moe_imbalance or "
                             "moe_routing_seed")
        if self.optimizer_algorithm == "sgd" and self.optimizer == "fp16_optimizer":
            raise ValueError("optimizer_algorithm: sgd runs in torch.optim's fused, foreach or for_loop launches, "
                             "not Megatron-LM 2020's fp16_optimizer (an Adam step)")
        if self.optimizer_algorithm == "sgd" and self.optimizer_state_dtype:
            raise ValueError(f"optimizer_algorithm: sgd keeps no optimizer state; drop optimizer_state_dtype "
                             f"({self.optimizer_state_dtype})")
        if self.optimizer == "fp16_optimizer" and (self.master_dtype, self.state_dtype) != ("fp32", "fp32"):
            raise ValueError("optimizer: fp16_optimizer keeps fp32 master weights and moments (master_dtype and "
                             "optimizer_state_dtype fp32)")
        if self.autocast and (self.fused_kernels or self.master_dtype != "fp32" or self.dtype not in ("bf16", "fp16")):
            raise ValueError("autocast casts fp32 parameters for eager layers: it needs fused_kernels: false, "
                             f"master_dtype: fp32 and dtype bf16 or fp16 (got fused_kernels: "
                             f"{str(self.fused_kernels).lower()}, master_dtype: {self.master_dtype}, dtype: {self.dtype})")
        if self.autocast and self.norm_kernel == "composite":
            raise ValueError("norm_kernel: composite counts the RMSNorm's chain on 2-byte activations; under autocast "
                             "its input is the fp32 residual stream, which autocast's norm traffic prices with "
                             "PyTorch's own norm kernel: use norm_kernel auto")
        if self.master_dtype == "bf16" and self.dtype == "fp16":
            raise ValueError("master_dtype: bf16 steps the model's own weights, which are fp16 with dtype fp16")
        if self.optimizer in ("foreach", "for_loop") and self.state_dtype != self.master_dtype:
            raise ValueError(f"optimizer: {self.optimizer} (torch.optim) keeps its moments in the parameters' dtype: "
                             f"optimizer_state_dtype {self.state_dtype} with master_dtype {self.master_dtype}")
        return self

    @model_validator(mode="before")
    @classmethod
    def _legacy_flash_attention(cls, data: Any) -> Any:
        """``flash_attention: false`` (the earlier boolean) still means ``attention: unfused``."""
        if not isinstance(data, dict) or "flash_attention" not in data:
            return data
        data = dict(data)
        flash = data.pop("flash_attention")
        if not isinstance(flash, bool):
            raise ValueError("flash_attention: expected true or false (prefer attention: auto | flash1 | flash2 | flash3 | unfused)")
        if "attention" in data and (data["attention"] == "unfused") == flash:
            raise ValueError(f"flash_attention: {str(flash).lower()} contradicts attention: {data['attention']}")
        data.setdefault("attention", "auto" if flash else "unfused")
        return data

    @property
    def activation_fused(self) -> bool:
        """Whether the dense MLP's activation runs as one kernel each way (``activation_kernel``;
        auto follows ``fused_kernels``)."""
        return self.activation_kernel == "fused" or (self.activation_kernel == "auto" and self.fused_kernels)

    @property
    def recompute_layers_chosen(self) -> bool:
        """Whether ``recompute_method`` / ``recompute_num_layers`` say something other than their
        defaults (every layer, one at a time): what validation, reports and labels name."""
        return (self.recompute_method, self.recompute_num_layers) != ("uniform", 1)

    @property
    def flash_attention(self) -> bool:
        """Whether attention runs as a fused kernel (the score matrix is never stored)."""
        return self.attention != "unfused"

    @property
    def act_dtype(self) -> str:
        """Dtype of activations and of TP/CP/Ulysses traffic (fp8 runs only GEMMs in fp8)."""
        return "bf16" if self.dtype == "fp8" else self.dtype

    @property
    def act_bytes(self) -> int:
        return BYTES_PER_ELEMENT[self.act_dtype]

    @property
    def state_dtype(self) -> str:
        """Dtype of Adam's moments: ``optimizer_state_dtype``, else the master weights'."""
        return self.optimizer_state_dtype or self.master_dtype

    @property
    def master_bytes(self) -> int:
        return BYTES_PER_ELEMENT[self.master_dtype]

    @property
    def state_bytes(self) -> int:
        """Bytes of each optimizer state per parameter: Adam's two moments; SGD without momentum
        keeps none."""
        return 0 if self.optimizer_algorithm == "sgd" else BYTES_PER_ELEMENT[self.state_dtype]

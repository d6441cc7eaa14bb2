"""Model shape and training settings of a scenario (the ``model:`` and ``training:`` keys).

A model is a preset, an explicit shape, or a preset with some fields overridden. Every preset
cites the table its shape was read from; parameter counts follow from the shape
(:func:`simulator.schedule.flops.param_count`), they are not stored.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from simulator.units import BYTES_PER_ELEMENT

Mlp = Literal["swiglu", "gelu"]


def _gpt(layers: int, hidden: int, heads: int, vocab: int = 51200, seq_len: int = 2048) -> dict[str, Any]:
    """A Megatron GPT shape: MHA, GeLU MLP of 4h, learned positions, tied embeddings."""
    return dict(layers=layers, hidden=hidden, heads=heads, kv_heads=heads, ffn_hidden=4 * hidden, vocab=vocab,
                mlp="gelu", seq_len=seq_len, tied_embeddings=True, position_embedding="learned")


def _llama(layers: int, hidden: int, heads: int, kv_heads: int, ffn: int, vocab: int, seq_len: int) -> dict[str, Any]:
    """A Llama shape: GQA, SwiGLU, RoPE, untied input and output embeddings."""
    return dict(layers=layers, hidden=hidden, heads=heads, kv_heads=kv_heads, ffn_hidden=ffn, vocab=vocab,
                mlp="swiglu", seq_len=seq_len, tied_embeddings=False, position_embedding="rope")


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
}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Model(_Strict):
    """Transformer shape. ``preset`` fills every field not given explicitly."""

    preset: str | None = None
    layers: int = Field(gt=0)
    hidden: int = Field(gt=0)
    heads: int = Field(gt=0)
    kv_heads: int = Field(default=0, ge=0)  # 0: same as heads (MHA)
    ffn_hidden: int = Field(default=0, ge=0)  # 0: 4·hidden (gelu) or the Llama rule (swiglu)
    vocab: int = Field(gt=0)
    mlp: Mlp = "gelu"
    seq_len: int = Field(gt=0)
    tied_embeddings: bool = False
    position_embedding: Literal["rope", "learned"] = "rope"

    @model_validator(mode="before")
    @classmethod
    def _apply_preset(cls, data: Any) -> Any:
        if not isinstance(data, dict) or data.get("preset") is None:
            return data
        name = data["preset"]
        if not isinstance(name, str) or name not in PRESETS:
            raise ValueError(f"preset: unknown model preset {name!r}; expected one of {', '.join(sorted(PRESETS))}")
        return {**PRESETS[name], **data}

    @model_validator(mode="after")
    def _defaults(self) -> "Model":
        if self.kv_heads == 0:
            object.__setattr__(self, "kv_heads", self.heads)
        if self.ffn_hidden == 0:
            if self.mlp == "gelu":
                ffn = 4 * self.hidden
            else:  # Llama rule: 2/3 of 4h, rounded up to a multiple of 256
                ffn = -(-int(8 * self.hidden / 3) // 256) * 256
            object.__setattr__(self, "ffn_hidden", ffn)
        if self.hidden % self.heads:
            raise ValueError(f"hidden={self.hidden} is not divisible by heads={self.heads}")
        if self.heads % self.kv_heads:
            raise ValueError(f"kv_heads={self.kv_heads} does not divide heads={self.heads} (GQA groups)")
        return self

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def gated(self) -> bool:
        """SwiGLU has a gate and an up projection: 3 MLP matrices instead of 2."""
        return self.mlp == "swiglu"


class Training(_Strict):
    micro_batch: int = Field(gt=0)  # sequences per micro-batch
    global_batch: int = Field(gt=0)  # sequences per optimizer step
    dtype: Literal["bf16", "fp16", "fp8"] = "bf16"  # fp8: GEMMs in fp8, everything else bf16
    recompute: Literal["none", "selective", "full"] = "none"
    # The attention implementation. Fused kernels (FlashAttention and kin) keep only O(s)
    # softmax statistics, so the 5as²b score term of arXiv:2205.05198 is not stored even without
    # recompute; ``unfused`` materialises the scores (Megatron-LM 2020-2022; the paper's formula).
    attention: Literal["auto", "flash1", "flash2", "flash3", "unfused"] = Field(
        default="auto",
        description="attention kernel: auto (what Megatron-Core/TransformerEngine runs on the GPU: "
                    "the profile's gpu.default_attention, flash3-class on Hopper and later, flash2 "
                    "before) | flash1 (FlashAttention-1: flash-attn 1.x, Triton ports, 2022-2023 "
                    "stacks) | flash2 (FlashAttention-2, PyTorch SDPA) | flash3 (FlashAttention-3 / "
                    "cuDNN fused attention) | unfused (scores materialised in HBM; the older "
                    "flash_attention: false)")
    # Whether the stack fuses the memory-bound kernels around the GEMMs (Megatron-Core/TE:
    # fused LayerNorm, bias-GeLU/SwiGLU, bias-dropout-add, fused softmax). false models PyTorch
    # eager layers (one kernel per bias add, dropout, residual add, activation and norm), each
    # re-reading and re-writing the activation in HBM, e.g. llm-foundry/Composer 2023.
    fused_kernels: bool = True

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

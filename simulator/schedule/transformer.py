"""One transformer layer (and the embedding / LM head) for one micro-batch on one rank.

Forward, as Megatron-Core's ``TransformerLayer`` runs it: input norm → QKV (column-parallel) →
attention core (local FlashAttention, or the Ulysses / Ring / Megatron-CP pattern) → output
projection (row-parallel) → residual → norm → FC1 (column-parallel) → activation → FC2
(row-parallel) → residual. Backward runs the same blocks in reverse. Recompute re-runs forward ops
inside backward: the whole layer (``full``; only the layers :mod:`~simulator.schedule.checkpointing`
picks) before its backward, only the attention core
(``selective``) before the attention backward, or torchtitan's op-level policy (``selective_op``:
every second GEMM and the elementwise ops, not the attention core) before the layer's backward. Re-run ops are renamed ``*.recompute``, tagged
``bwd`` and given distinct P2P keys so their sends meet their own receives.

The TP linear layers come from :mod:`simulator.schedule.tensor_parallel` (with tp = 1 they are
plain GEMMs) and the attention patterns from their own modules.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable

from simulator.config.scenario import Scenario
from simulator.config.workload import attention_window
from simulator.schedule import (attention, autocast, checkpointing, context_parallel, cuda_graphs, data_loading,
                                deterministic_fill, fp8, mamba, moe, ring_attention, tensor_parallel, ulysses)
from simulator.schedule.attention import AttentionContext
from simulator.schedule.ir import (CollectiveKind, CommOp, ComputeKind, ComputeOp, Gate, P2POp, ProgramBuilder, Tag,
                                   Transfer, layer_marker, make_tag, restamp_constructor)
from simulator.schedule.loss import CrossEntropyImpl, loss_kernels, metric_kernels
from simulator.schedule.shapes import RankShapes, mla_weights


@dataclass(frozen=True)
class LayerSpec:
    """Per-rank shapes of every layer of one role (pipeline stage, CP index): the scenario's
    :class:`~simulator.schedule.shapes.RankShapes` plus the model and kernel settings."""

    shape: RankShapes
    hidden: int
    head_dim: int
    gated: bool
    overlap: str
    dtype: str  # GEMM dtype
    act_dtype: str
    act_bytes: int
    recompute: str
    cp_rank: int
    cp_comm: str
    sms: int
    cp_a2a: int | None = None
    cp_qkv_format: str = "sbhd"  # parallel.cp_qkv_format
    attention: str = ""  # resolved training.attention: flash2 | flash3 | unfused ("": the GPU's default)
    fused_kernels: bool = True
    mlp: str = "gelu"  # model.mlp: the dense MLP's activation (Elementwise.of)
    act_fused: bool = True  # training.activation_kernel resolved: the activation as one fused kernel
    moe: moe.MoESpec | None = None  # the MoE block of layers >= first_dense (None: a dense model)
    first_dense: int = 0
    qkv_out: int = 0  # output features of the QKV GEMM per TP rank (0: (heads + 2 kv_heads)·head_dim / tp)
    attn_dim: int = 0  # head dim the attention core is priced at (0: head_dim; MLA: (d_qk + d_v)/2)
    proj_in: int = 0  # input features of the output projection per TP rank (0: heads·head_dim / tp)
    fp8_recipe: str = "delayed"
    fp8_output_layer: bool = False  # training.fp8_output_layer: the LM head's GEMMs in fp8 (:meth:`_head_tp`)
    async_tp_allreduce: bool = True  # parallel.async_tensor_model_parallel_allreduce
    tp_sm_margin: bool = True  # parallel.tp_overlap_sm_margin
    tp_gemm_sms: tuple[tuple[str, int], ...] = ()  # parallel.tp_overlap_gemm_sms, sorted
    tp_methods: tuple[tuple[str, tensor_parallel.Method], ...] = ()  # parallel.tp_overlap_methods, sorted
    cross_entropy: CrossEntropyImpl = "vocab_parallel"  # training.cross_entropy (schedule/loss.py)
    train_metrics: int = 0  # training.train_metrics: cross-entropy metrics over the logits (schedule/loss.py)
    dropout: bool = True  # training.dropout: hidden and attention dropouts active (p > 0)
    deterministic: bool = False  # training.deterministic: the attention backward's deterministic algorithm
    fused_attention_dropout: bool = False  # training.fused_attention_dropout: the fused kernel's dropout RNG
    mask_h2d_us: float = 0.0  # training.dataloader_attention_mask: the mask's H2D copy a micro-batch (0: none)
    mask_at_head: bool = False  # with PP the last stage loads the mask again, before the LM head
    norm_kernel: str = "auto"  # training.norm_kernel
    norm_input: str = "act"  # training.norm_input: act | fp32 (Elementwise.of)
    recompute_norm_blocks: bool = False  # training.recompute_norm_blocks (LayerBuilder._backward)
    linear_bias: str = "none"  # training.linear_bias: none | epilogue | separate (LayerBuilder._bias)
    autocast: bool = False  # training.autocast: fp32 parameters cast per forward (LayerBuilder._autocast)
    arch: str = "hopper"  # the GPU's architecture: whether per-tensor FP8 GEMMs need a transposed copy (fp8.py)
    recompute_norm: bool = False  # training.recompute_modules layernorm: the MoE layers' pre-MLP norm rebuilt
    recompute_moe: bool = False  # training.recompute_modules moe: the MoE layers' whole forward re-run in backward
    graph_scopes: frozenset[str] = frozenset()  # training.cuda_graph_scope: what CUDA graphs capture of each layer
    kept_layers: frozenset[int] = frozenset()  # layers full recompute leaves out (schedule/checkpointing.py)
    pattern: str = ""  # model.layer_pattern: one block per layer (M, *, -, E); "" for attention + MLP layers
    mamba: mamba.MambaShape | None = None  # the Mamba2 mixer of the M blocks on this rank
    alibi: bool = False  # model.position_embedding alibi: the scores start from the bias (attention.py)
    masked_softmax: str = "fused"  # training.masked_softmax: unfused attention's softmax kernel (attention.py)
    qk_norm: bool = False  # model.qk_norm: the queries and keys normalised per head (:meth:`LayerBuilder._qk_norm`)
    rope_dim: int = 0  # model.position_embedding rope: dims rotated per query/key head (0: no RoPE; MLA: d_r)
    rope_kernel: str = "auto"  # training.rope_kernel (:meth:`LayerBuilder._rope`)
    rope_k_heads: int = -1  # key heads rotated per TP rank (-1: the rank's KV heads; MLA: its one shared k_pe)
    sliding_window: int = 0  # model.sliding_window: keys a query sees in a windowed layer (0: none)
    full_attention_every: int = 0  # model.full_attention_every (Model.attention_window)
    sink_rescale: bool = False  # model.attention_sinks applied after the kernel (training.attention_sink_kernel)
    # which of TransformerEngine's GEMM, norm and fused-attention outputs PyTorch fills with NaN as
    # they are allocated (training.torch_deterministic, schedule/deterministic_fill.py)
    fill: deterministic_fill.Fill = deterministic_fill.Fill()

    @classmethod
    def from_scenario(cls, scn: Scenario, cp_rank: int = 0) -> "LayerSpec":
        m, t, p = scn.model, scn.training, scn.parallel
        shape = RankShapes.of(scn)
        return cls(shape=shape, moe=moe.MoESpec.from_scenario(scn) if m.moe else None,
                   first_dense=m.first_dense_layers, **_mla_shapes(scn), fp8_recipe=t.fp8_recipe,
                   fp8_output_layer=t.fp8_output_layer, hidden=m.hidden,
                   head_dim=m.head_dim, gated=m.gated,
                   overlap=p.tp_overlap if p.tp > 1 else "none", dtype=t.dtype, act_dtype=t.act_dtype,
                   act_bytes=t.act_bytes, recompute=t.recompute, cp_rank=cp_rank, cp_comm=p.cp_comm,
                   sms=scn.profile.gpu.sms, cp_a2a=p.cp_a2a, cp_qkv_format=p.cp_qkv_format,
                   attention=attention.resolve_kernel(scn.profile.gpu, t), fused_kernels=t.fused_kernels,
                   mlp=m.mlp, act_fused=t.activation_fused,
                   async_tp_allreduce=p.async_tensor_model_parallel_allreduce,
                   tp_sm_margin=p.tp_overlap_sm_margin,
                   tp_gemm_sms=tuple(sorted(p.tp_overlap_gemm_sms.items())),
                   tp_methods=tuple(sorted(p.tp_overlap_methods.items())), cross_entropy=t.cross_entropy,
                   train_metrics=t.train_metrics, dropout=t.dropout, deterministic=t.deterministic,
                   fused_attention_dropout=t.fused_attention_dropout,
                   mask_h2d_us=data_loading.h2d_us(data_loading.mask_bytes(t.micro_batch, m.seq_len),
                                                   scn.profile.node.pcie.Bps) if t.dataloader_attention_mask else 0.0,
                   mask_at_head=p.pp > 1,
                   norm_kernel=t.norm_kernel, norm_input=t.norm_input, recompute_norm_blocks=t.recompute_norm_blocks,
                   linear_bias=t.linear_bias, autocast=t.autocast, arch=scn.profile.gpu.arch,
                   recompute_norm="layernorm" in t.recompute_modules, recompute_moe="moe" in t.recompute_modules,
                   graph_scopes=frozenset(t.cuda_graph_scope), kept_layers=checkpointing.kept_layers(scn),
                   pattern=m.layer_pattern,
                   mamba=mamba.MambaShape.of(m, p.tp) if m.mamba_heads else None,
                   alibi=m.position_embedding == "alibi", qk_norm=m.qk_norm, rope_kernel=t.rope_kernel,
                   masked_softmax=t.masked_softmax, sliding_window=m.sliding_window,
                   full_attention_every=m.full_attention_every,
                   sink_rescale=m.attention_sinks and t.attention_sink_kernel == "rescale",
                   fill=deterministic_fill.Fill.of(scn),
                   **_rope_shape(scn))

    @property
    def elementwise(self) -> "Elementwise":
        return Elementwise.of(self.fused_kernels, self.gated, self.dropout, self.norm_kernel, self.norm_input,
                              self.mlp, self.act_fused)

    def block(self, layer: int) -> str:
        """The layer's block in a hybrid model (``model.layer_pattern``: M, *, - or E); "" for a GPT
        layer (attention and MLP), and for an MTP depth beyond the pattern."""
        return self.pattern[layer] if self.pattern and layer < len(self.pattern) else ""

    def window(self, layer: int) -> int:
        """Keys each query of ``layer``'s attention sees (0: its whole causal prefix), by
        :func:`simulator.config.workload.attention_window`."""
        return attention_window(self.sliding_window, self.full_attention_every, layer)

    def is_moe(self, layer: int) -> bool:
        if self.block(layer):
            return self.block(layer) == "E"
        return self.moe is not None and layer >= self.first_dense

    @property
    def b(self) -> int:
        """Sequences per micro-batch."""
        return self.shape.micro_batch_size

    @property
    def seq(self) -> int:
        return self.shape.seq_len

    @property
    def seq_local(self) -> int:
        """seq / (cp · ulysses): tokens of a sequence before the SP split."""
        return self.shape.seq_local

    @property
    def tp(self) -> int:
        return self.shape.tp

    @property
    def sp(self) -> bool:
        """Sequence parallelism in effect."""
        return self.shape.sequence_parallel

    @property
    def cp(self) -> int:
        return self.shape.cp

    @property
    def ulysses(self) -> int:
        return self.shape.ulysses

    @property
    def tokens(self) -> int:
        """Rows of the TP GEMMs: b · s_local."""
        return self.shape.tokens

    @property
    def sharded_tokens(self) -> int:
        """Tokens outside the TP region (norms, residual): split over tp under SP."""
        return self.shape.sp_tokens

    @property
    def act(self) -> int:
        """Bytes of one full local hidden activation, A = b·s_local·h·B."""
        return self.tokens * self.hidden * self.act_bytes


def _mla_shapes(scn: Scenario) -> dict[str, int]:
    """GEMM shapes of multi-head latent attention (DeepSeek-V2/V3) as one QKV GEMM per TP rank of
    the same FLOPs: the down projections (h→r_q, h→r_kv+d_r) are replicated on every TP rank
    (Megatron's MLA builds them ``duplicated``), the up projections are column-parallel. The
    attention core is priced at head dim (d_qk + d_v)/2 so QKᵀ and PV add up."""
    m, t = scn.model, scn.parallel.tp
    if not m.mla:
        return {}
    w = mla_weights(scn)
    return dict(qkv_out=max(1, round((w.down + w.up / t) / m.hidden)),
                attn_dim=(m.head_dim + m.qk_rope_head_dim + m.v_head_dim) // 2, proj_in=m.heads * m.v_head_dim // t)


def _rope_shape(scn: Scenario) -> dict[str, int]:
    """What RoPE rotates per token on a rank: every query and key head over ``head_dim``, or, with
    multi-head latent attention, the ``qk_rope_head_dim`` part of each query head and the one
    decoupled key ``k_pe`` shared by the heads, which each TP rank computes whole (Megatron-Core's
    ``MLASelfAttention.get_query_key_value_tensors``: ``apply_rotary_pos_emb`` on ``q_pos_emb`` and
    ``k_pos_emb``, megatron/core/transformer/multi_latent_attention.py)."""
    m = scn.model
    if m.position_embedding != "rope":
        return {}
    if m.mla:
        return dict(rope_dim=m.qk_rope_head_dim, rope_k_heads=1)
    return dict(rope_dim=m.head_dim)


# ---------------------------------------------------------------------------------------------
# pattern dispatch


def attention_pattern(spec: LayerSpec) -> tuple[Callable, Callable]:
    """(forward, backward) of the attention core this plan uses."""
    if spec.ulysses > 1:
        return ulysses.forward, ulysses.backward
    if spec.cp > 1 and spec.cp_comm == "ring":
        return ring_attention.forward, ring_attention.backward
    if spec.cp > 1:
        return context_parallel.forward, context_parallel.backward
    if spec.attention == "unfused":
        return attention.unfused_forward, attention.unfused_backward
    return attention.local_forward, attention.local_backward


# ---------------------------------------------------------------------------------------------
# helpers


def _deps(*idx: int | tuple[int, ...]) -> tuple[int, ...]:
    out: list[int] = []
    for i in idx:
        for j in (i if isinstance(i, tuple) else (i,)):
            if j >= 0 and j not in out:
                out.append(j)
    return tuple(out)



def unfused_rope_cost(act_bytes: int, backward: bool) -> tuple[float, int]:
    """HBM bytes per rotated element and kernels per tensor (q or k) of Megatron-Core's unfused
    ``_apply_rotary_pos_emb_bshd`` (megatron/core/models/common/embeddings/rope_utils.py at
    Megatron-LM 4415119) with the rotary dimension the whole head (``t_pass`` empty), in units of
    B = ``act_bytes``. Forward: ``t * cos_`` (read and write, 2), ``_rotate_half``'s ``-x2`` on
    half the elements (1) and ``torch.cat((-x2, x1))`` (2), ``* sin_`` (2), the add (3) and
    ``torch.cat((t, t_pass))`` (2): 12 B in 6 kernels, plus the cos/sin tables (``cos``, ``*
    mscale``, ``.to`` for each: 6 kernels on s x d values, bytes not counted). Backward, autograd:
    the two multiplies (2 + 2), the negation (1), ``chunk``'s SplitBackward concatenating the
    halves (2), the two paths' gradients summed (3), and the slices' SliceBackward (a zero-filled
    tensor and the copy into it, 1 + 2, and the empty ``t_pass``'s zero-filled gradient, 1)
    summed into the input's gradient (3): 17 B in 9 kernels. The fused kernel is 2 B in one."""
    if backward:
        return 17.0 * act_bytes, 9
    return 12.0 * act_bytes, 12


def _mem_op(pb: ProgramBuilder, name: str, kind: ComputeKind, nbytes: float, deps: tuple[int, ...], tag: Tag,
            count: int = 1, impl: str = "", fill: float = 0.0) -> int:
    """A memory-bound kernel (norm, residual add, activation), or `count` back-to-back ones moving
    `nbytes` together: ~1 FLOP per byte moved. ``impl`` "eager": PyTorch's native norm kernel;
    "autocast": autocast's casts, issued inside other ops (their host cost, costs/host.py).
    ``fill``: bytes of its output PyTorch fills as it allocates it (schedule/deterministic_fill.py)."""
    return pb.add(ComputeOp(name=name, kind=kind, flops=nbytes / 2, hbm_bytes=nbytes, deps=deps, tag=tag,
                            count=count, impl=impl, fill_bytes=fill, fill_kernels=1 if fill else 0))


def _cast_op(pb: ProgramBuilder, name: str, cast: autocast.CastPass, deps: tuple[int, ...], tag: Tag) -> int:
    """Autocast's casts and fp32-stream traffic of one pass (:mod:`simulator.schedule.autocast`), as
    one op of that many copy kernels, issued inside the ops they feed (``impl`` "autocast")."""
    return _mem_op(pb, name, "copy", cast.hbm_bytes, deps, tag, cast.kernels, "autocast")


@dataclass(frozen=True)
class Elementwise:
    """HBM traffic of the memory-bound blocks of one layer pass, in units of one hidden
    activation hb = tokens·h·B (or, for the activation, of tokens·ffn/tp·B), and how many kernels
    each block launches.

    Fused (Megatron-Core / TransformerEngine; Megatron-LM's fused_kernels and
    fused_bias_dropout_add / bias_gelu jit functions): a block is one kernel reading its inputs
    and writing its outputs once; e.g. bias-dropout-add + LayerNorm reads x and the residual and
    writes the sum and the normalised output (4 hb).

    Unfused (PyTorch eager, one kernel per torch op): dropout reads x, writes y and a 1-byte mask
    (2.5 hb with 2-byte activations), the residual add reads two tensors and writes one (3 hb);
    SwiGLU is silu (2) then a multiply (3). Backward: where the residual stream forks (a layer's
    input feeds its norm and its residual add, twice per layer), autograd adds the two incoming
    gradients (3 hb), and each dropout' reads the gradient and the mask and writes (2.5 hb). A
    dropout of p = 0 launches nothing (ATen's ``dropout`` returns its input when p == 0,
    aten/src/ATen/native/Dropout.cpp): ``dropout`` false. The norm is a kernel of its own
    (``ln_fwd``, ``ln_bwd``): LayerNorm reads and writes (2 hb); its backward is the grad-input
    kernel (reads x and dy, writes dx) and the gamma/beta reduction (reads dy and x again): 5 hb
    in two kernels (aten/src/ATen/native/cuda/layer_norm_kernel.cu; apex's FusedLayerNorm is
    the same two passes). PyTorch's own norm kernels are priced at the native-norm bandwidth of
    :mod:`simulator.costs.memory_bound` (``norm_impl`` eager), apex's at the streaming one
    (``norm_kernel: fused`` with eager layers, Megatron-LM 2020). The reference Llama RMSNorm
    written as PyTorch ops (``norm_kernel: composite``, :func:`composite_rms_norm`) is a chain of
    streaming kernels on an fp32 upcast: 18 hb in 8 kernels forward, 46 hb in 15 backward. Counts
    of bytes, not measurements: the kernel model turns them into time. Fused stacks have no
    separate norm block (0, 0).

    ``norm_input`` fp32 (InternLM 2023: ``self.norm1(residual.float())`` into apex's
    ``MixedFusedRMSNorm``, modeling_internlm.py at fa7337b): the cast reads the activation and
    writes it in fp32 (1 + 2 hb), the norm reads fp32 and writes the activation dtype (2 + 1 hb),
    and apex's mixed-dtype kernel returns an fp32 input gradient (``empty_like(input)``), so its
    two backward passes each read dy and the fp32 x and the grad-input pass writes fp32
    (2·(1 + 2) + 2 = 8 hb), then autograd's cast back reads fp32 and writes the activation
    (2 + 1 hb): 6 hb in two kernels forward, 11 hb in three backward (2 and 5 for a norm on the
    activation itself, by the same counts).
    """

    res_ln_fwd: tuple[float, int]
    res_fwd: tuple[float, int]
    act_fwd: tuple[float, int]
    res_bwd: tuple[float, int]
    res_ln_bwd: tuple[float, int]
    act_bwd: tuple[float, int]
    ln_fwd: tuple[float, int] = (0.0, 0)
    ln_bwd: tuple[float, int] = (0.0, 0)
    norm_impl: str = ""  # "eager": PyTorch's native norm kernels
    eager: bool = False  # residual, dropout and norm are kernels of their own

    @property
    def norm_fwd(self) -> tuple[float, int]:
        """Any norm of the layer on its own (the input norm, the final norm): fused 2 hb."""
        return self.ln_fwd if self.ln_fwd[1] else (2, 1)

    @property
    def norm_bwd(self) -> tuple[float, int]:
        return self.ln_bwd if self.ln_bwd[1] else (3, 1)

    @classmethod
    def of(cls, fused: bool, gated: bool, dropout: bool = True, norm_kernel: str = "auto",
           norm_input: str = "act", mlp: str = "", act_fused: bool | None = None) -> "Elementwise":
        """``mlp`` names the activation (default: swiglu when gated, else gelu); ``act_fused`` whether
        it runs as one kernel each way (default: as the rest of the layer, ``fused``)."""
        act_fwd, act_bwd = activation_traffic(mlp or ("swiglu" if gated else "gelu"),
                                              fused if act_fused is None else act_fused)
        if fused:
            return cls(res_ln_fwd=(4, 1), res_fwd=(3, 1), act_fwd=act_fwd,
                       res_bwd=(3, 1), res_ln_bwd=(5, 1), act_bwd=act_bwd)
        drop, k = (2.5, 1) if dropout else (0.0, 0)
        ln_fwd: tuple[float, int]
        ln_bwd: tuple[float, int]
        if norm_input == "fp32":
            ln_fwd, ln_bwd = (FP32_NORM_FWD_HB, 2), (FP32_NORM_BWD_HB, 3)
        elif norm_kernel == "composite":
            ln_fwd, ln_bwd = COMPOSITE_NORM_FWD_HB, COMPOSITE_NORM_BWD_HB
        else:
            ln_fwd, ln_bwd = (2, 1), (5, 2)
        return cls(res_ln_fwd=(drop + 3, k + 1), res_fwd=(drop + 3, k + 1), act_fwd=act_fwd,
                   res_bwd=(3 + drop, 1 + k), res_ln_bwd=(3 + drop, 1 + k), act_bwd=act_bwd,
                   ln_fwd=ln_fwd, ln_bwd=ln_bwd, norm_impl="eager" if norm_kernel in ("auto", "eager") else "",
                   eager=True)


# The dense MLP's activation as PyTorch's eager ops run it, (traffic in units of tokens·ffn/tp·B,
# kernels), forward and backward: GeLU is one kernel each way (F.gelu, gelu_backward); SwiGLU is
# silu (2) then a multiply (3), backward the multiply's two gradients and silu_backward; squared
# ReLU, torch.pow(F.relu(x), 2), is relu (2) and pow (2) forward, and backward autograd's
# pow_backward, grad * (2 * x.pow(1)) (a copy, 2, since ATen's pow with exponent 1 copies; a
# scalar multiply, 2; the multiply by grad, 3), then relu's threshold_backward (3).
EAGER_ACTIVATION: dict[str, tuple[tuple[float, int], tuple[float, int]]] = {
    "gelu": ((2, 1), (3, 1)),
    "swiglu": ((2 + 3, 2), (3 + 5, 3)),
    "squared_relu": ((2 + 2, 2), (2 + 2 + 3 + 3, 4)),
}


def activation_traffic(mlp: str, fused: bool) -> tuple[tuple[float, int], tuple[float, int]]:
    """(forward, backward) (traffic, kernels) of the dense MLP's activation: one fused kernel each
    way reads its input and writes its output (SwiGLU: the gate and the up halves, 3 forward and 5
    backward), or the eager ops of :data:`EAGER_ACTIVATION`."""
    if fused:
        return ((3, 1), (5, 1)) if mlp == "swiglu" else ((2, 1), (3, 1))
    return EAGER_ACTIVATION[mlp]


def composite_rms_norm(act_bytes: int, weight_bytes: int) -> tuple[tuple[float, int], tuple[float, int]]:
    """(forward, backward) (bytes per element, kernels) of the reference Llama RMSNorm written as
    PyTorch ops (``norm_kernel: composite``): Hugging Face's ``LlamaRMSNorm``, torchtitan's
    ``RMSNorm`` of 2024 (torchtitan/models/norms.py at f38766edb) and FMS's
    ``LayerNormParameterized(use_high_precision_pow=True)`` (fms/modules/layernorm.py) all run

        xf = x.float(); r = rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
        y = weight * (xf * r).type_as(x)

    one kernel per op on an activation of B = ``act_bytes`` and a weight of W bytes (the product
    in O = max(B, W)). Forward: the upcast (read B, write 4; none when B = 4), ``pow`` (8),
    ``mean`` (4), ``+ eps`` and ``rsqrt`` on one value per row (two launches, no traffic), the
    multiply (8), the cast back (4 + B; none when B = 4), the scale (B + O). Backward, autograd's
    graph of the same ops: the scale's two gradients (g·w: 2·O, cast to B when O ≠ B: O + B; g·h
    for the weight: B + 2·O, summed over the rows: O), the cast back's (B + 4), the multiply's
    (g·r: 8; g·xf summed over the row: 12 + 4), rsqrt's on the row values (two launches),
    ``mean``'s (the expanded gradient divided: 4), ``pow``'s (ATen's ``grad * (2 * xf.pow(1))``: a
    copy, a scalar multiply and the product, 8 + 8 + 12), the two gradients of xf added (12) and
    the upcast's (4 + B). So 28 + 4B bytes in 8 kernels forward and 76 + 8B in 15 backward for
    bf16 weights and activations: 36 and 92 bytes, 18 and 46 activations' worth, where PyTorch's
    own norm kernel moves 2 and 5 (the weight's own h elements per call are left out)."""
    b, w = act_bytes, weight_bytes
    o = max(b, w)
    casts = b < 4
    fwd = (b + 4 if casts else 0) + 8 + 4 + 8 + (4 + b if casts else 0) + (b + o)
    fwd_k = 6 + (2 if casts else 0)
    bwd = (2 * o + (o + b if o != b else 0) + (b + 2 * o) + o + (b + 4 if casts else 0) + 8 + 12 + 4 + 4
           + 8 + 8 + 12 + 12 + (4 + b if casts else 0))
    bwd_k = 3 + (1 if o != b else 0) + 10 + (2 if casts else 0)
    return (float(fwd), fwd_k), (float(bwd), bwd_k)


# The composite RMSNorm of a bf16 model (weights in the activations' dtype, as FSDP's param_dtype
# gathers them), in hb (2-byte activations, as the other eager counts)
_COMPOSITE_FWD_BF16, _COMPOSITE_BWD_BF16 = composite_rms_norm(2, 2)
COMPOSITE_NORM_FWD_HB: tuple[float, int] = (_COMPOSITE_FWD_BF16[0] / 2, _COMPOSITE_FWD_BF16[1])
COMPOSITE_NORM_BWD_HB: tuple[float, int] = (_COMPOSITE_BWD_BF16[0] / 2, _COMPOSITE_BWD_BF16[1])

# A norm fed an fp32 copy of a 2-byte activation (Elementwise, norm_input fp32), in hb: forward the
# cast (read 1, write 2) and the norm (read 2, write 1); backward the norm's two passes reading dy (1)
# and x (2) each and writing dx in fp32 (2), then the cast back (read 2, write 1)
FP32_NORM_FWD_HB = (1 + 2) + (2 + 1)
FP32_NORM_BWD_HB = 2 * (1 + 2) + 2 + (2 + 1)


def _residual_norm(pb: ProgramBuilder, prefix: str, direction: str, ew: Elementwise, hb: float,
                   deps: tuple[int, ...], tag: Tag, fill: float = 0.0) -> int:
    """The residual add after attention and the MLP's input norm: one fused kernel
    (``res1_ln2``), or PyTorch eager's dropout and add (``res1``) and its own norm kernel
    (``ln2``), the norm first in backward."""
    (nbytes, count) = ew.res_ln_fwd if direction == "fwd" else ew.res_ln_bwd
    if not ew.eager:
        return _mem_op(pb, f"{prefix}.res1_ln2.{direction}", "norm", nbytes * hb, deps, tag, count, fill=fill)
    norm = ew.ln_fwd if direction == "fwd" else ew.ln_bwd
    parts: list[tuple[str, ComputeKind, float, int, str]] = [("res1", "elementwise", nbytes, count, ""),
                                                             ("ln2", "norm", norm[0], norm[1], ew.norm_impl)]
    for name, kind, b, k, impl in (parts if direction == "fwd" else parts[::-1]):
        deps = (_mem_op(pb, f"{prefix}.{name}.{direction}", kind, b * hb, deps, tag, k, impl,
                        fill if kind == "norm" else 0.0),)
    return deps[0]


def mark_recompute(pb: ProgramBuilder, start: int) -> None:
    """Rename ops appended since `start` as a recompute inside backward (distinct P2P keys)."""
    for i in range(start, len(pb.ops)):
        op = pb.ops[i]
        tag = replace(op.tag, phase="bwd")
        if isinstance(op, P2POp):
            pb.ops[i] = replace(op, name=op.name + ".recompute", tag=tag,
                                sends=tuple(replace(t, key=t.key + ".recompute") for t in op.sends),
                                recvs=tuple(replace(t, key=t.key + ".recompute") for t in op.recvs))
        else:
            pb.ops[i] = replace(op, name=op.name + ".recompute", tag=tag)


@dataclass(frozen=True)
class _Template:
    """The ops of one layer pass with their dependencies made symbolic: k >= 0 is the k-th op of
    the block, -1 the block's `after`, -2-k the k-th wait of the attention block and
    -1000-k the k-th wait of the MLP block. `state` holds each op's field values."""

    types: tuple[type[ComputeOp] | type[CommOp] | type[P2POp], ...]
    state: tuple[tuple, ...]
    deps: tuple[tuple[int, ...], ...]
    tags: tuple[Tag, ...]  # the distinct tags of the pass
    tag_of: tuple[int, ...]  # each op's index into `tags`
    result: int
    single_dep: tuple[int, ...]  # per op: k when its deps are the k-th op of the block alone, else -1
    # (start, after, wa, wm, state, tags) -> the stamped ops (:func:`_stamper`); None: stamped
    # op by op (:func:`_stamp_ops`). A function of the types, dependencies and tag indices only,
    # so a relabeled template (``replace``) keeps its own's.
    stamper: Callable[..., tuple] | None = field(default=None, compare=False, repr=False)
    # The template this one was relabeled from (:func:`_relabeled`), whose ops have every field of
    # this one's but their names and P2P keys; None: this one is its own.
    origin: "_Template | None" = field(default=None, compare=False, repr=False)


def _wait_shape(after: int, wa: tuple[int, ...], wm: tuple[int, ...]) -> tuple[int, ...]:
    """Which of a pass's external dependencies are the same op (e.g. one parameter AllGather both
    the attention and the MLP block wait on): a template serves every call of the same shape."""
    if not wa and not wm:
        return (0,)
    ext = (after, *wa, *wm)
    return tuple(ext.index(v) for v in ext)


def _keys_follow_tag(op: P2POp, layer: int, mb: int) -> bool:
    """Whether ``op`` can stand in a template as it is: a layer pass's P2P keys name the layer
    once and hold the placeholder for the micro-batch (``ir.layer_key``: ``tp.L3.mb<MB>.fc1.step1``,
    ``ring.L3.mb<MB>.fwd.kv.step2``), which its tag names (``mb``), so a stamp for another
    micro-batch keeps its transfers. Where not, the pass is built every time."""
    marker = layer_marker(layer)
    return op.tag.mb_index == mb and all(t.key.count(marker) == 1 for t in (*op.sends, *op.recvs))


def _symbolic(pb: ProgramBuilder, start: int, result: int, after: int, wa: tuple[int, ...],
              wm: tuple[int, ...], layer: int, mb: int) -> _Template | None:
    ext: dict[int, int] = {}  # op index -> symbol; an op both blocks wait on keeps its first symbol
    if after >= 0:
        ext[after] = -1
    for k, w in enumerate(wa):
        ext.setdefault(w, -2 - k)
    for k, w in enumerate(wm):
        ext.setdefault(w, -1000 - k)
    deps = []
    ops: list[ComputeOp | CommOp | P2POp] = []
    for op in pb.ops[start:]:
        if isinstance(op, P2POp) and not _keys_follow_tag(op, layer, mb):
            return None  # a key that does not name this layer's micro-batch: build every time
        ops.append(op)
        row = []
        for d in op.deps:
            if d >= start:
                row.append(d - start)
            elif d in ext:
                row.append(ext[d])
            else:
                return None
        deps.append(tuple(row))
    tags: dict[Tag, int] = {}
    for op in ops:
        tags.setdefault(op.tag, len(tags))
    types = tuple(type(op) for op in ops)
    tag_of = tuple(tags[op.tag] for op in ops)
    return _Template(types, tuple(tuple(getattr(op, n) for n in type(op).__slots__) for op in ops),
                     tuple(deps), tuple(tags), tag_of, result - start,
                     tuple(row[0] if len(row) == 1 and row[0] >= 0 else -1 for row in deps),
                     _stamper(types, tuple(deps), tag_of))


_P2P_XFERS = (P2POp.__slots__.index("sends"), P2POp.__slots__.index("recvs"))
# (a template op's field values, new deps, new tag) -> the op (ir.restamp_constructor)
_RESTAMP: dict[type, Callable[[tuple, tuple[int, ...], Tag], ComputeOp | CommOp | P2POp]] = {
    cls: restamp_constructor(cls) for cls in (ComputeOp, CommOp, P2POp)}


_STAMPERS: dict[tuple, Callable[..., tuple]] = {}  # by the templates' types, dependencies and tag indices
_STAMPERS_KEPT = 4096


def _ext_source(symbol: int) -> str:
    """The external dependency a template's symbol stands for (:class:`_Template`), as source."""
    if symbol == -1:
        return "after"
    return f"wa[{-2 - symbol}]" if symbol > -1000 else f"wm[{-1000 - symbol}]"


def _stamper(types: tuple[type, ...], deps: tuple[tuple[int, ...], ...],
             tag_of: tuple[int, ...]) -> Callable[..., tuple] | None:
    """``stamp(start, after, wa, wm, state, tags)``: the ops of a template of these types,
    dependencies and tag indices placed at ``start`` (:func:`_stamp_ops`), written out as one
    tuple of constructor calls (``ir.restamp_constructor``) with each op's dependencies as a
    tuple display: the loop's per-op unpacking, branches and look-ups are gone. Kept by those
    three, which the relabeled templates of a layer class, and the same shapes in other plans,
    share. A P2P op keeps its template's transfers, whose keys hold ``ir.MB_PLACEHOLDER`` for
    the micro-batch its tag names (``ir.transfer_key``)."""
    key = (types, deps, tag_of)
    hit = _STAMPERS.get(key)
    if hit is not None:
        return hit
    calls = []
    for k, (cls, row, tag) in enumerate(zip(types, deps, tag_of)):
        items = [f"start + {d}" if d >= 0 else _ext_source(d) for d in row]
        dep = "()" if not items else f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
        letter = "C" if cls is ComputeOp else "K" if cls is CommOp else "P"
        calls.append(f"        {letter}(s[{k}], {dep}, t[{tag}]),\n")
    scope: dict[str, Any] = {"C": _RESTAMP[ComputeOp], "K": _RESTAMP[CommOp], "P": _RESTAMP[P2POp]}
    exec("def stamp(start, after, wa, wm, s, t):\n    return (\n" + "".join(calls) + "    )\n", scope)
    if len(_STAMPERS) >= _STAMPERS_KEPT:
        _STAMPERS.clear()
    fn: Callable[..., tuple] = scope["stamp"]
    _STAMPERS[key] = fn
    return fn


def _stamp(pb: ProgramBuilder, tpl: _Template, mb: int, after: int, wa: tuple[int, ...], wm: tuple[int, ...]) -> int:
    """Append a copy of a template for micro-batch `mb`: only deps and tags change (a P2P op's
    keys hold the micro-batch of its tag, ``ir.transfer_key``). Avoids re-running the pattern
    code for every micro-batch (a 64-micro-batch interleaved GPT-3 175B schedule with TP
    ring-exchange overlap built in a tenth of the time)."""
    start = len(pb.ops)
    pb.ops.extend(_stamp_ops(tpl, start, mb, after, wa, wm))
    return start + tpl.result


def _stamp_ops(tpl: _Template, start: int, mb: int, after: int, wa: tuple[int, ...],
               wm: tuple[int, ...]) -> tuple[ComputeOp | CommOp | P2POp, ...]:
    """The ops of a template stamped for micro-batch ``mb`` at index ``start`` (:func:`_stamp`)."""
    tags = [make_tag(t.phase, t.layer, mb, t.chunk) for t in tpl.tags]
    if tpl.stamper is not None:
        return tpl.stamper(start, after, wa, wm, tpl.state, tags)
    ops: list[ComputeOp | CommOp | P2POp] = []
    ext = {-1: after}
    for k, w in enumerate(wa):
        ext[-2 - k] = w
    for k, w in enumerate(wm):
        ext[-1000 - k] = w
    append = ops.append
    for cls, state, row, tag_id, one in zip(tpl.types, tpl.state, tpl.deps, tpl.tag_of, tpl.single_dep):
        if one >= 0:  # most ops wait for one op of their own pass
            append(_RESTAMP[cls](state, (start + one,), tags[tag_id]))
        else:
            append(_RESTAMP[cls](state, tuple([start + d if d >= 0 else ext[d] for d in row]), tags[tag_id]))
    return tuple(ops)


# Stamped passes kept by what decides their ops: (template, micro-batch, position in the
# program, external dependencies) -> the ops. Ops are immutable, and a stamp is a function of
# those alone, so a build that reaches a pass with the same key appends the same op objects.
# Builds of one plan share long prefixes: micro-batch folding's two reduced steps start as the
# full step does (replay/fold.py), and the sweep's lower bound builds stages 0 and p-1 with pp
# and 2·pp micro-batches (sweep/bound.py): a third of the GPT-3 175B sweep's stamped ops.
_STAMPED: dict[tuple, tuple["_Template", tuple]] = {}
_STAMPED_KEPT = 600_000  # ops kept at most (~100 MiB), then the entries are dropped
_stamped_ops = [0]


def _stamp_kept(pb: ProgramBuilder, tpl: _Template, mb: int, after: int, wa: tuple[int, ...],
                wm: tuple[int, ...]) -> int:
    """:func:`_stamp`, appending the ops of an earlier stamp of the same key where there is one."""
    start = len(pb.ops)
    if pb.priced_only:
        seen = _ANY_STAMP.get(id(tpl))
        if seen is not None and seen[0] is tpl:
            pb.ops.extend(seen[1])
            if pb.stamps is not None:
                pb.stamps.append((start, seen[1], tpl))
            return start + tpl.result
    key = (id(tpl), mb, start, after, wa, wm)
    hit = _STAMPED.get(key)
    if hit is not None and hit[0] is tpl:  # the template is kept alive by its entry: its id is its own
        ops = hit[1]
    else:
        ops = _stamp_ops(tpl, start, mb, after, wa, wm)
        if _stamped_ops[0] >= _STAMPED_KEPT:
            _STAMPED.clear()
            _stamped_ops[0] = 0
        _STAMPED[key] = (tpl, ops)
        _stamped_ops[0] += len(ops)
    pb.ops.extend(ops)
    if pb.stamps is not None:
        pb.stamps.append((start, ops, tpl))
    if len(_ANY_STAMP) >= _ANY_STAMP_KEPT:
        _ANY_STAMP.clear()
    _ANY_STAMP[id(tpl)] = (tpl, ops)
    return start + tpl.result


# The last stamp of each template: what a priced-only program (ProgramBuilder.priced_only) appends
# for a pass of that template, made again for none of its micro-batches and positions.
_ANY_STAMP: dict[int, tuple["_Template", tuple]] = {}
_ANY_STAMP_KEPT = 4096


def _relabeled_key(key: str, marker: str, to_marker: str, prefix: str, to_prefix: str, named: str) -> str | None:
    """A P2P key of layer ``old``'s pass as layer ``new``'s (:func:`_relabeled`), or None where it
    names the layer anywhere but in its marker (``.L3.mb<mb>.``) and, right after it, the name of
    the op it belongs to: a TP ring-exchange step's key is ``tp.L3.mb<MB>.`` + its GEMM's name
    (``L3.fc1.fwd``) + ``.step1`` (``tensor_parallel._key``), and a direct build of layer
    ``new`` writes both with ``new``."""
    if key.count(marker) != 1:
        return None
    head, tail = key.split(marker)
    op_named = tail.startswith(prefix)
    rest = tail[len(prefix):] if op_named else tail
    if named in head or named in rest:
        return None
    return head + to_marker + (to_prefix + rest if op_named else rest)


def _relabeled(tpl: _Template, old: int, new: int) -> _Template | None:
    """The template of layer ``old``'s pass as layer ``new``'s: a layer enters a pass's ops only
    in their names (``L3.fc1.fwd``), tags and P2P keys (``tp.L3.mb<MB>.L3.fc1.fwd.step1``); what
    the ops are depends on the layer only through :meth:`LayerSpec.is_moe` and the hybrid
    pattern, which :meth:`LayerBuilder._layer_class` keys. None where a name or key names the layer anywhere
    else (the pass is then built for that layer)."""
    prefix, marker = f"L{old}.", layer_marker(old)
    to_prefix, to_marker = f"L{new}.", layer_marker(new)
    if any(t.layer != old for t in tpl.tags):
        return None
    state = []
    cut, named = len(prefix), f"L{old}"
    for cls, values in zip(tpl.types, tpl.state):
        name = values[0]
        rest = name[cut:]
        if not name.startswith(prefix) or named in rest:
            return None
        values = (to_prefix + rest,) + values[1:]
        if cls is P2POp:
            args = list(values)
            for i in _P2P_XFERS:
                xfers = []
                for t in args[i]:
                    key = _relabeled_key(t.key, marker, to_marker, prefix, to_prefix, named)
                    if key is None:
                        return None
                    # (built directly: dataclasses.replace, which reads every field by name,
                    # was a tenth of building the 128K ring-attention schedule)
                    xfers.append(Transfer(t.axis, t.offset, t.nbytes, key, t.transport))
                args[i] = tuple(xfers)
            values = tuple(args)
        state.append(values)
    tags = tuple(make_tag(t.phase, new, t.mb_index, t.chunk) for t in tpl.tags)
    return _Template(tpl.types, tuple(state), tpl.deps, tags, tpl.tag_of, tpl.result, tpl.single_dep, tpl.stamper,
                     tpl.origin or tpl)


class LayerBuilder:
    """Appends the ops of one layer (or the embedding / LM head) to a program.

    Layer passes are built once per (layer class, pass, shape of the waits) with the real
    builders and stamped for the other layers of that class and the other micro-batches, which
    differ only in names, dependencies, tags and P2P keys (:func:`_relabeled`).
    """

    def __init__(self, spec: LayerSpec):
        self.spec = spec
        self.attn_fwd, self.attn_bwd = attention_pattern(spec)
        self._templates: dict[tuple, _Template | None] = {}
        self._seen: dict[tuple, int] = {}  # builds of each pass (of one layer class) so far
        # (pass, layer class, waits' shape) -> (a layer, its template): the other layers of the
        # class are stamped from it relabeled (a 96-layer model's pp-micro-batch stage program,
        # as the sweep's lower bound builds it, builds 3 passes instead of 3 per layer)
        self._generic: dict[tuple, tuple[int, _Template]] = {}
        self._qkv_out = spec.qkv_out or (spec.shape.heads + 2 * spec.shape.kv_heads) * spec.head_dim
        self._proj_in = spec.proj_in or spec.shape.heads * spec.head_dim
        self._fc1_out = (2 if spec.gated else 1) * spec.shape.ffn  # gate and up columns when gated

    def _cached(self, build: Callable[..., int], kind: str, pb: ProgramBuilder, layer: int, mb: int, after: int,
                wa: tuple[int, ...], wm: tuple[int, ...]) -> int:
        shape = _wait_shape(after, wa, wm)
        key = (kind, layer, after >= 0, shape)
        tpl = self._templates.get(key)
        if tpl is None and key not in self._templates:
            gkey = (kind, self._layer_class(layer), after >= 0, shape)
            generic = self._generic.get(gkey)
            if generic is not None:
                tpl = self._templates[key] = _relabeled(generic[1], generic[0], layer)
        if tpl is not None:
            return _stamp_kept(pb, tpl, mb, after, wa, wm)
        start = len(pb)
        result = build(pb, layer, mb, after, wa, wm)
        self._graphed(pb, start, layer)
        if key not in self._templates:
            # Making a template costs about one build: worth it from the third build of a pass
            # (of any layer of its class) on (schedules of one or two micro-batches of a few
            # layers, as at long context, never stamp).
            gkey = (kind, self._layer_class(layer), after >= 0, shape)
            seen = self._seen[gkey] = self._seen.get(gkey, 0) + 1
            if seen >= 3:
                tpl = self._templates[key] = _symbolic(pb, start, result, after, wa, wm, layer, mb)
                if tpl is not None and gkey not in self._generic:
                    self._generic[gkey] = (layer, tpl)
        return result

    def _layer_class(self, layer: int) -> tuple:
        """What of ``layer`` decides which ops its passes are (beyond their names, tags and P2P
        keys): whether its MLP is MoE, its block in a hybrid model, and whether full recompute
        leaves it out, and its attention's sliding window."""
        s = self.spec
        return (s.is_moe(layer), s.block(layer),
                layer in s.kept_layers, s.window(layer))

    def forward(self, pb: ProgramBuilder, layer: int, mb: int, after: int,
                wait_attn: tuple[int, ...] = (), wait_mlp: tuple[int, ...] = (), gate: Gate | None = None) -> int:
        """Forward of layer `layer`; `wait_*` are ops (parameter AllGathers) the blocks must await;
        `gate` (:data:`Gate`) is called before each weight GEMM (such passes are not templated)."""
        if gate is not None:
            start = len(pb)
            out = self._forward(pb, layer, mb, after, tuple(wait_attn), tuple(wait_mlp), gate)
            self._graphed(pb, start, layer)
            return out
        return self._cached(self._forward, "F", pb, layer, mb, after, tuple(wait_attn), tuple(wait_mlp))

    def backward(self, pb: ProgramBuilder, layer: int, mb: int, after: int,
                 wait_attn: tuple[int, ...] = (), wait_mlp: tuple[int, ...] = (), gate: Gate | None = None) -> int:
        """Backward of layer `layer` (with its recompute); returns the op after which the input
        gradient and every weight gradient of the layer are ready."""
        if gate is not None:
            start = len(pb)
            out = self._backward(pb, layer, mb, after, tuple(wait_attn), tuple(wait_mlp), gate)
            self._graphed(pb, start, layer)
            return out
        return self._cached(self._backward, "B", pb, layer, mb, after, tuple(wait_attn), tuple(wait_mlp))

    def _graphed(self, pb: ProgramBuilder, start: int, layer: int) -> None:
        """The layer pass just built (``pb.ops[start:]``) with the ops its CUDA graphs capture marked
        (``training.cuda_graph_scope``, schedule/cuda_graphs.py); the embedding and the head (layer
        < 0) are never captured."""
        s = self.spec
        if not s.graph_scopes or layer < 0:
            return
        cuda_graphs.mark(pb, start, s.graph_scopes, s.block(layer) or ("moe" if s.is_moe(layer) else ""))

    def _tp(self, layer: int, mb: int) -> tensor_parallel.TPContext:
        """The TP context of layer ``layer``'s GEMMs (-1: the output layer, Megatron's plain
        ColumnParallelLinear, which TransformerEngine's recipe never block-scales and whose
        ``torch.matmul`` outputs PyTorch's deterministic fill leaves alone)."""
        s = self.spec
        return tensor_parallel.TPContext(tp=s.tp, sp=s.sp, overlap=s.overlap, tokens=s.tokens,
                                         hidden=s.hidden, dtype=s.dtype,
                                         dtype_bytes=s.act_bytes, layer=layer, mb_index=mb, sms=s.sms,
                                         async_allreduce=s.async_tp_allreduce, sm_margin=s.tp_sm_margin,
                                         gemm_sms=s.tp_gemm_sms, methods=s.tp_methods,
                                         scaling=fp8.gemm_scaling(s.dtype, s.fp8_recipe) if layer >= 0 else "",
                                         fill=s.fill if layer >= 0 else deterministic_fill.Fill())

    def _head_tp(self, mb: int) -> tensor_parallel.TPContext:
        """The TP context of the output layer (the LM head, and the MTP heads that share it). In an
        fp8 run its GEMMs and its sequence-parallel AllGather stay in the activation dtype:
        Megatron-Core's GPTModel builds ``output_layer`` as ``tensor_parallel.ColumnParallelLinear``,
        a torch matmul that TransformerEngine's ``fp8_autocast`` (entered around the transformer
        block) never reaches. ``training.fp8_output_layer`` runs it in fp8 (torchtitan's Float8
        converter without ``output`` in ``filter_fqns``)."""
        ctx = self._tp(-1, mb)
        return ctx if self.spec.fp8_output_layer else replace(ctx, dtype=self.spec.act_dtype)

    def _attn(self, layer: int, mb: int) -> AttentionContext:
        s = self.spec
        return AttentionContext(micro_batch_size=s.b, seq=s.seq, seq_local=s.seq_local, heads=s.shape.heads,
                                kv_heads=s.shape.kv_heads, head_dim=s.attn_dim or s.head_dim, dtype_bytes=s.act_bytes,
                                causal=True, cp=s.cp, cp_rank=s.cp_rank, ulysses=s.ulysses, cp_comm=s.cp_comm,
                                layer=layer, mb_index=mb, dtype=s.act_dtype, cp_a2a=s.cp_a2a, cp_qkv_format=s.cp_qkv_format,
                                kernel="" if s.attention == "unfused" else s.attention,
                                eager=not s.fused_kernels, dropout=s.dropout, alibi=s.alibi,
                                deterministic=s.deterministic, softmax=s.masked_softmax,
                                fused_dropout=s.fused_attention_dropout and s.attention != "unfused",
                                window=s.window(layer), sink_rescale=s.sink_rescale, fill=s.fill.on)

    def _fill(self, nbytes: float) -> float:
        """Bytes of a TransformerEngine norm's output that PyTorch fills as it allocates it
        (``training.torch_deterministic``, schedule/deterministic_fill.py); 0 without the fill."""
        return nbytes if self.spec.fill.on else 0.0

    # -- transformer layer --------------------------------------------------------------------

    def _qk_norm(self, pb: ProgramBuilder, layer: int, after: int, tag: Tag, direction: str) -> int:
        """The per-head norms of the queries and the keys (``model.qk_norm``): Megatron-Core's
        ``SelfAttention`` with ``qk_layernorm`` runs ``q_layernorm`` and ``k_layernorm``, two norm
        modules over ``head_dim`` (``hidden_size_per_attention_head``), on the QKV GEMM's query and
        key outputs before RoPE and the attention core (megatron/core/transformer/attention.py,
        ``SelfAttention.get_query_key_value_tensors``); Hugging Face's ``Qwen3Attention`` has the
        same ``q_norm`` and ``k_norm``. Each is the stack's norm kernel (:attr:`Elementwise.norm_fwd`
        and ``norm_bwd``, in units of the tensor it normalises) on this rank's query heads and KV
        heads: two kernels forward, the norms' backward kernels in backward; the values are not
        normalised."""
        s = self.spec
        if not s.qk_norm:
            return after
        ew = s.elementwise
        d = self._qkv_out // (s.shape.heads + 2 * s.shape.kv_heads)  # head_dim
        qk = s.tokens * (s.shape.heads + s.shape.kv_heads) * d * s.act_bytes
        units, kernels = ew.norm_fwd if direction == "fwd" else ew.norm_bwd
        return _mem_op(pb, f"L{layer}.qk_norm.{direction}", "norm", units * qk, (after,), tag, 2 * kernels,
                       ew.norm_impl, self._fill(qk))

    def _rope(self, pb: ProgramBuilder, layer: int, after: int, tag: Tag, direction: str) -> int:
        """Rotary position embedding of this rank's queries and keys (``position_embedding: rope``)
        after the QKV GEMM (and the q/k norms); backward, the inverse rotation of dq and dk. Each
        TP rank rotates its own heads, each CP / Ulysses rank its own tokens (``tokens`` is
        b·s_local); the cos/sin table (s·d) is small beside b·s·heads·d and not counted.

        Fused stacks: Megatron-Core's ``apply_rope_fusion`` (default on in Megatron-LM:
        ``--no-rope-fusion`` is ``store_false`` into it, megatron/training/arguments.py) calls TE's
        ``fused_apply_rotary_pos_emb``, one kernel per tensor reading it and writing the rotated
        copy, forward and backward (transformer_engine/pytorch/attention/rope.py,
        ``FusedRoPEFunc``): 2 B per element, two kernels a pass (``TransformerConfig``'s own
        default is off, and some Megatron-Bridge recipes keep it off: the unfused
        ``_apply_rotary_pos_emb_bshd``, rotate_half's several passes, is not modelled). torchtitan under
        ``torch.compile``: Inductor fuses the cast, complex multiply and cast back into the same
        read and write.

        NeMo AutoModel's eager layers call the same TE kernel (``BackendConfig.rope_fusion``, on
        where TE is installed): ``rope_kernel: fused``.

        Eager stacks (``rope_kernel: complex``): torchtitan's ``apply_rotary_emb`` (torchtitan/models/llama3/model.py):
        ``xq.float()`` (reads B, writes 4 bytes per element), ``view_as_complex``, the complex64
        multiply by ``freqs_cis`` (reads and writes 4), ``view_as_real``/``flatten`` (views) and
        ``type_as`` (reads 4, writes B): three kernels per tensor, 2(B + 4) + 8 bytes per element;
        backward autograd runs the same three (``grad.float()``, ``grad * freqs_cis.conj()`` with
        the conjugate bit resolved in the multiply, the cast back). With fp32 activations the
        casts launch nothing.

        Megatron-Core unfused (``rope_kernel: unfused``, :func:`unfused_rope_cost`): what
        ``apply_rotary_pos_emb`` runs when ``apply_rope_fusion`` is off, or on with a YaRN
        concentration factor other than 1 ("mscale ... is not supported by TE's fused RoPE. Using
        unfused implementation", megatron/core/models/common/embeddings/rope_utils.py at
        Megatron-LM 4415119), as for GPT-OSS (factor 32: mscale 0.1 ln 32 + 1 = 1.347)."""
        s = self.spec
        if not s.rope_dim:
            return after
        k_heads = s.shape.kv_heads if s.rope_k_heads < 0 else s.rope_k_heads
        elems = s.tokens * (s.shape.heads + k_heads) * s.rope_dim
        B = s.act_bytes
        per_elem: float
        if s.rope_kernel == "unfused":
            per_elem, kernels = unfused_rope_cost(B, direction == "bwd")
        elif s.rope_kernel == "fused" or (s.rope_kernel == "auto" and s.fused_kernels):
            per_elem, kernels = 2 * B, 1
        elif B < 4:
            per_elem, kernels = 2 * (B + 4) + 8, 3
        else:
            per_elem, kernels = 8, 1
        return _mem_op(pb, f"L{layer}.rope.{direction}", "elementwise", per_elem * elems, (after,), tag, 2 * kernels)

    def _bias(self, pb: ProgramBuilder, layer: int, gemm: str, features: int, tokens: int, after: int, tag: Tag,
              direction: str) -> int:
        """The bias of linear layer ``gemm`` as a kernel of its own (``training.linear_bias:
        separate``): PyTorch's ``F.linear`` of 2020 (torch <= 1.7, torch/nn/functional.py) runs a
        3-D input as ``input.matmul(weight.t())`` then ``output += bias``, one kernel reading and
        writing the GEMM's output; backward, autograd reduces the output gradient over the tokens
        for the bias gradient, one kernel reading it. ``features`` is the output width on this
        rank: the column-parallel QKV and FC1 columns, or h for the row-parallel projection and
        FC2, whose bias Megatron-LM of Sep 2020 adds after the TP AllReduce (mpu/layers.py
        ``RowParallelLinear``). Since torch 1.11 a contiguous 3-D input goes to ``addmm``, whose
        cuBLASLt bias epilogue adds a 1-D bias inside the GEMM (aten/src/ATen/native/cuda/Blas.cpp,
        ``useLtInterface``): only the backward reduction is left (``epilogue``). Fused stacks fold
        both into their kernels (``none``)."""
        s = self.spec
        if s.linear_bias == "none" or (s.linear_bias == "epilogue" and direction == "fwd"):
            return after
        passes = 2 if direction == "fwd" else 1
        return _mem_op(pb, f"L{layer}.{gemm}.bias.{direction}", "elementwise",
                       passes * features * tokens * s.act_bytes, (after,), tag)

    def _autocast(self, pb: ProgramBuilder, layer: int, deps: tuple[int, ...], tag: Tag, direction: str) -> int:
        """``torch.autocast`` over fp32 parameters (``training.autocast``, :mod:`simulator.schedule.
        autocast`): the casts of the four linears' weights and biases and the fp32 residual stream's
        extra traffic of this dense layer pass, as one op of that many copy kernels."""
        s = self.spec
        h = s.hidden
        params = h * self._qkv_out + self._proj_in * h + h * self._fc1_out + s.shape.ffn * h
        tensors = 4
        if s.linear_bias != "none":
            params += self._qkv_out + h + self._fc1_out + h
            tensors = 8
        cast = autocast.layer_pass(params, tensors, s.sharded_tokens * h * 2, direction)
        return _cast_op(pb, f"L{layer}.autocast.{direction}", cast, deps, tag)

    def _forward(self, pb: ProgramBuilder, layer: int, mb: int, after: int,
                 wait_attn: tuple[int, ...] = (), wait_mlp: tuple[int, ...] = (), gate: Gate | None = None,
                 pass_: str = "fwd") -> int:
        s = self.spec
        if s.block(layer):
            return self._block_forward(pb, layer, mb, after, wait_attn + wait_mlp, gate, pass_)
        tag = Tag("fwd", layer, mb)
        tp = self._tp(layer, mb)
        hb = s.sharded_tokens * s.hidden * s.act_bytes

        def g(gemm: str, x: int) -> int:
            return gate(pb, layer, gemm, pass_, x) if gate is not None else x

        ew = s.elementwise
        start = _deps(after, wait_attn)
        if s.autocast and not s.is_moe(layer):
            start = (self._autocast(pb, layer, start, tag, "fwd"),)
        ln1 = _mem_op(pb, f"L{layer}.ln1.fwd", "norm", ew.norm_fwd[0] * hb, start, tag,
                      ew.norm_fwd[1], ew.norm_impl, self._fill(hb))
        qkv = tensor_parallel.column_parallel_fwd(pb, tp, "qkv", self._qkv_out, g("qkv", ln1))
        qkv = self._bias(pb, layer, "qkv", self._qkv_out, s.tokens, qkv, tag, "fwd")
        qkv = self._qk_norm(pb, layer, qkv, tag, "fwd")
        qkv = self._rope(pb, layer, qkv, tag, "fwd")
        core = self.attn_fwd(pb, self._attn(layer, mb), qkv)
        proj = tensor_parallel.row_parallel_fwd(pb, tp, "proj", self._proj_in, g("proj", core))
        proj = self._bias(pb, layer, "proj", s.hidden, s.sharded_tokens, proj, tag, "fwd")
        ln2 = _residual_norm(pb, f"L{layer}", "fwd", ew, hb, _deps(proj, wait_mlp), tag, self._fill(hb))
        if s.moe is not None and s.is_moe(layer):
            fc2 = moe.forward(pb, s.moe, tp, layer, mb, ln2)
        else:
            fc1 = tensor_parallel.column_parallel_fwd(pb, tp, "fc1", self._fc1_out, g("fc1", ln2))
            fc1 = self._bias(pb, layer, "fc1", self._fc1_out, s.tokens, fc1, tag, "fwd")
            act_bytes = ew.act_fwd[0] * (s.tokens * s.shape.ffn) * s.act_bytes
            act = _mem_op(pb, f"L{layer}.act.fwd", "elementwise", act_bytes, (fc1,), tag, ew.act_fwd[1])
            fc2 = tensor_parallel.row_parallel_fwd(pb, tp, "fc2", s.shape.ffn, g("fc2", act))
            fc2 = self._bias(pb, layer, "fc2", s.hidden, s.sharded_tokens, fc2, tag, "fwd")
        out = _mem_op(pb, f"L{layer}.res2.fwd", "elementwise", ew.res_fwd[0] * hb, (fc2,), tag, ew.res_fwd[1])
        return fp8.layer_overhead(pb, s, s.fp8_recipe, layer, mb, out, "fwd", self._qkv_out, self._proj_in)

    def _backward(self, pb: ProgramBuilder, layer: int, mb: int, after: int,
                  wait_attn: tuple[int, ...] = (), wait_mlp: tuple[int, ...] = (), gate: Gate | None = None) -> int:
        s = self.spec
        tag = Tag("bwd", layer, mb)
        tp = self._tp(layer, mb)
        hb = s.sharded_tokens * s.hidden * s.act_bytes

        def g(gemm: str, x: int) -> int:
            return gate(pb, layer, gemm, "bwd", x) if gate is not None else x

        if s.recompute == "full" and layer not in s.kept_layers:
            start = len(pb)
            after = self._forward(pb, layer, mb, after, wait_attn, wait_mlp, gate, "recompute")
            mark_recompute(pb, start)
        elif s.recompute == "selective_op":
            start = len(pb)
            after = self._op_level_recompute(pb, layer, mb, _deps(after, wait_attn, wait_mlp), tp)
            mark_recompute(pb, start)
        if s.block(layer):
            return self._block_backward(pb, layer, mb, after, wait_attn + wait_mlp, gate)
        ew = s.elementwise
        res2 = _mem_op(pb, f"L{layer}.res2.bwd", "elementwise", ew.res_bwd[0] * hb, _deps(after, wait_mlp), tag,
                       ew.res_bwd[1])
        if s.moe is not None and s.is_moe(layer):
            res2 = self._moe_recompute(pb, layer, mb, res2, tp, "ln2")
            fc1 = moe.backward(pb, s.moe, tp, layer, mb, res2)
        else:
            res2 = self._bias(pb, layer, "fc2", s.hidden, s.sharded_tokens, res2, tag, "bwd")
            fc2 = tensor_parallel.row_parallel_bwd(pb, tp, "fc2", s.shape.ffn, g("fc2", res2))
            act_bytes = ew.act_bwd[0] * (s.tokens * s.shape.ffn) * s.act_bytes
            act = _mem_op(pb, f"L{layer}.act.bwd", "elementwise", act_bytes, (fc2,), tag, ew.act_bwd[1])
            act = self._bias(pb, layer, "fc1", self._fc1_out, s.tokens, act, tag, "bwd")
            fc1 = tensor_parallel.column_parallel_bwd(pb, tp, "fc1", self._fc1_out, g("fc1", act))
        before_ln2 = _deps(fc1, wait_attn)
        if s.recompute_norm_blocks:  # the residual add and the MLP's norm re-run from the kept block inputs
            start = len(pb)
            before_ln2 = (_residual_norm(pb, f"L{layer}", "fwd", ew, hb, before_ln2, tag, self._fill(hb)),)
            mark_recompute(pb, start)
        ln2 = _residual_norm(pb, f"L{layer}", "bwd", ew, hb, before_ln2, tag, self._fill(hb))
        ln2 = self._bias(pb, layer, "proj", s.hidden, s.sharded_tokens, ln2, tag, "bwd")
        proj = tensor_parallel.row_parallel_bwd(pb, tp, "proj", self._proj_in, g("proj", ln2))
        core = self._core_attention_bwd(pb, layer, mb, proj)
        core = self._rope(pb, layer, core, tag, "bwd")
        core = self._qk_norm(pb, layer, core, tag, "bwd")
        core = self._bias(pb, layer, "qkv", self._qkv_out, s.tokens, core, tag, "bwd")
        qkv = tensor_parallel.column_parallel_bwd(pb, tp, "qkv", self._qkv_out, g("qkv", core))
        if s.recompute_norm_blocks:  # the attention's norm re-run from the layer's input
            start = len(pb)
            qkv = _mem_op(pb, f"L{layer}.ln1.fwd", "norm", ew.norm_fwd[0] * hb, (qkv,), tag, ew.norm_fwd[1],
                          ew.norm_impl, self._fill(hb))
            mark_recompute(pb, start)
        out = _mem_op(pb, f"L{layer}.ln1.bwd", "norm", ew.norm_bwd[0] * hb, (qkv,), tag, ew.norm_bwd[1], ew.norm_impl,
                      self._fill(hb))
        if s.autocast and not s.is_moe(layer):
            out = self._autocast(pb, layer, (out,), tag, "bwd")
        return fp8.layer_overhead(pb, s, s.fp8_recipe, layer, mb, out, "bwd", self._qkv_out, self._proj_in)

    def _op_level_recompute(self, pb: ProgramBuilder, layer: int, mb: int, deps: tuple[int, ...],
                            tp: tensor_parallel.TPContext) -> int:
        """torchtitan's op-level selective checkpointing (``selective_ac_option = "op"``), re-run
        when the block's backward unpacks its first saved tensor. The policy
        (torchtitan/models/llama3/parallelize_llama.py ``_get_custom_policy`` and ``_save_list``,
        f38766edb to e7c0cae) saves the outputs of ``aten.mm`` except every second one of the block,
        of SDPA and of reduce-scatter, and re-runs every other op. A Llama block's mms run wq, wk,
        wv, wo, w1, w3, w2 (``Attention.forward``, ``FeedForward.forward``: w2(silu(w1(x)) * w3(x))),
        so wk, wo and w3 are re-run (37% of the block's forward GEMM FLOPs at Llama 3 8B), with the
        input norm feeding wk, RoPE on the queries and keys (its casts and complex multiply, whose
        outputs SDPA's backward reads), the residual add and norm feeding w3, and SiLU times w3's output
        feeding w2; the attention core is not. torchao's Float8 linears run ``aten._scaled_mm``,
        which is not in the list: in fp8 every GEMM of the block but w2 is re-run. The re-run
        stops at the last tensor the backward needs (``torch.utils.checkpoint``'s early stop): w2's
        input, so neither w2 nor the closing residual add runs again."""
        s = self.spec
        tag = Tag("bwd", layer, mb)
        hb = s.sharded_tokens * s.hidden * s.act_bytes
        ew = s.elementwise
        every = s.dtype == "fp8"
        kv_out = s.shape.kv_heads * s.head_dim
        x = _mem_op(pb, f"L{layer}.ln1.fwd", "norm", ew.norm_fwd[0] * hb, deps, tag, ew.norm_fwd[1], ew.norm_impl,
                    self._fill(hb))
        x = tensor_parallel.column_parallel_fwd(pb, tp, "qkv", self._qkv_out if every else kv_out, x)
        x = self._rope(pb, layer, x, tag, "fwd")  # SDPA's backward reads the rotated q and k, not saved
        x = tensor_parallel.row_parallel_fwd(pb, tp, "proj", self._proj_in, x)
        x = _residual_norm(pb, f"L{layer}", "fwd", ew, hb, (x,), tag, self._fill(hb))
        x = tensor_parallel.column_parallel_fwd(pb, tp, "fc1", self._fc1_out if every else s.shape.ffn, x)
        act_bytes = ew.act_fwd[0] * (s.tokens * s.shape.ffn) * s.act_bytes
        return _mem_op(pb, f"L{layer}.act.fwd", "elementwise", act_bytes, (x,), tag, ew.act_fwd[1])

    def _core_attention_bwd(self, pb: ProgramBuilder, layer: int, mb: int, after: int) -> int:
        """The attention core's backward, after its forward again under selective recompute
        (Megatron's attention-core checkpointing)."""
        ctx = self._attn(layer, mb)
        if self.spec.recompute == "selective":
            start = len(pb)
            after = self.attn_fwd(pb, ctx, after)
            mark_recompute(pb, start)
        return self.attn_bwd(pb, ctx, after)

    def _moe_recompute(self, pb: ProgramBuilder, layer: int, mb: int, after: int, tp: tensor_parallel.TPContext,
                       norm: str) -> int:
        """What an MoE layer's selective ``recompute_modules`` rebuild when its output gradient
        arrives, before its backward (Megatron-Core, transformer_layer.py and moe/moe_layer.py):
        ``layernorm``, the pre-MLP TENorm, which ``CheckpointWithoutOutput`` dropped (the router's
        wgrad and the MoE layer's recompute need it; ``norm`` names it: ``ln2`` in a GPT layer,
        the block's own ``ln1`` in a hybrid E block), then ``moe``, the layer's whole forward
        (``moe_layer_recompute``: ``custom_forward``, router, dispatch, experts, combine and the
        shared experts, under ``tensor_parallel.checkpoint`` or TransformerEngine's
        ``te_checkpoint`` in FP8, whose recompute quantises the operands again), its All-to-Alls
        and host synchronisations included."""
        s, ew, tag = self.spec, self.spec.elementwise, Tag("bwd", layer, mb)
        if s.recompute_norm:
            hb = s.sharded_tokens * s.hidden * s.act_bytes
            after = _mem_op(pb, f"L{layer}.{norm}.recompute", "norm", ew.norm_fwd[0] * hb, (after,), tag,
                            ew.norm_fwd[1], ew.norm_impl, self._fill(hb))
        if s.recompute_moe:
            assert s.moe is not None
            start = len(pb)
            after = moe.forward(pb, s.moe, tp, layer, mb, after)
            after = fp8.moe_overhead(pb, s, s.fp8_recipe, layer, mb, after)
            mark_recompute(pb, start)
        return after

    # -- the blocks of a hybrid model (model.layer_pattern) -------------------------------------

    def _block_forward(self, pb: ProgramBuilder, layer: int, mb: int, after: int, wait: tuple[int, ...],
                       gate: Gate | None, pass_: str) -> int:
        """One block of a hybrid model, as Megatron-Core's ``MambaStack`` builds it
        (megatron/core/ssm/mamba_block.py: ``MambaLayer``, a ``TransformerLayer`` with only the
        attention or only the MLP): pre-norm, the block's mixer or MLP, the residual add. The M block
        runs :func:`simulator.schedule.mamba.forward`, the E block :func:`simulator.schedule.moe.forward`."""
        s, ew, block = self.spec, self.spec.elementwise, self.spec.block(layer)
        tag, tp = Tag("fwd", layer, mb), self._tp(layer, mb)
        hb = s.sharded_tokens * s.hidden * s.act_bytes

        def g(gemm: str, x: int) -> int:
            return gate(pb, layer, gemm, pass_, x) if gate is not None else x

        x = _mem_op(pb, f"L{layer}.ln1.fwd", "norm", ew.norm_fwd[0] * hb, _deps(after, wait), tag, ew.norm_fwd[1],
                    ew.norm_impl, self._fill(hb))
        if block == "M":
            assert s.mamba is not None
            x = mamba.forward(pb, s.mamba, tp, layer, mb, g("qkv", x), s.act_bytes)
        elif block == "*":
            x = tensor_parallel.column_parallel_fwd(pb, tp, "qkv", self._qkv_out, g("qkv", x))
            x = self.attn_fwd(pb, self._attn(layer, mb), x)
            x = tensor_parallel.row_parallel_fwd(pb, tp, "proj", self._proj_in, g("proj", x))
        elif block == "E":
            assert s.moe is not None
            x = moe.forward(pb, s.moe, tp, layer, mb, x)
        else:
            x = tensor_parallel.column_parallel_fwd(pb, tp, "fc1", self._fc1_out, g("fc1", x))
            x = _mem_op(pb, f"L{layer}.act.fwd", "elementwise", ew.act_fwd[0] * s.tokens * s.shape.ffn * s.act_bytes,
                        (x,), tag, ew.act_fwd[1])
            x = tensor_parallel.row_parallel_fwd(pb, tp, "fc2", s.shape.ffn, g("fc2", x))
        out = _mem_op(pb, f"L{layer}.res.fwd", "elementwise", ew.res_fwd[0] * hb, (x,), tag, ew.res_fwd[1])
        return fp8.layer_overhead(pb, s, s.fp8_recipe, layer, mb, out, "fwd", self._qkv_out, self._proj_in)

    def _block_backward(self, pb: ProgramBuilder, layer: int, mb: int, after: int, wait: tuple[int, ...],
                        gate: Gate | None) -> int:
        """The reverse of :meth:`_block_forward` (full recompute has re-run the forward already;
        selective recompute re-runs an attention block's core)."""
        s, ew, block = self.spec, self.spec.elementwise, self.spec.block(layer)
        tag, tp = Tag("bwd", layer, mb), self._tp(layer, mb)
        hb = s.sharded_tokens * s.hidden * s.act_bytes

        def g(gemm: str, x: int) -> int:
            return gate(pb, layer, gemm, "bwd", x) if gate is not None else x

        x = _mem_op(pb, f"L{layer}.res.bwd", "elementwise", ew.res_bwd[0] * hb, _deps(after, wait), tag, ew.res_bwd[1])
        if block == "M":
            assert s.mamba is not None
            x = mamba.backward(pb, s.mamba, tp, layer, mb, g("qkv", x), s.act_bytes)
        elif block == "*":
            x = tensor_parallel.row_parallel_bwd(pb, tp, "proj", self._proj_in, g("proj", x))
            x = self._core_attention_bwd(pb, layer, mb, x)
            x = tensor_parallel.column_parallel_bwd(pb, tp, "qkv", self._qkv_out, g("qkv", x))
        elif block == "E":
            assert s.moe is not None
            x = moe.backward(pb, s.moe, tp, layer, mb, self._moe_recompute(pb, layer, mb, x, tp, "ln1"))
        else:
            x = tensor_parallel.row_parallel_bwd(pb, tp, "fc2", s.shape.ffn, g("fc2", x))
            x = _mem_op(pb, f"L{layer}.act.bwd", "elementwise", ew.act_bwd[0] * s.tokens * s.shape.ffn * s.act_bytes,
                        (x,), tag, ew.act_bwd[1])
            x = tensor_parallel.column_parallel_bwd(pb, tp, "fc1", self._fc1_out, g("fc1", x))
        out = _mem_op(pb, f"L{layer}.ln1.bwd", "norm", ew.norm_bwd[0] * hb, (x,), tag, ew.norm_bwd[1], ew.norm_impl,
                      self._fill(hb))
        return fp8.layer_overhead(pb, s, s.fp8_recipe, layer, mb, out, "bwd", self._qkv_out, self._proj_in)

    # -- embedding and LM head ----------------------------------------------------------------

    def _tp_comm(self, pb: ProgramBuilder, name: str, op: CollectiveKind, size: int, dep: int, tag: Tag) -> int:
        return pb.add(CommOp(name=name, op=op, axes=("tp",), size_bytes=size, deps=(dep,),
                             dtype=self.spec.act_dtype, tag=tag))

    # The embedding and the LM head are templated as the layer passes are (their ops name no layer
    # and no micro-batch; their tags and P2P keys carry it, layer -1 in the LM head's TP keys), under
    # a kind of their own and layer -1, which no layer class relabels.

    def embedding_forward(self, pb: ProgramBuilder, mb: int, after: int = -1, wait: tuple[int, ...] = (),
                          name: str = "embedding") -> int:
        return self._cached(lambda pb, _, mb, after, wa, wm: self._embedding_forward(pb, mb, after, wa, name),
                            f"EF.{name}", pb, -1, mb, after, tuple(wait), ())

    def embedding_backward(self, pb: ProgramBuilder, mb: int, after: int, name: str = "embedding") -> int:
        return self._cached(lambda pb, _, mb, after, wa, wm: self._embedding_backward(pb, mb, after, name),
                            f"EB.{name}", pb, -1, mb, after, (), ())

    def head_forward(self, pb: ProgramBuilder, mb: int, after: int, wait: tuple[int, ...] = (), prefix: str = "") -> int:
        return self._cached(lambda pb, _, mb, after, wa, wm: self._head_forward(pb, mb, after, wa, prefix),
                            f"HF.{prefix}", pb, -1, mb, after, tuple(wait), ())

    def head_backward(self, pb: ProgramBuilder, mb: int, after: int, prefix: str = "") -> int:
        return self._cached(lambda pb, _, mb, after, wa, wm: self._head_backward(pb, mb, after, prefix),
                            f"HB.{prefix}", pb, -1, mb, after, (), ())

    def _embedding_forward(self, pb: ProgramBuilder, mb: int, after: int = -1, wait: tuple[int, ...] = (),
                           name: str = "embedding") -> int:
        """Vocab-parallel embedding lookup; its partial rows are reduced over tp (RS with SP,
        AllReduce without; megatron VocabParallelEmbedding, MECHANICS.md §2.2 extras)."""
        s = self.spec
        tag = Tag("fwd", None, mb)
        deps = self._load_mask(pb, name, _deps(after, wait), tag)
        op = _mem_op(pb, f"{name}.fwd", "embedding", 2 * s.tokens * s.hidden * s.act_bytes, deps, tag)
        if s.tp > 1:
            op = self._tp_comm(pb, f"{name}.fwd." + ("rs" if s.sp else "ar"),
                               "reducescatter" if s.sp else "allreduce", s.act, op, tag)
        return op

    def _load_mask(self, pb: ProgramBuilder, name: str, deps: tuple[int, ...], tag: Tag) -> tuple[int, ...]:
        """The data loader's attention mask of one micro-batch (``training.dataloader_attention_mask``,
        :mod:`simulator.schedule.data_loading`): its copy to the GPU on the compute stream after
        ``deps``, then its broadcast from TP rank 0 over the TP group. Returns what the next op
        waits for: the last of these, or ``deps`` unchanged when there is no mask."""
        s = self.spec
        if s.mask_h2d_us <= 0:
            return deps
        # a DMA at the pinned copy's PCIe rate, not CPU work: the host's pace does not change it
        op = pb.add(ComputeOp(name=f"{name}.mask.h2d", kind="host", impl="dma", host_us=s.mask_h2d_us, deps=deps,
                              tag=tag))
        if s.tp > 1:
            op = self._tp_comm(pb, f"{name}.mask.bcast", "broadcast",
                               data_loading.mask_bytes(s.b, s.seq), op, tag)
        return (op,)

    def _embedding_backward(self, pb: ProgramBuilder, mb: int, after: int, name: str = "embedding") -> int:
        s = self.spec
        tag = Tag("bwd", None, mb)
        if s.sp:
            after = self._tp_comm(pb, f"{name}.bwd.ag", "allgather", s.act, after, tag)
        return _mem_op(pb, f"{name}.bwd", "embedding", 2 * s.tokens * s.hidden * s.act_bytes, (after,), tag)

    def _head_forward(self, pb: ProgramBuilder, mb: int, after: int, wait: tuple[int, ...] = (),
                      prefix: str = "") -> int:
        """Final norm, output layer (column-parallel over the vocabulary) and the vocab-parallel
        cross-entropy, whose max / sum-exp / target-logit reductions are 3 AllReduces of b·s fp32
        values over tp (megatron/core/tensor_parallel/cross_entropy.py)."""
        s = self.spec
        tag = Tag("fwd", None, mb)
        hb = s.sharded_tokens * s.hidden * s.act_bytes
        ew = s.elementwise
        deps = _deps(after, wait)
        if s.mask_at_head and not prefix:
            deps = self._load_mask(pb, "lm_head", deps, tag)
        if s.autocast:
            cast = autocast.head_pass(s.shape.vocab * s.hidden, hb, "fwd")
            deps = (_cast_op(pb, f"{prefix}lm_head.autocast.fwd", cast, deps, tag),)
        ln = _mem_op(pb, f"{prefix}final_norm.fwd", "norm", ew.norm_fwd[0] * hb, deps, tag, ew.norm_fwd[1],
                     ew.norm_impl, self._fill(hb))
        logits = tensor_parallel.column_parallel_fwd(pb, self._head_tp(mb), f"{prefix}lm_head", s.shape.vocab, ln)
        loss = logits
        if s.cross_entropy != "fused_linear":  # fused_linear: the GEMM's tiles reduced in place (schedule/loss.py)
            fwd, _ = loss_kernels(s.cross_entropy, s.act_bytes)
            loss = _mem_op(pb, f"{prefix}loss.fwd", "loss", fwd.bytes_per_logit * s.tokens * s.shape.vocab, (logits,),
                           tag, fwd.kernels)
        if s.tp > 1:
            for what in ("max", "sumexp", "target"):
                loss = self._tp_comm(pb, f"{prefix}loss.fwd.ar_{what}", "allreduce", s.tokens * 4, loss, tag)
        return loss

    def train_metrics(self, pb: ProgramBuilder, mb: int, after: int) -> int:
        """The training metrics the framework computes on micro-batch ``mb``'s logits after its
        backward (``training.train_metrics`` cross-entropy forwards, :func:`metric_kernels`), on
        the rank holding the LM head; ``after`` when there are none."""
        s = self.spec
        if s.train_metrics <= 0:
            return after
        one = metric_kernels(s.act_bytes)
        return _mem_op(pb, "train_metrics", "loss",
                       s.train_metrics * one.bytes_per_logit * s.tokens * s.shape.vocab, (after,),
                       Tag("other", None, mb), s.train_metrics * one.kernels)

    def _head_backward(self, pb: ProgramBuilder, mb: int, after: int, prefix: str = "") -> int:
        s = self.spec
        tag = Tag("bwd", None, mb)
        if s.cross_entropy == "fused_linear":  # the logits' tiles computed again, then dgrad and wgrad (loss.py)
            start = len(pb.ops)
            loss = tensor_parallel.column_parallel_fwd(pb, self._head_tp(mb), f"{prefix}lm_head", s.shape.vocab, after)
            mark_recompute(pb, start)
        else:
            _, bwd = loss_kernels(s.cross_entropy, s.act_bytes)
            loss = _mem_op(pb, f"{prefix}loss.bwd", "loss", bwd.bytes_per_logit * s.tokens * s.shape.vocab, (after,),
                           tag, bwd.kernels)
        dx = tensor_parallel.column_parallel_bwd(pb, self._head_tp(mb), f"{prefix}lm_head", s.shape.vocab, loss)
        hb = s.sharded_tokens * s.hidden * s.act_bytes
        ew = s.elementwise
        out = _mem_op(pb, f"{prefix}final_norm.bwd", "norm", ew.norm_bwd[0] * hb, (dx,), tag, ew.norm_bwd[1], ew.norm_impl,
                      self._fill(hb))
        if s.autocast:
            cast = autocast.head_pass(s.shape.vocab * s.hidden, hb, "bwd")
            out = _cast_op(pb, f"{prefix}lm_head.autocast.bwd", cast, (out,), tag)
        return out

    # -- multi-token prediction (megatron/core/transformer/multi_token_prediction.py) -------------

    def mtp_forward(self, pb: ProgramBuilder, depth: int, mb: int, after: int, wait: tuple[int, ...] = ()) -> int:
        """``MultiTokenPredictionLayer.forward`` before its transformer layer: the embedding of the
        tokens shifted by depth + 1, ``enorm`` of it and ``hnorm`` of the hidden state, and
        ``eh_proj`` (column-parallel, 2h -> h) of their concatenation, whose output shards are
        gathered over tp (``gather_from_tensor_model_parallel_region``, then a local sequence
        slice under sequence parallelism)."""
        s, ew = self.spec, self.spec.elementwise
        tag = Tag("fwd", None, mb)
        name = f"mtp{depth}"
        emb = self.embedding_forward(pb, mb, after, wait, name=f"{name}.embedding")
        hb = s.sharded_tokens * s.hidden * s.act_bytes
        norms = _mem_op(pb, f"{name}.norms.fwd", "norm", 2 * ew.norm_fwd[0] * hb, _deps(after, emb), tag,
                        2 * ew.norm_fwd[1], ew.norm_impl)
        ctx = replace(self._tp(-1, mb), hidden=2 * s.hidden)
        op = tensor_parallel.column_parallel_fwd(pb, ctx, f"{name}.eh_proj", s.hidden // s.tp, norms)
        if s.tp > 1:
            op = self._tp_comm(pb, f"{name}.eh_proj.fwd.ag", "allgather", s.act, op, tag)
        return op

    def mtp_backward(self, pb: ProgramBuilder, depth: int, mb: int, after: int) -> int:
        """The reverse of :meth:`mtp_forward`: (sequence parallel) the AllGather of the sliced
        gradient, ``eh_proj``'s dgrad and wgrad, the two norms and the embedding's gradient."""
        s, ew = self.spec, self.spec.elementwise
        tag = Tag("bwd", None, mb)
        name = f"mtp{depth}"
        if s.tp > 1 and s.sp:
            after = self._tp_comm(pb, f"{name}.eh_proj.bwd.ag", "allgather", s.act, after, tag)
        ctx = replace(self._tp(-1, mb), hidden=2 * s.hidden)
        dx = tensor_parallel.column_parallel_bwd(pb, ctx, f"{name}.eh_proj", s.hidden // s.tp, after)
        hb = s.sharded_tokens * s.hidden * s.act_bytes
        norms = _mem_op(pb, f"{name}.norms.bwd", "norm", 2 * ew.norm_bwd[0] * hb, (dx,), tag, 2 * ew.norm_bwd[1],
                        ew.norm_impl)
        return self.embedding_backward(pb, mb, norms, name=f"{name}.embedding")

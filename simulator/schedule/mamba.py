"""The Mamba2 mixer of a hybrid model's ``M`` block, forward and backward, on one rank.

What the kernels of a training step do (Megatron-Core ``megatron/core/ssm/mamba_mixer.py``; NeMo
AutoModel ``components/models/nemotron_v3/layers.py`` ``NemotronV3Mamba2Mixer``, whose training
path is ``in_proj`` then mamba_ssm's ``mamba_split_conv1d_scan_combined``):

1. ``in_proj``: one column-parallel GEMM h -> 2·d_inner + 2·G·N + H, the gate z, the SSM input x,
   B and C (G groups of state size N) and the step dt of each of the H heads (d_inner = H·P).
2. the causal depthwise ``conv1d`` (width 4, SiLU fused) over x, B and C (causal_conv1d): reads
   and writes the d_inner + 2·G·N channels once, memory-bound.
3. the SSD chunked scan (``mamba_chunk_scan_combined``, Dao & Gu 2024, arXiv:2405.21060 §6-7):
   the sequence cut into chunks of Q tokens; inside a chunk the quadratic (attention-like) form
   C·Bᵀ masked by the decays times x, across chunks the linear recurrence on the H·P·N states.
   Its five Triton kernels (mamba_ssm/ops/triton/ssd_combined.py ``_mamba_chunk_scan_combined_fwd``):
   ``_chunk_cumsum_fwd`` (dt, the decays), ``_bmm_chunk_fwd`` (C·Bᵀ per chunk and group, Q×Q×N,
   fp32 out), ``_chunk_state_fwd`` (Bᵀ·x per chunk, the chunk's final state, fp32),
   ``_state_passing_fwd`` (the recurrence over chunks, states out in bf16) and
   ``_chunk_scan_fwd`` (C·state of the previous chunk plus the causal (C·Bᵀ ∘ L)·x of the
   chunk). FLOPs per token: 2·G·Q·N (C·Bᵀ) + 2·H·P·N (chunk states) + 2·H·P·N (C·states) +
   H·P·Q (the causal half of the Q×Q block times x) (:func:`ssd_flops`). Backward
   (``_mamba_chunk_scan_combined_bwd``, 14 Triton kernels) recomputes the decays, C·Bᵀ and the
   states, then computes dstates, passes them back, dx (through the states and the diagonal
   blocks), dB, dC, d(C·Bᵀ), whose two bmm backward kernels give the rest of dB and dC, the decays'
   gradient from C·Bᵀ ∘ (dout·xᵀ) (``_chunk_scan_bwd_ddAcs_stable``) and dt's:
   6·G·Q·N + 10·H·P·N + 3·H·P·Q per token.
   The kernels are priced as kind ``scan``: at the published throughput of a tuned chunk-scan
   kernel (:data:`simulator.costs.compute.SSD_SCAN_EFFICIENCY`) or by their HBM traffic, whichever
   is slower; at state size 128 the fp32 chunk states written, passed and read dominate the traffic
   and the scan is memory-bound (:func:`ssd_bytes`).
4. the gated RMSNorm (mamba_ssm ``layernorm_gated.rmsnorm_fn``, one Triton kernel): y·silu(z)
   normalised per group of d_inner/G channels; reads y and z, writes the output.
5. ``out_proj``: one row-parallel GEMM d_inner -> h.

Backward runs them in reverse: out_proj's dgrad and wgrad, the gated norm's backward (reads y, z
and the output gradient, writes dy and dz), the scan's backward, the conv's backward (the fused
function saves the conv's input and recomputes its output: one more forward pass), in_proj's
dgrad and wgrad.

Tensor parallelism (Megatron-Core ``MambaMixer``): the heads and the groups are split over tp
(``nheads_local_tp``, ``ngroups_local_tp``; tp must divide the groups), in_proj is
column-parallel, out_proj row-parallel, the conv, the norm and the per-head A, D and dt bias
are sharded with their channels: every parameter of the mixer is divided by tp.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.config.workload import Model
from simulator.schedule import tensor_parallel
from simulator.schedule.ir import ComputeKind, ComputeOp, ProgramBuilder, Tag

FP32 = 4  # the chunk states and C·Bᵀ are kept in fp32 (states_in_fp32, output_dtype=torch.float32)


@dataclass(frozen=True)
class MambaShape:
    """The sizes of one Mamba2 mixer on one TP rank."""

    hidden: int
    heads: int  # H / tp
    head_dim: int  # P
    state: int  # N
    groups: int  # G / tp
    conv: int  # width of the depthwise conv
    chunk: int  # Q

    @classmethod
    def of(cls, model: Model, tp: int = 1) -> "MambaShape":
        if model.mamba_heads % tp or model.mamba_groups % tp:
            raise ValueError(f"tp={tp} must divide mamba_heads={model.mamba_heads} and "
                             f"mamba_groups={model.mamba_groups} (Megatron-Core splits both over TP)")
        return cls(hidden=model.hidden, heads=model.mamba_heads // tp, head_dim=model.mamba_head_dim,
                   state=model.mamba_state, groups=model.mamba_groups // tp, conv=model.mamba_conv,
                   chunk=model.mamba_chunk)

    @property
    def inner(self) -> int:
        """d_inner on this rank: heads x head dim."""
        return self.heads * self.head_dim

    @property
    def conv_dim(self) -> int:
        """Channels of the conv: x, B and C."""
        return self.inner + 2 * self.groups * self.state

    @property
    def in_proj_out(self) -> int:
        """Output features of in_proj: z, x, B, C and dt."""
        return 2 * self.inner + 2 * self.groups * self.state + self.heads

    @property
    def gemm_params(self) -> int:
        """Weights of in_proj and out_proj (no biases: ``use_bias`` false)."""
        return self.hidden * self.in_proj_out + self.inner * self.hidden

    @property
    def params(self) -> int:
        """Every parameter of the mixer: in_proj, the conv's weight and bias, dt_bias, A_log and D
        per head, the gated norm's weight and out_proj (its pre-norm is the block's)."""
        return self.gemm_params + self.conv_dim * (self.conv + 1) + 3 * self.heads + self.inner


def ssd_flops(s: MambaShape) -> tuple[float, float]:
    """(forward, backward) FLOPs per token of the SSD chunked scan (module docstring, item 3)."""
    h, p, n, g, q = s.heads, s.head_dim, s.state, s.groups, s.chunk
    fwd = 2.0 * g * q * n + 4.0 * h * p * n + h * p * q
    bwd = 6.0 * g * q * n + 10.0 * h * p * n + 3.0 * h * p * q
    return fwd, bwd


def ssd_bytes(s: MambaShape, act_bytes: int) -> tuple[float, float]:
    """(forward, backward) HBM bytes per token of the SSD kernels. Per token: x is d_inner
    values, B and C G·N each, C·Bᵀ G·Q fp32 values, one chunk's states H·P·N/Q.

    Forward: x read by the chunk-state and chunk-scan kernels and y written (3 d_inner), B and C
    read twice each (4 G·N), C·Bᵀ written and read in fp32 (2 G·Q), the states written in fp32,
    read and rewritten in bf16 by the passing kernel, read by the scan.
    Backward: C·Bᵀ and the states recomputed, dstates (fp32) from dout and C, passed back
    (reading the states), dB and dC from x, dout and the states, dx from x, C·Bᵀ, dout, the
    states and B, d(C·Bᵀ) from x and dout, the two bmm backward kernels and the decays' gradient
    from x, dout and C·Bᵀ: 10 reads or writes of d_inner-wide tensors, 28 + 3·B bytes of states,
    6 passes over C·Bᵀ and about 7 bf16 and 5 fp32 passes over a G·N tensor."""
    b = act_bytes
    d, gn, cb, st = s.inner, s.groups * s.state, s.groups * s.chunk, s.heads * s.head_dim * s.state / s.chunk
    fwd = 3 * d * b + 4 * gn * b + 2 * cb * FP32 + st * (2 * FP32 + 2 * b)
    bwd = 10 * d * b + gn * (7 * b + 5 * FP32) + 6 * cb * FP32 + st * (7 * FP32 + 3 * b)
    return fwd, bwd


def _op(pb: ProgramBuilder, name: str, kind: ComputeKind, nbytes: float, after: int, tag: Tag, count: int = 1,
        flops: float | None = None) -> int:
    """A kernel moving `nbytes` (memory-bound ones: ~1 FLOP per byte, as transformer._mem_op)."""
    return pb.add(ComputeOp(name=name, kind=kind, flops=nbytes / 2 if flops is None else flops,
                            hbm_bytes=nbytes, deps=(after,), tag=tag, count=count))


def forward(pb: ProgramBuilder, s: MambaShape, tp: tensor_parallel.TPContext, layer: int, mb: int, after: int,
            act_bytes: int) -> int:
    """in_proj, conv1d, the SSD scan, the gated norm and out_proj of one micro-batch."""
    tag, t, name = Tag("fwd", layer, mb), tp.tokens, f"L{layer}.mamba"
    x = tensor_parallel.column_parallel_fwd(pb, tp, "in_proj", s.in_proj_out, after)
    x = _op(pb, f"{name}.conv1d.fwd", "elementwise", 2 * s.conv_dim * t * act_bytes, x, tag)
    f_fwd, _ = ssd_flops(s)
    b_fwd, _ = ssd_bytes(s, act_bytes)
    x = _op(pb, f"{name}.ssd.fwd", "scan", b_fwd * t, x, tag, count=5, flops=f_fwd * t)
    x = _op(pb, f"{name}.norm.fwd", "norm", 3 * s.inner * t * act_bytes, x, tag)
    return tensor_parallel.row_parallel_fwd(pb, tp, "out_proj", s.inner, x)


def backward(pb: ProgramBuilder, s: MambaShape, tp: tensor_parallel.TPContext, layer: int, mb: int, after: int,
             act_bytes: int) -> int:
    """The reverse of :func:`forward`; the conv's output is recomputed before its backward."""
    tag, t, name = Tag("bwd", layer, mb), tp.tokens, f"L{layer}.mamba"
    x = tensor_parallel.row_parallel_bwd(pb, tp, "out_proj", s.inner, after)
    x = _op(pb, f"{name}.norm.bwd", "norm", 5 * s.inner * t * act_bytes, x, tag)
    _, f_bwd = ssd_flops(s)
    _, b_bwd = ssd_bytes(s, act_bytes)
    x = _op(pb, f"{name}.ssd.bwd", "scan", b_bwd * t, x, tag, count=14, flops=f_bwd * t)
    # the conv's forward again (its output was not saved), then its backward: reads x and dout, writes dx
    x = _op(pb, f"{name}.conv1d.bwd", "elementwise", 5 * s.conv_dim * t * act_bytes, x, tag, count=2)
    return tensor_parallel.column_parallel_bwd(pb, tp, "in_proj", s.in_proj_out, x)


def activation_bytes(s: MambaShape, tokens: int, act_bytes: int) -> float:
    """Bytes one mixer keeps for its backward, per micro-batch on one rank, as Megatron-Core's
    training path runs it (``MambaMixer._ssm_training``, megatron/core/ssm/mamba_mixer.py @d98e8a64,
    with mamba_ssm's ``mamba_split_conv1d_scan_combined``): in_proj's output (z, x, B, C, dt; the
    kernel saves the ``b l d`` copy it is handed, the ``l b d`` original is freed), the SSD scan's
    ungated output ``out_x`` (the kernel returns y·silu(z) and saves the y it gated: with z given,
    ``MambaSplitConv1dScanCombinedFn.forward`` saves ``out_x`` beside ``zxbcdt``; the conv's output
    is recomputed), the gated output's ``l b d`` copy (the gated RMSNorm's saved input) and the
    norm's output (out_proj's input): in_proj_out + 3·d_inner elements per token."""
    return tokens * act_bytes * (s.in_proj_out + 3 * s.inner)

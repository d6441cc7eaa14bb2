"""Memory per GPU: weights, gradients, optimizer states and activations.

**Model states** (ZeRO, arXiv:1910.02054 §3): mixed-precision Adam keeps 2 bytes of bf16/fp16
weights, 2 bytes of gradients and 12 bytes of fp32 master weights, momentum and variance per
parameter. ZeRO-1 shards the 12, ZeRO-2 also the gradients, ZeRO-3 also the weights, over the
shard group N: DP, times CP (Megatron's distributed optimizer shards over the DP×CP group,
MECHANICS.md §5.6) and times Ulysses (DeepSpeed partitions over the sequence-data-parallel group,
§1.1). fp32 gradient reduction (``grad_reduce_dtype: fp32``) makes the gradient 4 bytes.

**Activations** (arXiv:2205.05198 §4): per layer and micro-batch, in bytes, with s tokens of
sequence, b sequences, h hidden, a heads and t the TP degree:
``sbh·(34 + 5as/h)`` without parallelism, ``sbh·(10 + 24/t + 5as/(ht))`` with TP,
``sbh·(34/t + 5as/(ht))`` with TP+SP; selective recompute drops the ``5as²b/t`` score term,
full recompute keeps only the layer input ``2sbh`` (``/t`` with SP). We derive the 34 from its
parts so GQA and SwiGLU change it the way they change the stored tensors (10sbh replicated
without SP: two norm inputs, the QKV and FC1 inputs, two dropout masks; 24sbh TP-sharded: Q, K,
V, the projection input, and the MLP's 16sbh for a 4h GeLU MLP). With FlashAttention
(``training.flash_attention``, default) the score matrix is never stored, so the 5as²b term is
dropped as under selective recompute. CP and Ulysses divide s (each rank keeps s/(cp·ulysses)
tokens; the score term is (s/cp)·s per rank).

**Pipeline**: stage i of 1F1B holds pp − i micro-batches in flight (the first stage pp); the
interleaved schedule holds ``(pp − i − 1)·2 + (vp − 1)·pp + 1`` chunk-micro-batches of
``L_stage/vp`` layers, which on the first stage is ``L_stage·pp·(1 + (pp−1)/(pp·vp))`` layer
activations (arXiv:2205.05198 §4.2.3), capped by the micro-batches of the step. The first stage
adds the embedding dropout mask (sbh/t per micro-batch in flight), the last stage the final norm
input and the fp32 logits of the cross-entropy, 4sbV/t, for one micro-batch.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.config.scenario import Scenario
from simulator.schedule.shapes import RankShapes, stage_layers, stage_params
from simulator.units import BYTES_PER_ELEMENT, GiB

WEIGHT_BYTES = 2
ADAM_BYTES = 12


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes per GPU on one pipeline stage."""

    params: float
    grads: float
    optimizer: float
    activations: float
    hbm_bytes: float
    stage: int = 0

    @property
    def total(self) -> float:
        return self.params + self.grads + self.optimizer + self.activations

    @property
    def fits(self) -> bool:
        return self.total <= self.hbm_bytes

    def gib(self) -> dict[str, float]:
        return {k: getattr(self, k) / GiB for k in ("params", "grads", "optimizer", "activations", "total")}


def model_state_bytes_per_param(zero: int, n: int, grad_bytes: int = 2) -> tuple[float, float, float]:
    """(weights, grads, optimizer) bytes per parameter under ZeRO stage `zero` sharded n ways."""
    w, g, o = float(WEIGHT_BYTES), float(grad_bytes), float(ADAM_BYTES)
    if zero >= 1:
        o /= n
    if zero >= 2:
        g /= n
    if zero >= 3:
        w /= n
    return w, g, o


def layer_activation_bytes(scn: Scenario) -> float:
    """Activation bytes one layer keeps for one micro-batch on one GPU (see module docstring)."""
    m, t_cfg = scn.model, scn.training
    shape = RankShapes.of(scn)
    s_full, s, b, t = m.seq_len, shape.seq_local, shape.micro_batch_size, shape.tp
    h, a, f = m.hidden, m.heads, m.ffn_hidden
    sbh = s * b * h
    sp = shape.sequence_parallel
    if t_cfg.recompute == "full":
        return 2 * sbh / (t if sp else 1)
    replicated = 10 * sbh
    k_m = 3 if m.gated else 2
    sharded = 4 * sbh + 4 * sbh * m.kv_heads / a + (2 * (k_m - 1) + 2) * s * b * f
    scores = 0.0
    if t_cfg.recompute == "none" and not t_cfg.flash_attention:
        scores = 5 * a * s * s_full * b
    return (replicated / t if sp else replicated) + sharded / t + scores / t


def moe_layer_activation_bytes(scn: Scenario) -> float:
    """Extra activation bytes of an MoE layer over a dense one with no MLP, per micro-batch: the
    router logits (fp32, T·E), the permuted dispatch buffer (T·k·h), and for the R rows the
    slowest rank's experts process the stored fc1 input, fc1 output(s) and activation output
    (R·(h + (2(k_m−1) + 2)·f/etp)), plus the shared experts' MLP tensors."""
    from simulator.schedule.moe import MoESpec

    m, B = scn.model, scn.training.act_bytes
    shape = RankShapes.of(scn)
    tokens = shape.sp_tokens
    spec = MoESpec.from_scenario(scn)
    k_m = 3 if m.gated else 2
    routed = spec.rows * (m.hidden + (2 * (k_m - 1) + 2) * m.moe_ffn_hidden / spec.etp) * B
    shared = (2 * (k_m - 1) + 2) * shape.tokens * m.shared_ffn_hidden / shape.tp
    return tokens * m.experts * 4 + tokens * m.top_k * m.hidden * B + routed + shared


def in_flight(scn: Scenario, stage: int) -> float:
    """Layer-activation sets (in units of the whole stage's layers) stage `stage` holds at peak."""
    p = scn.parallel
    n_micro = scn.n_micro
    if p.pp_schedule == "interleaved" and p.vp > 1:
        # combined 1F1B (overlap_moe_expert_parallel_comm) runs one more warm-up forward; without
        # pipelining it holds one set, its paired forward filling as its backward drains
        chunks = (p.pp - stage - 1) * 2 + (p.vp - 1) * p.pp + 1 + p.overlap_moe_expert_parallel_comm
        return min(chunks, n_micro * p.vp) / p.vp
    return float(min(p.pp - stage, n_micro))


def estimate_memory(scn: Scenario, stage: int) -> MemoryEstimate:
    p, m, tr = scn.parallel, scn.model, scn.training
    shape = RankShapes.of(scn)
    n = stage_params(scn, stage)
    grad_bytes = BYTES_PER_ELEMENT[p.grad_reduce_dtype]
    w, g, o = model_state_bytes_per_param(p.zero, shape.grad_shard, grad_bytes)
    we, ge, oe = model_state_bytes_per_param(p.zero, shape.expert_dp, grad_bytes)
    per_layer = layer_activation_bytes(scn)
    layers = stage_layers(scn, stage)
    layer_sum = len(layers) * per_layer
    if m.moe and tr.recompute != "full":
        dense_mlp = (2 * ((3 if m.gated else 2) - 1) + 2) * shape.tokens * shape.ffn
        n_moe = sum(1 for i in layers if m.is_moe_layer(i))
        layer_sum += n_moe * (moe_layer_activation_bytes(scn) - dense_mlp)
    acts = layer_sum * in_flight(scn, stage)
    sb, t = shape.tokens, shape.tp
    if stage == 0:
        acts += sb * m.hidden / t * min(p.pp, scn.n_micro)  # embedding dropout masks
    if stage == p.pp - 1:
        acts += 2 * sb * m.hidden + 4 * sb * m.vocab / t  # final-norm input, fp32 logits
    return MemoryEstimate(params=n.dense * w + n.expert * we, grads=n.dense * g + n.expert * ge,
                          optimizer=n.dense * o + n.expert * oe,
                          activations=acts, hbm_bytes=scn.profile.gpu.hbm_bytes, stage=stage)


def memory_per_gpu(scn: Scenario) -> MemoryEstimate:
    """The estimate of the stage that needs the most memory (what decides whether a plan fits)."""
    return max((estimate_memory(scn, i) for i in range(scn.parallel.pp)), key=lambda e: e.total)

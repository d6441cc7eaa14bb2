"""Memory per GPU as PyTorch measures it: the allocated peak, the reserved peak, and the device total.

Three figures, as a training log prints them:

* **allocated peak** (``torch.cuda.max_memory_allocated``): the bytes live tensors hold at the
  step's worst moment: model states, stored activations, and the transient buffers alive then
  (the loss's logits, the recompute working set, ZeRO-3's gathered parameters and reduce buckets,
  pipeline send/recv buffers, GEMM workspaces);
* **reserved peak** (``torch.cuda.max_memory_reserved``): what the caching allocator holds from
  the driver, the allocated peak plus fragmentation (below);
* **device total**: reserved plus what lives outside PyTorch's allocator (the CUDA context, NCCL's
  buffers, TransformerEngine's Userbuffers). This is what must fit in HBM (``fits``), what ``total`` reports and what the sweep's
  memory cap compares against.

**Model states** (ZeRO, arXiv:1910.02054 §3): mixed-precision Adam keeps 2 bytes of bf16/fp16
weights, the gradient, and 12 bytes of fp32 master weights, momentum and variance per parameter.
ZeRO-1 shards the 12, ZeRO-2 also the gradients, ZeRO-3 also the weights, over the shard group N:
DP, times CP (Megatron's distributed optimizer shards over the DP×CP group, MECHANICS.md §5.6) and
times Ulysses (DeepSpeed partitions over the sequence-data-parallel group, §1.1). The gradient
has the bytes of ``grad_reduce_dtype``: Megatron-LM accumulates bf16 runs into fp32 ``main_grad``
buffers unless ``--grad-reduce-in-bf16`` (``arguments.py``: ``accumulate_allreduce_grads_in_fp32``
is set for bf16; the DDP grad buffer is allocated in that dtype, ``distributed_data_parallel.py``),
so a Megatron bf16 run is ``grad_reduce_dtype: fp32``: 2 + 4 + 12/N bytes per parameter (the
"bf16 param, fp32 grads" row of Megatron's distributed-optimizer table). FSDP2 (``zero3_impl:
fsdp2``) keeps the sharded parameter in the dtype the model was built in and its gradient in the
same (``MixedPrecisionPolicy`` casts only the unsharded copy to bf16; ``foreach_reduce`` in
torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py casts the reduced gradient back to the
parameter's ``orig_dtype``): over an fp32 model (torchtitan) 4 + 4 + 8 bytes per parameter, over N.

**When the gradient exists.** Megatron's DDP and distributed optimizer allocate one contiguous
grad buffer at model build (``param_and_grad_buffer.py``), alive at every moment. PyTorch's
autograd makes a parameter's ``.grad`` in its layer's backward and the optimizer's
``zero_grad(set_to_none=True)`` frees it (FSDP1, FSDP2, Meta's Llama 3 stack;
``parallel.grad_allocation: lazy``, the default under FSDP2): at the activation peak only the
gradients of the layers back-propagated before it exist, which the schedule's order gives
(:func:`backpropagated_fraction`); the end of the backward, all gradients made and the
activations freed, is then a candidate peak of its own.

``training.master_dtype`` and ``optimizer_state_dtype`` set the bytes B_m of the weights the
optimizer updates and B_s of each Adam moment (the 12 above is 4 + 2·4). A model built and
stepped in bf16 keeps no fp32 copy: NeMo AutoModel builds its models in bf16 (``from_config`` /
``from_pretrained``: ``torch_dtype`` "auto" is ``torch.bfloat16``, nemo_automodel/_transformers/
auto_model.py) and torch.optim allocates the moments ``zeros_like`` the parameter, so under FSDP2
that is 2 + 2 + 4 bytes per parameter over N; TransformerEngine's FusedAdam over bf16 parameters
keeps fp32 moments (``exp_avg_dtype`` fp32 by default): 2 + 2 + 8 (AutoModel's
docs/guides/mixed-precision-training.mdx tabulates both). Without FSDP2 the model's bf16 weights
and the gradient stay as above and the optimizer holds 2·B_s, plus B_m where the master is a
copy of its own (fp32).

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
tokens; the score term is (s/cp)·s per rank; TransformerEngine's P2P context-parallel attention
keeps one K/V chunk more, :func:`cp_received_kv_bytes`). Two refinements of the paper's 34: the dropout
masks exist only with p > 0 (``training.dropout``; ATen's dropout returns its input when p = 0,
and Llama-style models train without dropout), and TransformerEngine's FP8 layers save each
GEMM input quantised, one byte per element (:func:`fp8_saved_bytes`).

**Pipeline**: stage i of 1F1B holds pp − i micro-batches in flight (the first stage pp); the
interleaved schedule holds ``(pp − i − 1)·2 + (vp − 1)·pp + 1`` chunk-micro-batches of
``L_stage/vp`` layers, which on the first stage is ``L_stage·pp·(1 + (pp−1)/(pp·vp))`` layer
activations (arXiv:2205.05198 §4.2.3), capped by the micro-batches of the step. The first stage
adds the embedding dropout mask (sbh/t per micro-batch in flight), the last stage the final norm
input. Each stage with pp > 1 keeps one received activation and one gradient being sent
(``2·sbh/t_SP`` elements, Megatron's ``p2p_communication``). ``torch.distributed.pipelining``
(FSDP2 with pp > 1, torchtitan) keeps more: a receive buffer per micro-batch each way
(:func:`pipeline_buffer_bytes`) and, on the last stage, every micro-batch's output, the fp32
logits under torchtitan's loss, to the end of the step (:func:`pipeline_output_bytes`).
Megatron-LM's legacy model (``training.legacy_model``) saves two tensors per layer more than the
fused layer (:func:`legacy_model_bytes`).

**Transient buffers at the peak** (:func:`estimate_memory`). The step's allocated peak is the
larger of two moments:

* *the loss of the last micro-batch on the last stage* (every stored activation is alive): the
  logits and the cross-entropy's buffers, per token and vocabulary column of the rank (V/t)
  (:data:`CROSS_ENTROPY_BYTES`). Megatron's ``vocab_parallel_cross_entropy`` takes
  ``logits.float()`` and works in place (max subtraction, exp, division): the bf16 logits (2 B)
  and one fp32 copy (4 B) are alive, and the fp32 softmax is saved for backward, whose gradient
  is made in place: 6 B. PyTorch's ``F.cross_entropy(logits.float())`` (torchtitan, HF) adds a
  ``log_softmax`` output (4 B) in forward; in backward the saved output, its incoming gradient
  and the gradient of the input are alive together (12 B, torchtitan frees the bf16 logits
  before backward with ``del pred``): 12 B. With TP > 1 the logits are vocabulary-sharded
  DTensors and PyTorch's ``loss_parallel`` (torchtitan's default with TP) runs the decomposed
  log-softmax of ``torch/distributed/tensor/parallel/loss.py``: forward holds the fp32 input,
  ``shifted = x − max`` and ``exp(shifted)`` (14 B with the bf16 logits); backward's
  ``grad_output − exp(output)·sum(grad_output)`` holds the saved output, the incoming gradient,
  the product and the result: 16 B. On the low-precision logits themselves (``torch_lowp``) the
  saved log-softmax output, its incoming gradient and the input's gradient are 2 B each: 6 B
  (8 where the caller still holds the logits). A fused cross-entropy kernel (flash-attn's, llm-foundry's
  default) reads the bf16 logits (2 B) and saves only the log-sum-exp; its backward writes the
  bf16 gradient beside them: 4 B. ZeRO-3 keeps the root group (embedding, LM head) gathered
  across the forward.
* *the backward of a layer*: under full recompute the layer's own activations are rebuilt and
  alive (the ``recompute: none`` set of one layer); under ZeRO-3 the gathered parameters of two
  layers (the current one and the prefetched next) and the layer's unsharded gradient (plus its
  fp32 copy when the reduction is fp32) — FSDP2 (one group per layer) — or DeepSpeed's gathered
  window (the layer plus ``zero3_prefetch_bucket_elements``, at most
  ``zero3_max_live_parameters``) and its IPG reduce bucket (``zero3_reduce_bucket_elements``
  gradient elements, allocated once and kept).

  FSDP2 under a pipeline schedule (``torch.distributed.pipelining``, pp > 1) keeps more: the
  stage's ``backward_maybe_with_nosync`` sets ``set_reshard_after_backward(False)`` and
  ``set_requires_gradient_sync(False)`` on every backward but the last, and torchtitan applies
  ``fully_shard(..., reshard_after_forward=False)`` when PP is on, so the whole stage's
  parameters stay gathered in bf16 (2 B each) and its unsharded gradients accumulate across
  micro-batches in the reduce dtype (FSDP2 ``to_accumulated_grad_if_needed``: 4 B with an fp32
  reduction), both alive at either moment.

Gradient buckets: Megatron's DDP and distributed optimizer reduce in place in the contiguous
grad buffer (``param_and_grad_buffer.py``: buckets are views of it), so they add nothing beyond
the gradient term; ZeRO-3's buckets are counted above.

GEMM workspaces are allocated through PyTorch's allocator and held: PyTorch's cuBLAS handle
workspace (``CUBLAS_WORKSPACE_CONFIG`` default ``:4096:8`` = 32 MiB on Hopper and later,
``:4096:2:16:8`` = 8 MiB + 128 KiB before; ``CUDABlas.cpp``), one per thread that runs GEMMs
(:data:`CUBLAS_THREADS`: the forward's and autograd's device thread), and, for TransformerEngine stacks
(``fused_kernels``), TE's cuBLASLt workspace (32 MiB on sm90+, 4 MiB before,
``get_cublas_workspace_size_bytes``), and TE's grouped GEMM of the experts
(``training.moe_grouped_gemm``) four more of the same size, one per compute stream.

TransformerEngine's placeholder weight gradients (``training.te_dummy_wgrad``): with gradient
accumulation fusion under Megatron's DDP, TE >= 2.3 returns autograd one cached bf16 tensor per
distinct weight shape instead of the gradient it accumulated into ``main_grad``, held for the run
(:func:`dummy_wgrad_bytes`).

**Fragmentation** (reserved − allocated). PyTorch's caching allocator (``CUDACachingAllocator.cpp``)
rounds requests up to 512 B, serves those ≤ 1 MiB from 2 MiB segments and those of 1–10 MiB
from 20 MiB segments, and gives larger requests their own segment rounded up to 2 MiB; a
cached segment is split to serve a smaller request and only merges back with free neighbours.
Long-lived model states are allocated once in large buffers and do not fragment; the churn is in
the activations and transient buffers, whose freed blocks are re-split by the next step's
differently sized requests. We charge ``training.allocator_fragmentation`` times those dynamic
bytes (:data:`DEFAULT_FRAGMENTATION`; see there for its derivation), plus the one stranded block
a closed form gives: PyTorch's cross-entropy frees the bf16 logits just before requesting fp32
tensors twice their size, which that block cannot serve (:func:`stranded_bytes`).

**Outside PyTorch**: the CUDA context (``gpu.cuda_context_GiB``, default 0.5 GiB, an assumed
typical size: the driver's per-context state and the module images of the CUDA runtime, cuBLAS,
cuDNN and NCCL kernels, loaded on first use since CUDA 11.7's lazy loading, the default on Linux
since CUDA 12.2; it varies with the driver and the libraries loaded, so set it from
``nvidia-smi`` minus ``torch.cuda.memory_reserved`` on the target system) and NCCL's
connection buffers, which NCCL allocates with ``cudaMalloc``/``cuMem`` itself
(:func:`nccl_buffer_bytes`).

**TP communication overlap** (``parallel.tp_overlap`` other than ``none``: Megatron's
``--tp-comm-overlap``, NeMo's ``ub_tp_comm_overlap``). TransformerEngine's ``initialize_ub``
(``transformer_engine/pytorch/module/base.py``, TE v1.8 to v2.1: NeMo 24.07 to 25.02) creates one
Userbuffers communicator per overlapped GEMM whatever method the run uses, ten of them: four
ring-exchange AllGathers (qkv/fc1 fprop, proj/fc2 dgrad), two pipelined ReduceScatters (proj/fc2
fprop) and four bulk overlaps (qkv/fc1 dgrad AllGather and wgrad ReduceScatter). Each registers
a buffer of the gathered activation shape, ``(seq_len × micro_batch / cp, hidden)``, that
Userbuffers allocates itself (``register_user_buffer_collective``: ``cuMemCreate`` with CUDA
multicast, ``cudaMalloc`` without), so outside PyTorch's allocator: in the device total, not in
the allocated or reserved peaks (:func:`userbuffer_bytes`). The buffer is 1 B per element for the
six AllGather buffers in an FP8 run (``fp8_buf``), else 2 B (bf16). A ReduceScatter ring
exchange would hold ``2·tp − 1`` chunks, but no default method is one. TE v2.8 and later add two
``external`` buffers for proj/fc2 wgrad, not counted here; the communicator's own flag region
(about 1.6 MB, once) is left out too. ``initialize_ub`` also replaces TE's cuBLAS workspace by
``_NUM_MAX_UB_STREAMS`` = 3 copies of it (``get_workspace().repeat(3)``, one per overlap compute
stream): a PyTorch tensor, so the two extra copies count in the allocated peak
(:func:`ub_workspace_bytes`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from simulator.config.scenario import Scenario
from simulator.config.workload import Training
from simulator.schedule import checkpointing, fp8
from simulator.schedule.shapes import (RankShapes, embedding_unit, head_unit, layer_kinds, stage_layers,
                                       stage_params, stage_units, virtual_layers)
from simulator.units import BYTES_PER_ELEMENT, GiB, KiB, MiB

WEIGHT_BYTES = 2

# Bytes per logit (token × vocabulary column of the rank) alive at the loss's peak; see the
# module docstring for the tensors of each implementation.
# fused_linear (Cut Cross-Entropy) keeps no logits: its forward saves one fp32 log-sum-exp per token
CROSS_ENTROPY_BYTES = {"vocab_parallel": 6, "torch": 12, "torch_lowp": 6, "fused": 4, "fused_linear": 0}
TORCH_LOSS_PARALLEL_BYTES = 16  # "torch" with TP > 1: DTensor loss_parallel's decomposed log-softmax

# Fragmentation charged on the dynamic (activation and transient) bytes. Derivation: the
# allocator's own rounding is bounded by its rules: a block of a large tensor (tens to hundreds of
# MiB here) wastes under 2 MiB, under 1 %; tensors of 1-10 MiB can strand up to half of a 20 MiB
# segment, but they are a few percent of a large model's dynamic bytes. What remains is external
# fragmentation: free split blocks between long-lived activations that a request of another size
# cannot use, which no closed form gives. 0.10 is therefore an assumed round value, not a fit: no
# published run with both peaks and its plan was found beyond the torchtitan tables, which are
# scored with this default held out (docs/validation-e2e.md, "Peak memory", prints the value those
# rows alone would need, in-sample). Set ``training.allocator_fragmentation`` from a run's
# ``max_memory_reserved`` / ``max_memory_allocated`` to calibrate it.
DEFAULT_FRAGMENTATION = 0.10

# NCCL's per-connection buffers (src/init.cc, ``computeBuffSizes``): Simple ``NCCL_BUFFSIZE``
# 4 MiB; LL 8 lines × 512 threads × 8 steps × 16 B = 512 KiB; LL128 120 elements × 640 threads ×
# 8 steps × 8 B = 4,915,200 B. A ring communicator gives each channel one receiving connection
# per rank; NCCL opens 2–32 channels by topology, we take 16 (the usual NVLink ring count on
# DGX H100, ``NCCL_MIN_NCHANNELS``/``NCCL_MAX_NCHANNELS`` move it).
NCCL_SIMPLE_BUFFSIZE = 4 * MiB
NCCL_LL_BUFFSIZE = 8 * 512 * 8 * 16
NCCL_LL128_BUFFSIZE = 120 * 640 * 8 * 8
NCCL_CHANNELS = 16

CUBLAS_WORKSPACE = {"new": 8 * 4 * MiB, "old": 2 * 4 * MiB + 8 * 16 * KiB}  # PyTorch's default config
# PyTorch keeps a cuBLAS workspace per handle and stream (aten/src/ATen/cuda/CublasHandlePool.cpp,
# setWorkspaceForHandle: a map keyed by (handle, stream), allocated through the caching allocator
# and never freed), and hands out handles per thread (DeviceThreadHandlePool: a thread-local pool
# window). A training step runs GEMMs on two threads: the forward on the Python thread, the
# backward on the autograd engine's worker thread of the device (torch/csrc/autograd/engine.cpp
# runs CUDA backward functions on one thread per device), so two workspaces are held, both on the
# default stream. TransformerEngine's GEMMs use its own workspace (one tensor, not per thread);
# Megatron's output layer and everything in torchtitan run through PyTorch's cuBLAS.
CUBLAS_THREADS = 2
TE_WORKSPACE = {"new": 32 * MiB, "old": 4 * MiB}
# TransformerEngine's grouped GEMM: a workspace per compute stream, cached for the run
# (pytorch/cpp_extensions/gemm.py get_cublas_workspace(grouped_gemm=True); num_compute_streams = 4
# in common/util/multi_stream.cpp, TE d0067d0da)
TE_GROUPED_GEMM_STREAMS = 4
# TransformerEngine's initialize_ub (v1.8-v2.1): the overlapped GEMMs that get a Userbuffers
# buffer, and those whose buffer is FP8 (``layers_all_gather_overlap``) in an FP8 run; the cuBLAS
# workspace is repeated once per overlap stream (``_NUM_MAX_UB_STREAMS``).
UB_GEMMS = ("qkv_fprop", "fc1_fprop", "proj_dgrad", "fc2_dgrad", "proj_fprop", "fc2_fprop",
            "qkv_dgrad", "qkv_wgrad", "fc1_dgrad", "fc1_wgrad")
UB_FP8_BUFFERS = frozenset({"qkv_fprop", "qkv_dgrad", "proj_dgrad", "fc1_fprop", "fc1_dgrad", "fc2_dgrad"})
UB_NUM_MAX_STREAMS = 3


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes per GPU on one pipeline stage at its peak (see the module docstring)."""

    params: float
    grads: float
    optimizer: float
    activations: float  # stored for backward at the peak
    hbm_bytes: float
    stage: int = 0
    loss_buffers: float = 0.0  # logits and cross-entropy buffers alive at the peak
    recompute: float = 0.0  # full recompute: the layer being rebuilt in backward
    comm_buffers: float = 0.0  # ZeRO-3 gathered parameters and buckets, pipeline send/recv
    pipeline_outputs: float = 0.0  # torch.distributed.pipelining: the last stage's kept outputs
    workspaces: float = 0.0  # cuBLAS / TransformerEngine GEMM workspaces
    dummy_wgrads: float = 0.0  # TransformerEngine's cached placeholder weight gradients
    ub_workspaces: float = 0.0  # TE's extra cuBLAS workspaces for the TP-overlap streams
    stranded: float = 0.0  # cached free blocks no request at the peak can reuse (reserved, not allocated)
    fragmentation_factor: float = DEFAULT_FRAGMENTATION
    cuda_context: float = 0.0
    nccl_buffers: float = 0.0
    userbuffers: float = 0.0  # TE's Userbuffers for TP comm overlap (outside PyTorch)

    @property
    def model_states(self) -> float:
        return self.params + self.grads + self.optimizer

    @property
    def allocated(self) -> float:
        """Peak allocated bytes (``torch.cuda.max_memory_allocated``)."""
        return (self.model_states + self.activations + self.loss_buffers + self.recompute + self.comm_buffers
                + self.pipeline_outputs + self.workspaces + self.ub_workspaces + self.dummy_wgrads)

    @property
    def fragmentation(self) -> float:
        """Reserved − allocated at the peak: the factor times the dynamic bytes, plus the cached
        blocks stranded at the peak (:func:`stranded_bytes`)."""
        return self.fragmentation_factor * self.dynamic + self.stranded

    @property
    def dynamic(self) -> float:
        """The activation and transient bytes (those the fragmentation factor applies to)."""
        return self.activations + self.loss_buffers + self.recompute + self.comm_buffers + self.pipeline_outputs

    @property
    def reserved(self) -> float:
        """Peak reserved bytes (``torch.cuda.max_memory_reserved``)."""
        return self.allocated + self.fragmentation

    @property
    def non_pytorch(self) -> float:
        """Device memory outside PyTorch's allocator: CUDA context, NCCL buffers and TE's
        Userbuffers."""
        return self.cuda_context + self.nccl_buffers + self.userbuffers

    @property
    def total(self) -> float:
        """Device memory the plan needs: reserved + non-PyTorch (what ``fits`` compares to HBM)."""
        return self.reserved + self.non_pytorch

    @property
    def fits(self) -> bool:
        return self.total <= self.hbm_bytes

    def gib(self) -> dict[str, float]:
        keys = ("params", "grads", "optimizer", "activations", "loss_buffers", "recompute", "comm_buffers",
                "pipeline_outputs", "workspaces", "ub_workspaces", "dummy_wgrads", "stranded", "allocated", "fragmentation",
                "reserved", "cuda_context", "nccl_buffers", "userbuffers", "non_pytorch", "total")
        return {k: getattr(self, k) / GiB for k in keys}


def model_state_bytes_per_param(zero: int, n: int, grad_bytes: int = 2, zero3_impl: str = "deepspeed",
                                master_bytes: int = 4, state_bytes: int = 4) -> tuple[float, float, float]:
    """(weights, grads, optimizer) bytes per parameter under ZeRO stage `zero` sharded n ways, with
    master weights of `master_bytes` and two Adam moments of `state_bytes` each. FSDP2's sharded
    parameter is the master and its gradient has the master's dtype: (B_m, B_m, 2·B_s) / n.
    Otherwise bf16 weights, the gradient in the reduce dtype, and the moments plus an fp32 master
    copy where the master is not the bf16 weight itself (2, B_g, 2·B_s + B_m: 2 + B_g + 12)."""
    if zero >= 3 and zero3_impl == "fsdp2":
        return master_bytes / n, master_bytes / n, 2.0 * state_bytes / n
    copy = master_bytes if master_bytes != WEIGHT_BYTES else 0
    w, g, o = float(WEIGHT_BYTES), float(grad_bytes), float(2 * state_bytes + copy)
    if zero >= 1:
        o /= n
    if zero >= 2:
        g /= n
    if zero >= 3:
        w /= n
    return w, g, o


def layer_activation_bytes(scn: Scenario, recompute: str | None = None) -> float:
    """Activation bytes one layer keeps for one micro-batch on one GPU (see module docstring);
    `recompute` overrides ``training.recompute`` (the full-recompute working set is the
    ``none`` set)."""
    m, t_cfg = scn.model, scn.training
    recompute = recompute or t_cfg.recompute
    shape = RankShapes.of(scn)
    s_full, s, b, t = m.seq_len, shape.seq_local, shape.micro_batch_size, shape.tp
    h, a, f = m.hidden, m.heads, m.ffn_hidden
    sbh = s * b * h
    sp = shape.sequence_parallel
    if recompute == "full":
        return 2 * sbh / (t if sp else 1)
    if recompute == "selective_op":
        # torchtitan's op-level policy (tp = 1, bf16 activations): the block's input, the saved mm
        # outputs wq, wv, w1, w2 (not w2 in a compiled block, compiled_unsaved_bytes) and the
        # attention output; in fp8 the Float8 GEMMs' outputs are
        # not saved (aten._scaled_mm is not in torchtitan's _save_list): the input and the
        # attention output
        if t_cfg.dtype == "fp8":
            return 4 * sbh
        return 8 * sbh + 2 * sbh * m.kv_heads / a + 2 * s * b * f - compiled_unsaved_bytes(scn)
    fp8 = fp8_saved_bytes(scn)
    # two norm inputs (bf16), the QKV and FC1 inputs (FP8 under TE), two dropout masks (only with
    # p > 0: ATen's dropout returns its input when p == 0, aten/src/ATen/native/Dropout.cpp)
    replicated = 4 * sbh + 2 * (fp8 or 2) * sbh + (2 * sbh if t_cfg.dropout else 0.0)
    if t_cfg.autocast:  # the norms' inputs are the fp32 residual stream (schedule/autocast.py): 2 bytes more each
        replicated += 4 * sbh
    if t_cfg.norm_kernel == "composite" and not t_cfg.fused_kernels:
        # each norm as PyTorch ops (transformer.composite_rms_norm) keeps its fp32 upcast (pow's and the
        # multiply's input) and its normalised bf16 output (the scale's), not its input: 6 bytes for 2
        replicated += 2 * 4 * sbh
    # Q, K, V, the attention output (bf16, saved by the kernel) and, under TE FP8, the output
    # projection's own FP8 copy of it; then the MLP's
    sharded = 4 * sbh + 4 * sbh * m.kv_heads / a + fp8 * sbh + dense_mlp_bytes(scn, s * b * f)
    if recompute == "none":
        sharded += cp_received_kv_bytes(scn)
    scores = unfused_scores_bytes(scn) if recompute == "none" else 0.0
    return (replicated / t if sp else replicated) + (sharded + legacy_model_bytes(scn)) / t + scores


def unfused_scores_bytes(scn: Scenario) -> float:
    """Bytes one attention layer keeps per micro-batch for the score matrix when the attention is
    not a fused kernel (``training.attention: unfused``): arXiv:2205.05198's 5·a·s²·b over TP (the
    softmax output, its dropout mask and the dropout's output, the ·V GEMM's input; s the rank's
    query tokens against the whole sequence under CP). Counted for every attention layer of the
    stack, a GPT layer's or a hybrid model's attention block (``model.layer_pattern`` "*")
    alike; 0 with FlashAttention (the scores are never stored) and under selective or full
    recompute (the caller leaves them out)."""
    if scn.training.flash_attention:
        return 0.0
    shape = RankShapes.of(scn)
    return 5.0 * scn.model.heads * shape.seq_local * scn.model.seq_len * shape.micro_batch_size / shape.tp


def compiled_unsaved_bytes(scn: Scenario) -> float:
    """Bytes per layer and micro-batch that torchtitan's op-level selective checkpointing keeps in
    eager and a compiled block (``training.compile`` other than ``none``) does not: the output of
    the FFN's second GEMM, w2 (2·s·b·h bf16).

    Eager: ``torch.utils.checkpoint``'s ``_CachingTorchDispatchMode`` stores the output of every op
    the policy marks ``MUST_SAVE`` in the checkpoint's storage, whether or not a backward op reads
    it, until the block's recompute. torchtitan's policy (``_custom_policy`` in
    parallelize_llama.py, 9dec370) saves every odd ``aten.mm`` of the block, in the order wq, wk,
    wv, wo, w1, w3, w2: wq, wv, w1 and w2, with the SDPA outputs and the checkpoint's input. The
    w2 output feeds only the residual add, whose backward reads neither input, so nothing in the
    backward consumes it. Compiled (``torch.compile`` of the checkpointed block, torchtitan's
    ``apply_compile``): the policy becomes tags on the joint graph's nodes, and AOTAutograd's
    ``min_cut_rematerialization_partition`` (torch/_functorch/partitioners.py), Inductor's
    partition function, saves only forward values the backward graph uses: the tag forces a
    node into the saved set only among those. So the compiled block keeps the input, wq's, wv's
    and w1's outputs and the attention output and log-sum-exp, and not w2's: 2·s·b·h bytes per
    layer less (measured on the partitioner's forward graph of the block at torch 2.13: the saved
    outputs are exactly these). Under Float8 the policy's set (the input and the attention
    output) is read by the backward: 0. Nothing under full checkpointing (only the input is saved)
    or without checkpointing (the model's saved set there is the fused layer's, which holds no
    value the backward does not read)."""
    t_cfg = scn.training
    if t_cfg.compile == "none" or t_cfg.recompute != "selective_op" or t_cfg.dtype == "fp8":
        return 0.0
    shape = RankShapes.of(scn)
    return 2.0 * shape.seq_local * shape.micro_batch_size * scn.model.hidden


def cp_received_kv_bytes(scn: Scenario) -> float:
    """Bytes per layer and micro-batch, before the TP split, that TransformerEngine's P2P
    context-parallel attention (``parallel.cp_comm: p2p``, sbhd layout; Megatron's default
    ``--cp-comm-type p2p``) keeps beyond the Q, K and V of :func:`layer_activation_bytes`: one
    K/V chunk the size of the rank's own.

    ``AttnFuncWithCPAndKVP2P.forward`` (transformer_engine/pytorch/attention/dot_product_attention/
    context_parallel.py, TE d0067d0da) copies K and V into one send buffer
    (``torch.cat((k.view(-1), v.view(-1)))``), receives the next rank's chunk into a buffer of the
    same size at each ring step, and saves for backward ``q``, the last received chunk
    (``kv = p2p_comm_buffers[-1]``), the output and the log-sum-exp, not the rank's own K and V.
    Megatron-Core's q, k and v are views of the QKV projection's output
    (``get_query_key_value_tensors``: a view, a split along the head dimension, and a reshape of
    the query that stays a view when each group has one query head), and the saved q keeps that
    whole output alive, its K and V included: so the received chunk is held on top, 2 tensors of
    s·b·h·(kv/a) elements. Where q is a new tensor the projection's output is freed and nothing is
    added: grouped-query attention (the query reshape copies), RoPE (``apply_rotary_pos_emb``
    writes new q and k), the bshd layout of TE <= 1.6 (q, k, v transposed on entry), FP8 (the
    saved tensors are quantised copies), and selective or full recompute (the core attention's
    own saved tensors are not kept); other CP implementations (``ring``, ``all_gather``,
    ``a2a``) save the rank's own K/V."""
    p, m, t_cfg = scn.parallel, scn.model, scn.training
    if p.cp == 1 or p.cp_comm != "p2p" or p.cp_qkv_format != "sbhd":
        return 0.0
    if not t_cfg.fused_kernels or not t_cfg.flash_attention or t_cfg.dtype == "fp8":
        return 0.0
    if m.kv_heads != m.heads or m.position_embedding == "rope" or m.kv_lora_rank:
        return 0.0
    shape = RankShapes.of(scn)
    return 2.0 * shape.tokens * m.hidden * t_cfg.act_bytes


def fp8_saved_bytes(scn: Scenario) -> float:
    """Bytes per element of a GEMM input TransformerEngine saves for backward in an FP8 run
    (``dtype: fp8`` with TE layers, ``fused_kernels``); 0 where the saved inputs are bf16.

    TransformerEngine 2.9 (``pytorch/module/linear.py`` and ``layernorm_linear.py``, tag v2.9,
    the release NeMo 25.11 / Megatron-Bridge v0.2.0 pins) quantises each linear layer's input
    and saves the quantised tensor, not the bf16 one: a row-parallel ``Linear`` (output
    projection, FC2) keeps only its column-wise FP8 data (``update_usage(rowwise_usage=False)``),
    a ``LayerNormLinear`` (QKV, FC1) has its norm write FP8 directly (``with_quantized_norm``)
    and keeps one usage of that output: row-wise where the input is all-gathered under sequence
    parallelism with per-tensor scaling (``supports_only_rowwise_all_gather``), column-wise
    otherwise; either way one byte per element of the rank's (local) shard, plus the scales of
    block recipes (MXFP8: one E8M0 byte per 32 elements; 1x128 blocks: a 4-byte scale per 128).
    The bf16 norm inputs, the attention's Q, K, V and output and FC1's output (the activation's
    saved input) stay bf16. torchao's ``Float8Linear`` (torchtitan, ``fused_kernels: false``)
    saves its bf16 inputs and re-casts them in backward: 0 here."""
    t_cfg = scn.training
    if t_cfg.dtype != "fp8" or not t_cfg.fused_kernels:
        return 0.0
    return 1.0 + fp8.SCALE_BYTES.get(t_cfg.fp8_recipe, 0.0)


def dense_mlp_bytes(scn: Scenario, sbf: float) -> float:
    """Bytes a dense MLP keeps per layer and micro-batch before the TP split, for ``sbf`` elements
    of one FFN-wide tensor: FC1's output (2f gated, f otherwise: the activation's saved input)
    and the activation's output (FC2's input; GeLU also saves its own input, counted with FC1's
    output): 2·(k_m − 1)·sbf + 2·sbf bytes in bf16, FC2's input at :func:`fp8_saved_bytes` under
    TransformerEngine FP8."""
    k_m = 3 if scn.model.gated else 2
    return (2 * (k_m - 1) + (fp8_saved_bytes(scn) or 2)) * sbf


def legacy_model_bytes(scn: Scenario) -> float:
    """Activation bytes Megatron-LM's legacy GPT model (``training.legacy_model``; megatron/model/
    transformer.py, 2023-09 snapshot 1618c7e5) keeps per layer and micro-batch beyond the fused
    layer of :func:`layer_activation_bytes`, before the TP split: its SwiGLU is
    ``F.silu(x[0]) * x[1]`` over ``torch.chunk`` of FC1's output, so the SiLU output (s·b·f
    elements) is saved for the multiply besides FC1's output and the product (a fused bias-SwiGLU
    saves only its input); and its flash path (``FlashSelfAttention``) hands the kernel's output to
    ``rearrange(..., 'b s h d -> s b (h d)').contiguous()``, a copy when b > 1, which the output
    projection saves while flash-attn keeps the original for its backward: s·b·h elements more."""
    m, t_cfg = scn.model, scn.training
    if not t_cfg.legacy_model:
        return 0.0
    shape = RankShapes.of(scn)
    tokens, b = shape.seq_local * shape.micro_batch_size, shape.micro_batch_size
    out = 2.0 * tokens * m.ffn_hidden if m.gated else 0.0
    if t_cfg.flash_attention and b > 1:
        out += 2.0 * tokens * m.hidden
    return out


def hybrid_block_activation_bytes(scn: Scenario, layer: int) -> float:
    """Activation bytes one block of a hybrid model (``model.layer_pattern``) keeps for one
    micro-batch on one GPU without recompute: the block's input and its norm's output (4·sbh,
    split over tp under SP) and its residual dropout mask (sbh bytes, with ``training.dropout``),
    then per block the QKV and core outputs of attention (the ``sharded`` attention terms of
    :func:`layer_activation_bytes`, and the score matrix when unfused: :func:`unfused_scores_bytes`),
    a dense MLP's tensors, an MoE
    block's (:func:`moe_layer_activation_bytes`) or a Mamba2 mixer's
    (:func:`simulator.schedule.mamba.activation_bytes`); the layer of a multi-token-prediction depth
    (beyond the pattern) holds an attention and an MoE block."""
    from simulator.schedule.mamba import MambaShape, activation_bytes

    m, B = scn.model, scn.training.act_bytes
    shape = RankShapes.of(scn)
    sbh, t = shape.tokens * m.hidden * B / 2, shape.tp  # layer_activation_bytes' s·b·h (in 2-byte units)
    # the block's input and its norm's output, and with dropout p > 0 the mask of the block's one
    # bias-dropout-add (1 byte per element: every block of hybrid_stack_spec ends in one,
    # mamba_bda / self_attn_bda / mlp_bda, megatron/core/models/hybrid/hybrid_layer_specs.py)
    out = (4 * sbh + (sbh if scn.training.dropout else 0.0)) / (t if shape.sequence_parallel else 1)
    block = m.block(layer)
    if not block:  # an MTP depth's layer ("*E"): its attention block's input, norm and tensors, then its MoE's
        out *= 2
        out += (4 * sbh + 4 * sbh * m.kv_heads / m.heads) / t + moe_layer_activation_bytes(scn)
    elif block == "*":
        out += (4 * sbh + 4 * sbh * m.kv_heads / m.heads) / t + unfused_scores_bytes(scn)
    elif block == "-":
        out += (2 * ((3 if m.gated else 2) - 1) + 2) * shape.tokens * m.ffn_hidden / t
    elif block == "E":
        out += moe_layer_activation_bytes(scn)
    elif block == "M":
        out += activation_bytes(MambaShape.of(m, t), shape.tokens, B)
    return out


def moe_layer_activation_bytes(scn: Scenario, rebuilt: bool = False) -> float:
    """Extra activation bytes of an MoE layer over a dense one with no MLP, per micro-batch: the
    router logits (fp32, T·E), and for the R rows the slowest rank's experts process the tensors
    the grouped MLP saves for backward, R·(w + k_m·f/etp) elements of B bytes: FC1's input (w),
    FC1's output (2f gated, f otherwise: the activation's saved input) and the activation's
    output (f, FC2's input); plus the shared experts' MLP tensors; w is the routed rows' width,
    the latent size under LatentMoE, whose output projection keeps its T·w input too.

    With ``recompute_modules: moe`` the whole MoE forward runs under a checkpoint that saves only
    its input (the pre-MLP norm's output, counted with the layer): none of these bytes are kept,
    and ``rebuilt`` asks for the set the recompute rebuilds in backward instead (the layer's
    other recompute modules still drop their parts of it).

    Megatron-Core's ``TEGroupedMLP.forward`` (megatron/core/transformer/moe/experts.py) multiplies
    the router probabilities inside the activation (``weighted_bias_swiglu_impl``: it saves FC1's
    output and the probabilities), so the combine's unpermute takes no probabilities; the
    dispatch's permute and sort (``moe_utils.permute`` / ``sort_chunks_by_idxs``, fused or
    ``index_select``) and the All-to-All / DeepEP autograd functions save only index maps and
    handles. No permuted token buffer beyond FC1's input outlives the forward. Without a weighted
    kernel (``training.moe_activation: unfused``: GeLU experts, or bias_activation_fusion off) the
    activation and the multiply by the probabilities are two autograd ops, and the multiply saves
    the activation's output: f/etp elements more per row (``bias_act_func``, same file). An
    unfused GLU clamp (``training.glu_clamp_kernel``) hands the activation a clamped copy of FC1's
    output, which it saves: 2f/etp elements more per row, unless ``moe_act`` recomputes it."""
    from simulator.schedule.moe import MoESpec

    m, B = scn.model, scn.training.act_bytes
    shape = RankShapes.of(scn)
    tokens = shape.sp_tokens
    spec = MoESpec.from_scenario(scn)
    k_m = 3 if m.gated else 2
    w = m.expert_hidden
    routed = spec.rows * (w + k_m * m.moe_ffn_hidden / spec.etp) * B
    shared = (2 * (k_m - 1) + 2) * shape.tokens * m.shared_ffn_hidden / shape.tp
    # moe_activation unfused: the multiply by the probabilities after the activation saves the
    # activation's output too (experts.py bias_act_func without a weighted kernel)
    if scn.training.moe_activation == "unfused":
        routed += spec.rows * m.moe_ffn_hidden / spec.etp * B
    # an unfused GLU clamp (moe._glu_clamp): the fused activation saves the clamped concatenation,
    # a second copy of FC1's output (the clamps' saved inputs are views of FC1's output); under
    # moe_act recompute the checkpoint runs it without autograd, so nothing inside is saved
    if spec.clamp_unfused and "moe_act" not in scn.training.recompute_modules:
        routed += 2 * spec.rows * m.moe_ffn_hidden / spec.etp * B
    # recompute_modules: moe_act drops the activation's output (FC2's input), layernorm the pre-MLP
    # norm's output (the router's and the dispatch's input); both are rebuilt in backward. The
    # checkpointed bias_act_func drops what it saves inside as well (the unfused multiply's input).
    dropped = 0.0
    if "moe_act" in scn.training.recompute_modules:
        unfused = scn.training.moe_activation == "unfused"
        dropped += (2 if unfused else 1) * spec.rows * m.moe_ffn_hidden / spec.etp * B
    if "layernorm" in scn.training.recompute_modules:
        dropped += tokens * m.hidden * B
    latent = tokens * w * B if m.moe_latent_size else 0.0
    if "moe" in scn.training.recompute_modules and not rebuilt:
        return -tokens * m.hidden * B if "layernorm" in scn.training.recompute_modules else 0.0
    return tokens * m.experts * 4 + routed + shared + latent - dropped


def in_flight(scn: Scenario, stage: int) -> float:
    """Layer-activation sets (in units of the whole stage's layers) stage `stage` holds at peak."""
    p = scn.parallel
    n_micro = scn.n_micro // p.pp_flushes  # one pipeline pass holds at most its own micro-batches
    if p.pp_schedule == "interleaved" and p.vp > 1:
        # combined 1F1B (overlap_moe_expert_parallel_comm) runs one more warm-up forward; without
        # pipelining it holds one set, its paired forward filling as its backward drains
        chunks = (p.pp - stage - 1) * 2 + (p.vp - 1) * p.pp + 1 + p.overlap_moe_expert_parallel_comm
        return min(chunks, n_micro * p.vp) / p.vp
    return float(min(p.pp - stage, n_micro))


def lazy_gradients(scn: Scenario) -> bool:
    """Whether the plan's gradients are made by autograd in backward rather than in a buffer made
    at model build (``parallel.grad_allocation``; unset: lazy for FSDP2, buffer otherwise)."""
    p = scn.parallel
    if p.grad_allocation is not None:
        return p.grad_allocation == "lazy"
    return p.zero >= 3 and p.zero3_impl == "fsdp2"


def backpropagated_fraction(scn: Scenario, stage: int) -> float:
    """Fraction of stage `stage`'s gradients that exist at its activation peak when gradients are
    allocated lazily: a parameter's ``.grad`` is made by its layer's first backward of the step
    (``AccumulateGrad``; later micro-batches accumulate into it) and freed by the optimizer's
    ``zero_grad(set_to_none=True)``, PyTorch's default since 2.0.

    The peak holds :func:`in_flight` activation sets; the schedule repeats that moment after every
    forward of its steady state, so the worst one is the last, after ``F − C`` backwards (``F``
    forwards of the pass, ``C`` chunk-micro-batches in flight). Without a pipeline the peak is the
    loss of the last micro-batch, after ``n_micro − 1`` backwards; under 1F1B stage i reaches it
    after ``n_micro − (pp − i)``; any backward makes the whole stage's gradients. Megatron's
    interleaved schedule runs the backwards of a group of pp micro-batches on one chunk, the last
    chunk first (``get_model_chunk_id(..., forward=False)`` in
    megatron/core/pipeline_parallel/schedules.py), so ``j`` backwards have made the gradients of
    ``ceil(j / pp)`` chunks (weighted by their parameters). An earlier pass of the step
    (``pp_flushes`` > 1) has made them all. FSDP2 under ``torch.distributed.pipelining`` makes the
    sharded gradient only in a pass's last backward (``set_requires_gradient_sync(False)`` on the
    others, ``backward_maybe_with_nosync`` in torch/distributed/pipelining/stage.py), and under
    ``fsdp_grad_sync: optim_step`` or ``no_sync`` only in the step's last: none at the activation
    peak of a single pass (the unsharded accumulators are in :func:`zero3_working_bytes`). Without
    a pipeline those two keep the whole sharded gradient here: their unsharded accumulators are
    not modelled, so nothing is taken off."""
    p = scn.parallel
    if not lazy_gradients(scn):
        return 1.0
    n = scn.n_micro // p.pp_flushes
    if torch_pipelining(scn) and scn.n_micro > 1:
        return 1.0 if p.pp_flushes > 1 and p.fsdp_grad_sync == "microbatch" else 0.0
    if p.zero >= 3 and p.fsdp_grad_sync != "microbatch" and scn.n_micro > 1:
        return 1.0  # the unsharded accumulators are not modelled
    if p.pp_flushes > 1:
        return 1.0
    if p.pp == 1:
        return 1.0 if n > 1 else 0.0
    if not (p.pp_schedule == "interleaved" and p.vp > 1):
        return 1.0 if n > p.pp - stage else 0.0
    chunks_in_flight = round(in_flight(scn, stage) * p.vp)
    done = n * p.vp - chunks_in_flight
    with_grad = min(p.vp, -(-done // p.pp))
    per_chunk = [sum(u.numel for u in units) for units in stage_units(scn, stage)]
    return sum(per_chunk[p.vp - with_grad:]) / sum(per_chunk) if with_grad else 0.0


def loss_buffer_bytes(scn: Scenario) -> float:
    """Logits and cross-entropy buffers of one micro-batch on the last stage at the loss's peak:
    tokens × V/t × :data:`CROSS_ENTROPY_BYTES` of ``training.cross_entropy`` (``torch`` with
    TP > 1: :data:`TORCH_LOSS_PARALLEL_BYTES`)."""
    shape = RankShapes.of(scn)
    impl = scn.training.cross_entropy
    per_logit = TORCH_LOSS_PARALLEL_BYTES if impl == "torch" and shape.tp > 1 else CROSS_ENTROPY_BYTES[impl]
    return shape.tokens * scn.model.vocab / shape.tp * per_logit


def zero3_working_bytes(scn: Scenario, stage: int) -> tuple[float, float]:
    """ZeRO-3's transient bytes: (at the loss, in a layer's backward). FSDP2: the root group
    (embedding, LM head) stays gathered through the forward; in backward two layers' gathered
    bf16 parameters and one layer's unsharded gradient (+ its fp32 copy with an fp32 reduction);
    under a pipeline schedule the whole stage gathered and its gradients accumulated unsharded.
    DeepSpeed: the gathered window (a layer plus the prefetch bucket, at most max_live) and the
    IPG reduce bucket in both moments."""
    p = scn.parallel
    if p.zero < 3:
        return 0.0, 0.0
    layers = stage_layers(scn, stage)
    layer = max((d + e for (d, e), _ in layer_kinds(scn, layers)), default=0)
    w = WEIGHT_BYTES
    if p.zero3_impl == "fsdp2":
        if p.pp > 1 and scn.n_micro > 1:  # the stage stays gathered; its gradients accumulate unsharded
            resident = stage_params(scn, stage).total * (w + BYTES_PER_ELEMENT[p.grad_reduce_dtype])
            return resident, resident
        root = embedding_unit(scn).numel + head_unit(scn).numel
        g = BYTES_PER_ELEMENT[scn.training.act_dtype] + (4 if p.grad_reduce_dtype == "fp32" else 0)
        return w * (root + layer), w * (root + 2 * layer) + g * layer
    window = min(p.zero3_max_live_parameters, layer + p.zero3_prefetch_bucket_elements) * w
    bucket = p.zero3_reduce_bucket_elements * BYTES_PER_ELEMENT[p.grad_reduce_dtype]
    return window + bucket, window + bucket


def torch_pipelining(scn: Scenario) -> bool:
    """Whether the pipeline is ``torch.distributed.pipelining``'s (torchtitan: FSDP2 with pp > 1)
    rather than Megatron's ``p2p_communication``."""
    p = scn.parallel
    return p.pp > 1 and p.zero >= 3 and p.zero3_impl == "fsdp2"


def pipeline_buffer_bytes(scn: Scenario, stage: int | None = None) -> float:
    """Send/receive buffers between pipeline stages (pp > 1), of one stage message each
    (``sp_tokens × hidden`` activations). Megatron's ``p2p_communication`` allocates a received
    activation and a gradient being sent as it goes: 2 messages. ``torch.distributed.pipelining``
    allocates its receive buffers once per micro-batch and keeps them across steps
    (``_PipelineStageBase._prepare_forward_infra``: a ``_RecvInfo`` buffer per chunk for every
    stage but the first; ``_prepare_backward_infra``: a gradient buffer per chunk for every stage
    but the last, torch/distributed/pipelining/stage.py): ``n_micro`` messages each way, for each
    of the rank's ``vp`` virtual stages under an interleaved schedule (the model's first stage
    receives no activation, its last no gradient)."""
    p = scn.parallel
    if p.pp == 1:
        return 0.0
    shape = RankShapes.of(scn)
    message = shape.sp_tokens * scn.model.hidden * scn.training.act_bytes
    if not torch_pipelining(scn) or stage is None:
        return 2 * message
    n_micro = scn.n_micro // p.pp_flushes
    vp = p.vp if p.pp_schedule == "interleaved" else 1
    return n_micro * message * (2 * vp - (stage == 0) - (stage == p.pp - 1))


def pipeline_output_bytes(scn: Scenario, stage: int) -> float:
    """Outputs ``torch.distributed.pipelining`` keeps on the last stage: ``forward_one_chunk``
    appends every micro-batch's output to ``output_chunks`` (merged and returned by
    ``step``; cleared when the next step starts), so the last stage holds the logits of all
    ``n_micro`` micro-batches to the end of the step. torchtitan's model returns them in fp32
    (``self.output(h).float()``, torchtitan/models/llama/model.py of 2024) for PyTorch's
    cross-entropy (``training.cross_entropy: torch``): tokens × V/t × 4 B each. Counted for that
    loss only: a fused loss (vocab-parallel, fused-linear: NeMo AutoModel) is not known to leave
    the logits as the stage's output, and torch releases whose ``step`` takes
    ``return_outputs=False`` keep nothing."""
    p = scn.parallel
    if not torch_pipelining(scn) or stage != p.pp - 1 or scn.training.cross_entropy != "torch":
        return 0.0
    shape = RankShapes.of(scn)
    return (scn.n_micro // p.pp_flushes) * shape.tokens * scn.model.vocab / shape.tp * 4


def stranded_bytes(scn: Scenario, loss_peak: bool) -> float:
    """Reserved bytes no request at the loss's peak can use: PyTorch's cross-entropy on logits
    the LM head made in bf16 (``training.cross_entropy: torch``; torchtitan's
    ``self.output(h).float()``) frees the bf16 logits (2 B per logit) as soon as they are cast,
    before the loss's fp32 tensors (4 B per logit each) are requested. The caching allocator
    serves a request from one cached block at least as large (best fit; a block is split, never
    merged with another segment, ``CUDACachingAllocator.cpp``), so each fp32 request takes a
    segment of its own and the freed bf16 block stays reserved, unused, through the peak:
    reserved − allocated ≥ tokens × V/t × 2 B on the last stage when the loss sets its peak."""
    if not loss_peak or scn.training.cross_entropy != "torch":
        return 0.0
    shape = RankShapes.of(scn)
    return shape.tokens * scn.model.vocab / shape.tp * scn.training.act_bytes


def reduce_stream_keeps_freed_grads(scn: Scenario) -> bool:
    """Whether the sharded gradients that do not exist at the peak (lazily allocated, freed by
    the previous step's ``zero_grad``) stay reserved, cached for the reduce-scatter stream:
    FSDP2 with lazy gradients. ``foreach_reduce`` (torch/distributed/fsdp/_fully_shard/
    _fsdp_collectives.py) allocates each group's reduce-scatter output under
    ``torch.cuda.stream(reduce_scatter_stream)`` and views the sharded gradients out of it, so the
    block belongs to that stream; PyTorch's caching allocator reuses a freed block only for a
    request of the same stream (``get_free_block`` compares the block's stream,
    CUDACachingAllocator.cpp), and the forward's activations and the loss, on the default stream,
    cannot use it: reserved keeps the whole sharded gradient through the step's peak. Other stacks
    keep their gradients allocated (a grad buffer) or free them on the default stream."""
    p = scn.parallel
    return p.zero >= 3 and p.zero3_impl == "fsdp2" and lazy_gradients(scn)


def _workspace_generation(scn: Scenario) -> str:
    """Which default workspace sizes apply (:data:`CUBLAS_WORKSPACE`, :data:`TE_WORKSPACE`):
    ``new`` on Hopper and later."""
    return "new" if scn.profile.gpu.arch in ("hopper", "blackwell") else "old"


def workspace_bytes(scn: Scenario) -> float:
    """PyTorch's cuBLAS workspaces, one per GEMM-running thread (:data:`CUBLAS_THREADS`), and
    TransformerEngine's with fused (TE) kernels; TE's grouped GEMM (``training.moe_grouped_gemm``)
    keeps one more per compute stream (:data:`TE_GROUPED_GEMM_STREAMS`)."""
    gen = _workspace_generation(scn)
    te = scn.training.fused_kernels
    grouped = TE_GROUPED_GEMM_STREAMS if te and scn.training.moe_grouped_gemm and scn.model.moe else 0
    return CUBLAS_THREADS * CUBLAS_WORKSPACE[gen] + (TE_WORKSPACE[gen] if te else 0) + grouped * TE_WORKSPACE[gen]


def tp_comm_overlap(scn: Scenario) -> bool:
    """Whether the run initialises TE's Userbuffers (any ``parallel.tp_overlap`` but ``none``)."""
    return scn.parallel.tp_overlap != "none"


def userbuffer_bytes(scn: Scenario) -> float:
    """TE's Userbuffers with TP comm overlap: one buffer of the gathered activation shape per
    overlapped GEMM (:data:`UB_GEMMS`), 1 B per element for the FP8 AllGather buffers of an FP8
    run, else 2 B (see the module docstring)."""
    if not tp_comm_overlap(scn):
        return 0.0
    elems = RankShapes.of(scn).tokens * scn.model.hidden
    fp8 = scn.training.dtype == "fp8"
    return sum(elems * (1 if fp8 and name in UB_FP8_BUFFERS else 2) for name in UB_GEMMS)


def ub_workspace_bytes(scn: Scenario) -> float:
    """The cuBLAS workspaces ``initialize_ub`` adds to TE's one: ``_NUM_MAX_UB_STREAMS`` − 1."""
    if not tp_comm_overlap(scn):
        return 0.0
    gen = _workspace_generation(scn)
    return (UB_NUM_MAX_STREAMS - 1) * TE_WORKSPACE[gen]


def communicators(scn: Scenario) -> int:
    """NCCL communicators one rank is part of: one per parallel axis of degree > 1 (TP, CP,
    Ulysses, the DP gradient group, the pipeline's send/recv pairs, EP)."""
    p, shape = scn.parallel, RankShapes.of(scn)
    return sum(1 for d in (p.tp, p.cp, p.ulysses, shape.grad_shard, p.pp, p.ep) if d > 1)


def nccl_buffer_bytes(scn: Scenario) -> float:
    """NCCL's connection buffers: per communicator, channels × (Simple + LL + LL128)."""
    per_channel = NCCL_SIMPLE_BUFFSIZE + NCCL_LL_BUFFSIZE + NCCL_LL128_BUFFSIZE
    return communicators(scn) * NCCL_CHANNELS * per_channel


def dummy_wgrad_shapes(scn: Scenario, stage: int) -> set[tuple[int, int]]:
    """The distinct local weight shapes whose weight gradient TransformerEngine hands autograd as a
    cached dummy on pipeline stage `stage` (:func:`dummy_wgrad_bytes`): the TE linears of its layers
    (QKV or MLA's projections, the attention output, FC1/FC2 or the experts' and shared experts'
    grouped weights) and, on the stage holding the LM head, Megatron's output layer. Mamba mixers
    are not counted."""
    m, shape = scn.model, RankShapes.of(scn)
    t, h, g = shape.tp, m.hidden, 2 if m.gated else 1
    shapes: set[tuple[int, int]] = set()
    layers = stage_layers(scn, stage)
    if any(m.block(i) in ("", "*") for i in layers):
        a, d = shape.heads, m.head_dim  # query heads per TP rank
        if not m.mla:
            shapes |= {((a + 2 * shape.kv_heads) * d, h), (h, a * d)}
        else:
            q_r, kv_r, d_r, d_v = m.q_lora_rank, m.kv_lora_rank, m.qk_rope_head_dim, m.v_head_dim
            shapes |= {(a * (d + d_r), q_r or h), (kv_r + d_r, h), (a * (d + d_v), kv_r), (h, a * d_v)}
            if q_r:
                shapes.add((q_r, h))
    for i in layers:
        if not m.has_mlp(i):
            continue
        if not m.is_moe_layer(i):
            shapes |= {(g * shape.ffn, h), (h, shape.ffn)}
            continue
        e, et = m.expert_hidden, shape.etp
        shapes |= {(g * m.moe_ffn_hidden // et, e), (e, m.moe_ffn_hidden // et)}
        if m.shared_ffn_hidden:
            shapes |= {(g * m.shared_ffn_hidden // t, h), (h, m.shared_ffn_hidden // t)}
    if stage == scn.parallel.pp - 1:
        shapes.add((shape.vocab, h))
    return shapes


def dummy_wgrad_bytes(scn: Scenario, stage: int) -> float:
    """TransformerEngine's cached dummy weight gradients (``te_dummy_wgrad``). When a weight's
    gradient is accumulated straight into Megatron's fp32 ``main_grad`` (gradient accumulation
    fusion, with Megatron's DDP or distributed optimizer setting ``grad_added_to_main_grad``), TE's
    linears return autograd a placeholder of the weight's shape instead of the real gradient. Since
    TE 2.3 (#1651, ``module/base.py`` ``get_dummy_wgrad``) that placeholder is one tensor per
    distinct (shape, dtype), cached for the whole run, and Megatron-Core 0.14's own linears (the
    output layer, ``tensor_parallel/layers.py``) take it from the same cache. So a stage keeps, from
    its first backward on, one bf16 tensor per distinct local weight shape
    (:func:`dummy_wgrad_shapes`): for Llama 3 405B at TP 1 about 6 GiB beside a stage's layers."""
    p, tr = scn.parallel, scn.training
    if not (tr.te_dummy_wgrad and tr.fused_kernels and p.gradient_accumulation_fusion and p.zero < 3):
        return 0.0
    return WEIGHT_BYTES * sum(r * c for r, c in dummy_wgrad_shapes(scn, stage))


def kept_activation_bytes(scn: Scenario, layers: list[int], recompute: str) -> float:
    """Activation bytes one micro-batch keeps for `layers` (global indices) when they are not
    checkpointed whole: ``recompute`` none, selective or selective_op (:func:`layer_activation_bytes`;
    a hybrid model's blocks and the MoE layers by their own counts)."""
    m = scn.model
    if m.hybrid:  # selective recompute changes nothing here: the attention cores keep no score matrix
        return sum(hybrid_block_activation_bytes(scn, i) for i in layers)
    out = len(layers) * layer_activation_bytes(scn, recompute)
    if m.moe:
        shape = RankShapes.of(scn)
        dense_mlp = dense_mlp_bytes(scn, shape.tokens * shape.ffn)
        n_moe = sum(1 for i in layers if m.is_moe_layer(i))
        out += n_moe * (moe_layer_activation_bytes(scn) - dense_mlp)
    return out


def estimate_memory(scn: Scenario, stage: int) -> MemoryEstimate:
    p, m, tr = scn.parallel, scn.model, scn.training
    shape = RankShapes.of(scn)
    n = stage_params(scn, stage)
    grad_bytes = BYTES_PER_ELEMENT[p.grad_reduce_dtype]
    dtypes = (tr.master_bytes, tr.state_bytes)
    w, g, o = model_state_bytes_per_param(p.zero, shape.grad_shard, grad_bytes, p.zero3_impl, *dtypes)
    we, ge, oe = model_state_bytes_per_param(p.zero, shape.expert_dp, grad_bytes, p.zero3_impl, *dtypes)
    layers = stage_layers(scn, stage)
    if tr.recompute == "full":  # the checkpoints' inputs, and what the layers full recompute leaves out keep
        kept = checkpointing.kept_layers(scn)
        layer_sum = (checkpointing.stage_checkpoints(scn, stage) * layer_activation_bytes(scn)
                     + kept_activation_bytes(scn, [i for i in layers if i in kept], "none"))
    else:
        layer_sum = kept_activation_bytes(scn, layers, tr.recompute)
    acts = layer_sum * in_flight(scn, stage)
    sb, t = shape.tokens, shape.tp
    if stage == 0 and tr.dropout:
        acts += sb * m.hidden / t * min(p.pp, scn.n_micro)  # embedding dropout masks
    last = stage == p.pp - 1
    if last:
        acts += 2 * sb * m.hidden  # final-norm input
    # the two candidate peaks: the last micro-batch's loss, and a layer's backward
    z_loss, z_bwd = zero3_working_bytes(scn, stage)
    loss = loss_buffer_bytes(scn) if last else 0.0
    n_rebuilt = checkpointing.rebuilt_layers(scn, stage)
    rebuilt = n_rebuilt * layer_activation_bytes(scn, "none")
    if m.hybrid and rebuilt:
        rebuilt = n_rebuilt * max(hybrid_block_activation_bytes(scn, i) for i in layers)
    if "moe" in tr.recompute_modules and any(m.is_moe_layer(i) for i in layers):
        # one MoE layer's forward rebuilt in its backward (recompute_modules: moe)
        rebuilt = max(rebuilt, moe_layer_activation_bytes(scn, rebuilt=True))
    if loss + z_loss >= rebuilt + z_bwd:
        loss_b, rec_b, zero_b = loss, 0.0, z_loss
    else:
        loss_b, rec_b, zero_b = 0.0, rebuilt, z_bwd
    gpu = scn.profile.gpu
    grads = n.dense * g + n.expert * ge
    freed_grads = grads * (1 - backpropagated_fraction(scn, stage))  # not allocated at the peak
    pipeline_buffers = pipeline_buffer_bytes(scn, stage)
    est = MemoryEstimate(params=n.dense * w + n.expert * we, grads=grads * backpropagated_fraction(scn, stage),
                         optimizer=n.dense * o + n.expert * oe,
                         activations=acts, hbm_bytes=gpu.hbm_bytes, stage=stage,
                         loss_buffers=loss_b, recompute=rec_b,
                         comm_buffers=zero_b + pipeline_buffers,
                         pipeline_outputs=pipeline_output_bytes(scn, stage), workspaces=workspace_bytes(scn),
                         dummy_wgrads=dummy_wgrad_bytes(scn, stage),
                         ub_workspaces=ub_workspace_bytes(scn), userbuffers=userbuffer_bytes(scn),
                         stranded=stranded_bytes(scn, loss_b > 0)
                         + (freed_grads if reduce_stream_keeps_freed_grads(scn) else 0.0),
                         fragmentation_factor=tr.allocator_fragmentation,
                         cuda_context=gpu.cuda_context_bytes, nccl_buffers=nccl_buffer_bytes(scn))
    if est.grads < grads:  # lazy gradients: the end of the backward holds them all, the activations freed
        end = replace(est, grads=grads, activations=0.0, loss_buffers=0.0, recompute=0.0, stranded=0.0,
                      comm_buffers=z_bwd + pipeline_buffers)
        if end.allocated > est.allocated:
            return end
    return est


def memory_per_gpu(scn: Scenario) -> MemoryEstimate:
    """The estimate of the stage that needs the most memory (what decides whether a plan fits)."""
    return max((estimate_memory(scn, i) for i in range(scn.parallel.pp)), key=lambda e: e.total)


def block_recompute_to_fit(scn: Scenario) -> int | None:
    """For a plan that does not fit: the fewest layers of each model chunk that Megatron's block
    recompute (``recompute: full``, ``recompute_method: block``; Megatron-Bridge's
    ``--recompute_num_layers``) must re-run for every stage to fit, the others keeping their
    activations, as NVIDIA's performance recipes size it. None where the plan fits, where its
    recompute already re-runs every layer (``full`` with ``uniform``), or where re-running every
    layer does not fit either. The kept bytes only fall as N grows, so N is found by bisection."""
    t = scn.training
    if (t.recompute == "full" and t.recompute_method == "uniform") or memory_per_gpu(scn).fits:
        return None
    base = {**t.model_dump(), "recompute": "full", "recompute_method": "block", "recompute_modules": [],
            "recompute_norm_blocks": False}

    def fits(n: int) -> bool:
        try:
            training = Training.model_validate({**base, "recompute_num_layers": n})
        except ValueError:
            return False
        return memory_per_gpu(replace(scn, training=training)).fits

    lo, hi = 1, max(len(chunk) for chunk in virtual_layers(scn))
    if not fits(hi):
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if fits(mid) else (mid + 1, hi)
    return lo

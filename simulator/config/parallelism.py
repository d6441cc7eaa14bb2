"""The parallel plan of a scenario (the ``parallel:`` key).

Keys and defaults follow DESIGN.md; the extra knobs (ZeRO-3 implementation and its bucket
sizes, DDP bucket size, per-stage layer counts) are optional and default to what Megatron-LM
and DeepSpeed do (MECHANICS.md §1, §5.6). Rules that involve the model or the GPU count live in
:mod:`simulator.config.scenario`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, model_validator

from simulator.config.strict import FROM_LIST, STRICT_CONFIG

Axis = Literal["tp", "cp", "ulysses", "dp", "pp"]
AXES: tuple[Axis, ...] = ("tp", "cp", "ulysses", "dp", "pp")
USP_CP_COMM = ("ring", "p2p")  # the CP flavours that compose with ulysses > 1 (a ring across Ulysses groups)
DEFAULT_ORDER: tuple[Axis, ...] = AXES  # innermost first, as Megatron's tp-cp-ep-dp-pp
# The GEMMs TransformerEngine's Userbuffers names in its overlap configuration (``initialize_ub``).
UbGemm = Literal["qkv_fprop", "qkv_dgrad", "qkv_wgrad", "proj_fprop", "proj_dgrad",
                 "fc1_fprop", "fc1_dgrad", "fc1_wgrad", "fc2_fprop", "fc2_dgrad"]
UbMethod = Literal["bulk", "pipeline", "ring_exchange"]
# The methods TransformerEngine's ``initialize_ub`` accepts per GEMM in a Userbuffers configuration
# (transformer_engine/pytorch/module/base.py, v2.2): the AllGather-GEMMs ring_exchange only ("`pipeline`
# overlap method is not supported for AllGather"), the forward GEMM-ReduceScatters pipeline or
# ring_exchange, the column layers' dgrad bulk (the re-gather beside the dgrad GEMM) or, as the
# ReduceScatter of dX overlapped with the dgrad GEMM itself (``dgrad_reduce_scatter_overlap``, the
# layers' ``ub_overlap_rs_dgrad``: Megatron-Core's ``tp_comm_overlap_rs_dgrad``), pipeline or
# ring_exchange; their wgrad bulk only, and not at all once the dgrad reduces (TE asserts the wgrad
# is not configured then: its ReduceScatter has moved to the dgrad).
UB_METHODS: dict[str, tuple[str, ...]] = {
    **{g: ("ring_exchange",) for g in ("qkv_fprop", "fc1_fprop", "proj_dgrad", "fc2_dgrad")},
    **{g: ("pipeline", "ring_exchange") for g in ("proj_fprop", "fc2_fprop")},
    **{g: ("bulk", "pipeline", "ring_exchange") for g in ("qkv_dgrad", "fc1_dgrad")},
    **{g: ("bulk",) for g in ("qkv_wgrad", "fc1_wgrad")},
}


def sequence_parallel_in_effect(tp: int, sequence_parallel: bool) -> bool:
    """Whether Megatron sequence parallelism (arXiv:2205.05198) is in effect: asked for and tp > 1.
    Megatron-LM's ``validate_args`` (megatron/training/arguments.py) turns ``sequence_parallel``
    off when the TP size is 1, so the flag alone changes nothing there."""
    return tp > 1 and sequence_parallel


def model_parallel_size(tp: int, cp: int, ulysses: int, pp: int) -> int:
    """GPUs one model replica spans, tp x cp x ulysses x pp: the GPU count divided by dp
    (Megatron's ``initialize_model_parallel`` derives the data-parallel size the same way, with
    DeepSpeed-Ulysses' sequence-parallel group as one more model axis)."""
    return tp * cp * ulysses * pp


class Parallel(BaseModel):
    model_config = STRICT_CONFIG

    tp: int = Field(default=1, gt=0)
    sequence_parallel: bool = False
    # te_default: TransformerEngine's default per-GEMM methods, what Megatron's --tp-comm-overlap
    # runs (MECHANICS.md §2.3; simulator/schedule/tensor_parallel.py).
    tp_overlap: Literal["none", "bulk", "pipelined", "ring_exchange", "te_default"] = "none"
    pp: int = Field(default=1, gt=0)
    pp_schedule: Literal["1f1b", "interleaved"] = "1f1b"
    vp: int = Field(default=1, gt=0)
    cp: int = Field(default=1, gt=0)
    cp_comm: Literal["ring", "p2p", "all_gather", "a2a", "a2a+p2p"] = "p2p"
    ulysses: int = Field(default=1, gt=0)
    zero: Literal[0, 1, 2, 3] = 0
    order: Annotated[tuple[Axis, ...], FROM_LIST] = DEFAULT_ORDER
    dp: int | None = Field(default=None, gt=0)  # derived; when given it is checked

    # --- optional knobs beyond DESIGN.md ---------------------------------------------------
    # deepspeed: DeepSpeed's stage 3 with the coalesced, prefetching parameter coordinator;
    # deepspeed-2021: stage 3 as released in 2021 (per-parameter gathers through a rank list, a
    # device synchronisation at every fetch; simulator/schedule/zero.py); fsdp2: PyTorch FSDP2.
    zero3_impl: Literal["deepspeed", "deepspeed-2021", "fsdp2"] = "deepspeed"
    # transformer layers per pipeline stage, or (pp x vp entries) per virtual stage in the order
    # v = chunk·pp + stage, for uneven chunks (torch pipelining's layers_per_stage, 61 layers on 32)
    pp_layers: Annotated[tuple[int, ...] | None, FROM_LIST] = None
    # DDP / ZeRO-1/2: reduce each gradient bucket once its backward is done (PyTorch DDP,
    # Megatron --overlap-grad-reduce, DeepSpeed overlap_comm) or, when false, every bucket after
    # the step's backward (Megatron's default; ZeRO-2: after each micro-batch's backward).
    overlap_grad_reduce: bool = True
    # Without sequence parallelism: launch the AllReduce of a column-parallel layer's input
    # gradient right after its dgrad GEMM so that it runs under the wgrad GEMM (Megatron-LM's
    # async_tensor_model_parallel_allreduce, since Sep 2021). false: the AllReduce is the backward
    # of copy_to_tensor_model_parallel_region and runs after the layer's whole backward, dgrad and
    # wgrad, blocking (Megatron-LM 2020-2021, Megatron-DeepSpeed of BLOOM).
    async_tensor_model_parallel_allreduce: bool = True
    # TransformerEngine Userbuffers' ``set_sm_margin`` for its pipeline and bulk overlaps: true, the
    # GEMM beside a communication kernel is launched on SMs − num_sm (TE >= 2.0's initialize_ub
    # default, ``"set_sm_margin": not method == "ring_exchange"``); false, on every SM, sharing them
    # with the communication kernel as any kernel beside NCCL does (TE 1.x: ``add_ub(...,
    # set_sm_margin=0)``, what Megatron-Core r0.8.0's --tp-comm-overlap ran without a yaml).
    tp_overlap_sm_margin: bool = True
    # A tuned Userbuffers configuration (NeMo's ``TransformerLayerTPOverlapCfg``, e.g.
    # ``userbuffers_bf16_h100_h16384_tp8_cp2_mbs1_seqlen8192``): per GEMM (TE's ub names, e.g.
    # ``fc1_dgrad``), the SMs its bulk or pipeline communication kernel withholds from it: the
    # config's ``num_sm`` where it sets ``set_sm_margin``, 0 where it does not (the GEMM then runs
    # on every SM beside the communication kernel). GEMMs not named keep TE's default (16 SMs with
    # ``tp_overlap_sm_margin``, else 0); ring-exchange GEMMs hold their one copy-engine SM.
    tp_overlap_gemm_sms: dict[UbGemm, Annotated[int, Field(ge=0)]] = Field(default_factory=dict)
    # The same configuration's ``method`` per GEMM, where it is not TE's default (tp_overlap:
    # te_default's table, schedule/tensor_parallel.py): e.g. ``proj_fprop: ring_exchange`` (the
    # tuned H100 configs' RingExchangeOverlapCfg) or ``fc1_dgrad: pipeline``, the ReduceScatter of
    # dX pipelined with the dgrad GEMM instead of the bulk re-gather and ReduceScatter beside the
    # GEMMs (TE's ub_overlap_rs_dgrad, Megatron-Core's tp_comm_overlap_rs_dgrad; NeMo's Llama 3
    # LoRA configs). Allowed methods per GEMM: ``UB_METHODS``.
    tp_overlap_methods: dict[UbGemm, UbMethod] = Field(default_factory=dict)
    # zero 1: megatron (Megatron's distributed optimizer, DeepSpeed ZeRO-1 in fp16: the gradients
    # ReduceScattered, the updated parameters AllGathered) or deepspeed-bf16 (DeepSpeed's
    # BF16_Optimizer, BLOOM: every micro-batch's bf16 gradients added into fp32 ones, those
    # AllReduced whole over dp after the backward, each rank stepping its shard, then the bf16
    # parameters AllGathered; simulator/schedule/data_parallel.py) or internlm (InternLM's
    # HybridZeroOptimizer of 2023: the bf16 gradients AllReduced whole over dp in buckets, each
    # rank stepping its shard, then one broadcast of its updated bf16 shard per rank that owns
    # parameters, in rank order).
    zero1_impl: Literal["megatron", "deepspeed-bf16", "internlm"] = "megatron"
    # Without sequence parallelism and with tp > 1: each TP rank sends and receives 1/tp of the
    # activation (or gradient) between pipeline stages and the receiver AllGathers it over tp
    # (Megatron-LM's scatter_gather_tensors_in_pipeline, on by default Feb 2021 - Mar 2023;
    # DeepSpeed's pipeline engine partitions the same way whenever it has model parallelism).
    # Megatron-Core's pipeline sends the whole tensor (false).
    scatter_gather_tensors_in_pipeline: bool = False
    # The pipeline engine's handling of a partitioned (scatter/gather) activation. megatron:
    # Megatron-LM's schedule keeps the stage's whole output for its backward. deepspeed: DeepSpeed's
    # PipelineEngine (Megatron-DeepSpeed: BLOOM, MT-NLG, vTrain) frees it once the 1/tp share is
    # sent (``first_output.data = torch.zeros(1)``) and, before that micro-batch's backward,
    # AllGathers the share back over tp (``PartitionedTensor.from_meta(...).full()`` in
    # ``_exec_backward_pass``, DeepSpeed 0.5-0.10; ``_exec_recv_grads`` in 0.3-0.4): one more
    # AllGather of the activation per micro-batch on every stage but the last, ahead of the
    # backward. Takes effect only where the activation is partitioned (the key above, tp > 1,
    # no sequence parallelism).
    pp_engine: Literal["megatron", "deepspeed"] = "megatron"
    # Gradient reduction dtype of DDP / ZeRO (Megatron's grad_reduce_in_fp32 makes it fp32).
    grad_reduce_dtype: Literal["bf16", "fp16", "fp32"] = "bf16"
    # true: the weight-gradient GEMM accumulates into the gradient buffer itself (Megatron-LM's
    # --gradient-accumulation-fusion, 2022-02 onwards, 83b1e42f; Megatron-Core's default). false:
    # each micro-batch's weight gradients are a new tensor that autograd's AccumulateGrad adds to
    # the accumulated ones, one kernel per parameter tensor (Megatron-LM 2020-2021: F.linear in
    # mpu/layers.py; simulator/schedule/data_parallel.py ``unfused_accumulate_bytes``). DDP and
    # ZeRO-1 only: ZeRO-2/3 and DeepSpeed's bf16 optimizer model their own accumulation.
    gradient_accumulation_fusion: bool = True
    # Megatron-Core DDP's passes over each bucket's gradient buffer before its collective
    # (``start_grad_sync`` in megatron/core/distributed/param_and_grad_buffer.py;
    # simulator/schedule/data_parallel.py). ddp_grad_check, ``check_for_nan_in_grad`` (Megatron-LM's
    # --check-for-nan-in-loss-and-grad, on by default; NeMo 2.0's and Megatron-Bridge's recipes set
    # it, Bridge's performance scripts clear it): none (off, or a stack without it) | norm (the
    # bucket's ``grad_data.norm()`` only: Megatron-Core 0.10-0.11, whose ``validate_result``
    # returns before looking at it while reruns are disabled) | nan (the norm, ``isnan`` and one
    # device-to-host read the host blocks on: 0.6-0.9's ``assert not norm.isnan()``) | nan_inf
    # (isnan and isinf, two blocking reads: 0.12 on, ``validate_result`` in disabled mode).
    ddp_grad_check: Literal["none", "norm", "nan", "nan_inf"] = "none"
    # ddp_grad_scaling, where the 1/(dp x cp) average of the gradients is taken: none (not priced:
    # stacks other than Megatron-Core DDP) | buffer (``average_in_collective`` off, Megatron-Core's
    # default: ``grad_data *= gradient_scaling_factor`` over each bucket, read and write, wherever
    # the factor is not 1) | collective (``average_in_collective``: NCCL's AVG reduction, no pass
    # over the dense buckets; the expert buckets are still scaled by edp / (dp x cp) where that is
    # not 1).
    ddp_grad_scaling: Literal["none", "buffer", "collective"] = "none"
    # DDP / distributed-optimizer bucket in elements; None = Megatron's max(4e7, 1e6·dp_size).
    ddp_bucket_elements: int | None = Field(default=None, gt=0)
    # DeepSpeed ZeRO-3 knobs in elements, defaults of deepspeed/runtime/zero/config.py.
    zero3_prefetch_bucket_elements: int = Field(default=50_000_000, gt=0)
    zero3_max_live_parameters: int = Field(default=1_000_000_000, gt=0)
    zero3_param_persistence_threshold: int = Field(default=100_000, ge=0)
    zero3_reduce_bucket_elements: int = Field(default=500_000_000, gt=0)
    zero3_max_reuse_distance: int = Field(default=1_000_000_000, ge=0)
    # DeepSpeed's contiguous_gradients for zero3_impl: deepspeed-2021. true: each gradient is
    # copied into the IPG buffer and reduce-scattered through a rank list; false: each IPG bucket
    # of gradients is flattened, AllReduced whole and copied back (stage3.py's
    # buffered_reduce_fallback). None: DeepSpeed 0.3.12-0.4.x's stage-3 default, false.
    zero3_contiguous_gradients: bool | None = None
    # cp_comm: a2a+p2p: the All-to-All degree inside each CP ring position (TransformerEngine's
    # hierarchical_context_parallel_sizes[0]); None: the largest power of two <= 8 dividing cp
    # and the query and KV heads per TP rank.
    cp_a2a: int | None = Field(default=None, gt=0)
    # cp_comm: p2p: the layout TransformerEngine's context-parallel attention runs in. sbhd (TE >=
    # 1.7): Megatron's q, k, v as they are. bshd (TE <= 1.6, NeMo 24.03-24.05): q, k, v transposed
    # from Megatron's sbhd on entry and the output back, the KV halves of the off-diagonal ring
    # steps copied to contiguous tensors, dK and dV concatenated (schedule/context_parallel.py).
    cp_qkv_format: Literal["sbhd", "bshd"] = "sbhd"
    # ZeRO-1/2: dispatch the parameter AllGather of the step's update from the next forward's
    # pre-hooks (Megatron --overlap-param-gather) instead of waiting for it after the step.
    overlap_param_gather: bool = False
    # Interleaved schedule: Megatron's --overlap-p2p-communication (on by default in Megatron-LM
    # when virtual stages are used; it has no effect without them): each pass's activation or
    # gradient exchange is issued right after the pass and waited for only before the pass that
    # consumes what it receives, so it runs under the other direction's pass
    # (simulator/schedule/pipeline.py). false: one batched, blocking exchange per step.
    overlap_p2p_comm: bool = False
    # Pipeline passes per optimizer step, each filling and draining the pipeline: Megatron runs all
    # micro-batches in one pass (1); a trainer on torch.distributed.pipelining calls schedule.step
    # once per gradient-accumulation step (NeMo AutoModel, torchtitan: GA passes).
    pp_flushes: int = Field(default=1, gt=0)
    # FSDP2: re-AllGather in backward (True, default for non-root modules) or keep unsharded.
    fsdp_reshard_after_forward: bool = True
    # FSDP2 gradient sync: every micro-batch's backward reduce-scatters and reshards (microbatch), or
    # only the last backward before the optimizer step does (optim_step: NeMo AutoModel's MoE models
    # under PP, nemo_automodel/components/moe/fsdp_mixin.py patched_backward_maybe_with_nosync, which
    # sets set_requires_gradient_sync(False) and set_reshard_after_backward(False) on every backward
    # and runs post_backward only when get_is_optim_step()), or no_sync: only the last micro-batch's
    # backward reduce-scatters, resharding as usual (FSDP2 set_requires_gradient_sync(False) on the
    # others: NeMo AutoModel's get_sync_ctx, components/distributed/utils.py, in train_ft's
    # _forward_backward_step without PP, defer_fsdp_grad_sync true by default).
    fsdp_grad_sync: Literal["microbatch", "optim_step", "no_sync"] = "microbatch"
    # When the gradients are allocated. buffer: one contiguous gradient buffer made at model build
    # (Megatron's DDP and distributed optimizer, param_and_grad_buffer.py), alive all the time.
    # lazy: autograd makes a parameter's .grad in the backward of its layer and the optimizer's
    # zero_grad(set_to_none=True) frees it (PyTorch FSDP1 and FSDP2, Meta's Llama 3 stack), so the
    # activation peak holds only the gradients of the layers back-propagated before it
    # (simulator/schedule/memory.py). Unset: lazy for zero 3 with zero3_impl fsdp2, buffer otherwise.
    grad_allocation: Literal["buffer", "lazy"] | None = Field(
        default=None, description="when gradients are allocated: buffer (Megatron's contiguous grad buffer, "
                                  "alive all step) | lazy (autograd in each layer's backward: PyTorch FSDP); "
                                  "null: lazy for zero 3 with zero3_impl fsdp2, buffer otherwise")

    # --- Mixture of Experts (Megatron-Core's expert_model_parallel_size and friends) --------
    ep: int = Field(default=1, gt=0, description="expert-parallel degree: ranks the routed experts are spread "
                                                 "over (folds into dp x cp, Megatron's rule)")
    etp: int | None = Field(default=None, gt=0, description="expert tensor-parallel degree (Megatron's "
                                                            "expert_tensor_parallel_size; None: tp)")
    moe_dispatcher: Literal["alltoall", "allgather", "deepep"] = Field(
        default="alltoall", description="token dispatcher: alltoall (Megatron MoEAlltoAllTokenDispatcher), "
                                        "allgather (MoEAllGatherTokenDispatcher), deepep (DeepEP kernels: "
                                        "RDMA to one GPU per node, NVLink forwarding inside it)")
    moe_deepep_backend: Literal["deepep", "hybridep"] = Field(
        default="deepep", description="the kernels behind moe_dispatcher deepep (Megatron's "
                                      "moe_flex_dispatcher_backend): deepep (DeepEP's normal kernels) or hybridep "
                                      "(NVIDIA's HybridEP, whose every forward dispatch first AllGathers the T x E "
                                      "routing map over the EP group)")
    moe_dispatch_dtype: Literal["auto", "fp8", "bf16"] = Field(
        default="auto", description="what the dispatch All-to-All carries in an fp8 run: fp8 (one fp32 scale per "
                                    "128 values, DeepSeek-V3's DeepEP dispatch), bf16 (the activations as they are: "
                                    "Megatron-Core's alltoall, DeepEP and HybridEP paths, which quantise after the "
                                    "exchange), auto (fp8 with deepep, else bf16); the combine is never fp8")
    moe_shared_expert_overlap: bool = Field(
        default=False, description="run the shared experts while the dispatch and combine All-to-Alls are "
                                   "in flight (Megatron's moe_shared_expert_overlap)")
    moe_deepep_sms: int = Field(
        default=20, gt=0, description="SMs DeepEP's dispatch and combine kernels hold (Megatron's "
                                      "moe_deepep_num_sms, default 20; DeepSeek-V3 dedicates 20 of the H800's 132): "
                                      "compute that runs beside them has the rest")
    overlap_moe_expert_parallel_comm: bool = Field(
        default=False, description="combined 1F1B: pair one micro-batch's forward with another's backward layer "
                                   "by layer so each one's dispatch and combine All-to-Alls run under the other's "
                                   "compute (Megatron's overlap_moe_expert_parallel_comm; needs pp=1 or vp > 1)")

    @model_validator(mode="before")
    @classmethod
    def _vp_means_interleaved(cls, data: Any) -> Any:
        """``vp`` > 1 with no ``pp_schedule`` is Megatron's interleaved 1F1B, the only schedule
        with virtual stages (``--num-layers-per-virtual-pipeline-stage`` selects it)."""
        vp = data.get("vp") if isinstance(data, dict) else None
        if isinstance(vp, int) and not isinstance(vp, bool) and vp > 1 and "pp_schedule" not in data:
            return {**data, "pp_schedule": "interleaved"}
        return data

    @model_validator(mode="after")
    def _own_rules(self) -> "Parallel":
        if len(set(self.order)) != len(self.order):
            raise ValueError(f"order: {list(self.order)} names an axis twice")
        missing = [a for a in AXES if a not in self.order and self.degree(a) > 1]
        if missing:
            a = missing[0]
            raise ValueError(f"order: {list(self.order)} omits axis {a} with {a}={self.degree(a)}")
        if self.vp > 1 and self.pp == 1:
            raise ValueError(f"vp: vp={self.vp} needs pp > 1 (virtual stages split pipeline stages; got pp=1)")
        if self.vp > 1 and self.pp_schedule != "interleaved":
            raise ValueError(f"vp: vp={self.vp} needs pp_schedule: interleaved (got {self.pp_schedule})")
        if self.pp_schedule == "interleaved" and self.pp == 1:
            raise ValueError("pp_schedule: interleaved needs pp > 1 (got pp=1)")
        if self.tp_overlap != "none" and not self.sp_enabled:
            raise ValueError(f"tp_overlap: {self.tp_overlap} needs tp > 1 and sequence_parallel: true "
                             f"(got tp={self.tp}, sequence_parallel={str(self.sequence_parallel).lower()}); "
                             "TransformerEngine's userbuffers overlap works on SP collectives")
        self._check_tp_overlap_methods()
        if self.zero1_impl != "megatron" and self.zero != 1:
            raise ValueError(f"zero1_impl: {self.zero1_impl} is a ZeRO-1 optimizer; it needs zero: 1 (got {self.zero})")
        if self.ulysses > 1 and self.cp > 1 and self.cp_comm not in USP_CP_COMM:
            # USP (arXiv:2405.07719): Ulysses head scatter inside, a KV ring across. The other CP
            # flavours are themselves head-parallel (a2a, a2a+p2p) or gather the whole KV (all_gather).
            raise ValueError(f"cp_comm: ulysses={self.ulysses} with cp={self.cp} is USP (Ulysses inside, a ring "
                             f"across), which needs cp_comm ring or p2p, got {self.cp_comm}; for two levels of "
                             "head parallelism use cp_comm: a2a+p2p without ulysses")
        return self

    def _check_tp_overlap_methods(self) -> None:
        """``tp_overlap_methods`` overrides TE's default table, per GEMM, with methods TE accepts there
        (``UB_METHODS``)."""
        if not self.tp_overlap_methods:
            return
        if self.tp_overlap != "te_default":
            raise ValueError(f"tp_overlap_methods: overrides the per-GEMM table of tp_overlap: te_default "
                             f"(got tp_overlap: {self.tp_overlap})")
        methods: dict[str, str] = {str(g): str(m) for g, m in self.tp_overlap_methods.items()}
        for gemm, method in methods.items():
            if method not in UB_METHODS[gemm]:
                raise ValueError(f"tp_overlap_methods: {gemm}: {method} is not a method TransformerEngine runs "
                                 f"there; expected {' or '.join(UB_METHODS[gemm])}")
            if gemm.endswith("_wgrad") and methods.get(gemm.replace("wgrad", "dgrad"), "bulk") != "bulk":
                raise ValueError(f"tp_overlap_methods: {gemm} is not configured once "
                                 f"{gemm.replace('wgrad', 'dgrad')} reduces its own output (TE's ub_overlap_rs_dgrad "
                                 "moves the ReduceScatter of dX to the dgrad GEMM)")

    @property
    def sp_enabled(self) -> bool:
        """Sequence parallelism in effect (:func:`sequence_parallel_in_effect`)."""
        return sequence_parallel_in_effect(self.tp, self.sequence_parallel)

    @property
    def model_parallel(self) -> int:
        """tp x cp x ulysses x pp (:func:`model_parallel_size`)."""
        return model_parallel_size(self.tp, self.cp, self.ulysses, self.pp)

    @property
    def expert_tp(self) -> int:
        return self.etp or self.tp

    def degree(self, axis: str) -> int:
        """Degree of one axis; dp only when given explicitly (else 1 here, see Scenario.dp)."""
        return getattr(self, axis) or 1

    @property
    def full_order(self) -> tuple[str, ...]:
        """`order` with omitted degree-1 axes put back in their default position."""
        given = list(self.order)
        out = list(given)
        for a in AXES:
            if a not in out:
                # insert after the last default-order predecessor that is present
                preds = DEFAULT_ORDER[: DEFAULT_ORDER.index(a)]
                pos = max((out.index(p) + 1 for p in preds if p in out), default=0)
                out.insert(pos, a)
        return tuple(out)

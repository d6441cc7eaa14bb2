"""Scenario mappings built in code from CSV rows: the model, the software stack, the whole scenario;
a :class:`Case` pairs one published measurement with the scenario that reproduces it."""

from __future__ import annotations

from dataclasses import dataclass, replace

from simulator.e2e_validation.rows import Row, parse_int


@dataclass(frozen=True)
class Case:
    """One published measurement and the scenario that reproduces its setup."""

    source: str
    label: str
    scenario: dict  # the mapping build_scenario validates (same keys as a scenario YAML)
    metric: str  # step_time_s | tokens_per_s_per_gpu | megatron_hfu_tflops | megatron_model_tflops | megatron_moe_model_tflops
    measured: float
    n_gpus: int
    note: str = ""
    # The NCCL release the run used where its source dates it (None: the profile's): its tuner's
    # tables choose and time the run's collectives (``nccl.version``, costs/nccl_versions.py).
    nccl_version: str | None = None


def gpt_model(row: Row, *, mlp: str = "gelu", position: str = "learned", tied: bool = True) -> dict:
    h = parse_int(row["hidden"])
    return dict(layers=parse_int(row["layers"]), hidden=h, heads=parse_int(row["heads"]),
                kv_heads=parse_int(row["kv_heads"]) or parse_int(row["heads"]),
                ffn_hidden=parse_int(row["ffn_hidden"]) or 4 * h, vocab=parse_int(row["vocab"]), mlp=mlp,
                seq_len=parse_int(row["seq_len"]), tied_embeddings=tied, position_embedding=position)


def padded_vocab(vocab: int, tp: int, divisible_by: int = 128) -> int:
    """Megatron's padded vocabulary: a multiple of ``make_vocab_size_divisible_by`` x TP."""
    m = divisible_by * tp
    return -(-vocab // m) * m


def llama_model(row: Row) -> dict:
    return gpt_model(row, mlp="swiglu", position="rope", tied=False)


@dataclass(frozen=True)
class Stack:
    """The software stack of a source, as the scenario knobs that describe it."""

    attention: str = "auto"  # training.attention
    fused_kernels: bool = True  # training.fused_kernels
    optimizer: str = "fused"  # training.optimizer
    cross_entropy: str = "vocab_parallel"  # training.cross_entropy
    train_metrics: int = 0  # training.train_metrics
    dropout: bool = True  # training.dropout
    norm_kernel: str = "auto"  # training.norm_kernel
    linear_bias: str = "none"  # training.linear_bias
    rope_kernel: str = "auto"  # training.rope_kernel
    norm_input: str = "act"  # training.norm_input
    recompute_norm_blocks: bool = False  # training.recompute_norm_blocks

    def training(self) -> dict:
        out: dict = dict(attention=self.attention, fused_kernels=self.fused_kernels, optimizer=self.optimizer,
                         cross_entropy=self.cross_entropy)
        defaults = Stack.__dataclass_fields__
        for key in ("train_metrics", "dropout", "norm_kernel", "linear_bias", "rope_kernel", "norm_input",
                    "recompute_norm_blocks"):
            if getattr(self, key) != defaults[key].default:
                out[key] = getattr(self, key)
        return out


# Megatron-Core + TransformerEngine: TE's fused attention (auto = cuDNN / FA3-class on H100,
# FA2-class on A100), fused kernels.
MODERN = Stack()
# NeMo 1.0 runs through NeMo-Framework-Launcher, releases 24.01 to 24.07: the launcher's global
# environment (launcher_scripts/conf/config.yaml, env_vars) sets ``NVTE_FUSED_ATTN: 0  # Disable
# cudnn FA until we've tested it more`` (commit 562dcb45, 2024-02-13; in the 24.03.01 and 24.07
# tags; dropped on the 24.09 branch, 04b8d098 "enable fused attention"). TransformerEngine then
# builds no FusedAttention (DotProductAttention.__init__, v1.4: use_fused_attention reads
# NVTE_FUSED_ATTN) and runs flash-attn 2.x, context parallelism included (AttnFuncWithCP's
# ``_flash_attn_forward`` path): FlashAttention-2's rate, not cuDNN's, on H100.
NEMO_LAUNCHER_2024 = replace(MODERN, attention="flash2")
# Megatron-LM 2020-2022 (and Megatron-DeepSpeed): materialised scores, but its own fused
# kernels (scaled_upper_triang_masked_softmax, bias_gelu, bias_dropout_add, apex LayerNorm).
MEGATRON_LEGACY = Stack(attention="unfused", fused_kernels=True)
# The parallel settings of Megatron-DeepSpeed's fp16 training (BLOOM, MT-NLG, vTrain; each source
# module adds tp and pp): DeepSpeed ZeRO-1 reducing the gradients after the backward (``overlap_comm``
# off by default); the column-parallel backward AllReduce after the wgrad GEMM; DeepSpeed's
# PipelineEngine (GPTModelPipe) with each TP rank's 1/tp of a boundary activation sent and gathered
# on receipt, each send and receive a blocking transfer of its own, and a sent output gathered back
# before its backward; and unfused weight-gradient accumulation: the fork's linear layers compute
# the wgrad with a plain matmul (BigScience's ``megatron/mpu/layers.py``; microsoft/Megatron-DeepSpeed
# @54884b5f, Oct 2021, and still commented out @f4157bea, Dec 2024), and DeepSpeed's engine owns the
# fp16 ``param.grad`` (no ``main_grad``), so autograd adds every micro-batch's gradient in place.
MEGATRON_DEEPSPEED_PARALLEL: dict[str, object] = dict(
    zero=1, overlap_grad_reduce=False, async_tensor_model_parallel_allreduce=False,
    scatter_gather_tensors_in_pipeline=True, pp_engine="deepspeed", gradient_accumulation_fusion=False)
# Megatron-LM of Sep 2020 (5281919, the commit of the README's tables) had none of those kernels
# yet (no megatron/fused_kernels, no jit fusions): its layers are PyTorch ops (model/transformer.py),
# bar apex's FusedLayerNorm (norm_kernel: fused); the causal mask is a masked_fill_ before
# torch.nn.Softmax; F.linear of that torch adds each bias in a kernel of its own on the 3-D
# activations (linear_bias: separate); hidden and attention dropout 0.1 (arguments.py defaults).
# Its FP16_Optimizer (megatron/fp16/fp16.py) replaces the later multi-tensor optimizer.
MEGATRON_2020 = Stack(attention="unfused", fused_kernels=False, optimizer="fp16_optimizer", norm_kernel="fused",
                      linear_bias="separate")
# PyTorch eager layers with FlashAttention-1 kernels: llm-foundry/Composer MPT 2023. The benchmark
# tables were produced by scripts/train/benchmarking/submit_benchmarks.py (added with the H100
# tables in llm-foundry b2a43a14, Oct 2023), which sets ``attn_impl: triton`` (its default) and
# installs ``.[gpu]`` of the v0.3.0 branch, i.e. flash-attn 1.0.9 and the Triton port of the
# FlashAttention-1 algorithm; FlashAttention-2 was only the optional ``gpu-flash2`` extra.
# Composer's DecoupledAdamW (the llm-foundry yamls' ``optimizer: decoupled_adamw``) updates the
# parameters one tensor at a time (composer/optim/decoupled_weight_decay.py): for_loop. The loss is
# ComposerMPTCausalLM's default ``loss_fn: fused_crossentropy``, flash-attn's cross-entropy
# kernel (llm-foundry/models/mpt/modeling_mpt.py): fused. Composer 0.16 (v0.3.0 pins >=0.16.3,<0.17)
# updates the model's training metrics after every micro-batch's backward (Trainer._train_microbatch
# -> _eval_train_metrics), and ComposerMPTCausalLM's are LanguageCrossEntropy and LanguagePerplexity,
# each a torch cross-entropy over the bf16 logits: train_metrics 2.
# MPT's resid_pdrop, emb_pdrop and attn_pdrop default to 0 (configuration_mpt.py; the benchmark
# yamls set none of them), and PyTorch launches no kernel for a dropout of p = 0: dropout false.
# no_bias defaults to false, so every linear layer has a bias (the tables' NumParams count them:
# MPT-125M at 65K tokens is 174,070,272 with the 6,912 biases of each layer); torch 1.13 adds them
# in addmm's cuBLASLt epilogue, and their gradients are reductions: linear_bias epilogue.
TORCH_EAGER_FA1 = Stack(attention="flash1", fused_kernels=False, optimizer="for_loop", cross_entropy="fused",
                        train_metrics=2, dropout=False, linear_bias="epilogue")
# PyTorch eager layers (FSDP2) with TransformerEngine's fused attention (NeMo AutoModel); the
# optimizer is torch.optim's AdamW, multi-tensor (foreach) by default on CUDA. AutoModel's model
# classes have no hidden dropout (no nn.Dropout in nemo_automodel/components/models/{llama,
# qwen3_moe,deepseek_v3,gpt_oss,nemotron_v3} nor components/moe at cb976544) and pass the HF
# config's attention_dropout, 0.0 for Llama 3, Qwen3-MoE and Nemotron-H, to the attention kernel
# (llama/model.py, nemotron_v3/layers.py): PyTorch launches no dropout kernel, dropout false.
# Its BackendConfig's ``rope_fusion`` defaults to on where TE is installed
# (nemo_automodel/components/models/common/utils.py): TE's fused RoPE, rope_kernel fused.
TORCH_EAGER_TE = Stack(attention="auto", fused_kernels=False, optimizer="foreach", dropout=False,
                       rope_kernel="fused")

# torchtitan (pytorch/torchtitan): Llama models in PyTorch layers under FSDP2, attention through
# F.scaled_dot_product_attention (its flash backend, FlashAttention-2), no dropout, the loss
# F.cross_entropy on the logits (fp32 from 2024-12: ``pred.float()``), torch.optim.AdamW. Eager
# (``training.compile = false``, every train config of 2024-04): one kernel per elementwise op, the
# norm its ``RMSNorm`` class of PyTorch ops on an fp32 upcast (``norm_type = "rmsnorm"``,
# torchtitan/models/norms.py: ``norm_kernel: composite``) or the Triton fused RMSNorm where a config
# sets ``"fused_rmsnorm"``, foreach AdamW (train.py of f38766edb: ``foreach=True``). Compiled
# (``training.compile``): Inductor fuses the elementwise ops around the GEMMs; AdamW fused (the
# ``optimizer.implementation`` default from 2025).
TORCHTITAN_EAGER = Stack(attention="flash2", fused_kernels=False, optimizer="foreach", cross_entropy="torch",
                         dropout=False, norm_kernel="composite")
TORCHTITAN_EAGER_FUSED_NORM = replace(TORCHTITAN_EAGER, norm_kernel="fused")
TORCHTITAN_COMPILED = Stack(attention="flash2", fused_kernels=True, optimizer="fused", cross_entropy="torch",
                            dropout=False)

# NeMo AutoModel's model states and step end, for every row of its performance summary. Its models are
# built in bf16: ``from_config`` / ``from_pretrained`` turn ``torch_dtype: "auto"`` into torch.bfloat16
# (nemo_automodel/_transformers/auto_model.py at 08a48f76, c0e4fe1b, cb976544; the benchmark configs set
# none, the dense Llama one sets ``torch_dtype: bf16``), and the MoE classes of 89e3a9fdd cast themselves
# with ``self.to(dtype)``, bf16, in ``initialize_weights``. FSDP2 then shards bf16 parameters (its
# MixedPrecisionPolicy ``param_dtype`` bf16 casts nothing) and casts each reduced gradient back to them;
# no fp32 copy is made anywhere (AutoModel's docs/guides/mixed-precision-training.mdx at cb976544: with
# torch.optim "the EMA buffers ... end up in this dtype", TE FusedAdam keeps fp32 ones): master_dtype bf16.
# The benchmark recipe steps right after the last backward, without clipping (``run_benchmark`` in
# recipes/llm/benchmark.py; the table's notes: "no grad clipping"): grad_clip false.
AUTOMODEL_STATES: dict = dict(master_dtype="bf16", grad_clip=False)


# Megatron-Core DDP's passes over each gradient bucket before its collective (``parallel.ddp_grad_check``
# and ``ddp_grad_scaling``, simulator/schedule/data_parallel.py), as each Megatron-Core stack ran them:
# * Megatron-LM's own training loop (pretrain_gpt.py): --check-for-nan-in-loss-and-grad is on unless
#   --no-check-for-nan-in-loss-and-grad, --ddp-average-in-collective off (r0.8.0 on; 0.6 has no such
#   flag and always scales). Megatron-Core 0.6-0.9 assert on the norm's isnan (one host read per bucket);
#   from 0.12 (4dc6b7157a, Feb 2025) ``validate_result`` tests isnan and isinf even with reruns disabled.
MEGATRON_LM_DDP_2024 = dict(ddp_grad_check="nan", ddp_grad_scaling="buffer")
MEGATRON_LM_DDP_2025 = dict(ddp_grad_check="nan_inf", ddp_grad_scaling="buffer")
# * NeMo 2.0's recipes (nemo/collections/llm/recipes/llama3_8b.py, llama3_70b.py at d2b21556 and
#   v2.2.0): ``DistributedDataParallelConfig(check_for_nan_in_grad=True, ..., average_in_collective=True)``
#   on Megatron-Core 0.11 (NeMo 25.02), whose ``validate_result`` returns before testing while reruns
#   are disabled (megatron/core/rerun_state_machine.py at core_r0.11.0): the norm runs, nothing is read.
NEMO2_DDP_MCORE_011 = dict(ddp_grad_check="norm", ddp_grad_scaling="collective")
# * Megatron-Bridge's performance scripts (scripts/performance/utils/helpers.py at v0.2.0,
#   utils/overrides.py at 26.04): ``check_for_nan_in_grad = False``; the Llama recipes keep
#   ``average_in_collective = True``.
BRIDGE_PERF_DDP = dict(ddp_grad_check="none", ddp_grad_scaling="collective")
# * NeMo 1.0 with ``optim.name: mcore_distributed_optim`` (megatron_gpt_model.py
#   ``setup_mcore_distributed_parallel``, 24.x): ``check_for_nan_in_grad`` read from the optimizer
#   config, False unless set; ``average_in_collective`` likewise, True unless set.
NEMO1_MCORE_DDP = dict(ddp_grad_check="none", ddp_grad_scaling="collective")


def megatron_parallel(tp: int, pp: int = 1, vp: int = 1, cp: int = 1, *, tp_overlap: str = "te_default") -> dict:
    """The parallel block of a Megatron-Core / NeMo run with the printed TP, PP, VP and CP: the
    distributed optimizer (ZeRO-1) with its parameter AllGather overlapped with forward
    (--overlap-param-gather; NeMo's distributed_fused_adam), sequence parallel and the given TE TP
    overlap when TP > 1, interleaved 1F1B when VP > 1 with its pipeline exchanges overlapped
    (Megatron-LM's --overlap-p2p-communication is on by default and acts only with virtual stages;
    NeMo's and Megatron-Bridge's comm-overlap setup sets ``overlap_p2p_comm`` and clears
    ``batch_p2p_comm`` whenever vp > 1: ``megatron_comm_overlap.py``, ``comm_overlap.py``)."""
    par: dict = dict(tp=tp, pp=pp, cp=cp, zero=1, overlap_param_gather=True)
    if tp > 1:
        par["sequence_parallel"] = True
        if tp_overlap != "none":
            par["tp_overlap"] = tp_overlap
    if vp > 1:
        par.update(pp_schedule="interleaved", vp=vp, overlap_p2p_comm=True)
    return par


def make_scenario(name: str, hardware: str, n_gpus: int, model: dict, *, micro_batch: int, global_batch: int,
              dtype: str, recompute: str, parallel: dict, stack: Stack = MODERN, gpus_per_node: int = 8) -> dict:
    """A scenario as a dict; ``gpus_per_node``: the profile's node (4: a GB200 NVL72 compute tray)."""
    return dict(name=name, hardware=hardware, nodes=max(1, n_gpus // gpus_per_node), model=model,
                training=dict(micro_batch=micro_batch, global_batch=global_batch, dtype=dtype,
                              recompute=recompute, **stack.training()),
                parallel=parallel)

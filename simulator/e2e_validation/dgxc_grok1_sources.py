"""NVIDIA dgxc-benchmarking's Grok-1 314B pre-training on H100 (its ``grok1`` recipe), as e2e
cases: a Mixture-of-Experts model with tensor, expert and context parallelism on NVIDIA's stack.

The recipe's ``README_314b.md`` prints measured step times on 8 to 2,048 H100, in BF16 and FP8,
twice: under the container nemo:24.09 (releases v24.11.1 to v25.01.1) and under nemo:24.12
(v25.02 to v25.04.02) (``data/e2e/dgxc_grok1_314b_h100.csv``, whose header has the provenance).
Both run NeMo 1.0's ``megatron_gpt_pretraining.py`` on the release's ``grok1_314b.yaml`` with
``configure.sh``'s overrides, identical in the two containers' releases, so the scenario is what
those files set:

- Grok-1's shape: hidden 6,144, 48 heads in 8 query groups, 8 experts of FFN 32,768, top-2,
  gated GeLU experts (``fast-geglu``; priced as the SwiGLU experts: the same three matrices and
  the same elementwise traffic), RoPE, no biases, untied embeddings, the Llama-3 vocabulary
  padded to a multiple of 128 x TP; below 512 GPUs the launch script cuts the model to 2-32
  layers (the README's "proxy" configurations) and the sequence to 4,096 tokens up to 32 GPUs;
- TP 4 with sequence parallelism and TransformerEngine's Userbuffers overlap at its default
  configuration (``ub_tp_comm_overlap_cfg: null``: ``tp_overlap: te_default``); EP 2, 4 or 8 with
  the experts tensor-parallel over the same 4 ranks (no ``expert_tensor_parallel_size``);
  Megatron-Core's ``alltoall`` token dispatcher; CP 2 from 64 GPUs (TE's KV ring), PP 2-8 with
  8 virtual stages from 128;
- ``moe_pad_expert_input_to_capacity`` with a capacity factor of 1.0: every expert computes its
  balanced share of the tokens (``capacity_factor: 1.0``, the default balanced load), and the
  router's load-balancing loss (``moe_aux_loss_coeff`` 0.01: ``moe_router_kernels: [aux_loss]``);
- Megatron-Core's DDP through ``mcore_distributed_optim``: the distributed optimizer with
  overlapped bf16 gradient ReduceScatter and parameter AllGather, ``average_in_collective`` and
  no NaN check (NeMo 1.0's ``setup_mcore_distributed_parallel`` reads ``check_for_nan_in_grad``
  from the optimizer config, unset: False);
- no activation recompute, dropout 0; ``NVTE_FUSED_ATTN=0``: TransformerEngine runs flash-attn 2
  (``NEMO_LAUNCHER_2024``);
- FP8 rows: ``fp8_hybrid`` with delayed scaling and ``fp8_params`` (the parameters gathered in
  FP8); the output layer stays BF16, as in every Megatron-Core run (``training.fp8_output_layer``).

Scored (``SCORED_GPUS``): the runs on 8, 16, 32, 64 and 128 GPUs, both containers and both
precisions (20 runs, under 1.5 CPU seconds each: the 64-GPU proxy is the first with CP 2 and
sequence 8,192, the 128-GPU one the first with a pipeline, PP 2 x VP 8 at one layer per virtual
stage). The runs on 256-2,048 GPUs (128 micro-batches through 32-64 virtual stages with expert
All-to-Alls: 4.5 CPU seconds at 256 GPUs, about 20 from 512) are transcribed, not scored; each
table's steps from 128 to 2,048 GPUs lie within 3% of each other. Not modelled: Megatron-Core's
``overlap_param_gather_with_optimizer_step``, which ``configure.sh`` sets where PP > 1 (the first
virtual stage's parameter AllGather issued during the optimizer step).
"""

from __future__ import annotations

from simulator.e2e_validation.rows import Row, parse_container_run, parse_int
from simulator.e2e_validation.scenarios import (NEMO1_MCORE_DDP, NEMO_LAUNCHER_2024, Case, gpt_model, make_scenario,
                                                megatron_parallel, padded_vocab)

SOURCE = "dgxc_grok1"

# The scored runs: GPUs per run (both containers, both precisions); see the module docstring.
SCORED_GPUS: frozenset[int] = frozenset({8, 16, 32, 64, 128})

# Grok-1 (grok1_314b.yaml): experts and top-k (the rows carry the rest of its shape).
EXPERTS, TOP_K = 8, 2


def grok1_model(r: Row, tp: int) -> dict:
    """The row's Grok-1 (or its proxy's layer count) as a scenario model block."""
    model = gpt_model({**r, "vocab": str(padded_vocab(parse_int(r["vocab"]), tp))}, mlp="swiglu", position="rope",
                      tied=False)
    return dict(model, experts=EXPERTS, top_k=TOP_K, moe_ffn_hidden=model["ffn_hidden"], capacity_factor=1.0)


def dgxc_grok1_case(r: Row) -> Case:
    """One README run as a scenario (the module docstring gives every setting and its source)."""
    container, dtype, n = parse_container_run(r)
    tp, pp, vp, cp, ep = (parse_int(r[k], 1) for k in ("tp", "pp", "vp", "cp", "ep"))
    par = dict(megatron_parallel(tp, pp, vp, cp, tp_overlap="te_default"), overlap_grad_reduce=True,
               grad_reduce_dtype="bf16", **NEMO1_MCORE_DDP, ep=ep, moe_dispatcher="alltoall",
               moe_dispatch_dtype="bf16")
    scn = make_scenario(f"dgxc-grok1-314b-nemo{container}-{dtype}-{n}", "dgx-h100", n, grok1_model(r, tp),
                        micro_batch=parse_int(r["micro_batch"], 1), global_batch=parse_int(r["global_batch"]),
                        dtype=dtype, recompute="none", parallel=par, stack=NEMO_LAUNCHER_2024)
    scn["training"].update(dropout=False, moe_router_kernels=["aux_loss"])
    if dtype == "fp8":
        scn["training"].update(fp8_recipe="delayed", fp8_param_gather=True)
    dp = n // (tp * pp * cp)
    plan = f"tp{tp} pp{pp}" + (f" vp{vp}" if vp > 1 else "") + f" cp{cp} ep{ep} dp{dp}"
    label = f"{r['model_name']} {dtype.upper()} nemo:{container} {plan} {n} GPUs"
    return Case(SOURCE, label, scn, "step_time_s", float(r["value"]), n)


def dgxc_grok1(rows: list[Row]) -> list[Case]:
    """dgxc-benchmarking's measured Grok-1 314B step times on H100 under nemo:24.09 and nemo:24.12,
    BF16 and FP8: the runs on 8-128 GPUs (``SCORED_GPUS``: 20 of the 36 runs; module docstring)."""
    return [dgxc_grok1_case(r) for r in rows if r["metric"] == "step_time_s" and parse_container_run(r)[2] in SCORED_GPUS]

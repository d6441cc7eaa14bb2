"""NVIDIA dgxc-benchmarking's Nemotron-H 56B pre-training on H100 (its ``nemotronh`` recipe), as e2e
cases: a hybrid Mamba2-Transformer on NVIDIA's stack, in FP8, weak-scaled from 32 to 2,048 GPUs.

The recipe's ``README.md`` (releases v25.05 to v25.05.05, container nvcr.io/nvidia/nemo:25.04.01)
prints one measured step time per GPU count (``data/e2e/dgxc_nemotronh_56b_h100.csv``, whose header
has the provenance). The launch script runs NeMo 2.0's ``scripts/performance/llm/
pretrain_nemotronh_56b.py`` at the NeMo commit ``setup.sh`` pins (7a8f1cc7, with Megatron-Core
0.12.2), so the scenario is what that script, its recipe and ``set_primary_perf_configs`` set:

- the model of ``NemotronHConfig56B``: 118 blocks in Megatron-Core's hybrid pattern (54 Mamba2
  mixers, 10 attention, 54 squared-ReLU MLP blocks: ``model.layer_pattern``; the activation is
  ``NemotronHConfigBase``'s ``lambda x: torch.pow(F.relu(x), 2)``, which Megatron-Core's MLP runs as
  eager ops, ``activation_kernel: eager``), hidden 8,192, FFN 32,768, 64 heads in 8 query groups, Mamba2 of 256
  heads x 64 (``expand`` 2, Megatron-Core's default) with state 256 and 8 groups, no position
  embedding (``MambaModel``'s default ``none``), no biases, untied embeddings, the NullTokenizer's
  131,073 entries padded to a multiple of 128 x TP;
- TP 8 with sequence parallelism and no TP communication overlap (the recipe adds its overlap
  callback only in ``performance_mode``, off here), no pipeline, micro-batch 1, three sequences per
  GPU (24 micro-batches per data-parallel rank);
- Megatron-Core 0.12's DDP: the distributed optimizer with the gradient ReduceScatter overlapped
  and the parameter AllGather not (``overlap_param_gather=False``), gradients reduced in bf16 (the
  FP8 plugin's ``grad_reduce_in_fp32=False``), ``check_for_nan_in_grad`` on (0.12's isnan and isinf
  per bucket) and ``average_in_collective`` unset (the buffer scaled before its collective):
  ``MEGATRON_LM_DDP_2025``'s passes;
- FP8 hybrid with delayed scaling (the script's default recipe "ds", ``bf16_with_fp8_mixed``) and
  ``fp8_param_gather``; ``first_last_layers_bf16`` cleared by that plugin; the output layer in
  BF16 (Megatron-Core's ``ColumnParallelLinear``);
- no recompute, dropout 0, TransformerEngine's cross-entropy (``cross_entropy_fusion_impl "te"``:
  ``cross_entropy: fused``), no CUDA graphs; ``NVTE_FUSED_ATTN=0`` with ``NVTE_FLASH_ATTN=1``: TE
  runs flash-attn 2 (``NEMO_LAUNCHER_2024``).

Every run is scored (7 rows, no pipeline).
"""

from __future__ import annotations

from simulator.e2e_validation.rows import Row, parse_int
from simulator.e2e_validation.scenarios import (MEGATRON_LM_DDP_2025, NEMO_LAUNCHER_2024, Case, gpt_model, make_scenario,
                                                megatron_parallel, padded_vocab)

SOURCE = "dgxc_nemotronh"

# NemotronHConfig56B.hybrid_override_pattern (NeMo nemo/collections/llm/gpt/model/ssm.py at 7a8f1cc7).
NEMOTRON_H_56B_PATTERN = ("M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-"
                          "M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-")
# Mamba2 of NemotronHConfigBase / NemotronHConfig56B, with Megatron-Core 0.12.2's MambaMixer defaults
# (megatron/core/ssm/mamba_mixer.py: expand 2, so d_inner 16,384 = 256 heads of 64; d_conv 4; chunk 128).
MAMBA_56B: dict[str, int] = dict(mamba_heads=256, mamba_head_dim=64, mamba_state=256, mamba_groups=8,
                                 mamba_conv=4, mamba_chunk=128)
# NullTokenizer(vocab_size=131072).vocab_size: the given size plus its end-of-document token.
NULL_TOKENIZER_VOCAB = 131072 + 1


def nemotronh_56b_model(r: Row, tp: int) -> dict:
    """The row's Nemotron-H 56B as a scenario model block."""
    model = gpt_model({**r, "vocab": str(padded_vocab(NULL_TOKENIZER_VOCAB, tp))}, mlp="squared_relu", position="none",
                      tied=False)
    return dict(model, layer_pattern=NEMOTRON_H_56B_PATTERN, **MAMBA_56B)


def dgxc_nemotronh_case(r: Row) -> Case:
    """One README run as a scenario (the module docstring gives every setting and its source)."""
    n, tp = parse_int(r["num_gpus"]), parse_int(r["tp"])
    par = dict(megatron_parallel(tp, tp_overlap="none"), overlap_param_gather=False, overlap_grad_reduce=True,
               grad_reduce_dtype="bf16", **MEGATRON_LM_DDP_2025)
    scn = make_scenario(f"dgxc-nemotronh-56b-fp8-{n}", "dgx-h100", n, nemotronh_56b_model(r, tp),
                        micro_batch=parse_int(r["micro_batch"], 1), global_batch=parse_int(r["global_batch"]),
                        dtype="fp8", recompute="none", parallel=par, stack=NEMO_LAUNCHER_2024)
    scn["training"].update(dropout=False, cross_entropy="fused", fp8_recipe="delayed", fp8_param_gather=True,
                           activation_kernel="eager")
    label = f"{r['model_name']} FP8 tp{tp} dp{n // tp} {n} GPUs"
    return Case(SOURCE, label, scn, "step_time_s", float(r["value"]), n)


def dgxc_nemotronh(rows: list[Row]) -> list[Case]:
    """dgxc-benchmarking's measured Nemotron-H 56B step times on 32-2,048 H100 (nemo:25.04.01, FP8):
    every run (module docstring)."""
    return [dgxc_nemotronh_case(r) for r in rows if r["metric"] == "step_time_s"]

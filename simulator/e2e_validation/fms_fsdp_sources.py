"""IBM's PyTorch-FSDP throughput table for Llama 2 shapes (foundation-model-stack/fms-fsdp), as e2e cases.

fms-fsdp's README (@4ffb9bd, 2024-03) and the PyTorch blog "Maximizing training throughput using
PyTorch FSDP" (2024-03-13) print tokens/s per GPU of Llama 2 7B-70B on 128 A100 80 GB (400 Gb/s per
node) and 96 H100 80 GB (800 Gb/s per node), pure data parallelism, 2 sequences of 4,096 tokens per
GPU and step (``data/e2e/fms_fsdp_llama2.csv`` has the provenance). A ZeRO-3 regime at scale
without model parallelism, on a stack that is neither DeepSpeed nor FSDP2. What the table omits
comes from the code of the same commit:

- ``main_training.py``: FSDP1 (``FullyShardedDataParallel``) wrapping each ``LLaMABlock``,
  ``limit_all_gathers=True`` (at most two blocks' parameters gathered ahead), default backward
  prefetch; modelled as the simulator's FSDP ZeRO-3 (``zero3_impl: fsdp2``: per-block AllGather
  before forward and backward, ReduceScatter after each block's backward, as MPT's FSDP1 rows are);
- ``policies/mixed_precision.py`` ``bfSixteen``: parameters gathered and gradients reduced in bf16
  over the fp32 model (``grad_reduce_dtype: bf16``; fp32 shards and Adam states);
- ``torch.optim.AdamW`` (foreach on CUDA), gradient clipping at 1.0, no gradient accumulation;
- the FMS LLaMA: PyTorch ops around SDPA's FlashAttention-2, no dropout, ``nn.CrossEntropyLoss`` on
  the logits, its norms ``LayerNormParameterized(use_high_precision_pow=True)`` (fms/modules/
  layernorm.py: the RMSNorm as PyTorch ops on an fp32 upcast, ``norm_kernel: composite``): the
  torchtitan eager stack;
- ``policies/ac_handler.py``: torch's non-reentrant ``checkpoint_wrapper`` on every
  ``selective_checkpointing``-th block (a counter over the ``LLaMABlock``s from 1 picks the blocks
  at its multiples: torchtitan's rule, ``recompute_method: every``); the printed "Full AC" is every
  block (``recompute: full``).
- The 13B rows' "Selective AC" prints no n. Their HFU / MFU (HFU from PyTorch's FLOP counter,
  which counts the re-run forwards) tells it: 0.59 / 0.51 on A100 and 0.40 / 0.35 on H100, so
  1.136-1.178 and 1.113-1.174 with the two-digit rounding, against 1.165 for n = 2 (20 of 40
  blocks re-run, Llama 2 13B at 2 x 4,096 tokens), 1.107 for n = 3 and 1.330 for n = 1: only
  n = 2 fits both (``recompute_method: every``, ``recompute_num_layers: 2``).

Built: the 13B, 34B and 70B rows of the eager table (FULL_SHARD; every second block checkpointed,
every block), on both clusters. Transcribed, not built: 7B (``HYBRID_SHARD``: sharded within a node
and replicated across nodes, which the simulator does not describe) and the whole torch.compile
table of ed74fd5 (its 34B and 70B rows switch to "Selective AC" with n not printed, and their HFU /
MFU of 1.24-1.35 does not pin it)."""

from __future__ import annotations

from simulator.e2e_validation.rows import Row, parse_int
from simulator.e2e_validation.scenarios import TORCHTITAN_EAGER, Case, llama_model, make_scenario

# The table's clusters as hardware profiles (hardware_profiles/fms-a100.yaml, fms-h100.yaml)
PROFILE = {"A100-80GB": "fms-a100", "H100-80GB": "fms-h100"}
SOURCE_ID = "fms-fsdp-2024-03"


# The n of the eager 13B rows' "Selective AC", from their printed HFU / MFU (module docstring)
SELECTIVE_EVERY = 2


def is_built(r: Row) -> bool:
    """The eager FULL_SHARD rows, every block or every second one checkpointed (module docstring)."""
    return (r["source_id"] == SOURCE_ID and r["metric"] == "tokens_per_s_per_gpu"
            and r["recompute"] in ("full", "selective every n-th block") and "FULL_SHARD" in r["zero_stage_or_fsdp"])


def fms_fsdp_case(r: Row) -> Case:
    n, mb = parse_int(r["num_gpus"]), parse_int(r["micro_batch"])
    scn = make_scenario(f"fms-fsdp-{r['model_name'].split()[-1].lower()}-{PROFILE[r['gpu']]}", PROFILE[r["gpu"]], n,
                        llama_model(r), micro_batch=mb, global_batch=parse_int(r["global_batch"]), dtype="bf16",
                        recompute="full", parallel=dict(zero=3, zero3_impl="fsdp2", grad_reduce_dtype="bf16"),
                        stack=TORCHTITAN_EAGER)
    ac = "full AC"
    if r["recompute"] != "full":
        scn["training"].update(recompute_method="every", recompute_num_layers=SELECTIVE_EVERY)
        ac = f"AC every {SELECTIVE_EVERY}nd block"
    label = f"{r['model_name']} {r['gpu'].split('-')[0]} FSDP1 full-shard {n} GPUs mbs{mb} {ac} eager"
    return Case("fms_fsdp", label, scn, "tokens_per_s_per_gpu", float(r["value"]), n)


def fms_fsdp(rows: list[Row]) -> list[Case]:
    """The built rows of IBM's FSDP table (module docstring)."""
    return [fms_fsdp_case(r) for r in rows if is_built(r)]

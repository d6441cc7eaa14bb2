"""The USP paper's end-to-end tables (arXiv:2405.07719, Fang & Zhao, 2024), as e2e cases.

Tables 5-7 measure Llama2-7B on one and Llama3-8B on two nodes of 8 A800 (NVLink 400 GB/s, 1.6 Tb/s
RDMA per node: the ``dgx-a800`` profile) at 30K-208K tokens, each row a split of the GPUs into
Megatron TP (with sequence parallelism), Ulysses (the paper's SP-Ulysses, the yunchang head
All-to-All) and a KV ring (the paper's SP-Ring: Megatron-LM's own context parallelism, TE's p2p
ring with the load-balanced chunking). The stack (§5.2): Megatron-LM 2196398 (2024-04-12) in
nvcr.io/nvidia/nemo:24.03, i.e. TransformerEngine 1.4, whose context-parallel attention runs in
bshd (``parallel.cp_qkv_format``, as the NeMo 24.03 rows of ``sources._nemo_long_context``) and
whose DotProductAttention prefers flash-attn 2 to cuDNN on sm80 (the A100 profile's ``auto``);
"ZeRO-1 for DP and SP" (Megatron's distributed optimizer), TP always with sequence parallelism,
no gradient accumulation where the global batch is 1. Process groups from the innermost (the
paper's Tip 7): TP, Ulysses, ring, DP. Not printed, so Megatron-LM's defaults of the commit:
gradients reduced after the backward in fp32 (``accumulate_allreduce_grads_in_fp32`` with bf16),
no TP communication overlap, no recompute (the paper's own OOM reports fit none: SP-only Llama2-7B
at 64K on 8 GPUs, SP-only Llama3-8B at 120K). The metric is Megatron's model TFLOP/s
(``num_floating_point_operations`` of 2024, the full score matrix), which the printed MFU divides
by 312.
"""

from __future__ import annotations

from simulator.e2e_validation.rows import Row, parse_int
from simulator.e2e_validation.scenarios import MODERN, Case, llama_model, make_scenario, padded_vocab

USP_PROFILE = "dgx-a800"
# Tip 7 of the paper: "the order of process group dimensionality from low to high is TP,
# SP-Ulysses, SP-Ring, ZeRO-DP, PP".
USP_ORDER = ("tp", "ulysses", "cp", "dp", "pp")


def usp_parallel(tp: int, ulysses: int, ring: int) -> dict:
    """The parallel block of one USP row: Megatron TP with sequence parallelism, Ulysses inside a
    p2p KV ring (TE 1.4's bshd layout), the distributed optimizer reducing fp32 gradients after
    the backward."""
    par: dict = dict(tp=tp, ulysses=ulysses, cp=ring, cp_comm="p2p", zero=1, order=USP_ORDER,
                     overlap_grad_reduce=False, grad_reduce_dtype="fp32")
    if ring > 1:
        par["cp_qkv_format"] = "bshd"  # TE 1.4 (nemo:24.03)
    if tp > 1:
        par["sequence_parallel"] = True
    return par


def usp(rows: list[Row]) -> list[Case]:
    """Every row of Tables 5-7: TP, Ulysses and ring degrees as printed, DP = the rest, micro-batch
    1 (the global batch 16 of Table 5's 30K rows and 2 of Table 6's TP8 rows accumulated over
    micro-batches of one sequence: 16 sequences of 30K tokens fit in no plan of the table
    without recompute), Megatron's padded vocabulary (a multiple of 128 x TP)."""
    out = []
    for r in rows:
        if r["metric"] != "tflops_per_gpu":
            continue
        n, tp, ul, ring = (parse_int(r[k], 1) for k in ("num_gpus", "tp", "ulysses", "cp"))
        seq, gb = parse_int(r["seq_len"]), parse_int(r["global_batch"])
        model = llama_model({**r, "vocab": str(padded_vocab(parse_int(r["vocab"]), tp))})
        label = (f"{r['model_name']} {seq // 1024}K gbs{gb} tp{tp} ulysses{ul} ring{ring} "
                 f"dp{n // (tp * ul * ring)} {n} GPUs")
        out.append(Case("usp", label,
                        make_scenario(f"usp-{r['model_name']}-{seq}-{gb}-{tp}-{ul}-{ring}", USP_PROFILE, n, model,
                                      micro_batch=1, global_batch=gb, dtype="bf16", recompute="none",
                                      parallel=usp_parallel(tp, ul, ring), stack=MODERN),
                        "megatron_model_tflops", float(r["value"]), n))
    return out

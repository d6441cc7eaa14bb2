"""Llama 3 405B pre-training (arXiv:2407.21783, Table 4 and sec. 3.3), as e2e cases.

Meta published the model TFLOP/s per GPU of its three pre-training configurations of Llama 3 405B
on 8,192 and 16,384 H100 (``data/e2e/llama3_405b_table4.csv``, whose header has the provenance):
TP 8, PP 16, CP 1 or 16, DP 64-128 (FSDP), BF16, 16M tokens a step. Sec. 3.3.2 describes the
pipeline: an interleaved schedule whose first chunk on the first stage holds only the embedding and
whose last chunk on the last stage holds only the output projection and the loss, one transformer
layer reduced from each of the two stages; a chunk of one layer leaves the embedding alone, so each
of the 16 stages runs V = (126 + 2) / 16 = 8 chunks of one layer (``pp_layers`` 0, 1 x 126, 0).
"""

from __future__ import annotations

from simulator.e2e_validation.rows import Row, parse_int
from simulator.e2e_validation.scenarios import MODERN, Case, llama_model, make_scenario

# The largest sequence of a scored row: at 131,072 tokens the model FLOPs of the table depend on
# whether the score matrix is counted whole or causal (a factor 1.4 at the 405B shape), which the
# paper does not say (the page's findings).
MAX_SCORED_SEQ = 8192


def llama3_layers_per_chunk(layers: int, pp: int, vp: int) -> list[int]:
    """Transformer layers of each virtual stage v = chunk x pp + stage: the embedding and the loss
    each take one layer's place, so layers + 2 split evenly over pp x vp chunks and the first and
    the last chunk hold one layer fewer (sec. 3.3.2)."""
    per, rest = divmod(layers + 2, pp * vp)
    if rest or per < 1:
        raise ValueError(f"{layers} layers + embedding + loss do not split evenly into {pp * vp} chunks")
    return [per - 1] + [per] * (pp * vp - 2) + [per - 1]


def llama3_case(r: Row) -> Case:
    """One Table 4 row: the printed TP, CP, PP and DP, a micro-batch of one sequence (Batch size/DP
    micro-batches per pipeline), V = 8 chunks of one layer, FSDP as the paper runs it (optimizer
    states and gradients sharded, fp32 gradients accumulated over the micro-batches and
    reduce-scattered once, parameters gathered once a step and kept: the communication of the
    distributed optimizer, ``zero: 1`` with both overlaps; gradients kept sharded while they
    accumulate, ``zero: 2``, would need an FP32 ReduceScatter in every micro-batch, 6-13% slower
    than the table, see the page's findings), gradients made by autograd in each layer's backward
    (``grad_allocation: lazy``, PyTorch's, not a buffer made at model build), sequence parallelism (Korthikanti et al.),
    asynchronous pipeline exchanges, all-gather context parallelism, no recompute."""
    n, tp, pp, vp, cp = (parse_int(r[k], 1) for k in ("num_gpus", "tp", "pp", "vp", "cp"))
    model = llama_model(r)
    par: dict = dict(tp=tp, pp=pp, cp=cp, zero=1, overlap_grad_reduce=True, overlap_param_gather=True,
                     grad_reduce_dtype="fp32", sequence_parallel=True, pp_schedule="interleaved", vp=vp,
                     pp_layers=llama3_layers_per_chunk(model["layers"], pp, vp), overlap_p2p_comm=True,
                     grad_allocation="lazy")
    if cp > 1:
        par["cp_comm"] = "all_gather"
    dp = n // (tp * pp * cp)
    label = f"{r['model_name']} tp{tp} cp{cp} pp{pp} vp{vp} dp{dp} seq{model['seq_len']} {n} GPUs"
    return Case("llama3", label,
                make_scenario(f"llama3-405b-{n}-cp{cp}", "dgx-h100", n, model, micro_batch=parse_int(r["micro_batch"], 1),
                              global_batch=parse_int(r["global_batch"]), dtype="bf16",
                              recompute=r["recompute"] or "none", parallel=par, stack=MODERN),
                "megatron_model_tflops", float(r["value"]), n)


def llama3(rows: list[Row]) -> list[Case]:
    """The 8K-token rows of Table 4: Llama 3 405B on 8,192 H100 (TP 8, PP 16, DP 64, 32 sequences per
    DP group) and 16,384 H100 (DP 128, 16 sequences), the global batch fixed at 2,048 sequences of
    8,192 tokens, so DP doubles while each pipeline's micro-batches halve. TFLOP/s per GPU are model
    FLOPs (PaLM's 6N + 12LHQT, Megatron-Core's count). Transcribed but not scored: the 128K row
    (CP 16, DP 8), whose FLOP count at that length the paper leaves open."""
    return [llama3_case(r) for r in rows
            if r["metric"] == "tflops_per_gpu" and parse_int(r["seq_len"]) <= MAX_SCORED_SEQ]

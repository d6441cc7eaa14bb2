"""SimuMax's measured Megatron-LM steps on one 8-GPU B200 node, as e2e cases.

SimuMax (MooreThreads/SimuMax, release 1.2) publishes, beside its own predictions, the measured
("real") step time and peak memory of every run of its B200 table
(``docs/b200/b200_release_v1.2_summary.json``; ``data/e2e/simumax_b200_megatron.csv`` has the
provenance and the launch). The runs are Megatron-LM core_r0.14.0 with TransformerEngine 2.11 in
bf16 on one DGX-class B200 node: Llama 3 70B cut to 12 layers and 405B cut to 4, under TP 1-8 with
PP 2 or DP 1-4 at sequence 4,096 and 4, 8 or 32 micro-batches of one sequence, and with context
parallelism (All-to-All, ``--cp-comm-type a2a``) at 32K and 128K tokens. What the launcher
(``simu_tools/megatron_scripts/scripts/run_pretrain_llama3.sh``) sets, as the scenario has it:

- the distributed optimizer (ZeRO-1) with neither ``--overlap-grad-reduce`` nor
  ``--overlap-param-gather``, and ``--accumulate-allreduce-grads-in-fp32``: fp32 main gradients,
  reduce-scattered in fp32 after the backward, the bf16 parameters all-gathered after the step;
- Megatron-LM's own training loop: the gradient check for NaN and Inf and the division by the
  data-parallel size on the gradient buffer (``MEGATRON_LM_DDP_2025``), clipping at 1.0;
- sequence parallelism wherever TP > 1, no TP communication overlap (every ``--disable-tp-comm-*``);
- no recompute (``--recompute-num-layers 0`` under block recompute), no dropout, no biases;
- TE's layers and fused attention (auto: cuDNN's on B200), Megatron's vocab-parallel
  cross-entropy (no ``--cross-entropy-loss-fusion`` in the launcher), untied embeddings, the
  vocabulary padded to a multiple of 128 × TP;
- the 1F1B schedule without virtual stages where PP = 2.

The rows are one node in bf16, so they are fitting rows of the dgx-b200 GEMM derate
(``sources.is_fit_case``), with the three per-tensor FP8 rows of other sources; scored, as every
row, with the derate fitted without them (on those FP8 rows). The DeepSeek-V2/V3 rows of the same
table are transcribed, not built (their expert capacity padding is not modelled).
"""

from __future__ import annotations

from dataclasses import replace

from simulator.e2e_validation.rows import Row, parse_int
from simulator.e2e_validation.scenarios import MEGATRON_LM_DDP_2025, MODERN, Case, llama_model, make_scenario, padded_vocab

# Megatron-Core with TransformerEngine; --attention-dropout 0.0 --hidden-dropout 0.0
SIMUMAX_B200 = replace(MODERN, dropout=False)


def buildable(r: Row) -> bool:
    """A Llama row (the DeepSeek rows are transcribed, not built)."""
    return r["model_name"].startswith("LLAMA3")


def simumax_case(r: Row) -> Case:
    """One measured run as the scenario its launcher describes (the module docstring)."""
    tp, pp, cp = (parse_int(r[k], 1) for k in ("tp", "pp", "cp"))
    mb, gb = parse_int(r["micro_batch"], 1), parse_int(r["global_batch"])
    model = dict(llama_model(r), vocab=padded_vocab(parse_int(r["vocab"]), tp))
    par: dict = dict(tp=tp, pp=pp, cp=cp, zero=1, overlap_grad_reduce=False, overlap_param_gather=False,
                     grad_reduce_dtype="fp32", sequence_parallel=tp > 1, **MEGATRON_LM_DDP_2025)
    if cp > 1:
        par["cp_comm"] = "a2a"
    dp = 8 // (tp * pp * cp)
    mbc = gb // (mb * dp)
    name = r["model_name"].split()[0]
    label = (f"{name} {model['layers']}L tp{tp} pp{pp}" + (f" cp{cp}" if cp > 1 else "") + f" dp{dp}"
             + f" seq {model['seq_len'] // 1024}K, {mbc} micro-batches")
    scn = make_scenario(f"simumax-{name.lower()}-tp{tp}-pp{pp}-cp{cp}-seq{model['seq_len']}-mbc{mbc}", "dgx-b200", 8,
                        model, micro_batch=mb, global_batch=gb, dtype="bf16", recompute="none", parallel=par,
                        stack=SIMUMAX_B200)
    return Case("simumax_b200", label, scn, "step_time_s", float(r["value"]), 8)


def simumax_b200(rows: list[Row]) -> list[Case]:
    """Llama 3 70B (12 layers) and 405B (4 layers) on one 8-GPU B200 node in bf16: TP 1 × PP 2 × DP 4,
    TP 2 × DP 4, TP 4 × DP 2 and TP 8 at 4,096 tokens with 4, 8 and 32 micro-batches, and TP 2 × CP 4
    or CP 8 at 32K and 128K tokens: 31 rows."""
    return [simumax_case(r) for r in rows if buildable(r) and r["metric"] == "step_time_s"]

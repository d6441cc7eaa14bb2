"""Megatron-Turing NLG 530B's system throughput (arXiv:2201.11990, sec. 2.4), as e2e cases.

Microsoft and NVIDIA timed the MT-NLG 530B model (105 layers, hidden 20,480, 128 heads, sequence
2,048) at its production batch of 1,920 sequences on 280, 350 and 420 DGX A100 servers of Selene
(2,240-3,360 GPUs): 60.1, 50.2 and 44.4 s per iteration (``data/e2e/mtnlg_530b_2201_11990.csv``,
whose header has the provenance and the checks). The plan is printed as a mapping: tensor slicing
over the 8 GPUs of a node, a 35-stage pipeline across nodes, data parallelism over the rest (DP 8,
10, 12), so the micro-batches of each pipeline fall 240 -> 160 while DP grows: a strong-scaling
triple with the deepest pipeline among the scored rows.

The stack is Megatron-DeepSpeed of 2021, the one BigScience forked for BLOOM a few months later
(``bloom`` source), so what the section does not print is taken as that source takes it:

- DeepSpeed's pipeline engine: the non-interleaved 1F1B schedule (``TrainSchedule``), each TP rank
  sending its 1/tp of the boundary activations and gathering them on receipt (partitioned
  activations and gradients: ``scatter_gather_tensors_in_pipeline``), each send and receive a
  blocking transfer of its own and the sent output gathered back before its backward
  (``pp_engine: deepspeed``);
- ZeRO stage 1 over DP (the pipeline engine accepts stage 0 or 1; without ZeRO the model's step is
  0.1% longer), reducing the fp16 gradients after the backward (``overlap_comm`` off by default);
- fp16, assumed: the precision of Megatron-LM's 2021 scripts and of BLOOM's fp16 search rows of
  early 2022 on the same engine (bf16 changes nothing in the model here); Megatron's fused softmax
  on the materialised scores, no FlashAttention, no sequence parallelism, the column-parallel
  backward AllReduce after the wgrad GEMM (``MEGATRON_LEGACY``);
- unfused weight-gradient accumulation (``gradient_accumulation_fusion: false``): the Megatron of
  Megatron-DeepSpeed in 2021 computes each weight gradient with a plain ``matmul`` in
  ``mpu/layers.py`` (microsoft/Megatron-DeepSpeed @54884b5f, Oct 2021, has no fused wgrad
  accumulation; NVIDIA's Megatron-LM gained it in Feb 2022, 83b1e42f, and the Microsoft fork's
  ``core/tensor_parallel/layers.py`` still has it commented out @f4157bea, Dec 2024), and
  DeepSpeed's engine owns the fp16 ``param.grad`` (ZeRO's
  ``zero_grad`` sets it to None each step), so autograd adopts the first micro-batch's gradient and
  adds every later one in place: 6 bytes of HBM traffic per parameter and micro-batch, about 7 ms of
  each 171 ms micro-batch on a 3-layer stage here. The megatron2021 rows of the same era and split
  carry the same setting;
- full activation checkpointing: the printed TFLOP/s are Megatron's eq. 3 with the recompute factor
  (125.7, 120.4 and 113.5 from the printed times);
- micro-batch 1 (not printed): the size of Megatron-LM's own 530B runs at the same split
  (NVIDIA/Megatron-LM ``examples/sc21/run_table_1.sh``, ``MBS=1``); the rows' sensitivity to it is
  in the page's findings, and it is not chosen by them;
- Megatron's padded vocabulary (GPT-2's 50,257 to 51,200 at TP 8), tied input and output embedding,
  learned positions.

Held out entirely: none of these rows fits anything. The other mechanisms of the 2021 engine
checked against the remaining gap (DeepSpeed's opt-in ``partition_activations`` and contiguous
checkpoints, its host synchronisations, the exchange order, the LM head checkpointed by
DeepSpeed before 0.5.4) are each bounded at under 2% in the page's findings; none is applied.
"""

from __future__ import annotations

from simulator.e2e_validation.rows import Row, parse_int, parse_precision
from simulator.e2e_validation.scenarios import (MEGATRON_DEEPSPEED_PARALLEL, MEGATRON_LEGACY, Case, gpt_model,
                                               make_scenario, padded_vocab)

SOURCE = "mtnlg"


def mtnlg_case(r: Row) -> Case:
    """One row of sec. 2.4 with the settings of the module docstring."""
    n, tp, pp = parse_int(r["num_gpus"]), parse_int(r["tp"], 1), parse_int(r["pp"], 1)
    dp = n // (tp * pp)
    mb, gb = parse_int(r["micro_batch"], 1), parse_int(r["global_batch"])
    model = gpt_model({**r, "vocab": str(padded_vocab(parse_int(r["vocab"]), tp))}, tied=True)
    scn = make_scenario(f"mtnlg-530b-{n}", "dgx-a100", n, model, micro_batch=mb, global_batch=gb,
                        dtype=parse_precision(r) or "fp16", recompute="full",
                        parallel=dict(tp=tp, pp=pp, **MEGATRON_DEEPSPEED_PARALLEL),
                        stack=MEGATRON_LEGACY)
    return Case(SOURCE, f"{r['model_name']} tp{tp} pp{pp} dp{dp} mbs{mb} {n} GPUs", scn, "step_time_s",
                float(r["value"]), n)


def mtnlg(rows: list[Row]) -> list[Case]:
    """The three rows of arXiv:2201.11990 sec. 2.4: MT-NLG 530B at a batch of 1,920 on 2,240,
    2,800 and 3,360 DGX A100 GPUs, TP 8 x PP 35 x DP 8-12, step time as printed (module docstring)."""
    return [mtnlg_case(r) for r in rows if r["metric"] == "step_time_s"]

"""NVIDIA dgxc-benchmarking's GPT-3 175B pre-training on H100 (its ``nemo_megatron`` recipe), as
e2e cases.

The recipe's ``README_175b.md`` prints measured step times of GPT-3 175B on 128 to 2,048 H100, in
BF16 and FP8, at a global batch of two sequences per GPU (weak scaling), twice: under the container
nemo:24.05 (releases v24.11.1 and v25.01) and under nemo:24.12 (v25.02 to v25.04.02)
(``data/e2e/dgxc_gpt3_175b_h100.csv``, whose header has the provenance). Both run NeMo 1.0's
``megatron_gpt_pretraining.py`` on the release's ``gpt3_175b_hydra.yaml``, so the scenario is
what that file and the launch script set:

- TP 4 with sequence parallelism, PP 8 with virtual stages (VP 12 under nemo:24.05, VP 6 under
  nemo:24.12) and ``overlap_p2p_comm``, micro-batch 1, 64 micro-batches per pipeline, no
  activation checkpointing;
- Apex's ``distributed_fused_adam`` with overlapped gradient and parameter synchronisation in bf16
  (``grad_sync_dtype: bf16``): the distributed optimizer of ``megatron_parallel`` without
  Megatron-Core DDP's bucket passes, as ``dgxc_llama_nemo24`` and the MLPerf GPT-3 rows;
- TransformerEngine's Userbuffers TP overlap with the yaml's ``ub_tp_comm_overlap_cfg``: TE's
  default method for each GEMM (ring exchange for the four AllGather-side ones, bulk for the
  column-parallel backward, pipelined GEMM-ReduceScatter for the projection and FC2 forward),
  the bulk overlaps with ``set_sm_margin: 0`` (their GEMMs on every SM) and the pipelined ones on
  24 and 20 SMs with the margin (``UB_GPT3_175B``);
- hidden and attention dropout 0.1, learned positions, the tied embedding, biases and GeLU of
  NeMo's GPT, the GPT2BPE vocabulary (50,257) padded to a multiple of 128 x TP;
- attention: nemo:24.05's launch script exports ``NVTE_FUSED_ATTN=0``, so TransformerEngine runs
  flash-attn 2 (``NEMO_LAUNCHER_2024``); nemo:24.12's ``configure.sh`` exports
  ``NVTE_FUSED_ATTN=1``, cuDNN's fused attention (the profile's default kernel);
- FP8 rows: ``fp8_hybrid`` with delayed scaling (amax history 1,024) and ``fp8_params``, the
  parameters gathered in FP8.

Scored (``SCORED``): both ends of each weak-scaling table (128 and 2,048 GPUs) under nemo:24.12,
and the 128-GPU runs under nemo:24.05, in both precisions; a row costs 6-9 CPU seconds (64
micro-batches through 48 or 96 virtual stages). The runs between are transcribed, not scored:
each table's steps lie within 2.2% (BF16) and 6% (FP8 under nemo:24.12) of its 128-GPU run's; the
FP8 table under nemo:24.05 is not monotone (5.92, 5.96, 6.44, 6.72, 6.24 s), so its 128-GPU run
stands for it.
"""

from __future__ import annotations

from simulator.e2e_validation.mlperf_sources import nemo_gpt3_scenario
from simulator.e2e_validation.rows import Row, parse_container_run, parse_int
from simulator.e2e_validation.scenarios import MODERN, NEMO_LAUNCHER_2024, Case, Stack

SOURCE = "dgxc_gpt3"

# ub_tp_comm_overlap_cfg of gpt3_175b_hydra.yaml (the same in both containers' releases) as the SMs
# each overlapped GEMM gives up: bulk overlaps set_sm_margin 0, pipelined proj_fprop / fc2_fprop
# num_sm 24 / 20 with the margin.
UB_GPT3_175B: dict[str, int] = dict(qkv_dgrad=0, qkv_wgrad=0, fc1_dgrad=0, fc1_wgrad=0, proj_fprop=24, fc2_fprop=20)

# The container's attention kernel (module docstring).
STACK_BY_CONTAINER: dict[str, Stack] = {"24.05": NEMO_LAUNCHER_2024, "24.12": MODERN}

# The rows scored, as (container, precision, GPUs): see the module docstring.
SCORED: frozenset[tuple[str, str, int]] = frozenset(
    {("24.12", dtype, n) for dtype in ("bf16", "fp8") for n in (128, 2048)}
    | {("24.05", dtype, 128) for dtype in ("bf16", "fp8")})


def dgxc_gpt3_case(r: Row) -> Case:
    """One README run as a scenario (the module docstring gives every setting and its source)."""
    container, dtype, n = parse_container_run(r)
    tp, pp, vp = (parse_int(r[k], 1) for k in ("tp", "pp", "vp"))
    scn = nemo_gpt3_scenario(r, f"dgxc-gpt3-175b-nemo{container}-{dtype}-{n}", dtype=dtype, ub_sms=UB_GPT3_175B,
                             stack=STACK_BY_CONTAINER[container])
    if dtype == "fp8":
        scn["training"]["fp8_param_gather"] = True  # the yaml's fp8_params
    label = f"{r['model_name']} {dtype.upper()} nemo:{container} tp{tp} pp{pp} vp{vp} dp{n // (tp * pp)} {n} GPUs"
    return Case(SOURCE, label, scn, "step_time_s", float(r["value"]), n)


def dgxc_gpt3(rows: list[Row]) -> list[Case]:
    """dgxc-benchmarking's measured GPT-3 175B step times on H100 under nemo:24.05 and nemo:24.12,
    BF16 and FP8 (``SCORED``: six of the 20 runs; module docstring)."""
    return [dgxc_gpt3_case(r) for r in rows if r["metric"] == "step_time_s" and parse_container_run(r) in SCORED]

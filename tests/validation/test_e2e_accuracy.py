"""End-to-end accuracy of the step-time simulator against published training runs.

The tolerances restate docs/validation-e2e.md with a few points of margin. The GEMM derate of
the dgx-a100 / dgx-h100 profiles is fitted on the single-node rows only (``is_fit_case``); the
multi-node rows are the held-out check. Tighten when the model improves, loosen only with a reason.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import statistics
from collections.abc import Iterable

import pytest

from simulator.e2e_validation import loso, scoring, sources

# Results by case, shared by the tests of this file (one xdist worker runs the whole file, and
# the all-rows test runs first): a row is simulated once, not again by its source's own test.
_SIMULATED: dict[str, scoring.Result] = {}


def _key(c: sources.Case) -> str:
    return json.dumps([c.source, c.label, c.scenario, c.metric, c.measured, c.n_gpus, c.nccl_version], sort_keys=True,
                      default=str)


def _run_cases(cases: Iterable[sources.Case], jobs: int = 1) -> list[scoring.Result]:
    cases = list(cases)
    todo = [c for c in cases if _key(c) not in _SIMULATED]
    keys = [_key(c) for c in todo]
    for k, r in zip(keys, scoring.run_cases(todo, jobs=jobs), strict=True):
        _SIMULATED[k] = r
    return [_SIMULATED[k] for k in map(_key, cases)]


def _run_case(case: sources.Case) -> scoring.Result:
    return _run_cases([case])[0]


@functools.cache
def _every_case() -> tuple[sources.Case, ...]:
    return tuple(sources.cases())


def _all_cases() -> list[sources.Case]:
    """Every row's case, built once per process (building them all takes ~0.2 s; this file asks for
    them some 60 times). The tests copy a scenario before changing it, and the simulation leaves
    its scenario as it is."""
    return list(_every_case())


def _by_source(key: str) -> list[sources.Case]:
    return [c for c in _all_cases() if c.source == key]


def test_megatron_flop_formula_reproduces_the_readme_tflops():
    """Eq. 3 of arXiv:2104.04473 with the recompute factor turns the README's 1.076 s for the
    1.2B model (1 A100, batch 16, seq 1024) into its printed 149.8 TFLOP/s, which is how we know
    the 2020 runs recomputed activations."""
    f = scoring.megatron_flops_per_step(layers=24, hidden=1920, vocab=51200, seq=1024, batch=16, recompute=True)
    assert f / 1.076 / 1e12 == pytest.approx(149.8, rel=0.005)
    # without recompute, three quarters of the GEMM work (the V/12lh term replaces V/16lh)
    g = scoring.megatron_flops_per_step(layers=24, hidden=1920, vocab=51200, seq=1024, batch=16, recompute=False)
    assert 0.74 < g / f < 0.78


@pytest.mark.parametrize("model", [
    dict(layers=32, hidden=4096, heads=32, kv_heads=8, ffn_hidden=14336, vocab=128256, seq_len=131072, mlp="swiglu"),
    dict(layers=32, hidden=4096, heads=32, kv_heads=32, ffn_hidden=11008, vocab=32000, seq_len=1048576, mlp="swiglu"),
    dict(layers=48, hidden=7168, heads=56, kv_heads=56, ffn_hidden=28672, vocab=131072, seq_len=4096, mlp="gelu"),
])
def test_megatron_model_flops_agree_with_the_simulators_own_count(model):
    """Two independent countings: Megatron-Core's num_floating_point_operations (the metric of
    NVIDIA's model TFLOP/s tables, ``scoring.megatron_model_flops``) and the simulator's
    6·N_gemm + 12·l·a·d·s per token (``schedule/flops.py``, which MFU uses). Both leave out the
    norm weights and count the full score matrix, so they agree exactly, for GQA + SwiGLU (Llama)
    and MHA + GeLU (GPT); for the GPT both are eq. 3 of arXiv:2104.04473 without recompute."""
    from simulator.config.workload import Model
    from simulator.schedule.flops import model_flops_per_token

    m = Model(**model)
    per_token = scoring.megatron_model_flops(model, batch=3) / (3 * model["seq_len"])
    assert per_token == pytest.approx(model_flops_per_token(m), rel=1e-9)
    if model["mlp"] == "gelu":
        eq3 = scoring.megatron_flops_per_step(model["layers"], model["hidden"], model["vocab"], model["seq_len"], 3,
                                              recompute=False)
        assert scoring.megatron_model_flops(model, batch=3) == pytest.approx(eq3, rel=1e-12)


def test_every_case_is_a_consistent_plan_of_a_modelled_precision():
    cs = _all_cases()
    assert 540 <= len(cs) <= 660
    for c in cs:
        p, t = c.scenario["parallel"], c.scenario["training"]
        mp = p.get("tp", 1) * p.get("pp", 1) * p.get("cp", 1) * p.get("ulysses", 1)
        # whole nodes of the profile (8 GPUs; a GB200 NVL72 tray's 4), or the first GPUs of one
        # (gpus_per_node: the one-GPU h200_eager rows)
        per_node = c.scenario.get("gpus_per_node") or (4 if c.scenario["hardware"] in ("gb200-nvl72", "gb300-nvl72")
                                                       else 8)
        assert c.n_gpus % mp == 0 and c.n_gpus == per_node * c.scenario["nodes"], c.label
        # fp8 only where the source states it (NeMo's pages and the MLPerf GPT-3 configs: every row;
        # Megatron-Bridge, torchtitan, dgxc, FlagPerf: per row)
        assert t["dtype"] in (("fp8",) if c.source in ("nemo_cp", "nemo2407", "bridge_dense", "bridge_dense_2604", "nemo2502_b200",
                                                       "mlperf_gpt3", "mlperf_gpt3_v30", "dgxc_nemotronh",
                                                       "mcore_dsv3_gb200") else
                              ("fp8", "bf16") if c.source in ("bridge_moe", "bridge_moe_ultra", "torchtitan", "dgxc", "dgxc_llama", "dgxc_llama_nemo24",
                                                                "dgxc_gpt3", "dgxc_grok1", "flagperf", "modelzoo_mixtral",
                                                                "modelzoo_qwen3")
                              else ("bf16", "fp16")), c.label
        assert t["global_batch"] % (t["micro_batch"] * (c.n_gpus // mp)) == 0, c.label


def test_error_sign_convention():
    """Positive error = simulator predicts more throughput than measured, for both kinds of metric."""
    step = sources.Case("x", "x", {}, "step_time_s", measured=2.0, n_gpus=8)
    assert scoring.speed_error(step, 1.0) == pytest.approx(1.0)
    tput = sources.Case("x", "x", {}, "tokens_per_s_per_gpu", measured=100.0, n_gpus=8)
    assert scoring.speed_error(tput, 150.0) == pytest.approx(0.5)


def test_fit_subset_is_the_single_node_rows_and_stacks_are_mapped():
    """The GEMM derate was fitted on 8-GPU rows only; every multi-node row is held out. fp8 rows
    fit only dgx-b200, whose single-node bf16 rows come from one source (SimuMax's 31 runs), and
    only with per-tensor scaling (three rows: nemo_cp's 32K, bridge_dense's 8B FP8-CS,
    nemo2502_b200's 8B; bridge_dense's other three rows, its 8B MXFP8 value among them, and
    nemo2502_b200's 70B row are held out)."""
    cs = _all_cases()
    fit = [c for c in cs if sources.is_fit_case(c)]
    assert len(fit) == 50 and all(c.n_gpus == 8 for c in fit)
    assert len(cs) - len(fit) == 102 + (len(_by_source("bridge_dense")) - 1) + (len(_by_source("nemo2502_b200")) - 1) + sum(
        len(_by_source(k)) for k in ("dgxc", "bridge_dense_2604", "automodel_moe", "bridge_moe", "bridge_moe_ultra", "bridge_moe_overlap",
                                     "modelzoo_qwen3",
                                     "modelzoo_mixtral", "mcore_dsv3_gb200", "mpt_small",
                                     "megatron2021_zero3",
                                     "megatron2021_ptdp", "megatron2021_weak", "torchtitan",
                                     "megatron2022", "vtrain_multi", "vtrain_single",
                                     "megatron_ci", "llama3", "usp", "megascale", "mtnlg", "mlperf_gpt3", "mlperf_gpt3_v30",
                                     "dgxc_llama", "dgxc_llama_nemo24", "dgxc_gpt3", "dgxc_grok1", "dgxc_nemotronh", "internlm",
                                     "nanotron_playbook",
                                     "fms_fsdp", "bridge_card", "bridge_card_hybrid", "h200_eager", "cudnn_llama1b"))
    assert not any(sources.is_fit_case(c) for c in cs if c.scenario["training"].get("fp8_recipe") == "mxfp8")
    assert not any(sources.is_fit_case(c) for c in _by_source("mpt_seq") + _by_source("mpt_small"))
    assert {c.scenario["hardware"] for c in fit if c.scenario["training"]["dtype"] == "fp8"} == {"dgx-b200"}
    for prof in sources.FP8_FIT_PROFILES:
        assert {c.source for c in cs if c.scenario["hardware"] == prof and c.n_gpus == 8
                and c.scenario["training"]["dtype"] != "fp8"} == {"simumax_b200"}
    h100_fp8_single = [c for c in cs if c.scenario["hardware"] == "dgx-h100" and c.n_gpus == 8
                       and c.scenario["training"]["dtype"] == "fp8"]
    assert len(h100_fp8_single) == 9 and not any(sources.is_fit_case(c) for c in h100_fp8_single)
    eager = {c.source for c in cs if not c.scenario["training"]["fused_kernels"]}
    # Megatron-LM of Sep 2020 had no fused kernels yet: PyTorch ops bar apex's LayerNorm
    # NeMo AutoModel's dense Llama 3 70B config compiles its layers (enable_compile): not eager
    # InternLM of 2023: PyTorch 1.13 ops around flash-attn 1 and apex's RMSNorm
    # nanotron v0.5: PyTorch ops around flash-attn 2 and its Triton RMSNorm
    # IBM's fms-fsdp of 2024: the FMS LLaMA's PyTorch ops around SDPA, eager in the table scored
    # this project's GPT-2 on one H200 (benchmarks/measure_gpt_step.py): plain torch.nn, no compile
    # cuDNN frontend's Llama-3.2-1B benchmark: transformers' LlamaForCausalLM, eager
    assert eager == {"megatron2020", "mpt", "mpt_seq", "mpt_small", "automodel_moe", "torchtitan", "internlm",
                     "nanotron_playbook", "fms_fsdp", "h200_eager", "cudnn_llama1b"}


def test_each_source_runs_the_attention_kernel_of_its_stack():
    """Megatron 2020-2022 / BLOOM / vTrain's Megatron-DeepSpeed: scores materialised; MPT 2023: FlashAttention-1 kernels (llm-foundry
    v0.3.0's ``attn_impl: triton`` and flash-attn 1.0.9);
    Megatron-Core / NeMo / FlagPerf: TransformerEngine's choice on the GPU (auto: cuDNN /
    FA3-class on H100, FA2 on A100), which the GPU profile resolves; NeMo 24.03 and 24.07 through
    NeMo-Framework-Launcher, whose global environment disables cuDNN attention
    (``NVTE_FUSED_ATTN: 0``): TransformerEngine's flash-attn 2 path; dgxc-benchmarking's NeMo 24.09 and
    24.12 runs call NeMo's pretraining script directly with ``NVTE_FUSED_ATTN=1`` and ``NVTE_FLASH_ATTN=0``
    (its configure.sh): auto; its GPT-3 175B recipe exports ``NVTE_FUSED_ATTN=0`` under nemo:24.05 (the
    launch.sh of v24.11.1): flash-attn 2, and ``NVTE_FUSED_ATTN=1`` under nemo:24.12: auto; NeMo 25.02
    and 25.04 on B200: auto;
    MLPerf Training v3.0 / v3.1 GPT-3 (NVIDIA's NeMo submissions): flash-attn 2 through TransformerEngine
    1.x, which prefers it to cuDNN's fused attention when both are built; MT-NLG 530B (Megatron-DeepSpeed,
    2021): materialised scores; this project's GPT-2 on one H200: PyTorch 2.11's SDPA, which the profiler
    shows running cuDNN's fused attention (flash3 class); cuDNN frontend's Llama-3.2-1B benchmark: SDPA
    pinned to cuDNN (flash3) or FlashAttention-2 (flash2), row by row."""
    from simulator.config.hardware import load_profile

    kernel: dict[str, set[str]] = {}
    for c in _all_cases():
        kernel.setdefault(c.source, set()).add(c.scenario["training"]["attention"])
    assert kernel == {"megatron2020": {"unfused"}, "bloom": {"unfused"}, "mpt": {"flash1"}, "mpt_seq": {"flash1"}, "mpt_small": {"flash1"},
                      "mcore2024": {"auto"}, "automodel": {"auto"}, "flagperf": {"auto"}, "nemo_cp": {"auto", "flash2"},
                      "nemo2407": {"flash2"}, "dgxc": {"auto"}, "automodel_moe": {"auto", "flash2"}, "bridge_moe": {"auto"}, "bridge_moe_ultra": {"auto"},
                      "bridge_moe_overlap": {"auto"},
                      "modelzoo_qwen3": {"auto"}, "modelzoo_mixtral": {"auto"}, "mcore_dsv3_gb200": {"auto"},
                      "megatron2021_zero3": {"unfused"}, "megatron2021_ptdp": {"unfused"},
                      "megatron2021_weak": {"unfused"}, "torchtitan": {"flash2"}, "megatron2022": {"unfused"},
                      "vtrain_multi": {"unfused"}, "megatron_ci": {"auto"}, "llama3": {"auto"}, "usp": {"auto"},
                      "megascale": {"unfused"}, "dgxc_llama": {"auto"}, "dgxc_llama_nemo24": {"auto"},
                      "dgxc_gpt3": {"flash2", "auto"}, "dgxc_grok1": {"flash2"}, "dgxc_nemotronh": {"flash2"},
                      "internlm": {"flash1"},
                      "bridge_dense": {"auto"}, "bridge_dense_2604": {"auto"}, "nemo2502_b200": {"auto"}, "nanotron_playbook": {"flash2"},
                      "fms_fsdp": {"flash2"}, "bridge_card": {"auto"}, "bridge_card_hybrid": {"auto"}, "mtnlg": {"unfused"},
                      "mlperf_gpt3": {"flash2"}, "mlperf_gpt3_v30": {"flash2"}, "h200_eager": {"flash3"},
                      "simumax_b200": {"auto"}, "cudnn_llama1b": {"flash3", "flash2"}}
    assert load_profile("dgx-h100").gpu.resolve_attention("auto") == "flash3"
    assert load_profile("dgx-a100").gpu.resolve_attention("auto") == "flash2"
    by_gpu = {(c.scenario["hardware"], c.scenario["training"]["attention"]) for c in _all_cases() if c.source == "nemo_cp"}
    assert by_gpu == {("dgx-h100", "flash2"), ("dgx-b200", "auto")}


# Before the tests of single sources: it simulates every row on all cores, and those tests
# then score the step times it left in scoring's cache instead of simulating them one by one.
@pytest.mark.slow
def test_overall_median_error():
    """Every row (569 when this was written: about 7 minutes of simulation with the
    leave-one-source-out refits on 2 cores). Doc: all rows 5.8% in sample and held out; BLOOM (all
    held out, on jean-zay-a100) 7.0%; Megatron-Core 2024 5.5%, signed +0.4% (tp_overlap te_default,
    overlap_param_gather, fp32 gradient reduction; the micro-batch is unstated: the largest that
    fits); NeMo 24.07 (FP8 H100, all held out) 10.3%, signed -10.3%, the level of NVIDIA's tuned
    H100 stacks (the doc's findings)."""
    jobs = min(4, os.cpu_count() or 1)
    results = list(_run_cases(_all_cases(), jobs=jobs))
    assert scoring.median_abs_error(results) <= 0.10
    held = [r for r in results if not sources.is_fit_case(r.case)]
    assert scoring.median_abs_error(held) <= 0.12
    by = {k: [r for r in results if r.case.source == k] for k in ("mcore2024", "bloom", "nemo2407")}
    assert scoring.median_abs_error(by["bloom"]) <= 0.25
    assert scoring.median_abs_error(by["nemo2407"]) <= 0.11  # 10.3% with TransformerEngine's FP8 casts (6.4% before)
    assert abs(statistics.median(r.error for r in by["mcore2024"])) <= 0.235
    _check_leave_one_source_out(results, jobs)


def _check_leave_one_source_out(results, jobs):
    """The page's headline: every row scored with the derates refitted without its source.
    Upper bounds on the error (doc, when this was written: all 5.8% median; MPT 5.4%, MPT sweeps
    5.6%, MPT 125M-760M 2.8%, FlagPerf 5.4%, NeMo 24.07 10.3%, NeMo CP 8.9%; regimes: small models
    4.6%, ZeRO-3 / FSDP 5.2%, long context 4.7%, multi-node >= 512 GPUs 5.4%, signed medians +0.7%,
    +1.9%, +4.2%, -0.6%). Only rows of sources with fitting rows change: a source without any keeps
    its in-sample prediction exactly."""
    held = loso.leave_one_source_out(results, loso.parallel_simulator(jobs))
    errors = [h.result.error for h in held]
    assert loso.stats(errors).median <= 0.075
    per_source = {k: loso.stats(h.result.error for h in held if h.result.case.source == k)
                  for k in ("mpt", "mpt_seq", "mpt_small", "flagperf", "nemo2407", "nemo_cp")}
    # nemo2407: 10.3% (signed -10.3%) with TransformerEngine's FP8 casts priced, 6.4% before them (the
    # output layer in BF16 as Megatron-Core runs it), 4.6% while the output layer was priced in FP8
    # mpt_seq: 6.0% since each kernel pays the GPU's measured gap, not the host's launch (5.6% before)
    bounds = {"mpt": 0.07, "mpt_seq": 0.065, "mpt_small": 0.05, "flagperf": 0.06, "nemo2407": 0.11, "nemo_cp": 0.12}
    for k, b in bounds.items():
        assert per_source[k].median <= b, (k, per_source[k])
    for name, member in loso.REGIMES.items():
        st = loso.stats(h.result.error for h in held if member(h.result.case))
        bound = {"small": 0.05, "ZeRO-3": 0.06, "long": 0.07, "multi-node": 0.13}.get(name.split()[0])
        if bound is not None:
            assert st.median <= bound and abs(st.signed_median) <= bound, (name, st)
    for h, r in zip(held, results):
        if not any(sources.is_fit_case(c.case) for c in results if c.case.source == r.case.source):
            assert h.result is r
    # the step-time interval table of `clustersim run` holds these rows (python -m simulator.e2e_validation --out docs)
    from simulator.e2e_validation.intervals import regime_rows
    from simulator.report.step_interval_table import ROWS

    got = regime_rows(held)
    assert [r[:3] + r[4:] for r in got] == [r[:3] + r[4:] for r in ROWS]
    assert [r[3] for r in got] == pytest.approx([r[3] for r in ROWS], abs=1e-4)


# The two MoE sources, after the all-rows test so that they score the step times it cached.
@pytest.mark.slow
def test_automodel_moe_errors():
    """Doc: DeepSeek-V3 1,024 GPUs +11.7% (four pipeline passes), 256 GPUs -0.7%, Kimi-K2 +0.1%
    (its two pipeline passes), Qwen3-30B -21.2%, GPT-OSS-20B +7.7%, GPT-OSS-120B +9.7%; median
    |error| 8.7%, signed +3.9% (the issue's target is 12% / 8%; 6.8% / +1.9% before the H100
    derate was refitted from 0.689 to 0.712, 9.7% / +3.9% before the dispatch's backward waited
    for the expert wgrad). Qwen3-30B, the one row far pessimistic, moved from
    -17.9% to -20.0% when memory-bound kernels were priced at their measured bandwidth (its 48
    layers of routing, permutation and norms at 8 GPUs) and to -22.4% with the wgrad wait, hence -0.23.
    Nemotron-3 Nano (hybrid Mamba2-Transformer MoE, the same one-node FSDP2 + EP 8 plan with full
    recompute as Qwen3-30B) -27.0%, pessimistic as Qwen3-30B is; with it the median is 9.7%, signed
    -0.1%. DeepEP moves one row per token and destination rank, not one per routed expert (the
    balanced gate sends a Qwen3 token to one rank): Qwen3-30B -21.3% -> -3.4%, Nano -27.0% ->
    -18.7%; no dropout kernels (AutoModel's models, the HF configs' attention_dropout 0) -> -2.1% and
    -17.8%; GPT-OSS's expert biases added per local expert for FC1 and FC2 (grouped_gemm has no
    bias epilogue): +5.6% / +6.5%. DeepSeek-V3 +20.6% / +7.8%, Kimi-K2 +9.7%: median 7.8%, signed
    +6.5%. FSDP2 synced once per optimizer step under PP (parallel.fsdp_grad_sync optim_step, what
    AutoModel's MoEFSDPSyncMixin does): DeepSeek-V3 1,024 GPUs +26.4% (its per-micro-batch gathers and
    copies gone, less NIC contention with DeepEP), 256 GPUs +7.6%, Kimi-K2 +11.4%: median 7.6%, signed
    +6.2%. The 1,024-GPU row's gap is not FSDP traffic: hence 0.28. Nemotron-3 Super (LatentMoE, EP 64
    on 64 GPUs) -18.3%, as pessimistic as Nano: median 9.5%, signed +5.9%. Nano's FSDP2 settings from
    its config (reshard_after_forward false, enable_fsdp_optimizations: gathered once, reduce-scattered
    in the last micro-batch) -16.4%; Super's gradient sync on the last micro-batch only (get_sync_ctx,
    fsdp_grad_sync no_sync) -17.6%: median 9.5%, signed +5.9%. Nemotron-3 Ultra (128 GPUs, EP 64, two
    MTP depths through one layer, the fused linear cross-entropy) +15.9%, optimistic where Nano and
    Super are pessimistic: median 11.4%, signed +6.2%. The pipelined rows on their configs' virtual
    stages (layers_per_stage 4 for the 1,024-GPU DeepSeek-V3 run: VP 4, not the printed 8) split as
    AutoModel splits them (the extra layers on the first stages): DeepSeek-V3 +26.6% -> +21.5% /
    +7.7% -> +7.0%, Kimi-K2 +11.5% -> +9.9% (the eight rows before Ultra: median 9.6% -> 8.4%, signed
    +6.0%); hence 0.24.
    The model states as AutoModel keeps them (bf16 parameters, gradients and Adam moments, no fp32
    master; no clipping; the MoE parallelizer's fp32 ReduceScatter), measured before the virtual
    stages above: Ultra +16.0% -> +14.6%, DeepSeek-V3 +26.6% -> +23.7% / +7.7% -> +6.0%, Kimi-K2
    +11.5% -> +10.5%: median 11.5% -> 10.5%, signed +6.5% -> +6.0%.
    DeepEP's host wait for the received counts on every forward dispatch (ComputeOp.host_sync),
    measured on the eight rows before Ultra: Kimi-K2 +11.5% -> +11.1%, the others within 0.1 point
    (the dispatch's own host cost is what it exposes; the GPU work after it is long).
    Qwen3's query and key norms (model.qk_norm, its q_norm / k_norm): Qwen3-30B -2.2% -> -4.6%.
    RoPE priced (TE's fused kernel, on with TE in AutoModel: training.rope_kernel fused): Qwen3-30B
    -4.6% -> -5.7%, a kernel the run does execute on a row already pessimistic. The host costs of
    real layer code (costs/host.py: 38 us a forward kernel, 29.9 a backward one, where 11 and 6 were
    charged before): Qwen3-30B -6.5% -> -9.0%, Nano -17.0% -> -18.0%, the others unchanged; hence 0.10.
    GPT-OSS's sliding window on alternate layers (model.sliding_window, FlexAttention's block mask):
    20B +5.0% -> +12.2%, 120B +5.7% -> +11.9%; its sinks as AutoModel applies them, FlexAttention's
    output rescaled in eager fp32 (training.attention_sink_kernel rescale): +9.4%, +9.5%. The signed
    median is the 20B row's, +9.4% (+5.3% before): hence 0.10."""
    results = list(_run_cases(_by_source("automodel_moe"), jobs=2))
    errors = [r.error for r in results]
    by_preset = {r.case.scenario["model"]["preset"]: r.error for r in results}
    nano = [e for p, e in by_preset.items() if p.startswith(("nemotron-3-nano", "nemotron-3-super"))]
    rest = [r.error for r in results if not r.case.scenario["model"]["preset"].startswith("nemotron")]
    assert all(-0.1 <= e <= 0.24 for e in rest), errors
    assert abs(by_preset["qwen3-30b-a3b"]) <= 0.10, errors
    assert len(nano) == 2 and all(-0.22 <= e <= -0.12 for e in nano), nano
    assert 0.10 <= by_preset["nemotron-3-ultra-550b-a55b"] <= 0.22, errors
    assert scoring.median_abs_error(results) <= 0.12
    assert abs(statistics.median(errors)) <= 0.10
    assert 0.05 <= by_preset["gpt-oss-20b"] <= 0.14 and 0.05 <= by_preset["gpt-oss-120b"] <= 0.14, errors


@pytest.mark.slow
def test_megatron_bridge_moe_errors():
    """Every row but DeepSeek-V3's and Nemotron 3 Super's optimistic (the finding on the page). The
    first seven rows' history: Qwen3-30B on 16 H100 +13.1%,
    Qwen3-235B on 256 H100 (FP8-CS, 32 virtual stages, A2A overlap) +3.6%, GPT-OSS-120B on 64 H100
    +9.5%, Qwen3-30B on 8 B200 +2.2%, Qwen3-235B on 256 B200 +17.3%, GPT-OSS-120B on 64 B200 +20.6%,
    DeepSeek-V3 on 256 B200 (MXFP8, layout "Et*4|(t*4|)*14tmL", A2A overlap) -10.0% with its MTP layer
    (-2.4% without: the MTP layer and its second LM head make the last stage the busiest);
    median 10.0% (11.3% without DeepSeek-V3; +20.0% before the GPT-OSS expert-bias loop and recompute
    modules, the FP8 row padding and current scaling's four kernels per quantised tensor). Bounds, so
    a change that moves them further off fails. With DeepEP's one row per destination rank the
    Qwen3-30B rows move to +16.1% (16 H100, DeepEP) and +10.3% (8 B200, HybridEP): median 10.3%.
    Qwen3's query and key norms (model.qk_norm): Qwen3-30B +15.2% / +9.0%, Qwen3-235B on 256 B200
    +16.5%: median 9.5%. MXFP8's GEMMs at the block-scaled kernel's rate (costs/compute.py
    BLOCK_SCALED_GEMM_TIME): Qwen3-30B on 8 B200 +8.3% -> +6.2%, Qwen3-235B on 256 B200 +16.2% ->
    +13.9%, DeepSeek-V3 -9.0% -> -10.1%, the other rows unchanged: median 9.0% -> 10.1%. Kernels
    slowed only while communication runs beside them, with the derates refitted on it (dgx-h100
    0.711 -> 0.698, dgx-b200 0.524 -> 0.479): +13.5%, +4.0%, +7.9%, +2.6%, +9.5%, +14.8%, -13.4%;
    median 9.5%. The performance scripts' TE cross-entropy (cross_entropy: fused, overrides.py at
    21d102f5e), in place of Megatron's vocab-parallel loss: +16.7%, +5.2%, +18.0%, +5.7%, +13.1%,
    +16.5%, -9.9%; median 9.3% -> 13.1%. GPT-OSS's unfused YaRN RoPE, the router's random-logits and
    aux-loss kernels, HybridEP's blocking dispatch: +15.6%, +4.9%, +14.3%, +4.9%, +12.5%, +13.8%,
    -10.0%; median 12.5%. A GEMM tile's prologue and epilogue in bf16 time, twice the k-steps in fp8
    (costs/gemm_shape.py k_overhead): +14.5%, +4.8%, +14.3% (BF16), +3.4%, +11.0%, +13.8% (BF16),
    -10.4%; median 11.0%. The gap is pinned: the four eager rows without graphed routers stay
    10-17% optimistic (the page's findings: about 1.2-2.4 ms per layer and micro-batch that no
    priced kernel accounts for); a change that closes it has to move them. The host costs of real
    layer code (costs/host.py: 38 us a forward kernel, 29.9 a backward one, where 11 and 6 were charged
    before) moved them: -2.5%, +4.5%, +11.9%, +2.4%, +7.8%, +13.8%, -10.4%; median 7.8%. Most of the
    Qwen3-30B FP8-CS row's gap was the host's (its layers issue a kernel or two per local expert); the
    GPT-OSS rows stay 12-14% optimistic. dgx-b200's derate fitted on BF16 B200 runs too (SimuMax's;
    0.480 -> 0.544) moves the B200 rows by +4..+8 points: +6.8%, +12.1%, +22.0% (GPT-OSS BF16), -5.3%;
    median 6.8%. The output layer in BF16 in the FP8 rows (Megatron-Core's output_layer is outside
    TE's fp8_autocast; the page's findings on Grok-1): -3.7%, +2.5%, +11.9%, +3.9%, +6.2%, +22.0%,
    -17.6% (DeepSeek-V3's last stage computes the logits twice, main and MTP heads, now at the BF16
    rate); median 6.2%. NCCL's All-to-All rounds across nodes run as one batch per node, the batches
    side by side, with the proxy's 7 us for each remote peer after the first (costs/nccl_p2p.py), where
    a network hop per remote peer in order had priced every dispatch and combine of Qwen3-235B's EP 32
    over 4 nodes: -4.5%, +9.6%, +11.9%, +3.2%, +5.8%, +22.0%, -18.0%; median 9.6%. Each kernel paying
    the GPU's measured gap (1.2 us) where it paid the host's 4 us launch, the routed experts' GEMMs
    priced one after another 2.8 us cheaper each (TE's four streams still unmodelled): +1.3%, +11.7%,
    +16.1%, +7.2%, +10.3%, +24.8%, -17.5%; median 11.7%. The H100 derate refitted once MPT's
    FlashAttention-1 ran at FA1's own H100 rate (0.693 -> 0.720): +2.0%, +12.3%, +18.7%, +7.2%, +10.3%,
    +24.8%, -17.5%; median 12.3%, 0.3 points past the 12% target for a source of more than 5 rows.
    The kernels TransformerEngine launches from a C++ loop inside one Python call (the grouped GEMM
    over the local experts, split_quantize over their rows, a current-scaling quantizer's four
    kernels: ComputeOp.host_calls) paying a launch each where they paid a Python call each: +21.0%,
    +12.3%, +21.2%, +10.0%, +15.8%, +24.8%, -17.5% (most of the Qwen3-30B FP8-CS row's agreement was
    that overcharge); the Nemotron 3 rows added (Nano on 8 B200 +24.5%, on 16 H100 with its whole
    MoE layers recomputed +12.0%, Super on 64 B200 +0.8%) and the recipes' partial CUDA graphs
    replayed as graphs (training.cuda_graph_scope: under half a point on any row); median 16.6%.
    Every row but DeepSeek-V3's and Nemotron 3 Super's is 10-25% optimistic: pinned as an open miss
    of Megatron-Core's MoE layers. The six GB200 NVL72 rows of the same page (the 256-GPU jobs in the
    Slurm segments of 16 trays the scripts ask for, HybridEP over the rack's NVLink): DeepSeek-V3
    -11.8%, GPT-OSS-120B +25.1%, Qwen3-30B +20.6%, Qwen3-235B -5.6%, Nemotron 3 Nano +30.2%, Super
    +33.3% (-60.8% and -58.9% for the 256-GPU rows packed 18 trays to a rack; -13.8% and -8.7% with
    HybridEP split at the tray); 16 rows, median 19.0%. The one-rack rows, whose exchanges are NVLink
    only, are the most optimistic. GPT-OSS's sliding window on alternate layers (model.sliding_window),
    the Blackwell CTA cost of cuDNN's attention (4.8 / 3.6 tiles) and GPT-OSS's clamped GLU as
    Megatron-Core's bias-activation fusion runs it (model.glu_clamp, eager clamps and concatenation):
    GPT-OSS H100 +21.2% -> +16.9%, B200 +24.8% -> +20.2%, GB200 +25.1% -> +18.8%, the 4K Blackwell
    rows 0.2-1.7 points slower; median 18.9% -> 17.4%."""
    results = list(_run_cases(_by_source("bridge_moe"), jobs=2))
    errors = [r.error for r in results]
    assert all(-0.20 <= e <= 0.36 for e in errors), errors
    assert scoring.median_abs_error(results) <= 0.21
    gap = {r.case.label.split(" tp")[0]: r.error for r in results}
    assert 0.15 <= gap["Qwen3_30B_a3B H100-SXM FP8-CS"] <= 0.25 and 0.10 <= gap["Qwen3_235B_a22B B200 MXFP8"] <= 0.20, gap
    assert 0.15 <= gap["GPT OSS 120B H100-SXM BF16"] <= 0.25 and 0.18 <= gap["GPT OSS 120B B200 BF16"] <= 0.27, gap
    assert 0.07 <= gap["Nemotron_3_Nano H100-SXM FP8-CS"] <= 0.17 and abs(gap["Nemotron_3_Super B200 MXFP8"]) <= 0.05, gap
    assert -0.17 <= gap["DeepSeekV3 GB200 MXFP8"] <= -0.07 and -0.10 <= gap["Qwen3_235B_a22B GB200 MXFP8"] <= 0.0, gap
    assert 0.15 <= gap["Qwen3_30B_a3B GB200 MXFP8"] <= 0.25 and 0.28 <= gap["Nemotron_3_Super GB200 MXFP8"] <= 0.38, gap


@pytest.mark.slow
def test_bridge_moe_blackwell_ultra_rows():
    """The same recipes on DGX B300 and GB300 NVL72 (dgx-b300, gb300-nvl72: B200's and GB200's
    tensor rates, Blackwell Ultra's memory and NICs, and cuDNN's attention at the GB300-over-GB200
    rates measured in one container, forward x 1.196, backward x 1.075; nothing fitted on them),
    held out: Qwen3-30B +4.6% / +6.8% (B300 / GB300, micro-batch 8: at 4 on B200 and GB200 +10.3%
    and +20.3%), Qwen3-235B -9.8% / -13.0%, GPT-OSS +23.5% / +1.1%, DeepSeek-V3 -5.1% / -14.4%,
    Nemotron 3 Nano +19.5% / +18.2%, Super +22.6% / +7.8%: median 11.4%, signed +5.7% (12.3% before
    the attention rates). The large models' GB300 rows are slow in the model as the tuned GB200 rows
    are (the uncredited power on top); the small ones at one or two sequences a micro-batch
    optimistic as on B200. With Blackwell's CTA cost of cuDNN's attention (4.8 / 3.6 tiles, read
    off the GB200 and GB300 sweeps), GPT-OSS's sliding window and its clamped GLU: Qwen3-30B +3.1% /
    +5.3%, Qwen3-235B -10.7% / -13.8%, GPT-OSS +20.2% / -2.0%, DeepSeek-V3 -5.8% / -15.3%: median
    12.3%, signed +4.2%, above the 12% target for a source of more than 5 rows, the median between
    the two 235B rows."""
    results = list(_run_cases(_by_source("bridge_moe_ultra"), jobs=2))
    gap = {r.case.label.split(" tp")[0]: r.error for r in results}
    assert len(gap) == 12 and all(-0.20 <= e <= 0.27 for e in gap.values()), gap
    assert abs(gap["Qwen3_30B_a3B B300 MXFP8"]) <= 0.06 and abs(gap["Qwen3_30B_a3B GB300 MXFP8"]) <= 0.08, gap
    assert -0.17 <= gap["Qwen3_235B_a22B GB300 MXFP8"] <= -0.10 and -0.19 <= gap["DeepSeekV3 GB300 MXFP8"] <= -0.11, gap
    assert 0.17 <= gap["GPT OSS 120B B300 BF16"] <= 0.27 and abs(gap["GPT OSS 120B GB300 BF16"]) <= 0.05, gap
    assert 0.09 <= statistics.median(abs(e) for e in gap.values()) <= 0.13
    assert 0.0 <= statistics.median(gap.values()) <= 0.08


@pytest.mark.slow
def test_bridge_ep_overlap_pair():
    """Megatron-Bridge's A/B of the combined-1F1B A2A overlap on 16 H100 (BF16, HybridEP on 32 SMs), held
    out: doc -6.9% without the overlap (the dispatch's backward waits for the expert wgrad, as the run's
    profile shows: 0.11% of its communication under compute; -4.4% with HybridEP's one row per
    destination rank), -0.1% with it. The simulated overlap
    saves more than the measured 15.06% (20.3%): the simulated compute is slower than the profile's
    (17.6 s against 14.6 s of kernels) and hides more of the exchanges (see the page's findings).
    Qwen3's query and key norms (model.qk_norm): -4.3% / -0.1% -> -5.2% / -1.4%. Kernels slowed only
    while communication runs beside them, the H100 derate refitted on it: -6.8% / -3.5%. The
    recipe's TE cross-entropy (cross_entropy: fused): -6.4% / -3.3% -> -4.1% / -0.4%. The router's
    random-logits and aux-loss kernels and HybridEP's blocking dispatch: -4.9% / -1.4%. The grouped GEMM
    and split_quantize launches from C++ (ComputeOp.host_calls) and the card's router and preprocessing
    CUDA graphs (training.cuda_graph_scope): -1.6% / +3.2%."""
    off, on = _run_cases(_by_source("bridge_moe_overlap"), jobs=2)
    assert -0.06 <= off.error <= 0.02 and abs(on.error) <= 0.05, (off.error, on.error)
    assert on.step_time_s < off.step_time_s


@pytest.mark.slow
def test_vtrain_megatron_deepspeed_errors():
    """vTrain's Megatron-DeepSpeed ground truth, held out (step time, positive = predicted too
    fast). Multi-node (108 plans, 64-512 A100): median 4.5%, signed -0.3% (3.7% / +2.1% before DeepSpeed's
    pipeline engine, pp_engine deepspeed, and its unfused gradient accumulation were modelled; 4.0% /
    +0.9% with the engine only); the 51 rows whose TP fills the node median 2.6% (GPT-39.1B TP 8 median
    -1.9%, GPT-175B -1.4% to -6.6%), GPT-39.1B at TP 2 median +39.5% (+44.8% before 2- and 4-GPU rings
    were priced at their CTAs' accesses, costs/ring_work.py; not the network: 8 x 200 Gb/s moves it by
    1-2 points). Single node (288
    rows, 8 A100, hidden 1,024/2,048): median 17.9%, signed +17.9% (22.5% with fused accumulation),
    growing with the micro-batches per replica (2: -0.7%, 16: +78.9%; by TP 1/2/4/8: +4.4/+10.2/+48.2/+84.7%): a per-layer,
    per-micro-batch time of 2.7-5.0 ms at micro-batch 1-2 that the model does not have. Those rows
    are no end-to-end steps but a closed form over 32 per-layer times and vTrain's own AllReduce
    table (test_megatron2022_vtrain_sources.py; the page's findings), so they stay unscored.
    Bounds at what the model reaches today."""
    multi = _run_cases(_by_source("vtrain_multi"), jobs=min(4, os.cpu_count() or 1))
    assert scoring.median_abs_error(multi) <= 0.05
    tp8 = [r for r in multi if r.case.scenario["parallel"]["tp"] == 8]
    assert len(tp8) == 51 and scoring.median_abs_error(tp8) <= 0.03
    from simulator.e2e_validation.vtrain_sources import vtrain_single

    single = _run_cases(vtrain_single(sources.read_rows(sources.DATA_DIR / "vtrain_single_node.csv"), gpus=(8,)),
                        jobs=min(4, os.cpu_count() or 1))
    assert scoring.median_abs_error(single) <= 0.25
    by_micro: dict[int, list[float]] = {}
    for r in single:
        t, p = r.case.scenario["training"], r.case.scenario["parallel"]
        micro = t["global_batch"] // (t["micro_batch"] * r.case.n_gpus // (p["tp"] * p["pp"]))
        by_micro.setdefault(micro, []).append(r.error)
    assert abs(statistics.median(by_micro[2])) <= 0.04


@pytest.mark.slow
def test_vtrain_single_node_2_and_4_gpus():
    """vTrain's 2- and 4-GPU single-node rows, on the first GPUs of one A100 node (gpus_per_node;
    96 and 192 rows, held out): median 9.7% / 12.3%, signed +1.4% on 2 GPUs and +8.9% on 4, per TP as on
    8 GPUs (TP 1: +1.2% / +4.3%, TP 2: +10.8% / +10.2%, TP 4 on 4 GPUs +49.9%; on 8: +4.4%, +10.2%, +48.2%),
    growing with the micro-batches per replica as on 8 GPUs (2: -3.5% / -2.3%, 16: +61.7% / +75.5%):
    the same missing per-layer, per-micro-batch cost, not the node's size. Bounds at what the model
    reaches today."""
    from simulator.e2e_validation.vtrain_sources import vtrain_single

    rows = sources.read_rows(sources.DATA_DIR / "vtrain_single_node.csv")
    for gpus, bound in ((2, 0.12), (4, 0.15)):
        results = _run_cases(vtrain_single(rows, gpus=(gpus,)), jobs=min(4, os.cpu_count() or 1))
        assert len(results) == {2: 96, 4: 192}[gpus]
        assert scoring.median_abs_error(results) <= bound, gpus
        two = [r.error for r in results if r.case.scenario["training"]["global_batch"]
               == 2 * r.case.scenario["training"]["micro_batch"] * gpus
               // (r.case.scenario["parallel"]["tp"] * r.case.scenario["parallel"]["pp"])]
        assert abs(statistics.median(two)) <= 0.04, gpus

def test_megatron_2020_median_error():
    """Five fast runs (a few seconds together), one of them (8 GPUs) in the fitting subset.
    Data parallelism as the README of the same commit describes it: local DDP (one flattened
    AllReduce after the backward) for the 1.2B and 2.5B models, PyTorch DDP (25 MB buckets during
    the backward) at larger model-parallel sizes; the column-parallel backward AllReduce follows
    the wgrad GEMM (no async TP AllReduce before Sep 2021); the optimizer is that commit's
    FP16_Optimizer. Doc: median +17.6%, every row within +14% .. +20%: the source is uniformly
    optimistic (before: +28% on one node, -2.5% at 1,024 GPUs, with every bucket exposed), what a
    per-GPU cost would do, not a communication one.
    Upper bounds on the error: a model that came closer must still pass."""
    import copy

    cs = _by_source("megatron2020")
    for c in cs:
        par = c.scenario["parallel"]
        assert par["async_tensor_model_parallel_allreduce"] is False
        assert c.scenario["training"]["optimizer"] == "fp16_optimizer"
        assert par["overlap_grad_reduce"] is (par["tp"] > 2)
        assert par["ddp_bucket_elements"] == (sources.TORCH_DDP_BUCKET_FP16 if par["tp"] > 2 else sources.ONE_FLAT_BUFFER)
    rs = list(_run_cases(cs))
    med = statistics.median(r.error for r in rs)
    assert abs(med) <= 0.26
    assert all(abs(r.error) < 0.30 for r in rs)
    errs = [r.error for r in rs]
    assert max(errs) - min(errs) <= 0.10
    # the blocking TP AllReduce costs the one-node 8B row time: async would be faster
    one = min(cs, key=lambda c: c.n_gpus)
    asynced = copy.deepcopy(one.scenario)
    asynced["parallel"]["async_tensor_model_parallel_allreduce"] = True
    r_async = _run_case(sources.Case(one.source, one.label, asynced, one.metric, one.measured, one.n_gpus))
    r_sync = next(r for c, r in zip(cs, rs) if c is one)
    assert r_async.error - r_sync.error >= 0.03


def test_gradient_reduction_follows_each_stacks_defaults():
    """Megatron keeps fp32 main grads for bf16 and reduces them in fp32
    (``accumulate_allreduce_grads_in_fp32``); it overlaps the reduction only with
    ``--overlap-grad-reduce`` (stated by the Megatron-Core 2024 README, NeMo's default), and
    DeepSpeed ZeRO-1 (BLOOM) only with ``overlap_comm``."""
    by = {c.source: c.scenario["parallel"] for c in _all_cases()}
    assert by["mcore2024"]["grad_reduce_dtype"] == "fp32" and by["mcore2024"].get("overlap_grad_reduce", True)
    assert by["flagperf"]["grad_reduce_dtype"] == "fp32" and by["flagperf"]["overlap_grad_reduce"] is False
    assert by["bloom"]["overlap_grad_reduce"] is False
    assert all(c.scenario["parallel"]["overlap_grad_reduce"] is (c.scenario["parallel"]["tp"] > 2)
               for c in _all_cases() if c.source == "megatron2020")  # local DDP up to tp 2


def test_megatron_deepspeed_rows_run_deepspeeds_pipeline_engine():
    """Megatron-DeepSpeed trains through DeepSpeed's PipelineEngine (GPTModelPipe, even at pp 1
    since 2021-07), with its serial exchanges and the output gathered back before each backward:
    BLOOM, MT-NLG and vTrain; every other source runs Megatron's (or its own) schedule."""
    ds = {c.source for c in _all_cases() if c.scenario["parallel"].get("pp_engine") == "deepspeed"}
    assert ds == {"bloom", "mtnlg", "vtrain_multi"}


def test_megatron_deepspeed_fp16_rows_accumulate_weight_gradients_unfused():
    """Megatron-DeepSpeed's linear layers compute the weight gradient with a plain matmul (no
    ``gradient_accumulation_fusion``: DeepSpeed's engine owns the fp16 ``param.grad``, there is no
    ``main_grad``), so autograd adds each micro-batch's gradient in place: the fp16 rows of BLOOM,
    MT-NLG and vTrain run ``gradient_accumulation_fusion: false``. BLOOM's bf16 final run
    accumulates in BF16_Optimizer's fp32 buffers instead (``zero1_impl: deepspeed-bf16``)."""
    ds = [c for c in _all_cases() if c.scenario["parallel"].get("pp_engine") == "deepspeed"]
    assert len(ds) == 8 + 3 + 108
    for c in ds:
        bf16 = c.scenario["training"]["dtype"] == "bf16"
        assert c.scenario["parallel"].get("gradient_accumulation_fusion", True) is bf16, c.label
        assert (c.scenario["parallel"].get("zero1_impl") == "deepspeed-bf16") is bf16, c.label


def test_megatron_core_pipelined_rows_run_the_interleaved_schedule():
    """The Megatron-Core 2024 README overlaps pipeline-parallel communication, which Megatron-LM
    of that commit does only in the interleaved schedule (``--overlap-p2p-communication`` is
    switched off without virtual stages), so its pp > 1 rows ran interleaved 1F1B. Virtual stages
    are not printed: the fewest that split a stage's layers evenly, from the table's layers and
    PP: GPT-70B 84 / 2 = 42 layers per stage -> 2 virtual stages of 21; GPT-119B 92 / 4 = 23, a
    prime -> 23 of one layer. The pp = 1 rows have no pipeline schedule to interleave."""
    want = {"GPT-70B": 2, "GPT-119B": 23}
    cs = _by_source("mcore2024")
    piped = {c.label.split()[0]: c.scenario["parallel"] for c in cs if c.scenario["parallel"]["pp"] > 1}
    assert set(piped) == set(want)
    for name, par in piped.items():
        assert par.get("pp_schedule") == "interleaved" and par.get("vp") == want[name], (name, par)
        assert par.get("overlap_p2p_comm") is True, (name, par)  # what the README says it overlapped
    assert all("vp" not in c.scenario["parallel"] for c in cs if c.scenario["parallel"]["pp"] == 1)


def test_megatron_core_rows_run_the_largest_micro_batch_that_fits():
    """The 2024 table's batch is 4 x dp x pp, so each pipeline's batch per stage is 4 sequences:
    micro-batch 4, 2 or 1, the micro-batch count a multiple of pp as the interleaved schedule
    requires. The rule of the same author's 2021 weak-scaling scripts (the largest micro-batch
    memory allows) gives 4 (one micro-batch per step) on every pp 1 row and on GPT-70B, and 2 on
    GPT-119B, where micro-batch 4 cannot fit: with 4 micro-batches and 23 one-layer virtual stages
    per rank the interleaved warm-up runs all 92 forward chunks before the first backward, so the
    first stage holds 4 x 23 layers of activations, each 34·s·b·h/tp bytes with sequence parallel
    and flash attention (Korthikanti et al. 2022, eq. 2 without the 5as/h score term), 65.6 GB,
    beside 2 + 4 bytes per parameter of bf16 weights and fp32 main gradients of 119B / 32 on
    that rank: 88 GB against 80."""
    from simulator.config.scenario import build_scenario
    from simulator.schedule.memory import memory_per_gpu

    cs = {c.label.split()[0]: c for c in _by_source("mcore2024")}
    mb = {k: c.scenario["training"]["micro_batch"] for k, c in cs.items()}
    assert mb == {"GPT-1.7B": 4, "GPT-7.1B": 4, "GPT-16B": 4, "GPT-32B": 4, "GPT-70B": 4, "GPT-119B": 2}
    for c in cs.values():
        par, t = c.scenario["parallel"], c.scenario["training"]
        dp = c.n_gpus // (par["tp"] * par.get("pp", 1))
        assert (t["global_batch"] // (dp * t["micro_batch"])) % par.get("pp", 1) == 0, c.label
    big = cs["GPT-119B"].scenario
    s, h, tp, layers = big["model"]["seq_len"], big["model"]["hidden"], 8, 92 // 4
    params = 119e9 / (tp * 4)
    closed_form = 4 * layers * 34 * s * 4 * h / tp + 6 * params
    assert closed_form > 80e9
    at4 = {**big, "training": {**big["training"], "micro_batch": 4}}
    assert not memory_per_gpu(build_scenario(at4, source="test")).fits
    assert memory_per_gpu(build_scenario(big, source="test")).fits


def test_automodel_llama3_70b_runs_its_configs_checkpointing():
    """The AutoModel Llama 3 70B row's config (custom_llama3_1_70b_pretrain_benchmark_8nodes.yaml
    at 2013a4dd6) sets activation_checkpointing and enable_compile: the attention and MLP of every
    block re-run in backward, and it had to: without it, the inputs its backward needs of each GEMM
    alone (bf16: 2h for QKV, o_proj and the gate/up pair, 2f for down, 4f for the SwiGLU's gate and
    up outputs, h = 8,192, f = 28,672) take 221 KB per token per layer, 72.5 GB for 4,096 tokens per
    rank (8,192 over CP 2) and 80 layers, beside 12 bytes per parameter of bf16 weights and
    gradients and fp32 moments over 32 FSDP ranks (26 GB): above the H100's 80 GB."""
    from simulator.config.scenario import build_scenario
    from simulator.schedule.memory import memory_per_gpu

    (c,) = _by_source("automodel")
    t = c.scenario["training"]
    assert t["recompute"] == "full" and t["fused_kernels"] is True
    h, f, tokens, layers = 8192, 28672, 8192 // 2, 80
    saved = (2 * h * 3 + 2 * f + 4 * f) * tokens * layers
    assert saved > 72e9 and saved + 12 * 70e9 / 32 > 80e9
    none = {**c.scenario, "training": {**t, "recompute": "none"}}
    assert not memory_per_gpu(build_scenario(none, source="test")).fits
    assert memory_per_gpu(build_scenario(c.scenario, source="test")).fits


def test_mpt_small_models_on_a100():
    """MPT-1B and -3B on 8 A100-80GB (FSDP, no recompute, PyTorch eager layers): fitting-subset
    rows; doc: +4.3% and +1.7%."""
    rs = [r for r in _run_cases([c for c in _by_source("mpt")
                                         if "A100" in c.label and c.label.split()[0] in ("MPT-1b", "MPT-3b")])]
    assert len(rs) == 2
    for r in rs:
        assert abs(r.error) <= 0.12, (r.case.label, r.error)


def test_mpt_held_out_multi_node_h100():
    """The three multi-node MPT H100 rows were not fitted. Doc: -12.1%, +6.9%, -14.8%."""
    rs = list(_run_cases([c for c in _by_source("mpt") if not sources.is_fit_case(c)]))
    assert len(rs) == 3
    assert all(abs(r.error) <= 0.20 for r in rs), [(r.case.label, r.error) for r in rs]


def test_h100_fit_rows_are_centred_and_flash1_prices_mpt_attention():
    """The five H100 single-node rows (4 MPT with FlashAttention-1 kernels, 1 FlagPerf with TE)
    are the dgx-h100 fitting subset: their median signed error is ~0. Running MPT-7B's attention
    as flash3 instead of flash1 speeds it up by less than its attention share of the FLOPs,
    s/(6h) = 8.3%, times the flash3/flash1 forward efficiency ratio."""
    from simulator.config.hardware import load_profile

    fit = [c for c in _all_cases() if sources.is_fit_case(c) and c.scenario["hardware"] == "dgx-h100"]
    assert len(fit) == 5
    rs = list(_run_cases(fit))
    assert abs(statistics.median(r.error for r in rs)) <= 0.03
    mpt7 = next(c for c in fit if c.label.startswith("MPT-7b"))
    fa3 = sources.Case(mpt7.source, mpt7.label, {**mpt7.scenario, "training": {**mpt7.scenario["training"],
                                                                              "attention": "flash3"}},
                       mpt7.metric, mpt7.measured, mpt7.n_gpus)
    speedup = _run_case(fa3).predicted / _run_case(mpt7).predicted - 1
    eff = load_profile("dgx-h100").gpu.attention_efficiency
    assert 0.0 < speedup < 2048 / (6 * 4096) * (eff["flash3"].fwd / eff["flash1"].fwd)


def test_megatron_core_rows_run_te_default_tp_overlap():
    """The Megatron-Core 2024 README runs --tp-comm-overlap, i.e. TE's per-GEMM default methods;
    no other source states TE comm overlap but dgxc-benchmarking's Llama 3.1 recipes (70B and 405B:
    ``MegatronCommOverlapCallback(tp_comm_overlap=True)``; the 70B yaml of its NeMo 1.0 releases:
    ``ub_tp_comm_overlap: true``), NeMo 2.2's 70B performance script on B200
    (``userbuffers_fp8_b200_h8192_tp2_mbs1_seqlen8192``) and Megatron-Bridge v0.2.0's (70B and 405B:
    ``CommOverlapConfig(tp_comm_overlap=True)`` with userbuffers configurations), NVIDIA's MLPerf v3.0 / v3.1
    GPT-3 submissions (``conf/tp_overlap/h100tp4pp8mbs1.yaml``), Megatron-MoE-ModelZoo's BF16 Mixtral 8x22B
    script (``sbatch_benchmarking.sh``: ``--tp-comm-overlap`` for BF16 since b09773a8), and the TP > 1 rows of
    NeMo 24.07 and of the dgxc examples assume it (NeMo's default for those models); dgxc-benchmarking's GPT-3 175B yaml sets
    ``ub_tp_comm_overlap: true`` with TE's per-GEMM methods. On the tp2 and tp4 rows te_default predicts at least
    the throughput of the uniform pipelined mode (which also chunks the AllGathers and runs every
    chunk GEMM on SMs − 16). With --overlap-param-gather modelled too, the doc had tp2 -2.3% and
    tp4 -10.8%; with kernels slowed only while communication runs beside them (and the H100
    derate refitted on it) +8.6% and +1.8%."""
    import copy

    cs = _all_cases()
    te = {c.source for c in cs if c.scenario["parallel"].get("tp_overlap") == "te_default"}
    assert te == {"mcore2024", "nemo2407", "dgxc", "dgxc_llama", "dgxc_llama_nemo24", "dgxc_gpt3", "dgxc_grok1",
                  "bridge_dense", "bridge_dense_2604", "nemo2502_b200", "mlperf_gpt3", "mlperf_gpt3_v30",
                  "modelzoo_mixtral"}
    assert all(c.scenario["parallel"]["tp"] > 1
               for c in _by_source("nemo2407") + _by_source("dgxc") + _by_source("dgxc_llama")
               + _by_source("dgxc_llama_nemo24")
               if c.scenario["parallel"].get("tp_overlap") == "te_default")
    assert all(c.scenario["parallel"].get("tp_overlap") == "te_default"
               for c in _by_source("mcore2024") if c.scenario["parallel"]["tp"] > 1)
    rows = [c for c in _by_source("mcore2024") if c.scenario["parallel"]["tp"] in (2, 4)]
    assert len(rows) == 2
    # tp4 (48-way DP over 24 nodes): -22.8% with the deployed InfiniBand constants
    # (simulator/costs/deployed.py: 3 us more per inter-node hop and Simple at 0.95 of NCCL's rate
    # across nodes slow its DP AllReduce; -20.4% with the earlier 7 us, Simple x 1).
    bounds = {2: 0.10, 4: 0.24}  # |error|: upper bounds, a closer prediction passes
    for c in rows:
        pipelined = copy.deepcopy(c.scenario)
        pipelined["parallel"]["tp_overlap"] = "pipelined"
        r_te = _run_case(c)
        r_pl = _run_case(dataclasses.replace(c, scenario=pipelined))
        assert abs(r_te.error) <= bounds[c.scenario["parallel"]["tp"]], (c.label, r_te.error)
        assert r_te.predicted >= r_pl.predicted, c.label


def test_megatron_core_rows_run_te1_userbuffers_without_sm_margin():
    """Megatron-Core r0.8.0 (the README plots' label) passes ``ub_cfgs = {}`` to TE's
    ``initialize_ub`` without --tp-comm-overlap-cfg, and TE 1.x registers every communicator with
    ``set_sm_margin = 0``: the pipeline and bulk overlap GEMMs run on all 132 SMs, sharing them
    with the communication kernel, where TE >= 2.0 (the project's default, the dgxc recipes of NeMo
    25.09) launches them on 116. On the tp2 row, whose TP GEMMs beside a bulk or pipelined
    collective are most of its compute, the step can gain at most what 16 SMs of 116 give,
    16/116 = 13.8%, and gains something (465.9 measured; the doc predicts 506.1, +8.6%)."""
    import copy

    cs = _by_source("mcore2024")
    assert all(c.scenario["parallel"].get("tp_overlap_sm_margin") is False for c in cs)
    assert all(c.scenario["parallel"].get("tp_overlap_sm_margin", True) for c in _by_source("dgxc"))
    (row,) = [c for c in cs if c.scenario["parallel"]["tp"] == 2]
    margin = copy.deepcopy(row.scenario)
    margin["parallel"]["tp_overlap_sm_margin"] = True
    r_te1, r_te2 = _run_case(row), _run_case(dataclasses.replace(row, scenario=margin))
    assert 0.0 < r_te1.predicted / r_te2.predicted - 1 < 16 / 116
    assert abs(r_te1.error) <= 0.10


def test_unknown_source_key_is_a_usage_error(capsys):
    from simulator.e2e_validation.__main__ import main

    with pytest.raises(SystemExit) as exc:
        main(["--source", "nope"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "nope" in err and "megatron2020" in err and "Traceback" not in err


def _nemo_cp(hardware: str) -> list[sources.Case]:
    return [c for c in _by_source("nemo_cp") if c.scenario["hardware"] == hardware]


def test_nemo_long_context_rows_build_the_printed_plans():
    """Every whole-node "with CP" row of NeMo's long-sequence page: 8 Llama2-7B rows on H100
    (8K-1M tokens, cp 1-32) and 6 Llama3-8B rows on B200 (32K-1M, cp 2-16), fp8, micro-batch 1,
    the global batch keeping 4M tokens per step, TP x PP x CP x DP = the GPUs."""
    h100, b200 = _nemo_cp("dgx-h100"), _nemo_cp("dgx-b200")
    assert len(h100) == 8 and len(b200) == 6
    assert [c.scenario["parallel"]["cp"] for c in h100] == [1, 1, 2, 2, 4, 8, 16, 32]
    assert [c.scenario["parallel"]["cp"] for c in b200] == [2, 4, 4, 4, 8, 16]
    for c in h100 + b200:
        p, t, m = c.scenario["parallel"], c.scenario["training"], c.scenario["model"]
        assert t["dtype"] == "fp8" and t["micro_batch"] == 1 and p["cp_comm"] == "p2p"
        assert t["global_batch"] * m["seq_len"] == 4 * 2 ** 20, c.label
        dp = c.n_gpus // (p["tp"] * p["pp"] * p["cp"])
        assert dp * p["tp"] * p["pp"] * p["cp"] == c.n_gpus and f"dp{dp}" in c.label
        assert p.get("sequence_parallel", False) == (p["tp"] > 1)


@pytest.mark.slow
def test_b200_context_parallel_rows_held_out():
    """The B200 GEMM derate (x 0.539) is fitted on the single-node B200 rows, this source's 32K
    cp2 row among them (+5.7% in sample: SimuMax's 31 BF16 runs set the fit; it was the median of
    the three FP8 rows, ~0, while they alone set x 0.479); the
    five multi-node rows (64K-1M tokens, cp 4-16 over 2-32 nodes, attention 64-97% of the model
    FLOPs) are held out. Doc: +8.8% to +12.4% (+5.0% to +13.2% at x 0.479; +3.0% to +4.7% while a kernel beside a ring
    transfer was slowed for its whole length: the rule hid up to 10% of the attention time). The
    measured throughput is flat from 64K to 1M (1600 → 1608 model TFLOP/s); the prediction rises
    8.3% over it, as the attention share grows: B200's FlashAttention-3 rates are assumed
    (dgx-b200.yaml), not measured, and are the lead. Bounds: every held-out row within 14%, the
    64K-to-1M ratio within 9 points (TE's memory passes per ring step, ∝ the steps' attention /
    (s/c), cost the 64K row, 16K tokens per rank, 1.2% and the 1M row, 64K per rank, 0.5%)."""
    rs = list(_run_cases(_nemo_cp("dgx-b200"), jobs=min(2, os.cpu_count() or 1)))
    fit = [r for r in rs if sources.is_fit_case(r.case)]
    held = [r for r in rs if not sources.is_fit_case(r.case)]
    assert len(fit) == 1 and abs(fit[0].error) <= 0.07
    assert len(held) == 5 and all(abs(r.error) <= 0.14 for r in held), [(r.case.label, r.error) for r in held]
    first, last = held[0], held[-1]
    assert last.predicted / first.predicted == pytest.approx(last.case.measured / first.case.measured, abs=0.09)


def test_h100_long_context_rows_run_flash_attention_2():
    """NeMo 24.03.01 on H100 (TE 1.4) through NeMo-Framework-Launcher 24.03.01, whose
    ``launcher_scripts/conf/config.yaml`` exports ``NVTE_FUSED_ATTN: 0`` ("Disable cudnn FA until
    we've tested it more"): TE runs flash-attn 2. The 8K and 16K rows have no CP, so attention
    (25% and 39% of the model FLOPs) is all that separates the kernel generations there: with
    FlashAttention-2 they land within 9%, pessimistic (-8.0%, -4.7% with TransformerEngine's FP8
    casts priced; -4.3%, -1.4% before them, with the output layer in BF16, as Megatron-Core runs it;
    -2.8%, -0.8% while it was priced in FP8); with the cuDNN / FA3-class figure the profile gives
    ``auto`` they would be optimistic, 13-21 points above (+5.1%, +15.9%; +9.9% at 8K before the
    casts; doc before: +14.6%, +21.5%). The sign under each kernel is the finding, so both are
    asserted."""
    import copy

    rows = [c for c in _nemo_cp("dgx-h100") if c.scenario["parallel"]["cp"] == 1]
    assert [c.scenario["model"]["seq_len"] for c in rows] == [8192, 16384]
    for c in rows:
        assert c.scenario["training"]["attention"] == "flash2"
        fa3 = copy.deepcopy(c.scenario)
        fa3["training"]["attention"] = "flash3"
        r2 = _run_case(c)
        r3 = _run_case(sources.Case(c.source, c.label, fa3, c.metric, c.measured, c.n_gpus))
        assert -0.09 <= r2.error <= 0.0, (c.label, r2.error)
        assert r3.error >= 0.03 and r3.error - r2.error >= 0.12, (c.label, r2.error, r3.error)


def test_nemo_2407_tp4_rows_carry_the_launchers_tuned_userbuffers():
    """NeMo-Framework-Launcher 24.07's ub_cfg_h100_h12288_tp4_mbs1_seqlen2048 (GPT-3 175B) and
    ub_cfg_h100_h8192_tp4_mbs1_seqlen{4096,8192} (Llama 2 / 3 70B): the bulk overlaps on every SM
    (set_sm_margin 0), proj_fprop num_sm 24, fc2_fprop 20 (175B) or 16 (70B); TP-1 rows have none."""
    bulk = dict(qkv_dgrad=0, qkv_wgrad=0, fc1_dgrad=0, fc1_wgrad=0)
    want = {"GPT3-175B": dict(bulk, proj_fprop=24, fc2_fprop=20), "LLAMA2-70B": dict(bulk, proj_fprop=24, fc2_fprop=16),
            "LLAMA3-70B": dict(bulk, proj_fprop=24, fc2_fprop=16)}
    cs = _by_source("nemo2407")
    for c in cs:
        p = c.scenario["parallel"]
        assert p.get("tp_overlap_gemm_sms") == want.get(c.label.split()[0]), c.label
        assert (p["tp"] == 4) == ("tp_overlap_gemm_sms" in p), c.label
    assert sum("tp_overlap_gemm_sms" in c.scenario["parallel"] for c in cs) == 4


def test_nemo_2407_rows_build_the_printed_plans():
    """Eight pre-training rows with shapes; vp > 1 runs the interleaved schedule; GPT-3's GPT-2
    BPE is padded to a multiple of 128·TP as Megatron does (50257 → 50304 at TP 1, 50688 at 4)."""
    cs = _by_source("nemo2407")
    assert len(cs) == 8
    assert sources.padded_vocab(50257, 1) == 50304 and sources.padded_vocab(50257, 4) == 50688
    assert sources.padded_vocab(32000, 4) == 32256 and sources.padded_vocab(32000, 1) == 32000
    for c in cs:
        p, t, m = c.scenario["parallel"], c.scenario["training"], c.scenario["model"]
        assert t["dtype"] == "fp8" and c.scenario["hardware"] == "dgx-h100" and not sources.is_fit_case(c)
        assert (p.get("pp_schedule") == "interleaved") == (p.get("vp", 1) > 1), c.label
        assert m["layers"] % (p["pp"] * p.get("vp", 1)) == 0, c.label
        if c.label.startswith("GPT3"):
            assert m["vocab"] == sources.padded_vocab(50257, p["tp"]) and m["position_embedding"] == "learned"


def test_nemo_2407_single_stage_and_interleaved_rows():
    """Four quick held-out rows (FP8 H100; nothing of NeMo 24.07 is fitted): GPT3-5B dp64,
    Llama2-7B dp8, Llama2-13B pp4 vp10 (interleaved 1F1B, one layer per virtual stage) and
    Llama3-8B cp2, all with flash-attn 2 (the 24.07 launcher's NVTE_FUSED_ATTN=0). Now -4.2%,
    -9.9%, -12.4%, -10.7% with TransformerEngine's FP8 casts priced (+0.8%, -5.3%, -9.0%, -7.4%
    before them, with the output layer in BF16, as Megatron-Core runs it; +3.1%, -4.4%, -6.8%,
    -4.8% while it was priced in FP8; earlier +6.2%, -0.3%, -3.5%, -3.3%, and +7.2%, +4.3%, -3.9%,
    +11.2% when they were priced with cuDNN's attention)."""
    names = ("GPT3-5B", "LLAMA2-7B", "LLAMA2-13B", "LLAMA3-8B")
    rs = list(_run_cases([c for c in _by_source("nemo2407") if c.label.split()[0] in names]))
    assert len(rs) == 4
    assert all(abs(r.error) <= 0.13 for r in rs), [(r.case.label, r.error) for r in rs]


@pytest.mark.parametrize("name, per_sample", [("Nemotron-4 15B", 3.85e14), ("Nemotron-4 340B", 8.62124e15)])
def test_nemotron4_shapes_reproduce_nvidias_model_flops_per_sample(name, per_sample):
    """The Nemotron-4 shapes come from the papers, not the CSV; the dgxc READMEs' MFU examples
    state the model FLOPs per 4096-token sample, which the shapes and Megatron-Core's count
    reproduce (an independent check of both)."""
    model = dict(sources.NEMOTRON4[name], seq_len=4096, mlp="squared_relu")
    assert scoring.megatron_model_flops(model, batch=1) == pytest.approx(per_sample, rel=1e-5)


# Slow: six large plans (Nemotron-4 340B at tp 8 pp 8 vp 12), about 20 s of simulation (CPU) where the
# all-rows test has not left their step times (`-m "not slow"`).
@pytest.mark.slow
def test_dgxc_nemotron_rows_held_out():
    """Nemotron-4 15B (TP2) and 340B (TP8 PP8 VP12) on H100: the two BF16 worked examples and
    v25.05's table (the same plans in BF16 and FP8), all held out. NVIDIA's tuned BF16 runs are
    faster than the dgx-h100 GEMM derate fitted on the single-node rows allows (pessimistic, like
    the other NVIDIA runs). Doc: -12.9%, -15.6% (examples), -11.4%, -8.6%, -9.8%, -9.9% (table);
    asserted as an upper bound on the error."""
    rs = list(_run_cases(_by_source("dgxc")))
    assert len(rs) == 6 and not any(sources.is_fit_case(r.case) for r in rs)
    assert all(abs(r.error) <= 0.20 for r in rs), [(r.case.label, r.error) for r in rs]


@pytest.mark.slow
def test_dgxc_same_plan_both_precisions_share_the_gap():
    """dgxc-benchmarking v25.05 measured each H100 plan in BF16 and FP8 (same container, plan and
    cluster): 15B 2.746 / 1.988 s, 340B 4.606 / 3.107 s. With TransformerEngine's FP8 casts priced
    (schedule/fp8.py) both precisions read pessimistic by about the same: 15B -11.4% / -8.6%, 340B
    -9.8% / -9.9% (the FP8 runs -5.1% and -7.6% before the casts, when the gap looked BF16's): what
    the model misses on NVIDIA's stack is a level both precisions share (the page's findings on
    TransformerEngine's FP8 casts and on the H100 derate). Bounds: every run within -13%..-5%, the
    FP8 run within 3.5 points of its BF16 twin."""
    table = [c for c in _by_source("dgxc") if c.label.endswith("(v25.05 table)")]
    rs = {r.case.label: r for r in _run_cases(table)}
    assert len(rs) == 4
    for model in ("Nemotron-4 15B", "Nemotron-4 340B"):
        bf16, fp8 = (next(r for k, r in rs.items() if k.startswith(model) and f" {p} " in k) for p in ("BF16", "FP8"))
        assert -0.13 <= bf16.error <= -0.05 and -0.13 <= fp8.error <= -0.05, (bf16.error, fp8.error)
        assert abs(bf16.error - fp8.error) <= 0.035, (bf16.error, fp8.error)


def _mpt_seq(model: str, gpu: str) -> list[sources.Case]:
    rows = [c for c in _by_source("mpt_seq") if c.label.startswith(f"{model} {gpu}")]
    return sorted(rows, key=lambda c: c.scenario["model"]["seq_len"])


@pytest.mark.parametrize("gpu", ["H100-80GB", "A100-80GB"])
def test_mpt_sequence_sweep_error_does_not_grow_with_length(gpu):
    """MPT-1B on 8 GPUs from 512 to 65536 tokens (held out; nothing fitted on it): the attention
    core goes from 4% to 90% of the FLOPs. With the FlashAttention-1 kernels the stack ran, the
    error stays within ±15% at every length (doc: +2.4%..+12.9% on H100, +2.4%..+11.0% on A100);
    priced as FlashAttention-2 the same rows drift to +40-50% at 32K-64K, which is how the
    kernel generation shows in the data."""
    import copy

    rows = _mpt_seq("MPT-1b", gpu)
    assert [c.scenario["model"]["seq_len"] for c in rows] == [512, 1024, 4096, 8192, 16384, 32768, 65536]
    rs = list(_run_cases(rows))
    assert all(abs(r.error) <= 0.15 for r in rs), [(r.case.label, round(r.error, 3)) for r in rs]
    longest = copy.deepcopy(rows[-1].scenario)
    longest["training"]["attention"] = "flash2"
    r2 = _run_case(sources.Case("x", "x", longest, rows[-1].metric, rows[-1].measured, 8))
    assert r2.error >= 0.30


@pytest.mark.slow
def test_mpt_sequence_sweeps_held_out():
    """All 55 sweep rows (MPT 1B-30B, 512-65536 tokens, H100 and A100). Doc: median |error|
    4.9%. The worst rows are activation-checkpointed runs with large micro-batches at 1K-8K
    tokens (-12% to -19%), where the measured runs reach a higher hardware utilisation with
    recompute than without, and MPT-30B at 8K (+21% H100, +30.2% A100, +25% before the A100 GEMM
    derate was refitted from 0.842 to 0.862, +31.4% at 0.876), which measured 30% slower than at
    4K with only a fifth of its FLOPs in attention."""
    rs = list(_run_cases(_by_source("mpt_seq"), jobs=min(2, os.cpu_count() or 1)))
    assert len(rs) == 55
    assert scoring.median_abs_error(rs) <= 0.09
    assert all(abs(r.error) <= 0.32 for r in rs), [(r.case.label, round(r.error, 3)) for r in rs]


def test_megatron2021_zero3_rows():
    """arXiv:2104.04473 Table 2, ZeRO-3 without model parallelism: one micro-batch per GPU per
    step in every row (the global batch is fixed while the GPUs double), DeepSpeed's stage 3 as
    released in 2021 (zero3_impl: deepspeed-2021), held out. The measured eq. 3 TFLOP/s nearly
    halve per doubling of the GPUs from the second row on (88 -> 44, 98 -> 48): the step time stays
    where it was while the compute per GPU halves. Doc: still optimistic on every row, +15% to
    +34% (+14% to +27% while each kernel paid the host's 4 us launch on the GPU; +8% to +29% while every gradient bucket was AllReduced in front of the next fetch,
    where 0.3.13 overlaps a bucket under reduce_bucket_size with the next weight's backward;
    +14% to +30% before the tied embedding was held by the root module, a registered
    external parameter of Megatron-LM-v1.1.5-ZeRO3's GPT2Model); today's coordinator
    (zero3_impl: deepspeed) is +167% and +177% on the two largest rows,
    which the per-parameter gathers, their per-rank host loops and copies, the synchronisation at
    every fetch, the gradients AllReduced per bucket (contiguous_gradients off) and the
    persistent parameters copied per rank after the step bring to +25% and +34%. Upper bounds: a
    model that came closer must still pass."""
    import copy

    cs = _by_source("megatron2021_zero3")
    assert len(cs) == 6 and not any(sources.is_fit_case(c) for c in cs)
    for c in cs:
        t, p = c.scenario["training"], c.scenario["parallel"]
        assert t["micro_batch"] * c.n_gpus == t["global_batch"] and p["zero3_impl"] == "deepspeed-2021"
    rs = list(_run_cases(cs))
    # <= 0.31: GPT-530B on 2,240 GPUs +28.9% -> +30.6% (1,120: +23.1% -> +25.5%) since InfiniBand's deployed
    # ring LL128 is NCCL's rate (x 0.9 before: no fitted InfiniBand system gains a point from it,
    # deployed_fit.parsimonious)
    # <= 0.28: GPT-530B on 2,240 GPUs +29.5% -> +26.4% and GPT-175B on 768 +20.6% -> +12.3% since the held
    # embedding counts against max_live_parameters (GPT-530B prefetches nothing)
    # <= 0.29: GPT-530B on 2,240 GPUs +27.5% -> +28.8% (1,120: +23.8% -> +24.1%) since _allgather_params
    # copies a persistent parameter only from the ranks whose partition holds some of it
    # (schedule/zero.py persistent_copies: 1.76 million copies a step at 2,240 GPUs, not 1.89)
    # <= 0.32: GPT-530B on 2,240 GPUs +28.8% -> +30.7% since a bucket under reduce_bucket_size is flushed by
    # the next weight's hook and AllReduced beside that weight's backward GEMMs (stage3.py 0.3.13: the
    # reduction stream never waits for the default one; schedule/zero.py _bucket_grads)
    # <= 0.35: GPT-530B on 2,240 GPUs +27.4% -> +34.0% (GPT-175B on 1,536 +16.4% -> +25.1%) since each
    # kernel pays the GPU's measured gap (1.2 us), not the host's 4 us launch: the N copies per gather
    # finish inside the host's loop that launches them, which is now the path (findings)
    assert all(-0.1 < r.error <= 0.35 for r in rs), [(r.case.label, round(r.error, 3)) for r in rs]
    # <= 0.14: GPT-175B on 768 GPUs +12.3% -> +13.1% since a one-gradient bucket is flattened to a view,
    # not copied (torch/csrc/utils/tensor_flatten.h)
    # <= 0.21: GPT-175B on 768 GPUs +13.1% -> +19.5% since its projection's and QKV's buckets (1.5e8 and
    # 4.5e8 elements, under the 5e8 limit) are AllReduced beside the next weight's backward GEMMs
    # <= 0.26: GPT-175B on 1,536 GPUs +16.4% -> +25.1% and on 768 +19.6% -> +24.0% with the GPU's gap
    assert max(r.error for r in rs if "175B" in r.case.label) <= 0.26
    for r in sorted(rs, key=lambda r: r.case.n_gpus)[-2:]:  # 1,536 and 2,240 GPUs
        today = copy.deepcopy(r.case.scenario)
        today["parallel"]["zero3_impl"] = "deepspeed"
        r_today = _run_case(sources.Case(r.case.source, r.case.label, today, r.case.metric,
                                                r.case.measured, r.case.n_gpus))
        assert r_today.error > r.error + 0.8


def test_smallest_interleave_splits_a_stage_evenly():
    """The fewest virtual stages (> 1) that divide a stage's layers; one layer is not interleaved."""
    assert [sources.smallest_interleave(n) for n in (1, 2, 3, 6, 8, 10, 15, 24, 49)] == [1, 2, 3, 2, 2, 2, 3, 2, 7]


def test_megatron2021_ptdp_rows_build_the_printed_plans():
    """arXiv:2104.04473 Tables 1 and 2 (PTD-P): the printed TP and PP, dp = GPUs / (tp x pp),
    the global batch as printed, scatter/gather (sec 5.1); held out entirely. Table 2's rows:
    micro-batch 1 (printed), Megatron-LM 2021's local DDP after the backward, and the virtual
    stages of the paper's launch scripts for the same model at the same split (examples/sc21/ has
    no script for Table 2): GPT-175B at TP 8 x PP 12 runs --num-layers-per-virtual-pipeline-stage 2
    in run_figure_12.sh and run_figure_18.sh (vp 4, where the fewest even split of its 8 layers per
    stage is 2). Table 1's rows as the paper's launch scripts ran them
    (NVIDIA/Megatron-LM examples/sc21/run_table_1.sh @de7dc40f): micro-batch 16/16/16/8/4/2/2/1,
    --num-layers-per-virtual-pipeline-stage 5/5/3 for 76B/145B/310B only (vp 3/2/2; the 39B row
    runs plain 1F1B), --DDP-impl torch (overlapped with the backward) up to 18B. Table 1's weak
    scaling keeps the eq. 3 TFLOP/s of the table: its aggregate PFLOP/s column is the per-GPU
    figure times the GPUs (to the table's rounding)."""
    ptdp, weak = _by_source("megatron2021_ptdp"), _by_source("megatron2021_weak")
    # left out for run time: the pipelines of more than MAX_PIPELINE_PASSES passes (pp x vp x micro-batches),
    # GPT-530B on 560 and 1,120 GPUs (105 virtual stages; 1,120 and 560 micro-batches) and GPT-1T (64
    # stages, not interleaved; 512); kept: GPT-530B on 2,240 and 2,520 GPUs (280 micro-batches), GPT-175B
    # on 384 GPUs (48 virtual stages, 384 micro-batches)
    assert sorted(c.n_gpus for c in ptdp) == [384, 768, 1536, 2240]
    assert [c.n_gpus for c in weak] == [32, 64, 128, 256, 512, 1024, 1536, 1920, 2520]
    assert max(35 * 3 * 280, 12 * 4 * 384) <= sources.MAX_PIPELINE_PASSES < 64 * 1 * 512
    for c in ptdp + weak:
        p, t = c.scenario["parallel"], c.scenario["training"]
        assert not sources.is_fit_case(c) and c.metric == "megatron_hfu_tflops"
        assert t["recompute"] == "full" and t["attention"] == "unfused"
        assert p["scatter_gather_tensors_in_pipeline"]
        assert p["async_tensor_model_parallel_allreduce"] is False and p["zero"] == 0
        assert (p.get("pp_schedule") == "interleaved") == (p.get("vp", 1) > 1)
        # no fused weight-gradient accumulation before 2022 (F.linear in mpu/layers.py @de7dc40f)
        assert p["gradient_accumulation_fusion"] is False and p["grad_reduce_dtype"] == "fp16"
    for c in ptdp:
        p, t = c.scenario["parallel"], c.scenario["training"]
        assert t["micro_batch"] == 1 and not p["overlap_grad_reduce"] and p["pp_schedule"] == "interleaved"
        # run_figure_12.sh: NLS=96, PP=12, --num-layers-per-virtual-pipeline-stage 2 -> 96 / 12 / 2 = 4;
        # run_table_1.sh's 530B row: 1 layer per virtual stage, so vp = 105 / 35 = 3
        assert p["vp"] == (96 // 12 // 2 if p["pp"] == 12 else 105 // 35)
    rows2 = sources.read_rows(sources.DATA_DIR / "megatron_2021_zero3_table2.csv")
    ptdp_rows = [r for r in rows2 if "PTD-P" in r["zero_stage_or_fsdp"]]
    assert {(r["model_name"], r["vp"], r["micro_batch"]) for r in ptdp_rows} == {("GPT-175B", "4", "1"),
                                                                               ("GPT-530B", "3", "1")}
    assert all("--DDP-impl local" in r["notes"] for r in ptdp_rows)
    # run_table_1.sh, 1.7B .. 529.6B
    assert [c.scenario["training"]["micro_batch"] for c in weak] == [16, 16, 16, 8, 4, 2, 2, 1, 1]
    assert [c.scenario["parallel"].get("vp", 1) for c in weak] == [1, 1, 1, 1, 1, 3, 2, 2, 3]
    assert [c.scenario["parallel"]["overlap_grad_reduce"] for c in weak] == [True] * 4 + [False] * 5
    assert {(c.scenario["parallel"]["tp"], c.scenario["parallel"]["pp"]) for c in ptdp} == {(8, 12), (8, 35)}
    rows = sources.read_rows(sources.DATA_DIR / "megatron_2021_table1.csv")
    for r in rows:
        agg = float(r["notes"].split("; ")[2].split()[0])
        assert float(r["value"]) * int(r["num_gpus"]) / 1000 == pytest.approx(agg, rel=0.004), r["model_name"]


def test_bloom_rows_take_the_production_batch():
    """Where the shape search measured one plan at two batches, the row at the production batch
    of 2,048 is used: at 1,568 the tp8 pp6 dp8 mbs4 run took as long as at 2,048."""
    cs = _by_source("bloom")
    assert len(cs) == 8
    by_label = {c.label.split(" (")[0]: c for c in cs}
    for plan in ("tp8 pp6 dp8 mbs4", "tp8 pp12 dp4 mbs4", "tp8 pp12 dp4 mbs2"):
        c = next(c for label, c in by_label.items() if plan in label)
        assert c.scenario["training"]["global_batch"] == 2048, c.label


def test_bloom_rows_have_megatrons_padded_vocabulary():
    """The final run pads its 250,680 tokens to 250,880 (tr11-176B-ml.slurm ``--pad-vocab-size-to
    250880``); the 02-25 search scripts set no padding option, so Megatron's
    ``_vocab_size_with_padding`` rounds 250,000 up to a multiple of 128 x TP: 1,024 x 245 at TP 8."""
    cs = _by_source("bloom")
    final = [c for c in cs if "final run" in c.label]
    assert [c.scenario["model"]["vocab"] for c in final] == [250_880]
    for c in cs:
        v, tp = c.scenario["model"]["vocab"], c.scenario["parallel"]["tp"]
        assert v % (128 * tp) == 0 and v - 128 * tp < (250_680 if c in final else 250_000) <= v, c.label
    assert {c.scenario["model"]["vocab"] for c in cs if c.scenario["parallel"]["tp"] == 8} == {250_880}
    assert sources.padded_vocab(250_000, 4) == 250_368 and sources.padded_vocab(250_000, 2) == 250_112


@pytest.mark.slow
def test_megatron2021_ptdp_and_weak_scaling_errors():
    """Held out, on the same 2021 stack as the ZeRO-3 rows: Table 2's PTD-P GPT-175B rows +3.1%,
    +4.6%, +8.0% (384, 768, 1,536 GPUs; +3.3%, +4.2%, +6.1% at vp 2 before the launch scripts' vp
    4), the eq. 3 TFLOP/s falling as DP grows 4 -> 16 at the fixed batch (measured 153 -> 141,
    predicted 157.7 -> 152.2: the model has 45% of the measured drop); Table 1's weak scaling 1.7B-310B
    at the launch scripts' micro-batches and virtual stages +3.3% .. +11.2%, median |error| 7.1%;
    8.1% once the A100 derate is refitted on the unfused attention's shape pricing (0.866 -> 0.876,
    fitted on the other sources' one-node rows), hence 0.085. With autograd's fp16 gradient
    accumulation of every micro-batch after the first (no gradient-accumulation fusion in 2021;
    6 bytes per parameter), on NCCL 2.8.3: Table 2 +0.2%, +1.7%, +5.0%, Table 1 +3.2% .. +10.1%
    (the 1-micro-batch rows 1.7B-7.5B unchanged), median 7.9%. The GPT-530B rows at TP 8 x PP 35 x VP
    3 with 280 micro-batches per pipeline (Table 2 on 2,240 GPUs, Table 1's 529.6B on 2,520), scored
    since micro-batch folding made them 8-10 CPU s each: +4.6% and +2.1%. Upper bounds: a model that
    came closer must still pass."""
    ptdp = list(_run_cases(_by_source("megatron2021_ptdp")))
    assert all(-0.05 <= r.error <= 0.06 for r in ptdp), [(r.case.label, round(r.error, 3)) for r in ptdp]
    by_dp = sorted((r for r in ptdp if r.case.label.startswith("GPT-175B ")), key=lambda r: r.case.n_gpus)
    assert len(by_dp) == 3
    assert [r.case.measured for r in by_dp] == sorted((r.case.measured for r in by_dp), reverse=True)
    assert [r.predicted for r in by_dp] == sorted((r.predicted for r in by_dp), reverse=True)
    weak = list(_run_cases(_by_source("megatron2021_weak")))
    assert all(abs(r.error) <= 0.11 for r in weak), [(r.case.label, round(r.error, 3)) for r in weak]
    assert scoring.median_abs_error(weak) <= 0.08
    (largest,) = [r for r in weak if r.case.n_gpus == 2520]
    assert largest.error == pytest.approx(0.021, abs=0.03)


def test_usp_rows_build_the_printed_plans():
    """The USP paper's Tables 5-7 (arXiv:2405.07719): 9 rows of Llama2-7B on 8 A800 and 31 of
    Llama3-8B on 16, each TP x Ulysses x ring as printed with DP the rest (1 but for Table 5's TP4
    and Table 6's TP8 rows), the ring as Megatron CP's p2p KV ring in TE 1.4's bshd, process groups
    TP, Ulysses, ring from the innermost (the paper's Tip 7), on the dgx-a800 profile."""
    from simulator.config.hardware import load_profile

    cs = _by_source("usp")
    assert len(cs) == 40
    assert sum(c.n_gpus == 8 for c in cs) == 9 and sum(c.n_gpus == 16 for c in cs) == 31
    for c in cs:
        p, m = c.scenario["parallel"], c.scenario["model"]
        assert c.scenario["hardware"] == "dgx-a800" and c.metric == "megatron_model_tflops"
        assert p["order"] == ("tp", "ulysses", "cp", "dp", "pp") and p["cp_comm"] == "p2p"
        assert p.get("sequence_parallel", False) == (p["tp"] > 1)
        assert m["heads"] % (p["tp"] * p["ulysses"]) == 0 and m["vocab"] % (128 * p["tp"]) == 0
    dp = [c.n_gpus // (c.scenario["parallel"]["tp"] * c.scenario["parallel"]["ulysses"] * c.scenario["parallel"]["cp"])
          for c in cs]
    assert sorted(dp) == [1] * 37 + [2] * 3  # Table 5's TP4 (30K) and Table 6's two TP8 rows of global batch 2
    a800, a100 = load_profile("dgx-a800"), load_profile("dgx-a100")
    assert a800.node.scale_up.link_GBps == 200 and a100.node.scale_up.link_GBps == 300
    assert a800.gpu == a100.gpu  # the same chip: GEMM curve and attention figures inherited


def test_usp_tflops_follow_megatrons_full_score_matrix_count():
    """The printed MFU is the TFLOP/s over the A800's 312 (every row within 0.006), and with the
    causal half of the score matrix removed from Megatron's count the 208K row's 269.8 TFLOP/s is
    48% of peak, the abstract's "47% MFU ... sequence length 208K" (the tables use Megatron's
    num_floating_point_operations of 2024, which counts the full score matrix)."""
    import re

    from simulator.e2e_validation.rows import read_rows
    from simulator.e2e_validation.scoring import megatron_model_flops

    rows = read_rows(sources.DATA_DIR / "usp_2405_07719.csv")
    assert len(rows) == 40
    for r in rows:
        mfu = float(re.search(r"MFU ([0-9.]+)", r["notes"]).group(1))
        assert float(r["value"]) / 312 == pytest.approx(mfu, abs=0.006), r["notes"]
    c = next(c for c in _by_source("usp") if c.scenario["model"]["seq_len"] == 208 * 1024)
    m = c.scenario["model"]
    full = megatron_model_flops(m, 1)
    causal = full - 12.0 * m["seq_len"] * m["layers"] * m["hidden"] ** 2 * (m["seq_len"] / m["hidden"]) / 2
    assert c.measured * causal / full / 312 == pytest.approx(0.48, abs=0.01)


@pytest.mark.slow
def test_usp_errors():
    """Held out entirely (no fitting row). Doc: median |error| 5.2%, signed +5.2% (4.0% and +2.0%
    while a kernel beside a ring or All-to-All transfer was slowed for its whole length; 6.5% and -5.0%
    while the dgx-a100 FlashAttention-2 pair was the assumed 0.6/0.5 of peak, 13% below FA2's own
    A100 sweep); 120K-208K rows -2.8% to +16.8% (the +16.8% a TP2 plan; -1.6% to -8.6% under the
    whole-kernel slowdown); the TP2 rows of Table 6 at 64K and 80K +24% to +70% (measured
    141.7-201.6 TFLOP/s where every other plan of the same length measures 196.9-228.2; not
    modelled, see the source's caveats); the other plans at most +19.5% (64K, TP4 x Ulysses 2 x
    ring 2). What the kernels beside the Ulysses All-to-Alls and ring transfers pay is
    ``overlap_slowdown`` (0.1, assumed), now only while the transfer runs: the rows moved up 1-8
    points with it, so a measured slowdown under concurrent NCCL kernels is the lead."""
    rs = _run_cases(_by_source("usp"), jobs=min(2, os.cpu_count() or 1))
    assert scoring.median_abs_error(rs) <= 0.06
    assert abs(statistics.median(r.error for r in rs)) <= 0.06
    long_rows = [r for r in rs if r.case.scenario["model"]["seq_len"] >= 120 * 1024]
    assert len(long_rows) == 9 and all(-0.12 <= r.error <= 0.18 for r in long_rows)
    others = [r for r in rs if r.case.scenario["parallel"]["tp"] != 2]
    assert max(abs(r.error) for r in others) <= 0.21

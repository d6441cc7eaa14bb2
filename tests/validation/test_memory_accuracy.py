"""Peak memory against published measurements (data/e2e/peak_memory.csv): no replay, so fast.

Every row is held out (no memory constant is fitted on them); the bounds are upper bounds on the
errors reached, so a better model still passes."""

from functools import lru_cache
from pathlib import Path

import pytest

from simulator.e2e_validation import memory
from simulator.e2e_validation.memory import render_memory_section, summary
from simulator.units import GiB

ROOT = Path(__file__).resolve().parents[2]


@lru_cache(maxsize=None)
def memory_results() -> tuple:
    """The rows' estimates, computed once for the tests of this file (read only)."""
    return tuple(memory.memory_results())


def test_median_error_over_held_out_memory_rows():
    """The issue's target, median |error| <= 8% over every held-out row, and per source: no source
    of the 2024 and Megatron ones biased by more than 4% in the median (each was under-predicted by
    1.6-7.5% before the pipeline's kept buffers and outputs, the allocator's stranded logits block
    and the legacy Megatron model's saved tensors were modelled); torchtitan's 2025 H200 rows
    (Float8 with op-level selective checkpointing) within 9%: 8.5% with the gradient absent at the
    peak of these one-micro-batch steps (FSDP2 makes it in backward), 7.0% now that the freed
    sharded gradients stay reserved for FSDP2's reduce-scatter stream (schedule/memory.py
    reduce_stream_keeps_freed_grads: reserved, not allocated). The project's own H200 GPT-2 rows
    (eager PyTorch under bf16 autocast) read -4.2% in the median: autocast's fp32 residual stream,
    not modelled, pinned in tests/validation/test_h200_eager_source.py."""
    res = memory_results()
    assert len(res) >= 50 and len({r.source for r in res}) >= 6
    assert summary(res)["median_abs"] <= 0.08
    by_source = {src: summary([r for r in res if r.source == src]) for src in {r.source for r in res}}
    assert by_source["megatron_training_info_tool"]["median_abs"] <= 0.03
    assert by_source["torchtitan_h100_2024"]["median_abs"] <= 0.05
    assert by_source["megatron_functional_tests_gpt_small"]["median_abs"] <= 0.05
    assert by_source["torchtitan_h200_2025"]["median_abs"] <= 0.09
    assert by_source["megatron_functional_tests_moe"]["median_abs"] <= 0.06
    biased = {src: s["signed_median"] for src, s in by_source.items()
              if src not in ("torchtitan_h200_2025", "megatron_functional_tests_moe", "h200_gpt2_eager")
              and abs(s["signed_median"]) > 0.04}
    assert not biased, biased


def test_torchtitan_pipeline_row():
    """torchtitan's 405B 1F1B row (FSDP 8 x TP 8 x PP 8, 8 micro-batches of 4): the last stage
    keeps every micro-batch's fp32 logits and a gradient / activation receive buffer per
    micro-batch; it was 33% under before those were modelled, now within 6%: -5.2% with no sharded
    gradient at the peak (FSDP2 makes it only in the step's last backward under
    torch.distributed.pipelining), -1.7% with the previous step's freed gradients kept reserved for
    the reduce-scatter stream (4 B per parameter of the stage over the 8-way shard group)."""
    row = next(r for r in memory_results() if r.label == "Table 5 1F1B")
    assert abs(row.error) <= 0.06, row.error
    assert row.estimate.grads == 0
    assert row.estimate.stage == 7 and row.estimate.pipeline_outputs == 8 * 4 * 8192 * 128256 / 8 * 4


def test_megatron_small_model_suite():
    """Megatron-Core's 12-layer h=512 functional tests on H100 (TP 1-4, PP 1-4, CP, interleaving,
    distributed optimizer, full recompute, RoPE, SwiGLU, untied output, unfused attention, the
    local layer spec): every row within 8% before PyTorch's second cuBLAS workspace (autograd's
    thread) and TransformerEngine's received K/V chunk under P2P CP were modelled (max 6.2%), within
    4% after (max 2.9%)."""
    rows = [r for r in memory_results() if r.source == "megatron_functional_tests_gpt_small"]
    assert len(rows) >= 10
    assert all(abs(r.error) <= 0.04 for r in rows), [(r.label, round(r.error, 3)) for r in rows]


def test_megatron_moe_suite():
    """Megatron-Core's MoE functional tests on H100 (data/e2e/peak_memory_moe.csv: 12-layer h=512
    GPT with 4 or 8 GeLU experts, top-1/2, EP 2-8, ETP 1-2, TP/CP/PP, allgather and alltoall
    dispatchers, distributed optimizer or not), held out: median |error| 9.5% (max 20.3%) before
    the unfused probability multiply's saved activation output was modelled, 6.6% after, 5.7%
    (max 8.7%) with TransformerEngine's grouped-GEMM workspaces, 2.9% (max 6.1%) with PyTorch's
    second cuBLAS workspace and TE's received K/V chunk under P2P CP. Every row is still
    under-predicted; the logged mem-allocated-bytes (resident between steps) still exceeds the model
    states and workspaces by 7-33 MiB on the TE rows and 50-73 MiB on the two local-spec rows
    (Megatron-Core's GlobalMemoryBuffer for the local attention's baddbmm is not modelled)."""
    rows = [r for r in memory_results() if r.source == "megatron_functional_tests_moe"]
    assert len(rows) == 10
    assert summary(rows)["median_abs"] <= 0.035
    assert all(-0.09 <= r.error < 0 for r in rows), [(r.label, round(r.error, 3)) for r in rows]


def test_megatron_hybrid_suite():
    """Megatron-Core's hybrid Mamba2-Transformer memory tests on H100 (data/e2e/peak_memory_hybrid.csv:
    44 blocks of 20 Mamba2 mixers, 20 MLPs and 4 unfused GQA attention blocks, h 1024, TP 1-2, PP
    1-4, interleaved), held out: -10.9% to -18.9% (median 18.4%) when the hybrid blocks kept no
    score matrix of unfused attention, no mixer's ungated scan output and no residual dropout mask;
    -0.5% to -0.7% with the three (each a closed form from Megatron-Core and mamba_ssm, see
    schedule/memory.py hybrid_block_activation_bytes and schedule/mamba.py activation_bytes). The
    model states match the logged resident bytes (mem-allocated-bytes) within 3-41 MiB."""
    rows = [r for r in memory_results() if r.source == "megatron_functional_tests_hybrid"]
    assert len(rows) == 4
    assert all(abs(r.error) <= 0.02 for r in rows), [(r.label, round(r.error, 4)) for r in rows]


def test_grouped_gemm_keeps_a_workspace_per_stream():
    """TransformerEngine's grouped GEMM (--moe-grouped-gemm) caches one cuBLAS workspace per compute
    stream, 4 streams: 4 x 32 MiB on Hopper, 4 x 4 MiB on Ampere; SequentialMLP experts, or the
    local layer spec without TE, keep none."""
    from simulator.config.scenario import build_scenario
    from simulator.e2e_validation.rows import read_rows
    from simulator.e2e_validation.sources import DATA_DIR
    from simulator.schedule.memory import estimate_memory

    row = next(r for r in read_rows(DATA_DIR / memory.MOE_MEMORY_CSV)
               if r["config"].startswith("gpt3_mcore_te_tp2_pp1_te_8experts_etp1_ep4 "))
    mapping = memory.row_scenario(row)
    assert mapping["training"]["moe_grouped_gemm"] is True
    for hardware, per_stream in (("dgx-h100", 32 * 2**20), ("dgx-a100", 4 * 2**20)):
        mapping["hardware"] = hardware
        mapping["training"].update(moe_grouped_gemm=True, fused_kernels=True)
        grouped = estimate_memory(build_scenario(mapping), 0)
        mapping["training"]["moe_grouped_gemm"] = False
        sequential = estimate_memory(build_scenario(mapping), 0)
        assert grouped.workspaces - sequential.workspaces == 4 * per_stream
        assert grouped.allocated - sequential.allocated == pytest.approx(4 * per_stream, rel=1e-12)
    mapping["training"].update(moe_grouped_gemm=True, fused_kernels=False)
    local = estimate_memory(build_scenario(mapping), 0)
    mapping["training"]["moe_grouped_gemm"] = False
    assert local.workspaces == estimate_memory(build_scenario(mapping), 0).workspaces


def test_unfused_expert_activation_saves_its_output():
    """GeLU experts have no weighted kernel in Megatron-Core: ``bias_act_func`` (moe/experts.py)
    runs the activation, then multiplies by the router probabilities, and the multiply saves the
    activation's output: one more moe_ffn_hidden/etp bf16 elements per routed row. The EP 4 x TP 2
    case (ETP 1, SP): 4·1024/2 tokens per rank, top-2, spread over 4 EP ranks of 2 experts from
    4 ranks' tokens: 4,096 rows per rank; 2,048-wide experts, 12 layers, one micro-batch in flight
    on the only stage: 4096·2048·2·12 bytes more than the fused kernel's."""
    from simulator.config.scenario import build_scenario
    from simulator.e2e_validation.rows import read_rows
    from simulator.e2e_validation.sources import DATA_DIR
    from simulator.schedule.memory import estimate_memory

    row = next(r for r in read_rows(DATA_DIR / memory.MOE_MEMORY_CSV)
               if r["config"].startswith("gpt3_mcore_te_tp2_pp1_te_8experts_etp1_ep4 "))
    mapping = memory.row_scenario(row)
    assert mapping["training"]["moe_activation"] == "unfused"
    unfused = estimate_memory(build_scenario(mapping), 0)
    mapping["training"]["moe_activation"] = "fused"
    fused = estimate_memory(build_scenario(mapping), 0)
    assert unfused.activations - fused.activations == pytest.approx(4096 * 2048 * 2 * 12, rel=1e-12)
    mapping["training"].update(moe_activation="unfused", recompute_modules=["moe_act"])
    rebuilt = estimate_memory(build_scenario(mapping), 0)
    mapping["training"]["moe_activation"] = "fused"
    rebuilt_fused = estimate_memory(build_scenario(mapping), 0)
    assert rebuilt.activations == pytest.approx(rebuilt_fused.activations, rel=1e-12)


def test_unfused_expert_activation_is_for_non_gated_experts():
    """The unfused path is modelled for GeLU experts only: a gated (SwiGLU) model is told so."""
    from simulator.config.scenario import build_scenario
    from simulator.e2e_validation.rows import read_rows
    from simulator.e2e_validation.sources import DATA_DIR
    from simulator.errors import InputError

    row = next(iter(read_rows(DATA_DIR / memory.MOE_MEMORY_CSV)))
    mapping = memory.row_scenario(row)
    mapping["model"]["mlp"] = "swiglu"
    with pytest.raises(InputError, match="moe_activation"):
        build_scenario(mapping)


def test_megatron_allocated_peaks():
    """Megatron-Core's functional tests on H100 / A100 / GB200: the 7B memory regression cases
    (TP 4; PP 4 interleaved) within 4%, the 12-layer h=512 cases (TP 2 + CP 2 + PP 2; PP 4
    interleaved with unfused attention) within 6%: fp32 main grads, 6-byte vocab-parallel
    cross-entropy, the last stage's in-flight activations, GEMM workspaces."""
    rows = [r for r in memory_results() if r.source == "megatron_functional_tests"]
    assert len(rows) == 12
    big = [r for r in rows if r.label.startswith("gpt3_7b")]
    assert len(big) == 6 and all(abs(r.error) <= 0.04 for r in big), [(r.label, round(r.error, 3)) for r in big]
    assert all(abs(r.error) <= 0.06 for r in rows), [(r.label, round(r.error, 3)) for r in rows]


def test_validation_doc_carries_the_live_memory_section():
    """The rows' table is the live one; each bundled scenario the page lists has its live memory
    (a scenario added since the page was generated is not required to be there)."""
    from simulator.config.scenario import load_scenario
    from simulator.e2e_validation.memory import bundled_row
    from simulator.schedule.memory import memory_per_gpu

    doc = (ROOT / "docs" / "validation-e2e.md").read_text()
    regen = "run: python -m simulator.e2e_validation --out docs"
    assert render_memory_section(bundled=False) in doc, regen
    section = doc.split("\n## Peak memory\n", 1)[1].split("\n## ", 1)[0]
    listed = 0
    for path in sorted((ROOT / "scenarios").glob("*.yaml")):
        line = next((x for x in section.splitlines() if x.startswith(f"| {path.stem} |")), None)
        if line is not None:
            listed += 1
            assert line == bundled_row(path.stem, memory_per_gpu(load_scenario(path))), regen
    assert listed >= 10


def test_flagperf_rows_run_the_benchmark_scripts_plan():
    """FlagPerf's Megatron launch script (training/benchmarks/llama3_{8B,70B}/megatron/
    pretrain_llama3.sh at 1b5a0303) passes ``--sequence-parallel`` and
    ``--use-distributed-optimizer``. Llama 3 70B at TP 8, PP 4, DP 2, s = 8192, b = 1: stage 0 holds
    4 micro-batches of its 20 layers, each with SP (selective recompute under flash attention
    stores no score matrix) sbh·(10 + 4 + 4·8/64 + 6·28672/8192)/8 bytes, plus the embedding's
    sbh/8 per micro-batch in flight; the states of 70.55e9/32 parameters per GPU, about 2 + 4 + 12/2
    bytes each, leave it well under the 55 GiB FlagPerf's table prints (nvidia-smi's figure)."""
    from simulator.config.scenario import build_scenario
    from simulator.e2e_validation import sources
    from simulator.schedule.memory import estimate_memory

    rows = [c for c in sources.cases() if c.source == "flagperf"]
    assert rows and all(c.scenario["parallel"]["zero"] == 1 for c in rows)
    assert all(c.scenario["parallel"].get("sequence_parallel", False) is (c.scenario["parallel"]["tp"] > 1)
               for c in rows)
    big = next(c for c in rows if c.label.startswith("Llama 3 70B"))
    m = estimate_memory(build_scenario(big.scenario), 0)
    sbh = 8192 * 8192
    per_layer = sbh * (10 + 4 + 4 * 8 / 64 + 6 * 28672 / 8192) / 8
    assert m.activations == pytest.approx(4 * 20 * per_layer + 4 * sbh / 8, rel=1e-9)
    assert m.allocated / GiB < 55


# Published e2e rows whose predicted allocated peak is allowed past their GPUs' memory, with the
# documented reason.
_LLAMA3_FSDP = ("the activations of Megatron's interleaved schedule with N = PP micro-batches per round (143 "
                "one-layer chunks in flight on stage 0, 141 on stage 1: 74.4 GiB) beside the FP32 gradient "
                "accumulated whole over the micro-batches (11.9 GiB, arXiv:2407.21783 sec. 3.3.4), all made by "
                "the backwards that precede the last steady-state forward, pass 80 GiB (92.9); Meta tunes N "
                "(sec. 3.3.2) and does not print it. Sharded gradients (zero: 2, a ReduceScatter per "
                "micro-batch) would give 81.2 GiB but -6.0% step time (simulator/e2e_validation/findings.py)")
E2E_MEMORY_EXCEPTIONS: dict[str, str] = {
    "llama3: Llama 3 405B tp8 cp1 pp16 vp8 dp64 seq8192 8192 GPUs": _LLAMA3_FSDP,
    "usp: LLAMA3-8B 208K gbs1 tp8 ulysses1 ring2 dp1 16 GPUs": (
        "0.2 GiB over 80: the USP paper prints neither recompute nor the framework's buffers for its "
        "longest run; the row assumes no recompute (the paper's out-of-memory remarks), at the edge"),
}


def test_every_published_e2e_run_fits_its_gpus_memory():
    """A published training run that ran is evidence that its plan fits in its GPUs' memory: every
    step-time row of the e2e validation (docs/validation-e2e.md) has, on every pipeline stage, a
    predicted allocated peak (``torch.cuda.max_memory_allocated``) within its GPU's HBM. The
    reserved peak adds the assumed fragmentation (``training.allocator_fragmentation``), which no
    row measured, so it is not asserted."""
    from simulator.config.scenario import build_scenario
    from simulator.e2e_validation import sources
    from simulator.schedule.memory import estimate_memory

    rows = sources.cases()
    assert len(rows) >= 150 and {"bridge_moe", "automodel_moe", "flagperf"} <= {c.source for c in rows}
    over = []
    for c in rows:
        scn = build_scenario(c.scenario, source=c.label)
        peak = max((estimate_memory(scn, i) for i in range(scn.parallel.pp)), key=lambda e: e.allocated)
        if peak.allocated > peak.hbm_bytes and f"{c.source}: {c.label}" not in E2E_MEMORY_EXCEPTIONS:
            over.append((c.source, c.label, round(peak.allocated / GiB, 1), round(peak.hbm_bytes / GiB)))
    assert not over, over


def test_llama3_lazy_gradients_fit_dp128_and_leave_dp64_over():
    """Llama 3 405B's stack makes each gradient in its layer's backward (``grad_allocation: lazy``).
    At DP 128 each pipeline runs 16 micro-batches of its 8 one-layer chunks: 128 chunk forwards,
    fewer than the interleaved schedule's warm-up on stages 0-7 (141-155), so every forward runs
    before any backward and the activation peak holds no gradient there; stage s >= 8 reaches its
    peak after 128 - (2·(15 - s) + 113) backwards, ceil(that / 16) chunks' gradients (stage 15's
    last chunk is the output projection alone). Stage 1's
    peak is its 128 chunks' activations and the states without the FP32 gradient (85.7 GiB with it,
    whole); the worst stage fits the H100's 80 GiB. At DP 64 (256 chunk forwards) 113 backwards
    precede stage 0's last peak, every chunk has its gradient, and the row stays at 92.9 GiB; with
    the gradients sharded (``zero: 2``) it is 4·P·(1 − 1/64) lower, still over."""
    import copy

    from simulator.config.scenario import build_scenario
    from simulator.e2e_validation import sources
    from simulator.schedule.memory import backpropagated_fraction, estimate_memory
    from simulator.schedule.shapes import stage_params

    rows = {build_scenario(c.scenario).dp: c for c in sources.cases() if c.source == "llama3"}
    assert sorted(rows) == [64, 128]
    assert f"llama3: {rows[64].label}" in E2E_MEMORY_EXCEPTIONS
    assert f"llama3: {rows[128].label}" not in E2E_MEMORY_EXCEPTIONS
    s128, s64 = (build_scenario(rows[d].scenario) for d in (128, 64))
    assert s128.n_micro == 16 and s64.n_micro == 32
    for stage in range(15):  # eight chunks of one layer each (stage 0's first holds the embedding)
        warmup = min(2 * (15 - stage) + 7 * 16 + 1, 128)
        assert backpropagated_fraction(s128, stage) == -(-(128 - warmup) // 16) / 8
        assert backpropagated_fraction(s64, stage) == 1.0
    # stage 15: 15 backwards, all on its last chunk, which holds the output projection alone
    head = 16384 * 128256 / 8
    assert backpropagated_fraction(s128, 15) == pytest.approx(head / stage_params(s128, 15).total, rel=1e-3)
    one = estimate_memory(s128, 1)
    P = stage_params(s128, 1).total
    assert one.grads == 0 and one.params == 2 * P
    peak128 = max(estimate_memory(s128, i).allocated for i in range(16)) / GiB
    assert 70 < peak128 < 80
    sharded = copy.deepcopy(rows[64].scenario)
    sharded["parallel"]["zero"] = 2
    part = build_scenario(sharded)
    for stage in range(16):
        a, b = estimate_memory(s64, stage), estimate_memory(part, stage)
        P = stage_params(s64, stage).total
        assert (a.grads, b.grads) == pytest.approx((4 * P, 4 * P / 64), rel=1e-12)
        assert b.allocated == pytest.approx(a.allocated - 4 * P * (1 - 1 / 64), rel=1e-12)
    assert max(estimate_memory(part, i).allocated for i in range(16)) / GiB > 80


def test_rows_trained_without_dropout_store_no_masks():
    """The ``dropout`` column: torchtitan's Llama and the project's H200 GPT-2 (benchmarks/
    measure_gpt_step.py) have no dropout module, and the Megatron cases whose
    model_config sets --hidden-dropout and --attention-dropout to 0 store no masks (PyTorch's dropout
    with p = 0 returns its input). Each such row builds ``training.dropout: false`` and its estimate
    holds fewer activation bytes than the same plan with dropout; every other row keeps dropout on."""
    from simulator.config.scenario import build_scenario
    from simulator.e2e_validation.rows import read_rows
    from simulator.e2e_validation.sources import DATA_DIR
    from simulator.schedule.memory import estimate_memory

    rows = [r for name in memory.MEMORY_CSVS for r in read_rows(DATA_DIR / name)]
    off = [r for r in rows if memory.row_scenario(r)["training"]["dropout"] is False]
    assert {r["source"] for r in rows if r["source"].startswith("torchtitan")} <= {r["source"] for r in off}
    assert all(r["source"].startswith("torchtitan") or r["source"] == "h200_gpt2_eager" or "dropout 0" in r["notes"]
               for r in off)
    # 28 + SimuMax's 30 B200 rows (--attention-dropout 0.0 --hidden-dropout 0.0); 33 + the four hybrid rows (dropout 0.1)
    assert len(off) == 58 and len(rows) - len(off) == 37
    row = next(r for r in off if r["config"] == "gpt3_mcore_te_tp2_pp2_cp2 dgx_h100")
    mapping = memory.row_scenario(row)
    without = estimate_memory(build_scenario(mapping), 0)
    mapping["training"]["dropout"] = True
    with_masks = estimate_memory(build_scenario(mapping), 0)
    assert without.activations < with_masks.activations
    assert without.params == with_masks.params and without.optimizer == with_masks.optimizer


def test_compiled_blocks_keep_no_w2_output():
    """torchtitan's Tables 1 and 3 measure the same plan eager and with ``torch.compile`` of the
    blocks (``compile`` column ``blocks``): the compiled block does not keep w2's output, 2·s·b·h
    bf16 bytes per layer (32 layers, 8,192 tokens, micro-batch 2, hidden 4,096): exactly 4 GiB less
    allocated. Measured 5.4 and 5.0 GiB less reserved; the compiled rows then read +0.3% and +1.9%
    (eager-equal before: +6.0%, +9.0%)."""
    res = {r.label: r for r in memory_results()}
    for eager, compiled in (("Table 1 FSDP 8 GPUs", "Table 1 FSDP + torch.compile 8 GPUs"),
                            ("Table 3 FSDP 128 GPUs", "Table 3 FSDP + torch.compile 128 GPUs")):
        a, b = res[eager].estimate, res[compiled].estimate
        assert a.allocated - b.allocated == pytest.approx(32 * 2 * 8192 * 2 * 4096, rel=1e-12)
        assert abs(res[compiled].error) <= 0.025, (compiled, res[compiled].error)


def test_simumax_b200_peaks_need_te_cached_dummy_wgrads():
    """SimuMax's B200 runs (Megatron-Core 0.14, TransformerEngine 2.11, fused wgrad accumulation):
    the 15 allocated peaks within 4% (median under 2%). Without TE's cached placeholder weight
    gradients (``training.te_dummy_wgrad``: one bf16 tensor per distinct weight shape, the LM head's
    on the last stage) every allocated peak but the 128K-token ones reads low, the 405B TP 1 rows by
    6-9% (about 6 GiB of 405B's layer shapes plus 3.9 GiB of its head)."""
    from simulator.config.scenario import build_scenario
    from simulator.e2e_validation.rows import read_rows
    from simulator.e2e_validation.sources import DATA_DIR
    from simulator.schedule.memory import memory_per_gpu

    res = [r for r in memory_results() if r.source == "simumax_b200"]
    alloc = [r for r in res if r.metric == "allocated"]
    assert len(res) == 30 and len(alloc) == 15
    assert all(abs(r.error) <= 0.04 for r in alloc), [(r.label, round(r.error, 3)) for r in alloc]
    assert summary(alloc)["median_abs"] <= 0.02
    rows = [r for r in read_rows(DATA_DIR / memory.MEMORY_CSV)
            if r["source"] == "simumax_b200" and r["metric"] == "peak_allocated_gib"]
    without = {}
    for row in rows:
        mapping = memory.row_scenario(row)
        mapping["training"]["te_dummy_wgrad"] = False
        without[row["config"]] = memory_per_gpu(build_scenario(mapping)).allocated / GiB / float(row["value"]) - 1
    low = [k for k, e in without.items() if e < 0 and "seq131072" not in k]
    assert len(low) == 12, without
    tp1_405b = [e for k, e in without.items() if k.startswith("llama3_405b") and "tp1" in k]
    assert len(tp1_405b) == 2 and all(-0.095 <= e <= -0.055 for e in tp1_405b), tp1_405b

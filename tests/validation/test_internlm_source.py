"""InternLM's training-performance page (source ``internlm``): the tables are consistent as
transcribed, the rows build the printed plans with InternLM's HybridZeroOptimizer, are held out,
and score as the validation page says."""

from __future__ import annotations

import statistics

import pytest

from simulator.config.hardware import load_profile
from simulator.config.scenario import build_scenario
from simulator.e2e_validation import loso, scoring, sources
from simulator.e2e_validation.internlm_sources import internlm, shards_over_dp
from simulator.e2e_validation.rows import parse_int, read_rows
from simulator.schedule.data_parallel import internlm_shards
from simulator.simulation import simulate_scenario

LAYERS, HIDDEN, VOCAB, SEQ = 32, 4096, 103168, 2048


def _rows() -> list[dict[str, str]]:
    return read_rows(sources.DATA_DIR / "internlm_7b_train_performance.csv")


def test_tables_are_consistent_as_transcribed():
    """32 throughput rows (4 plans x 8 GPU counts) and 22 FLOPS rows with TGS and TFLOPS; TP x DP =
    GPUs; the throughput rows hold 16,384 tokens per GPU and step (micro_num 4 x micro_bsz 2 x 2,048
    at TP 1, x 4 at TP 2 over half the ranks); the printed TFLOPS follow from TGS by Megatron's eq. 3
    per token, 96 l h^2 (1 + s/6h + V/16lh) with checkpointing and 72 l h^2 (1 + s/6h + V/12lh)
    without, within 1.5% on 19 rows and 3.5% on all 22 (the file's header)."""
    rows = _rows()
    assert len(rows) == 76
    for r in rows:
        assert parse_int(r["tp"]) * parse_int(r["dp"]) == parse_int(r["num_gpus"])
    thr = [r for r in rows if r["notes"].startswith("throughput")]
    assert len(thr) == 32
    for r in thr:
        tokens = parse_int(r["global_batch"]) * SEQ / parse_int(r["num_gpus"])
        assert tokens == 16384
    flops = {}
    for r in rows:
        if r["notes"].startswith("FLOPS"):
            flops.setdefault((r["num_gpus"], r["micro_batch"], r["global_batch"], r["recompute"]), {})[r["metric"]] = \
                float(r["value"])
    assert len(flops) == 22
    off = 0
    for (_, _, _, recompute), m in flops.items():
        if recompute == "full":
            per_token = 96 * LAYERS * HIDDEN**2 * (1 + SEQ / (6 * HIDDEN) + VOCAB / (16 * LAYERS * HIDDEN))
        else:
            per_token = 72 * LAYERS * HIDDEN**2 * (1 + SEQ / (6 * HIDDEN) + VOCAB / (12 * LAYERS * HIDDEN))
        derived = m["tokens_per_s_per_gpu"] * per_token / 1e12
        assert derived == pytest.approx(m["tflops_per_gpu"], rel=0.035)
        off += derived != pytest.approx(m["tflops_per_gpu"], rel=0.015)
    assert off == 3  # as printed: 32 and 128 GPUs and 1,024 at micro_bsz 4 with checkpointing (+3.2, +1.8, +2.0%)


def test_internlm_shards_follow_the_greedy_split():
    """Largest tensor first, each to the first rank owning the fewest elements: [5, 4, 3, 3, 1] on 2
    ranks is 5+3 / 4+3+1, on 3 ranks 5 / 4+1 / 3+3; ranks left without a tensor broadcast nothing;
    InternLM-7B's 291 tensors on 1,024 ranks: one tensor per owner, 291 owners, the embedding and
    the head (103,168 x 4,096) the largest."""
    assert internlm_shards([5, 4, 3, 3, 1], 2) == [8, 8]
    assert internlm_shards([5, 4, 3, 3, 1], 3) == [5, 5, 6]
    assert internlm_shards([7, 1], 4) == [7, 1]
    numels = [VOCAB * HIDDEN] * 2 + [HIDDEN] + [3 * HIDDEN**2, 3 * HIDDEN, HIDDEN**2, HIDDEN,
                                                 11008 * HIDDEN, 11008 * HIDDEN, 11008 * HIDDEN, HIDDEN, HIDDEN] * LAYERS
    assert len(numels) == 291
    shards = internlm_shards(numels, 1024)
    assert len(shards) == 291 and max(shards) == VOCAB * HIDDEN and sum(shards) == sum(numels)


def test_rows_build_the_printed_plans_held_out():
    """Scored: the zero1=-1 throughput rows (TP 1 and 2, 8-1,024 GPUs) and the one-node rows, whose
    zero1 group is the whole data-parallel group; not the 34 multi-node zero1=8/4 rows (14 throughput, 20 FLOPS). bf16,
    HybridZeroOptimizer (AllReduce in 512M-element buckets overlapped with backward), flash-attn 1,
    PyTorch ops, on the internlm-a100 profile (dgx-a100's GEMM curve, four 100 Gb/s NICs)."""
    cs = internlm(_rows())
    assert len(cs) == 20
    assert sum(1 for r in _rows() if r["metric"] == "tokens_per_s_per_gpu" and not shards_over_dp(r)) == 14 + 20
    assert "internlm" in sources.HELD_OUT_SOURCES and not any(sources.is_fit_case(c) for c in cs)
    for c in cs:
        p, t = c.scenario["parallel"], c.scenario["training"]
        assert (p["zero"], p["zero1_impl"], p["ddp_bucket_elements"], p["overlap_grad_reduce"]) == (1, "internlm", 2**29, True)
        assert (t["dtype"], t["attention"], t["fused_kernels"], t["optimizer"]) == ("bf16", "flash1", False, "for_loop")
        assert c.scenario["hardware"] == "internlm-a100" and c.n_gpus == 8 * c.scenario["nodes"]
        assert c.metric == "tokens_per_s_per_gpu"
    prof = load_profile("internlm-a100")
    assert (prof.node.nics.count, prof.node.nics.Gbps) == (4, 100)
    assert loso.fit_family("internlm-a100") == "dgx-a100"


def test_hybrid_zero_allreduces_and_broadcasts_each_owners_shard():
    """On 16 GPUs (DP 16, 291 tensors): the gradients are AllReduced, not ReduceScattered, and after
    the step each of the 16 ranks broadcasts its shard, one call each, the 16 calls together moving
    the model's bf16 parameters once (2 bytes x 6.9B)."""
    case = next(c for c in internlm(_rows()) if c.n_gpus == 16 and c.scenario["parallel"]["tp"] == 1)
    res = simulate_scenario(build_scenario(case.scenario))
    recs = list(res.trace.records(res.trace.critical_rank()))
    grads = [r for r in recs if ".grad." in r.name]
    assert grads and all(r.kind == "allreduce" for r in grads)
    bcast = [r for r in recs if "param.broadcast" in r.name]
    assert len(bcast) == 16
    params = 2 * VOCAB * HIDDEN + HIDDEN + LAYERS * (4 * HIDDEN**2 + 3 * 11008 * HIDDEN + 2 * HIDDEN)
    assert sum(r.bytes for r in bcast) == 2 * params
    assert all(b.start >= a.end for a, b in zip(bcast, bcast[1:]))  # one after another


@pytest.mark.slow
def test_internlm_errors():
    """Doc: median |error| 6.7%, every row optimistic (+2.9% to +20.3%): +3-8% on one node (the
    compute side), growing to +9-20% from 128 GPUs where the broadcasts of the zero1=-1 rows are
    priced at ~65% of what the measurements imply (the page's findings). Without the broadcasts
    (one bucketed AllGather, the traffic alone) the 1,024-GPU TP 1 row was +60%; without the fp32
    norm inputs and the re-run norm blocks the median was 11.0% and the one-node rows +6-13%."""
    results = list(scoring.run_cases(internlm(_rows())))
    errors = [r.error for r in results]
    assert statistics.median(abs(e) for e in errors) <= 0.08
    assert all(0.0 < e <= 0.22 for e in errors)
    by = {r.case.label: r.error for r in results}
    assert by["InternLM-7B tp1 zero1=-1 mbs2 gbs8192 1024 GPUs (throughput)"] <= 0.22
    one_node = [e for r, e in zip(results, errors) if r.case.n_gpus == 8]
    assert len(one_node) == 6 and all(0.0 < e <= 0.08 for e in one_node)

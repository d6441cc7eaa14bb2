"""Hugging Face's Ultra-Scale Playbook summary (source ``nanotron_playbook``): the figure's cells are
consistent as transcribed, the MFU converts with nanotron's own FLOP count, the rows build the
printed plans with nanotron's pipeline split, are held out, and score as the findings say."""

from __future__ import annotations

import statistics

import pytest

from simulator.e2e_validation import scoring, sources
from simulator.e2e_validation.nanotron_sources import (H100_BF16_PEAK, measured_tokens_per_gpu,
                                                       nanotron_model_flops_per_token, nanotron_playbook,
                                                       nanotron_pp_layers)
from simulator.e2e_validation.rows import parse_int, read_rows

VOCAB, SEQ = 131072, 4096
# (layers, hidden, heads, ffn) of scripts/scaling_benchmarks.py's model_configs, and the figure's size label
SHAPES = {"nanotron-1.34B": (16, 2048, 32, 8192, "1.34"), "nanotron-3.57B": (28, 3072, 32, 8192, "3.57"),
          "nanotron-8.86B": (32, 4096, 32, 14336, "8.86"), "nanotron-80B": (80, 8192, 64, 28672, "80.0")}


def _rows() -> list[dict[str, str]]:
    return read_rows(sources.DATA_DIR / "nanotron_playbook_h100.csv")


def _params(layers: int, hidden: int, ffn: int) -> float:
    """scaling_benchmarks.estimate_num_params with MHA: embeddings tied below ffn 10,000."""
    vocab = VOCAB * hidden * (1 if ffn < 10_000 else 2)
    return vocab + layers * (3 * hidden * ffn + 4 * hidden * hidden)


def test_cells_are_consistent_as_transcribed():
    """26 cells (7 node counts x 4 models, 80B missing on 1 and 2 nodes); DP x TP x PP = 8 x nodes;
    DP x GAS x MBS = 256 sequences of 4,096 (the playbook's 1M tokens); the shapes give the figure's
    size labels (estimate_num_params: 1.342, 3.571, 8.861, 79.99 B)."""
    rows = _rows()
    assert len(rows) == 26 and all(r["metric"] == "mfu" for r in rows)
    assert sum(r["model_name"] == "nanotron-80B" for r in rows) == 5
    for r in rows:
        n, tp, pp, dp, mb = (parse_int(r[k]) for k in ("num_gpus", "tp", "pp", "dp", "micro_batch"))
        gas = int(r["notes"].split("gas=")[1].split(";")[0])
        assert dp * tp * pp == n and dp * gas * mb == parse_int(r["global_batch"]) == 256
        layers, hidden, heads, ffn, label = SHAPES[r["model_name"]]
        assert (parse_int(r["layers"]), parse_int(r["hidden"]), parse_int(r["heads"]), parse_int(r["ffn_hidden"])) == \
            (layers, hidden, heads, ffn)
        assert parse_int(r["kv_heads"]) == heads and parse_int(r["seq_len"]) == SEQ
        decimals = len(label.split(".")[1])
        assert f"{_params(layers, hidden, ffn) / 1e9:.{decimals}f}" == label == r["params_b"]
        assert 0 < float(r["value"]) < 50


def test_flop_count_matches_nanotrons_own_print():
    """scaling_benchmarks.py's comment for the 3.57B model at TP 2, MBS 3: "363.66 TFLOPs,
    14167.25 tok/s/gpu", i.e. 25.669 GFLOP per token; the MHA count with the full score matrix:
    3 x (l (8h^2 + 4sh + 6hF) + 2hV) per token."""
    per_token = nanotron_model_flops_per_token(28, 3072, 32, 32, 8192, VOCAB, SEQ)
    assert per_token == 3 * (28 * (8 * 3072**2 + 4 * SEQ * 3072 + 6 * 3072 * 8192) + 2 * 3072 * VOCAB)
    assert per_token == pytest.approx(363.66e12 / 14167.25, rel=1e-5)
    # The 1-node 1.34B cell: 44.32% of 989 TFLOP/s over 9.664 GFLOP per token
    r = next(r for r in _rows() if r["model_name"] == "nanotron-1.34B" and r["num_gpus"] == "8")
    assert measured_tokens_per_gpu(r) == pytest.approx(0.4432 * H100_BF16_PEAK / 9.663676416e9, rel=1e-9)


def test_pipeline_split_follows_nanotrons_cost_balance():
    """A layer costs 4h^2 + 3hF, the head Vh: for the 1.34B model the head weighs four layers, so
    PP 2 puts 11 layers on stage 0 and 5 beside the head; every split covers all layers."""
    assert nanotron_pp_layers(16, 2048, 8192, VOCAB, 2) == (11, 5)
    assert nanotron_pp_layers(28, 3072, 8192, VOCAB, 2) == (16, 12)
    assert nanotron_pp_layers(80, 8192, 28672, VOCAB, 4) == (21, 20, 20, 19)
    split = nanotron_pp_layers(80, 8192, 28672, VOCAB, 32)
    assert sum(split) == 80 and len(split) == 32 and min(split) >= 1


def test_rows_build_the_printed_plans_held_out():
    """Every cell: bf16, no recompute, fp32 gradients reduced in DDP buckets during the backward,
    ZeRO stage as printed, sequence parallel with TP, nanotron's split with PP; flash-attn 2,
    PyTorch ops; the aws-p5 profile (Hugging Face's cluster); held out."""
    cs = nanotron_playbook(_rows())
    assert len(cs) == 26
    assert "nanotron_playbook" in sources.HELD_OUT_SOURCES and not any(sources.is_fit_case(c) for c in cs)
    for c in cs:
        p, t, m = c.scenario["parallel"], c.scenario["training"], c.scenario["model"]
        assert (t["dtype"], t["recompute"], t["attention"], t["fused_kernels"]) == ("bf16", "none", "flash2", False)
        assert (p["grad_reduce_dtype"], p["overlap_grad_reduce"], p["gradient_accumulation_fusion"]) == ("fp32", True, False)
        assert p.get("sequence_parallel", False) == (p["tp"] > 1)
        assert ("pp_layers" in p) == (p["pp"] > 1)
        assert m["tied_embeddings"] == (m["ffn_hidden"] < 10_000)
        assert c.scenario["hardware"] == "aws-p5" and c.metric == "tokens_per_s_per_gpu"


@pytest.mark.slow
def test_nanotron_playbook_errors():
    """Held out, nothing fitted on them (about 70 CPU seconds). Doc: 26 rows, median |error| 8.4%,
    signed median -1.0%, mean 21.0%. Up to 32 nodes (21 rows) within -18% to +30%, median |error|
    5.7% (the 1.34B plans on 1-8 nodes the most pessimistic, -9% to -18%); on 64 nodes the EFA
    fabric prices the 3.57B (ZeRO-1) row within +11% and 80B (TP 16 across two nodes) within +27%,
    while 8.86B (ZeRO-0) stays +30% and 1.34B (DP 128 x TP 2 x PP 2) +122%; 80B on 4 nodes +157% (the
    source's memory-pressure run, 14.8% MFU): the page's findings. Since NCCL sees a p5 node's 32 EFA
    devices as 8 devices of 4 rails (nccl_graph.net_devices; median 8.0% -> 7.4%), 8.86B moved from +38%
    to +30% and 80B from +12% to +27%: its two-node TP AllReduces of 32-64 MiB now run NVLSTree, which
    NCCL's tables rate above Tree/LL128 there, as on the 2-node p5 sweep's 32 MiB row (+36%,
    tests/unit/test_transports.py). Since each kernel pays the GPU's measured gap (1.2 us) where it
    paid the host's 4 us launch, the 24 rows within 40% read 7.2% median (under 7% before)."""
    results = list(scoring.run_cases(nanotron_playbook(_rows())))
    errors = {r.case.label: r.error for r in results}
    assert statistics.median(abs(e) for e in errors.values()) <= 0.09
    assert abs(statistics.median(errors.values())) <= 0.03
    far = {k for k, e in errors.items() if abs(e) > 0.40}
    assert far == {"nanotron-1.34B dp128 tp2 pp2 mbs2 gas1 zero1 512 GPUs",
                   "nanotron-80B dp1 tp8 pp4 mbs1 gas256 zero0 32 GPUs"}
    assert all(e > 1.0 for k, e in errors.items() if k in far)
    near = [e for k, e in errors.items() if k not in far]
    assert len(near) == 24 and statistics.median(abs(e) for e in near) <= 0.075
    assert -0.20 <= min(near) and max(near) <= 0.40
    assert 0.25 <= errors["nanotron-8.86B dp128 tp4 pp1 mbs2 gas1 zero0 512 GPUs"] <= 0.35  # the gap left
    assert 0.05 <= errors["nanotron-3.57B dp128 tp4 pp1 mbs2 gas1 zero1 512 GPUs"] <= 0.15
    assert 0.20 <= errors["nanotron-80B dp32 tp16 pp1 mbs2 gas4 zero1 512 GPUs"] <= 0.32  # NVLSTree at 32-64 MiB
    small = [e for k, e in errors.items() if k.startswith("nanotron-1.34B") and " pp2 " in k and k not in far]
    assert len(small) == 4 and all(-0.20 <= e <= -0.05 for e in small)


def _allreduce(nodes: int, size: int) -> tuple[float, float]:
    """(time in us, busbw in GB/s) of an nccl-tests AllReduce over `nodes` x 8 GPUs of aws-p5."""
    from simulator.config.hardware import load_profile
    from simulator.costs.model import CostModel
    from simulator.hardware.topology import build_topology
    from simulator.replay.single_collective import time_collective

    p = load_profile("aws-p5")
    costs = CostModel(build_topology(p, nodes), None, None)
    gpus = [n * p.node.gpus + j for n in range(nodes) for j in range(p.node.gpus)]
    r = time_collective("allreduce", gpus, size, costs, launch_floor_s=p.gpu.kernel_launch_us * 1e-6,
                        plan=costs.plan("allreduce", gpus, size))
    return r.time_s * 1e6, r.busbw / 1e9


def test_aws_p5_profile_against_hugging_faces_own_cluster():
    """The profile the rows run on, against what Hugging Face measured on the same p5 fleet (Smol
    Training Playbook, 2025, "GPU-to-GPU Internode", nccl-tests with aws-samples' settings): AllReduce
    busbw 479 GB/s on 2 nodes and 320-350 GB/s on 3-16 nodes (within 10%); the 8-byte AllReduce took
    55.5 us on 2 nodes and 235 us on 16, which the profile prices 1.6-1.9x too slow (Tree/LL with
    aws-ofi-nccl's 75 us reported latency and EFA's deployed 40 us per crossing, both fitted or read
    elsewhere): a gap pinned here, small-message only, that the 64-node rows do not depend on."""
    assert _allreduce(2, 1 << 30)[1] == pytest.approx(479, rel=0.10)
    for nodes in (4, 8, 16):
        assert 320 * 0.95 <= _allreduce(nodes, 1 << 30)[1] <= 350 * 1.05
    assert 1.6 <= _allreduce(2, 8)[0] / 55.5 <= 2.0
    assert 1.4 <= _allreduce(16, 8)[0] / 235 <= 1.8


def test_printed_memory_gap_as_the_findings_record():
    """The figure's memory (rank 0 = the first pipeline stage, max_memory_allocated or
    max_memory_reserved: the figure does not say which) against the memory model on stage 0 of
    each printed plan: every row is under-predicted as allocated (-9.9% to -39.6%, median -26.8%)
    and as reserved (median -22.6%): the model prices nanotron's stack as Megatron's, and the terms
    nanotron keeps on top (torch DDP's bucket copy of the bf16 gradients, the sharded
    cross-entropy's extra fp32 copy, the stacked Q/K/V and K/V copies, the eager SwiGLU's SiLU
    output) are recorded in the findings, not modelled. A model that prices them moves these
    bounds, which is the point of pinning them."""
    import re

    from simulator.config.scenario import build_scenario
    from simulator.e2e_validation.nanotron_sources import nanotron_case
    from simulator.schedule.memory import estimate_memory
    from simulator.units import GiB

    alloc, res = [], []
    for r in _rows():
        scn = nanotron_case(r).scenario
        scn = scn if not isinstance(scn, dict) else build_scenario(scn)
        printed = float(re.search(r"mem=([\d.]+)GB", r["notes"]).group(1))
        e = estimate_memory(scn, 0)
        alloc.append(e.allocated / GiB / printed - 1)
        res.append(e.reserved / GiB / printed - 1)
    assert len(alloc) == 26 and max(alloc) < -0.09 and min(alloc) > -0.40
    assert statistics.median(alloc) == pytest.approx(-0.268, abs=0.005)
    assert statistics.median(res) == pytest.approx(-0.226, abs=0.005)

"""DeepSpeed ZeRO-3 as released in 2021 (``zero3_impl: deepspeed-2021``, schedule/zero.py): the
coordinator's fetch plan, one collective per parameter with per-rank host work and copies, the
re-gather of the recomputed forward, and no host run-ahead. Every expected number is derived by
hand from the DeepSpeed 0.3.13 code the docstrings cite."""

from collections import Counter

import pytest

from simulator.config.scenario import build_scenario
from simulator.errors import InputError
from simulator.costs.compute import compute_time
from simulator.schedule.build import build_schedule
from simulator.schedule.ir import CommOp, ComputeOp
from simulator.schedule.shapes import stage_units
from simulator.costs.host import host_cost_s
from simulator.schedule.zero import (COPY_DISPATCH_US, GATHER_LOOP_US, PERSISTENT_LOOP_US, SCATTER_LOOP_US,
                                     DeepSpeedZero3Of2021, _Entry, _Param, padded, persistent_copies, plan_2021)

PROFILE = """name: test-gpu
gpu: {name: T, arch: ampere, sms: 108, bf16_TFLOPS: 312, fp16_TFLOPS: 312, fp32_TFLOPS: 19.5,
      hbm_GiB: 80, hbm_GBps: 2039, gemm_efficiency: [{flops: 1.0e12, efficiency: 0.7}], kernel_launch_us: 4.0}
node: {gpus: 4, scale_up: {kind: nvswitch, link_GBps: 300, latency_us: 1.0},
       pcie: {gen: 4, GBps: 31}, nics: {count: 4, Gbps: 200, latency_us: 2.0}}
"""

GPT = {"layers": 2, "hidden": 256, "heads": 8, "vocab": 1000, "mlp": "gelu", "seq_len": 256,
       "tied_embeddings": True, "position_embedding": "learned"}


@pytest.fixture
def make(tmp_path):
    (tmp_path / "p.yaml").write_text(PROFILE)

    def _make(parallel=None, model=None, training=None, nodes=2):
        data = {"name": "z3", "hardware": "p.yaml", "nodes": nodes, "model": model or GPT,
                "training": {"micro_batch": 1, "global_batch": 8, "recompute": "full", **(training or {})},
                "parallel": {"zero": 3, "zero3_impl": "deepspeed-2021", "zero3_param_persistence_threshold": 300,
                             **(parallel or {})}}
        return build_scenario(data, source="z3.yaml", base_dir=tmp_path)
    return _make


def _trace(sizes: dict[str, int], order: str) -> list[_Entry]:
    fwd = [_Entry("u", g, "fwd", (_Param(g, sizes[g]),)) for g in order]
    bwd = [_Entry("u", g, "bwd", (_Param(g, sizes[g]),)) for g in reversed(order)]
    return fwd + bwd


def test_plan_prefetches_only_when_nothing_is_in_flight_and_skips_available_parameters():
    """Three 100-element modules, forward then backward, bucket 150, no reuse: A is gathered on
    demand and prefetches B and C (the bucket is reached by C, the overshooting last one); B waits
    for its prefetch and, scanning past the available C and B, prefetches A's backward use; C is
    there and A is in flight, so C's hook neither synchronises nor prefetches; C's backward use was
    released after forward: a demand gather, then B; B waits for it; A was prefetched long ago."""
    plan = plan_2021(_trace({"A": 100, "B": 100, "C": 100}, "ABC"), max_live=10**9, bucket=150, reuse=0)
    got = [(tuple(p.name for p in f.demand), f.sync, tuple(p.name for p in f.prefetch)) for f in plan]
    assert got == [(("A",), True, ("B", "C")), ((), True, ("A",)), ((), False, ()),
                   (("C",), True, ("B",)), ((), True, ()), ((), False, ())]


def test_plan_stops_prefetching_at_max_live():
    plan = plan_2021(_trace({"A": 100, "B": 100, "C": 100}, "ABC"), max_live=100, bucket=150, reuse=0)
    assert all(not f.prefetch for f in plan)  # A alone is already max_live elements
    assert sum(len(f.demand) for f in plan) == 6


def test_pinned_parameter_is_gathered_once_and_counts_against_max_live():
    """E (100 elements, pinned: the root's external parameter), then A and B (50 each), forward
    then backward, max_live 150, bucket 1, no reuse. E's hook gathers it and, 100 < 150 available,
    prefetches A; A waits for it, and with E and A there (150) prefetches nothing; B, B's and A's
    backward uses are then gathered on demand, never prefetched (E + one module = 150); E's
    backward use finds it there (no gather, no wait). Unpinned, E would be released after the
    forward and gathered again."""
    fwd = [_Entry("u", g, "fwd", (_Param(g, k),)) for g, k in (("E", 100), ("A", 50), ("B", 50))]
    bwd = [_Entry("u", e.gate, "bwd", e.params) for e in reversed(fwd)]
    plan = plan_2021(fwd + bwd, max_live=150, bucket=1, reuse=0, pinned=frozenset({"E"}))
    got = [(tuple(p.name for p in f.demand), f.sync, tuple(p.name for p in f.prefetch)) for f in plan]
    assert got == [(("E",), True, ("A",)), ((), True, ()), (("B",), True, ()),
                   (("B",), True, ()), (("A",), True, ()), ((), False, ())]
    unpinned = plan_2021(fwd + bwd, max_live=150, bucket=1, reuse=0)
    assert sum(p.name == "E" for f in unpinned for p in f.demand + f.prefetch) == 2


def test_held_embedding_stops_prefetching_at_max_live(make):
    """With max_live at the embedding's elements (GPT-530B's 1.09e9 against the default 1e9), the
    held embedding alone fills it: no fetch of the micro-batch prefetches. With room for the
    embedding and two of the largest modules (the live one and the one prefetched), prefetching
    resumes."""
    probe = make()
    emb = next(p.numel for e in DeepSpeedZero3Of2021(probe, stage_units(probe, 0)).trace
               for p in e.params if p.name == "embedding")
    scn = make({"zero3_max_live_parameters": emb})
    z = DeepSpeedZero3Of2021(scn, stage_units(scn, 0))
    assert all(not f.prefetch for f in z.fetches)
    largest = max(p.numel for e in z.trace for p in e.params if p.name != "embedding")
    roomy = make({"zero3_max_live_parameters": emb + 2 * largest + 1})
    z2 = DeepSpeedZero3Of2021(roomy, stage_units(roomy, 0))
    assert any(f.prefetch for f in z2.fetches)


@pytest.mark.parametrize("hidden, fc1_gathers", [(8192, 2), (12288, 3)])
def test_recomputed_forward_regathers_unless_the_backward_use_is_within_max_reuse_distance(make, hidden,
                                                                                          fc1_gathers):
    """Full recompute re-runs each layer's forward in its backward, with its module hooks, and the
    trace records both passes: qkv, proj, fc1, fc2 (recomputed), then fc2, fc1, proj, qkv. At its
    post-hook a parameter is kept if its module's next use is less than max_reuse_distance (1e9)
    elements of trace away: fc2's is the next entry (0, kept); fc1's is two fc2 uses away (8h²:
    kept for h = 8192, released for GPT-175B's 12288); proj's and qkv's are 2(4h² + 4h²) + h² and
    more away (released). So each weight is gathered once for forward and once or twice in
    backward (layers 0 and 1 of 4; the last layer's forward use is within reach of its backward at
    h = 8192); the tied embedding once: the root module holds it, a registered external parameter,
    for the whole micro-batch (Megatron-LM-v1.1.5-ZeRO3's GPT2Model)."""
    model = dict(GPT, hidden=hidden, heads=128, layers=4)
    z = DeepSpeedZero3Of2021(make(model=model), stage_units(make(model=model), 0))
    gathers = Counter(p.name for f in z.fetches for p in f.demand + f.prefetch)
    gate_of = {(e.unit, p.name): e.gate for e in z.trace for p in e.params}
    for layer in (0, 1):
        per_gate = {gate_of[(f"L{layer}", name)]: k for name, k in gathers.items() if (f"L{layer}", name) in gate_of}
        assert per_gate == {"qkv": 3, "proj": 3, "fc1": fc1_gathers, "fc2": 2}
    assert gathers["embedding"] == 1


def test_every_parameter_is_its_own_collective_with_per_rank_host_work_and_copies(make):
    """Per micro-batch: one AllGather per gather of the plan and, with contiguous_gradients, one
    ReduceScatter per gathered parameter, each of its padded size; around each AllGather a Python
    loop of N steps, N copy dispatches and launches, and N copies of twice the tensor on the
    group's NCCL stream; around each ReduceScatter the same with the reduce-scatter loop."""
    scn = make({"zero3_contiguous_gradients": True})
    n = scn.dp
    z = DeepSpeedZero3Of2021(scn, stage_units(scn, 0))
    prog = build_schedule(scn).programs["pp0.cp0"]
    params = {p.name: p.numel for e in z.trace for p in e.params}
    n_gathers = sum(len(f.demand) + len(f.prefetch) for f in z.fetches)
    ags = [op for op in prog if isinstance(op, CommOp) and op.op == "allgather" and "persistent" not in op.name]
    rss = [op for op in prog if isinstance(op, CommOp) and op.op == "reducescatter"]
    assert len(ags) == n_gathers * scn.n_micro and len(rss) == len(params) * scn.n_micro
    assert sorted(op.size_bytes for op in rss[:len(params)]) == sorted(padded(v, n) * 2 for v in params.values())
    sizes = {padded(v, n) * 2 for v in params.values()}
    assert all(op.size_bytes in sizes for op in ags)
    host = [op for op in prog if isinstance(op, ComputeOp) and op.kind == "host" and op.count == n
            and "persistent" not in op.name]
    gpu = scn.profile.gpu
    assert Counter(op.host_us for op in host) == {GATHER_LOOP_US: len(ags), SCATTER_LOOP_US: len(rss),
                                                   COPY_DISPATCH_US + gpu.kernel_launch_us: len(ags) + len(rss)}
    for op in host:
        assert compute_time(op, gpu) == pytest.approx(n * op.host_us * 1e-6)
        assert compute_time(op, gpu, overlapped=True) == compute_time(op, gpu)  # no SM, no slowdown
    copies = [op for op in prog if isinstance(op, ComputeOp) and (".copies" in op.name or ".flatten" in op.name)
              and "persistent" not in op.name]
    assert len(copies) == len(ags) + len(rss)
    assert all(op.count == n and op.stream == "dp" for op in copies)


def test_without_contiguous_gradients_each_ipg_bucket_is_allreduced_whole(make):
    """DeepSpeed 0.3.12-0.4.x default to contiguous_gradients=False in stage 3: reduce_ipg_grads
    then flattens the IPG bucket, AllReduces it whole and copies it back (buffered_reduce_fallback).
    The bucket is flushed when the next gradient would take it past reduce_bucket_size elements
    and at the end of the backward. Gradients in backward order (h = 256, 2 layers, tied
    embedding): fc2 262144, fc1 262144, o 65536, qkv 196608 per layer, then the embedding 321536.
    With a 500,000-element bucket: [fc2] | [fc1, o] | [qkv, fc2] | [fc1, o] | [qkv] | [embedding],
    i.e. 262144, 327680, 458752, 327680, 196608, 321536 elements, unpadded (every gradient once:
    their sum is the 1,894,400 parameters gathered); no ReduceScatter and no per-rank work."""
    scn = make({"zero3_reduce_bucket_elements": 500_000})
    z = DeepSpeedZero3Of2021(scn, stage_units(scn, 0))
    assert not z.contiguous  # the stage-3 default of DeepSpeed 0.3.12-0.4.x
    prog = build_schedule(scn).programs["pp0.cp0"]
    ars = [op for op in prog if isinstance(op, CommOp) and op.op == "allreduce" and op.name.startswith("zero3.ar.")]
    assert [op.size_bytes // 2 for op in ars] == [262144, 327680, 458752, 327680, 196608, 321536]
    assert sum(op.size_bytes // 2 for op in ars) == sum({p.name: p.numel for e in z.trace for p in e.params}.values())
    assert not [op for op in prog if isinstance(op, CommOp) and op.op == "reducescatter"]
    assert all(op.host_us == GATHER_LOOP_US or op.host_us == COPY_DISPATCH_US + scn.profile.gpu.kernel_launch_us
               for op in prog if isinstance(op, ComputeOp) and op.kind == "host" and op.count == scn.dp
               and "persistent" not in op.name)
    # flatten (a copy only for two or more gradients: one is flattened to a view of itself,
    # torch/csrc/utils/tensor_flatten.h), 1/N scale and copy back (one copy_ per gradient), each
    # reading and writing the bucket
    singles = [True, False, False, False, True, True]
    for ar, single in zip(ars, singles, strict=True):
        stem = ar.name
        ops = {op.name.rsplit(".", 1)[1]: op for op in prog if isinstance(op, ComputeOp) and op.name.startswith(stem + ".")}
        expect = {"scale": 2 * ar.size_bytes, "copy_back": 2 * ar.size_bytes}
        if not single:
            expect["flatten"] = 2 * ar.size_bytes
        assert {k: op.hbm_bytes for k, op in ops.items() if k != "sync"} == expect
    assert [op.count for op in prog if isinstance(op, ComputeOp) and op.name.endswith(".copy_back")] == [1, 2, 2, 2, 1, 1]


def test_a_bucket_a_weight_overflows_is_allreduced_beside_that_weights_backward(make):
    """Without contiguous_gradients 0.3.13 flushes the IPG bucket from the gradient hook of the
    tensor that would overflow it, on a reduction stream it never makes wait for the default
    stream; the next fetch's torch.cuda.synchronize() waits for it. Megatron-LM's layers put a
    bias or norm gradient between any two weights, before the next module's fetch. With a
    200,000-element bucket (h = 256: fc2 and fc1 262,144 elements, o 65,536, qkv 196,608): fc2
    fills a bucket alone, so fc1's bias hook flushes it in front of fc1's fetch, and fc1's
    gather starts only after that AllReduce's copy back; o stays in the bucket until the QKV
    weight's hook, after QKV's fetch, so its AllReduce runs while QKV's backward GEMMs do."""
    from simulator.simulation import simulate_scenario

    # no reuse and no prefetch: every backward use is gathered on demand, by a fetch that
    # synchronises the device
    scn = make({"zero3_reduce_bucket_elements": 200_000, "zero3_max_reuse_distance": 0,
                "zero3_max_live_parameters": 1})
    res = simulate_scenario(scn)
    rank = res.report.critical_rank
    recs = {r.name: r for r in res.trace.records(rank)}
    prog = res.schedule.programs[res.schedule.role_of(rank)]
    index = {op.name: i for i, op in enumerate(prog)}
    ars = [op.name for op in prog if isinstance(op, CommOp) and op.op == "allreduce" and op.name.startswith("zero3.ar.")]
    # buckets in backward order: [fc2] | [fc1] | [o] | [qkv] (flushed by the next layer's fc2)
    assert ars[:4] == ["zero3.ar.L1.fc2.bwd.mb0", "zero3.ar.L1.fc1.bwd.mb0", "zero3.ar.L1.o.bwd.mb0",
                       "zero3.ar.L1.qkv.bwd.mb0"]
    fc2 = recs["zero3.ar.L1.fc2.bwd.mb0"]
    assert fc2.start >= recs["L1.fc2.bwd.wgrad"].end
    assert recs["zero3.ag.L1.fc1.bwd.mb0"].start >= recs["zero3.ar.L1.fc2.bwd.mb0.copy_back"].end
    # o's flush is issued from QKV's fetch and overlaps QKV's backward GEMMs
    sync = prog[index["zero3.ar.L1.o.bwd.mb0.sync"]]
    assert index["zero3.fetch.L1.qkv.bwd.mb0"] in sync.deps
    o, dgrad = recs["zero3.ar.L1.o.bwd.mb0"], recs["L1.qkv.bwd.dgrad"]
    assert o.start < dgrad.end and dgrad.start < o.end
    # and the next layer's first gather waits for it (the synchronisation at every fetch)
    first_next = next(r for r in res.trace.records(rank)
                      if r.kind == "allgather" and r.name.startswith("zero3.ag.L0.") and r.start > dgrad.end)
    assert first_next.start >= recs["zero3.ar.L1.o.bwd.mb0.copy_back"].end


def test_per_rank_host_work_is_timed_once(make):
    """The per-rank loops are host ops whose duration is the host's time (N steps of their
    microseconds); the issue queue of costs/host.py must not charge them, nor the copy kernels
    launched inside those loops, a second time (11 us a kernel would add N x 33 us per gather)."""
    scn = make({"zero3_contiguous_gradients": True})
    n = scn.dp
    prog = build_schedule(scn).programs["pp0.cp0"]
    per_rank = [op for op in prog if isinstance(op, ComputeOp) and op.count >= n
                and not op.name.startswith("zero3_2021.")]  # the step's per-tensor loops are not per rank
    assert {op.kind for op in per_rank} == {"host", "copy"}
    assert sum(host_cost_s(op) for op in per_rank) == 0.0
    views = next(op for op in per_rank if op.name.endswith(".views") and "zero3.ag." in op.name)
    assert compute_time(views, scn.profile.gpu) == pytest.approx(n * GATHER_LOOP_US * 1e-6)
    # the kernels launched from Python (zero-fill, GEMMs) keep their issue cost
    assert all(host_cost_s(op) > 0 for op in prog if isinstance(op, ComputeOp) and op.name.endswith(".zeros"))


def test_persistent_parameters_are_gathered_after_every_step_with_a_copy_per_rank(make):
    """_post_step gathers the persistent parameters (fewer than param_persistence_threshold = 300
    elements here) with _allgather_params: one AllGather of their padded shards, then one copy_
    per parameter and rank from Python. Megatron-LM's layer at h = 256 holds below 300 elements
    the two LayerNorms' weights and biases and the row-parallel biases (projection, fc2), six
    tensors of 256; the QKV (768) and fc1 (1,024) biases are above; with the final LayerNorm's
    two: 2 x 6 + 2 = 14 tensors, 14 x N copy launches at PERSISTENT_LOOP_US + the launch each."""
    scn = make()
    n = scn.dp
    z = DeepSpeedZero3Of2021(scn, stage_units(scn, 0))
    assert sorted(z.small_tensors()) == [256] * 14
    prog = build_schedule(scn).programs["pp0.cp0"]
    ag = next(op for op in prog if isinstance(op, CommOp) and op.name == "zero3.persistent.allgather")
    assert ag.size_bytes == 14 * padded(256, n) * 2
    loop = next(op for op in prog if isinstance(op, ComputeOp) and op.name == "zero3.persistent.param_copy_launches")
    assert loop.kind == "host" and loop.count == 14 * n
    assert compute_time(loop, scn.profile.gpu) == pytest.approx(
        14 * n * (PERSISTENT_LOOP_US + scn.profile.gpu.kernel_launch_us) * 1e-6)
    # the step's last op waits for the loop and its copies
    assert prog[-1].name == "zero3.persistent.done" and loop is prog[prog[-1].deps[0]]


@pytest.mark.parametrize("numel, n, expected", [
    (20480, 640, 640),    # GPT-530B's LayerNorm over 640 ranks: partitions of 32, all inside
    (20480, 2240, 2048),  # partitions of 10: ranks 2,048-2,239 hold padding only
    (61440, 2240, 2195),  # its QKV bias: partitions of 28, 61,440 / 28 = 2,194.3
    (81920, 1120, 1108),  # its fc1 bias over 1,120: partitions of 74, 81,920 / 74 = 1,107.03
    (12288, 1536, 1536),  # GPT-175B's LayerNorm over 1,536: partitions of 8
    (100, 2240, 100),     # fewer elements than ranks: one element each, 100 ranks copy
])
def test_persistent_copies_skip_the_ranks_holding_padding_only(numel, n, expected):
    """_allgather_params copies rank i's share of a parameter only if i * ceil(numel / n) < numel."""
    assert persistent_copies(numel, n) == expected
    part = padded(numel, n) // n
    assert expected == sum(1 for i in range(n) if i * part < numel)


def test_persistent_copy_launches_count_only_ranks_whose_partition_holds_the_parameter(make):
    """At h = 40 over 16 ranks every norm and bias is persistent (threshold 300): the LayerNorms'
    weights and biases and the projection and fc2 biases hold 40 elements (partitions of 3: 14
    copies), the QKV bias 120 (partitions of 8: 15), the fc1 bias 160 (partitions of 10: 16); two
    layers and the final LayerNorm: 2 x (6 x 14 + 15 + 16) + 2 x 14 = 258 launches, not 18 x 16."""
    scn = make(model={**GPT, "hidden": 40, "heads": 4}, training={"global_batch": 16}, nodes=4)
    assert scn.dp == 16
    prog = build_schedule(scn).programs["pp0.cp0"]
    loop = next(op for op in prog if isinstance(op, ComputeOp) and op.name == "zero3.persistent.param_copy_launches")
    assert loop.count == 258
    copies = next(op for op in prog if isinstance(op, ComputeOp) and op.name == "zero3.persistent.param_copies")
    assert copies.count == 258 and copies.hbm_bytes == 2.0 * (2 * (6 * 40 + 120 + 160) + 2 * 40) * 2


def test_contiguous_gradients_only_with_deepspeed_2021(make):
    with pytest.raises(InputError, match="zero3_contiguous_gradients"):
        make({"zero3_impl": "deepspeed", "zero3_contiguous_gradients": False})


def test_no_host_run_ahead(make):
    """Every gather starts with torch.cuda.synchronize(): no parameter AllGather starts before the
    kernels issued ahead of it have finished. The later DeepSpeed coordinator (zero3_impl:
    deepspeed) issues a layer's gathers ahead of its compute, so there they do."""
    from simulator.simulation import simulate_scenario

    def run_ahead(impl: str) -> int:
        # compute-bound layers, one-parameter prefetch buckets and no reuse, so that both gather
        # all along the step and a gather issued early has compute to run beside
        scn = make({"zero3_impl": impl, "zero3_prefetch_bucket_elements": 1, "zero3_max_reuse_distance": 0},
                   model=dict(GPT, hidden=1024, heads=16, seq_len=2048), training={"micro_batch": 8, "global_batch": 64})
        res = simulate_scenario(scn)
        rank = res.report.critical_rank
        recs = list(res.trace.records(rank))
        prog = res.schedule.programs[res.schedule.role_of(rank)]
        early, last_compute_end = 0, 0.0
        for r, op in zip(recs, prog):
            if isinstance(op, ComputeOp) and op.stream == "compute":
                last_compute_end = max(last_compute_end, r.end)
            elif isinstance(op, CommOp) and op.op == "allgather":
                early += r.start < last_compute_end - 1e-12
        return early

    assert run_ahead("deepspeed-2021") == 0
    assert run_ahead("deepspeed") > 0


def test_fp16_step_checks_every_partition_on_the_host_and_allreduces_two_flags(make):
    """DeepSpeed 0.3.13's stage-3 step (stage3.py ``step``) on each rank's partitions. The fp16
    groups hold every parameter tensor of Megatron-LM's layers: per layer the fused QKV,
    projection and two MLP weights, their four biases, two LayerNorms' weights and biases (12),
    the embedding (one module of the schedule) and the final LayerNorm's two: 2 x 12 + 1 + 2 = 27.
    ``has_overflow_partitioned_grads_serial`` runs ``float(x.float().sum())`` per partition (two
    kernels, three host steps), then the overflow ByteTensor is AllReduced over the data-parallel
    group (1 byte) and read; ``get_grad_norm_direct`` runs ``g.double().norm(2)`` and ``.item()``
    per partition (two kernels, two host steps), then one fp32 AllReduce (4 bytes) and a read. The
    bytes per partition element: 10 for the check, 18 for the norm, 10 to flatten and cast to
    fp32, 8 to unscale, 28 for Adam, 6 for the fp16 copy; the persistent gather comes after."""
    scn = make()
    n = scn.dp
    z = DeepSpeedZero3Of2021(scn, stage_units(scn, 0))
    assert z.parameter_tensors() == 27
    prog = build_schedule(scn).programs["pp0.cp0"]
    step = [op for op in prog if op.name.startswith("zero3_2021.")]
    assert [op.name.removeprefix("zero3_2021.") for op in step] == [
        "overflow_check", "overflow_check.host_reads", "overflow.allreduce", "overflow.read", "grad_norm",
        "grad_norm.host_reads", "grad_norm.allreduce", "grad_norm.read", "fp32_grads", "unscale", "adam", "fp16_copy"]
    by = {op.name.removeprefix("zero3_2021."): op for op in step}
    assert (by["overflow_check"].count, by["overflow_check.host_reads"].count) == (2 * 27, 3 * 27)
    assert (by["grad_norm"].count, by["grad_norm.host_reads"].count) == (2 * 27, 2 * 27)
    for name, size in (("overflow", 1), ("grad_norm", 4)):
        ar = by[f"{name}.allreduce"]
        assert isinstance(ar, CommOp) and ar.op == "allreduce" and ar.size_bytes == size and ar.axes == z.axes
    # the rank's partition: every module's elements over the N ranks, rounded up
    local = sum(-(-m.numel // n) for c in stage_units(scn, 0) for u in c for m in u.modules)
    for name, per in (("overflow_check", 10), ("grad_norm", 18), ("fp32_grads", 10), ("unscale", 8), ("adam", 28),
                      ("fp16_copy", 6)):
        assert by[name].hbm_bytes == per * local
    # each step waits for the one before it, and the persistent gather for the fp16 copy
    idx = {op.name: i for i, op in enumerate(prog)}
    for a, b in zip(step, step[1:]):
        assert idx[a.name] in b.deps
    views = next(op for op in prog if op.name == "zero3.persistent.views")
    assert idx["zero3_2021.fp16_copy"] in views.deps

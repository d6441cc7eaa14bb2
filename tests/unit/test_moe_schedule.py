"""Expert parallelism: All-to-All volumes in closed form, conservation, Megatron's expert rank
layout, the expert-data-parallel gradient group, routing imbalance and token dropping."""

import math
from collections import Counter

import pytest

from simulator.config.scenario import build_scenario
from simulator.errors import InputError
from simulator.schedule.build import build_schedule, role_comm_bytes
from simulator.schedule.ir import CommOp, ComputeOp
from simulator.schedule.moe import expected_nodes_hit, rank_load
from tests.unit.test_schedule_invariants import PROFILE, check_invariants

# 8 experts of 128, top-2, one dense layer first; 4 GPUs per node (PROFILE)
MOE = {"layers": 4, "hidden": 256, "heads": 8, "kv_heads": 4, "ffn_hidden": 512, "vocab": 1000,
       "mlp": "swiglu", "seq_len": 512, "experts": 8, "top_k": 2, "moe_ffn_hidden": 128,
       "first_dense_layers": 1}


def moe_scenario_maker(tmp_path, base_model, nodes=2, global_batch=8):
    """A function building MoE scenarios on PROFILE: ``base_model`` with the caller's overrides."""
    (tmp_path / "p.yaml").write_text(PROFILE)

    def _make(parallel, nodes=nodes, training=None, model=None, profile=None):
        data = {"name": "moe", "hardware": "p.yaml", "nodes": nodes, "model": {**base_model, **(model or {})},
                "training": {"micro_batch": 1, "global_batch": global_batch, **(training or {})},
                "parallel": parallel}
        return build_scenario(data, source="moe.yaml", base_dir=tmp_path, profile=profile)
    return _make


@pytest.fixture
def make(tmp_path):
    return moe_scenario_maker(tmp_path, MOE)


PLANS = {
    "ep4": {"ep": 4},
    "ep8_zero1": {"ep": 8, "zero": 1},
    "ep2_tp2_etp1": {"ep": 2, "tp": 2, "sequence_parallel": True, "etp": 1},
    "ep2_tp2_etp2_pp2": {"ep": 2, "tp": 2, "sequence_parallel": True, "pp": 2},
    "allgather": {"ep": 4, "moe_dispatcher": "allgather"},
    "deepep": {"ep": 8, "moe_dispatcher": "deepep"},
    "fsdp2_ep4": {"ep": 4, "zero": 3, "zero3_impl": "fsdp2"},
    "shared_overlap": {"ep": 4, "moe_shared_expert_overlap": True},
}


@pytest.mark.parametrize("name", list(PLANS))
def test_moe_plan_invariants(make, name):
    model = {"shared_experts": 1} if "shared" in name or "deepep" in name else None
    check_invariants(build_schedule(make(PLANS[name], model=model)))


def _a2a(program):
    """The token All-to-Alls (the alltoall dispatcher's probability All-to-Alls left out)."""
    return [op for op in program if isinstance(op, CommOp) and op.op == "alltoall" and ".probs." not in op.name]


def _probs_a2a(program):
    return [op for op in program if isinstance(op, CommOp) and op.op == "alltoall" and ".probs." in op.name]


def test_all_to_all_volume_per_gpu_per_layer(make):
    """Each MoE layer moves T·k·h·B bytes per GPU in each of its four All-to-Alls (dispatch and
    combine, forward and backward); T = b·s tokens of a micro-batch, k = 2, h = 256, B = 2."""
    scn = make({"ep": 4})
    sched = build_schedule(scn)
    prog = sched.programs["pp0.cp0"]
    per_op = 1 * 512 * 2 * 256 * 2
    a2a = _a2a(prog)
    assert {op.size_bytes for op in a2a} == {per_op}
    assert all(op.axes == ("ep",) for op in a2a)
    moe_layers, n_micro = 3, scn.n_micro
    assert len(a2a) == 4 * moe_layers * n_micro
    # the alltoall dispatcher's probabilities: T·k values of B bytes, forward and their gradients back
    probs = _probs_a2a(prog)
    assert {op.size_bytes for op in probs} == {512 * 2 * 2} and len(probs) == 2 * moe_layers * n_micro
    assert role_comm_bytes(prog, sched.grid)["alltoall"] == moe_layers * n_micro * (4 * per_op + 2 * 512 * 2 * 2)


def test_alltoall_dispatcher_sorts_rows_by_local_expert(make):
    """Megatron's permutation 2 (sort_chunks_by_idxs) with 8 experts over ep 4 (2 local): the
    T·k received rows and their probabilities read and written once before the experts and once
    after, forward and backward; none with one local expert, none with DeepEP."""
    def sorts(prog):
        return [op for op in prog if isinstance(op, ComputeOp) and "sort_chunks" in op.name]

    scn = make({"ep": 4})
    prog = build_schedule(scn).programs["pp0.cp0"]
    ops = sorts(prog)
    assert len(ops) == 4 * 3 * scn.n_micro
    assert {op.hbm_bytes for op in ops} == {2 * 512 * 2 * (256 + 1) * 2}
    assert not sorts(build_schedule(make({"ep": 8})).programs["pp0.cp0"])
    assert not sorts(build_schedule(make({"ep": 4, "moe_dispatcher": "deepep"})).programs["pp0.cp0"])


def test_every_token_dispatched_is_combined(make):
    """Conservation: per layer and micro-batch the combine returns what the dispatch sent, and the
    backward moves the same rows back, with or without imbalance and dropping."""
    for training in ({}, {"moe_imbalance": 1.7}, {"moe_routing_seed": 3}):
        for model in ({}, {"capacity_factor": 1.25}):
            scn = make({"ep": 4}, training={"global_batch": 32, **training}, model=model)
            prog = build_schedule(scn).programs["pp0.cp0"]
            sizes = Counter()
            for op in _a2a(prog):
                kind = "dispatch" if ".dispatch." in op.name else "combine"
                sizes[(op.tag.layer, op.tag.mb_index, op.tag.phase, kind)] += op.size_bytes
            keys = {k[:3] for k in sizes}
            assert len(keys) == 3 * scn.n_micro * 2 and scn.n_micro == 4
            for layer, mb, phase in keys:
                assert sizes[(layer, mb, phase, "dispatch")] == sizes[(layer, mb, phase, "combine")] > 0


def test_expert_rank_layout_follows_megatron_tp_ep_dp(make):
    """Megatron's expert rank generator (tp-ep-dp-pp with tp = etp): with tp 2, etp 1 and ep 2 on
    8 GPUs, rank 0's EP group is ranks {0, 1} (it spans the TP pair), its expert-DP group every
    second rank; with etp = tp = 2 the EP group steps over the TP pair: {0, 2}."""
    g = build_schedule(make({"ep": 2, "tp": 2, "sequence_parallel": True, "etp": 1})).grid
    assert g.group(0, ("ep",)) == (0, 1)
    assert g.group(0, ("edp",)) == (0, 2, 4, 6)
    assert g.group(5, ("edp",)) == (1, 3, 5, 7)
    g = build_schedule(make({"ep": 2, "tp": 2, "sequence_parallel": True})).grid
    assert g.group(0, ("etp",)) == (0, 1)
    assert g.group(0, ("ep",)) == (0, 2)
    assert g.group(0, ("edp",)) == (0, 4)
    g = build_schedule(make({"ep": 2, "tp": 2, "sequence_parallel": True, "pp": 2})).grid
    assert g.group(4, ("ep",)) == (4, 6)  # second stage: the same layout, offset by one stage


def test_expert_gradients_reduce_over_expert_data_parallel_group(make):
    """DDP: the dense gradients are AllReduced over dp (8 ranks), the expert gradients over the
    ranks holding the same experts (8 / ep = 2), each of its own bytes."""
    scn = make({"ep": 4})
    prog = build_schedule(scn).programs["pp0.cp0"]
    ar = [op for op in prog if isinstance(op, CommOp) and op.op == "allreduce"]
    expert = sum(op.size_bytes for op in ar if op.axes == ("edp",))
    dense = sum(op.size_bytes for op in ar if op.axes == ("dp",))
    local_experts = 8 // 4
    assert expert == 3 * local_experts * 3 * 256 * 128 * 2  # 3 MoE layers, SwiGLU, bf16 grads
    assert expert + dense == 2 * (sum(op.size_bytes for op in ar) // 2)
    assert build_schedule(scn).grid.group(0, ("edp",)) == (0, 4)


def test_fsdp2_shards_experts_over_expert_dp(make):
    prog = build_schedule(make({"ep": 4, "zero": 3, "zero3_impl": "fsdp2"})).programs["pp0.cp0"]
    ags = [op for op in prog if isinstance(op, CommOp) and op.op == "allgather" and ".experts." in op.name]
    assert ags and all(op.axes == ("edp",) for op in ags)
    assert {op.size_bytes for op in ags} == {2 * 3 * 256 * 128 * 2}  # 2 local experts, bf16


def test_grouped_gemm_rows_and_flops(make):
    """Balanced: a rank's grouped GEMMs process T·k rows over its E/ep experts; forward FLOPs of
    the routed experts are 2·T·k·3·h·f, the same as the dense-equivalent count."""
    prog = build_schedule(make({"ep": 4})).programs["pp0.cp0"]
    fc1 = [op for op in prog if isinstance(op, ComputeOp) and op.name == "L1.moe.experts.fc1.fwd"]
    T, k, h, f = 512, 2, 256, 128
    assert fc1[0].count == 2 and fc1[0].gemm == (T * k // 2, 2 * f, h)
    fwd = sum(op.flops for op in prog if isinstance(op, ComputeOp) and op.tag.layer == 1 and op.tag.mb_index == 0
              and op.tag.phase == "fwd" and ".experts.fc" in op.name)
    assert fwd == 2 * T * k * 3 * h * f


def test_imbalance_slows_the_hottest_rank_and_capacity_caps_it():
    """Expected max/mean 2 per expert, 16 local experts: the hottest rank carries 1 + 1/16 of the
    balanced share; a capacity factor of 1.25 caps the hottest expert at 1.25."""
    assert rank_load(256, 8, 16, 4096, 2.0, None, None) == pytest.approx(1 + 1 / 16)
    assert rank_load(256, 8, 16, 4096, 2.0, 1.25, None) == pytest.approx(1 + 0.25 / 16)
    assert rank_load(256, 8, 256, 4096, 2.0, None, None) == pytest.approx(2.0)  # one expert per rank


def test_multinomial_routing_is_seeded_and_near_balanced_for_many_tokens():
    a = rank_load(64, 8, 8, 8192, 1.0, None, 7)
    assert a == rank_load(64, 8, 8, 8192, 1.0, None, 7)
    # 65,536 tokens x 8 over 8 ranks: relative spread ~ 1/sqrt(65536) -> max/mean within 1%
    assert 1.0 < a < 1.01
    # one expert per rank, mean 16·8 = 128 rows: the max of 64 near-Poisson counts is about
    # mean + 2.4·sqrt(mean), i.e. 1 + 2.4/sqrt(128) = 1.21
    few = rank_load(64, 8, 64, 16, 1.0, None, 7)
    assert 1.1 < few < 1.35
    capped = rank_load(64, 8, 64, 16, 1.0, 1.0, 7)
    assert capped <= 1.0 + 1e-9


def test_imbalance_scales_all_to_all_and_expert_gemms(make):
    base = build_schedule(make({"ep": 4})).programs["pp0.cp0"]
    hot = build_schedule(make({"ep": 4}, training={"moe_imbalance": 1.5})).programs["pp0.cp0"]
    load = 1 + 0.5 / 2
    assert _a2a(hot)[0].size_bytes == int(_a2a(base)[0].size_bytes * load)
    fl = lambda p: sum(op.flops for op in p if isinstance(op, ComputeOp) and ".experts." in op.name)  # noqa: E731
    assert fl(hot) == pytest.approx(fl(base) * load, rel=1e-3)


def test_allgather_dispatcher_sizes(make):
    """MoEAllGatherTokenDispatcher: AllGather of the T tokens over etp×ep, ReduceScatter back."""
    prog = build_schedule(make({"ep": 4, "moe_dispatcher": "allgather"})).programs["pp0.cp0"]
    ops = [op for op in prog if isinstance(op, CommOp) and op.axes == ("etp", "ep")]
    assert {op.size_bytes for op in ops} == {512 * 4 * 256 * 2}
    # 3 MoE layers x 1 micro-batch: fwd dispatch AG + bwd combine AG, fwd combine RS + bwd dispatch RS
    assert Counter(op.op for op in ops) == Counter({"allgather": 2 * 3, "reducescatter": 2 * 3})


def test_deepep_sends_each_token_once_per_node():
    """E = 256 experts over 8 nodes, k = 8: a token reaches 8·(1 − C(224, 8)/C(256, 8)) nodes."""
    expected = 8 * (1 - math.comb(224, 8) / math.comb(256, 8))
    assert expected_nodes_hit(256, 8, 8) == pytest.approx(expected)
    assert 5.0 < expected < 6.0
    assert expected_nodes_hit(256, 8, 1) == 1.0


def test_deepep_splits_the_exchange_at_the_node(make):
    prog = build_schedule(make({"ep": 8, "moe_dispatcher": "deepep"}, training={"dtype": "fp8"})).programs["pp0.cp0"]
    inter = [op for op in prog if isinstance(op, CommOp) and op.axes == ("ep_inter",)]
    intra = [op for op in prog if isinstance(op, CommOp) and op.axes == ("ep_intra",)]
    assert inter and intra and len(inter) == len(intra)
    fwd_dispatch = [op for op in intra if op.name.startswith("L1.moe.dispatch.fwd")][0]
    assert fwd_dispatch.dtype == "fp8"
    assert fwd_dispatch.size_bytes == int(512 * 2 * 256 * (1 + 4 / 128))  # FP8 + one fp32 scale per 128


@pytest.mark.parametrize("parallel,model,needle", [
    ({"ep": 3}, {}, "ep=3 does not divide experts=8"),
    ({"ep": 16}, {"experts": 16}, "does not divide tp x cp x dp"),
    ({"ep": 2}, {"experts": 0, "top_k": 0, "moe_ffn_hidden": 0, "first_dense_layers": 0},
     "needs a Mixture-of-Experts model"),
    ({"tp": 2}, {}, "sequence_parallel: true"),
    ({"ep": 2, "order": ["tp", "pp", "dp"]}, {}, "pp must be the"),
])
def test_bad_expert_plans_name_the_field(make, parallel, model, needle):
    with pytest.raises(InputError, match=needle):
        make(parallel, model=model)


def test_expert_states_shard_over_expert_data_parallel(make):
    """ZeRO-1 on 8 GPUs with ep 4: the dense optimizer states shard 8 ways, the experts' over the
    2 ranks that hold the same experts; weights and gradients of the experts are E/ep per GPU."""
    from simulator.schedule.flops import expert_params
    from simulator.schedule.memory import estimate_memory
    from simulator.schedule.shapes import stage_params

    scn = make({"ep": 4, "zero": 1})
    experts = stage_params(scn, 0).expert
    assert experts == 3 * 2 * expert_params(scn.model)  # 3 MoE layers x 2 local experts
    dense = stage_params(scn, 0).dense
    mem = estimate_memory(scn, 0)
    assert mem.optimizer == pytest.approx(12 * (dense / 8 + experts / 2))
    assert mem.params == pytest.approx(2 * (dense + experts))


def test_megatron_dispatch_stays_bf16_in_fp8_runs(make):
    """Megatron-Core's DeepEP/HybridEP dispatch carries the BF16 activations even in FP8 runs
    (``moe_dispatch_dtype: bf16``): T·k·h·2 bytes, twice the FP8 payload less its scales."""
    prog = build_schedule(make({"ep": 8, "moe_dispatcher": "deepep", "moe_dispatch_dtype": "bf16"},
                               training={"dtype": "fp8"})).programs["pp0.cp0"]
    fwd = [op for op in prog if isinstance(op, CommOp) and op.axes == ("ep_intra",)
           and op.name.startswith("L1.moe.dispatch.fwd")][0]
    assert fwd.dtype == "bf16"
    assert fwd.size_bytes == 512 * 2 * 256 * 2
    # and an alltoall dispatcher can be asked for FP8
    prog = build_schedule(make({"ep": 4, "moe_dispatch_dtype": "fp8"}, training={"dtype": "fp8"})).programs["pp0.cp0"]
    fwd = [op for op in _a2a(prog) if op.name.startswith("L1.moe.dispatch.fwd")][0]
    assert fwd.dtype == "fp8" and fwd.size_bytes == int(512 * 2 * 256 * (1 + 4 / 128))


def test_hybridep_gathers_the_routing_map_before_each_forward_dispatch(make):
    """HybridEP's metadata preprocessing: every forward dispatch first AllGathers each rank's T×E
    routing map (a bool byte per token and expert) over the EP group; backward reuses the handle.
    T = 512 tokens, E = 8 experts, ep = 8: 512·8·8 bytes gathered, once per MoE layer and
    micro-batch. Without a static budget of permuted rows the dispatch then blocks the host on the
    received counts (``non_blocking=False``): the gather is a host synchronisation."""
    def gathers(scn):
        prog = build_schedule(scn).programs["pp0.cp0"]
        return [op for op in prog if isinstance(op, CommOp) and "routing_map" in op.name]

    scn = make({"ep": 8, "moe_dispatcher": "deepep", "moe_deepep_backend": "hybridep"})
    ops = gathers(scn)
    assert len(ops) == 3 * scn.n_micro and {op.tag.phase for op in ops} == {"fwd"}
    assert {(op.op, op.axes, op.size_bytes) for op in ops} == {("allgather", ("etp", "ep"), 512 * 8 * 8)}
    assert all(op.host_sync for op in ops)
    assert not gathers(make({"ep": 8, "moe_dispatcher": "deepep"}))
    with pytest.raises(InputError, match="moe_deepep_backend"):
        make({"ep": 8, "moe_deepep_backend": "hybridep"})


@pytest.mark.parametrize("dispatcher", ["alltoall", "deepep"])
def test_backward_dispatch_waits_for_the_expert_wgrad(make, dispatcher):
    """TransformerEngine's GroupedLinear backward computes dgrad and then wgrad before it returns, and
    autograd runs the dispatcher's backward after it: every backward token exchange of an MoE layer
    (and the alltoall dispatcher's unsort, permutation 2's mirror) depends, directly or through the ops
    before it, on that layer's FC1 wgrad of the same micro-batch."""
    prog = build_schedule(make({"ep": 4, "moe_dispatcher": dispatcher})).programs["pp0.cp0"]
    checked = 0
    for i, op in enumerate(prog):
        if not (isinstance(op, CommOp) and op.tag.phase == "bwd" and ".dispatch.bwd." in op.name):
            continue
        seen, todo = set(), list(op.deps)
        while todo:  # ancestors of the exchange within its own layer pass
            j = todo.pop()
            if j in seen or prog[j].tag.layer != op.tag.layer or prog[j].tag.mb_index != op.tag.mb_index:
                continue
            seen.add(j)
            todo.extend(prog[j].deps)
        assert any(prog[j].name.endswith(".experts.fc1.wgrad") for j in seen), op.name
        checked += 1
    assert checked > 0


def test_expert_bias_added_per_local_expert(make):
    """Megatron-Core's ``TEGroupedMLP._apply_bias`` (``moe_expert_bias: per_expert``, GPT-OSS):
    with 8 experts over ep 4 (2 local), T·k = 512·2 rows of h = 256 in BF16, one unit is
    1024·256·2 bytes. Forward per expert a multiply (1 unit) and an add (3), then the
    concatenation (2): 6 units in 2·2 + 1 kernels; backward per expert two multiplies (2 units
    each), two reductions (1 each) and the bias gradient's accumulation, and the split gradients'
    concatenation (2): 8 units in 5·2 + 2 kernels. One of each per MoE layer and micro-batch, the
    backward one before the FC2 dgrad; none by default."""
    def bias_ops(scn):
        return [op for op in build_schedule(scn).programs["pp0.cp0"]
                if isinstance(op, ComputeOp) and ".experts.bias." in op.name]

    scn = make({"ep": 4}, training={"moe_expert_bias": "per_expert"})
    ops = bias_ops(scn)
    unit = 512 * 2 * 256 * 2
    fwd = [op for op in ops if op.tag.phase == "fwd"]
    bwd = [op for op in ops if op.tag.phase == "bwd"]
    assert len(fwd) == len(bwd) == 3 * scn.n_micro
    assert {(op.hbm_bytes, op.count) for op in fwd} == {(6 * unit, 5)}
    assert {(op.hbm_bytes, op.count) for op in bwd} == {(8 * unit, 12)}
    prog = build_schedule(scn).programs["pp0.cp0"]
    for i, op in enumerate(prog):
        if op.name.endswith(".experts.fc2.dgrad"):
            assert prog[op.deps[0]].name.endswith(".experts.bias.bwd")
    assert not bias_ops(make({"ep": 4}))


def test_fp8_rows_padded_per_expert_unless_hybridep(make):
    """TransformerEngine's Fp8Padding / Fp8Unpadding around Megatron-Core's grouped MLP in FP8
    runs: the T·k = 1024 rows of h = 256 BF16 activations read and written once by each copy
    (forward: pad FC1's input, with the probabilities' pad a second kernel, and unpad FC2's
    output; backward the mirrors), once per MoE layer and micro-batch each; HybridEP pads in its
    dispatch and BF16 runs quantise nothing, so neither copies; the round-robin gate's equal splits
    of 1024 / 2 local experts are aligned already."""
    def pads(scn):
        return [op for op in build_schedule(scn).programs["pp0.cp0"]
                if isinstance(op, ComputeOp) and ".experts.fp8." in op.name]

    scn = make({"ep": 4}, training={"dtype": "fp8", "fp8_recipe": "current"})
    ops = pads(scn)
    rows = 512 * 2
    by_name = Counter(op.name.split(".moe.")[1] for op in ops)
    assert by_name == {f"experts.fp8.{k}.{d}": 3 * scn.n_micro for k in ("pad", "unpad") for d in ("fwd", "bwd")}
    assert {(op.name.split(".moe.")[1], op.hbm_bytes, op.count) for op in ops} == {
        ("experts.fp8.pad.fwd", 2 * rows * 257 * 2, 2), ("experts.fp8.pad.bwd", 2 * rows * 257 * 2, 2),
        ("experts.fp8.unpad.fwd", 2 * rows * 256 * 2, 1), ("experts.fp8.unpad.bwd", 2 * rows * 256 * 2, 1)}
    assert not pads(make({"ep": 4}))
    assert not pads(make({"ep": 8, "moe_dispatcher": "deepep", "moe_deepep_backend": "hybridep"},
                         training={"dtype": "fp8", "fp8_recipe": "current"}))
    assert not pads(make({"ep": 4}, training={"dtype": "fp8", "moe_routing": "round_robin"}))


def test_recompute_modules_rebuild_the_moe_norm_and_activation(make):
    """Megatron's selective ``recompute_modules`` layernorm and moe_act (GPT-OSS recipes): in the
    backward of each MoE layer the pre-MLP norm (read and write T·h: 2·512·256·2 bytes) before
    the block, and the experts' SwiGLU (read 2f, write f of the T·k = 1024 rows with f = 128:
    3·1024·128·2 bytes) before FC2's backward; the activation memory of a stage drops by what
    they no longer keep: T·h·2 + T·k·f·2 bytes per MoE layer (3 of 4 layers here)."""
    from simulator.schedule.memory import estimate_memory

    base = make({"ep": 4})
    scn = make({"ep": 4}, training={"recompute_modules": ["layernorm", "moe_act"]})
    prog = build_schedule(scn).programs["pp0.cp0"]
    norms = [op for op in prog if op.name.endswith(".ln2.recompute")]
    acts = [op for op in prog if op.name.endswith(".experts.act.recompute")]
    assert len(norms) == len(acts) == 3 * scn.n_micro
    assert {op.hbm_bytes for op in norms} == {2 * 512 * 256 * 2}
    assert {op.hbm_bytes for op in acts} == {3 * 1024 * 128 * 2}
    assert all(op.tag.phase == "bwd" for op in norms + acts)
    order = [op.name.split(".", 1)[1] for op in prog if op.tag.layer == 2 and op.tag.mb_index == 0
             and op.tag.phase == "bwd"]
    assert order.index("ln2.recompute") < order.index("moe.experts.act.recompute") < order.index(
        "moe.experts.fc2.dgrad")
    saved = estimate_memory(base, 0).activations - estimate_memory(scn, 0).activations  # pp 1: one set held
    assert saved == pytest.approx(3 * (512 * 256 * 2 + 1024 * 128 * 2))
    assert not [op for op in build_schedule(base).programs["pp0.cp0"] if op.name.endswith(".recompute")]
    with pytest.raises(InputError, match="recompute_modules"):
        make({"ep": 4}, training={"recompute": "full", "recompute_modules": ["moe_act"]})


def test_recompute_module_moe_reruns_the_whole_moe_forward_in_backward(make):
    """``recompute_modules: moe`` (Megatron-Core's ``moe_layer_recompute``: the MoE layer's forward
    under a checkpoint): in the backward of each MoE layer (3 of 4 layers) the router, the
    dispatch and combine All-to-Alls and the expert GEMMs run again before the layer's backward,
    so the token All-to-Alls a step moves grow by half (forward 2, recompute 2, backward 2 per
    layer and micro-batch, of equal size) and the expert FC1 runs three times per layer where it
    ran twice (forward and dgrad). The stage keeps none of the MoE layers' activations: the
    activations drop by ``moe_layer_activation_bytes`` per MoE layer, and the one layer rebuilt in
    backward is the recompute working set. Megatron-Core refuses it beside the combined-1F1B A2A
    overlap."""
    from simulator.schedule.memory import estimate_memory, moe_layer_activation_bytes

    base = make({"ep": 4})
    scn = make({"ep": 4}, training={"recompute_modules": ["moe"]})
    prog, prog0 = build_schedule(scn).programs["pp0.cp0"], build_schedule(base).programs["pp0.cp0"]
    a2a, a2a0 = _a2a(prog), _a2a(prog0)
    assert len(a2a) == 6 * 3 * scn.n_micro and len(a2a0) == 4 * 3 * scn.n_micro
    assert sum(op.size_bytes for op in a2a) == pytest.approx(1.5 * sum(op.size_bytes for op in a2a0))
    again = [op for op in a2a if op.name.endswith(".fwd.alltoall.recompute")]
    assert len(again) == 2 * 3 * scn.n_micro and {op.tag.phase for op in again} == {"bwd"}
    fc1 = Counter(op.name.split(".", 1)[1] for op in prog if ".experts.fc1." in op.name and op.tag.mb_index == 0
                  and op.tag.layer == 2)
    assert fc1 == Counter({"moe.experts.fc1.fwd": 1, "moe.experts.fc1.fwd.recompute": 1, "moe.experts.fc1.dgrad": 1,
                           "moe.experts.fc1.wgrad": 1})
    order = [op.name.split(".", 1)[1] for op in prog if op.tag.layer == 2 and op.tag.mb_index == 0
             and op.tag.phase == "bwd"]
    assert order.index("moe.combine.fwd.alltoall.recompute") < order.index("moe.combine.bwd.alltoall")
    assert not any(".recompute" in op.name for op in prog0)
    kept = moe_layer_activation_bytes(base)
    assert moe_layer_activation_bytes(scn) == 0.0 and moe_layer_activation_bytes(scn, rebuilt=True) == kept
    est, est0 = estimate_memory(scn, 0), estimate_memory(base, 0)
    assert est0.activations - est.activations == pytest.approx(3 * kept)  # pp 1: one set held
    # the peak is the loss's at this vocabulary; with a small one, the rebuilt layer's backward
    assert est.recompute == 0.0 and est.loss_buffers > kept
    small = make({"ep": 4}, training={"recompute_modules": ["moe"]}, model={"vocab": 64})
    assert estimate_memory(small, 0).recompute == pytest.approx(moe_layer_activation_bytes(small, rebuilt=True))
    with pytest.raises(InputError, match="recompute_modules"):
        make({"ep": 4, "overlap_moe_expert_parallel_comm": True}, training={"recompute_modules": ["moe"]})


def test_alltoall_dispatcher_gathers_the_token_counts_before_each_forward_dispatch(make):
    """``MoEAlltoAllTokenDispatcher.preprocess`` AllGathers each rank's E int64 tokens-per-expert
    counts over the expert-TP × EP group before every forward dispatch (the All-to-All's split
    sizes): 8 experts × 8 bytes × ep 4 gathered, once per MoE layer and micro-batch, after the
    routing; the forward dispatch waits for it. DeepEP's path has no such gather."""
    def gathers(prog):
        return [op for op in prog if isinstance(op, CommOp) and ".counts." in op.name]

    scn = make({"ep": 4})
    prog = build_schedule(scn).programs["pp0.cp0"]
    ops = gathers(prog)
    assert len(ops) == 3 * scn.n_micro and {op.tag.phase for op in ops} == {"fwd"}
    assert {(op.op, op.axes, op.size_bytes) for op in ops} == {("allgather", ("etp", "ep"), 8 * 8 * 4)}
    for op in _a2a(prog):
        if op.name.endswith("dispatch.fwd.alltoall"):
            assert any(prog[d].name == op.name.replace(".alltoall", ".counts.allgather") for d in op.deps)
    assert all(prog[op.deps[0]].name.endswith(".topk.fwd") for op in ops)
    assert not gathers(build_schedule(make({"ep": 8, "moe_dispatcher": "deepep"})).programs["pp0.cp0"])


@pytest.mark.parametrize("training", [{"recompute_modules": ["moe_act"]}, {"moe_expert_bias": "per_expert"},
                                      {"moe_activation": "unfused"}, {"moe_grouped_gemm": True},
                                      {"moe_router_kernels": ["aux_loss"]}])
def test_moe_only_training_keys_need_experts(make, training):
    """recompute_modules, moe_expert_bias, moe_activation and moe_grouped_gemm act on the MoE layers:
    a dense model is told so."""
    with pytest.raises(InputError, match=next(iter(training))):
        make({}, training=training, model={"experts": 0, "top_k": 0, "moe_ffn_hidden": 0, "first_dense_layers": 0})


@pytest.mark.parametrize("routing,copies", [
    ("round_robin", 1.0),  # token t takes experts 2t, 2t+1: both on rank (2t mod 8) // 2
    ("learned", 4 * (1 - math.comb(6, 2) / math.comb(8, 2))),  # 2 of 8 experts, 2 per rank, 4 ranks
])
def test_deepep_sends_each_token_once_per_destination_rank(make, routing, copies):
    """DeepEP's dispatch moves one row per token and destination rank (``is_token_in_rank``), not
    one per routed expert: inside a node of 4 EP ranks with 2 experts each, T·copies·h·B bytes per
    exchange where the alltoall dispatcher moves T·k·h·B (k = 2)."""
    training = {"moe_routing": routing}
    deepep = build_schedule(make({"ep": 4, "moe_dispatcher": "deepep"}, nodes=1, training=training))
    a2a = _a2a(deepep.programs["pp0.cp0"])
    assert a2a and {op.size_bytes for op in a2a} == {int(512 * copies * 256 * 2)}
    nccl = build_schedule(make({"ep": 4}, nodes=1, training=training))
    assert {op.size_bytes for op in _a2a(nccl.programs["pp0.cp0"])} == {512 * 2 * 256 * 2}


def test_automodel_gmm_experts_add_both_biases_per_local_expert(make):
    """NeMo AutoModel's grouped_gemm experts (``moe_expert_bias: per_expert_fc1_fc2``) add FC1's
    bias by split, add and concatenation too: FC1's output is T·k = 512·2 rows of 2·128 (SwiGLU
    gate and up) in BF16, one unit 1024·256·2 bytes. Forward an add per expert (2 units) and the
    concatenation (2): 4 units in 2 + 1 kernels, before the activation; backward the bias
    reductions (1) and the split gradients' concatenation (2): 3 units in 2 + 1 kernels, before the
    FC1 dgrad. FC2's bias is added as with ``per_expert``."""
    scn = make({"ep": 4}, training={"moe_expert_bias": "per_expert_fc1_fc2"})
    prog = build_schedule(scn).programs["pp0.cp0"]
    fc1 = [op for op in prog if isinstance(op, ComputeOp) and ".experts.fc1_bias." in op.name]
    unit = 512 * 2 * 256 * 2
    assert {(op.hbm_bytes, op.count) for op in fc1 if op.tag.phase == "fwd"} == {(4 * unit, 3)}
    assert {(op.hbm_bytes, op.count) for op in fc1 if op.tag.phase == "bwd"} == {(3 * unit, 3)}
    assert len(fc1) == 2 * 3 * scn.n_micro
    for op in prog:
        if op.name.endswith(".experts.act.fwd"):
            assert prog[op.deps[0]].name.endswith(".experts.fc1_bias.fwd")
        if op.name.endswith(".experts.fc1.dgrad"):
            assert prog[op.deps[0]].name.endswith(".experts.fc1_bias.bwd")
    assert len([op for op in prog if ".experts.bias." in op.name]) == 2 * 3 * scn.n_micro


def test_qk_norm_normalises_the_query_and_key_heads_of_every_layer(make):
    """``model.qk_norm`` (Qwen3, Megatron-Core's ``qk_layernorm``): per layer and micro-batch, two
    norm kernels over the query and key heads after the QKV GEMM and before the attention core
    (fused stack: read and write, 2 · 512 tokens · (4 + 2) heads per TP rank · 32 head dims · 2
    bytes at TP 2), their backward between the attention core's and the QKV GEMM's (read the
    input and the gradient, write the gradient: 3 ·); none without it. The values (the other 2
    KV heads per rank) are not normalised."""
    plan = {"ep": 2, "tp": 2, "sequence_parallel": True, "etp": 1}
    base = build_schedule(make(plan)).programs["pp0.cp0"]
    scn = make(plan, model={"qk_norm": True})
    prog = build_schedule(scn).programs["pp0.cp0"]
    assert not [op for op in base if ".qk_norm." in op.name]
    fwd = [op for op in prog if op.name.endswith(".qk_norm.fwd")]
    bwd = [op for op in prog if op.name.endswith(".qk_norm.bwd")]
    assert len(fwd) == len(bwd) == 4 * scn.n_micro  # the dense layer too
    qk = 512 * (4 + 2) * 32 * 2
    assert {op.hbm_bytes for op in fwd} == {2 * qk}
    assert {op.hbm_bytes for op in bwd} == {3 * qk}
    assert {op.count for op in fwd + bwd} == {2}
    order = [op.name.split(".", 1)[1] for op in prog if op.tag.layer == 2 and op.tag.mb_index == 0]
    assert order.index("qkv.fwd.gemm") < order.index("qk_norm.fwd") < order.index("attn.core.fwd")
    assert order.index("attn.core.bwd") < order.index("qk_norm.bwd") < order.index("qkv.bwd.dgrad")


def test_router_random_logits_and_aux_loss_kernels(make):
    """Megatron-Core's forced-balanced router and its load-balancing loss on the T x E routing map
    (T = 512 tokens, E = 8, bf16 logits): RandomSTE's clone and normal_ (3 x 2 bytes per element, 2
    kernels) before the top-k; the fused aux loss's scores, tokens-per-expert sum, loss and tracker
    after it (2 + 10 bytes, 5 kernels), which the permutation waits for; backward, the loss's and the
    scores' gradients summed into the logits' (12 + 4 x 2 bytes, 5 kernels) before the top-k's."""
    from simulator.schedule.moe import router_extra_cost

    assert router_extra_cost(2, True, False, False) == (6.0, 2)
    assert router_extra_cost(2, True, False, True) == (0.0, 0)
    assert router_extra_cost(2, False, True, False) == (12.0, 5)
    assert router_extra_cost(2, True, True, True) == (20.0, 5)
    prog = build_schedule(make({"ep": 4}, training={"moe_router_kernels": ["random_logits", "aux_loss"]})).programs[
        "pp0.cp0"]
    te = 512 * 8
    by = {}
    for op in prog:
        if ".router.random." in op.name or ".router.aux_loss." in op.name:
            by.setdefault(op.name.split(".", 1)[1], set()).add((op.hbm_bytes, op.count))
    assert by == {"moe.router.random.fwd": {(6 * te, 2)}, "moe.router.aux_loss.fwd": {(12 * te, 5)},
                  "moe.router.aux_loss.bwd": {(20 * te, 5)}}
    for i, op in enumerate(prog):
        if op.name.endswith(".moe.permute.fwd"):
            assert prog[op.deps[0]].name.endswith(".router.aux_loss.fwd")
        if op.name.endswith(".moe.topk.fwd"):
            assert prog[op.deps[0]].name.endswith(".router.random.fwd")
    plain = build_schedule(make({"ep": 4})).programs["pp0.cp0"]
    assert not any(".router.random." in op.name or ".router.aux_loss." in op.name for op in plain)

"""Megatron TP / SP and TE overlap modes against the closed forms of MECHANICS.md §2
(simulator/schedule/tensor_parallel.py)."""

from __future__ import annotations

from collections import Counter, defaultdict

import pytest

from simulator.config.parallelism import sequence_parallel_in_effect
from simulator.schedule.ir import CommOp, ComputeOp, P2POp, ProgramBuilder
from simulator.schedule.tensor_parallel import (
    TE_DEFAULT_METHODS, UB_COMM_SMS, UB_NUM_SPLITS, UB_RING_EXCHANGE_SMS, TPContext, column_parallel_bwd,
    column_parallel_fwd, gemm_method, row_parallel_bwd, row_parallel_fwd)

B, S, H, FFN, SMS = 2, 1024, 512, 1536, 132


def ctx(tp=4, sp=True, overlap="none", dtype="bf16", dtype_bytes=2, seq=S, methods=None) -> TPContext:
    """A TP context of layer 3, micro-batch 1; ``methods``: a tuned configuration's methods per GEMM."""
    return TPContext(tp=tp, sp=sequence_parallel_in_effect(tp, sp), overlap=overlap, tokens=B * seq, hidden=H,
                     dtype=dtype, dtype_bytes=dtype_bytes, layer=3, mb_index=1, sms=SMS,
                     methods=tuple(sorted((methods or {}).items())))


def layer(c: TPContext) -> tuple[ProgramBuilder, int]:
    """One transformer layer's four linear layers, forward then backward; returns (program, first bwd op)."""
    pb = ProgramBuilder()
    start = pb.add(ComputeOp(name="ln1", kind="norm"))
    x = column_parallel_fwd(pb, c, "qkv", 3 * H // c.tp, start)
    x = row_parallel_fwd(pb, c, "proj", H // c.tp, x)
    x = column_parallel_fwd(pb, c, "fc1", FFN // c.tp, x)
    x = row_parallel_fwd(pb, c, "fc2", FFN // c.tp, x)
    first_bwd = len(pb)
    x = row_parallel_bwd(pb, c, "fc2", FFN // c.tp, x)
    x = column_parallel_bwd(pb, c, "fc1", FFN // c.tp, x)
    x = row_parallel_bwd(pb, c, "proj", H // c.tp, x)
    column_parallel_bwd(pb, c, "qkv", 3 * H // c.tp, x)
    return pb, first_bwd


def volumes(ops) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for op in ops:
        if isinstance(op, CommOp):
            out[op.op] += op.size_bytes
        elif isinstance(op, P2POp):
            out["sendrecv"] += sum(t.nbytes for t in op.sends)
    return dict(out)


def counts(ops) -> Counter:
    return Counter(op.op for op in ops if isinstance(op, CommOp))


def gemm_flops(ops) -> float:
    return sum(op.flops for op in ops if isinstance(op, ComputeOp) and op.kind == "gemm")


def dense_layer_fwd_flops(tp: int) -> float:
    """2·m·n·k over the four GEMMs of one TP shard."""
    m = B * S
    return 2.0 * m * H * (3 * H + H + FFN + FFN) / tp


def test_sp_no_overlap_counts_and_sizes_per_layer():
    c = ctx(tp=4)
    pb, first_bwd = layer(c)
    a = B * S * H * 2
    fwd, bwd = pb.ops[:first_bwd], pb.ops[first_bwd:]
    assert counts(fwd) == {"allgather": 2, "reducescatter": 2}
    assert counts(bwd) == {"allgather": 4, "reducescatter": 2}
    assert all(op.size_bytes == a for op in pb.ops if isinstance(op, CommOp))
    assert volumes(pb.ops) == {"allgather": 6 * a, "reducescatter": 4 * a}
    assert all(op.axes == ("tp",) for op in pb.ops if isinstance(op, CommOp))


@pytest.mark.parametrize("overlap", ["none", "bulk", "pipelined"])
def test_collective_modes_move_the_same_bytes(overlap):
    c = ctx(tp=8, overlap=overlap)
    pb, _ = layer(c)
    a = B * S * H * 2
    assert volumes(pb.ops) == {"allgather": 6 * a, "reducescatter": 4 * a}


@pytest.mark.parametrize("overlap", ["none", "bulk", "pipelined", "ring_exchange", "te_default"])
def test_gemm_flops_are_conserved_by_chunking(overlap):
    c = ctx(tp=4, overlap=overlap)
    pb, first_bwd = layer(c)
    assert gemm_flops(pb.ops[:first_bwd]) == pytest.approx(dense_layer_fwd_flops(4))
    assert gemm_flops(pb.ops[first_bwd:]) == pytest.approx(2 * dense_layer_fwd_flops(4))  # dgrad + wgrad


def test_no_sp_uses_allreduce():
    c = ctx(tp=4, sp=False, overlap="pipelined")  # Userbuffers needs SP: overlap is ignored
    pb, first_bwd = layer(c)
    a = B * S * H * 2
    assert counts(pb.ops[:first_bwd]) == {"allreduce": 2}
    assert counts(pb.ops[first_bwd:]) == {"allreduce": 2}
    assert volumes(pb.ops) == {"allreduce": 4 * a}


def test_tp1_emits_only_gemms():
    pb, _ = layer(ctx(tp=1))
    assert all(isinstance(op, ComputeOp) for op in pb.ops)
    assert gemm_flops(pb.ops) == pytest.approx(3 * dense_layer_fwd_flops(1))


def test_ring_exchange_steps_and_bytes():
    t = 4
    c = ctx(tp=t, overlap="ring_exchange")
    pb, first_bwd = layer(c)
    a = B * S * H * 2
    p2p = [op for op in pb.ops if isinstance(op, P2POp)]
    # fwd: 2 AG-GEMM + 2 GEMM-RS, bwd: 2 AG(dY)-dgrad, each t−1 steps of one A/t chunk
    assert len(p2p) == 6 * (t - 1)
    assert all(len(op.sends) == 1 and op.sends[0].nbytes == a // t for op in p2p)
    # the bulk-overlapped column backward keeps its collectives
    assert volumes(pb.ops) == {"allgather": 2 * a, "reducescatter": 2 * a, "sendrecv": 6 * (t - 1) * a // t}
    qkv = [op for op in pb.ops if op.name.startswith("L3.qkv.fwd")]
    assert sum(isinstance(op, P2POp) for op in qkv) == t - 1
    assert sum(isinstance(op, ComputeOp) for op in qkv) == t
    ag_steps = [op for op in qkv if isinstance(op, P2POp)]
    assert all(op.sends[0].offset == +1 and op.recvs[0].offset == -1 for op in ag_steps)


def test_ring_exchange_chunk_gemm_waits_for_its_chunk():
    c = ctx(tp=4, overlap="ring_exchange")
    pb = ProgramBuilder()
    start = pb.add(ComputeOp(name="ln", kind="norm"))
    column_parallel_fwd(pb, c, "qkv", 3 * H // 4, start)
    idx = {op.name: i for i, op in enumerate(pb.ops)}
    for i in range(1, 4):
        gemm = pb.ops[idx[f"L3.qkv.fwd.gemm{i}"]]
        assert idx[f"L3.qkv.fwd.sendrecv{i - 1}"] in gemm.deps
    # each forwarded chunk is the one received on the previous step
    for i in range(1, 3):
        assert idx[f"L3.qkv.fwd.sendrecv{i - 1}"] in pb.ops[idx[f"L3.qkv.fwd.sendrecv{i}"]].deps


@pytest.mark.parametrize("overlap", ["ring_exchange", "te_default"])
@pytest.mark.parametrize("t", [2, 4, 8])
def test_ring_exchange_sends_match_receives_across_tp_ranks(overlap, t):
    """All ranks run the same program: a send to tp+o with key k must meet a receive from tp−o' with
    o' = o and the same key and size on the peer."""
    pb, _ = layer(ctx(tp=t, overlap=overlap))
    sends, recvs = Counter(), Counter()
    for rank in range(t):
        for op in pb.ops:
            if isinstance(op, P2POp):
                for x in op.sends:
                    sends[(rank, (rank + x.offset) % t, x.key, x.nbytes)] += 1
                for x in op.recvs:
                    recvs[((rank + x.offset) % t, rank, x.key, x.nbytes)] += 1
    assert sends == recvs and sends


def test_pipelined_chunks_and_sm_fraction():
    c = ctx(tp=8, overlap="pipelined")
    pb = ProgramBuilder()
    start = pb.add(ComputeOp(name="x", kind="norm"))
    row_parallel_fwd(pb, c, "proj", H // 8, start)
    gemms = [op for op in pb.ops if isinstance(op, ComputeOp) and op.kind == "gemm"]
    rss = [op for op in pb.ops if isinstance(op, CommOp)]
    assert len(gemms) == len(rss) == UB_NUM_SPLITS
    assert all(op.sm_fraction == pytest.approx((SMS - UB_COMM_SMS) / SMS) for op in gemms)
    assert all(op.gemm == (B * S, H // UB_NUM_SPLITS, H // 8) for op in gemms)  # N split into column blocks
    assert all(op.size_bytes == B * S * H * 2 // UB_NUM_SPLITS for op in rss)
    idx = {op.name: i for i, op in enumerate(pb.ops)}
    for i in range(UB_NUM_SPLITS):
        assert idx[f"L3.proj.fwd.gemm{i}"] in pb.ops[idx[f"L3.proj.fwd.rs{i}"]].deps


def test_none_column_backward_overlaps_as_megatron():
    """Re-gather before dgrad (independent of it), RS after dgrad, wgrad waits for the re-gather."""
    c = ctx(tp=4)
    pb = ProgramBuilder()
    start = pb.add(ComputeOp(name="dy", kind="norm"))
    ret = column_parallel_bwd(pb, c, "fc1", FFN // 4, start)
    idx = {op.name: i for i, op in enumerate(pb.ops)}
    ag, dgrad, rs, wgrad = (idx[f"L3.fc1.bwd.{n}"] for n in ("ag", "dgrad", "rs", "wgrad"))
    assert ag < dgrad < rs < wgrad
    assert ag not in pb.ops[dgrad].deps
    assert dgrad in pb.ops[rs].deps and ag in pb.ops[wgrad].deps
    assert ret == rs
    assert pb.ops[dgrad].sm_fraction == 1.0


def test_bulk_column_backward_gemms_lose_comm_sms():
    pb = ProgramBuilder()
    start = pb.add(ComputeOp(name="dy", kind="norm"))
    column_parallel_bwd(pb, ctx(tp=4, overlap="bulk"), "fc1", FFN // 4, start)
    gemms = [op for op in pb.ops if isinstance(op, ComputeOp) and op.kind == "gemm"]
    assert [op.sm_fraction for op in gemms] == pytest.approx([(SMS - UB_COMM_SMS) / SMS] * 2)


def test_fp8_allgathers_carry_one_byte_reducescatter_two():
    pb, _ = layer(ctx(tp=4, dtype="fp8", dtype_bytes=2))
    n = B * S * H
    assert volumes(pb.ops) == {"allgather": 6 * n * 1, "reducescatter": 4 * n * 2}


def test_context_parallel_shrinks_tp_collectives():
    cp = 4
    pb, _ = layer(ctx(tp=4, seq=S // cp))
    a = B * (S // cp) * H * 2
    assert volumes(pb.ops) == {"allgather": 6 * a, "reducescatter": 4 * a}


def test_unknown_overlap_mode_is_rejected():
    with pytest.raises(ValueError, match="tp_overlap"):
        ctx(overlap="magic")


# --------------------------------------------------------------------------------------------- te_default


def methods_in_program(pb: ProgramBuilder) -> dict[str, str]:
    """Recover each GEMM's method from the ops the program holds (independently of gemm_method):
    P2P steps ⇒ ring_exchange; chunked collectives ⇒ pipeline; a whole collective beside a GEMM on
    fewer SMs ⇒ bulk; a whole blocking collective ⇒ nccl."""
    out: dict[str, str] = {}
    names = [op.name for op in pb.ops]
    for layer_name, kind in (("qkv", "col"), ("fc1", "col"), ("proj", "row"), ("fc2", "row")):
        fprop = f"L3.{layer_name}.fwd"
        dgrad = f"L3.{layer_name}.bwd.dgrad" if kind == "row" else f"L3.{layer_name}.bwd"
        for gemm, prefix in ((f"{layer_name}_fprop", fprop), (f"{layer_name}_dgrad", dgrad)):
            if kind == "col" and gemm.endswith("dgrad"):
                continue
            mine = [n for n in names if n.startswith(prefix + ".")]
            if any(".sendrecv" in n for n in mine):
                out[gemm] = "ring_exchange"
            elif any(n.endswith(("rs0", "ag0")) for n in mine):
                out[gemm] = "pipeline"
            else:
                out[gemm] = "nccl"
        if kind == "col":
            ops = {op.name: op for op in pb.ops}
            for p in ("dgrad", "wgrad"):
                g = ops[f"L3.{layer_name}.bwd.{p}"]
                out[f"{layer_name}_{p}"] = "bulk" if g.sm_fraction < 1 else "nccl"
    return out


def test_te_default_assigns_te_initialize_ub_methods_per_gemm():
    """MECHANICS.md §2.3 table: AG-GEMMs and dY-gathering dgrads ring_exchange, fprop GEMM-RS
    pipeline, qkv/fc1 dgrad and wgrad bulk; proj/fc2 wgrad external (no collective)."""
    pb, _ = layer(ctx(tp=4, overlap="te_default"))
    assert methods_in_program(pb) == {
        "qkv_fprop": "ring_exchange", "fc1_fprop": "ring_exchange",
        "proj_fprop": "pipeline", "fc2_fprop": "pipeline",
        "proj_dgrad": "ring_exchange", "fc2_dgrad": "ring_exchange",
        "qkv_dgrad": "bulk", "fc1_dgrad": "bulk", "qkv_wgrad": "bulk", "fc1_wgrad": "bulk"}
    # the table is exactly what the program shows, and the uniform modes are still uniform
    assert methods_in_program(pb) == TE_DEFAULT_METHODS
    pb_re, _ = layer(ctx(tp=4, overlap="ring_exchange"))
    assert set(methods_in_program(pb_re).values()) == {"ring_exchange", "bulk"}
    # proj/fc2 wgrad reuse the gathered dY: no collective between dgrad and wgrad, full SMs
    for name in ("proj", "fc2"):
        wgrad = next(op for op in pb.ops if op.name == f"L3.{name}.bwd.wgrad")
        assert wgrad.sm_fraction == 1.0
        assert not any(op.name.startswith(f"L3.{name}.bwd.wgrad.") for op in pb.ops)


@pytest.mark.parametrize("t", [2, 4, 8])
def test_te_default_volumes_match_the_sp_closed_form(t):
    """Per layer 6A AllGather + 4A ReduceScatter (MECHANICS.md §2.2), with the four ring-exchange
    AGs as t−1 SendRecv steps of A/t (= (t−1)/t·A on the wire, as a ring AllGather of A)."""
    a = B * S * H * 2
    pb, first_bwd = layer(ctx(tp=t, overlap="te_default"))
    v = volumes(pb.ops)
    assert v == {"allgather": 2 * a, "reducescatter": 4 * a, "sendrecv": 4 * (t - 1) * (a // t)}
    assert v["allgather"] + v["sendrecv"] * t // (t - 1) == 6 * a
    # forward: 2 ring AG-GEMMs (no AllGather op) and 2 GEMM-RS of UB_NUM_SPLITS chunks each
    assert counts(pb.ops[:first_bwd]) == {"reducescatter": 2 * UB_NUM_SPLITS}
    assert volumes(pb.ops[:first_bwd]) == {"reducescatter": 2 * a, "sendrecv": 2 * (t - 1) * (a // t)}
    # backward: bulk re-gather + RS of qkv and fc1, ring-exchange dY gathers of proj and fc2
    assert counts(pb.ops[first_bwd:]) == {"allgather": 2, "reducescatter": 2}
    p2p = [op for op in pb.ops if isinstance(op, P2POp)]
    assert len(p2p) == 4 * (t - 1)
    assert all(op.sends[0].offset == +1 and op.recvs[0].offset == -1 for op in p2p)  # ring, not all-pairs


def test_te_default_sm_fractions():
    """Ring-exchange GEMM chunks lose the copy engine's ~1 SM; pipelined GEMM-RS and bulk GEMMs 16."""
    pb, _ = layer(ctx(tp=8, overlap="te_default"))
    gemms = {op.name: op for op in pb.ops if isinstance(op, ComputeOp) and op.kind == "gemm"}
    ring, pipe = (SMS - UB_RING_EXCHANGE_SMS) / SMS, (SMS - UB_COMM_SMS) / SMS
    assert all(gemms[f"L3.qkv.fwd.gemm{i}"].sm_fraction == pytest.approx(ring) for i in range(8))
    assert all(gemms[f"L3.fc2.bwd.dgrad.gemm{i}"].sm_fraction == pytest.approx(ring) for i in range(8))
    assert all(gemms[f"L3.proj.fwd.gemm{i}"].sm_fraction == pytest.approx(pipe) for i in range(UB_NUM_SPLITS))
    assert gemms["L3.fc1.bwd.dgrad"].sm_fraction == pytest.approx(pipe)


def test_te1_default_launches_pipeline_and_bulk_gemms_on_every_sm():
    """TE 1.x's initialize_ub registers every default Userbuffers communicator with
    set_sm_margin = 0 (transformer_engine/pytorch/module/base.py of v1.7/v1.8, ``add_ub(...,
    set_sm_margin: int = 0)``), and ``comm_gemm_overlap.h`` sets ``_math_sms = (set_sm_margin) ?
    SMs - num_comm_sm : SMs``: the GEMMs of the pipeline and bulk overlaps take every SM (132 of
    132), not 116; TE 2.0 made the margin the default for those two methods. Ring-exchange chunks
    are the same either way (the copy engine's ~1 SM)."""
    c = TPContext(tp=8, sp=True, overlap="te_default", tokens=B * S, hidden=H, dtype="bf16", dtype_bytes=2,
                  layer=3, mb_index=1, sms=SMS, sm_margin=False)
    pb, _ = layer(c)
    gemms = {op.name: op for op in pb.ops if isinstance(op, ComputeOp) and op.kind == "gemm"}
    ring = (SMS - UB_RING_EXCHANGE_SMS) / SMS
    assert all(gemms[f"L3.proj.fwd.gemm{i}"].sm_fraction == 1.0 for i in range(UB_NUM_SPLITS))
    assert all(gemms[f"L3.fc2.fwd.gemm{i}"].sm_fraction == 1.0 for i in range(UB_NUM_SPLITS))
    assert [gemms[f"L3.{n}.bwd.{g}"].sm_fraction for n in ("qkv", "fc1") for g in ("dgrad", "wgrad")] == [1.0] * 4
    assert all(gemms[f"L3.qkv.fwd.gemm{i}"].sm_fraction == pytest.approx(ring) for i in range(8))
    assert all(gemms[f"L3.fc2.bwd.dgrad.gemm{i}"].sm_fraction == pytest.approx(ring) for i in range(8))


def test_sm_margin_is_a_config_value_defaulting_to_te2():
    from simulator.config.parallelism import Parallel

    assert Parallel(tp=8, sequence_parallel=True, tp_overlap="te_default").tp_overlap_sm_margin is True
    assert Parallel(tp=8, sequence_parallel=True, tp_overlap="te_default",
                    tp_overlap_sm_margin=False).tp_overlap_sm_margin is False


def test_tuned_userbuffers_config_sets_each_gemms_sms():
    """NeMo's userbuffers_bf16_h100_h16384_tp8_cp2_mbs1_seqlen8192 (the Llama 3.1 405B recipe on
    H100, nemo/collections/llm/recipes/tp_overlap_configs/userbuffers.py): the four bulk overlaps
    with ``set_sm_margin=False`` run their GEMMs on all 132 SMs, proj_fprop's pipeline keeps a
    24-SM margin (108 of 132) and fc2_fprop's an 8-SM one (124 of 132); the ring-exchange GEMMs
    keep the copy engine's one SM, and a GEMM the config leaves out keeps TE's default 16."""
    tuned = (("fc1_dgrad", 0), ("fc1_wgrad", 0), ("fc2_fprop", 8), ("proj_fprop", 24), ("qkv_dgrad", 0))
    c = TPContext(tp=8, sp=True, overlap="te_default", tokens=B * S, hidden=H, dtype="bf16", dtype_bytes=2,
                  layer=3, mb_index=1, sms=SMS, gemm_sms=tuned)
    pb, _ = layer(c)
    gemms = {op.name: op for op in pb.ops if isinstance(op, ComputeOp) and op.kind == "gemm"}
    assert [gemms[f"L3.{g}"].sm_fraction for g in ("fc1.bwd.dgrad", "fc1.bwd.wgrad", "qkv.bwd.dgrad")] == [1.0] * 3
    assert gemms["L3.qkv.bwd.wgrad"].sm_fraction == pytest.approx(116 / 132)  # not in the config: TE's 16
    assert all(gemms[f"L3.proj.fwd.gemm{i}"].sm_fraction == pytest.approx(108 / 132) for i in range(UB_NUM_SPLITS))
    assert all(gemms[f"L3.fc2.fwd.gemm{i}"].sm_fraction == pytest.approx(124 / 132) for i in range(UB_NUM_SPLITS))
    assert all(gemms[f"L3.fc1.fwd.gemm{i}"].sm_fraction == pytest.approx(131 / 132) for i in range(8))


def test_tuned_userbuffers_config_names_te_gemms_only():
    from pydantic import ValidationError

    from simulator.config.parallelism import Parallel

    p = Parallel(tp=8, sequence_parallel=True, tp_overlap="te_default", tp_overlap_gemm_sms={"fc2_fprop": 8})
    assert p.tp_overlap_gemm_sms == {"fc2_fprop": 8}
    with pytest.raises(ValidationError, match="tp_overlap_gemm_sms"):
        Parallel(tp=8, sequence_parallel=True, tp_overlap="te_default", tp_overlap_gemm_sms={"lm_head_fprop": 8})
    with pytest.raises(ValidationError, match="tp_overlap_gemm_sms"):
        Parallel(tp=8, sequence_parallel=True, tp_overlap="te_default", tp_overlap_gemm_sms={"fc2_fprop": -1})


def test_te_default_leaves_gemms_outside_te_on_plain_nccl():
    """Megatron's output layer is a plain ColumnParallelLinear: no Userbuffers for lm_head."""
    assert gemm_method("te_default", "lm_head_fprop", "ag_gemm") == "nccl"
    assert gemm_method("ring_exchange", "lm_head_fprop", "ag_gemm") == "ring_exchange"
    c = ctx(tp=4, overlap="te_default")
    pb = ProgramBuilder()
    start = pb.add(ComputeOp(name="ln", kind="norm"))
    column_parallel_fwd(pb, c, "lm_head", 4096 // 4, start)
    column_parallel_bwd(pb, c, "lm_head", 4096 // 4, start)
    assert counts(pb.ops) == {"allgather": 2, "reducescatter": 1}
    assert all(op.sm_fraction == 1.0 for op in pb.ops if isinstance(op, ComputeOp))


def test_te_default_without_sp_is_plain_allreduce():
    pb, _ = layer(ctx(tp=4, sp=False, overlap="te_default"))
    assert volumes(pb.ops) == {"allreduce": 4 * B * S * H * 2}


def test_te_default_is_a_config_value():
    from simulator.config.parallelism import Parallel

    assert Parallel(tp=8, sequence_parallel=True, tp_overlap="te_default").tp_overlap == "te_default"


def _depends_on(prog, i: int, j: int) -> bool:
    """Whether op i waits (transitively) for op j."""
    seen, frontier = set(), list(prog[i].deps)
    while frontier:
        k = frontier.pop()
        if k == j:
            return True
        if k not in seen:
            seen.add(k)
            frontier.extend(prog[k].deps)
    return False


@pytest.mark.parametrize("async_allreduce", [True, False])
def test_column_backward_allreduce_with_and_without_async(async_allreduce):
    """Without SP the dX AllReduce of a column-parallel layer either runs beside its wgrad GEMM
    (Megatron's async_tensor_model_parallel_allreduce) or after it (the backward of
    copy_to_tensor_model_parallel_region, Megatron-LM before Sep 2021): same bytes either way."""
    c = TPContext(tp=4, sp=False, overlap="none", tokens=B * S, hidden=H, dtype="bf16", dtype_bytes=2, layer=0,
                  mb_index=0, sms=SMS, async_allreduce=async_allreduce)
    pb, first_bwd = layer(c)
    ops = pb.ops
    a = B * S * H * 2
    assert counts(ops[first_bwd:]) == {"allreduce": 2} and volumes(ops) == {"allreduce": 4 * a}
    for i, op in enumerate(ops):
        if isinstance(op, CommOp) and i >= first_bwd:
            wgrad = next(j for j, w in enumerate(ops) if w.name == op.name.replace(".ar", ".wgrad"))
            assert _depends_on(ops, i, wgrad) is not async_allreduce


def test_blocking_tp_allreduce_is_exposed_whole(tmp_path):
    """Replayed: without the async AllReduce no kernel runs beside a backward TP AllReduce, and
    the step grows by the time the async variant ran it beside wgrad (less that wgrad's own
    slowdown beside NCCL, which the blocking run does not pay)."""
    from simulator.config.scenario import build_scenario
    from simulator.simulation import simulate_scenario
    from tests.unit.test_schedule_invariants import PROFILE, SMALL

    (tmp_path / "p.yaml").write_text(PROFILE)
    model = {**SMALL, "hidden": 2048, "heads": 16, "kv_heads": 16, "ffn_hidden": 8192, "seq_len": 2048}

    def run(flag):
        data = {"name": "tpar", "hardware": "p.yaml", "nodes": 1, "model": model,
                "training": {"micro_batch": 2, "global_batch": 2},
                "parallel": {"tp": 4, "async_tensor_model_parallel_allreduce": flag}}
        return simulate_scenario(build_scenario(data, source="tpar.yaml", base_dir=tmp_path))

    on, off = run(True), run(False)
    recs = {flag: [r for r in sim.trace.records(0) if r.kind == "allreduce" and ".bwd.ar" in r.name]
            for flag, sim in ((True, on), (False, off))}
    assert len(recs[False]) == len(recs[True]) == 2 * model["layers"] + 1  # QKV, FC1 and the LM head
    wgrad_end = {r.name: r.end for r in off.trace.records(0) if r.name.endswith(".wgrad")}
    # blocking: each AllReduce starts once its layer's wgrad is done
    assert all(r.start >= wgrad_end[r.name.replace(".ar", ".wgrad")] - 1e-12 for r in recs[False])
    # the async run hid, of each AllReduce, the part that ran beside its wgrad GEMM
    spans = {r.name: (r.start, r.end) for r in on.trace.records(0) if r.name.endswith(".wgrad")}
    hidden = 0.0
    for r in recs[True]:
        w0, w1 = spans[r.name.replace(".ar", ".wgrad")]
        hidden += max(0.0, min(r.end, w1) - max(r.start, w0))
    # blocking: no kernel of the compute stream runs while a backward AllReduce does
    busy = [(r.start, r.end) for r in off.trace.records(0) if r.kind == "compute" and r.stream == "compute"]
    assert all(min(r.end, e) - max(r.start, b) <= 1e-12 for r in recs[False] for b, e in busy)
    # so the step grows by what the async run hid, less the slowdown of wgrad beside NCCL there
    grew = off.report.step_time_s - on.report.step_time_s
    assert 0.8 * hidden < grew <= hidden * (1 + 1e-9)


def test_rs_dgrad_reduces_dx_inside_the_dgrad_gemm():
    """TE's ub_overlap_rs_dgrad (``fc1_dgrad: pipeline``, NeMo's Llama 3 LoRA configs): the fc1
    backward re-gathers its saved input with NCCL on a stream apart from Userbuffers, runs the dgrad
    GEMM in UB_NUM_SPLITS column blocks on SMs − 16, each followed by the ReduceScatter of its block
    (A/4 each), and the wgrad GEMM on every SM once the re-gather is done; qkv keeps the bulk pair.
    Per layer the bytes are the default's: 2A AllGather + 4A ReduceScatter beside the ring
    exchanges."""
    a, t = B * S * H * 2, 4
    pb, first_bwd = layer(ctx(tp=t, overlap="te_default", methods={"fc1_dgrad": "pipeline"}))
    ops = {op.name: (i, op) for i, op in enumerate(pb.ops)}
    rs = [ops[f"L3.fc1.bwd.dgrad.rs{i}"] for i in range(UB_NUM_SPLITS)]
    gemms = [ops[f"L3.fc1.bwd.dgrad.gemm{i}"] for i in range(UB_NUM_SPLITS)]
    ag_i, ag = ops["L3.fc1.bwd.ag"]
    wgrad_i, wgrad = ops["L3.fc1.bwd.wgrad"]
    assert all(op.size_bytes == a // UB_NUM_SPLITS and op.stream == "tp" for _, op in rs)
    assert all((g_i,) == op.deps for (g_i, _), (_, op) in zip(gemms, rs))  # block i's RS after block i
    assert all(g.sm_fraction == pytest.approx((SMS - UB_COMM_SMS) / SMS) for _, g in gemms)
    assert all(g.flops == pytest.approx(2 * B * S * H * (FFN // t) / UB_NUM_SPLITS) for _, g in gemms)
    assert ag.size_bytes == a and ag.stream == "tp.nccl" and wgrad.deps == (ag_i,) and wgrad.sm_fraction == 1.0
    assert "L3.fc1.bwd.rs" not in ops and "L3.fc1.bwd.dgrad" not in ops  # no bulk pair left
    assert ops["L3.qkv.bwd.dgrad"][1].sm_fraction < 1 and "L3.qkv.bwd.rs" in ops  # qkv: TE's default bulk
    assert volumes(pb.ops) == volumes(layer(ctx(tp=t, overlap="te_default"))[0].ops)
    assert counts(pb.ops[first_bwd:]) == {"allgather": 2, "reducescatter": 1 + UB_NUM_SPLITS}


def test_ring_exchange_forward_reducescatter_from_a_tuned_config():
    """NeMo's and Megatron-Bridge's tuned H100 configs run proj_fprop and fc2_fprop as
    RingExchangeOverlapCfg: the all-pairs ring-exchange GEMM-RS (t GEMM chunks, t − 1 exchanges of
    A/t, then the local sum), not TE's default pipeline."""
    a, t = B * S * H * 2, 8
    ring = {"proj_fprop": "ring_exchange", "fc2_fprop": "ring_exchange"}
    pb, _ = layer(ctx(tp=t, overlap="te_default", methods=ring))
    got = methods_in_program(pb)
    assert got == {**TE_DEFAULT_METHODS, "proj_fprop": "ring_exchange", "fc2_fprop": "ring_exchange"}
    for name in ("proj", "fc2"):
        steps = [op for op in pb.ops if isinstance(op, P2POp) and op.name.startswith(f"L3.{name}.fwd.sendrecv")]
        assert [op.sends[0].offset for op in steps] == list(range(1, t))
        assert all(op.sends[0].nbytes == a // t for op in steps)
        assert any(op.name == f"L3.{name}.fwd.reduce" for op in pb.ops)


@pytest.mark.parametrize("methods, match", [
    ({"qkv_fprop": "pipeline"}, "qkv_fprop: pipeline is not a method TransformerEngine runs there"),
    ({"fc2_fprop": "bulk"}, "expected pipeline or ring_exchange"),
    ({"fc1_wgrad": "pipeline"}, "expected bulk"),
    ({"fc1_dgrad": "pipeline", "fc1_wgrad": "bulk"}, "fc1_wgrad is not configured once fc1_dgrad reduces"),
    ({"lm_head_fprop": "ring_exchange"}, "tp_overlap_methods"),
])
def test_tuned_methods_are_the_ones_te_accepts(methods, match):
    from pydantic import ValidationError

    from simulator.config.parallelism import Parallel

    with pytest.raises(ValidationError, match=match):
        Parallel(tp=8, sequence_parallel=True, tp_overlap="te_default", tp_overlap_methods=methods)


def test_tuned_methods_override_te_default_only():
    from pydantic import ValidationError

    from simulator.config.parallelism import Parallel

    p = Parallel(tp=8, sequence_parallel=True, tp_overlap="te_default", tp_overlap_methods={"fc1_dgrad": "pipeline"})
    assert p.tp_overlap_methods == {"fc1_dgrad": "pipeline"}
    with pytest.raises(ValidationError, match="overrides the per-GEMM table of tp_overlap: te_default"):
        Parallel(tp=8, sequence_parallel=True, tp_overlap="ring_exchange", tp_overlap_methods={"fc1_dgrad": "pipeline"})


def test_rs_dgrad_is_a_scenario_setting_that_changes_the_step(tmp_path):
    """Replayed on one node: the scenario key reaches the schedule (the fc1 backward's pipelined
    ReduceScatter chunks are in the trace) and moves the step, against an invalid value that exits
    with the file and field named."""
    from simulator.config.scenario import build_scenario
    from simulator.errors import InputError
    from simulator.simulation import simulate_scenario
    from tests.unit.test_schedule_invariants import PROFILE, SMALL

    (tmp_path / "p.yaml").write_text(PROFILE)
    model = {**SMALL, "hidden": 2048, "heads": 16, "kv_heads": 16, "ffn_hidden": 8192, "seq_len": 2048}

    def data(methods):
        return {"name": "rsdgrad", "hardware": "p.yaml", "nodes": 1, "model": model,
                "training": {"micro_batch": 1, "global_batch": 2},
                "parallel": {"tp": 4, "sequence_parallel": True, "tp_overlap": "te_default",
                             "tp_overlap_methods": methods}}

    default = simulate_scenario(build_scenario(data({}), source="s.yaml", base_dir=tmp_path))
    tuned = simulate_scenario(build_scenario(data({"fc1_dgrad": "pipeline", "qkv_dgrad": "pipeline"}),
                                             source="s.yaml", base_dir=tmp_path))
    names = {r.name for r in tuned.trace.records(0)}
    assert {f"L0.fc1.bwd.dgrad.rs{i}" for i in range(UB_NUM_SPLITS)} <= names
    assert not any(n.endswith("fc1.bwd.rs") for n in names)
    assert tuned.report.step_time_s != default.report.step_time_s
    with pytest.raises(InputError, match=r"s\.yaml.*tp_overlap_methods"):
        build_scenario(data({"qkv_fprop": "pipeline"}), source="s.yaml", base_dir=tmp_path)

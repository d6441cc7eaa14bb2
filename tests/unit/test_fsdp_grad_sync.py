"""``parallel.fsdp_grad_sync: optim_step``: FSDP2 reduce-scatters and reshards only at the last
backward before the optimizer step (NeMo AutoModel's ``patched_backward_maybe_with_nosync`` for a
``MoEFSDPSyncMixin`` stage, nemo_automodel/components/moe/fsdp_mixin.py), against once per
micro-batch by default."""

import pytest

from simulator.config.scenario import build_scenario
from simulator.schedule.build import build_schedule
from simulator.schedule.ir import CommOp, ComputeOp, P2POp
from tests.unit.test_schedule_invariants import PROFILE, SMALL

MODEL = dict(SMALL, layers=8)


@pytest.fixture
def make(tmp_path):
    (tmp_path / "p.yaml").write_text(PROFILE)

    def _make(sync, reshard, vp=1, pp=2):
        parallel = {"zero": 3, "zero3_impl": "fsdp2", "pp": pp, "fsdp_reshard_after_forward": reshard,
                    "fsdp_grad_sync": sync}
        if vp > 1:
            parallel.update(pp_schedule="interleaved", vp=vp)
        data = {"name": "sync", "hardware": "p.yaml", "nodes": 2, "model": MODEL,
                "training": {"micro_batch": 1, "global_batch": 16}, "parallel": parallel}
        return build_scenario(data, source="sync.yaml", base_dir=tmp_path)
    return _make


def counts(prog, kind, phase=None):
    """FSDP collectives of `kind` per parameter group (the embedding / LM head root, or a layer)."""
    out: dict[str, int] = {}
    for op in prog:
        if isinstance(op, CommOp) and op.name.startswith(f"fsdp.{kind}.") and (phase is None or op.tag.phase == phase):
            group = op.name.split(".")[2]
            out[group] = out.get(group, 0) + 1
    return out


@pytest.mark.parametrize("vp", [1, 2])
def test_gathered_and_reduced_once_per_step_per_group(make, vp):
    """reshard_after_forward false: each group (every layer of every virtual stage, and the root)
    is gathered at its first forward and reduce-scattered at its last backward: once per step,
    against once per micro-batch (M = 16 / dp 4 = 4) without the mixin."""
    for s in range(2):
        per_mb = build_schedule(make("microbatch", False, vp)).programs[f"pp{s}.cp0"]
        once = build_schedule(make("optim_step", False, vp)).programs[f"pp{s}.cp0"]
        groups = 8 // 2 + 1  # the stage's layers (all its virtual stages) and its root group
        assert counts(per_mb, "ag") == counts(per_mb, "rs") and set(counts(per_mb, "ag").values()) == {4}
        assert len(counts(once, "ag")) == len(counts(once, "rs")) == groups
        assert set(counts(once, "ag").values()) == set(counts(once, "rs").values()) == {1}
        assert all(op.tag.mb_index == 3 for op in once if isinstance(op, CommOp) and op.name.startswith("fsdp.rs."))


def test_reshard_after_forward_gathers_until_the_first_backward(make):
    """reshard_after_forward true under 1F1B: a layer's forward re-gathers until the stage's first
    backward has left it unsharded, i.e. on the pp − s forwards of stage s before its first
    backward (warm-up pp − s − 1 and the first steady one); every backward gathers (M = 4)."""
    for s in range(2):
        prog = build_schedule(make("optim_step", True)).programs[f"pp{s}.cp0"]
        fwd = {g: n for g, n in counts(prog, "ag", "fwd").items() if g.startswith("L")}
        assert set(fwd.values()) == {2 - s} and len(fwd) == 4
        assert set(counts(prog, "ag", "bwd").values()) == {4}
        assert set(counts(prog, "rs").values()) == {1}


@pytest.mark.parametrize("vp", [1, 2])
def test_compute_waits_for_the_final_reduce_scatter(make, vp):
    """The root's ``_root_post_backward_final_callback`` makes the compute stream wait for the
    ReduceScatters of each virtual stage's last backward: one wait per virtual stage, on the
    compute stream, after every ReduceScatter of that stage, and the gradient sent to the previous
    stage waits for it."""
    prog = build_schedule(make("optim_step", False, vp)).programs["pp1.cp0"]
    waits = [i for i, op in enumerate(prog)
             if isinstance(op, ComputeOp) and op.name.startswith("fsdp.post_backward_wait")]
    assert len(waits) == vp and all(prog[i].stream == "compute" for i in waits)
    rs = [i for i, op in enumerate(prog) if isinstance(op, CommOp) and op.name.startswith("fsdp.rs.")]
    for w in waits:
        last = max(i for i in rs if i < w)
        assert last in prog[w].deps  # the group's RS, chained after the stage's earlier ones
    sends = [op for op in prog if isinstance(op, P2POp) and any(t.offset == -1 for t in op.sends)]
    assert any(w in op.deps for op in sends for w in waits)


def test_optim_step_needs_fsdp2(tmp_path):
    (tmp_path / "p.yaml").write_text(PROFILE)
    data = {"name": "bad", "hardware": "p.yaml", "nodes": 2, "model": MODEL,
            "training": {"micro_batch": 1, "global_batch": 16},
            "parallel": {"zero": 3, "pp": 2, "fsdp_grad_sync": "optim_step"}}
    with pytest.raises(Exception, match="fsdp_grad_sync"):
        build_scenario(data, source="bad.yaml", base_dir=tmp_path)


def test_unsharded_gradients_accumulate_on_later_micro_batches(make):
    """Without sync the bf16 gradient of micro-batches 1..M−1 is added to the unsharded
    accumulator (AccumulateGrad: read 2 + 2 B, write 2 B per element); the first one needs no
    cast (the reduction is in bf16): 3 accumulations of 6 B per parameter element per group."""
    scn = make("optim_step", False)
    prog = build_schedule(scn).programs["pp1.cp0"]
    acc = [op for op in prog if isinstance(op, ComputeOp) and op.name.startswith("fsdp.grad_accumulate.L")]
    assert len(acc) == 4 * 3 and {op.tag.mb_index for op in acc} == {1, 2, 3}
    per_layer = {op.hbm_bytes for op in acc}
    rs = {op.size_bytes for op in prog if isinstance(op, CommOp) and op.name.startswith("fsdp.rs.L")}
    assert per_layer == {3.0 * r for r in rs}  # the RS input is the group's padded elements x 2 B


def test_without_pp_the_last_backward_reduce_scatters_group_by_group(make):
    """Without PP (AutoModel's ``prepare_for_grad_accumulation`` / ``prepare_for_final_backward``)
    the deferral is the same, gathers once per step (reshard_after_forward false) and reduce-scatters
    only in the last micro-batch (M = 16 / dp 8 = 2), but each group's ReduceScatter is issued as its
    backward ends, by FSDP's own post-backward hook: before the backward of the layers below it,
    not after the whole backward as under PP, and there is no post-backward wait op."""
    prog = build_schedule(make("optim_step", False, pp=1)).programs["pp0.cp0"]
    assert set(counts(prog, "ag").values()) == set(counts(prog, "rs").values()) == {1}
    assert len(counts(prog, "rs")) == 8 + 1
    rs = {op.name.split(".")[2]: i for i, op in enumerate(prog)
          if isinstance(op, CommOp) and op.name.startswith("fsdp.rs.")}
    assert all(prog[i].tag.mb_index == 1 for i in rs.values())
    # L7's ReduceScatter is issued before L0's backward compute of the last micro-batch
    first_l0_bwd = min(i for i, op in enumerate(prog) if isinstance(op, ComputeOp) and op.tag.phase == "bwd"
                       and op.tag.layer == 0 and op.tag.mb_index == 1)
    assert rs["L7"] < first_l0_bwd
    assert not any(isinstance(op, ComputeOp) and op.name.startswith("fsdp.post_backward_wait") for op in prog)


def test_no_sync_reduces_once_and_reshards_as_usual(make):
    """``no_sync`` (FSDP2 ``set_requires_gradient_sync(False)`` on all micro-batches but the last,
    AutoModel's ``get_sync_ctx``): resharding is untouched, so with reshard_after_forward every
    layer group is gathered in each forward and each backward (M = 2 micro-batches: 2 + 2), but
    reduce-scattered once, in the last micro-batch; the first micro-batch's gradient is kept
    unsharded (bf16 reduction: no cast) and the last one is added to it: one accumulation per group."""
    prog = build_schedule(make("no_sync", True, pp=1)).programs["pp0.cp0"]
    layers = {g: n for g, n in counts(prog, "ag", "fwd").items() if g.startswith("L")}
    assert len(layers) == 8 and set(layers.values()) == {2}
    assert set(counts(prog, "ag", "bwd").values()) == {2}
    assert set(counts(prog, "rs").values()) == {1} and len(counts(prog, "rs")) == 8 + 1
    assert all(op.tag.mb_index == 1 for op in prog if isinstance(op, CommOp) and op.name.startswith("fsdp.rs."))
    acc = [op for op in prog if isinstance(op, ComputeOp) and op.name.startswith("fsdp.grad_accumulate.L")]
    assert len(acc) == 8 and {op.tag.mb_index for op in acc} == {1}

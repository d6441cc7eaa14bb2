"""Layer-pass templates shared between schedule builds (schedule/build.py, _layer_builder): a
schedule built with the templates an earlier build of the same role's shapes left (another
micro-batch count, as micro-batch folding builds them, replay/fold.py) is the schedule built
cold, op for op: every field of every op (name, shape, stream, dependencies, tags, P2P keys), on
1F1B with ZeRO-1 and ZeRO-2, interleaved 1F1B, ZeRO-3, context parallelism and MoE plans; and the
warm build runs no layer pass's builder again, nor the embedding's and the LM head's."""

from __future__ import annotations

import pytest

from simulator.schedule import build as schedule_build
from simulator.schedule.build import build_schedule
from simulator.schedule.transformer import LayerBuilder
from simulator.simulation import with_micro_batches
from tests.unit.test_moe_schedule import MOE, moe_scenario_maker
from tests.unit.test_schedule_invariants import make  # noqa: F401 - the fixture

PLANS = {  # (plan, nodes of 4 GPUs, micro-batches per pipeline of the first build, of the second)
    "1f1b_zero1": ({"tp": 2, "sequence_parallel": True, "pp": 2, "zero": 1}, 2, 12, 7),
    "1f1b_zero2": ({"tp": 2, "sequence_parallel": True, "pp": 2, "zero": 2}, 2, 7, 12),
    "interleaved": ({"tp": 2, "sequence_parallel": True, "pp": 2, "pp_schedule": "interleaved", "vp": 2}, 2, 12, 6),
    "zero3": ({"zero": 3}, 2, 8, 5),
    "cp_p2p": ({"cp": 2, "tp": 2, "sequence_parallel": True, "pp": 2}, 2, 10, 6),
    # TransformerEngine's TP communication overlap: P2P ring-exchange steps whose keys name the
    # layer twice, in the key's micro-batch marker and in its GEMM's name (tensor_parallel._key)
    "tp_overlap_interleaved": ({"tp": 4, "sequence_parallel": True, "tp_overlap": "te_default", "pp": 2,
                                "pp_schedule": "interleaved", "vp": 2, "overlap_p2p_comm": True}, 2, 8, 6),
}


def _fields(schedule) -> dict:
    return {role: [(type(op), tuple(getattr(op, n) for n in type(op).__slots__)) for op in prog]
            for role, prog in schedule.programs.items()}


def _real_passes(monkeypatch, ends: bool = False) -> list[str]:
    """Count the layer passes (``ends``: and the embedding and LM head passes) built by their
    builders (not stamped from a template)."""
    calls: list[str] = []
    names = ("_forward", "_backward") + (("_embedding_forward", "_embedding_backward", "_head_forward",
                                          "_head_backward") if ends else ())
    for name in names:
        real = getattr(LayerBuilder, name)

        def counted(self, *args, _real=real, _name=name, **kw):
            calls.append(_name)
            return _real(self, *args, **kw)
        monkeypatch.setattr(LayerBuilder, name, counted)
    return calls


def _check(scn, first: int, second: int, monkeypatch, ends: bool = True) -> None:
    schedule_build._LAYER_BUILDERS.clear()
    cold = _fields(build_schedule(with_micro_batches(scn, second)))
    schedule_build._LAYER_BUILDERS.clear()
    build_schedule(with_micro_batches(scn, first))
    calls = _real_passes(monkeypatch, ends)
    warm = _fields(build_schedule(with_micro_batches(scn, second)))
    assert warm.keys() == cold.keys()
    for role in cold:
        assert len(warm[role]) == len(cold[role])
        assert warm[role] == cold[role], role
    assert calls == []  # every pass of the second build stamped from the first's templates


@pytest.mark.parametrize("plan", sorted(PLANS))
def test_warm_build_is_the_cold_build(make, plan, monkeypatch):  # noqa: F811 - the fixture
    parallel, nodes, first, second = PLANS[plan]
    scn = make(parallel, nodes=nodes, training={"global_batch": first * 4 * nodes // _model_parallel(parallel),
                                                "recompute": "selective"})
    # ZeRO-3: the first micro-batch's embedding waits for its parameters' gather, a pass of its
    # own each step (built, not stamped)
    _check(scn, first, second, monkeypatch, ends=plan != "zero3")


def test_warm_moe_build_is_the_cold_build(tmp_path, monkeypatch):
    make_moe = moe_scenario_maker(tmp_path, MOE, nodes=2, global_batch=8 * 2)
    scn = make_moe({"ep": 2, "tp": 2, "sequence_parallel": True, "pp": 2})
    _check(scn, 8, 5, monkeypatch)


def _model_parallel(p: dict) -> int:
    return p.get("tp", 1) * p.get("pp", 1) * p.get("cp", 1)


def _untemplated(monkeypatch) -> None:
    """Every layer pass built by its builder: no template stamped, for any layer or micro-batch."""
    monkeypatch.setattr(LayerBuilder, "_cached",
                        lambda self, build, kind, pb, layer, mb, after, wa, wm: build(pb, layer, mb, after, wa, wm))


@pytest.mark.parametrize("plan", sorted(PLANS))
def test_stamped_layers_are_the_built_layers(make, plan, monkeypatch):  # noqa: F811 - the fixture
    """A pass's template stands for every layer of its class (transformer._relabeled): the
    schedule stamped from them is the one whose every pass is built, op for op, and a stage of
    several layers builds each pass once per layer class, not once per layer."""
    parallel, nodes, first, _ = PLANS[plan]
    scn = make(parallel, nodes=nodes, training={"global_batch": first * 4 * nodes // _model_parallel(parallel),
                                                "recompute": "selective"})
    schedule_build._LAYER_BUILDERS.clear()
    calls = _real_passes(monkeypatch)
    stamped = _fields(build_schedule(scn))
    built_passes = len(calls)
    schedule_build._LAYER_BUILDERS.clear()
    _untemplated(monkeypatch)
    assert stamped == _fields(build_schedule(scn))
    if plan != "zero3":  # ZeRO-3's gated passes are never templated
        layers = scn.model.layers
        assert built_passes < 3 * 2 * layers  # fewer than three builds of each layer's two passes


def test_stamped_moe_layers_are_the_built_layers(tmp_path, monkeypatch):
    make_moe = moe_scenario_maker(tmp_path, MOE, nodes=2, global_batch=8 * 2)
    scn = make_moe({"ep": 2, "tp": 2, "sequence_parallel": True, "pp": 2})
    schedule_build._LAYER_BUILDERS.clear()
    stamped = _fields(build_schedule(scn))
    schedule_build._LAYER_BUILDERS.clear()
    _untemplated(monkeypatch)
    assert stamped == _fields(build_schedule(scn))


@pytest.mark.parametrize("plan", sorted(PLANS))
def test_generated_stamper_is_the_op_by_op_stamp(make, plan):  # noqa: F811 - the fixture
    """A template's generated stamper (transformer._stamper: one tuple of constructor calls)
    makes the ops the op-by-op stamp makes, field for field, at another position, micro-batch
    and external dependencies, P2P ops with that micro-batch in their keys; and templates of the
    same structure share one stamper."""
    from dataclasses import replace

    from simulator.schedule.transformer import _stamp_ops

    parallel, nodes, first, _ = PLANS[plan]
    scn = make(parallel, nodes=nodes, training={"global_batch": first * 4 * nodes // _model_parallel(parallel),
                                                "recompute": "selective"})
    schedule_build._LAYER_BUILDERS.clear()
    build_schedule(scn)
    templates = [t for lb in schedule_build._LAYER_BUILDERS.values() for t in lb._templates.values() if t is not None]
    from simulator.schedule.ir import P2POp, op_to_dict, transfer_key

    assert all(t.stamper is not None for t in templates)
    with_p2p = [t for t in templates if P2POp in t.types]
    for tpl in templates:
        symbols = [d for row in tpl.deps for d in row if d < -1]
        wa = tuple(7 + k for k in range(max((-2 - d for d in symbols if d > -1000), default=-1) + 1))
        wm = tuple(300 + k for k in range(max((-1000 - d for d in symbols if d <= -1000), default=-1) + 1))
        fast = _stamp_ops(tpl, 1234, 5, 1200, wa, wm)
        slow = _stamp_ops(replace(tpl, stamper=None), 1234, 5, 1200, wa, wm)
        assert [(type(o), tuple(getattr(o, n) for n in type(o).__slots__)) for o in fast] == \
               [(type(o), tuple(getattr(o, n) for n in type(o).__slots__)) for o in slow]
        assert all(d < 1234 or d - 1234 < len(fast) for o in fast for d in o.deps)
    for tpl in with_p2p:  # a stamp keeps the template's transfers; matched, its keys name its micro-batch
        stamped = [o for o in _stamp_ops(tpl, 0, 17, -1, (), ()) if type(o) is P2POp]
        assert stamped and all(o.sends is s[1] and o.recvs is s[2] for o, s in
                               zip(stamped, [s for c, s in zip(tpl.types, tpl.state) if c is P2POp]))
        keys = [(t.key, transfer_key(o, t)) for o in stamped for t in (*o.sends, *o.recvs)]
        assert keys and all(".mb17." in k and "\x00" not in k and raw.replace("\x00", "17") == k for raw, k in keys)
        written = [t["key"] for o in stamped for side in ("sends", "recvs") for t in op_to_dict(o)[side]]
        assert written == [k for _, k in keys]  # the schedule JSON writes the keys as matched
    if plan in ("cp_p2p", "tp_overlap_interleaved"):
        assert with_p2p
    by_structure: dict = {}
    for tpl in templates:
        if tpl.stamper is not None:
            assert by_structure.setdefault((tpl.types, tpl.deps, tpl.tag_of), tpl.stamper) is tpl.stamper

"""ir.MAKE_OP builds an op from its field values without __init__ (transformer._stamp's copies),
and ir.restamp_constructor one from a template op's values with new deps and tag: the op must be
the one __init__ builds from the same values, and as immutable; ir.with_deps the op
dataclasses.replace(op, deps=...) builds (moe_overlap.interleave's renumbering)."""

from __future__ import annotations

import dataclasses

import pytest

from simulator.schedule.ir import MAKE_OP, CommOp, ComputeOp, P2POp, Tag, Transfer, make_comm, restamp_constructor, with_deps

OPS = [
    ComputeOp(name="L3.fc1.bwd", kind="gemm", flops=3.5e12, hbm_bytes=1e8, deps=(4, 7), gemm=(8192, 4096, 1024),
              count=2, dtype="fp8", sm_fraction=0.9, stream="compute", tag=Tag("bwd", 3, 5), concurrent=2),
    CommOp(name="tp.ag", op="allgather", axes=("tp",), size_bytes=1 << 20, deps=(2,), tag=Tag("fwd", 1, 0)),
    P2POp(name="pp.send", sends=(Transfer("pp", 1, 4096, "pp.act.v1.mb3"),), recvs=(Transfer("pp", -1, 4096, "k"),),
          deps=(9,), tag=Tag("fwd", None, 3, 1)),
]


@pytest.mark.parametrize("op", OPS, ids=lambda op: type(op).__name__)
def test_make_op_builds_the_op_init_builds(op):
    values = [getattr(op, name) for name in type(op).__slots__]
    made = MAKE_OP[type(op)](*values)
    assert type(made) is type(op) and made == op and hash(made) == hash(op)
    assert dataclasses.asdict(made) == dataclasses.asdict(op)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.deps = ()  # type: ignore[misc]
    changed = MAKE_OP[type(op)](*[(1, 2) if n == "deps" else v for n, v in zip(type(op).__slots__, values)])
    assert changed == dataclasses.replace(op, deps=(1, 2))


@pytest.mark.parametrize("op", OPS, ids=lambda op: type(op).__name__)
def test_restamp_builds_the_op_with_new_deps_and_tag(op):
    state = tuple(getattr(op, name) for name in type(op).__slots__)
    tag = Tag("bwd", 9, 11)
    made = restamp_constructor(type(op))(state, (3, 5), tag)
    want = dataclasses.replace(op, deps=(3, 5), tag=tag)
    assert type(made) is type(op) and made == want and hash(made) == hash(want)
    assert dataclasses.asdict(made) == dataclasses.asdict(want)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.tag = None  # type: ignore[misc]


@pytest.mark.parametrize("op", OPS, ids=lambda op: type(op).__name__)
def test_with_deps_is_replace_of_the_deps(op):
    made = with_deps(op, (11, 3))
    want = dataclasses.replace(op, deps=(11, 3))
    assert type(made) is type(op) and made == want and hash(made) == hash(want)
    assert dataclasses.asdict(made) == dataclasses.asdict(want) and op.deps != (11, 3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.deps = ()  # type: ignore[misc]


def test_with_deps_fills_an_empty_stream_as_replace_does():
    """make_comm takes the stream as given; an empty one is filled by __post_init__ on replace."""
    bare = make_comm("ep.a2a", "alltoall", ("ep",), 1 << 20, (1,), "", "bf16", Tag("fwd", 0, 0))
    assert bare.stream == ""
    assert with_deps(bare, (2,)) == dataclasses.replace(bare, deps=(2,)) and with_deps(bare, (2,)).stream == "ep"

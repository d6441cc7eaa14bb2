"""Helpers shared by the tests of the attention patterns (Ulysses, Ring Attention, Megatron CP)."""

from __future__ import annotations

from types import ModuleType

from simulator.schedule.attention import AttentionContext
from simulator.schedule.ir import ComputeOp, Op, P2POp, ProgramBuilder


def run_pattern(pattern: ModuleType, c: AttentionContext) -> tuple[list[Op], list[Op]]:
    """Forward and backward ops of one layer's attention core under ``pattern``."""
    pb = ProgramBuilder()
    start = pb.add(ComputeOp(name="qkv", kind="gemm"))
    out = pattern.forward(pb, c, start)
    n_fwd = len(pb)
    pattern.backward(pb, c, out)
    return pb.ops[:n_fwd], pb.ops[n_fwd:]


def sent(ops: list[Op]) -> int:
    """Bytes this rank sends by P2P."""
    return sum(x.nbytes for op in ops if isinstance(op, P2POp) for x in op.sends)


def attn_flops(ops: list[Op]) -> float:
    return sum(op.flops for op in ops if isinstance(op, ComputeOp) and op.kind == "attention")

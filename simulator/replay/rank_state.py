"""Mutable state of one replay: what every rank of a role shares (``RoleTable``), each simulated
rank's timeline and stream bookkeeping (``RankState``), and a collective waiting for its members
(``Rendezvous``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import simpy

from simulator.costs.compute import compute_times
from simulator.schedule.ir import CommOp, Op, P2POp


class RoleTable:
    """What every rank of one role shares: its program, per-stream op lists, compute times."""

    def __init__(self, program: Sequence[Op], gpu: Any) -> None:
        self.program = program
        self.streams: dict[str, list[int]] = {}
        # Distinct collective signatures (stream, axes, op, size) and P2P directions (axis,
        # offset, is_send): what decides which links a rank of this role can ever use.
        self.collectives: set[tuple[str, tuple[str, ...], str, int]] = set()
        self.p2p_dirs: set[tuple[str, int, bool]] = set()
        for i, op in enumerate(program):
            self.streams.setdefault(op.stream, []).append(i)
            if type(op) is CommOp:
                self.collectives.add((op.stream, op.axes, op.op, op.size_bytes))
            elif type(op) is P2POp:
                self.p2p_dirs.update((t.axis, t.offset, True) for t in op.sends)
                self.p2p_dirs.update((t.axis, t.offset, False) for t in op.recvs)
        # (alone, beside communication): compute_time(op, gpu, overlapped) is t x (1 + slowdown).
        # A kernel scheduled with sm_fraction < 1 already gave up the SMs of the communication
        # kernel it runs beside (TransformerEngine userbuffers); the generic slowdown for NCCL
        # kernels competing for SMs is not applied to it a second time.
        slow = 1.0 + gpu.overlap_slowdown
        self.dt: list[tuple[float, float] | None] = [
            None if t is None else (t, t if getattr(op, "sm_fraction", 1.0) < 1.0 else t * slow)
            for op, t in zip(program, compute_times(program, gpu))]


class RankState:
    """Mutable state of one simulated rank during the replay."""

    __slots__ = ("rank", "role", "table", "ready", "start", "end", "done", "waiters", "inflight",
                 "coll_seq", "blocked", "algorithm", "groups", "n_done", "running", "extend")

    def __init__(self, rank: int, role: Any, table: RoleTable) -> None:
        n = len(table.program)
        self.rank = rank
        self.role = role
        self.table = table
        self.ready = np.full(n, np.nan)
        self.start = np.full(n, np.nan)
        self.end = np.full(n, np.nan)
        self.done = bytearray(n)
        self.n_done = 0
        self.waiters: dict[int, simpy.Event] = {}
        self.inflight = 0
        self.running: tuple[float, bool] | None = None  # (planned end, slowed) of the compute op running
        self.extend = 0.0  # extra compute time owed because communication started mid-kernel
        self.coll_seq: dict[str, int] = {}
        # stream -> (op index, what it waits for: a dependency's index, or "rendezvous"/"send/recv")
        self.blocked: dict[str, tuple[int, int | str]] = {}
        self.algorithm: dict[int, tuple[str, str]] = {}
        self.groups: dict[int, tuple[int, ...]] = {}


@dataclass
class Rendezvous:
    op: CommOp
    members: tuple[int, ...]
    expected: int
    event: simpy.Event
    arrived: list[tuple[RankState, int]] = field(default_factory=list)

"""The result of a replay: when every op of every simulated rank ran.

Programs are shared per role, so the trace stores per simulated rank only three float arrays
indexed by op position in that rank's program (``ready``: deps done and stream free, i.e. the op
reached the head of its stream; ``start``: it began running, after the rendezvous for
communication; ``end``) and, for collectives, the algorithm and protocol chosen. Everything else
(kind, bytes, stream, name) is read from the shared program, so a 1,000-rank trace costs a few
arrays, not a million objects. :meth:`Trace.records` expands one rank into :class:`OpRecord` s
for reports and exports.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Sequence

import numpy as np

from simulator.schedule.ir import CommOp, ComputeOp, Op, P2POp


def op_kind(op: Op) -> str:
    """Report category of an op: the collective name, ``sendrecv`` for P2P, ``compute``."""
    if isinstance(op, CommOp):
        return op.op
    if isinstance(op, P2POp):
        return "sendrecv"
    return "compute"


def op_bytes(op: Op) -> int:
    """Bytes an op accounts for: nccl-tests size for collectives, bytes *sent* for P2P,
    HBM bytes for compute."""
    if isinstance(op, CommOp):
        return op.size_bytes
    if isinstance(op, P2POp):
        return sum(t.nbytes for t in op.sends)
    return int(op.hbm_bytes)


NOT_COMPUTE, NO_LAYER = -2, -1  # compute_layers: an op off the compute stream; a kernel of no layer


def compute_layers(program: Sequence[Op]) -> np.ndarray:
    """Per op of a program: the transformer layer of a compute-stream kernel (``Tag.layer``),
    ``NO_LAYER`` for a compute-stream kernel outside the layers (embedding, head, loss,
    optimizer), ``NOT_COMPUTE`` for every other op."""
    kernel = ComputeOp
    return np.fromiter((NOT_COMPUTE if op.__class__ is not kernel or op.stream != "compute"
                        else NO_LAYER if (layer := op.tag.layer) is None or layer < 0 else layer
                        for op in program), dtype=np.int64, count=len(program))


@dataclass(frozen=True, slots=True)
class OpRecord:
    rank: int
    index: int  # position in the rank's program
    name: str
    stream: str
    kind: str  # compute | allgather | reducescatter | allreduce | alltoall | broadcast | sendrecv
    bytes: int
    ready: float  # deps done and stream free (issued to its stream)
    start: float  # began running (after the rendezvous for communication)
    end: float
    algorithm: str = ""
    protocol: str = ""
    group: tuple[int, ...] = ()

    @property
    def wait(self) -> float:
        """Exposed wait at the rendezvous: time between issue and start (waiting on peers)."""
        return self.start - self.ready

    @property
    def duration(self) -> float:
        return self.end - self.start


@dataclass
class RankTimeline:
    """One simulated rank: its role's program (shared) and when each op ran."""

    rank: int
    role: object
    program: Sequence[Op]
    ready: np.ndarray
    start: np.ndarray
    end: np.ndarray
    algorithm: dict[int, tuple[str, str]] = field(default_factory=dict)  # op index -> (algo, proto)
    groups: dict[int, tuple[int, ...]] = field(default_factory=dict)  # op index -> member ranks

    @property
    def finish(self) -> float:
        return float(self.end.max()) if len(self.end) else 0.0


@dataclass
class SimStats:
    ranks: int  # ranks in the plan
    ranks_simulated: int
    events: int  # SimPy events processed
    wall_s: float
    mirrored_axes: tuple[str, ...] = ()  # axes represented by one rank (symmetric mode)
    folded_micro_batches: int = 0  # steady micro-batches replayed once and put back (replay/fold.py)


@dataclass
class Trace:
    timelines: dict[int, RankTimeline]
    stats: SimStats
    # compute_layers of each program the timelines share (by role), read once: a deep pipeline's
    # stage holds tens of thousands of ops, and the report reads each stage's several times
    _layers: dict[int, tuple[Sequence[Op], np.ndarray]] = field(default_factory=dict, repr=False, compare=False)

    def layers(self, rank: int) -> np.ndarray:
        """:func:`compute_layers` of the rank's program."""
        program = self.timelines[rank].program
        hit = self._layers.get(id(program))
        if hit is None or hit[0] is not program:
            hit = self._layers[id(program)] = (program, compute_layers(program))
        return hit[1]

    @property
    def ranks(self) -> list[int]:
        return sorted(self.timelines)

    @property
    def step_time_s(self) -> float:
        return max((t.finish for t in self.timelines.values()), default=0.0)

    def critical_rank(self) -> int:
        """The simulated rank that finishes last. When several end the step together (they all
        wait for a final collective), the one with the most busy compute time: its idle time is
        what the step really waits on. Lowest rank on exact ties."""
        step = self.step_time_s
        last = [r for r, t in self.timelines.items() if t.finish >= step * (1 - 1e-9)]
        if len(last) == 1:
            return last[0]
        return min(last, key=lambda r: (-round(self.compute_busy(r), 12), r))

    def compute_busy(self, rank: int) -> float:
        """Seconds the rank's compute stream is busy."""
        tl = self.timelines[rank]
        mask = self.layers(rank) != NOT_COMPUTE
        return float((tl.end[mask] - tl.start[mask]).sum())

    def records(self, rank: int) -> Iterator[OpRecord]:
        tl = self.timelines[rank]
        for i, op in enumerate(tl.program):
            algo, proto = tl.algorithm.get(i, ("", ""))
            yield OpRecord(
                rank=rank, index=i, name=op.name, stream=op.stream, kind=op_kind(op), bytes=op_bytes(op),
                ready=float(tl.ready[i]), start=float(tl.start[i]), end=float(tl.end[i]),
                algorithm=algo, protocol=proto, group=tl.groups.get(i, ()),
            )

    def streams(self, rank: int) -> list[str]:
        """Streams of a rank, compute first, then in order of first use."""
        seen: dict[str, None] = {"compute": None}
        for op in self.timelines[rank].program:
            seen.setdefault(op.stream, None)
        return list(seen)

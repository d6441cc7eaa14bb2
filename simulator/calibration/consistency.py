"""Rows of a measured sweep that no fixed machine could have produced, found before fitting.

Within one algorithm and protocol a collective's time can only grow with the message size
(every term of the cost, latency and bytes over bandwidth, is non-decreasing in it). A larger
message may still run faster than a smaller one where NCCL switches algorithm or protocol: NCCL
chooses with its own tables, not with the machine's real speeds, so a protocol that is slow on
this machine keeps running until NCCL's tables switch away from it (data/nccl/
a100pcie_x2_allreduce_2node_ib_linear1k.csv: LL at 394 KiB takes 421 µs, Simple at 473 KiB 71 µs).
A large drop *between sizes where NCCL's tuner keeps the same choice* cannot come from the
collective model at any parameter values: the run was noisy or contended, or the library switched
something NCCL's tuner does not (RCCL's own tuning tables, a net plugin's eager/rendezvous
threshold). The fit down-weights such rows (Huber); this check names them, so that a user
reads "your data disagree with themselves here" rather than "the fit is poor". Rows within
``SWITCH_MARGIN`` of a size where the tuner's choice changes are not judged: the real switch
point moves with the machine's exact figures (the sweep above switches at 455,680 bytes, the
modelled tuner at 452,608).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from simulator.calibration.fit import MeasuredCollective, Predictor

DROP_FACTOR = 1.5  # a larger message this many times faster, with the same algorithm/protocol
SWITCH_MARGIN = 1.25  # sizes within this factor of a change of the tuner's choice are not judged


@dataclass(frozen=True)
class TimeDrop:
    """A larger message measured `factor` × faster than a smaller one on the same NCCL path."""

    source: str
    small_bytes: int
    small_time_s: float
    small_line: int  # 0 when the measurement has no line numbers
    large_bytes: int
    large_time_s: float
    large_line: int
    algorithm: str
    protocol: str

    @property
    def factor(self) -> float:
        return self.small_time_s / self.large_time_s

    def describe(self) -> str:
        def at(size: int, line: int) -> str:
            return f"{size} B" + (f" (line {line})" if line else "")

        return (f"{self.source}: {self.large_time_s * 1e6:.1f} us at {at(self.large_bytes, self.large_line)} is "
                f"{self.factor:.1f}x faster than {self.small_time_s * 1e6:.1f} us at "
                f"{at(self.small_bytes, self.small_line)}, both {self.algorithm}/{self.protocol} in NCCL's tuner; "
                "no machine does that within one algorithm and protocol (a noisy run, or a switch NCCL's tuner "
                "does not make): these rows are down-weighted in the fit")


def _paths(predictor: Predictor, m: MeasuredCollective, scale: float = 1.0) -> list[tuple[str, str]]:
    sizes = tuple(max(1, int(s * scale)) for s in m.sizes)
    shell = replace(m, sizes=sizes, times_s=tuple(1.0 for _ in sizes), lines=())
    return [(r.algorithm, r.protocol) for r in predictor.results(shell)]


def time_drops(predictor: Predictor, m: MeasuredCollective, factor: float = DROP_FACTOR) -> list[TimeDrop]:
    """For every row, the slowest smaller row on the same (algorithm, protocol) when that one
    took more than `factor` × as long; rows in size order, rows near a switch of the tuner's
    choice left out."""
    paths = _paths(predictor, m)
    steady = [p == lo == hi for p, lo, hi in zip(paths, _paths(predictor, m, 1 / SWITCH_MARGIN),
                                                   _paths(predictor, m, SWITCH_MARGIN))]
    order = sorted((i for i in range(len(m.sizes)) if steady[i]), key=lambda i: m.sizes[i])
    slowest: dict[tuple[str, str], int] = {}  # path -> index of the slowest row so far
    drops: list[TimeDrop] = []
    for j in order:
        path = paths[j]
        i = slowest.get(path)
        if i is not None and m.sizes[i] < m.sizes[j] and m.times_s[i] > factor * m.times_s[j]:
            drops.append(TimeDrop(m.source, m.sizes[i], m.times_s[i], m.lines[i] if m.lines else 0,
                                  m.sizes[j], m.times_s[j], m.lines[j] if m.lines else 0, *path))
        if i is None or m.times_s[j] > m.times_s[i]:
            slowest[path] = j
    return drops

"""Rank grid: which global rank holds which coordinate on each parallel axis.

Ranks are laid out with the first axis of ``order`` innermost (fastest varying), as Megatron's
``initialize_model_parallel`` does with its default tp-cp-ep-dp-pp order
(megatron/core/parallel_state.py): with tp=8 innermost, a TP group is 8 consecutive ranks and
therefore one NVLink node. A process group over some axes is the set of ranks that share every
other coordinate; its members are listed in rank order, as ``torch.distributed.new_group``
receives them.

A *split* axis is a block of consecutive coordinates of another axis: TransformerEngine's
hierarchical context parallelism (cp_comm a2a+p2p) runs its All-to-All over groups of
``cp_a2a`` consecutive CP ranks, so ``Grid(..., splits=(("cp_a2a", "cp", c1),))`` resolves the
axis ``cp_a2a`` to those blocks.

A *derived* axis is a second decomposition of the ranks, given by a rank stride and a size:
coordinate ``(rank // stride) % size``. Megatron lays the experts out with a rank generator of
its own, ``tp-ep-dp-pp`` with the expert TP size ``etp`` (parallel_state.py,
``expert_decoder_rank_generator``): inside one pipeline stage's block of tp·cp·dp ranks, the
expert-TP group is ``etp`` consecutive ranks, the EP group ``ep`` ranks ``etp`` apart and the
expert-data-parallel group the rest. That is how EP folds into DP×CP (and TP when etp < tp).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from itertools import product
from typing import Iterable, Mapping

from simulator.config.parallelism import AXES


@dataclass(frozen=True)
class Grid:
    """Axis sizes and placement order (innermost first)."""

    sizes: tuple[tuple[str, int], ...]  # in placement order, innermost first
    splits: tuple[tuple[str, str, int], ...] = ()  # (name, parent axis, block size)
    derived: tuple[tuple[str, int, int], ...] = ()  # (name, rank stride, size)

    @classmethod
    def from_sizes(cls, sizes: Mapping[str, int], order: Iterable[str] = AXES,
                   splits: Mapping[str, tuple[str, int]] | None = None,
                   derived: Mapping[str, tuple[int, int]] | None = None) -> "Grid":
        order = list(order)
        for a in sizes:
            if a not in order:
                if sizes[a] > 1:
                    raise ValueError(f"order {order} omits axis {a} of size {sizes[a]}")
                order.append(a)
        for a in order:
            if sizes.get(a, 1) < 1:
                raise ValueError(f"axis {a} has size {sizes.get(a)}")
        split_rows = []
        for name, (parent, block) in (splits or {}).items():
            if parent not in order or block < 1 or int(sizes.get(parent, 1)) % block:
                raise ValueError(f"split axis {name}: block {block} does not divide {parent}={sizes.get(parent, 1)}")
            split_rows.append((name, parent, int(block)))
        n = 1
        for a in order:
            n *= int(sizes.get(a, 1))
        derived_rows = []
        for name, (stride, size) in (derived or {}).items():
            if stride < 1 or size < 1 or n % (stride * size):
                raise ValueError(f"derived axis {name}: stride {stride} x size {size} does not divide {n} ranks")
            derived_rows.append((name, int(stride), int(size)))
        return cls(tuple((a, int(sizes.get(a, 1))) for a in order), tuple(split_rows), tuple(derived_rows))

    @cached_property
    def _derived(self) -> dict[str, tuple[int, int]]:
        return {name: (stride, size) for name, stride, size in self.derived}

    @cached_property
    def _split(self) -> dict[str, tuple[str, int]]:
        return {name: (parent, block) for name, parent, block in self.splits}

    @cached_property
    def _size(self) -> dict[str, int]:
        return dict(self.sizes)

    @cached_property
    def _stride(self) -> dict[str, int]:
        out, stride = {}, 1
        for a, n in self.sizes:
            out[a] = stride
            stride *= n
        return out

    @property
    def axes(self) -> tuple[str, ...]:
        return tuple(a for a, _ in self.sizes)

    @property
    def n_ranks(self) -> int:
        return self.degree(self.axes)

    def size(self, axis: str) -> int:
        if axis in self._derived:
            return self._derived[axis][1]
        if axis in self._split:
            return self._split[axis][1]
        return self._size.get(axis, 1)

    def degree(self, axes: Iterable[str]) -> int:
        d = 1
        for a in axes:
            d *= self.size(a)
        return d

    def coords(self, rank: int) -> dict[str, int]:
        if not 0 <= rank < self.n_ranks:
            raise ValueError(f"rank {rank} outside 0..{self.n_ranks - 1}")
        return {a: (rank // self._stride[a]) % n for a, n in self.sizes}

    def coord(self, rank: int, axis: str) -> int:
        if axis in self._derived:
            stride, size = self._derived[axis]
            return (rank // stride) % size
        if axis in self._split:
            parent, block = self._split[axis]
            return self.coord(rank, parent) % block
        if axis not in self._size:
            return 0
        return (rank // self._stride[axis]) % self._size[axis]

    def _stride_of(self, axis: str) -> int:
        """Rank distance between neighbours along ``axis``; a split axis steps its parent."""
        if axis in self._derived:
            return self._derived[axis][0]
        name = self._split[axis][0] if axis in self._split else axis
        if name not in self._stride:
            raise ValueError(f"unknown parallel axis {axis!r}; this grid has {', '.join(self.axes)}")
        return self._stride[name]

    def rank_of(self, coords: Mapping[str, int]) -> int:
        r = 0
        for a, n in self.sizes:
            c = coords.get(a, 0)
            if not 0 <= c < n:
                raise ValueError(f"coordinate {a}={c} outside 0..{n - 1}")
            r += c * self._stride[a]
        return r

    def group(self, rank: int, axes: Iterable[str]) -> tuple[int, ...]:
        """Members of the process group over ``axes`` that contains ``rank``, in rank order."""
        axes = [a for a in axes if self._stride_of(a) and self.size(a) > 1]
        base = rank - sum(self.coord(rank, a) * self._stride_of(a) for a in axes)
        if len(axes) == 1:  # one axis (a DP group of hundreds): an arithmetic progression, ascending
            stride = self._stride_of(axes[0])
            return tuple(range(base, base + self.size(axes[0]) * stride, stride))
        members = [base + sum(c * self._stride_of(a) for a, c in zip(axes, combo))
                   for combo in product(*(range(self.size(a)) for a in axes))]
        return tuple(sorted(members))

    def peer(self, rank: int, axis: str, offset: int) -> int:
        """The rank ``offset`` steps away along ``axis`` (cyclic)."""
        n = self.size(axis)
        c = self.coord(rank, axis)
        return rank + (((c + offset) % n) - c) * self._stride_of(axis)

"""Routes as values: the links one flow crosses (:class:`Route`), the links of an NVLS reduction
(:class:`NvlsRoutes`), and many routes at once as arrays (:class:`RouteMatrix`).

``Topology.route``, ``Topology.nvls_routes`` and ``Topology.route_matrix`` return them; the
costs layer turns them into flows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from numpy.typing import ArrayLike

import numpy as np

LinkClass = Literal["nvlink", "pcie", "net"]


@dataclass(frozen=True, slots=True)
class Route:
    """The links a flow from one GPU to another crosses, in order.

    ``link_class`` is NCCL's link class for the tuner's latency tables: ``nvlink`` (NVLink or
    xGMI), ``pcie`` (peer-to-peer over PCIe) or ``net`` (through NICs).
    """

    links: tuple[int, ...]
    latency_s: float
    link_class: LinkClass


@dataclass(frozen=True, slots=True)
class NvlsRoutes:
    """Links used by an NVLS (NVLink SHARP) multicast reduction inside one node.

    ``up[i]`` is the GPU→switch link of ``gpus[i]``, ``down[i]`` its switch→GPU link. In NVLS
    every member pushes its data up once and receives the reduced result down once, so the
    switch, not the GPUs, does the reduction.
    """

    gpus: tuple[int, ...]
    up: tuple[int, ...]
    down: tuple[int, ...]
    latency_s: float


LINK_CLASSES: tuple[LinkClass, ...] = ("nvlink", "pcie", "net")
MAX_ROUTE_LINKS = 10  # GPU→host→NIC→leaf→spine→leaf→NIC→host→GPU, + a CPU-interconnect hop at each end (sys paths)


@dataclass(frozen=True)
class RouteMatrix:
    """Many routes as arrays: row i is the route of pair i.

    ``links[i, :n_links[i]]`` are its link ids in order (the rest of the row is -1),
    ``latency_s[i]`` its latency, ``link_class[i]`` an index into :data:`LINK_CLASSES`.
    ``entries()`` gives the (pair, link) incidences, the form ``np.bincount`` and
    ``FlowNetwork.transfer_arrays`` take.
    """

    links: np.ndarray  # int64 (n, MAX_ROUTE_LINKS), -1 padded
    n_links: np.ndarray  # int64 (n,)
    latency_s: np.ndarray  # float64 (n,)
    link_class: np.ndarray  # int8 (n,)

    def __len__(self) -> int:
        return int(self.n_links.size)

    def entries(self) -> tuple[np.ndarray, np.ndarray]:
        """``(pair_of_entry, link_of_entry)``, grouped by pair, links in route order."""
        valid = self.links >= 0
        pair = np.broadcast_to(np.arange(len(self))[:, None], self.links.shape)[valid]
        return pair, self.links[valid]

    def link_loads(self, weights: ArrayLike, n_links: int) -> np.ndarray:
        """Sum over pairs of ``weights[i]`` on every link pair i crosses (length ``n_links``)."""
        pair, link = self.entries()
        w = np.broadcast_to(np.asarray(weights, dtype=np.float64), (len(self),))
        return np.bincount(link, weights=w[pair], minlength=n_links)

    def to_routes(self) -> list[Route]:
        rows, counts = self.links.tolist(), self.n_links.tolist()
        lat, cls = self.latency_s.tolist(), self.link_class.tolist()
        return [Route(tuple(r[:k]), x, LINK_CLASSES[c]) for r, k, x, c in zip(rows, counts, lat, cls)]

"""What the costs and replay layers read of a built cluster: :class:`TopologyView`.

``simulator.hardware.topology.Topology`` satisfies it; so can any stand-in (a test's hand-built
fabric, a future topology read from a file) without importing the hardware package. Everything
the collective planner, the cost model and the replay engine need is here and nothing else: the
profile (tuner constants, link efficiencies, GPU), placement, the per-link arrays and the three
route lookups. Routes are the plain values of ``simulator.hardware.routes``.
"""

from __future__ import annotations

from typing import Protocol, Sequence

import numpy as np
from numpy.typing import ArrayLike

from simulator.config.hardware import HardwareProfile
from simulator.hardware.routes import NvlsRoutes, Route, RouteMatrix


class TopologyView(Protocol):
    """The read-only interface of a built cluster (docs/architecture.md, "Hardware")."""

    @property
    def profile(self) -> HardwareProfile: ...

    @property
    def nodes(self) -> int: ...

    @property
    def gpus_per_node(self) -> int: ...

    @property
    def n_gpus(self) -> int: ...

    @property
    def rails(self) -> int:
        """NIC rails per node (0: no NICs)."""
        ...

    @property
    def n_links(self) -> int: ...

    @property
    def capacity_Bps(self) -> np.ndarray:
        """Raw bytes/s of every link direction, by link id."""
        ...

    @property
    def latency_s(self) -> np.ndarray: ...

    @property
    def kind(self) -> list[str]:
        """Per link id: ``nvlink``, ``xgmi``, ``pcie``, ``nic`` or ``net``."""
        ...

    @property
    def kind_runs(self) -> Sequence[tuple[str, int]]:
        """:attr:`kind` run-length encoded: (kind, count) runs in link id order (a few blocks,
        where ``kind`` has one entry per link: ~800k at 100k GPUs)."""
        ...

    def kind_of(self, link: int) -> str:
        """``kind[link]``, without the per-link list."""
        ...

    def node_of(self, gpu: int) -> int: ...

    def domain_of(self, gpu: int) -> int:
        """The NVLink domain of a GPU (its node unless the domain spans nodes, MNNVL): what NCCL's
        tuner and graph search treat as one node."""
        ...

    def nic_of(self, gpu: int) -> int: ...

    def route(self, src: int, dst: int, rail: int | None = None) -> Route: ...

    def route_matrix(self, src: ArrayLike, dst: ArrayLike, rail: ArrayLike | None = None) -> RouteMatrix: ...

    def nvls_routes(self, gpus: Sequence[int]) -> NvlsRoutes: ...

"""Hardware layer: the cluster as a graph of links (networkx only here), and the routes flows take.

``build_topology(profile, nodes)`` is the entry point; see docs/architecture.md "Hardware".
"""

from simulator.hardware.routes import NvlsRoutes, Route
from simulator.hardware.topology import Topology, build_topology

__all__ = ["NvlsRoutes", "Route", "Topology", "build_topology"]

"""The region tuner that AWS's NCCL net plugin (aws-ofi-nccl) carries, as a profile key.

Why: from release 1.16.0 aws-ofi-nccl builds its tuner into the net plugin library itself on AWS
platforms (commit 899d6636, "build: Enable tuner by default", first tagged in v1.16.0; v1.15.x and
older ship it as a separate ``libnccl-ofi-tuner.so`` that only an explicit NCCL_TUNER_PLUGIN loads).
NCCL 2.27.7 first opens what NCCL_TUNER_PLUGIN names and, when that fails or nothing is named, takes
the tuner symbols from the net plugin's library (``ncclTunerPluginLoad``, src/plugin/tuner.cc of
NVIDIA/nccl v2.27.7-1: ``ncclGetNetPluginLib(ncclPluginTypeTuner)``). So a p5 job with the 1.16 plugin
runs the plugin's choice of algorithm and protocol, not NCCL's tables, wherever the plugin has one.

What it does (aws/aws-ofi-nccl v1.16.3, commit b9e4cc4239ea23f3fb5fedb03da0e7c27b800569; the
tuner sources are identical from v1.16.0 to v1.16.3): ``src/tuner/nccl_ofi_tuner.cpp`` picks the
platform by the EC2 product name (p5.48xlarge and p5e.48xlarge share one table) and
``src/tuner/nccl_ofi_regions.cpp`` holds, per collective and rank layout, an ordered list of
polygons in the plane (message bytes, communicator ranks), each naming one (algorithm, protocol).
At each call the first polygon that contains the point, its edges included, whose pair NCCL has
enabled (``region_get_coll_info_internal_v3`` skips a pair NCCL's cost table marks ignored) gets
cost 0, so NCCL runs it; a point in none, a communicator of two nodes or fewer, and a collective
or layout without regions keep NCCL's own choice. Only the p5/p5e AllReduce regions at 8 ranks
per node are encoded here (what the bundled sweeps run); the p5en/p6 tables and the 1- and
2-ranks-per-node ones are not, and select NCCL's choice (:func:`plugin_choice` returns None).

The profile key: ``nccl.tuner_plugin: "aws-ofi-nccl-1.16:p5.48xlarge"`` (release, then the EC2
instance type the plugin reads). Set it only where the run is known to have loaded that plugin.
The key is checked when the profile loads (:func:`simulator.config.nccl_overrides.check_tuner_plugin`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

Point = tuple[float, float]

# The plugin's plane is bounded by these (include/tuner/nccl_ofi_tuner_region.h, v1.16.3)
MAX_SIZE = 100.0 * 1024 ** 3
MAX_RANKS = 1024.0 * 1024
P5_TYPES = ("p5.48xlarge", "p5e.48xlarge")


@dataclass(frozen=True)
class Region:
    """One polygon of the plugin: runs `algo`/`proto` (simulator names) for points inside it."""

    algo: str
    proto: str
    vertices: tuple[Point, ...]


def _extend(a: Point, b: Point, z: Point = (MAX_SIZE, MAX_RANKS)) -> Point:
    """The point where the line through `a` and `b`, followed upwards, leaves the box [0, z]:
    the plugin's ``extend_region`` (a vertical line keeps its x, a horizontal one its y)."""
    (ax, ay), (bx, by) = a, b
    if ax == bx:
        return (ax, z[1])
    if ay == by:
        return (z[0], ay)
    slope = (ay - by) / (ax - bx)
    y_at_right = by + slope * (z[0] - bx)
    if y_at_right < z[1]:
        return (z[0], y_at_right)
    return (bx + (z[1] - by) / slope, z[1])


def _p5_allreduce_8ppn() -> tuple[Region, ...]:
    """p5/p5e AllReduce with 8 ranks per node, in the plugin's order (first match wins)."""
    tree_top = _extend((402653184, 2048), (402653184, 4096))
    slope_top = _extend((8053063680, 160), (9663676416, 192))
    return (
        Region("tree", "ll128", ((0, 16), (31457280, 16), (37748736, 32), (117440512, 64), (301989888, 128),
                                 (301989888, 256), (335544320, 512), (536870912, 1024), (402653184, 2048),
                                 (402653184, 4096), tree_top, (0, tree_top[1]))),
        # a degenerate polygon: the line of 16 ranks (two nodes) above 30 MiB; unused, as the plugin
        # leaves communicators of two nodes to NCCL
        Region("nvls_tree", "simple", ((31457281, 16), (MAX_SIZE, 16), (31457281, 16))),
        Region("ring", "ll128", ((31457280, 17), (1073741824, 17), (2147483648, 64), (2147483648, 128),
                                 (1342177280, 160), (2147483648, 256), (1074790400, 256), (444596224, 160),
                                 (301989888, 128), (117440512, 64), (37748736, 32))),
        Region("nvls_tree", "simple", ((2147483648, 128), (6442450944, 128), (8053063680, 160), (9663676416, 192),
                                       slope_top, tree_top, (402653184, 4096), (402653184, 2048),
                                       (536870912, 1024), (335544320, 512), (301989888, 256), (310378496, 160),
                                       (444596224, 160), (1074790400, 256), (2684354560, 256),
                                       (2147483648, 224), (1342177280, 160))),
        Region("ring", "simple", ((1073741824, 17), (slope_top[0], 17), slope_top, (9663676416, 192),
                                  (8053063680, 160), (2684354560, 64), (1610612736, 32))),
    )


_P5_ALLREDUCE_8PPN = _p5_allreduce_8ppn()


def _on_segment(p: Point, a: Point, b: Point) -> bool:
    """`p` lies on the segment a-b (within rounding of the extended vertices)."""
    dx, dy = b[0] - a[0], b[1] - a[1]
    length2 = dx * dx + dy * dy
    if length2 == 0.0:
        return p == a
    t = ((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / length2
    if t < 0.0 or t > 1.0:
        return False
    cross = dx * (p[1] - a[1]) - dy * (p[0] - a[0])
    return abs(cross) / math.sqrt(length2) < 1e-9


def contains(vertices: tuple[Point, ...], p: Point) -> bool:
    """`p` inside the closed polygon or on its boundary (even-odd rule, as the plugin's ray casting)."""
    n = len(vertices)
    edges = [(vertices[i], vertices[(i + 1) % n]) for i in range(n)]
    if any(_on_segment(p, a, b) for a, b in edges):
        return True
    x, y = p
    inside = False
    for (ax, ay), (bx, by) in edges:
        if (ay > y) != (by > y):  # the edge straddles the horizontal line through p (half-open)
            x_cross = ax + (y - ay) * (bx - ax) / (by - ay)
            if x_cross > x:
                inside = not inside
    return inside


def regions_for(tuner_plugin: str, coll: str, n_ranks: int, n_nodes: int) -> tuple[Region, ...]:
    """The plugin's ordered regions for this communicator (empty: it keeps NCCL's choice)."""
    instance = tuner_plugin.rsplit(":", 1)[-1].strip()
    if instance in P5_TYPES and coll == "allreduce" and n_ranks == 8 * n_nodes:
        return _P5_ALLREDUCE_8PPN
    return ()


def plugin_choice(tuner_plugin: str, coll: str, nbytes: int, n_ranks: int, n_nodes: int,
                  enabled: set[tuple[str, str]] | frozenset[tuple[str, str]]) -> tuple[str, str] | None:
    """The (algorithm, protocol) the plugin gives NCCL for one call, or None where NCCL chooses.

    `enabled`: the pairs NCCL's cost table has (the others are skipped, so a later region may
    match); `nbytes`: what NCCL passes the tuner (AllReduce: the buffer)."""
    if n_nodes <= 2:  # the plugin leaves two nodes or fewer to NCCL's own tuner
        return None
    point = (float(nbytes), float(n_ranks))
    for region in regions_for(tuner_plugin, coll, n_ranks, n_nodes):
        if (region.algo, region.proto) in enabled and contains(region.vertices, point):
            return region.algo, region.proto
    return None

"""The topology numbers its links in blocks, deriving each role's link ids arithmetically
(``Topology._su_up[g]``, ``_nic_leaf[node, rail]``, ...) instead of recording them link by link.
Checked here against the per-link enumeration the ids were defined by (GPU by GPU, node by
node, rail by rail, as docs/architecture.md names the vertices): every id's endpoints in the
graph, which is built from the blocks' own name generators, are the vertices that loop gives,
every link has exactly one role, and the per-link arrays are the graph's attributes."""

from __future__ import annotations

import numpy as np
import pytest

from simulator.config.hardware import apply_overlay, load_profile
from simulator.hardware.topology import Topology, build_topology


def _expected_links(t: Topology) -> dict[int, tuple[str, str]]:
    """Link id -> (u, v) by the per-link loops over GPUs, nodes, rails, units and spines."""
    so = t.profile.scale_out
    want: dict[int, tuple[str, str]] = {}
    for g in range(t.n_gpus):
        host = f"host{g // t.gpus_per_node}"
        want[int(t._pcie_up[g])], want[int(t._pcie_down[g])] = (f"gpu{g}", host), (host, f"gpu{g}")
        if t.profile.node.scale_up.kind == "nvswitch":
            sw = f"nvsw{g // t.domain_gpus}"
            want[int(t._su_up[g])], want[int(t._su_down[g])] = (f"gpu{g}", sw), (sw, f"gpu{g}")
        if t.profile.node.scale_up.kind == "mesh":
            base = g - g % t.gpus_per_node
            for j in range(t.gpus_per_node):
                if base + j != g:
                    want[int(t._mesh[g, j])] = (f"gpu{g}", f"gpu{base + j}")
    for n in range(t.nodes):
        for r in range(t.rails):
            nic = f"nic{n}.{r}"
            out, back = t._nic_pcie[n, r].tolist()
            want[out], want[back] = (f"host{n}", nic), (nic, f"host{n}")
            if t._nic_leaf.size:
                leaf = f"leaf{n // so.nodes_per_unit}.{r if t._leaf_rails > 1 else 0}"
                up, down = t._nic_leaf[n, r].tolist()
                want[up], want[down] = (nic, leaf), (leaf, nic)
    for u in range(t._leaf_spine.shape[0]):
        for r in range(t._leaf_spine.shape[1]):
            for s in range(t._leaf_spine.shape[2]):
                up, down = t._leaf_spine[u, r, s].tolist()
                want[up], want[down] = (f"leaf{u}.{r}", f"spine{s}"), (f"spine{s}", f"leaf{u}.{r}")
    for (a, b), link in t._global.items():
        want[link] = (f"leaf{a}.0", f"leaf{b}.0")
    return want


def _dragonfly() -> Topology:
    p = apply_overlay(load_profile("gh200-alps"), {"scale_out": {"kind": "dragonfly", "nodes_per_unit": 4,
                                                                 "oversubscription": 2.0}})
    return build_topology(p, 12)


@pytest.mark.parametrize("make", [
    lambda: build_topology(load_profile("dgx-h100"), 70),  # rail fat tree, 3 units
    lambda: build_topology(load_profile("gh200-alps"), 40),  # xGMI-like mesh, fat tree
    lambda: build_topology(load_profile("a100-pcie"), 3),  # PCIe-only node
    lambda: build_topology(load_profile("gb200-nvl72"), 40),  # NVLink domain of 18 trays
    lambda: build_topology(load_profile("aws-p5"), 33),  # NICs aggregated per GPU
    lambda: build_topology(load_profile("dgx-h100"), 1),  # one node: no spine layer
    _dragonfly,
], ids=["dgx-h100", "gh200-alps", "a100-pcie", "gb200-nvl72", "aws-p5", "one-node", "dragonfly"])
def test_arithmetic_link_ids_are_the_links_the_graph_names(make):
    t = make()
    want = _expected_links(t)
    edges = sorted((d["link"], u, v, d["kind"], d["capacity_Bps"], d["latency_s"]) for u, v, d in t.graph.edges(data=True))
    assert [e[0] for e in edges] == list(range(t.n_links))  # every id once, no gaps
    assert sorted(want) == list(range(t.n_links))  # every link has one role
    assert {e[0]: (e[1], e[2]) for e in edges} == want
    assert [e[3] for e in edges] == t.kind
    assert np.array_equal([e[4] for e in edges], t.capacity_Bps)
    assert np.array_equal([e[5] for e in edges], t.latency_s)


def test_a_100k_gpu_fabric_builds_without_per_link_python():
    """Llama 3's 16k-GPU plan scaled to 12,544 DGX H100 (100,352 GPUs, 827,904 link directions):
    built from blocks in well under the ~1.7 s a record per link took (budget 0.5 s CPU, loose for
    a loaded machine), and its routes still agree with the bulk path."""
    import time

    c0 = time.process_time()
    t = build_topology(load_profile("dgx-h100"), 12544)
    assert time.process_time() - c0 < 0.5
    # NVLink and GPU PCIe per GPU, NIC PCIe and NIC-leaf per node and rail, leaf-spine per leaf and spine
    assert t.n_links == 2 * 100352 * 2 + 2 * 12544 * 8 * 2 + 2 * 392 * 8 * 4
    src, dst = np.array([0, 5, 100351, 4096]), np.array([100351, 8, 0, 70000])
    m = t.route_matrix(src, dst)
    for i, (s, d) in enumerate(zip(src.tolist(), dst.tolist())):
        r = t.route(s, d)
        assert m.links[i, :len(r.links)].tolist() == list(r.links) and m.latency_s[i] == r.latency_s


def _ring_pattern_hop_by_hop(t: Topology, lay, n_ch: int, closed: bool):
    """The ring pattern as it was computed, one scalar route per hop."""
    from collections import defaultdict

    from simulator.costs.flow_patterns import _merge, _ring_orders

    acc: dict = defaultdict(lambda: [0.0, 0])
    rings = _ring_orders(t, lay, n_ch)
    per_ring = n_ch / len(rings)
    for order, rail in rings:
        if not closed:
            i0 = order.index(lay.gpus[0])
            order = order[i0:] + order[:i0]
        for i in range(len(order) if closed else len(order) - 1):
            a, b = order[i], order[(i + 1) % len(order)]
            cross = t.domain_of(a) != t.domain_of(b)
            e = acc[t.route(a, b, (t.nic_of(a) if rail is None else rail) if cross else None).links]
            e[0] += per_ring / n_ch
            e[1] += per_ring
    return _merge(acc)


@pytest.mark.parametrize("profile,nodes,pick", [
    ("dgx-h100", 70, lambda t: list(range(3, t.n_gpus, 8))),  # a DP group: one GPU per node, 3 units
    ("dgx-h100", 70, lambda t: list(range(16, 16 + 8 * 40))),  # whole nodes
    ("gh200-alps", 6, lambda t: list(range(t.n_gpus))[::-1]),  # mesh nodes, rail None
    ("polaris-a100", 3, lambda t: list(range(t.n_gpus))),  # cross-NIC rings
    ("gb200-nvl72", 40, lambda t: list(range(0, t.n_gpus, 3))),  # multi-node NVLink domains
    ("a100-pcie", 3, lambda t: [0, 1, 5, 4, 3]),
])
@pytest.mark.parametrize("closed", [True, False])
def test_ring_pattern_routed_in_bulk_equals_hop_by_hop(profile, nodes, pick, closed):
    from simulator.costs.flow_patterns import layout, ring_pattern

    t = build_topology(load_profile(profile), nodes)
    lay = layout(t, pick(t))
    for n_ch in (1, 3, 8):
        assert ring_pattern(t, lay, n_ch, closed) == _ring_pattern_hop_by_hop(t, lay, n_ch, closed)

"""Speed of the fluid flow network (simulator/replay/links.py): prints figures, asserts nothing.

1. One max-min recompute for ~20,000 concurrent flows of 2-6 links (random routes: the worst
   case, many distinct fair-share levels).
2. A ring step of an AllGather on 1,024 H100 GPUs (128 DGX nodes): 1,024 flows on real routes,
   started with one transfer_many; events and recomputes it costs.
3. 16 ring steps of 8 concurrent 128-GPU rings sharing the fabric (one phase after another).
4. ~20,000 flows of a sparse All-to-All on real routes: one max-min recompute, and the first 100
   events of those flows started one by one.
4b. Two overlapping 64-rank expert-parallel All-to-Alls (4,032 flows each) and a send/recv, 4 times.
5. The 137k routes of a 1,024-rank All-to-All: Topology.route_matrix against route() calls.
6. Staggered send/recv: 1,024 ring hops (a CP ring per node pair) started at random instants, so
   every start and finish is its own event; incremental rates touch only the hop's component.

Run: python benchmarks/bench_flow_network.py
"""

from __future__ import annotations

import time

import numpy as np
import simpy

from simulator.config.hardware import load_profile
from simulator.hardware import build_topology
from simulator.replay.fair_share import max_min_rates
from simulator.replay.links import FlowNetwork


def random_recompute(n_flows: int = 20_000, n_links: int = 8_000) -> None:
    rng = np.random.default_rng(0)
    lengths = rng.integers(2, 7, size=n_flows)
    e_flow = np.repeat(np.arange(n_flows), lengths)
    e_link = rng.integers(0, n_links, size=e_flow.size)
    cap = rng.choice([50e9, 450e9, 900e9], size=n_links)
    t = time.perf_counter()
    max_min_rates(e_flow, e_link, n_flows, cap)
    print(f"random max-min, {n_flows} flows / {e_flow.size} flow-links: {1e3 * (time.perf_counter() - t):.1f} ms per recompute")


def ring_step(nodes: int = 128) -> None:
    t0 = time.perf_counter()
    topo = build_topology(load_profile("dgx-h100"), nodes)
    t1 = time.perf_counter()
    n = topo.n_gpus
    routes = [topo.route(g, (g + 1) % n).links for g in range(n)]
    t2 = time.perf_counter()
    env = simpy.Environment()
    net = FlowNetwork(env, topo.capacity_Bps)
    env.run(net.transfer_many([(r, 64e6) for r in routes]))
    t3 = time.perf_counter()
    print(f"{n} GPUs: build_topology {1e3 * (t1 - t0):.0f} ms ({topo.n_links} links), {n} routes {1e3 * (t2 - t1):.1f} ms, "
          f"ring step {1e3 * (t3 - t2):.1f} ms, sim time {env.now * 1e6:.0f} us, events {net.stats.events}, recomputes {net.stats.recomputes}")


def concurrent_rings(nodes: int = 128, steps: int = 16) -> None:
    topo = build_topology(load_profile("dgx-h100"), nodes)
    env = simpy.Environment()
    net = FlowNetwork(env, topo.capacity_Bps)
    n = topo.n_gpus
    # 8 rings, ring k = GPUs with local index k (rail-aligned DP groups), all at once
    rings = [[g for g in range(n) if g % 8 == k] for k in range(8)]
    flows = [(topo.route(r[i], r[(i + 1) % len(r)]).links, 8e6) for r in rings for i in range(len(r))]

    def proc():
        for _ in range(steps):
            yield net.transfer_many(flows)

    t = time.perf_counter()
    env.process(proc())
    env.run()
    print(f"{len(flows)} flows x {steps} phases: {1e3 * (time.perf_counter() - t):.0f} ms wall, events {net.stats.events}, "
          f"recomputes {net.stats.recomputes}, sim {env.now * 1e6:.0f} us")


def alltoall_like(nodes: int = 128, peers: int = 20) -> None:
    """~20k flows on real routes: every GPU sends to `peers` others (a sparse All-to-All)."""
    topo = build_topology(load_profile("dgx-h100"), nodes)
    n = topo.n_gpus
    rng = np.random.default_rng(1)
    routes = [topo.route(g, int(d)).links for g in range(n) for d in rng.choice(np.delete(np.arange(n), g), peers, replace=False)]
    lengths = np.array([len(r) for r in routes])
    e_flow = np.repeat(np.arange(len(routes)), lengths)
    e_link = np.concatenate([np.asarray(r) for r in routes])
    t = time.perf_counter()
    max_min_rates(e_flow, e_link, len(routes), topo.capacity_Bps)
    t1 = time.perf_counter()
    # The same flows as one phase on a FlowNetwork: its first 100 network events (starts and
    # completions; each completion re-shares one connected component of ~20k flows).
    env = simpy.Environment()
    net = FlowNetwork(env, topo.capacity_Bps)
    net.transfer_many([(r, 1e6) for r in routes])
    while net.stats.events < 100:
        env.step()
    t2 = time.perf_counter()
    print(f"sparse all-to-all on {n} GPUs, {len(routes)} flows / {e_flow.size} flow-links: "
          f"{1e3 * (t1 - t):.1f} ms per recompute; as a FlowNetwork phase {1e3 * (t2 - t1) / 100:.1f} ms "
          f"per network event")


def ep_alltoall_met(nodes: int = 128, ranks: int = 64, repeat: int = 4) -> None:
    """Two expert-parallel All-to-Alls (``ranks`` GPUs over ranks/8 nodes each: 4,032 flows for
    64), the second over half the first's nodes and half others, started 0.3 ms later, plus a
    send/recv on one NIC, ``repeat`` times in a row: as FlowNetwork phases, their flows go on the
    network as classes, split where their rates differ."""
    from simulator.costs.collectives import effective_capacity_Bps, plan_collective

    topo = build_topology(load_profile("dgx-h100"), nodes)
    a = plan_collective("alltoall", list(range(ranks)), 256 << 20, topo).phases[0]
    b = plan_collective("alltoall", list(range(ranks // 2, ranks // 2 + ranks)), 256 << 20, topo).phases[0]
    env = simpy.Environment()
    net = FlowNetwork(env, effective_capacity_Bps(topo))

    def proc(phase, delay, p2p):
        yield env.timeout(delay)
        for _ in range(repeat):
            if p2p:
                net.transfer(topo.route(0, 8).links, 64e6)
            yield net.transfer_phase(phase)

    t = time.perf_counter()
    env.process(proc(a, 0.0, True))
    env.process(proc(b, 3e-4, False))
    env.run()
    print(f"two {ranks}-rank All-to-Alls ({len(a)} flows each) overlapping, and a send/recv, x{repeat}: "
          f"{1e3 * (time.perf_counter() - t):.0f} ms wall, sim {env.now * 1e3:.3f} ms, events {net.stats.events}, "
          f"recomputes {net.stats.recomputes} ({getattr(net.stats, 'class_level', 0)} class by class)")


def bulk_routes(nodes: int = 128) -> None:
    """The 137k (src, dst) pairs of a 1,024-rank All-to-All (PXN-style aggregation: 7 local peers
    plus one peer per other node): scalar Topology.route() against one route_matrix() call."""
    topo = build_topology(load_profile("dgx-h100"), nodes)
    n, gpn = topo.n_gpus, topo.gpus_per_node
    src = np.repeat(np.arange(n), n // gpn + gpn - 2)
    node, local = src // gpn, src % gpn
    k = np.arange(src.size) % (n // gpn + gpn - 2)
    # k < gpn - 1: a local peer; else the same local index on another node
    local_dst = node * gpn + (local + 1 + k) % gpn
    other = (node + 1 + (k - (gpn - 1))) % (n // gpn)
    dst = np.where(k < gpn - 1, local_dst, other * gpn + local)
    t = time.perf_counter()
    m = topo.route_matrix(src, dst)
    t1 = time.perf_counter()
    for s, d in zip(src.tolist(), dst.tolist()):
        topo.route(s, d)
    t2 = time.perf_counter()
    print(f"{src.size} routes on {n} GPUs: route_matrix {1e3 * (t1 - t):.0f} ms ({m.links.nbytes / 1e6:.1f} MB), "
          f"scalar route() {1e6 * (t2 - t1) / src.size:.2f} us each ({t2 - t1:.2f} s)")


def staggered_sendrecv(nodes: int = 128, rounds: int = 8) -> None:
    topo = build_topology(load_profile("dgx-h100"), nodes)
    n = topo.n_gpus
    rng = np.random.default_rng(2)
    env = simpy.Environment()
    net = FlowNetwork(env, topo.capacity_Bps)
    routes = [topo.route(g, (g + 1) % n).links for g in range(n)]

    def hop(links):
        for _ in range(rounds):
            yield env.timeout(float(rng.uniform(0, 50e-6)))
            yield net.transfer(links, 16e6)

    t = time.perf_counter()
    for r in routes:
        env.process(hop(r))
    env.run()
    wall = time.perf_counter() - t
    print(f"{n * rounds} staggered send/recv flows on {n} GPUs: {1e3 * wall:.0f} ms wall, "
          f"{1e6 * wall / net.stats.events:.0f} us per network event ({net.stats.events} events, "
          f"{net.stats.recomputes} recomputes)")


if __name__ == "__main__":
    random_recompute()
    alltoall_like()
    ep_alltoall_met()
    ring_step()
    concurrent_rings()
    bulk_routes()
    staggered_sendrecv()

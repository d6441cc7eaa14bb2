"""Score the expert-parallel token exchange (``schedule/moe.py``'s DeepEP/HybridEP dispatch and
combine, priced by the collective model) against NVIDIA's published HybridEP timings
(``data/kernels/hybridep_dispatch_combine.csv``: 4,096 tokens per rank, hidden 7,168, top-8 of 8
local experts per rank, 8-36 ranks in one GB200 NVL72 domain, 8 on a DGX B200, 16-64 H100 over
InfiniBand).

Each published row becomes a scenario of the same exchange (:func:`scenario`): two MoE layers of
that shape under ``moe_dispatcher: deepep`` with the HybridEP backend, one micro-batch, on the
profile of that system; the first layer's forward dispatch and combine are read off the replay
(:func:`modelled_seconds`). The published bandwidths become times with the bytes the benchmark
divides by (:func:`metric_bytes`, the expectation under its router, which draws each token's eight
experts uniformly without replacement).

What the comparison shows:

* **Inside an NVLink domain** (GB200 at 8-36 ranks, B200 at 8) the model's exchange is the
  kernel: within a few percent of the kernel-only times at 32 SMs. The Python call
  (``torch_api``) adds what a training step pays elsewhere in the model: the copy of the received
  rows out of the registered buffer (Megatron-Core's ``dispatch_with_permute`` permutes them out
  instead: the schedule's ``moe.permute`` op) and a stream synchronisation per dispatch (the
  schedule's host synchronisation, ``CommOp.host_sync``).
* **Across H100 nodes** the model runs the RDMA stage and the NVLink forwarding one after the other
  (``deepep.ep_inter`` then ``deepep.ep_intra``), where the kernel pipelines them: the model is
  slower than the kernel alone (by the NVLink stage, less as the RDMA stage grows with the nodes)
  and level with the Python call, which adds the copy and the synchronisation. Pinned as
  measured in ``tests/unit/test_ep_exchange.py``; not changed, since a training step pays the
  synchronisation and a permute beside every dispatch (above) and the end-to-end rows that run
  HybridEP over InfiniBand (Megatron-Bridge's Qwen3-30B-A3B on 16 H100) agree within 3.2%.

``python -m simulator.calibration.ep_exchange`` prints the table.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from simulator.files import bundled_dir, read_commented_csv
from simulator.schedule.moe import expected_nodes_hit

DATA = bundled_dir("data/kernels") / "hybridep_dispatch_combine.csv"
TOKENS = 4096  # tokens per rank
HIDDEN = 7168
TOP_K = 8
LOCAL_EXPERTS = 8
ROW_BYTES = HIDDEN * 2  # a BF16 row
# The profile each published system runs on, and its GPUs per node (a GB200 tray holds 4).
PROFILES: dict[str, tuple[str, int]] = {"GB200": ("gb200-nvl72", 4), "B200": ("dgx-b200", 8), "H100": ("dgx-h100", 8)}
DIRECTIONS = ("dispatch", "combine")


@dataclass(frozen=True)
class Measurement:
    """One published row: the system, the implementation and how it was timed, the EP ranks, the
    SMs its kernels hold, the bandwidth metric and the BF16 dispatch and combine bandwidths (GB/s)."""

    platform: str
    implementation: str
    measurement: str
    ranks: int
    sms: int
    metric: str
    dispatch_GBps: float
    combine_GBps: float


def load() -> list[Measurement]:
    """Every row of the file; the FP8 dispatch column is not read (Megatron-Core's HybridEP path
    dispatches BF16 only: ``fused_a2a.init_hybrid_ep_buffer`` asserts ``not fp8_dispatch``)."""
    return [Measurement(r["platform"], r["implementation"], r["measurement"], int(r["ranks"]), int(r["sms"]),
                        r["metric"], float(r["dispatch_bf16_GBps"]), float(r["combine_GBps"]))
            for r in read_commented_csv(DATA)]


def metric_bytes(m: Measurement) -> float:
    """Expected bytes the benchmark divides by, under its router (each token's experts drawn
    uniformly without replacement): ``nvl_recv``, one row per token and destination rank over all
    source ranks, so 4,096 tokens times the distinct ranks a token reaches; ``rdma_send``, one row
    per token and destination node, the own node counted (``count_rdma_send_from_routing_map``)."""
    groups = m.ranks if m.metric == "nvl_recv" else m.ranks // PROFILES[m.platform][1]
    return TOKENS * expected_nodes_hit(LOCAL_EXPERTS * m.ranks, TOP_K, groups) * ROW_BYTES


def measured_seconds(m: Measurement, direction: str) -> float:
    rate = m.dispatch_GBps if direction == "dispatch" else m.combine_GBps
    return metric_bytes(m) / (rate * 1e9)


def scenario(platform: str, ranks: int, sms: int) -> dict[str, Any]:
    """The benchmark's exchange as a scenario: two MoE layers of its shape, one micro-batch of
    4,096 tokens per rank, HybridEP holding ``sms`` SMs, on ``ranks`` GPUs of ``platform``."""
    profile, per_node = PROFILES[platform]
    return {
        "name": f"hybridep-{platform}-{ranks}",
        "hardware": profile,
        "nodes": max(1, ranks // per_node),
        "model": {"preset": "qwen3-30b-a3b", "layers": 2, "hidden": HIDDEN, "experts": LOCAL_EXPERTS * ranks,
                  "top_k": TOP_K, "seq_len": TOKENS, "vocab": 32768},
        "training": {"micro_batch": 1, "global_batch": ranks, "dtype": "bf16", "recompute": "none"},
        "parallel": {"tp": 1, "pp": 1, "ep": ranks, "moe_dispatcher": "deepep", "moe_deepep_backend": "hybridep",
                     "moe_deepep_sms": sms},
    }


@lru_cache(maxsize=64)
def modelled_seconds(platform: str, ranks: int, sms: int) -> dict[str, float]:
    """Seconds of the first layer's forward dispatch and combine on rank 0: the exchange ops only
    (the All-to-All, or ``deepep.ep_inter`` and ``deepep.ep_intra`` across nodes), without the
    routing-map AllGather and the permutes, which the benchmark's calls do not run."""
    from simulator.config.scenario import build_scenario
    from simulator.hardware.topology import build_topology
    from simulator.replay.engine import replay
    from simulator.schedule.build import build_schedule

    scn = build_scenario(scenario(platform, ranks, sms))
    trace = replay(build_schedule(scn), build_topology(scn.profile, scn.nodes))
    tl = trace.timelines[0]
    out = dict.fromkeys(DIRECTIONS, 0.0)
    for i, op in enumerate(tl.program):
        for direction in DIRECTIONS:
            prefix = f"L0.moe.{direction}.fwd."
            if op.name.startswith(prefix) and "routing_map" not in op.name:
                out[direction] += float(tl.end[i] - tl.start[i])
    return out


def ratios(rows: list[Measurement]) -> list[tuple[Measurement, str, float]]:
    """Modelled over measured time, per row and direction."""
    return [(m, d, modelled_seconds(m.platform, m.ranks, m.sms)[d] / measured_seconds(m, d))
            for m in rows for d in DIRECTIONS]


def hybridep(rows: list[Measurement], platforms: tuple[str, ...], measurement: str,
             sms: int | None = None) -> list[Measurement]:
    return [m for m in rows if m.implementation == "hybridep" and m.platform in platforms
            and m.measurement == measurement and (sms is None or m.sms == sms)]


def main() -> None:
    rows = load()
    print(f"{DATA.name}: HybridEP BF16 dispatch and combine, modelled / measured time")
    print(f"{'system':6s} {'ranks':>5s} {'SMs':>4s} {'timed':12s} {'MB':>6s} {'dispatch':>9s} {'combine':>8s}")
    for m in sorted((m for m in rows if m.implementation == "hybridep"),
                    key=lambda m: (m.platform, m.ranks, m.sms, m.measurement)):
        t = modelled_seconds(m.platform, m.ranks, m.sms)
        print(f"{m.platform:6s} {m.ranks:5d} {m.sms:4d} {m.measurement:12s} {metric_bytes(m) / 1e6:6.0f} "
              f"{t['dispatch'] / measured_seconds(m, 'dispatch'):9.2f} {t['combine'] / measured_seconds(m, 'combine'):8.2f}")
    for label, sel in (("NVLink (GB200, B200), kernel only", hybridep(rows, ("GB200", "B200"), "kernel_only")),
                       ("InfiniBand (H100), kernel only", hybridep(rows, ("H100",), "kernel_only")),
                       ("InfiniBand (H100), Python call", hybridep(rows, ("H100",), "torch_api"))):
        print(f"  {label:36s} median {statistics.median(r for _, _, r in ratios(sel)):.2f}")


if __name__ == "__main__":
    main()

"""Measured step vs model, kernel by kernel: each collective, GEMM and attention kernel of a
PyTorch profiler (Kineto) trace is predicted on the scenario's hardware and compared.

* Collectives (NCCL kernels whose ``record_param_comms`` gave size and group size):
  :func:`simulator.replay.single_collective.time_collective` for that op, size and group, the
  group placed on consecutive GPUs (a group up to a node's size stays inside one node, as
  Megatron places TP groups; larger groups fill whole nodes). The model's own algorithm choice
  is used; the measured algorithm/protocol (from the kernel name) is reported beside it. A
  measured collective kernel also contains the time its rank waited for the slowest peer, so a
  trace from one rank over-states the collective when ranks are skewed.
* GEMMs and attention: :func:`simulator.costs.compute.compute_time` of a ComputeOp with the
  measured shape, minus the profile's launch floor (``compute_time`` adds the gap between
  back-to-back kernels; a profiler kernel duration does not contain it). Attention FLOPs are
  halved for causal masking unless ``causal=False`` (the trace does not record the mask).

Error = predicted time / measured time − 1; per category the median and worst |error|.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field
from typing import Any

from simulator.calibration.kineto import AttentionEvent, GemmEvent, KinetoTrace, dtype_alias

CATEGORIES = ("collective", "gemm", "attention")


@dataclass(frozen=True)
class EventComparison:
    category: str  # collective | gemm | attention
    kind: str  # collective op, aten op or "fwd"/"bwd"
    name: str
    shape: str  # human-readable: size and group, or m x n x k
    measured_s: float
    predicted_s: float
    start_s: float
    detail: str = ""  # e.g. measured vs predicted algorithm/protocol

    @property
    def error(self) -> float:
        return self.predicted_s / self.measured_s - 1.0


@dataclass(frozen=True)
class CategoryError:
    category: str
    events: int
    median_abs_error: float
    worst_abs_error: float
    measured_s: float  # summed over events
    predicted_s: float


@dataclass
class TraceComparison:
    scenario: str
    trace: str
    profile: str
    events: list[EventComparison]
    skipped: list[str] = field(default_factory=list)

    def by_category(self) -> list[CategoryError]:
        out = []
        for cat in CATEGORIES:
            evs = [e for e in self.events if e.category == cat]
            if not evs:
                continue
            errs = [abs(e.error) for e in evs]
            out.append(CategoryError(cat, len(evs), statistics.median(errs), max(errs),
                                     sum(e.measured_s for e in evs), sum(e.predicted_s for e in evs)))
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario, "trace": self.trace, "hardware": self.profile,
            "categories": [asdict(c) for c in self.by_category()],
            "events": [dict(asdict(e), error=e.error) for e in self.events],
            "skipped": self.skipped,
        }


def _group_gpus(group: int) -> list[int]:
    """Consecutive GPUs from 0: with node-major numbering a group up to a node's size stays in
    node 0 and a larger one fills whole nodes."""
    return list(range(group))


def _gemm_op(g: GemmEvent, mnk: tuple[int, int, int]) -> Any:
    from simulator.schedule.ir import ComputeOp

    m, n, k = mnk
    dtype = dtype_alias(g.dtype) or "bf16"
    dtype = dtype if dtype in ("bf16", "fp16", "fp8", "fp32") else "bf16"
    elem = {"fp8": 1, "fp32": 4}.get(dtype, 2)
    hbm = float(g.batch * (m * k + k * n + m * n) * elem)
    return ComputeOp(name=g.name[:60], kind="gemm", flops=2.0 * g.batch * m * n * k, hbm_bytes=hbm,
                     gemm=(int(m), int(n), int(k)), dtype=dtype)


def _attention_op(a: AttentionEvent, flops: float, causal: bool) -> Any:
    from simulator.schedule.ir import ComputeOp, Tag

    dtype = dtype_alias(a.dtype) or "bf16"
    dtype = dtype if dtype in ("bf16", "fp16") else "bf16"
    frac = 0.5 if causal else 1.0
    return ComputeOp(name=a.name[:60], kind="attention", flops=flops * frac, dtype=dtype,
                     causal_fraction=frac, tag=Tag(phase="bwd" if a.backward else "fwd"))


def compare_trace(scenario: Any, trace: KinetoTrace, *, causal: bool = True) -> TraceComparison:
    """Every measured kernel the model can predict, predicted on ``scenario``'s hardware."""
    from simulator.costs.collectives import OPS
    from simulator.costs.compute import compute_time
    from simulator.costs.model import CostModel
    from simulator.hardware.topology import build_topology
    from simulator.replay.single_collective import time_collective

    profile = scenario.profile
    gpu = profile.gpu
    launch_s = gpu.kernel_gap_us * 1e-6  # what compute_time adds per kernel beyond its duration
    topo = build_topology(profile, scenario.nodes)
    costs = CostModel(topo)
    events: list[EventComparison] = []
    skipped: list[str] = []
    for c in trace.collectives:
        where = f"{c.name[:50]} at {c.start_s:.6f} s"
        if c.backend != "nccl":
            skipped.append(f"{where}: {c.backend} collective (the model predicts NCCL)")
            continue
        if c.op not in OPS or not c.size_bytes or not c.group_size or c.duration_s <= 0:
            skipped.append(f"{where}: no size/group size recorded or not a modelled collective ({c.op})")
            continue
        if c.group_size > topo.n_gpus:
            skipped.append(f"{where}: group of {c.group_size} ranks is larger than the scenario's {topo.n_gpus} GPUs")
            continue
        r = time_collective(c.op, _group_gpus(c.group_size), c.size_bytes, costs)
        measured_alg = f"{c.algorithm or '?'}/{c.protocol or '?'}"
        events.append(EventComparison(
            "collective", c.op, c.name, f"{c.size_bytes} B over {c.group_size} ranks", c.duration_s, r.time_s,
            c.start_s, f"measured {measured_alg}, model {r.algorithm}/{r.protocol}"))
    for g in trace.gemms:
        mnk = g.mnk
        if mnk is None or not g.flops or g.duration_s <= 0:
            skipped.append(f"GEMM {g.name[:50]} at {g.start_s:.6f} s: no shape recorded")
            continue
        op = _gemm_op(g, mnk)
        pred = compute_time(op, gpu) - launch_s
        events.append(EventComparison("gemm", g.aten_op or "gemm", g.name, f"{g.batch}x {g.m}x{g.n}x{g.k} {op.dtype}",
                                      g.duration_s, pred, g.start_s))
    for a in trace.attentions:
        flops = a.flops
        if not flops or a.duration_s <= 0:
            skipped.append(f"attention {a.name[:50]} at {a.start_s:.6f} s: no shape recorded")
            continue
        op = _attention_op(a, flops, causal)
        pred = compute_time(op, gpu) - launch_s
        events.append(EventComparison(
            "attention", "bwd" if a.backward else "fwd", a.name,
            f"b{a.batch} h{a.heads} sq{a.seq_q} sk{a.seq_k} d{a.head_dim}{' causal' if causal else ''}",
            a.duration_s, pred, a.start_s))
    events.sort(key=lambda e: e.start_s)
    return TraceComparison(getattr(scenario, "name", ""), trace.source, profile.name, events, skipped)


def render_table(cmp: TraceComparison) -> str:
    lines = [f"compare-trace: {cmp.trace} vs scenario {cmp.scenario} on {cmp.profile}", "",
             f"{'category':10s} {'kind':14s} {'shape':34s} {'measured us':>12s} {'predicted us':>12s} {'error':>8s}  detail"]
    for e in cmp.events:
        lines.append(f"{e.category:10s} {e.kind[:14]:14s} {e.shape[:34]:34s} {e.measured_s * 1e6:12.1f} "
                     f"{e.predicted_s * 1e6:12.1f} {100 * e.error:+7.1f}%  {e.detail}")
    lines += ["", f"{'category':10s} {'events':>6s} {'median |err|':>13s} {'worst |err|':>12s} {'measured us':>12s} {'predicted us':>12s}"]
    for c in cmp.by_category():
        lines.append(f"{c.category:10s} {c.events:6d} {100 * c.median_abs_error:12.1f}% {100 * c.worst_abs_error:11.1f}% "
                     f"{c.measured_s * 1e6:12.1f} {c.predicted_s * 1e6:12.1f}")
    if cmp.skipped:
        lines += ["", f"not compared ({len(cmp.skipped)}):"] + [f"  {s}" for s in cmp.skipped[:20]]
        if len(cmp.skipped) > 20:
            lines.append(f"  ... and {len(cmp.skipped) - 20} more")
    return "\n".join(lines)

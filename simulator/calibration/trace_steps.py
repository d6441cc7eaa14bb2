"""Whole-step figures of a PyTorch profiler (Kineto) trace: step time, GPU busy compute, and the
communication the compute stream did not hide (exposed communication), per profiled step.

What a training step costs is not the sum of its kernels: NCCL kernels run on their own stream
beside the compute kernels, and only the part of them no compute kernel covers lengthens the
step. So, for one rank's GPU (the device with the most kernels in the trace):

* the steps are the ``ProfilerStep#N`` annotations ``torch.profiler.profile(schedule=...)``
  writes around each ``prof.step()``; a kernel belongs to the step during which it was
  *launched* (its ``cuda_runtime``/``hip`` launch, matched by correlation id, falls inside the
  annotation: the GPU runs behind the CPU, so the kernel itself may start after the annotation
  ends). Without annotations, the whole trace is one step;
* ``step_s`` is the annotation's duration (what the training loop experiences per iteration;
  the span from the first to the last kernel of the step when there is no annotation);
* ``compute_s`` is the length of the union of the non-communication kernel intervals,
  ``comm_s`` that of the communication kernels (NCCL/RCCL), and ``exposed_comm_s`` the length
  of the communication union minus the compute union: the time the GPU only communicated.

These are the quantities :func:`simulator.report.summary.summarize` reports for the model
(``step_time_s``, ``breakdown_s.compute`` and the sum of ``breakdown_s.exposed_comm``), so a
measured step can be laid beside a simulated one. HTA (Holistic Trace Analysis) computes the
same overlap from the same events in its ``get_comm_comp_overlap``.
"""

from __future__ import annotations

import bisect
import re
import statistics
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

_STEP = re.compile(r"^ProfilerStep#(\d+)$")
_COMM_KERNEL = re.compile(r"^(nccl|rccl)|nccl(Dev)?Kernel", re.IGNORECASE)
_LAUNCH_CATS = ("cuda_runtime", "cuda_driver", "runtime", "hip_runtime")


@dataclass(frozen=True)
class StepMeasure:
    """One profiled step of one rank (seconds)."""

    step: int | None  # N of ProfilerStep#N; None for a trace without annotations
    step_s: float
    gpu_span_s: float  # first kernel start to last kernel end
    compute_s: float
    comm_s: float
    exposed_comm_s: float
    kernels: int


@dataclass(frozen=True)
class TraceSteps:
    device: int | None
    steps: tuple[StepMeasure, ...]

    def median(self, field: str) -> float:
        """Median of one field over the steps (there is at least one: compare_steps checks)."""
        return float(statistics.median(getattr(s, field) for s in self.steps))


def union_length(intervals: Iterable[tuple[float, float]]) -> float:
    """Total length covered by a set of [start, end) intervals."""
    total = 0.0
    cur: tuple[float, float] | None = None
    for lo, hi in sorted(intervals):
        if cur is None or lo > cur[1]:
            if cur is not None:
                total += cur[1] - cur[0]
            cur = (lo, hi)
        else:
            cur = (cur[0], max(cur[1], hi))
    if cur is not None:
        total += cur[1] - cur[0]
    return total


def _merge(intervals: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    out: list[tuple[float, float]] = []
    for lo, hi in sorted(intervals):
        if out and lo <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def uncovered_length(intervals: Sequence[tuple[float, float]], cover: Sequence[tuple[float, float]]) -> float:
    """Length of the union of ``intervals`` not covered by the union of ``cover``."""
    a, c = _merge(intervals), _merge(cover)
    covered, j = 0.0, 0
    for lo, hi in a:
        while j < len(c) and c[j][1] <= lo:
            j += 1
        k = j
        while k < len(c) and c[k][0] < hi:
            covered += max(0.0, min(hi, c[k][1]) - max(lo, c[k][0]))
            k += 1
    return sum(hi - lo for lo, hi in a) - covered


def measure_steps(data: dict[str, Any]) -> TraceSteps:
    """Per-step figures of a loaded Kineto trace document (``{"traceEvents": [...]}``)."""
    events = [e for e in data.get("traceEvents", []) if isinstance(e, dict) and e.get("ph") == "X"]
    kernels = [e for e in events if e.get("cat") in ("kernel", "gpu_op") and _finite(e.get("ts"), e.get("dur"))]
    by_device: dict[Any, int] = {}
    for k in kernels:
        dev = (k.get("args") or {}).get("device")
        by_device[dev] = by_device.get(dev, 0) + 1
    if not by_device:
        return TraceSteps(None, ())
    device = max(by_device, key=lambda d: (by_device[d], str(d)))
    kernels = [k for k in kernels if (k.get("args") or {}).get("device") == device]
    launch_ts = {}
    for e in events:
        if e.get("cat") in _LAUNCH_CATS:
            corr = (e.get("args") or {}).get("correlation")
            if corr is not None and _finite(e.get("ts")):
                launch_ts[corr] = float(e["ts"])
    annotations = sorted((float(e["ts"]), float(e.get("dur", 0)), int(m.group(1))) for e in events
                         if (m := _STEP.match(str(e.get("name", "")))) and e.get("cat") in ("user_annotation", "cpu_op")
                         and _finite(e.get("ts"), e.get("dur")))
    groups: dict[int | None, list[dict[str, Any]]] = {}
    starts = [a[0] for a in annotations]
    for k in kernels:
        if not annotations:
            groups.setdefault(None, []).append(k)
            continue
        t = launch_ts.get((k.get("args") or {}).get("correlation"), float(k["ts"]))
        i = bisect.bisect_right(starts, t) - 1
        if i >= 0 and t <= annotations[i][0] + annotations[i][1]:
            groups.setdefault(i, []).append(k)
    steps = []
    for g, ks in sorted(groups.items(), key=lambda kv: -1 if kv[0] is None else kv[0]):
        spans = [(float(k["ts"]) * 1e-6, (float(k["ts"]) + float(k["dur"])) * 1e-6) for k in ks]
        comm = [s for s, k in zip(spans, ks) if _COMM_KERNEL.search(str(k.get("name", "")))]
        compute = [s for s, k in zip(spans, ks) if not _COMM_KERNEL.search(str(k.get("name", "")))]
        gpu_span = max(hi for _, hi in spans) - min(lo for lo, _ in spans)
        step_s = annotations[g][1] * 1e-6 if g is not None else gpu_span
        steps.append(StepMeasure(step=annotations[g][2] if g is not None else None, step_s=step_s,
                                 gpu_span_s=gpu_span, compute_s=union_length(compute), comm_s=union_length(comm),
                                 exposed_comm_s=uncovered_length(comm, compute), kernels=len(ks)))
    return TraceSteps(device, tuple(steps))


def _finite(*values: Any) -> bool:
    try:
        return all(v is not None and float(v) == float(v) and abs(float(v)) != float("inf") for v in values)
    except (TypeError, ValueError):
        return False


@dataclass(frozen=True)
class StepComparison:
    """The median measured step beside the simulated one."""

    steps: int  # profiled steps measured
    measured_step_s: float
    predicted_step_s: float
    measured_compute_s: float
    predicted_compute_s: float
    measured_exposed_comm_s: float
    predicted_exposed_comm_s: float
    measured_comm_s: float

    @property
    def step_error(self) -> float:
        return self.predicted_step_s / self.measured_step_s - 1.0

    def to_json(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__}
        out["step_error"] = self.step_error
        return out


def compare_steps(measured: TraceSteps, report: Any) -> StepComparison | None:
    """Median of the measured steps vs a simulated :class:`~simulator.report.summary.Report`."""
    if not measured.steps:
        return None
    bd = report.breakdown_s
    return StepComparison(
        steps=len(measured.steps), measured_step_s=measured.median("step_s"), predicted_step_s=report.step_time_s,
        measured_compute_s=measured.median("compute_s"), predicted_compute_s=bd.compute,
        measured_exposed_comm_s=measured.median("exposed_comm_s"),
        predicted_exposed_comm_s=sum(bd.exposed_comm.values()), measured_comm_s=measured.median("comm_s"))


def render_steps(cmp: StepComparison) -> str:
    def row(label: str, m: float, p: float) -> str:
        err = f"{100 * (p / m - 1):+7.1f}%" if m > 0 else "      –"
        return f"  {label:<24}{m * 1e3:>12.3f} {p * 1e3:>12.3f} {err}"

    return "\n".join([
        f"whole step (median of {cmp.steps} profiled step(s)):",
        f"  {'':<24}{'measured ms':>12} {'predicted ms':>12} {'error':>8}",
        row("step time", cmp.measured_step_s, cmp.predicted_step_s),
        row("compute (GPU busy)", cmp.measured_compute_s, cmp.predicted_compute_s),
        row("exposed communication", cmp.measured_exposed_comm_s, cmp.predicted_exposed_comm_s),
        f"  (measured communication kernels in all: {cmp.measured_comm_s * 1e3:.3f} ms, "
        f"{(cmp.measured_comm_s - cmp.measured_exposed_comm_s) * 1e3:.3f} ms of it hidden under compute)",
    ])

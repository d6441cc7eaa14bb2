"""From a Trace to the numbers a user reads: step time, MFU, the breakdown, bytes, memory.

**Breakdown on the critical rank** (the simulated rank that finishes last). Its compute stream
is either busy (``compute``) or idle. Every idle interval ends because some op the next kernel
depends on finished; we walk back along that chain of blockers (the dependency or earlier
same-stream op that finished last) and split the interval:

* while a communication op of the chain is *running* (after its rendezvous), the idle time is
  exposed communication of that op's type (allgather, reducescatter, allreduce, alltoall,
  sendrecv; broadcast is counted as allreduce, its nearest nccl-tests relative);
* while an op of the chain waits at its rendezvous for other ranks to issue it (a pipeline
  receive waiting for the previous stage, a straggler), the idle time is ``pipeline_bubble``;
* kernels on a communication-side stream (ZeRO-3's unflatten copy after an AllGather) count
  with the collective they serve;
* idle time the chain does not explain is bubble too.

Of the bubble, ``host_wait`` is the part during which the GPU waited for the host: a compute op
that started when the host issued it (:func:`simulator.costs.host.issued_at`), after its inputs
were ready, waited that long for the CPU to issue it (a small model's step, paced by Python and
kernel launches). It is reported beside the bubble, not beside compute and communication: the
parts still partition the step.

The tail after the last kernel (waiting for the final gradient reduction, say) is attributed
the same way from the op that ends the step. The parts partition the step, so compute + exposed
+ bubble equals the step time up to float rounding.

**MFU** = model FLOPs of the step (6·N + attention, the PaLM/Megatron convention of
:mod:`simulator.schedule.flops`, no recompute) / step time / (GPUs × the dense peak of the
run's GEMM dtype: bf16, fp16, or fp8 for fp8 runs). An fp8 run divided by the bf16 peak (as
some published MFU figures are) can exceed 100% on a schema-valid profile, so the peak is the
one the GEMMs run against and the report names it (``mfu_peak``). Every kernel runs at or below
its dtype's peak (fp8 GEMMs at the fp8 peak, attention and the rest at the bf16/fp16 one, which
is lower), so MFU ≤ 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from simulator.costs.host import issued_at
from simulator.errors import InputError
from simulator.replay.trace import RankTimeline, Trace, op_kind
from simulator.report.inputs import inputs_line, scenario_inputs
from simulator.report.intervals import LEVEL, fmt_interval
from simulator.report.stage_balance import StageBalance, busiest_ranks, suggest
from simulator.schedule.build import comm_bytes
from simulator.schedule.ir import CommOp, P2POp
from simulator.vocabulary import COMM_TYPES, comm_type



@dataclass
class Breakdown:
    compute: float
    exposed_comm: dict[str, float]
    pipeline_bubble: float
    host_wait: float = 0.0  # the part of pipeline_bubble the GPU spent waiting for the host

    @property
    def total(self) -> float:
        return self.compute + sum(self.exposed_comm.values()) + self.pipeline_bubble


@dataclass
class Report:
    scenario: str
    step_time_s: float
    tokens_per_s: float
    mfu: float
    breakdown_s: Breakdown
    comm_bytes_per_gpu: dict[str, int]
    memory_gib_per_gpu: dict[str, float]
    fits_in_memory: bool
    sim: dict[str, Any]
    critical_rank: int = 0
    n_gpus: int = 0
    model_flops_per_step: float = 0.0
    tflops_per_gpu: float = 0.0
    algorithms: dict[str, list[str]] = field(default_factory=dict)  # comm type -> algo/proto pairs used
    inputs: dict[str, Any] = field(default_factory=dict)  # what it was computed from (report/inputs.py)
    meta: dict[str, Any] = field(default_factory=dict)  # what differs between identical runs (wall time)
    mfu_peak: dict[str, Any] = field(default_factory=dict)  # {"dtype": "fp8", "TFLOPS": 1979.0}: MFU's denominator
    # 80% interval of the step time and where it comes from (report/intervals.py; None: not computed)
    step_time_interval_s: tuple[float, float] | None = None
    step_time_interval_basis: str = ""
    # a plan that does not fit: the fewest layers per model chunk block recompute must re-run for
    # it to fit (schedule/memory.py block_recompute_to_fit; None: fits, or no such number)
    recompute_to_fit: int | None = None
    # with pipeline parallelism: per stage, the compute-busy seconds of its busiest simulated rank
    # (stage_compute_s; None: one stage)
    stage_compute_s: list[float] | None = None
    stage_layers: list[int] | None = None  # the transformer layers each stage holds
    # a split of the layers that evens out the stages' compute, with that plan's memory per GPU
    # (report/stage_balance.py; None: none shortens the most loaded stage by 2%)
    balanced_split: StageBalance | None = None

    def to_dict(self) -> dict[str, Any]:
        """The ``clustersim run --json`` document of this report (plain, JSON-ready data)."""
        return report_to_json(self)

    def to_table(self) -> str:
        """The summary table ``clustersim run`` prints."""
        return format_table(self)


def mfu_peak_dtype(training_dtype: str) -> str:
    """The dense peak MFU divides by: the dtype the run's GEMMs use."""
    return training_dtype if training_dtype in ("bf16", "fp16", "fp8") else "bf16"


def _blocker(tl: RankTimeline, i: int, prev_on_stream: list[int], end: list[float] | None = None) -> int | None:
    """The dependency (or earlier op of the stream) of op ``i`` that finished last (the latest
    of them on a tie). ``end``: ``tl.end`` as a list, where the caller has one (a list's floats
    are read without a numpy scalar per dependency)."""
    if end is None:
        end = tl.end.tolist()
    deps = tl.program[i].deps
    prev = prev_on_stream[i]
    if not deps:
        return prev if prev >= 0 else None
    # max((*deps, prev), key=lambda j: (end[j], j)), in that order
    best, e_best = deps[0], end[deps[0]]
    for j in deps[1:]:
        e = end[j]
        if e > e_best or (e == e_best and j > best):
            best, e_best = j, e
    if prev >= 0:
        e = end[prev]
        if e > e_best or (e == e_best and prev > best):
            best = prev
    return best


def _prev_on_stream(tl: RankTimeline) -> list[int]:
    last: dict[str, int] = {}
    get = last.get
    out: list[int] = []
    append = out.append
    for i, op in enumerate(tl.program):
        stream = op.stream
        append(get(stream, -1))
        last[stream] = i
    return out


def _last_to_end(end: Any) -> int:
    """``max(range(n), key=lambda k: (end[k], k))``: the op that ends last, the latest of them on a
    tie. Without NaN, the last position of the array's maximum; with one, that loop's rule (an
    op replaces the best so far when ``end >= best``, false beside a NaN) op by op."""
    n = len(end)
    if not np.isnan(end).any():
        return n - 1 - int(np.argmax(end[::-1]))
    values = end.tolist()
    k, best = 0, values[0]
    for i in range(1, n):
        if values[i] >= best:
            k, best = i, values[i]
    return k


def critical_path_breakdown(tl: RankTimeline, step_time: float) -> Breakdown:
    """Split ``[0, step_time]`` on one rank into busy compute, exposed comm per type, bubble."""
    prog = tl.program
    start, end, ready = tl.start.tolist(), tl.end.tolist(), tl.ready.tolist()
    prev = _prev_on_stream(tl)
    exposed = {k: 0.0 for k in COMM_TYPES}
    bubble = 0.0
    host_wait = 0.0
    issued = issued_at(prog, end)

    def blame(a: float, b: float, j: int | None) -> None:
        nonlocal bubble
        carried = 0.0  # time of side-stream kernels (e.g. ZeRO-3 unflatten copies) on the chain
        for _ in range(100_000):  # walk the chain; bounded for safety
            if b <= a:
                break
            if j is None or end[j] <= a:
                break
            op = prog[j]
            if not isinstance(op, (CommOp, P2POp)):
                if op.stream == "compute":
                    break
                # A kernel on a communication-side stream: charge it to the collective it serves.
                lo = max(a, start[j])
                carried += max(0.0, b - lo)
                b = min(b, start[j])
                j = _blocker(tl, j, prev, end)
                continue
            kind = comm_type(op_kind(op))
            exposed[kind] += carried
            carried = 0.0
            lo = max(a, start[j])
            if b > lo:
                exposed[kind] += b - lo
            b = min(b, start[j])
            lo = max(a, ready[j])
            if b > lo:  # waiting at the rendezvous for other ranks
                bubble += b - lo
            b = min(b, ready[j])
            j = _blocker(tl, j, prev, end)
        bubble += carried + max(0.0, b - a)

    busy = 0.0
    t = 0.0
    for i, op in enumerate(prog):
        if op.stream != "compute" or isinstance(op, (CommOp, P2POp)):
            continue
        if start[i] > t:
            j = _blocker(tl, i, prev, end)
            inputs = max(t, end[j]) if j is not None else t  # when it could have started
            if start[i] > inputs and issued[i] >= start[i] - 1e-12 * max(1.0, start[i]):
                # it started when the host issued it: the GPU waited for the host
                host_wait += start[i] - inputs
                bubble += start[i] - inputs
                blame(t, inputs, j)
            else:
                blame(t, start[i], j)
        busy += end[i] - start[i]
        t = max(t, end[i])
    if step_time > t:
        blame(t, step_time, _last_to_end(tl.end) if prog else None)
    return Breakdown(busy, exposed, bubble, host_wait)


def _with_memory(scenario: Any, balance: StageBalance) -> StageBalance:
    """``balance`` with the memory per GPU of ``scenario`` split as it says (the closed form of
    schedule/memory.py; the first stage stashes the most activations in 1F1B, so a split that
    moves layers to it needs more there)."""
    from simulator.config.parallelism import Parallel
    from simulator.schedule.memory import memory_per_gpu

    parallel = Parallel.model_validate({**scenario.parallel.model_dump(exclude={"dp"}),
                                        "pp_layers": tuple(balance.pp_layers)})
    mem = memory_per_gpu(scenario.with_parallel(parallel))
    return replace(balance, memory_gib=mem.total / 2**30, fits=bool(mem.fits))


def stage_compute_s(trace: Trace, busiest: list[int] | None) -> list[float] | None:
    """Per pipeline stage, the seconds its busiest simulated rank (``busiest``,
    ``stage_balance.busiest_ranks``) computes in the step; None with one stage.

    The breakdown is read on the critical rank, which in 1F1B is the first stage's (it runs the
    last backward): its idle time is the warm-up and flush of the pipeline, and also its wait for
    a stage that computes longer. These figures tell the two apart: stages that differ by a
    tenth hold a tenth of the step idle on the lighter ones, whatever the micro-batches."""
    return [trace.compute_busy(r) for r in busiest] if busiest else None


def rank_comm_bytes(tl: RankTimeline) -> dict[str, int]:
    """:func:`~simulator.schedule.build.comm_bytes` of one simulated rank, with the groups the
    replay formed."""
    return comm_bytes(tl.program, lambda i: len(tl.groups.get(i, ())))


def model_flops(schedule: Any, scenario: Any) -> float:
    """Model FLOPs of one step: the schedule's own figure when it records one, else the
    convention of :func:`simulator.schedule.flops.model_flops_per_token`."""
    meta = getattr(schedule, "meta", None)
    for key in ("model_flops", "model_flops_per_step"):
        value = meta.get(key) if isinstance(meta, dict) else getattr(meta, key, None)
        if value:
            return float(value)
    from simulator.schedule.flops import model_flops_per_token

    return model_flops_per_token(scenario.model) * scenario.tokens_per_step


def flops_utilization(flops: float, step: float, scenario: Any) -> float:
    """MFU: a step's model FLOPs over its time and the dense peak of every GPU in the dtype its
    GEMMs run (:func:`mfu_peak_dtype`)."""
    peak = scenario.profile.gpu.peak_flops(mfu_peak_dtype(scenario.training.dtype))
    return flops / step / (scenario.n_gpus * peak) if step > 0 else 0.0


def summarize(trace: Trace, schedule: Any, scenario: Any) -> Report:
    step = trace.step_time_s
    if not math.isfinite(step):  # every input is finite, but a bandwidth of 1e-308 GB/s is too
        raise InputError(f"the step takes forever (step time {step}): a bandwidth, peak or efficiency of the "
                         f"profile {scenario.profile.name} is so small that a kernel or transfer overflows "
                         "to infinity; no result is written", source=scenario.source or None)
    crit = trace.critical_rank()
    tl = trace.timelines[crit]
    bd = critical_path_breakdown(tl, step)
    peak_dtype = mfu_peak_dtype(scenario.training.dtype)
    peak = scenario.profile.gpu.peak_flops(peak_dtype)
    n_gpus = scenario.n_gpus
    flops = model_flops(schedule, scenario)
    mfu = flops_utilization(flops, step, scenario)

    from simulator.schedule.memory import block_recompute_to_fit, memory_per_gpu

    mem = memory_per_gpu(scenario)
    used: dict[str, set[tuple[str, str]]] = {}  # op kind -> its (algorithm, protocol) pairs
    program = tl.program
    for i, pair in tl.algorithm.items():
        kind = op_kind(program[i])
        pairs = used.get(kind)
        if pairs is None:
            pairs = used[kind] = set()
        pairs.add(pair)
    algos: dict[str, set[str]] = {}
    for kind, pairs in used.items():
        algos.setdefault(comm_type(kind), set()).update(f"{a}/{p}" for a, p in pairs)
    s = trace.stats
    from simulator.report.intervals import step_band

    interval = step_band(scenario.profile.gpu.name)
    busiest = busiest_ranks(trace, schedule.grid)
    stages = stage_compute_s(trace, busiest)
    balance = suggest(trace, busiest, scenario.virtual_stage_layers, scenario.parallel.vp) if busiest else None
    return Report(
        scenario=scenario.name,
        step_time_s=step,
        tokens_per_s=scenario.tokens_per_step / step if step > 0 else 0.0,
        mfu=mfu,
        breakdown_s=bd,
        comm_bytes_per_gpu=rank_comm_bytes(tl),
        memory_gib_per_gpu=mem.gib(),
        fits_in_memory=bool(mem.fits),
        sim={"ranks": s.ranks, "ranks_simulated": s.ranks_simulated, "events": s.events,
             "mirrored_axes": list(s.mirrored_axes)},
        critical_rank=crit,
        n_gpus=n_gpus,
        model_flops_per_step=flops,
        tflops_per_gpu=flops / step / n_gpus / 1e12 if step > 0 else 0.0,
        algorithms={k: sorted(v) for k, v in sorted(algos.items())},
        inputs=scenario_inputs(scenario),
        meta={"wall_s": s.wall_s},
        mfu_peak={"dtype": peak_dtype, "TFLOPS": peak / 1e12},
        step_time_interval_s=interval[0].around(step) if interval else None,
        step_time_interval_basis=interval[1] if interval else "",
        recompute_to_fit=None if mem.fits else block_recompute_to_fit(scenario),
        stage_compute_s=stages,
        stage_layers=list(scenario.stage_layers) if stages is not None else None,
        balanced_split=_with_memory(scenario, balance) if balance else None,
    )


def report_to_json(report: Report) -> dict[str, Any]:
    """The DESIGN.md ``run --json`` document (its keys exactly, plus a few extras): first the
    ``inputs`` it was computed from, last the ``meta`` that differs between identical runs."""
    bd = report.breakdown_s
    return {
        "inputs": report.inputs,
        "scenario": report.scenario,
        "step_time_s": report.step_time_s,
        "step_time_interval_s": list(report.step_time_interval_s) if report.step_time_interval_s else None,
        "step_time_interval": {"level": LEVEL, "basis": report.step_time_interval_basis},
        "tokens_per_s": report.tokens_per_s,
        "mfu": report.mfu,
        "mfu_peak": dict(report.mfu_peak),
        "breakdown_s": {
            "compute": bd.compute,
            "exposed_comm": {k: bd.exposed_comm.get(k, 0.0) for k in COMM_TYPES},
            "pipeline_bubble": bd.pipeline_bubble,
            "host_wait": bd.host_wait,
        },
        "comm_bytes_per_gpu": {k: int(report.comm_bytes_per_gpu.get(k, 0)) for k in COMM_TYPES},
        "memory_gib_per_gpu": dict(report.memory_gib_per_gpu),
        "fits_in_memory": report.fits_in_memory,
        "recompute_to_fit": {"recompute": "full", "recompute_method": "block",
                             "recompute_num_layers": report.recompute_to_fit} if report.recompute_to_fit else None,
        "pipeline_stage_compute_s": list(report.stage_compute_s) if report.stage_compute_s else None,
        "pipeline_balanced_pp_layers": list(report.balanced_split.pp_layers) if report.balanced_split else None,
        "pipeline_balanced_memory_gib": report.balanced_split.memory_gib if report.balanced_split else None,
        "sim": dict(report.sim),
        "critical_rank": report.critical_rank,
        "gpus": report.n_gpus,
        "tflops_per_gpu": report.tflops_per_gpu,
        "algorithms": report.algorithms,
        "meta": dict(report.meta),
    }


def recompute_to_fit_line(n: int) -> str:
    """What makes a plan that does not fit fit (``memory.block_recompute_to_fit``), as `run` and
    `check` print it."""
    return (f"fits with recompute: full, recompute_method: block, recompute_num_layers: {n} "
            f"(the first {n} layer{'s' if n > 1 else ''} of each model chunk re-run, the others kept)")


def stages_line(compute_s: list[float], layers: list[int] | None) -> list[str]:
    """The least and the most loaded pipeline stage, as `run` prints them under the breakdown."""
    lo = min(range(len(compute_s)), key=lambda i: (compute_s[i], i))
    hi = max(range(len(compute_s)), key=lambda i: (compute_s[i], -i))

    def stage(i: int) -> str:
        held = f" ({layers[i]} layer{'s' if layers[i] != 1 else ''})" if layers else ""
        return f"stage {i}{held} {compute_s[i] * 1e3:.1f} ms"

    ratio = compute_s[lo] / compute_s[hi] if compute_s[hi] > 0 else 1.0
    return ["pipeline stages (compute per step; parallel.pp_layers moves layers between them):",
            f"  least {stage(lo)}   most {stage(hi)}   least/most {100 * ratio:.0f}%"]


def domain_fill_lines(inputs: dict[str, Any]) -> list[str]:
    """A job packed into multi-node NVLink domains that leaves one part-filled (report/inputs.py
    ``domain_inputs``): the groups that straddle it talk over the network, where a scheduler that
    splits the job evenly over its racks (Slurm's ``--segment``) keeps them on NVLink."""
    dom = inputs.get("nvlink_domain") or {}
    k, full, rest = dom.get("nodes", 0), dom.get("full", 0), dom.get("partial_nodes", 0)
    if not (full and rest) or inputs.get("nodes_per_nvlink_domain"):
        return []
    nodes = full * k + rest
    segments = [d for d in range(k - 1, 1, -1) if nodes % d == 0]
    return [f"NVLink domains: {nodes} nodes fill {full} domain{'s' if full > 1 else ''} of {k} and {rest} "
            f"node{'s' if rest > 1 else ''} of one more; ranks on two sides of a domain's edge talk over the network",
            "  a job the scheduler spreads evenly over its domains (Slurm --segment) sets nodes_per_nvlink_domain"
            + (f" ({', '.join(map(str, segments))} divide {nodes} nodes)" if segments else "")]


def format_table(report: Report) -> str:
    """The summary table `clustersim run` prints."""
    bd = report.breakdown_s
    step = report.step_time_s or 1.0
    mem = report.memory_gib_per_gpu

    def row(label: str, seconds: float) -> str:
        return f"  {label:<26}{seconds * 1e3:>12.3f} ms {100 * seconds / step:>7.1f} %"

    lines = [
        f"scenario {report.scenario}: {report.n_gpus} GPUs "
        f"({report.sim['ranks_simulated']} simulated, {report.sim['events']:,} events)",
        f"  {'step time':<26}{report.step_time_s * 1e3:>12.3f} ms"
        + (f"   = {fmt_interval(report.step_time_s, *report.step_time_interval_s)}" if report.step_time_interval_s else ""),
        f"  {'tokens/s':<26}{report.tokens_per_s:>12,.0f}",
        f"  {'MFU':<26}{100 * report.mfu:>11.1f} %   ({report.tflops_per_gpu:.1f} model TFLOP/s per GPU"
        + (f" of the {report.mfu_peak['dtype']} dense peak, {report.mfu_peak['TFLOPS']:.0f})" if report.mfu_peak else ")"),
        "breakdown (critical rank %d):" % report.critical_rank,
        row("compute", bd.compute),
    ]
    for k in COMM_TYPES:
        lines.append(row(f"exposed {k}", bd.exposed_comm.get(k, 0.0)))
    lines.append(row("pipeline bubble", bd.pipeline_bubble))
    if bd.host_wait > 0:
        lines.append(row("  of it, waiting for host", bd.host_wait))
    if report.stage_compute_s:
        lines += stages_line(report.stage_compute_s, report.stage_layers)
        bal = report.balanced_split
        if bal:
            memory = "" if bal.memory_gib is None else \
                f"; memory {bal.memory_gib:.1f} GiB per GPU, " + ("fits" if bal.fits else "DOES NOT FIT")
            lines.append(f"  evened out by pp_layers: [{', '.join(map(str, bal.pp_layers))}]: most loaded stage "
                         f"{bal.most_loaded_s * 1e3:.1f} ms (now {bal.current_most_loaded_s * 1e3:.1f}), estimated "
                         f"from the layers' kernel times{memory}")
    lines += domain_fill_lines(report.inputs)
    lines.append("memory per GPU (GiB, the stage with the largest peak):")
    lines.append("  " + "  ".join(f"{k} {mem[k]:.1f}" for k in ("params", "grads", "optimizer", "activations")
                                  if k in mem)
                 + "".join(f"  {label} {mem[k]:.1f}" for k, label in
                           (("loss_buffers", "loss"), ("recompute", "recompute"), ("comm_buffers", "comm buffers"),
                            ("workspaces", "workspaces"), ("dummy_wgrads", "dummy wgrads")) if mem.get(k)))
    if "allocated" in mem:
        lines.append(f"  peak allocated {mem['allocated']:.1f}  reserved {mem['reserved']:.1f}  "
                     f"+ CUDA context, NCCL, userbuffers {mem['non_pytorch']:.1f}  = total {mem['total']:.1f}"
                     + ("   fits" if report.fits_in_memory else "   DOES NOT FIT"))
    else:
        lines.append(f"  total {mem['total']:.1f}" + ("   fits" if report.fits_in_memory else "   DOES NOT FIT"))
    if report.recompute_to_fit:
        lines.append("  " + recompute_to_fit_line(report.recompute_to_fit))
    lines.append("bytes per GPU per step:")
    lines.append("  " + "  ".join(f"{k} {v / 2**30:.2f} GiB" for k, v in report.comm_bytes_per_gpu.items()))
    if report.inputs:
        lines.append(inputs_line(report.inputs))
    if "wall_s" in report.meta:
        lines.append(f"meta: simulated in {report.meta['wall_s']:.2f} s")
    return "\n".join(lines)


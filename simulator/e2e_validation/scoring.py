"""Scoring one case: simulate it, express the prediction in the source's metric and FLOP
convention, and compute the error (positive: the simulator is optimistic)."""

from __future__ import annotations

import json
import math
import statistics
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Generator, Iterable, Iterator

from simulator.config.hardware import HardwareProfile
from simulator.config.workload import PRESETS
from simulator.e2e_validation.shared import SharedSimulations
from simulator.e2e_validation.sources import Case


@dataclass(frozen=True)
class Result:
    case: Case
    predicted: float  # in the case's metric
    step_time_s: float
    error: float  # predicted throughput / measured throughput - 1
    mfu: float
    wall_s: float


def megatron_flops_per_step(layers: int, hidden: int, vocab: int, seq: int, batch: int,
                            recompute: bool) -> float:
    """Megatron's FLOPs per iteration, arXiv:2104.04473 eq. 3 (GPT with 4h MLP, MHA):
    96·B·s·l·h²·(1 + s/6h + V/16lh) counting the recompute forward; without it the same
    expression with 72 and V/12lh. BLOOM's Megatron-DeepSpeed "4*2 coefficient" is the first."""
    base = batch * seq * layers * hidden ** 2
    if recompute:
        return 96.0 * base * (1 + seq / (6 * hidden) + vocab / (16 * layers * hidden))
    return 72.0 * base * (1 + seq / (6 * hidden) + vocab / (12 * layers * hidden))


def megatron_model_flops(model: dict, batch: int) -> float:
    """Model FLOPs per iteration as Megatron-Core's ``num_floating_point_operations``
    (megatron/training/training.py, 2024) counts them, which NVIDIA's "model TFLOP/s/GPU" tables
    (Megatron-Core README, NeMo performance pages) print:
    12·B·s·l·h²·(1 + g/a + s/h + (f/h)·k + V/2lh), k = 3/2 for SwiGLU, else 1. The attention
    term s/h is the full, unmasked score matrix; for a GPT (g = a, f = 4h, k = 1) this is eq. 3
    without recompute."""
    h, s, l_ = model["hidden"], model["seq_len"], model["layers"]
    heads, kv = model["heads"], model.get("kv_heads") or model["heads"]
    ffn = model.get("ffn_hidden") or 4 * h
    gated = 1.5 if model.get("mlp") == "swiglu" else 1.0
    return 12.0 * batch * s * l_ * h ** 2 * (1 + kv / heads + s / h + ffn / h * gated + model["vocab"] / (2 * l_ * h))


def megatron_moe_model_flops(model: dict, batch: int) -> float:
    """Model FLOPs per iteration of a Mixture-of-Experts GPT as Megatron-LM's
    ``num_floating_point_operations`` counts them since 8873b55d (2025-03-06, "Fixes in number of
    floating-point operation estimates for MoE and attention layer"; megatron/training/training.py,
    the same through 20d66d5c's rewrite of 2026-01), per token and layer, fwd + bwd at two FLOPs a
    multiply-add:

    - GQA attention: 12·h·(q + kv) for the query, key, value and output projections (q = heads ·
      head_dim, kv = kv_heads · head_dim) and 6·s·q for the causal core (QKᵀ and the weighted
      values over half the score matrix);
    - multi-latent attention (``kv_lora_rank``): 6 x (the q down- and up-projections with the
      q norm, q_lora · (h + heads · (d + r) + 1); the kv ones, kv_lora · (h + heads · (d + v) + 1);
      the shared rope key h · r; the output projection heads · v · h) and 6 x s · heads · (d + r + v) / 2
      for the causal core (d: head_dim, r: qk_rope_head_dim, v: v_head_dim);
    - 12·h·f·k·g for the routed experts (f = moe_ffn_hidden, k = top_k, g = 3/2 with SwiGLU) plus the
      shared experts' 12·h·f_s·g, a dense MLP's 12·h·ffn·g on the first dense layers;
    - 6·h·V for the logits, once more per multi-token-prediction depth (``mtp_layers``), each depth
      also a layer of the last layer's kind and its 6·(3h + 2h²) of norms and projection."""
    m = {**PRESETS[model["preset"]], **model} if "preset" in model else model
    h, s, layers = m["hidden"], m["seq_len"], m["layers"]
    heads, mtp = m["heads"], m.get("mtp_layers", 0)
    head_dim = m.get("head_dim") or h // heads
    if m.get("kv_lora_rank"):
        r, v = m["qk_rope_head_dim"], m["v_head_dim"]
        q_lora = m.get("q_lora_rank", 0)
        q_term = q_lora * (h + heads * (head_dim + r) + 1) if q_lora else h * heads * (head_dim + r)
        proj = q_term + m["kv_lora_rank"] * (h + heads * (head_dim + v) + 1) + h * r + heads * v * h
        attn = 6 * (proj + s * heads * (head_dim + r + v) / 2)
    else:
        q, kv = heads * head_dim, (m.get("kv_heads") or heads) * head_dim
        attn = 12 * h * (q + kv) + 6 * s * q
    gated = 1.5 if m.get("mlp") == "swiglu" else 1.0
    dense = m.get("first_dense_layers", 0) if m.get("experts") else layers + mtp
    mlp = dense * m.get("ffn_hidden", 4 * h) * gated
    if m.get("experts"):
        shared = m.get("shared_ffn_hidden") or m.get("shared_experts", 0) * m["moe_ffn_hidden"]
        mlp += (layers + mtp - dense) * (m["moe_ffn_hidden"] * m["top_k"] + shared) * gated
    per_token = (12 * h * mlp + (layers + mtp) * attn + 6 * mtp * (3 * h + 2 * h * h)
                 + 6 * h * m["vocab"] * (1 + mtp))
    return batch * s * per_token


def predicted_metric(case: Case, step_time_s: float) -> float:
    """The case's metric computed from a predicted step time with the source's convention."""
    m, t = case.scenario["model"], case.scenario["training"]
    tokens = t["global_batch"] * m["seq_len"]
    if case.metric == "step_time_s":
        return step_time_s
    if case.metric == "tokens_per_s_per_gpu":
        return tokens / step_time_s / case.n_gpus
    if case.metric == "megatron_hfu_tflops":
        f = megatron_flops_per_step(m["layers"], m["hidden"], m["vocab"], m["seq_len"], t["global_batch"],
                                    recompute=True)
        return f / step_time_s / case.n_gpus / 1e12
    if case.metric == "megatron_model_tflops":
        return megatron_model_flops(m, t["global_batch"]) / step_time_s / case.n_gpus / 1e12
    if case.metric == "megatron_moe_model_tflops":
        return megatron_moe_model_flops(m, t["global_batch"]) / step_time_s / case.n_gpus / 1e12
    raise ValueError(f"unknown metric {case.metric}")


def speed_error(case: Case, predicted: float) -> float:
    """predicted throughput / measured throughput - 1 (positive: simulator optimistic)."""
    if case.metric == "step_time_s":
        return case.measured / predicted - 1.0
    return predicted / case.measured - 1.0


Hardware = str | HardwareProfile | None  # a profile name or YAML path, or one built in memory


@dataclass(frozen=True)
class _Simulated:
    step_time_s: float
    mfu: float
    wall_s: float


# Step times already simulated in this process, by scenario and profile. The simulation is
# deterministic, and a validation run asks for the same scenario more than once (the page, its
# leave-one-source-out refits, the tests of one source after the test of all of them).
_SIMULATED: dict[str, _Simulated] = {}


def _simulation_key(case: Case, hardware: Hardware) -> str:
    """What the simulation of `case` on `hardware` depends on: the scenario but its ``name`` (a
    label, read by no stage of the simulation), the profile and the NCCL release. Rows of the same
    run printed twice (MLPerf's 10,752-GPU GPT-3 on Eos and on Azure's copy of its plan; a
    benchmark's two container releases with the same recipe) are one simulation."""
    hw = hardware.model_dump_json() if isinstance(hardware, HardwareProfile) else hardware
    scenario = {k: v for k, v in case.scenario.items() if k != "name"}
    return json.dumps([scenario, hw, case.nccl_version], sort_keys=True, default=str)


def case_profile(case: Case, hardware: Hardware = None) -> HardwareProfile | None:
    """The profile `case` runs on when it differs from what `hardware` (or the scenario's
    ``hardware:``) names: that profile with the case's NCCL release (``Case.nccl_version``), or
    `hardware` itself when it is a profile built in memory; None otherwise."""
    from simulator.config.hardware import apply_overlay, load_profile

    if case.nccl_version is None:
        return hardware if isinstance(hardware, HardwareProfile) else None
    base = hardware if isinstance(hardware, HardwareProfile) else load_profile(hardware or case.scenario["hardware"])
    return apply_overlay(base, {"nccl": {"version": case.nccl_version}},
                         source=f"{base.name} with NCCL {case.nccl_version} (<e2e:{case.label}>)")


def _simulate(case: Case, hardware: Hardware) -> _Simulated:
    """The step time and MFU of `case` (the replay without the report's breakdown, which scoring
    does not read)."""
    from simulator.config.scenario import build_scenario
    from simulator.report.summary import flops_utilization, model_flops
    from simulator.simulation import replay_scenario

    t0 = time.perf_counter()
    source = f"<e2e:{case.label}>"
    profile = case_profile(case, hardware)
    if profile is not None:
        scn = build_scenario(case.scenario, source=source, profile=profile)
    else:
        scn = build_scenario(case.scenario if hardware is None else {**case.scenario, "hardware": hardware}, source=source)
    _, schedule, trace = replay_scenario(scn)
    step = trace.step_time_s
    return _Simulated(step, flops_utilization(model_flops(schedule, scn), step, scn), time.perf_counter() - t0)


def _scored(case: Case, sim: _Simulated) -> Result:
    pred = predicted_metric(case, sim.step_time_s)
    return Result(case, pred, sim.step_time_s, speed_error(case, pred), sim.mfu, sim.wall_s)


def run_case(case: Case, hardware: Hardware = None) -> Result:
    """Simulate one case; `hardware` replaces its profile (a name, a YAML path, or a profile
    built in memory such as :func:`~simulator.e2e_validation.gemm_fit.gemm_scaled`'s)."""
    return simulate_many([(case, hardware)])[0]


def replay_work(case: Case) -> int:
    """A rough measure of the replay work of ``case``, to start the longest first in
    :func:`scored_in_order`: micro-batches per pipeline x layers (each simulated pipeline stage
    replays its share of both), x 4 for a Mixture-of-Experts model (its dispatch and combine
    All-to-Alls and expert GEMMs add ops to every layer pass). Only an order: no figure depends
    on it."""
    from simulator.config.scenario import Model

    s = case.scenario
    try:
        par, tr = s.get("parallel", {}), s["training"]
        model_parallel = par.get("tp", 1) * par.get("pp", 1) * par.get("cp", 1) * par.get("ulysses", 1)
        dp = max(1, case.n_gpus // max(1, model_parallel))
        micro = max(1, tr["global_batch"] // (tr.get("micro_batch", 1) * dp))
        model = Model(**s["model"])
    except (KeyError, TypeError, ValueError):  # a scenario its simulation will reject
        return 0
    return micro * model.layers * (4 if model.experts else 1)


def _simulate_job(job: tuple[Case, Hardware]) -> _Simulated:
    return _simulate(*job)


def simulate_many(jobs: list[tuple[Case, Hardware]], workers: int = 1) -> list[Result]:
    """Each (case, hardware) scored, in order (see :func:`scored_in_order`)."""
    return list(scored_in_order(jobs, workers))


def scored_in_order(jobs: list[tuple[Case, Hardware]], workers: int = 1) -> Iterator[Result]:
    """Each (case, hardware) scored, in order, as soon as its simulation is done; scenarios not
    simulated yet in this process run in `workers` processes (each is independent; the simulation
    is single-threaded Python). With :func:`share_simulations` on, a scenario another process
    sharing the folder simulated is read, not simulated again."""
    keys = [_simulation_key(c, hw) for c, hw in jobs]
    todo: dict[str, tuple[Case, Hardware]] = {}
    for k, job in zip(keys, jobs):
        if k not in _SIMULATED:
            todo.setdefault(k, job)  # a repeated key is simulated as the first job that asks for it
    with closing(_simulate_pending(todo, workers, _SHARED)) as simulated:
        for (c, _), k in zip(jobs, keys):
            while k not in _SIMULATED:
                next(simulated)
            yield _scored(c, _SIMULATED[k])


def share_simulations(directory: Path | None) -> None:
    """Share the simulated step times of this process with every process given the same folder
    (:mod:`simulator.e2e_validation.shared`): a scenario simulated by one is read by the others
    instead of simulated again. The test suite gives its workers one folder of the run's temporary
    directory; None stops sharing."""
    global _SHARED
    _SHARED = None if directory is None else SharedSimulations(directory)


_SHARED: SharedSimulations | None = None
_POLL_S = 0.2  # how often a process that waits for another's simulations looks for them


def _simulate_pending(todo: dict[str, tuple[Case, Hardware]], workers: int,
                      shared: SharedSimulations | None) -> Generator[str, None, None]:
    """Fill ``_SIMULATED`` for every key of `todo`, yielding each key once its values are in.

    Without `shared`: simulate every key, at most `workers` at a time in a process pool (longest
    first: a long row started last would run alone at the end), or one after the other in order.
    With `shared`: read what another process stored, claim and simulate what nobody holds (longest
    first, claiming a key only when a worker is free so that the other processes take their share
    of the rest), and wait for the keys others hold. A process claims a key only to start
    simulating it at once, so a process that waits holds nothing unstarted and two processes never
    wait for each other."""
    from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait

    pending = list(todo)
    slots = max(1, min(workers, len(pending)))
    if slots > 1 or shared is not None:
        pending.sort(key=lambda k: -replay_work(todo[k][0]))
    running: dict[Future[_Simulated], str] = {}
    pool = ProcessPoolExecutor(max_workers=slots) if slots > 1 else None

    def store(key: str, sim: _Simulated) -> str:
        _SIMULATED[key] = sim
        if shared is not None:
            shared.put(key, {"step_time_s": sim.step_time_s, "mfu": sim.mfu, "wall_s": sim.wall_s})
        return key

    try:
        while pending or running:
            progressed = False
            for k in list(pending):  # the next keys, longest first, while a worker is free
                if len(running) >= slots:
                    break
                values = shared.get(k) if shared is not None else None
                if shared is not None and values is None:
                    if not shared.claim(k):
                        continue  # another process is simulating it: looked at again on the next pass
                    values = shared.get(k)  # stored by a holder that finished between the look and the claim
                    if values is not None:
                        shared.release(k)
                if values is not None:  # another process simulated it
                    _SIMULATED[k] = _Simulated(**values)
                    pending.remove(k)
                    progressed = True
                    yield k
                    continue
                pending.remove(k)
                progressed = True
                if pool is None:
                    try:
                        sim = _simulate(*todo[k])
                    except BaseException:
                        if shared is not None:
                            shared.release(k)
                        raise
                    yield store(k, sim)
                    break  # the next pass starts from the first key left again
                running[pool.submit(_simulate_job, todo[k])] = k
            if running:
                # wait for a worker; while one is free, the keys left are held by others: look again soon
                done, _ = wait(running, timeout=_POLL_S if pending and len(running) < slots else None,
                               return_when=FIRST_COMPLETED)
                for f in done:
                    sim = f.result()  # a failed simulation raises here; `finally` releases its key
                    yield store(running.pop(f), sim)
            elif pending and not progressed:
                time.sleep(_POLL_S)  # every key left is held by another process
    finally:
        if shared is not None:
            for k in running.values():
                shared.release(k)
        if pool is not None:
            pool.shutdown(cancel_futures=True)


def run_cases(selected: list[Case], progress: bool = False, jobs: int = 1) -> Iterator[Result]:
    """Results in the order of `selected`; `jobs` > 1 simulates in that many worker processes."""
    yield from _reported(scored_in_order([(c, None) for c in selected], jobs), progress)


def _reported(results: Iterable[Result], progress: bool) -> Iterator[Result]:
    for r in results:
        c = r.case
        if progress:
            print(f"  {c.source:12s} {c.label:55s} pred {r.predicted:10.3f} meas {c.measured:10.3f} "
                  f"err {100 * r.error:+6.1f}%  ({r.wall_s:.1f}s)", flush=True)
        yield r


def median_abs_error(results: Iterable[Result]) -> float:
    errs = [abs(r.error) for r in results]
    return statistics.median(errs) if errs else math.nan

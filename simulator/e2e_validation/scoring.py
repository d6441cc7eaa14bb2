"""Scoring one case: simulate it, express the prediction in the source's metric and FLOP
convention, and compute the error (positive: the simulator is optimistic)."""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass
from typing import Iterable, Iterator

from simulator.config.hardware import HardwareProfile
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
    raise ValueError(f"unknown metric {case.metric}")


def speed_error(case: Case, predicted: float) -> float:
    """predicted throughput / measured throughput - 1 (positive: simulator optimistic)."""
    if case.metric == "step_time_s":
        return case.measured / predicted - 1.0
    return predicted / case.measured - 1.0


def run_case(case: Case, hardware: str | HardwareProfile | None = None) -> Result:
    """Simulate one case; `hardware` replaces its profile (a name, a YAML path, or a profile
    built in memory such as :func:`~simulator.e2e_validation.gemm_fit.gemm_scaled`'s)."""
    from simulator.config.scenario import build_scenario
    from simulator.simulation import simulate_scenario

    t0 = time.perf_counter()
    source = f"<e2e:{case.label}>"
    if isinstance(hardware, HardwareProfile):
        scn = build_scenario(case.scenario, source=source, profile=hardware)
    else:
        scn = build_scenario(case.scenario if hardware is None else {**case.scenario, "hardware": hardware}, source=source)
    rep = simulate_scenario(scn).report
    pred = predicted_metric(case, rep.step_time_s)
    return Result(case, pred, rep.step_time_s, speed_error(case, pred), rep.mfu, time.perf_counter() - t0)


def run_cases(selected: list[Case], progress: bool = False, jobs: int = 1) -> Iterator[Result]:
    """Results in the order of `selected`; `jobs` > 1 simulates in that many worker processes
    (each case is independent; the simulation is single-threaded Python)."""
    if jobs > 1 and len(selected) > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=min(jobs, len(selected))) as pool:
            results: Iterable[Result] = pool.map(run_case, selected)
            yield from _reported(results, progress)
        return
    yield from _reported(map(run_case, selected), progress)


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

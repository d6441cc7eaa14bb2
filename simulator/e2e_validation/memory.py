"""Peak memory against published measurements (``data/e2e/peak_memory.csv``,
``data/e2e/peak_memory_moe.csv`` for Mixture-of-Experts runs: the same columns plus the expert plan,
and ``data/e2e/peak_memory_hybrid.csv`` for hybrid Mamba2-Transformer runs: plus the block pattern).

Each row is a training run with its parallel plan and one measured peak: PyTorch's allocated peak
(``max_memory_allocated``) or its reserved peak (``max_memory_reserved``), on the last rank or the
maximum over ranks. We build the run's scenario, ask the memory model for the same figure
(:func:`~simulator.schedule.memory.estimate_memory` of the last pipeline stage, or the stage
with the largest peak) and report the signed error per row and per source. Memory needs no
replay, so this runs in well under a second.

Held out: no memory constant is fitted on these rows. The terms are closed forms from the
frameworks' code (see :mod:`simulator.schedule.memory`); the one calibratable constant, the
allocator's fragmentation, keeps its documented default here. For reference the section also
prints the fragmentation that would zero the median error of the reserved rows (an in-sample
fit, reported as such and not used).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

from simulator.config.scenario import Scenario, build_scenario
from simulator.e2e_validation.rows import Row, parse_int, read_rows
from simulator.e2e_validation.sources import DATA_DIR
from simulator.schedule.memory import MemoryEstimate, estimate_memory, memory_per_gpu
from simulator.units import GiB

MEMORY_CSV = "peak_memory.csv"
MOE_MEMORY_CSV = "peak_memory_moe.csv"
HYBRID_MEMORY_CSV = "peak_memory_hybrid.csv"
MEMORY_CSVS = (MEMORY_CSV, MOE_MEMORY_CSV, HYBRID_MEMORY_CSV)
# the hybrid block plan's columns (peak_memory_hybrid.csv): Megatron-Core's --hybrid-layer-pattern and the mixer's sizes
HYBRID_COLUMNS = ("mamba_heads", "mamba_head_dim", "mamba_state", "mamba_groups", "mamba_conv", "mamba_chunk")
METRICS = {"peak_allocated_gib": "allocated", "peak_reserved_gib": "reserved"}


@dataclass(frozen=True)
class MemoryResult:
    source: str
    label: str
    metric: str  # allocated | reserved
    measured_gib: float
    estimate: MemoryEstimate

    @property
    def predicted_gib(self) -> float:
        return float(getattr(self.estimate, self.metric)) / GiB

    @property
    def error(self) -> float:
        """Signed relative error, (predicted − measured) / measured."""
        return self.predicted_gib / self.measured_gib - 1


def _flag(v: str) -> bool:
    return v.strip().lower() == "true"


def row_scenario(row: Row) -> dict:
    """The scenario mapping that reproduces a memory row's run."""
    tp, pp, vp, cp = (parse_int(row[k], 1) for k in ("tp", "pp", "vp", "cp"))
    parallel: dict = dict(tp=tp, pp=pp, cp=cp, zero=parse_int(row["zero"]),
                          sequence_parallel=_flag(row["sequence_parallel"]),
                          grad_reduce_dtype=row["grad_reduce_dtype"])
    if vp > 1:
        parallel.update(pp_schedule="interleaved", vp=vp)
    if row["zero3_impl"]:
        parallel["zero3_impl"] = row["zero3_impl"]
    if row.get("grad_allocation"):  # optional column (empty: the parallel block's default)
        parallel["grad_allocation"] = row["grad_allocation"]
    if row.get("gradient_accumulation_fusion"):  # optional column (empty: the parallel block's default)
        parallel["gradient_accumulation_fusion"] = _flag(row["gradient_accumulation_fusion"])
    if row.get("cp_comm"):  # optional column (empty: the parallel block's default)
        parallel["cp_comm"] = row["cp_comm"]
    model = dict(layers=parse_int(row["layers"]), hidden=parse_int(row["hidden"]), heads=parse_int(row["heads"]),
                 kv_heads=parse_int(row["kv_heads"]), ffn_hidden=parse_int(row["ffn_hidden"]),
                 vocab=parse_int(row["vocab"]), seq_len=parse_int(row["seq_len"]), mlp=row["mlp"],
                 tied_embeddings=_flag(row["tied_embeddings"]), position_embedding=row["position_embedding"])
    training = dict(micro_batch=parse_int(row["micro_batch"]), global_batch=parse_int(row["global_batch"]),
                    recompute=row["recompute"], cross_entropy=row["cross_entropy"],
                    fused_kernels=_flag(row["fused_kernels"]), attention=row["attention"],
                    legacy_model=_flag(row.get("legacy_model") or "false"), dtype=row.get("dtype") or "bf16",
                    dropout=_flag(row.get("dropout") or "true"), compile=row.get("compile") or "none",
                    autocast=_flag(row.get("autocast") or "false"))
    if parse_int(row.get("experts") or "0"):
        add_expert_plan(row, model, parallel, training)
    if row.get("layer_pattern"):
        model["layer_pattern"] = row["layer_pattern"]
        model.update({k: parse_int(row[k]) for k in HYBRID_COLUMNS})
    gpus = parse_int(row["gpus"])
    scn = dict(name=row["config"], hardware=row["gpu_profile"], nodes=max(1, gpus // 8), model=model,
               training=training, parallel=parallel)
    if gpus < 8:  # a run on the first GPUs of one 8-GPU node
        scn["gpus_per_node"] = gpus
    return scn


def add_expert_plan(row: Row, model: dict, parallel: dict, training: dict) -> None:
    """The expert columns of a Mixture-of-Experts row (Megatron-Core's --num-experts, --moe-router-topk,
    --moe-ffn-hidden-size, --moe-shared-expert-intermediate-size, --expert-model-parallel-size,
    --expert-tensor-parallel-size, --moe-token-dispatcher-type, --moe-grouped-gemm, and whether the
    experts weight their rows inside the activation kernel) into the scenario mapping."""
    shared = parse_int(row["shared_ffn_hidden"])
    model.update(experts=parse_int(row["experts"]), top_k=parse_int(row["top_k"]),
                 moe_ffn_hidden=parse_int(row["moe_ffn_hidden"]))
    if shared:
        model.update(shared_experts=1, shared_ffn_hidden=shared)
    parallel.update(ep=parse_int(row["ep"], 1), etp=parse_int(row["etp"], parallel["tp"]),
                    moe_dispatcher=row["moe_dispatcher"] or "allgather")
    training["moe_activation"] = row["moe_activation"] or "fused"
    training["moe_grouped_gemm"] = _flag(row["moe_grouped_gemm"])


def estimate_for(scn: Scenario, measured_rank: str) -> MemoryEstimate:
    """The estimate of the rank the source measured: the last pipeline stage, or the largest."""
    if measured_rank == "last":
        return estimate_memory(scn, scn.parallel.pp - 1)
    return memory_per_gpu(scn)


def memory_results(data_dir: Path = DATA_DIR) -> list[MemoryResult]:
    out = []
    rows = [(name, row) for name in MEMORY_CSVS if (data_dir / name).exists() for row in read_rows(data_dir / name)]
    for name, row in rows:
        scn = build_scenario(row_scenario(row), source=f"{name}: {row['config']}")
        out.append(MemoryResult(source=row["source"], label=row["config"], metric=METRICS[row["metric"]],
                                measured_gib=float(row["value"]), estimate=estimate_for(scn, row["measured_rank"])))
    return out


def summary(results: list[MemoryResult]) -> dict[str, float]:
    errs = [r.error for r in results]
    return {"rows": len(errs), "median_abs": statistics.median(abs(e) for e in errs),
            "mean_abs": statistics.fmean(abs(e) for e in errs), "max_abs": max(abs(e) for e in errs),
            "signed_median": statistics.median(errs)}


def in_sample_fragmentation(results: list[MemoryResult]) -> float | None:
    """The fragmentation factor that zeroes the median signed error of the reserved rows (for
    reference only; not used by any prediction)."""
    res = [r for r in results if r.metric == "reserved"]
    if not res:
        return None
    need = []
    for r in res:
        e = r.estimate
        need.append((r.measured_gib * GiB - e.allocated - e.stranded) / e.dynamic)
    return statistics.median(need)


def render_memory_section(results: list[MemoryResult] | None = None, bundled: bool = True) -> str:
    """The "Peak memory" section of docs/validation-e2e.md (with the bundled scenarios' table
    at its end unless `bundled` is false)."""
    results = memory_results() if results is None else results
    pct = lambda x: f"{100 * x:.1f}%"  # noqa: E731
    sources = sorted({r.source for r in results})
    lines = ["", "## Peak memory", "",
             f"{len(results)} published peak-memory measurements from {len(sources)} sources "
             f"(`data/e2e/{MEMORY_CSV}`; Mixture-of-Experts runs in `data/e2e/{MOE_MEMORY_CSV}`, "
             f"hybrid Mamba2-Transformer runs in `data/e2e/{HYBRID_MEMORY_CSV}`), against the memory model "
             "(`simulator/schedule/memory.py`): PyTorch's "
             "allocated peak where the source logs `max_memory_allocated`, its reserved peak where it logs "
             "`max_memory_reserved`; the last pipeline stage where the source logs the last rank, the stage with "
             "the largest peak where it reports the maximum over GPUs. Every row is held out: no memory constant is "
             "fitted on them (the terms are closed forms from the frameworks' code; the allocator fragmentation "
             "keeps its default). `python -m simulator.e2e_validation.memory` prints this section alone.", "",
             "| source | rows | figure | median \\|error\\| | mean \\|error\\| | max \\|error\\| | signed median |",
             "|---|---:|---|---:|---:|---:|---:|"]
    for src in sources:
        mine = [r for r in results if r.source == src]
        s = summary(mine)
        fig = "/".join(sorted({r.metric for r in mine}))
        lines.append(f"| {src} | {s['rows']} | {fig} | {pct(s['median_abs'])} | {pct(s['mean_abs'])} | "
                     f"{pct(s['max_abs'])} | {pct(s['signed_median'])} |")
    s = summary(results)
    lines.append(f"| **all** | {s['rows']} | | **{pct(s['median_abs'])}** | {pct(s['mean_abs'])} | "
                 f"{pct(s['max_abs'])} | {pct(s['signed_median'])} |")
    frag = in_sample_fragmentation(results)
    if frag is not None:
        lines += ["", f"The reserved rows would be matched in the median by a fragmentation factor of {frag:.2f} "
                      f"of the dynamic bytes (in-sample, for reference; the default "
                      f"`training.allocator_fragmentation` is {results[0].estimate.fragmentation_factor:g})."]
    lines += ["", "| source | run | figure | measured GiB | predicted GiB | error | model states | activations | "
                  "loss | recompute | buffers | fragmentation |",
              "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        e = r.estimate
        g = lambda x: f"{x / GiB:.1f}"  # noqa: E731
        lines.append(f"| {r.source} | {r.label} | {r.metric} | {r.measured_gib:.1f} | {r.predicted_gib:.1f} | "
                     f"{100 * r.error:+.1f}% | {g(e.model_states)} | {g(e.activations)} | {g(e.loss_buffers)} | "
                     f"{g(e.recompute)} | {g(e.comm_buffers + e.pipeline_outputs + e.workspaces + e.dummy_wgrads)} | "
                     f"{g(e.fragmentation) if r.metric == 'reserved' else '—'} |")
    if bundled:
        lines += bundled_scenarios_table()
    return "\n".join(lines) + "\n"


def bundled_scenarios_table() -> list[str]:
    """Markdown lines: the memory model on every bundled scenario (the stage with the largest
    peak) and whether it fits; a plan that does not fit is a result, reported as such."""
    from simulator.config.scenario import load_scenario
    from simulator.files import bundled_dir

    lines = ["", "The bundled scenarios (`scenarios/`), at the pipeline stage with the largest peak; "
                 "`fits` compares the device total (reserved + CUDA context + NCCL buffers) with HBM:", "",
             "| scenario | stage | model states | activations | loss | buffers | allocated | reserved | "
             "CUDA context + NCCL | total | HBM | fits |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for path in sorted(bundled_dir("scenarios").glob("*.yaml")):
        lines.append(bundled_row(path.stem, memory_per_gpu(load_scenario(path))))
    return lines


def bundled_row(name: str, m: MemoryEstimate) -> str:
    """One row of the bundled scenarios' table."""
    g = lambda x: f"{x / GiB:.1f}"  # noqa: E731
    return (f"| {name} | {m.stage} | {g(m.model_states)} | {g(m.activations)} | {g(m.loss_buffers)} | "
            f"{g(m.recompute + m.comm_buffers + m.workspaces)} | {g(m.allocated)} | {g(m.reserved)} | "
            f"{g(m.non_pytorch)} | {g(m.total)} | {g(m.hbm_bytes)} | {'yes' if m.fits else 'no'} |")


if __name__ == "__main__":
    print(render_memory_section())

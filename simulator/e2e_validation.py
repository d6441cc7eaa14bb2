"""End-to-end validation of ``clustersim run`` against published, measured training runs.

``python -m simulator.e2e_validation [--out docs/] [--quick]`` maps selected rows of
``data/e2e/*.csv`` (see ``data/e2e/INDEX.md``) to scenarios built in code, simulates each, and
writes ``docs/validation-e2e.md``: one table per source with predicted vs measured, the error,
the median |error| per source and overall, and the caveats.

Like with like: every row is compared in the metric its source prints, with that source's FLOP
convention. A step time is compared directly; tokens/s/GPU is the global batch's tokens over
step time and GPUs; TFLOP/s numbers are recomputed from the predicted step time with the
source's own formula (Megatron's eq. 3 of arXiv:2104.04473, with the recompute factor 4 for
"hardware" TFLOP/s, without it for Megatron-Core's model TFLOP/s). The error is always
``predicted throughput / measured throughput - 1`` (= measured step / predicted step - 1), so a
positive error means the simulator is optimistic.
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator

DATA_DIR = Path(__file__).resolve().parents[1] / "data" / "e2e"

Row = dict[str, str]


@dataclass(frozen=True)
class Case:
    """One published measurement and the scenario that reproduces its setup."""

    source: str
    label: str
    scenario: dict  # the mapping build_scenario validates (same keys as a scenario YAML)
    metric: str  # step_time_s | tokens_per_s_per_gpu | megatron_hfu_tflops | megatron_model_tflops
    measured: float
    n_gpus: int
    note: str = ""


@dataclass(frozen=True)
class Result:
    case: Case
    predicted: float  # in the case's metric
    step_time_s: float
    error: float  # predicted throughput / measured throughput - 1
    mfu: float
    wall_s: float


@dataclass
class Source:
    """How to select and map the rows of one CSV."""

    key: str
    title: str
    file: str
    build: Callable[[list[Row]], list[Case]]
    caveats: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- reading


def read_rows(path: Path) -> list[Row]:
    """Rows of a ground-truth CSV, skipping its ``#`` provenance lines."""
    with path.open(newline="") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def _int(v: str, default: int = 0) -> int:
    v = (v or "").strip()
    return int(float(v)) if v else default


def _precision(row: Row) -> str | None:
    """``prec=...`` of the notes mapped to a dtype the simulator models (None: not modelled)."""
    notes = row["notes"].lower()
    if "prec=" not in notes:
        return None
    p = notes.split("prec=", 1)[1].split(";")[0].strip()
    if p.startswith(("bf16+fp8", "fp8", "mxfp8", "nvfp4", "fp32", "amp;", "amp ")) or p == "amp":
        return None
    if "bf16" in p:
        return "bf16"
    if "fp16" in p:
        return "fp16"
    return None


def megatron_flops_per_step(layers: int, hidden: int, vocab: int, seq: int, batch: int,
                            recompute: bool) -> float:
    """Megatron's FLOPs per iteration, arXiv:2104.04473 eq. 3 (GPT with 4h MLP, MHA):
    96·B·s·l·h²·(1 + s/6h + V/16lh) counting the recompute forward; without it the same
    expression with 72 and V/12lh. BLOOM's Megatron-DeepSpeed "4*2 coefficient" is the first."""
    base = batch * seq * layers * hidden ** 2
    if recompute:
        return 96.0 * base * (1 + seq / (6 * hidden) + vocab / (16 * layers * hidden))
    return 72.0 * base * (1 + seq / (6 * hidden) + vocab / (12 * layers * hidden))


# --------------------------------------------------------------------------- scenarios


def _gpt_model(row: Row, *, mlp: str = "gelu", position: str = "learned", tied: bool = True) -> dict:
    h = _int(row["hidden"])
    return dict(layers=_int(row["layers"]), hidden=h, heads=_int(row["heads"]),
                kv_heads=_int(row["kv_heads"]) or _int(row["heads"]),
                ffn_hidden=_int(row["ffn_hidden"]) or 4 * h, vocab=_int(row["vocab"]), mlp=mlp,
                seq_len=_int(row["seq_len"]), tied_embeddings=tied, position_embedding=position)


def _llama_model(row: Row) -> dict:
    return _gpt_model(row, mlp="swiglu", position="rope", tied=False)


@dataclass(frozen=True)
class Stack:
    """The software stack of a source, as the scenario knobs that describe it."""

    attention: str = "auto"  # training.attention
    fused_kernels: bool = True  # training.fused_kernels

    def training(self) -> dict:
        return dict(attention=self.attention, fused_kernels=self.fused_kernels)


# Megatron-Core + TransformerEngine: TE's fused attention (auto = cuDNN / FA3-class on H100,
# FA2-class on A100), fused kernels.
MODERN = Stack()
# Megatron-LM 2020-2022 (and Megatron-DeepSpeed): materialised scores, but its own fused
# kernels (scaled_upper_triang_masked_softmax, bias_gelu, bias_dropout_add, apex LayerNorm).
MEGATRON_LEGACY = Stack(attention="unfused", fused_kernels=True)
# PyTorch eager layers with FlashAttention-2 (llm-foundry/Composer MPT 2023, torch 2.0 era: the
# flash-attn 2 / SDPA kernel, which on H100 reaches ~35% of peak, arXiv:2407.08608 abstract).
TORCH_EAGER_FA2 = Stack(attention="flash2", fused_kernels=False)
# PyTorch eager layers (FSDP2) with TransformerEngine's fused attention (NeMo AutoModel).
TORCH_EAGER_TE = Stack(attention="auto", fused_kernels=False)


def _scenario(name: str, hardware: str, n_gpus: int, model: dict, *, micro_batch: int, global_batch: int,
              dtype: str, recompute: str, parallel: dict, stack: Stack = MODERN) -> dict:
    return dict(name=name, hardware=hardware, nodes=max(1, n_gpus // 8), model=model,
                training=dict(micro_batch=micro_batch, global_batch=global_batch, dtype=dtype,
                              recompute=recompute, **stack.training()),
                parallel=parallel)


def _recompute(row: Row, default: str = "none") -> str:
    r = row["recompute"].lower()
    if r.startswith("full"):
        return "full"
    if r.startswith("selective") or r.startswith("recompute-activations"):
        return "selective"  # Megatron's --recompute-activations = selective granularity
    if r.startswith("none") or r == "no":
        return "none"
    return default


def _hardware(row: Row) -> str | None:
    g = row["gpu"].upper()
    if "H100" in g:
        return "dgx-h100"
    if "A100" in g and "40GB" not in g:
        return "dgx-a100"
    return None


# --------------------------------------------------------------------------- per source


def _megatron2020(rows: list[Row]) -> list[Case]:
    """A100 rows that fill whole DGX nodes (8-way TP on one node; 128-way DP). The README's
    TFLOP/s follow eq. 3 with the factor 96 (1.076 s and 149.8 TFLOP/s for the 1B model agree
    with it), so activation recompute was on: scenarios use full recompute."""
    out = []
    for r in rows:
        if r["metric"] != "step_time_s" or "A100" not in r["gpu"]:
            continue
        n, tp = _int(r["num_gpus"]), _int(r["tp"], 1)
        if n % 8:
            continue
        gb = _int(r["global_batch"])
        dp = n // tp
        out.append(Case("megatron2020", f"{r['model_name']} tp{tp} dp{dp} {n} GPUs", _scenario(
            f"mlm2020-{r['model_name']}-{n}", "dgx-a100", n, _gpt_model(r),
            micro_batch=gb // dp, global_batch=gb, dtype="fp16", recompute="full",
            parallel=dict(tp=tp), stack=MEGATRON_LEGACY), "step_time_s", float(r["value"]), n))
    return out


def _bloom(rows: list[Row]) -> list[Case]:
    """The final BLOOM-176B run (GBS 2048) and the 02-25 and later shape/topology search rows
    on the full 384 GPUs (after the node fix), one per distinct (shape, plan, micro-batch)."""
    out, seen = [], set()
    for r in sorted(rows, key=lambda r: r["model_name"] != "BLOOM-176B"):  # the final run first
        if r["metric"] != "step_time_s" or "INCONSISTENT" in r["notes"] or not r["layers"]:
            continue
        n, tp, pp = _int(r["num_gpus"]), _int(r["tp"], 1), _int(r["pp"], 1)
        dp = _int(r["dp"], 1)
        final = r["model_name"] == "BLOOM-176B"
        if final and _int(r["global_batch"]) != 2048:
            continue
        date = r["notes"].split("date=", 1)[1][:5] if "date=" in r["notes"] else ""
        if not final and (n != 384 or date < "02-25"):
            continue
        if tp * pp * dp != n:
            continue
        key = (r["layers"], r["hidden"], r["heads"], tp, pp, r["micro_batch"])
        if key in seen:
            continue
        seen.add(key)
        dtype = _precision(r) or "fp16"
        mb, gb = _int(r["micro_batch"], 1), _int(r["global_batch"])
        out.append(Case("bloom", f"{r['model_name']} l{r['layers']} h{r['hidden']} a{r['heads']} "
                                 f"tp{tp} pp{pp} dp{dp} mbs{mb}" + (" (final run)" if final else f" ({date})"),
                        _scenario(f"bloom-{len(out)}", "dgx-a100", n,
                                  _gpt_model(r, position="rope", tied=True),
                                  micro_batch=mb, global_batch=gb, dtype=dtype, recompute="full",
                                  parallel=dict(tp=tp, pp=pp, zero=1), stack=MEGATRON_LEGACY),
                        "step_time_s", float(r["value"]), n))
    return out[:8]


def _automodel(rows: list[Row]) -> list[Case]:
    """Dense pre-training rows (LoRA fine-tuning rows and MoE models are left out)."""
    out = []
    for r in rows:
        if r["metric"] != "step_time_s" or "Pre-Training" not in r["notes"]:
            continue
        if not r["model_name"].lower().startswith("llama"):
            continue
        n, tp, pp, cp = _int(r["num_gpus"]), _int(r["tp"], 1), _int(r["pp"], 1), _int(r["cp"], 1)
        out.append(Case("automodel", f"{r['model_name']} FSDP2 dp{n // (tp * pp * cp)} cp{cp} {n} GPUs",
                        _scenario(f"automodel-{len(out)}", "dgx-h100", n, _llama_model(r),
                                  micro_batch=_int(r["micro_batch"], 1), global_batch=_int(r["global_batch"]),
                                  dtype="bf16", recompute=_recompute(r),
                                  parallel=dict(tp=tp, pp=pp, cp=cp, zero=3, zero3_impl="fsdp2"),
                                  stack=TORCH_EAGER_TE),
                        "step_time_s", float(r["value"]), n))
    return out


def _mcore2024(rows: list[Row]) -> list[Case]:
    """Weak-scaling GPT rows (tflops_per_gpu = model FLOPs, no recompute; seq 4096, vocab
    131072). Precision, micro-batch, vp and recompute are not stated: bf16, micro-batch 1, no
    recompute, sequence parallel with TransformerEngine's default TP comm overlap (the README lists
    --tp-comm-overlap, which runs TE's per-GEMM default methods: tp_overlap te_default) and the
    distributed optimizer's parameter AllGather overlapped with forward (--overlap-param-gather)."""
    out = []
    for r in rows:
        if r["metric"] != "tflops_per_gpu" or not r["tp"]:
            continue
        n, tp, pp = _int(r["num_gpus"]), _int(r["tp"], 1), _int(r["pp"], 1)
        if n > 1536:
            continue  # keep the run time reasonable; the 2304-6144 GPU rows behave like 1536
        par = dict(tp=tp, pp=pp, zero=1, overlap_param_gather=True)
        if tp > 1:
            par.update(sequence_parallel=True, tp_overlap="te_default")
        out.append(Case("mcore2024", f"{r['model_name']} tp{tp} pp{pp} dp{n // (tp * pp)} {n} GPUs",
                        _scenario(f"mcore-{r['model_name']}", "dgx-h100", n, _gpt_model(r, position="rope", tied=False),
                                  micro_batch=1, global_batch=_int(r["global_batch"]), dtype="bf16",
                                  recompute="none", parallel=par),
                        "megatron_model_tflops", float(r["value"]), n))
    return out


def _mpt(rows: list[Row]) -> list[Case]:
    """BF16 tables only: seq-2048 rows on 8 GPUs for every size from 1B up, plus the large-scale H100
    rows of MPT-7B and MPT-70B; H100-80GB and A100-80GB (A100-40GB has no profile)."""
    out = []
    for r in rows:
        if r["metric"] != "tokens_per_s_per_gpu" or _precision(r) != "bf16":
            continue
        hw = _hardware(r)
        if hw is None or r["seq_len"] != "2048":
            continue
        n = _int(r["num_gpus"])
        name = r["model_name"]
        if name in ("MPT-125m", "MPT-350m", "MPT-760m"):
            continue  # sub-1B models are launch-latency bound; out of scope
        if not (n == 8 or (hw == "dgx-h100" and name in ("MPT-7b", "MPT-70b") and n in (64, 512))):
            continue
        zero = 2 if "SHARD_GRAD_OP" in r["zero_stage_or_fsdp"] else 3
        par = dict(zero=zero) if zero == 2 else dict(zero=3, zero3_impl="fsdp2")
        out.append(Case("mpt", f"{name} {r['gpu']} {n} GPUs mbs{r['micro_batch']} {_recompute(r)}",
                        _scenario(f"mpt-{len(out)}", hw, n, _gpt_model(r, position="rope"),
                                  micro_batch=_int(r["micro_batch"], 1), global_batch=_int(r["global_batch"]),
                                  dtype="bf16", recompute=_recompute(r), parallel=par, stack=TORCH_EAGER_FA2),
                        "tokens_per_s_per_gpu", float(r["value"]), n))
    # one row per (model, gpu, gpus): the README lists a few repeated configurations
    seen, unique = set(), []
    for c in out:
        key = c.label.rsplit(" mbs", 1)[0]
        if key not in seen:
            seen.add(key)
            unique.append(c)
    return unique


def _flagperf(rows: list[Row]) -> list[Case]:
    """Llama-3 8B/70B Megatron-Core rows in bf16 on H100 and A800 (A800: NVLink 400 GB/s, run
    on the DGX A100 profile). ``recompute-activations`` is Megatron's selective recompute."""
    out = []
    for r in rows:
        if r["metric"] != "tokens_per_s_per_gpu" or _precision(r) != "bf16":
            continue
        if "Llama 3" not in r["model_name"]:
            continue
        hw = "dgx-h100" if "H100" in r["gpu"] else ("dgx-a100" if "A800" in r["gpu"] else None)
        n = _int(r["num_gpus"])
        if hw is None or n > 64:
            continue
        tp, pp = _int(r["tp"], 1), _int(r["pp"], 1)
        out.append(Case("flagperf", f"{r['model_name']} {r['gpu'].split(' ')[0]} tp{tp} pp{pp} dp{n // (tp * pp)}",
                        _scenario(f"flagperf-{len(out)}", hw, n, _llama_model(r),
                                  micro_batch=_int(r["micro_batch"], 1), global_batch=_int(r["global_batch"]),
                                  dtype="bf16", recompute=_recompute(r), parallel=dict(tp=tp, pp=pp, zero=1)),
                        "tokens_per_s_per_gpu", float(r["value"]), n))
    return out


SOURCES: list[Source] = [
    Source("megatron2020", "Megatron-LM README 2020 (GPT-2 1.2-8.3B, A100, fp16)", "megatron_lm_readme_2020.csv",
           _megatron2020, ["Old stack (2020): no FlashAttention, fused softmax; batch per GPU is 16 sequences.",
                           "Only rows filling whole DGX nodes can be built (a scenario has whole nodes)."]),
    Source("bloom", "BLOOM 176B (Jean Zay, 384 A100-80GB)", "bloom_176b_bigscience.csv", _bloom,
           ["Jean Zay has 4 Omni-Path 100 Gb/s links per node; the DGX A100 profile has 8 HDR 200 Gb/s, so DP "
            "and PP traffic is modelled on a faster network than the real one.",
            "Megatron-DeepSpeed 2022: no FlashAttention (the score matrix is materialised)."]),
    Source("automodel", "NeMo AutoModel (H100, BF16, FSDP2)", "nemo_automodel_perf_summary.csv", _automodel,
           ["Only the dense pre-training rows; the LoRA rows train adapters only and MoE is not modelled."]),
    Source("mcore2024", "Megatron-Core 2024 weak scaling (H100)", "megatron_core_readme_2024_h100.csv", _mcore2024,
           ["Precision, micro-batch, vp and recompute are not stated; bf16, micro-batch 1, no recompute assumed.",
            "Rows above 1536 GPUs are skipped for run time."]),
    Source("mpt", "MosaicML llm-foundry MPT (FSDP, BF16)", "llm_foundry_mpt.csv", _mpt,
           ["MPT uses ALiBi and no biases; modelled as a GeLU GPT without learned positions.",
            "FSDP FULL_SHARD is modelled as FSDP2 ZeRO-3 (Composer used FSDP1, torch 1.13/2.0)."]),
    Source("flagperf", "FlagPerf Llama-3 (Megatron-Core 0.6, BF16)", "flagperf_nvidia.csv", _flagperf,
           ["A800 rows run on the DGX A100 profile (A800 NVLink is 400 GB/s, not 600).",
            "Distributed optimizer not stated; ZeRO-1 assumed."]),
]


def cases(sources: Iterable[Source] = SOURCES, data_dir: Path = DATA_DIR) -> list[Case]:
    out: list[Case] = []
    for s in sources:
        out.extend(s.build(read_rows(data_dir / s.file)))
    return out


# --------------------------------------------------------------------------- comparing


def predicted_metric(case: Case, step_time_s: float) -> float:
    """The case's metric computed from a predicted step time with the source's convention."""
    m, t = case.scenario["model"], case.scenario["training"]
    tokens = t["global_batch"] * m["seq_len"]
    if case.metric == "step_time_s":
        return step_time_s
    if case.metric == "tokens_per_s_per_gpu":
        return tokens / step_time_s / case.n_gpus
    if case.metric in ("megatron_hfu_tflops", "megatron_model_tflops"):
        f = megatron_flops_per_step(m["layers"], m["hidden"], m["vocab"], m["seq_len"], t["global_batch"],
                                    recompute=case.metric == "megatron_hfu_tflops")
        return f / step_time_s / case.n_gpus / 1e12
    raise ValueError(f"unknown metric {case.metric}")


def speed_error(case: Case, predicted: float) -> float:
    """predicted throughput / measured throughput - 1 (positive: simulator optimistic)."""
    if case.metric == "step_time_s":
        return case.measured / predicted - 1.0
    return predicted / case.measured - 1.0


def run_case(case: Case, hardware: str | None = None) -> Result:
    """Simulate one case; `hardware` replaces its profile (a name or a YAML path, e.g. an overlay)."""
    from simulator.config.scenario import build_scenario
    from simulator.simulate import simulate_scenario

    t0 = time.perf_counter()
    data = case.scenario if hardware is None else {**case.scenario, "hardware": hardware}
    scn = build_scenario(data, source=f"<e2e:{case.label}>")
    rep = simulate_scenario(scn).report
    pred = predicted_metric(case, rep.step_time_s)
    return Result(case, pred, rep.step_time_s, speed_error(case, pred), rep.mfu, time.perf_counter() - t0)


def run_cases(selected: list[Case], progress: bool = False) -> Iterator[Result]:
    for c in selected:
        r = run_case(c)
        if progress:
            print(f"  {c.source:12s} {c.label:55s} pred {r.predicted:10.3f} meas {c.measured:10.3f} "
                  f"err {100 * r.error:+6.1f}%  ({r.wall_s:.1f}s)", flush=True)
        yield r


# --------------------------------------------------------------------------- fitting the GEMM derate


def is_fit_case(case: Case) -> bool:
    """The fitting subset: single-node (8-GPU) rows. Every multi-node row is held out."""
    return case.n_gpus == 8


def gemm_scale_overlay(profile: str, scale: float, folder: Path) -> Path:
    """A profile overlay whose GEMM curve is the base profile's × `scale` (capped at 1)."""
    import yaml

    from simulator.config.hardware import load_profile

    base = load_profile(profile)
    pts = [dict(flops=p.flops, efficiency=min(1.0, p.efficiency * scale)) for p in base.gpu.gemm_efficiency]
    path = folder / f"{profile}-gemm{scale:.4f}.yaml"
    path.write_text(yaml.safe_dump(dict(base=profile, gpu=dict(gemm_efficiency=pts))))
    return path


def fit_gemm_scale(profile: str, fit_cases: list[Case], lo: float = 0.4, hi: float = 1.2,
                   iters: int = 10) -> tuple[float, list[Result]]:
    """The factor on `profile`'s GEMM curve that makes the median signed error of `fit_cases`
    zero (bisection; the error falls monotonically as GEMMs slow down)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        results: list[Result] = []
        for _ in range(iters):
            mid = (lo + hi) / 2
            hw = str(gemm_scale_overlay(profile, mid, Path(tmp)))
            results = [run_case(c, hw) for c in fit_cases]
            if statistics.median(r.error for r in results) > 0:
                hi = mid
            else:
                lo = mid
        return (lo + hi) / 2, results


def median_abs_error(results: Iterable[Result]) -> float:
    errs = [abs(r.error) for r in results]
    return statistics.median(errs) if errs else math.nan


# --------------------------------------------------------------------------- report

_UNITS = {"step_time_s": "step time (s)", "tokens_per_s_per_gpu": "tokens/s/GPU",
          "megatron_hfu_tflops": "TFLOP/s/GPU (incl. recompute)",
          "megatron_model_tflops": "model TFLOP/s/GPU"}


def render_markdown(results: list[Result], sources: list[Source] = SOURCES) -> str:
    lines = ["# End-to-end validation against published training runs", "",
             "Generated by `python -m simulator.e2e_validation`. Each row is a published, "
             "measured configuration (data/e2e/, see its INDEX.md), rebuilt as a scenario in code and "
             "simulated with `clustersim run`'s pipeline. **Error** = predicted throughput / measured "
             "throughput − 1, in the metric the source prints and with its FLOP convention: positive means "
             "the simulator is optimistic (predicts a faster step).", "",
             "| source | rows | median abs error | median signed error |", "|---|---:|---:|---:|"]
    for s in sources:
        rs = [r for r in results if r.case.source == s.key]
        if rs:
            lines.append(f"| {s.title} | {len(rs)} | {100 * median_abs_error(rs):.1f}% | "
                         f"{100 * statistics.median(r.error for r in rs):+.1f}% |")
    lines.append(f"| **all** | {len(results)} | **{100 * median_abs_error(results):.1f}%** | "
                 f"{100 * statistics.median(r.error for r in results):+.1f}% |")
    for title, keep in (("fitting subset (single-node rows)", True), ("**held out (multi-node rows)**", False)):
        rs = [r for r in results if is_fit_case(r.case) == keep]
        if rs:
            lines.append(f"| {title} | {len(rs)} | {100 * median_abs_error(rs):.1f}% | "
                         f"{100 * statistics.median(r.error for r in rs):+.1f}% |")
    for s in sources:
        rs = [r for r in results if r.case.source == s.key]
        if not rs:
            continue
        lines += ["", f"## {s.title}", "", f"File `data/e2e/{s.file}`. Selection: "
                  + " ".join((s.build.__doc__ or "").split()), ""]
        lines += ["| configuration | metric | measured | predicted | error | sim. MFU |",
                  "|---|---|---:|---:|---:|---:|"]
        for r in rs:
            lines.append(f"| {r.case.label}{' (fit)' if is_fit_case(r.case) else ''} | {_UNITS[r.case.metric]} | {r.case.measured:.4g} | "
                         f"{r.predicted:.4g} | {100 * r.error:+.1f}% | {100 * r.mfu:.1f}% |")
        lines += ["", f"Median |error|: {100 * median_abs_error(rs):.1f}%.", ""]
        lines += [f"- {c}" for c in s.caveats]
    return "\n".join(lines) + "\n"


FINDINGS = """
## What changed in the compute model, and how it was validated

Structural changes (each a scenario knob or a profile number, each with its source) and one
fitted constant per GPU:

1. **Attention without FlashAttention** (`training.attention: unfused`; the older
   `flash_attention: false` still means this): QK^T batched GEMM writing the b·a·s² scores,
   fused scale-mask-softmax, dropout (with its 1-byte mask), ·V; the backward mirrors it
   (`schedule/attention.py`, `unfused_forward/backward`). The HBM traffic of the score matrix is
   the one FlashAttention removes (arXiv:2205.14135 §2.2). Used by Megatron-LM 2020 and BLOOM.
2. **The attention kernel generation** (`training.attention: auto | flash2 | flash3`), priced by
   per-GPU, per-kernel efficiencies in the profile (`gpu.attention_efficiency`, fwd and bwd),
   apart from the GEMM curve: on H100 FlashAttention-2 reaches "only 35% utilization" and
   FlashAttention-3 up to 75% (arXiv:2407.08608 abstract; HARDWARE.md §4: FA3 d=128 causal fwd
   59-62%, kept at 0.60/0.45; FA2 0.35/0.29); on A100 FA2 keeps 0.60/0.50 (arXiv:2307.08691:
   "50-73%"), and no flash3 exists. `auto` (default) is what Megatron-Core/TransformerEngine
   runs on the GPU: cuDNN / FA3-class on Hopper and later, FA2-class before
   (`gpu.default_attention`).
3. **Unfused memory-bound kernels** (`training.fused_kernels: false`): PyTorch eager layers
   (llm-foundry MPT, NeMo AutoModel).
4. **Source-to-stack mapping** in this file (`Stack`): Megatron 2020 / BLOOM = unfused;
   MPT 2023 = flash2 (PyTorch 2.0 era), eager layers; Megatron-Core 2024 / FlagPerf = auto
   (TE: flash3-class on H100, flash2 on A800); NeMo AutoModel = auto with eager layers.
5. **Fitted GEMM training derate** (`gpu.gemm_efficiency` of dgx-a100 × 0.78, dgx-h100 × 0.636;
   overlays abci-a100, sophia-a100, aws-p5 and dgx-h200 inherit it), fitted with
   `python -m simulator.e2e_validation --fit-gemm` on the **single-node (8-GPU) rows only**
   (16 rows: 11 A100/A800, 5 H100), median signed error = 0 per profile; nothing per row or
   per source. With the attention kernels separated, the refit moved dgx-h100 from 0.62 to
   0.636 (× 1.025) and left dgx-a100 at 0.78 (its kernels did not change).

Before → after separating the attention kernel (same rows, same replay code; median |error|,
median signed error in brackets):

| source | rows | before (H100 × 0.62, one attention pair) | after (per-kernel attention, H100 × 0.636) |
|---|---:|---:|---:|
| Megatron-LM 2020, fit | 1 | 26.9% (+26.9%) | 26.9% (+26.9%) |
| Megatron-LM 2020, held out | 4 | 23.7% (+23.7%) | 23.7% (+23.7%) |
| BLOOM 176B, held out | 8 | 18.6% (+18.6%) | 18.6% (+18.6%) |
| NeMo AutoModel, held out | 1 | 7.2% (+7.2%) | 9.5% (+9.5%) |
| **Megatron-Core 2024, held out** | 6 | **24.3% (−24.3%)** | **22.8% (−22.8%)** |
| llm-foundry MPT, fit | 9 | 6.7% (+3.3%) | 6.4% (+3.3%) |
| llm-foundry MPT, held out | 3 | 12.4% (−12.4%) | 11.4% (−11.4%) |
| FlagPerf Llama-3, fit | 6 | 6.1% (−6.1%) | 6.1% (−6.1%) |
| FlagPerf Llama-3, held out | 2 | 1.9% (−1.9%) | 1.4% (+0.0%) |
| fitting subset | 16 | 6.6% | 6.4% |
| **held out** | 24 | **18.6%** | **18.6%** |
| all | 40 | 10.7% | 11.0% |

(The "before" column is the previous model re-run on today's replay engine; the committed doc
of the previous round showed Megatron-Core at −27.8% on the replay engine of that day.)

What this says:

- **The diagnosis "the H100 derate absorbs MPT's slow FlashAttention-2" is right in sign but
  small.** At MPT's seq 2048 and h ≥ 2048 the attention core is s/(12h) ≈ 2-8% of the FLOPs, so
  pricing it at FA2's 35% instead of 60% slows the MPT H100 rows by 1-3% (MPT-1B: +10.5% →
  +8.0%); the refit moves the H100 factor only by 2.5%. Megatron-Core 2024 improves by 1.5
  points and stays pessimistic (−13% to −32% on the TP > 1 rows, +13% on the TP = 1 row).
- **The H100 GEMM derate is not what makes Megatron-Core pessimistic.** FlagPerf's H100 rows are
  Megatron-Core + TE too and sit at −1.4% to +1.4%; Megatron-Core's own TP = 1 row is optimistic
  (+13%). Its error grows with the TP degree (tp1 +13%, tp2 −13%, tp4 −22%, tp8 −32%) and
  barely depends on `tp_overlap` (none / bulk / pipelined within 5 points). For GPT-32B tp8 the
  simulated compute alone is 0.87-0.97 s against a measured step of 0.89 s, and the excess is
  exposed TP AllGather / ReduceScatter (0.34-0.45 s). The README runs with
  `--tp-comm-overlap` and reports a flat 46-49% MFU from tp2 to tp8, i.e. TP communication is
  almost fully hidden in reality. (These figures are from before `te_default`; see the next
  section for what modelling TE's per-GEMM overlap changed, and what remains.)
- The A100 factor transfers as before: BLOOM (no row fitted) +19%, Megatron 2020 multi-node
  +21-28%, both optimistic for stack-era reasons (Jean Zay's 4×100 Gb/s Omni-Path modelled as
  8×200 Gb/s HDR; 2020-2022 cuBLAS slower than the stack behind MAMF).

## TransformerEngine's default TP overlap (`tp_overlap: te_default`)

Megatron-Core 2024 rows now run `tp_overlap: te_default`: TE's `initialize_ub` default method
per GEMM (MECHANICS.md §2.3): qkv/fc1 fprop and proj/fc2 dgrad AG-GEMMs as ring_exchange (t
chunks, copy engine), proj/fc2 fprop GEMM-RS as pipeline (4 chunks, GEMM on SMs−16), qkv/fc1
dgrad re-gather and wgrad ReduceScatter as bulk, proj/fc2 wgrad reusing the gathered dY. Before,
these rows ran the uniform `pipelined` mode (which also chunks the AllGathers, unlike TE).
Same rows, same code otherwise (model TFLOP/s/GPU, error):

| row | measured | pipelined | none | te_default |
|---|---:|---:|---:|---:|
| GPT-1.7B tp1 (48 GPUs) | 408.8 | +13.1% | +13.1% | +13.1% |
| GPT-7.1B tp2 (96 GPUs) | 465.9 | −13.4% | −8.1% | **−8.0%** |
| GPT-16B tp4 (192 GPUs) | 489.1 | −22.5% | −20.4% | **−18.1%** |
| GPT-32B tp8 (384 GPUs) | 459.6 | −32.1% | −32.1% | **−29.8%** |
| GPT-70B tp8 pp2 (768 GPUs) | 419.7 | −24.8% | −24.9% | **−21.3%** |
| GPT-119B tp8 pp4 (1536 GPUs) | 420.5 | −23.1% | −23.4% | **−19.3%** |

`te_default` is the best of the modes on every TP > 1 row (2-4 points over `pipelined`, which
chunks the AllGathers into NCCL calls that each pay a launch and run on 16 SMs taken from the
GEMM), but most of what remained exposed was not TP communication. Breaking the GPT-32B tp8 step
(1.27 s simulated vs 0.89 s measured, with the table's settings) down by op on the critical rank:
compute 0.98 s; TP comm exposed ≈ 0.04 s (the last ReduceScatter chunk of each pipelined
proj/fc2 GEMM-RS, and the ring-exchange steps); DP exposed ≈ 0.25 s: the distributed
optimizer's parameter AllGather after the optimizer step (0.20 s) and the tail of the gradient
ReduceScatter (0.05 s). The README runs with `--overlap-param-gather`, which launches each
bucket's parameter AllGather from the next iteration's forward pre-hooks; the schedule now
models it (`parallel.overlap_param_gather`, set for these rows), which moves the source from
−18.7% to −14.8% median (GPT-32B tp8: −29.8% → −24.3%). What remains is the compute itself
(0.98 s of simulated compute against a 0.89 s measured step at this size): the H100 GEMM derate
fitted on single-node rows does not carry over to h = 7168 at tp8, and the GPT-1.7B tp1 row is
+16% optimistic, so the error is not one constant factor.

Remaining causes not modelled: host/launch gaps beyond the 4 µs floor, the real scale-out
fabric of Jean Zay, era-specific cuBLAS, H100 clocks under sustained load (the GEMM factor lumps
the last three together), and FA2/FA3 backward efficiencies (no backward-only figure was found;
assumed below the forward ones).
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None, help="folder for validation-e2e.md (default: print)")
    ap.add_argument("--source", action="append", help="only these sources (keys)")
    ap.add_argument("--fit-gemm", action="store_true",
                    help="fit the GEMM-curve factor per profile on the 8-GPU rows and print it (writes nothing)")
    ap.add_argument("--extra", type=Path, default=None, help="append this markdown file (findings) to the doc")
    args = ap.parse_args(argv)
    srcs = [s for s in SOURCES if not args.source or s.key in args.source]
    if args.fit_gemm:
        fit = [c for c in cases(srcs) if is_fit_case(c)]
        for prof in sorted({c.scenario["hardware"] for c in fit}):
            mine = [c for c in fit if c.scenario["hardware"] == prof]
            scale, rs = fit_gemm_scale(prof, mine)
            print(f"{prof}: GEMM curve x {scale:.3f} on {len(mine)} rows; median |error| "
                  f"{100 * median_abs_error(rs):.1f}%")
        return 0
    results = list(run_cases(cases(srcs), progress=True))
    text = render_markdown(results, srcs)
    text += FINDINGS
    if args.extra is not None:
        text += "\n" + args.extra.read_text()
    if args.out is None:
        print(text)
    else:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "validation-e2e.md").write_text(text)
        print(f"wrote {args.out / 'validation-e2e.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Leave-one-source-out scoring: every row is predicted with GEMM derates fitted without its source.

The one constant fitted on ``data/e2e`` is the GEMM training derate of ``dgx-a100``, ``dgx-h100``
and ``dgx-b200`` (their ``gpu.gemm_efficiency`` curves are the MAMF-shape values × the derate;
the overlays inherit their base's curve). It is fitted on the fitting subset (``is_fit_case``) so
that the median signed error of that subset is zero. Everything else the compute model uses
(attention kernel efficiencies, ``overlap_slowdown``, launch latency) comes from papers,
datasheets or stated assumptions and is not fitted to these rows.

For each source S the derate of each profile is refitted on the fitting rows of the *other*
sources, and S's rows are scored with it:

- if S has no fitting row on the profile, the refit is the committed fit (scale 1) and its rows
  keep their simulated prediction;
- otherwise the other sources' rows fix a new scale s (relative to the committed curve). To find
  s without re-simulating every fitting row at every trial scale, each fitting row is simulated
  once more at ``PROBE_SCALE`` and its step time is taken as T(s) = A + B/s (the GEMM time B
  scales with 1/s, the rest A does not; exact while the critical path keeps its shape). S's
  fitting rows use that interpolation, its other rows are re-simulated on the rescaled profile;
- if no other source fits the profile in the selection (dgx-b200's fitting rows come from four
  sources, SimuMax's BF16 runs and one FP8 row each of nemo_cp, bridge_dense and nemo2502_b200,
  so this happens only when a selection keeps one of them), the profile borrows the derate of its predecessor (``FALLBACK``), i.e. its
  MAMF-shape curve × that GPU's fitted derate × :func:`kernel_transfer`: a prediction made with
  no B200 training row at all. The transfer is read off the two GPUs' measured GEMM kernels: a derate
  is stated on MAMF's best searched shape, and XLA's unsearched GEMMs sit at 0.973 of MAMF on
  B200 (its sm_100 table) but 1.052 on H100 (sm_90), so H100's 0.720 transfers as 0.666.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, replace
from typing import Callable, Iterable

from simulator.config.hardware import HardwareProfile
from simulator.config.workload import Model
from simulator.e2e_validation.gemm_fit import gemm_scaled
from simulator.e2e_validation.scoring import Result, predicted_metric, simulate_many, speed_error
from simulator.e2e_validation.sources import Case, is_fit_case

FITTED_PROFILES = ("dgx-a100", "dgx-h100", "dgx-b200")
FALLBACK = {"dgx-b200": "dgx-h100"}  # the predecessor whose derate a profile borrows without its own rows
# Profiles whose GEMM curve is a fitted profile's scaled by measured kernel rates, written out rather
# than inherited (``base``): gb200-nvl72's is dgx-b200's x the GB200/B200 MAMF ratio (its header), so it
# follows dgx-b200's refits: a source's GB200 rows are scored with dgx-b200 refitted without that source.
DERIVED_CURVES = {"gb200-nvl72": "dgx-b200", "gb300-nvl72": "dgx-b200"}
PROBE_SCALE = 1.1


def fitted_derate(profile: str) -> float:
    """The derate a fitted profile's header states (``TRAINING DERATE x 0.644``)."""
    from simulator.config.hardware import profile_path

    m = re.search(r"TRAINING DERATE x ([0-9.]+)", profile_path(profile).read_text())
    if m is None:
        raise ValueError(f"{profile} states no TRAINING DERATE")
    return float(m.group(1))


def fit_family(profile: str) -> str:
    """The fitted profile whose GEMM curve `profile` inherits (itself, its ``base`` chain, or the
    profile its written-out curve is derived from, ``DERIVED_CURVES``)."""
    from simulator.config.hardware import profile_path
    from simulator.config.loader import read_yaml

    name = DERIVED_CURVES.get(profile, profile)
    while name not in FITTED_PROFILES:
        base = read_yaml(profile_path(name)).get("base")
        if not isinstance(base, str):
            raise ValueError(f"profile {profile} inherits from none of {FITTED_PROFILES}")
        name = base
    return name


@dataclass(frozen=True)
class Probe:
    """A fitting row simulated at scale 1 (``result``) and at ``PROBE_SCALE`` (``probe_step_s``)."""

    result: Result
    probe_step_s: float

    def step_at(self, scale: float) -> float:
        """T(s) = A + B/s through T(1) and T(PROBE_SCALE)."""
        t1, t2 = self.result.step_time_s, self.probe_step_s
        b = (t1 - t2) / (1.0 - 1.0 / PROBE_SCALE)
        return (t1 - b) + b / scale

    def error_at(self, scale: float) -> float:
        """The row's error at `scale`: throughput ∝ 1/T, whatever the metric."""
        return (1.0 + self.result.error) * self.result.step_time_s / self.step_at(scale) - 1.0

    def result_at(self, scale: float) -> Result:
        t = self.step_at(scale)
        pred = predicted_metric(self.result.case, t)
        return replace(self.result, step_time_s=t, predicted=pred, error=speed_error(self.result.case, pred))


def fit_scale(probes: list[Probe], lo: float = 0.5, hi: float = 2.0, iters: int = 40) -> float:
    """The scale at which the probes' median signed error is zero (it rises with the scale)."""
    for _ in range(iters):
        mid = (lo + hi) / 2
        if statistics.median(p.error_at(mid) for p in probes) > 0:
            hi = mid
        else:
            lo = mid
    return (lo + hi) / 2


def kernel_transfer(profile: str, donor: str) -> float:
    """The factor a borrowed derate takes for the two GPUs' kernels: both derates are stated on
    MAMF's best searched shape, and an unsearched GEMM (XLA's measured table, extrapolated to the
    reference shape by the shape model) sits at a different fraction of MAMF on each GPU
    (:func:`simulator.calibration.gemm_table.table_over_mamf`; 0.973 on B200, 1.052 on H100).
    1 where either GPU has no table."""
    from simulator.calibration.gemm_table import table_over_mamf

    mine, theirs = table_over_mamf(profile, fitted_derate(profile)), table_over_mamf(donor, fitted_derate(donor))
    return 1.0 if mine is None or theirs is None else mine / theirs


@dataclass(frozen=True)
class Refit:
    """The derate a held-out source's rows on one fitted profile are scored with."""

    profile: str
    scale: float  # relative to the committed curve
    rows: int  # fitting rows of other sources it was fitted on (0: borrowed)
    how: str

    @property
    def derate(self) -> float:
        return fitted_derate(self.profile) * self.scale


def refit_without(source: str, profile: str, probes: dict[str, list[Probe]]) -> Refit:
    mine = probes.get(profile, [])
    others = [p for p in mine if p.result.case.source != source]
    if len(others) == len(mine):
        return Refit(profile, 1.0, len(mine), "committed fit (the source has no fitting row here)")
    if others:
        rows = f"{len(others)} row{'s' if len(others) != 1 else ''}"
        return Refit(profile, fit_scale(others), len(others), f"refitted on {rows} of other sources")
    donor = FALLBACK.get(profile)
    if donor is None:
        return Refit(profile, 1.0, 0, "no other source fits this profile in the selection: committed fit (in-sample)")
    transfer = kernel_transfer(profile, donor)
    scale = fitted_derate(donor) * transfer / fitted_derate(profile)
    return Refit(profile, scale, 0, f"no other source: {donor}'s derate {fitted_derate(donor):.3f} borrowed"
                 + (f" x {transfer:.3f} (where XLA-measured GEMMs sit against MAMF, {profile} over {donor})"
                    if transfer != 1.0 else ""))


@dataclass(frozen=True)
class LosoResult:
    result: Result  # predicted with the derate fitted without the row's source
    in_sample_error: float
    refit: Refit


Simulate = Callable[[list[tuple[Case, str | HardwareProfile | None]]], list[Result]]


def _serial(jobs: list[tuple[Case, str | HardwareProfile | None]]) -> list[Result]:
    return simulate_many(jobs)


def parallel_simulator(workers: int) -> Simulate:
    return lambda jobs: simulate_many(jobs, workers)


def leave_one_source_out(results: Iterable[Result], simulate: Simulate = _serial) -> list[LosoResult]:
    """Every result re-scored with the derates fitted without its source (module docstring)."""
    results = list(results)
    out: dict[int, LosoResult] = {}

    def overlay(case: Case, scale: float) -> HardwareProfile:
        return gemm_scaled(case.scenario["hardware"], scale)

    fit = [r for r in results if is_fit_case(r.case)]
    probe_steps = simulate([(r.case, overlay(r.case, PROBE_SCALE)) for r in fit])
    probes: dict[str, list[Probe]] = {}
    probe_of: dict[int, Probe] = {}
    for r, p in zip(fit, probe_steps):
        probe = Probe(r, p.step_time_s)
        probes.setdefault(fit_family(r.case.scenario["hardware"]), []).append(probe)
        probe_of[id(r)] = probe

    refits: dict[tuple[str, str], Refit] = {}
    rerun: list[tuple[int, Refit]] = []
    for i, r in enumerate(results):
        fam = fit_family(r.case.scenario["hardware"])
        key = (r.case.source, fam)
        if key not in refits:
            refits[key] = refit_without(r.case.source, fam, probes)
        rf = refits[key]
        if rf.scale == 1.0:
            out[i] = LosoResult(r, r.error, rf)
        elif id(r) in probe_of:
            out[i] = LosoResult(probe_of[id(r)].result_at(rf.scale), r.error, rf)
        else:
            rerun.append((i, rf))
    again = simulate([(results[i].case, overlay(results[i].case, rf.scale)) for i, rf in rerun])
    for (i, rf), r2 in zip(rerun, again):
        out[i] = LosoResult(replace(r2, case=results[i].case), results[i].error, rf)
    return [out[i] for i in range(len(results))]


def _model(case: Case) -> Model:
    """The case's model with presets resolved."""

    return Model(**case.scenario["model"])


# The regimes the headline reports; each is a property of the case (a row can be in several).
REGIMES: dict[str, Callable[[Case], bool]] = {
    "small models (hidden ≤ 2048)": lambda c: _model(c).hidden <= 2048,
    "ZeRO-3 / FSDP": lambda c: c.scenario["parallel"].get("zero") == 3,
    "long context (≥ 32K tokens)": lambda c: _model(c).seq_len >= 32768,
    "NVIDIA-tuned stacks on H100 (Megatron-Core, NeMo, Megatron-Bridge, dgxc)": lambda c: (
        fit_family(c.scenario["hardware"]) == "dgx-h100"
        and c.source in ("mcore2024", "nemo2407", "dgxc", "dgxc_llama", "dgxc_llama_nemo24", "dgxc_gpt3",
                         "dgxc_grok1", "dgxc_nemotronh", "nemo_cp", "bridge_moe", "bridge_moe_overlap", "modelzoo_qwen3",
                         "modelzoo_mixtral",
                         "bridge_dense", "bridge_dense_2604",
                         "bridge_card", "bridge_card_hybrid", "mlperf_gpt3", "mlperf_gpt3_v30")),
    "multi-node ≥ 512 GPUs": lambda c: c.n_gpus >= 512,
}


@dataclass(frozen=True)
class Stats:
    rows: int
    median: float
    mean: float
    max: float
    signed_median: float


def stats(errors: Iterable[float]) -> Stats:
    e = list(errors)
    a = [abs(x) for x in e]
    return Stats(len(e), statistics.median(a), statistics.fmean(a), max(a), statistics.median(e))

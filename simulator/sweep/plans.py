"""Which parallel plans to try for one model and cluster, and which of them can run at all.

A *candidate* is a ``parallel:`` block plus a micro-batch size. :func:`enumerate_plans` lists the
plans a Megatron-LM / DeepSpeed user would consider for a scenario, within bounds:

* ``tp``: divisors of the GPUs per node (TP across nodes is never worth it on these fabrics)
  that divide both ``heads`` and ``kv_heads`` (each TP rank owns whole query and KV heads);
  sequence parallelism is on whenever ``tp > 1`` (Megatron's recommended setting,
  arXiv:2205.05198: it only removes replicated work and memory);
* ``pp``: any stage count up to ``layers`` whose product with the other axes divides the GPU
  count; stages may hold unequal layer counts (:func:`simulator.config.scenario.split_layers`);
* ``cp`` / ``ulysses``: powers of two, never both at once; by default only for sequences of at
  least :data:`LONG_SEQUENCE` tokens, where context parallelism pays for its traffic;
* ``zero`` 0..3, collapsed to 0 when the sharding group has one rank (all stages coincide);
* ``micro_batch``: powers of two up to a bound (default: the scenario's own micro-batch);
* ``vp`` (interleaved 1F1B) only when asked for.

``--vary`` adds the knobs that change how a plan runs rather than how it is cut (each otherwise
keeps the scenario's value): ``tp_overlap`` (TransformerEngine overlap modes, with tp > 1),
``cp_comm`` (the context-parallel flavours, with cp > 1), ``recompute`` (none, selective, full),
``pp_schedule`` (1F1B, and interleaved 1F1B with every ``vp`` that divides the stage's layers,
up to 8 or ``--max vp``), ``zero3`` (DeepSpeed ZeRO-3, FSDP2 resharding after forward or not, at
zero = 3). ``--fix KEY=VALUE`` pins any of them.

:func:`check_candidate` turns a candidate into a validated Scenario or a *reason* (the message
of the InputError the scenario rules raise, e.g. ``parallel.tp: tp=3 does not divide heads=32``);
:func:`memory_per_gpu` decides whether a valid plan fits. Neither replays anything.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from typing import Iterable, Iterator, Sequence

from simulator.config.parallelism import Parallel, model_parallel_size, sequence_parallel_in_effect
from simulator.config.scenario import Scenario
from simulator.config.workload import Training
from simulator.errors import InputError
from simulator.report.labels import plan_label
from simulator.schedule.memory import MemoryEstimate, memory_per_gpu

# Axes a sweep varies (and `--fix` / `--max` accept), in the order plans are printed.
SWEEP_KEYS: tuple[str, ...] = ("tp", "pp", "cp", "ulysses", "dp", "zero", "micro_batch", "vp", "ep", "etp")
# Knobs `--vary` adds, and the values each takes; `--fix KEY=VALUE` pins them.
CHOICES: dict[str, tuple[str, ...]] = {
    "tp_overlap": ("none", "bulk", "pipelined", "ring_exchange", "te_default"),
    "cp_comm": ("p2p", "all_gather", "a2a", "a2a+p2p", "ring"),
    "recompute": ("none", "selective", "full"),
    "zero3_impl": ("deepspeed", "fsdp2"),
    "fsdp_reshard": ("true", "false"),
    "moe_dispatcher": ("alltoall", "allgather", "deepep"),
}
VARY_KEYS: tuple[str, ...] = ("tp_overlap", "cp_comm", "recompute", "pp_schedule", "zero3", "moe_dispatcher")
DEFAULT_MAX_VP = 8
# Below this sequence length the default sweep leaves cp and ulysses at 1 (override with bounds).
LONG_SEQUENCE = 32 * 1024


@dataclass(frozen=True)
class Candidate:
    """One plan to try: the parallel block and the micro-batch size (sequences)."""

    parallel: Parallel
    micro_batch: int
    name: str | None = None  # a user's name for the plan (plans files); not part of its identity
    recompute: str | None = None  # training.recompute; None: the scenario's

    @cached_property
    def key(self) -> tuple:
        """Identity for de-duplication: every parallel field (dp derived, so left out). Kept once
        computed: a sweep's de-duplications ask for it several times per plan."""
        fields = self.parallel.model_dump(exclude={"dp"})
        key = tuple(sorted((k, repr(v)) for k, v in fields.items())) + (("micro_batch", self.micro_batch),)
        return key + ((("recompute", self.recompute),) if self.recompute else ())

    @property
    def key_text(self) -> str:
        """The key as one line (results files)."""
        return " ".join(f"{k}={v}" for k, v in self.key)

    def label(self, dp: int | None = None) -> str:
        """The user's name, else the practitioners' notation, e.g. ``tp8sp pp2 dp4 z1 mb1``."""
        return self.name or plan_label(self.parallel, dp, self.micro_batch, self.recompute)


@dataclass(frozen=True)
class SweepBounds:
    """User limits on the enumeration: ``fixed`` pins an axis (a number, or a choice for the
    knobs of :data:`CHOICES`), ``maximum`` caps one, ``vary`` names the knobs of
    :data:`VARY_KEYS` to sweep too."""

    fixed: dict[str, int | str] = field(default_factory=dict)
    maximum: dict[str, int] = field(default_factory=dict)
    vary: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        for k, v in self.fixed.items():
            if k in CHOICES:
                if str(v) not in CHOICES[k]:
                    raise InputError(f"{k}={v!r}: expected one of {', '.join(CHOICES[k])}", source="command line",
                                     field="--fix")
                continue
            self._check_number("--fix", k, v)
        for k, v in self.maximum.items():
            self._check_number("--max", k, v)
        zero = self.fixed.get("zero")
        if isinstance(zero, int) and zero > 3:
            raise InputError(f"zero={self.fixed['zero']}: expected 0, 1, 2 or 3", source="command line",
                             field="--fix")
        unknown = sorted(set(self.vary) - set(VARY_KEYS))
        if unknown:
            raise InputError(f"cannot vary {', '.join(unknown)}; expected some of {', '.join(VARY_KEYS)} or all",
                             source="command line", field="--vary")

    @staticmethod
    def _check_number(what: str, k: str, v: object) -> None:
        if k not in SWEEP_KEYS:
            raise InputError(f"unknown axis {k!r}; expected one of {', '.join(SWEEP_KEYS + tuple(CHOICES))}",
                             source="command line", field=what)
        if not isinstance(v, int) or isinstance(v, bool) or v < (0 if k == "zero" else 1):
            raise InputError(f"{k}={v!r}: expected a whole number >= {0 if k == 'zero' else 1}",
                             source="command line", field=what)

    def choices(self, knob: str, base: str, applicable: bool = True) -> list[str]:
        """Values of a ``--vary`` knob: pinned, all (when varied and applicable) or the base's."""
        if knob in self.fixed:
            return [str(self.fixed[knob])]
        group = "zero3" if knob in ("zero3_impl", "fsdp_reshard") else knob
        return list(CHOICES[knob]) if group in self.vary and applicable else [base]


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def _powers_of_two(limit: int) -> list[int]:
    out, v = [], 1
    while v <= limit:
        out.append(v)
        v *= 2
    return out


def _axis_values(scn: Scenario, bounds: SweepBounds) -> dict[str, list[int]]:
    """Allowed values of every swept axis before combining them."""
    m, n = scn.model, scn.n_gpus
    long_seq = m.seq_len >= LONG_SEQUENCE
    # TP stays inside one NVLink domain: the node, or a multi-node domain (an NVL72 rack, where
    # TP 8 spans two trays on NVLink); a divisor of it, so no TP group straddles two domains.
    nvlink = min(scn.profile.nvlink_domain_gpus, n)
    default: dict[str, list[int]] = {
        "tp": [d for d in divisors(nvlink) if m.heads % d == 0 and m.kv_heads % d == 0],
        "pp": [d for d in range(1, min(m.layers, n) + 1) if n % d == 0],
        "cp": _powers_of_two(scn.gpus_per_node if long_seq else 1),
        "ulysses": _powers_of_two(scn.gpus_per_node if long_seq else 1),
        "zero": [0, 1, 2, 3],
        "micro_batch": _powers_of_two(scn.training.micro_batch),
        "vp": [1],
        # experts: every EP degree dividing the expert count (the plan check keeps those that fit
        # into tp x cp x dp); etp 0 stands for Megatron's default, etp = tp
        "ep": [d for d in divisors(m.experts) if d <= n] if m.moe else [1],
        "etp": [0],
    }
    if "pp_schedule" in bounds.vary:
        default["vp"] = list(range(1, DEFAULT_MAX_VP + 1))
    maxima = dict(bounds.maximum)
    out: dict[str, list[int]] = {}
    for axis, values in default.items():
        pinned = bounds.fixed.get(axis)
        if isinstance(pinned, int):  # a swept axis is pinned to a number (SweepBounds checks)
            out[axis] = [pinned]
            continue
        if axis in maxima:
            cap = maxima[axis]
            if axis in ("cp", "ulysses", "micro_batch"):
                values = _powers_of_two(cap)
            elif axis == "vp":
                values = list(range(1, cap + 1))
            elif axis == "etp":
                values = _powers_of_two(cap)
            values = [v for v in values if v <= cap]
        out[axis] = values
    return out


def inherit_parallel(base: Parallel, overrides: dict) -> dict:
    """The ``parallel:`` mapping of a plan: the overrides, the base plan's other knobs (overlap
    mode, CP flavour, ZeRO-3 implementation, order...), except knobs the new degrees make
    meaningless, which fall back to their defaults: tp_overlap without TP and sequence
    parallelism, a tuned configuration's per-GEMM methods (tp_overlap_methods) under any mode but
    te_default, whose table they override, the interleaved schedule without pipeline stages; dp is
    always re-derived and per-stage layer counts are dropped when pp changes. Validation is left
    to the caller."""
    data = base.model_dump(exclude={"dp"})
    data["order"] = base.full_order
    data.update(overrides)

    def degree(key: str) -> int:  # a wrong type is left for pydantic to report with its path
        v = data.get(key, 1)
        return v if isinstance(v, int) and not isinstance(v, bool) else 1

    if "pp" in overrides and degree("pp") != base.pp and "pp_layers" not in overrides:
        data["pp_layers"] = None
    if not sequence_parallel_in_effect(degree("tp"), data.get("sequence_parallel") is True) \
            and "tp_overlap" not in overrides:
        data["tp_overlap"] = "none"
    if data.get("tp_overlap") != "te_default" and "tp_overlap_methods" not in overrides:
        data["tp_overlap_methods"] = {}
    if degree("pp") == 1:
        if "pp_schedule" not in overrides:
            data["pp_schedule"] = "1f1b"
        if "vp" not in overrides:
            data["vp"] = 1
    elif "pp_schedule" not in overrides:
        data["pp_schedule"] = "interleaved" if degree("vp") > 1 else "1f1b"
    return data


def _parallel_for(base: Parallel, tp: int, pp: int, cp: int, ulysses: int, zero: int, vp: int,
                  **knobs: object) -> Parallel:
    """A swept plan: the degrees put into the base plan, sequence parallelism on exactly when
    tp > 1, and the ``--vary`` knobs given."""
    over = dict(tp=tp, pp=pp, cp=cp, ulysses=ulysses, zero=zero, vp=vp, sequence_parallel=tp > 1, **knobs)
    return Parallel.model_validate(inherit_parallel(base, over))


def _knob_sets(base: Parallel, bounds: SweepBounds, tp: int, cp: int, zero: int, ep: int = 1) -> list[dict]:
    """The ``--vary`` knob combinations that mean something for these degrees."""
    dispatchers = bounds.choices("moe_dispatcher", base.moe_dispatcher, ep > 1)
    return [dict(k, moe_dispatcher=d) for k in _dense_knob_sets(base, bounds, tp, cp, zero) for d in dispatchers]


def _dense_knob_sets(base: Parallel, bounds: SweepBounds, tp: int, cp: int, zero: int) -> list[dict]:
    overlaps = bounds.choices("tp_overlap", base.tp_overlap if tp > 1 else "none", tp > 1)
    comms = bounds.choices("cp_comm", base.cp_comm, cp > 1)
    impls = bounds.choices("zero3_impl", base.zero3_impl, zero == 3)
    out = []
    for ovl, comm, impl in itertools.product(overlaps, comms, impls):
        reshards = bounds.choices("fsdp_reshard", str(base.fsdp_reshard_after_forward).lower(), impl == "fsdp2")
        for reshard in reshards:
            knobs: dict = {"tp_overlap": ovl, "cp_comm": comm}
            if zero == 3:
                knobs.update(zero3_impl=impl, fsdp_reshard_after_forward=reshard == "true")
            out.append(knobs)
    return out


def enumerate_plans(scn: Scenario, bounds: SweepBounds | None = None) -> list[Candidate]:
    """Every distinct candidate within the bounds whose degrees multiply to a divisor of the GPU
    count (plans that break a model rule are kept: :func:`check_candidate` gives their reason)."""
    bounds = bounds or SweepBounds()
    v = _axis_values(scn, bounds)
    n = scn.n_gpus
    recomputes: list[str | None] = [str(r) for r in bounds.choices("recompute", "")] \
        if ("recompute" in bounds.vary or "recompute" in bounds.fixed) else [None]
    seen: set[tuple] = set()
    out: list[Candidate] = []
    for tp, pp, cp, uly in itertools.product(v["tp"], v["pp"], v["cp"], v["ulysses"]):
        if cp > 1 and uly > 1:
            continue  # USP (ulysses inside a CP ring) is a plan one writes, not one the sweep searches
        mp = model_parallel_size(tp, cp, uly, pp)
        if n % mp:
            continue
        dp = n // mp
        if "dp" in bounds.fixed and dp != bounds.fixed["dp"]:
            continue
        if "dp" in bounds.maximum and dp > bounds.maximum["dp"]:
            continue
        shard = dp * cp * uly  # ZeRO shards over DP x CP x Ulysses (RankShapes.grad_shard)
        for zero, mb, vp, ep, etp in itertools.product(v["zero"], v["micro_batch"], v["vp"], v["ep"], v["etp"]):
            if (tp * cp * dp) % (ep * (etp or tp)):
                continue  # EP x ETP folds into the tp x cp x dp ranks of a stage (Megatron)
            if shard == 1 and zero > 0 and "zero" not in bounds.fixed:
                continue  # ZeRO over one rank is plain data parallelism
            if pp == 1 and vp > 1:
                continue
            if vp > 1 and "pp_schedule" in bounds.vary and "vp" not in bounds.fixed and scn.model.layers % (pp * vp):
                continue  # interleaving needs whole layers per chunk
            for knobs, rc in itertools.product(_knob_sets(scn.parallel, bounds, tp, cp, zero, ep), recomputes):
                if scn.model.moe:
                    knobs = dict(knobs, ep=ep, etp=etp or None)
                try:
                    parallel = _parallel_for(scn.parallel, tp, pp, cp, uly, zero, vp, **knobs)
                except ValueError:
                    continue  # a combination the Parallel model itself forbids
                cand = Candidate(parallel, mb, recompute=rc)
                if cand.key not in seen:
                    seen.add(cand.key)
                    out.append(cand)
    return out


def dedupe(candidates: Iterable[Candidate]) -> list[Candidate]:
    """Candidates in first-seen order without repeats."""
    seen: set[tuple] = set()
    out = []
    for c in candidates:
        if c.key not in seen:
            seen.add(c.key)
            out.append(c)
    return out


def apply_candidate(scn: Scenario, cand: Candidate) -> Scenario:
    """The scenario under this plan, validated by the scenario rules (raises InputError)."""
    changes: dict = {}
    if cand.micro_batch != scn.training.micro_batch:
        changes["micro_batch"] = cand.micro_batch
    if cand.recompute and cand.recompute != scn.training.recompute:
        changes["recompute"] = cand.recompute
        if cand.recompute != "full":  # which layers full recompute re-runs means nothing under another
            changes |= {"recompute_method": "uniform", "recompute_num_layers": 1}
    if changes:
        training = Training.model_validate({**scn.training.model_dump(), **changes})
        scn = replace(scn, training=training)
    return scn.with_parallel(cand.parallel)


def reason_of(exc: InputError) -> str:
    """An InputError as a plan's reason: field path and message, without the scenario's file."""
    return f"{exc.field}: {exc.detail}" if exc.field else exc.detail


def check_candidate(scn: Scenario, cand: Candidate) -> tuple[Scenario | None, str]:
    """(scenario, "") for a valid plan, (None, reason) for one the scenario rules reject."""
    try:
        return apply_candidate(scn, cand), ""
    except InputError as exc:
        return None, reason_of(exc)


def memory_reason(mem: MemoryEstimate) -> str:
    """Why a plan that does not fit is not simulated, with the numbers."""
    from simulator.units import GiB

    return (f"does not fit: {mem.total / GiB:.1f} GiB per GPU on pipeline stage {mem.stage} (peak reserved "
            f"{mem.reserved / GiB:.1f} + CUDA context, NCCL, userbuffers {mem.non_pytorch / GiB:.1f}) "
            f"> {mem.hbm_bytes / GiB:.1f} GiB HBM")


def balanced_split_of(plan: Scenario) -> list[int] | None:
    """The split of ``plan``'s layers that evens out its stages' passes, where it differs from the
    plan's and shortens the most loaded stage's passes by ``stage_balance.MIN_GAIN`` (None
    otherwise, and with one stage). Per micro-batch, each layer costs the lower-bound time of its
    forward and backward (``bound.stage_pass_times``, per block kind: dense or MoE, a hybrid
    model's Mamba2, attention, MLP or MoE block; the backward of a layer full recompute keeps
    without its re-run), the first stage adds the embedding's and the last the head's and loss's;
    with virtual stages the split has one entry per virtual stage (``stage_balance.evened``).
    What ``run`` reads off a replay for the same purpose (``report/stage_balance.py``) is the
    kernels' time, this the sweep's estimate before any replay."""
    from simulator.sweep.bound import stage_pass_times

    pp, vp = plan.parallel.pp, plan.parallel.vp
    if pp <= 1:
        return None
    spec, times = stage_pass_times(plan)
    layer_s = [sum(times[0].layer(spec, layer)) for layer in range(plan.model.layers)]
    rest_s = [0.0] * pp
    rest_s[0] += times[0].embedding
    rest_s[-1] += times[-1].head
    split = _evened_split(tuple(layer_s), tuple(rest_s), tuple(plan.virtual_stage_layers), vp)
    return list(split) if split is not None else None


@lru_cache(maxsize=4096)
def _evened_split(layer_s: tuple[float, ...], rest_s: tuple[float, ...], virtual: tuple[int, ...],
                  vp: int) -> tuple[int, ...] | None:
    """``stage_balance.evened``'s split, kept per input: plans that differ in knobs their passes
    do not see (ZeRO stage, data-parallel overlap, ...) share it; Llama-3 70B on 128 A100 PCIe,
    --vary all, asks 9,570 times for 1,653."""
    from simulator.report.stage_balance import evened

    balance = evened(list(layer_s), list(rest_s), virtual, vp)
    return tuple(balance.pp_layers) if balance else None


def with_split(cand: Candidate, pp_layers: Sequence[int]) -> Candidate:
    """``cand`` with its layers split over the (virtual) stages as ``pp_layers``."""
    return replace(cand, parallel=Parallel.model_validate(inherit_parallel(cand.parallel,
                                                                          {"pp_layers": list(pp_layers)})))


def with_balanced_splits(scn: Scenario, candidates: Iterable[Candidate]) -> list[Candidate]:
    """The candidates, each pipelined one whose layers are split evenly (no ``pp_layers``)
    followed by the same plan with :func:`balanced_split_of`'s split (when there is one and the
    plan is valid), so that the sweep screens, bounds and ranks both."""
    out: list[Candidate] = []
    seen = set()
    for cand in candidates:
        out.append(cand)
        seen.add(cand.key)
        if cand.parallel.pp <= 1 or cand.parallel.pp_layers is not None:
            continue
        plan, _ = check_candidate(scn, cand)
        split = balanced_split_of(plan) if plan is not None else None
        if split is None:
            continue
        variant = with_split(cand, split)
        if variant.key not in seen:
            seen.add(variant.key)
            out.append(variant)
    return out


def iter_checked(scn: Scenario, candidates: Iterable[Candidate]
                 ) -> Iterator[tuple[Candidate, Scenario | None, MemoryEstimate | None, str]]:
    """For each candidate: its scenario, memory estimate and reason ("" when it can be simulated)."""
    for cand in candidates:
        plan_scn, reason = check_candidate(scn, cand)
        if plan_scn is None:
            yield cand, None, None, reason
            continue
        mem = memory_per_gpu(plan_scn)
        yield cand, plan_scn, mem, ("" if mem.fits else memory_reason(mem))

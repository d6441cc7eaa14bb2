"""Cross-validation of ``clustersim calibrate``: fit on part of each system's measurements,
predict the rest.

    python -m simulator.calibration.cross_validation [--out docs/]

writes ``<out>/validation-calibration.md``. A *system* is a bundled hardware profile with the
measured nccl-tests sweeps of ``data/nccl/`` that run on it (the sweep → profile mapping and the
per-sweep facts — ranks, GPUs per node, a pinned algorithm, ``-g`` — are those of
:mod:`simulator.calibration.collective_validation`). Two splits per system:

* **sizes**: in every sweep, sizes sorted ascending; even-indexed rows fit, odd-indexed rows are
  predicted (interpolation across message sizes);
* **leave one collective out** (systems with several collectives): fit on every sweep of the other
  collectives, predict all rows of the held-out one (transfer across collectives: only the
  parameters they share, the link efficiencies and latencies, carry over).

Score: |predicted busbw / measured busbw − 1| on the predicted rows, median over the system's
rows for sizes ≥ 1 MiB and for all sizes. Target after calibration: ≤ 5 % and ≤ 10 %.
"""

from __future__ import annotations

import argparse
import datetime as _dt
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from simulator.calibration.collective_validation import Case, case_for, pct
from simulator.calibration.fit import MeasuredCollective, busbw_errors, fit_collectives
from simulator.calibration.measured import MeasuredSweep, bundled_sweeps
from simulator.errors import InputError
from simulator.units import MiB

TARGET_LARGE = 0.05  # median |busbw error| for sizes >= 1 MiB
TARGET_ALL = 0.10
MAX_ROWS = 128


def measurement(sweep: MeasuredSweep, case: Case) -> MeasuredCollective:
    rows = sorted((r for r in sweep.rows if r.size_bytes > 0 and r.time_us), key=lambda r: r.size_bytes)
    if len(rows) > MAX_ROWS:  # dense linear grids (1 KiB steps): every k-th row keeps the shape, cuts the time
        rows = rows[:: -(-len(rows) // MAX_ROWS)]
    return MeasuredCollective(
        sweep.name, case.op, case.ranks, case.ranks // case.gpus_per_node, case.gpus_per_node,
        tuple(r.size_bytes for r in rows), tuple(r.time_us * 1e-6 for r in rows), (), case.algo,
        sweep.gpus_per_process)


@dataclass(frozen=True)
class SplitResult:
    system: str
    split: str  # "sizes" or "without <op>"
    fitted_on: tuple[str, ...]
    predicted: tuple[str, ...]
    rows: int
    before_large: float | None  # medians before calibration (datasheet profile), same rows
    before_all: float | None
    after_large: float | None
    after_all: float | None
    fitted: tuple[str, ...]  # "path=value" of the fitted parameters

    @property
    def meets_target(self) -> bool:
        return (self.after_large is None or self.after_large <= TARGET_LARGE) and \
            self.after_all is not None and self.after_all <= TARGET_ALL


def _medians(profile, tests: list[MeasuredCollective]) -> tuple[float | None, float | None, int]:
    errs, sizes = [], []
    for m in tests:
        errs.append(np.abs(busbw_errors(profile, m)))
        sizes.append(np.asarray(m.sizes))
    if not errs:
        return None, None, 0
    e, s = np.concatenate(errs), np.concatenate(sizes)
    large = e[s >= MiB]
    return (float(np.median(large)) if large.size else None), float(np.median(e)), int(e.size)


def evaluate(system: str, profile, train: list[MeasuredCollective], test: list[MeasuredCollective],
             split: str) -> SplitResult:
    fit = fit_collectives(profile, train)
    b_large, b_all, n = _medians(profile, test)
    a_large, a_all, _ = _medians(fit.profile, test)
    fitted = tuple(f"{p.param.path}={p.value:.4g}" for p in fit.params if p.fitted)
    return SplitResult(system, split, tuple(m.source for m in train), tuple(m.source for m in test), n,
                       b_large, b_all, a_large, a_all, fitted)


def systems() -> tuple[dict[str, list[MeasuredCollective]], dict[str, str]]:
    """Measurements per bundled profile that loads; reasons for the sweeps left out."""
    from simulator.config.hardware import load_profile

    out: dict[str, list[MeasuredCollective]] = {}
    skipped: dict[str, str] = {}
    for sweep in bundled_sweeps():
        case = case_for(sweep)
        if case is None:
            skipped[sweep.name] = "no sweep-to-profile mapping (collective_validation.CASES)"
            continue
        if not sweep.has_time:
            skipped[sweep.name] = "no time column"
            continue
        try:
            load_profile(case.profile)
        except InputError as exc:
            skipped[sweep.name] = f"profile {case.profile} not available: {exc.detail}"
            continue
        m = measurement(sweep, case)
        if len(m.sizes) < 4:
            skipped[sweep.name] = f"only {len(m.sizes)} rows"
            continue
        out.setdefault(case.profile, []).append(m)
    return out, skipped


def cross_validate(system: str, ms: list[MeasuredCollective]) -> list[SplitResult]:
    from simulator.config.hardware import load_profile

    profile = load_profile(system)
    even = [m.subset([i % 2 == 0 for i in range(len(m.sizes))]) for m in ms]
    odd = [m.subset([i % 2 == 1 for i in range(len(m.sizes))]) for m in ms]
    results = [evaluate(system, profile, even, odd, "sizes (fit even, predict odd)")]
    ops = sorted({m.op for m in ms})
    if len(ops) > 1:
        for op in ops:
            train = [m for m in ms if m.op != op]
            test = [m for m in ms if m.op == op]
            results.append(evaluate(system, profile, train, test, f"leave out {op}"))
    return results


def render_markdown(results: list[SplitResult], skipped: dict[str, str]) -> str:
    lines = [
        "# Calibration cross-validation",
        "",
        f"Generated by `python -m simulator.calibration.cross_validation --out docs/` on "
        f"{_dt.date.today().isoformat()}; rerun it whenever the model, a profile or the fit changes. "
        "Data: `data/nccl/` (INDEX.md); sweep → profile mapping and per-sweep facts as in "
        "`docs/validation-collectives.md`.",
        "",
        "Method: `simulator.calibration.fit.fit_collectives` (what `clustersim calibrate` runs) fits the "
        "profile fields the collective model reads — `node.scale_up.efficiency`, `node.nics.efficiency`, "
        "`nccl.nvls_efficiency`, `nccl.hw_latency_us.<link>.<algo>.<proto>`, `nccl.base_latency_us.<algo>.<proto>`, "
        "`nccl.ll_max_bw_GBps`, the calibration knobs `nccl.net_latency_us` (the net plugin's per-message "
        "`latencyInter`, NCCL-COST-MODEL.md §1: 0 for NCCL's IB transport, tens of µs for EFA), "
        "`nccl.proto_efficiency.<ll|ll128>` (achievable fraction of the LL/LL128 rate; Simple is the link's own "
        "efficiency) and `nccl.p2p_efficiency` (All-to-All / SendRecv over the p2p transport), and "
        "`gpu.kernel_launch_us` for `-g` runs — by Huber-weighted Levenberg–Marquardt on log time, each only where ≥ 3 fitted rows are "
        "sensitive to it. Splits: **sizes** = in every sweep fit the even-indexed sizes, predict the odd "
        "ones; **leave out X** = fit every other collective of the system, predict all rows of X.",
        "",
        f"Score: median |predicted busbw / measured busbw − 1| over the predicted rows of the system, for "
        f"sizes ≥ 1 MiB and all sizes, before (datasheet profile) and after calibration. Target after "
        f"calibration: ≤ {100 * TARGET_LARGE:.0f} % (≥ 1 MiB) and ≤ {100 * TARGET_ALL:.0f} % (all sizes).",
        "",
        "| system | split | predicted rows | before ≥1 MiB | before all | after ≥1 MiB | after all | target met | fitted |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(f"| {r.system} | {r.split} | {r.rows} | {pct(r.before_large)} | {pct(r.before_all)} | "
                     f"{pct(r.after_large)} | {pct(r.after_all)} | {'yes' if r.meets_target else '**no**'} | "
                     f"{', '.join(f'`{f}`' for f in r.fitted)} |")
    lines += ["", "`tests/validation/test_calibration_accuracy.py` asserts the target on the splits met with margin "
              "(dgx-h100: sizes and every leave-one-out except SendRecv; a100-pcie: sizes, leave out sendrecv); "
              "rows at or just under the target (sophia-a100 sizes) move with model and profile changes and are "
              "reported, not asserted. A leave-one-out split fits only parameters that the training collectives "
              "exercise (`fit.candidate_params` of the training sweeps); a knob only the held-out collective uses "
              "stays at its datasheet value."]
    misses = [r for r in results if not r.meets_target]
    lines += ["", "## Where the target is not met", ""]
    if not misses:
        lines.append("Every split above meets the target.")
    for r in misses:
        lines.append(f"- {r.system}, {r.split}: after calibration {pct(r.after_large)} (≥ 1 MiB), "
                     f"{pct(r.after_all)} (all). {_explain(r)}")
    lines += ["", "Sweeps per system:", ""]
    seen: dict[str, set[str]] = {}
    for r in results:
        seen.setdefault(r.system, set()).update(r.fitted_on + r.predicted)
    for system, names in sorted(seen.items()):
        lines.append(f"- {system}: {', '.join(sorted(names))}")
    if skipped:
        lines += ["", "Sweeps not used:", ""] + [f"- {k}: {v}" for k, v in sorted(skipped.items())]
    lines.append("")
    return "\n".join(lines)


# Why a split misses, from the per-size residuals (python -m simulator.calibration.cross_validation
# prints the medians; fit.busbw_errors gives the rows). Keyed by (system, split prefix).
NOTES: dict[tuple[str, str], str] = {
    ("gh200-alps", "sizes"): (
        "The Slingshot sweeps are not monotone in size: on 2 nodes 512 KiB takes 674 µs and 2 MiB 129 µs, on "
        "16 nodes 64 MiB takes 8.7 ms and 128 MiB 5.5 ms (data/nccl/gh200x*_alps_slingshot.csv). Held-out odd "
        "rows sit between even rows that disagree by 2–12×; no latency + bandwidth model interpolates that, and "
        "Huber weighting only keeps them from dragging the fit; here the fit ends slightly worse than the "
        "datasheet profile."),
    ("mi300x", "sizes"): (
        "≥ 1 MiB is within 2%. Below 64 KiB the RCCL sweep is not monotone (23 µs at 128–512 B, 13.7 µs at "
        "1–32 KiB): RCCL's own small-message tuning, which NCCL's tables (the Ampere row stands in for CDNA3) "
        "do not have."),
    ("abci-a100", "sizes"): (
        "At 0.5–8 MiB the 1- and 2-node sweeps run LL128/Simple 35–85% slower than the model while the 16-node "
        "sweep's LL128 matches it: the shortfall depends on the node count, not on the protocol, so the "
        "per-protocol efficiency has to split the difference."),
    ("aws-p5", "sizes"): (
        "One sweep; the fitted EFA `latencyInter` (`nccl.net_latency_us`) removes most of the error "
        "(37.7%/51.7% before the knob existed). The rest is the 0.5–8 MiB range where the measured "
        "LL128→Tree/Simple switch does not sit where the model's tuner puts it, and odd rows fall on the "
        "other side of it."),
    ("dgx-h100", "leave out sendrecv"): (
        "`nccl.p2p_efficiency` is fitted from All-to-All (NCCL runs both over its p2p transport) and "
        "transferred; but the 1-node SendRecv runs at the datasheet NVLink rate, faster than All-to-All, so "
        "the shared knob carries All-to-All's shortfall over. Splitting the knob per pattern would leave it "
        "unfittable in this split."),
    ("a100-pcie", "leave out allreduce"): (
        "≥ 1 MiB is fine; the all-sizes median sits just above target: the held-out 1-node PCIe AllReduce "
        "uses PCIe latencies that no training row (SendRecv across two nodes) exercises, so they stay at "
        "the datasheet."),
    ("sophia-a100", "leave out"): (
        "Each collective runs its own algorithm/protocol mix on 2 nodes (AllReduce: Tree LL/LL128 then "
        "Ring; AllGather: Ring; All-to-All: p2p), and the parameters that decide its small and mid sizes "
        "(tree or ring latencies, the p2p efficiency) are exercised by that collective alone, so in the split "
        "that holds it out they stay at the datasheet; only the NIC efficiency and `latencyInter` transfer."),
}


def _explain(r: SplitResult) -> str:
    for (system, prefix), note in NOTES.items():
        if r.system == system and r.split.startswith(prefix):
            return note
    if r.split.startswith("leave out"):
        return ("The held-out collective shares only the link efficiency and latency fields with the "
                "others; a remaining error here is the model's structure for that collective (its own "
                "algorithm/protocol mix), which calibrating other collectives cannot fix.")
    return "Interpolation across sizes does not close the gap: the model's shape over size differs from the measurement."


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m simulator.calibration.cross_validation",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="docs", help="output folder (default docs/)")
    args = ap.parse_args(argv)
    by_system, skipped = systems()
    results: list[SplitResult] = []
    for system, ms in sorted(by_system.items()):
        for r in cross_validate(system, ms):
            results.append(r)
            print(f"{r.system:14s} {r.split:32s} rows {r.rows:4d}  before {pct(r.before_large):>6} / {pct(r.before_all):>6}"
                  f"  after {pct(r.after_large):>6} / {pct(r.after_all):>6}  {'ok' if r.meets_target else 'MISS'}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "validation-calibration.md").write_text(render_markdown(results, skipped))
    print(f"wrote {out / 'validation-calibration.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Predict every bundled nccl-tests sweep and report the busbw error.

    python -m simulator.calibration.collective_validation [--out docs/]

writes ``simulator/report/collective_interval_table.py`` (the prediction intervals of
``clustersim collective``, :mod:`simulator.calibration.collective_intervals`),
``<out>/validation-collectives.md`` (median and worst |busbw error| per sweep, for sizes
≥ 1 MiB and for all sizes) and ``<out>/img/collectives-<profile>.png`` (predicted vs measured
busbw over size). Predictions use the bundled profiles as they are: datasheet numbers and their
documented efficiency constants, nothing fitted per sweep. The only per-sweep inputs are what the
CSV header states: the rank layout, a pinned ``NCCL_ALGO``, ``NCCL_NVLS_ENABLE=0`` (no NVLS or
NVLSTree), and ``-g`` (GPUs per process), which
sets the launch floor nccl-tests' pipelined timing cannot go below (``-g G`` × the profile's
``gpu.kernel_launch_us``: one host thread launches every GPU's kernel in turn).

Error = predicted busbw / measured busbw − 1, with the measured busbw recomputed from the
printed time (the printed busbw is rounded to 0.01 GB/s, useless at small sizes).
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from simulator.calibration.deployed_fit import leave_one_system_out, transport_of
from simulator.calibration.sweep_prediction import (  # noqa: F401 - the validation's API, re-exported
    CASES, NOT_MODELLED, Case, Point, SweepResult, case_for, case_profile, pct, predict_sweep, release_sensitivity,
    validate_all,
)
from simulator.units import MiB


# Targets of the leave-one-system-out table (per system, pooled over its sweeps' rows).
TARGET_MEDIAN_BIG, TARGET_SIGNED, TARGET_MEDIAN_ALL = 0.15, 0.10, 0.25


def _pooled(results, min_bytes: int = 0, signed: bool = False) -> tuple[float | None, float | None]:
    e = [p.error if signed else abs(p.error) for r in results for p in r.points if p.size_bytes >= min_bytes]
    if not e:
        return None, None
    return statistics.median(e), max(e, key=abs)


def render_loso(held_out) -> list[str]:
    """The leave-one-system-out tables (``held_out``: deployed_fit.leave_one_system_out())."""
    lines = [
        "## Leave one system out (the headline)",
        "",
        "Each system (one cluster: its sweeps at every size, node count and collective) is predicted "
        "with the deployed-fabric constants (`simulator/costs/deployed.py`: per transport, an extra "
        "latency per network crossing (a tree's inter-node hops; the crossings of a ring's chain, "
        "`nccl_tuner.ring_net_crossings`), what one channel of LL carries across nodes (its lines pass through a "
        "host-memory buffer that the channel's CTA fills and the proxy scans, `net_ll_channel_GBps`) and the achievable "
        "fraction of LL128 across nodes, per algorithm: ring, tree; "
        "and, where the transport's message protocol runs in host software (EFA's SENDRECV path on p4d/p4de, "
        "GPUDirect-TCPXO; Slingshot with the CXI provider's alt_read rendezvous, `node.nics.rdzv_proto`: Polaris, "
        "Sirius), a cost per network message of NCCL's Simple chunks, LL step slots and p2p chunks, "
        "`simulator/costs/net_messages.py`, one value per message class (host stacks; CXI) fitted on the class's "
        "other system, every host-message system at half weight; on Slingshot the extra per crossing is the CXI "
        "provider's rendezvous, paid only by calls whose messages exceed its 4,097-byte eager limit, and a Ring/LL "
        "step costs one message per channel NCCL launches, the LL bytes overlapping that chain, "
        "`collectives.messages_overlap`; and, for NCCL's All-to-Alls across nodes on every other transport, what "
        "the proxy adds in order for each remote peer after the first, the rounds to a node's peers running as "
        "one batch and the batches side by side, `simulator/costs/nccl_p2p.py`, one value for every transport) "
        "fitted on the *other* systems only (`python -m simulator.calibration.deployed_fit`); a "
        "transport with no other system gets the fit pooled over all others. Everything else is the "
        "bundled profile as shipped, with the tuner tables of the NCCL release each sweep's header names "
        "(the run's own, as the fit uses; the last section compares the newest). Single-node systems do not depend on those constants, so their "
        "rows equal the in-sample ones. Errors pooled over the system's rows; targets: median ≤ "
        f"{TARGET_MEDIAN_BIG:.0%} at ≥ 1 MiB, |signed median| ≤ {TARGET_SIGNED:.0%}, median ≤ "
        f"{TARGET_MEDIAN_ALL:.0%} over all sizes (✗ marks a target not met yet).",
        "",
        "| system | transport fitted without it | sweeps | median ≥1 MiB | worst ≥1 MiB | signed median ≥1 MiB | median all | worst all |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for h in sorted(held_out, key=lambda h: h.system):
        transport = transport_of(h.results[0])
        net = h.table.get(transport) or h.table.get("other")
        msg = f", {net.message_us:g} µs/message" if any(p.net_messages for r in h.results for p in r.points) else ""
        if any(p.inject_copies for r in h.results for p in r.points):
            msg += f", {net.inject_copy_us:g} µs/injected copy"
        if any(p.proxied_peers for r in h.results for p in r.points):
            msg += f", {net.peer_us:g} µs/All-to-All peer"
        ll = lambda r: f"{r:g} GB/s" if r > 0 else "NCCL's"  # noqa: E731
        used = (f"{transport}: {net.net_hop_extra_us:g} µs/hop, LL per channel ring/tree {ll(net.ring[0])}/{ll(net.tree[0])}, "
                f"LL128 × ring/tree {net.ring[1]:g}/{net.tree[1]:g}{msg}") \
            if h.results[0].points and h.results[0].points[0].spans_nodes or any(r.points and r.points[0].spans_nodes for r in h.results) else "(single node)"
        mb, wb = _pooled(h.results, MiB)
        sb, _ = _pooled(h.results, MiB, signed=True)
        ma, wa = _pooled(h.results)
        mark = lambda v, t: "" if v is None or abs(v) <= t else " ✗"  # noqa: E731
        lines.append(f"| {h.system} | {used} | {len(h.results)} | {pct(mb)}{mark(mb, TARGET_MEDIAN_BIG)} | {pct(wb)} | "
                     f"{pct(sb)}{mark(sb, TARGET_SIGNED)} | {pct(ma)}{mark(ma, TARGET_MEDIAN_ALL)} | {pct(wa)} |")
    lines += ["", "Per sweep, held out (signed median: + = predicted too fast):", "",
              "| sweep | system | median ≥1 MiB | signed median ≥1 MiB | median all | signed median all |",
              "|---|---|---|---|---|---|"]
    for h in sorted(held_out, key=lambda h: h.system):
        for r in h.results:
            lines.append(f"| {r.sweep.name} | {h.system} | {pct(r.median_error(MiB))} | {pct(_pooled([r], MiB, True)[0])} | "
                         f"{pct(r.median_error())} | {pct(_pooled([r], 0, True)[0])} |")
    return lines + [""]


def _signed(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:+.1f}%"


def render_release_section(pairs) -> list[str]:
    """Each sweep with its own NCCL release's tuner tables (as every table above) and with the
    newest (``pairs``: sweep_prediction.release_sensitivity())."""
    lines = [
        "## With the newest NCCL's tables instead of each sweep's own",
        "",
        "The tables above time every NCCL sweep with the tuner tables of the release its `# software:` line "
        "names (`sweep_prediction.sweep_release`; 2.30.7's where it names none, RCCL's own tuner on AMD GPUs): "
        "the release is an input of the run, like its rank layout, and the deployed constants are fitted the "
        "same way. NCCL's latencies, LL/LL128 rates and switch points moved between releases "
        "(`simulator/costs/nccl_versions.py`, from `src/graph/tuning.cc` of each tag). Here each such sweep is "
        "predicted again with NCCL 2.30.7's tables, as a bundled profile that names no `nccl.version` would, "
        "everything else as in the in-sample table. Listed: the sweeps whose prediction changes. Signed: + = "
        "predicted too fast.",
        "",
        "| sweep | NCCL (tables) | median ≥1 MiB: own → 2.30.7 | signed ≥1 MiB: own → 2.30.7 | median all: own → 2.30.7 | signed all: own → 2.30.7 |",
        "|---|---|---|---|---|---|",
    ]
    for r, newest, used in pairs:
        big = [_pooled([x], MiB, signed=True)[0] for x in (r, newest)]
        every = [_pooled([x], 0, signed=True)[0] for x in (r, newest)]
        lines.append(
            f"| {r.sweep.name} | {r.sweep.nccl_version} ({used}) | {pct(r.median_error(MiB))} → {pct(newest.median_error(MiB))} | "
            f"{_signed(big[0])} → {_signed(big[1])} | {pct(r.median_error())} → {pct(newest.median_error())} | "
            f"{_signed(every[0])} → {_signed(every[1])} |")
    return lines


def render_markdown(results: list[SweepResult], skipped: dict[str, str], held_out=None, releases=None) -> str:
    lines = [
        "# Collective accuracy against measured nccl-tests sweeps",
        "",
        "Generated by `python -m simulator.calibration.collective_validation --out docs/`; rerun it "
        "whenever the model or a profile changes. Data: `data/nccl/` (see its INDEX.md).",
        "",
    ]
    if held_out is not None:
        from simulator.calibration.collective_intervals import render_section

        lines += render_loso(held_out)
        lines += render_section(held_out)
    lines += [
        "## In-sample (every sweep, with the bundled deployed constants fitted on all systems)",
        "",
        "Method: each sweep is predicted with its bundled hardware profile as shipped: datasheet "
        "bandwidths times the profile's documented achievable-efficiency constants "
        "(`node.scale_up.efficiency`, `node.nics.efficiency`, sourced in each profile's comments), "
        "the tuner constants of the NCCL release the sweep's header names (`simulator/costs/nccl_versions.py`; "
        "2.30.7's where it names none) for the algorithm/protocol choice and latency (on AMD GPUs the choice is "
        "RCCL's own tuner, `simulator/costs/rccl_tuner.py`: the tables and multi-node LL/LL128 protocol ranges "
        "of the RCCL release the header names, tuning_model_5 on MI300X/MI325X, from 2.26 tuning_model_6 with LL128 "
        "on MI355X), NCCL's "
        "`nvlsEfficiency` (0.85, Hopper) for in-switch reduction traffic, and across nodes the deployed-fabric "
        "constants of the profile's transport and library (`node.nics.transport`, `roce/rccl` for RCCL over RoCE; "
        "`simulator/costs/deployed.py`, fitted on "
        "all systems here, so this table is in-sample for them; the headline above is not), after what the "
        "transport's plugin and its required environment tell NCCL (`simulator/costs/transports.py`, from their "
        "sources, not fitted: aws-ofi-nccl reports a 75 µs latency on EFA, which moves NCCL's choice, and with fewer EFA devices than "
        "GPUs (p4d/p4de) runs its SENDRECV protocol and sets NCCL_PROTO=simple; GPUDirect-TCPXO "
        "runs Ring/Tree with Simple only; Slingshot's CXI provider with FI_CXI_RDZV_PROTO=alt_read, the headers' "
        "env on Polaris and Sirius, pulls every message with a software-issued Get and a done-notify back, "
        "a host cost per message). Structure follows NCCL/RCCL: "
        "rings on a full mesh (MI300X xGMI, GH200 NVLink) form a Hamiltonian decomposition so every peer "
        "link carries an equal share (RCCL rome_models.cc); the tuner's graph uses one channel per NIC "
        "(AWS p5: 32 EFA), each graph channel of a Simple ring run by NCCL as two CTAs that move at most what "
        "one p2p channel moves (20.6 GB/s on Hopper, so 41.2 GB/s per 400 Gb/s NIC where the graph rates 45: "
        "`nccl_tuner.ring_cta_GBps`), a Simple ring AllReduce on fewer A100s than their NVSwitch node bounded by "
        "its CTAs' memory accesses per busbw byte, (3n-2)/(n-1), at the profile's full-node plateau (P2P read, "
        "`costs/ring_work.py`), a Ring/LL128 call on one such node at the NVLink store rate NCCL's Ampere LL ceiling "
        "states, 2 x llMaxBw x 120/128 = 164 GB/s busbw (LL and LL128 store where Simple reads: "
        "`costs/nvlink_store.py`), the tree graph's bwIntra raised up to 2× bwInter on two nodes (NCCL search.cc "
        "pass 2), NCCL's Tree × 0.85 in the choice when its tree graph is a TREE pattern (one GPU per node, or "
        "Hopper and later with a NIC per GPU; tuning.cc, search.cc), no LL128 across nodes where a GPU reaches its "
        "NIC through the CPU's host bridge (`node.nics.gpu_path`: Polaris; tuning.cc enables it up to PXB), "
        "and NVLS's own NVLink-only graph. Nothing is fitted per "
        "sweep. Per sweep only the header's facts are used: ranks, GPUs per node, a pinned "
        "`NCCL_ALGO`, `NCCL_NVLS_ENABLE=0` (no NVLS or NVLSTree, as NCCL's nvls.cc then leaves nvlsSupport at 0), "
        "and `-g` (GPUs per process) which sets the launch floor (`-g` × "
        "`gpu.kernel_launch_us`) below which nccl-tests' pipelined loop cannot report.",
        "",
        "Error = predicted busbw / measured busbw − 1 (measured busbw recomputed from the printed "
        "time); the table gives the median and worst |error|.",
        "",
        "| sweep | profile | op | ranks (nodes×GPUs) | algo pinned | rows | median ≥1 MiB | worst ≥1 MiB | median all | worst all | predicted algorithms |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        c = r.case
        algos = sorted({f"{p.algorithm}/{p.protocol}" for p in r.points})
        lines.append(
            f"| {r.sweep.name} | {c.profile} | {c.op} | {c.ranks} ({c.ranks // c.gpus_per_node}×{c.gpus_per_node}) | "
            f"{c.algo or '–'} | {len(r.points)} | {pct(r.median_error(MiB))} | {pct(r.worst_error(MiB))} | "
            f"{pct(r.median_error())} | {pct(r.worst_error())} | {', '.join(algos)} |")
    notes = [f"- {r.sweep.name}: {r.case.note}" for r in results if r.case.note]
    if notes:
        lines += ["", "Notes:", ""] + notes
    if skipped:
        lines += ["", "Sweeps not scored:", ""] + [f"- {k}: {v}" for k, v in sorted(skipped.items())]
    if releases:
        lines += [""] + render_release_section(releases)
    lines += ["", "Figures: `img/collectives-<profile>.png` (measured dots, predicted line, busbw over size, log x).", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m simulator.calibration.collective_validation", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="docs", help="output folder (default docs/)")
    ap.add_argument("--no-plots", action="store_true")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results, skipped = validate_all()
    held_out = leave_one_system_out()
    releases = release_sensitivity(results)
    (out / "validation-collectives.md").write_text(render_markdown(results, skipped, held_out, releases))
    from simulator.calibration.collective_intervals import TABLE, render_table

    TABLE.write_text(render_table(held_out))  # the interval table of `clustersim collective`
    if not args.no_plots:
        from simulator.calibration.plots import plot_busbw_by_profile

        plot_busbw_by_profile(results, out / "img")
    for r in results:
        print(f"{r.sweep.name:45s} median>=1MiB {pct(r.median_error(MiB)):>7} worst {pct(r.worst_error(MiB)):>7} "
              f"median all {pct(r.median_error()):>7}")
    for k, v in skipped.items():
        print(f"{k:45s} skipped: {v}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""`clustersim collective`: predicted collective times printed like nccl-tests.

Sizes double (``--step-factor``) from ``--min-bytes`` to ``--max-bytes``; each row gives the
size, element count, type, time, algbw, busbw (nccl-tests factors, NCCL-COST-MODEL.md §6) and
the algorithm/protocol the tuner picked, then an 80% interval of busbw (see
:mod:`simulator.report.intervals`: from the leave-one-system-out errors of comparable measured
systems, or from a calibrated profile's fit residuals). The time includes a launch floor of the profile's
``gpu.kernel_launch_us`` (one process per GPU, as an MPI nccl-tests run).
"""

from __future__ import annotations

import argparse
import json
import math

from simulator import units
from simulator.config.limits import gpus_problem
from simulator.errors import InputError, quote
from simulator.vocabulary import PREDICTED_OPS as OPS
from simulator.vocabulary import normalize_op

MAX_BYTES = 1 << 50


def register(subparsers) -> None:
    p = subparsers.add_parser("collective", help="nccl-tests-like table of predicted collective times",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("--hardware", required=True, help="bundled profile name or path to a profile YAML")
    p.add_argument("--op", required=True,
                   help=f"one of {', '.join(OPS)}, or an NCCL / nccl-tests spelling (all_reduce, all_gather_perf, ...)")
    p.add_argument("--ranks", default=None,
                   help="number of GPUs in the collective (default: -g, one process driving -g GPUs)")
    p.add_argument("--gpus-per-node", default=None,
                   help="GPUs used of each node, its first ones (default: the profile's, capped at --ranks); "
                        "a scenario's gpus_per_node")
    p.add_argument("--nodes-per-nvlink-domain", default=None,
                   help="nodes held of each multi-node NVLink domain (Slurm's --segment on GB200 NVL72; "
                        "default: whole domains); a scenario's nodes_per_nvlink_domain")
    p.add_argument("-b", "--min-bytes", "--minbytes", dest="min_bytes", default="8",
                   help="smallest size (suffixes K, M, G; default 8)")
    p.add_argument("-e", "--max-bytes", "--maxbytes", dest="max_bytes", default="128M",
                   help="largest size (default 128M)")
    p.add_argument("-f", "--step-factor", "--stepfactor", dest="step_factor", default="2",
                   help="multiply the size by this each row (default 2)")
    p.add_argument("-g", "--ngpus", dest="ngpus", default=None,
                   help="GPUs per process, as nccl-tests' -g: one host thread launches that many GPUs' kernels, "
                        "so each collective costs at least that many kernel launches (default 1)")
    p.add_argument("--algo", default=None, help="pin the algorithm: ring, tree, nvls, nvls_tree, hierarchical, direct, p2p")
    p.add_argument("--proto", default=None, help="pin the protocol: ll, ll128, simple")
    p.add_argument("-d", "--dtype", "--datatype", dest="dtype", default="float",
                   help="element type for the count column, a scenario's or nccl-tests' spelling (bf16 or "
                        "bfloat16, int32, ...; default float)")
    p.add_argument("--nccl-version", default=None, metavar="X.Y.Z",
                   help="NCCL release whose tuner tables choose and time the algorithm (default: the profile's "
                        "nccl.version, else the newest clustersim encodes, 2.30.7)")
    p.add_argument("--json", default=None, metavar="FILE", help="also write the rows as JSON ('-' for stdout)")
    p.add_argument("--log", default=None, metavar="FILE",
                   help="also write the rows as an nccl-tests log (the layout `clustersim calibrate` reads; "
                        "'-' for stdout)")
    p.set_defaults(handler=run)


def _positive_int(text: str, flag: str) -> int:
    try:
        value = int(str(text))
    except ValueError:
        raise InputError(f"expected a whole number, got {quote(text)}", field=flag) from None
    if value < 1:
        raise InputError(f"expected a whole number >= 1, got {value}", field=flag)
    return value


def _size(text: str, flag: str) -> int:
    try:
        value = units.parse_size(text)
    except ValueError as exc:
        raise InputError(str(exc), field=flag) from None
    if value <= 0:
        raise InputError(f"expected a positive byte count, got {quote(text)}", field=flag)
    if value > MAX_BYTES:
        raise InputError(f"{value:,} bytes; at most {MAX_BYTES:,} (1 PiB: no GPU holds a buffer near it)", field=flag)
    return value


def sizes(min_bytes: int, max_bytes: int, factor: int) -> list[int]:
    out, s = [], min_bytes
    while s <= max_bytes:
        out.append(s)
        s *= factor
    return out


def _op(text: str) -> str:
    try:
        return normalize_op(text)
    except InputError as exc:
        raise InputError(exc.detail, source="command line", field="--op") from None


def run(args: argparse.Namespace) -> int:
    from simulator.calibration.nccl_log import count_for
    from simulator.commands import check_outputs
    from simulator.config.hardware import apply_overlay, load_profile
    from simulator.config.nccl_overrides import check_version
    from simulator.config.node_subset import domain_segment, domain_segment_problem, first_gpus
    from simulator.costs.model import CostModel
    from simulator.costs.collectives import ALGORITHMS, PROTOCOLS, busbw_factor
    from simulator.files import STDOUT, OutputSet
    from simulator.hardware.topology import build_topology
    from simulator.replay.single_collective import time_collective
    from simulator.report.intervals import (LEVEL, calibration_ranks, calibration_residuals, collective_band,
                                            outside_fitted_scale)

    check_outputs(args, "json", "log")
    op = _op(args.op)
    ngpus = _positive_int(args.ngpus, "-g") if args.ngpus is not None else 1
    if args.ranks is None and args.ngpus is None:
        raise InputError("give the number of GPUs: --ranks N (or nccl-tests' -g N for one process driving N GPUs)",
                         source="command line", field="--ranks")
    ranks = _positive_int(args.ranks, "--ranks") if args.ranks is not None else ngpus
    problem = gpus_problem(ranks)
    if problem:
        raise InputError(problem, source="command line", field="--ranks")
    if ranks % ngpus:
        raise InputError(f"{ranks} ranks are not a whole number of processes of -g {ngpus} GPUs",
                         source="command line", field="-g")
    lo, hi = _size(args.min_bytes, "--min-bytes"), _size(args.max_bytes, "--max-bytes")
    if lo > hi:
        raise InputError(f"--min-bytes {args.min_bytes} is larger than --max-bytes {args.max_bytes}", field="--min-bytes")
    factor = _positive_int(args.step_factor, "--step-factor")
    if factor < 2:
        raise InputError("expected a factor >= 2", field="--step-factor")
    types = element_types()
    esize = types.get(args.dtype.lower())
    if esize is None:
        raise InputError(f"unknown type {args.dtype!r}; expected one of {', '.join(types)}", field="--dtype")
    algo = args.algo.lower() if args.algo else None
    proto = args.proto.lower() if args.proto else None

    if algo is not None and algo not in ALGORITHMS:
        raise InputError(f"unknown algorithm {args.algo!r}; expected one of {', '.join(ALGORITHMS)}", field="--algo")
    if proto is not None and proto not in PROTOCOLS:
        raise InputError(f"unknown protocol {args.proto!r}; expected one of {', '.join(PROTOCOLS)}", field="--proto")

    if args.nccl_version is not None and check_version(args.nccl_version):
        raise InputError(str(check_version(args.nccl_version)), source="command line", field="--nccl-version")
    try:
        profile = load_profile(args.hardware)
    except InputError as exc:
        if exc.source not in (None, "hardware"):  # a profile file's own error names that file
            raise
        raise InputError(exc.detail, source="command line", field="--hardware") from None
    if args.nccl_version is not None:
        profile = apply_overlay(profile, {"nccl": {"version": args.nccl_version}}, source="--nccl-version")
    if algo in ("nvls", "nvls_tree") and not profile.nvls_available:
        raise InputError(f"{algo} needs an NVSwitch with in-switch reduction; {profile.name} has none", field="--algo")
    gpn = _positive_int(args.gpus_per_node, "--gpus-per-node") if args.gpus_per_node else min(profile.node.gpus, ranks)
    if gpn > profile.node.gpus:
        raise InputError(f"{profile.name} has {profile.node.gpus} GPUs per node, got {gpn}", field="--gpus-per-node")
    if ranks % gpn:
        raise InputError(f"{ranks} ranks do not fill whole nodes of {gpn} GPUs (ranks must be a multiple of --gpus-per-node)",
                         field="--ranks")
    nodes = ranks // gpn
    # the first gpn GPUs of every node, as a scenario's gpus_per_node: their links and NICs only
    used = first_gpus(profile, gpn)
    segment = None
    if args.nodes_per_nvlink_domain:  # K nodes of each NVLink domain, as a scenario's nodes_per_nvlink_domain
        segment = _positive_int(args.nodes_per_nvlink_domain, "--nodes-per-nvlink-domain")
        problem = domain_segment_problem(used, segment, nodes, key="--nodes-per-nvlink-domain",
                                         job=f"{ranks} ranks = {nodes} nodes of {gpn} GPUs")
        if problem:
            raise InputError(problem, field="--nodes-per-nvlink-domain")
        used = domain_segment(used, segment)
    costs = CostModel(build_topology(used, nodes), algo, proto)
    gpus = list(range(ranks))
    floor_s = ngpus * profile.gpu.kernel_launch_us * 1e-6
    residuals = calibration_residuals(profile)
    fitted_ranks = calibration_ranks(profile)

    rows = []
    for size in sizes(lo, hi, factor):
        try:
            r = time_collective(op, gpus, size, costs, launch_floor_s=floor_s)
        except InputError as exc:
            if exc.field in ("algo", "proto"):
                raise InputError(exc.detail, field=f"--{exc.field}") from None
            raise
        if not math.isfinite(r.time_s * 1e6) or r.time_s <= 0:
            raise InputError(f"the {op} of {size:,} bytes takes {r.time_s} s on {profile.name}: a bandwidth or "
                             "efficiency of the profile is so small that the time overflows; nothing is written",
                             field="--hardware")
        band, basis = collective_band(profile.domains(nodes) > 1, size, residuals, op, ranks, fitted_ranks)
        t_lo, t_hi = band.around(r.time_s * 1e6)
        rows.append({"size_bytes": size, "count": count_for(op, size, esize, ranks), "type": args.dtype, "time_us": r.time_s * 1e6,
                     "algbw_GBps": r.algbw / 1e9, "busbw_GBps": r.busbw / 1e9,
                     "algorithm": r.algorithm, "protocol": r.protocol,
                     "time_interval_us": [t_lo, t_hi],
                     "busbw_interval_GBps": [r.busbw / 1e9 * math.exp(-band.hi), r.busbw / 1e9 * math.exp(-band.lo)],
                     "interval_basis": basis})

    inputs = _inputs(args, profile, op, ranks, gpn, ngpus, lo, hi, factor, algo, proto)
    if segment is not None:
        inputs["nodes_per_nvlink_domain"] = segment
    if STDOUT not in (args.json, args.log):
        print(f"# clustersim collective: {op} on {ranks} ranks ({nodes} node(s) x {gpn} GPUs) of {profile.name}; "
              f"busbw factor {busbw_factor(op, ranks):.4g}")
        print(f"# {_inputs_text(inputs)}")
        fitted = sum(row["interval_basis"].startswith("residuals of the calibration fit") for row in rows)
        wider = sum(row["interval_basis"].startswith("wider of") for row in rows)
        loso = "the leave-one-system-out errors of comparable measured systems (docs/validation-collectives.md)"
        beyond = outside_fitted_scale(profile.domains(nodes) > 1, ranks, fitted_ranks)
        print(f"# {LEVEL:.0%} interval of busbw: "
              + ("the residuals of this profile's calibration fit" if fitted == len(rows) else
                 f"the residuals of this profile's calibration fit for the {fitted} size(s) of a collective, scope and "
                 f"size band it measured; {loso} for the others" if fitted else
                 f"the wider of this profile's calibration residuals and {loso}, as {beyond}: the residuals describe "
                 "the fit at the scales it measured (docs/validation-calibration.md)"
                 + (f"; {loso} alone for the {len(rows) - wider} size(s) of a size band it did not measure"
                    if wider < len(rows) else "") if wider else
                 (f"{loso} (the calibration fit measured no {op} of this scope and size band)" if residuals else loso)))
        print(f"#{'size':>12} {'count':>12} {'type':>6} {'time(us)':>10} {'algbw(GB/s)':>12} {'busbw(GB/s)':>12}  "
              f"{'algorithm/protocol':<18}  busbw {LEVEL:.0%}(GB/s)")
        for row in rows:
            lo_bw, hi_bw = row["busbw_interval_GBps"]
            print(f" {row['size_bytes']:>12} {row['count']:>12} {row['type']:>6} {row['time_us']:>10.2f} "
                  f"{row['algbw_GBps']:>12.2f} {row['busbw_GBps']:>12.2f}  {row['algorithm'] + '/' + row['protocol']:<18}  "
                  f"{lo_bw:.3g}-{hi_bw:.3g}")
    with OutputSet() as out:
        if args.json:
            doc = {"inputs": inputs, "op": op, "ranks": ranks, "gpus_per_node": gpn, "hardware": profile.name,
                   "interval_level": LEVEL,
                   "rows": [{k: v for k, v in row.items() if k not in ("count", "type")} | {"count": row["count"]}
                            for row in rows]}
            out.add(args.json, json.dumps(doc, indent=2) + "\n", "--json")
        if args.log:
            out.add(args.log, _nccl_tests_log(rows, op, ranks, gpn, ngpus, esize, profile, lo, hi, factor, inputs), "--log")
    return 0


def _inputs(args, profile, op, ranks, gpn, ngpus, lo, hi, factor, algo, proto) -> dict:
    from simulator.costs.nccl_versions import resolve
    from simulator.report.inputs import hardware_inputs, version

    return {"nccl_version": profile.nccl_version, "nccl_tables": resolve(profile.nccl_version),"hardware": hardware_inputs(args.hardware, profile.name), "op": op, "ranks": ranks, "gpus_per_node": gpn,
            "gpus_per_process": ngpus, "min_bytes": lo, "max_bytes": hi, "step_factor": factor, "dtype": args.dtype,
            "algo": algo, "proto": proto, "clustersim": version()}


def _inputs_text(inputs: dict) -> str:
    hw = inputs["hardware"]
    where = f" from {hw['path']} (sha256 {hw['sha256'][:12]})" if hw.get("path") and hw.get("sha256") else ""
    pins = "".join(f" {k} {inputs[k]}" for k in ("algo", "proto") if inputs[k])
    return (f"inputs: hardware {hw['profile']}{where}; -b {inputs['min_bytes']} -e {inputs['max_bytes']} "
            f"-f {inputs['step_factor']} -g {inputs['gpus_per_process']} -d {inputs['dtype']}{pins}; "
            f"NCCL {inputs['nccl_version'] or inputs['nccl_tables']} tuner tables"
            + (f" (those of {inputs['nccl_tables']})" if inputs['nccl_version'] not in (None, inputs['nccl_tables']) else "")
            + "; "
            f"clustersim {inputs['clustersim']}")


def element_types() -> dict[str, int]:
    """Bytes per element of every type name ``-d`` takes: the scenario spellings (bf16, fp16,
    fp32, fp8) and nccl-tests' own (bfloat16, int32, uint64, f8e4m3, ...), so that a sweep's
    command line can be given as it was run."""
    from simulator.calibration.nccl_log import ELEMENT_BYTES

    return {**units.BYTES_PER_ELEMENT, **ELEMENT_BYTES}


def _nccl_tests_log(rows, op, ranks, gpn, ngpus, esize, profile, lo, hi, factor, inputs) -> str:
    """The predicted rows as nccl-tests would print them (out-of-place and in-place alike: the
    model does not tell them apart, but on one rank, where in place there is nothing to copy and
    the launch alone is timed), so that ``calibrate`` and other nccl-tests readers take the
    prediction as they take a measurement."""
    from simulator.calibration.nccl_log import ELEMENT_BYTES, Sweep
    from simulator.calibration.nccl_log_writer import TOOL_NAMES, format_log, make_row, synthetic_devices

    given = rows[0]["type"].lower() if rows else "float"
    given = {"bf16": "bfloat16", "fp16": "half", "fp32": "float", "fp8": "f8e4m3"}.get(given, given)
    dtype = given if given in ELEMENT_BYTES else next(
        (name for name, size in ELEMENT_BYTES.items() if size == esize and name in ("int8", "half", "float", "double")),
        "float")
    sweep_rows = []
    for row in rows:
        for inplace in (False, True):
            t_us = ngpus * profile.gpu.kernel_launch_us if inplace and ranks == 1 else row["time_us"]
            sweep_rows.append(make_row(op, row["size_bytes"], dtype, t_us * 1e-6, ranks, inplace=inplace))
    sweep = Sweep(op=op, nranks=ranks, ngpus=ngpus, devices=synthetic_devices(ranks, gpn, profile.gpu.name,
                                                                               ranks_per_process=ngpus),
                  rows=tuple(sweep_rows), nccl_version=profile.nccl_version, source="clustersim collective", first_line=1,
                  tool=TOOL_NAMES[op], min_bytes=lo, max_bytes=hi, step=f"{factor}(factor)")
    comment = [f"predicted by clustersim collective, not measured: {op} on {ranks} ranks of {profile.name}",
               _inputs_text(inputs)]
    return format_log([sweep], comment=comment)

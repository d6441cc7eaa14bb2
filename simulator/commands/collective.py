"""`clustersim collective`: predicted collective times printed like nccl-tests.

Sizes double (``--step-factor``) from ``--min-bytes`` to ``--max-bytes``; each row gives the
size, element count, type, time, algbw, busbw (nccl-tests factors, NCCL-COST-MODEL.md §6) and
the algorithm/protocol the tuner picked. The time includes a launch floor of the profile's
``gpu.kernel_launch_us`` (one process per GPU, as an MPI nccl-tests run).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from simulator import units
from simulator.errors import InputError

OPS = ("allgather", "reducescatter", "allreduce", "alltoall", "broadcast", "sendrecv")


def register(subparsers) -> None:
    p = subparsers.add_parser("collective", help="nccl-tests-like table of predicted collective times",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("--hardware", required=True, help="bundled profile name or path to a profile YAML")
    p.add_argument("--op", required=True, help=f"one of {', '.join(OPS)}")
    p.add_argument("--ranks", required=True, help="number of GPUs in the collective")
    p.add_argument("--gpus-per-node", default=None, help="GPUs per node used (default: the profile's, capped at --ranks)")
    p.add_argument("--min-bytes", default="8", help="smallest size (suffixes K, M, G; default 8)")
    p.add_argument("--max-bytes", default="128M", help="largest size (default 128M)")
    p.add_argument("--step-factor", default="2", help="multiply the size by this each row (default 2)")
    p.add_argument("--algo", default=None, help="pin the algorithm: ring, tree, nvls, nvls_tree, hierarchical, direct, p2p")
    p.add_argument("--proto", default=None, help="pin the protocol: ll, ll128, simple")
    p.add_argument("--dtype", default="float", help="element type for the count column (default float)")
    p.add_argument("--json", default=None, metavar="FILE", help="also write the rows as JSON")
    p.set_defaults(handler=run)


def _positive_int(text: str, flag: str) -> int:
    try:
        value = int(str(text))
    except ValueError:
        raise InputError(f"expected a whole number, got {text!r}", field=flag) from None
    if value < 1:
        raise InputError(f"expected a whole number >= 1, got {value}", field=flag)
    return value


def _size(text: str, flag: str) -> int:
    try:
        value = units.parse_size(text)
    except ValueError as exc:
        raise InputError(str(exc), field=flag) from None
    if value <= 0:
        raise InputError(f"expected a positive byte count, got {text!r}", field=flag)
    return value


def sizes(min_bytes: int, max_bytes: int, factor: int) -> list[int]:
    out, s = [], min_bytes
    while s <= max_bytes:
        out.append(s)
        s *= factor
    return out


def run(args: argparse.Namespace) -> int:
    from simulator.calibration.nccl_log import count_for
    from simulator.config.hardware import load_profile
    from simulator.costs.collectives import busbw_factor, normalize_op
    from simulator.hardware.topology import build_topology
    from simulator.replay.single_collective import time_collective

    op = normalize_op(args.op) if args.op.lower() in OPS else None
    if op is None:
        raise InputError(f"unknown collective {args.op!r}; expected one of {', '.join(OPS)}", field="--op")
    ranks = _positive_int(args.ranks, "--ranks")
    lo, hi = _size(args.min_bytes, "--min-bytes"), _size(args.max_bytes, "--max-bytes")
    if lo > hi:
        raise InputError(f"--min-bytes {args.min_bytes} is larger than --max-bytes {args.max_bytes}", field="--min-bytes")
    factor = _positive_int(args.step_factor, "--step-factor")
    if factor < 2:
        raise InputError("expected a factor >= 2", field="--step-factor")
    esize = units.BYTES_PER_ELEMENT.get(args.dtype.lower())
    if esize is None:
        raise InputError(f"unknown type {args.dtype!r}; expected one of {', '.join(units.BYTES_PER_ELEMENT)}", field="--dtype")
    algo = args.algo.lower() if args.algo else None
    proto = args.proto.lower() if args.proto else None
    from simulator.costs.collectives import ALGORITHMS, PROTOCOLS

    if algo is not None and algo not in ALGORITHMS:
        raise InputError(f"unknown algorithm {args.algo!r}; expected one of {', '.join(ALGORITHMS)}", field="--algo")
    if proto is not None and proto not in PROTOCOLS:
        raise InputError(f"unknown protocol {args.proto!r}; expected one of {', '.join(PROTOCOLS)}", field="--proto")

    profile = load_profile(args.hardware)
    if algo in ("nvls", "nvls_tree") and not (profile.node.scale_up.nvls and profile.gpu.arch in ("hopper", "blackwell")):
        raise InputError(f"{algo} needs an NVSwitch with in-switch reduction; {profile.name} has none", field="--algo")
    gpn = _positive_int(args.gpus_per_node, "--gpus-per-node") if args.gpus_per_node else min(profile.node.gpus, ranks)
    if gpn > profile.node.gpus:
        raise InputError(f"{profile.name} has {profile.node.gpus} GPUs per node, got {gpn}", field="--gpus-per-node")
    if ranks % gpn:
        raise InputError(f"{ranks} ranks do not fill whole nodes of {gpn} GPUs (ranks must be a multiple of --gpus-per-node)",
                         field="--ranks")
    nodes = ranks // gpn
    topo = build_topology(profile, nodes)
    gpus = [node * profile.node.gpus + local for node in range(nodes) for local in range(gpn)]
    floor_s = profile.gpu.kernel_launch_us * 1e-6

    rows = []
    for size in sizes(lo, hi, factor):
        try:
            r = time_collective(op, gpus, size, topo, algo, proto, launch_floor_s=floor_s)
        except InputError as exc:
            if exc.field in ("algo", "proto"):
                raise InputError(exc.detail, field=f"--{exc.field}") from None
            raise
        rows.append({"size_bytes": size, "count": count_for(op, size, esize, ranks), "type": args.dtype, "time_us": r.time_s * 1e6,
                     "algbw_GBps": r.algbw / 1e9, "busbw_GBps": r.busbw / 1e9,
                     "algorithm": r.algorithm, "protocol": r.protocol})

    print(f"# clustersim collective: {op} on {ranks} ranks ({nodes} node(s) x {gpn} GPUs) of {profile.name}; "
          f"busbw factor {busbw_factor(op, ranks):.4g}")
    print(f"#{'size':>12} {'count':>12} {'type':>6} {'time(us)':>10} {'algbw(GB/s)':>12} {'busbw(GB/s)':>12}  algorithm/protocol")
    for row in rows:
        print(f" {row['size_bytes']:>12} {row['count']:>12} {row['type']:>6} {row['time_us']:>10.2f} "
              f"{row['algbw_GBps']:>12.2f} {row['busbw_GBps']:>12.2f}  {row['algorithm']}/{row['protocol']}")
    if args.json:
        doc = {"op": op, "ranks": ranks, "gpus_per_node": gpn, "hardware": profile.name,
               "rows": [{k: v for k, v in row.items() if k not in ("count", "type")} | {"count": row["count"]} for row in rows]}
        try:
            Path(args.json).write_text(json.dumps(doc, indent=2) + "\n")
        except OSError as exc:
            raise InputError(f"cannot write: {exc.strerror}", source=args.json, field="--json") from None
    return 0

"""Measurement harness: time collectives on real process groups and write nccl-tests-format
output that :mod:`simulator.calibration.nccl_log` (and so ``clustersim calibrate``) reads.

Launch it the way a training job is launched, one process per GPU::

    torchrun --nproc_per_node 8 -m simulator.measure --op allgather --min-bytes 1M --max-bytes 1G -o ag.txt
    torchrun --nnodes 2 --nproc_per_node 8 ... -m simulator.measure --scenario scenarios/x.yaml -o x.txt

Backend ``nccl`` on GPUs, ``gloo`` on CPUs (what CI runs). The timing follows nccl-tests
(``src/common.cu`` BenchTime): warm-up, then ``iters`` back-to-back launches timed on the host
and divided by ``iters``, averaged over ranks; algbw = size/time, busbw = algbw x the nccl-tests
factor. torch is optional (``pip install clustersim[measure]``) and imported only by the two
measurement harnesses (here and :mod:`simulator.measure_kernels`), lazily.

torch has no out-of-place AllReduce/Broadcast/Reduce and no in-place AllToAll/SendRecv: those
halves print N/A rather than a number that was not measured (``Sweep.measured()`` picks one).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import platform
import socket
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from simulator import units
from simulator.calibration.nccl_log import ELEMENT_BYTES, Device, Sweep, SweepRow, canonical_op, count_for
from simulator.calibration.nccl_log_writer import make_row, write_nccl_log
from simulator.errors import InputError, exit_code, quote

MEASURABLE = ("allreduce", "allgather", "reducescatter", "alltoall", "sendrecv", "broadcast", "reduce")
# simulator dtype / nccl-tests type name -> torch dtype attribute
_TORCH_DTYPES = {"float": "float32", "half": "float16", "bfloat16": "bfloat16", "double": "float64",
                 "int32": "int32", "int64": "int64", "int8": "int8", "uint8": "uint8"}
_DTYPE_ALIASES = {"bf16": "bfloat16", "fp16": "half", "fp32": "float", "float32": "float", "fp8": "bfloat16"}


def _torch() -> Any:
    try:
        import torch  # noqa: PLC0415
        import torch.distributed  # noqa: F401, PLC0415
    except ImportError:
        raise InputError("the measurement harness needs PyTorch: pip install 'clustersim[measure]' "
                         "(or pip install torch)", source="clustersim measure") from None
    return torch


@dataclass(frozen=True)
class Job:
    """One collective to time at several sizes on groups formed along some axes."""

    op: str
    sizes: tuple[int, ...]
    dtype: str = "float"
    groups: tuple[tuple[int, ...], ...] = ()  # partition of the world; () = one world group
    label: str = ""


@dataclass(frozen=True)
class Settings:
    warmup_iters: int = 5
    iters: int = 20
    backend: str | None = None  # default: nccl if CUDA is available, else gloo


def sweep_sizes(min_bytes: int, max_bytes: int, step_factor: int = 2, step_bytes: int | None = None) -> tuple[int, ...]:
    """Sizes as nccl-tests steps them (-b/-e/-f, or -i for a linear step)."""
    if min_bytes <= 0 or max_bytes < min_bytes:
        raise InputError(f"expected 0 < min-bytes <= max-bytes, got {min_bytes} and {max_bytes}",
                         field="--min-bytes/--max-bytes")
    sizes, s = [], min_bytes
    while s <= max_bytes:
        sizes.append(s)
        s = s + step_bytes if step_bytes else s * step_factor
        if step_factor <= 1 and not step_bytes:
            break
    return tuple(sizes)


def normalize_dtype(name: str) -> str:
    d = _DTYPE_ALIASES.get(name, name)
    if d not in _TORCH_DTYPES:
        raise InputError(f"unsupported dtype {name!r}; expected one of {', '.join(sorted(_TORCH_DTYPES))}",
                         field="--dtype")
    return d


def scenario_jobs(path: str | Path, world_size: int, *, max_bytes: int | None = None) -> list[Job]:
    """The distinct (collective, process-group axes, size) of one training step of a scenario,
    with the groups its parallel plan forms (rank placement from the plan's axis order)."""
    from simulator.config.scenario import load_scenario  # noqa: PLC0415

    from simulator.schedule.build import build_schedule  # noqa: PLC0415
    from simulator.schedule.ir import CommOp  # noqa: PLC0415

    scenario = load_scenario(path)
    schedule = build_schedule(scenario)
    grid = schedule.grid
    n = grid.n_ranks
    if n != world_size:
        raise InputError(f"the scenario runs on {n} GPUs but this job has {world_size} processes; "
                         "launch torchrun with one process per GPU of the scenario", source=str(path))
    wanted: dict[tuple[str, tuple[str, ...], str], set[int]] = {}
    for program in schedule.programs.values():
        for op in program:
            if isinstance(op, CommOp) and op.op in MEASURABLE:
                size = min(op.size_bytes, max_bytes) if max_bytes else op.size_bytes
                wanted.setdefault((op.op, tuple(op.axes), op.dtype), set()).add(int(size))
    jobs = []
    for (kind, axes, dtype), sizes in sorted(wanted.items()):
        groups = tuple(sorted({tuple(grid.group(r, axes)) for r in range(world_size)}))
        jobs.append(Job(op=kind, sizes=tuple(sorted(sizes)), dtype=normalize_dtype(dtype), groups=groups,
                        label="+".join(axes)))
    return jobs


@dataclass
class _Env:
    torch: Any
    dist: Any
    rank: int
    world: int
    device: Any
    backend: str
    sync: Callable[[], None]
    devices: list[Device] = field(default_factory=list)


def _init(settings: Settings) -> _Env:
    torch = _torch()
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"torch\.distributed")
    dist = torch.distributed
    if not dist.is_initialized():
        if "RANK" not in os.environ:  # a plain `python -m simulator.measure`: a world of one
            os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", MASTER_ADDR="127.0.0.1")
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                os.environ.setdefault("MASTER_PORT", str(s.getsockname()[1]))
        backend = settings.backend or ("nccl" if torch.cuda.is_available() else "gloo")
        if backend == "nccl":
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        dist.init_process_group(backend=backend)
    backend = dist.get_backend()
    rank, world = dist.get_rank(), dist.get_world_size()
    if backend == "nccl":
        device = torch.device("cuda", torch.cuda.current_device())
        sync = torch.cuda.synchronize
    else:
        device = torch.device("cpu")
        sync = lambda: None  # noqa: E731 - gloo calls block until done
    env = _Env(torch, dist, rank, world, device, backend, sync)
    env.devices = _gather_devices(env)
    return env


def _gather_devices(env: _Env) -> list[Device]:
    torch = env.torch
    if env.device.type == "cuda":
        props = torch.cuda.get_device_properties(env.device)
        name = props.name
        bus = f"0x{int(getattr(props, 'pci_bus_id', 0)):02x}"
        index = env.device.index or 0
    else:
        name = f"CPU {platform.machine()} (gloo)"
        bus = "0x00"
        index = int(os.environ.get("LOCAL_RANK", env.rank))
    mine = (env.rank, os.getpid(), socket.gethostname(), index, bus, name)
    everyone: list[Any] = [None] * env.world
    env.dist.all_gather_object(everyone, mine)
    return [Device(rank=r, group=0, pid=p, host=h, device=d, bus_id=b, name=nm) for r, p, h, d, b, nm in everyone]


def _collective(env: _Env, op: str, group: Any, members: tuple[int, ...], count: int, dtype: Any,
                inplace: bool) -> Callable[[], None] | None:
    """A closure that runs the collective once on preallocated buffers; None if torch has no
    such variant (then that half is not measured)."""
    torch, dist = env.torch, env.dist
    n = len(members)
    me = members.index(env.rank)
    kw = {"device": env.device, "dtype": dtype}
    if op == "allreduce":
        buf = torch.ones(count, **kw)
        return (lambda: dist.all_reduce(buf, group=group)) if inplace else None
    if op == "broadcast":
        buf = torch.ones(count, **kw)
        return (lambda: dist.broadcast(buf, src=members[0], group=group)) if inplace else None
    if op == "reduce":
        buf = torch.ones(count, **kw)
        return (lambda: dist.reduce(buf, dst=members[0], group=group)) if inplace else None
    if op == "allgather":
        out = torch.empty(count * n, **kw)
        inp = out.narrow(0, me * count, count) if inplace else torch.ones(count, **kw)
        return lambda: dist.all_gather_into_tensor(out, inp, group=group)
    if op == "reducescatter":
        inp = torch.ones(count * n, **kw)
        out = inp.narrow(0, me * count, count) if inplace else torch.empty(count, **kw)
        return lambda: dist.reduce_scatter_tensor(out, inp, group=group)
    if op == "alltoall":
        if inplace:
            return None
        inp, out = torch.ones(count * n, **kw), torch.empty(count * n, **kw)
        return lambda: dist.all_to_all_single(out, inp, group=group)
    if op == "sendrecv":  # nccl-tests sendrecv_perf: send to rank+1, receive from rank-1
        if inplace:
            return None
        inp, out = torch.ones(count, **kw), torch.empty(count, **kw)
        nxt, prv = members[(me + 1) % n], members[(me - 1) % n]

        def run() -> None:
            reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, inp, nxt, group),
                                           dist.P2POp(dist.irecv, out, prv, group)])
            for r in reqs:
                r.wait()
        return run
    raise InputError(f"cannot measure {op!r}; expected one of {', '.join(MEASURABLE)}", field="--op")


def _time(env: _Env, fn: Callable[[], None], settings: Settings) -> float:
    """Seconds per call, averaged over every rank (nccl-tests -a 1)."""
    torch, dist = env.torch, env.dist
    for _ in range(settings.warmup_iters):
        fn()
    env.sync()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(settings.iters):
        fn()
    env.sync()
    per_call = (time.perf_counter() - start) / settings.iters
    t = torch.tensor([per_call], dtype=torch.float64, device=env.device)
    dist.all_reduce(t)
    return float(t.item()) / env.world


def measure(jobs: Sequence[Job], settings: Settings = Settings()) -> list[Sweep]:
    """Run every job on every rank (call it on all ranks); every rank returns the same sweeps."""
    env = _init(settings)
    torch, dist = env.torch, env.dist
    sweeps = []
    for job in jobs:
        op = canonical_op(job.op)
        if op not in MEASURABLE:
            raise InputError(f"cannot measure {job.op!r}; expected one of {', '.join(MEASURABLE)}", field="--op")
        groups = job.groups or (tuple(range(env.world)),)
        if sorted(r for g in groups for r in g) != list(range(env.world)):
            raise InputError("process groups must partition the ranks", field="groups")
        handles = [dist.new_group(list(g)) if len(groups) > 1 else None for g in groups]
        mine = next(i for i, g in enumerate(groups) if env.rank in g)
        members, group = groups[mine], handles[mine]
        n = len(members)
        dtype = getattr(torch, _TORCH_DTYPES[job.dtype])
        elem = ELEMENT_BYTES[job.dtype]
        rows: list[SweepRow] = []
        for size in job.sizes:
            count = count_for(op, size, elem, n)
            if count == 0:
                continue
            total = size if op in ("allreduce", "broadcast", "reduce", "sendrecv") else count * elem * n
            for inplace in (False, True):
                fn = _collective(env, op, group, members, count, dtype, inplace)
                if fn is None:
                    continue
                t = _time(env, fn, settings)
                # results are not checked element by element: #wrong prints N/A, as with nccl-tests -c 0
                rows.append(make_row(op, total, job.dtype, t, n, inplace=inplace, wrong=None))
        version = None
        if env.backend == "nccl":
            v = torch.cuda.nccl.version()
            version = ".".join(str(x) for x in v[:3]) if isinstance(v, tuple) else None
        sweeps.append(Sweep(
            op=op, nranks=n, ngpus=1, devices=tuple(env.devices[r] for r in groups[0]), rows=tuple(rows),
            nccl_version=version, source="clustersim measure", first_line=0,
            warmup_iters=settings.warmup_iters, iters=settings.iters,
            min_bytes=min(job.sizes), max_bytes=max(job.sizes)))
    return sweeps


def _comment(env_backend: str, world: int, jobs: Sequence[Job]) -> list[str]:
    torch = _torch()
    when = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    lines = [f"# clustersim measure {when}: torch {torch.__version__}, backend {env_backend}, {world} ranks"]
    for j in jobs:
        if j.groups and len(j.groups) > 1:
            lines.append(f"# {j.op} on {len(j.groups)} groups of {len(j.groups[0])} ({j.label}); "
                         "device lines list the first group")
    return lines


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    p = parser or argparse.ArgumentParser(prog="python -m simulator.measure", description=__doc__.splitlines()[0])
    what = p.add_mutually_exclusive_group()
    what.add_argument("--op", action="append", help=f"collective to sweep (repeatable): {', '.join(MEASURABLE)}")
    what.add_argument("--scenario", help="time the collectives and sizes one step of this scenario uses")
    p.add_argument("--min-bytes", "-b", default=None, help="smallest size (nccl-tests -b), e.g. 8, 1K, 32M; default 1K")
    p.add_argument("--max-bytes", "-e", default=None,
                   help="largest size (nccl-tests -e; default 1M); with --scenario, a cap on its sizes")
    p.add_argument("--step-factor", "-f", type=int, default=2, help="size multiplier (nccl-tests -f)")
    p.add_argument("--dtype", "-d", default="float", help="element type (nccl-tests -d), e.g. float, bfloat16")
    p.add_argument("--iters", "-n", type=int, default=20)
    p.add_argument("--warmup-iters", "-w", type=int, default=5)
    p.add_argument("--backend", choices=("nccl", "gloo"), default=None)
    p.add_argument("--profile", metavar="TRACE.json", help="also record a PyTorch profiler trace (rank 0)")
    p.add_argument("-o", "--output", help="write the nccl-tests-format log here (rank 0); default (or '-'): stdout")
    return p


def jobs_from_args(args: argparse.Namespace, world_size: int) -> list[Job]:
    try:
        lo = units.parse_size(args.min_bytes or "1K")
        hi = units.parse_size(args.max_bytes or "1M")
    except ValueError as exc:
        raise InputError(str(exc), field="--min-bytes/--max-bytes") from None
    if args.scenario:
        return scenario_jobs(args.scenario, world_size, max_bytes=hi if args.max_bytes else None)
    if args.iters < 1 or args.warmup_iters < 0:
        raise InputError("expected --iters >= 1 and --warmup-iters >= 0", field="--iters")
    sizes = sweep_sizes(lo, hi, args.step_factor)
    dtype = normalize_dtype(args.dtype)
    ops = args.op or ["allreduce"]
    jobs = []
    for name in ops:
        op = canonical_op(name)
        if op not in MEASURABLE:
            raise InputError(f"cannot measure {name!r}; expected one of {', '.join(MEASURABLE)}", field="--op")
        jobs.append(Job(op=op, sizes=sizes, dtype=dtype))
    return jobs


def run(args: argparse.Namespace) -> int:
    """Entry point shared by ``python -m simulator.measure`` and ``clustersim measure``."""
    settings = Settings(warmup_iters=args.warmup_iters, iters=args.iters, backend=args.backend)
    # Check everything the user gave before torch is imported or any process group exists: a
    # bad option is reported as itself, even on a machine without torch.
    world = os.environ.get("WORLD_SIZE", "1")
    if not world.isdigit() or int(world) < 1:
        raise InputError(f"expected a whole number >= 1 (set by torchrun), got {quote(world)}", field="WORLD_SIZE")
    jobs = jobs_from_args(args, int(world))
    from simulator.files import check_output_path  # noqa: PLC0415

    check_output_path(args.output, "-o")
    _torch()
    env = _init(settings)
    if args.profile:
        from torch.profiler import ProfilerActivity, profile  # noqa: PLC0415

        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if env.device.type == "cuda" else [])
        with profile(activities=activities, record_shapes=True) as prof:
            sweeps = measure(jobs, settings)
        if env.rank == 0:
            Path(args.profile).parent.mkdir(parents=True, exist_ok=True)
            prof.export_chrome_trace(str(args.profile))
    else:
        sweeps = measure(jobs, settings)
    if env.rank == 0:
        comment = _comment(env.backend, env.world, jobs)
        if args.output and args.output != "-":
            write_nccl_log(args.output, sweeps, comment=comment)
        else:
            from simulator.calibration.nccl_log_writer import format_log  # noqa: PLC0415

            sys.stdout.write(format_log(sweeps, comment=comment))
    env.dist.barrier()
    env.dist.destroy_process_group()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return exit_code("clustersim measure", lambda: run(args))


if __name__ == "__main__":
    raise SystemExit(main())

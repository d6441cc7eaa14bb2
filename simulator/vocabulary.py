"""The names of collectives and NCCL algorithms, and every spelling of them clustersim reads.

One table, read by the schedule IR, the cost model, the nccl-tests and profiler-trace parsers,
the commands and the report, so that a new spelling (or a new collective) is added once.

Op names are lower case without separators (``allreduce``), as the schedule IR spells them.
Spellings come from nccl-tests tool stems (``all_reduce_perf``), NCCL's API (``ncclAllReduce``),
PyTorch's ``torch.distributed`` (``all_to_all``) and loose forms (``all-reduce``, ``AllReduce``,
``a2a``). Algorithm names follow NCCL's ``NCCL_ALGO`` values in lower case with ``nvls_tree``
for NVLSTree (src/enqueue.cc, ``ncclAlgoStr``).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Literal

from simulator.errors import InputError

# The collectives a schedule issues (schedule.ir.CommOp.op).
CollectiveKind = Literal["allgather", "reducescatter", "allreduce", "alltoall", "broadcast"]

# The collectives the cost model predicts: the IR's plus point-to-point send/recv.
PREDICTED_OPS: tuple[str, ...] = ("allgather", "reducescatter", "allreduce", "alltoall", "broadcast", "sendrecv")

# The five op types of DESIGN.md's breakdown and of comm_bytes_per_gpu, in report order.
COMM_TYPES: tuple[str, ...] = ("allgather", "reducescatter", "allreduce", "alltoall", "sendrecv")

# Every spelling of a collective's name clustersim reads -> its op name. Includes the nccl-tests
# tools the model does not predict (reduce, gather, ...), so a log of them is recognised and
# skipped rather than misread.
OP_ALIASES: dict[str, str] = {
    "all_reduce": "allreduce", "allreduce": "allreduce",
    "all_gather": "allgather", "allgather": "allgather",
    "reduce_scatter": "reducescatter", "reducescatter": "reducescatter",
    "alltoall": "alltoall", "all_to_all": "alltoall", "a2a": "alltoall", "alltoallv": "alltoallv",
    "sendrecv": "sendrecv", "send_recv": "sendrecv", "p2p": "sendrecv",
    "broadcast": "broadcast", "reduce": "reduce", "gather": "gather", "scatter": "scatter",
    "hypercube": "hypercube",
}

# The nccl-tests tools (each a ``<name>_perf`` binary) by op name.
NCCL_TESTS_OPS: tuple[str, ...] = tuple(sorted(set(OP_ALIASES.values())))

# NCCL's algorithms (NCCL_ALGO, src/include/device.h NCCL_ALGO_*), as clustersim names them.
NCCL_ALGORITHMS: tuple[str, ...] = ("tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat")


@lru_cache(maxsize=4096)
def canonical_op(name: str) -> str | None:
    """'all_reduce_perf', 'all-reduce', 'AllReduce', 'ncclAllReduce' -> 'allreduce'; None if not
    a collective. (Kept per name: every planned call asks it, with a handful of names.)"""
    key = name.strip().lower().replace("-", "_")
    key = re.sub(r"_perf(_mpi)?$", "", key)
    if key.startswith("nccl") and key != "nccl":
        key = key[4:].lstrip("_")
    if key in OP_ALIASES:
        return OP_ALIASES[key]
    return OP_ALIASES.get(key.replace("_", ""))


def normalize_op(name: str) -> str:
    """The op name of a collective the model predicts (one of :data:`PREDICTED_OPS`), from any
    spelling :func:`canonical_op` reads; anything else is an input error."""
    key = canonical_op(name)
    if key not in PREDICTED_OPS:
        raise InputError(f"unknown collective {name!r}; expected one of {', '.join(PREDICTED_OPS)} "
                         "(or their NCCL spellings: all_reduce, all_gather, reduce_scatter, all_to_all, ...)",
                         field="op")
    return key


def comm_type(op: str) -> str:
    """The breakdown type an op's time and bytes count under: its own name, except broadcast,
    which counts as allreduce (its nearest nccl-tests relative; DESIGN.md's five types)."""
    return "allreduce" if op == "broadcast" else op


def canonical_algo(name: str, among: tuple[str, ...] = NCCL_ALGORITHMS) -> str | None:
    """One NCCL algorithm as ``NCCL_ALGO`` or a kernel name spells it ('Ring', 'NVLSTree',
    'nvls_tree', 'COLLNET_DIRECT') -> its name here ('ring', 'nvls_tree', 'collnet_direct') if
    it is one of ``among``; None for anything else, including NCCL_ALGO's lists ('Ring,Tree')
    and exclusions ('^NVLS'), which pin no single algorithm."""
    key = name.strip().lower().replace("-", "").replace("_", "")
    return {a.replace("_", ""): a for a in among}.get(key)

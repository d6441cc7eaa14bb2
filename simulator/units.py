"""Unit helpers. Inside the package everything is SI: seconds, bytes, bytes/s, FLOP/s.

YAML keys carry their unit in the name (`_GBps`, `_us`, `_TFLOPS`, `_GiB`); the config layer
converts with these helpers at the boundary (the profile's SI properties), so other modules see
SI numbers. The exception is NCCL's tuner (costs/nccl_graph.py, nccl_tuner.py), which works in
decimal GB/s and microseconds as NCCL's own tables do.
GB/s is decimal (1e9 bytes/s), as vendors and nccl-tests print it; GiB is binary.
"""

from __future__ import annotations

import re

KiB = 1024
MiB = 1024**2
GiB = 1024**3
KB = 1e3
MB = 1e6
GB = 1e9

US = 1e-6  # seconds per microsecond
MS = 1e-3
TFLOPS = 1e12


def GBps(x: float) -> float:
    """Decimal GB/s to bytes/s."""
    return x * 1e9


def Gbps(x: float) -> float:
    """Gigabits/s (line rate of a NIC) to bytes/s."""
    return x * 1e9 / 8


def us(x: float) -> float:
    """Microseconds to seconds."""
    return x * 1e-6


BYTES_PER_ELEMENT = {"fp32": 4, "float": 4, "bf16": 2, "fp16": 2, "half": 2, "fp8": 1, "double": 8, "int8": 1}

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(i?B?)?\s*$", re.IGNORECASE)
_SUFFIX = {"": 1, "K": KiB, "M": MiB, "G": GiB, "T": 1024**4}


def parse_size(text: str | int) -> int:
    """Parse a byte count the way nccl-tests does: 8, 1K, 32M, 8G (binary multiples).

    Raises ValueError with a readable message for anything else.
    """
    if isinstance(text, int):
        return text
    m = _SIZE.match(str(text))
    if not m:
        raise ValueError(f"expected a byte count such as 8, 1K, 32M or 8G, got {text!r}")
    value = float(m.group(1)) * _SUFFIX[m.group(2).upper()]
    if value != int(value):
        raise ValueError(f"expected a whole number of bytes, got {text!r}")
    return int(value)


def format_size(n: int) -> str:
    """Inverse of parse_size for display: 1048576 -> '1M'."""
    for suffix, mult in (("T", 1024**4), ("G", GiB), ("M", MiB), ("K", KiB)):
        if n >= mult and n % mult == 0:
            return f"{n // mult}{suffix}"
    return str(n)

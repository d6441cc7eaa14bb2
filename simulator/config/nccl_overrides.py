"""The keys of a profile's ``nccl:`` block, and what each may hold.

The block is flat (``hw_latency_us.net.ring.simple: 10``) because that is how NCCL's tuner
tables are indexed (NCCL-COST-MODEL.md §1-§4) and how ``clustersim calibrate`` writes its fits.
Every key is checked here, when the profile is loaded, so that ``check`` refuses what any
command would: an unknown key (a typo such as ``hw_latency_uss``) is an error with the nearest
known keys, and each value must be a finite number in its range. ``version`` is the one key that
holds a string: the NCCL release whose tables the others refine (:mod:`simulator.costs.nccl_versions`).
The cost model (:mod:`simulator.costs.nccl_constants`) applies them.
"""

from __future__ import annotations

import difflib
import re
from typing import Iterator, Mapping, Sequence

ALGOS: tuple[str, ...] = ("tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat")
PROTOS: tuple[str, ...] = ("ll", "ll128", "simple")
LINK_CLASSES: tuple[str, ...] = ("nvlink", "pci", "net")
# The algorithms whose flows a protocol efficiency scales (``proto_efficiency[.net].<algo>.<proto>``):
# a ring and a tree move the same protocol's lines through different pipelines (a ring step per
# hop, a tree's reduce-then-broadcast over a chain and two trees), so what each achieves of the
# protocol's rate is its own. NVLS and NVLSTree run Simple only and have ``nvls_efficiency``;
# CollNet is not modelled. ``proto_efficiency[.net].<proto>`` sets both.
PROTO_EFFICIENCY_ALGOS: tuple[str, ...] = ("ring", "tree")

# Bounds that no real machine approaches, so a value outside them is a mistake: NCCL's largest
# table latency is 31 us; a second per collective launch is already absurd.
MAX_LATENCY_US = 1e6
MAX_BANDWIDTH_GBPS = 1e5  # 100 TB/s per channel or link class; an NVLink 5 GPU has 0.9 TB/s
MAX_CHANNELS = 64  # NCCL's MAXCHANNELS (64 since 2.25.1; 32 before: src/include/device.h)

_LATENCY = ("latency", 0.0, MAX_LATENCY_US, "a latency in us")
_FRACTION = ("fraction", 0.0, 1.0, "a fraction in (0, 1]")
_BANDWIDTH = ("bandwidth", 0.0, MAX_BANDWIDTH_GBPS, "a bandwidth in GB/s")
_CHANNELS = ("channels", 1, MAX_CHANNELS, "a whole number of channels")
# A rate where 0 means "none" (NCCL's own): net_ll_channel_GBps
_RATE_OR_NONE = ("latency", 0.0, MAX_BANDWIDTH_GBPS, "a bandwidth in GB/s (0: NCCL's own rate)")


def _kinds() -> Iterator[tuple[str, tuple]]:
    for a in ALGOS:
        for p in PROTOS:
            yield f"base_latency_us.{a}.{p}", _LATENCY
            for link in LINK_CLASSES:
                yield f"hw_latency_us.{link}.{a}.{p}", _LATENCY
    for p in PROTOS:
        for scope in ("", "net."):
            yield f"proto_efficiency.{scope}{p}", _FRACTION
            for a in PROTO_EFFICIENCY_ALGOS:
                yield f"proto_efficiency.{scope}{a}.{p}", _FRACTION
    yield from (("net_overhead_us", _LATENCY), ("net_latency_us", _LATENCY), ("net_hop_extra_us", _LATENCY),
                ("net_call_extra_us", _LATENCY),
                ("net_message_us", _LATENCY), ("net_inject_copy_us", _LATENCY), ("p2p_peer_us", _LATENCY),
                ("nvlink_hop_extra_us", _LATENCY),
                ("nvls_efficiency", _FRACTION),
                ("p2p_efficiency", _FRACTION), ("ll_max_bw_GBps", _BANDWIDTH), ("bw_intra_GBps", _BANDWIDTH),
                ("bw_inter_GBps", _BANDWIDTH), ("p2p_channel_GBps", _BANDWIDTH), ("n_channels", _CHANNELS),
                ("nvls_channels", _CHANNELS), ("min_channels", _CHANNELS), ("net_ll_channel_GBps", _RATE_OR_NONE))
    for a in PROTO_EFFICIENCY_ALGOS:
        yield f"net_ll_channel_GBps.{a}", _RATE_OR_NONE


KEYS: dict[str, tuple] = dict(_kinds())


def suggest(key: str, known: list[str] | tuple[str, ...] | Mapping[str, object], n: int = 3) -> str:
    """' (did you mean a, b?)' for the known keys nearest to ``key``, or ''."""
    close = difflib.get_close_matches(key, list(known), n=n, cutoff=0.6)
    return f" (did you mean {', '.join(close)}?)" if close else ""


# Pattern scopes: a key prefixed ``coll.`` applies only to NCCL's collective algorithms (ring,
# tree, NVLS: AllReduce, AllGather, ReduceScatter, Broadcast), ``p2p.`` only to point-to-point
# (All-to-All, SendRecv, a pipeline's sends); an unprefixed key to both. ``clustersim calibrate``
# writes scoped keys when it measured one pattern only, so that a fit of rings cannot move an
# All-to-All (simulator/calibration/fit.py).
SCOPES: tuple[str, ...] = ("coll", "p2p")


def scope_of(key: str) -> tuple[str | None, str]:
    """(scope or None, the key without it): ``p2p.net_latency_us`` -> ("p2p", "net_latency_us")."""
    head, _, rest = key.partition(".")
    return (head, rest) if head in SCOPES and rest else (None, key)


def scoped(overrides: Mapping[str, float], scope: str | None) -> dict[str, float]:
    """The keys that apply to a pattern of ``scope``: the unprefixed ones, then the scope's own
    (prefix removed) over them; None: the unprefixed ones only."""
    out = {k: v for k, v in overrides.items() if scope_of(k)[0] is None}
    if scope is not None:
        out.update({bare: v for k, v in overrides.items() for s, bare in (scope_of(k),) if s == scope})
    return out


def check_override(key: str, value: float) -> str | None:
    """Why ``nccl.<key>: value`` is refused, or None if it is fine (``coll.``/``p2p.`` prefixes
    are checked as the key they scope)."""
    key = scope_of(key)[1]
    kind = KEYS.get(key)
    if kind is None:
        hint = suggest(key, KEYS)
        if hint:
            return f"unknown key{hint}"
        return ("unknown key; expected base_latency_us.<algo>.<proto>, "
                f"hw_latency_us.<{'|'.join(LINK_CLASSES)}>.<algo>.<proto>, proto_efficiency[.net][.<ring|tree>].<proto> or one of "
                "net_overhead_us, net_latency_us, nvls_efficiency, p2p_efficiency, ll_max_bw_GBps, bw_intra_GBps, "
                "bw_inter_GBps, p2p_channel_GBps, n_channels, nvls_channels, min_channels "
                f"(algo: {', '.join(ALGOS)}; proto: {', '.join(PROTOS)})")
    name, lo, hi, what = kind
    if name == "latency" and not lo <= value <= hi:
        return f"expected {what} between 0 and {hi:g}, got {value:g}"
    if name in ("fraction", "bandwidth") and not lo < value <= hi:
        return f"expected {what}" + (f" > 0 and at most {hi:g}" if name == "bandwidth" else "") + f", got {value:g}"
    if name == "channels" and not (float(value).is_integer() and lo <= value <= hi):
        return f"expected {what} from {lo} to {hi} (NCCL's MAXCHANNELS), got {value:g}"
    return None


# ``nccl.version``: the NCCL release whose tuner tables apply (costs/nccl_versions.py), as NCCL
# prints it ("NCCL version 2.23.4+cuda12.6"): major.minor.patch, or major.minor.
_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?$")


def version_key(version: object) -> tuple[int, int, int]:
    """``"2.23.4"`` -> (2, 23, 4); ``"2.23"`` -> (2, 23, 0); ValueError for anything else (a number too)."""
    m = _VERSION.match(version.strip()) if isinstance(version, str) else None
    if not m or int(m.group(1)) < 2:
        raise ValueError(f"expected an NCCL 2 release such as \"2.23.4\" (in YAML, a quoted string), got {version!r}")
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def release_reached(version: str, releases: Sequence[str]) -> str:
    """The last of ``releases`` (ascending) that ``version`` reaches, the first where it reaches
    none: the encoded tables a run of ``version`` uses. A "major.minor" version ("2.18") reaches
    every patch release of its minor."""
    key = version_key(version)
    if version.strip().count(".") == 1:
        key = (key[0], key[1], 1 << 30)
    chosen = releases[0]
    for release in releases:
        if version_key(release) <= key:
            chosen = release
    return chosen


def check_version(value: object) -> str | None:
    """Why ``nccl.version: value`` is refused, or None if it is fine. A YAML number (``2.23``)
    is refused: it cannot say 2.30 from 2.3."""
    try:
        version_key(value)
    except ValueError as e:
        return str(e)
    return None


# aws-ofi-nccl releases whose net plugin library carries the tuner, and whose regions
# costs/aws_ofi_tuner.py encodes
TUNER_PLUGIN_RELEASES: tuple[str, ...] = ("1.16",)
_TUNER_PLUGIN = re.compile(r"^aws-ofi-nccl-(\d+)\.(\d+)(?:\.\d+)?:([a-z0-9.-]+)$")


def check_tuner_plugin(value: object) -> str | None:
    """Why ``nccl.tuner_plugin: value`` is refused, or None. The value names the plugin release
    and the EC2 instance type its tuner reads (:mod:`simulator.costs.aws_ofi_tuner`)."""
    if not isinstance(value, str):
        return f"expected a string like 'aws-ofi-nccl-1.16:p5.48xlarge', got {value!r}"
    m = _TUNER_PLUGIN.match(value.strip())
    if m is None:
        return f"expected 'aws-ofi-nccl-<release>:<instance type>' (e.g. 'aws-ofi-nccl-1.16:p5.48xlarge'), got {value!r}"
    release = f"{m.group(1)}.{m.group(2)}"
    if release not in TUNER_PLUGIN_RELEASES:
        return (f"aws-ofi-nccl {release}: only the net-plugin tuner of release(s) {', '.join(TUNER_PLUGIN_RELEASES)} "
                "is encoded (before 1.16 the tuner is a separate library NCCL does not load by default)")
    return None

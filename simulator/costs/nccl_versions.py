"""NCCL's tuner constants per release, so that a sweep is predicted by the NCCL that ran it.

The latencies and switch points of ``src/graph/tuning.cc`` moved between releases: 2.21 set the
Tree/Simple hop latency to 28 us on every link class (4/4/14 before and after), 2.21 raised the
Hopper LL cap from Ampere's 87.7 GB/s to 141, 2.23 added PAT (its bandwidth x 0.85, then x 0.75
from 2.25) and the rule that one GPU per node uses the network Tree latency for every algorithm,
2.25 added Blackwell rows (and LL128 on Blackwell; v2.25.1-1, not 2.27), 2.29 raised the NVLSTree network hop from 14 to 20.9 us (v2.29.2-1; not 2.30). Until
2.22 a ring's LL128 was rated at 0.7 of its bus bandwidth, not 0.92, on a communicator with fewer
than two ranks per node (v2.7.3-1 .. v2.22.3-1; ``ring_ll128_below_2ppn``), so a data-parallel
group of one GPU per node ran its 64-128 MB buckets on Simple where 2.23 onwards runs LL128. Which
of them NCCL chooses, and when, follows.

Source: ``docs/reference/NCCL-COST-MODEL.md`` §5 (the version history of the constants), each
table checked against ``src/graph/tuning.cc`` of the NVIDIA/nccl tags v2.8.4-1, v2.16.5-1, v2.18.3-1, v2.21.5-1,
v2.23.4-1, v2.25.1-1, v2.27.3-1, v2.28.3-1, v2.29.2-1 and the 2.30.7 commit the document reads. Where the tag differs
from the document, the tag is encoded: 2.18.3 has PCI Tree/Simple 6 us (not 4) and NVLS/NVLSTree
NVLink hops of 0 (the 23 us is their base latency); PAT's latency starts from a fixed 8 us in
every release that has PAT (``8 // Base time`` until 2.27, ``baseLatencies[PAT] = 8`` from 2.28).

Two older tuners are encoded from their tags, because measured sweeps ran them (data/nccl: ABCI's
NCCL 2.8.4, the A100-PCIe runs' 2.16.5): v2.8.4-1 and v2.16.5-1 have three algorithms, a ring base
latency of 3.6/10/8.4 us (LL/LL128/Simple; 6.6/14/8.4 from 2.18), NVLink ring and tree LL hops of
0.47 and 0.52 us, Tree/Simple hops of 28 us, a network ring Simple hop of 9.6 us, a 235 GB/s cap
on every Ampere bus bandwidth, the intra-node LL hop x 1.8 across nodes, no host net overhead and
a ring Simple plateau of x 1.9 from nRanks/16 x 64 KiB; 2.8.4 caps LL128 per collective
(AllReduce 16.9, AllGather 18.3, ReduceScatter 15.2 GB/s per channel) and Ampere's Tree at
24/22.5/16, 2.16.5 at 20 GB/s for every collective and 24/23.6/17.8. Until 2.20 Ring/LL was rated
at a quarter of the ring's bus bandwidth for AllReduce (and across nodes), a third otherwise;
2.21 made it a half (``ring_ll_fraction``).

Three releases between them are encoded from their tags too, for Volta and Ampere: v2.10.3-1 (2.16.5's
caps, Tree rules and size correction, with 2.8.4's 2 x (nNodes - 1) network steps of a ring
AllReduce), v2.12.7-1 (2.16.5's, with a network Ring/Simple hop of 28 us, until v2.13.4-1) and
v2.14.3-1 (2.16.5's). The Tree/LL128 size correction (``treeCorrectionFactor``) of v2.8.3-1 ..
v2.9.9-1 rates Tree/LL128 lower from 512 KiB than every later release (``tree_ll128_correction``).

A release between two encoded ones uses the latest encoded release not newer than it (2.22.3 runs
with 2.21.5's tables, 2.26.2 with 2.25.1's, 2.12.12 with 2.12.7's); a release older than 2.8.4
uses 2.8.4's, one newer than 2.30.7 uses 2.30.7's. A minor release named without its patch
(``2.18``: a run whose log prints none) is one of its patch releases, so it runs the latest
encoded release of that minor one (2.18.3's), not the one before it.

The NVLS/NVLSTree bandwidth model is versioned too (``nvls_bw_model``; ``tuning.cc`` of each
tag): 2.18.3 rates them like any algorithm (``bwIntra`` on <= 2 nodes, else ``bwInter``) and
converts NVLS by 5/6 and NVLSTree by 0.70·N/(2(N−1)); 2.19 to 2.26 cap NVLS at ``min(bwIntra,
bwInter)`` and NVLSTree at ``min(bwIntra, bwInter`` on <= 2 nodes, ``bwInter/2`` beyond``)``, both
converted by 5/6; 2.27 adds ``min(bwIntra·(ppn−1)/ppn, 0.9·bwInter)`` for NVLS
AllGather/ReduceScatter, left unconverted; 2.28 introduced ``nvlsEfficiency`` and
``perChMaxNVLSTreeBws`` (the n/nsteps conversion of Ring).

Not versioned: the Tree correction table's LL and Simple rows and the channel/thread rules
(unchanged over these releases), and CollNet (no bundled profile has SHARP).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Mapping

from simulator.config.nccl_overrides import release_reached

Row = tuple[float, float, float]  # LL, LL128, Simple  -- or N1, N2, N4 for the caps

NEWEST = "2.30.7"

_ALGOS = ("tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat")


@dataclass(frozen=True)
class NcclTables:
    """One release's tuner tables (us, GB/s) and the rules that changed with them."""

    version: str  # the encoded release these tables are read from
    base_latency_us: Mapping[str, Row]
    hw_latency_us: Mapping[str, Mapping[str, Row]]  # nvlink / pci / net -> algo -> per protocol
    # llMaxBw per GPU row (N1, N2, N4). On one node NCCL reads the GPU's row; across nodes
    # clustersim reads the Hopper/Blackwell rows' N2/N4 columns for those GPUs and the CPU
    # vendor's row (Volta = Intel, Ampere = AMD) otherwise (nccl_tuner.ll_max_bw_GBps).
    ll_max_bw: Mapping[str, Row]
    per_ch_max_ring_ll128: Mapping[str, Row]
    per_ch_max_tree_ll128: Mapping[str, Row]
    per_ch_max_tree: Mapping[str, Row]
    pat_bw_factor: float  # 0: no PAT in this release
    # 2.23+: with one GPU per node the inter-node latency is the network Tree row for every
    # algorithm ("latencies are fully exposed"); before, each algorithm's own network row.
    ppn1_uses_tree_net_latency: bool
    # Before 2.23 a multi-node ring AllReduce counted 2*nNodes network steps, 2*(nNodes-1) after.
    ring_allreduce_inter_steps_per_node: bool
    # 2.18: AllGather and ReduceScatter ran Ring only; NVLSTree paid 2*(nNodes-1) network hops
    # (log2 of the node count from 2.21).
    allgather_ring_only: bool
    nvls_tree_linear_hops: bool
    # How NVLS/NVLSTree are rated (module docstring): "2.18" (as any algorithm), "2.19"
    # (min(bwIntra, bwInter), x 5/6), "2.27" (2.19 + its own NVLS AllGather/ReduceScatter rule),
    # "2.28" (nvlsEfficiency, perChMaxNVLSTreeBw, x n/nsteps).
    nvls_bw_model: str = "2.28"
    # Before 2.21 Ring/LL was rated at a quarter of the ring's bus bandwidth for AllReduce and
    # Reduce (and for every collective across nodes), a third otherwise; from 2.21 at half.
    ring_ll_quarter: bool = False
    # Up to 2.16 (``tuning.cc`` of v2.8.4-1 .. v2.16.5-1): every algorithm's bus bandwidth is
    # capped at 235 GB/s on Ampere; the LL latency of an intra-node hop is x 1.8 across nodes; no
    # host net overhead; the ring's Simple plateau multiplies its latency by 1.9 on every GPU once
    # nBytes >= nRanks/16 x 64 KiB. None / 1.0 / True / False: the rules of 2.18 onwards.
    ampere_bus_cap_GBps: float | None = None
    ll_intra_latency_multinode: float = 1.0
    net_overhead: bool = True
    ring_plateau_up_to_2_16: bool = False
    # v2.8.4-1 .. v2.12: LL128's per-channel cap is one per collective (``ll128MaxBwPerCh``, the
    # same for Ring and Tree and every GPU), not per GPU and node count. None: the per-GPU tables.
    ll128_per_ch_by_coll: Mapping[str, float] | None = None
    # From 2.18.3 a Tree whose graph is NCCL_TOPO_PATTERN_TREE is rated × 0.85 (SIMPLE_TREE_FACTOR;
    # ``tuning.cc`` of v2.8.4-1, v2.12.12-1, v2.16.5-1 and v2.17.1-1 has no such rule).
    simple_tree_derate: bool = True
    tree_ll128_net_factor: float = 120 / 128  # Tree/LL128 across nodes (0.915 up to 2.12)
    # v2.7.3-1 .. v2.22.3-1 rate a ring's LL128 at 0.7 of its bus bandwidth, not 0.92, on a
    # communicator with fewer than two ranks per node ("if ppn < 2, then we are sending/receiving
    # at the same GPU through the NIC, apply some bw discount": ``busBw * (ppn < 2 ? 0.7 : 0.92)``
    # in ``tuning.cc`` of v2.21.5-1 line 181); v2.23.4-1 dropped the discount (0.92 for every ppn).
    # None: no discount.
    ring_ll128_below_2ppn: float | None = None
    # The LL128 row of the Tree AllReduce size correction (``treeCorrectionFactor``, index
    # log2(nBytes/64)), where it is not the row of 2.10.3 onwards (``nccl_constants.TREE_CORRECTION``):
    # v2.8.3-1 .. v2.9.9-1 rate Tree/LL128 lower from 512 KiB (0.5 at 512 KiB, 0.7 at 4-8 MiB,
    # 0.8 at 16 MiB, 0.92 from 128 MiB, against 0.6, 0.8-0.9, 0.9 and 1.0). None: the newer row.
    tree_ll128_correction: tuple[float, ...] | None = None

    def ring_ll128_factor(self, ppn: int) -> float:
        """The share of a ring's bus bandwidth NCCL rates Ring/LL128 at (before its per-channel
        cap), for a communicator of `ppn` ranks per node (NCCL's ``nRanks / nNodes``, a float:
        below 2 exactly when the integer quotient is)."""
        if self.ring_ll128_below_2ppn is not None and ppn < 2:
            return self.ring_ll128_below_2ppn
        return 0.92

    def ll128_per_ch_cap(self, coll: str, algo: str, row: str, scale: int) -> float:
        """LL128's per-channel bandwidth cap (GB/s) for `coll` on `algo` (ring or tree)."""
        if self.ll128_per_ch_by_coll is not None:
            return self.ll128_per_ch_by_coll.get(coll, self.ll128_per_ch_by_coll["allreduce"])
        table = self.per_ch_max_tree_ll128 if algo == "tree" else self.per_ch_max_ring_ll128
        return table[row][scale]

    def ring_ll_fraction(self, coll: str, n_nodes: int) -> float:
        """The share of the ring's bus bandwidth NCCL rates Ring/LL at (before ``llMaxBw``)."""
        if not self.ring_ll_quarter:
            return 0.5
        return 0.25 if n_nodes > 1 or coll in ("allreduce", "reduce") else 1 / 3

    def arch_row(self, arch: str) -> str:
        """The GPU row NCCL indexes: a GPU newer than the release's last row uses that row
        (``compCapIndex`` caps at Hopper before 2.25)."""
        return arch if arch in self.per_ch_max_tree else "hopper"


def _hw(nvlink: Mapping[str, Row], pci: Mapping[str, Row], net: Mapping[str, Row]) -> dict[str, dict[str, Row]]:
    return {"nvlink": dict(nvlink), "pci": dict(pci), "net": dict(net)}


_Z: Row = (0.0, 0.0, 0.0)
_VOLTA_AMPERE_LL = {"volta": (39.0, 39.0, 20.4), "ampere": (87.7, 22.5, 19.0)}
_HOPPER_LL = (141.0, 45.0, 35.0)
_RING_LL128 = {"volta": (20.0, 20.0, 20.0), "ampere": (20.0, 20.0, 20.0), "hopper": (36.7, 36.7, 36.7)}
_TREE_LL128 = {"volta": (20.0, 20.0, 20.0), "ampere": (20.0, 20.0, 20.0), "hopper": (36.7, 36.7, 29.0)}
_TREE = {"volta": (26.5, 18.5, 10.0), "ampere": (24.0, 23.6, 17.8), "hopper": (38.7, 41.4, 36.0)}


# ``treeCorrectionFactor[NCCL_PROTO_LL128]`` of v2.8.4-1 (the same in v2.8.3-1 .. v2.9.9-1, and in v2.7.x to 64 MiB; v2.10.3-1
# raised entries 13 and 16-22 to the row ``nccl_constants.TREE_CORRECTION`` holds), 64 B .. 256 MiB.
TREE_LL128_CORRECTION_UP_TO_2_9: tuple[float, ...] = (
    1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .5, .6, .6, .7, .7, .8, .9, .9, .92, .92)


def _tables_2_8_4() -> NcclTables:
    """``tuning.cc`` of v2.8.4-1: three algorithms (Tree, Ring, CollNet), older latencies (Ring
    base 3.6/10/8.4 us, NVLink Ring LL hop 0.47 us, Tree/Simple hops 28 us on every link), LL128
    capped per collective, Ampere's Tree caps 24/22.5/16 GB/s per channel."""
    collnet = {"nvlink": (0.5, 1.2, 4.0), "pci": (1.0, 1.9, 5.5), "net": (5.0, 5.0, 10.7)}
    none = {"nvls": _Z, "nvls_tree": _Z, "pat": _Z}
    return NcclTables(
        version="2.8.4",
        base_latency_us={"tree": (4.4, 4.4, 0.0), "ring": (3.6, 10.0, 8.4), "collnet_direct": (4.4, 4.4, 0.0),
                         "collnet_chain": (4.4, 4.4, 0.0), **none},
        hw_latency_us=_hw(
            {"tree": (0.52, 1.25, 28.0), "ring": (0.47, 1.9, 3.4), "collnet_direct": collnet["nvlink"],
             "collnet_chain": collnet["nvlink"], **none},
            {"tree": (1.0, 1.9, 28.0), "ring": (1.0, 2.5, 5.7), "collnet_direct": collnet["pci"],
             "collnet_chain": collnet["pci"], **none},
            {"tree": (5.0, 8.5, 28.0), "ring": (2.7, 4.0, 9.6), "collnet_direct": collnet["net"],
             "collnet_chain": collnet["net"], **none}),
        ll_max_bw={**_VOLTA_AMPERE_LL, "hopper": _VOLTA_AMPERE_LL["ampere"]},  # no Hopper row yet
        per_ch_max_ring_ll128=_RING_LL128, per_ch_max_tree_ll128=_TREE_LL128,
        per_ch_max_tree={"volta": _TREE["volta"], "ampere": (24.0, 22.5, 16.0), "hopper": (24.0, 22.5, 16.0)},
        pat_bw_factor=0.0, ppn1_uses_tree_net_latency=False, ring_allreduce_inter_steps_per_node=False,
        allgather_ring_only=True, nvls_tree_linear_hops=True, nvls_bw_model="2.18", ring_ll_quarter=True,
        ampere_bus_cap_GBps=235.0, ll_intra_latency_multinode=1.8, net_overhead=False,
        ring_plateau_up_to_2_16=True,
        ll128_per_ch_by_coll={"broadcast": 18.8, "reduce": 12.0, "allgather": 18.3, "reducescatter": 15.2,
                              "allreduce": 16.9},
        tree_ll128_net_factor=0.915, simple_tree_derate=False, ring_ll128_below_2ppn=0.7,
        tree_ll128_correction=TREE_LL128_CORRECTION_UP_TO_2_9,
    )


def _tables_2_16_5() -> NcclTables:
    """``tuning.cc`` of v2.16.5-1: 2.8.4's latencies and rules, with one LL128 cap of 20 GB/s per
    channel for every collective and GPU, Ampere's (and Hopper's) Tree caps 24/23.6/17.8, Tree/LL128
    across nodes at 120/128, and 2 x nNodes network steps in a multi-node ring AllReduce."""
    t = _tables_2_8_4()
    flat = {arch: (20.0, 20.0, 20.0) for arch in ("volta", "ampere", "hopper")}
    return replace(
        t, version="2.16.5", ll_max_bw={**_VOLTA_AMPERE_LL, "hopper": (87.7, 22.5, 19.0)},
        per_ch_max_ring_ll128=flat, per_ch_max_tree_ll128=flat,
        per_ch_max_tree={"volta": _TREE["volta"], "ampere": _TREE["ampere"], "hopper": _TREE["ampere"]},
        ring_allreduce_inter_steps_per_node=True, ll128_per_ch_by_coll=None, tree_ll128_net_factor=120 / 128,
        tree_ll128_correction=None)


def _tables_2_10_3() -> NcclTables:
    """``tuning.cc`` of v2.10.3-1 (and v2.11.4-1): 2.16.5's caps and Tree/LL128 rules (one LL128 cap of
    20 GB/s per channel, ``ll128MaxBwPerCh = 20.0``; Ampere Tree caps 24/23.6/17.8; Tree/LL128 across
    nodes at 120/128; the newer size-correction row), with 2.8.4's 2 x (nNodes - 1) network steps in a
    multi-node ring AllReduce (``nInterSteps``; 2 x nNodes from v2.12.7-1)."""
    return replace(_tables_2_16_5(), version="2.10.3", ring_allreduce_inter_steps_per_node=False)


def _tables_2_12_7() -> NcclTables:
    """``tuning.cc`` of v2.12.7-1 .. v2.13.4-1: 2.16.5's tables, except a network Ring/Simple hop of 28 us
    (``hwLat[NCCL_HW_NET][RING][SIMPLE]``; 9.6 in v2.8.4-1 .. v2.11.4-1 and again from v2.14.3-1)."""
    t = _tables_2_16_5()
    net = {**t.hw_latency_us["net"], "ring": (2.7, 4.0, 28.0)}
    return replace(t, version="2.12.7", hw_latency_us={**t.hw_latency_us, "net": net})


def _tables_2_14_3() -> NcclTables:
    """``tuning.cc`` of v2.14.3-1 .. v2.16.4-1: for Volta and Ampere the tables of v2.16.5-1 (the network
    Ring/Simple hop back at 9.6 us). Hopper rows are 2.16.5's, as 2.8.4's are Ampere's (not read per tag)."""
    return replace(_tables_2_16_5(), version="2.14.3")


def _tables_2_18_3() -> NcclTables:
    return NcclTables(
        version="2.18.3",
        base_latency_us={"tree": (6.8, 14.0, 0.0), "ring": (6.6, 14.0, 8.4), "collnet_direct": (6.8, 14.0, 0.0),
                         "collnet_chain": (6.8, 14.0, 0.0), "nvls": (0.0, 0.0, 23.0), "nvls_tree": (0.0, 0.0, 23.0),
                         "pat": _Z},
        hw_latency_us=_hw(
            {"tree": (0.6, 1.25, 4.0), "ring": (0.6, 1.9, 3.4), "collnet_direct": (0, 0, 8.0),
             "collnet_chain": (0, 0, 4.75), "nvls": _Z, "nvls_tree": _Z, "pat": _Z},
            {"tree": (1.0, 1.9, 6.0), "ring": (1.0, 2.5, 5.7), "collnet_direct": (0, 0, 8.0),
             "collnet_chain": (0, 0, 8.0), "nvls": _Z, "nvls_tree": _Z, "pat": _Z},
            {"tree": (5.0, 8.5, 14.0), "ring": (2.7, 4.0, 14.0), "collnet_direct": (0, 0, 10.7),
             "collnet_chain": (0, 0, 14.0), "nvls": (0, 0, 18.0), "nvls_tree": (0, 0, 19.0), "pat": _Z}),
        ll_max_bw={**_VOLTA_AMPERE_LL, "hopper": (87.7, 22.5, 19.0)},  # Hopper = Ampere's row
        per_ch_max_ring_ll128=_RING_LL128, per_ch_max_tree_ll128=_TREE_LL128, per_ch_max_tree=_TREE,
        pat_bw_factor=0.0, ppn1_uses_tree_net_latency=False, ring_allreduce_inter_steps_per_node=True,
        allgather_ring_only=True, nvls_tree_linear_hops=True, nvls_bw_model="2.18", ring_ll_quarter=True,
        ring_ll128_below_2ppn=0.7,
    )


def _tables_2_21_5() -> NcclTables:
    return NcclTables(
        version="2.21.5",
        base_latency_us={"tree": (6.8, 14.0, 0.0), "ring": (6.6, 14.0, 8.4), "collnet_direct": _Z,
                         "collnet_chain": _Z, "nvls": _Z, "nvls_tree": _Z, "pat": _Z},
        hw_latency_us=_hw(
            {"tree": (0.6, 1.25, 28.0), "ring": (0.6, 1.9, 3.4), "collnet_direct": (0, 0, 3.7),
             "collnet_chain": (0, 0, 2.8), "nvls": (0, 0, 25.0), "nvls_tree": (0, 0, 25.0), "pat": _Z},
            {"tree": (1.0, 1.9, 28.0), "ring": (1.0, 2.5, 5.7), "collnet_direct": (0, 0, 3.7),
             "collnet_chain": (0, 0, 2.8), "nvls": _Z, "nvls_tree": _Z, "pat": _Z},
            {"tree": (5.0, 8.5, 28.0), "ring": (2.7, 4.0, 14.0), "collnet_direct": (0, 0, 31.0),
             "collnet_chain": (0, 0, 30.0), "nvls": (0, 0, 18.0), "nvls_tree": (0, 0, 14.0), "pat": _Z}),
        ll_max_bw={**_VOLTA_AMPERE_LL, "hopper": _HOPPER_LL},
        per_ch_max_ring_ll128=_RING_LL128, per_ch_max_tree_ll128=_TREE_LL128, per_ch_max_tree=_TREE,
        pat_bw_factor=0.0, ppn1_uses_tree_net_latency=False, ring_allreduce_inter_steps_per_node=True,
        allgather_ring_only=False, nvls_tree_linear_hops=False, nvls_bw_model="2.19", ring_ll128_below_2ppn=0.7,
    )


def _tables_2_23_4() -> NcclTables:
    t = _tables_2_21_5()
    hw = {link: dict(row) for link, row in t.hw_latency_us.items()}
    for link, simple in (("nvlink", 4.0), ("pci", 4.0), ("net", 14.0)):
        ll, ll128, _ = hw[link]["tree"]
        hw[link]["tree"] = (ll, ll128, simple)
    return NcclTables(
        version="2.23.4",
        base_latency_us={**t.base_latency_us, "tree": (6.8, 14.0, 8.4), "pat": (8.0, 8.0, 8.0)},
        hw_latency_us=hw, ll_max_bw=t.ll_max_bw, per_ch_max_ring_ll128=_RING_LL128,
        per_ch_max_tree_ll128=_TREE_LL128, per_ch_max_tree=_TREE,
        pat_bw_factor=0.85, ppn1_uses_tree_net_latency=True, ring_allreduce_inter_steps_per_node=False,
        allgather_ring_only=False, nvls_tree_linear_hops=False, nvls_bw_model="2.19",
    )


def _twice(row: Row) -> Row:
    return (2 * row[0], 2 * row[1], 2 * row[2])


def _tables_2_25_1() -> NcclTables:
    """v2.25.1-1's tuning.cc: Blackwell rows (BLACKWELL_COMPCAP_IDX, twice Hopper's llMaxBw and
    per-channel caps), LL128 enabled on compute capability 100/120 (``case 100: pEnable &= 1``; the
    ``default: pEnable &= 0`` of 2.23.4 before) and PAT × 0.75 (× .85 in 2.23.4); the latencies and
    the NVLS rating are 2.23.4's. v2.26.2-1 changes none of these numbers (``git diff v2.25.1-1
    v2.26.2-1 -- src/graph/tuning.cc``: the TREE-pattern test reads ``comm->maxTreePattern``)."""
    t = _tables_2_23_4()
    return NcclTables(
        version="2.25.1",
        base_latency_us=t.base_latency_us, hw_latency_us=t.hw_latency_us,
        ll_max_bw={**t.ll_max_bw, "blackwell": _twice(_HOPPER_LL)},
        per_ch_max_ring_ll128={**_RING_LL128, "blackwell": _twice(_RING_LL128["hopper"])},
        per_ch_max_tree_ll128={**_TREE_LL128, "blackwell": _twice(_TREE_LL128["hopper"])},
        per_ch_max_tree={**_TREE, "blackwell": _twice(_TREE["hopper"])},
        pat_bw_factor=0.75, ppn1_uses_tree_net_latency=True, ring_allreduce_inter_steps_per_node=False,
        allgather_ring_only=False, nvls_tree_linear_hops=False, nvls_bw_model="2.19",
    )


def _tables_2_27_3() -> NcclTables:
    """2.25.1's tables with 2.27's own NVLS AllGather/ReduceScatter rating."""
    return replace(_tables_2_25_1(), version="2.27.3", nvls_bw_model="2.27")


def _tables_2_28_3() -> NcclTables:
    t = _tables_2_27_3()
    hw = {link: dict(row) for link, row in t.hw_latency_us.items()}
    for link, simple in (("nvlink", 4.0), ("pci", 4.0), ("net", 14.0)):  # PAT's own row appears
        hw[link]["pat"] = (0.0, 0.0, simple)
    return NcclTables(
        version="2.28.3",
        base_latency_us=t.base_latency_us, hw_latency_us=hw, ll_max_bw=t.ll_max_bw,
        per_ch_max_ring_ll128=t.per_ch_max_ring_ll128,
        per_ch_max_tree_ll128={**_TREE_LL128, "blackwell": (55.6, 31.67, 20.0)},
        per_ch_max_tree={**_TREE, "blackwell": (70.0, 42.8, 24.0)},
        pat_bw_factor=0.75, ppn1_uses_tree_net_latency=True, ring_allreduce_inter_steps_per_node=False,
        allgather_ring_only=False, nvls_tree_linear_hops=False,
    )


def _tables_2_29_2() -> NcclTables:
    """v2.29.2-1's tuning.cc (``git diff v2.28.3-1 v2.29.2-1``): the NVLSTree network hop 14 ->
    20.9 us and Blackwell's Ring/LL128 per-channel cap 2 x 36.7 -> 34.5/34.6/34.5 GB/s."""
    t = _tables_2_28_3()
    hw = {link: dict(row) for link, row in t.hw_latency_us.items()}
    hw["net"]["nvls_tree"] = (0.0, 0.0, 20.9)
    return replace(t, version="2.29.2", hw_latency_us=hw,
                   per_ch_max_ring_ll128={**_RING_LL128, "blackwell": (34.5, 34.6, 34.5)})


def _tables_2_30_7() -> NcclTables:
    """2.29.2's with Blackwell's Ring/LL128 cap at 40 GB/s per channel."""
    return replace(_tables_2_29_2(), version="2.30.7",
                   per_ch_max_ring_ll128={**_RING_LL128, "blackwell": (40.0, 40.0, 40.0)})


_BUILDERS = {"2.8.4": _tables_2_8_4, "2.10.3": _tables_2_10_3, "2.12.7": _tables_2_12_7, "2.14.3": _tables_2_14_3,
             "2.16.5": _tables_2_16_5, "2.18.3": _tables_2_18_3, "2.21.5": _tables_2_21_5, "2.23.4": _tables_2_23_4,
             "2.25.1": _tables_2_25_1, "2.27.3": _tables_2_27_3, "2.28.3": _tables_2_28_3, "2.29.2": _tables_2_29_2,
             "2.30.7": _tables_2_30_7}
ENCODED: tuple[str, ...] = tuple(_BUILDERS)

def resolve(version: str | None) -> str:
    """The encoded release whose tables `version` runs with (see the module docstring)."""
    if version is None:
        return NEWEST
    return release_reached(version, ENCODED)  # "2.18": any of its patch releases (module docstring)


@lru_cache(maxsize=None)
def tables_for(version: str | None) -> NcclTables:
    """The tuner tables of `version` (None: the newest encoded release)."""
    return _BUILDERS[resolve(version)]()

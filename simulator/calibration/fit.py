"""Fit a hardware profile's collective latencies and bandwidth efficiencies to nccl-tests
sweeps (the compute side is :mod:`simulator.calibration.gemm_fit` and
:mod:`simulator.calibration.attention_fit`).

The collective fit keeps the model in the loop: every candidate parameter is a field the
collective model already reads from the profile (``node.scale_up.efficiency``,
``node.nics.efficiency``, the tuner overrides ``nccl.hw_latency_us.<link>.<algo>.<proto>`` and
``nccl.nvls_efficiency`` of :mod:`simulator.costs.nccl_constants`, and ``gpu.kernel_launch_us`` for the
launch floor of a process driving several GPUs), and the objective is the difference between the
measured time and :func:`simulator.replay.single_collective.time_collective` on the measured
configuration. Nothing here re-derives the model's formulas, so the fit stays right when the
model's internal constants change.

Bandwidth efficiencies are per link class (NVLink/xGMI or PCIe inside a node, the NICs across
nodes); the protocol efficiencies per protocol, scope (inside a node, across nodes) and
algorithm where the rows measured one algorithm only: ring LL and tree LL achieve different
shares of NCCL's LL rate across nodes (2 x 8 A100 over IB: ~0.3 and ~0.125), so one key for
both moved the tree rows of an AllReduce the fit never saw to serve an AllGather's ring rows.
Rows of one algorithm write ``nccl.coll.proto_efficiency[.net].<ring|tree>.<ll|ll128>`` and the
other algorithm keeps the transport's deployed value (:mod:`simulator.costs.deployed`, which
every fitted key refines); rows of both write the key for both,
``nccl.coll.proto_efficiency[.net].<ll|ll128>``, as ``net_hop_extra_us`` is the transport's only
when both patterns were measured. (A key per algorithm on rows of both was tried: with 2-6
sensitive rows each, most stayed unfitted at the deployed value, and the sizes splits got worse:
Sophia 3.4% -> 8.2%, ABCI 8.7% -> 12.2% at >= 1 MiB, 2026-12-02.) Latencies are per link class,
algorithm and protocol (NCCL's own tables).

Bounds: an efficiency is at most 1, and a protocol's efficiency at least
:data:`PROTO_EFFICIENCY_FLOOR`, the least share of NCCL's LL rate a deployed fabric was measured
to deliver (the tree LL above, ~0.125). A fit below it is a latency the rows put into the
bandwidth term: GH200 on Alps fitted on 1-4 nodes took the network LL efficiency to 0.049 and
mispredicted its own 16-32-node sweeps by 23.5% (17.8% with the floor). A time (a latency, a
per-hop or per-call extra) is at least 0, a bound log space never reaches: a key the rows want at
0 took one clipped step (a factor e) down per iteration until the solver's 30 ran out, and was
written as 5 us x e^-30 = 4.7e-13 us (the per-call extra of AWS P5, GCP A3 Ultra and MI355X, and
the solver never stopped early while it walked). The solver floors a time at
:data:`LATENCY_RESOLUTION_US`, the 0.01 us nccl-tests prints, stops when the step it takes (not
the one it proposes) is small, and a key that ends at the floor is written as 0 with a warning.

Which parameters a data set can determine is decided numerically: a parameter is fitted only when
at least ``min_points`` measured rows are sensitive to it (|d log t / d log p| ≥ 0.2 at the
datasheet value, and again at the fitted point): sizes in the latency regime for a latency, in
the bandwidth regime for an efficiency. A protocol's efficiency is probed at its floor too
(:func:`_floor_rows`): at its start another cap or the start latencies may hide it from rows that
run far below it (a ring LL AllGather across nodes at 0.3: 1 row sensitive at 0.9, every LL row
at the floor). Others stay at the datasheet value with a warning.

Solver: Levenberg–Marquardt on log-parameters, residuals ``log(t_pred / t_meas)`` (relative
error; sizes span ten decades), reweighted each iteration with Huber weights (IRLS, Huber 1964;
the same robust loss as :func:`simulator.calibration.sweep_fit.fit_alpha_beta`) so an odd point —
a protocol switch the tuner places differently, a noisy row — does not drag the fit. A
redescending loss (Tukey's bisquare after the Huber pass, which ignores far rows entirely) was
tried and met the cross-validation target on 8 of 17 splits instead of 10 (2026-11-30): with
sweeps of 15–40 rows it drops informative mid-size rows along with the outliers.

Transport and pattern: a fit must not move what it did not measure. The links' achievable
fractions (``node.scale_up.efficiency``, ``node.nics.efficiency``) belong to the transport: every
pattern's bytes cross the same links, so they are fitted as such and carry over. What NCCL's
algorithms make of it belongs to the pattern: the table latencies (an All-to-All counts a hop per
batch of peers a channel runs in order, a ring one per step), the protocol, NVLS and p2p efficiencies, the p2p channel
rate. The fit writes those as keys scoped to the pattern of the rows that determined them
(``nccl.coll.*``: ring, tree, NVLS; ``nccl.p2p.*``: All-to-All, SendRecv;
:mod:`simulator.config.nccl_overrides`), so a fit of rings leaves an All-to-All's latency
where it was. The time an inter-node hop costs beyond NCCL's table (``net_hop_extra_us``: the
transport's software path, :mod:`simulator.costs.deployed`, whose value it starts from) is the
transport's, but each pattern's formula multiplies it differently (2(n−1) ring steps, one per
remote peer of an All-to-All: 72 on 10 nodes of 8), so it is fitted as the transport's only when
both patterns were measured, and as the measured pattern's own otherwise. (The fit used to move
the net plugin's ``latencyInter``, ``net_latency_us``, instead: but NCCL's IB, RoCE and CXI
transports report 0 whatever a hop costs, so a fitted value there changed NCCL's choice, which
the hardware does not, and it sat on top of the deployed per-hop extra, a floor the measured hops
could not go below: Alps GH200's sizes split, 20.4% over all sizes with it, 12.6% with the hop
extra fitted, 2026-12-02. A plugin that reports a latency to NCCL says so in
:mod:`simulator.costs.transports`.) On the bundled corpus, sharing the
links' efficiencies carries over where it should (Sophia's All-to-All after its AllReduce and
AllGather: 11.1% -> 8.0% at >= 1 MiB, docs/validation-calibration.md).

Identifiability: a fit writes only what its own rows can tell apart, judged from the design of
the fit data, never from rows it did not see. Two tests (the second again at each fitted point):

* hop counts: the per-hop extra multiplies a call's network crossings, which the communicator's
  node count sets; rows of one node count (one count of network domains) pay it as one more
  constant per call, the same for every algorithm and protocol. So ``net_hop_extra_us`` is a
  candidate only where the rows that cross the network span at least two node counts
  (:func:`_network_hop_counts`), and where they do not, it keeps the transport's deployed value and
  its per-call shadow is fitted instead: ``net_call_extra_us``, paid once by every call across the
  network whatever its algorithm and protocol (scoped like the per-hop extra), one number the rows
  of every measured configuration determine together, counting as sensitive to it the rows
  sensitive to the per-hop extra (:func:`_per_call_rows`: its 5 us start would move none of
  them). The proxy's cost per remote All-to-All peer (``p2p_peer_us``) is gated the same way: it
  multiplies the remote peers a rank's proxy handles in order, so it is a candidate only where the
  All-to-All rows across nodes span two counts of them. NCCL's base latency of each measured
  configuration is a candidate too, with its own rows, as where a configuration was measured at
  two communicator sizes. (The base latencies
  alone, offered the per-hop extra's rows, held that cost before: on a 2 x 8 MI300X sweep whose
  every call pays ~180 us more than a sibling system's, data/nccl/INDEX.md, only tree LL's
  had the rows, and the fit wrote 181 us there, leaving the tree Simple and LL128 sizes
  1.5-2.2x too fast: 19.7% at >= 1 MiB on its odd sizes, 4.9% with the per-call extra at 178 us);
* collinearity: of the keys with enough sensitive rows, the Jacobian of log time (central
  differences at the current point) is normalised per column, and a key whose column lies within
  sin θ = 1/sqrt(10) of the span of the others (variance inflation above 10, Marquardt 1970) is
  not separable from them. The widest such key (:func:`breadth`: the links' efficiencies, then
  the transport's per-hop or per-call extra, a pattern's shared knobs, a protocol's efficiency over both
  algorithms, one algorithm's, NCCL's base latency, one link's table latency) stays at its
  deployed value and the rest are re-tested (:func:`separable`): where the rows cannot say which
  key moved, the one whose change reaches least beyond them takes it, so what the fit did not
  see moves least. (Two NCCL knobs that act on the same rows the same way, the LL cap
  ``ll_max_bw_GBps`` and the ring's LL efficiency on rows all capped by it, were both fitted along
  their common direction before, wherever the damped solver happened to stop.)

Selection beyond these two tests was tried and is not used. Akaike's criterion (Akaike 1974) on
the Huber-weighted residuals, each fitted key returned to its start where its Wald statistic at
the fitted point, (x_j − x0_j)² / (A⁻¹)_jj with A = JᵀWJ, fell below 2σ², dropped the links'
efficiency first: the fit data move it a little (Sophia's NICs 0.95 -> 0.91-0.93) and nearly
along the p2p efficiency, which then took the deficit (0.925 -> 0.885), the reverse of the
transport-first order above. Sophia A100 (2026-12-03): leave out AllReduce 10.1% -> 8.7% at
>= 1 MiB, but leave out All-to-All 8.5% -> 11.1% and the sizes split 3.4% -> 6.2%. What makes a
held-out collective worse after calibration is not an over-parameterised fit (per key,
``cross_validation --attribute``): on Sophia's AllReduce the fitted NICs (0.909, from the
AllGather and All-to-All) bring its 512 MiB-1 GiB Ring/Simple rows from +2.8%/+4.3% to
-1.5%/-0.2%, and the median at >= 1 MiB moves through its 16-256 MiB rows, 1-9% too slow before
calibration (a mid-size shape the model does not have), and through NCCL's ring LL128 base
latency (14 -> 33 us) that the AllGather's 256 KiB-8 MiB plateau sets and the AllReduce's LL128
rows do not show (8.3% without that key); on Alps GH200 fitted on <= 128 GPUs, the 512- and
2,048-rank Tree/Simple rows at 16-256 MiB are 10-52% too fast before calibration already, and
the NICs' 0.974, right for the smaller sweeps, widens that (20.5% without it, 26.2% with).
Offering a configuration's base latency at one node count only where two collectives ran it
(NCCL prices one per algorithm and protocol for every collective) was tried too: Sophia's
AllGather plateau then went into the ring LL128 efficiency (1 -> 0.857), a bandwidth term that
reaches the AllReduce's 16-64 MiB ring LL128 rows further, and the held-out AllReduce went to
12.1% (10.1%); rows one collective alone shows move whichever key of their configuration is free.
Of the 18 held-out splits that miss 8% (2026-12-04), 10 miss it when their own rows are fitted on
themselves (``cross_validation --self-fit``; cause "mechanism", ``cross_validation.miss_cause``),
7 need keys of an algorithm, protocol or link their training rows do not run ("undetermined";
Polaris' AllReduce reaches 8.0% in-sample only at its edge), and one, Sophia's AllReduce (7.0%
before, 10.1% after), is made worse by keys its training rows set ("carry-over": the NICs, right
for its own 0.5-1 GiB rows, on top of a Ring/Simple per-call term the model overprices there, and
the ring LL128 base latency): per split, docs/calibration.md ("When a held-out split misses"). Three changes of what the fit shares
and weighs were measured on all 38 held-out splits and are not used (2026-12-04; count meeting 8%
/ median at >= 1 MiB, against 20 / 7.3% with the rules above): each sweep's rows weighted to one
sweep's worth (a 128-row sweep outvotes a 15-row one otherwise): 20 / 7.25%, the sizes splits'
median 4.35% -> 4.30% at >= 1 MiB but Polaris' 10.2% -> 10.5% and Sirius' 7.1% -> 7.2%, no
held-out split crossing the target; the per-call extra across the network scoped to its pattern
even where both were measured (an All-to-All across 2 racks of GB300 pays none of the ~400 us an
AllReduce's NVLS tree does there): 20 / 7.3%, and Sirius' held-out AllGather went from 11.6% to
18.9% over all sizes. On GB300 it does not move the 2-rack floor off NVLS tree's network latency
either (20.9 -> 208 us): every 2-rack row runs NVLS tree Simple, so a per-call extra and that
latency are one column, and the narrower key takes it (separable). The prior below extended
from the table latencies to every key with a deployed value (the links', NVLS, p2p and protocol
efficiencies, the per-hop and per-call extras), a pull toward the deployed defaults: 18 / 8.2%
(issue #309's H100 scale split 5.5% -> 12.3%, xxrjun's held-out All-to-All 6.0% -> 8.6%, against
GH200 fitted on <= 128 GPUs 26.2% -> 23.4% and Alibaba's All-to-All 4.7% -> 1.8%): not used.

Prior: the per-(link, algorithm, protocol) latencies are NCCL's own measured tables, and there
are many of them; a data set exercising one collective can usually explain its small sizes
either by one shared knob (the per-hop extra, an efficiency) or by moving the
one latency it happens to use. The objective adds ``latency_prior × log(value / datasheet)²``
per table latency (a Gaussian prior in log space; ridge regression, Tikhonov 1963), so the fit
prefers the shared explanation, which carries over to collectives it did not see, and moves a
table entry only where the rows insist. The weight was chosen by the cross-validation of
:mod:`simulator.calibration.cross_validation` (docs/validation-calibration.md): splits meeting
the target at weight 0 / 0.01 / 0.02 / 0.05 / 0.1 were 9 / 10 / 10 / 10 / 9 of 17 (2026-11-30);
the smallest weight of the plateau is used.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

import numpy as np

from simulator.calibration.nccl_log import Sweep

if TYPE_CHECKING:
    from simulator.calibration.measured import MeasuredSweep
from simulator.config.hardware import HardwareProfile, apply_overlay, merge_overlay
from simulator.config.nccl_overrides import scope_of, scoped
from simulator.costs import nccl_constants, nccl_graph, nccl_tuner
from simulator.costs.deployed import deployed_overrides
from simulator.errors import InputError
from simulator.vocabulary import canonical_algo, canonical_op

SENSITIVITY = 0.2  # |d log t / d log p| for a row to count towards a parameter
MIN_POINTS = 3
HUBER_K = 0.05  # residuals beyond 5% get down-weighted
LATENCY_PRIOR = 0.01  # weight of log(latency / datasheet)² per table latency (module docstring)
PRIOR_PREFIXES = ("nccl.hw_latency_us.", "nccl.base_latency_us.")
# Latencies whose datasheet value is 0 (NCCL's IB transport reports latencyInter = 0; a profile
# pinned to NCCL's own constants has no deployed per-hop extra) start here, so that the
# sensitivity test asks "would these rows notice a few microseconds?" rather than "do they notice
# 0.1 us?", which no row would.
ZERO_START_US = {"nccl.net_latency_us": 5.0, "nccl.net_hop_extra_us": 5.0, "nccl.net_call_extra_us": 5.0,
                 "nccl.p2p_peer_us": 5.0}
# The per-hop latency knob the fit moves across nodes (module docstring, "Transport and pattern").
NET_LATENCY_KNOB = "net_hop_extra_us"
# What the fit moves in its place where the network rows span one node count: the per-call cost
# of a call that crosses the network, one for every algorithm and protocol (module docstring,
# "Identifiability").
NET_CALL_KNOB = "net_call_extra_us"
# What the proxy adds in order for each remote peer of an NCCL All-to-All beyond the first
# (costs/nccl_p2p.py): the pattern's own, fitted where the All-to-All rows span two peer counts.
PEER_KNOB = "p2p_peer_us"
# The least fraction of NCCL's LL/LL128 rate a protocol efficiency may be fitted to (module
# docstring, "Bounds"): the lowest share a deployed fabric delivers across nodes, a tree's LL on
# 2 x 8 A100 over InfiniBand (costs/deployed.py, net_ll_channel_GBps).
PROTO_EFFICIENCY_FLOOR = 0.125
# The least time (us) the solver moves a latency to (module docstring, "Bounds"): nccl-tests prints
# times to 0.01 us, so a latency below it is one no measured row tells from 0, and a fit that ends
# there writes 0.
LATENCY_RESOLUTION_US = 0.01
EFFICIENCY_FIELDS = ("node.scale_up.efficiency", "node.nics.efficiency", "nccl.nvls_efficiency",
                     "nccl.proto_efficiency.ll", "nccl.proto_efficiency.ll128", "nccl.proto_efficiency.simple",
                     "nccl.proto_efficiency.net.ll", "nccl.proto_efficiency.net.ll128",
                     "nccl.proto_efficiency.net.simple", "nccl.p2p_efficiency")


# ------------------------------------------------------------------------------ measurements

@dataclass(frozen=True)
class MeasuredCollective:
    """One measured sweep, reduced to what the model needs to reproduce it."""

    source: str
    op: str
    ranks: int
    nodes: int
    gpus_per_node: int
    sizes: tuple[int, ...]
    times_s: tuple[float, ...]
    lines: tuple[int, ...] = ()
    algo: str | None = None  # pinned NCCL_ALGO, if the measurement pinned one
    gpus_per_process: int = 1  # nccl-tests -g: one host thread launches this many GPUs' kernels
    nccl_version: str | None = None  # the NCCL release the log or file header names

    @property
    def gpus(self) -> list[int]:
        """Global GPU ids on a topology whose nodes have ``gpus_per_node`` GPUs (node-major)."""
        return [n * self.gpus_per_node + j for n in range(self.nodes) for j in range(self.gpus_per_node)]

    def thinned(self, max_rows: int) -> "MeasuredCollective":
        """Every k-th row (sizes ascending) so that at most `max_rows` remain: a dense linear
        sweep (1 KiB steps) keeps its shape at a fraction of the fitting time."""
        if len(self.sizes) <= max_rows:
            return self
        order = sorted(range(len(self.sizes)), key=lambda i: self.sizes[i])
        keep = set(order[:: -(-len(order) // max_rows)])
        return self.subset([i in keep for i in range(len(self.sizes))])

    def subset(self, keep: Sequence[bool]) -> "MeasuredCollective":
        idx = [i for i, k in enumerate(keep) if k]
        return MeasuredCollective(
            self.source, self.op, self.ranks, self.nodes, self.gpus_per_node,
            tuple(self.sizes[i] for i in idx), tuple(self.times_s[i] for i in idx),
            tuple(self.lines[i] for i in idx) if self.lines else (), self.algo, self.gpus_per_process,
            self.nccl_version)


def layout_for(nranks: int, profile: HardwareProfile, *, gpus_per_node: int | None,
               source: str, line: int) -> tuple[int, int]:
    """(nodes, GPUs per node) of a measurement on this profile, or InputError naming file and line.

    GPUs per node: the user's ``--gpus-per-node``, else the profile's (a run of fewer ranks than a
    node has uses one node); the ranks must then fill whole nodes (16 ranks on 8-GPU nodes are two
    nodes, 12 are an error).
    """
    where = f"{source}:{line}" if line else source
    node_gpus = profile.node.gpus
    if gpus_per_node is not None:
        gpn = gpus_per_node
        if gpn < 1 or gpn > node_gpus:
            raise InputError(f"--gpus-per-node {gpn} does not fit {profile.name} nodes of {node_gpus} GPUs",
                             source="command line")
    else:
        gpn = min(nranks, node_gpus)
    if nranks % gpn:
        raise InputError(
            f"{nranks} ranks do not fill whole nodes of {gpn} GPUs ({profile.name} has {node_gpus} per node); "
            "expected a multiple of the GPUs per node, or pass --gpus-per-node", source=where)
    return nranks // gpn, gpn


def from_sweep(sweep: Sweep, profile: HardwareProfile, *, gpus_per_node: int | None = None,
               algo: str | None = None) -> MeasuredCollective:
    """A parsed nccl-tests run as a measurement on `profile` (rows with size > 0 and time > 0)."""
    from simulator.costs.collectives import OPS

    if sweep.op not in OPS:
        raise InputError(f"{sweep.op} is not a collective the model predicts; expected one of {', '.join(OPS)}",
                         source=f"{sweep.source}:{sweep.first_line}")
    nodes, gpn = layout_for(sweep.nranks, profile, gpus_per_node=gpus_per_node, source=sweep.source,
                            line=sweep.first_line)
    rows = [r for r in sweep.measured() if r.size_bytes > 0 and r.time_us > 0]
    return MeasuredCollective(sweep.source, sweep.op, sweep.nranks, nodes, gpn,
                              tuple(r.size_bytes for r in rows), tuple(r.time_s for r in rows),
                              tuple(r.line for r in rows), algo, max(1, sweep.ngpus), sweep.nccl_version)


def from_measured_csv(sweep: "MeasuredSweep", profile: HardwareProfile, *, gpus_per_node: int | None = None,
                      algo: str | None = None) -> MeasuredCollective:
    """A sweep CSV of ``data/nccl/`` (or one written the same way) as a measurement on `profile`.

    The collective and the rank count come from the ``# collective:`` header line (its first
    name, or the one after ``->``; ``N ranks``), the node count from ``N node(s)`` in the
    ``# hardware:`` line when ``gpus_per_node`` is not given, a pinned algorithm from
    ``NCCL_ALGO`` in the ``# env:`` line, and nccl-tests' ``-g`` from the collective line."""
    import re

    from simulator.costs.collectives import FLOWED, OPS

    where = str(sweep.path)
    line = sweep.meta.get("collective", "")
    named = line.split("->", 1)[1] if "->" in line else line
    op = canonical_op(re.split(r"[,(]", named, maxsplit=1)[0]) if named else None
    if op is None:
        raise InputError("expected a '# collective: <name>, ..., N ranks' header line naming the collective "
                         "(e.g. all_reduce_perf)", source=where, field="collective")
    if op not in OPS:
        raise InputError(f"{op} is not a collective the model predicts; expected one of {', '.join(OPS)}",
                         source=where, field="collective")
    m = re.search(r"(\d+)\s+ranks", line)
    if not m:
        raise InputError("expected the rank count ('N ranks') in the '# collective:' header line",
                         source=where, field="collective")
    nranks = int(m.group(1))
    if gpus_per_node is None:
        nodes_stated = re.search(r"(\d+)\s+nodes?\b|(\d+)\s+node\(s\)", sweep.meta.get("hardware", ""))
        if nodes_stated:
            n = int(nodes_stated.group(1) or nodes_stated.group(2))
            if n > 0 and nranks % n == 0 and nranks // n <= profile.node.gpus:
                gpus_per_node = nranks // n
    nodes, gpn = layout_for(nranks, profile, gpus_per_node=gpus_per_node, source=where, line=0)
    timed = [r for r in sweep.rows if r.size_bytes > 0 and r.time_us]
    # the out-of-place rows, or the in-place ones where a page printed only those (the same call, timed in place)
    rows = sorted([r for r in timed if not r.inplace] or timed, key=lambda r: r.size_bytes)
    if not rows:
        raise InputError("no row with a size and a time (a sweep without a time column cannot be fitted)",
                         source=where)
    pinned = algo or canonical_algo(sweep.env.get("NCCL_ALGO", ""), among=FLOWED)
    return MeasuredCollective(where, op, nranks, nodes, gpn, tuple(r.size_bytes for r in rows),
                              tuple(r.time_us * 1e-6 for r in rows if r.time_us), (), pinned, sweep.gpus_per_process,
                              sweep.nccl_version)


# ------------------------------------------------------------------------------ profiles

@dataclass(frozen=True)
class Param:
    """A profile field the collective model reads: ``path`` is dotted; under ``nccl.`` the rest
    is one key of the flat override mapping (``nccl.hw_latency_us.net.ring.simple``)."""

    path: str

    @property
    def scope(self) -> str | None:
        """The pattern scope of a scoped ``nccl.`` key (``coll``/``p2p``), else None."""
        return scope_of(self.path[len("nccl."):])[0] if self.path.startswith("nccl.") else None

    @property
    def bare(self) -> str:
        """The path without its pattern scope (``nccl.coll.net_latency_us`` -> ``nccl.net_latency_us``)."""
        return "nccl." + scope_of(self.path[len("nccl."):])[1] if self.scope else self.path

    @property
    def upper(self) -> float:
        return 1.0 if self.bare in EFFICIENCY_FIELDS or self.bare.startswith("nccl.proto_efficiency.") else math.inf

    @property
    def lower(self) -> float:
        """The least value the fit may give (module docstring, "Bounds"): 0 but for a protocol's
        efficiency, which is floored at :data:`PROTO_EFFICIENCY_FLOOR`."""
        return PROTO_EFFICIENCY_FLOOR if self.bare.startswith("nccl.proto_efficiency.") else 0.0

    @property
    def solver_lower(self) -> float:
        """The least value the solver steps to: :attr:`lower`, but for a time, which is floored at
        :data:`LATENCY_RESOLUTION_US` (module docstring, "Bounds"): in log space a latency's bound of
        0 is never reached, and a key the rows want at 0 would walk one clipped step down per
        iteration for as long as the solver runs."""
        return max(self.lower, LATENCY_RESOLUTION_US) if self.is_time else self.lower

    @property
    def is_time(self) -> bool:
        """Whether the key is a time in microseconds (a latency, a per-hop or per-call extra, the
        kernel launch): one the model adds, whose least meaningful value is 0."""
        return self.bare.endswith("_us")

    def clamp(self, value: float) -> float:
        return min(max(value, self.lower), self.upper)

    def get(self, profile: HardwareProfile) -> float:
        if self.path.startswith("nccl."):
            key = self.bare[len("nccl."):]
            own = scoped(profile.nccl_overrides, self.scope)
            if key in own:
                return own[key]
            return _tuner_default(profile, key, self.scope)
        obj: Any = profile
        for part in self.path.split("."):
            obj = getattr(obj, part)
        return float(obj)

    def overlay(self, value: float) -> dict[str, Any]:
        if self.path.startswith("nccl."):
            return {"nccl": {self.path[len("nccl."):]: float(value)}}
        out: dict[str, Any] = {}
        cur = out
        parts = self.path.split(".")
        for part in parts[:-1]:
            cur = cur.setdefault(part, {})
        cur[parts[-1]] = float(value)
        return out


def _tuner_default(profile: HardwareProfile, key: str, scope: str | None = None) -> float:
    """The value the tuner uses for an ``nccl.`` key (without its scope) the profile does not
    override for patterns of ``scope``."""
    k = nccl_constants.constants_from_overrides(scoped(profile.nccl_overrides, scope), version=profile.nccl_version,
                                                under=deployed_overrides(profile))
    parts = key.split(".")
    if parts[0] == "hw_latency_us":
        return float(k.hw_latency_us[parts[1]][parts[2]][nccl_constants.PROTOS.index(parts[3])])
    if parts[0] == "base_latency_us":
        return float(k.base_latency_us[parts[1]][nccl_constants.PROTOS.index(parts[2])])
    if key == "ll_max_bw_GBps":
        ctx = nccl_graph.context_from_profile(profile, 2, 1)
        return float(nccl_tuner.ll_max_bw_GBps(ctx))
    if parts[0] == "proto_efficiency":
        table = k.net_proto_efficiency if parts[1] == "net" else k.proto_efficiency
        algo = parts[-2] if parts[-2] in table else "ring"
        return float(table[algo][nccl_constants.PROTOS.index(parts[-1])])
    if key == "p2p_efficiency":
        return float(k.p2p_efficiency)
    if key == "p2p_channel_GBps":
        ctx = nccl_graph.context_from_profile(profile, 2, 1)
        return float(nccl_tuner.p2p_channel_GBps(ctx, "nvlink") or nccl_constants.NVLINK_PER_LINK_BW["ampere"])
    if key == "net_latency_us":
        return float(k.net_latency_us)
    if key == "net_hop_extra_us":
        return float(k.net_hop_extra_us)
    if key == "net_call_extra_us":
        return float(k.net_call_extra_us)
    if key == "p2p_peer_us":
        return float(k.p2p_peer_us)
    if key == "nvls_efficiency":
        return float(nccl_constants.NVLS_EFFICIENCY.get(nccl_graph.arch_row(profile.gpu.arch), 0.0))
    raise KeyError(key)


def overlay_of(params: dict[Param, float]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for p, v in params.items():
        out = merge_overlay(out, p.overlay(v))
    return out


# ------------------------------------------------------------------------------ prediction

class Predictor:
    """Predicted times of measurements on a profile; one cost model (topology and its caches)
    per node count. ``geometry``: the topology, layouts and flow patterns per node count, shared
    with other predictors whose profiles have the same links and routes (the fit's perturbed
    profiles differ in latencies, efficiencies and tuner constants only: each gets a copy of the
    topology that reads its own profile, not a new build); None: this predictor's own."""

    def __init__(self, profile: HardwareProfile, geometry: dict | None = None) -> None:
        self.profile = profile
        self._costs: dict[tuple[int, int], Any] = {}
        self._geometry: dict = {} if geometry is None else geometry

    def costs(self, nodes: int, gpus_per_node: int) -> Any:
        """The :class:`~simulator.costs.model.CostModel` of ``nodes`` nodes of the profile."""
        from simulator.costs.model import CostModel
        from simulator.hardware.topology import build_topology

        key = (nodes, gpus_per_node)
        if key not in self._costs:
            geo = self._geometry.setdefault(key, {})
            base = geo.get("topology")
            if base is None:
                topo = geo["topology"] = build_topology(self.profile, nodes)
            else:  # the same links and routes: only what the profile says about them differs
                topo = copy.copy(base)
                topo.profile = self.profile
            self._costs[key] = CostModel(topo, geometry=geo)
        return self._costs[key]

    def results(self, m: MeasuredCollective) -> list[Any]:
        from simulator.replay.single_collective import time_collective

        costs = self.costs(m.nodes, m.gpus_per_node)
        node = self.profile.node.gpus
        gpus = [n * node + j for n in range(m.nodes) for j in range(m.gpus_per_node)]
        floor = m.gpus_per_process * self.profile.gpu.kernel_launch_us * 1e-6 if m.gpus_per_process > 1 else 0.0
        return [time_collective(m.op, gpus, s, costs, algo=m.algo, launch_floor_s=floor, event_driven=False)
                for s in m.sizes]

    def times(self, m: MeasuredCollective) -> np.ndarray:
        return np.array([r.time_s for r in self.results(m)])


def busbw_errors(profile: HardwareProfile, m: MeasuredCollective) -> np.ndarray:
    """Predicted busbw / measured busbw − 1 per row (= measured time / predicted time − 1)."""
    return np.asarray(m.times_s) / Predictor(profile).times(m) - 1.0


# ------------------------------------------------------------------------------ fitting

@dataclass(frozen=True)
class FittedParam:
    param: Param
    datasheet: float
    value: float
    points: int  # rows sensitive to it
    fitted: bool
    separable: bool = True  # False: the rows cannot tell it from the other fitted keys (module docstring)


@dataclass
class CollectiveFit:
    profile: HardwareProfile  # the base profile with the fit applied
    params: list[FittedParam]
    warnings: list[str] = field(default_factory=list)
    iterations: int = 0

    @property
    def overlay(self) -> dict[str, Any]:
        """The fitted fields, to 5 significant digits (far below what the data determine)."""
        return overlay_of({p.param: float(f"{p.value:.5g}") for p in self.params if p.fitted})


def candidate_params(profile: HardwareProfile, measurements: Iterable[MeasuredCollective]) -> list[Param]:
    """Every latency and efficiency field the measured configurations could exercise, each
    scoped to the patterns it may move (module docstring, "Transport and pattern"): the links'
    efficiencies are the transport's; NCCL's table latencies and the pattern knobs are scoped to
    the pattern of the rows that exercise them (``nccl.coll.*`` for ring/tree/NVLS, ``nccl.p2p.*``
    for All-to-All and SendRecv); ``net_hop_extra_us`` is the transport's when both patterns were
    measured and the measured pattern's own otherwise."""
    from simulator.costs.collectives import net_p2p_protocol, pattern_scope

    pred = Predictor(profile)
    intra = "nvlink" if profile.node.scale_up.kind in ("nvswitch", "mesh") else "pci"
    out: dict[str, None] = {}
    measured = list(measurements)
    both = len({pattern_scope(m.op) for m in measured}) == 2
    hop_counts = _hop_counts(profile, measured)
    configs: dict[tuple[str, str, str], set[tuple[int, int]]] = {}
    proto_algos: dict[str, set[str]] = {}  # protocol efficiency key (algorithm left open) -> algorithms measured
    proxied: set[float] = set()  # remote peers an All-to-All's proxy adds in order, per measured configuration
    for m in measured:
        fam = pattern_scope(m.op)
        costs = pred.costs(m.nodes, m.gpus_per_node)
        gpus = [n * profile.node.gpus + j for n in range(m.nodes) for j in range(m.gpus_per_node)]
        net = profile.domains(m.nodes) > 1  # crosses the scale-out network (not one NVLink domain)
        link = "net" if net else intra
        out["node.nics.efficiency" if net else "node.scale_up.efficiency"] = None  # the link's
        if net:  # every inter-node hop pays the transport's extra; at one hop count that is one more
            # constant per call, the same for every algorithm and protocol (module docstring, "Identifiability")
            knob = NET_LATENCY_KNOB if hop_counts >= 2 else NET_CALL_KNOB
            out[f"nccl.{knob}" if both else f"nccl.{fam}.{knob}"] = None
        direct_proto: str | None = None  # the protocol of one of its All-to-All plans across nodes
        for s in m.sizes:
            plan = costs.plan(m.op, gpus, s, algo=m.algo)
            algo = {"direct": "ring", "p2p": "ring", "hierarchical": "ring"}.get(plan.algorithm, plan.algorithm)
            # a SendRecv across nodes waits on its network send, which runs Simple (net_p2p_protocol)
            timed = net_p2p_protocol(plan.protocol) if plan.algorithm == "p2p" and net else plan.protocol
            out[f"nccl.{fam}.hw_latency_us.{link}.{algo}.{timed}"] = None
            configs.setdefault((fam, algo, timed), set()).add((m.ranks, m.nodes))
            if plan.protocol == "ll" and fam == "coll" and profile.collective_library == "nccl":
                out["nccl.coll.ll_max_bw_GBps"] = None  # RCCL has no LL cap (nccl_tuner.ll_max_bw_GBps)
            if plan.algorithm in ("ring", "tree", "hierarchical") and plan.protocol in ("ll", "ll128"):
                scope = "net." if net else ""  # Simple is the links' own efficiency
                key = f"nccl.coll.proto_efficiency.{scope}{{}}{plan.protocol}"
                out.setdefault(key, None)
                proto_algos.setdefault(key, set()).add(algo)
            if plan.algorithm == "direct" or (plan.algorithm == "p2p" and net):
                out["nccl.p2p.p2p_efficiency"] = None
            if plan.algorithm in ("direct", "p2p"):
                out["nccl.p2p.p2p_channel_GBps"] = None
            if plan.algorithm == "direct" and net and direct_proto is None:
                direct_proto = plan.protocol
            if algo == "tree" and net and m.gpus_per_node > 1:
                out[f"nccl.coll.hw_latency_us.{intra}.tree.{plan.protocol}"] = None
            if plan.algorithm in ("nvls", "nvls_tree"):
                out["nccl.coll.nvls_efficiency"] = None
        if m.gpus_per_process > 1:
            out["gpu.kernel_launch_us"] = None
        if direct_proto is not None:  # the peers are the configuration's, whatever the size or protocol
            peers = costs.proxied_peers_in_latency(m.op, gpus, "direct", direct_proto)
            if peers > 0:
                proxied.add(peers)
    # A protocol efficiency is the measured algorithm's own; one key for ring and tree where the
    # rows measured both (module docstring, "Transport and pattern").
    for key, algos in proto_algos.items():
        del out[key]
        out[key.format("" if len(algos) > 1 else f"{next(iter(algos))}.")] = None
    # NCCL's base latency and the per-hop latencies are collinear within one communicator size
    # (t_lat = base + steps × hop): which of them the rows determine is left to the Jacobian
    # (:func:`separable`, module docstring "Identifiability"). At one node count the per-call extra,
    # common to every configuration, holds what the per-hop extra would have; a configuration's
    # own base latency is a candidate beside it, sensitive only to its own rows.
    for (fam, algo, proto), seen in configs.items():
        if len(seen) >= 2 or hop_counts < 2:
            out[f"nccl.{fam}.base_latency_us.{algo}.{proto}"] = None
    # The proxy's cost per remote All-to-All peer multiplies the peers it handles in order; at one
    # count of them it is one more constant per call, the base latency's (module docstring,
    # "Identifiability"), so it is a candidate only where the rows span two counts or more.
    if len(proxied) >= 2:
        out[f"nccl.p2p.{PEER_KNOB}"] = None
    return [Param(p) for p in out]


def _network_hop_counts(profile: HardwareProfile, measured: Sequence[MeasuredCollective], scope: str | None) -> int:
    """How many distinct numbers of network domains the measurements that cross the network span
    (of pattern ``scope``, or of every pattern for None): the per-hop extra multiplies a call's
    network crossings, which are set by the communicator's node count, so with one count it is
    one more constant per call (module docstring, "Identifiability")."""
    from simulator.costs.collectives import pattern_scope

    return len({profile.domains(m.nodes) for m in measured
                if profile.domains(m.nodes) > 1 and (scope is None or pattern_scope(m.op) == scope)})


def _hop_counts(profile: HardwareProfile, measured: Sequence[MeasuredCollective]) -> int:
    """:func:`_network_hop_counts` of the patterns the per-hop extra would be fitted for: every
    pattern where both were measured, else the measured one."""
    from simulator.costs.collectives import pattern_scope

    scopes = {pattern_scope(m.op) for m in measured}
    return _network_hop_counts(profile, measured, None if len(scopes) != 1 else next(iter(scopes))) if measured else 0


def _per_call_rows(profile: HardwareProfile, ms: Sequence[MeasuredCollective], cands: Sequence[Param],
                   evaluate: _Evaluator) -> np.ndarray:
    """Per candidate: for the per-call extra across the network (:data:`NET_CALL_KNOB`), the rows
    of its patterns sensitive to the per-hop extra (|d log t / d log p| >= SENSITIVITY at the
    profile's value); 0 for other keys. At one hop count the per-hop extra is one more constant
    per call, and the per-call extra stands for it (module docstring, "Identifiability"): it is
    offered the rows that would have determined the extra, not only those its own start value
    moves (5 us under a 220 us measured floor moves no row by 20%, a 15 us extra paid on each of
    4 crossings does)."""
    from simulator.costs.collectives import pattern_scope

    out = np.zeros(len(cands), dtype=int)
    want = [j for j, p in enumerate(cands) if p.bare == f"nccl.{NET_CALL_KNOB}"]
    if not want:
        return out
    hop = Param(f"nccl.{NET_LATENCY_KNOB}")
    value = hop.get(profile) or ZERO_START_US[hop.bare]
    sens = _row_sensitivity(evaluate, [hop], {hop: value})[0][:, 0]
    scopes = np.concatenate([np.full(len(m.sizes), pattern_scope(m.op), dtype=object) for m in ms])
    for j in want:
        out[j] = int(np.sum((sens >= SENSITIVITY) & ((scopes == cands[j].scope) | (cands[j].scope is None))))
    return out


def _floor_rows(cands: Sequence[Param], evaluate: _Evaluator) -> np.ndarray:
    """Per candidate: for a protocol's efficiency, the rows sensitive to it (|d log t / d log p|
    >= SENSITIVITY) with it at :data:`PROTO_EFFICIENCY_FLOOR`, the other keys at the profile's
    values; 0 for other keys. At its start (0.9 of NCCL's rate) another cap of the protocol's
    channels may bind (the LL cap, the links' share), so the efficiency moves few rows there
    even where the measured rows run far below it: a 2/4-node ring LL AllGather at 0.3 moves 1
    row at 0.9 and every LL row at the floor. Its range is [floor, 1], and a key whose rows
    depend on it anywhere in that range is one the data can determine; the fit then starts it
    at its start value as for any other key."""
    out = np.zeros(len(cands), dtype=int)
    for j, p in enumerate(cands):
        if p.lower > 0 and p.upper < math.inf:
            sens = _row_sensitivity(evaluate, [p], {p: p.lower})[0][:, 0]
            out[j] = int(np.sum(sens >= SENSITIVITY))
    return out


# Breadth of what a key moves beyond the rows that fit it, widest first (module docstring,
# "Identifiability"): when the rows cannot tell two keys apart, the narrower one takes the effect.
def breadth(param: Param) -> int:
    """0 for the links' efficiencies and the launch cost (every pattern), 1 for the transport's
    per-hop or per-call extra, 2 for a pattern's shared knobs (its per-hop or per-call extra,
    NCCL's LL cap, NVLS and p2p rates), 3 for a protocol's efficiency over both algorithms, 4 for one algorithm's protocol
    efficiency and NCCL's per-call base latency (every link class), 5 for one link's table latency."""
    bare = param.bare
    if not bare.startswith("nccl."):
        return 0
    if param.scope is None and bare in (f"nccl.{NET_LATENCY_KNOB}", f"nccl.{NET_CALL_KNOB}"):
        return 1
    key = bare[len("nccl."):].split(".")
    if key[0] == "proto_efficiency":
        algo_given = len(key) >= 3 and key[-2] in ("ring", "tree")
        return 4 if algo_given else 3
    if key[0] == "base_latency_us":
        return 4
    if key[0] == "hw_latency_us":
        return 5
    return 2


# The largest variance inflation factor a fitted key may have: 1 / (1 - R²) of its Jacobian column
# regressed on the other fitted keys' columns; above 10 "multicollinearity is unduly influencing
# the least squares estimates" (Marquardt 1970, Technometrics 12(3) p. 610; Kutner et al., Applied
# Linear Statistical Models, 5th ed., §10.5).
MAX_VIF = 10.0


def separable(params: Sequence[Param], J: np.ndarray, max_vif: float = MAX_VIF) -> list[Param]:
    """The keys of ``params`` the rows can tell apart: each column of ``J`` (d log t / d log p per
    row, one column per key) normalised, and, while some key's variance inflation factor exceeds
    ``max_vif`` (its column lies within sin θ = 1/sqrt(max_vif) of the span of the others), the
    widest such key (:func:`breadth`; the less separable one among equals) is dropped and the rest
    re-tested (module docstring, "Identifiability")."""
    norms = np.linalg.norm(J, axis=0)
    keep = [j for j in range(len(params)) if norms[j] > 0]
    Jn = J[:, keep] / norms[keep] if keep else J[:, :0]
    idx = list(range(len(keep)))
    floor = 1.0 / math.sqrt(max_vif)
    while len(idx) > 1:
        seps = {}
        for k in idx:
            others = Jn[:, [i for i in idx if i != k]]
            c, *_ = np.linalg.lstsq(others, Jn[:, k], rcond=None)
            seps[k] = float(np.linalg.norm(Jn[:, k] - others @ c))
        bad = [k for k in idx if seps[k] < floor]
        if not bad:
            break
        drop = min(bad, key=lambda k: (breadth(params[keep[k]]), seps[k]))
        idx.remove(drop)
    return [params[keep[k]] for k in idx]


def _routes_unchanged(param: Param) -> bool:
    """Whether ``param`` leaves the topology's routes as they are (a latency, an efficiency, a
    tuner constant or the launch cost), so that perturbed profiles can share flow patterns."""
    return param.path.startswith(("nccl.", "gpu.")) or param.path.endswith(".efficiency")


class _Evaluator:
    """The fit's predictions of every row at a point (log parameter values), with the flow
    patterns shared among the perturbed profiles when no parameter changes the routes. (Each
    point is new: the solver and the sensitivity passes never ask for one twice.)"""

    def __init__(self, base: HardwareProfile, ms: Sequence[MeasuredCollective]) -> None:
        self.base, self.ms = base, ms
        self._geometry: dict = {}

    def __call__(self, params: Sequence[Param], logv: np.ndarray) -> np.ndarray:
        values = {p: p.clamp(float(np.exp(x))) for p, x in zip(params, logv)}
        prof = apply_overlay(self.base, overlay_of(values)) if values else self.base
        pred = Predictor(prof, self._geometry if all(_routes_unchanged(p) for p in params) else None)
        return np.concatenate([pred.times(m) for m in self.ms]) if self.ms else np.zeros(0)


def _jacobian(f: Callable[[np.ndarray], np.ndarray], x: np.ndarray, f0: np.ndarray, step: float) -> np.ndarray:
    J = np.zeros((f0.size, x.size))
    for j in range(x.size):
        xs = x.copy()
        xs[j] += step
        J[:, j] = (np.log(f(xs)) - np.log(f0)) / step
    return J


def _sensitive_rows(evaluate: _Evaluator, cands: Sequence[Param], point: dict[Param, float]
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Rows whose predicted time moves by |d log t / d log p| >= SENSITIVITY, per candidate,
    at `point`; either direction, as a parameter may matter only below or only above its value
    (a cap that binds on one side). Also the central-difference Jacobian at `point` (rows x
    candidates), for :func:`separable`."""
    if not cands:
        return np.zeros(0, dtype=int), np.zeros((0, 0))
    sens, central = _row_sensitivity(evaluate, cands, point)
    return (sens >= SENSITIVITY).sum(axis=0), central


def _row_sensitivity(evaluate: _Evaluator, cands: Sequence[Param], point: dict[Param, float]
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Per row and candidate, |d log t / d log p| at `point`, the larger of a step of 0.1 up
    and down, and the central-difference Jacobian (rows x candidates)."""
    x = np.log(np.array([point[p] for p in cands], dtype=float))
    f = lambda v: evaluate(cands, v)  # noqa: E731
    t0 = f(x)
    up, down = _jacobian(f, x, t0, 0.1), _jacobian(f, x, t0, -0.1)
    return np.maximum(np.abs(up), np.abs(down)), (up + down) / 2


def _solve(evaluate: _Evaluator, params: Sequence[Param], x: np.ndarray, x0: np.ndarray, root: np.ndarray,
           meas: np.ndarray, huber_k: float, max_iter: int) -> tuple[np.ndarray, int]:
    """Levenberg–Marquardt with Huber reweighting on log time, plus the prior ``root · (x − x0)``."""
    f = lambda v: evaluate(params, v)  # noqa: E731

    def cost(r: np.ndarray, w: np.ndarray, v: np.ndarray) -> float:
        return float(np.sum(w * r * r) + np.sum((root * (v - x0)) ** 2))

    upper = np.log([p.upper for p in params])
    with np.errstate(divide="ignore"):
        lower = np.log([p.solver_lower for p in params])
    lam, it = 1e-2, 0
    pred = f(x)
    r = np.log(pred / meas)
    for it in range(1, max_iter + 1):
        w = np.where(np.abs(r) <= huber_k, 1.0, huber_k / np.maximum(np.abs(r), 1e-300))
        c0 = cost(r, w, x)
        J = _jacobian(f, x, pred, 0.01)
        A = J.T @ (w[:, None] * J) + np.diag(root ** 2)
        g = J.T @ (w * r) + root ** 2 * (x - x0)
        improved, step = False, 0.0
        for _ in range(8):
            dx = -np.linalg.solve(A + lam * np.diag(np.diag(A) + 1e-9), g)
            dx = np.clip(dx, -1.0, 1.0)
            x_new = np.clip(x + dx, lower, upper)
            pred_new = f(x_new)
            r_new = np.log(pred_new / meas)
            if cost(r_new, w, x_new) < c0:
                step = float(np.max(np.abs(x_new - x)))  # the step taken: a key held at a bound moves no more
                x, pred, r = x_new, pred_new, r_new
                lam = max(lam / 3, 1e-6)
                improved = True
                break
            lam *= 4
        if not improved or step < 1e-4:
            break
    return x, it


def fit_collectives(profile: HardwareProfile, measurements: Sequence[MeasuredCollective], *,
                    min_points: int = MIN_POINTS, huber_k: float = HUBER_K, max_iter: int = 30,
                    candidates: Sequence[Param] | None = None,
                    latency_prior: float = LATENCY_PRIOR, rounds: int = 3, separate: bool = True) -> CollectiveFit:
    """Robust least-squares fit of the profile's collective parameters to the measurements.

    Which parameters are free is decided by the rows sensitive to them, first at the datasheet
    values, then again at the fitted point: fitting one knob can move rows onto another (a fitted
    efficiency or hop latency makes rows of another protocol the slow part of a call). A parameter that becomes determined is freed and the fit repeated, up to
    `rounds` times.
    """
    ms = [m for m in measurements if m.sizes]
    if not ms:
        raise InputError("no measured collective rows to fit (sizes > 0 with a time)")
    cands = list(candidates) if candidates is not None else candidate_params(profile, ms)
    meas = np.concatenate([np.asarray(m.times_s, dtype=float) for m in ms])
    datasheet = {p: p.get(profile) for p in cands}
    # Zero-valued datasheet latencies cannot be scaled in log space: start them at a small value.
    # Efficiencies start 10% below the datasheet: at the datasheet value another cap (NCCL's
    # per-channel bandwidth) may bind, which would hide their effect from the gradient.
    start = {p: (0.9 * v if p.upper < math.inf else v) if v > 0 else ZERO_START_US.get(p.bare, 0.1)
             for p, v in datasheet.items()}
    point = dict(start)
    evaluate = _Evaluator(profile, ms)
    counts, J = _sensitive_rows(evaluate, cands, point)
    if separate and _hop_counts(profile, ms) < 2:
        counts = np.maximum(counts, _per_call_rows(profile, ms, cands, evaluate))
    counts = np.maximum(counts, _floor_rows(cands, evaluate))
    params: list[Param] = []
    inseparable: set[Param] = set()
    it = 0
    for _ in range(max(1, rounds)):
        sensitive = [j for j, p in enumerate(cands) if counts[j] >= min_points]
        free = separable([cands[j] for j in sensitive], J[:, sensitive]) if separate else \
            [cands[j] for j in sensitive]
        inseparable = {cands[j] for j in sensitive} - set(free)
        if params and set(free) == set(params):
            break
        for p in set(params) - set(free):  # no longer separable at the fitted point: back to its start
            point[p] = start[p]
        params = [p for p in cands if p in set(free)]
        if not params:
            break
        x = np.log(np.array([point[p] for p in params], dtype=float))
        # Prior residuals sqrt(prior) · (x − x0) on the table latencies (zero-valued datasheet
        # entries have no scale to anchor to and stay free).
        x0 = np.log(np.array([datasheet[p] if datasheet[p] > 0 else start[p] for p in params], dtype=float))
        root = np.sqrt(np.array([latency_prior if p.bare.startswith(PRIOR_PREFIXES) and datasheet[p] > 0 else 0.0
                                 for p in params]))
        x, it = _solve(evaluate, params, x, x0, root, meas, huber_k, max_iter)
        point.update({p: p.clamp(float(np.exp(v))) for p, v in zip(params, x)})
        new_counts, J = _sensitive_rows(evaluate, cands, point)
        counts = np.maximum(counts, new_counts)
    # A time at the solver's floor is the rows asking for none of it: the key's bound, 0 (module
    # docstring, "Bounds").
    fitted_values = {p: 0.0 if p.is_time and point[p] <= LATENCY_RESOLUTION_US * (1 + 1e-9) else point[p]
                     for p in params}
    warnings = [f"{p.path}: only {int(counts[j])} measured row(s) depend on it (need {min_points}); "
                f"left at the datasheet value {datasheet[p]:g}" if p not in inseparable else
                f"{p.path}: the measured rows cannot tell it from the other fitted keys (variance inflation "
                f"above {MAX_VIF:g}); left at the datasheet value {datasheet[p]:g}"
                for j, p in enumerate(cands) if p not in fitted_values]
    out = [FittedParam(p, datasheet[p], fitted_values.get(p, datasheet[p]), int(counts[j]), p in fitted_values,
                       p not in inseparable) for j, p in enumerate(cands)]
    for fp in out:
        if fp.fitted and fp.param.upper < math.inf and fp.value >= fp.param.upper - 1e-9:
            warnings.append(f"{fp.param.path}: fit reached the upper bound 1.0 (the model's other caps may limit it)")
        if fp.fitted and fp.param.is_time and fp.value == 0.0:
            warnings.append(f"{fp.param.path}: fit reached the lower bound 0 (the measured rows are faster than the "
                            "model with none of it; another term is too slow for them)")
    new_profile = apply_overlay(profile, overlay_of(fitted_values)) if fitted_values else profile
    return CollectiveFit(new_profile, out, warnings, it)

"""The deployed-fabric constants (simulator/costs/deployed.py): they change time, never NCCL's
choice; a calibrated profile's keys refine them key by key; the bundled table is what the fit gives; and
leave one system out, each system's error under constants fitted without it stays within the
bounds below (the issue's targets where met, today's figure + margin where not)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest

from simulator.calibration.collective_validation import (
    TARGET_MEDIAN_ALL, TARGET_MEDIAN_BIG, TARGET_SIGNED, _pooled, case_for, predict_sweep,
)
from simulator.calibration.measured import DATA_DIR, read_sweep
from simulator.config.hardware import load_profile
from simulator.costs.collectives import plan_collective
from simulator.costs.deployed import DEPLOYED, NEUTRAL, DeployedNet
from simulator.hardware.topology import build_topology
from simulator.units import MiB


def _with_nccl(profile, nccl):
    return profile.model_copy(update={"nccl": nccl})


def test_deployed_constants_change_time_not_choice():
    base = load_profile("dgx-h100")
    deployed = build_topology(base, 4)
    neutral = build_topology(_with_nccl(base, NEUTRAL.overrides()), 4)
    gpus = list(range(32))
    for size in [2 ** k for k in range(10, 34, 3)]:
        a = plan_collective("allreduce", gpus, size, deployed)
        b = plan_collective("allreduce", gpus, size, neutral)
        assert (a.algorithm, a.protocol) == (b.algorithm, b.protocol)
        assert a.latency_s >= b.latency_s and a.wire_bytes >= b.wire_bytes


def test_calibrated_keys_refine_the_deployed_constants_key_by_key():
    """A profile's own nccl: keys stack on its transport's deployed constants: a fitted ring LL
    efficiency or LL rate leaves tree LL, LL128, Simple and the per-hop extra at their deployed
    values; a key for every algorithm in the profile wins over the deployed per-algorithm keys."""
    from simulator.costs.nccl_graph import context_from_profile

    ib = DEPLOYED["infiniband"]
    base = load_profile("dgx-h100")
    k = context_from_profile(base, 16, 2, "coll").constants
    assert k.net_hop_extra_us == ib.net_hop_extra_us
    assert k.net_proto_efficiency["ring"] == (1.0, ib.ring[1], 1.0)
    assert k.net_proto_efficiency["tree"] == (1.0, ib.tree[1], 1.0)
    # a deployed LL rate of 0 is "NCCL's own" (no cap: None)
    assert dict(k.net_ll_channel_GBps) == {"ring": ib.ring[0] or None, "tree": ib.tree[0] or None}
    calibrated = _with_nccl(base, {"coll.proto_efficiency.net.ring.ll": 0.31, "coll.net_ll_channel_GBps.ring": 2.5,
                                   "p2p_efficiency": 0.9})
    k = context_from_profile(calibrated, 16, 2, "coll").constants
    assert k.net_hop_extra_us == ib.net_hop_extra_us and k.p2p_efficiency == 0.9
    assert k.net_proto_efficiency["ring"] == (0.31, ib.ring[1], 1.0)
    assert k.net_proto_efficiency["tree"] == (1.0, ib.tree[1], 1.0)
    assert dict(k.net_ll_channel_GBps) == {"ring": 2.5, "tree": ib.tree[0] or None}
    p2p = context_from_profile(calibrated, 16, 2, "p2p").constants
    assert p2p.net_proto_efficiency["ring"][0] == 1.0 and p2p.net_ll_channel_GBps["ring"] == (ib.ring[0] or None)
    generic = _with_nccl(base, {"proto_efficiency.net.ll": 0.5, "net_ll_channel_GBps": 3.0})
    k = context_from_profile(generic, 16, 2, "coll").constants
    assert k.net_proto_efficiency["ring"][0] == k.net_proto_efficiency["tree"][0] == 0.5
    assert k.net_ll_channel_GBps["ring"] == k.net_ll_channel_GBps["tree"] == 3.0


def test_fit_decomposition_reproduces_the_prediction():
    """The fit predicts a row as latency + hops × extra + flows / efficiency (LL128) or
    max(flows, busiest channel's payload / rate) (LL) from one neutral prediction; that must equal
    planning again with those constants, on a tree/LL AllReduce (2 x 8) and a ring/LL one (2 x 1)."""
    from simulator.calibration.deployed_fit import candidate_times, decompose

    for name, net in (("a100x16_allreduce_2node_dgx_ib", DeployedNet(13.0, (0.8, 0.7), (0.6, 0.6), "test")),
                      ("a100pcie_x2_allreduce_2node_ib_linear1k", DeployedNet(3.0, (0.5, 0.9), (2.0, 0.6), "test"))):
        sweep = read_sweep(DATA_DIR / f"{name}.csv")
        case = case_for(sweep)
        neutral = predict_sweep(sweep, case, table={"other": NEUTRAL})
        exact = predict_sweep(sweep, case, table={"other": net})
        d = decompose([neutral])[case.system]
        assert (d.ll_channel_us > 0).any()
        t = candidate_times(d, np.asarray([[net.net_hop_extra_us, *net.ring, *net.tree]]))[:, 0]
        assert t == pytest.approx([p.predicted_time_us for p in exact.points], rel=1e-6), name


def test_fit_decomposition_reproduces_a_rings_ll128_fraction_on_its_ctas():
    """A ring's LL128 fraction slows its CTAs, not the links (collectives.channel_fraction), so the fit
    times such a row as max(link_us, flow_us / fraction): planning again must give the same on rings of
    two CTAs per NIC (2 x 8 H200 over RoCE, 2-32 MiB: the fraction shows) and of four (128 x 8 H100 with
    NCCL_MIN_NCHANNELS=32: it shows only below 45 / 73.4 = 0.61 of NCCL's rate)."""
    from simulator.calibration.deployed_fit import candidate_times, decompose

    for name in ("h200x16_allgather_2node_gcp_a3ultra_roce", "h100x1024_allreduce_128node_issue322_ringll128"):
        sweep = read_sweep(DATA_DIR / f"{name}.csv")
        case = case_for(sweep)
        d = decompose([predict_sweep(sweep, case, table={"other": NEUTRAL})])[case.system]
        ring_ll128 = d.scaled & (d.column == 2)
        assert ring_ll128.any()
        for fraction in (0.9, 0.5, 0.3):
            net = DeployedNet(7.0, (0.0, fraction), (0.0, 0.8), "test")
            exact = predict_sweep(sweep, case, table={"other": net})
            t = candidate_times(d, np.asarray([[net.net_hop_extra_us, *net.ring, *net.tree]]))[:, 0]
            assert t == pytest.approx([p.predicted_time_us for p in exact.points], rel=1e-6), (name, fraction)
    assert (d.link_us[ring_ll128] > 0).all()  # the 128-node rows: the NIC share holds at x 0.9


def test_fit_decomposition_reproduces_the_per_message_cost():
    """On a host-message transport (p4de: EFA's SENDRECV path) the fit times the neutral prediction
    with messages × the per-message cost, overlapping a Tree/Simple call's bytes
    (collectives.messages_overlap); that must equal planning again with that cost."""
    from simulator.calibration.deployed_fit import candidate_times, decompose

    sweep = read_sweep(DATA_DIR / "a100x16_allreduce_2node_awsp4de_efa.csv")
    case = case_for(sweep)
    neutral = predict_sweep(sweep, case, table={"other": NEUTRAL})
    net = DeployedNet(13.0, (1.0, 1.0), (1.0, 1.0), "test", message_us=9.0)
    exact = predict_sweep(sweep, case, table={"other": net})
    d = decompose([neutral])[case.system]
    assert d.host_messages and d.messages.max() >= 512 and d.overlap.all()
    t = candidate_times(d, np.asarray([[net.net_hop_extra_us, *net.ring, *net.tree]]), net.message_us)[:, 0]
    assert t == pytest.approx([p.predicted_time_us for p in exact.points], rel=1e-6)


def test_fit_decomposition_reproduces_the_injected_copy_cost():
    """On Slingshot with CXI alt_read (Polaris, 2 x 4 A100) the fit times an All-to-All's rows with
    messages × the per-message cost plus injected copies × the copy cost (the sends of 1-192 bytes a
    peer: collectives.p2p_inject_copies); that must equal planning again with both costs."""
    from simulator.calibration.deployed_fit import candidate_times, decompose

    sweep = read_sweep(DATA_DIR / "a100x8_alltoall_2node_polaris_slingshot.csv")
    case = case_for(sweep)
    neutral = predict_sweep(sweep, case, table={"other": NEUTRAL})
    net = DeployedNet(15.0, (0.0, 1.0), (0.0, 1.0), "test", message_us=8.0, inject_copy_us=12.0)
    exact = predict_sweep(sweep, case, table={"other": net})
    d = decompose([neutral])[case.system]
    assert d.copies.max() == 4 and (d.copies > 0).sum() == 6  # 32 B-1 KiB: 4-128 B to each of 4 remote peers
    t = candidate_times(d, np.asarray([[net.net_hop_extra_us, *net.ring, *net.tree]]), net.message_us,
                        net.inject_copy_us)[:, 0]
    assert t == pytest.approx([p.predicted_time_us for p in exact.points], rel=1e-6)


# Every scored sweep under NCCL's own constants and its decomposition, computed once for the
# tests of this file (read only; about a quarter of the file's run time each time it was redone).
@lru_cache(maxsize=None)
def _neutral() -> tuple:
    from simulator.calibration.deployed_fit import neutral_results

    return tuple(neutral_results())


@lru_cache(maxsize=None)
def _decomposed() -> dict:
    from simulator.calibration.deployed_fit import decompose

    return decompose(list(_neutral()))


# The systems' scores on the fit's candidates, shared by every fit on _decomposed() (deployed_fit.fit_table).
_SCORES: dict = {}


@lru_cache(maxsize=None)
def _held_out():
    from simulator.calibration.deployed_fit import leave_one_system_out

    return {h.system: h for h in leave_one_system_out(list(_neutral()), _decomposed(), _SCORES)}


@pytest.mark.slow
def test_bundled_table_is_the_fit_on_every_system():
    from simulator.calibration.deployed_fit import fit_table

    fitted = fit_table(_decomposed(), scores=_SCORES)
    for transport, net in fitted.items():
        d = DEPLOYED[transport]
        assert (d.net_hop_extra_us, d.ring, d.tree, d.message_us, d.inject_copy_us) == \
            (net.net_hop_extra_us, net.ring, net.tree, net.message_us, net.inject_copy_us), transport


@pytest.mark.slow
def test_protocol_columns_no_system_of_a_transport_runs_take_the_pooled_fit():
    """RoCE's 2-node H100/H200 systems, gcp-a3-ultra (a Ring AllGather) and oci-h100 (NVLSTree plateaus),
    run no Tree/LL or Tree/LL128 across nodes, so a RoCE row fitted on them alone takes those columns
    from the fit on every other system (the ``other`` row) instead of the ring/tree tie's value
    (tree LL/LL128 x 0.125/0.4 before: oci-a100's 128 KiB Tree/LL row 76% too slow). Held out,
    oci-a100's RoCE row now rests on oci-gb200 too, whose 64-GPU Tree/LL and Tree/LL128 chains do
    run across nodes: the OKE sweep's Tree/LL and Tree/LL128 rows (8 B-256 MiB, NCCL 2.19.3, its
    16 ports as 16 network devices) come within 26% of the measured busbw."""
    from simulator.calibration.deployed_fit import (
        AXES, FIT_EXCLUDED, _row, fit_one, unexercised_columns)

    decomposed = _decomposed()
    roce = [decomposed[s] for s in ("gcp-a3-ultra", "oci-h100")]
    assert unexercised_columns(roce) == [3, 4]  # tree LL, tree LL128
    assert {3, 4}.isdisjoint(unexercised_columns([decomposed["oci-a100"]])) and len(AXES) == 5
    assert {3, 4}.isdisjoint(unexercised_columns([decomposed["oci-gb200"]]))
    use = [d for s, d in sorted(decomposed.items()) if s not in FIT_EXCLUDED and s not in ("oci-a100", "oci-gb200")]
    other = fit_one(use, "every other system", scores=_SCORES)
    row = fit_one(roce, "gcp-a3-ultra, oci-h100", pooled=use, fallback=other, scores=_SCORES)
    assert (row.tree[0], row.tree[1]) == (_row(other)[0][3], _row(other)[0][4])
    held = _held_out()["oci-a100"]
    assert "oci-gb200" in held.table["roce"].fitted_on
    oke = next(r for r in held.results if r.sweep.name == "a100x16_allreduce_2node_oci_oke_roce")
    tree = [p for p in oke.points if p.algorithm == "tree" and p.protocol != "simple"]
    # 0.76 at 128 KiB before the pooled columns; 0.34 with the pooled x 0.6 (8 B-8 MiB, 8 x 200 Gb/s devices);
    # 26 rows (8 B-256 MiB) since 16 ports run Tree/Simple from 512 MiB, 25.1% at 64 MiB
    assert len(tree) == 26 and max(abs(p.error) for p in tree) < 0.26
    ma, _ = _pooled(held.results)
    assert ma <= 0.12  # 17.3% with tree LL128 x 0.4 and LL x 0.125 (2026-12-02); 12.4% before the ports


def test_parsimonious_keeps_the_simplest_candidate_within_the_minimum_gain():
    """Of the candidates within MIN_GAIN of the least score, the fit keeps the one of fewest grid
    steps from NCCL's own constants; a rival further from NCCL that beats it by less than MIN_GAIN
    does not displace it, one that beats it by more does (closed form: scores in points of the
    objective)."""
    from simulator.calibration.deployed_fit import MIN_GAIN, parsimonious

    steps = np.asarray([0, 3, 1, 5])
    base = np.asarray([0.100, 0.106, 0.104, 0.093])
    assert parsimonious(base, steps) == 0  # 0.7 point above the best, and NCCL's own values
    for gain in (0.1, 0.5, 0.99):  # the rival this fraction of MIN_GAIN below the kept candidate
        rival = base.copy()
        rival[3] = base[0] - gain * MIN_GAIN
        assert parsimonious(rival, steps) == 0, gain
    rival = base.copy()
    rival[3] = base[0] - 1.01 * MIN_GAIN
    assert parsimonious(rival, steps) == 3  # a gain above MIN_GAIN buys the departure
    assert parsimonious(base, steps, min_gain=0.0) == 3  # the argmin


@pytest.mark.slow
def test_a_rival_within_the_minimum_gain_does_not_move_a_fitted_row(monkeypatch):
    """RoCE's row fitted on every system (as fit_table times it: the bundled per-message costs) stays
    the same when a candidate of the tied grid further from NCCL's constants is made to beat it by 0.9 x
    MIN_GAIN (the objective lowered at that candidate alone), while the argmin (min_gain 0) takes
    another row. Before the rule, RoCE's row fitted without oci-a100 flipped between (7 us, LL 1.5 GB/s,
    LL128 x 0.8) and (10 us, 0.7 GB/s, x 0.9) on 0.0008 of the objective: those are the rivals here."""
    from simulator.calibration import deployed_fit as fit
    from simulator.costs.deployed import CXI_INJECT_COPY_US, CXI_MESSAGE_US, MESSAGE_US

    message_costs = {"host": (MESSAGE_US, 0.0), "cxi": (CXI_MESSAGE_US, CXI_INJECT_COPY_US)}
    decomposed = _decomposed()
    use = [d for s, d in sorted(decomposed.items()) if s not in fit.FIT_EXCLUDED]
    roce = [d for d in use if d.transport == "roce"]
    original = fit._score

    def objective(row):
        return float(original(roce, row[None, :], None, message_costs)[0]
                     + fit.POOLED_WEIGHT * original(use, row[None, :], None, message_costs)[0])

    kept = fit.fit_one(roce, "roce", pooled=use, message_costs=message_costs)
    kept_row = fit._row(kept)[0]
    assert (kept.net_hop_extra_us, kept.ring, kept.tree) == (7.0, (0.0, 0.9), (0.0, 0.9))  # DEPLOYED["roce"]
    for rival in (np.asarray([10.0, 0.7, 0.9, 0.7, 0.9]), np.asarray([7.0, 1.5, 0.8, 1.5, 0.8])):
        assert fit.grid_steps(rival[None, :])[0] > fit.grid_steps(kept_row[None, :])[0]
        bump = objective(rival) - (objective(kept_row) - 0.9 * fit.MIN_GAIN)

        def perturbed(systems, cands, scores=None, message_costs=None, rival=rival, bump=bump):
            out = original(systems, cands, None, message_costs)
            return out - bump * np.all(cands == rival, axis=1) if systems is roce else out

        monkeypatch.setattr(fit, "_score", perturbed)
        again = fit.fit_one(roce, "roce", pooled=use, message_costs=message_costs)
        assert (again.net_hop_extra_us, again.ring, again.tree) == (kept.net_hop_extra_us, kept.ring, kept.tree)
        argmin = fit.fit_one(roce, "roce", pooled=use, message_costs=message_costs, min_gain=0.0)
        assert not np.array_equal(fit._row(argmin)[0], kept_row)
        monkeypatch.setattr(fit, "_score", original)


# Leave-one-system-out bounds (docs/validation-collectives.md headline): (median >= 1 MiB,
# |signed median| >= 1 MiB, median over all sizes). The targets are 15% / 10% / 25%;
# where a system does not meet one yet, today's figure + a margin, and the reason.
TARGETS = (TARGET_MEDIAN_BIG, TARGET_SIGNED, TARGET_MEDIAN_ALL)
LOSO_BOUNDS = {
    "dgx-h100": TARGETS,
    "aac8-mi300x": TARGETS,
    # vTrain's A100 node on 2, 4 and 8 GPUs: 2.9% / +1.7% / 2.9% (the 1 MiB-step rows weigh the plateau) since a
    # ring of fewer GPUs than the node is priced by its CTAs' accesses (costs/ring_work.py; 2 GPUs +22.5% signed
    # from 1 MiB before, 4 GPUs +7.4%)
    "vtrain-a100": TARGETS,
    "aac11-mi325x": TARGETS,
    # 12.6% / -9.9% / 12.6% (NCCL 2.26.2: v2.25.1-1's Blackwell rows) (Simple has no deployed factor)
    # 13.8% / -13.1% / 13.8% since a Blackwell NVLink step pays 0.7 us more than NCCL's table
    # (nccl_constants.NVLINK_HOP_EXTRA_US): the 20-rack ring (2,878 NVLink steps) +11.5% -> -0.2% signed, one
    # and two racks -12.3% -> -13.7%, -13.1% -> -16.2%. Those rings were already too slow from 1 GiB
    # (Ring/Simple 705 GB/s busbw predicted, 810-834 measured: the profile's NVLink efficiency of 0.83, a p2p
    # write test's 746 of 900 GB/s, is below what these rings reach), which the added latency widens
    # 13.0% / -10.4% / 13.0% (13.7% / -12.4% before) with InfiniBand's row held out at LL128 x 1 on rings, the
    # fit keeping NCCL's values within a point of its best (deployed_fit.parsimonious)
    # 6.9% / +0.5% / 6.9% once one and two racks run NCCL's NVLS and NVLSTree instead of a pinned Ring, NVLS
    # bound by the switches' reduction rate (costs/nvls_reduce.py: 838 GB/s busbw at any rank count, from
    # 8 B200) and its chunk pipeline's fill (costs/nvls_pipeline.py): 1 rack -13.7% -> -3.1%, 2 racks
    # -10.7% -> +0.2% signed; the 20-rack ring unchanged
    "gb200-nvl72": (0.08, 0.03, 0.08),
    # 15.3% / -15.3% / 35.6% with each sweep's own NCCL (13.1% / -10.8% with 2.30.7's tables for both): the
    # OKE sweep ran NCCL 2.19.3 (2.18.3's tables), whose Ring/LL128 is rated and timed slower at 16-64 MiB,
    # and reaches 238 GB/s busbw at 8 GiB (Tree from 1 GiB) over 16 RoCE VFs per node, above what dgx-a100's
    # 8 x 200 Gb/s give the model (-15..-20% from 1 GiB): before 2.20.3 NCCL does not merge the two ports
    # of a NIC into one device (net_ib.cc IB_MERGE_NICS), not modelled; the B4.8 sweep (pinned Ring,
    # 1-8 GiB) is within 0.4%
    # 13.5% / -11.7% / 17.3% since the deployed hop extra is paid per ring crossing (nccl_tuner.
    # ring_net_crossings; RoCE's extra 20 -> 10 us): 15.3% / -15.3% / 35.6% before, its tree/LL floor at 65 us
    # against 37 measured
    # 13.2% / -11.7% / 12.1% once a protocol column no RoCE system runs across nodes takes the pooled fit
    # (tree LL/LL128 x 1/0.7 instead of the tie's 0.125/0.4: deployed_fit.unexercised_columns)
    # 12.0% / -10.7% / 11.6% since NCCL 2.19.3 sees each port of OCI's dual-port NICs as a network device
    # (nccl_graph.net_devices: 16 channels at 12 GB/s; Tree from 512 MiB, as the 238 GB/s busbw shows) and
    # the RoCE row is fitted with oci-gb200 (held out: tree LL128 x 0.7, LL 0.7 GB/s per channel; the pooled
    # x 0.6 and NCCL's LL rate before)
    # 5.0% / +0.4% / 2.9% once the fit keeps NCCL's values within a point of its best (deployed_fit.
    # parsimonious; 6.5% / -5.5% / 10.0% before: RoCE held out at 10 us, LL 0.7 GB/s per channel, now 7 us
    # and NCCL's LL rate)
    "oci-a100": TARGETS,
    # 3.2% / +2.0% / 7.2% (5.9% / +4.0% / 13.7% while the deployed hop extra was paid per NCCL inter-node
    # step, 1 for a 2-node AllGather ring, whose chain crosses the network twice; 9.8% / +9.6% before a
    # Ring/Simple channel ran as two CTAs at 20.6 GB/s)
    "gcp-a3-ultra": TARGETS,
    # 9.3% / -1.6% / 20.8% timed with the tables of its NCCL 2.22.3 (2.21.5's): held out, InfiniBand's row
    # rests on a100-pcie and the pooled systems; LL across nodes at a rate per channel (net_ll_channel_GBps:
    # the sender's LL buffer in host memory); 30.7% over all sizes while LL across nodes was a share of NCCL's
    # rate. The All-to-All is 27.3% over all sizes, predicted slow (the proxy's 12 us a remote peer of the fit
    # without it, on xxrjun-h100 alone; costs/nccl_p2p.py)
    "sophia-a100": TARGETS,
    # all sizes 34.5% (27% while LL across nodes was a share of NCCL's rate, 33% before crossings): LL over one
    # IB HCA, 1-1024 KiB. 2.7% / +2.7% / 12.8% (28.3% over all sizes before) since the profile says what NCCL's
    # topology log of the runs does: the HCA behind the CPU's host bridge (PHB: no LL128 across nodes, so LL up
    # to ~450 KiB, then Simple, where 99-450 KiB were LL128 at 2-5x the measured rate) and the GDR path's 14.6 GB/s
    # plateau (SendRecv 30.2% -> 2.9% over all sizes). Left: the 1-node 14 us floor (5.6 us predicted, +38%)
    # and Ring/LL across nodes at ~1 GB/s per channel (the held-out IB row's 8)
    "a100-pcie": TARGETS,
    # 2 x 8 H100 Dell XE9680, NCCL 2.26.2: 6.9% / +6.9% / 20.6% (6.5% / +4.6% / 29.7% while the A100-PCIe rows
    # ran LL128 across a PHB path: their 99-450 KiB rows, 2-5x slower than LL128, pulled InfiniBand's held-out hop
    # extra to 10 us, and its 8 B-128 KiB Tree/LL floors, NCCL's own ~25 us estimate, were priced at 45 us)
    "xe9680-h100": TARGETS,
    # 9.6% / -2.5% / 16.5% with the CXI eager limit (23.0% over all sizes before: its 8 B-2 KiB floors are NCCL's
    # own Tree/LL estimate, which the hop extra priced 2-3x)
    # 13.4% / -3.1% / 16.7% (10.0% / -5.2% / 15.9% while a tree's graph channels alternated trees, so that
    # half a node's NICs carried only one tree: 32- and 128-node Tree/Simple at 64-128 MiB now +15-25% fast)
    "gh200-alps": TARGETS,
    # RCCL over RoCE is its own row (AAC11 MI325X, AAC14 MI355X). AAC10 is scored, not fitted: its RCCL
    # 2.22.3 pays ~220 us per call up to 128 MiB (deployed_fit.FIT_EXCLUDED), so held out it is too fast:
    # 38% / +38% at >= 1 MiB; all sizes 281%: that floor against the ~55 us the MI355X's row predicts
    # 41.4% / +41.4% / 379% since four cloud and VM clusters joined the fit (data/nccl/INDEX.md): the RCCL row
    # held out, fitted on AAC11 and AAC14 with the larger pooled corpus at half weight, keeps 7 us per crossing
    # (15 before), so the ~220 us this run pays per call shows further
    "aac10-mi300x": (0.45, 0.45, 4.00),
    # 10.5% / +10.5% / 15.7%: held out, EFA is the two other AWS clusters; one EFA set per H100 makes NCCL's tree
    # graph a TREE pattern (Tree x 0.85 in the choice), which hands 64 MiB to NVLS-tree one size earlier
    # (-26% -> +63%), where the model's NVLS-tree ramp is already 35-44% fast at 128-256 MiB
    # 4.5% / +1.9% / 9.3% (5.0% / +3.7% / 9.5% before) with EFA's row held out at 40 us, NCCL's LL rate,
    # LL128 x 1/0.9 (deployed_fit.parsimonious)
    "aws-p5": TARGETS,
    "aws-p5-samples": TARGETS,  # 8.6% / +8.6% / 13.7%: as aws-p5 (NVLS-tree approaching its plateau)
    # 9.2% / +0.8% / 10.4%: aws-ofi-nccl's SENDRECV protocol on p4de forces Simple (costs/transports.py), whose
    # ~170 us floor meets the measured 161 us; its 1-16 MiB rows (40-86% slower than Tree/Simple's bytes and
    # hops) are the per-message cost, fitted on GPUDirect-TCPXO when p4de is held out (9 us; 27% / +27% without)
    # 4.8% / -0.1% / 12.1% (7.4% / -0.8% / 8.7% before) with the Tree/Simple fill of NCCL 2.20's 512 KiB chunks
    # (the run set no NCCL_BUFFSIZE: header) and the messages overlapping their bytes; the 8 B-512 KiB floor
    # rows, which the serial message cost had priced, are now 5-14% fast
    # unchanged with a flushed receive counting 3/2 of a message (costs/net_messages.py gdr_flush: A100 with
    # GPUDirect): its messages now overlap the chunks' bytes, and no value of the host class' cost from 0 to 30 us
    # moves it (8.6% / -7.9% / 8.4% with the flush before the Tree/Simple fill)
    "aws-p4de": TARGETS,
    # 5.8% / -1.6% / 37% with RCCL's own tuner (Tree/Simple 2-64 MiB, Ring/Simple from 128 MiB) and the RCCL
    # row fitted on AAC11 alone; all sizes: the 40 us floor is predicted at ~85 us and LL up to 1 MiB too slow
    # 2.5% / -1.4% / 20.1% since the ring's chain pays the hop extra per crossing (4 on 2 x 8, not 2)
    "mi355x": TARGETS,
    # TCPXO runs Simple only (costs/transports.py): the ~123 us floor is met. 16.8% / -1.3% / 11.1% (35% /
    # +35% / 17% without a per-message cost): held out it takes the host class's 12 us per message (p4de's,
    # with every host-message system at half weight; Slingshot's CXI rendezvous is a class of its own:
    # pooled with it, 6 us and +18% signed), which makes 64 MiB-1 GiB too slow while 4-16 MiB stay 15-50%
    # too fast; the pooled row (the only TCPXO system takes it) has a 20 us hop extra
    # 19.4% / -8.1% / 12.6% with the pooled row per ring crossing
    # 16.8% / -1.3% / 11.1% with the host class' 10 us per message (12 before)
    # 9.1% / -8.8% / 8.3% (17.6% / -0.6% / 11.1% before) with NCCL 2.20+'s whole-step Tree/Simple chunks (1 MiB
    # with TCPXO's 8 MiB buffer) and their pipeline fill (costs/tree_pipeline.py: 1-8 MiB within 10%, the
    # large calls' measured 928 us intercept within 1%), the host's cost per message overlapping the chunks'
    # bytes (collectives.messages_overlap); 16 MiB-8 GiB stay 8-13% too slow at NCCL's Tree bandwidth estimate
    # unchanged since the flush (costs/net_messages.py gdr_flush) counts p4de's receives 3/2 (TCPXO's H100 under
    # NCCL >= 2.19 flushes none, NCCL_NET_FORCE_FLUSH=0): no value of the host class' cost from 0 to 30 us moves it
    # now (18.7% / +14.7% / 13.6% with the flush before the fill, when the messages were serial)
    "gcp-a3-mega": TARGETS,
    # NCCL 2.8.4, the profile's nccl.version (ABCI's module): 42.2% / +42.2% / 42.3% (57.5% / +53.8% / 39.0%
    # with 2.30.7's tables); its 1-node sweep is +84% from 1 MiB, so not the network (kept out of the fit)
    # 42.4% / +42.4% / 33.0% (36.2% over all sizes while LL across nodes was a share of NCCL's rate);
    # 32.9% / +23.8% / 43.3% held out with the CXI eager limit in the pooled fit (InfiniBand's row: 10 us
    # per crossing, LL at 4 GB/s per channel, tree LL128 x 0.4: the 16-node sweep turns -29%)
    # 59.9% / +59.9% / 31.3% before the fit kept NCCL's values within a point of its best (deployed_fit.
    # parsimonious): 50.1% / +50.1% / 23.7% held out with InfiniBand's row at 3 us, NCCL's LL rate, LL128 x
    # 1/0.7 (the 4- and 16-node sweeps 36% -> 11%, 49% -> 22% at >= 1 MiB)
    # 69.1% / +69.1% / 32.5% once the GH200 rows run no LL128 across nodes (NCCL 2.23.4 types their C2C path
    # PHB: gpu_path p2c): no InfiniBand system runs Tree/LL128 across nodes, so the held-out row's tree LL128
    # is the fit pooled over every system, which the Alps rows (Tree/Simple, timed as Tree/LL128) had set at
    # x 0.7; the pooled fit now keeps NCCL's rate (x 1) and ABCI's NCCL 2.8.4 mid sizes, already 2x NCCL's own
    # estimate, show whole
    # 17.6% / +8.1% / 24.4% (42.8% / +42.8% / 28.0% before) once the HCAs carry what the same repository's
    # osu_mbw_mr moved from GPU memory (node.nics.efficiency 0.39: 2-node 52.1% -> 6.6% at >= 1 MiB) and each
    # tree graph channel runs both trees through its NIC (flow_patterns.tree_pattern: 16 nodes -39.9% -> -15.8%);
    # left: the two 1-node sweeps (+67%, +88% at >= 1 MiB), the release's or that stack's own;
    # 17.6% / +8.1% / 24.7% with v2.8.4-1's Tree/LL128 size correction (nccl_versions.tree_ll128_correction:
    # 4 nodes 9.2% -> 10.6%, 8 nodes 20.4% -> 22.1% at >= 1 MiB)
    # 29.3% / +29.3% / 28.2% once the fit without ABCI takes InfiniBand's tree LL128 at NCCL's rate (x 1, from
    # x 0.6, with NCCL's per-release channel caps: costs/deployed.py); ABCI's NCCL 2.8.4 Tree/LL128 rows are
    # +31-36% too fast at x 1 (8 nodes 22.1% -> 66.8%, 16 nodes -15.8% -> +25.7%), Azure NDmv4's +19-21%, sophia's
    # and Crusoe's within 0-15%: no mechanism in NCCL's source separates them (data/nccl/INDEX.md, "Tree/LL128
    # across InfiniBand nodes"); ABCI's excess at 256 KiB-1 MiB is the size of its stack's one-node per-call cost
    "abci-a100": (0.30, 0.30, 0.29),
    # ABCI's Broadcast (the same NCCL 2.8.4 stack and nodes, 1-16 nodes, <= 32 MiB; scored, not fitted):
    # 116.5% / +116.5% / 69.2%, the model too fast everywhere: one node +93..+96% (the stack's per-call cost,
    # 44-68 us), 2 and 4 nodes +40% / +73% (7.5 GB/s per HDR HCA where its AllReduce carries 9.1), 8 nodes
    # +166% (the half-rate nodes of the 8-node AllReduce job), 16 nodes +144% (a per-call cost growing
    # ~100-140 us per network crossing of the chain). A bound that pins the gap, not a target
    "abci-a100-bcast": (1.20, 1.20, 0.72),
    # 6.8% / -1.8% / 6.8% over 20 sweeps (8.4% / +2.1% over the 5 of 8 GPUs per node; 10.7% / +10.1% before
    # a Ring/Simple channel ran as two CTAs): the Ring AllGather/ReduceScatter plateaus are two CTAs per NIC
    # at 20.6 GB/s (nccl_tuner.ring_cta_GBps), within 3% from 1 GiB; with 1, 2 or 4 GPUs per node a rank
    # rings through its own NIC (nccl_graph.reachable_nics); the NVLS-tree AllReduce is still +17-18% at
    # 4-16 GiB with 8 GPUs per node and 12-19% slow with 2 or 4 (kept out of the fit)
    "xxrjun-h100": TARGETS,
    "oci-h100": (0.15, 0.13, 0.25),  # +11%: NVLS-tree plateau over RoCE (1-16 GiB rows only)
    # Polaris / Sirius (4 A100 + 2 Slingshot NICs per node, one beside GPU 1 and one beside GPU 3): the
    # rings cross the network at those two GPUs, one channel per NIC and direction, at 2 NICs x 25 GB/s x
    # 0.9 = 45 GB/s of links against 36.5 measured: the rest is the CXI alt_read rendezvous' host cost per
    # network message (node.nics.rdzv_proto, costs/transports.py), fitted on the other system of its class
    # (Polaris held out: Sirius' 6 us; Sirius: Polaris' 12 us), which also brings All-to-All (128 KiB
    # messages, 1,024 per remote peer at 1 GiB over 2 nodes) from 2.1-2.4x too fast to 1.0-1.6x. Before:
    # 46% / +24% / 44% and 32% / +26% / 42%. What is left: 2-16 MiB of the Simple rings run at a ~430 us
    # floor (2 nodes; ~1.5 ms at 8) that no per-message cost reproduces, All-to-All below 128 MiB at 256-540
    # nodes (~10 us per remote peer measured, ~33 us predicted with Slingshot's 30 us hop extra), and the
    # hop extra itself, which Polaris' ring LL AllGathers (~8 us per ring step at 2-540 nodes) ask of the
    # transport while its tree LL AllReduces below 64 KiB (23 us on 2 nodes) ask for ~0
    # With libfabric CXI's eager limit (2048 + 2049 bytes: the hop extra is the rendezvous above it, so the
    # tree LL floors are NCCL's own, and an All-to-All's rendezvous to different peers overlap) and alt_read's
    # host cost on every LL step's message (a small Ring/LL AllGather: ~7.9 us per step at 8-540 nodes):
    # and every Ring/LL step waiting for the crossing's message (collectives.messages_overlap): Polaris 16.5% /
    # +1.4% / 21.2%, Sirius 11.3% / +3.0% / 15.5%. Left on Polaris: the eager/rendezvous switch of the
    # 256-540 node Ring/LL AllGathers comes at 2-4x larger sizes than the model's channel count gives it
    # (4-16 MiB predicted 2-3x too slow), and All-to-All (+23% on 8 nodes, -20% on 256)
    # 19.5% / +1.3% / 21.7% with LL across nodes at a rate per channel in the fit (Slingshot's: NCCL's own)
    # 18.9% / +1.7% / 22.1% (Sirius 7.0% / +2.7% / 14.7%, from 8.7% / +1.2% / 16.2%) with the tuner tables of
    # the NCCL 2.18 that ran the 2-540 node sweeps (HPC SDK 23.9), not the newest: 2 x 4 AllReduce at
    # 256 KiB-4 MiB on Tree/Simple instead of Ring/LL, the 8-node AllGather Simple from 4 MiB (18.9% -> 5.2%)
    # 16.2% / +1.7% / 20.9% with a Ring/LL step's messages counted on the channels NCCL launches (twice
    # the graph's, thread-threshold-reduced: nccl_tuner.launched_channels), served in turn by the rank's
    # proxy, the LL bytes overlapping that chain and no rendezvous round per LL message (540-node AllGather
    # 37.3% -> 18.6%); held out it takes Sirius' 10 us per message where its own rows ask ~8 (Sirius'
    # one-channel AllGather and small All-to-All rows carry a ~16 us constant that Polaris' do not)
    # 15.6% / +1.3% / 20.5% with the Tree/Simple fill (costs/tree_pipeline.py); its CXI alt_read messages still add
    # to a Tree/Simple call's bytes (transports.payload_in_host_round): overlapped, they gave 18.8% (the 8- and
    # 540-node AllReduce 13.3% / 34.6% instead of 7.2% / 20.2%)
    # 11.9% / +0.0% / 17.4% with NCCL's flush of every Simple receive into the A100 counted (3/2 of a message:
    # costs/net_messages.py gdr_flush; 256- and 540-node AllGathers 24.7% -> 9.3%, 18.6% -> 10.4%, 2-node
    # All-to-All 12.7% -> 3.6%) and Sirius' run of Polaris' NCCL 2.21.5 build among the data: held out it takes
    # 8 us per message (10 before); its 256/540-node All-to-Alls are now 26-30% too slow (small messages)
    # 13.5% / -4.7% / 18.1% with both trees on every graph channel's NIC (13.0% / 17.7% before: the 540-node
    # Tree/Simple plateau +26% -> +39% fast)
    "polaris-a100": TARGETS,  # 29.2% / +8.9% / 33.9% before (28.8% / +10.1% / 33.9% before crossings)
    # 18.6% / -2.7% / 28.1% before (35.6% over all sizes before crossings); 9.7% / +2.7% / 14.5% before the flush
    # and its NCCL 2.21.5 run (6 sweeps): 4.6% / -0.1% / 12.0%; its 2.18 All-to-All, 1.4x faster than the 2.21.5
    # run's from 8 MiB, 14.4% -> 25.2% too fast
    "sirius-a100": TARGETS,
    # NERSC Perlmutter, 2 x 4 A100 with 4 Slingshot-11 NICs per node (one per GPU), NCCL 2.21.5 and 2.22.3 runs, CXI
    # rendezvous at libfabric's default; scored, not fitted. 21.6% / +19.6% / 20.2% at the NIC's rate: its Ring/Simple
    # plateau (18.4-18.6 GB/s per NIC, Polaris' per-NIC rate under alt_read) was predicted 19-23% fast, since without
    # alt_read no message cost applies (with Polaris' message cost: plateau within 4% but 1-16 MiB 21-85% too slow).
    # Now each GPU's peer-to-peer rate through the host bridge (pcie.phb_p2p_GBps, derived from Polaris' and Sirius'
    # ring plateaus only): 2.8% / -1.9% / 8.7% (the two runs 1.8% / -0.7% and 4.2% / -4.2%). NCCL's Intel P2P overhead
    # (x 5/6) on every x86 host-bridge profile carried it too but put Sirius at 13.6% / -11.5% / 16.6%
    "perlmutter-a100": TARGETS,
    # NREL Kestrel, 16 x 4 H100 SXM with 2 Slingshot-11 NICs per node (NCCL 2.21.5, no alt_read), modelled on gh200-alps
    # with 2 NICs; scored, not fitted: 15.4% / -2.7% / 26.5% (AllReduce 12.5% / -2.2%, AllGather 25.4% / -3.5%). Both
    # plateaus within 6% from 512 MiB (22.9 GB/s per NIC); the AllGather's 1 KiB-8 MiB rows pay ~9 us per ring step
    # (0.55-1.4 ms measured, Ring/LL 0.1-0.7 ms predicted) with no alt_read message cost to carry it (data/nccl/INDEX.md);
    # that cost on its eager Ring/LL steps gives 15.2% over all sizes, a rule no source ties to those steps alone
    "kestrel-h100": (0.17, TARGET_SIGNED, 0.28),
    # Two NVL72 racks over RoCE with NCCL_NVLS_ENABLE=0 (header env): Tree/Ring, 17.1% / +17.1% / 34.1% (NCCL 2.29.2's tables)
    # (12.3% / +8.0% / 33.0% while the RoCE row, fitted with 2.30.7's tables for every sweep, had tree LL128
    # x 0.6; fitted with each sweep's own release it is x 1)
    # (171% / +171% / 91% while NVLS-Tree was predicted): Tree/LL128 over the 64-GPU chains at 4-256 MiB runs
    # 21-34% below the NCCL RoCE row's LL128 rate (1.0, fitted on 2-node clusters); below 1 MiB Tree/LL's
    # chain is priced at ~130 us against ~185 us measured (kept out of the fit); the plateau within 5%
    # 13.5% / +4.6% / 45.6% since the hop extra is paid per ring crossing (RoCE 10 us, tree LL128 x 0.4):
    # the 64-GPU tree/LL chain below 1 MiB is now further below the measured ~185 us
    # 13.5% / +4.7% / 59.4% with LL across nodes at a rate per channel (RoCE's 0.5 GB/s held out): its
    # 64-GPU Tree/LL chain below 1 MiB, already too fast, runs on more channels than a 2-node cluster's
    # 63.5% once the pooled fit counts the CXI eager limit (RoCE's LL at 1.5 GB/s per channel held out)
    # 5.2% / +4.6% / 4.4% with Blackwell's NVLink step at NCCL's table + 0.7 us (nccl_constants.
    # NVLINK_HOP_EXTRA_US: the 126-step Tree/LL chain ~200 us against 182-204 us measured at 8 B-64 KiB)
    # and the RoCE row held out fitted on oci-a100 with its NICs' ports as NCCL 2.19.3 saw them (tree LL128 x 0.9)
    "oci-gb200": (0.07, 0.07, 0.07),
    # 8 HGX H100 nodes over InfiniBand (nccl-tests issue #309), scored, not fitted: 4.5% / +2.9% / 4.5% (20.1% /
    # +20.1% / 20.1% before): the 2-node ramp 27-35% fast at 8-64 MiB was the NVLSTree chunk pipeline's fill
    # (costs/nvls_pipeline.py; 10.7% / +10.2% with it), the 4- and 8-node plateau from 1 GiB (+9-13%) NCCL's
    # Ring/Simple, which its tuner prefers once NVLSTree is rated on the NVLS search graph (nccl_graph.nvls_graph)
    "issue309-h100": TARGETS,
    # 128 x 8 H100, NCCL_MIN_NCHANNELS=32 (issue #322), scored, not fitted: 14.7% / -9.6% / 14.7% with four CTAs per
    # ring (nccl_tuner.ring_ctas_per_channel; 18.6% / -14.0% with the 45 GB/s ring graph; 28.1% / -24.6% before);
    # left: 1 GiB runs at a ~19 ms floor (+45%) that the additive ring latency (7 ms) does not reach
    # 22.2% / -18.1% with RoCE's ring LL128 at x 0.9 (fitted on the other RoCE systems), 21.2% / -17.5% with
    # 7 us per crossing (deployed_fit.parsimonious): 4-16 GiB run 17-23% too slow at x 0.9 (the measured
    # 367 GB/s busbw plateau is NCCL's LL128 rate), 1 GiB still +50%: the measured ~9.5 us per ring step
    # (2,046 steps) is 4x NCCL's own LL128 ring latency (tuning.cc: ~2.2 us per step at 128 x 8), not modelled
    # 13.5% / -8.9% / 13.5% since RoCE's x 0.9 slows the rings' CTAs, not the NIC share that four CTAs per NIC
    # more than feed (collectives.channel_fraction): 4-16 GiB -16% to -9%, the 6.2 ms latency term still added
    # to bytes that run alongside it (per step the larger of ~9.5 us and the chunk at ~11.5 GB/s per channel,
    # measured), 1 GiB +58%
    "issue322-h100": (0.14, TARGET_SIGNED, 0.14),
    # Systems added from public logs as unseen clusters (scored, not fitted: deployed_fit.FIT_EXCLUDED), as
    # predicted. 2 x BM.GPU.H200.8 over RoCE, 1-16 GiB: 5.1% / -5.1% / 5.1% (NVLS-tree, 458-486 GB/s measured)
    "oci-h200": TARGETS,
    # 2 x 8 MI355X over 8 AMD AI NICs, RCCL 2.27.7: 14.1% / -14.1% / 30.4%, predicted too slow (the other
    # clusters ran 20-45% too fast) and in the per-call terms only: straight lines through the measured rows give
    # Ring/Simple (256 MiB-16 GiB) 52 us + 206 GB/s algbw where the model's ring latency is 264 us (its rows within
    # 2-15%, 2% from 1 GiB), Tree/Simple (2-64 MiB) 64 us + 171 GB/s against a 122 us latency (-26..-46%), Tree/LL
    # floor 37 us against 55 us (AAC14's RCCL 2.26.6 on the same NIC class: 119 / 101 / 41 us). The All-to-All's
    # slope is right (>= 512 MiB within 3%) but the model adds one p2p hop latency per peer (8 remote x ~15 us +
    # 7 xGMI: 152 us LL, 264 us Simple) where the measured floor is 37 us up to 128 KiB: the peers overlap
    # 11.5% / -11.5% / 13.5% since RCCL over RoCE's hop extra is 7 us, not 15 (the larger corpus' pooled score)
    # 4.5% / -2.0% / 8.9% (from 12.3% / -12.3% / 25.0%) since RCCL runs every p2p round on its own channels across
    # two nodes (costs/rccl_p2p.py): the All-to-All pays one remote round, its Simple send (35.6 us LL, 37.4 us
    # Simple), rows -3.5..+27.5%; left: the AllReduce's Tree/LL floor (55 us modelled, 37-47 us measured)
    "alibaba-mi355x": TARGETS,
    # Clusters added from cloud and issue logs (data/nccl/INDEX.md), each held out of a fit that includes the
    # others. 2 x 8 Azure NDm A100 v4 over HDR InfiniBand, NCCL version not printed: 7.5% / +7.5% / 19.5% (its
    # Tree/LL and Tree/LL128 rows from 8 KiB to 8 MiB 14-66% too fast; with it in the fit InfiniBand's LL128 is x 0.9)
    "azure-ndmv4": TARGETS,
    # 4 x 8 H100 VMs over InfiniBand (issue #309, NCCL 2.26.2): 10.3% / -8.1% / 16.7%; from 256 MiB the model runs
    # NCCL's Ring (two CTAs per NIC: 330 GB/s busbw) where the run reached 358-366, which only NVLSTree carries
    # (the sweep's note in sweep_prediction.CASES)
    "issue309vm-h100": TARGETS,
    # 2 x 8 Nebius H100 over InfiniBand: 1.6% / -1.0% / 5.5% (NVLSTree from 2 MiB)
    "nebius-h100": TARGETS,
    # 2 x 8 Lambda B200 over InfiniBand, NCCL 2.26.2: 8.4% / +8.4% / 8.9%; 1-16 MiB run at a ~115 us floor the
    # NVLSTree estimate puts at 65-80 us (+27..+79%), 64 MiB-2 GiB within 3%. 6.8% / +6.8% / 12.9% once
    # together-b200 joined the fit (held out it takes 5 us per crossing, LL128 x 1 / x 0.6, as every other
    # InfiniBand system's held-out fit already did)
    "lambda-b200": TARGETS,
    # 2 x 8 Google Cloud A4 B200 over RoCE, 8 MiB-8 GiB, scored, not fitted: 3.4% / +3.4% / 3.4%
    "gcp-a4": TARGETS,
    # Together AI's B200 cluster over InfiniBand, sendrecv_perf rings of 2, 8 and 64 nodes (NCCL 2.29.7): 5.5% /
    # +4.7% / 19.1%. The 2 -> 8 -> 64-node plateau drop (43 -> 26 -> 14.8 GB/s) is predicted within 6%; the
    # 1-16 KiB rows take 23-35 us where the model gave 12-14 us with NCCL's Ring/LL row. 5.5% / +4.7% / 13.8% once
    # a send across nodes pays Ring/Simple's, the protocol it runs (collectives.net_p2p_protocol: no LL buffers
    # on a network p2p connection)
    "together-b200": TARGETS,
    # Oracle Cloud's MI355X with 8 Pollara 400 NICs (8 and 16 GiB rows of 1, 2 and 4 nodes), scored, not fitted:
    # 2.5% / +2.3% / 2.5%; left: the one-node AllReduce -9.6% (408 GB/s busbw against the 7 xGMI links' 369.5 at the
    # assumed efficiency; -22% while RCCL's graph speed, 320, capped the ring: nccl_tuner.rccl_ring_unpaced) and the
    # 4-node All-to-All +22%
    "oci-mi355x": TARGETS,
    # 2 x 8 MI300X over RoCE on Oracle Cloud (OKE), 1-16 GiB, scored, not fitted: 1.7% / -1.7% / 1.7% (Ring/Simple)
    "oci-mi300x": TARGETS,
    # Oracle Cloud's GB300 NVL72 trays (1 and 2 trays, 1 and 2 racks; AllReduce and All-to-All, 512 KiB-16 GiB) on
    # the GB200 NVL72 profile with 8 NICs per tray, scored, not fitted: 17.4% / +10.9% / 18.6% (+9.9% / 17.9% while
    # an All-to-All across nodes added a network hop per remote peer in order, which hid part of the 2-rack
    # All-to-All's plateau gap: costs/nccl_p2p.py). Left: NVLS's per-call
    # cost growing with the trays of the domain (17.9 / 30.3 / 66.3 us at 512 KiB on 1 / 2 / 16 trays), the 2-rack
    # AllReduce's ~490 us floor to 16 MiB, the 1-rack All-to-All's 63 NVLink peers priced in order (-48..-86% at
    # 2-16 MiB) and the 2-rack All-to-All's 47.7 GB/s plateau (+146%) (the cases' notes in sweep_prediction.CASES;
    # what NCCL 2.28.7's source does and does not explain: data/nccl/INDEX.md, GB300 note)
    "oci-gb300": (0.18, 0.115, 0.19),
    # Three more clouds' 2 x 8 runs over InfiniBand from public examples, each on the bundled profile of its node,
    # scored, not fitted (deployed_fit.FIT_EXCLUDED): Crusoe's A100-80GB VMs (8 HDR, dgx-a100) 5.1% / -5.1% /
    # 13.9%, its 4-8 MiB Tree/LL128 rows 25-26% and 8 B-1 KiB floor 15-21% predicted slow (fitted on, the
    # InfiniBand row would go from 5 us, tree LL128 x 0.6 to 3 us, x 0.7 and move lambda-b200 6.8% -> 8.4%);
    # CoreWeave H200 (dgx-h200, NCCL 2.26.2) 4.0% / -4.0% / 4.0% and Together AI H100 (dgx-h100) 1.7% / -1.7% /
    # 1.7%, both NVLSTree at 512 MiB-8 GiB
    "crusoe-a100": TARGETS,
    "coreweave-h200": TARGETS,
    "together-h100": TARGETS,
    # AWS p5 on 2-32 nodes (SageMaker HyperPod, NCCL 2.27.7, 32 MiB and up), scored, not fitted: 12.0% / +8.1% /
    # 12.0% (11.8% / -2.7% while an All-to-All added a network hop per remote peer in order: its sweeps were
    # -14% .. -53% from 4 nodes, and are +10% .. +16% at every node count now, the plateau of EFA's p2p; costs/nccl_p2p.py)
    # with the AllReduce choice of aws-ofi-nccl 1.16's tuner, which the runs loaded from the net plugin
    # (costs/aws_ofi_tuner.py; 12.3% / +0.2% / 12.3% with NCCL's own tables: its AllReduce rows 16.0% -> 12.2%),
    # since NCCL sees one network device of 4 EFA rails per GPU (nccl_graph.net_devices; 25.6% / -23.4% / 25.6%
    # with 32 devices of 12 GB/s). Left: the 32-node AllReduce (25.5%: the plugin's NVLSTree at 512 MiB-1 GiB
    # +49..+90%) and the All-to-All plateau
    "aws-p5-hyperpod": TARGETS,
}


@pytest.mark.slow
@pytest.mark.parametrize("system", sorted(LOSO_BOUNDS))
def test_leave_one_system_out(system):
    held = _held_out()[system]
    big, signed, everything = LOSO_BOUNDS[system]
    mb, _ = _pooled(held.results, MiB)
    sb, _ = _pooled(held.results, MiB, signed=True)
    ma, _ = _pooled(held.results)
    assert mb is None or mb <= big, f"{system}: median |error| >= 1 MiB {mb:.1%}"
    assert sb is None or abs(sb) <= signed, f"{system}: signed median >= 1 MiB {sb:+.1%}"
    assert ma <= everything, f"{system}: median |error| all sizes {ma:.1%}"


@pytest.mark.slow
def test_collective_interval_table_is_regenerated_from_the_held_out_sweeps():
    """simulator/report/collective_interval_table.py is what the leave-one-system-out predictions
    give today (regenerate it with `python -m simulator.calibration.collective_intervals`)."""
    from simulator.calibration.collective_intervals import bands_and_coverage
    from simulator.report.collective_interval_table import BANDS, COVERAGE

    bands, cov = bands_and_coverage(list(_held_out().values()))
    assert set(bands) == set(BANDS)
    for c, b in bands.items():
        assert (b.lo, b.hi, b.groups, b.rows) == pytest.approx(BANDS[c], abs=1e-9), c
    for c, v in cov.items():
        assert (v.rows, v.covered_rows, v.groups) == COVERAGE[c][:3] and v.group_mean == pytest.approx(COVERAGE[c][3]), c


@pytest.mark.slow
def test_cxi_per_message_cost_held_out_on_polaris():
    """Polaris held out, its CXI alt_read per-message cost fitted on Sirius (and, at half weight, every
    host-message system): the 2- and 8-node AllReduce/AllGather plateaus (1 GiB, 896-992 messages per
    channel) within 10% (21-23% too fast without it), the 2- and 8-node All-to-All at 1 GiB (4,096-7,168
    messages of 128 KiB per rank) at most 2/3 too fast (2.1-2.4x without it) and at most 10% too slow
    (the 9 us Sirius gives since a Tree/Simple call's chunks count per launched channel: -2.6% and +14.1%)."""
    held = _held_out()["polaris-a100"]
    assert held.table["slingshot"].message_us > 0
    last = {r.sweep.name: max(r.points, key=lambda p: p.size_bytes) for r in held.results}
    for nodes in (2, 8):
        for op in ("allreduce", "allgather"):
            p = last[f"a100x{4 * nodes}_{op}_{nodes}node_polaris_slingshot"]
            assert p.net_messages > 0 and abs(p.error) <= 0.10, (nodes, op, p.error)
        p = last[f"a100x{4 * nodes}_alltoall_{nodes}node_polaris_slingshot"]
        assert p.net_messages >= 4096 and -0.10 <= p.error <= 2 / 3, (nodes, p.error)


@pytest.mark.slow
def test_alcf_two_node_allreduce_runs_nccl_2_18_tree():
    """Polaris and Sirius held out, their 2 x 4 A100 AllReduce timed with the tuner tables of the NCCL
    2.18 that ran it (HPC SDK 23.9; measured.MeasuredSweep.nccl_version): NCCL 2.18 runs Tree/Simple at
    1-2 MiB, which the model then prices within 10% of the measured 242-370 us: Polaris -6.8% / -5.5%,
    Sirius +0.8% / +2.3% held out, counting each launched channel's chunks as NCCL 2.18 sizes them over
    the 4 channels the call launches (64 KiB: 4 and 8 per channel, each flushed; enqueue.cc v2.18.5-1
    lines 1316-1318, 1376; net_messages.tree_simple_chunk_bytes). Halving the chunk over the 2 graph
    channels instead counted 8 and 16 (-19.8% / -22.9% and -15.3% / -19.2%, too slow) and gave 4 MiB
    as many as 2 MiB (16 each; NCCL sends 8 and 16), where the measured time rises by 244 us (the 4 MiB rows:
    +1.7% / +15.5%). With 2.30.7's tables
    (the sweeps named no release) it chose Ring/LL, predicted 5-7x too slow (-81% / -86% busbw)."""
    held = _held_out()
    for system, name in (("polaris-a100", "a100x8_allreduce_2node_polaris_slingshot"),
                         ("sirius-a100", "a100x8_allreduce_2node_sirius_slingshot")):
        result = next(r for r in held[system].results if r.sweep.name == name)
        for p in result.points:
            if p.size_bytes in (MiB, 2 * MiB):
                assert (p.algorithm, p.protocol) == ("tree", "simple"), (name, p.size_bytes)
                assert abs(p.error) <= 0.10, (name, p.size_bytes, p.error)

"""The expert-parallel token exchange (DeepEP/HybridEP dispatch and combine) against NVIDIA's
published HybridEP timings (data/kernels/hybridep_dispatch_combine.csv;
simulator/calibration/ep_exchange.py): inside an NVLink domain the model's exchange is the kernel;
across H100 nodes it runs the RDMA stage and the NVLink forwarding one after the other, slower than
the pipelined kernel and level with the Python call."""

from __future__ import annotations

import pytest

from simulator.calibration import ep_exchange as ex


@pytest.fixture(scope="module")
def rows() -> list[ex.Measurement]:
    return ex.load()


def test_table_rows(rows):
    """57 rows: HybridEP on H100 (3 rank counts x 3 SM counts, two timings), B200 (one row each
    way) and GB200 (5 x 2 x 2); DeepEP V1's Python call on B200 (8 SM counts) and GB200 (3 x 3)."""
    assert len(rows) == 57
    assert sum(m.implementation == "hybridep" for m in rows) == 40
    assert {m.metric for m in rows if m.platform == "H100"} == {"rdma_send"}
    assert {m.metric for m in rows if m.platform != "H100"} == {"nvl_recv"}
    for m in rows:
        assert 30 < m.dispatch_GBps < 800 and 30 < m.combine_GBps < 800


def _product_hit(experts: int, targets: int, k: int = ex.TOP_K) -> float:
    """1 - P(no chosen expert among the targets), drawing k of ``experts`` one after another."""
    miss = 1.0
    for i in range(k):
        miss *= (experts - targets - i) / (experts - i)
    return 1.0 - miss


def test_metric_bytes_closed_form(rows):
    """The benchmark's bytes: 8 ranks of 64 experts, a token reaches a given rank with probability
    1 - (56·55···49)/(64·63···57) = 0.679, so a rank receives 8 x 4,096 x 0.679 rows of 14,336
    bytes (319 MB); two H100 nodes of 64 experts each, a token reaches both with probability
    0.996, 2 x 4,096 x 0.996 rows (117 MB)."""
    gb8 = next(m for m in rows if m.platform == "GB200" and m.ranks == 8)
    assert ex.metric_bytes(gb8) == pytest.approx(8 * 4096 * _product_hit(64, 8) * 14336, rel=1e-12)
    assert ex.metric_bytes(gb8) / 1e6 == pytest.approx(319.0, abs=0.5)
    h16 = next(m for m in rows if m.platform == "H100" and m.ranks == 16)
    assert ex.metric_bytes(h16) == pytest.approx(2 * 4096 * _product_hit(128, 64) * 14336, rel=1e-12)
    assert ex.metric_bytes(h16) / 1e6 == pytest.approx(117.1, abs=0.1)


def test_model_moves_the_benchmarks_bytes():
    """The schedule sizes the exchange as the benchmark counts it: one row per token and
    destination rank inside the NVLink domain, one per token and destination node across nodes."""
    from simulator.config.scenario import build_scenario
    from simulator.schedule.build import build_schedule

    for platform, ranks, name, metric in (("GB200", 32, "L0.moe.dispatch.fwd.alltoall", "nvl_recv"),
                                          ("H100", 32, "L0.moe.dispatch.fwd.deepep.ep_inter", "rdma_send")):
        program = next(iter(build_schedule(build_scenario(ex.scenario(platform, ranks, 32))).programs.values()))
        op = next(o for o in program if o.name == name)
        m = ex.Measurement(platform, "hybridep", "kernel_only", ranks, 32, metric, 1.0, 1.0)
        assert op.size_bytes == pytest.approx(ex.metric_bytes(m), rel=1e-3)


def test_nvlink_exchange_is_the_kernel(rows):
    """GB200 at 8-36 ranks and B200 at 8, at the SMs the recipes give HybridEP (32; B200's table
    has 16 only): the modelled dispatch and combine are 0.90-1.05 of the kernel-only times. The
    model has no SM term: at 16 SMs GB200's combine runs 13-16% longer than the model's."""
    sel = ex.hybridep(rows, ("GB200",), "kernel_only", sms=32) + ex.hybridep(rows, ("B200",), "kernel_only")
    assert len(sel) == 6
    for m, d, r in ex.ratios(sel):
        assert 0.90 < r < 1.05, (m, d, r)
    for m, d, r in ex.ratios(ex.hybridep(rows, ("GB200",), "kernel_only", sms=16)):
        if d == "combine":
            assert 0.83 < r < 0.89, (m, r)


def test_internode_stages_run_one_after_the_other(rows):
    """H100 over InfiniBand at 8-16 SMs: the model's RDMA stage then NVLink stage take 1.12-1.45
    times the pipelined kernel (most at two nodes, where the NVLink stage is the largest share) and
    0.93-1.11 times the Python call, which adds the copy out of the buffer and a synchronisation."""
    sel = [m for m in rows if m.platform == "H100" and m.sms >= 8]
    for m, d, r in ex.ratios([m for m in sel if m.measurement == "kernel_only"]):
        assert 1.10 < r < 1.47, (m, d, r)
    for m, d, r in ex.ratios([m for m in sel if m.measurement == "torch_api"]):
        assert 0.92 < r < 1.12, (m, d, r)

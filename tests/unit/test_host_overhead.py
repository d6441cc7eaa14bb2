"""The host side of a step (simulator/costs/host.py): ops cannot start before the host has issued
them, so short kernels take the host's time and long ones hide it."""

import pytest

from simulator.config.scenario import build_scenario
from simulator.costs import host
from simulator.schedule.build import build_schedule
from simulator.schedule.ir import CommOp, ComputeOp, Tag
from simulator.simulation import simulate_scenario
from tests.conftest import HOST_COSTS


def _scn(hidden: int, layers: int, micro_batch: int, seq: int, dp: int = 8):
    return build_scenario(dict(
        name="host", hardware="dgx-a100", nodes=1,
        model=dict(layers=layers, hidden=hidden, heads=max(1, hidden // 64), seq_len=seq, vocab=1024),
        training=dict(micro_batch=micro_batch, global_batch=micro_batch * dp, dtype="bf16"),
        parallel=dict(tp=8 // dp)), source="<test>")


def test_host_cost_per_op_by_phase():
    """A forward kernel pays Python, dispatch and launch; a backward kernel from the autograd
    engine pays dispatch and launch; a recomputed kernel is a forward one; a collective its own."""
    fwd = ComputeOp(name="L0.fc1.fwd", kind="gemm", count=2, tag=Tag("fwd"))
    bwd = ComputeOp(name="L0.fc1.bwd", kind="gemm", count=2, tag=Tag("bwd"))
    rec = ComputeOp(name="L0.fc1.fwd.recompute", kind="gemm", count=1, tag=Tag("bwd"))
    ar = CommOp(name="dp.ar", op="allreduce", axes=("dp",), size_bytes=8)
    us = 1e-6
    step = ComputeOp(name="optimizer.step", kind="optimizer", count=3, tag=Tag("opt"), host_tensors=148)
    assert host.host_cost_s(fwd) == pytest.approx(2 * (host.LAYER_FWD_CPU_US + host.CUDA_LAUNCH_US) * us)
    assert host.host_cost_s(bwd) == pytest.approx(2 * (host.LAYER_BWD_CPU_US + host.CUDA_BWD_NODE_US) * us)
    assert host.host_cost_s(rec) == pytest.approx(host.FWD_KERNEL_US * us)
    assert host.host_cost_s(ar) == pytest.approx(host.COLLECTIVE_US * us)
    assert host.host_cost_s(step) == pytest.approx((3 * host.OPT_KERNEL_US + 148 * host.OPT_TENSOR_US) * us)
    f, b = host.FWD_KERNEL_US, host.BWD_KERNEL_US
    assert host.issue_times([fwd, bwd, rec, ar]) == pytest.approx(
        [2 * f * us, (2 * f + 2 * b) * us, (3 * f + 2 * b) * us, (3 * f + 2 * b + host.COLLECTIVE_US) * us])


def test_cuda_costs_are_the_h200_table_differences():
    """What CUDA adds per launch and per backward node is read off the measured table: the lease
    with both CUDA and CPU-tensor rows, CUDA minus CPU (costs/host.py docstring)."""
    from pathlib import Path

    from simulator.e2e_validation.rows import read_rows

    rows = {r["what"]: r for r in read_rows(Path(__file__).parents[2] / "data/kernels/h200_host_overhead.csv")}
    both = "us_per_op_machine_3"

    def diff(what: str) -> float:
        return float(rows[what][both]) - float(rows[f"{what}, CPU tensors"][both])

    assert host.CUDA_LAUNCH_US == pytest.approx(diff("torch.mul, no autograd (dispatch + launch)"), abs=0.05)
    assert host.CUDA_BWD_NODE_US == pytest.approx(diff("backward of the torch.mul chain, per node"), abs=0.05)
    # an optimizer launch from Python: the CUDA op without autograd and a module call's Python
    python = float(rows["nn.Linear call"][both]) - float(rows["F.linear call"][both])
    assert host.OPT_KERNEL_US == pytest.approx(float(rows["torch.mul, no autograd (dispatch + launch)"][both]) + python,
                                               abs=0.05)


def test_optimizer_step_pays_its_tensor_loop():
    """The Adam step's op carries the rank's parameter tensors, and the host pays each."""
    scn = _scn(hidden=512, layers=2, micro_batch=1, seq=64, dp=8)
    prog = next(iter(build_schedule(scn).programs.values()))
    (step,) = [op for op in prog if isinstance(op, ComputeOp) and op.name == "optimizer.step"]
    # the rank's parameter modules (schedule/shapes.py): per layer two norms, q, k, v, the
    # projection, FC1 and FC2; the embedding, the final norm and the untied LM head
    assert step.host_tensors == 2 * 8 + 3
    assert host.host_cost_s(step) == pytest.approx((step.count * host.OPT_KERNEL_US
                                                    + step.host_tensors * host.OPT_TENSOR_US) * 1e-6)


def test_tiny_model_is_host_bound(monkeypatch):
    """hidden 128, 4 tokens per micro-batch, on a host three times slower than the defaults: every
    forward and backward kernel (a tiny GEMM costs its launch floor and the ~5 µs fixed cost
    of costs/gemm_shape.py, ~10-13 µs) is shorter than its host cost, so each starts when the
    host issues it, the GPU idles between them, and the step lasts at least the host's time."""
    for name in HOST_COSTS:
        monkeypatch.setattr(host, name, 3 * getattr(host, name))
    scn = _scn(hidden=128, layers=2, micro_batch=1, seq=4, dp=8)
    sim = simulate_scenario(scn)
    prog = next(iter(sim.schedule.programs.values()))
    issue = host.issue_times(prog, scale=scn.profile.node.host_time_scale)  # a DGX A100's host: 1.47
    assert sim.report.step_time_s >= issue[-1]
    tl = sim.trace.timelines[sim.trace.ranks[0]]
    layers = [i for i, op in enumerate(prog) if isinstance(op, ComputeOp) and op.tag.phase in ("fwd", "bwd")]
    assert all(tl.start[i] == pytest.approx(issue[i], abs=1e-12) for i in layers)
    gpu_busy = sum(tl.end[i] - tl.start[i] for i in layers)
    assert gpu_busy < 0.75 * (tl.end[layers[-1]] - tl.start[layers[0]])


def test_large_gemms_hide_the_host(monkeypatch):
    """hidden 4096, 8K tokens per micro-batch: kernels outlast their host cost, the host runs
    ahead and the step is what it is without host costs (to 0.1%, the first kernel's issue)."""
    scn = _scn(hidden=4096, layers=2, micro_batch=4, seq=2048, dp=8)
    with_host = simulate_scenario(scn).report.step_time_s
    for name in HOST_COSTS:
        monkeypatch.setattr(host, name, 0.0)
    without = simulate_scenario(scn).report.step_time_s
    assert with_host >= without
    assert with_host == pytest.approx(without, rel=1e-3)


def test_host_time_of_a_schedule_is_its_kernel_and_collective_counts():
    """The host's total is the closed form over the program: kernels per phase x their cost plus
    collectives x theirs."""
    scn = _scn(hidden=512, layers=2, micro_batch=1, seq=64, dp=8)
    prog = next(iter(build_schedule(scn).programs.values()))
    fwd = sum(op.count for op in prog if isinstance(op, ComputeOp)
              and (op.tag.phase not in ("bwd", "opt") or op.name.endswith(".recompute")))
    bwd = sum(op.count for op in prog if isinstance(op, ComputeOp) and op.tag.phase == "bwd"
              and not op.name.endswith(".recompute"))
    opt = sum(op.count for op in prog if isinstance(op, ComputeOp) and op.tag.phase == "opt")
    comm = sum(1 for op in prog if not isinstance(op, ComputeOp))
    tensors = sum(op.host_tensors for op in prog if isinstance(op, ComputeOp))
    want = (fwd * host.FWD_KERNEL_US + bwd * host.BWD_KERNEL_US + opt * host.OPT_KERNEL_US
            + tensors * host.OPT_TENSOR_US + comm * host.COLLECTIVE_US) * 1e-6
    assert host.issue_times(prog)[-1] == pytest.approx(want)


@pytest.mark.parametrize("runs", [True, False])
def test_host_sync_exposes_the_launch_cost_of_the_ops_after_it(runs: bool):
    """A long GEMM, then five short kernels. Without a sync the host issues them all while the
    GEMM runs and they follow it back to back: step = issue(GEMM) + g + 5 d. When the host waits
    for the GEMM (``host_sync``: a device-to-host read after it) it issues kernel j only
    j forward-kernel host costs after the GEMM ends, and each kernel (d < FWD_KERNEL_US) waits for its
    issue: step = issue(GEMM) + g + 5 x FWD_KERNEL_US + d. The breakdown's host wait is the GPU's
    idle time before each op that started at its issue: the GEMM's issue, and with the sync
    FWD_KERNEL_US before the first short kernel and FWD_KERNEL_US - d before each other."""
    from simulator.costs.compute import compute_time
    from simulator.replay.engine import replay
    from simulator.report.summary import critical_path_breakdown
    from simulator.schedule.groups import Grid
    from simulator.schedule.ir import ProgramBuilder
    from tests.unit.replay_fixtures import Sched, topo

    t = topo(1, 1)
    gpu = t.profile.gpu
    fwd = Tag("fwd")

    def step(sync: bool) -> float:
        pb = ProgramBuilder()
        prev = pb.add(ComputeOp("gemm", "gemm", flops=2 * 4096**3, tag=fwd, host_sync=sync))
        for j in range(5):
            prev = pb.add(ComputeOp(f"k{j}", "elementwise", hbm_bytes=4096, deps=(prev,), tag=fwd))
        trace = replay(Sched(Grid.from_sizes({"tp": 1}), {0: pb.ops}), t, compute_runs=runs)
        bd = critical_path_breakdown(trace.timelines[0], trace.step_time_s)
        # the GPU waits for the host before the GEMM (its issue), and with the sync before each
        # short kernel: F before the first, F - d before each of the other four
        want = first + (first + 4 * (first - d) if sync else 0.0)
        assert bd.host_wait == pytest.approx(want, rel=1e-9) and bd.pipeline_bubble == pytest.approx(want, rel=1e-9)
        return trace.step_time_s

    g = compute_time(ComputeOp("gemm", "gemm", flops=2 * 4096**3), gpu)
    d = compute_time(ComputeOp("k", "elementwise", hbm_bytes=4096), gpu)
    us = 1e-6
    assert d < host.FWD_KERNEL_US * us < g / 5
    first = host.FWD_KERNEL_US * us
    assert step(False) == pytest.approx(first + g + 5 * d, rel=1e-9)
    assert step(True) == pytest.approx(first + g + 5 * host.FWD_KERNEL_US * us + d, rel=1e-9)


def test_no_host_costs_covers_every_cost():
    """The suite's ``no_host_costs`` fixture zeroes every cost ``host_cost_s`` reads (the layer CPU
    parts only feed FWD_KERNEL_US and BWD_KERNEL_US at import): a new constant must join it."""
    constants = {name for name in vars(host) if name.endswith("_US")}
    assert constants - set(HOST_COSTS) == {"LAYER_FWD_CPU_US", "LAYER_BWD_CPU_US"}


def test_no_host_costs_fixture_zeroes_the_host(no_host_costs):
    ops = [ComputeOp(name="L0.fc1.fwd", kind="gemm", count=3, tag=Tag("fwd")),
           ComputeOp(name="L0.x.bwd", kind="copy", count=2, tag=Tag("bwd"), impl="autocast"),
           ComputeOp(name="optimizer.step", kind="optimizer", tag=Tag("opt"), host_tensors=50),
           CommOp(name="dp.ar", op="allreduce", axes=("dp",), size_bytes=8)]
    assert host.issue_times(ops) == [0.0] * 4


def _on_host(scale: float, hidden: int = 128, seq: int = 4):
    """The tiny host-bound plan of :func:`test_tiny_model_is_host_bound` on a DGX H100 whose host
    takes ``scale`` times the reference's time per op (``node.host_time_scale``)."""
    from simulator.config.hardware import apply_overlay, load_profile

    profile = apply_overlay(load_profile("dgx-h100"), {"node": {"host_time_scale": scale}}, source="<test>")
    spec = dict(name="host", hardware="dgx-h100", nodes=1,
                model=dict(layers=2, hidden=hidden, heads=max(1, hidden // 64), seq_len=seq, vocab=1024),
                training=dict(micro_batch=1, global_batch=8, dtype="bf16"), parallel=dict(tp=1))
    return build_scenario(spec, source="<test>", profile=profile)


def test_host_time_scale_scales_every_host_cost():
    """A node's ``host_time_scale`` multiplies each op's issue cost and each host op's duration
    (a ComputeOp of kind "host", CPU work timed on the reference host), and nothing else."""
    from simulator.costs.compute import compute_time
    from simulator.costs.model import CostModel
    from simulator.hardware.topology import build_topology

    scn = _on_host(2.0)
    prog = next(iter(build_schedule(scn).programs.values()))
    costs = CostModel(build_topology(scn.profile, scn.nodes))
    ref = [host.host_cost_s(op) for op in prog]
    assert sum(ref) > 0
    assert costs.host_costs(prog) == pytest.approx([2 * t for t in ref])
    assert costs.issue_times(prog) == pytest.approx([2 * t for t in host.issue_times(prog)])
    assert host.issue_times(prog, scale=2.0) == costs.issue_times(prog)
    fetch = ComputeOp(name="zero3.fetch", kind="host", count=3, host_us=4.0)
    gemm = ComputeOp(name="L0.fc1.fwd", kind="gemm", flops=2e9, hbm_bytes=1e6, gemm=(1024, 1024, 1024))
    gpu = scn.profile.gpu
    assert compute_time(fetch, gpu, host_time_scale=2.0) == pytest.approx(2 * 3 * 4.0e-6)
    # the data loader's mask copied to the GPU (schedule/transformer.py): a DMA at PCIe's rate
    copy = ComputeOp(name="embedding.mask.h2d", kind="host", impl="dma", host_us=2400.0)
    assert compute_time(copy, gpu, host_time_scale=2.0) == compute_time(copy, gpu) == pytest.approx(2.4e-3)
    assert compute_time(gemm, gpu, host_time_scale=2.0) == compute_time(gemm, gpu)


def test_a_slower_host_slows_a_host_bound_step_in_proportion():
    """The host-bound tiny plan: its step is the host's, so twice the host's time per op is
    nearly twice the step (the GPU's last kernels and the first issue aside); a plan of large
    GEMMs hides the host either way, but for what no kernel hides (the first kernel's issue and
    the optimizer's loop over its tensors after the last gradient: 0.11 of 31 ms)."""
    fast, slow = (simulate_scenario(_on_host(s)).report.step_time_s for s in (1.0, 2.0))
    assert 1.8 < slow / fast <= 2.0
    big_fast, big_slow = (simulate_scenario(_on_host(s, hidden=4096, seq=4096)).report.step_time_s for s in (1.0, 2.0))
    assert big_fast < big_slow < 1.005 * big_fast


def test_host_time_scales_of_the_profiles_are_their_derivations():
    """dgx-a100's is the median A100 / H100 step of Megatron-LM's CI cases run on both nodes
    (calibration/host_speed.py); GB200's the median GB200 / H100 step of the same cases run on two
    GB200 trays (0.90-1.55: four cases faster on GB200, whose GPU time is shorter), and GH200's
    that times TransformerEngine issue #2053's GH200 / GB200 torch.nn.Linear forward, 33.17 / 37.08
    us; a DGX H100 is the reference."""
    from simulator.calibration.host_speed import (GRACE, dgx_a100_host_time_scale, gb200_host_time_scale,
                                                  gh200_host_time_scale, paired_step_ratios)
    from simulator.config.hardware import load_profile

    ratios = paired_step_ratios()
    assert len(ratios) == 17 and all(r > 1.2 for r in ratios.values())  # every case slower on the A100 node
    assert load_profile("dgx-a100").node.host_time_scale == round(dgx_a100_host_time_scale(), 2) == 1.47
    assert load_profile("vtrain-a100").node.host_time_scale == 1.47  # inherited
    grace = paired_step_ratios(slow=GRACE)
    assert len(grace) == 17 and 0.85 < min(grace.values()) < 1.0 < 1.5 < max(grace.values()) < 1.6
    assert sum(r < 1.0 for r in grace.values()) == 4
    assert load_profile("gb200-nvl72").node.host_time_scale == round(gb200_host_time_scale(), 2) == 1.33
    assert load_profile("gb300-nvl72").node.host_time_scale == 1.33  # inherited
    assert load_profile("gh200-alps").node.host_time_scale == round(gh200_host_time_scale(), 2) == 1.19
    assert load_profile("dgx-h100").node.host_time_scale == load_profile("dgx-b200").node.host_time_scale == 1.0

"""Running a sweep: the results file, resume, counts, CSV, the lower bound and its pruning, the
wider knobs, the memory cap, the Pareto front, and that stopping a sweep leaves no worker behind.

Like test_sweep.py, most tests use a stand-in simulator with a known ordering, so they check the
sweep's own bookkeeping; the lower-bound test replays real plans.
"""

from __future__ import annotations

import json
import multiprocessing
import time
from types import SimpleNamespace

import pytest

from simulator.config.scenario import build_scenario
from simulator.errors import InputError
from simulator.report.summary import Breakdown, Report
from simulator.sweep.bound import chunk0_lower_bounds, passes_lower_bound, stage_compute_lower_bounds, step_lower_bound
from simulator.sweep.plans import CHOICES, SweepBounds, enumerate_plans
from simulator.sweep.results_file import iter_lines
from simulator.sweep.run import run_plans, sweep_json
from simulator.sweep.table import CSV_COLUMNS, csv_text, pareto_points


def scenario(nodes: int = 1, global_batch: int = 32, **model):
    shape = dict(layers=4, hidden=2048, heads=16, kv_heads=8, vocab=51200, mlp="gelu", seq_len=2048,
                 tied_embeddings=True)
    shape.update(model)
    return build_scenario(dict(name="tiny", hardware="dgx-h100", nodes=nodes, model=shape,
                               training=dict(micro_batch=1, global_batch=global_batch)))


def stand_in(scn) -> SimpleNamespace:
    """Step time grows with tp, then pp, then zero, then micro-batch: a known ranking."""
    p = scn.parallel
    step = 1.0 + p.tp + 0.1 * p.pp + 0.01 * p.zero + 0.001 * scn.training.micro_batch
    return SimpleNamespace(report=Report(scenario="tiny", step_time_s=step, tokens_per_s=1.0 / step, mfu=0.1,
                                         breakdown_s=Breakdown(step, {"allgather": 0.0}, 0.0), comm_bytes_per_gpu={},
                                         memory_gib_per_gpu={}, fits_in_memory=True, sim={}))


class CountingSimulator:
    """The stand-in, recording which plans it simulated; raises KeyboardInterrupt on call `stop_at`."""

    def __init__(self, stop_at: int | None = None):
        self.calls: list[str] = []
        self.stop_at = stop_at

    def __call__(self, scn):
        if self.stop_at is not None and len(self.calls) == self.stop_at:
            raise KeyboardInterrupt
        self.calls.append(repr(scn.parallel) + f" mb{scn.training.micro_batch}")
        return stand_in(scn)


def ranking(result) -> list[tuple[str, float]]:
    return [(r.label, r.step_time_s) for r in result.plans if r.simulated]


def test_every_decided_plan_is_one_line_with_plan_figures_and_input_hashes(tmp_path):
    scn = scenario()
    plans = enumerate_plans(scn)
    path = tmp_path / "r.jsonl"
    result = run_plans(scn, plans, stand_in, results=path, prune=False)
    lines = list(iter_lines(path))
    assert len(lines) == len(plans) == len(result.plans)
    assert len({line["key"] for line in lines}) == len(lines)
    statuses = {line["status"] for line in lines}
    assert statuses <= {"simulated", "invalid", "infeasible"} and "simulated" in statuses
    for line in lines:
        assert set(line["inputs"]) == {"scenario_sha256", "hardware_sha256", "clustersim"}
        assert {"tp", "pp", "dp", "zero", "micro_batch"} <= set(line["parallel"])
        if line["status"] == "simulated":
            assert line["step_time_s"] > 0 and line["breakdown_s"]["compute"] == line["step_time_s"]


def test_an_interrupted_sweep_resumes_to_the_same_ranking_without_redoing_a_plan(tmp_path):
    scn = scenario()
    plans = enumerate_plans(scn)
    full = run_plans(scn, plans, stand_in, prune=False)
    path = tmp_path / "r.jsonl"
    first = CountingSimulator(stop_at=4)
    with pytest.raises(KeyboardInterrupt):
        run_plans(scn, plans, first, results=path, prune=False)
    assert len(first.calls) == 4
    assert sum(line["status"] == "simulated" for line in iter_lines(path)) == 4
    second = CountingSimulator()
    resumed = run_plans(scn, plans, second, resume=path, prune=False)
    assert not set(first.calls) & set(second.calls)  # no plan done twice
    assert len(first.calls) + len(second.calls) == sum(r.simulated for r in full.plans)
    assert ranking(resumed) == ranking(full)
    assert sweep_json(resumed)["counts"]["from_results_file"] == len(list(iter_lines(path))) - len(second.calls) \
        - sum(1 for r in resumed.plans if not r.simulated and not r.resumed)
    # a third run finds everything in the file: nothing simulated
    third = CountingSimulator()
    again = run_plans(scn, plans, third, resume=path, prune=False)
    assert third.calls == [] and ranking(again) == ranking(full)


def test_a_line_cut_short_by_a_crash_is_dropped_and_other_inputs_are_refused(tmp_path):
    scn = scenario()
    plans = enumerate_plans(scn)[:6]
    path = tmp_path / "r.jsonl"
    run_plans(scn, plans, stand_in, results=path, prune=False)
    whole = path.read_bytes()
    path.write_bytes(whole + b'{"key": "cut sh')  # a crash in the middle of a write
    sim = CountingSimulator()
    run_plans(scn, plans, sim, resume=path, prune=False)
    assert sim.calls == [] and path.read_bytes() == whole  # the partial line was cut, nothing redone
    other = scenario(global_batch=64)
    with pytest.raises(InputError, match="scenario_sha256"):
        run_plans(other, plans, stand_in, resume=path)
    path.write_text("not json\n{}\n")
    with pytest.raises(InputError, match="line 1"):
        run_plans(scn, plans, stand_in, resume=path)


def test_counts_add_up_in_json_and_table(tmp_path):
    from simulator.sweep.table import counts_line

    scn = scenario(nodes=2)
    plans = enumerate_plans(scn)
    mems = sorted(r.memory_gib_per_gpu["total"] for r in run_plans(scn, plans, stand_in).plans if r.simulated)
    cap = (mems[0] + mems[-1]) / 2
    result = run_plans(scn, plans, stand_in, max_plans=3, memory_cap_gib=cap)
    c = sweep_json(result)["counts"]
    assert c["simulated"] == 3
    assert c["simulated"] + c["infeasible"] + c["invalid"] + c["skipped"] == c["enumerated"] == len(plans)
    assert c["skipped"] == sum(c["skipped_by"].values()) and c["skipped_by"]["max_plans"] > 0
    assert any("over the memory cap" in r.reason for r in result.plans)
    assert all(r.memory_gib_per_gpu["total"] <= cap for r in result.plans if r.simulated)
    line = counts_line(result)
    assert line.startswith(f"{c['enumerated']} plans: 3 simulated, {c['infeasible']} infeasible, "
                           f"{c['invalid']} invalid, {c['skipped']} skipped")


def test_csv_has_one_row_per_plan(tmp_path):
    import csv
    import io

    scn = scenario()
    result = run_plans(scn, enumerate_plans(scn), stand_in)
    rows = list(csv.DictReader(io.StringIO(csv_text(result))))
    assert len(rows) == len(result.plans) and list(rows[0]) == list(CSV_COLUMNS)
    ran = [r for r in rows if r["status"] == "simulated"]
    assert [int(r["rank"]) for r in ran] == list(range(1, len(ran) + 1))
    assert float(ran[0]["step_time_s"]) == result.best.step_time_s


# --- lower bound ------------------------------------------------------------------------------

def test_bound_is_the_closed_form_for_uniform_stages():
    """Equal stages: m x T + (pp - 1) x (T / vp + 2 h) (the 1F1B bubble of arXiv:2104.04473 §2.2),
    h the send of one stage's output to the next alone on NVLink: the first micro-batch's
    activations cross each boundary before the next stage starts, the last one's gradients after."""
    from simulator.config.parallelism import Parallel
    from simulator.costs.model import CostModel
    from simulator.hardware.topology import build_topology

    base = scenario(layers=8)
    costs = CostModel(build_topology(base.profile, base.nodes))
    for pp, vp in ((1, 1), (2, 1), (4, 1), (4, 2)):
        par = Parallel(tp=2, sequence_parallel=True, pp=pp, vp=vp,
                       pp_schedule="interleaved" if vp > 1 else "1f1b")
        scn = base.with_parallel(par)
        T = stage_compute_lower_bounds(scn)
        f0, b0 = chunk0_lower_bounds(scn)[0]
        body = vp * (f0 + b0)  # a stage's layers: the stages' layers are equal
        m = scn.n_micro
        # this rank's sequence-parallel shard of the output, bf16, between two GPUs of the NVSwitch node
        msg = scn.training.micro_batch * scn.model.seq_len // 2 * scn.model.hidden * 2
        h = costs.time_alone_s(costs.plan("sendrecv", (0, 2), msg)) if pp > 1 else 0.0
        expected = max(m * T[-1] + (pp - 1) * (body / vp + 2 * h), m * T[0])
        assert passes_lower_bound(scn) == pytest.approx(expected)


@pytest.mark.parametrize("seq_len, cp, vary", [
    (2048, 1, ()),
    pytest.param(2048, 1, ("recompute",), marks=pytest.mark.slow),
    pytest.param(8192, 2, ("recompute",), marks=pytest.mark.slow),
])
def test_bound_never_exceeds_the_simulated_step(seq_len, cp, vary):
    """Over every feasible plan of a small model on 8 GPUs, replayed."""
    from simulator.simulation import simulate_scenario

    scn = scenario(layers=2, seq_len=seq_len, global_batch=8)
    bounds = SweepBounds(maximum={"cp": cp, "pp": 2}, vary=frozenset(vary))
    result = run_plans(scn, enumerate_plans(scn, bounds), simulate_scenario, prune=False)
    ran = [r for r in result.plans if r.simulated]
    assert len(ran) >= 6
    for r in ran:
        assert r.lower_bound_s <= r.step_time_s, r.label
    # and not vacuous: the bound prices every kernel of the layer, embedding and head passes with
    # the replay's cost model (0.83 of the tightest plan's step; 0.49 when it counted GEMMs and
    # attention at their best rates only)
    assert max(r.lower_bound_s / r.step_time_s for r in ran) >= 0.8


def test_pruning_skips_only_plans_that_cannot_win(tmp_path):
    scn = scenario()
    plans = enumerate_plans(scn)
    fast = {}

    def bound_is_step(s):  # a stand-in whose step times sit right at the bound: pruning bites
        out = stand_in(s)
        out.report.step_time_s = step_lower_bound(s) * (1 + 0.1 * s.parallel.tp)
        fast[s.parallel.tp] = out.report.step_time_s
        return out

    pruned = run_plans(scn, plans, bound_is_step)
    full = run_plans(scn, plans, bound_is_step, prune=False)
    assert pruned.best.label == full.best.label
    skipped = [r for r in pruned.plans if r.status == "pruned"]
    assert skipped and all(r.lower_bound_s >= pruned.best.step_time_s for r in skipped)
    assert sweep_json(pruned)["counts"]["skipped_by"]["lower_bound"] == len(skipped)
    # resumed with --no-prune, the plans the file records as pruned are replayed, nothing else
    path = tmp_path / "r.jsonl"
    run_plans(scn, plans, bound_is_step, results=path)
    again = run_plans(scn, plans, bound_is_step, resume=path, prune=False)
    assert ranking(again) == ranking(full)
    assert sweep_json(again)["counts"]["from_results_file"] == len(plans) - len(skipped)


# --- wider search -----------------------------------------------------------------------------

def test_vary_adds_the_knobs_where_they_mean_something():
    scn = scenario(nodes=2, seq_len=32768)
    plans = enumerate_plans(scn, SweepBounds(fixed={"tp": 2, "pp": 2}, maximum={"cp": 2, "ulysses": 1},
                                             vary=frozenset({"tp_overlap", "cp_comm", "recompute", "pp_schedule",
                                                             "zero3"})))
    par = [c.parallel for c in plans]
    assert {p.tp_overlap for p in par} == set(CHOICES["tp_overlap"])
    assert {p.cp_comm for p in par if p.cp > 1} >= {"p2p", "all_gather", "a2a"}
    assert {p.cp_comm for p in par if p.cp == 1} == {scn.parallel.cp_comm}
    assert {c.recompute for c in plans} == {"none", "selective", "full"}
    assert {p.vp for p in par} == {1, 2}  # 4 layers on 2 stages: chunks of 1 or 2 layers
    z3 = {(p.zero3_impl, p.fsdp_reshard_after_forward) for p in par if p.zero == 3}
    assert z3 == {("deepspeed", True), ("fsdp2", True), ("fsdp2", False)}
    assert {(p.zero3_impl, p.fsdp_reshard_after_forward) for p in par if p.zero < 3} == {("deepspeed", True)}
    pinned = enumerate_plans(scn, SweepBounds(fixed={"tp": 2, "recompute": "full", "tp_overlap": "bulk"}))
    assert {(c.recompute, c.parallel.tp_overlap) for c in pinned} == {("full", "bulk")}
    with pytest.raises(InputError, match="recompute"):
        SweepBounds(fixed={"recompute": "sometimes"})
    with pytest.raises(InputError, match="--vary"):
        SweepBounds(vary=frozenset({"colour"}))


def test_pareto_front_and_points():
    from simulator.report.compare_plots import pareto_front

    pts = [("a", 1.0, 50.0), ("b", 1.5, 30.0), ("c", 1.6, 40.0), ("d", 2.0, 10.0), ("e", 2.5, 10.0)]
    assert pareto_front(pts) == [0, 1, 3]
    scn = scenario()
    result = run_plans(scn, enumerate_plans(scn), stand_in)
    points = pareto_points(result.plans)
    assert points[0][0] == result.best.label and len(points) == sum(r.simulated for r in result.plans)


# --- stopping ---------------------------------------------------------------------------------

def _sleepy(simulate, scn):  # noqa: ARG001
    time.sleep(60)


def test_terminating_the_pool_leaves_no_worker_process():
    from simulator.sweep.executors import PoolExecutor

    ex = PoolExecutor(_sleepy, None, 2)
    ex.submit("a", None)
    ex.submit("b", None)
    time.sleep(0.5)
    workers = [p for p in multiprocessing.active_children()]
    assert len(workers) >= 2
    ex.terminate()
    assert all(not p.is_alive() for p in workers)
    assert multiprocessing.active_children() == []


def _stubborn(flag_dir, kind):
    """A plan that ignores SIGTERM and never ends ("deaf"), or one whose result is far larger than
    a pipe holds, so that its worker sits in the middle of sending it ("chatty")."""
    import os
    import signal
    from pathlib import Path

    if kind == "deaf":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    Path(flag_dir, kind).write_text(str(os.getpid()))
    if kind == "deaf":
        time.sleep(600)
    return b"x" * (32 << 20)


def _finished(ex, deadline_s: float = 60.0) -> dict:
    """Every result of the plans in flight (a guard turns a lost plan into a failure, not a hang)."""
    out = {}
    deadline = time.monotonic() + deadline_s
    while ex.in_flight():
        assert time.monotonic() < deadline, f"plans lost: {ex.in_flight()} never came back"
        out.update(ex.wait(0.25))
    return out


def test_terminate_kills_a_worker_that_ignores_sigterm_and_one_caught_sending_its_result(tmp_path):
    """multiprocessing.Pool.terminate() waited for ever here: on the first (it joins the workers
    it sent SIGTERM) and, when the second was killed holding the result queue's lock, on its
    task thread. The pool's own workers share nothing, and terminate() ends in SIGKILL."""
    import signal
    import threading

    from simulator.sweep.executors import PoolExecutor

    ex = PoolExecutor(_stubborn, str(tmp_path), 2)
    ex.submit("deaf", "deaf")
    ex.submit("chatty", "chatty")
    deadline = time.monotonic() + 60
    while not all((tmp_path / kind).exists() and (tmp_path / kind).read_text() for kind in ("deaf", "chatty")):
        assert time.monotonic() < deadline, "the plans never started"
        time.sleep(0.05)
    pids = {kind: int((tmp_path / kind).read_text()) for kind in ("deaf", "chatty")}
    deaf, chatty = ([p for p in multiprocessing.active_children() if p.pid == pids[kind]][0] for kind in pids)
    stopper = threading.Thread(target=ex.terminate, daemon=True)
    stopper.start()
    stopper.join(60)  # a guard, not a timing: without the SIGKILL it never returns
    assert not stopper.is_alive(), "terminate() is stuck"
    assert deaf.exitcode == -signal.SIGKILL and chatty.exitcode == -signal.SIGTERM
    assert multiprocessing.active_children() == []


def _dies_on(flag_dir, name):
    import os
    import signal
    from pathlib import Path

    if name == "oom":
        os.kill(os.getpid(), signal.SIGKILL)  # what the OOM killer does
    if name == "stopped" and not Path(flag_dir, name).exists():  # the first time only
        Path(flag_dir, name).touch()
        os.kill(os.getpid(), signal.SIGTERM)
    return name.upper()


def test_a_worker_that_dies_fails_its_plan_unless_stopped_and_is_replaced(tmp_path):
    """Killed (SIGKILL): the plan failed, and the reason says how. Stopped (SIGTERM, as when a
    batch job is cancelled and the signal reaches the workers first): the plan is not a result,
    it runs again. Either way a new worker takes the dead one's place."""
    from simulator.sweep.executors import PoolExecutor

    ex = PoolExecutor(_dies_on, str(tmp_path), 2)
    for name in ("a", "oom", "b", "stopped", "c", "d"):  # more plans than workers: the rest wait their turn
        ex.submit(name, name)
    got = _finished(ex)
    ex.close()
    assert got == {"a": "A", "b": "B", "c": "C", "d": "D", "stopped": "STOPPED",
                   "oom": "simulation failed: its worker process killed by SIGKILL"}
    assert (tmp_path / "stopped").exists()
    assert multiprocessing.active_children() == []


def _signal_state(simulate, scn):  # noqa: ARG001
    import signal

    return (int(signal.getsignal(signal.SIGTERM)), int(signal.getsignal(signal.SIGINT)),
            sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, [])))


@pytest.mark.skipif(not hasattr(__import__("signal"), "pthread_sigmask"), reason="POSIX signal masks")
def test_workers_die_on_sigterm_even_when_the_sweep_handles_it():
    """The command turns SIGTERM into an exception; a worker forked with that handler would raise
    it inside a plan instead of dying. Workers take the default action (SIGINT: ignored, the
    sweep decides) and block nothing, and the sweep's own mask is left as it was."""
    import signal

    from simulator.sweep.executors import PoolExecutor

    def raises(signum, frame):  # noqa: ARG001
        raise RuntimeError("the sweep's handler")

    saved = signal.signal(signal.SIGTERM, raises)
    try:
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
        ex = PoolExecutor(_signal_state, None, 1)
        assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == mask
        ex.submit("x", None)
        got = _finished(ex)
        ex.close()
    finally:
        signal.signal(signal.SIGTERM, saved)
    assert got == {"x": (int(signal.SIG_DFL), int(signal.SIG_IGN),
                         sorted(int(s) for s in mask - {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}))}


def test_results_file_lines_are_valid_json_even_for_failed_plans(tmp_path):
    def fails(scn):
        from simulator.errors import SimulationError

        raise SimulationError("hang")

    scn = scenario()
    path = tmp_path / "r.jsonl"
    result = run_plans(scn, enumerate_plans(scn)[:3], fails, results=path)
    assert {r.status for r in result.plans} <= {"failed", "invalid", "infeasible"}
    for raw in path.read_text().splitlines():
        json.loads(raw)
    assert sweep_json(result)["counts"]["skipped_by"]["replay_failed"] >= 1


# --- the command, killed and resumed -----------------------------------------------------------

def _children(pid: int) -> list[int]:
    from pathlib import Path

    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def _running(pid: int) -> bool:
    from pathlib import Path

    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.slow
@pytest.mark.skipif(not __import__("sys").platform.startswith("linux"), reason="reads /proc")
def test_sigterm_midway_then_resume_gives_the_same_ranking_and_leaves_no_orphans(tmp_path):
    import signal
    import subprocess
    import sys

    import yaml

    from simulator.sweep.results_file import iter_lines as lines_of

    doc = dict(name="tiny", hardware="dgx-h100", nodes=1,
               model=dict(layers=2, hidden=1024, heads=16, kv_heads=8, vocab=32000, mlp="gelu", seq_len=1024),
               training=dict(micro_batch=1, global_batch=8), parallel=dict(tp=2, sequence_parallel=True))
    scn = tmp_path / "tiny.yaml"
    scn.write_text(yaml.safe_dump(doc))
    common = [sys.executable, "-m", "simulator", "sweep", str(scn), "--vary", "recompute", "--no-prune",
              "--quiet", "--jobs", "2"]
    root = str(__import__("pathlib").Path(__file__).resolve().parents[2])
    ref = tmp_path / "ref.json"
    subprocess.run(common + ["--json", str(ref)], cwd=root, check=True, capture_output=True)
    results = tmp_path / "r.jsonl"
    proc = subprocess.Popen(common + ["--results", str(results)], cwd=root, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while time.time() < deadline:
        if results.exists() and sum(x["status"] == "simulated" for x in lines_of(results)) >= 3:
            break
        time.sleep(0.05)
    workers = _children(proc.pid)
    assert len(workers) >= 2
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert b"--resume" in err
    time.sleep(1.0)
    assert [w for w in workers if _running(w)] == []  # no orphan still replaying
    done_before = {x["key"] for x in lines_of(results) if x["status"] == "simulated"}
    total = json.loads(ref.read_text())
    assert 3 <= len(done_before) < total["counts"]["simulated"]  # killed midway
    out = tmp_path / "resumed.json"
    subprocess.run(common + ["--resume", str(results), "--json", str(out)], cwd=root, check=True,
                   capture_output=True)
    resumed = json.loads(out.read_text())
    keys = [x["key"] for x in lines_of(results)]
    assert len(keys) == len(set(keys))  # no plan done twice
    assert resumed["counts"]["from_results_file"] >= len(done_before)
    rank = [(p["label"], p["step_time_s"]) for p in resumed["plans"] if p["simulated"]]
    assert rank == [(p["label"], p["step_time_s"]) for p in total["plans"] if p["simulated"]]


@pytest.mark.slow
def test_a_sweep_on_a_local_ray_instance_matches_the_local_one(tmp_path, monkeypatch):
    """Starts a local Ray instance (2 CPUs), sweeps on it with a results file, resumes on it, and
    compares with the same sweep in this process. The workers import this checkout through
    PYTHONPATH, which they inherit from the instance's raylet: a job ``runtime_env`` made Ray start a
    second set of workers for it beside the ones it starts in advance (12.8 -> 10.0 CPU seconds)."""
    ray = pytest.importorskip("ray")
    import os
    from pathlib import Path

    from simulator.simulation import simulate_scenario

    root = str(Path(__file__).resolve().parents[2])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p))
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    try:
        scn = scenario(layers=2, global_batch=8)
        plans = enumerate_plans(scn, SweepBounds(fixed={"tp": 2}))
        path = tmp_path / "r.jsonl"
        first = run_plans(scn, plans[:3], simulate_scenario, ray="auto", results=path, prune=False)
        on_ray = run_plans(scn, plans, simulate_scenario, ray="auto", resume=path, prune=False)
        assert ray.is_initialized()  # the sweep used the test's instance and left it running
    finally:
        ray.shutdown()
    local = run_plans(scn, plans, simulate_scenario, prune=False)
    assert ranking(on_ray) == ranking(local) and len(ranking(local)) >= 3
    assert sweep_json(on_ray)["counts"]["from_results_file"] == len(first.plans)
    keys = [line["key"] for line in iter_lines(path)]
    assert len(keys) == len(set(keys)) == len(plans)


def test_progress_reports_plans_done_feasible_and_best():
    import io

    from simulator.sweep.progress import Progress

    scn = scenario()
    buf = io.StringIO()
    result = run_plans(scn, enumerate_plans(scn), stand_in, progress=Progress(stream=buf), prune=False)
    lines = buf.getvalue().splitlines()
    n = sum(r.simulated for r in result.plans)
    assert lines[0] == f"sweep: {len(result.plans)} plans screened; {n} to simulate"
    best = result.best
    assert lines[-1].startswith(f"sweep: {n}/{n} simulated, {n} feasible, best "
                                f"{best.step_time_s * 1e3:.1f} ms ({best.label})")


def test_progress_counts_only_plans_that_can_still_beat_the_best():
    """With pruning, the plans whose bound is already above the best so far are not counted as
    left to simulate (the ETA of a 70B sweep read 46 minutes for a 51 s sweep)."""
    import io

    from simulator.sweep.progress import Progress

    scn = scenario()
    plans = enumerate_plans(scn)

    def bound_is_step(s):  # step times right at the bound: pruning bites after the first plans
        out = stand_in(s)
        out.report.step_time_s = step_lower_bound(s) * (1 + 0.1 * s.parallel.tp)
        return out

    buf = io.StringIO()
    result = run_plans(scn, plans, bound_is_step, progress=Progress(stream=buf))
    n = sum(r.simulated for r in result.plans)
    queued = n + sum(r.status == "pruned" for r in result.plans)
    lines = buf.getvalue().splitlines()
    assert lines[0].endswith(f"; {queued} to simulate") and n < queued
    # every progress line counts at most the plans that could still run: the simulated ones at the end
    assert lines[-1].startswith(f"sweep: {n}/{n} simulated")
    # the first result already bounds what is left: fewer than every queued plan
    assert int(lines[1].split("/")[1].split()[0]) < queued

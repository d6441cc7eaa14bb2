"""The whole pipeline of one step estimate, in a few lines (DESIGN.md, "Data flow")."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simulator.replay.trace import Trace
from simulator.report.summary import Report

if TYPE_CHECKING:
    from simulator.config.scenario import Scenario
    from simulator.hardware.topology import Topology
    from simulator.schedule.build import Schedule


@dataclass
class Simulation:
    """One simulated step: the inputs as validated and built, and what came out.

    ``report`` holds the numbers (``report.to_dict()`` is the ``run --json`` document),
    ``trace`` when every op of every simulated rank ran (``plot_gantt`` draws it,
    ``write_chrome_trace`` exports it for Perfetto)."""

    scenario: Scenario
    topology: Topology
    schedule: Schedule
    trace: Trace
    report: Report


def simulate_scenario(scenario: Scenario, *, algo: str | None = None, proto: str | None = None,
                      max_ranks: int | None = None, symmetric: bool | None = None, fold: bool = True) -> Simulation:
    """Replay one step of an already loaded Scenario (:func:`replay_scenario`) and report it."""
    from simulator.report.summary import summarize

    topology, schedule, trace = replay_scenario(scenario, algo=algo, proto=proto, max_ranks=max_ranks,
                                                symmetric=symmetric, fold=fold)
    return Simulation(scenario, topology, schedule, trace, summarize(trace, schedule, scenario))


def replay_scenario(scenario: Scenario, *, algo: str | None = None, proto: str | None = None,
                    max_ranks: int | None = None, symmetric: bool | None = None,
                    fold: bool = True) -> tuple[Topology, Schedule, Trace]:
    """The topology, the schedule and the replayed trace of one step of ``scenario``, without the
    report (whose critical-path breakdown and memory model a caller that needs only the step time,
    as the validation against published runs does, can skip). ``fold`` replays repeated steady
    micro-batches once where nothing differs between them (``replay/fold.py``; the same step
    times and per-op records as without)."""
    from simulator.hardware.topology import build_topology
    from simulator.replay.collector import built_frozen, collector_spared
    from simulator.replay.engine import replay
    from simulator.schedule.build import build_schedule

    topology = build_topology(scenario.profile, scenario.nodes)
    # The schedule is built inside the replay's spare of the garbage collector and frozen as
    # built (replay/collector.py): no collection scans its ops between the build and the replay.
    with collector_spared() as frozen:
        schedule = (built_frozen(build_schedule) if frozen else build_schedule)(scenario)
        trace = replay(schedule, topology, algo=algo, proto=proto, max_ranks=max_ranks, symmetric=symmetric,
                       fold=(lambda n_micro: build_schedule(with_micro_batches(scenario, n_micro))) if fold else None)
    return topology, schedule, trace


def with_micro_batches(scenario: Scenario, n_micro: int) -> Scenario:
    """The scenario with ``n_micro`` micro-batches per pipeline (its global batch scaled): the
    reduced step micro-batch folding replays. Not validated again: only the count changes."""
    from dataclasses import replace

    t = scenario.training
    return replace(scenario, training=t.model_copy(update={"global_batch": n_micro * t.micro_batch * scenario.dp}))


def simulate(scenario: Scenario | str | Path, *, hardware: str | None = None, **kwargs: Any) -> Simulation:
    """load_scenario (when given a path) -> build_topology + build_schedule -> replay -> summarize.

    ``scenario`` is a loaded Scenario or the path of a scenario YAML; ``hardware`` (paths
    only) replaces its ``hardware:`` as ``--hardware`` does; ``algo``, ``proto``,
    ``max_ranks`` and ``symmetric`` are those of :func:`simulate_scenario`."""
    if isinstance(scenario, (str, Path)):
        from simulator.config.scenario import load_scenario

        scenario = load_scenario(scenario, hardware)
    elif hardware is not None:
        raise TypeError("hardware= applies to a scenario path; for a loaded Scenario, load it with "
                        "load_scenario(path, hardware)")
    return simulate_scenario(scenario, **kwargs)

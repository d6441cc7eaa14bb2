"""The whole pipeline of one step estimate, in a few lines (DESIGN.md, "Data flow")."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simulator.replay.trace import Trace
from simulator.report.summary import Report


@dataclass
class Simulation:
    scenario: Any
    topology: Any
    schedule: Any
    trace: Trace
    report: Report


def simulate_scenario(scenario: Any, *, algo: str | None = None, proto: str | None = None,
                      max_ranks: int | None = None, symmetric: bool | None = None) -> Simulation:
    """Replay one step of an already loaded Scenario."""
    from simulator.hardware.topology import build_topology
    from simulator.replay.engine import replay
    from simulator.report.summary import summarize
    from simulator.schedule.build import build_schedule

    topology = build_topology(scenario.profile, scenario.nodes)
    schedule = build_schedule(scenario)
    trace = replay(schedule, topology, algo=algo, proto=proto, max_ranks=max_ranks, symmetric=symmetric)
    return Simulation(scenario, topology, schedule, trace, summarize(trace, schedule, scenario))


def simulate(path: str | Path, **kwargs: Any) -> Simulation:
    """load_scenario -> build_topology + build_schedule -> replay -> summarize."""
    from simulator.config.scenario import load_scenario

    return simulate_scenario(load_scenario(path), **kwargs)

"""clustersim: a discrete-event simulator of distributed LLM training.

The Python API, for notebooks and scripts (the command line is built on the same calls)::

    from simulator import load_scenario, simulate, plot_gantt, plot_breakdown

    scenario = load_scenario("scenarios/quickstart.yaml")   # or load_scenario(path, "my-overlay.yaml")
    result = simulate(scenario)             # a path works too: simulate("scenarios/quickstart.yaml")
    result.report.step_time_s               # the numbers, as fields
    result.report.to_dict()                 # ... or as the `clustersim run --json` document
    result.trace                            # when every op of every simulated rank ran
    plot_gantt(result.trace)                # matplotlib Figures
    plot_breakdown([result.report])

``scenario.with_parallel(scenario.parallel.model_copy(update={"tp": 4}))`` gives the same
scenario under another plan, validated again. Importing the package loads nothing heavy:
each function imports what it needs when called (matplotlib only for the plots).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = ["__version__", "load_scenario", "simulate", "plot_gantt", "plot_breakdown"]

if TYPE_CHECKING:  # pragma: no cover
    from simulator.config.scenario import Scenario
    from simulator.simulation import Simulation


def load_scenario(path: str | Path, hardware: str | None = None) -> "Scenario":
    """Read and validate a scenario YAML (raises ``simulator.errors.InputError`` naming the file
    and field on bad input); ``hardware`` (a bundled profile name or a profile YAML, such as a
    ``clustersim calibrate`` overlay) replaces its ``hardware:``."""
    from simulator.config.scenario import load_scenario as _load

    return _load(path, hardware)


def simulate(scenario: "Scenario | str | Path", **kwargs: Any) -> "Simulation":
    """Simulate one training step of a Scenario (or of the scenario YAML at a path).

    Returns a :class:`simulator.simulation.Simulation` with ``report`` (step time, breakdown,
    MFU, memory; ``report.to_dict()``), ``trace`` (per-rank op timings), ``schedule``,
    ``topology`` and ``scenario``. Keywords: ``hardware`` (with a path), ``algo``, ``proto``,
    ``max_ranks``, ``symmetric``."""
    from simulator.simulation import simulate as _simulate

    return _simulate(scenario, **kwargs)


def plot_gantt(trace: Any, *args: Any, **kwargs: Any) -> Any:
    """A matplotlib Figure: the Gantt chart of a few ranks' streams. Given the Simulation
    (``plot_gantt(result)``) it shows one steady-state layer, forward and backward, on the
    critical rank and its TP/CP/DP peers, titled with scenario, hardware, plan and step time;
    ``window="step"`` or ``window=(t0, t1)`` seconds, ``ranks=``, ``path=`` to save a PNG. A
    Trace works too. See :func:`simulator.report.plots.plot_gantt`."""
    from simulator.report.plots import plot_gantt as _plot

    return _plot(trace, *args, **kwargs)


def plot_breakdown(reports: Any, *args: Any, **kwargs: Any) -> Any:
    """A matplotlib Figure: stacked bars of the step-time breakdown, one per report (``labels=``, ``path=``); see
    :func:`simulator.report.plots.plot_breakdown`."""
    from simulator.report.plots import plot_breakdown as _plot

    return _plot(list(reports) if not hasattr(reports, "breakdown_s") else [reports], *args, **kwargs)

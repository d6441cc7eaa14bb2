"""Suite-wide pytest hooks.

CI runs the suite with pytest-xdist, one file per work unit (``-n auto --dist loadfile``), and
xdist hands the files to the workers in collection order. A file of long tests handed out last
runs on at the end while the other workers sit idle, so the longest files are collected first
and the many short ones fill the other workers around them: the all-rows e2e accuracy file
(over five minutes of simulation on two cores, most of it in one test), then the other files
whose tests take longest (``LONGEST_FIRST``, by measured run time), then the files with the
most slow-marked tests. Tests keep their order inside a file (the e2e file's single-source
tests read the step times its all-rows test simulated).

The workers share the step times the e2e tests simulate (``scoring.share_simulations``): one
folder of the run's temporary directory, which the controller hands to every worker, holds each
simulated scenario once, so a row simulated by the all-rows test in one worker is read, not
simulated again, by the file of its source in another (and the other way round). The folder is
new with every run: the step times compared are always simulated by the code under test.

pytest-xdist >= 3.6 reorders loadfile's work units by their number of tests unless told not
to (``--loadscope-reorder``, on by default), which put the e2e file eleventh, the calibration
accuracy file (nine tests, minutes of fitting) 72nd and the type check (one test, a whole mypy
run) 134th of 135: ``pytest_configure`` turns that off so that the order above holds.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# By CPU time on one core (2026-12): the e2e file over ten minutes (its all-rows test splits over
# the cores), the calibration splits ~45 s, the gloo measurement runs (torchrun ranks) ~35 s, the
# sweep runs ~25 s, the deployed-constants fits ~18 s, then 10-20 s each.
LONGEST_FIRST = ("validation/test_e2e_accuracy.py", "validation/test_calibration_accuracy.py",
                 "unit/test_measure.py", "unit/test_sweep_run.py", "validation/test_deployed_defaults.py",
                 "golden/test_scenarios.py", "unit/test_notebook.py", "unit/test_typecheck.py")


def _simulations_folder(config: pytest.Config) -> Path:
    """The run's folder of shared e2e simulations: a worker's comes from the controller."""
    given = getattr(config, "workerinput", {}).get("e2e_simulations")
    if given is not None:
        return Path(given)
    return config._tmp_path_factory.getbasetemp() / "e2e-simulations"  # type: ignore[attr-defined]


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist, in the controller: each worker gets the run's folder of shared simulations."""
    node.workerinput["e2e_simulations"] = str(_simulations_folder(node.config))


@pytest.fixture(scope="session", autouse=True)
def _share_e2e_simulations(request: pytest.FixtureRequest) -> Iterator[None]:
    from simulator.e2e_validation import scoring

    scoring.share_simulations(_simulations_folder(request.config))
    yield
    scoring.share_simulations(None)


def pytest_configure(config: pytest.Config) -> None:
    if getattr(config.option, "loadscopereorder", None) is not None:  # pytest-xdist installed
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    longest = {here / p: i for i, p in enumerate(LONGEST_FIRST)}
    slow = Counter(item.path for item in items if item.get_closest_marker("slow") is not None)
    first: dict[Path, int] = {}
    for i, item in enumerate(items):
        first.setdefault(item.path, i)
    # Stable: a file's tests stay together and in their order.
    items.sort(key=lambda item: (longest.get(item.path, len(longest)), -slow[item.path], first[item.path]))


HOST_COSTS = ("FWD_KERNEL_US", "BWD_KERNEL_US", "AUTOCAST_FWD_CPU_US", "AUTOCAST_BWD_CPU_US", "CUDA_LAUNCH_US",
              "CUDA_BWD_NODE_US", "OPT_KERNEL_US", "OPT_TENSOR_US", "COLLECTIVE_US")


@pytest.fixture
def no_host_costs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every host issue cost of ``simulator/costs/host.py`` at zero, for closed forms of the GPU's side of
    a step whose tiny layers would otherwise run at the host's pace."""
    from simulator.costs import host

    for name in HOST_COSTS:
        monkeypatch.setattr(host, name, 0.0)

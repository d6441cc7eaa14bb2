"""The plans file of ``clustersim compare``: a list of overrides of the scenario's plan.

```yaml
plans:
  - {name: tp8, tp: 8, sequence_parallel: true}
  - {name: dp8-zero1, zero: 1, micro_batch: 2}
```

Each entry takes any key of the scenario's ``parallel:`` block, plus ``micro_batch`` (sequences
per micro-batch, ``training.micro_batch``) and an optional ``name``. Keys an entry does not give
come from the scenario (:func:`simulator.sweep.plans.inherit_parallel`). Unknown keys and wrong
types are input errors naming the file and the path (``plans[2].tp``); rules that involve the
model or the GPU count (``tp=3 does not divide heads=32``) are not: such a plan is listed with
its reason, like in a sweep.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from simulator.config.loader import read_yaml, validate
from simulator.config.parallelism import Parallel
from simulator.config.scenario import Scenario
from simulator.errors import InputError
from simulator.sweep.plans import Candidate, inherit_parallel


class PlanEntry(Parallel):
    """One entry: a full ``parallel:`` block (after inheriting from the scenario) plus extras."""

    name: str | None = None
    micro_batch: int | None = Field(default=None, gt=0)


class PlansFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    plans: list[PlanEntry] = Field(min_length=1)


_EXTRA = ("name", "micro_batch")


def _merged(base: Scenario, raw: Any) -> Any:
    """Fill an entry's missing parallel keys from the scenario; leave non-mappings for pydantic
    to reject with their path."""
    if not isinstance(raw, dict):
        return raw
    overrides = {k: v for k, v in raw.items() if k not in _EXTRA}
    merged = inherit_parallel(base.parallel, overrides)
    merged.update({k: raw[k] for k in _EXTRA if k in raw})
    return merged


def load_plans(path: str | Path, base: Scenario) -> list[Candidate]:
    """The candidates of a plans file, in file order (named by their ``name`` key)."""
    data = read_yaml(path)
    if isinstance(data.get("plans"), list):
        data = {**data, "plans": [_merged(base, e) for e in data["plans"]]}
    spec = validate(PlansFile, data, path)
    out = []
    for entry in spec.plans:
        parallel = Parallel.model_validate(entry.model_dump(exclude={"name", "micro_batch"}))
        mb = entry.micro_batch or base.training.micro_batch
        out.append(Candidate(parallel, mb, entry.name))
    if not out:
        raise InputError("expected at least one plan", source=str(path), field="plans")
    return out

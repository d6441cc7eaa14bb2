"""Plan comparison: enumerate parallel plans, prune those that cannot run or do not fit in
memory, simulate the rest and rank them (`clustersim compare` / `clustersim sweep`)."""

from simulator.sweep.plans import Candidate, SweepBounds, enumerate_plans
from simulator.sweep.run import PlanResult, SweepResult, run_plans, sweep_json

__all__ = ["Candidate", "SweepBounds", "enumerate_plans", "PlanResult", "SweepResult", "run_plans", "sweep_json"]

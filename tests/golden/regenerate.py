"""Rewrite tests/golden/<scenario>.json from the current model: run this when a change to the
model is intended, and review the diff of the JSON files like any other change.

    python -m tests.golden.regenerate            # every bundled scenario
    python -m tests.golden.regenerate quickstart # some of them
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"
GOLDEN = Path(__file__).resolve().parent

# Numbers kept: everything of `run --json` that the model decides (not the wall time or event
# count of the simulation itself).
VOLATILE = ("wall_s", "events")


def golden_numbers(scenario_path: Path) -> dict:
    from simulator.report.summary import report_to_json
    from simulator.simulation import simulate

    doc = report_to_json(simulate(scenario_path).report)
    doc["sim"] = {k: v for k, v in doc["sim"].items() if k not in VOLATILE}
    # the echo of the inputs (an absolute path) and the wall time are not results of the model
    return {k: v for k, v in doc.items() if k not in ("inputs", "meta")}


def scenario_names() -> list[str]:
    return sorted(p.stem for p in SCENARIOS.glob("*.yaml"))


def main(argv: list[str]) -> int:
    from simulator.errors import ClusterSimError

    failed = 0
    for name in argv or scenario_names():
        try:
            doc = golden_numbers(SCENARIOS / f"{name}.yaml")
        except ClusterSimError as exc:
            print(f"{name}: not regenerated: {exc}")
            failed += 1
            continue
        (GOLDEN / f"{name}.json").write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
        print(f"{name}: step {doc['step_time_s'] * 1e3:.3f} ms, MFU {100 * doc['mfu']:.1f} %")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

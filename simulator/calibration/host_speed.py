"""A host's time per op against the reference host of ``costs/host.py``, from steps that only the
host sets: the derivation of a profile's ``node.host_time_scale``.

The host costs of ``costs/host.py`` were timed on Sapphire/Emerald Rapids Xeons (this repository's
machines and the H200 lease); a DGX H100's Xeon 8480C issues a ``torch.nn.Linear`` forward in the
same time (13.48 us, TransformerEngine issue #2053; 13.33 us on the lease,
``data/kernels/h200_host_overhead.csv``), so a DGX H100 is the reference, 1.

Megatron-LM's CI runs the same functional-test cases, the same small GPT (12 layers, hidden 512,
sequence 1,024, micro-batch 4), on one DGX A100 node and on one DGX H100 node and keeps each
step's time (``data/e2e/megatron_ci_golden_values.csv``). Their steps are the host's: a layer
and micro-batch costs 4-10 ms whatever the tensor-parallel degree, where the kernels take a
fraction of that (``docs/validation-e2e.md``, the functional tests' section). The ratio of a
case's two steps is then the ratio of the two hosts' time per op: :func:`paired_step_ratios`.
What it carries besides the hosts, both ways: the A100 files are older (2025-10 against 2026
containers), and what little of the step is GPU time runs slower on the A100.

Grace (GB200, GH200) is read off the same issue: a ``torch.nn.Linear`` forward costs 37.08 us of
CPU on GB200 and 33.17 on GH200 against 13.48 on the DGX H100.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from simulator.files import bundled_dir, note_value, read_commented_csv

CI_STEPS = "megatron_ci_golden_values.csv"
# The platforms of the CI's golden files: the DGX A100 and DGX H100 nodes.
SLOW, REFERENCE = "dgx_a100", "dgx_h100"


def paired_step_ratios(path: Path | None = None, hidden: str = "512") -> dict[str, float]:
    """Per test case of the small GPT (``hidden``) measured on both nodes: its DGX A100 step over
    its DGX H100 step."""
    rows = read_commented_csv(path or bundled_dir("data/e2e") / CI_STEPS)
    steps: dict[str, dict[str, float]] = {}
    for r in rows:
        if r["hidden"] != hidden or r["metric"] != "step_time_s":
            continue
        case, platform = note_value(r["notes"], "test_case"), note_value(r["notes"], "platform")
        if case and platform:
            steps.setdefault(case, {})[platform] = float(r["value"])
    return {case: v[SLOW] / v[REFERENCE] for case, v in sorted(steps.items()) if SLOW in v and REFERENCE in v}


def dgx_a100_host_time_scale(path: Path | None = None) -> float:
    """The median of :func:`paired_step_ratios`: ``dgx-a100``'s ``node.host_time_scale``."""
    return statistics.median(paired_step_ratios(path).values())

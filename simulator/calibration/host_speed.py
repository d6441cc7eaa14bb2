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

The same CI runs those cases on two GB200 compute trays (``platform=dgx_gb200`` rows of the same
file, golden files of the same commit as the H100 ones for the TE cases): the GB200 step over the
H100 step, case by case, is Grace's host time per op against the Xeon's
(:func:`gb200_host_time_scale`), 0.90-1.55, median 1.33. It is not what TransformerEngine issue
#2053 read off one ``torch.nn.Linear`` forward in August 2025 (37.08 us of CPU on GB200, 33.17 on
GH200, 13.48 on the DGX H100: 2.75 and 2.46), before TransformerEngine's CPU-side work of
2026 (its PR #2439) and on a host whose setup (NUMA binding, CPU boost: Megatron-LM's DeepSeek-V3 GB200
write-up gains 10% from binding alone) the issue does not state; a training step of the CI's
stack is the quantity the model needs. What the ratio carries besides the hosts: the two trays'
fabric (not stated) on the plans whose groups span them, and what GPU time the steps hold, faster
on GB200 (four of the 17 cases run faster there). GH200 has no CI runs: its scale is GB200's times
the issue's GH200 / GB200 ratio of the same benchmark (:func:`gh200_host_time_scale`).
"""

from __future__ import annotations

import statistics
from pathlib import Path

from simulator.files import bundled_dir, note_value, read_commented_csv

CI_STEPS = "megatron_ci_golden_values.csv"
# The platforms of the CI's golden files: the DGX A100 and DGX H100 nodes, two GB200 compute trays.
SLOW, REFERENCE, GRACE = "dgx_a100", "dgx_h100", "dgx_gb200"
# TransformerEngine issue #2053: CPU time of one torch.nn.Linear forward (us), GH200 and GB200.
LINEAR_FWD_CPU_US = {"gh200": 33.17, "gb200": 37.08}


def paired_step_ratios(path: Path | None = None, hidden: str = "512", slow: str = SLOW) -> dict[str, float]:
    """Per test case of the small GPT (``hidden``) measured on both platforms: its step on ``slow``
    (the DGX A100 node, or :data:`GRACE`) over its DGX H100 step."""
    rows = read_commented_csv(path or bundled_dir("data/e2e") / CI_STEPS)
    steps: dict[str, dict[str, float]] = {}
    for r in rows:
        if r["hidden"] != hidden or r["metric"] != "step_time_s":
            continue
        case, platform = note_value(r["notes"], "test_case"), note_value(r["notes"], "platform")
        if case and platform:
            steps.setdefault(case, {})[platform] = float(r["value"])
    return {case: v[slow] / v[REFERENCE] for case, v in sorted(steps.items()) if slow in v and REFERENCE in v}


def dgx_a100_host_time_scale(path: Path | None = None) -> float:
    """The median of :func:`paired_step_ratios`: ``dgx-a100``'s ``node.host_time_scale``."""
    return statistics.median(paired_step_ratios(path).values())


def gb200_host_time_scale(path: Path | None = None) -> float:
    """The median GB200 / H100 step of the paired small-GPT cases: ``gb200-nvl72``'s
    ``node.host_time_scale`` (and ``gb300-nvl72``'s, by its base)."""
    return statistics.median(paired_step_ratios(path, slow=GRACE).values())


def gh200_host_time_scale(path: Path | None = None) -> float:
    """GB200's scale times TransformerEngine issue #2053's GH200 / GB200 ``torch.nn.Linear``
    forward: ``gh200-alps``'s ``node.host_time_scale``."""
    return gb200_host_time_scale(path) * LINEAR_FWD_CPU_US["gh200"] / LINEAR_FWD_CPU_US["gb200"]

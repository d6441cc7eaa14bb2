"""The fast encoders of the outputs write what the plain definitions write: an op's JSON dict is
``dataclasses.asdict`` of it, a trace slice holds the fields of ``Trace.records``, a link's
counter track is the running sum of its ops' rates taken in time order."""

from __future__ import annotations

import random
from dataclasses import asdict
from pathlib import Path

import pytest

from simulator.schedule.ir import CommOp, ComputeOp, P2POp, Tag, Transfer, op_to_dict

ROOT = Path(__file__).resolve().parents[2]


def test_op_to_dict_is_asdict():
    ops = [
        ComputeOp("fc1", "gemm", flops=2e9, hbm_bytes=1e6, deps=(0, 1), gemm=(4096, 14336, 4096),
                  attention_shape=None, tag=Tag("fwd", 3, 1, None)),
        ComputeOp("attn", "attention", attention_shape=(4096, 4096, 128, True), tag=Tag("bwd", 0, 2, 1)),
        CommOp("ag", "allgather", ("tp",), 1 << 20, deps=(2,)),
        CommOp("ar", "allreduce", ("dp", "cp"), 8, tag=Tag("opt")),
        P2POp("ring", sends=(Transfer("cp", 1, 4096, "kv0"),), recvs=(Transfer("cp", -1, 4096, "kv0", "userbuffers"),),
              deps=(1,)),
        P2POp("empty"),
    ]
    for op in ops:
        d = op_to_dict(op)
        assert d == asdict(op) and list(d) == list(asdict(op))


def test_trace_slices_hold_the_records_fields():
    from simulator.replay.chrome_trace import chrome_trace_events
    from simulator.simulation import simulate

    sim = simulate(ROOT / "scenarios" / "quickstart.yaml")
    events = chrome_trace_events(sim.trace)
    slices = [e for e in events if e["ph"] == "X" and e["cat"] != "wait"]
    waits = {(e["pid"], e["name"][len("wait "):], e["ts"]) for e in events if e["ph"] == "X" and e["cat"] == "wait"}
    records = [rec for r in sim.trace.ranks for rec in sim.trace.records(r)]
    assert len(slices) == len(records)
    for e, rec in zip(slices, records):
        assert (e["pid"], e["name"], e["cat"]) == (rec.rank, rec.name, rec.kind)
        assert e["ts"] == rec.start * 1e6 and e["dur"] == max(rec.duration, 0.0) * 1e6
        assert e["args"]["bytes"] == rec.bytes and e["args"]["op_index"] == rec.index
        assert e["args"].get("algorithm", "") == rec.algorithm and tuple(e["args"].get("group", ())) == rec.group
        if rec.kind != "compute" and rec.wait > 0:
            assert (rec.rank, rec.name, rec.ready * 1e6) in waits
    assert len(waits) == sum(rec.kind != "compute" and rec.wait > 0 for rec in records)


def test_counter_step_function_is_the_running_sum_of_rates():
    from simulator.replay.trace_links import _step_function

    rng = random.Random(5)
    grid = [k * 0.25 for k in range(40)]  # shared instants: ops that end where others start
    spans = []
    for _ in range(300):
        lo, hi = sorted(rng.sample(grid, 2))
        spans.append((lo, hi, rng.uniform(1e9, 5e10)))
    times, levels = _step_function(spans)
    deltas: dict[float, float] = {}
    for lo, hi, rate in spans:
        deltas[lo] = deltas.get(lo, 0.0) + rate
        deltas[hi] = deltas.get(hi, 0.0) - rate
    level, expected = 0.0, []
    for t in sorted(deltas):
        level += deltas[t]
        expected.append((t, level))
    assert list(zip(times.tolist(), levels.tolist())) == expected
    # between two instants the level is the sum of the rates of the spans covering them
    for t, lvl in zip(times.tolist(), levels.tolist()):
        assert lvl == pytest.approx(sum(r for lo, hi, r in spans if lo <= t < hi), rel=1e-9, abs=1e-3)


def test_trace_json_text_is_the_events():
    """chrome_trace_json writes the slices as text directly: the document parses to exactly
    chrome_trace_events' list (quickstart: TP collectives with groups and algorithms; the
    ring-exchange scenario: sends; both: flow arrows and link counters)."""
    import json

    from simulator.replay.chrome_trace import chrome_trace_events, chrome_trace_json
    from simulator.simulation import simulate

    for name in ("quickstart", "gpt3-175b-tp8-ringexchange"):
        sim = simulate(ROOT / "scenarios" / f"{name}.yaml")
        kw = dict(grid=sim.schedule.grid, topology=sim.topology)
        doc = json.loads(chrome_trace_json(sim.trace, inputs={"scenario": {"name": name}}, **kw))
        assert doc["traceEvents"] == chrome_trace_events(sim.trace, **kw)
        assert doc["otherData"]["inputs"] == {"scenario": {"name": name}} and doc["displayTimeUnit"] == "ms"
        assert {e["ph"] for e in doc["traceEvents"]} >= {"M", "X", "s", "f", "C"}

"""Outputs of every command (issue: outputs): paths checked before any work, ``-`` is stdout,
files written atomically with the umask's mode, every document echoes its inputs, gzip traces."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import stat
from pathlib import Path

import pytest
import yaml

from simulator import __version__
from simulator.cli import main

ROOT = Path(__file__).resolve().parents[2]
QUICK = ROOT / "scenarios" / "quickstart.yaml"


def small_scenario(tmp_path: Path) -> Path:
    doc = yaml.safe_load(QUICK.read_text())
    doc["model"]["layers"] = 2
    doc["training"]["global_batch"] = 2
    path = tmp_path / "small.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.parametrize("option", ["--json", "--trace", "--plot"])
def test_run_refuses_a_missing_output_directory_before_simulating(tmp_path, capsys, monkeypatch, option):
    import simulator.simulation as simulation

    def boom(*a, **k):  # the check must come first: simulating would be wasted work
        raise AssertionError("simulated before checking the output paths")

    monkeypatch.setattr(simulation, "simulate_scenario", boom)
    assert main(["run", str(small_scenario(tmp_path)), option, str(tmp_path / "no" / "such" / "out")]) == 2
    err = capsys.readouterr().err
    assert option in err and "does not exist" in err and "Traceback" not in err


def test_output_path_that_is_a_directory_exits_2(tmp_path, capsys):
    assert main(["run", str(small_scenario(tmp_path)), "--json", str(tmp_path)]) == 2
    assert "--json" in capsys.readouterr().err
    assert main(["collective", "--hardware", "dgx-h100", "--op", "allreduce", "--ranks", "8", "--json", str(tmp_path)]) == 2


@pytest.mark.parametrize("argv", [
    ["collective", "--hardware", "dgx-h100", "--op", "allreduce", "--ranks", "8", "-b", "1M", "-e", "4M", "--json", "-"],
    ["schedule", "{scn}", "-o", "-"],
    ["run", "{scn}", "--json", "-"],
])
def test_dash_means_stdout(tmp_path, capsys, monkeypatch, argv):
    monkeypatch.chdir(tmp_path)
    scn = str(small_scenario(tmp_path))
    assert main([a.replace("{scn}", scn) for a in argv]) == 0
    doc = json.loads(capsys.readouterr().out)  # stdout is exactly one JSON document
    assert doc["inputs"]["clustersim"] == __version__
    assert not (tmp_path / "-").exists()


def test_collective_log_to_stdout_is_nccl_tests_text(capsys):
    from simulator.calibration.nccl_log import parse_nccl_text

    assert main(["collective", "--hardware", "dgx-h100", "--op", "allgather", "--ranks", "8", "-b", "1M", "-e", "4M",
                 "--log", "-"]) == 0
    sweeps = parse_nccl_text(capsys.readouterr().out, "stdout")
    assert [r.size_bytes for r in sweeps[0].out_of_place()] == [1 << 20, 2 << 20, 4 << 20]


def test_two_outputs_to_stdout_are_refused(tmp_path, capsys):
    assert main(["run", str(small_scenario(tmp_path)), "--json", "-", "--trace", "-"]) == 2
    assert "stdout" in capsys.readouterr().err


def test_calibrate_output_follows_the_umask(tmp_path):
    log = tmp_path / "ar.log"
    assert main(["collective", "--hardware", "dgx-h100", "--op", "allreduce", "--ranks", "8", "-b", "64K", "-e", "256M",
                 "--log", str(log)]) == 0
    old = os.umask(0o022)
    try:
        assert main(["calibrate", str(log), "--hardware", "dgx-h100", "-o", str(tmp_path / "o.yaml")]) == 0
        assert stat.S_IMODE((tmp_path / "o.yaml").stat().st_mode) == 0o644
        os.umask(0o027)
        assert main(["calibrate", str(log), "--hardware", "dgx-h100", "-o", str(tmp_path / "p.yaml")]) == 0
        assert stat.S_IMODE((tmp_path / "p.yaml").stat().st_mode) == 0o640
        assert stat.S_IMODE(log.stat().st_mode) == 0o644 & ~0o022
    finally:
        os.umask(old)


def test_a_failing_trace_leaves_the_previous_outputs_untouched(tmp_path, monkeypatch):
    """All outputs of one command are staged and renamed together: when writing the trace fails,
    the JSON written by the previous run is still there, whole, and no temporary file is left."""
    import simulator.replay.chrome_trace as chrome_trace

    scn = small_scenario(tmp_path)
    out, trace = tmp_path / "r.json", tmp_path / "t.json"
    out.write_text("previous\n")
    trace.write_text("previous trace\n")

    def fail(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(chrome_trace, "chrome_trace_json", fail)
    assert main(["run", str(scn), "--json", str(out), "--trace", str(trace)]) == 1
    assert out.read_text() == "previous\n" and trace.read_text() == "previous trace\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json", "small.yaml", "t.json"]


def test_output_set_is_all_or_nothing(tmp_path):
    from simulator.files import OutputSet

    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("old a")
    with pytest.raises(RuntimeError):
        with OutputSet() as out:
            out.add(a, "new a")
            out.add(b, "new b")
            raise RuntimeError("the third output failed")
    assert a.read_text() == "old a" and not b.exists() and len(list(tmp_path.iterdir())) == 1
    with OutputSet() as out:
        out.add(a, "new a")
        out.add(b, "new b")
    assert (a.read_text(), b.read_text()) == ("new a", "new b")


def test_a_fifo_or_device_output_is_written_in_place_not_replaced(tmp_path, capsys):
    """``--json /dev/null`` renamed a temporary file over the device: as root (a container) it
    replaced /dev/null with a regular file. A device or FIFO is written in place and stays one."""
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    assert main(["schedule", str(small_scenario(tmp_path)), "-o", str(fifo)]) == 0
    reader.join(timeout=60)
    assert stat.S_ISFIFO(fifo.stat().st_mode) and json.loads(got[0])["inputs"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe", "small.yaml"]  # no temporary file left
    from simulator.files import is_special_file

    assert is_special_file(Path(os.devnull)) and not is_special_file(fifo.parent / "small.yaml")
    assert not is_special_file(tmp_path) and not is_special_file(tmp_path / "missing")


def test_run_json_and_table_echo_their_inputs(tmp_path, capsys):
    scn = small_scenario(tmp_path)
    overlay = tmp_path / "slow.yaml"
    overlay.write_text(yaml.safe_dump({"base": "dgx-h100", "gpu": {"kernel_gap_us": 5.0}}))
    out = tmp_path / "r.json"
    assert main(["run", str(scn), "--hardware", str(overlay), "--json", str(out)]) == 0
    table = capsys.readouterr().out
    doc = json.loads(out.read_text())
    inputs = doc["inputs"]
    assert inputs["scenario"] == {"name": "quickstart", "path": str(scn),
                                  "sha256": hashlib.sha256(scn.read_bytes()).hexdigest()}
    assert inputs["hardware"]["profile"] == "dgx-h100"
    assert Path(inputs["hardware"]["path"]).resolve() == overlay.resolve()
    assert inputs["hardware"]["sha256"] == hashlib.sha256(overlay.read_bytes()).hexdigest()
    assert inputs["plan"]["tp"] == 8 and inputs["plan"]["dp"] == 1 and inputs["plan"]["micro_batch"] == 1
    assert inputs["clustersim"] == __version__
    assert "wall_s" not in doc["sim"] and doc["meta"]["wall_s"] > 0
    assert f"scenario {scn} (sha256 {inputs['scenario']['sha256'][:12]})" in table
    assert f"clustersim {__version__}" in table and "plan tp=8" in table


def test_gz_trace_is_gzip_and_carries_the_inputs(tmp_path):
    scn = small_scenario(tmp_path)
    plain, packed = tmp_path / "t.json", tmp_path / "t.json.gz"
    assert main(["run", str(scn), "--trace", str(plain)]) == 0
    assert main(["run", str(scn), "--trace", str(packed)]) == 0
    assert packed.read_bytes()[:2] == b"\x1f\x8b"
    a, b = json.loads(plain.read_text()), json.loads(gzip.decompress(packed.read_bytes()))
    assert a == b and a["otherData"]["inputs"]["scenario"]["path"] == str(scn)
    assert len(packed.read_bytes()) < len(plain.read_bytes()) / 4


def test_trace_flows_join_collective_members_and_send_ends(tmp_path):
    """Each collective instance chains its simulated members with flow arrows (k members: k-1
    pairs, start and finish at the rendezvous); each pipeline send is joined to its receive on
    the peer stage."""
    doc = yaml.safe_load(QUICK.read_text())
    doc["model"]["layers"] = 2
    doc["training"]["global_batch"] = 4
    doc["parallel"].update({"tp": 4, "pp": 2})
    scn = tmp_path / "pp.yaml"
    scn.write_text(yaml.safe_dump(doc))
    trace = tmp_path / "t.json"
    assert main(["run", str(scn), "--trace", str(trace)]) == 0
    events = json.loads(trace.read_text())["traceEvents"]
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    assert starts and set(starts) == set(ends)
    slices = [e for e in events if e["ph"] == "X" and e.get("cat") != "wait"]
    tp_ar = [e for e in slices if e["cat"] in ("allgather", "reducescatter") and len(e["args"].get("group", [])) == 4]
    instances = {(tuple(e["args"]["group"]), e["name"], e["ts"]) for e in tp_ar}
    coll_flows = [i for i, s in starts.items() if s["cat"] in ("allgather flow", "reducescatter flow")]
    assert len(coll_flows) == 3 * len(instances)
    for i in coll_flows:
        assert starts[i]["ts"] == ends[i]["ts"] and starts[i]["pid"] != ends[i]["pid"]
    sends = [i for i, s in starts.items() if s["cat"] == "sendrecv flow"]
    assert sends
    for i in sends:  # pipeline stages: ranks 0-3 and 4-7, a send goes to the same TP position
        assert abs(starts[i]["pid"] - ends[i]["pid"]) == 4


def test_link_counters_carry_every_byte_the_plans_put_on_the_link(tmp_path):
    """Conservation: integrating a link's utilisation x capacity over the step gives the bytes
    the step's collectives put on it (their plans, summed independently here)."""
    from simulator import simulate
    from simulator.costs.collectives import plan_collective
    from simulator.replay.chrome_trace import chrome_trace_events

    sim = simulate(small_scenario(tmp_path))
    events = chrome_trace_events(sim.trace, grid=sim.schedule.grid, topology=sim.topology)
    counters: dict[str, list] = {}
    for e in events:
        if e["ph"] == "C":
            counters.setdefault(e["name"], []).append((e["ts"] * 1e-6, e["args"]["utilisation"]))
    assert counters and all(0 <= u <= 1 for series in counters.values() for _, u in series)
    name = max(counters, key=lambda n: max(u for _, u in counters[n]))
    link = int(name.split()[1])
    series = counters[name]
    carried = sum((t1 - t0) * u for (t0, u), (t1, _) in zip(series, series[1:])) * sim.topology.capacity_Bps[link]
    want, seen = 0.0, set()
    for r, t in sim.trace.timelines.items():
        for i, op in enumerate(t.program):
            group = t.groups.get(i, ())
            if getattr(op, "op", None) and len(group) > 1 and (group, op.name, float(t.start[i])) not in seen:
                seen.add((group, op.name, float(t.start[i])))
                algo, proto = t.algorithm[i]
                plan = plan_collective(op.op, list(group), op.size_bytes, sim.topology, algo=algo, proto=proto)
                want += sum(f.nbytes for ph in plan.phases for f in ph if link in f.links)
    assert carried == pytest.approx(want, rel=1e-4)


@pytest.mark.parametrize("argv", [["measure", "--op", "allreduce", "-o", "{missing}/ar.txt"]])
def test_measure_checks_its_output_before_torch(tmp_path, capsys, argv):
    assert main([a.replace("{missing}", str(tmp_path / "no")) for a in argv]) == 2
    err = capsys.readouterr().err
    assert "-o: cannot write" in err and "does not exist" in err


def test_measure_kernels_checks_its_output_before_torch(tmp_path, capsys):
    from simulator.measure_kernels import main as kernels_main

    assert kernels_main(["-o", str(tmp_path / "no" / "t.csv")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_check_echoes_its_inputs(tmp_path, capsys):
    scn = small_scenario(tmp_path)
    assert main(["check", str(scn)]) == 0
    out = capsys.readouterr().out
    assert f"inputs: scenario {scn} (sha256 " in out and f"clustersim {__version__}" in out


def test_sweep_csv_carries_its_inputs_line(tmp_path, capsys):
    """Every number beside its inputs: the CSV opens with the table's inputs line (scenario and
    its sha256, hardware, GPUs, NCCL tables, version) as a ``#`` comment, as data/nccl/ CSVs do."""
    import csv

    scn = small_scenario(tmp_path)
    out = tmp_path / "plans.csv"
    assert main(["sweep", str(scn), "--fix", "tp=8", "--fix", "micro_batch=1", "--quiet", "--csv", str(out)]) == 0
    table_line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("inputs: "))
    first, *rest = out.read_text().splitlines()
    sha = hashlib.sha256(scn.read_bytes()).hexdigest()[:12]
    assert first == "# " + table_line and f"(sha256 {sha})" in first and f"clustersim {__version__}" in first
    rows = list(csv.DictReader(rest))
    assert rows and {r["tp"] for r in rows} == {"8"}

"""Configuration mistakes are never silent, and input cannot hurt: each case below was accepted
silently, ended in exit 1 ("internal error"), or used gigabytes before saying anything. Every
one is now exit 2 with a message naming the file, the field and what was expected."""

from __future__ import annotations

import os
import resource
from pathlib import Path

import pytest
import yaml

from simulator.cli import main
from simulator.config.hardware import load_profile

QUICKSTART = {"name": "q", "hardware": "dgx-h100", "nodes": 1,
              "model": {"preset": "llama3-8b", "seq_len": 4096},
              "training": {"micro_batch": 1, "global_batch": 4},
              "parallel": {"tp": 8, "sequence_parallel": True}}


def scenario(tmp_path: Path, text: str | None = None, **patch) -> Path:
    data = yaml.safe_load(yaml.safe_dump(QUICKSTART))
    for key, value in patch.items():
        node = data
        parts = key.split("__")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = value
    path = tmp_path / "scn.yaml"
    path.write_text(text if text is not None else yaml.safe_dump(data))
    return path


def exit2(capsys, argv: list[str], *expected: str) -> str:
    """Run the CLI; it must exit 2 with every expected fragment and no traceback in stderr."""
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2, err
    assert "Traceback" not in err and "internal error" not in err
    for text in expected:
        assert text in err, err
    return err


# --- strict numbers and booleans ---------------------------------------------------------------

@pytest.mark.parametrize("key,value,field", [
    ("nodes", True, "nodes"),  # was 1 node
    ("parallel__sequence_parallel", 1, "parallel.sequence_parallel"),  # was true
    ("parallel__tp", 8.0, "parallel.tp"),  # was 8
    ("training__global_batch", "4", "training.global_batch"),  # was 4
])
def test_numbers_and_booleans_are_strict(tmp_path, capsys, key, value, field):
    exit2(capsys, ["check", str(scenario(tmp_path, **{key: value}))], f"{field}:")


def test_yaml_exponent_floats_are_numbers(tmp_path):
    """PyYAML reads 1e12 (no dot) as a string; a profile means the number."""
    path = tmp_path / "p.yaml"
    path.write_text("base: dgx-h100\ngpu:\n  gemm_efficiency: [{flops: 1e9, efficiency: 0.5}, {flops: 1e12, efficiency: 0.8}]\n")
    assert load_profile(str(path)).gpu.gemm_efficiency[1].flops == 1e12


# --- the nccl: block ---------------------------------------------------------------------------

@pytest.mark.parametrize("key,value,expected", [
    ("hw_latency_uss.net.tree.ll", 1.0, "did you mean hw_latency_us.net.tree.ll"),  # was ignored
    ("hw_latency_us.net.tre.ll", 1.0, "did you mean hw_latency_us.net.tree.ll"),
    ("net_latency_us", -3.0, "between 0 and"),
    ("p2p_efficiency", 1.5, "(0, 1]"),
    ("n_channels", 1e300, "from 1 to 64"),  # made `run` spin forever
    ("n_channels", 2.5, "whole number"),
])
def test_nccl_overrides_are_typed(tmp_path, capsys, key, value, expected):
    overlay = tmp_path / "o.yaml"
    overlay.write_text(yaml.safe_dump({"base": "dgx-h100", "nccl": {key: value}}))
    scn = scenario(tmp_path)
    # check refuses what collective and run refuse, naming the overlay and the key
    for argv in (["check", str(scn), "--hardware", str(overlay)], ["run", str(scn), "--hardware", str(overlay)],
                 ["collective", "--hardware", str(overlay), "--op", "allreduce", "--ranks", "8"]):
        exit2(capsys, argv, str(overlay), f"nccl.{key}", expected)


@pytest.mark.parametrize("text", [".nan", "-.inf"])
def test_nccl_overrides_are_finite(tmp_path, capsys, text):
    overlay = tmp_path / "o.yaml"
    overlay.write_text(f"base: dgx-h100\nnccl:\n  hw_latency_us.net.ring.simple: {text}\n")
    exit2(capsys, ["collective", "--hardware", str(overlay), "--op", "allreduce", "--ranks", "16"],
          "nccl.hw_latency_us.net.ring.simple", "finite")


def test_infinite_bandwidth_is_refused(tmp_path, capsys):
    overlay = tmp_path / "o.yaml"
    overlay.write_text("base: dgx-h100\nnode:\n  nics: {Gbps: .inf}\n")
    exit2(capsys, ["check", str(scenario(tmp_path)), "--hardware", str(overlay)], "node.nics.Gbps", "finite")


# --- blame the right place ---------------------------------------------------------------------

def test_tp_that_does_not_divide_the_gpus_names_parallel_tp(tmp_path, capsys):
    exit2(capsys, ["check", str(scenario(tmp_path, parallel__tp=3, parallel__sequence_parallel=False))],
          "parallel.tp:", "tp=3 does not divide 8 GPUs")


def test_bad_base_names_the_overlay_file_and_line(tmp_path, capsys):
    overlay = tmp_path / "o.yaml"
    overlay.write_text("# my cluster\nname: mine\nbase: dgx-h1000\n")
    err = exit2(capsys, ["collective", "--hardware", str(overlay), "--op", "allreduce", "--ranks", "8"],
                f"{overlay}:3: base:", "unknown hardware profile 'dgx-h1000'")
    assert "--hardware" not in err


def test_directory_as_scenario_says_so(tmp_path, capsys):
    exit2(capsys, ["check", str(tmp_path)], str(tmp_path), "is a directory")


# --- sizes that cannot be meant ----------------------------------------------------------------

def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.mark.parametrize("patch,field,expected", [
    ({"nodes": 10 ** 6}, "nodes", "refuses more than 131,072"),
    ({"model__layers": 10 ** 6}, "model.layers", "refuses more than 1,024"),
    ({"training__global_batch": 10 ** 12}, "training.global_batch", "layer passes"),
])
def test_sizes_that_cannot_be_meant_are_refused_up_front(tmp_path, capsys, patch, field, expected):
    before = _peak_rss_mb()
    exit2(capsys, ["check", str(scenario(tmp_path, **patch))], f"{field}:", expected)
    assert _peak_rss_mb() - before < 200


@pytest.mark.parametrize("ranks", [str(10 ** 6), str(2 ** 63), str(2 ** 64 + 8)])
def test_collective_ranks_are_bounded(capsys, ranks):
    exit2(capsys, ["collective", "--hardware", "dgx-h100", "--op", "allreduce", "--ranks", ranks],
          "--ranks:", "refuses more than 131,072")


def test_profile_counts_are_bounded(tmp_path, capsys):
    overlay = tmp_path / "o.yaml"
    overlay.write_text("base: dgx-h100\nnode:\n  gpus: 1000000\n")
    exit2(capsys, ["collective", "--hardware", str(overlay), "--op", "allreduce", "--ranks", "8"], "node.gpus")


# --- input that cannot hurt --------------------------------------------------------------------

def _alias_bomb(levels: int) -> str:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        prev = f"*a{i - 1}"
        lines.append(f"a{i}: &a{i} [{', '.join([prev] * 9)}]")
    return "\n".join(lines)


@pytest.mark.parametrize("levels", [5, 9])
def test_alias_bomb_is_refused_and_the_message_is_short(tmp_path, capsys, levels):
    text = (f"name: bomb\nhardware: dgx-h100\nnodes: 1\nanchors:\n"
            + "\n".join("  " + line for line in _alias_bomb(levels).splitlines())
            + f"\nmodel:\n  preset: *a{levels - 1}\n  seq_len: 4096\ntraining: {{micro_batch: 1, global_batch: 8}}\n")
    err = exit2(capsys, ["check", str(scenario(tmp_path, text=text))], "aliases expand to more than")
    assert len(err) < 2000


def test_long_values_are_quoted_short(tmp_path, capsys):
    err = exit2(capsys, ["check", str(scenario(tmp_path, model__preset="x" * 100_000))], "model.preset")
    assert len(err) < 2000


@pytest.mark.parametrize("content,expected", [
    (b"name: caf\xe9\nnodes: 1\n", "not UTF-8 text: byte 9 (line 1)"),
    (b"a: " + b"[" * 1000 + b"]" * 1000 + b"\n", "nesting deeper than 64"),
    (b"nodes: " + b"7" * 5000 + b"\n", "an integer of 5000 digits"),
    (b"&a [*a]\n", "an alias that contains itself"),
])
def test_malformed_files_are_exit_2(tmp_path, capsys, content, expected):
    path = tmp_path / "bad.yaml"
    path.write_bytes(content)
    exit2(capsys, ["check", str(path)], str(path), expected)
    exit2(capsys, ["collective", "--hardware", str(path), "--op", "allreduce", "--ranks", "8"], str(path))


def test_long_hardware_name_is_exit_2(tmp_path, capsys):
    exit2(capsys, ["check", str(scenario(tmp_path, hardware="h" * 300))], "hardware")
    exit2(capsys, ["collective", "--hardware", "h" * 300, "--op", "allreduce", "--ranks", "8"], "hardware")


def test_base_cycle_is_caught_from_any_directory(tmp_path, capsys, monkeypatch):
    (tmp_path / "ovl").mkdir()
    (tmp_path / "ovl" / "a.yaml").write_text("base: b.yaml\n")
    (tmp_path / "ovl" / "b.yaml").write_text("base: ./a.yaml\n")
    for cwd in (tmp_path / "ovl", tmp_path, Path("/")):
        monkeypatch.chdir(cwd)
        rel = os.path.relpath(tmp_path / "ovl" / "a.yaml", cwd)
        exit2(capsys, ["collective", "--hardware", rel if "/" in rel else f"./{rel}", "--op", "allreduce",
                       "--ranks", "8"], "overlay cycle")


def test_a_bare_name_is_always_the_bundled_profile(tmp_path, capsys, monkeypatch):
    """A file named like a bundled profile in the working directory does not replace it; a
    path (a / or .yaml) is a file."""
    monkeypatch.chdir(tmp_path)
    Path("dgx-h100").write_text("this is not a profile\n")
    assert load_profile("dgx-h100").gpu.name.startswith("H100")
    Path("mine.yaml").write_text("base: dgx-h100\nname: mine\n")
    assert load_profile("mine.yaml").name == "mine"
    exit2(capsys, ["collective", "--hardware", "./dgx-h100", "--op", "allreduce", "--ranks", "8"],
          "dgx-h100", "expected a mapping")


def test_no_infinity_in_json(tmp_path, capsys):
    """Finite but absurd numbers (a 1e-308 GB/s HBM) overflow the step time: refused, where
    `"step_time_s": Infinity` (not JSON) was written."""
    overlay = tmp_path / "slow.yaml"
    overlay.write_text("base: dgx-h100\ngpu:\n  hbm_GBps: 1.0e-308\n  bf16_TFLOPS: 1.0e-300\n")
    scn = scenario(tmp_path, model__layers=2)
    out = tmp_path / "r.json"
    err = exit2(capsys, ["run", str(scn), "--hardware", str(overlay), "--json", str(out)], "takes forever")
    assert not out.exists() and "Infinity" not in err
    exit2(capsys, ["run", str(scn), "--hardware", str(overlay), "--json", "-"], "takes forever")
    overlay.write_text("base: dgx-h100\nnode:\n  scale_up: {link_GBps: 1.0e-308}\n")
    exit2(capsys, ["collective", "--hardware", str(overlay), "--op", "allreduce", "--ranks", "8", "--json",
                   str(out)], "overflows")
    assert not out.exists()


@pytest.mark.parametrize("option", ["--json", "--trace"])
def test_output_path_that_is_a_directory_is_exit_2(tmp_path, capsys, option):
    out = tmp_path / "out"
    out.mkdir()
    exit2(capsys, ["run", str(scenario(tmp_path, model__layers=2)), option, str(out)], str(out))


def test_calibrate_output_that_is_a_directory_is_exit_2(tmp_path, capsys):
    out = tmp_path / "o.yaml"
    out.mkdir()
    log = Path(__file__).resolve().parents[1] / "fixtures" / "nccl_logs" / "h100x8_allreduce_1node.txt"
    exit2(capsys, ["calibrate", str(log), "--hardware", "dgx-h100", "-o", str(out)], "o.yaml")


def test_every_key_the_cost_model_reads_is_a_known_nccl_key():
    """The typed nccl: block and the keys costs/nccl_constants applies are the same set."""
    import itertools

    from simulator.config.nccl_overrides import ALGOS, KEYS, LINK_CLASSES, PROTOS
    from simulator.costs.nccl_constants import OVERRIDE_KEYS

    choices = {"<algo>": ALGOS, "<proto>": PROTOS, "<ll|ll128|simple>": PROTOS, "<nvlink|pci|net>": LINK_CLASSES,
               "<ring|tree>": ("ring", "tree")}
    expanded = set()
    for template in OVERRIDE_KEYS:
        parts = [choices.get(p, (p,)) for p in template.split(".")]
        expanded |= {".".join(c) for c in itertools.product(*parts)}
    assert expanded == set(KEYS)


# --- found by a systematic audit of every input (mutated bundled scenarios, profiles, flags) ----

def test_a_key_written_twice_is_refused_with_both_lines(tmp_path, capsys):
    """PyYAML keeps the last of two equal keys silently: ``nodes: 2`` under ``nodes: 1`` ran two
    nodes. Both lines are named; a merge key may still be overridden."""
    path = tmp_path / "dup.yaml"
    path.write_text(yaml.safe_dump(QUICKSTART, sort_keys=False) + "nodes: 2\n")
    exit2(capsys, ["check", str(path)], str(path), "the key 'nodes' appears twice in one mapping (first at line 3)")
    merged = tmp_path / "merge.yaml"
    merged.write_text("base: &b {tp: 4, sequence_parallel: true}\n" + yaml.safe_dump(
        {k: v for k, v in QUICKSTART.items() if k != "parallel"}) + "parallel:\n  <<: *b\n  tp: 8\n")
    assert main(["check", str(merged)]) == 2  # `base:` is not a scenario key...
    assert "base: unknown key" in capsys.readouterr().err  # ...but the merged-then-overridden tp parsed


@pytest.mark.parametrize("hardware, expected", [
    ("missing.yaml", "'{d}/missing.yaml': no such file; expected a profile YAML file"),
    ("sub/", "'{d}/sub': a directory; expected a profile YAML file"),
])
def test_a_hardware_path_that_is_no_file_blames_the_scenario_field(tmp_path, capsys, hardware, expected):
    """The profile path is taken from the scenario's folder; the message names the scenario and
    its ``hardware`` field (it named only the path, as if that file were the one at fault)."""
    (tmp_path / "sub").mkdir()
    path = scenario(tmp_path, hardware=hardware)
    exit2(capsys, ["check", str(path)], f"{path}: hardware: " + expected.format(d=tmp_path))
    exit2(capsys, ["run", str(scenario(tmp_path)), "--hardware", str(tmp_path / "sub")],
          "command line: --hardware: ", "a directory")


def test_a_bundled_scenario_name_instead_of_a_path_says_how_to_get_it(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exit2(capsys, ["run", "quickstart"], "quickstart: no such file; 'quickstart' is a bundled scenario: "
                                         "clustersim scenarios copy quickstart writes it to quickstart.yaml here")
    err = exit2(capsys, ["check", "nope.yaml"], "nope.yaml: no such file")
    assert "bundled" not in err

"""Scenario validation: every rule ends in an InputError naming the file, field path and arithmetic,
and `clustersim check` turns it into exit 2 without a traceback."""

import pytest
import yaml

from simulator.cli import main
from simulator.config.scenario import load_scenario, split_layers
from simulator.errors import InputError

PROFILE = """name: test-gpu
gpu: {name: T, arch: ampere, sms: 108, bf16_TFLOPS: 312, fp16_TFLOPS: 312, fp32_TFLOPS: 19.5,
      hbm_GiB: 80, hbm_GBps: 2039, gemm_efficiency: [{flops: 1.0e12, efficiency: 0.7}]}
node: {gpus: 8, scale_up: {kind: nvswitch, link_GBps: 300, latency_us: 1.0},
       pcie: {gen: 4, GBps: 32}, nics: {count: 8, Gbps: 200, latency_us: 2.0}}
"""

BASE = {"name": "x", "hardware": "prof.yaml", "nodes": 12,
        "model": {"preset": "llama3-70b", "seq_len": 8192},
        "training": {"micro_batch": 1, "global_batch": 96},
        "parallel": {}}


def write(tmp_path, patch=None, text=None):
    (tmp_path / "prof.yaml").write_text(PROFILE)
    path = tmp_path / "scn.yaml"
    if text is not None:
        path.write_text(text)
        return path
    data = yaml.safe_load(yaml.safe_dump(BASE))
    for key, value in (patch or {}).items():
        node = data
        parts = key.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = value
    path.write_text(yaml.safe_dump(data))
    return path


CASES = [
    ({"parallel.tp": 8, "parallel.cp": 4, "parallel.pp": 4}, "parallel", "tp=8 x cp=4 x pp=4 = 128 does not divide 96 GPUs"),
    ({"model": {"preset": "llama3-8b", "kv_heads": 4, "seq_len": 8192}, "parallel.tp": 8}, "parallel.tp",
     "tp=8 does not divide kv_heads=4"),
    ({"model.seq_len": 8190, "parallel.cp": 4}, "model.seq_len", "seq_len=8190 is not divisible by 2 x cp = 8 (load-balanced CP)"),
    ({"training.global_batch": 100, "parallel.tp": 2, "parallel.pp": 3}, "training.global_batch",
     "global_batch=100 is not divisible by micro_batch=1 x dp=16 = 16"),
    ({"parallel.ulysses": 3}, "parallel.ulysses", "tp=1 x ulysses=3 = 3 does not divide heads=64"),
    ({"parallel.dp": 8}, "parallel.dp", "dp=8 but 96 GPUs / (tp=1) = 96"),
    ({"parallel.pp": 4, "parallel.pp_schedule": "interleaved", "parallel.vp": 3}, "parallel.vp",
     "stage 0 holds 20 layers, not divisible by vp=3"),
    ({"parallel.pp": 3, "parallel.pp_layers": [20, 20, 20]}, "parallel.pp_layers", "= 60 must equal layers=80"),
    ({"parallel.pp": 2, "parallel.pp_schedule": "interleaved", "parallel.vp": 2, "parallel.pp_layers": [1, 0, 39, 40]},
     "parallel.pp_layers", "at least 1 per stage (0 only in the first and the last virtual stage)"),
    ({"parallel.pp": 2, "parallel.pp_layers": [0, 80]}, "parallel.pp_layers", "at least 1 per stage"),
    ({"parallel.zero": 3, "parallel.pp": 2}, "parallel.zero", "zero=3 with pp=2"),
    ({"training.dtype": "fp8"}, "training.dtype", "fp8 needs fp8 tensor cores"),
    ({"training.attention": "flash1"}, "training.attention",
     "T has no flash1 attention kernel in its profile; expected one of auto, unfused, flash2, flash3"),
    ({"parallel.tp": 8, "parallel.sequence_parallel": True, "model.seq_len": 8196, "parallel.cp": 1},
     "model.seq_len", "is not divisible by tp=8 (sequence parallel)"),
    ({"parallel.cp": 4, "parallel.cp_comm": "a2a+p2p", "parallel.cp_a2a": 3}, "parallel.cp_a2a",
     "cp_a2a=3 does not divide cp=4"),
    ({"parallel.cp": 4, "parallel.cp_a2a": 2}, "parallel.cp_a2a", "cp_a2a=2 applies only to cp_comm: a2a+p2p"),
    ({"parallel.cp": 4, "parallel.cp_comm": "ring", "parallel.cp_qkv_format": "bshd"}, "parallel.cp_qkv_format",
     "cp_qkv_format=bshd applies only to cp_comm: p2p"),
    ({"model": {"preset": "llama3-70b", "seq_len": 8192, "ffn_hidden": 28676}, "parallel.tp": 8,
      "parallel.sequence_parallel": True}, "parallel.tp", "tp=8 does not divide ffn_hidden=28676"),
]


@pytest.mark.parametrize("patch,field,arith", CASES)
def test_cross_field_rules(tmp_path, patch, field, arith, capsys):
    path = write(tmp_path, patch)
    with pytest.raises(InputError) as exc:
        load_scenario(path)
    assert exc.value.field == field
    assert exc.value.source == str(path)
    assert arith in str(exc.value)
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert arith in err and str(path) in err and "Traceback" not in err


@pytest.mark.parametrize("patch,needle", [
    ({"parallel.vp": 2}, "parallel.vp: vp=2 needs pp > 1"),
    ({"parallel.vp": 2, "parallel.pp": 2, "parallel.pp_schedule": "1f1b"}, "vp=2 needs pp_schedule: interleaved"),
    ({"parallel.tpp": 2}, "parallel.tpp: unknown key; did you mean tp or pp"),
    ({"parallel.fsdp": True}, "parallel.fsdp: unknown key; did you mean fsdp_grad_sync or fsdp_reshard_after_forward?"),
    ({"training.recompte": "full"}, "training.recompte: unknown key; did you mean recompute"),
    ({"nodez": 2}, "nodez: unknown key; did you mean nodes?"),
    ({"extra": 1}, "extra: unknown key; expected one of gpus_per_node, hardware, model, name, nodes, nodes_per_nvlink_domain, parallel, training"),
    ({"parallel.order": ["tp", "dp"], "parallel.pp": 2}, "omits axis pp with pp=2"),
    ({"parallel.tp_overlap": "bulk"}, "needs tp > 1 and sequence_parallel"),
    ({"parallel.tpp": 2}, "parallel.tpp: unknown key"),
    ({"parallel.tp": "eight"}, "parallel.tp"),
    ({"parallel.zero": 4}, "parallel.zero: Input should be 0, 1, 2 or 3 (got 4)"),
    ({"parallel.zero": "shard_grad_op"}, "parallel.zero: Input should be 0, 1, 2 or 3 (got 'shard_grad_op')"),
    ({"model": {"preset": "gpt5"}}, "unknown model preset 'gpt5'"),
    ({"model": {"hidden": 1024, "heads": 16, "vocab": 10, "seq_len": 64}}, "model.layers: required field is missing"),
    ({"hardware": "nope-profile"}, "unknown hardware profile 'nope-profile'"),
])
def test_schema_errors_name_the_field(tmp_path, patch, needle, capsys):
    path = write(tmp_path, patch)
    with pytest.raises(InputError) as exc:
        load_scenario(path)
    assert needle in str(exc.value) and str(path) in str(exc.value)
    assert main(["check", str(path)]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_malformed_yaml(tmp_path, capsys):
    path = write(tmp_path, text="name: x\nmodel: [1, 2\n")
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert "malformed YAML" in err and str(path) in err


def test_valid_scenario_resolves_profile_and_derives_dp(tmp_path, capsys):
    path = write(tmp_path, {"parallel.tp": 8, "parallel.pp": 2, "parallel.sequence_parallel": True})
    scn = load_scenario(path)
    assert scn.profile.name == "test-gpu" and scn.n_gpus == 96 and scn.dp == 6
    assert scn.n_micro == 96 // 6 and scn.stage_layers == (40, 40)
    assert scn.model.kv_heads == 8 and scn.model.ffn_hidden == 28672  # from the preset
    assert main(["check", str(path)]) == 0
    assert "OK" in capsys.readouterr().out


def test_vp_without_a_schedule_is_interleaved(tmp_path):
    """Virtual stages exist only in the interleaved schedule, so vp > 1 with pp_schedule unset
    runs it (Megatron's --num-layers-per-virtual-pipeline-stage selects it the same way)."""
    p = load_scenario(write(tmp_path, {"parallel.pp": 2, "parallel.vp": 2})).parallel
    assert (p.pp, p.vp, p.pp_schedule) == (2, 2, "interleaved")
    assert load_scenario(write(tmp_path, {"parallel.pp": 2})).parallel.pp_schedule == "1f1b"


def test_explicit_fields_override_preset(tmp_path):
    path = write(tmp_path, {"model": {"preset": "llama3-70b", "layers": 40, "seq_len": 4096}})
    m = load_scenario(path).model
    assert (m.layers, m.hidden, m.seq_len) == (40, 8192, 4096)


def test_uneven_stages_are_split_not_rejected(tmp_path):
    assert split_layers(126, 16) == (7,) + (8,) * 14 + (7,)
    assert sum(split_layers(126, 16)) == 126
    path = write(tmp_path, {"model": {"preset": "llama3-405b", "seq_len": 8192}, "nodes": 16,
                            "training.global_batch": 128, "parallel.tp": 8, "parallel.pp": 16})
    assert load_scenario(path).stage_layers == split_layers(126, 16)


def test_first_and_last_virtual_stages_may_hold_no_layer(tmp_path):
    """Llama 3 405B's pipeline (arXiv:2407.21783 sec. 3.3.2): 126 layers on 16 stages of 8 chunks, one
    layer per chunk but the first chunk (the embedding alone) and the last (output projection and
    loss alone). The stages keep their other chunks' layers: 7, 8 x 14, 7."""
    pl = [0] + [1] * 126 + [0]
    path = write(tmp_path, {"model": {"preset": "llama3-405b", "seq_len": 8192}, "nodes": 16,
                            "training.global_batch": 128, "parallel.tp": 8, "parallel.pp": 16,
                            "parallel.pp_schedule": "interleaved", "parallel.vp": 8, "parallel.pp_layers": pl})
    scn = load_scenario(path)
    assert scn.stage_layers == (7,) + (8,) * 14 + (7,)
    assert scn.virtual_stage_layers == tuple(pl)

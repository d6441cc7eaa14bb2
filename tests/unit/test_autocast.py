"""torch.autocast over fp32 parameters (training.autocast, schedule/autocast.py): the weight casts and
the fp32 residual stream, counted per layer pass from autocast's op lists; the norms' fp32 inputs in
memory; and the input rules."""

from __future__ import annotations

import subprocess
import sys

import pytest

from simulator.config.scenario import build_scenario
from simulator.errors import InputError
from simulator.schedule.build import build_schedule
from simulator.schedule.ir import ComputeOp
from simulator.schedule.memory import layer_activation_bytes

H, SEQ, MB, HEADS, VOCAB, LAYERS = 256, 512, 2, 4, 8192, 2
HB = MB * SEQ * H * 2  # one 2-byte hidden activation
LINEAR = H * 3 * H + H * H + H * 4 * H + 4 * H * H  # QKV, projection, FC1, FC2 weights
BIASES = 3 * H + H + 4 * H + H


def _data(**training) -> dict:
    return {"name": "s", "hardware": "dgx-h100", "nodes": 1, "gpus_per_node": 1,
            "model": {"layers": LAYERS, "hidden": H, "heads": HEADS, "vocab": VOCAB, "mlp": "gelu", "seq_len": SEQ},
            "training": {"micro_batch": MB, "global_batch": MB, "dtype": "bf16", "fused_kernels": False,
                         "dropout": False, "linear_bias": "epilogue", "master_dtype": "fp32", **training},
            "parallel": {"tp": 1}}


def _ops(tmp_path, **training) -> list[ComputeOp]:
    sched = build_schedule(build_scenario(_data(**training), source="s.yaml", base_dir=tmp_path))
    return [op for op in next(iter(sched.programs.values())) if isinstance(op, ComputeOp)]


def test_casts_per_layer_pass_are_the_op_lists_count(tmp_path):
    """Per layer: forward 6 bytes per linear parameter (weights and biases read in fp32, written in
    bf16) and 14 hb (two norm-output casts 3 hb each, the fp32 norms and adds 2 hb more each), 8 + 2
    kernels; backward the weight gradients cast back (6 bytes each) and 28 hb, 8 + 4 kernels."""
    ops = {o.name: o for o in _ops(tmp_path, autocast=True)}
    for layer in range(LAYERS):
        fwd, bwd = ops[f"L{layer}.autocast.fwd"], ops[f"L{layer}.autocast.bwd"]
        assert (fwd.hbm_bytes, fwd.count) == (6 * (LINEAR + BIASES) + 14 * HB, 10)
        assert (bwd.hbm_bytes, bwd.count) == (6 * (LINEAR + BIASES) + 28 * HB, 12)
        assert fwd.kind == bwd.kind == "copy"
    head_f, head_b = ops["lm_head.autocast.fwd"], ops["lm_head.autocast.bwd"]
    assert (head_f.hbm_bytes, head_f.count) == (6 * VOCAB * H + 5 * HB, 2)
    assert (head_b.hbm_bytes, head_b.count) == (6 * VOCAB * H + 8 * HB, 2)


def test_autocast_adds_exactly_its_ops(tmp_path):
    """Everything else of the step is the same program: the casts are added, not mixed in."""
    plain = _ops(tmp_path)
    cast = _ops(tmp_path, autocast=True)
    extra = [o for o in cast if ".autocast." in o.name]
    assert len(cast) - len(plain) == len(extra) == 2 * LAYERS + 2
    assert sum(o.hbm_bytes for o in cast) - sum(o.hbm_bytes for o in plain) == pytest.approx(
        sum(o.hbm_bytes for o in extra))


def test_full_recompute_casts_again(tmp_path):
    """A checkpointed layer's forward re-runs under the saved autocast state: its casts again."""
    names = [o.name for o in _ops(tmp_path, autocast=True, recompute="full")]
    assert all(f"L{i}.autocast.fwd.recompute" in names for i in range(LAYERS))


def test_norm_inputs_are_fp32_in_memory(tmp_path):
    """The two norms of a layer save the fp32 residual stream: 2 x 2 bytes per element more."""
    plain = build_scenario(_data(), source="s.yaml", base_dir=tmp_path)
    cast = build_scenario(_data(autocast=True), source="s.yaml", base_dir=tmp_path)
    assert layer_activation_bytes(cast) - layer_activation_bytes(plain) == 4 * SEQ * MB * H


@pytest.mark.parametrize("bad", [dict(fused_kernels=True), dict(master_dtype="bf16"), dict(dtype="fp8")])
def test_autocast_needs_eager_layers_over_fp32_parameters(tmp_path, bad):
    with pytest.raises(InputError, match="autocast"):
        build_scenario(_data(autocast=True, **bad), source="s.yaml", base_dir=tmp_path)


def test_cli_names_the_file_and_the_field(tmp_path):
    """Exit 2 and a message naming the file and the field, no traceback."""
    import yaml

    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(_data(autocast=True, fused_kernels=True)))
    out = subprocess.run([sys.executable, "-m", "simulator", "run", str(path)], capture_output=True, text=True)
    assert out.returncode == 2
    assert "bad.yaml" in out.stderr and "autocast" in out.stderr and "Traceback" not in out.stderr


def test_casts_cost_the_host_a_launch_not_a_python_op(tmp_path):
    """A cast is issued inside the linear it feeds: it costs the host its dispatch and CUDA launch
    (forward) or node (backward), not a Python-level op's (costs/host.py)."""
    from simulator.costs import host

    ops = {o.name: o for o in _ops(tmp_path, autocast=True)}
    fwd, bwd = ops["L0.autocast.fwd"], ops["L0.autocast.bwd"]
    assert fwd.impl == bwd.impl == "autocast"
    assert host.host_cost_s(fwd) == pytest.approx(
        fwd.count * (host.AUTOCAST_FWD_CPU_US + host.CUDA_LAUNCH_US) * 1e-6)
    assert host.host_cost_s(bwd) == pytest.approx(
        bwd.count * (host.AUTOCAST_BWD_CPU_US + host.CUDA_BWD_NODE_US) * 1e-6)
    assert host.host_cost_s(fwd) < fwd.count * host.FWD_KERNEL_US * 1e-6

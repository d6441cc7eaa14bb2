"""GPT-OSS's clamped GLU (model.glu_clamp, training.glu_clamp_kernel): the eager kernels
Megatron-Core's bias-activation fusion path runs around the fused activation, their bytes in
closed form, what the activation then saves, and the models the clamp is refused on."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
import yaml

from simulator.config.scenario import build_scenario
from simulator.schedule.build import build_program
from simulator.schedule.memory import moe_layer_activation_bytes
from simulator.schedule.moe import MoESpec

E, K, H, F, SEQ = 16, 4, 1024, 768, 2048


def _data(kernel: str = "unfused", recompute: list[str] | None = None, **model: Any) -> dict[str, Any]:
    return {"name": "clamp", "hardware": "dgx-h100", "nodes": 1,
            "model": {"layers": 2, "hidden": H, "heads": 16, "vocab": 32000, "seq_len": SEQ, "mlp": "swiglu",
                      "experts": E, "top_k": K, "moe_ffn_hidden": F, "glu_clamp": 7.0, **model},
            "training": {"micro_batch": 1, "global_batch": 8, "glu_clamp_kernel": kernel,
                         "recompute": "selective" if recompute else "none",
                         **({"recompute_modules": recompute} if recompute else {})},
            "parallel": {"tp": 1, "pp": 1, "ep": 8}}


def _clamp_ops(data: dict[str, Any]) -> dict[str, Any]:
    ops = build_program(build_scenario(data), 0)
    return {op.name: op for op in ops if ".experts.act.clamp." in op.name and op.name.startswith("L0.")}


def test_unfused_clamp_bytes_in_closed_form():
    data = _data()
    spec = MoESpec.from_scenario(build_scenario(data))
    unit = spec.rows * F  # rows x one half of FC1's output, bf16
    ops = _clamp_ops(data)
    fwd, bwd = ops["L0.moe.experts.act.clamp.fwd"], ops["L0.moe.experts.act.clamp.bwd"]
    # two clamps (read + write a half) and the concatenation (read + write both halves)
    assert fwd.hbm_bytes == 8 * 2 * unit and fwd.count == 3
    # gate: compare (2 + 1) and where (1 + 2 + 2); linear: two compares, logical_and_ (1 + 1 + 1),
    # where; the split's concatenation (2 + 2 + 2 + 2)
    assert bwd.hbm_bytes == (3 + 5 + 3 + 3 + 3 + 5 + 8) * unit == (11 * 2 + 8) * unit and bwd.count == 7
    assert "L0.moe.experts.act.clamp.recompute" not in ops


def test_moe_act_recompute_runs_the_clamps_again():
    ops = _clamp_ops(_data(recompute=["moe_act"]))
    assert ops["L0.moe.experts.act.clamp.recompute"].hbm_bytes == ops["L0.moe.experts.act.clamp.fwd"].hbm_bytes


def test_fused_clamp_adds_no_kernel():
    assert _clamp_ops(_data("fused")) == {}
    assert _clamp_ops(_data(glu_clamp=0.0)) == {}


def test_the_activation_saves_the_clamped_copy_unless_recomputed():
    spec = MoESpec.from_scenario(build_scenario(_data()))
    copy = 2 * spec.rows * F * 2  # the concatenated halves the fused activation saves
    assert (moe_layer_activation_bytes(build_scenario(_data()))
            - moe_layer_activation_bytes(build_scenario(_data("fused")))) == copy
    assert (moe_layer_activation_bytes(build_scenario(_data(recompute=["moe_act"])))
            == moe_layer_activation_bytes(build_scenario(_data("fused", recompute=["moe_act"]))))


def test_gpt_oss_presets_clamp_at_seven():
    from simulator.config.workload import Model

    assert Model(preset="gpt-oss-120b").glu_clamp == 7.0 and Model(preset="gpt-oss-20b").glu_clamp == 7.0


@pytest.mark.parametrize("model, needle", [
    ({"experts": 0, "top_k": 0, "moe_ffn_hidden": 0}, "no experts"),
    ({"mlp": "gelu"}, "mlp: gelu"),
    ({"shared_experts": 1}, "shared experts"),
])
def test_clamp_refused_where_it_is_not_priced(tmp_path, model, needle):
    data = _data(**model)
    path = tmp_path / "clamp.yaml"
    path.write_text(yaml.safe_dump(data))
    out = subprocess.run([sys.executable, "-m", "simulator", "run", str(path)], capture_output=True, text=True)
    assert out.returncode == 2
    assert "clamp.yaml" in out.stderr and "glu_clamp" in out.stderr and needle in out.stderr
    assert "Traceback" not in out.stderr

"""The dense MLP's activation as the frameworks run it (``model.mlp``, ``training.activation_kernel``):
one fused kernel each way (Megatron's bias-activation fusions, a jit-fused function), or the
activation's PyTorch ops one kernel each; squared ReLU as NeMo 2.0 writes it,
``torch.pow(F.relu(x), 2)``, is two kernels forward and four backward."""

from __future__ import annotations

import pytest

from simulator.config.scenario import build_scenario
from simulator.config.workload import Model
from simulator.errors import InputError
from simulator.schedule.build import build_schedule
from simulator.schedule.flops import model_flops_per_token
from simulator.schedule.ir import ComputeOp
from simulator.schedule.transformer import Elementwise

H, FFN, SEQ, MB, TP = 512, 2048, 1024, 2, 2
UNIT = MB * SEQ * (FFN // TP) * 2  # one bf16 tokens x ffn/tp tensor


def test_activation_traffic_by_kind_and_kernel():
    """Eager: GeLU reads and writes once each way (2, 3 units; F.gelu, gelu_backward); SwiGLU is silu
    then a multiply (2 + 3) and backward the multiply's two gradients and silu' (3 + 5 in three
    kernels); squared ReLU is relu (2) then pow (2), and backward pow_backward's copy (x.pow(1), 2),
    scalar multiply (2) and multiply by the gradient (3), then threshold_backward (3): 10 units in
    four kernels. Fused: one kernel each way, 2 / 3 units (3 / 5 gated) whatever the function."""
    def act(mlp, act_fused, fused=True):
        e = Elementwise.of(fused, mlp == "swiglu", mlp=mlp, act_fused=act_fused)
        return e.act_fwd, e.act_bwd

    assert act("squared_relu", False) == ((4, 2), (10, 4))
    assert act("gelu", False) == ((2, 1), (3, 1)) and act("swiglu", False) == ((5, 2), (8, 3))
    assert act("squared_relu", True) == act("gelu", True) == ((2, 1), (3, 1))
    assert act("swiglu", True) == ((3, 1), (5, 1))
    # the layer's other blocks do not depend on the activation's kernel
    a, b = Elementwise.of(True, False, mlp="squared_relu", act_fused=False), Elementwise.of(True, False)
    assert (a.res_fwd, a.res_bwd, a.res_ln_fwd, a.res_ln_bwd) == (b.res_fwd, b.res_bwd, b.res_ln_fwd, b.res_ln_bwd)
    # eager layers run the activation eager unless it is named fused
    assert Elementwise.of(False, False, mlp="squared_relu").act_bwd == (10, 4)
    assert Elementwise.of(False, False, mlp="squared_relu", act_fused=True).act_bwd == (3, 1)


def test_squared_relu_is_a_two_matrix_mlp():
    """Squared ReLU has no gate: the GeLU MLP's matrices, FFN default 4h, FLOPs per token."""
    base = dict(layers=2, hidden=H, heads=8, vocab=32000, seq_len=SEQ)
    relu2, gelu = Model(**base, mlp="squared_relu"), Model(**base, mlp="gelu")
    assert not relu2.gated and relu2.ffn_hidden == 4 * H == gelu.ffn_hidden
    assert model_flops_per_token(relu2) == model_flops_per_token(gelu)


def _act_ops(tmp_path, **training) -> dict[str, ComputeOp]:
    data = {"name": "s", "hardware": "dgx-h100", "nodes": 1,
            "model": {"layers": 2, "hidden": H, "heads": 8, "vocab": 32000, "mlp": "squared_relu",
                      "ffn_hidden": FFN, "seq_len": SEQ},
            "training": {"micro_batch": MB, "global_batch": 8, **training},
            "parallel": {"tp": TP, "sequence_parallel": True}}
    sched = build_schedule(build_scenario(data, source="s.yaml", base_dir=tmp_path))
    prog = next(iter(sched.programs.values()))
    return {op.name: op for op in prog if isinstance(op, ComputeOp) and ".act." in op.name}


def test_eager_squared_relu_in_the_schedule(tmp_path):
    """In a step: the eager activation moves 4 and 10 tokens x ffn/tp tensors in 2 and 4 kernels
    per layer and micro-batch; the default on a fused stack is one kernel each way (2 and 3)."""
    eager, auto = _act_ops(tmp_path, activation_kernel="eager"), _act_ops(tmp_path)
    assert (eager["L0.act.fwd"].hbm_bytes, eager["L0.act.fwd"].count) == (4 * UNIT, 2)
    assert (eager["L0.act.bwd"].hbm_bytes, eager["L0.act.bwd"].count) == (10 * UNIT, 4)
    assert (auto["L0.act.fwd"].hbm_bytes, auto["L0.act.fwd"].count) == (2 * UNIT, 1)
    assert (auto["L0.act.bwd"].hbm_bytes, auto["L0.act.bwd"].count) == (3 * UNIT, 1)
    assert _act_ops(tmp_path, fused_kernels=False)["L0.act.bwd"].count == 4  # eager layers: eager ops


def test_unknown_activation_kernel_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match=r"s\.yaml.*activation_kernel"):
        _act_ops(tmp_path, activation_kernel="jit")

"""Full recompute of some layers only (``training.recompute_method`` / ``recompute_num_layers``).

Megatron-Core (``megatron/core/recompute.py`` ``checkpointed_forward``): ``uniform`` checkpoints
every layer of a model chunk in groups of N, ``block`` only the first N layers of each model chunk.
torchtitan (``_apply_layer_sac``, ``selective_ac_option = "N"``): the N-th, 2N-th... block a rank
wraps, counted from 1. The sets, the re-run FLOPs, the kept bytes and the step they lengthen are
derived here from those rules alone.
"""

from __future__ import annotations

import json
import math

import pytest
import yaml

from simulator.cli import main
from simulator.config.scenario import build_scenario
from simulator.errors import InputError
from simulator.schedule.build import build_schedule
from simulator.schedule.checkpointing import kept_layers, recomputed_layers
from simulator.schedule.flops import layer_flops
from simulator.schedule.ir import ComputeOp
from simulator.schedule.memory import estimate_memory, in_flight, layer_activation_bytes
from simulator.simulation import simulate_scenario
from simulator.sweep.bound import step_lower_bound

H, HEADS, FFN, SEQ, MB, TP = 1024, 16, 4096, 2048, 1, 2


def _data(layers: int = 12, pp: int = 2, vp: int = 2, **training) -> dict:
    return {"name": "s", "hardware": "dgx-h100", "nodes": 1,
            "model": {"layers": layers, "hidden": H, "heads": HEADS, "ffn_hidden": FFN, "vocab": 32768,
                      "seq_len": SEQ},
            "training": {"micro_batch": MB, "global_batch": 8, "dtype": "bf16", **training},
            "parallel": {"tp": TP, "pp": pp, "vp": vp, "pp_schedule": "interleaved" if vp > 1 else "1f1b",
                         "sequence_parallel": True}}


def _scn(**kw):
    return build_scenario(_data(**kw), source="s.yaml")


# 12 layers, pp 2, vp 2: the model chunks (virtual stage v = chunk * pp + stage) hold
# [0, 1, 2] and [6, 7, 8] on stage 0, [3, 4, 5] and [9, 10, 11] on stage 1.
@pytest.mark.parametrize("method, n, expected", [
    ("uniform", 1, set(range(12))),
    ("uniform", 2, set(range(12))),
    ("block", 1, {0, 3, 6, 9}),  # the first layer of every chunk
    ("block", 2, {0, 1, 3, 4, 6, 7, 9, 10}),
    ("block", 5, set(range(12))),  # more than a chunk holds: the whole chunk
    ("every", 2, {1, 6, 8, 4, 9, 11}),  # stage 0 wraps 0,1,2,6,7,8: the 2nd, 4th, 6th; stage 1 likewise
    ("every", 3, {2, 8, 5, 11}),
    ("block", 0, set()),  # Megatron's --recompute-num-layers 0 under block: no layer
    ("every", 0, set(range(12))),  # torchtitan: a frequency of 0 checkpoints every block
])
def test_which_layers_full_recompute_reruns(method, n, expected):
    scn = _scn(recompute="full", recompute_method=method, recompute_num_layers=n)
    assert recomputed_layers(scn) == expected
    assert kept_layers(scn) == set(range(12)) - expected


def _rerun_gemm_flops(scn) -> dict[int, float]:
    """Per layer, the GEMM FLOPs its backward re-runs for micro-batch 0 (all stages, TP rank 0)."""
    out: dict[int, float] = {}
    sched = build_schedule(scn)
    for prog in sched.programs.values():
        for op in prog:
            if (isinstance(op, ComputeOp) and op.kind == "gemm" and op.name.endswith(".recompute")
                    and op.tag.mb_index == 0 and op.name.startswith("L")):
                layer = int(op.name[1:].split(".")[0])
                out[layer] = out.get(layer, 0.0) + op.flops * op.count
    return out


def test_only_the_chosen_layers_rerun_their_forward_gemms():
    scn = _scn(recompute="full", recompute_method="block", recompute_num_layers=1)
    rerun = _rerun_gemm_flops(scn)
    assert set(rerun) == {0, 3, 6, 9}
    # each re-runs its forward GEMMs once: QKV, projection, FC1, FC2 over TP
    lf = layer_flops(scn.model, MB * SEQ, SEQ)
    gemm = lf.qkv + lf.out_proj + lf.mlp
    for layer, flops in rerun.items():
        assert flops == pytest.approx(gemm / TP, rel=1e-6), layer


def test_kept_activations_closed_form():
    """Per micro-batch in flight: a checkpoint keeps the layer's input (2·s·b·h/t bytes with SP),
    a layer left out keeps everything (its ``none`` set)."""
    none, full = _scn(recompute="none"), _scn(recompute="full")
    keep = layer_activation_bytes(none)
    ckpt = layer_activation_bytes(full)
    assert ckpt == pytest.approx(2 * SEQ * MB * H / TP)
    for method, n, ckpts, kept, rebuilt in [
        ("uniform", 1, 6, 0, 1),
        ("uniform", 2, 4, 0, 2),  # chunks of 3 layers: groups of 2 and 1, twice
        ("uniform", 3, 2, 0, 3),
        ("block", 1, 2, 4, 1),
        ("every", 2, 3, 3, 1),
    ]:
        scn = _scn(recompute="full", recompute_method=method, recompute_num_layers=n)
        est = estimate_memory(scn, 0)
        assert est.activations == pytest.approx((ckpts * ckpt + kept * keep) * in_flight(scn, 0)
                                                + _stage0_extra(scn)), (method, n)
        assert est.recompute in (0.0, pytest.approx(rebuilt * keep)), (method, n)


def _stage0_extra(scn) -> float:
    """The embedding's dropout masks stage 0 keeps besides the layers (estimate_memory)."""
    return (MB * SEQ) * H / TP * min(scn.parallel.pp, scn.n_micro) if scn.training.dropout else 0.0


def test_block_step_lies_between_none_and_full_by_the_share_rerun():
    """One pipeline stage of 8 layers: each layer re-run adds the same forward to the step, so
    block N costs N/8 of what full recompute adds to no recompute."""
    kw = {"layers": 8, "pp": 1, "vp": 1}
    none = simulate_scenario(_scn(recompute="none", **kw)).report.step_time_s
    full = simulate_scenario(_scn(recompute="full", **kw)).report.step_time_s
    assert full > 1.2 * none
    for n in (2, 4):
        part = simulate_scenario(_scn(recompute="full", recompute_method="block", recompute_num_layers=n, **kw))
        assert part.report.step_time_s == pytest.approx(none + n / 8 * (full - none), rel=0.01)
    uniform = simulate_scenario(_scn(recompute="full", recompute_method="uniform", recompute_num_layers=4, **kw))
    assert uniform.report.step_time_s == pytest.approx(full, rel=0.01)  # the same re-runs, fewer checkpoints
    zero = _scn(recompute="full", recompute_method="block", recompute_num_layers=0, **kw)
    assert simulate_scenario(zero).report.step_time_s == pytest.approx(none, rel=1e-9)  # block 0: none re-run
    assert estimate_memory(zero, 0).activations == pytest.approx(estimate_memory(_scn(recompute="none", **kw), 0)
                                                                 .activations)


def test_sweep_lower_bound_stays_below_the_replay():
    scn = _scn(recompute="full", recompute_method="every", recompute_num_layers=3)
    step = simulate_scenario(scn).report.step_time_s
    assert step_lower_bound(scn) <= step
    # and the bound sees the layers left out: below the bound of recomputing every layer
    assert step_lower_bound(scn) < step_lower_bound(_scn(recompute="full"))


@pytest.mark.parametrize("training, why", [
    ({"recompute": "selective", "recompute_method": "block", "recompute_num_layers": 2}, "need recompute: full"),
    ({"recompute": "none", "recompute_num_layers": 4}, "need recompute: full"),
    ({"recompute": "full", "recompute_method": "uniform", "recompute_num_layers": 0}, "at least 1"),
    ({"recompute": "full", "recompute_method": "block", "recompute_num_layers": -1}, "recompute_num_layers"),
    ({"recompute": "full", "recompute_method": "some"}, "recompute_method"),
])
def test_bad_settings_are_input_errors(training, why):
    with pytest.raises(InputError, match=why):
        _scn(**training)


def test_uniform_groups_with_mtp_are_an_input_error():
    """Megatron-Core checkpoints each MTP depth on its own and asserts recompute_num_layers == 1
    under uniform (multi_token_prediction.py)."""
    data = _data(layers=12, pp=1, vp=1, recompute="full", recompute_method="uniform", recompute_num_layers=2)
    data["model"]["mtp_layers"] = 1
    with pytest.raises(InputError, match="training.recompute_num_layers"):
        build_scenario(data, source="s.yaml")
    data["training"]["recompute_num_layers"] = 1
    assert recomputed_layers(build_scenario(data)) == set(range(13))  # the MTP depth's layer re-run too


def test_cli_exits_2_naming_file_and_field(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(_data(recompute="selective", recompute_method="every", recompute_num_layers=2)))
    assert main(["check", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.yaml" in err and "recompute_method" in err and "Traceback" not in err


def test_run_json_names_the_layers_rerun(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(_data(layers=4, pp=1, vp=1, recompute="full", recompute_method="block",
                                         recompute_num_layers=1)))
    out = tmp_path / "s.json"
    assert main(["run", str(path), "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    model = doc["inputs"]["model"]
    assert (model["recompute"], model["recompute_method"], model["recompute_num_layers"]) == ("full", "block", 1)
    assert math.isfinite(doc["step_time_s"])


def _big(mb: int, **training) -> dict:
    """16 layers of h 4,096 at 8K tokens, tp 2 x pp 2 on one DGX H100: at micro-batch 8 the
    activations of 8 layers a stage do not fit in 80 GB, a checkpoint per layer does."""
    return {"name": "big", "hardware": "dgx-h100", "nodes": 1,
            "model": {"layers": 16, "hidden": 4096, "heads": 32, "ffn_hidden": 14336, "vocab": 32768,
                      "seq_len": 8192, "mlp": "swiglu"},
            "training": {"micro_batch": mb, "global_batch": 64, "dtype": "bf16", **training},
            "parallel": {"tp": 2, "pp": 2, "sequence_parallel": True}}


def test_fewest_block_layers_that_fit():
    from simulator.schedule.memory import block_recompute_to_fit, memory_per_gpu

    scn = build_scenario(_big(8), source="big.yaml")
    assert not memory_per_gpu(scn).fits and memory_per_gpu(build_scenario(_big(8, recompute="full"))).fits
    n = block_recompute_to_fit(scn)
    assert n is not None and 1 < n < 8

    def fits(k: int) -> bool:
        return memory_per_gpu(build_scenario(_big(8, recompute="full", recompute_method="block",
                                                  recompute_num_layers=k))).fits

    assert fits(n) and not fits(n - 1)  # the fewest: one layer less per chunk does not fit
    assert block_recompute_to_fit(build_scenario(_big(1))) is None  # fits as it is
    assert block_recompute_to_fit(build_scenario(_big(8, recompute="full"))) is None  # nothing more to re-run


def test_run_says_how_many_layers_to_rerun(tmp_path, capsys):
    path = tmp_path / "big.yaml"
    path.write_text(yaml.safe_dump(_big(8)))
    out = tmp_path / "big.json"
    assert main(["run", str(path), "--json", str(out)]) == 0
    text = capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert doc["fits_in_memory"] is False
    n = doc["recompute_to_fit"]["recompute_num_layers"]
    assert doc["recompute_to_fit"]["recompute_method"] == "block"
    assert "DOES NOT FIT" in text and f"recompute_num_layers: {n}" in text
    assert main(["check", str(path)]) == 0  # check says the same before anything is simulated
    assert f"recompute_num_layers: {n}" in capsys.readouterr().out

"""training.deterministic: FlashAttention-2's deterministic backward (costs/attention_determinism.py)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import yaml

from simulator.cli import main
from simulator.config.hardware import load_profile
from simulator.config.workload import Training
from simulator.costs.attention_determinism import (
    dq_accum_extra_bytes,
    grid_slowdown,
    key_block_work,
    nsplits,
)
from simulator.costs.compute import compute_time
from simulator.schedule.attention import FLASH_BWD_FACTOR, attention_flops, causal_fraction_diagonal, resolve_kernel
from simulator.schedule.ir import ComputeOp, Tag

ROOT = Path(__file__).resolve().parents[2]


def test_causal_key_blocks_meet_fewer_query_blocks():
    # head dim 128: kBlockM 64, kBlockN 128; key block k starts at query block 2k of 128
    work = key_block_work(8192, 8192, True, 128)
    assert len(work) == 64 and work[0] == 128 and work[1] == 126 and work[-1] == 2
    assert key_block_work(8192, 8192, False, 128) == [128] * 64


def test_a_full_grid_of_heads_costs_nothing_more():
    # batch x heads = SMs: one CTA a head either way, each over every key block; the default grid's
    # 64 key blocks of each head fill the 132 SMs in 64 equal waves: the same makespan
    assert nsplits(132, 132) == 1
    assert grid_slowdown(132, 8192, 8192, False, 128, 132) == pytest.approx(1.0)


def test_a_second_partial_wave_is_paid_whole():
    # 100 heads on 108 SMs: 2 CTAs a head, 200 CTAs of 32 key blocks -> two waves of 32 x 128 steps;
    # the default grid's 6,400 CTAs of 128 steps take ceil(6400 / 108) = 60 waves: 64 / 60
    assert nsplits(100, 108) == 2
    assert grid_slowdown(100, 8192, 8192, False, 128, 108) == pytest.approx(64 / 60)


def _published_fa2_slowdown() -> float:
    """flash-attn PR #1893 (H100, d 128, causal, seq 8,192, 16 heads, batch 2): deterministic FA2
    backward 166.0 TFLOP/s beside its forward at 306.2; the same shape's default FA2 on H200
    (cudnn-frontend's sweep, PyTorch's FA2) at 325.1 forward, 277.4 backward, scaled by the forwards."""
    rows = list(csv.DictReader(line for line in (ROOT / "data/kernels/cudnn_sdpa_benchmarks.csv").open()
                               if not line.startswith("#")))
    fa2 = next(r for r in rows if r["commit"] == "b740542818f3" and r["backend"] == "pytorch_sdpa_flash"
               and r["seq_q"] == "8192" and r["causal"] == "true")
    default_bwd = float(fa2["bwd_tflops"]) * 306.2 / float(fa2["fwd_tflops"])
    return default_bwd / 166.0


def test_grid_slowdown_meets_the_published_deterministic_backward():
    published = _published_fa2_slowdown()
    assert published == pytest.approx(1.574, abs=0.002)
    assert grid_slowdown(2 * 16, 8192, 8192, True, 128, 132) == pytest.approx(published, rel=0.03)


def test_split_dq_buffers_are_zeroed_and_read():
    # nsplits 4 (32 heads on 108 SMs): 3 more fp32 copies of dQ (8,192 x 128 per head), written and read
    assert dq_accum_extra_bytes(32, 8192, 128, 108) == 2 * 3 * 32 * 8192 * 128 * 4


def _bwd(kernel: str, heads: int) -> ComputeOp:
    frac = causal_fraction_diagonal(8192)
    return ComputeOp(name="attn.bwd", kind="attention", tag=Tag("bwd", 0, 0), causal_fraction=frac,
                     flops=FLASH_BWD_FACTOR * attention_flops(1, 32, 8192, 8192, 128, frac),
                     attention_kernel=kernel, attention_shape=(8192, 8192, 128, True), deterministic_heads=heads)


def test_key_prices_the_flash2_backward_by_the_grid_and_the_dq_copies():
    gpu = load_profile("dgx-a100").gpu.model_copy(update={"kernel_gap_us": 0.0})
    plain, det = compute_time(_bwd("flash2", 0), gpu), compute_time(_bwd("flash2", 32), gpu)
    extra = dq_accum_extra_bytes(32, 8192, 128, gpu.sms) / (gpu.hbm_Bps * gpu.hbm_efficiency)
    assert det == pytest.approx(plain * grid_slowdown(32, 8192, 8192, True, 128, gpu.sms) + extra, rel=1e-9)
    assert det / plain == pytest.approx(1.69, abs=0.02)  # 1.618 from the grid, the rest the dQ copies


def test_cudnn_hopper_backward_and_the_forward_keep_their_cost():
    gpu = load_profile("dgx-h100").gpu
    assert compute_time(_bwd("flash3", 32), gpu) == compute_time(_bwd("flash3", 0), gpu)
    fwd = ComputeOp(name="attn.fwd", kind="attention", tag=Tag("fwd", 0, 0), flops=1e12,
                    attention_kernel="flash2", attention_shape=(8192, 8192, 128, True), deterministic_heads=32)
    assert compute_time(fwd, gpu) == compute_time(ComputeOp(**{**_fields(fwd), "deterministic_heads": 0}), gpu)


def _fields(op: ComputeOp) -> dict:
    return {k: getattr(op, k) for k in op.__slots__}


def _scenario(tmp_path: Path, deterministic: object) -> Path:
    doc = yaml.safe_load((ROOT / "scenarios" / "quickstart.yaml").read_text())
    doc["hardware"] = "dgx-a100"
    doc["model"]["layers"] = 2
    doc["training"]["global_batch"] = 2
    doc["training"]["deterministic"] = deterministic
    path = tmp_path / f"s{len(list(tmp_path.iterdir()))}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_deterministic_scenario_is_slower_by_its_attention_backward(tmp_path):
    import json

    times = []
    for flag in (False, True):
        out = tmp_path / f"{flag}.json"
        assert main(["run", str(_scenario(tmp_path, flag)), "--json", str(out)]) == 0
        times.append(json.loads(out.read_text())["step_time_s"])
    assert times[1] > times[0]


@pytest.mark.parametrize("bad", ["yes", 1])
def test_bad_value_exits_2_naming_the_field(tmp_path, capsys, bad):
    assert main(["check", str(_scenario(tmp_path, bad))]) == 2
    err = capsys.readouterr().err
    assert "deterministic" in err and "Traceback" not in err


def _training(**kw) -> Training:
    return Training(micro_batch=1, global_batch=8, dtype="bf16", **kw)


@pytest.mark.parametrize("profile, attention, deterministic, dropout, kernel", [
    # Blackwell: TE's cuDNN backend refuses a deterministic backward with dropout; FA3/FA4 take no
    # dropout: FlashAttention-2 runs
    ("gb200-nvl72", "auto", True, True, "flash2"),
    ("dgx-b200", "auto", True, True, "flash2"),
    ("dgx-b300", "auto", True, True, "flash2"),  # flash2 from its base, dgx-b200
    # without dropout cuDNN's deterministic backward serves it (cuDNN >= 9.18.1), and without
    # determinism its default one
    ("gb200-nvl72", "auto", True, False, "flash3"),
    ("gb200-nvl72", "auto", False, True, "flash3"),
    # Hopper keeps cuDNN's deterministic backward, with or without dropout; Ampere runs FA2 anyway
    ("dgx-h100", "auto", True, True, "flash3"),
    ("dgx-a100", "auto", True, True, "flash2"),
    # a kernel the scenario names is what runs
    ("gb200-nvl72", "flash3", True, True, "flash3"),
])
def test_transformer_engine_backend_under_determinism(profile, attention, deterministic, dropout, kernel):
    t = _training(attention=attention, deterministic=deterministic, fused_attention_dropout=dropout)
    assert resolve_kernel(load_profile(profile).gpu, t) == kernel


def test_blackwell_deterministic_dropout_runs_flash2_end_to_end(tmp_path):
    """On GB200 a run with attention dropout under --deterministic-mode times as the same run with
    ``attention: flash2`` named, and slower than cuDNN's kernel (``attention: flash3``) would be."""
    import json

    doc = yaml.safe_load((ROOT / "scenarios" / "quickstart.yaml").read_text())
    doc["hardware"], doc["nodes"], doc["parallel"]["tp"] = "gb200-nvl72", 2, 4
    doc["model"]["layers"] = 2
    doc["training"].update(global_batch=2, deterministic=True, fused_attention_dropout=True)
    times = {}
    for kernel in ("auto", "flash2", "flash3"):
        doc["training"]["attention"] = kernel
        path, out = tmp_path / f"{kernel}.yaml", tmp_path / f"{kernel}.json"
        path.write_text(yaml.safe_dump(doc))
        assert main(["run", str(path), "--json", str(out)]) == 0
        times[kernel] = json.loads(out.read_text())["step_time_s"]
    assert times["auto"] == times["flash2"] > times["flash3"]

"""Sliding-window attention (model.sliding_window, model.full_attention_every): which layers
attend to a window, the scores their kernels compute (closed form against a brute-force count),
the tiles a fused kernel computes for them, and the plans that cannot run them."""

from __future__ import annotations

import itertools
import math
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from simulator.config.workload import Model, attention_window
from simulator.costs.attention_shape import TILE, TILING, shape_factor, tile_efficiency
from simulator.schedule.attention import causal_fraction_diagonal, window_fraction

C0 = TILING["flash3"].cta_overhead_tiles


def _scores(s: int, window: int) -> int:
    """Scores of one head by brute force: query i sees key j when i - W < j <= i."""
    return sum(1 for i, j in itertools.product(range(s), repeat=2) if j <= i and (window == 0 or i - window < j))


@pytest.mark.parametrize("s, window", [(64, 16), (100, 7), (96, 95), (50, 50), (50, 80), (64, 0)])
def test_window_fraction_counts_the_band(s, window):
    assert window_fraction(s, window) * s * s == pytest.approx(_scores(s, window))


def test_window_fraction_is_cudnns_count():
    # cudnn-frontend's benchmark_single_sdpa.py flops(): W(W+1)/2 + (S - W) W unmasked scores
    s, w = 4096, 128
    assert window_fraction(s, w) * s * s == w * (w + 1) // 2 + (s - w) * w
    assert window_fraction(s, s) == causal_fraction_diagonal(s)


def test_gpt_oss_layers_alternate_from_a_windowed_first_layer():
    # HF openai/gpt-oss-120b layer_types: sliding_attention, full_attention, ...; Megatron-Core:
    # layer number n (1-based) is windowed unless n % window_attn_skip_freq == 0
    m = Model(preset="gpt-oss-120b")
    assert (m.sliding_window, m.full_attention_every) == (128, 2)
    assert [m.attention_window(i) for i in range(4)] == [128, 0, 128, 0]
    assert attention_window(1024, 6, 5) == 0 and attention_window(1024, 6, 4) == 1024  # Gemma 3's 5:1
    assert attention_window(4096, 0, 31) == 4096  # Mistral 7B: every layer
    assert attention_window(0, 0, 3) == 0


def _brute_tiles(s: int, window: int) -> tuple[float, int]:
    """(credited, computed) tiles over all query tiles of a causal s x s kernel by enumeration."""
    credited = _scores(s, window) / TILE ** 2
    computed = 0
    for q in range(math.ceil(s / TILE)):
        rows = range(q * TILE, min((q + 1) * TILE, s))
        keys = {j // TILE for i in rows for j in range(max(0, i - window + 1), i + 1)}
        computed += len(keys)
    return credited, computed


@pytest.mark.parametrize("s, window", [(4 * TILE, TILE), (4 * TILE, TILE + 1), (6 * TILE, 2 * TILE + 5), (700, 300)])
def test_windowed_kernel_computes_the_tiles_its_rows_touch(s, window):
    credited, computed = _brute_tiles(s, window)
    n_q = math.ceil(s / TILE)
    assert tile_efficiency(s, s, True, window=window) == pytest.approx(credited / (computed + n_q * C0))


def test_a_window_of_the_sequence_is_plain_causal():
    for s in (512, 4096):
        assert tile_efficiency(s, s, True, window=s) == tile_efficiency(s, s, True)
        assert tile_efficiency(s, s, True, window=10 * s) == tile_efficiency(s, s, True)


def test_a_128_key_window_runs_two_tiles_for_one():
    # W = T: each query tile past the first touches its own key tile and the one before, both
    # partial; one tile of scores per CTA credited against two computed
    s = 64 * TILE
    eff = tile_efficiency(s, s, True, window=TILE)
    assert eff == pytest.approx(1 / (2 + C0), rel=0.01)
    assert shape_factor(s, s, True, 128, window=TILE) < 0.32 * shape_factor(s, s, True, 128)


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "simulator", *args], capture_output=True, text=True)


def _scenario(tmp_path: Path, **parallel) -> Path:
    scn = {"name": "swa", "hardware": "dgx-h100", "nodes": 1,
           "model": {"layers": 4, "hidden": 1024, "heads": 16, "vocab": 32000, "seq_len": 4096, "mlp": "swiglu",
                     "sliding_window": 512, "full_attention_every": 2},
           "training": {"micro_batch": 1, "global_batch": 8},
           "parallel": {"tp": 1, "pp": 1, **parallel}}
    path = tmp_path / "swa.yaml"
    path.write_text(yaml.safe_dump(scn))
    return path


def test_windowed_layers_price_only_their_band(tmp_path):
    from simulator.config.scenario import load_scenario
    from simulator.schedule.build import build_program

    scn = load_scenario(_scenario(tmp_path))
    ops = [op for op in build_program(scn, 0) if getattr(op, "kind", "") == "attention"]
    fwd = {op.tag.layer: op for op in ops if op.tag.phase == "fwd"}
    assert [fwd[i].attention_window for i in range(4)] == [512, 0, 512, 0]
    assert fwd[0].flops / fwd[1].flops == pytest.approx(window_fraction(4096, 512) / causal_fraction_diagonal(4096))
    assert all(op.attention_window == fwd[op.tag.layer].attention_window for op in ops)


def test_window_with_a_ring_of_context_parallelism_is_refused(tmp_path):
    path = _scenario(tmp_path, cp=2, cp_comm="p2p")
    res = run_cli("run", str(path))
    assert res.returncode == 2
    assert "swa.yaml" in res.stderr and "model.sliding_window" in res.stderr and "cp_comm" in res.stderr
    assert "Traceback" not in res.stderr


def test_full_attention_every_needs_a_window(tmp_path):
    path = _scenario(tmp_path)
    scn = yaml.safe_load(path.read_text())
    scn["model"]["sliding_window"] = 0
    path.write_text(yaml.safe_dump(scn))
    res = run_cli("run", str(path))
    assert res.returncode == 2
    assert "full_attention_every" in res.stderr and "Traceback" not in res.stderr


def test_deterministic_grid_counts_the_windows_query_blocks():
    """FlashAttention-2's deterministic backward (costs/attention_determinism.py): with a window each
    key block meets only the query blocks whose rows still see it, the same few for every key
    block but the last, where causal masking gives the first key blocks the whole sequence."""
    from simulator.costs.attention_determinism import fa2_bwd_tiles, key_block_work

    bm, bn = fa2_bwd_tiles(128)
    s = 64 * bn
    assert key_block_work(s, s, True, 128, window=s) == key_block_work(s, s, True, 128)
    work = key_block_work(s, s, True, 128, window=bn)
    # key block k is seen by rows k*bn .. (k+1)*bn - 1 + bn - 1: (2 bn - 1) rows, ceil over bm blocks
    assert set(work[:-1]) <= {math.ceil((2 * bn - 1) / bm), math.ceil((2 * bn - 1) / bm) + 1}
    assert sum(work) < sum(key_block_work(s, s, True, 128)) / 10


def test_run_output_names_the_window(tmp_path):
    """The inputs echoed with every result say which layers attend to a window."""
    res = run_cli("run", str(_scenario(tmp_path)), "--json", "-")
    assert res.returncode == 0, res.stderr
    import json

    model = json.loads(res.stdout)["inputs"]["model"]
    assert model["sliding_window"] == {"keys": 512, "layers": 2}
    text = run_cli("run", str(_scenario(tmp_path)))
    assert "window 512 on 2 layers" in text.stdout


def test_flash_attention_1_has_no_window(tmp_path):
    path = _scenario(tmp_path)
    scn = yaml.safe_load(path.read_text())
    scn["hardware"] = "dgx-a100"
    scn["training"]["attention"] = "flash1"
    path.write_text(yaml.safe_dump(scn))
    res = run_cli("run", str(path))  # dgx-a100 prices flash1 (FlashAttention-1 and its Triton port)
    assert res.returncode == 2
    assert "training.attention" in res.stderr and "sliding window" in res.stderr and "Traceback" not in res.stderr

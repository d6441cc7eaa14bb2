"""MFU is divided by the dense peak of the dtype the run's GEMMs use, says which, and stays <= 1
even on a profile whose GEMMs run at the fp8 peak (the bf16 peak gave 183.8% here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from simulator.cli import main
from simulator.config.hardware import load_profile

ROOT = Path(__file__).resolve().parents[2]


def _run(tmp_path: Path, capsys, dtype: str) -> tuple[dict, str]:
    overlay = tmp_path / "fast.yaml"
    # schema-valid and as fast as it gets: every GEMM at 100% of bf16, fp8 scaled 1.5x (capped at 1)
    overlay.write_text("base: dgx-h100\ngpu:\n  gemm_efficiency: [{flops: 1.0e6, efficiency: 1.0}]\n"
                       "  fp8_gemm_efficiency_scale: 1.5\n")
    doc = yaml.safe_load((ROOT / "scenarios" / "quickstart.yaml").read_text())
    doc["model"]["layers"] = 2
    doc["training"].update(dtype=dtype, global_batch=2)
    doc["hardware"] = "fast.yaml"
    scn = tmp_path / "s.yaml"
    scn.write_text(yaml.safe_dump(doc))
    assert main(["run", str(scn), "--json", "-"]) == 0
    out = capsys.readouterr().out
    return json.loads(out), out


@pytest.mark.parametrize("dtype,peak_key", [("fp8", "fp8_TFLOPS"), ("bf16", "bf16_TFLOPS"), ("fp16", "fp16_TFLOPS")])
def test_mfu_uses_the_peak_of_the_gemm_dtype(tmp_path, capsys, dtype, peak_key):
    doc, _ = _run(tmp_path, capsys, dtype)
    peak = getattr(load_profile("dgx-h100").gpu, peak_key)
    assert doc["mfu_peak"] == {"dtype": dtype, "TFLOPS": pytest.approx(peak)}
    assert doc["mfu"] == pytest.approx(doc["tflops_per_gpu"] / peak, rel=1e-9)
    assert 0 < doc["mfu"] <= 1


def test_table_says_which_peak(tmp_path, capsys):
    _run(tmp_path, capsys, "fp8")
    scn = tmp_path / "s.yaml"
    assert main(["run", str(scn)]) == 0
    assert "of the fp8 dense peak" in capsys.readouterr().out

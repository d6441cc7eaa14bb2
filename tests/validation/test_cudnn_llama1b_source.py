"""cuDNN frontend's Llama-3.2-1B training benchmark on one B200 and one H200 (source
``cudnn_llama1b``): the file is the benchmark's, the built rows are what its script runs (transformers'
Llama in eager bf16, SDPA pinned per row, CrossEntropyLoss on the bf16 logits, plain SGD), held out,
and they score as the page says."""

from __future__ import annotations

import statistics

import pytest

from simulator.config.scenario import build_scenario
from simulator.e2e_validation import scoring, sources
from simulator.e2e_validation.hf_llama_sources import cudnn_llama1b
from simulator.e2e_validation.rows import parse_int, read_rows


def _rows() -> list[dict[str, str]]:
    return read_rows(sources.DATA_DIR / "cudnn_frontend_llama32_1b.csv")


def test_file_is_the_benchmarks_six_shapes_three_backends_two_gpus():
    """36 rows: each of 6 shapes of 12K-18K tokens (the script's batch_seqlen) with each SDPA backend
    on each GPU; within a GPU and shape cuDNN is the fastest and the memory-efficient kernel the
    slowest, as the README says."""
    rows = _rows()
    assert len(rows) == 36
    shapes = {(parse_int(r["batch_size"]), parse_int(r["seq_len"])) for r in rows}
    assert shapes == {(24, 768), (12, 1024), (6, 2048), (3, 4096), (2, 8192), (1, 16384)}
    for gpu in ("B200", "H200"):
        for shape in shapes:
            t = {r["backend"]: float(r["time_s"]) for r in rows if r["gpu"] == gpu
                 and (parse_int(r["batch_size"]), parse_int(r["seq_len"])) == shape}
            assert t["CUDNN_ATTENTION"] < t["FLASH_ATTENTION"] < t["EFFICIENT_ATTENTION"], (gpu, shape)


def test_rows_build_the_scripts_iteration_and_are_held_out():
    cases = cudnn_llama1b(_rows())
    assert len(cases) == 24 and {c.source for c in cases} == {"cudnn_llama1b"}
    assert "cudnn_llama1b" in sources.HELD_OUT_SOURCES and not any(sources.is_fit_case(c) for c in cases)
    for c in cases:
        scn = build_scenario(c.scenario)
        t, m = scn.training, scn.model
        assert scn.gpus_per_node == 1 and c.n_gpus == 1 and t.global_batch == t.micro_batch
        assert (m.layers, m.hidden, m.heads, m.kv_heads, m.ffn_hidden, m.vocab) == (16, 2048, 32, 8, 8192, 128256)
        assert m.tied_embeddings and m.mlp == "swiglu"
        assert m.seq_len * t.micro_batch in (12288, 16384, 18432)
        assert not t.fused_kernels and t.norm_kernel == "composite" and t.rope_kernel == "unfused" and not t.dropout
        assert t.cross_entropy == "torch_lowp" and t.optimizer_algorithm == "sgd" and t.optimizer == "foreach"
        assert t.master_dtype == "bf16" and t.state_bytes == 0 and not t.grad_clip and t.recompute == "none"
        assert t.attention == ("flash3" if " cudnn " in c.label else "flash2")
        assert scn.hardware == ("dgx-b200" if " B200 " in c.label else "dgx-h200")


@pytest.mark.slow
def test_held_out_errors():
    """Held out (positive = predicted too fast): B200 -5.5% .. +11.3% (cuDNN at 8K and 16K tokens +4.9% and
    +11.3%: dgx-b200's flash3 pair prices cuDNN's long kernels faster than the container's cuDNN 9.9.0
    ran them), H200 -8.0% .. -4.1%; median |error| 4.8%, signed -4.5%."""
    results = list(scoring.run_cases(cudnn_llama1b(_rows()), jobs=2))
    errors = {r.case.label: r.error for r in results}
    assert statistics.median(abs(e) for e in errors.values()) == pytest.approx(0.048, abs=0.01)
    assert statistics.median(errors.values()) == pytest.approx(-0.045, abs=0.01)
    assert all(-0.09 <= e <= 0.12 for e in errors.values()), errors
    h200 = [e for label, e in errors.items() if " H200 " in label]
    assert len(h200) == 12 and all(-0.09 <= e <= -0.03 for e in h200), h200

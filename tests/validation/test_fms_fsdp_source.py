"""IBM's PyTorch-FSDP table (source ``fms_fsdp``): the rows are consistent as transcribed, the MFU and
HFU columns follow from the printed throughput, the built rows are the eager full-shard, fully
checkpointed plans on the printed clusters, held out, and score as the page's findings say."""

from __future__ import annotations

import statistics

import pytest

from simulator.config.hardware import load_profile
from simulator.e2e_validation import scoring, sources
from simulator.e2e_validation.fms_fsdp_sources import fms_fsdp
from simulator.e2e_validation.rows import parse_int, read_rows

SEQ = 4096
PEAK = {"A100-80GB": 312e12, "H100-80GB": 989e12}


def _rows() -> list[dict[str, str]]:
    return read_rows(sources.DATA_DIR / "fms_fsdp_llama2.csv")


def _params(r: dict[str, str]) -> int:
    """The FMS LLaMA's parameters: GQA attention, SwiGLU, two RMSNorm weights per block, the final
    norm, untied embedding and head."""
    layers, h, heads, kv, ffn, vocab = (parse_int(r[k]) for k in ("layers", "hidden", "heads", "kv_heads",
                                                                   "ffn_hidden", "vocab"))
    per_block = 2 * h * h + 2 * h * kv * (h // heads) + 3 * h * ffn + 2 * h
    return layers * per_block + 2 * vocab * h + h


def test_rows_are_consistent_as_transcribed():
    """48 rows: 8 configurations x 3 metrics in each of the two tables; pure data parallelism, two
    sequences per GPU, the params_b label the shape's count."""
    rows = _rows()
    assert len(rows) == 48
    for r in rows:
        n = parse_int(r["num_gpus"])
        assert n == {"A100-80GB": 128, "H100-80GB": 96}[r["gpu"]]
        assert parse_int(r["dp"]) == n and parse_int(r["tp"]) == parse_int(r["pp"]) == parse_int(r["cp"]) == 1
        assert parse_int(r["micro_batch"]) == 2 and parse_int(r["global_batch"]) == 2 * n
        assert parse_int(r["seq_len"]) == SEQ
        assert f"{_params(r) / 1e9:.{len(r['params_b'].split('.')[1])}f}" == r["params_b"]


def _by_config() -> dict[tuple[str, str, str], dict[str, float]]:
    out: dict[tuple[str, str, str], dict[str, float]] = {}
    for r in _rows():
        out.setdefault((r["source_id"], r["model_name"], r["gpu"]), {})[r["metric"]] = float(r["value"])
    return out


def test_printed_mfu_follows_from_the_throughput():
    """MFU = tokens/s x (6N + 12 L h s) / peak (nanoGPT / PaLM), in both tables: the 7B and 13B prints
    within -1%..+4.5% of it (the two-digit print rounds by up to 1.4%), the 34B and 70B prints (the GQA
    shapes) 5-8% under it (the file's header)."""
    rows = {(r["source_id"], r["model_name"], r["gpu"]): r for r in _rows()}
    for key, m in _by_config().items():
        r = rows[key]
        per_token = 6 * _params(r) + 12 * parse_int(r["layers"]) * parse_int(r["hidden"]) * SEQ
        off = m["mfu"] / 100 / (m["tokens_per_s_per_gpu"] * per_token / PEAK[key[2]]) - 1
        lo, hi = (-0.01, 0.045) if key[1] in ("Llama 2 7B", "Llama 2 13B") else (-0.08, -0.05)
        assert lo <= off <= hi, (key, off)


def test_hfu_over_mfu_shows_each_rows_checkpointing():
    """Eager table: every block re-run (Full AC) adds one forward, HFU / MFU = 4/3 within the
    two-digit rounding; none for 7B; the 13B "Selective AC" rows sit near 7/6 (every second block)."""
    for (sid, model, gpu), m in _by_config().items():
        if sid != "fms-fsdp-2024-03":
            continue
        ratio = m["hfu"] / m["mfu"]
        want = {"Llama 2 7B": 1.0, "Llama 2 13B": 7 / 6}.get(model, 4 / 3)
        assert ratio == pytest.approx(want, abs=0.045), (model, gpu)


def test_only_every_second_block_fits_the_13b_rows_hfu():
    """The 13B "Selective AC" prints no n; HFU / MFU does: PyTorch's FLOP counter adds one forward
    per checkpointed block, so with b of the 40 blocks re-run the ratio is 1 + b F / (3 (40 F + L))
    (F a block's forward, L the head's). The printed two-digit percentages bound it (0.59 / 0.51 and
    0.40 / 0.35, each +-0.005): n = 2 (blocks 2, 4, ... 40) is in both bounds, n = 1 and n = 3 are
    not, and the built rows re-run exactly those 20 blocks."""
    from simulator.config.scenario import build_scenario
    from simulator.schedule.checkpointing import recomputed_layers

    h, f, layers, vocab, tokens = 5120, 13824, 40, 32000, 2 * SEQ
    block = 2 * tokens * (4 * h * h + 3 * h * f) + 4 * tokens * SEQ * h  # GEMMs + QK^T and PV, full mask
    head = 2 * tokens * h * vocab
    m = _by_config()

    def fits(n: int) -> bool:
        ratio = 1 + (layers // n) * block / (3 * (layers * block + head))
        for gpu in ("A100-80GB", "H100-80GB"):
            row = m[("fms-fsdp-2024-03", "Llama 2 13B", gpu)]
            lo = (row["hfu"] - 0.5) / (row["mfu"] + 0.5)
            hi = (row["hfu"] + 0.5) / (row["mfu"] - 0.5)
            if not lo <= ratio <= hi:
                return False
        return True

    assert [n for n in (1, 2, 3, 4, 5) if fits(n)] == [2]
    built = [c for c in fms_fsdp(_rows()) if c.label.startswith("Llama 2 13B")]
    assert len(built) == 2
    for c in built:
        assert recomputed_layers(build_scenario(c.scenario)) == set(range(1, 40, 2))


def test_built_rows_are_the_eager_full_shard_plans_held_out():
    cases = fms_fsdp(_rows())
    assert [c.label.split(" FSDP1")[0] for c in cases] == ["Llama 2 13B A100", "Llama 2 13B H100",
                                                           "Llama 2 34B A100", "Llama 2 34B H100",
                                                           "Llama 2 70B A100", "Llama 2 70B H100"]
    for c in cases:
        scn = c.scenario
        assert scn["parallel"] == dict(zero=3, zero3_impl="fsdp2", grad_reduce_dtype="bf16")
        assert scn["training"]["recompute"] == "full" and scn["training"]["micro_batch"] == 2
        every = (scn["training"].get("recompute_method"), scn["training"].get("recompute_num_layers"))
        assert every == (("every", 2) if "13B" in c.label else (None, None))
        assert scn["training"]["attention"] == "flash2" and not scn["training"]["fused_kernels"]
        assert not sources.is_fit_case(c)
        prof = load_profile(scn["hardware"])
        per_node = prof.node.nics.count * prof.node.nics.Gbps
        assert per_node == (400 if "A100" in c.label else 800)


@pytest.mark.slow
def test_errors():
    """Doc (findings): +2.8%, +6.7% (13B A100, H100: every second block checkpointed), -3.1%, -1.3%,
    -8.2%, -3.2% (34B A100, 34B H100, 70B A100, 70B H100: every block); median |error| 3.2% over
    the four fully checkpointed rows, 3.1% over all six. Before FMS's LayerNormParameterized was
    priced as the PyTorch ops it runs (norm_kernel: composite, an fp32 chain of 8 kernels forward
    and 15 backward, not one native norm kernel): +9.2%, +15.5%, +1.5%, +5.1%, -4.5%, +2.1%. The
    H100 rows read 3 points lower (+12.4%, +2.1%, -0.9%) before the H100 derate was refitted
    (0.693 -> 0.720) once MPT's FlashAttention-1 ran at FA1's own H100 rate, and 1.2-1.4 points
    higher (+13.6%, +3.5%, +0.5%) before the refit (0.706 -> 0.693) when each kernel came to pay
    the GPU's measured gap, not the host's launch; 34B H100 read +4.1% before the attention
    backward's per-CTA cost on Hopper."""
    results = scoring.run_cases(fms_fsdp(_rows()))
    errors = [r.error for r in results]
    assert errors == pytest.approx([0.028, 0.067, -0.031, -0.013, -0.082, -0.032], abs=0.006)
    assert statistics.median(abs(e) for e in errors[2:]) <= 0.04


@pytest.mark.slow
def test_the_printed_per_node_bandwidth_shows_in_the_step():
    """Findings: the FSDP traffic is not all hidden. On DGX networks (8 NICs of 200 / 400 Gb/s per
    node, dgx-a100 / dgx-h100, the same GEMM derates) the four rows read +2.0%, +4.0%, -3.6%, +2.1%
    (+7.1%, +11.2%, +0.4%, +7.9% before FMS's norms were priced as their PyTorch ops): the printed
    400 / 800 Gb/s per node costs the model 5-6% of the step."""
    cases = [c for c in fms_fsdp(_rows()) if "full AC" in c.label]
    for c in cases:
        c.scenario["hardware"] = "dgx-a100" if "A100" in c.label else "dgx-h100"
    errors = [r.error for r in scoring.run_cases(cases)]
    assert errors == pytest.approx([0.020, 0.040, -0.036, 0.021], abs=0.006)


@pytest.mark.slow
def test_compiled_rows_by_the_blocks_checkpointed():
    """Findings: the torch.compile table's 34B / 70B rows ("Selective AC", n not printed), built with
    fused elementwise kernels: with every block checkpointed -11.5%, -8.4%, -12.2%, -5.8%, with every
    second one -0.2%, +3.1%, -0.9%, +6.1% (not scored: the table's HFU / MFU says every block on A100,
    about every second one on H100, from the same scripts, so its checkpointing is not determined)."""
    from simulator.e2e_validation.fms_fsdp_sources import fms_fsdp_case

    rows = [r for r in _rows() if r["source_id"] == "fms-fsdp-2024-05" and r["metric"] == "tokens_per_s_per_gpu"
            and r["model_name"] in ("Llama 2 34B", "Llama 2 70B")]
    every_second = [fms_fsdp_case(r) for r in rows]
    every = [fms_fsdp_case(r) for r in rows]
    for c in every_second + every:  # compiled blocks: Inductor fuses the elementwise ops, the norms' too
        c.scenario["training"]["fused_kernels"] = True
        del c.scenario["training"]["norm_kernel"]
    for c in every:
        del c.scenario["training"]["recompute_method"], c.scenario["training"]["recompute_num_layers"]
    errors = [r.error for r in scoring.run_cases(every)]
    assert errors == pytest.approx([-0.115, -0.084, -0.122, -0.058], abs=0.006)
    errors = [r.error for r in scoring.run_cases(every_second)]
    assert errors == pytest.approx([-0.002, 0.031, -0.009, 0.061], abs=0.006)

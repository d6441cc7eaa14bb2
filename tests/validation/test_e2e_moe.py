"""The Mixture-of-Experts rows of the e2e validation: the printed plans are rebuilt exactly, and
the errors against docs/validation-e2e.md are checked in test_e2e_accuracy.py (after its all-rows test)."""

from __future__ import annotations

import pytest

from simulator.e2e_validation import sources
from simulator.e2e_validation.moe_sources import (
    automodel_virtual_stages,
    front_loaded_stages,
    pp_layout,
    stages_with_embedding_and_loss,
)


def _moe_cases(source: str = "automodel_moe") -> list[sources.Case]:
    return [c for c in sources.cases() if c.source == source]


def test_automodel_moe_rows_build_the_printed_plans():
    """Nine rows, 8 to 1,024 GPUs (Nemotron-3 Nano's, Super's and Ultra's hybrids included), EP as
    printed (or the config's for GPT-OSS), GPUs = PP x DP, FSDP2 with DeepEP and the balanced gate."""
    cs = _moe_cases()
    assert [c.scenario["model"]["preset"] for c in cs] == [
        "nemotron-3-super-120b-a12b", "nemotron-3-nano-30b-a3b", "nemotron-3-ultra-550b-a55b", "deepseek-v3",
        "deepseek-v3", "kimi-k2", "qwen3-30b-a3b", "gpt-oss-20b", "gpt-oss-120b"]
    assert [c.scenario["parallel"]["ep"] for c in cs] == [64, 8, 64, 64, 64, 32, 8, 8, 64]
    assert [c.n_gpus for c in cs] == [64, 8, 128, 1024, 256, 256, 8, 8, 64]
    for c in cs[:2]:  # the Nemotron-3 configs: activation checkpointing, attention through PyTorch SDPA
        assert c.scenario["training"]["recompute"] == "full" and c.scenario["training"]["attention"] == "flash2"
    assert "mtp_layers" not in cs[0].scenario["model"]  # AutoModel built no MTP block then
    for c in cs:
        p, t = c.scenario["parallel"], c.scenario["training"]
        assert p["zero"] == 3 and p["zero3_impl"] == "fsdp2" and p["moe_dispatcher"] == "deepep"
        assert t["moe_routing"] == "round_robin" and t["dtype"] == "bf16"
        assert t["dropout"] is False  # AutoModel's models: no hidden dropout, the HF configs' attention_dropout 0
        # grouped_gemm's gmm has no bias epilogue: GPT-OSS's expert biases are added per local expert
        assert t.get("moe_expert_bias", "none") == ("per_expert_fc1_fc2" if "gpt-oss" in c.label.lower() else "none")
        assert not sources.is_fit_case(c)
        if p.get("vp", 1) > 1:
            assert len(p["pp_layers"]) == p["pp"] * p["vp"] and sum(p["pp_layers"]) == 61
    # GA pipeline passes per step where the table pipelines: DeepSeek-V3 GA=4 (1,024 GPUs) and 1 (256),
    # Kimi-K2 GA=2
    assert [c.scenario["parallel"].get("pp_flushes", 1) for c in cs] == [1, 1, 1, 4, 1, 2, 1, 1, 1]
    # MoEFSDPSyncMixin under PP, and Nano's enable_fsdp_optimizations without PP: FSDP2 reduce-scatters
    # and reshards after backward only in the optimizer step's last micro-batch; Super's outer model is an
    # FSDP module, so get_sync_ctx's set_requires_gradient_sync(False) defers its ReduceScatters (Ultra's
    # config sets wrap_outer_model: false)
    assert [c.scenario["parallel"].get("fsdp_grad_sync", "microbatch") for c in cs] == (
        ["no_sync", "optim_step", "microbatch"] + ["optim_step"] * 3 + ["microbatch"] * 3)
    # Nano's config has no distributed.moe section: MoEParallelizerConfig's reshard_after_forward false;
    # Super's and Ultra's set it true
    assert [c.scenario["parallel"]["fsdp_reshard_after_forward"] for c in cs[:3]] == [True, False, True]


def test_pp_layout():
    """Megatron-Core's layout strings: DeepSeek-V3's 26.04.01 recipe and a nested repeat."""
    assert pp_layout("Et*4|(t*4|)*14tmL") == ([4] * 15 + [1], 1)
    assert pp_layout("Et|(tt|)*2t*3mmL") == ([1, 2, 2, 3], 2)


def test_automodel_virtual_stages_and_split():
    """AutoModel's calculate_virtual_stages at the table's commit, ceil(61 / layers_per_stage) + 1
    rounded down to a multiple of PP: 32 at 2 per stage (VP 8 on PP 4, VP 4 on Kimi-K2's PP 8, as
    printed), 17 -> 16 at 4 per stage (VP 4 on PP 4); generate_hf_model_fqn_per_model_part puts the
    61 % stages extra layers on the first stages."""
    assert automodel_virtual_stages(61, 2, 4) == 32 and automodel_virtual_stages(61, 2, 8) == 32
    assert automodel_virtual_stages(61, 4, 4) == 16
    assert front_loaded_stages(61, 32) == (2,) * 29 + (1,) * 3
    assert front_loaded_stages(61, 16) == (4,) * 13 + (3,) * 3
    assert front_loaded_stages(8, 4) == (2, 2, 2, 2)


def test_automodel_pipelined_rows_run_their_configs_virtual_stages():
    """deepseek_v3_te_deepep_1024.yaml sets layers_per_stage 4 (the 256-GPU config and Kimi-K2's, 2):
    the 1,024-GPU DeepSeek-V3 row runs 16 virtual stages, VP 4, though the table prints VP 8."""
    piped = {(c.scenario["model"]["preset"], c.n_gpus): c.scenario["parallel"] for c in _moe_cases()
             if c.scenario["parallel"]["pp"] > 1}
    assert {k: (p["pp"], p["vp"]) for k, p in piped.items()} == {
        ("deepseek-v3", 1024): (4, 4), ("deepseek-v3", 256): (4, 8), ("kimi-k2", 256): (8, 4)}
    assert piped["deepseek-v3", 1024]["pp_layers"] == [4] * 13 + [3] * 3
    assert piped["deepseek-v3", 256]["pp_layers"] == piped["kimi-k2", 256]["pp_layers"] == [2] * 29 + [1] * 3


def test_megatron_bridge_moe_rows_build_the_printed_plans():
    """Sixteen rows of Megatron-Bridge 26.04.01, on the profile of the GPU the table names, with its
    precision, TP/PP/VP/EP and batches, and each recipe's dispatcher and A2A overlap: HybridEP (a
    DeepEP-style flex backend) for Qwen3-30B and Nemotron 3, DeepEP for DeepSeek-V3, alltoall
    elsewhere, combined 1F1B for the H100 Qwen3-235B run (512 micro-batches through 32 virtual
    stages) and DeepSeek-V3; DeepSeek-V3's recipe layout "Et*4|(t*4|)*14tmL": 4 layers on each of
    15 virtual stages, 1 and the MTP layer on the last; Nemotron 3 Super's two MTP depths through
    one repeated layer; the recipes' partial CUDA graphs; Nano on H100 recomputing its attention
    cores and whole MoE layers; the GB200 rows on trays of 4 GPUs, the 256-GPU jobs in the Slurm
    segments of 16 trays the performance scripts ask for, DeepSeek-V3's (PP 4, VP 4) layout the
    same 16 virtual stages as B200's (PP 8, VP 2)."""
    cs = _moe_cases("bridge_moe")
    got = [(c.scenario["model"]["preset"], c.scenario["hardware"], c.n_gpus, c.scenario["training"]["dtype"],
            c.scenario["training"].get("fp8_recipe"), c.scenario["parallel"]["ep"],
            c.scenario["parallel"]["moe_dispatcher"]) for c in cs]
    assert got == [("qwen3-30b-a3b", "dgx-h100", 16, "fp8", "current", 16, "deepep"),
                   ("qwen3-235b-a22b", "dgx-h100", 256, "fp8", "current", 32, "alltoall"),
                   ("gpt-oss-120b", "dgx-h100", 64, "bf16", None, 8, "alltoall"),
                   ("qwen3-30b-a3b", "dgx-b200", 8, "fp8", "mxfp8", 8, "deepep"),
                   ("qwen3-235b-a22b", "dgx-b200", 256, "fp8", "mxfp8", 8, "alltoall"),
                   ("gpt-oss-120b", "dgx-b200", 64, "bf16", None, 8, "alltoall"),
                   ("deepseek-v3", "dgx-b200", 256, "fp8", "mxfp8", 32, "deepep"),
                   ("nemotron-3-nano-30b-a3b", "dgx-b200", 8, "fp8", "mxfp8", 8, "deepep"),
                   ("nemotron-3-nano-30b-a3b", "dgx-h100", 16, "fp8", "current", 8, "deepep"),
                   ("nemotron-3-super-120b-a12b", "dgx-b200", 64, "fp8", "mxfp8", 64, "deepep"),
                   ("deepseek-v3", "gb200-nvl72", 256, "fp8", "mxfp8", 64, "deepep"),
                   ("gpt-oss-120b", "gb200-nvl72", 64, "bf16", None, 64, "alltoall"),
                   ("qwen3-30b-a3b", "gb200-nvl72", 8, "fp8", "mxfp8", 8, "deepep"),
                   ("qwen3-235b-a22b", "gb200-nvl72", 256, "fp8", "mxfp8", 32, "deepep"),
                   ("nemotron-3-nano-30b-a3b", "gb200-nvl72", 8, "fp8", "mxfp8", 8, "deepep"),
                   ("nemotron-3-super-120b-a12b", "gb200-nvl72", 64, "fp8", "mxfp8", 64, "deepep")]
    # GB200: trays of 4 GPUs; the 256-GPU jobs hold 16 trays of each rack (Slurm --segment 16)
    assert [(c.scenario["nodes"], c.scenario.get("nodes_per_nvlink_domain")) for c in cs[10:]] == [
        (64, 16), (16, None), (2, None), (64, 16), (2, None), (16, None)]
    # the H100 Qwen3-235B, DeepSeek-V3 on B200 and GPT-OSS on GB200 recipes set the A2A overlap
    assert [c.scenario["parallel"].get("overlap_moe_expert_parallel_comm", False) for c in cs] == [
        False, True, False, False, False, False, True, False, False, False, False, True, False, False, False, False]
    assert [c.scenario["model"].get("mtp_layers", 0) for c in cs] == [0] * 6 + [1, 0, 0, 2] + [1, 0, 0, 0, 0, 2]
    assert cs[9].scenario["model"]["mtp_repeated_layer"] and not cs[6].scenario["model"].get("mtp_repeated_layer")
    # the recipes' cuda_graph_scope (the B200 base configs' of Nemotron 3 Super: none)
    attn_router = ["attn", "moe_router", "moe_preprocess"]
    assert [c.scenario["training"].get("cuda_graph_scope", []) for c in cs] == [
        [], [], [], attn_router, [], [], attn_router, ["attn", "mamba", "moe_router", "moe_preprocess"], ["mamba"], [],
        attn_router, [], ["moe_router", "moe_preprocess"], attn_router, ["attn", "mamba", "moe_router", "moe_preprocess"],
        ["attn", "mamba", "moe_router", "moe_preprocess"]]
    # Super on GB200: TP 2 with sequence parallelism and no TP overlap (its recipe sets no comm_overlap)
    assert cs[15].scenario["parallel"]["tp"] == 2 and cs[15].scenario["parallel"].get("tp_overlap", "none") == "none"
    # Nano on H100: recompute_modules moe, layernorm, core_attn (recompute: selective), moe_act
    nano = cs[8].scenario["training"]
    assert nano["recompute"] == "selective" and sorted(nano["recompute_modules"]) == ["layernorm", "moe", "moe_act"]
    assert sorted(cs[9].scenario["training"]["recompute_modules"]) == ["layernorm", "moe_act"]
    for c in cs:
        p, t = c.scenario["parallel"], c.scenario["training"]
        assert p["zero"] == 1 and p["etp"] == 1 and not sources.is_fit_case(c)
        # the performance scripts' cross_entropy_fusion_impl "te" (overrides.py at 21d102f5e)
        assert t["cross_entropy"] == "fused"
        # HybridEP's kernels hold the performance scripts' moe_hybridep_num_sms = 32 SMs (overrides.py
        # at 21d102f5e, over the recipes' 16), but Nemotron 3 Nano's, whose config names the backend
        # after that override ran: the recipe's 16 (DeepEP's default: 20)
        sms = 16 if c.scenario["model"]["preset"].startswith("nemotron-3-nano") else 32
        assert p.get("moe_deepep_sms", 20) == (sms if p.get("moe_deepep_backend") == "hybridep" else 20)
        # tokens per step: the printed global batch of 4,096-token (Nemotron 3: 8,192-token) sequences
        preset = c.scenario["model"]["preset"]
        if preset.startswith("nemotron"):
            assert t["global_batch"] * c.scenario["model"]["seq_len"] == {8: 512, 16: 1024, 64: 512}[c.n_gpus] * 8192
        else:
            assert t["global_batch"] * c.scenario["model"]["seq_len"] == (4096 if preset == "deepseek-v3" else {
                8: 512, 16: 1024, 64: 1280, 256: 8192}[c.n_gpus]) * 4096
        if preset == "deepseek-v3":
            assert p["pp_layers"] == [4] * 15 + [1] and p["pp"] * p["vp"] == 16
        elif p.get("pp_layers"):  # Qwen3-235B: (94 + 2) / 8 stages on B200, / (8 x 3) on GB200, / (8 x 4) on H100
            assert p["pp_layers"] == {1: [11] + [12] * 6 + [11], 3: [3] + [4] * 22 + [3],
                                      4: [2] + [3] * 30 + [2]}[p.get("vp", 1)]
        vocab = c.scenario["model"]["vocab"]
        assert vocab % (128 * p["tp"]) == 0 and vocab - (128 * p["tp"]) < {"qwen3-30b-a3b": 151936,
            "qwen3-235b-a22b": 151936, "gpt-oss-120b": 201088, "deepseek-v3": 129280,
            "nemotron-3-nano-30b-a3b": 131072, "nemotron-3-super-120b-a12b": 131072}[preset] <= vocab


def test_megatron_bridge_blackwell_ultra_rows_build_the_printed_plans():
    """The twelve DGX B300 and GB300 NVL72 rows of the same table, on dgx-b300 (8 GPUs a node) and
    gb300-nvl72 (trays of 4; the 256-GPU jobs in Slurm segments of 16 trays), with the B300/GB300
    recipes' plans: micro-batches 2-8, HybridEP on 32 SMs (Nano 16) but GPT-OSS on GB300
    (alltoall), DeepSeek-V3 on B300 at PP 8 with the layout its recipe computes (8 layers a stage, 5
    and the MTP layer on the last), on GB300 at PP 2 x VP 8 with the config's "Et*4|(t*4|)*14tmL"."""
    cs = _moe_cases("bridge_moe_ultra")
    got = [(c.scenario["model"]["preset"], c.scenario["hardware"], c.n_gpus, c.scenario["training"]["dtype"],
            c.scenario["training"]["micro_batch"], c.scenario["parallel"]["ep"],
            c.scenario["parallel"]["moe_dispatcher"], c.scenario["parallel"].get("moe_deepep_sms")) for c in cs]
    b3, g3 = "dgx-b300", "gb300-nvl72"
    assert got == [("qwen3-30b-a3b", b3, 8, "fp8", 8, 8, "deepep", 32), ("qwen3-30b-a3b", g3, 8, "fp8", 8, 8, "deepep", 32),
                   ("qwen3-235b-a22b", b3, 256, "fp8", 2, 8, "deepep", 32),
                   ("qwen3-235b-a22b", g3, 256, "fp8", 2, 32, "deepep", 32),
                   ("gpt-oss-120b", b3, 64, "bf16", 4, 8, "deepep", 32), ("gpt-oss-120b", g3, 64, "bf16", 4, 64, "alltoall", None),
                   ("deepseek-v3", b3, 256, "fp8", 2, 8, "deepep", 32), ("deepseek-v3", g3, 256, "fp8", 2, 32, "deepep", 32),
                   ("nemotron-3-nano-30b-a3b", b3, 8, "fp8", 4, 8, "deepep", 16),
                   ("nemotron-3-nano-30b-a3b", g3, 8, "fp8", 4, 8, "deepep", 16),
                   ("nemotron-3-super-120b-a12b", b3, 64, "fp8", 1, 8, "deepep", 32),
                   ("nemotron-3-super-120b-a12b", g3, 64, "fp8", 1, 64, "deepep", 32)]
    assert all(c.scenario["training"].get("fp8_recipe") == ("mxfp8" if c.scenario["training"]["dtype"] == "fp8" else None)
               for c in cs)
    assert [(c.scenario["nodes"], c.scenario.get("nodes_per_nvlink_domain")) for c in cs if c.scenario["hardware"] == g3] \
        == [(2, None), (64, 16), (16, None), (64, 16), (2, None), (16, None)]
    dsv3_b300, dsv3_gb300 = cs[6].scenario["parallel"], cs[7].scenario["parallel"]
    assert dsv3_b300["pp_layers"] == [8] * 7 + [5] and cs[6].scenario["model"]["mtp_layers"] == 1
    assert dsv3_gb300["pp_layers"] == [4] * 15 + [1] and dsv3_gb300["pp"] * dsv3_gb300["vp"] == 16
    assert cs[3].scenario["parallel"]["pp_layers"] == [1] + [2] * 46 + [1]  # (94 + 2) / (4 x 12)
    assert not any(sources.is_fit_case(c) for c in cs)


def test_bridge_ep_overlap_pair_differs_only_in_the_overlap():
    """Megatron-Bridge's A/B of overlap_moe_expert_parallel_comm: two Qwen3-30B-A3B runs on 16 H100 in
    BF16 (TP1 PP1 EP16, micro-batch 1, global batch 1,024), HybridEP on the 32 SMs of the card's recipe,
    identical but for the combined-1F1B overlap, both held out."""
    off, on = _moe_cases("bridge_moe_overlap")
    assert (off.metric, off.measured, on.metric, on.measured) == ("step_time_s", 24.7138, "step_time_s", 20.99203)
    for c in (off, on):
        p, t = c.scenario["parallel"], c.scenario["training"]
        assert (c.scenario["model"]["preset"], c.scenario["hardware"], c.n_gpus) == ("qwen3-30b-a3b", "dgx-h100", 16)
        assert (p["tp"], p["pp"], p["ep"], p["etp"], p["moe_dispatcher"], p["moe_deepep_backend"]) == (
            1, 1, 16, 1, "deepep", "hybridep")
        assert p["moe_deepep_sms"] == 32 and t["dtype"] == "bf16" and "fp8_recipe" not in t
        assert t["cross_entropy"] == "fused"  # the recipe's cross_entropy_fusion_impl "te"
        assert (t["micro_batch"], t["global_batch"]) == (1, 1024) and not sources.is_fit_case(c)
    assert not off.scenario["parallel"].get("overlap_moe_expert_parallel_comm", False)
    assert on.scenario["parallel"]["overlap_moe_expert_parallel_comm"] is True
    strip = ({**off.scenario, "name": ""}, {**on.scenario, "name": ""})
    strip[1]["parallel"] = {k: v for k, v in strip[1]["parallel"].items() if k != "overlap_moe_expert_parallel_comm"}
    assert strip[0] == strip[1]


def test_bridge_ep_overlap_card_counts_megatron_flops():
    """The card's model TFLOP/s/GPU is Megatron-Core's num_floating_point_operations of the step over
    its time and 16 GPUs (23.006 GFLOP per token for Qwen3-30B-A3B at seq 4,096, as the 26.04.01
    table's 206 TFLOP/s at 8,960 tokens/s/GPU): the printed shape is the preset's."""
    from simulator.config.workload import Model
    from simulator.schedule.flops import megatron_flops_per_step

    flops = megatron_flops_per_step(Model.model_validate({"preset": "qwen3-30b-a3b"}), 1024)
    for step, tflops in ((24.7138, 244.039), (20.99203, 287.305)):
        assert flops / step / 16 / 1e12 == pytest.approx(tflops, rel=2e-4)
    assert 206e12 / 8960 == pytest.approx(flops / 1024 / 4096, rel=2e-3)


def test_stages_with_embedding_and_loss():
    """Megatron-Core's account_for_embedding/loss_in_pipeline_split: (94 + 2) / 32 = 3 per virtual
    stage, the first and last one fewer; (94 + 2) / 8 = 12."""
    assert stages_with_embedding_and_loss(94, 32) == (2,) + (3,) * 30 + (2,)
    assert stages_with_embedding_and_loss(94, 8) == (11,) + (12,) * 6 + (11,)
    with pytest.raises(ValueError):
        stages_with_embedding_and_loss(61, 8)


def test_automodel_dense_rows_run_no_dropout():
    """The dense AutoModel rows share the stack: Llama 3's HF config has attention_dropout 0.0 and
    AutoModel's Llama no hidden dropout."""
    cs = _moe_cases("automodel")
    assert cs and all(c.scenario["training"]["dropout"] is False for c in cs)

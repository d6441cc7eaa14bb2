"""Bundled hardware profiles: they load, their numbers agree with independent published
aggregates (HARDWARE.md), every number carries a source comment, and bad files fail clearly."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from simulator.config.hardware import PROFILE_DIR, available_profiles, load_profile
from simulator.errors import InputError

REQUIRED = {"dgx-a100", "dgx-h100", "dgx-h200", "dgx-b200", "mi300x",
            "abci-a100", "sophia-a100", "a100-pcie", "gh200-alps", "aws-p5"}


def test_required_profiles_are_bundled():
    assert REQUIRED <= set(available_profiles())


@pytest.mark.parametrize("name", available_profiles())
def test_profile_loads_and_is_sane(name):
    p = load_profile(name)
    assert p.name == name
    pts = p.gpu.gemm_efficiency
    # plateaus never exceed the best measured GEMM fraction of any GPU (A100 MAMF 86.9%, §1d)
    assert max(pt.efficiency for pt in pts) <= 0.87
    # efficiency rises with GEMM size
    assert all(b.efficiency >= a.efficiency for a, b in zip(pts, pts[1:]))
    if p.node.scale_up.nvls:
        assert p.node.scale_up.kind == "nvswitch" and p.gpu.arch in ("hopper", "blackwell")


@pytest.mark.parametrize("path", sorted(PROFILE_DIR.glob("*.yaml")), ids=lambda p: p.stem)
def test_every_number_has_a_source_comment(path: Path):
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if re.match(r"^\s*[A-Za-z_]+:\s*-?[0-9.]", line):
            assert "#" in line, f"{path.name}:{i}: number without a source comment: {line.strip()}"


def test_nvlink_numbers_agree_with_per_link_rates_and_aggregates():
    # NVLink per link per direction: NVLink3/4 25 GB/s, NVLink5 50 GB/s (HARDWARE.md §1c)
    for name, per_link in (("dgx-a100", 25), ("dgx-h100", 25), ("dgx-h200", 25), ("dgx-b200", 50)):
        su = load_profile(name).node.scale_up
        assert su.link_GBps == pytest.approx(su.links_per_gpu * per_link)
    # DGX B200: "14.4 TB/s aggregate" NVLink = 8 GPUs x 900 GB/s x 2 directions
    b = load_profile("dgx-b200")
    assert b.node.gpus * b.node.scale_up.link_GBps * 2 == pytest.approx(14_400)
    # DGX H100 scale-out: 8 x 400 Gb/s = 400 GB/s per node (ML, SB)
    h = load_profile("dgx-h100")
    assert h.node.nics.count * h.node.nics.Gbps / 8 == pytest.approx(400)
    # AWS p5: 32 x 100 Gb/s = 3200 Gb/s per node (CSV header)
    p5 = load_profile("aws-p5")
    assert p5.node.nics.count * p5.node.nics.Gbps == pytest.approx(3200)


def test_peak_flops_follow_the_clock_formulas():
    # ML: H100 1830e6*512*2*528/1e12 = 989.4 ; MI300X 2100e6*256*2*1216/1e12 = 1307.4
    assert load_profile("dgx-h100").gpu.bf16_TFLOPS == pytest.approx(1830e6 * 512 * 2 * 528 / 1e12, abs=0.1)
    assert load_profile("mi300x").gpu.bf16_TFLOPS == pytest.approx(2100e6 * 256 * 2 * 1216 / 1e12, abs=0.1)


def test_overlay_merges_onto_its_base(tmp_path):
    f = tmp_path / "faster-ib.yaml"
    f.write_text("base: dgx-h100\nname: faster-ib\nnode:\n  nics:\n    efficiency: 0.8\n")
    p, base = load_profile(str(f)), load_profile("dgx-h100")
    assert p.node.nics.efficiency == 0.8
    assert p.node.nics.Gbps == base.node.nics.Gbps
    assert p.gpu == base.gpu and p.node.scale_up == base.node.scale_up
    # the bundled overlays too: H200 keeps the H100 fabric, changes the memory
    h200 = load_profile("dgx-h200")
    assert h200.node.scale_up.link_GBps == base.node.scale_up.link_GBps
    assert (h200.gpu.hbm_GiB, h200.gpu.hbm_GBps) == (141, 4800)


def test_unknown_key_names_file_and_field(tmp_path):
    f = tmp_path / "typo.yaml"
    f.write_text("base: dgx-h100\ngpu:\n  hbm_GBPS: 3000\n")
    with pytest.raises(InputError) as err:
        load_profile(str(f))
    assert "typo.yaml" in str(err.value) and "gpu.hbm_GBPS" in str(err.value) and "unknown key" in str(err.value)
    # what was expected: the key of the gpu block it misspells (case aside) first
    assert "gpu.hbm_GBPS: unknown key; did you mean hbm_GBps" in str(err.value)


def test_wrong_type_names_file_and_field(tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text("base: dgx-h100\nnode:\n  gpus: eight\n")
    with pytest.raises(InputError) as err:
        load_profile(str(f))
    assert "bad.yaml" in str(err.value) and "node.gpus" in str(err.value)


def test_malformed_yaml_names_the_file(tmp_path):
    f = tmp_path / "broken.yaml"
    f.write_text("name: x\ngpu: [unclosed\n")
    with pytest.raises(InputError) as err:
        load_profile(str(f))
    assert "broken.yaml" in str(err.value) and "malformed YAML" in str(err.value)


def test_unknown_profile_lists_the_bundled_ones():
    with pytest.raises(InputError, match="dgx-h100"):
        load_profile("no-such-machine")


@pytest.mark.parametrize("name", available_profiles())
def test_attention_kernels_are_consistent_with_the_flashattention_papers(name):
    """Every profile prices the kernel its TE stack runs (default_attention); bwd is never faster
    than fwd; no kernel beats its paper's best: FA1 "25-40%" of A100 peak and FA2 "up to 73%"
    (arXiv:2307.08691), FA3 "up to 75%" of H100 (arXiv:2407.08608); each generation is slower
    than the next on the same GPU; on Hopper and later FA3/cuDNN-class kernels beat FA2, whose
    H100 utilisation the FA3 abstract puts at 35%."""
    g = load_profile(name).gpu
    assert g.default_attention in g.attention_efficiency
    for kernel, eff in g.attention_efficiency.items():
        assert eff.bwd <= eff.fwd <= {"flash1": 0.40, "flash2": 0.73, "flash3": 0.75}[kernel]
    if "flash1" in g.attention_efficiency:
        fa1, fa2 = g.attention_efficiency["flash1"], g.attention_efficiency["flash2"]
        assert fa1.fwd < fa2.fwd and fa1.bwd < fa2.bwd
    if g.arch in ("hopper", "blackwell"):
        assert g.default_attention == "flash3"
        fa2, fa3 = g.attention_efficiency["flash2"], g.attention_efficiency["flash3"]
        assert fa3.fwd > fa2.fwd and fa3.bwd > fa2.bwd
        if g.arch == "hopper":
            assert fa2.fwd == pytest.approx(0.35, abs=0.05)
    else:
        assert g.default_attention == "flash2" and "flash3" not in g.attention_efficiency


def test_apply_overlay_is_what_an_overlay_file_loads_to(tmp_path):
    """apply_overlay in memory and an overlay file (base: + the same fields) give one profile."""
    import yaml

    from simulator.config.hardware import apply_overlay

    over = {"gpu": {"kernel_launch_us": 7.5, "attention_efficiency": {"flash2": {"fwd": 0.5, "bwd": 0.4}}},
            "node": {"nics": {"efficiency": 0.7}}, "nccl": {"net_latency_us": 9.0}}
    path = tmp_path / "over.yaml"
    path.write_text(yaml.safe_dump({"base": "dgx-h100", **over}))
    assert apply_overlay(load_profile("dgx-h100"), over) == load_profile(str(path))
    with pytest.raises(InputError, match="my overlay"):
        apply_overlay(load_profile("dgx-h100"), {"node": {"nics": {"efficiency": 2.0}}}, source="my overlay")


def test_si_properties_are_the_named_units():
    """The profile's SI properties are what the YAML keys' units say (decimal GB/s; Gb/s bits)."""
    node = load_profile("dgx-h100").node
    assert node.nics.Bps == node.nics.Gbps * 1e9 / 8 and node.nics.GBps == node.nics.Gbps / 8
    assert node.scale_up.link_Bps == node.scale_up.link_GBps * 1e9 and node.pcie.Bps == node.pcie.GBps * 1e9


def test_nvls_needs_both_the_switch_and_a_hopper_class_gpu():
    """NVLink SHARP is in the third-generation NVSwitch (H100 systems on); an A100 NVSwitch has
    none, and a profile that claimed it on an older GPU would still not get it (NCCL, SM90+)."""
    assert [n for n in available_profiles() if load_profile(n).nvls_available] == \
        ["aws-p5", "dgx-b200", "dgx-b300", "dgx-h100", "dgx-h200", "fms-h100", "gb200-nvl72", "gb300-nvl72",
         "gcp-a3-mega"]
    from simulator.config.hardware import apply_overlay

    a100 = load_profile("dgx-a100")
    assert not apply_overlay(a100, {"node": {"scale_up": {"nvls": True}}}).nvls_available


@pytest.mark.parametrize("ultra, base", [("dgx-b300", "dgx-b200"), ("gb300-nvl72", "gb200-nvl72")])
def test_blackwell_ultra_profiles_are_their_blackwell_base_with_its_memory_and_nics(ultra, base):
    """B300 and GB300 keep B200's and GB200's dense BF16/FP8 rates (HARDWARE.md §1f), so their GEMM
    curve and FlashAttention-2 figures are the base's (the cuDNN pair gains the doubled exponentials:
    test_attention_bench.py); what changes is the memory (270 and 279 GB usable), ConnectX-8 at 800
    Gb/s per GPU and PCIe Gen6 (x16: 121 GB/s a direction, enough for the NIC)."""
    u, b = load_profile(ultra), load_profile(base)
    assert (u.gpu.bf16_TFLOPS, u.gpu.fp8_TFLOPS) == (b.gpu.bf16_TFLOPS, b.gpu.fp8_TFLOPS)
    assert u.gpu.gemm_efficiency == b.gpu.gemm_efficiency
    assert u.gpu.attention_efficiency["flash2"] == b.gpu.attention_efficiency["flash2"]
    assert u.gpu.attention_efficiency["flash3"].fwd > b.gpu.attention_efficiency["flash3"].fwd
    assert u.gpu.hbm_GiB == {"dgx-b300": 270, "gb300-nvl72": 279}[ultra] > b.gpu.hbm_GiB
    assert u.node.nics.count == u.node.gpus and u.node.nics.Gbps == 800
    assert u.node.pcie.GBps > u.node.nics.GBps  # the NIC is not held back by its PCIe link
    assert u.node.scale_up == b.node.scale_up
    # DGX B300 scale-out: 8 x 800 Gb/s = 800 GB/s per node (HARDWARE.md: ML)
    if ultra == "dgx-b300":
        assert u.node.nics.count * u.node.nics.Gbps / 8 == pytest.approx(800)

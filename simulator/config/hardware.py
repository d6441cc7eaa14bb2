"""Hardware profile schema: a GPU, a node (scale-up fabric, NICs, PCIe) and a scale-out fabric.

Profiles live in ``hardware_profiles/<name>.yaml``; a user can also pass a path to their own
file, or an overlay with ``base: <profile>`` that changes only some fields (what calibration
writes). Units are in the key names (``_GBps`` decimal GB/s per direction, ``_us``,
``_TFLOPS`` dense, ``_GiB``, ``_Gbps`` line rate); the models expose SI values through
properties (``hbm_Bps``, ``peak_flops``, ``ScaleUp.link_Bps``, ``PCIe.Bps``, ``NICs.Bps``) so
nothing downstream converts units. The one exception is named: ``NICs.GBps``, the decimal GB/s
NCCL's tuner tables are written in.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from simulator import units
from simulator.config.gdr import PathType
from simulator.config.limits import MAX_GPUS, MAX_GPUS_PER_NODE
from simulator.config.nccl_overrides import check_override, check_tuner_plugin, check_version
from simulator.config.strict import STRICT_CONFIG
from simulator.vocabulary import PREDICTED_OPS
from simulator.errors import InputError, quote
from simulator.files import bundled_dir

PROFILE_DIR = bundled_dir("hardware_profiles")

Transport = Literal["infiniband", "roce", "efa", "slingshot", "tcpxo", "omnipath"]
Arch = Literal["volta", "ampere", "hopper", "blackwell", "cdna3", "cdna4"]
Dtype = Literal["bf16", "fp16", "fp8", "fp32"]
# Fused attention kernel generations (training.attention). flash1: the FlashAttention-1 algorithm
# (arXiv:2205.14135), flash-attn 1.x and its Triton ports (llm-foundry's ``attn_impl: triton``),
# which the FA2 paper puts at 25-40% of A100 peak; flash2: FlashAttention-2 (arXiv:2307.08691),
# what PyTorch SDPA and flash-attn 2.x run; flash3: the Hopper-class fused kernels,
# FlashAttention-3 (arXiv:2407.08608) and cuDNN fused attention, which TransformerEngine picks on
# H100 and later. Unfused attention has no efficiency of its own (its GEMMs and softmax go
# through the GEMM curve and the HBM roofline).
AttentionKernel = Literal["flash1", "flash2", "flash3"]


class _Strict(BaseModel):
    model_config = STRICT_CONFIG


class GemmPoint(_Strict):
    """Achieved fraction of peak for a GEMM of this many FLOPs (2·m·n·k); log-interpolated."""

    flops: float = Field(gt=0)
    efficiency: float = Field(gt=0, le=1)


class AttentionEfficiency(_Strict):
    """Achieved fraction of the dense bf16/fp16 peak of one fused attention kernel, forward and
    backward, on the FLOPs actually computed (causal masking already removed), for a long
    kernel (16K tokens, head dim 128); shorter sequences and other head dimensions reach it
    times costs/attention_shape.py's shape factor."""

    fwd: float = Field(gt=0, le=1)
    bwd: float = Field(gt=0, le=1)
    # The kernels' fixed cost per CTA in key/value tiles on this GPU, where measured
    # (costs/attention_shape.py); None: the kernel generation's figure (TILING, read off Hopper).
    cta_overhead_tiles: float | None = Field(
        default=None, ge=0,
        description="the forward kernel's fixed cost per thread block in key/value tiles, where measured on this GPU "
                    "(costs/attention_shape.py); null: the kernel generation's figure, read off Hopper")
    bwd_cta_overhead_tiles: float | None = Field(
        default=None, ge=0,
        description="the backward kernel's fixed cost per thread block in key/value tiles, where measured on this GPU "
                    "(costs/attention_shape.py); null: the forward's")


# Slowdown of a compute kernel while a communication kernel of its rank runs beside it (the NCCL or
# RCCL kernel holds SMs/CUs, L2 and HBM bandwidth; replay/engine.py runs the kernel at 1/(1 + s) of
# its speed while communication is in flight, so a kernel of c seconds overlapped for o takes
# c + o·s/(1+s)). 0.189 is the one published measurement of that quantity found: Lee, Oh, Kim, Go,
# Park, Mahajan, "Characterizing Compute-Communication Overlap in GPU-Accelerated Distributed Deep
# Learning: Performance and Power Implications" (arXiv:2507.03114, 2025, abstract and §1): GPT and
# LLaMA training on 4 A100, 4 H100, MI250 and MI210, compute overlapped with communication runs on
# average 18.9% (at most 40.0%) longer than the same compute with no communication beside it. The
# paper's accessible text gives the average over the four GPUs, not one figure per GPU, so every
# profile takes it; B200, GB200, MI300X and MI355X have no measurement and carry it over.
# Searched (papers, docs, issue threads) and found no per-GPU or per-kernel figure to use instead:
# T3 (Pati et al., ASPLOS 2024, arXiv:2401.16677), Flux (arXiv:2406.06858), Domino
# (arXiv:2409.15241), FlashOverlap (arXiv:2504.19519), NanoFlow, Centauri, TransformerEngine
# userbuffers and PyTorch async-TP name SM and HBM contention as the cost of overlap but give no
# GEMM-beside-NCCL time in the text read; Agrawal, Aga, Pati, Islam (AMD, arXiv:2412.14335),
# GEMMs beside RCCL collectives on MI300X, report that concurrent runs realise 21% of the ideal
# speedup on average (42% with CU partitioning), compute and communication slowing each other,
# which does not separate into a compute slowdown. Single kernels in issue threads run far slower
# (NVIDIA/nccl#1428, A100 GPT training: a GEMM 1.18 -> 2.08 ms and an attention kernel 0.18 ->
# 0.33 ms beside an AllGather, put down to HBM traffic; an NVIDIA forum report of a one-wave
# 132-CTA H100 GEMM nearly doubling beside a 24-block AllGather, wave quantization): single kernels
# beyond the study's 40% maximum, not an average over a run. The SM share alone is of the same order:
# a GEMM that loses k of the GPU's SMs to a collective's k channels runs k/(SMs - k) longer, 16-24
# of H100's 132 SMs 0.14-0.22. The model does not price that share per collective (the engine holds
# one rate per rank, and no source measured the slowdown against channels or SMs).
OVERLAP_SLOWDOWN = 0.189

# GPU microseconds between back-to-back kernels of one stream while the host is ahead of it, on
# top of what the cost model prices the kernel itself (a memory-bound kernel's ramp, a GEMM's
# fixed cost). Measured on H200 (data/kernels/h200_launch_gap.csv, benchmarks/measure_reference_kernels.py):
# a chain of 200 tiny torch.mul kernels queued behind long GEMMs takes 1.79 us per kernel, of which
# the model prices 0.6 (costs.memory_bound.RAMP_US) as the kernel: 1.2 us. The same chains replayed
# from a CUDA graph take 0.70-1.26 us less per kernel (1.79 -> 1.10 for the mul, 3.81 -> 2.75 and
# 6.87 -> 5.61 for 256^3 and 1024^3 bf16 GEMMs): the eager stream's own gap, of the same size.
# Every other GPU takes it over (no measurement of theirs here). It is not the host's cost of a
# launch (``kernel_launch_us``), which bounds a step only where the host falls behind
# (costs.host), a single-process `-g` sweep, or a timing of one call.
KERNEL_GAP_US = 1.2
# What the same measurement saves per kernel when the chain is replayed from a CUDA graph: the
# smallest of its three chains' figures (the mul chain's 1.79 -> 1.10 us; 1.05 and 1.26 us for the
# GEMMs), so a captured kernel follows the one before it after kernel_gap_us - 0.7 (costs/compute.py).
CUDA_GRAPH_GAP_SAVING_US = 0.7


def _default_attention_efficiency() -> dict[AttentionKernel, AttentionEfficiency]:
    # The single pair every profile had before kernels were told apart: (assumed) defaults.
    return {"flash2": AttentionEfficiency(fwd=0.6, bwd=0.45), "flash3": AttentionEfficiency(fwd=0.6, bwd=0.45)}


class GPU(_Strict):
    name: str
    arch: Arch
    sms: int = Field(gt=0)
    bf16_TFLOPS: float = Field(gt=0)
    fp16_TFLOPS: float = Field(gt=0)
    fp8_TFLOPS: float | None = Field(default=None, gt=0)  # None: no fp8 tensor cores (A100)
    fp32_TFLOPS: float = Field(gt=0)
    hbm_GiB: float = Field(gt=0)
    hbm_GBps: float = Field(gt=0)
    hbm_efficiency: float = Field(default=0.9, gt=0, le=1)
    # Size-dependent GEMM efficiency, sorted by flops; beyond the ends the end value holds. GEMMs
    # with a known shape (every GEMM a schedule builds) read only its last point, the plateau of a
    # large square GEMM, and costs/gemm_shape.py spreads it over m, n, k (tiles and waves on `sms`).
    gemm_efficiency: list[GemmPoint] = Field(min_length=1)
    fp8_gemm_efficiency_scale: float = Field(default=1.0, gt=0, le=1.5)  # fp8 curve = bf16 curve × this
    # Per attention-kernel generation: the kernels this GPU runs and how fast (a kernel missing
    # here, e.g. flash3 on A100, is an input error when a scenario asks for it).
    attention_efficiency: dict[AttentionKernel, AttentionEfficiency] = Field(
        default_factory=_default_attention_efficiency, min_length=1)
    # The kernel a current Megatron-Core/TransformerEngine stack runs on this GPU (what
    # training.attention: auto means). None: flash3 on hopper/blackwell, flash2 otherwise.
    default_attention: AttentionKernel | None = None
    # Fraction by which compute slows while a collective runs beside it (SM, L2 and HBM
    # contention): OVERLAP_SLOWDOWN, measured (arXiv:2507.03114; see there).
    overlap_slowdown: float = Field(default=OVERLAP_SLOWDOWN, ge=0, lt=1)
    # The host's cost to launch one kernel (cudaLaunchKernel and the stack above it, assumed): what
    # one host thread driving several GPUs pays per GPU (nccl-tests `-g`), what host loops of
    # launches cost (DeepSpeed 2021's per-rank copies) and what a kernel timed per call waits for.
    kernel_launch_us: float = Field(default=4.0, ge=0, description=(
        "the host's cost to launch one kernel, microseconds: per GPU in a sweep of one process driving "
        "several (`-g`), in host loops of launches, a kernel timed alone"))
    # GPU time between back-to-back kernels of a stream the host keeps fed: KERNEL_GAP_US.
    kernel_gap_us: float = Field(default=KERNEL_GAP_US, ge=0, description=(
        "the GPU's gap between back-to-back kernels of a stream the host keeps fed, microseconds "
        "(measured on H200), added to every kernel of a step"))
    # Device memory the CUDA context takes outside PyTorch's allocator (module images of the
    # CUDA runtime, cuBLAS, cuDNN and NCCL kernels, loaded lazily; simulator/schedule/memory.py).
    cuda_context_GiB: float = Field(default=0.5, ge=0)

    @field_validator("gemm_efficiency")
    @classmethod
    def _sorted(cls, pts: list[GemmPoint]) -> list[GemmPoint]:
        if any(b.flops <= a.flops for a, b in zip(pts, pts[1:])):
            raise ValueError("points must be sorted by strictly increasing flops")
        return pts

    @model_validator(mode="after")
    def _attention_default(self) -> "GPU":
        if self.default_attention is None:
            object.__setattr__(self, "default_attention", self.default_kernel)
        if self.default_attention not in self.attention_efficiency:
            raise ValueError(f"default_attention: {self.default_attention!r} has no entry in attention_efficiency "
                             f"(expected one of {', '.join(self.attention_efficiency)})")
        return self

    @property
    def default_kernel(self) -> AttentionKernel:
        """The fused attention kernel ``auto`` runs: ``default_attention``, else flash3 on
        hopper/blackwell and flash2 before."""
        if self.default_attention is not None:
            return self.default_attention
        return "flash3" if self.arch in ("hopper", "blackwell") else "flash2"

    def resolve_attention(self, requested: str) -> str:
        """The kernel a scenario's ``training.attention`` runs on this GPU: ``auto`` becomes
        :attr:`default_attention`; ``unfused`` and the kernels of the profile pass through."""
        if requested == "auto":
            return self.default_kernel
        if requested != "unfused" and requested not in self.attention_efficiency:
            raise InputError(
                f"{self.name} has no {requested} attention kernel in its profile; expected one of "
                f"auto, unfused, {', '.join(self.attention_efficiency)}", field="training.attention")
        return requested

    def attention_cta_overhead(self, kernel: str, backward: bool) -> float | None:
        """The per-CTA fixed cost of ``kernel``'s forward or backward on this GPU (``None``: the
        kernel generation's own); a backward the profile does not give takes the forward's."""
        eff = self.attention_efficiency.get(kernel or self.default_kernel)  # type: ignore[call-overload]
        if eff is None:
            return None
        if backward and eff.bwd_cta_overhead_tiles is not None:
            return eff.bwd_cta_overhead_tiles
        return eff.cta_overhead_tiles

    def attention_fraction(self, kernel: str, backward: bool) -> float:
        """Fraction of peak of a fused attention kernel (``""``: the default kernel)."""
        name = kernel or self.default_kernel
        eff = next((e for k, e in self.attention_efficiency.items() if k == name), None)
        if eff is None:
            raise InputError(f"{self.name} has no {kernel} attention kernel in its profile",
                             field="gpu.attention_efficiency")
        return eff.bwd if backward else eff.fwd

    def peak_flops(self, dtype: str) -> float:
        """Dense peak in FLOP/s for a GEMM dtype (SI)."""
        table = {"bf16": self.bf16_TFLOPS, "fp16": self.fp16_TFLOPS, "fp8": self.fp8_TFLOPS, "fp32": self.fp32_TFLOPS}
        value = table[dtype]
        if value is None:
            raise InputError(f"{self.name} has no {dtype} tensor cores", field="training.dtype")
        return value * units.TFLOPS

    @property
    def hbm_bytes(self) -> float:
        return self.hbm_GiB * units.GiB

    @property
    def cuda_context_bytes(self) -> float:
        return self.cuda_context_GiB * units.GiB

    @property
    def hbm_Bps(self) -> float:
        return units.GBps(self.hbm_GBps)


class ScaleUp(_Strict):
    """The GPU-to-GPU fabric inside a node.

    kind: nvswitch (every GPU has links to a set of switches; any pair at full per-GPU bandwidth),
    mesh (xGMI: a direct link to every other GPU, `link_GBps` per peer), pcie (through the host
    bridge), none (one GPU per node).

    domain_gpus: the GPUs one NVLink domain joins, when it spans nodes (multi-node NVLink,
    MNNVL): a GB200 NVL72 rack is 18 compute trays of 4 GPUs whose NVLinks all go to the rack's
    NVLink switch trays, so any two of its 72 GPUs talk over NVLink and NCCL treats the rack as one
    node (``NCCL_MNNVL_ENABLE``; the clique of ``ncclMnnvlCheck``). Consecutive nodes form a
    domain (nodes ``0 .. domain_gpus/gpus - 1`` the first). None: the node is the domain.
    """

    kind: Literal["nvswitch", "mesh", "pcie", "none"]
    link_GBps: float = Field(gt=0)  # per direction: per GPU into the switch (nvswitch) or per peer link (mesh)
    links_per_gpu: int = Field(default=1, gt=0)  # physical links, informational and for NCCL's per-link model
    latency_us: float = Field(ge=0)
    switches: int = Field(default=0, ge=0)
    nvls: bool = False  # in-switch reduction (NVLink SHARP), H100-class NVSwitch and later
    domain_gpus: int | None = Field(default=None, gt=0)  # GPUs of one NVLink domain spanning nodes (MNNVL)
    # Achievable fraction of link bandwidth for NCCL's copy kernels (documented constant, not fitted).
    efficiency: float = Field(default=0.8, gt=0, le=1)
    # What the switches' in-network reduction (NVLS) delivers per GPU, GB/s of reduced data counted
    # as a ReduceScatter's bus bytes ((k-1)/k of the buffer among k GPUs): an NVLS AllReduce reaches
    # twice it in busbw, whatever k (costs/nvls_reduce.py). None: the links alone bound NVLS.
    nvls_reduce_GBps: float | None = Field(default=None, gt=0)

    @property
    def link_Bps(self) -> float:
        """``link_GBps`` in bytes/s."""
        return units.GBps(self.link_GBps)


class PCIe(_Strict):
    gen: int = Field(ge=3, le=6)
    lanes: int = 16
    GBps: float = Field(gt=0)  # per direction
    latency_us: float = Field(default=1.0, ge=0)
    # Per direction, the CPU interconnect a PCIe path of type sys crosses (between sockets, or between
    # the NUMA domains of one socket): what a GPU's network traffic to a NIC on another NUMA domain
    # also goes through (hardware/topology.py). None: NCCL's own figure for the CPU (src/graph/topo.h:
    # AMD_BW 16, ARM_BW 6, SKL_QPI_BW 10 GB/s), the link NCCL's topology gives two CPU nodes.
    sys_GBps: float | None = Field(default=None, gt=0)
    # Per direction, what a GPU and a NIC exchange peer to peer through the CPU's host bridge (a GPU
    # whose path to its NIC is of type phb, with GPUDirect RDMA): the root complex forwards the NIC's
    # reads and writes of GPU memory below the GPU's own link rate (NCCL's maintainers, nccl#412: with
    # the NIC attached to the CPU "getting 16 GB/s is normal", 24 GB/s behind a PCIe switch). Such a
    # GPU's PCIe link carries its network traffic at this rate (hardware/topology.py). None: the link's.
    phb_p2p_GBps: float | None = Field(default=None, gt=0)

    @property
    def Bps(self) -> float:
        """``GBps`` (per direction) in bytes/s."""
        return units.GBps(self.GBps)


class NICs(_Strict):
    count: int = Field(ge=0)  # per node; rail i is served by NIC i
    Gbps: float = Field(gt=0)  # line rate per NIC
    latency_us: float = Field(ge=0)  # one-way NIC + software latency
    efficiency: float = Field(default=0.9, gt=0, le=1)  # achievable fraction of line rate (ib_write_bw)
    gpu_direct: bool = True
    # The scale-out transport: selects the deployed-fabric constants of costs/deployed.py (what
    # NCCL over this transport delivers on measured clusters, beyond the line rate).
    transport: Transport = "infiniband"
    # PCIe affinity, when a node has fewer NICs than GPUs and each NIC shares its PCIe host bridge
    # (switch or root port) with one GPU only: per NIC, in NCCL's device order, the local index of
    # that GPU (NCCL ncclTopoGetLocalGpu). None: NIC r serves the block of GPUs r*gpus/count..,
    # the first of which is its local GPU (the PCIe-switch layout of a DGX A100 or p4d).
    local_gpus: list[int] | None = None
    # The PCIe path from a GPU to the NIC it sends through, in NCCL's classes (topo.h): pix (one
    # PCIe switch), pxb (several switches, not the CPU), p2c (a Grace superchip's GPU over C2C to its
    # CPU, then the CPU's PCIe: NCCL types it PHB before 2.27, P2C from 2.27; config/gdr.py), phb
    # (through the CPU's host bridge), sys (across CPU sockets). NCCL runs LL128 across nodes only up
    # to PXB (tuning.cc: "typeInter <= PATH_PXB"; Hopper and later up to PXN, and from 2.27 up to P2C,
    # still closer than PHB): its 128-byte stores are not known to arrive whole through a host bridge.
    gpu_path: PathType = "pxb"
    # Per local GPU, its path to the NIC it sends through (HardwareProfile.gpu_nics), where the GPUs
    # differ (ALCF Polaris: two GPUs beside a NIC, two a NUMA domain away); None: gpu_path for all.
    gpu_paths: list[PathType] | None = None
    # NCCL_NET_GDR_LEVEL as deployed: GPUDirect RDMA for a GPU whose path to its NIC is no farther
    # (config/gdr.py); None: NCCL's default, PXB.
    gdr_level: Literal["pix", "pxb", "phb", "sys"] | None = None
    # Slingshot only: the libfabric CXI provider's rendezvous protocol (FI_CXI_RDZV_PROTO). With
    # alt_read every rendezvous message (above FI_CXI_RDZV_THRESHOLD + FI_CXI_RDZV_GET_MIN, 4 KiB)
    # is pulled by a restricted Get that the target's software issues, and completes at the source
    # only on a done-notify message back (prov/cxi cxip_msg_hpc.c cxip_rdzv_done_notify): a host
    # cost per NCCL network message (costs/transports.py, costs/net_messages.py).
    rdzv_proto: Literal["default", "alt_read"] = "default"
    # Network ports per NIC, ``Gbps`` being their sum (a dual-port ConnectX-6 Dx of 2 x 100 Gb/s:
    # ports 2, Gbps 200). The links are the NIC's either way; what changes is what NCCL's graph
    # sees: before 2.20 one network device per port, from 2.20 one per NIC (nccl_graph.net_devices).
    ports: int = Field(default=1, ge=1)

    @property
    def Bps(self) -> float:
        """Line rate of one NIC per direction in bytes/s (``Gbps`` is bits)."""
        return units.Gbps(self.Gbps)

    @property
    def GBps(self) -> float:
        """Line rate of one NIC per direction in decimal GB/s: the unit of NCCL's tuner tables
        (costs/nccl_graph.py compares it with NCCL's speed lists)."""
        return self.Gbps / 8


class Node(_Strict):
    gpus: int = Field(gt=0)
    scale_up: ScaleUp
    pcie: PCIe
    nics: NICs
    cpu_vendor: Literal["intel", "amd", "arm"] = "intel"
    # The host CPU's time for the framework's work relative to the host the constants of
    # costs/host.py were timed on (1: a DGX H100's Xeon 8480C; > 1 slower): it scales every host
    # cost of a step, each op's issue and the host ops whose duration is CPU work (ComputeOp kind
    # "host": DeepSpeed's 2021 fetch loop, the optimizer's host reads). Where a profile sets it
    # and why: costs/host.py.
    host_time_scale: float = Field(default=1.0, gt=0)
    # The GPUs of the physical board when a run uses only its first ``gpus`` (a scenario's
    # ``gpus_per_node``, config/node_subset.py); None: the board is ``gpus``. The switch
    # efficiencies were measured on the whole board, which costs/ring_work.py scales from.
    board_gpus: int | None = Field(default=None, gt=0)

    @property
    def physical_gpus(self) -> int:
        """GPUs on the physical node (``board_gpus``, else ``gpus``)."""
        return self.board_gpus if self.board_gpus is not None else self.gpus


class ScaleOut(_Strict):
    """Rail-optimized fat tree: one leaf per rail per scalable unit, spines above.

    Nodes in one scalable unit reach each other on the same rail through one leaf; other
    traffic crosses a spine. `oversubscription` = leaf downlink bandwidth / uplink bandwidth.
    fat_tree: one leaf per unit for every rail. dragonfly (HPE Slingshot, Kim et al. 2008): a
    unit is a group whose switches reach each other directly (one logical switch per group
    here), and every pair of groups is joined by global links carrying the group's injection
    bandwidth / oversubscription spread over the other groups; routes are the fabric graph's
    minimal paths (hardware/route_tables.py), with no spines. Minimal routing only: Slingshot's
    adaptive non-minimal routing (through a third group) is not modelled, so traffic between one
    pair of groups is bounded by their own global links (gh200-alps keeps fat_tree for that).
    """

    kind: Literal["rail_fat_tree", "fat_tree", "dragonfly", "none"] = "rail_fat_tree"
    nodes_per_unit: int = Field(default=32, gt=0)
    spines: int = Field(default=4, gt=0)
    oversubscription: float = Field(default=1.0, ge=1.0)
    switch_latency_us: float = Field(default=0.6, ge=0)  # per switch hop (port to port)
    cable_latency_us: float = Field(default=0.05, ge=0)


# The size bands of a collective's prediction interval (simulator/report/intervals.py): latency-bound,
# transition, bandwidth-bound (nccl-tests size_bytes).
SIZE_BANDS = ((64 * 1024, "< 64 KiB"), (1024 * 1024, "64 KiB-1 MiB"), (math.inf, ">= 1 MiB"))
SCOPES = ("one node", "across nodes")  # over the scale-up fabric, or over the scale-out network
COLLECTIVE_CLASSES = tuple(f"{scope}, {label}" for scope in SCOPES for _, label in SIZE_BANDS)
# A calibrated profile's residual bands are kept per collective too ("allgather, one node, >= 1 MiB"):
# a fit of rings says nothing about how well it predicts an All-to-All (report/intervals.py).
OP_CLASSES = tuple(f"{op}, {cls}" for op in PREDICTED_OPS for cls in COLLECTIVE_CLASSES)


class Uncertainty(_Strict):
    """What ``clustersim calibrate`` records of its collective fit: per class (collective, scope
    and size band, e.g. ``allreduce, across nodes, >= 1 MiB``), the 10th and 90th percentiles of
    the fit's residuals ln(predicted busbw / measured busbw) over the rows it was fitted on, each
    sweep weighing the same, and how many rows. ``clustersim collective`` reads them as the 80%
    interval of a calibrated profile for those classes, and the leave-one-system-out band for any
    other (simulator/report/intervals.py). Keys without the collective (``across nodes, >= 1
    MiB``, as overlays written before the per-collective bands have them) apply to every collective.

    ``fitted_ranks`` records, per scope (``one node``, ``across nodes``), the smallest and largest
    communicator (ranks) the fit measured there. The residuals describe the fit at those scales
    only: a prediction outside that range takes the wider of the residual band and the
    leave-one-system-out band of its class. Absent (overlays written before it), the residual
    band applies at every scale."""

    busbw_log_residual: dict[str, list[float]] = Field(default_factory=dict)
    rows: dict[str, int] = Field(default_factory=dict)
    fitted_ranks: dict[str, list[int]] = Field(default_factory=dict)

    @field_validator("fitted_ranks")
    @classmethod
    def _ranges(cls, value: dict[str, list[int]]) -> dict[str, list[int]]:
        for key, pair in value.items():
            if key not in SCOPES:
                raise ValueError(f"{key!r}: expected a scope, one of {', '.join(SCOPES)}")
            if len(pair) != 2:
                raise ValueError(f"{key}: expected [smallest, largest] ranks, got {len(pair)} numbers")
            lo, hi = pair
            if not 1 <= lo <= hi:
                raise ValueError(f"{key}: expected [smallest, largest] ranks with 1 <= smallest <= largest, "
                                 f"got [{lo}, {hi}]")
        return value

    @field_validator("busbw_log_residual")
    @classmethod
    def _bands(cls, value: dict[str, list[float]]) -> dict[str, list[float]]:
        for key, pair in value.items():
            if key not in OP_CLASSES and key not in COLLECTIVE_CLASSES:
                raise ValueError(f"{key!r}: expected '<collective>, <scope>, <size band>' with a collective of "
                                 f"{', '.join(PREDICTED_OPS)} and a class of {', '.join(COLLECTIVE_CLASSES)}")
            if len(pair) != 2:
                raise ValueError(f"{key}: expected [q10, q90], got {len(pair)} numbers")
            lo, hi = pair
            if not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
                raise ValueError(f"{key}: expected [q10, q90] with q10 <= q90, got [{lo}, {hi}]")
        return value


# NCCL's bandwidth of the link between two CPU (NUMA) nodes of its topology, GB/s (src/graph/topo.h
# v2.21.5-1: AMD_BW 16.0, ARM_BW 6.0, SKL_QPI_BW 10.0 for an Intel Skylake-or-later socket).
NCCL_SYS_LINK_GBPS: dict[str, float] = {"amd": 16.0, "arm": 6.0, "intel": 10.0}


class HardwareProfile(_Strict):
    name: str
    description: str = ""
    gpu: GPU
    node: Node
    scale_out: ScaleOut = ScaleOut()
    # Optional collective-model values keyed as costs/nccl_constants.OVERRIDE_KEYS lists them (what
    # `clustersim calibrate` writes): NCCL's latency tables and caps (NCCL-COST-MODEL.md) and the
    # calibration knobs. They time the collectives; NCCL's choice of algorithm and protocol keeps
    # its built-in tables (nccl_tuner.selection_context), except for the net plugin's net_latency_us.
    # ``version`` ("2.23.4", a string) names the NCCL release whose tables those are
    # (costs/nccl_versions.py); absent: the newest encoded (2.30.7). ``tuner_plugin``
    # ("aws-ofi-nccl-1.16:p5.48xlarge", a string) names a tuner plugin the runs load, whose choice of
    # algorithm and protocol replaces NCCL's where it has one (costs/aws_ofi_tuner.py).
    nccl: dict[str, float | str] = Field(default_factory=dict)
    provenance: str = ""
    uncertainty: Uncertainty | None = None  # written by `clustersim calibrate` with a collective fit

    @field_validator("nccl", mode="before")
    @classmethod
    def _nccl_keys(cls, overrides: Any) -> Any:
        if not isinstance(overrides, dict):
            return overrides  # pydantic names the type it expected
        out: dict[str, float | str] = {}
        for key, value in overrides.items():
            if key == "version":
                problem = check_version(value)
            elif key == "tuner_plugin":
                problem = check_tuner_plugin(value)
            else:
                try:
                    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                        raise ValueError
                    value = float(value)
                except ValueError:
                    raise ValueError(f"{key}: expected a number, got {value!r}") from None
                problem = check_override(key, value)
            if problem:
                raise ValueError(f"{key}: {problem}")
            out[key] = value
        return out

    @property
    def nccl_overrides(self) -> dict[str, float]:
        """The numeric ``nccl:`` values (every key but ``version`` and ``tuner_plugin``)."""
        return {k: float(v) for k, v in self.nccl.items() if k not in ("version", "tuner_plugin")}

    @property
    def nccl_version(self) -> str | None:
        """``nccl.version``: the NCCL release the tuner's tables are taken from (None: newest)."""
        v = self.nccl.get("version")
        return v if isinstance(v, str) else None

    @property
    def nccl_tuner_plugin(self) -> str | None:
        """``nccl.tuner_plugin``: the tuner plugin the runs load (None: NCCL's own tuner chooses)."""
        v = self.nccl.get("tuner_plugin")
        return v.strip() if isinstance(v, str) else None

    @property
    def collective_library(self) -> str:
        """The collective library the GPUs run: RCCL on AMD GPUs (CDNA), NCCL otherwise. Its tuner
        chooses the algorithm and protocol (costs/rccl_tuner.py) and its systems have their own
        deployed constants (costs/deployed.py)."""
        return "rccl" if self.gpu.arch.startswith("cdna") else "nccl"

    @model_validator(mode="after")
    def _consistent(self) -> "HardwareProfile":
        su = self.node.scale_up
        if su.nvls and su.kind != "nvswitch":
            raise ValueError("node.scale_up.nvls: in-switch reduction needs kind: nvswitch")
        if su.domain_gpus is not None and su.domain_gpus != self.node.gpus:
            if su.kind != "nvswitch":
                raise ValueError(f"node.scale_up.domain_gpus: an NVLink domain spanning nodes needs kind: nvswitch, "
                                 f"not {su.kind}")
            if su.domain_gpus % self.node.gpus:
                raise ValueError(f"node.scale_up.domain_gpus: {su.domain_gpus} is not a whole number of nodes of "
                                 f"{self.node.gpus} GPUs")
        # counts the topology builds one by one: refuse what no machine has before allocating
        for path, value, limit in (("node.gpus", self.node.gpus, MAX_GPUS_PER_NODE),
                                   ("node.scale_up.switches", su.switches, MAX_GPUS_PER_NODE),
                                   ("node.scale_up.domain_gpus", su.domain_gpus or 0, MAX_GPUS_PER_NODE),
                                   ("node.scale_up.links_per_gpu", su.links_per_gpu, MAX_GPUS_PER_NODE),
                                   ("node.nics.count", self.node.nics.count, MAX_GPUS_PER_NODE),
                                   ("scale_out.spines", self.scale_out.spines, MAX_GPUS_PER_NODE),
                                   ("scale_out.nodes_per_unit", self.scale_out.nodes_per_unit, MAX_GPUS)):
            if value > limit:
                raise ValueError(f"{path}: {value:,} is more than clustersim models ({limit:,}; the largest "
                                 "NVLink domain has 72 GPUs): the topology is built element by element")
        if len(self.gpu.gemm_efficiency) > 10_000:
            raise ValueError(f"gpu.gemm_efficiency: {len(self.gpu.gemm_efficiency):,} points; at most 10,000")
        paths = self.node.nics.gpu_paths
        if paths is not None and len(paths) != self.node.gpus:
            raise ValueError(f"node.nics.gpu_paths: expected one path per GPU ({self.node.gpus}), got {len(paths)}")
        local = self.node.nics.local_gpus
        if local is not None:
            nics, gpus = self.node.nics.count, self.node.gpus
            if len(local) != nics or nics > gpus:
                raise ValueError(f"node.nics.local_gpus: expected one local GPU per NIC ({nics}) on a node with at "
                                 f"most as many NICs as GPUs ({gpus}), got {len(local)}")
            if len(set(local)) != len(local) or not all(0 <= g < gpus for g in local):
                raise ValueError(f"node.nics.local_gpus: expected distinct GPU indices 0..{gpus - 1}, got {local}")
        return self

    @property
    def nic_local_gpus(self) -> tuple[int, ...]:
        """Per NIC of a node, the local GPU that shares its PCIe host bridge (NCCL's
        ``ncclTopoGetLocalGpu``): where a ring channel entering through that NIC starts and one
        leaving through it ends. ``node.nics.local_gpus``, else the first GPU of the NIC's block
        (NIC r serves GPUs r*gpus/count ..); with more NICs than GPUs, GPU r's aggregated NIC."""
        nics, gpus = self.node.nics.count, self.node.gpus
        if self.node.nics.local_gpus is not None:
            return tuple(self.node.nics.local_gpus)
        rails = min(nics, gpus)
        return tuple(-(-r * gpus // rails) for r in range(rails))

    @property
    def gpu_nics(self) -> tuple[int, ...]:
        """Per local GPU, the NIC its own traffic (send/recv, All-to-All) goes through, as NCCL's
        ``ncclTopoGetLocalNet`` picks it: a GPU with a NIC on its PCIe host bridge uses that one;
        GPUs with none (equally far from every NIC) take the NICs round robin in device order,
        so that the GPUs of a node share the NICs evenly. Without ``node.nics.local_gpus``: GPU i
        uses NIC i*rails/gpus."""
        nics, gpus = self.node.nics.count, self.node.gpus
        rails = min(nics, gpus)
        if self.node.nics.local_gpus is None or rails == 0:
            return tuple(i * rails // gpus for i in range(gpus))
        own = {g: r for r, g in enumerate(self.node.nics.local_gpus)}
        out, k = [], 0
        for i in range(gpus):
            if i in own:
                out.append(own[i])
            else:
                out.append(k % rails)
                k += 1
        return tuple(out)


    @property
    def gpu_nic_paths(self) -> tuple[PathType, ...]:
        """Per local GPU, the PCIe path type to the NIC it sends through (``node.nics.gpu_paths``,
        else ``gpu_path`` for every GPU)."""
        nics = self.node.nics
        return tuple(nics.gpu_paths) if nics.gpu_paths is not None else (nics.gpu_path,) * self.node.gpus

    @property
    def sys_link_GBps(self) -> float:
        """Per direction, the CPU interconnect a sys path crosses (``node.pcie.sys_GBps``, else
        NCCL's figure for the CPU vendor, src/graph/topo.h)."""
        given = self.node.pcie.sys_GBps
        return given if given is not None else NCCL_SYS_LINK_GBPS[self.node.cpu_vendor]

    @property
    def nvlink_domain_gpus(self) -> int:
        """GPUs of one NVLink domain: ``node.scale_up.domain_gpus``, else one node's."""
        return self.node.scale_up.domain_gpus or self.node.gpus

    @property
    def nodes_per_domain(self) -> int:
        """Nodes of one NVLink domain (1 unless the domain spans nodes)."""
        return self.nvlink_domain_gpus // self.node.gpus

    def domains(self, nodes: int) -> int:
        """NVLink domains that ``nodes`` consecutive nodes occupy: more than one means a collective
        among them crosses the scale-out network (what the interval classes call "across nodes")."""
        return -(-nodes // self.nodes_per_domain)

    @property
    def nvls_available(self) -> bool:
        """NCCL can run NVLS (NVLink SHARP in-switch reduction): the NVSwitch has it
        (``node.scale_up.nvls``) and the GPU is Hopper or later (NCCL ``nvls.cc`` enables NVLS
        from SM90; ``ncclNvlsSupported``)."""
        return self.node.scale_up.nvls and self.gpu.arch in ("hopper", "blackwell")


_PROFILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def is_profile_path(name_or_path: str) -> bool:
    """The one rule for ``hardware:``, ``--hardware`` and ``base:``: a value with a ``/`` or
    ending in ``.yaml``/``.yml`` is a path to a profile file; anything else is the name of a
    bundled profile, even if a file of that name sits in the working directory."""
    return "/" in name_or_path or "\\" in name_or_path or name_or_path.endswith((".yaml", ".yml"))


def profile_path(name_or_path: str) -> Path:
    """A bundled profile name (``dgx-h100``) or a path to a YAML file (:func:`is_profile_path`)."""
    if is_profile_path(name_or_path):
        return Path(name_or_path)
    return PROFILE_DIR / f"{name_or_path}.yaml"


def available_profiles() -> list[str]:
    return sorted(p.stem for p in PROFILE_DIR.glob("*.yaml"))


def merge_overlay(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``over``'s fields on ``base``, nested mappings merged key by key (how an overlay file
    refines its ``base:``); neither argument is changed."""
    out = dict(base)
    for k, v in over.items():
        out[k] = merge_overlay(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def apply_overlay(profile: HardwareProfile, overlay: dict[str, Any], source: str | None = None) -> HardwareProfile:
    """The profile with an overlay's fields merged in and validated: what :func:`load_profile`
    makes of a file ``base: <profile>`` plus ``overlay``, without writing the file. ``source``
    names the overlay in an error (default: "overlay on <profile name>")."""
    from simulator.config.loader import validate

    return validate(HardwareProfile, merge_overlay(profile.model_dump(), overlay), source or f"overlay on {profile.name}")


def load_profile(name_or_path: str, *, _seen: tuple[Path, ...] = ()) -> HardwareProfile:
    """Load and validate a profile; an overlay (``base: other``) is merged onto its base first.

    ``base:`` follows the rule of :func:`is_profile_path`; a relative path is taken from the
    overlay's folder. A chain of overlays that comes back to a file already on it is an error
    wherever it is loaded from (files are compared by their resolved paths)."""
    from simulator.config.loader import key_line, read_yaml, validate

    if not isinstance(name_or_path, str) or not (is_profile_path(name_or_path) or _PROFILE_NAME.match(name_or_path)):
        raise InputError(f"expected the name of a bundled profile ({', '.join(available_profiles())}) or a path "
                         f"to a profile YAML (one with a / or ending in .yaml), got {quote(name_or_path)}",
                         field="hardware")
    path = profile_path(name_or_path)
    if not is_profile_path(name_or_path) and not path.is_file():
        raise InputError(
            f"unknown hardware profile {quote(name_or_path)}; expected one of {', '.join(available_profiles())} "
            "or a path to a profile YAML (one with a / or ending in .yaml)",
            field="hardware",
        )
    if not path.is_file():  # the scenario (or the command line) that names it is where the mistake is
        what = "a directory" if path.is_dir() else "no such file"
        raise InputError(f"{str(path)!r}: {what}; expected a profile YAML file or the name of a bundled profile "
                         f"({', '.join(available_profiles())})", field="hardware")
    data = read_yaml(path)
    resolved = path.resolve()
    if "base" in data:
        base_name = data.pop("base")
        where = f"{path}:{key_line(path, 'base')}"
        if not isinstance(base_name, str):
            raise InputError("expected the name or path of the profile this overlay refines, "
                             f"got {quote(base_name)}", source=where, field="base")
        if is_profile_path(base_name) and not Path(base_name).is_absolute():
            base_name = str(path.parent / base_name)  # relative to the overlay, not the working directory
        base_path = profile_path(base_name) if (is_profile_path(base_name) or _PROFILE_NAME.match(base_name)) else None
        chain = _seen + (resolved,)
        if base_path is not None and base_path.resolve() in chain:
            loop = " -> ".join(str(p) for p in chain[chain.index(base_path.resolve()):] + (base_path.resolve(),))
            raise InputError(f"overlay cycle: {loop}", source=where, field="base")
        try:
            base = load_profile(base_name, _seen=chain)
        except InputError as exc:
            if exc.source is None:  # the base itself is unknown or malformed as a name: blame this line
                raise InputError(exc.detail, source=where, field="base") from None
            raise
        data = merge_overlay(base.model_dump(), data)
    return validate(HardwareProfile, data, path)

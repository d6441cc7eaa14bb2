"""The in-switch reduction's rate: why an NVLS AllReduce's bus bandwidth stays flat as the group grows.

An NVLS AllReduce among k GPUs of one NVLink domain moves S(1 + 1/k) over each GPU's links in
each direction (``multimem.ld_reduce`` of the GPU's S/k shard: the switch reads every member's
copy; ``multimem.st`` of the result: the switch writes every member's copy;
``src/device/all_reduce.h`` of v2.26.2-1, RunWorkColl NVLS, lines 388-455, with the buffers of
``src/transport/nvls.cc`` lines 301-313: the scatter and gather copies stay in the GPU's own
unicast view). The links alone would therefore let the algorithm bandwidth rise as k/(k + 1):
on NVLink 5 (900 GB/s x 0.83, NCCL's ``nvlsEfficiency`` 0.74 on Blackwell) 491 GB/s at 8 GPUs
and 545 at 72, a busbw of 860 and 1,074 GB/s. Measured, the busbw is the same at both sizes:

* 838.0 GB/s on 8 B200 (HGX, 2 NVLink switch chips; p6-b200, NCCL 2.27.7: HARDWARE.md §3d),
  840.8 with NCCL 2.29.7 (together-nccl-tests, shared data/nccl/supplement_b200_busbw_at_16G_vs_nodes.csv);
* 839.2 GB/s on 72 GB200 in one NVL72 rack (18 switch chips; data/nccl/gb200x72_allreduce_1rack_nvl72.csv),
  an algorithm bandwidth of 425 GB/s where 8 B200 reach 479.

NCCL rates NVLS the same way: from 2.28 its tuner gives an NVLS AllReduce the bus bandwidth
``2 x nvlsEfficiency x bwIntra`` ("AllReduce pipelines two operations") and a ReduceScatter
``bwIntra x (ppn - 1)/ppn``, converting the AllReduce's to algorithm bandwidth by n / (2(n - 1))
(``src/graph/tuning.cc`` of v2.29.7-1, lines 290-296 and 349): a reduction whose cost per GPU is
a ReduceScatter's bus bytes, (k - 1)/k of the buffer, at a rate that does not depend on k. That
is what a switch combining the k operands of each element pairwise does (k - 1 combines per
reduced element, the GPU's S/k shard costing (k - 1)/k S) when its reduction, not its ports,
sets the pace. The profile's ``scale_up.nvls_reduce_GBps`` is that rate per GPU (half the
AllReduce busbw measured where the links leave room); the flows of the reduction are capped so
that no GPU's reduction finishes before ``(k - 1)/k x S / rate``, and the links still bound it
wherever they are slower (a group of few GPUs; a switch without the rate in its profile, such as
Hopper's, whose 8-GPU NVLS the links and ``nvlsEfficiency`` already reproduce: dgx-h100).
"""

from __future__ import annotations

REDUCING_OPS = ("allreduce", "reducescatter")


def reduced_share(op: str, k: int) -> float:
    """The bytes a GPU's switch ports combine for one call, as a fraction of the buffer S:
    (k - 1)/k for a reduction among ``k`` GPUs, 0 for an AllGather (no reduction)."""
    if op not in REDUCING_OPS or k < 2:
        return 0.0
    return (k - 1) / k


def flow_multiplier(op: str, weight: float, k: int) -> float:
    """The cap multiplier of an NVLS flow carrying ``weight`` x S: with a per-flow cap of
    ``multiplier x rate``, the flow takes at least ``reduced_share x S / rate`` (1.0, unused,
    where nothing is reduced)."""
    share = reduced_share(op, k)
    return weight / share if share > 0 else 1.0


def reduce_cap_Bps(rate_GBps: float | None, op: str, wire_scale: float) -> float | None:
    """The per-unit cap of the NVLS reduction's flows, bytes/s of scaled volume: the profile's
    rate times ``wire_scale`` (what one byte of the buffer is counted as on the wire: the
    protocol's wire factor over ``nvlsEfficiency``), so that the cap binds on buffer bytes; None
    where the profile gives no rate or the call reduces nothing."""
    if rate_GBps is None or op not in REDUCING_OPS:
        return None
    return rate_GBps * 1e9 * wire_scale

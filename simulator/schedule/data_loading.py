"""The attention mask Megatron-LM's data loader builds and moves to the GPU (``training.dataloader_attention_mask``).

Megatron-LM's ``GPTDataset`` returns, with every sample, a 1 x s x s bool causal mask unless
``--no-create-attention-mask-in-dataloader`` is given (``create_attention_mask`` from
``args.create_attention_mask_in_dataloader``, default on: megatron/training/arguments.py;
``_get_ltor_masks_and_position_ids`` in megatron/core/datasets/gpt_dataset.py). ``get_batch``
(pretrain_gpt.py) runs on the pipeline stages that hold the first or the last (virtual) stage:
there TP rank 0 copies the batch to the GPU with ``.cuda(non_blocking=True)`` from the loader's
pinned memory, on the current (compute) stream, and ``get_batch_on_this_tp_rank`` broadcasts
the mask from it to the other TP ranks (``torch.distributed.broadcast``; megatron/core/utils.py
at 6e091e1b68, megatron/training/utils.py before). TransformerEngine's causal attention ignores
the mask, but the copy and the broadcast run each micro-batch: b·s² bytes (67 MB a sequence of
8,192 tokens), against 28·b·s bytes for the tokens, labels, loss mask and position ids, which
are left out.

The copy is a DMA over the GPU's PCIe link the compute stream waits for (no SM, no HBM
contention): priced as a ``host`` op of ``bytes / (pcie.Bps x PCIE_H2D_EFFICIENCY)``, with
:data:`PCIE_H2D_EFFICIENCY` the pinned host-to-device rate nvbandwidth measures on a Gen5 x16
link (8x H200: 55.43 of 63 GB/s, docs/reference/HARDWARE.md §3d); the same fraction is used on
Gen4 (the DGX A100 profile's 31 GB/s; Azure's acceptance floor for A100 nodes, 21-23 GB/s, is
below it). With TP the
broadcast over the TP group follows it. A pipeline of one stage loads once per micro-batch; with
PP the first stage loads before the embedding and the last before the LM head.
"""

from __future__ import annotations

PCIE_H2D_EFFICIENCY = 55.43 / 63.0


def mask_bytes(micro_batch: int, seq: int) -> int:
    """Bytes of one micro-batch's b x 1 x s x s bool mask."""
    return micro_batch * seq * seq


def h2d_us(nbytes: int, pcie_Bps: float) -> float:
    """Microseconds the pinned host-to-device copy of ``nbytes`` takes on a PCIe link of ``pcie_Bps``."""
    return nbytes / (pcie_Bps * PCIE_H2D_EFFICIENCY) * 1e6

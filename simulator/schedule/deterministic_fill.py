"""PyTorch's NaN fill of fresh allocations under ``torch.use_deterministic_algorithms(True)``.

With deterministic algorithms on and ``torch.utils.deterministic.fill_uninitialized_memory`` at
its default (True), the CUDA ``empty`` factories fill every tensor they hand out with NaN
(integers with their largest value): ``at::native::empty_cuda`` and ``empty_strided_cuda``
(aten/src/ATen/native/cuda/TensorFactories.cu) call ``fill_empty_deterministic_`` on the new
tensor, one fill kernel per allocation, launched from C++ inside the factory. Megatron-LM's
``--deterministic-mode`` turns deterministic algorithms on (``megatron/training/determinism.py``,
``torch.use_deterministic_algorithms(True)``) and leaves the fill at its default
(``training.torch_deterministic``).

Which outputs pay it depends on who allocates them:

* TransformerEngine allocates through the factories (``at::empty`` in its extensions,
  ``torch.empty`` in Python): its linear layers' GEMM outputs (forward, dgrad, and the weight
  gradient unless gradient-accumulation fusion accumulates it into ``main_grad`` in place), its
  norms' outputs (the forward's normalised tensor, the backward's input gradient) and the fused
  attention's output and its dQ, dK and dV. Each is filled here.
* ATen's structured kernels allocate their outputs with ``at::detail::empty_cuda`` (torchgen's
  ``create_out`` for the CUDA key), which does not fill, and so do the kernels torch.compile
  generates: elementwise ops, Megatron's fused bias-dropout-add and activation, its output layer
  (a ``torch.matmul``, not a TransformerEngine module) and its cross-entropy are not filled.

Priced where the schedule builds those outputs: the tensor-parallel linear layers
(``schedule/tensor_parallel.py``), the MoE experts' grouped GEMMs (``schedule/moe.py``: one output
a call, or one weight gradient per local expert), the norms of a transformer layer
(``schedule/transformer.py``) and the fused attention of a rank that holds its whole sequence
(``schedule/attention.py``); the Mamba mixers and context-parallel attention chunks are not. A GEMM
that TransformerEngine's TP communication overlap runs in chunks carries a fill per chunk, their
bytes adding up to the output's (TE allocates that output once, or writes a Userbuffers buffer).
A fill is a streaming write of the tensor's bytes, a memory-bound kernel (``costs/compute.py``)
that the host launches without Python (``costs/host.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.config.scenario import Scenario


@dataclass(frozen=True)
class Fill:
    """Which outputs a run's builders fill: any (``on``: ``training.torch_deterministic`` on a
    TransformerEngine stack, ``fused_kernels``) and, of the weight gradients, those TE allocates
    (``weight_gradients``: no gradient-accumulation fusion writing them into ``main_grad``)."""

    on: bool = False
    weight_gradients: bool = False

    @classmethod
    def of(cls, scn: Scenario) -> "Fill":
        t = scn.training
        return cls(on=t.torch_deterministic and t.fused_kernels,
                   weight_gradients=not scn.parallel.gradient_accumulation_fusion)

    def gemm(self, wgrad: bool) -> bool:
        """Whether a TE GEMM's output is filled: any where the fill is on, a weight gradient
        (``wgrad``) only where TE allocates it."""
        return self.on and (self.weight_gradients or not wgrad)


def gemm_output_bytes(m: int, n: int, dtype: str, dtype_bytes: int) -> float:
    """Bytes of a TransformerEngine GEMM's m x n output: the activation dtype's (an fp8 GEMM
    writes bf16)."""
    return float(m * n * (2 if dtype == "fp8" else dtype_bytes))

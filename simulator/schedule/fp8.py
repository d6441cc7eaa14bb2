"""What each FP8 recipe adds to a layer pass (``training.fp8_recipe``, with ``dtype: fp8``).

The FP8 GEMMs themselves are priced by the profile (fp8 peak × ``fp8_gemm_efficiency_scale``,
fitted on runs that used TransformerEngine's default recipe, delayed scaling). The recipes differ
in the passes and collectives around the GEMMs (TransformerEngine ``common/recipe``,
``pytorch/tensor/*``, ``pytorch/fp8.py``):

* ``delayed`` (``DelayedScaling``): the scale comes from an amax history, so a norm that feeds a
  ``LayerNormLinear`` writes its output in FP8 (the cast fused into the norm kernel). At the end of
  each forward and each backward of a model chunk, ``FP8GlobalStateManager.reduce_and_update_fp8_tensors``
  AllReduces the amaxes of every FP8 tensor of the chunk over the amax-reduction group (Megatron:
  data-parallel × TP × CP, ``get_amax_reduction_group``): one small blocking AllReduce of 4 bytes
  per tensor (input, weight and gradient of each GEMM).
* ``current`` (``Float8CurrentScaling``) and ``rowwise`` (per-row scales, torchao's float8 rowwise
  as torchtitan runs it): the scale of a tensor is computed from the tensor itself, so every
  quantised activation and gradient is read once more for its amax before the cast. With
  sequence parallelism, ``current`` AllReduces the amax of each input it all-gathers in FP8 over
  TP (4 bytes, latency-bound).
* ``blockwise`` (``Float8BlockScaling``, DeepSeek-V3's 1×128 / 128×128 scaling) and ``mxfp8``
  (``MXFP8BlockScaling``, 1×32 blocks with E8M0 scales, Blackwell tensor cores only): a block's
  scale runs along the GEMM's reduction dimension, so each tensor is quantised twice, row-wise
  and column-wise (the transposed use in wgrad/dgrad), in one kernel that reads the tensor once
  (TransformerEngine's ``mxfp8_quantize``, common/util/cast_kernels.cuh at v2.9, writes both
  usages with their scales, ``ScalingType::BIDIMENSIONAL``): over a per-tensor
  cast, one more FP8 copy (1 byte per element) and the scales of both copies (4/128 or 1/32 bytes
  each) are written, and no amax is read. Both run their GEMMs as block-scaled kernels, whose rate
  the costs price (``costs/compute.py`` ``BLOCK_SCALED_GEMM_TIME``: MXFP8's with the scale swizzles
  TransformerEngine runs before each such GEMM; the block recipe's on Hopper, where the kernel
  applies the scales to its partial sums, and as MXFP8 on Blackwell; :func:`gemm_scaling`).

The casts every recipe runs (:func:`cast_bytes_per_element`, TransformerEngine v2.2
``module/linear.py``, ``module/layernorm_linear.py``, ``module/base.py`` ``grad_output_preprocess``).
Only a norm fused into its ``LayerNormLinear`` writes its GEMM's operand quantised; every other
operand reaches TransformerEngine in BF16 from a kernel of its own and is cast in a pass that reads
it and writes the FP8 copies the GEMMs need:

* the input of a plain ``Linear`` (the output projection after the attention core, FC2 after
  Megatron's activation, a Mamba2 mixer's ``out_proj`` after its gated norm, the shared experts'
  FC1 after the MoE block's separate norm): ``input_quantizer(inputmat)``;
* the output gradient of every GEMM: ``grad_output_preprocess`` casts it (``quantizer(grad_output)``
  or ``bgrad_quantize``) before the dgrad and wgrad GEMMs; a row-parallel linear under sequence
  parallelism casts its t/tp rows and all-gathers them in FP8;
* per-tensor FP8 on Hopper needs each operand twice, row-wise for one GEMM and as an FP8 transpose
  for the other (its tensor cores take TN layouts only): the cast writes both (cast-transpose);
  a norm-fed input and an all-gathered gradient get their transpose in a pass of its own ("we
  compute FP8 transposes manually", reading and writing one byte per element). Blackwell's FP8
  GEMMs take either layout (``is_non_tn_fp8_gemm_supported``), and the block-scaled recipes'
  column-wise copies are counted with their scales below.

Quantised per layer pass (per TP rank): forward, the inputs of the QKV, output-projection, FC1
and FC2 GEMMs; backward, the output gradients of the same four GEMMs. In an MoE layer the expert
GEMMs quantise their routed rows: TransformerEngine's ``GroupedLinear`` splits its input by
expert and quantises every split with that expert's own quantizer (``tex.split_quantize`` over
``m_splits``, forward on the inputs, backward on the output gradients), so a rank holding
``E_local`` experts quantises the T·k rows it received (the slowest rank's, gathered over etp),
each split with the kernels of its recipe's quantizer (:func:`quantize_kernels`: four under
current scaling, one fused kernel over all splits under delayed scaling); the shared experts
quantise the T tokens of a dense MLP of ``shared_ffn``.

The routed rows have no producing kernel the cast could fuse into (they come from the
permutation and the All-to-All, from Megatron's ``weighted_bias_swiglu`` activation in BF16, or
from the combine's backward), so ``GroupedLinear`` quantises them in passes of their own under
every recipe, delayed scaling included (:func:`routed_bytes_per_element`): each split is read
once and written in both usages its quantizer is set to (``set_usage(rowwise=True,
columnwise=...)``: the rows of an input are the forward GEMM's operand and, column-wise, the
wgrad's; those of an output gradient the dgrad's and the wgrad's). Per-tensor FP8 on Hopper
writes the column-wise copy as an FP8 transpose (TransformerEngine's cast-transpose: Hopper's FP8
GEMMs take TN layouts only); Blackwell's FP8 GEMMs take any layout, so one copy serves both
(``is_non_tn_fp8_gemm_supported``); block scaling writes its row-wise and column-wise copies,
each with its scales, on either. Current scaling reads the split once more for its amax.

``fp8_param_gather`` gathers the linear weights in FP8, 1 byte per element plus its scales, where
a sharded optimizer or FSDP gathers weights (:func:`gathered_bytes`): Megatron's
``--fp8-param-gather`` keeps TransformerEngine's FP8 weights (attention, MLP and grouped expert
linears; not the router, norms, embedding or output layer) in the distributed optimizer's
parameter buffer, and ``cast_master_weights_to_fp8`` AllReduces their amaxes over the
data-parallel group after the step; torchtitan's ``enable_fsdp_float8_all_gather`` all-gathers
the weights of ``Float8Linear`` modules (the dense linears: routed experts stay bf16) and
``precompute_float8_dynamic_scale_for_fsdp`` AllReduces one amax per weight over the FSDP group
after the optimizer step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from simulator.schedule.ir import CommOp, ComputeOp, Phase, ProgramBuilder, Tag

if TYPE_CHECKING:
    from simulator.schedule.transformer import LayerSpec

RECIPES = ("delayed", "current", "rowwise", "blockwise", "mxfp8")
BLOCK_RECIPES = ("blockwise", "mxfp8")  # recipes whose GEMMs take block-scaled operands
LINEAR_WEIGHTS = frozenset({"q", "k", "v", "o", "mla_down", "mla_up", "gate", "up", "down", "fc1", "fc2"})
WEIGHT_SCALE_BYTES = {"blockwise": 4 / (128 * 128), "mxfp8": 1 / 32}  # per weight element
SCALE_BYTES = {"blockwise": 4 / 128, "mxfp8": 1 / 32}
GEMMS_PER_LAYER = 4  # QKV, output projection, FC1, FC2


def gemm_scaling(dtype: str, recipe: str) -> str:
    """``ComputeOp.scaling`` of a TransformerEngine linear's GEMMs: the recipe where it
    block-scales their operands (``"mxfp8"``, ``"blockwise"``), else ``""`` (one scale per tensor,
    or no FP8); ``costs/compute.py`` prices the block-scaled kernels."""
    return recipe if dtype == "fp8" and recipe in BLOCK_RECIPES else ""


# How TransformerEngine quantises a GEMM operand (module docstring): written quantised by the norm
# of a LayerNormLinear; cast from BF16 in a pass of its own; or cast on the rank's t/tp rows and
# all-gathered in FP8 (a row-parallel linear's output gradient under sequence parallelism).
OperandKind = Literal["norm", "cast", "gathered"]


def dense_operands(spec: "LayerSpec", phase: Phase, qkv_out: int, proj_in: int,
                   layer: int = -1) -> list[tuple[OperandKind, float]]:
    """The operands outside the routed experts one TP rank quantises in one pass of layer ``layer``,
    each with how it is quantised and its elements: forward the GEMMs' inputs, backward their output
    gradients, of the attention, the dense MLP or the shared experts, or a hybrid block's mixer."""
    t, h = spec.tokens, spec.hidden
    row_grad: OperandKind = "gathered" if spec.sp else "cast"
    fwd = phase == "fwd"

    def linear_pair(first_in: OperandKind, width_in: float, width_out: float,
                    second_in: float) -> list[tuple[OperandKind, float]]:
        """A column-parallel GEMM h -> width_out fed by ``first_in``, then a row-parallel one
        second_in -> h."""
        if fwd:
            return [(first_in, t * width_in), ("cast", t * second_in)]
        return [("cast", t * width_out), (row_grad, t * h)]

    def mlp() -> list[tuple[OperandKind, float]]:
        """The dense MLP, or an MoE block's shared experts (fed by the block's separate norm)."""
        if spec.moe is not None and spec.is_moe(layer):
            return shared_expert_operands(spec, phase)
        f = spec.shape.ffn
        return linear_pair("norm", h, (2 if spec.gated else 1) * f, f)

    attention = linear_pair("norm", h, qkv_out, proj_in)
    block = spec.block(layer)
    if block:  # a hybrid model's block: one mixer or one MLP
        if block == "M":
            assert spec.mamba is not None
            return linear_pair("norm", h, spec.mamba.in_proj_out, spec.mamba.inner)
        return attention if block == "*" else mlp()
    return attention + mlp()


def shared_expert_operands(spec: "LayerSpec", phase: Phase) -> list[tuple[OperandKind, float]]:
    """The shared experts' operands of an MoE layer pass (:func:`dense_operands`): a column-parallel
    FC1 fed by the MoE block's separate norm, cast from BF16, and a row-parallel FC2."""
    m = spec.moe
    if m is None or not m.shared_ffn:
        return []
    t, h, fs = spec.tokens, spec.hidden, m.shared_ffn // m.tp
    if phase == "fwd":
        return [("cast", t * h), ("cast", t * fs)]
    return [("cast", t * (2 if m.gated else 1) * fs), ("gathered" if spec.sp else "cast", t * h)]


def copies(recipe: str, arch: str) -> int:
    """FP8 copies of a per-tensor operand the cast writes: two on Hopper (row-wise and the transpose
    its TN-only FP8 GEMMs need), one on Blackwell; one for the block-scaled recipes, whose
    column-wise copy :func:`extra_bytes_per_element` counts with its scales."""
    return 2 if recipe not in SCALE_BYTES and arch != "blackwell" else 1


def cast_bytes_per_element(kind: OperandKind, recipe: str, act_bytes: int, arch: str, tp: int) -> float:
    """HBM bytes per element of the cast pass every recipe runs on an operand (module docstring).

    A norm-fed input costs delayed scaling only its FP8 transpose on Hopper and block scaling
    nothing here (the norm wrote the row-wise copy; block scaling's column-wise copy is counted
    with its scales); under current and row-wise scaling the norm writes BF16 and its amax, and
    the cast reads it back. A cast operand is read once and written in its copies. A gathered
    gradient is cast on the rank's t/tp rows (read, one FP8 write) and transposed after the
    gather."""
    n = copies(recipe, arch)
    transpose = 2.0 * (n - 1)
    if kind == "norm":
        return act_bytes + n if recipe in ("current", "rowwise") else transpose
    if kind == "gathered":
        return (act_bytes + 1.0) / tp + transpose
    return float(act_bytes + n)


def routed_quantized_elements(spec: "LayerSpec", phase: Phase, layer: int = -1) -> float:
    """Routed rows one rank's grouped GEMMs quantise in one pass of an MoE layer: forward the inputs
    of FC1 (h) and FC2 (f_e/etp), backward the output gradients of FC2 (h) and FC1 (the up width)."""
    if spec.moe is None or not spec.is_moe(layer):
        return 0.0
    m = spec.moe
    return m.rows * (spec.hidden + m.ffn // m.etp) if phase == "fwd" else m.rows * (m.up + spec.hidden)


# Kernels TransformerEngine's Float8CurrentScalingQuantizer::quantize launches per tensor
# (pytorch/csrc/quantizer.cpp at v2.14, common/recipe/current_scaling.cu): the amax's zeroing
# (zero_amax_kernel<<<1, 1>>>) and its reduction (nvte_compute_amax), the scale from the amax
# (compute_scale_from_amax_kernel<<<1, 1>>>) and the cast (nvte_quantize_v2). A norm-fed input
# (LayerNormLinear's, the QKV and a dense FC1) has its amax computed by the norm kernel and pays only
# the scale and the cast (quantize_with_amax).
CURRENT_SCALING_KERNELS = 4
CURRENT_SCALING_NORM_FED_KERNELS = 2


def quantize_kernels(spec: "LayerSpec", operands: list[tuple[OperandKind, float]], recipe: str,
                     layer: int = -1) -> int:
    """Quantisation kernels of one layer pass, its dense ``operands`` (:func:`dense_operands`) and,
    in an MoE layer, its routed rows.

    Dense operands: under delayed scaling one cast per operand no norm writes and, on Hopper, each
    transpose of its own (a norm-fed input's after the norm, a gathered gradient's after its cast);
    under current scaling :data:`CURRENT_SCALING_KERNELS` each, the norm-fed forward inputs
    :data:`CURRENT_SCALING_NORM_FED_KERNELS`; one each under the other recipes. Routed rows (an MoE
    layer's two grouped GEMMs): TransformerEngine's ``split_quantize`` runs
    ``multi_tensor_quantize_impl`` (pytorch/csrc/extensions/cast.cpp at v2.14), one fused
    ``nvte_multi_cast_transpose`` over all splits for delayed scaling's Float8Quantizers and
    otherwise every split's own ``quantize``: 4 kernels per local expert under current scaling,
    one under the block-scaled recipes."""
    m = spec.moe if spec.moe is not None and spec.is_moe(layer) else None
    if recipe == "delayed":
        transpose = copies(recipe, spec.arch) - 1
        dense = sum(transpose if kind == "norm" else 1 + transpose if kind == "gathered" else 1
                    for kind, _ in operands)
        return dense + (2 if m is not None else 0)
    if recipe == "current":
        dense = sum(CURRENT_SCALING_NORM_FED_KERNELS if kind == "norm" else CURRENT_SCALING_KERNELS
                    for kind, _ in operands)
        per_split = CURRENT_SCALING_KERNELS
    else:
        dense, per_split = len(operands), 1
    return dense + (2 * m.local_experts * per_split if m is not None else 0)


def extra_bytes_per_element(recipe: str, act_bytes: int) -> float:
    """HBM bytes a recipe adds per quantised element over the fused cast of delayed scaling."""
    if recipe in ("current", "rowwise"):
        return float(act_bytes)  # the amax pass reads the tensor once more
    if recipe in SCALE_BYTES:
        return 1.0 + 2 * SCALE_BYTES[recipe]  # the column-wise copy, the scales of both copies
    return 0.0


def routed_bytes_per_element(recipe: str, act_bytes: int, arch: str) -> float:
    """HBM bytes per routed element of GroupedLinear's own quantisation pass (module docstring): the
    read, a row-wise and a column-wise copy (one copy for per-tensor FP8 on Blackwell), their
    scales, and current scaling's amax read."""
    copies = 1 if recipe not in SCALE_BYTES and arch == "blackwell" else 2
    amax = act_bytes if recipe in ("current", "rowwise") else 0
    return act_bytes + copies * (1.0 + SCALE_BYTES.get(recipe, 0.0)) + amax


def _quantize(pb: ProgramBuilder, spec: "LayerSpec", recipe: str, layer: int, mb: int, after: int, phase: Phase,
              operands: list[tuple[OperandKind, float]], name: str) -> int:
    """One op for the casts and quantisation passes of ``operands`` and, in an MoE layer, of its
    routed rows, in a pass of ``layer``; ``after`` where there is nothing to quantise."""
    casts = sum(cast_bytes_per_element(kind, recipe, spec.act_bytes, spec.arch, spec.tp) * n for kind, n in operands)
    nbytes = (casts + extra_bytes_per_element(recipe, spec.act_bytes) * sum(n for _, n in operands)
              + routed_bytes_per_element(recipe, spec.act_bytes, spec.arch) * routed_quantized_elements(spec, phase, layer))
    if nbytes == 0:
        return after
    # one quantize call per tensor (TransformerEngine launches the recipe's kernels, and
    # split_quantize every expert's split, from C++): the dense operands and two routed inputs
    routed = 2 if spec.moe is not None and spec.is_moe(layer) else 0
    return pb.add(ComputeOp(name=name, kind="elementwise", flops=nbytes / 2, hbm_bytes=nbytes, deps=(after,),
                            tag=Tag(phase, layer, mb), count=quantize_kernels(spec, operands, recipe, layer),
                            host_calls=len(operands) + routed))


def moe_overhead(pb: ProgramBuilder, spec: "LayerSpec", recipe: str, layer: int, mb: int, after: int) -> int:
    """The forward quantisation an MoE layer's recompute runs again (``recompute_modules: moe``:
    TransformerEngine's ``te_checkpoint`` re-runs the layer's forward under FP8 autocast, so its
    grouped linears and shared experts cast their inputs again): the routed rows and the shared
    experts' inputs."""
    if spec.dtype != "fp8":
        return after
    return _quantize(pb, spec, recipe, layer, mb, after, "fwd", shared_expert_operands(spec, "fwd"),
                     f"L{layer}.moe.fp8_{recipe}.quantize.fwd")


def layer_overhead(pb: ProgramBuilder, spec: "LayerSpec", recipe: str, layer: int, mb: int, after: int,
                   phase: Phase, qkv_out: int, proj_in: int) -> int:
    """The casts and the recipe's quantisation passes (one op) and TP amax AllReduces of one layer
    pass."""
    if spec.dtype != "fp8":
        return after
    operands = dense_operands(spec, phase, qkv_out, proj_in, layer)
    out = _quantize(pb, spec, recipe, layer, mb, after, phase, operands, f"L{layer}.fp8_{recipe}.quantize.{phase}")
    if out == after:
        return after
    tag = Tag(phase, layer, mb)
    if recipe == "current" and spec.sp:
        for gemm in gathered_gemms(spec, phase, layer):
            out = pb.add(CommOp(name=f"L{layer}.{gemm}.{phase}.fp8_amax.allreduce", op="allreduce", axes=("tp",),
                                size_bytes=4, deps=(out,), dtype="fp32", tag=tag))
    return out


# A hybrid block's linear layers (model.layer_pattern): its column-parallel one, fed by the TP
# all-gather of its input under SP, and its row-parallel one, whose output gradient is all-gathered
# in backward; an E block's are its shared experts' (its routed experts are not split over TP).
_BLOCK_LINEARS = {"M": ("in_proj", "out_proj"), "*": ("qkv", "proj"), "-": ("fc1", "fc2"), "E": ("shared.fc1", "shared.fc2")}


def gathered_gemms(spec: "LayerSpec", phase: Phase, layer: int) -> tuple[str, ...]:
    """The GEMMs of a layer pass whose FP8 operand is all-gathered over TP under SP, each with its
    amax AllReduce under current scaling: forward the inputs of the column-parallel linears,
    backward the output gradients of the row-parallel ones (QKV and FC1, the output projection
    and FC2 of a GPT layer; one linear of each kind in a hybrid block)."""
    block = spec.block(layer)
    if block:
        if block == "E" and not (spec.moe is not None and spec.moe.shared_ffn):
            return ()
        first, second = _BLOCK_LINEARS[block]
        return (first,) if phase == "fwd" else (second,)
    return ("qkv", "fc1") if phase == "fwd" else ("proj", "fc2")


def amax_reduction(pb: ProgramBuilder, axes: tuple[str, ...], n_layers: int, mb: int, after: int,
                   phase: Phase, chunk: int) -> int:
    """Delayed scaling's AllReduce of the amaxes of a model chunk's FP8 tensors (3 per GEMM)."""
    if not axes:
        return after
    return pb.add(CommOp(name=f"fp8.amax_reduction.{phase}.c{chunk}.mb{mb}", op="allreduce", axes=axes,
                         size_bytes=4 * 3 * GEMMS_PER_LAYER * max(n_layers, 1), deps=(after,), dtype="fp32",
                         tag=Tag(phase, None, mb, chunk)))


def gathered_in_fp8(name: str, expert: bool, fsdp: bool) -> bool:
    """Whether a weight (a :class:`~simulator.schedule.shapes.Module` name such as ``L3.shared.up``)
    is gathered as FP8 under ``fp8_param_gather``: the linear weights; routed experts only in
    Megatron (TE's grouped linear), not under FSDP2 (torchtitan's grouped experts are no
    ``Float8Linear``)."""
    if expert:
        return not fsdp
    return name.rsplit(".", 1)[-1] in LINEAR_WEIGHTS


def gathered_bytes(recipe: str) -> float:
    """Bytes per element of an FP8 weight on the wire: the value and its share of the scales."""
    return 1.0 + WEIGHT_SCALE_BYTES.get(recipe, 0.0)


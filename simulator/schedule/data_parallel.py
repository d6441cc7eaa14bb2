"""Data-parallel gradient synchronisation: DDP AllReduce and ZeRO-1/2 ReduceScatter + AllGather.

The pipeline builder calls a :class:`GradSync` around every parameter unit (the embedding, each
transformer layer, the LM head) of a stage; this module holds the unit description, the hook
interface and the bucketed DDP / ZeRO-1/2 implementation. ZeRO-3 and FSDP2 live in
:mod:`simulator.schedule.zero`.

Megatron-Core DDP (``distributed_data_parallel.py``, ``param_and_grad_buffer.py``): parameters are
packed into buckets in backward order, ``max(4e7, 1e6·dp_cp_size)`` elements each when
``overlap_grad_reduce`` is on; gradients accumulate locally over the micro-batches and a bucket's
collective is launched during the *last* micro-batch's backward as soon as its last gradient is
ready, so it overlaps the rest of backward. The group is DP×CP (MECHANICS.md §5.6), extended by the
Ulysses degree where DeepSpeed reduces over the sequence-data-parallel group (§1.1).

* zero 0: AllReduce of each bucket.
* zero 1 (Megatron's distributed optimizer): ReduceScatter of each bucket in the last micro-batch,
  optimizer step on the local shard, AllGather of the updated bf16 parameters per bucket.
* zero 2: gradients are sharded, so they cannot accumulate unreduced: the ReduceScatter runs in
  every micro-batch (DeepSpeed stage 2), then step and AllGather as stage 1.
* zero 1 with ``zero1_impl: deepspeed-bf16`` (DeepSpeed's ``BF16_Optimizer`` as BLOOM ran it,
  ``runtime/bf16_optimizer.py`` and ``pipe/engine.py``): after every micro-batch's backward the
  bf16 gradients are added into the fp32 ones tensor by tensor (``update_hp_grads``:
  ``hp_grad.add_(lp.grad.to(fp32))``, two kernels per tensor reading 2 + 4 + 4 and writing
  4 + 4 bytes per parameter); after the backward the whole fp32 gradient is AllReduced over dp
  (``_bf16_reduce_grads`` → ``buffered_allreduce_fallback``, not a ReduceScatter), each rank steps
  its shard and the bf16 parameters are AllGathered as in stage 1.
* zero 1 with ``zero1_impl: internlm`` (InternLM's ``HybridZeroOptimizer``, InternLM/InternLM
  fa7337b ``internlm/solver/optimizer/hybrid_zero_optim.py``): each bucket of accumulated bf16
  gradients is AllReduced over dp (``reduce_tensor`` with ``dst_rank=None`` → ``dist.all_reduce``
  over ``ParallelMode.DATA``), not ReduceScattered; each rank steps its shard (InternLM's greedy
  split of the parameter tensors, :func:`internlm_shards`) and broadcasts its updated bf16
  parameters to the others (``broadcast_params``): one broadcast call per rank that owns
  parameters, in rank order on the one communicator, each a ring over the whole group.
* ``overlap_grad_reduce: false`` (Megatron's default without ``--overlap-grad-reduce``; DeepSpeed
  ZeRO-1/2 without ``overlap_comm``): no bucket is launched during backward; every bucket's
  collective is issued in backward order once the step's backward is over
  (``finalize_model_grads`` → ``finish_grad_sync``), exposed before the optimizer step. ZeRO-2
  reduces each micro-batch's buckets after that micro-batch's backward, and the next micro-batch
  waits for them.
* ``overlap_param_gather`` (Megatron's ``--overlap-param-gather``, zero 1/2): the AllGather of the
  updated parameters is not waited for after the step but dispatched by the forward pre-hooks of
  the next iteration, so it hides under forward compute (``distributed_optimizer.py``,
  ``_dispatch_gather_model_params``). In the steady state one step simulates, that is the
  previous step's AllGathers issued at the start of the step, in forward order, each bucket's
  first forward use waiting for it.

Megatron-Core DDP's passes over a bucket before its collective (``start_grad_sync``,
``megatron/core/distributed/param_and_grad_buffer.py``; ``parallel.ddp_grad_check`` and
``ddp_grad_scaling``), on the compute stream where the hook or ``finish_grad_sync`` issues them:

* the NaN check: ``grad_data.norm(p=2)`` reads the bucket's buffer once (its ``grad_reduce_dtype``
  bytes per element), then per check (``isnan``; from 0.12 also ``isinf``) a one-element kernel
  whose result the host reads back (``assert not norm.isnan()`` in 0.6-0.9; ``validate_result``'s
  ``if rejection_func(result)`` from 0.12, also while reruns are disabled); the host waits for the
  GPU to drain there, so its run-ahead over the backward is lost once per read (``host_sync``).
  Megatron-Core 0.10-0.11 evaluate the norm but skip the test while reruns are disabled.
* the average: ``grad_data *= gradient_scaling_factor`` (1 / (dp x cp) with ``average_in_collective``
  off; with it on, 1 for the dense buckets and edp / (dp x cp) for the expert ones), a read and a
  write of the buffer, run wherever the factor is not 1 (Megatron-Core >= 0.8 tests ``!= 1.0``).

With ``overlap_grad_reduce`` off the collectives are issued synchronously (``async_op=False``): the
compute stream waits for each bucket's collective before the next bucket's passes run, so passes
and collectives alternate after the backward.

Sizes are nccl-tests ``size_bytes``: the bucket (AllReduce, RS input) or the gathered parameters
(AG output), in ``grad_reduce_dtype`` for gradients (bf16 by default) and bf16 for parameters.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from simulator.config.scenario import Scenario
from simulator.schedule import fp8, optimizer
from simulator.schedule.ir import (CollectiveKind, CommOp, ComputeOp, Gate, P2POp, ProgramBuilder, Tag, Transfer,
                                   make_comm, make_tag)
from simulator.schedule.shapes import ParamUnit, RankShapes
from simulator.units import BYTES_PER_ELEMENT

PARAM_BYTES = 2


def unfused_accumulate_bytes(grad_bytes: int, mb: int) -> int:
    """HBM bytes per parameter of micro-batch `mb`'s gradient accumulation without fusion
    (``parallel.gradient_accumulation_fusion`` false): autograd's AccumulateGrad
    (torch/csrc/autograd/functions/accumulate_grad.h) adopts the first gradient as ``param.grad``
    when the step began with none (Megatron-LM 2021 zeroes with ``set_to_none=True``:
    megatron/optimizer/optimizer.py ``zero_grad``) and adds each later one in place,
    ``variable_grad += new_grad`` (read 2 + 2, write 2 bytes in fp16); into fp32 ``main_grad``
    buffers (Megatron-LM's local DDP with ``--accumulate-allreduce-grads-in-fp32``, Mar 2021
    b4bc51b1: ``param.main_grad.add_(param.grad.data)`` in its backward hook) every micro-batch is
    added, the first included (read 4 + 2, write 4)."""
    if grad_bytes == PARAM_BYTES:
        return 3 * PARAM_BYTES if mb else 0
    return PARAM_BYTES + 2 * grad_bytes
# update_hp_grads per parameter: lp.grad.to(fp32) reads 2 and writes 4 bytes, add_ reads 4 + 4 and writes 4
HP_GRAD_UPDATE_BYTES = 18
# Megatron-Core's check_for_nan_in_grad: the one-element tests on a bucket's norm whose results the
# host reads back, per ``parallel.ddp_grad_check`` (module docstring)
GRAD_CHECK_TESTS: dict[str, tuple[str, ...]] = {"none": (), "norm": (), "nan": ("isnan",),
                                                "nan_inf": ("isnan", "isinf")}


def expert_grad_axes(scn: Scenario) -> tuple[str, ...]:
    """The expert-data-parallel group: the ranks of a stage holding the same experts (Megatron's
    expert_data_parallel_group, parallel_state.py)."""
    return ("edp",) if scn.model.moe and scn.expert_dp > 1 else ()


def grad_axes(scn: Scenario) -> tuple[str, ...]:
    """Axes of the gradient-reduction / ZeRO shard group: DP×CP (Megatron), ×Ulysses (DeepSpeed)."""
    p = scn.parallel
    return tuple(a for a, n in (("dp", scn.dp), ("cp", p.cp), ("ulysses", p.ulysses)) if n > 1)


@lru_cache(maxsize=64)
def grad_stream(axes: tuple[str, ...]) -> str:
    """The stream of the gradient-reduction / ZeRO collectives: that group is its own
    communicator (Megatron's ``dp_cp_group``, DeepSpeed's data-parallel group beside its
    sequence-parallel group, FSDP's process group), hence its own NCCL stream, named for the whole
    DP×CP×Ulysses group with the size-1 DP axis included. With dp = 1 the group's members are the
    CP or Ulysses ranks, but its collectives still do not queue behind the CP ring's P2P or the
    Ulysses All-to-Alls (stream ``cp`` / ``ulysses``)."""
    if axes and "dp" not in axes and set(axes) <= {"cp", "ulysses"}:
        return "+".join(("dp",) + axes)
    return "+".join(axes)  # with dp, or another group (the expert-data-parallel "edp")


class GradSync:
    """Hooks the stage builder calls; the base class does no communication (one replica)."""

    def __init__(self, scn: Scenario, chunks: list[list[ParamUnit]]):
        self.scn = scn
        self.chunks = chunks
        self.axes = grad_axes(scn)
        shapes = RankShapes.of(scn)
        self.group_size = shapes.grad_shard
        self.expert_axes = expert_grad_axes(scn)
        self.expert_group_size = shapes.expert_dp
        self.sequence_parallel = shapes.sequence_parallel
        self.grad_bytes = BYTES_PER_ELEMENT[scn.parallel.grad_reduce_dtype]
        self.n_micro = scn.n_micro
        t = scn.training
        fsdp = scn.parallel.zero == 3
        # fp8_param_gather: the weights gathered as FP8 (fp8.gathered_in_fp8), by name
        self.fp8_weights = {m.name for c in chunks for u in c for m in u.modules
                            if t.fp8_param_gather and fp8.gathered_in_fp8(m.name, m.expert, fsdp)}
        self.fp8_weight_bytes = fp8.gathered_bytes(t.fp8_recipe)

    def weight_bytes(self, name: str) -> float:
        """Bytes per element of weight ``name`` in a parameter AllGather."""
        return self.fp8_weight_bytes if name in self.fp8_weights else PARAM_BYTES

    def fp8_amax_allreduce(self, pb: ProgramBuilder, deps: tuple[int, ...], expert: bool) -> tuple[int, ...]:
        """fp8_param_gather: after the step, one AllReduce of the amaxes (4 bytes each) of the FP8
        weights of the dense or the expert part, over the group that gathers them."""
        names = [m.name for c in self.chunks for u in c for m in u.modules
                 if m.name in self.fp8_weights and m.expert == expert]
        axes = self.expert_axes if expert else self.axes
        if not names or not axes:
            return ()
        return (self._comm(pb, f"fp8.param_amax.{'edp' if expert else 'dp'}.allreduce", "allreduce", 4 * len(names),
                           deps, Tag("opt"), dtype="fp32", axes=axes),)

    def before_forward(self, pb: ProgramBuilder, unit: ParamUnit, mb: int, after: int) -> dict[str, tuple[int, ...]]:
        """Ops each compute block of `unit` must wait for (parameter AllGathers)."""
        return {}

    def before_backward(self, pb: ProgramBuilder, unit: ParamUnit, mb: int, after: int) -> dict[str, tuple[int, ...]]:
        return {}

    def after_backward(self, pb: ProgramBuilder, unit: ParamUnit, mb: int, after: int) -> None:
        """`after`: the op after which every gradient of `unit` for micro-batch `mb` is ready."""

    def gate(self, mb: int) -> Gate | None:
        """A hook the layer builder calls before each weight GEMM of micro-batch `mb`
        (:data:`simulator.schedule.transformer.Gate`), or None: the block-level waits suffice."""
        return None

    def accumulate(self, pb: ProgramBuilder, chunk: int, mb: int, after: int) -> int:
        """After micro-batch `mb`'s backward of model chunk `chunk`: work on its gradients that
        the pass itself includes (before its gradient is sent on); returns the pass's last op.
        Here: without gradient-accumulation fusion, autograd's in-place sum of each weight
        gradient into the accumulated one (:func:`unfused_accumulate_bytes`), a kernel per tensor."""
        if self.scn.parallel.gradient_accumulation_fusion or self.scn.parallel.zero >= 2:
            return after
        mods = [m for u in self.chunks[chunk] for m in u.modules]
        n = sum(m.numel for m in mods)
        per = unfused_accumulate_bytes(self.grad_bytes, mb)
        if not n or not per:
            return after
        return pb.add(ComputeOp(name=f"autograd.accumulate_grad.c{chunk}.mb{mb}", kind="elementwise",
                                flops=float(n), hbm_bytes=float(per * n), count=len(mods),
                                deps=(after,), tag=Tag("bwd", None, mb)))

    def end_backward(self, pb: ProgramBuilder, mb: int, after: int) -> int:
        """End of one micro-batch's backward; returns an op later compute must wait for, or -1."""
        return -1

    def finish(self, pb: ProgramBuilder, after: tuple[int, ...]) -> int:
        """Gradient clipping and the optimizer step (and whatever the ZeRO stage does around
        them); returns the last op."""
        mods = [m for c in self.chunks for u in c for m in u.modules]
        local = optimizer.LocalParams(tuple(
            -(-m.numel // (self.expert_optimizer_shard if m.expert else self.optimizer_shard)) for m in mods))
        deps = tuple(sorted(set(after + self.pending())))
        t = self.scn.training
        axes = self.norm_axes()
        return optimizer.step_ops(pb, t.optimizer, local, t.grad_clip, axes, grad_stream(axes), deps,
                                  t.master_bytes, t.state_bytes, t.optimizer_algorithm)

    def norm_axes(self) -> tuple[str, ...]:
        """The group the squared gradient norm is summed over: the shard group when the optimizer
        state is sharded (each rank holds a slice of the gradients), on that group's stream.
        With TP or PP the frameworks sum it over the model-parallel group too (Megatron's
        ``get_grad_stats_parallel_group``); that one-element AllReduce is left out: it is NCCL's
        latency once per step (tens of microseconds), and a group spanning the TP links would
        take from the TP collectives the exclusive use of their links that lets the replay time
        them in closed form."""
        p = self.scn.parallel
        if self.optimizer_shard > 1 and p.tp == 1 and p.pp == 1:
            return self.axes
        return ()

    optimizer_shard = 1
    expert_optimizer_shard = 1

    def pending(self) -> tuple[int, ...]:
        """Outstanding gradient collectives the optimizer step must wait for."""
        return ()

    def _comm(self, pb: ProgramBuilder, name: str, op: CollectiveKind, size: float, deps: tuple[int, ...], tag: Tag,
              dtype: str | None = None, axes: tuple[str, ...] | None = None) -> int:
        axes = self.axes if axes is None else axes
        return pb.add(make_comm(name, op, axes, int(size), deps, grad_stream(axes),
                                dtype or self.scn.parallel.grad_reduce_dtype, tag))


@dataclass
class _Bucket:
    numel: int
    last_unit: str  # the unit (in backward order) whose gradients complete the bucket
    modules: tuple[str, ...] = ()  # names of the parameters packed into it
    expert: bool = False  # an expert-parallel buffer's bucket (reduced over the expert-DP group)
    chunk: int = 0  # the model chunk (virtual pipeline stage) whose buffer holds it


def internlm_shards(numels: list[int], ranks: int) -> list[int]:
    """The elements each rank of a ZeRO group of ``ranks`` owns under InternLM's
    ``HybridZeroOptimizer._partition_param_list`` (InternLM fa7337b): the parameter tensors,
    largest first, each to the rank that owns the fewest elements so far (the first such rank);
    the ranks that own none are left out (they broadcast nothing)."""
    owned = [0] * ranks
    for n in sorted(numels, reverse=True):
        owned[owned.index(min(owned))] += n
    return [n for n in owned if n]


def make_buckets(units_bwd_order: list[ParamUnit], bucket_elements: int) -> list[_Bucket]:
    """Pack parameters in backward order into buckets of at least `bucket_elements` (Megatron
    closes a bucket once it reaches the size; a larger parameter gets a bucket of its own)."""
    out: list[_Bucket] = []
    cur, names = 0, []
    for u in units_bwd_order:
        for mod in reversed(u.modules):
            cur += mod.numel
            names.append(mod.name)
            if cur >= bucket_elements:
                out.append(_Bucket(cur, u.name, tuple(names)))
                cur, names = 0, []
        if cur and u is units_bwd_order[-1]:
            out.append(_Bucket(cur, u.name, tuple(names)))
    return out


class BucketedSync(GradSync):
    """DDP (zero 0) and ZeRO-1/2 as described in the module docstring."""

    def __init__(self, scn: Scenario, chunks: list[list[ParamUnit]]):
        super().__init__(scn, chunks)
        p = scn.parallel
        size = p.ddp_bucket_elements or max(40_000_000, 1_000_000 * self.group_size)
        self.zero = p.zero
        self.bf16_fp32_grads = p.zero == 1 and p.zero1_impl == "deepspeed-bf16"
        self.optimizer_shard = self.group_size if self.zero >= 1 else 1
        self.expert_optimizer_shard = self.expert_group_size if self.zero >= 1 else 1
        self.buckets: dict[str, list[_Bucket]] = {}
        self.all_buckets: list[_Bucket] = []
        for chunk, units in enumerate(chunks):
            # Megatron keeps expert parameters in buffers of their own (expert_parallel_buffers)
            for expert in (False, True):
                part = [ParamUnit(u.name, u.layer, tuple(m for m in u.modules if m.expert == expert)) for u in units]
                if not any(u.modules for u in part):
                    continue
                for b in make_buckets(list(reversed(part)), size):
                    b.expert, b.chunk = expert, chunk
                    self.buckets.setdefault(b.last_unit, []).append(b)
                    self.all_buckets.append(b)
        self._pending: list[int] = []
        self.overlap_grad_reduce = p.overlap_grad_reduce
        self._deferred: list[tuple[ParamUnit, int]] = []  # (unit, micro-batch) reduced after backward
        self.overlap_param_gather = p.overlap_param_gather and self.zero >= 1 and bool(self.axes)
        self.synced = bool(self.axes or self.expert_axes)
        self._gathered: dict[str, int] | None = None  # module name -> its bucket's AllGather op
        self._numel = {m.name: m.numel for c in chunks for u in c for m in u.modules}
        self._reductions: dict[str, tuple] = {}  # unit name -> its buckets' gradient collectives (_reductions_of)

    def before_forward(self, pb: ProgramBuilder, unit: ParamUnit, mb: int, after: int) -> dict[str, tuple[int, ...]]:
        if not self.overlap_param_gather:
            return {}
        if self._gathered is None:  # first forward of the step: dispatch every bucket's AllGather
            self._gathered = {}
            for i, b in self.gather_order():
                ag = self._param_allgather(pb, i, b, ())
                if ag >= 0:
                    self._gathered.update((name, ag) for name in b.modules)
        waits: dict[str, set[int]] = {}
        for m in unit.modules:
            if m.name in self._gathered:
                waits.setdefault(m.block, set()).add(self._gathered[m.name])
        return {block: tuple(sorted(ops)) for block, ops in waits.items()}

    def gather_order(self) -> list[tuple[int, _Bucket]]:
        """(index, bucket) in the order the overlapped parameter AllGathers are issued: model
        chunk by model chunk, each chunk's buckets in forward order (its buckets are packed in
        backward order, so reversed). Megatron-Core keeps the first model chunk first "since we
        want to still first run all_gather and all_gather_handle.wait() for the first model
        chunk" (``DistributedOptimizer._get_model_param_buffer_dp_views``,
        ``megatron/core/optimizer/distrib_optimizer.py`` @937571cf, lines 1356-1361): with the
        interleaved schedule the first forward, of chunk 0, waits only for chunk 0's gathers."""
        indexed = list(enumerate(self.all_buckets))
        return [ib for chunk in range(len(self.chunks)) for ib in reversed(indexed) if ib[1].chunk == chunk]

    def _bucket_axes(self, b: _Bucket) -> tuple[str, ...]:
        return self.expert_axes if b.expert else self.axes

    def _param_allgather(self, pb: ProgramBuilder, i: int, b: _Bucket, deps: tuple[int, ...]) -> int:
        if not self._bucket_axes(b):
            return deps[0] if deps else -1
        fp8_numel = sum(self._numel[n] for n in b.modules if n in self.fp8_weights)
        nbytes = b.numel * PARAM_BYTES - fp8_numel * (PARAM_BYTES - self.fp8_weight_bytes)
        return self._comm(pb, f"{'edp' if b.expert else 'dp'}.param.allgather.b{i}", "allgather",
                          nbytes, deps, Tag("opt"), dtype="fp8" if fp8_numel == b.numel else "bf16",
                          axes=self._bucket_axes(b))

    def after_backward(self, pb: ProgramBuilder, unit: ParamUnit, mb: int, after: int) -> None:
        every_mb = self.zero == 2
        if not self.synced or (mb != self.n_micro - 1 and not every_mb):
            return
        if not self.overlap_grad_reduce:
            self._deferred.append((unit, mb))
            return
        self._reduce(pb, unit, mb, (after,))

    def _reduce_deferred(self, pb: ProgramBuilder, deps: tuple[int, ...]) -> None:
        """Without overlap every bucket is reduced once the backward is over, in backward order:
        Megatron's ``finalize_model_grads`` → ``finish_grad_sync`` (no ``--overlap-grad-reduce``),
        DeepSpeed ZeRO-2 without ``overlap_comm`` after each micro-batch's backward."""
        for unit, mb in self._deferred:
            self._reduce(pb, unit, mb, deps)
        self._deferred = []

    def accumulate(self, pb: ProgramBuilder, chunk: int, mb: int, after: int) -> int:
        if not self.bf16_fp32_grads:
            return super().accumulate(pb, chunk, mb, after)
        mods = [m for u in self.chunks[chunk] for m in u.modules]
        n = sum(m.numel for m in mods)
        return pb.add(ComputeOp(name=f"bf16_optimizer.update_hp_grads.c{chunk}.mb{mb}", kind="elementwise",
                                flops=float(n), hbm_bytes=HP_GRAD_UPDATE_BYTES * n, count=2 * len(mods),
                                deps=(after,), tag=Tag("bwd", None, mb)))

    def end_backward(self, pb: ProgramBuilder, mb: int, after: int) -> int:
        if self.zero != 2 or not self._deferred:
            return -1
        n = len(self._pending)
        self._reduce_deferred(pb, (after,))
        return self._pending[-1] if len(self._pending) > n else -1  # the next micro-batch waits

    def _reduce(self, pb: ProgramBuilder, unit: ParamUnit, mb: int, deps: tuple[int, ...]) -> None:
        """The gradient collectives of ``unit``'s buckets for micro-batch ``mb`` (a ZeRO-2 step
        issues them for every micro-batch: their fields but the name's micro-batch, the deps and
        the tag are the unit's, :meth:`_reductions_of`)."""
        reductions = self._reductions.get(unit.name)
        if reductions is None:
            reductions = self._reductions[unit.name] = self._reductions_of(unit)
        if not reductions:
            return
        tag, suffix, pending = make_tag("bwd", unit.layer, mb, None), f".mb{mb}", self._pending
        blocking = not self.overlap_grad_reduce and self.has_pre_passes
        for name, op, axes, size, stream, dtype, numel, factor in reductions:
            if blocking and pending:  # the compute stream waits for the previous synchronous collective
                deps = tuple(sorted(set(deps) | {pending[-1]}))
            pre = self._pre_reduction_passes(pb, name + suffix, numel, factor, deps, tag)
            pending.append(pb.add(make_comm(name + suffix, op, axes, size, pre, stream, dtype, tag)))

    @property
    def has_pre_passes(self) -> bool:
        p = self.scn.parallel
        return p.ddp_grad_check != "none" or p.ddp_grad_scaling != "none"

    def scaling_factor(self, expert: bool) -> float:
        """``gradient_scaling_factor`` of a dense or expert bucket (module docstring); 1 where no
        pass is priced (``ddp_grad_scaling: none``)."""
        mode, group = self.scn.parallel.ddp_grad_scaling, self.group_size
        if mode == "buffer":
            return 1.0 / group
        if mode == "collective" and expert:
            return self.expert_group_size / group
        return 1.0

    def _pre_reduction_passes(self, pb: ProgramBuilder, name: str, numel: int, factor: float,
                              deps: tuple[int, ...], tag: Tag) -> tuple[int, ...]:
        """Megatron-Core DDP's NaN check and in-buffer average of one bucket (module docstring);
        returns what its collective waits for."""
        check = self.scn.parallel.ddp_grad_check
        if check != "none":
            deps = (pb.add(ComputeOp(name=f"{name}.check_grads.norm", kind="elementwise", flops=2.0 * numel,
                                     hbm_bytes=float(self.grad_bytes * numel), deps=deps, tag=tag)),)
            for test in GRAD_CHECK_TESTS[check]:
                deps = (pb.add(ComputeOp(name=f"{name}.check_grads.{test}", kind="elementwise", flops=1.0,
                                         hbm_bytes=8.0, deps=deps, tag=tag, host_sync=True)),)
        if factor != 1.0:
            deps = (pb.add(ComputeOp(name=f"{name}.scale", kind="elementwise", flops=float(numel),
                                     hbm_bytes=float(2 * self.grad_bytes * numel), deps=deps, tag=tag)),)
        return deps

    def _reductions_of(self, unit: ParamUnit) -> tuple[tuple[str, CollectiveKind, tuple[str, ...], int, str, str,
                                                             int, float], ...]:
        """(name before its micro-batch, kind, axes, bytes, stream, dtype, elements, scaling factor)
        of each collective :meth:`_reduce` issues for ``unit``, as :meth:`_comm` makes them."""
        whole = self.zero == 0 or self.bf16_fp32_grads or self.scn.parallel.zero1_impl == "internlm"
        op: CollectiveKind = "allreduce" if whole else "reducescatter"
        out = []
        for i, b in enumerate(self.buckets.get(unit.name, ())):
            axes = self._bucket_axes(b)
            if axes:
                out.append((f"{'edp' if b.expert else 'dp'}.grad.{op}.{unit.name}.b{i}", op, axes,
                            int(b.numel * self.grad_bytes), grad_stream(axes),
                            self.scn.parallel.grad_reduce_dtype, b.numel, self.scaling_factor(b.expert)))
        return tuple(out)

    def pending(self) -> tuple[int, ...]:
        return tuple(self._pending)

    def tied_embedding_allreduce(self, pb: ProgramBuilder, after: tuple[int, ...]) -> tuple[int, ...]:
        """With tied embeddings and pp > 1 the first stage holds the word embedding and the last a
        copy of it as the LM head; once per step their gradients are summed over the two
        (Megatron ``finalize_model_grads`` → ``_allreduce_word_embedding_grads`` over the
        embedding group; DeepSpeed's ``_exec_reduce_tied_grads``). A ring AllReduce over two
        ranks sends and receives the whole gradient once (half in its ReduceScatter, half in its
        AllGather): one exchange of that size between stage 0 and stage pp − 1, the neighbours
        of the pipeline ring's wrap-around (offset −1 / +1 along ``pp``)."""
        scn = self.scn
        if not (scn.model.tied_embeddings and scn.parallel.pp > 1):
            return after
        units = {u.name: u for c in self.chunks for u in c}
        if "embedding" in units:
            offset, send_key, recv_key = -1, "pp.tied_embedding.first_to_last", "pp.tied_embedding.last_to_first"
        elif "head" in units and any(m.name == "lm_head" for m in units["head"].modules):
            offset, send_key, recv_key = +1, "pp.tied_embedding.last_to_first", "pp.tied_embedding.first_to_last"
        else:
            return after
        # the word embedding's share of the unit (the first stage's also holds position embeddings)
        nbytes = scn.model.vocab * scn.model.hidden // scn.parallel.tp * self.grad_bytes
        x = pb.add(P2POp(name="pp.tied_embedding.grad_allreduce", sends=(Transfer("pp", offset, nbytes, send_key),),
                         recvs=(Transfer("pp", offset, nbytes, recv_key),), deps=after, tag=Tag("opt")))
        return after + (x,)

    def _broadcast_shards(self, pb: ProgramBuilder, step: int) -> int:
        """InternLM's ``broadcast_params``: every rank that owns parameters broadcasts its flat
        bf16 shard (:func:`internlm_shards`) to the data-parallel group, one ``dist.broadcast``
        per owner, issued in rank order on the one communicator's stream: the calls run one
        after another, each paying its ring's pipeline over the whole group."""
        last = step
        numels = [m.numel for c in self.chunks for u in c for m in u.modules if not m.expert]
        for rank, numel in enumerate(internlm_shards(numels, self.group_size)):
            last = self._comm(pb, f"dp.param.broadcast.r{rank}", "broadcast", numel * PARAM_BYTES, (last,),
                              Tag("opt"), dtype="bf16")
        return last

    def finish(self, pb: ProgramBuilder, after: tuple[int, ...]) -> int:
        self._reduce_deferred(pb, after)
        after = self.tied_embedding_allreduce(pb, after)
        if self.sequence_parallel:
            # grads of the SP-replicated norm weights are summed over tp once per step
            # (megatron finalize_model_grads._allreduce_non_tensor_model_parallel_grads)
            norms = sum(m.numel for c in self.chunks for u in c for m in u.modules if "ln" in m.name or "norm" in m.name)
            ar = pb.add(CommOp(name="tp.norm_grads.allreduce", op="allreduce", axes=("tp",),
                               size_bytes=norms * self.grad_bytes, deps=after, tag=Tag("opt")))
            after = after + (ar,)
        step = super().finish(pb, after)
        if self.zero == 0 or not self.synced:
            return step
        amax = {expert: self.fp8_amax_allreduce(pb, (step,), expert) for expert in (False, True)}
        if self.overlap_param_gather:  # the gathers run in the next step's forward
            return max((step, *amax[False], *amax[True]))
        if self.scn.parallel.zero1_impl == "internlm":
            return self._broadcast_shards(pb, step)
        last = step
        for i, b in enumerate(self.all_buckets):
            if self._bucket_axes(b):
                last = self._param_allgather(pb, i, b, amax[b.expert] or (step,))
        return max((last, *amax[False], *amax[True]))

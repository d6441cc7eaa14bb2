"""ZeRO-3: DeepSpeed stage 3 and PyTorch FSDP2, as :class:`GradSync` hooks.

**DeepSpeed** (MECHANICS.md §1.1-1.5, ``partitioned_param_coordinator.py``, ``stage3.py``):
every parameter is padded to a multiple of the shard group N and gathered by module. We replay
the coordinator's prefetch logic over the recorded trace (forward modules, then backward in
reverse): at a module's pre-hook, a demand AllGather if its parameters are not there, then one
coalesced prefetch AllGather popping trace entries while the prefetched count is below
``min(max_live − available, prefetch_bucket)`` (the last entry may overshoot; entries already
available are skipped); at the post-hook the module is released unless the prefetcher has already popped a later use
of it (it skipped that use because the module was available; ``__params_to_release`` keeps
such a module) or it recurs within ``max_reuse_distance`` elements of trace — which keeps the
last forward layers resident for backward. Parameters of at most ``param_persistence_threshold`` elements (norms) are persistent:
gathered once per step after the optimizer. Gradients go into an IPG bucket flushed by a
ReduceScatter when the next gradient would overflow ``reduce_bucket_size``; the residual bucket
is reduced at the end of every micro-batch's backward and waited for (exposed). Each AllGather
is followed by the full-size unflatten copy.

Deviations: the hooks are per transformer layer, so the AllGathers issued by the modules of one
layer are issued at the layer start, and each compute block (attention, MLP) waits for the
gathers of its modules; host run-ahead (about 3 fetches) is modelled as "a layer's gathers are
issued once the previous layer's compute has started".

**FSDP2** (§1.6, ``torch/distributed/fsdp/_fully_shard``): one parameter group per transformer
layer plus a root group (embedding, final norm, LM head; not resharded after forward). Forward
prefetches the next group once the current one has been copied out (one AllGather buffer in
flight); backward re-gathers (``reshard_after_forward``) and prefetches exactly one group; each
group's gradients are copied into one buffer and reduce-scattered, and that copy waits for the
previous group's ReduceScatter (at most one outstanding). With ``parallel.fsdp_grad_sync:
optim_step`` (NeMo AutoModel's MoE models under PP, ``patched_backward_maybe_with_nosync`` in
nemo_automodel/components/moe/fsdp_mixin.py) no backward but the step's last reduce-scatters or
reshards: a group gathered by a backward stays gathered until its next forward (which reshards it
only under ``reshard_after_forward``), and after each virtual stage's last backward every group's
ReduceScatter runs, then the root's final callback makes the compute stream wait for them. Without
PP the same deferral is AutoModel's ``MoEFSDPSyncMixin.prepare_for_grad_accumulation`` (no sync, no
reshard after backward, the benchmark recipe calls it before the first micro-batch when the
config's ``backend.enable_fsdp_optimizations`` is set) and ``prepare_for_final_backward`` (sync and
reshard on before the last micro-batch; recipes/llm/benchmark.py at 08a48f76): the last backward
runs FSDP's own hooks, each group reduce-scattering as its backward ends, and the root's callback
waits for them at the end of that backward. ``fsdp_grad_sync: no_sync`` is FSDP2's
``set_requires_gradient_sync(False)`` on every micro-batch but the last (AutoModel's ``get_sync_ctx``,
components/distributed/utils.py, used by train_ft's ``_forward_backward_step`` without PP): the
gradients accumulate unsharded and only the last backward reduce-scatters, group by group, while
parameters are resharded and re-gathered as without it.

Sizes (nccl-tests convention): AllGather output ``N·Σ⌈n/N⌉·2`` bytes, ReduceScatter input
``N·Σ⌈n/N⌉·B_g``; per micro-batch that is about 3Ψ on the wire against DDP's 2Ψ per step.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.config.scenario import Scenario
from simulator.schedule import optimizer
from simulator.schedule.checkpointing import recomputed_layers
from simulator.schedule.data_parallel import PARAM_BYTES, GradSync, grad_stream
from simulator.schedule.ir import ComputeOp, Gate, Phase, ProgramBuilder, Tag
from simulator.schedule.shapes import Module, ParamUnit


def padded(numel: int, n: int) -> int:
    """Elements of a parameter padded to a multiple of n (DeepSpeed ``_aligned_size``)."""
    return -(-numel // n) * n


def persistent_copies(numel: int, n: int) -> int:
    """The ``copy_`` calls DeepSpeed 0.3.13's ``_allgather_params`` makes for one parameter of
    ``numel`` elements over ``n`` ranks: one per rank whose partition (``ceil(numel / n)``
    elements, ``_aligned_size`` over ``n``) starts inside the parameter
    (``partition_parameters.py`` lines 681-693: ``if param_start < param_size``), so
    ``ceil(numel / ceil(numel / n))``: ``n`` when ``n`` divides ``numel``, fewer when the last
    partitions are padding only (GPT-530B's 20,480-element LayerNorms over 2,240 ranks: 2,048)."""
    return -(-numel // -(-numel // n))


@dataclass(frozen=True)
class _Fetch:
    modules: tuple[Module, ...]

    def numel(self, n: int) -> int:
        return sum(padded(m.numel, n) for m in self.modules)


class DeepSpeedZero3(GradSync):
    def __init__(self, scn: Scenario, chunks: list[list[ParamUnit]]):
        super().__init__(scn, chunks)
        p = scn.parallel
        self.optimizer_shard = self.group_size
        units = [u for c in chunks for u in c]
        self.persistent = tuple(m for u in units for m in u.modules if m.numel <= p.zero3_param_persistence_threshold)
        pers = {m.name for m in self.persistent}
        fwd: list[tuple[Module, str, Phase]] = [(m, u.name, "fwd") for u in units for m in u.modules if m.name not in pers]
        bwd: list[tuple[Module, str, Phase]] = [(m, u.name, "bwd") for u in reversed(units)
                                                      for m in reversed(u.modules) if m.name not in pers]
        self.trace = fwd + bwd
        # per (unit, phase): fetches to issue, and per block the fetch ids to wait for
        self.issues: dict[tuple[str, Phase], list[int]] = {}
        self.waits: dict[tuple[str, Phase], dict[str, set[int]]] = {}
        self.fetches: list[_Fetch] = []
        self._numel = {m.name: m.numel for m, _, _ in self.trace}
        self._plan(p.zero3_max_live_parameters, p.zero3_prefetch_bucket_elements, p.zero3_max_reuse_distance)
        # each fetch's AllGather output, the same for every micro-batch
        self._fetch_bytes = [f.numel(self.group_size) * PARAM_BYTES for f in self.fetches]
        self._bucket: int = 0
        self._last_rs = -1
        self._prev_unit_after = -1
        self._ops: dict[int, int] = {}

    def _plan(self, max_live: int, bucket: int, reuse: int) -> None:
        trace = self.trace
        n = len(trace)
        prefix = [0]
        for m, _, _ in trace:
            prefix.append(prefix[-1] + m.numel)
        nxt = [n] * n
        last_seen: dict[str, int] = {}
        for i in range(n - 1, -1, -1):
            nxt[i] = last_seen.get(trace[i][0].name, n)
            last_seen[trace[i][0].name] = i
        avail: dict[str, int] = {}  # module -> fetch id (available or in flight)
        # module -> the latest trace position the prefetcher popped for it (DeepSpeed's
        # __most_recent_step_id_param_fetched_for): a module whose later use was popped while
        # it was available is skipped by the prefetcher, so it must not be released before
        # that use (__params_to_release keeps it), else that use re-gathers it on demand.
        popped_for: dict[str, int] = {}
        q = 0
        numel = self._numel
        n_avail = 0  # elements of every parameter in avail (DeepSpeed's n_available), kept as avail changes
        for i, (mod, unit, phase) in enumerate(trace):
            key = (unit, phase)
            issues = self.issues.setdefault(key, [])
            if mod.name not in avail:
                self.fetches.append(_Fetch((mod,)))
                avail[mod.name] = len(self.fetches) - 1
                n_avail += numel[mod.name]
                issues.append(len(self.fetches) - 1)
            q = max(q, i + 1)
            budget = min(max_live - n_avail, bucket)
            batch: list[Module] = []
            got = 0
            while q < n and got < budget:
                e = trace[q][0]
                popped_for[e.name] = q
                q += 1
                if e.name in avail:
                    continue
                batch.append(e)
                got += e.numel
                avail[e.name] = -1
                n_avail += numel[e.name]
            if batch:
                self.fetches.append(_Fetch(tuple(batch)))
                fid = len(self.fetches) - 1
                issues.append(fid)
                for e in batch:
                    avail[e.name] = fid
            self.waits.setdefault(key, {}).setdefault(mod.block, set()).add(avail[mod.name])
            # post-hook release, unless the prefetcher already popped a later use or it recurs soon
            if popped_for.get(mod.name, -1) > i:
                continue
            if (nxt[i] >= n or prefix[nxt[i]] - prefix[i + 1] > reuse) and mod.name in avail:
                del avail[mod.name]
                n_avail -= numel[mod.name]

    def _issue(self, pb: ProgramBuilder, key: tuple[str, Phase], mb: int, after: int, layer: int | None) -> dict[str, tuple[int, ...]]:
        phase = key[1]
        tag = Tag(phase, layer, mb)
        dep = (self._prev_unit_after,) if self._prev_unit_after >= 0 else ()
        for fid in self.issues.get(key, ()):
            size = self._fetch_bytes[fid]
            ag = self._comm(pb, f"zero3.ag.f{fid}.mb{mb}", "allgather", size, dep, tag, dtype="bf16")
            self._ops[fid] = pb.add(ComputeOp(name=f"zero3.ag.f{fid}.mb{mb}.unflatten", kind="copy",
                                              hbm_bytes=2.0 * size, deps=(ag,), stream="zero3.copy", tag=tag))
        self._prev_unit_after = after
        return {blk: tuple(sorted(self._ops[f] for f in fids)) for blk, fids in self.waits.get(key, {}).items()}

    def before_forward(self, pb: ProgramBuilder, unit: ParamUnit, mb: int, after: int) -> dict[str, tuple[int, ...]]:
        if not self.axes:
            return {}
        return self._issue(pb, (unit.name, "fwd"), mb, after, unit.layer)

    def before_backward(self, pb: ProgramBuilder, unit: ParamUnit, mb: int, after: int) -> dict[str, tuple[int, ...]]:
        if not self.axes:
            return {}
        return self._issue(pb, (unit.name, "bwd"), mb, after, unit.layer)

    def _flush(self, pb: ProgramBuilder, mb: int, after: int, layer: int | None) -> None:
        if self._bucket:
            self._last_rs = self._comm(pb, f"zero3.rs.mb{mb}.{len(pb)}", "reducescatter",
                                       self._bucket * self.grad_bytes, (after,), Tag("bwd", layer, mb))
            self._bucket = 0

    def after_backward(self, pb: ProgramBuilder, unit: ParamUnit, mb: int, after: int) -> None:
        if not self.axes:
            return
        limit = self.scn.parallel.zero3_reduce_bucket_elements
        for m in reversed(unit.modules):
            numel = padded(m.numel, self.group_size)
            if self._bucket and self._bucket + numel > limit:
                self._flush(pb, mb, after, unit.layer)
            self._bucket += numel

    def end_backward(self, pb: ProgramBuilder, mb: int, after: int) -> int:
        if not self.axes:
            return -1
        self._flush(pb, mb, after, None)
        self._prev_unit_after = -1
        return self._last_rs

    def pending(self) -> tuple[int, ...]:
        return (self._last_rs,) if self._last_rs >= 0 else ()

    def finish(self, pb: ProgramBuilder, after: tuple[int, ...]) -> int:
        return persistent_gather(self, pb, super().finish(pb, after), self.persistent)


def persistent_gather(sync: GradSync, pb: ProgramBuilder, step: int, persistent: tuple[Module, ...]) -> int:
    """Parameters below the persistence threshold stay gathered; after the optimizer step one
    AllGather refreshes them."""
    if not sync.axes or not persistent:
        return step
    size = sum(padded(m.numel, sync.group_size) for m in persistent) * PARAM_BYTES
    return sync._comm(pb, "zero3.persistent.allgather", "allgather", size, (step,), Tag("opt"), dtype="bf16")


class Fsdp2(GradSync):
    """FSDP2 per the module docstring. Routed-expert weights form a group of their own sharded over
    the expert-DP ranks (torchtitan and NeMo AutoModel ``fully_shard`` the experts on the
    data-parallel mesh with the EP dimension taken out): their AllGather and ReduceScatter run
    next to the layer's, on that group's stream."""

    def __init__(self, scn: Scenario, chunks: list[list[ParamUnit]]):
        super().__init__(scn, chunks)
        self.optimizer_shard = self.group_size
        self.expert_optimizer_shard = self.expert_group_size
        self.units = [u for c in chunks for u in c]
        self.root = [u for u in self.units if u.layer is None]
        self.layers = [u for u in self.units if u.layer is not None]
        self.reshard = scn.parallel.fsdp_reshard_after_forward
        self._ag: dict[str, tuple[int, ...]] = {}  # "<group>.<phase>.mb<k>" -> its AllGather ops
        self._copy_out = -1
        self._last_rs: tuple[int, ...] = ()
        self._root_done: dict[int, int] = {}
        self.synced = bool(self.axes or self.expert_axes)
        # fsdp_grad_sync optim_step: groups left gathered by a backward without resharding, and
        # the groups whose post_backward waits for the end of the stage's last backward
        self.once = scn.parallel.fsdp_grad_sync == "optim_step"
        # without PP the last backward runs FSDP's own hooks (AutoModel's prepare_for_final_backward):
        # each group reduce-scatters as its backward ends, as in every backward without the deferral
        self.hooked_final = self.once and scn.parallel.pp == 1
        # fsdp_grad_sync no_sync: set_requires_gradient_sync(False) but for the last micro-batch
        self.no_sync = scn.parallel.fsdp_grad_sync == "no_sync"
        self._unsharded: set[str] = set()
        self._inflight: dict[str, str] = {}  # group -> the key of its forward AllGather not yet copied out
        self._final: list[tuple[str, list[ParamUnit]]] = []

    def _parts(self, units: list[ParamUnit]) -> list[tuple[str, tuple[str, ...], int, float]]:
        """(label, group axes, padded elements, gathered bytes) of the dense and the expert part of
        `units`; FP8 weights travel at 1 byte under fp8_param_gather."""
        out = []
        for expert, label, axes, n in ((False, "", self.axes, self.group_size),
                                       (True, ".experts", self.expert_axes, self.expert_group_size)):
            mods = [m for u in units for m in u.modules + u.shares if m.expert == expert]
            numel = sum(padded(m.numel, n) for m in mods)
            if numel and axes:
                out.append((label, axes, numel, sum(padded(m.numel, n) * self.weight_bytes(m.name) for m in mods)))
        return out

    def _size(self, units: list[ParamUnit]) -> int:
        return sum(n for _, _, n, _ in self._parts(units))

    def _gathered_bytes(self, units: list[ParamUnit]) -> float:
        return sum(b for _, _, _, b in self._parts(units))

    def _gather(self, pb: ProgramBuilder, name: str, units: list[ParamUnit], mb: int, phase: Phase,
                deps: tuple[int, ...]) -> tuple[int, ...]:
        key = f"{name}.{phase}.mb{mb}"
        if self.once and phase == "fwd":  # a prefetch still in flight serves whichever forward comes first
            key = self._inflight.setdefault(name, key)
        if key not in self._ag:
            self._ag[key] = tuple(
                self._comm(pb, f"fsdp.ag.{name}{label}.{phase}.mb{mb}", "allgather", nbytes,
                           tuple(d for d in deps if d >= 0), Tag(phase, units[0].layer, mb),
                           dtype="bf16", axes=axes)
                for label, axes, _, nbytes in self._parts(units))
        return self._ag[key]

    def _unshard(self, pb: ProgramBuilder, name: str, units: list[ParamUnit], mb: int) -> int:
        """wait_for_unshard: copy-out of the gathered buffer on the compute stream; the next
        copy-in (AllGather) waits for it, so one gather buffer is in flight."""
        ags = self._gather(pb, name, units, mb, "fwd", (self._copy_out,))
        self._inflight.pop(name, None)
        self._copy_out = pb.add(ComputeOp(name=f"fsdp.copy_out.{name}.fwd.mb{mb}", kind="copy",
                                          hbm_bytes=2.0 * self._gathered_bytes(units),
                                          deps=ags or ((self._copy_out,) if self._copy_out >= 0 else ()),
                                          tag=Tag("fwd", units[0].layer, mb)))
        return self._copy_out

    def _next_layer(self, unit: ParamUnit, step: int) -> ParamUnit | None:
        if unit.layer is None:
            return None
        i = self.layers.index(unit) + step
        return self.layers[i] if 0 <= i < len(self.layers) else None

    def _held(self, name: str, mb: int) -> bool:
        """Whether group `name` is still gathered when micro-batch `mb`'s forward reaches it: the
        root is kept across the forward; under ``fsdp_grad_sync: optim_step`` a group stays
        gathered from its backward (nothing resharded) to its next forward."""
        return name in self._unsharded if self.once else name == "root" and f"root.fwd.mb{mb}" in self._ag

    def before_forward(self, pb: ProgramBuilder, unit: ParamUnit, mb: int, after: int) -> dict[str, tuple[int, ...]]:
        if not self.synced:
            return {}
        root_ready = -1
        if self.root and not self._held("root", mb):
            root_ready = self._unshard(pb, "root", self.root, mb)
            if self.once:  # the root is not resharded after forward
                self._unsharded.add("root")
        if unit.layer is None:
            ready = root_ready if root_ready >= 0 else self._copy_out
            return {"emb": (ready,), "head": (ready,)} if ready >= 0 else {}
        waits: tuple[int, ...] = ()
        if not self._held(unit.name, mb):
            waits = (self._unshard(pb, unit.name, [unit], mb),)
        if self.once:  # post_forward reshards a group unless reshard_after_forward is off
            (self._unsharded.discard if self.reshard else self._unsharded.add)(unit.name)
        nxt = self._next_layer(unit, +1)
        if nxt is not None and not self._held(nxt.name, mb):
            self._gather(pb, nxt.name, [nxt], mb, "fwd", (self._copy_out,))
        return {"attn": waits, "mlp": waits}

    def before_backward(self, pb: ProgramBuilder, unit: ParamUnit, mb: int, after: int) -> dict[str, tuple[int, ...]]:
        if not self.synced or unit.layer is None or not self.reshard:
            return {}
        ready = self._gather(pb, unit.name, [unit], mb, "bwd", (after,))
        prev = self._next_layer(unit, -1)
        if prev is not None:  # backward prefetch: exactly one group
            self._gather(pb, prev.name, [prev], mb, "bwd", ready)
        return {"attn": ready, "mlp": ready}

    def after_backward(self, pb: ProgramBuilder, unit: ParamUnit, mb: int, after: int) -> None:
        if not self.synced:
            return
        if unit.layer is None:
            self._root_done[mb] = self._root_done.get(mb, 0) + 1
            if self._root_done[mb] < len(self.root):
                return
            units, name = self.root, "root"
        else:
            units, name = [unit], unit.name
        if self.no_sync:  # the gradient accumulates unsharded until the last micro-batch reduces it
            self._accumulate_unsharded(pb, name, units, mb, after)
            if mb == self.n_micro - 1:
                self._reduce_scatter(pb, name, units, mb, after)
            return
        if not self.once:
            self._reduce_scatter(pb, name, units, mb, after)
            return
        self._accumulate_unsharded(pb, name, units, mb, after)
        if mb < self.n_micro - 1:  # no sync, no reshard: the gradient accumulates unsharded
            self._unsharded.add(name)
        elif self.hooked_final:  # the step's last backward, sync on: the group's post_backward hook
            self._reduce_scatter(pb, name, units, mb, after)
        else:  # the step's last backward under PP: post_backward runs once the stage's backward is done
            self._final.append((name, units))

    def _accumulate_unsharded(self, pb: ProgramBuilder, name: str, units: list[ParamUnit], mb: int, after: int) -> None:
        """Without gradient sync the group's unsharded gradient accumulates across micro-batches
        (FSDP2 ``FSDPParam.to_accumulated_grad_if_needed`` / ``accumulate_unsharded_grad_if_needed``,
        torch/distributed/fsdp/_fully_shard/_fsdp_param.py; autograd's AccumulateGrad when the
        reduction is in the parameters' dtype): the first backward's bf16 gradient is cast to the
        reduce dtype (read 2 B, write B_g; nothing when B_g = 2), each later one is added to the
        accumulator (read 2 B + B_g, write B_g)."""
        numel = self._size(units)
        per = PARAM_BYTES + 2 * self.grad_bytes if mb else (PARAM_BYTES + self.grad_bytes
                                                           if self.grad_bytes != PARAM_BYTES else 0)
        if numel and per:
            pb.add(ComputeOp(name=f"fsdp.grad_accumulate.{name}.mb{mb}", kind="elementwise", flops=float(numel),
                             hbm_bytes=float(per * numel), deps=(after,), tag=Tag("bwd", units[0].layer, mb)))

    def _reduce_scatter(self, pb: ProgramBuilder, name: str, units: list[ParamUnit], mb: int, after: int) -> None:
        """post_backward of one group: its gradients copied into one buffer (after the previous
        group's ReduceScatter) and reduce-scattered, per dense and expert part."""
        parts = self._parts(units)
        if not parts:
            return
        deps = (after,) + self._last_rs
        tag = Tag("bwd", units[0].layer, mb)
        copy_in = pb.add(ComputeOp(name=f"fsdp.rs_copy_in.{name}.mb{mb}", kind="copy",
                                   hbm_bytes=2.0 * self._size(units) * self.grad_bytes, deps=deps, tag=tag))
        self._last_rs = tuple(self._comm(pb, f"fsdp.rs.{name}{label}.mb{mb}", "reducescatter", numel * self.grad_bytes,
                                         (copy_in,), tag, axes=axes) for label, axes, numel, _ in parts)

    def accumulate(self, pb: ProgramBuilder, chunk: int, mb: int, after: int) -> int:
        """``fsdp_grad_sync: optim_step`` (NeMo AutoModel's ``patched_backward_maybe_with_nosync``
        for a ``MoEFSDPSyncMixin`` stage, nemo_automodel/components/moe/fsdp_mixin.py): after the
        stage's last backward of the step, ``_run_post_backward_for_moe_module`` runs every group's
        ``post_backward`` (its ReduceScatter, the groups in turn) and then the root's
        ``_root_post_backward_final_callback``, which makes the compute stream wait for them: the
        pass ends, and its gradient goes to the previous stage, once they are done."""
        if not self._final:
            return after
        for name, units in self._final:
            self._reduce_scatter(pb, name, units, mb, after)
            self._unsharded.discard(name)
        self._final = []
        if not self._last_rs:
            return after
        return pb.add(ComputeOp(name=f"fsdp.post_backward_wait.c{chunk}.mb{mb}", kind="copy", hbm_bytes=0.0,
                                deps=(after,) + self._last_rs, tag=Tag("bwd", None, mb)))

    def end_backward(self, pb: ProgramBuilder, mb: int, after: int) -> int:
        if (self.once or self.no_sync) and not ((self.hooked_final or self.no_sync) and mb == self.n_micro - 1):
            return -1
        return self._last_rs[-1] if self._last_rs else -1

    def pending(self) -> tuple[int, ...]:
        return self._last_rs

    def finish(self, pb: ProgramBuilder, after: tuple[int, ...]) -> int:
        """The optimizer step, then under fp8_param_gather torchtitan's
        ``precompute_float8_dynamic_scale_for_fsdp``: one AllReduce of the FP8 weights' amaxes."""
        step = super().finish(pb, after)
        return max((step, *self.fp8_amax_allreduce(pb, (step,), expert=False),
                    *self.fp8_amax_allreduce(pb, (step,), expert=True)))


# -- DeepSpeed ZeRO-3 as released in 2021 ---------------------------------------------------------

GEMMS = ("qkv", "proj", "fc1", "fc2")  # the weight GEMMs of a dense layer, in forward order
# Parameters of the schedule's modules each GEMM reads. Megatron-LM holds the QKV projection as one
# tensor (query_key_value) and, gated, the two up projections as one (the fused GEMM the schedule
# runs), so each GEMM is one parameter; the layer norms run in the blocks before qkv and fc1.
_GEMM_OF = {"q": "qkv", "k": "qkv", "v": "qkv", "ln1": "qkv", "mamba": "qkv", "o": "proj", "ln2": "fc1", "fc1": "fc1",
            "gate": "fc1", "up": "fc1", "fc2": "fc2", "down": "fc2"}
_FUSED = {"q": "qkv", "k": "qkv", "v": "qkv", "gate": "fc1", "up": "fc1"}
_NORMS = ("ln1", "ln2", "final_norm")
# CPU microseconds per rank of the 2021 host loops, measured with benchmarks/bench_zero3_host_loop.py
# (PyTorch 2.13, Python 3.11, CPU time of the process; a lower bound for PyTorch 1.8 and Python 3.8
# on the DGX A100's EPYC 7742, which were not faster).
GATHER_LOOP_US = 4.0  # _allgather_param: a narrow view and a get_rank(group=...) per rank
SCATTER_LOOP_US = 2.5  # _reduce_scatter_gradient: a narrow view per rank
COPY_DISPATCH_US = 1.8  # ProcessGroupNCCL's copy_ per rank, dispatched from C++ (its launch on top)
# _allgather_params, per persistent parameter and rank: a narrow of the gathered buffer, a view and
# a narrow of the parameter, and a copy_ from Python (its launch on top). Measured 1.66x the
# allgather loop in the same runs (9.2 against 5.6 us on a loaded machine), scaled to its 4.0.
PERSISTENT_LOOP_US = 6.6


@dataclass(frozen=True)
class _Param:
    name: str
    numel: int


@dataclass(frozen=True)
class _Entry:
    """One module use of the recorded trace: the parameters its pre-hook fetches."""

    unit: str
    gate: str  # a GEMM of GEMMS, or the block of the embedding / LM head
    pass_: str  # fwd | recompute | bwd
    params: tuple[_Param, ...]

    @property
    def numel(self) -> int:
        return sum(p.numel for p in self.params)


@dataclass(frozen=True)
class _Fetch2021:
    """What the fetch hook of one trace entry does (``fetch_sub_module`` then
    ``prefetch_next_sub_modules``): gather its missing parameters on demand, synchronise, then
    prefetch the next parameters of the trace."""

    demand: tuple[_Param, ...]
    sync: bool
    prefetch: tuple[_Param, ...]


def plan_2021(trace: list[_Entry], max_live: int, bucket: int, reuse: int,
              pinned: frozenset[str] = frozenset()) -> list[_Fetch2021]:
    """The fetches of DeepSpeed 2021's ``PartitionedParameterCoordinator`` over one micro-batch's
    trace (stage3.py, March 2021): a module's pre-hook gathers its parameters that are not there
    (demand) and synchronises if it gathered any or waits for a prefetched one; then, only if no
    prefetch is in flight and the available elements are below ``max_live``, it prefetches the
    next parameters of the trace that are not available, until at least ``bucket`` elements (the
    last one may overshoot). The post-hook releases a parameter unless its module recurs within
    ``reuse`` elements of trace (``_keep_for_later``). Unlike later releases there is no
    exception for a parameter whose later use the prefetcher skipped. ``pinned`` parameters are
    never released by a post-hook: the root module's registered external parameters (its
    pre-hook gathers them first; the root recurs at distance zero, so ``_keep_for_later`` keeps
    them after the forward; its post-backward never runs because no input of the root needs a
    gradient). They stay available, and count against ``max_live``, until
    ``_partition_all_parameters`` at the end of the backward."""
    n = len(trace)
    nxt = [n] * n
    last_seen: dict[tuple[str, str], int] = {}
    for i in range(n - 1, -1, -1):
        key = (trace[i].unit, trace[i].gate)
        nxt[i] = last_seen.get(key, n)
        last_seen[key] = i
    prefix = [0]
    for e in trace:
        prefix.append(prefix[-1] + e.numel)
    avail: dict[str, int] = {}
    in_flight: set[str] = set()
    out = []
    for i, e in enumerate(trace):
        demand = tuple(p for p in e.params if p.name not in avail)
        sync = bool(demand) or any(p.name in in_flight for p in e.params)
        for p in demand:
            avail[p.name] = p.numel
        if sync:
            in_flight.clear()
        batch: list[_Param] = []
        if not in_flight and sum(avail.values()) < max_live:
            got, j = 0, i + 1
            while j < n and got < bucket:
                for p in trace[j].params:
                    if p.name not in avail and all(q.name != p.name for q in batch):
                        batch.append(p)
                        got += p.numel
                        if got >= bucket:
                            break
                j += 1
            for p in batch:
                avail[p.name] = p.numel
                in_flight.add(p.name)
        out.append(_Fetch2021(demand, sync, tuple(batch)))
        if nxt[i] >= n or prefix[nxt[i]] - prefix[i + 1] >= reuse:
            for p in e.params:
                if p.name not in pinned:
                    avail.pop(p.name, None)
    return out


class DeepSpeedZero3Of2021(GradSync):
    """DeepSpeed ZeRO-3 as the 2021 releases ran it (``zero3_impl: deepspeed-2021``), from
    deepspeed/runtime/zero/stage3.py and partition_parameters.py of DeepSpeed 0.3.13 (March 2021),
    the library Megatron-LM's ZeRO-3 comparison used (arXiv:2104.04473 §5.2):

    * **Every parameter is its own AllGather, issued through a rank list.** ``_allgather_param``
      zero-fills the gathered tensor, calls ``torch.cuda.synchronize()``, builds one ``narrow``
      view per rank in a Python loop and calls ``torch.distributed.all_gather`` with that list;
      PyTorch's ``ProcessGroupNCCL::allgather`` gathers into a flat buffer and copies it back to
      the N views, one ``copy_`` per rank on the NCCL stream. Host work and copy kernels grow with
      the number of ranks N: N steps of the Python loop (``GATHER_LOOP_US``), N copy dispatches and
      launches (``COPY_DISPATCH_US`` + the launch floor), and N copy kernels moving the tensor
      twice, on the NCCL stream, so the group's next collective queues behind them.
    * **A device synchronisation at every fetch.** ``fetch_sub_module`` waits for its gathers with
      ``_synchronize_communication`` (``torch.cuda.synchronize()``), and each gather starts with
      one, so nothing runs ahead: the host issues the next prefetch only once every kernel issued
      before has finished, and the module's kernels start only after that issue. Prefetch is one
      bucket deep and only when nothing is in flight (:func:`plan_2021`).
    * **Hooks per module.** The gathers interleave with the layer at each weight GEMM
      (``LayerBuilder``'s gate), with full recompute re-gathering for the recomputed forward
      (Megatron's checkpointed layer re-runs the module hooks) unless ``max_reuse_distance`` keeps
      a parameter from the recomputed forward to its backward.
    * **Gradients, without ``contiguous_gradients``** (the stage-3 default of DeepSpeed 0.3.12 to
      0.4.x, ``ZERO3_OPTIMIZATION_CONTIGUOUS_GRADIENTS_DEFAULT = False``): ``reduce_ipg_grads``
      falls back to ``buffered_reduce_fallback``. The gradients of the IPG bucket (flushed when
      the next gradient would take it past ``reduce_bucket_size`` elements, and at the end of the
      backward) are flattened into one tensor, scaled by 1/N, **AllReduced whole** over the group
      and copied back tensor by tensor (``allreduce_and_copy``); each rank keeps its partition
      afterwards. Twice the ReduceScatter's wire time, no per-rank work. With overlap_comm (the
      stage-3 default) this runs on the reduction stream, and the next flush first waits for the
      previous one on the host (``reduction_stream.synchronize()``). The flush runs in the hook of
      the gradient that overflows the bucket, and 0.3.13 never makes the reduction stream wait
      for the default one: a bucket a weight overflows is AllReduced beside that weight's
      backward GEMMs, one filled by a weight alone in front of the next fetch, flushed by the
      bias or norm gradient between them (:meth:`_bucket_grads`).
    * **Gradients, with ``contiguous_gradients``**: each is its own ReduceScatter through a rank
      list (``_reduce_scatter_gradient``: a view per rank, then ``flatten_for_scatter_gather``
      copies the N chunks into a flat buffer), after the gradient is copied into the IPG buffer
      (parameters above ``reduce_bucket_size`` are reduced in place).
      Either way the next fetch's synchronisation waits for the reduction.

    * **The fp16 step checks every partition from the host** (``step``): an overflow check and a
      norm per parameter tensor, each read back to the host, two one-element AllReduces over the
      group, then the fp32 update of the flat partition
      (:func:`~simulator.schedule.optimizer.zero3_2021_fp16_ops`).
    * **The persistent parameters are gathered again after every step** (``_post_step``), one
      ``copy_`` per parameter and rank from Python (:meth:`_refresh_persistent`).
    * **The tied word embedding is held for the whole micro-batch.** Megatron-LM's ZeRO-3 port
      (DeepSpeedExamples ``Megatron-LM-v1.1.5-ZeRO3``, March 2021) registers it as an external
      parameter of the root ``GPT2Model`` (``register_external_parameter``): gathered once, by the
      root's pre-hook, kept through forward, recompute and backward (:func:`plan_2021`'s
      ``pinned``) and counted all along in the coordinator's ``total_available_parameter_numel``,
      so prefetching stops whenever it and the live module parameters reach
      ``max_live_parameters`` (GPT-530B's embedding alone, 1.09e9 elements, exceeds the default
      1e9). The count is exact until the first optimizer step that is not skipped for an fp16
      overflow: 0.3.13 subtracts the persistent parameters at the end of every backward
      (``release_and_reset_parameter``) without adding them back when ``_post_step`` re-gathers
      them, so from then on the limit slips by their elements once per step (not modelled).

    Deviations: with ``contiguous_gradients`` a gradient enters the reduction at the next
    module's fetch (the IPG bucket only delays it, each parameter is still its own collective);
    the gradients of biases and norms are left out of the reduction (under 0.1% of the bytes of
    the layers modelled here), but the flushes their hooks make are timed; the root gathers the
    tied embedding at the embedding's block (the next module), not before it, and holds the
    position table with it (one module of the schedule; 2,048 of the 53,248 rows).
    """

    def __init__(self, scn: Scenario, chunks: list[list[ParamUnit]]):
        super().__init__(scn, chunks)
        p = scn.parallel
        self.optimizer_shard = self.group_size
        units = [u for c in chunks for u in c]
        thr = p.zero3_param_persistence_threshold
        self.persistent = tuple(m for u in units for m in u.modules if m.numel < thr)
        gates = {u.name: self._gates(u, thr) for u in units}
        tied = scn.model.tied_embeddings and p.pp == 1 and any(u.name == "embedding" for u in units)
        if tied and "head" in gates:  # the LM head reads the embedding (a registered external parameter)
            gates["head"]["head"] = gates["head"].get("head", ()) + gates["embedding"].get("emb", ())
        redo = recomputed_layers(scn)
        trace: list[_Entry] = []
        for u in units:
            trace += [_Entry(u.name, g, "fwd", ps) for g, ps in gates[u.name].items()]
        for u in reversed(units):
            if u.layer is not None and u.layer in redo:
                trace += [_Entry(u.name, g, "recompute", ps) for g, ps in gates[u.name].items()]
            trace += [_Entry(u.name, g, "bwd", ps) for g, ps in reversed(gates[u.name].items())]
        self.trace = trace
        # Megatron-LM's ZeRO-3 port (DeepSpeedExamples Megatron-LM-v1.1.5-ZeRO3 @2cd968f2,
        # megatron/model/gpt2_model.py) registers the tied word embedding as an external parameter
        # of the root GPT2Model, whose forward ends with the LM head reading it
        pinned = frozenset(q.name for q in gates["embedding"].get("emb", ())) if tied else frozenset()
        self.fetches = plan_2021(trace, p.zero3_max_live_parameters, p.zero3_prefetch_bucket_elements,
                                 p.zero3_max_reuse_distance, pinned)
        self.index = {(e.unit, e.gate, e.pass_): i for i, e in enumerate(trace)}
        # a gradient is reduced once, after its last backward use (the tied embedding's two uses
        # accumulate into one gradient)
        self.last_bwd = {p.name: i for i, e in enumerate(trace) if e.pass_ == "bwd" for p in e.params}
        self._ready: dict[str, int] = {}  # parameter -> its last gather op (the copies back)
        self._outstanding: list[int] = []  # side-stream ops issued since the last synchronisation
        self._grads: tuple[_Param, ...] = ()  # gradients computed, not yet reduced
        self._last_rs = -1
        contiguous = p.zero3_contiguous_gradients
        self.contiguous = False if contiguous is None else contiguous
        self._bucket: list[_Param] = []  # without contiguous_gradients: the IPG bucket's gradients

    def _gates(self, unit: ParamUnit, thr: int) -> dict[str, tuple[_Param, ...]]:
        """The parameters each GEMM (layers) or block (embedding, head) fetches, in forward order."""
        out: dict[str, list[_Param]] = {}
        for m in unit.modules:
            if m.numel < thr:
                continue
            local = m.name.split(".", 1)[1] if unit.layer is not None else m.name
            gate = _GEMM_OF.get(local, m.block) if unit.layer is not None else m.block
            name = f"{unit.name}.{_FUSED[local]}" if unit.layer is not None and local in _FUSED else m.name
            ps = out.setdefault(gate, [])
            same = [i for i, q in enumerate(ps) if q.name == name]
            if same:
                ps[same[0]] = _Param(name, ps[same[0]].numel + m.numel)
            else:
                ps.append(_Param(name, m.numel))
        order = GEMMS if unit.layer is not None else tuple(out)
        return {g: tuple(out[g]) for g in order if g in out}

    # -- ops ----------------------------------------------------------------------------------

    def _host(self, pb: ProgramBuilder, name: str, count: int, deps: tuple[int, ...], tag: Tag,
              us: float = 0.0) -> int:
        return pb.add(ComputeOp(name=name, kind="host", count=count, host_us=us,
                                deps=tuple(d for d in deps if d >= 0), tag=tag, host_issue=False))

    @property
    def _copy_issue_us(self) -> float:
        return COPY_DISPATCH_US + self.scn.profile.gpu.kernel_launch_us

    def _sync_deps(self) -> tuple[int, ...]:
        """``torch.cuda.synchronize()``: every side-stream op issued so far."""
        out = tuple(self._outstanding)
        self._outstanding = []
        return out

    def _gather(self, pb: ProgramBuilder, p: _Param, last: int, tag: Tag, label: str) -> int:
        """``_allgather_param``: zero-fill, synchronise, a view per rank, the AllGather, and a copy
        per rank back; returns the last host op (the module's kernels follow it)."""
        n = self.group_size
        size = padded(p.numel, n) * PARAM_BYTES
        zeros = pb.add(ComputeOp(name=f"zero3.ag.{p.name}.{label}.zeros", kind="copy", hbm_bytes=float(size),
                                 deps=(last,) if last >= 0 else (), tag=tag))
        views = self._host(pb, f"zero3.ag.{p.name}.{label}.views", n, (zeros,) + self._sync_deps(), tag,
                           GATHER_LOOP_US)
        ag = self._comm(pb, f"zero3.ag.{p.name}.{label}", "allgather", size, (views,), tag, dtype="bf16")
        issue = self._host(pb, f"zero3.ag.{p.name}.{label}.copy_launches", n, (views,), tag, self._copy_issue_us)
        copies = pb.add(ComputeOp(name=f"zero3.ag.{p.name}.{label}.copies", kind="copy", hbm_bytes=2.0 * size,
                                  count=n, deps=(ag,), stream=grad_stream(self.axes), tag=tag, host_issue=False))
        self._ready[p.name] = copies
        self._outstanding.append(copies)
        return issue

    def _reduce(self, pb: ProgramBuilder, last: int, tag: Tag, label: str) -> int:
        """The gradient hooks that run before the next fetch (stage3.py ``reduce_ready_partitions_and_
        remove_grads``), for the gradients computed since the last one: with ``contiguous_gradients``
        each is reduce-scattered; without, the IPG bucket already holds them (:meth:`_bucket_grads`)
        and the hook of the bias or norm gradient that follows every weight in backward flushes it
        when it is full (a bucket at ``reduce_bucket_size`` elements: the weight alone filled it)."""
        if self.contiguous:
            return self._reduce_scatter(pb, last, tag, label)
        if self._grads and sum(q.numel for q in self._bucket) >= self.scn.parallel.zero3_reduce_bucket_elements:
            last = self._allreduce_bucket(pb, last, tag, label)
        self._grads = ()
        return last

    def _bucket_grads(self, pb: ProgramBuilder, grads: tuple[_Param, ...], fetched: int, tag: Tag,
                      label: str) -> None:
        """Without ``contiguous_gradients``: each weight's hook (``reduce_independent_p_g_buckets_
        and_remove_grads``) runs once autograd has issued the weight's backward GEMMs, after its
        module's fetch; if the weight would take the IPG bucket past ``reduce_bucket_size``
        elements, the bucket is flushed there (``reduce_ipg_grads``), on the reduction stream, which
        0.3.13 never makes wait for the default stream (no ``wait_stream``), so its AllReduce runs
        beside this module's GEMMs until the next fetch's ``torch.cuda.synchronize()``; then the
        weight enters the bucket. Megatron-LM's layers have a bias or a norm between any two
        weights, whose hook runs before the next module's fetch (:meth:`_reduce`): a bucket a weight
        fills alone is flushed there, with nothing left to overlap it; a bucket under the limit
        waits for the next weight (GPT-530B: the attention projection's 4.2e8 elements, flushed
        at the QKV weight's hook)."""
        limit = self.scn.parallel.zero3_reduce_bucket_elements
        for p in grads:
            if self._bucket and sum(q.numel for q in self._bucket) + p.numel > limit:
                self._allreduce_bucket(pb, fetched, tag, label)
            self._bucket.append(p)

    def _allreduce_bucket(self, pb: ProgramBuilder, last: int, tag: Tag, label: str) -> int:
        """``reduce_ipg_grads`` through ``buffered_reduce_fallback`` (stage3.py, 0.3.13): wait for the
        previous reduction (``reduction_stream.synchronize()``), flatten the bucket's gradients into
        one tensor (a view when it holds one), scale it by 1/N, AllReduce it over the group and copy it back, one ``copy_`` per
        gradient (``allreduce_and_copy``); on the reduction stream, behind the group's collectives.
        Returns the host op (the module's kernels follow it)."""
        ps, self._bucket = self._bucket, []
        if not ps:
            return last
        size = float(sum(p.numel for p in ps) * self.grad_bytes)
        name = f"zero3.ar.{ps[0].name}.{label}"
        prev = (self._last_rs,) if self._last_rs >= 0 else ()
        host = self._host(pb, f"{name}.sync", 1, (last,) + prev, tag)
        stream = grad_stream(self.axes)
        # A bucket of one gradient is flattened to a view of it, not copied: ``flatten`` is apex_C's
        # (torch::utils::flatten_dense_tensors, torch/csrc/utils/tensor_flatten.h) or torch 1.8's
        # ``_flatten_dense_tensors``, both ``tensors[0].contiguous().view(-1)`` for a single tensor.
        flat = host if len(ps) == 1 else pb.add(ComputeOp(
            name=f"{name}.flatten", kind="copy", hbm_bytes=2.0 * size, deps=(host,), stream=stream, tag=tag))
        scaled = pb.add(ComputeOp(name=f"{name}.scale", kind="copy", hbm_bytes=2.0 * size, deps=(flat,),
                                  stream=stream, tag=tag))
        ar = self._comm(pb, name, "allreduce", size, (scaled,), tag)
        back = pb.add(ComputeOp(name=f"{name}.copy_back", kind="copy", hbm_bytes=2.0 * size, count=len(ps),
                                deps=(ar,), stream=stream, tag=tag))
        self._last_rs = back
        self._outstanding.append(back)
        return host

    def _reduce_scatter(self, pb: ProgramBuilder, last: int, tag: Tag, label: str) -> int:
        """With ``contiguous_gradients``: ``_reduce_scatter_gradient`` for each gradient."""
        n = self.group_size
        limit = self.scn.parallel.zero3_reduce_bucket_elements
        for p in self._grads:
            size = padded(p.numel, n) * self.grad_bytes
            if p.numel <= limit:  # contiguous_gradients: into the IPG buffer
                last = pb.add(ComputeOp(name=f"zero3.rs.{p.name}.{label}.ipg_copy", kind="copy",
                                        hbm_bytes=2.0 * size, deps=(last,) if last >= 0 else (), tag=tag))
            views = self._host(pb, f"zero3.rs.{p.name}.{label}.views", n, (last,) + tuple(self._outstanding), tag,
                               SCATTER_LOOP_US)
            flat = pb.add(ComputeOp(name=f"zero3.rs.{p.name}.{label}.flatten", kind="copy", hbm_bytes=2.0 * size,
                                    count=n, deps=(views,), stream=grad_stream(self.axes), tag=tag,
                                    host_issue=False))
            last = self._host(pb, f"zero3.rs.{p.name}.{label}.copy_launches", n, (views,), tag, self._copy_issue_us)
            self._last_rs = self._comm(pb, f"zero3.rs.{p.name}.{label}", "reducescatter", size, (flat,), tag)
            self._outstanding.append(self._last_rs)
        self._grads = ()
        return last

    def _fetch(self, pb: ProgramBuilder, i: int, mb: int, after: int, layer: int | None) -> int:
        e, f = self.trace[i], self.fetches[i]
        tag = Tag("fwd" if e.pass_ == "fwd" else "bwd", layer, mb)
        label = f"{e.pass_}.mb{mb}"
        last = after
        # Megatron-LM's QKV projection adds its bias inside the module (the others leave theirs,
        # and the LayerNorms theirs, to the fused ops between modules): no gradient hook runs
        # between the attention projection's weight and the QKV fetch
        if e.pass_ == "bwd" and self._grads and (self.contiguous or e.gate != "qkv"):
            last = self._reduce(pb, last, tag, label)
        for p in f.demand:
            last = self._gather(pb, p, last, tag, label)
        if f.sync:
            waits = tuple(self._ready[p.name] for p in e.params if p.name in self._ready)
            last = self._host(pb, f"zero3.fetch.{e.unit}.{e.gate}.{label}", 1,
                              (last,) + waits + self._sync_deps(), tag)
        for p in f.prefetch:
            last = self._gather(pb, p, last, tag, label)
        if e.pass_ == "bwd":
            self._grads = tuple(p for p in e.params if self.last_bwd[p.name] == i)
            if not self.contiguous:
                self._bucket_grads(pb, self._grads, last, tag, label)
        return last

    # -- GradSync hooks -----------------------------------------------------------------------

    def gate(self, mb: int) -> Gate | None:
        if not self.axes:
            return None

        def hook(pb: ProgramBuilder, layer: int, gemm: str, pass_: str, after: int) -> int:
            i = self.index.get((f"L{layer}", gemm, pass_))
            return after if i is None else self._fetch(pb, i, mb, after, layer)
        return hook

    def _block(self, pb: ProgramBuilder, unit: ParamUnit, pass_: str, mb: int, after: int) -> dict[str, tuple[int, ...]]:
        if not self.axes or unit.layer is not None:
            return {}
        out: dict[str, tuple[int, ...]] = {}
        for (u, gate, ps), i in self.index.items():
            if u == unit.name and ps == pass_:
                last = self._fetch(pb, i, mb, after, None)
                out[gate] = (last,) if last >= 0 else ()
        return out

    def before_forward(self, pb: ProgramBuilder, unit: ParamUnit, mb: int, after: int) -> dict[str, tuple[int, ...]]:
        return self._block(pb, unit, "fwd", mb, after)

    def before_backward(self, pb: ProgramBuilder, unit: ParamUnit, mb: int, after: int) -> dict[str, tuple[int, ...]]:
        return self._block(pb, unit, "bwd", mb, after)

    def after_backward(self, pb: ProgramBuilder, unit: ParamUnit, mb: int, after: int) -> None:
        if self.axes and self._grads:
            self._reduce(pb, after, Tag("bwd", unit.layer, mb), f"bwd.mb{mb}")

    def end_backward(self, pb: ProgramBuilder, mb: int, after: int) -> int:
        """The epilogue synchronises the device: the next micro-batch starts after every reduction."""
        if not self.axes:
            return -1
        if self._bucket:  # independent_gradient_partition_epilogue: the last bucket
            after = self._allreduce_bucket(pb, after, Tag("bwd", None, mb), f"bwd.mb{mb}")
        self._grads = ()
        return self._host(pb, f"zero3.epilogue.mb{mb}", 1, (after,) + self._sync_deps(), Tag("bwd", None, mb))

    def pending(self) -> tuple[int, ...]:
        return (self._last_rs,) if self._last_rs >= 0 else ()

    def finish(self, pb: ProgramBuilder, after: tuple[int, ...]) -> int:
        """DeepSpeed 0.3.13's fp16 step over this rank's partitions
        (:func:`~simulator.schedule.optimizer.zero3_2021_fp16_ops`), then the persistent
        parameters gathered again."""
        if not self.axes:
            return self._refresh_persistent(pb, super().finish(pb, after))
        mods = [m for c in self.chunks for u in c for m in u.modules]
        local = optimizer.LocalParams(tuple(-(-m.numel // self.optimizer_shard) for m in mods))
        deps = tuple(sorted(set(after + self.pending())))
        step = optimizer.zero3_2021_fp16_ops(pb, local, self.parameter_tensors(), self.scn.training.grad_clip,
                                             self.axes, grad_stream(self.axes), deps)
        return self._refresh_persistent(pb, step)

    def parameter_tensors(self) -> int:
        """The parameter tensors DeepSpeed's fp16 groups hold, as Megatron-LM's layers of 2021 do:
        one per weight GEMM (the fused QKV, the projection, the two MLP weights), the embedding
        (one module of the schedule: word and position tables), and every norm and bias
        (:meth:`norms_and_biases`). GPT-175B: 96 x 4 + 1 + 96 x 8 + 2 = 1,155."""
        weights = {p.name for e in self.trace for p in e.params if p.name.split(".")[-1] not in _NORMS}
        return len(weights) + len(self.norms_and_biases())

    def small_tensors(self) -> list[int]:
        """Elements of each parameter tensor below ``param_persistence_threshold``: the norms and
        biases (:meth:`norms_and_biases`) that small."""
        thr = self.scn.parallel.zero3_param_persistence_threshold
        return [x for x in self.norms_and_biases() if x < thr]

    def norms_and_biases(self) -> list[int]:
        """Elements of each norm and bias tensor as Megatron-LM's layers of 2021 hold them: a
        LayerNorm's weight and bias, each linear layer's bias (the fused QKV's of all heads, the
        projection's, the two MLP layers'), the final LayerNorm's weight and bias. The schedule's
        modules carry the weights only: a column-parallel bias (QKV, fc1) has the elements of its
        weight over the hidden size, a row-parallel one h."""
        h = self.scn.model.hidden
        out: list[int] = []
        for u in (u for c in self.chunks for u in c):
            fused: dict[str, int] = {}
            for m in u.modules:
                local = m.name.split(".", 1)[1] if u.layer is not None else m.name
                if local in _NORMS:
                    out += [m.numel, m.numel]  # weight and bias
                elif u.layer is not None and local in _GEMM_OF:
                    gemm = _GEMM_OF[local]  # row-parallel biases (proj, fc2) are whole on every TP rank
                    fused[gemm] = h if gemm in ("proj", "fc2") else fused.get(gemm, 0) + m.numel // h
            out += list(fused.values())
        return out

    def _refresh_persistent(self, pb: ProgramBuilder, step: int) -> int:
        """``_post_step``: after the backward ``_partition_all_parameters`` released every
        parameter, persistent ones too, and ``_allgather_params`` gathers those back in one
        AllGather through a rank list (N views, N copies inside ``ProcessGroupNCCL``), then copies
        each parameter out of the gathered buffer from Python, one ``copy_`` per parameter and
        rank whose partition holds some of it (:func:`persistent_copies`): 1,536 x 770 launches
        once per step for GPT-175B on 1,536 GPUs, 1.76 million (not 2,240 x 842) for GPT-530B on
        2,240. The rank loop's iterations that copy nothing are not timed. The copy kernels run
        while the host launches them (here on the group's stream, beside the host's loop, as the
        gathers' copies)."""
        tensors = self.small_tensors()
        if not self.axes or not tensors:
            return step
        n = self.group_size
        size = sum(padded(x, n) for x in tensors) * PARAM_BYTES
        tag = Tag("opt")
        name = "zero3.persistent"
        views = self._host(pb, f"{name}.views", n, (step,), tag, SCATTER_LOOP_US)
        ag = self._comm(pb, f"{name}.allgather", "allgather", size, (views,), tag, dtype="bf16")
        issue = self._host(pb, f"{name}.copy_launches", n, (views,), tag, self._copy_issue_us)
        unflat = pb.add(ComputeOp(name=f"{name}.copies", kind="copy", hbm_bytes=2.0 * size, count=n, deps=(ag,),
                                  stream=grad_stream(self.axes), tag=tag, host_issue=False))
        k = sum(persistent_copies(x, n) for x in tensors)
        loop = self._host(pb, f"{name}.param_copy_launches", k, (issue,), tag,
                          PERSISTENT_LOOP_US + self.scn.profile.gpu.kernel_launch_us)
        copied = sum(tensors) * PARAM_BYTES  # the parameters' own elements, not the padding
        copies = pb.add(ComputeOp(name=f"{name}.param_copies", kind="copy", hbm_bytes=2.0 * copied, count=k,
                                  deps=(unflat,), stream=grad_stream(self.axes), tag=tag, host_issue=False))
        return self._host(pb, f"{name}.done", 1, (loop, copies), tag)

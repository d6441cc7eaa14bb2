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
previous group's ReduceScatter (at most one outstanding).

Sizes (nccl-tests convention): AllGather output ``N·Σ⌈n/N⌉·2`` bytes, ReduceScatter input
``N·Σ⌈n/N⌉·B_g``; per micro-batch that is about 3Ψ on the wire against DDP's 2Ψ per step.
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.config.scenario import Scenario
from simulator.schedule.data_parallel import PARAM_BYTES, GradSync
from simulator.schedule.ir import ComputeOp, Phase, ProgramBuilder, Tag
from simulator.schedule.shapes import Module, ParamUnit


def padded(numel: int, n: int) -> int:
    """Elements of a parameter padded to a multiple of n (DeepSpeed ``_aligned_size``)."""
    return -(-numel // n) * n


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
        for i, (mod, unit, phase) in enumerate(trace):
            key = (unit, phase)
            issues = self.issues.setdefault(key, [])
            if mod.name not in avail:
                self.fetches.append(_Fetch((mod,)))
                avail[mod.name] = len(self.fetches) - 1
                issues.append(len(self.fetches) - 1)
            q = max(q, i + 1)
            n_avail = self._numel_avail(avail)
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
            if nxt[i] >= n or prefix[nxt[i]] - prefix[i + 1] > reuse:
                avail.pop(mod.name, None)

    def _numel_avail(self, avail: dict[str, int]) -> int:
        """Elements of every parameter available or in flight (DeepSpeed's n_available)."""
        return sum(self._numel[k] for k in avail)

    def _issue(self, pb: ProgramBuilder, key: tuple[str, Phase], mb: int, after: int, layer: int | None) -> dict[str, tuple[int, ...]]:
        phase = key[1]
        tag = Tag(phase, layer, mb)
        dep = (self._prev_unit_after,) if self._prev_unit_after >= 0 else ()
        for fid in self.issues.get(key, ()):
            f = self.fetches[fid]
            size = f.numel(self.group_size) * PARAM_BYTES
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
        step = super().finish(pb, after)
        if not self.axes or not self.persistent:
            return step
        size = sum(padded(m.numel, self.group_size) for m in self.persistent) * PARAM_BYTES
        return self._comm(pb, "zero3.persistent.allgather", "allgather", size, (step,), Tag("opt"), dtype="bf16")


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

    def _parts(self, units: list[ParamUnit]) -> list[tuple[str, tuple[str, ...], int, float]]:
        """(label, group axes, padded elements, gathered bytes) of the dense and the expert part of
        `units`; FP8 weights travel at 1 byte under fp8_param_gather."""
        out = []
        for expert, label, axes, n in ((False, "", self.axes, self.group_size),
                                       (True, ".experts", self.expert_axes, self.expert_group_size)):
            mods = [m for u in units for m in u.modules if m.expert == expert]
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

    def before_forward(self, pb: ProgramBuilder, unit: ParamUnit, mb: int, after: int) -> dict[str, tuple[int, ...]]:
        if not self.synced:
            return {}
        if self.root and f"root.fwd.mb{mb}" not in self._ag:
            root_ready = self._unshard(pb, "root", self.root, mb)
        else:
            root_ready = -1
        if unit.layer is None:
            ready = root_ready if root_ready >= 0 else self._copy_out
            return {"emb": (ready,), "head": (ready,)}
        ready = self._unshard(pb, unit.name, [unit], mb)
        nxt = self._next_layer(unit, +1)
        if nxt is not None:
            self._gather(pb, nxt.name, [nxt], mb, "fwd", (self._copy_out,))
        return {"attn": (ready,), "mlp": (ready,)}

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
        parts = self._parts(units)
        if not parts:
            return
        deps = (after,) + self._last_rs
        tag = Tag("bwd", units[0].layer, mb)
        copy_in = pb.add(ComputeOp(name=f"fsdp.rs_copy_in.{name}.mb{mb}", kind="copy",
                                   hbm_bytes=2.0 * self._size(units) * self.grad_bytes, deps=deps, tag=tag))
        self._last_rs = tuple(self._comm(pb, f"fsdp.rs.{name}{label}.mb{mb}", "reducescatter", numel * self.grad_bytes,
                                         (copy_in,), tag, axes=axes) for label, axes, numel, _ in parts)

    def end_backward(self, pb: ProgramBuilder, mb: int, after: int) -> int:
        return self._last_rs[-1] if self._last_rs else -1

    def pending(self) -> tuple[int, ...]:
        return self._last_rs

    def finish(self, pb: ProgramBuilder, after: tuple[int, ...]) -> int:
        """The optimizer step, then under fp8_param_gather torchtitan's
        ``precompute_float8_dynamic_scale_for_fsdp``: one AllReduce of the FP8 weights' amaxes."""
        step = super().finish(pb, after)
        return max((step, *self.fp8_amax_allreduce(pb, (step,), expert=False),
                    *self.fp8_amax_allreduce(pb, (step,), expert=True)))

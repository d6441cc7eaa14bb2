"""``build_schedule(scenario) -> Schedule``: every op of one training step on every rank.

Ranks that play the same role run the same program, so a schedule stores one program per role,
a (pipeline stage, CP index) pair (the CP roles of a stage share one program object where the
context-parallel pattern gives every CP index the same ops), and :meth:`Schedule.role_of` maps a rank to its role through
the rank grid. TP, DP and Ulysses peers are symmetric: their ops differ only in which group
members they meet, which :class:`~simulator.schedule.groups.Grid` resolves. That is what keeps a
1,024-GPU plan to a handful of programs (docs/architecture.md, "Schedule").
"""

from __future__ import annotations

import gc
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from simulator.config.scenario import Scenario
from simulator.schedule.data_parallel import BucketedSync, GradSync
from simulator.schedule.flops import model_flops_per_token
from simulator.schedule.context_parallel import A2A_SUBGROUP_AXES, hierarchical_a2a_degree, program_depends_on_cp_rank
from simulator.schedule.groups import Grid
from simulator.schedule.ir import COMM_TYPES, CommOp, ComputeOp, Op, P2POp, op_to_dict
from simulator.schedule.pipeline import StageBuilder
from simulator.schedule.shapes import ParamUnit, RankShapes, stage_units
from simulator.schedule.transformer import LayerBuilder, LayerSpec
from simulator.vocabulary import comm_type


@dataclass(frozen=True)
class Schedule:
    grid: Grid
    programs: dict[str, list[Op]]
    meta: dict[str, Any] = field(default_factory=dict)
    scenario: str = ""
    # The grid axes a rank's role depends on (role_of reads only these coordinates): the replay
    # finds the axes it can mirror from them without asking every rank (replay/symmetry.py).
    role_axes: tuple[str, ...] = ("pp", "cp")
    # Where each role's steady steps begin, and the end of the last (StageBuilder.steady), and
    # how many steady steps hold the ops that repeat (``steady_period``) and how many
    # micro-batches those steps cover (``period_micro_batches``): what micro-batch folding reads
    # (replay/fold.py). Empty where the step has no single steady section.
    steady: dict[str, tuple[int, ...]] = field(default_factory=dict)
    steady_period: int = 1
    period_micro_batches: int = 1
    # Per role, the layer passes its build stamped from a template (ProgramBuilder.stamps): fold's
    # check 1 compares such passes template to template instead of op by op.
    stamps: dict[str, list[tuple[int, tuple[Op, ...], Any]]] = field(default_factory=dict)

    def role_of(self, rank: int) -> str:
        return role_name(self.grid.coord(rank, "pp"), self.grid.coord(rank, "cp"))

    @property
    def n_ops(self) -> int:
        return sum(len(p) for p in self.programs.values())


def role_name(stage: int, cp_index: int) -> str:
    return f"pp{stage}.cp{cp_index}"


def make_grid(scn: Scenario) -> Grid:
    p = scn.parallel
    shape = RankShapes.of(scn)
    sizes = {"tp": p.tp, "cp": p.cp, "ulysses": p.ulysses, "dp": scn.dp, "pp": p.pp}
    splits = {}
    if p.cp > 1 and p.cp_comm == "a2a+p2p":
        c1 = hierarchical_a2a_degree(p.cp, shape.heads, shape.kv_heads, p.cp_a2a)
        splits[A2A_SUBGROUP_AXES[0]] = ("cp", c1)
    derived = {}
    if scn.model.moe:
        etp = shape.etp
        derived = {"etp": (1, etp), "ep": (etp, shape.ep), "edp": (etp * shape.ep, shape.expert_dp)}
        if p.moe_dispatcher == "deepep":  # DeepEP: EP ranks inside one node, and across nodes
            derived.update(ep_intra=(etp, shape.ep_intra), ep_inter=(etp * shape.ep_intra, shape.ep_nodes))
    return Grid.from_sizes(sizes, p.full_order, splits, derived)


def make_sync(scn: Scenario, chunks: list[list[ParamUnit]]) -> GradSync:
    if scn.parallel.zero == 3:
        from simulator.schedule.zero import DeepSpeedZero3, DeepSpeedZero3Of2021, Fsdp2

        impl = {"fsdp2": Fsdp2, "deepspeed-2021": DeepSpeedZero3Of2021}.get(scn.parallel.zero3_impl, DeepSpeedZero3)
        return impl(scn, chunks)
    return BucketedSync(scn, chunks)


def build_program(scn: Scenario, stage: int, cp_index: int = 0,
                  chunks: list[list[ParamUnit]] | None = None, stamps: list | None = None,
                  priced_only: bool = False) -> list[Op]:
    """One stage's program, built with the cyclic GC off as :func:`build_schedule` builds (the
    sweep's lower bound builds two per refined plan: its collections took a quarter of that).
    ``chunks``: the stage's :func:`stage_units` where the caller has them (they depend on the
    model and the parallelism, not on the batch: the bound builds each stage at two
    micro-batch counts). ``stamps``: a list to append the program's stamped layer passes to
    (:attr:`~simulator.schedule.ir.ProgramBuilder.stamps`). ``priced_only``: a program read for
    its ops' costs and streams alone (:attr:`~simulator.schedule.ir.ProgramBuilder.priced_only`)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _build_stage(scn, stage, cp_index, chunks, stamps, priced_only).pb.ops
    finally:
        if was_enabled:
            gc.enable()


# LayerBuilders (their layer-pass templates) by LayerSpec, shared by the schedules built for one
# role's shapes: micro-batch folding builds the step three times (the full program and two
# reduced ones, replay/fold.py), and a sweep's bound and replay build the same stages. A
# template stands for a pass of any micro-batch (only its dependencies, tags and P2P keys are
# stamped anew, transformer._stamp), so a schedule built with the templates of an earlier build
# is the schedule built cold, op for op (tests/unit/test_schedule_templates.py).
_LAYER_BUILDERS: dict[LayerSpec, LayerBuilder] = {}
_LAYER_BUILDERS_KEPT = 16


def _layer_builder(spec: LayerSpec) -> LayerBuilder:
    lb = _LAYER_BUILDERS.get(spec)
    if lb is None:
        if len(_LAYER_BUILDERS) >= _LAYER_BUILDERS_KEPT:
            _LAYER_BUILDERS.clear()
        lb = _LAYER_BUILDERS[spec] = LayerBuilder(spec)
    return lb


def _build_stage(scn: Scenario, stage: int, cp_index: int = 0,
                 chunks: list[list[ParamUnit]] | None = None, stamps: list | None = None,
                 priced_only: bool = False) -> StageBuilder:
    if chunks is None:
        chunks = stage_units(scn, stage)
    layers = _layer_builder(LayerSpec.from_scenario(scn, cp_rank=cp_index))
    builder = StageBuilder(scn, stage, layers, make_sync(scn, chunks), chunks)
    builder.pb.stamps = stamps
    builder.pb.priced_only = priced_only
    builder.build()
    return builder


def build_schedule(scn: Scenario) -> Schedule:
    p = scn.parallel
    # Hundreds of thousands of small objects and no cycles: the cyclic GC would only rescan them.
    # Where a rank's program does not depend on its CP index (context_parallel), the CP roles of
    # a stage share one program object: built once, and priced once by the replay, which keeps
    # one RoleTable per distinct program. At cp 32 that is 1/32 of the building and pricing.
    shared = p.cp == 1 or not program_depends_on_cp_rank(p.cp_comm)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        programs = {}
        steady: dict[str, tuple[int, ...]] = {}
        stamps: dict[str, list[tuple[int, tuple[Op, ...], Any]]] = {}
        period = (1, 1)
        for s in range(p.pp):
            first = _build_stage(scn, s, 0, stamps=[])
            period = (first.steady_period, first.period_micro_batches)
            for c in range(p.cp):
                b = first if c == 0 or shared else _build_stage(scn, s, c, stamps=[])
                programs[role_name(s, c)] = b.pb.ops
                steady[role_name(s, c)] = tuple(b.steady)
                stamps[role_name(s, c)] = b.pb.stamps or []
    finally:
        if was_enabled:
            gc.enable()
    meta = {
        "n_gpus": scn.n_gpus,
        "dp": scn.dp,
        "n_micro": scn.n_micro,
        "tokens_per_step": scn.tokens_per_step,
        "model_flops_per_token": model_flops_per_token(scn.model),
        "model_flops_per_step": model_flops_per_token(scn.model) * scn.tokens_per_step,
        "stage_layers": list(scn.stage_layers),
    }
    if not all(steady.values()):
        steady = {}
    return Schedule(grid=make_grid(scn), programs=programs, meta=meta, scenario=scn.name, steady=steady,
                    steady_period=period[0], period_micro_batches=period[1], stamps=stamps)


def comm_bytes(program: Sequence[Op], group_size: Callable[[int], int]) -> dict[str, int]:
    """Per-GPU volume of one program per breakdown type (DESIGN.md, ``comm_bytes_per_gpu``).

    The one counting rule of the schedule JSON, ``clustersim check`` and the report: a
    collective adds its ``size_bytes`` (nccl-tests convention) under its type (broadcast as
    allreduce, :func:`simulator.vocabulary.comm_type`) unless its group has one rank, for it then
    moves nothing; a send/recv adds the bytes this GPU sends. ``group_size(i)`` is the number of
    members of op ``i``'s group.
    """
    out = {k: 0 for k in COMM_TYPES}
    for i, op in enumerate(program):
        if op.__class__ is ComputeOp:  # most ops: nothing on the wire
            continue
        if isinstance(op, CommOp):
            if group_size(i) > 1:
                out[comm_type(op.op)] += op.size_bytes
        elif isinstance(op, P2POp):
            out["sendrecv"] += sum(t.nbytes for t in op.sends)
    return out


def role_comm_bytes(program: Sequence[Op], grid: Grid) -> dict[str, int]:
    """:func:`comm_bytes` of a role's program, its groups' sizes read from the rank grid."""
    sizes = [grid.degree(op.axes) if isinstance(op, CommOp) else 1 for op in program]
    return comm_bytes(program, sizes.__getitem__)


def schedule_to_json(schedule: Schedule) -> dict[str, Any]:
    grid = schedule.grid
    roles: dict[str, int] = {}
    for r in range(grid.n_ranks):
        role = schedule.role_of(r)
        roles[role] = roles.get(role, 0) + 1
    per_role = {role: role_comm_bytes(ops, grid) for role, ops in schedule.programs.items()}
    mean = {k: int(round(sum(per_role[role][k] * n for role, n in roles.items()) / grid.n_ranks))
            for k in COMM_TYPES}
    return {
        "scenario": schedule.scenario,
        "grid": {"order": list(grid.axes), "sizes": dict(grid.sizes)},
        "roles": {role: {"ranks": n, "ops": len(schedule.programs[role])} for role, n in roles.items()},
        "meta": schedule.meta,
        "comm_bytes_per_gpu": mean,
        "comm_bytes_per_gpu_by_role": per_role,
        "programs": {role: [op_to_dict(op) for op in ops] for role, ops in schedule.programs.items()},
    }

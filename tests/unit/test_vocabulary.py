"""One vocabulary (simulator/vocabulary.py) and one counting rule for ``comm_bytes_per_gpu``
(schedule.build.comm_bytes), read alike by the schedule JSON, ``clustersim check`` and the report."""

from __future__ import annotations

from simulator.files import bundled_dir
from simulator.schedule.build import comm_bytes, role_comm_bytes, schedule_to_json
from simulator.schedule.groups import Grid
from simulator.schedule.ir import CommOp, P2POp, Transfer
from simulator.vocabulary import COMM_TYPES, PREDICTED_OPS, canonical_op, comm_type


def test_every_predicted_op_and_report_type_is_its_own_canonical_name():
    for op in PREDICTED_OPS:
        assert canonical_op(op) == op
    assert {comm_type(op) for op in PREDICTED_OPS} == set(COMM_TYPES)
    assert comm_type("broadcast") == "allreduce"


def test_comm_bytes_counts_broadcast_as_allreduce_and_skips_groups_of_one_rank():
    grid = Grid.from_sizes({"tp": 4, "dp": 1})
    prog = [CommOp("a", "allgather", ("tp",), 100), CommOp("b", "broadcast", ("tp",), 10),
            CommOp("c", "allreduce", ("dp",), 1000),  # dp = 1: moves nothing
            P2POp("d", sends=(Transfer("tp", 1, 7, "k"),), recvs=(Transfer("tp", -1, 5, "k"),))]
    assert role_comm_bytes(prog, grid) == {"allgather": 100, "reducescatter": 0, "allreduce": 10,
                                            "alltoall": 0, "sendrecv": 7}
    assert comm_bytes(prog, lambda i: 1)["allreduce"] == 0


def test_schedule_and_report_count_the_same_bytes():
    """The critical rank's comm_bytes_per_gpu in the report equals its role's figure in the
    schedule JSON: the report reads the groups the replay formed, the schedule the grid."""
    from simulator.simulation import simulate

    sim = simulate(bundled_dir("scenarios") / "quickstart.yaml")
    crit = sim.trace.critical_rank()
    by_role = schedule_to_json(sim.schedule)["comm_bytes_per_gpu_by_role"]
    assert sim.report.comm_bytes_per_gpu == by_role[sim.schedule.role_of(crit)]
    assert sum(sim.report.comm_bytes_per_gpu.values()) > 0


def test_no_module_keeps_its_own_alias_table():
    """A table mapping a spelling to an op name ("all_reduce": ...) lives in vocabulary.py only;
    the readers extend it (kineto adds PyTorch's internal names) rather than copy it."""
    import re
    from pathlib import Path

    import simulator

    pkg = Path(simulator.__file__).parent
    entry = re.compile(r'"(all_reduce|reduce_scatter|all_gather|all_to_all)"\s*:\s*"')
    copies = [p.relative_to(pkg).as_posix() for p in pkg.rglob("*.py") if entry.search(p.read_text())]
    assert copies == ["vocabulary.py"]

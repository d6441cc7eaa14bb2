"""The end of the step (simulator/schedule/optimizer.py): gradient clipping and the Adam step as
kernels, their HBM bytes per parameter and their launch counts, derived here in closed form."""

import math

import pytest

from simulator.config.scenario import build_scenario
from simulator.schedule.build import build_schedule
from simulator.schedule.ir import CommOp
from simulator.schedule.optimizer import CHUNK, MAX_BLOCKS, multi_tensor_launches


def test_multi_tensor_launches_close_on_blocks_or_tensors():
    assert multi_tensor_launches([CHUNK * MAX_BLOCKS], 4) == 1  # exactly 320 chunks
    assert multi_tensor_launches([CHUNK * MAX_BLOCKS + 1], 4) == 2
    assert multi_tensor_launches([10] * 36, 4) == 1  # depth 4 holds 36 tensors
    assert multi_tensor_launches([10] * 37, 4) == 2
    assert multi_tensor_launches([10] * 110, 1) == 1 and multi_tensor_launches([10] * 111, 1) == 2
    # 500 tensors of one chunk, depth 2 (64 tensors a launch): ceil(500 / 64) = 8
    assert multi_tensor_launches([1000] * 500, 2) == 8
    # 3 tensors of 200 chunks: 600 chunks, launches at 320 and 640 -> 2
    assert multi_tensor_launches([200 * CHUNK] * 3, 4) == 2


def _launches_chunk_by_chunk(numels: list[int], depth: int) -> int:
    """multi_tensor_apply's loop (apex/csrc/multi_tensor_apply.cuh; torch's
    _foreach kernels), chunk by chunk."""
    from simulator.schedule.optimizer import MAX_TENSORS

    launches = tensors = blocks = 0
    for n in numels:
        if n <= 0:
            continue
        tensors += 1
        chunks = -(-n // CHUNK)
        for c in range(chunks):
            blocks += 1
            last = c == chunks - 1
            if blocks == MAX_BLOCKS or (tensors == MAX_TENSORS[depth] and last):
                launches += 1
                blocks = 0
                tensors = 0 if last else 1
    return launches + (1 if blocks else 0)


def test_multi_tensor_launches_as_the_loop_over_every_chunk_counts():
    """The launches counted a tensor at a time are those of the chunk-by-chunk loop, over tensor
    sizes that fill, straddle and cut launches (one chunk, exact multiples of MAX_BLOCKS chunks,
    a chunk more or less, and drawn at random)."""
    import random

    rng = random.Random(7)
    edge = [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, (MAX_BLOCKS - 1) * CHUNK, MAX_BLOCKS * CHUNK,
            MAX_BLOCKS * CHUNK + 1, 2 * MAX_BLOCKS * CHUNK - 1]
    cases = [[n] * k for n in edge for k in (1, 2, 35, 36, 37, 64, 65, 111)]
    cases += [[rng.choice(edge[:6] + [rng.randrange(1, 2 * MAX_BLOCKS * CHUNK)]) for _ in range(rng.randrange(1, 150))]
              for _ in range(60)]
    for numels in cases:
        for depth in (1, 2, 3, 4, 5):
            assert multi_tensor_launches(numels, depth) == _launches_chunk_by_chunk(numels, depth)


def _scn(**over):
    training = dict(micro_batch=1, global_batch=8, dtype="bf16")
    training.update(over.pop("training", {}))
    parallel = dict(over.pop("parallel", {}))
    return build_scenario(dict(name="opt", hardware="dgx-a100", nodes=1,
                               model=dict(layers=2, hidden=512, heads=8, seq_len=128, vocab=4096),
                               training=training, parallel=parallel), source="<test>")


def _end_ops(scn):
    prog = next(iter(build_schedule(scn).programs.values()))
    return prog, {op.name: op for op in prog if op.tag.phase == "opt" and op.name.startswith(("grad_clip", "optimizer"))}


def _step(**training):
    """The optimizer step op of a small one-GPU scenario, its end-of-step ops, the parameter
    tensors' sizes and their sum."""
    scn = _scn(training=dict(grad_clip=False, **training))
    _, ops = _end_ops(scn)
    numels = _local_numels(scn, 1)
    return scn, ops, ops["optimizer.step"], numels, sum(numels)


def _local_numels(scn, shard: int) -> list[int]:
    """One entry per parameter tensor of the (single) stage: embedding, every layer's, the head's."""
    from simulator.schedule.shapes import stage_units

    return [-(-m.numel // shard) for chunk in stage_units(scn, 0) for u in chunk for m in u.modules]


@pytest.mark.parametrize("impl", ["fused", "foreach", "for_loop"])
def test_adam_bytes_and_launches(impl):
    """fused: 32 bytes per parameter, one depth-4 pass and a depth-2 copy; foreach and for_loop:
    80 bytes (8 element-wise ops), depth 1/2/1/3/2/1/1/3 lists or 8 kernels per tensor."""
    _, ops, step, numels, n = _step(optimizer=impl)
    if impl == "fused":
        assert step.hbm_bytes == 32 * n
        assert step.count == multi_tensor_launches(numels, 4) + multi_tensor_launches(numels, 2)
    else:
        assert step.hbm_bytes == 80 * n
        want = (8 * len(numels) if impl == "for_loop"
                else sum(multi_tensor_launches(numels, d) for d in (1, 2, 1, 3, 2, 1, 1, 3)))
        assert step.count == want
    assert "grad_clip.norm" not in ops


@pytest.mark.parametrize("impl, master", [("foreach", "bf16"), ("for_loop", "bf16"), ("fused", "fp32")])
def test_sgd_bytes_launches_and_no_state(impl, master):
    """optimizer_algorithm sgd (torch.optim.SGD without momentum): one add of the gradients into the
    weights, 3 x B_m bytes per parameter (6 on a bf16 model) in depth-2 launches or one kernel per
    tensor, and the fp32 master's copy into the bf16 model (4 more bytes, a depth-2 pass); no
    optimizer state, so no memory for it."""
    from simulator.schedule.memory import estimate_memory

    scn, _, step, numels, n = _step(optimizer=impl, optimizer_algorithm="sgd", master_dtype=master)
    if master == "bf16":
        assert step.hbm_bytes == 6 * n
        assert step.count == (len(numels) if impl == "for_loop" else multi_tensor_launches(numels, 2))
    else:
        assert step.hbm_bytes == (3 * 4 + 4) * n and step.count == 2 * multi_tensor_launches(numels, 2)
    assert estimate_memory(scn, 0).optimizer == (0 if master == "bf16" else 4 * n)


@pytest.mark.parametrize("bad, field", [(dict(optimizer="fp16_optimizer", dtype="fp16"), "optimizer_algorithm"),
                                        (dict(optimizer_state_dtype="fp32"), "optimizer_algorithm")])
def test_sgd_rejects_what_it_cannot_run(bad, field):
    from simulator.errors import InputError

    with pytest.raises(InputError, match=field):
        _scn(training=dict(optimizer_algorithm="sgd", **bad))


def test_sgd_is_not_deepspeed_2021s_fp16_adam():
    from simulator.errors import InputError

    with pytest.raises(InputError, match="training.optimizer_algorithm"):
        _scn(training=dict(optimizer_algorithm="sgd", dtype="fp16"), parallel=dict(zero=3, zero3_impl="deepspeed-2021"))


def test_grad_clip_reads_then_scales_the_gradients_and_sums_the_norm_over_the_shards():
    """ZeRO-1 over 8 ranks: each rank holds 1/8 of the fp32 gradients: the norm reads 4 bytes and
    the scaling reads and writes 8 bytes per local parameter; the squared norm (one fp32 value)
    is summed over the 8 shards before the scaling, and the step waits for the scaling."""
    scn = _scn(parallel=dict(zero=1))
    prog, ops = _end_ops(scn)
    n = sum(_local_numels(scn, 8))
    assert ops["grad_clip.norm"].hbm_bytes == 4 * n
    assert ops["grad_clip.scale"].hbm_bytes == 8 * n
    ar = ops["grad_clip.norm.allreduce"]
    assert isinstance(ar, CommOp) and ar.op == "allreduce" and ar.size_bytes == 4 and ar.axes == ("dp",)
    assert ar.stream == "dp"  # the shard group's communicator
    idx = {op.name: i for i, op in enumerate(prog)}
    assert prog[idx["grad_clip.scale"]].deps == (idx["grad_clip.norm.allreduce"],)
    assert prog[idx["optimizer.step"]].deps == (idx["grad_clip.scale"],)


def test_grad_clip_norm_is_local_under_ddp():
    """DDP: every rank holds the same reduced gradients, so no AllReduce of the norm (and the
    model-parallel one of TP is left out, see GradSync.norm_axes)."""
    _, ddp = _end_ops(_scn())
    assert "grad_clip.norm.allreduce" not in ddp and "grad_clip.norm" in ddp
    _, tp = _end_ops(_scn(parallel=dict(tp=8), training=dict(global_batch=1)))
    assert "grad_clip.norm.allreduce" not in tp and "grad_clip.scale" in tp


def test_unfused_optimizer_costs_more_than_fused():
    """The same step with per-tensor Adam moves 80/32 the bytes and launches more kernels."""
    from simulator.config.hardware import load_profile
    from simulator.costs.compute import compute_time

    gpu = load_profile("dgx-a100").gpu
    fused = _end_ops(_scn(training=dict(optimizer="fused")))[1]["optimizer.step"]
    loop = _end_ops(_scn(training=dict(optimizer="for_loop")))[1]["optimizer.step"]
    assert loop.count > fused.count
    assert compute_time(loop, gpu) > compute_time(fused, gpu) * 80 / 32 * 0.99
    assert math.isclose(loop.hbm_bytes / fused.hbm_bytes, 80 / 32)


def test_fp16_optimizer_of_2020_in_closed_form():
    """Megatron-LM 2020's FP16_Optimizer: 10 + 14 + 4 + 28 + 6 = 62 bytes per parameter over five
    passes, three host steps per tensor for the overflow check and two for the norm, and its
    master-to-model copy one kernel per tensor."""
    from simulator.schedule import optimizer as opt

    scn = _scn(training=dict(dtype="fp16", optimizer="fp16_optimizer"))
    prog = next(iter(build_schedule(scn).programs.values()))
    ops = {op.name: op for op in prog if op.name.startswith("fp16_optimizer")}
    numels = _local_numels(scn, 1)
    n, tensors = sum(numels), len(numels)
    assert sum(op.hbm_bytes for op in ops.values()) == 62 * n
    assert ops["fp16_optimizer.overflow_check"].count == 2 * tensors
    assert ops["fp16_optimizer.overflow_check.host_reads"].count == opt.OVERFLOW_HOST_STEPS * tensors == 3 * tensors
    assert ops["fp16_optimizer.grad_norm.host_reads"].count == 2 * tensors
    assert ops["fp16_optimizer.master_to_model"].count == tensors
    assert ops["fp16_optimizer.adam"].count == multi_tensor_launches(numels, 4)
    assert not any(op.name.startswith(("optimizer.step", "grad_clip")) for op in prog)
    # in program order, each pass after the one before
    order = [name for name in (op.name for op in prog) if name in ops]
    assert order == ["fp16_optimizer.overflow_check", "fp16_optimizer.overflow_check.host_reads",
                     "fp16_optimizer.master_grads", "fp16_optimizer.grad_norm", "fp16_optimizer.grad_norm.host_reads",
                     "fp16_optimizer.adam", "fp16_optimizer.master_to_model"]


def test_cli_names_the_file_and_the_field_of_a_bad_sgd(tmp_path):
    """Exit 2 and a message naming the file and the field, no traceback."""
    import subprocess
    import sys

    import yaml

    path = tmp_path / "sgd.yaml"
    path.write_text(yaml.safe_dump(dict(name="s", hardware="dgx-a100", nodes=1,
                                        model=dict(layers=2, hidden=512, heads=8, seq_len=128, vocab=4096),
                                        training=dict(micro_batch=1, global_batch=8, dtype="fp16",
                                                      optimizer_algorithm="sgd"),
                                        parallel=dict(zero=3, zero3_impl="deepspeed-2021"))))
    out = subprocess.run([sys.executable, "-m", "simulator", "run", str(path)], capture_output=True, text=True)
    assert out.returncode == 2
    assert "sgd.yaml" in out.stderr and "training.optimizer_algorithm" in out.stderr and "Traceback" not in out.stderr

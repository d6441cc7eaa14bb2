"""USP, Ulysses combined with a CP ring (Fang & Zhao 2024, "USP: A Unified Sequence Parallelism
Approach for Long Context Generative AI", arXiv:2405.07719): the All-to-Alls of DeepSpeed-Ulysses
over the ``ulysses`` group, then the KV ring over ``cp`` on the head-sharded problem.

Closed forms per rank and layer, b sequences of s tokens, a query and g KV heads of size d, B
bytes per element, Ulysses degree u, ring degree c (every rank starts with s/(u·c) tokens):

* All-to-All buffers (USP §3, the Ulysses part; one rank's send buffer in the nccl-tests
  convention): M_q = M_o = b·(s/(u·c))·a·d·B, M_k = M_v = b·(s/(u·c))·g·d·B. Forward a2a of Q, K, V
  then O; backward dO, then dQ, dK, dV: 2·(M_q + M_k) + ... = 4 buffers each way.
* Ring (the Ring part, on s/c tokens and g/u KV heads after the head scatter): one KV block
  M_kv = 2·b·(s/c)·(g/u)·d·B. The load-balanced ring (cp_comm p2p) sends c−1 blocks forward and
  2(c−1) backward (KV, then KV with the dK/dV partials, then dK/dV alone).

For the bundled scenario (Llama-3 8B, s = 262,144, a = 32, g = 8, d = 128, bf16, u = 8, c = 4):
M_q = 64 MiB, M_k = 16 MiB, M_kv = 32 MiB.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.cli import main
from simulator.config.scenario import build_scenario, load_scenario
from simulator.errors import InputError
from simulator.schedule.attention import attention_flops, causal_fraction_diagonal
from simulator.schedule.build import build_schedule
from simulator.schedule.ir import CommOp, ComputeOp, P2POp

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "llama3-8b-usp-256k.yaml"
LAYER = 5


@pytest.fixture(scope="module")
def usp():
    scn = load_scenario(SCENARIO)
    return scn, build_schedule(scn)


def _shapes(scn):
    m, p = scn.model, scn.parallel
    b, s, d, B = scn.training.micro_batch, m.seq_len, m.head_dim, 2
    u, c = p.ulysses, p.cp
    m_q = b * (s // (u * c)) * m.heads * d * B
    m_k = b * (s // (u * c)) * m.kv_heads * d * B
    m_kv = 2 * b * (s // c) * (m.kv_heads // u) * d * B
    return u, c, m_q, m_k, m_kv


def test_bundled_shapes_are_the_papers(usp):
    scn, _ = usp
    assert _shapes(scn)[2:] == (64 << 20, 16 << 20, 32 << 20)


def test_ulysses_groups_are_one_node_and_the_ring_crosses_nodes(usp):
    scn, sched = usp
    gpn = scn.profile.node.gpus
    for r in (0, 13, 31):
        uly = sched.grid.group(r, ("ulysses",))
        ring = sched.grid.group(r, ("cp",))
        assert len(uly) == 8 and len({g // gpn for g in uly}) == 1
        assert len(ring) == 4 and len({g // gpn for g in ring}) == 4


def _layer_ops(program, kind):
    return [op for op in program if isinstance(op, kind) and op.name.startswith(f"L{LAYER}.attn.")
            and not op.name.endswith(".recompute")]


@pytest.mark.parametrize("cp_rank", range(4))
def test_per_layer_volumes_match_the_closed_form(usp, cp_rank):
    scn, sched = usp
    u, c, m_q, m_k, m_kv = _shapes(scn)
    program = sched.programs[sched.role_of(cp_rank * u)]
    a2a = _layer_ops(program, CommOp)
    assert all(op.op == "alltoall" and op.axes == ("ulysses",) for op in a2a)
    fwd = [op.size_bytes for op in a2a if ".fwd." in op.name]
    bwd = [op.size_bytes for op in a2a if ".bwd." in op.name]
    assert fwd == [m_q, m_k, m_k, m_q] and bwd == [m_q, m_q, m_k, m_k]  # q k v o; do dq dk dv
    sends = [(op.name, x) for op in _layer_ops(program, P2POp) for x in op.sends]
    assert all(x.axis == "cp" for _, x in sends)
    ring_fwd = sum(x.nbytes for name, x in sends if ".fwd." in name)
    ring_bwd = sum(x.nbytes for name, x in sends if ".bwd." in name)
    assert ring_fwd == (c - 1) * m_kv
    assert ring_bwd == 2 * (c - 1) * m_kv


def test_step_totals_with_full_recompute(usp):
    """Full recompute replays each forward in backward: three passes of the a2a and of the
    forward ring per layer; the totals are what `clustersim check` prints (15 and 12 GiB)."""
    scn, sched = usp
    u, c, m_q, m_k, m_kv = _shapes(scn)
    layers = scn.model.layers
    program = sched.programs[sched.role_of(0)]
    a2a = sum(op.size_bytes for op in program if isinstance(op, CommOp) and op.axes == ("ulysses",))
    ring = sum(x.nbytes for op in program if isinstance(op, P2POp) for x in op.sends if x.axis == "cp")
    assert a2a == layers * 3 * 2 * (m_q + m_k) == 15 << 30
    assert ring == layers * (2 * (c - 1) + 2 * (c - 1)) * m_kv == 12 << 30


def test_attention_flops_over_all_ranks_are_the_whole_layers(usp):
    scn, sched = usp
    m = scn.model
    u = scn.parallel.ulysses
    total = 0.0
    for cp_rank in range(scn.parallel.cp):
        program = sched.programs[sched.role_of(cp_rank * u)]
        total += u * sum(op.flops for op in _layer_ops(program, ComputeOp)
                         if op.kind == "attention" and ".fwd" in op.name)
    s = m.seq_len
    assert total == pytest.approx(attention_flops(1, m.heads, s, s, m.head_dim, causal_fraction_diagonal(s)), rel=1e-9)


def _scenario(tmp_path, **parallel):
    data = {"name": "usp", "hardware": "dgx-h100", "nodes": 4,
            "model": {"preset": "llama3-8b", "seq_len": parallel.pop("seq_len", 262144)},
            "training": {"micro_batch": 1, "global_batch": 1, "dtype": "bf16", "recompute": "full"},
            "parallel": {"ulysses": 8, "cp": 4, "order": ["tp", "ulysses", "cp", "dp", "pp"], **parallel}}
    return build_scenario(data, base_dir=tmp_path)


def test_a_plain_ring_composes_too(tmp_path):
    scn = _scenario(tmp_path, cp_comm="ring")
    program = build_schedule(scn).programs[build_schedule(scn).role_of(0)]
    assert any(op.name.startswith(f"L{LAYER}.attn.ring") for op in program)


@pytest.mark.parametrize("comm", ["a2a", "a2a+p2p", "all_gather"])
def test_other_cp_flavours_are_refused_naming_cp_comm(tmp_path, comm):
    with pytest.raises(InputError) as err:
        _scenario(tmp_path, cp_comm=comm)
    assert "parallel.cp_comm" in f"{err.value.field} {err.value}" and "ring or p2p" in str(err.value)


@pytest.mark.parametrize("over,field", [
    ({"seq_len": 262144 + 32}, "model.seq_len"),  # divisible by 2cp = 8 but not by 2cp x u = 64
    ({"ulysses": 3, "cp": 2}, "parallel.ulysses"),  # 3 does not divide 32 heads
])
def test_bad_combinations_name_their_field(tmp_path, over, field):
    with pytest.raises(InputError) as err:
        _scenario(tmp_path, **over)
    assert field in f"{err.value.field} {err.value}"


def test_the_cli_exits_2_naming_the_field(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text(SCENARIO.read_text().replace("cp_comm: p2p", "cp_comm: a2a"))
    assert main(["check", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "parallel.cp_comm" in err and "Traceback" not in err

"""The hang report: when the replay's event queue drains with ranks unfinished, which op each
stuck rank and stream is blocked on (a collective and the members that never issued it, a
send/recv and the peer that never posts the other side, or a dependency)."""

from __future__ import annotations

from simulator.replay.rank_state import RankState, Rendezvous
from simulator.replay.sendrecv import P2PSide


def hang_report(stuck: list[RankState], ranks: dict[int, RankState], rendezvous: dict[tuple, Rendezvous],
                p2p: dict[tuple[int, int, str], P2PSide], limit: int = 24) -> str:
    """``stuck``: the simulated ranks that never finished; ``ranks``: every simulated rank;
    ``rendezvous`` and ``p2p``: the collectives and send/recv sides still waiting."""
    lines = [f"{len(stuck)} of {len(ranks)} simulated ranks never finish the step:"]
    waiting: dict[tuple[int, int], str] = {}
    for rv in rendezvous.values():
        here = sorted(R.rank for R, _ in rv.arrived)
        missing = [m for m in rv.members if m in ranks and m not in here]
        for R, i in rv.arrived:
            waiting[(R.rank, i)] = (f"collective {rv.op.op} (stream {rv.op.stream}, group {list(rv.members)}); "
                                    f"issued by ranks {here}, never by ranks {missing}")
    for (src, dst, key), side in p2p.items():
        for rank, i, kind in side.posted_by:
            peer = dst if kind == "send" else src
            waiting[(rank, i)] = (f"{kind} key {key!r} {'to' if kind == 'send' else 'from'} rank {peer}; "
                                  f"rank {peer} never posts the matching {'recv' if kind == 'send' else 'send'}")
    for R in sorted(stuck, key=lambda R: R.rank):
        prog = R.table.program
        for stream, (i, why) in sorted(R.blocked.items()):
            if R.done[i]:
                continue
            op = prog[i]
            detail = waiting.get((R.rank, i)) or (
                f"waits for its dependency op {why} ({prog[why].name!r})" if isinstance(why, int) else f"waits ({why})")
            lines.append(f"  rank {R.rank}: op {i} {op.name!r} on stream {stream}: {detail}")
            if len(lines) > limit:
                lines.append("  ...")
                return "\n".join(lines)
    return "\n".join(lines)

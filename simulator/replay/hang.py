"""The hang report: when the replay's event queue drains with ranks unfinished, which op each
stuck rank and stream is blocked on (a collective and the members that never issued it, a
send/recv and the peer that never posts the other side, or a dependency).

Two things make a report useful on a large plan. When members did issue their n-th collective
on a stream but with different kinds or sizes (the rendezvous key is stream, group, sequence
number, kind and size), the report says so with the sizes, rather than listing the halves as
two collectives that others never issued. And the ranks at fault (the members that never
issued a collective, the peers that never post, the ranks of a mismatch) are listed first, so
the line cap never cuts them off.
"""

from __future__ import annotations

from simulator.replay.rank_state import RankState, Rendezvous
from simulator.replay.sendrecv import P2PSide


def _issue(rv: Rendezvous) -> str:
    return f"{rv.op.op} of {rv.op.size_bytes:,} bytes"


def hang_report(stuck: list[RankState], ranks: dict[int, RankState], rendezvous: dict[tuple, Rendezvous],
                p2p: dict[tuple[int, int, str], P2PSide], limit: int = 24) -> str:
    """``stuck``: the simulated ranks that never finished; ``ranks``: every simulated rank;
    ``rendezvous`` (keyed stream, members, sequence number, kind, size) and ``p2p``: the
    collectives and send/recv sides still waiting."""
    waiting: dict[tuple[int, int], str] = {}
    at_fault: set[int] = set()
    # the rendezvous of one (stream, group, sequence number): more than one means a mismatch
    by_slot: dict[tuple, list[Rendezvous]] = {}
    for rv_key, rv in rendezvous.items():
        by_slot.setdefault(rv_key[:3], []).append(rv)
    for (stream, members, _seq), rvs in by_slot.items():
        if len(rvs) > 1:
            parts = [f"ranks {sorted(R.rank for R, _ in rv.arrived)} issued {_issue(rv)}" for rv in rvs]
            detail = (f"collective on stream {stream}, group {list(members)}: members disagree on what their "
                      f"collective number {_seq} is: " + "; ".join(parts))
            for rv in rvs:
                at_fault.update(R.rank for R, _ in rv.arrived)
                for R, i in rv.arrived:
                    waiting[(R.rank, i)] = detail
            continue
        rv = rvs[0]
        here = sorted(R.rank for R, _ in rv.arrived)
        missing = [m for m in rv.members if m in ranks and m not in here]
        at_fault.update(missing)
        for R, i in rv.arrived:
            waiting[(R.rank, i)] = (f"collective {rv.op.op} of {rv.op.size_bytes:,} bytes (stream {rv.op.stream}, "
                                    f"group {list(rv.members)}); issued by ranks {here}, never by ranks {missing}")
    for (src, dst, key), side in p2p.items():
        for rank, i, kind in side.posted_by:
            peer = dst if kind == "send" else src
            at_fault.add(peer)
            waiting[(rank, i)] = (f"{kind} key {key!r} {'to' if kind == 'send' else 'from'} rank {peer}; "
                                  f"rank {peer} never posts the matching {'recv' if kind == 'send' else 'send'}")
    lines: list[tuple[bool, int, str]] = []
    for R in stuck:
        prog = R.table.program
        for stream, (i, why) in sorted(R.blocked.items()):
            if R.done[i]:
                continue
            op = prog[i]
            detail = waiting.get((R.rank, i)) or (
                f"waits for its dependency op {why} ({prog[why].name!r})" if isinstance(why, int) else f"waits ({why})")
            lines.append((R.rank not in at_fault, R.rank,
                          f"  rank {R.rank}: op {i} {op.name!r} on stream {stream}: {detail}"))
    lines.sort(key=lambda line: line[:2])  # the ranks at fault first, then by rank
    head = f"{len(stuck)} of {len(ranks)} simulated ranks never finish the step"
    if at_fault:
        shown = sorted(at_fault)
        head += f"; at fault: ranks {shown[:16]}{' ...' if len(shown) > 16 else ''}"
    out = [head + ":"] + [text for _, _, text in lines[:limit]]
    if len(lines) > limit:
        out.append(f"  ... {len(lines) - limit} more blocked streams")
    return "\n".join(out)

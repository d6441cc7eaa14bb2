"""Micro-batch folding: replay the steady micro-batches that repeat once, not M times.

In the steady state of 1F1B every stage runs the same pair of passes (a forward, a backward and
their send/recv) once per micro-batch; interleaved 1F1B repeats every pp·vp steps (pp
micro-batches). Where nothing differs from one such period to the next (the same kernels and
messages, and the same contention on the network), the step with M micro-batches is the step
with M − n·m of them (m: the micro-batches of one period) with n copies of a steady period put
back in the middle, each one period T later than the one before, and everything after them n·T
later.

The fold is checked, not assumed; where a check fails the whole step is replayed instead:

1. **Same ops.** Every op of the full program has its counterpart in the reduced one (the
   caller builds it with fewer micro-batches): the same kind, shape, stream, group or messages,
   and its dependencies at the same distance (or on the same op before the steady periods; or,
   for an op after them, on every copy of an op of the period, as ZeRO-2's gradient clipping
   waits for every micro-batch's ReduceScatters). So the durations and the links are the same.
2. **One more period is one T later.** The reduced step is replayed twice, with M' and M' + m
   micro-batches. The second must be the first with one copy of a steady period put back,
   on every simulated rank and for every op (ready, start, end to 1e-9 of the step,
   :data:`_REL_TOL`; algorithm, protocol and group alike). That holds only when everything a
   period carries into the next repeats: the kernels and messages in flight, the contention on
   the network, and a host that stays ahead of the GPU (the host issues each later op h later
   per period, the GPU reaches it T later; an op that waits for its issue in one replay moves
   by h, not T, and fails the check). Putting n periods back is that step taken n times.
3. **The host stays ahead over the periods put back.** Check 2 sees the host only where an op
   waits for its issue in one of the two replays. Where the host needs more time per period than
   the GPU (h > T) but entered the steady periods with a lead (a later stage starts its first
   forward only once the stage before has sent it), the lead shrinks by h − T per period and
   lasts through both reduced replays, yet runs out n periods later: the full step waits for the
   host and the folded one does not. So the full program's issue times, the running sum of its
   host costs, are held to the folded timeline (:func:`_issued_alike`, the single mode's check
   below) before the second replay. DeepSeek-V2-Lite cut to 4 layers at tp 8 pp 2 cp 2 on 32
   B200 with 16 micro-batches (``tests/unit/test_fold.py``) folded 1.4 ms short of its unfolded
   151.9 ms before this check: its last stage enters the steady periods 2.9 ms ahead of the GPU
   and issues each micro-batch in 8.95 ms, which the GPU runs in 8.72, so the lead runs out after
   about twelve of its sixteen micro-batches, never in the reduced replays of five and six.

Where the checks refuse a fold, the reduced replay is spent for nothing: a quarter of the time
of DeepSeek-V3 at tp 1 pp 16 dp 16 ep 8 ZeRO-2 (64 micro-batches; the slowest plan of the
bundled scenario's sweep). There the whole step repeats too late: in its unfolded replay,
stage 0's periods differ by up to 30 us from one to the next for its first ten steady periods,
and stage 12 approaches its steady period geometrically (by about 0.6 per period), within 1e-14
s only after some 55 of its periods, so no reduced step short enough to pay could pass check 2.
The refusal is right; skipping the attempt would need a way to tell such a step in advance.

**Single mode (interleaved 1F1B).** An interleaved period is pp micro-batches and the reduced
step keeps at least four, so the two reduced replays rarely pay (GPT-3 175B at tp 4 pp 8 vp 12
with 128 micro-batches: 48 + 56 of 128, :func:`fold_count`), and where they do, the second costs
as much as the first (Megatron-Bridge's Qwen3-235B at tp 2 pp 8 vp 4 with 512 micro-batches:
48 + 56 replayed, 32 CPU s; one replay of 48, 17 s, the same step). So wherever one reduced step
of at most half the micro-batches keeps four steady periods (:func:`fold_count_once`; every
interleaved step the two-replay fold would take qualifies), that step is replayed once and
check 2 is replaced by what makes it hold, checked in that replay (:func:`_steady_alone`): periods c − 1 .. c + 2 repeat T apart on every simulated rank (as
above); nothing that started before them is still running once period c has (so what a period
carries into the next is only its ops, whose times repeat); and the host issues every op at or
after the cut as it does in the reduced step, n periods later, or before the GPU could start it
in both (issue times are a running sum over the program, the one carried state that is not
periodic, restarted after each host synchronisation at a GPU time that is: :func:`_issued_alike`).
The replay being deterministic, the step with n more periods is then the reduced one with n
copies put back. Interleaved MoE plans whose DeepEP dispatch blocks the host every layer fold so:
Megatron-MoE-ModelZoo's Qwen3-235B at tp 2 pp 8 vp 4 (DeepEP, with and without the A2A overlap;
5.1 -> 3.2 and 16.5 -> 8.6 CPU s), Megatron-Bridge's DeepSeek-V3 on B200 and GB200, every step
time the same to the printed digit. Measured on the rows of the step-time validation it
folds, step times against the unfolded replay's: the five MLPerf GPT-3 175B rows with 128
micro-batches (6e-14 to 1.1e-13 relative; 16-21 -> 10-12 s each), GPT-175B at tp 8 pp 12 vp 4
with 192 micro-batches (4e-15; 8.2 -> 3.5 s), MegaScale's GPT 175B at 96 and 128 (2e-14), and
NeMo's Llama 3 70B at tp 4 pp 4 vp 5 cp 2 with 64 (7e-10: every op to 4e-12 s but the last
seven DP ReduceScatters of stage 0, 8e-9 s later, an ordering of nearly simultaneous flow ends
that the two-replay fold, which accepts this step too, gives alike). The 405B proxy of
dgxc_llama (64 micro-batches) fails the periodicity check and is replayed whole (+0.8 s).
``tests/unit/test_fold.py`` compares every op on a small plan.

The trace is expanded back to every op of the full program (ready, start, end, algorithm and
group), so reports, Perfetto traces and plots read it as they read an unfolded one;
``tests/unit/test_fold.py`` compares both on 1F1B, interleaved, ZeRO-3, CP and MoE plans.
"""

from __future__ import annotations

from itertools import chain
from operator import attrgetter
from typing import Any, Callable, Sequence

import numpy as np

from simulator.schedule.ir import CommOp, ComputeOp, Op, P2POp

# How close (a fraction of the step) the checks require times that should repeat one period T apart.
# The replay's fluid flow model settles flows that end at nearly the same moment in event order, so
# one more period can move ops of the cool-down by nanoseconds: Qwen3-235B on 256 H100 (tp 2 pp 8
# vp 4 ep 32, 512 micro-batches; Megatron-Bridge's MoE row) has 178-196 ops on three of its stages
# 4.96e-9 s later in the step with one period more than in the step with one copy put back, 7e-11
# of its 70 s step, every op before them within 1e-12. At 1e-12 that refused the fold, and the two
# reduced replays (40 s) were spent before a whole replay of 180 s; at 1e-9 it folds in 45 s, step
# 69.85088157 s against the unfolded 69.85088153 (6e-10). A fold that passes is within n x _REL_TOL
# of the step of the unfolded replay at worst (n periods put back, each within the tolerance of the
# one before: 6e-8 of the step, 4 us, for that row's 58), far below the model's accuracy; a period that
# really drifts (an issue time falling behind by the host's period, a pipeline still settling by
# microseconds per period) is refused as before.
_REL_TOL = 1e-9


def _keep_cut(period: int) -> tuple[int, int]:
    """Steady periods the reduced step keeps (on the stage with the fewest), and the period whose
    copies go back after it: the pipeline has filled by then and the cool-down is still ahead.
    A 1F1B period is one micro-batch, so six of them; an interleaved one is pp·vp steps (pp
    micro-batches), so four, the copies after the third. Where the first stage has not settled
    by then, the copies go after the first later period around which it has (:func:`_settled_cut`)."""
    return (6, 2) if period == 1 else (4, 2)


# The fewest steady periods a reduced step can keep: fold_replay looks for each rank's cut among
# periods 1 .. kept − 2, and checks the periods on either side of it (_repeats: c − 1 .. c + 2),
# so the stage with the fewest needs periods 0 .. 4 to take the cut at period 2 (_keep_cut).
_MIN_KEEP = 4


def fold_count(schedule: Any) -> int:
    """How many steady periods of ``schedule`` a fold leaves out; 0 (no fold) where the two
    reduced steps it replays would hold more than 3/4 of the micro-batches of the step: then
    folding would not pay for its second replay and its checks.

    The reduced step keeps :func:`_keep_cut`'s periods, or, where that leaves too few to pay
    (a 1F1B step of 16-30 micro-batches, e.g. GPT-3 175B at pp 4 with 24), only
    ``_MIN_KEEP``. Fewer kept periods change no figure: a fold stands only when check 2 finds
    the step with one more period to be the step with a copy put back, op by op (else the step
    is replayed whole); what they risk is a cut before the pipeline has settled, which that
    check refuses at the cost of the reduced replay.

    An interleaved step rarely pays: its period is pp micro-batches and its warm-up and
    cool-down span about two more periods. GPT-3 175B at tp 4 pp 8 vp 12 with 128 micro-batches
    (the MLPerf rows on 512 and 768 H100) has periods of 96 steps (8 micro-batches); its
    shortest stage holds 14 steady ones, so keeping 4 leaves out n = 10, and the two reduced
    steps hold 48 + 56 = 104 micro-batches, more than 3/4 of 128: no fold (at most a fifth of
    the replay saved, before the checks)."""
    steady = getattr(schedule, "steady", None)
    if not steady:
        return 0
    period = schedule.steady_period
    n_micro, per = int(schedule.meta["n_micro"]), schedule.period_micro_batches
    shortest = min((len(s) - 1) // period for s in steady.values())
    for keep in sorted({_keep_cut(period)[0], _MIN_KEEP}, reverse=True):
        n = max(shortest - keep, 0)
        kept = n_micro - n * per
        if n >= 2 and 2 * kept + per <= 0.75 * n_micro:
            return n
    return 0


_ONCE_MAX = 0.5  # the most of a step's micro-batches the single mode's one reduced replay holds


def fold_count_once(schedule: Any) -> int:
    """How many steady periods an interleaved ``schedule`` leaves out when folded from one
    reduced replay (:func:`fold_replay`'s single mode, tried before the two-replay fold): the
    reduced step keeps ``_MIN_KEEP`` periods on its shortest stage and must hold at most half the
    micro-batches (below). 1F1B (a period of one micro-batch) keeps the
    two-replay fold only: its reduced steps are short enough to pay for the second replay.
    The reduced step must hold at most half the micro-batches: where the single mode's checks
    refuse, its replay is spent for nothing, so it is tried only where it saves that much.

    GPT-3 175B at tp 4 pp 8 vp 12 with 128 micro-batches: periods of 8 micro-batches, 14 steady
    ones on the shortest stage, so n = 10 and one replay of 48 micro-batches instead of 128
    (with 64, n = 2 and 48 of 64: not tried). At 3/4 instead of 1/2, the 14 interleaved rows of
    the step-time validation with n = 2 or 3 fold to the same step times (to 1e-13) but save
    no more than the noise of a shared 2-core machine, and the one the checks refuse (NeMo's GPT3
    175B tp 4 pp 8 vp 6 on 512 GPUs) takes 7.6 -> 15.8 CPU s."""
    steady = getattr(schedule, "steady", None)
    if not steady or schedule.steady_period == 1:
        return 0
    period = schedule.steady_period
    n_micro, per = int(schedule.meta["n_micro"]), schedule.period_micro_batches
    n = min((len(s) - 1) // period for s in steady.values()) - _MIN_KEEP
    if n >= 2 and n_micro - n * per <= _ONCE_MAX * n_micro:
        return n
    return 0


_COMPUTE = attrgetter("kind", "flops", "hbm_bytes", "gemm", "count", "dtype", "causal_fraction", "sm_fraction", "stream",
                      "attention_kernel", "attention_shape", "attention_window", "host_us", "concurrent", "host_sync",
                      "deterministic_heads", "scaling", "attention_dropout", "cuda_graph", "host_calls",
                      "host_tensors", "impl", "host_issue", "fill_bytes", "fill_kernels")
_COMM = attrgetter("op", "axes", "size_bytes", "stream", "dtype", "host_sync", "cuda_graph")
_TRANSFER = attrgetter("axis", "offset", "nbytes", "transport")
_RECOMPUTE = ".recompute"


def _signature(op: Op) -> tuple:
    """What decides an op's duration, links, matching and host cost (``costs/host.py``: its
    phase and whether it is a recomputed forward), without its name and dependencies. Equal
    signatures therefore mean equal host costs, which :func:`_issued_alike` relies on."""
    if type(op) is ComputeOp:
        return (*_COMPUTE(op), op.tag.phase, op.name.endswith(_RECOMPUTE))
    if type(op) is CommOp:
        return (*_COMM(op), op.tag.phase)
    if type(op) is P2POp:
        return (op.stream, tuple(map(_TRANSFER, op.sends)), tuple(map(_TRANSFER, op.recvs)))
    return (type(op).__name__,)


class _Map:
    """Full program position -> (reduced position, periods later), for one role."""

    def __init__(self, cut: int, length: int, n: int, n_full: int) -> None:
        self.cut, self.length, self.n = cut, length, n
        i = np.arange(n_full, dtype=np.int64)
        inserted = (i >= cut) & (i < cut + n * length)
        self.index = np.where(i < cut, i, np.where(inserted, cut + (i - cut) % length, i - n * length))
        self.shift = np.where(i < cut, 0, np.where(inserted, (i - cut) // length, n)).astype(np.float64)

    def full_positions(self, j: int) -> range | tuple[int]:
        """The full program's positions that replay reduced position ``j``."""
        if j < self.cut:
            return (j,)
        if j < self.cut + self.length:
            return range(j, j + (self.n + 1) * self.length, self.length)
        return (j + self.n * self.length,)


def _same_ops(full: Sequence[Op], reduced: Sequence[Op], m: _Map, full_stamps: Sequence[tuple] = (),
              reduced_stamps: Sequence[tuple] = ()) -> bool:
    """Check 1: every full op is its reduced counterpart, dependencies at the same distance,
    or, for an op after the periods put back, on every copy of an op of the copied period.
    Where a run of full ops and their counterparts are stamps of one template
    (:func:`_alike_stamps`), their signatures are equal by construction: only their
    dependencies are compared, and of those only the ones outside the stamp (an op that waits
    only for ops of its own stamp waits for its counterpart's at the same distance)."""
    index = m.index.tolist()
    cut = m.cut
    sigs: list[tuple | None] = [None] * len(reduced)  # each reduced op's, once asked for
    alike = _alike_stamps(full, reduced, m, index, full_stamps, reduced_stamps)
    lo = 0
    for a, b, _ in (*alike, (len(full), len(full), ())):
        for i in range(lo, a):
            op = full[i]
            j = index[i]
            red = reduced[j]
            if op is red:  # one op object (a stamp both builds kept, schedule/transformer.py): the same op
                continue
            sig = sigs[j]
            if sig is None:
                sig = sigs[j] = _signature(red)
            if type(op) is not type(red) or _signature(op) != sig:
                return False
        lo = b
    for i in _deps_apart(full, reduced, m, _deps_to_compare(full, alike)):
        j = index[i]
        deps, rdeps = full[i].deps, reduced[j].deps
        if deps != rdeps and not (len(deps) == len(rdeps) and all(
                d - i == e - j or (d == e and e < cut) for d, e in zip(deps, rdeps))):
            if i < cut + m.n * m.length or sorted(deps) != _every_copy(rdeps, m):
                return False
    return True


def _alike_stamps(full: Sequence[Op], reduced: Sequence[Op], m: _Map, index: list[int],
                  full_stamps: Sequence[tuple], reduced_stamps: Sequence[tuple]) -> list[tuple[int, int, Any]]:
    """The runs ``[a, b)`` of full positions (with their template), in order, that one stamp of a
    layer pass's template appended (``ProgramBuilder.stamps``: start, ops, template) and whose
    counterparts, at consecutive reduced positions, one stamp of the same template did. A
    stamp's ops take every field but their dependencies, tags and P2P keys from the template
    (``schedule/transformer.py``, ``_stamp_ops``), and :func:`_signature` reads none of those, so
    such a run's ops have their counterparts' signatures. A stamp counts only while the program
    still holds its ops (``tuple`` equality: the build may have moved or replaced some since)."""
    if not full_stamps or not reduced_stamps:
        return []
    at = {start: (ops, tpl) for start, ops, tpl in reduced_stamps}
    held: dict[int, bool] = {}  # reduced stamps checked against the reduced program
    inserted = m.cut + m.n * m.length
    out: list[tuple[int, int, Any]] = []
    end = 0
    for a, ops, tpl in full_stamps:
        n = len(ops)
        b = a + n
        if not n or a < end or b > len(full):
            continue
        # a run inside one region of the map (before the cut, one copy of the period, after the
        # copies) has consecutive counterparts
        first, last = a, b - 1
        one_copy = m.cut <= first and last < inserted and (first - m.cut) // m.length == (last - m.cut) // m.length
        if not (last < m.cut or first >= inserted or one_copy):
            continue
        j = index[a]
        hit = at.get(j)
        if hit is None or hit[1] is not tpl or len(hit[0]) != n:
            continue
        ok = held.get(j)
        if ok is None:
            ok = held[j] = tuple(reduced[j:j + n]) == hit[0]
        if ok and tuple(full[a:b]) == ops:
            out.append((a, b, tpl))
            end = b
    return out


def _deps_to_compare(full: Sequence[Op], alike: list[tuple[int, int, Any]]) -> np.ndarray | None:
    """The full positions whose dependencies check 1 compares: all but the ops of the runs of
    :func:`_alike_stamps` that wait only for ops of their own stamp (a template's dependency
    inside the pass is ``start + d``: at the same distance in both stamps). Which ops of a
    stamp wait outside it is the template's (its rows' symbols), found on its first run."""
    if not alike:
        return None
    starts: dict[int, tuple[Any, int, list[int]]] = {}  # by template: its runs' length and starts
    for a, b, tpl in alike:
        entry = starts.get(id(tpl))
        if entry is None or entry[0] is not tpl:
            entry = starts[id(tpl)] = (tpl, b - a, [])
        entry[2].append(a)
    edges = np.zeros(len(full) + 1, dtype=np.int64)
    runs = np.array([(a, b) for a, b, _ in alike], dtype=np.int64)
    np.add.at(edges, runs[:, 0], 1)
    np.add.at(edges, runs[:, 1], -1)
    keep = np.cumsum(edges[:-1]) == 0
    for _, n, firsts in starts.values():
        a = firsts[0]
        # offsets of the ops that wait outside their stamp (the template's rows with a symbol)
        outside = np.array([k for k in range(n) if any(d < a for d in full[a + k].deps)], dtype=np.int64)
        if outside.size:
            keep[(np.array(firsts, dtype=np.int64)[:, None] + outside[None, :]).ravel()] = True
    return np.flatnonzero(keep)


def _deps_apart(full: Sequence[Op], reduced: Sequence[Op], m: _Map,
                positions: np.ndarray | None = None) -> list[int]:
    """The full ops (of ``positions``, default all) whose dependencies are not, one by one, their
    reduced counterpart's at the same distance (or the same op before the cut): :func:`_same_ops`
    looks at those alone. Every dependency of the step as one array (a Python test per
    dependency was a third of the check on a folded plan's tens of thousands of ops)."""
    at_full = np.arange(len(full), dtype=np.int64) if positions is None else positions
    idx = m.index[at_full]
    fd = [op.deps for op in full] if positions is None else [full[i].deps for i in at_full.tolist()]
    rd = [reduced[j].deps for j in idx.tolist()]
    fl = np.fromiter(map(len, fd), np.int64, len(fd))
    rl = np.fromiter(map(len, rd), np.int64, len(rd))
    same_len = fl == rl
    ff = np.fromiter(chain.from_iterable(fd), np.int64, int(fl.sum()))
    rf = np.fromiter(chain.from_iterable(rd), np.int64, int(rl.sum()))
    if rf.size == 0:
        rf = np.zeros(1, dtype=np.int64)
    f_off = np.cumsum(fl) - fl
    r_off = np.cumsum(rl) - rl
    owner = np.repeat(np.arange(fl.size, dtype=np.int64), fl)  # the checked op of each dependency
    i = at_full[owner]
    j = idx[owner]
    at = np.where(same_len[owner], r_off[owner] + np.arange(ff.size, dtype=np.int64) - f_off[owner], 0)
    e = rf[at]
    good = same_len[owner] & ((ff - i == e - j) | ((ff == e) & (e < m.cut)))
    apart = ~same_len
    apart[owner[~good]] = True
    return at_full[np.flatnonzero(apart)].tolist()


def _every_copy(rdeps: Sequence[int], m: _Map) -> list[int]:
    """The full program's dependencies of an op after the periods put back (n periods later)
    that waits for every micro-batch: each reduced dependency in the copied period stands for
    all its copies, one before it the same op, one after it the op n periods later. ZeRO-2's
    gradient clipping waits so for the ReduceScatter of every micro-batch's buckets
    (schedule/data_parallel.py). The copies end one period T apart (T > 0), so the last binds,
    as the dependency at the same distance would; check 2 replays the step with one more
    period, whose op waits for one copy more, and compares."""
    out: list[int] = []
    for e in rdeps:
        if e < m.cut:
            out.append(e)
        elif e < m.cut + m.length:
            out.extend(m.full_positions(e))
        else:
            out.append(e + m.n * m.length)
    return sorted(out)


def fold_replay(schedule: Any, reduced_of: Callable[[int], Any], run: Callable[[Any], Any],
                ranks: Sequence[int]) -> tuple[dict[int, dict[str, Any]], Any, int] | None:
    """Replay ``schedule`` folded, or None where a check fails (the caller then replays it whole).

    ``reduced_of(M')`` builds the schedule of the same step with M' micro-batches per pipeline;
    ``run(schedule)`` replays one on the simulated ``ranks`` and returns the Replayer (its
    ``ranks``: rank -> RankState, its ``env.n_events``). Returns per rank the full timeline's
    fields, the Replayer of the reduced step (for its statistics) and the micro-batches folded.

    The copies go back on every rank at the same moment of the step, not at the same period:
    in a deep pipeline the last stage runs many more steady periods than the first before the
    first's are steady, so each rank's copies follow its period that starts when the
    first stage's period ``c`` does (``c`` from :func:`_keep_cut`): the period that starts
    nearest to it."""
    # An interleaved step folds from one reduced replay wherever it folds at all (single mode:
    # _steady_alone checks instead of a second replay); 1F1B from two.
    n = fold_count_once(schedule)
    once = n >= 2
    if not once:
        n = fold_count(schedule)
    if n < 2:
        return None
    period, per = schedule.steady_period, schedule.period_micro_batches
    n_micro = int(schedule.meta["n_micro"])
    small = reduced_of(n_micro - n * per)
    if any(len(small.steady.get(role, ())) != len(st) - n * period for role, st in schedule.steady.items()):
        return None
    rp_small = run(small)
    states = [rp_small.ranks[r] for r in ranks]
    ref = min(states, key=lambda R: len(small.steady[R.role]))
    at = small.steady[ref.role]
    step = max(float(np.nanmax(R.end)) for R in states)
    found = _settled_cut(ref, at, period, _keep_cut(period)[1], step)
    if found is None:
        return None
    c, T, tol = found
    t_cut = float(ref.start[at[c * period]])
    cuts: dict[int, int] = {}
    for R in states:
        st = small.steady[R.role]
        last = (len(st) - 1) // period - 2  # periods p-1 .. p+2 must exist
        p = min(range(1, last + 1), key=lambda p: abs(R.start[st[p * period]] - t_cut), default=None)
        # Before the second replay: the periods around the cut must already repeat (else the
        # second would be replayed for nothing).
        if p is None or not _repeats(R, st, period, p, T, tol):
            return None
        cuts[R.rank] = p
    checked: dict[tuple, _Map | None] = {}
    maps: dict[int, _Map] = {}
    host_costs = getattr(rp_small.costs, "issue_times", None) is not None  # False: a test's stand-in
    if once:
        for R in states:
            m1 = _map_for(schedule, small, R.role, n, period, cuts[R.rank], checked)
            if m1 is None or not _steady_alone(R, small.steady[R.role], period, cuts[R.rank], m1, T, tol, host_costs):
                return None
            maps[R.rank] = m1
        return _expanded(states, maps, T), rp_small, n * per
    large = reduced_of(n_micro - (n - 1) * per)
    once_maps = {}
    for R in states:
        m1 = _map_for(schedule, small, R.role, n, period, cuts[R.rank], checked)
        m2 = _map_for(large, small, R.role, 1, period, cuts[R.rank], checked)
        if m1 is None or m2 is None:
            return None
        if host_costs and not _issued_alike(R, m1, T, tol):  # check 3
            return None
        maps[R.rank], once_maps[R.rank] = m1, m2
    rp_large = run(large)
    for R in states:
        big, m = rp_large.ranks[R.rank], once_maps[R.rank]
        for x in ("ready", "start", "end"):
            if not np.all(np.abs(getattr(R, x)[m.index] + m.shift * T - getattr(big, x)) <= tol):
                return None
        for name in ("algorithm", "groups"):
            src, dst = getattr(R, name), getattr(big, name)
            if len(dst) != sum(len(m.full_positions(j)) for j in src) or any(
                    dst.get(i) != v for j, v in src.items() for i in m.full_positions(j)):
                return None
    rp_small.env.n_events += rp_large.env.n_events
    return _expanded(states, maps, T), rp_small, n * per


def _settled_cut(ref: Any, at: Sequence[int], period: int, first: int, step: float) -> tuple[int, float, float] | None:
    """The first period ``c >= first`` of the reference rank (the stage with the fewest steady
    periods) around which its periods repeat (:func:`_repeats`), with the period T measured
    there and the tolerance of the checks; None where none of its periods up to the last that
    has two after it does.

    A deep 1F1B pipeline's first stage can take longer to settle than :func:`_keep_cut`
    assumes: GPT-175B at tp 8 pp 32 (vTrain's rows, 384 micro-batches) runs its first two
    steady periods 3.1 s and 78 ms longer than the third and every later one (147.7 ms). Cut
    after the third (c = 2), T was measured on the second, unsettled, and the fold refused after
    the reduced replay; around the fourth the periods repeat, and the fold's own checks (check
    2, or the single mode's) still decide whether the step is the reduced one with copies put
    back."""
    last = (len(at) - 1) // period - 2
    for c in range(first, last + 1):
        T = float(ref.start[at[c * period]] - ref.start[at[(c - 1) * period]])
        tol = _REL_TOL * (step + abs(T))
        if T > 0 and _repeats(ref, at, period, c, T, tol):
            return c, T, tol
    return None


def _expanded(states: Sequence[Any], maps: dict[int, _Map], T: float) -> dict[int, dict[str, Any]]:
    """Per rank, the full program's timeline fields from the reduced replay's."""
    out: dict[int, dict[str, Any]] = {}
    for R in states:
        m = maps[R.rank]
        fields: dict[str, Any] = {x: getattr(R, x)[m.index] + m.shift * T for x in ("ready", "start", "end")}
        for name in ("algorithm", "groups"):
            fields[name] = {i: v for j, v in getattr(R, name).items() for i in m.full_positions(j)}
        out[R.rank] = fields
    return out


def _steady_alone(R: Any, steady: Sequence[int], period: int, c: int, m: _Map, T: float, tol: float,
                  host_costs: bool) -> bool:
    """Single mode's stand-in for check 2, on rank R of the one reduced replay (periods c − 1 ..
    c + 2 already repeat, :func:`_repeats`). The replay is deterministic, so the step with n
    more periods is the reduced one with n copies put back if what the copied period carries
    into the next is only what its ops carry, and that repeats:

    * nothing older than the checked periods is still running once period c has started (a
      long op, e.g. a bucket's gradient collective, would meet a different copy in the full
      step, and its contention is not in any op time compared);
    * the host issues every op at or after the cut alike in both steps (:func:`_issued_alike`).
    """
    b0, b1 = steady[(c - 1) * period], steady[c * period]
    if b0 and not float(np.max(R.end[:b0])) <= float(R.start[b1]) + tol:
        return False
    if not host_costs:
        return True  # a cost model without host costs: every op issued at 0
    return _issued_alike(R, m, T, tol)


def _host_synced_after(synced: np.ndarray) -> np.ndarray:
    """For each op, the last op before it after which the host waited for the GPU (``synced``:
    which ops have ``host_sync``; -1: none), as ``RoleTable.synced_after`` holds it for a
    replayed program."""
    after = np.full(len(synced), -1, dtype=np.int64)
    syncs = np.flatnonzero(synced).tolist()
    for s, nxt in zip(syncs, [*syncs[1:], len(synced) - 1]):
        after[s + 1:nxt + 1] = s
    return after


def _full_issue(reduced: Sequence[Op], reduced_issue: Sequence[float], m: _Map) -> tuple[np.ndarray, np.ndarray]:
    """The full program's host issue times (the running sum of host costs) and its last host
    synchronisation before each op, from the reduced program's (``reduced_issue``: its issue
    times, the running sum from 0, as its replay's ``RoleTable.issue`` holds them): check 1
    (:func:`_same_ops`) found every full op's signature, host cost and ``host_sync`` included,
    equal to its counterpart's (a stamp's by its template), so the full program's costs are the
    reduced program's at ``m.index``, summed in the same order. Pricing every op of the full
    program again took 370,000 host costs a rank on the 512-micro-batch Qwen3-235B row, and
    pricing the reduced program again (its table already holds the sums) 0.9 million on Llama 3.1
    405B at tp 4 pp 16 vp 4."""
    cost = np.diff(np.asarray(reduced_issue, dtype=np.float64), prepend=0.0)
    synced = np.fromiter((getattr(op, "host_sync", False) for op in reduced), dtype=bool, count=len(reduced))
    return np.cumsum(cost[m.index]), _host_synced_after(synced[m.index])


def _issued_alike(R: Any, m: _Map, T: float, tol: float) -> bool:
    """Whether the host issues each op at or after the cut of the full program as it does its
    counterpart in the reduced replay, or issues both before the GPU could start them.

    The host's issue times are a running sum of host costs over the program (``costs/host.py``),
    restarted after every host synchronisation at the end of the op it waited for
    (``replay/engine.py``, ``_issued``). Without one they are not periodic: an op the host holds
    back would move by the host's period h, not T, so each op at or after the cut must be issued
    before it became ready and started, in the reduced replay and, at its n-periods-later time,
    in the full program. After a synchronisation an op is issued ``issue[i] − issue[s]`` after the
    synchronised op s ended, and s's end in the full step is its counterpart's, ``shift(s)·T``
    later: the op is issued alike wherever s falls in the same copy of the period as the op, or
    in the one before it (then the counterpart's own last synchronisation is s's counterpart one
    period earlier, T before, which :func:`_repeats` checked). So an op the host gates after a
    synchronisation moves by its shift·T exactly, and such programs fold: DeepEP's dispatch, which
    waits on the host for every forward dispatch's received-token counts (``schedule/moe.py``),
    in every MoE plan of Megatron-Bridge and Megatron-MoE-ModelZoo with interleaved pipelines.
    An op whose last synchronisation lies before the copies it belongs to (a period without one)
    moves by less and fails the comparison."""
    cut = m.cut
    table = R.table
    small_issue = np.asarray(table.issue, dtype=np.float64)
    full_issue, full_after = _full_issue(table.program, table.issue, m)
    small_after = np.asarray(table.synced_after if table.synced_after is not None else [-1] * len(small_issue),
                             dtype=np.int64)
    j = np.arange(cut, len(small_issue))
    s = small_after[j]
    small_at = np.where(s < 0, small_issue[j],
                        R.end[np.maximum(s, 0)] + small_issue[j] - small_issue[np.maximum(s, 0)])
    small_first = np.minimum(R.ready[j], R.start[j])
    i = np.arange(cut, len(m.index))
    idx, shift = m.index[i], m.shift[i]
    fs = full_after[i]
    fs0 = np.maximum(fs, 0)
    synced_end = R.end[m.index[fs0]] + m.shift[fs0] * T
    full_at = np.where(fs < 0, full_issue[i], synced_end + full_issue[i] - full_issue[fs0])
    first = np.minimum(R.ready[idx], R.start[idx]) + shift * T
    small_i = small_at[idx - cut]
    early = (full_at + tol < first) & (small_i + tol < small_first[idx - cut])
    alike = np.abs(full_at - (small_i + shift * T)) <= tol
    return bool(np.all(early | alike))


def _repeats(R: Any, steady: Sequence[int], period: int, c: int, T: float, tol: float) -> bool:
    """Whether periods c and c+1 of rank R's replay are the period before, T later."""
    b = [steady[k * period] for k in (c - 1, c, c + 1, c + 2)]
    if not b[1] - b[0] == b[2] - b[1] == b[3] - b[2]:
        return False
    for x in (R.ready, R.start, R.end):
        a, u, v = x[b[0]:b[1]], x[b[1]:b[2]], x[b[2]:b[3]]
        if not (np.all(np.abs(u - a - T) <= tol) and np.all(np.abs(v - u - T) <= tol)):
            return False
    return True


def _map_for(full: Any, reduced: Any, role: str, n: int, period: int, cut_period: int,
             checked: dict[tuple, _Map | None]) -> _Map | None:
    """The map from ``full``'s positions of ``role`` to ``reduced``'s (n steady periods put back
    after period ``cut_period``), or None where the programs are not that (check 1)."""
    prog, red = full.programs[role], reduced.programs.get(role)
    key = (id(prog), id(red), n, cut_period)
    if key in checked:
        return checked[key]
    steady, steady_r = full.steady.get(role), reduced.steady.get(role)
    m: _Map | None = None
    if red is not None and steady and steady_r and len(steady_r) == len(steady) - n * period:
        cut = steady_r[cut_period * period]
        length = steady_r[(cut_period + 1) * period] - cut
        if len(prog) == len(red) + n * length:
            m = _Map(cut, length, n, len(prog))
            if not _same_ops(prog, red, m, getattr(full, "stamps", {}).get(role, ()),
                             getattr(reduced, "stamps", {}).get(role, ())):
                m = None
    checked[key] = m
    return m

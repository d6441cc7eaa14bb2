"""Pipeline schedules: the program of one pipeline stage for one training step.

Order of forward (F) and backward (B) passes and of the activation send/recv as Megatron-Core
runs them (``megatron/core/pipeline_parallel/schedules.py``):

* **1F1B** (``forward_backward_pipelining_without_interleaving``): stage s runs
  ``min(pp − s − 1, M)`` warm-up forwards (recv_forward, F, send_forward), then M − warm-up
  steady 1F1B pairs (F, send_forward_recv_backward, B, send_backward_recv_forward), then the
  cool-down backwards (recv_backward, B, send_backward).
* **Interleaved** (``forward_backward_pipelining_with_interleaving``, vp model chunks): virtual
  stage v = chunk·pp + s; warm-up ``(pp − s − 1)·2 + (vp − 1)·pp`` forwards (all of them if more),
  forward k runs chunk ``(k mod pp·vp) // pp`` on micro-batch ``(k // (pp·vp))·pp + k mod pp``,
  backward k the chunks in reverse; after every pass one batched send/recv exchanges with the
  neighbours exactly as Megatron's ``send_forward_recv_forward`` /
  ``send_forward_backward_recv_forward_backward`` / ``send_backward_recv_backward`` do. With
  ``overlap_p2p_comm`` (``--overlap-p2p-communication``) the forward's exchange follows each
  forward and the backward's each backward, on streams of their own, and only the pass that
  consumes a received tensor waits for it: the exchanges run under the other direction's pass.

Each message is a :class:`Transfer` along axis ``pp`` with offset ±1 (cyclic, so virtual stage
pp−1 → pp of the next chunk goes from the last stage to the first); its key names the virtual
stage it enters and the micro-batch, so sends meet their receives. A message holds one
micro-batch's hidden activation, ``b·s·h`` bytes over ``cp·ulysses`` and, with sequence
parallelism, over ``tp`` (each TP rank sends its sequence shard). Without sequence parallelism
every TP rank holds the whole activation; with ``scatter_gather_tensors_in_pipeline`` each sends
1/tp of it and the receiver AllGathers the pieces over tp before using them (Megatron-LM
``p2p_communication._communicate``: ``split_tensor_into_1d_equal_chunks`` /
``gather_split_1d_tensor``; DeepSpeed's ``PartitionedTensor`` in ``pipe/engine.py``). The first
virtual stage runs the embedding, the last the LM head and loss. DeepSpeed's ``PipelineEngine``
(``pp_engine: deepspeed``) keeps only the 1/tp share of a partitioned output after sending it
(``first_output.data = torch.zeros(1)``) and AllGathers it back over tp before that micro-batch's
backward, which needs the output tensor whole (``_exec_backward_pass``): one more AllGather per
micro-batch on every stage but the last. Its ``TrainSchedule`` runs the passes in 1F1B's order
(forward of micro-batch m on stage s at step 2m + s, backward at 2m + 2·pp − 1 − s) with each send
and receive a blocking ``dist.send``/``dist.recv`` of its own; the rendezvous between neighbours
are those of Megatron's batched exchanges, but each exchange of two messages runs as two
blocking transfers one after the other (a backward step sends the activation, then receives the
gradient; a forward step receives the activation, then sends the gradient), where Megatron's
batched exchange runs both directions at once.

With ``overlap_moe_expert_parallel_comm`` the steady passes are Megatron's combined 1F1B
(``pipeline_parallel/combined_1f1b.py``): a forward and the backward of another micro-batch as one
step whose layers are interleaved (:mod:`simulator.schedule.moe_overlap`), so each one's
expert-parallel All-to-Alls run under the other's compute. Without pipelining: F0, F(i) with
B(i−1), the last backward; interleaved: one more warm-up forward, then F(k + warm-up) with B(k).

With ``pp_flushes`` > 1 the step runs that many passes of M / pp_flushes micro-batches, each a
whole schedule with its own fill and drain, as a trainer on torch.distributed.pipelining does
that calls ``schedule.step`` once per gradient-accumulation step (NeMo AutoModel, torchtitan).
"""

from __future__ import annotations

from dataclasses import dataclass

from simulator.config.scenario import Scenario
from simulator.schedule.data_parallel import GradSync
from simulator.schedule import fp8, moe_overlap
from simulator.schedule.ir import CommOp, P2POp, Phase, ProgramBuilder, Tag, Transfer
from simulator.schedule.shapes import ParamUnit
from simulator.schedule.transformer import LayerBuilder, LayerSpec


@dataclass(frozen=True)
class Pass:
    kind: str  # "F" or "B"
    chunk: int
    mb: int


def _chunk(k: int, pp: int, vp: int, forward: bool) -> int:
    c = (k % (pp * vp)) // pp
    return c if forward else vp - 1 - c


def _mb(k: int, pp: int, vp: int) -> int:
    return (k // (pp * vp)) * pp + k % pp


def stage_message_bytes(scn: Scenario, spec: LayerSpec) -> tuple[int, int]:
    """(bytes sent, bytes AllGathered over tp after the receive) of one pipeline message: a
    stage's output, this rank's sequence-parallel shard; with Megatron's scatter/gather
    (``scatter_gather_tensors_in_pipeline``, TP without SP) 1/tp of it is sent and the whole
    message AllGathered after the receive."""
    p = scn.parallel
    msg = spec.sharded_tokens * spec.hidden * spec.act_bytes
    if p.scatter_gather_tensors_in_pipeline and p.tp > 1 and not spec.sp:
        return msg // p.tp, msg
    return msg, 0


class StageBuilder:
    """Builds the whole-step program of one (pipeline stage, CP index) role."""

    def __init__(self, scn: Scenario, stage: int, layers: LayerBuilder, sync: GradSync, chunks: list[list[ParamUnit]]):
        self.scn, self.stage, self.layers, self.sync, self.chunks = scn, stage, layers, sync, chunks
        p = scn.parallel
        self.pp, self.vp, self.M = p.pp, p.vp, scn.n_micro
        self.a2a_overlap = p.overlap_moe_expert_parallel_comm
        self.mb0 = 0  # first micro-batch of the pipeline pass being built
        spec = layers.spec
        self.msg, self.gathered = stage_message_bytes(scn, spec)
        # DeepSpeed's engine frees the sent output and gathers it back before the backward
        self.restore_output = bool(self.gathered) and p.pp_engine == "deepspeed"
        # ... and issues each send and receive of an exchange as a blocking call of its own
        self.serial_p2p = p.pp_engine == "deepspeed"
        self.act_dtype = spec.act_dtype
        self.pb = ProgramBuilder()
        self.recv: dict[tuple[str, int, int], int] = {}  # (F|B, chunk, mb) -> recv op
        self.out: dict[tuple[str, int, int], int] = {}  # (F|B, chunk, mb) -> last op of the pass
        self.fence = -1
        # Where each steady step begins in the program (a 1F1B pair; one forward and one
        # backward pass of interleaved 1F1B), and where the steps end: the replay folds repeated
        # steady micro-batches from these (replay/fold.py). Empty when the step has no single
        # steady section (pp_flushes > 1, combined 1F1B without pipelining).
        self.steady: list[int] = []

    # -- virtual-stage geometry ---------------------------------------------------------------

    def v(self, chunk: int) -> int:
        return chunk * self.pp + self.stage

    def first_v(self, chunk: int) -> bool:
        return self.v(chunk) == 0

    def last_v(self, chunk: int) -> bool:
        return self.v(chunk) == self.pp * self.vp - 1

    # -- passes -------------------------------------------------------------------------------

    def forward(self, chunk: int, mb: int) -> int:
        after = self.recv.get(("F", chunk, mb), self.fence)
        for unit in self.chunks[chunk]:
            after = self._forward_unit(unit, mb, after, self.sync.before_forward(self.pb, unit, mb, after))
        return self._end_forward(chunk, mb, after)

    def _forward_unit(self, unit: ParamUnit, mb: int, after: int, w: dict[str, tuple[int, ...]]) -> int:
        pb, lb = self.pb, self.layers
        if unit.layer is not None:
            return lb.forward(pb, unit.layer, mb, after, w.get("attn", ()), w.get("mlp", ()), self.sync.gate(mb))
        if unit.name == "embedding":
            return lb.embedding_forward(pb, mb, after, w.get("emb", ()))
        if unit.name.startswith("mtp"):  # a multi-token-prediction depth: its input, or its loss
            depth = int(unit.name[3:].split(".")[0])
            if unit.name.endswith(".head"):
                return lb.head_forward(pb, mb, after, w.get("head", ()), prefix=f"{unit.name[:-4]}")
            return lb.mtp_forward(pb, depth, mb, after, w.get("head", ()))
        return lb.head_forward(pb, mb, after, w.get("head", ()))

    def _end_forward(self, chunk: int, mb: int, after: int) -> int:
        after = self._amax(after, chunk, mb, "fwd")
        self.out[("F", chunk, mb)] = after
        return after

    def _amax(self, after: int, chunk: int, mb: int, phase: Phase) -> int:
        """Delayed FP8 scaling: the amax AllReduce closing a chunk's forward or backward."""
        t = self.scn.training
        if t.dtype != "fp8" or t.fp8_recipe != "delayed":
            return after
        axes = tuple(a for a, n in (("tp", self.scn.parallel.tp), ("cp", self.scn.parallel.cp), ("dp", self.scn.dp))
                     if n > 1)
        n_layers = sum(1 for u in self.chunks[chunk] if u.layer is not None)
        return fp8.amax_reduction(self.pb, axes, n_layers, mb, after, phase, chunk)

    def _backward_input(self, chunk: int, mb: int) -> int:
        """What a backward pass waits for: the received gradient (or the forward's end) and, in
        DeepSpeed's engine with a partitioned activation, the AllGather that rebuilds the
        stage's own output from the 1/tp share it kept when sending it (module docstring)."""
        after = self.recv.get(("B", chunk, mb), self.out[("F", chunk, mb)])
        if self.restore_output and not self.last_v(chunk):
            after = self.pb.add(CommOp(name=f"pp.out.v{self.v(chunk)}.mb{mb}.restore.allgather", op="allgather",
                                       axes=("tp",), size_bytes=self.gathered, deps=(after,),
                                       dtype=self.act_dtype, tag=Tag("other", None, mb)))
        return after

    def backward(self, chunk: int, mb: int) -> int:
        after = self._backward_input(chunk, mb)
        for unit in reversed(self.chunks[chunk]):
            after = self._backward_unit(unit, mb, after, self.sync.before_backward(self.pb, unit, mb, after))
            self.sync.after_backward(self.pb, unit, mb, after)
        return self._end_backward(chunk, mb, after)

    def _backward_unit(self, unit: ParamUnit, mb: int, after: int, w: dict[str, tuple[int, ...]]) -> int:
        pb, lb = self.pb, self.layers
        if unit.layer is not None:
            return lb.backward(pb, unit.layer, mb, after, w.get("attn", ()), w.get("mlp", ()), self.sync.gate(mb))
        if unit.name == "embedding":
            return lb.embedding_backward(pb, mb, after)
        if unit.name.startswith("mtp"):
            if unit.name.endswith(".head"):
                return lb.head_backward(pb, mb, after, prefix=f"{unit.name[:-4]}")
            return lb.mtp_backward(pb, int(unit.name[3:]), mb, after)
        return lb.head_backward(pb, mb, after)

    def _end_backward(self, chunk: int, mb: int, after: int) -> int:
        pb, sync = self.pb, self.sync
        if any(u.name == "head" for u in self.chunks[chunk]):
            after = self.layers.train_metrics(pb, mb, after)
        after = sync.accumulate(pb, chunk, mb, after)
        fence = sync.end_backward(pb, mb, after)
        if fence >= 0:
            self.fence = fence
        after = self._amax(after, chunk, mb, "bwd")
        self.out[("B", chunk, mb)] = after
        return after

    def combined(self, f: Pass, b: Pass) -> None:
        """Forward ``f`` and backward ``b`` as one step of Megatron's combined 1F1B
        (``combined_forward_backward_step``): b's LM head backward and f's embedding first, then
        forward layer i paired with backward layer n−1−i, their ops interleaved by
        :func:`simulator.schedule.moe_overlap.interleave`, then what is left of either pass."""
        pb, sync = self.pb, self.sync
        fa = self.recv.get(("F", f.chunk, f.mb), self.fence)
        ba = self._backward_input(b.chunk, b.mb)
        spec = self.layers.spec.moe
        sm_fraction = spec.beside_exchange_sm_fraction if spec is not None else 1.0
        fu = list(self.chunks[f.chunk])
        bu = list(reversed(self.chunks[b.chunk]))

        def backward_unit(unit: ParamUnit, after: int) -> int:
            after = self._backward_unit(unit, b.mb, after, sync.before_backward(pb, unit, b.mb, after))
            sync.after_backward(pb, unit, b.mb, after)
            return after

        while bu and bu[0].layer is None:
            ba = backward_unit(bu.pop(0), ba)
        while fu and fu[0].layer is None:
            unit = fu.pop(0)
            fa = self._forward_unit(unit, f.mb, fa, sync.before_forward(pb, unit, f.mb, fa))
        while fu and bu and fu[0].layer is not None and bu[0].layer is not None:
            uf, ub = fu.pop(0), bu.pop(0)
            wf = sync.before_forward(pb, uf, f.mb, fa)
            wb = sync.before_backward(pb, ub, b.mb, ba)
            start = len(pb)
            fa = self._forward_unit(uf, f.mb, fa, wf)
            mid = len(pb)
            ba = self._backward_unit(ub, b.mb, ba, wb)
            moved = moe_overlap.interleave(pb, start, mid, sm_fraction)
            fa, ba = moved(fa), moved(ba)
            sync.after_backward(pb, ub, b.mb, ba)
        for unit in fu:
            fa = self._forward_unit(unit, f.mb, fa, sync.before_forward(pb, unit, f.mb, fa))
        for unit in bu:
            ba = backward_unit(unit, ba)
        self._end_forward(f.chunk, f.mb, fa)
        self._end_backward(b.chunk, b.mb, ba)

    # -- communication ------------------------------------------------------------------------

    def p2p(self, name: str, send_f: Pass | None = None, send_b: Pass | None = None,
            recv_f: Pass | None = None, recv_b: Pass | None = None, stream: str = "") -> None:
        """One batched send/recv; passes that need no message (first/last virtual stage) drop out.
        ``stream``: the exchange's stream (default: the ``pp`` stream of every pipeline message)."""
        sends, recvs, deps = [], [], []
        if send_f is not None and not self.last_v(send_f.chunk):
            sends.append(Transfer("pp", +1, self.msg, f"pp.act.v{self.v(send_f.chunk) + 1}.mb{send_f.mb}"))
            deps.append(self.out[("F", send_f.chunk, send_f.mb)])
        if send_b is not None and not self.first_v(send_b.chunk):
            sends.append(Transfer("pp", -1, self.msg, f"pp.grad.v{self.v(send_b.chunk) - 1}.mb{send_b.mb}"))
            deps.append(self.out[("B", send_b.chunk, send_b.mb)])
        if recv_f is not None and not self.first_v(recv_f.chunk):
            recvs.append((("F", recv_f.chunk, recv_f.mb),
                          Transfer("pp", -1, self.msg, f"pp.act.v{self.v(recv_f.chunk)}.mb{recv_f.mb}")))
        if recv_b is not None and not self.last_v(recv_b.chunk):
            recvs.append((("B", recv_b.chunk, recv_b.mb),
                          Transfer("pp", +1, self.msg, f"pp.grad.v{self.v(recv_b.chunk)}.mb{recv_b.mb}")))
        first = send_f or send_b or recv_f or recv_b
        if first is None or (not sends and not recvs):
            return
        mb = first.mb
        if self.serial_p2p and len(sends) + len(recvs) > 1:
            idx = self._serial_p2p(name, sends, [t for _, t in recvs], deps, stream, mb, recvs_first=recv_f is not None)
        else:
            idx = self.pb.add(P2POp(name=f"pp.{name}", sends=tuple(sends), recvs=tuple(t for _, t in recvs),
                                    deps=tuple(deps), stream=stream, tag=Tag("other", None, mb)))
        for key, t in recvs:
            self.recv[key] = idx if not self.gathered else self.pb.add(CommOp(
                name=f"{t.key}.allgather", op="allgather", axes=("tp",), size_bytes=self.gathered, deps=(idx,),
                dtype=self.act_dtype, tag=Tag("other", None, key[2])))

    def _serial_p2p(self, name: str, sends: list[Transfer], recvs: list[Transfer], deps: list[int], stream: str,
                    mb: int, recvs_first: bool) -> int:
        """An exchange as DeepSpeed's TrainSchedule issues it: one blocking ``dist.send`` or
        ``dist.recv`` after another, in the step's order (a forward step receives the activation,
        then sends the previous backward's gradient; a backward step sends the previous forward's
        activation, then receives the gradient). The first waits for the pass before it (the NCCL
        stream waits on the compute stream), each for the one before (the compute stream waits on
        each), and the index returned is the last: the pass after waits for all of them."""
        order: list[tuple[list[Transfer], list[Transfer]]] = [([], [t]) for t in recvs] + [([t], []) for t in sends]
        if not recvs_first:
            order = order[len(recvs):] + order[:len(recvs)]
        idx, after = -1, tuple(deps)
        for out, got in order:
            idx = self.pb.add(P2POp(name=f"pp.{name}.{'send' if out else 'recv'}", sends=tuple(out), recvs=tuple(got),
                                    deps=after, stream=stream, tag=Tag("other", None, mb)))
            after = (idx,)
        return idx

    # -- schedules ----------------------------------------------------------------------------

    def one_f_one_b(self) -> None:
        pp, s, M, o = self.pp, self.stage, self.M, self.mb0
        warmup = min(pp - s - 1, M)
        remaining = M - warmup
        for i in range(warmup):
            self.p2p("recv_forward", recv_f=Pass("F", 0, o + i))
            self.forward(0, o + i)
            self.p2p("send_forward", send_f=Pass("F", 0, o + i))
        if remaining:
            self.p2p("recv_forward", recv_f=Pass("F", 0, o + warmup))
        for i in range(remaining):
            f = warmup + i
            self.steady.append(len(self.pb))
            self.forward(0, o + f)
            self.p2p("send_forward_recv_backward", send_f=Pass("F", 0, o + f), recv_b=Pass("B", 0, o + i))
            self.backward(0, o + i)
            if i == remaining - 1:
                self.p2p("send_backward", send_b=Pass("B", 0, o + i))
            else:
                self.p2p("send_backward_recv_forward", send_b=Pass("B", 0, o + i), recv_f=Pass("F", 0, o + f + 1))
        self.steady.append(len(self.pb))
        for i in range(remaining, M):
            self.p2p("recv_backward", recv_b=Pass("B", 0, o + i))
            self.backward(0, o + i)
            self.p2p("send_backward", send_b=Pass("B", 0, o + i))

    def interleaved(self) -> None:
        pp, vp, s = self.pp, self.vp, self.stage
        total = self.M * vp
        # Combined 1F1B runs one more warm-up forward so that each steady step pairs a forward with
        # the backward of another micro-batch (schedules.py: num_warmup_microbatches += 1).
        warmup = min((pp - s - 1) * 2 + (vp - 1) * pp + self.a2a_overlap, total)
        remaining = total - warmup

        def F(k: int) -> Pass:
            return Pass("F", _chunk(k, pp, vp, True), self.mb0 + _mb(k, pp, vp))

        def B(k: int) -> Pass:
            return Pass("B", _chunk(k, pp, vp, False), self.mb0 + _mb(k, pp, vp))

        # --overlap-p2p-communication (schedules.py, forward_backward_pipelining_with_interleaving,
        # ``config.overlap_p2p_comm``): the forward exchange (send_forward_recv_forward) is issued
        # right after each forward and the backward one (send_backward_recv_backward) right after
        # each backward, each on its own stream, and the next pass waits only for what it receives,
        # so in the steady state the forward's exchange runs under the backward and vice versa.
        # Without it, one batched, blocking exchange closes every steady step.
        split = self.scn.parallel.overlap_p2p_comm and not self.a2a_overlap
        fwd_stream, bwd_stream = ("pp.fwd", "pp.bwd") if split else ("", "")
        self.p2p("recv_forward", recv_f=F(0), stream=fwd_stream)
        for k in range(warmup):
            self.forward(F(k).chunk, F(k).mb)
            nxt_f = F(k + 1) if k + 1 < total else None
            if split:
                self.p2p("send_forward_recv_forward", send_f=F(k), recv_f=nxt_f, stream=fwd_stream)
                if k == warmup - 1:
                    self.p2p("recv_backward", recv_b=B(0), stream=bwd_stream)
            elif k == warmup - 1 and remaining == 0:
                self.p2p("send_forward_recv_backward", send_f=F(k), recv_b=B(0))
            elif k == warmup - 1:
                self.p2p("send_forward_recv_forward_backward", send_f=F(k), recv_f=nxt_f, recv_b=B(0))
            else:
                self.p2p("send_forward_recv_forward", send_f=F(k), recv_f=nxt_f)
        for k in range(remaining):
            kf = k + warmup
            self.steady.append(len(self.pb))
            nxt_f = F(kf + 1) if k < remaining - 1 else None
            nxt_b = B(k + 1) if k + 1 < total else None
            if self.a2a_overlap:
                self.combined(F(kf), B(k))
            elif split:
                self.forward(F(kf).chunk, F(kf).mb)
                self.p2p("send_forward_recv_forward", send_f=F(kf), recv_f=nxt_f, stream=fwd_stream)
                self.backward(B(k).chunk, B(k).mb)
                self.p2p("send_backward_recv_backward", send_b=B(k), recv_b=nxt_b, stream=bwd_stream)
                continue
            else:
                self.forward(F(kf).chunk, F(kf).mb)
                self.backward(B(k).chunk, B(k).mb)
            self.p2p("send_forward_backward_recv_forward_backward", send_f=F(kf), send_b=B(k),
                     recv_f=nxt_f, recv_b=nxt_b)
        self.steady.append(len(self.pb))
        for k in range(remaining, total):
            self.backward(B(k).chunk, B(k).mb)
            self.p2p("send_backward_recv_backward", send_b=B(k), recv_b=B(k + 1) if k + 1 < total else None,
                     stream=bwd_stream)

    def no_pipelining_combined(self) -> None:
        """pp = 1 with combined 1F1B (``combined_1f1b_schedule_for_no_pipelining``): F0, then
        F(i) paired with B(i−1), then the last backward alone."""
        self.forward(0, 0)
        for i in range(1, self.M):
            self.combined(Pass("F", 0, i), Pass("B", 0, i - 1))
        self.backward(0, self.M - 1)

    def build(self) -> ProgramBuilder:
        # pp_flushes passes of M / pp_flushes micro-batches, each filling and draining the pipeline
        flushes = self.scn.parallel.pp_flushes
        total, self.M = self.M, self.M // flushes
        for self.mb0 in range(0, total, self.M):
            if self.vp > 1:
                self.interleaved()
            elif self.pp == 1 and self.a2a_overlap:
                self.no_pipelining_combined()
            else:
                self.one_f_one_b()
        if flushes > 1 or (self.vp == 1 and self.pp == 1 and self.a2a_overlap):
            self.steady = []
        ends = tuple(self.out[("B", c, total - 1)] for c in range(self.vp))
        self.sync.finish(self.pb, ends)
        return self.pb

    @property
    def steady_period(self) -> int:
        """Steady steps after which a stage's ops repeat: one 1F1B pair, or pp·vp interleaved
        steps (the chunk of step k is (k mod pp·vp) // pp, and pp·vp steps hold pp
        micro-batches)."""
        return self.pp * self.vp if self.vp > 1 else 1

    @property
    def period_micro_batches(self) -> int:
        """Micro-batches whose passes the ``steady_period`` steps hold."""
        return self.pp if self.vp > 1 else 1

"""Where a sweep's plans replay: in this process, in a local pool of worker processes, or as Ray
tasks on a cluster. All three take plans one at a time (``submit``) and hand back finished ones
(``wait``), so the sweep can keep only a few plans in flight and prune the queue as results
arrive; all three stop at once on ``terminate`` and leave no process behind.

* :class:`InlineExecutor` (``--jobs 1``): runs each plan when it is submitted.
* :class:`PoolExecutor` (``--jobs N``): N worker processes, each fed one plan at a time through
  a pipe of its own. Not ``multiprocessing.Pool``: its workers share one result queue guarded by
  a lock between processes, and ``Pool.terminate`` may kill the workers before its task thread has
  written its last message to that queue; a worker killed while sending a result (one finishing its plan when the
  sweep is stopped) holds that lock for good, and ``terminate`` then waits on the task thread
  forever (CPython issue gh-96995; 1 of 100 SIGTERMed ``--jobs 2`` sweeps on a loaded 2-core
  machine never exited).
  Here nothing is shared between workers, so a worker dying anywhere blocks nothing:
  ``terminate`` sends SIGTERM, waits at most :data:`TERMINATE_GRACE_S`, then SIGKILLs and reaps
  what is left. Workers ignore SIGINT (a Ctrl-C reaches the whole process group: the sweep, not
  each worker, decides what to do), take SIGTERM's default action (the sweep's handler,
  inherited through fork, would turn it into an exception a plan could catch; the stop signals
  stay blocked from before the fork until the worker has reset them) and ask Linux to send them
  SIGTERM when the sweep process dies (``PR_SET_PDEATHSIG``), so even a SIGKILLed sweep leaves
  no orphan replaying plans. A worker that dies during a plan is replaced; the plan fails, with
  the signal in its reason (the OOM killer's SIGKILL), unless SIGTERM or SIGHUP stopped it.
* :class:`RayExecutor` (``--ray auto|ADDRESS``): each plan is a Ray task running the same
  function; ``terminate`` cancels the tasks in flight (force) and disconnects.
"""

from __future__ import annotations

import signal
import socket
import sys
import time
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, Callable, Iterator

Task = Callable[[Any, Any], Any]  # (simulate, scenario) -> Report | reason


class InlineExecutor:
    def __init__(self, task: Task, simulate: Any):
        self.task, self.simulate = task, simulate
        self.done: list[tuple[Any, Any]] = []
        self.slots = 1

    def submit(self, tag: Any, scn: Any) -> None:
        self.done.append((tag, self.task(self.simulate, scn)))

    def wait(self, timeout: float) -> list[tuple[Any, Any]]:
        out, self.done = self.done, []
        return out

    def in_flight(self) -> int:
        return 0

    def terminate(self) -> None:
        pass

    def close(self) -> None:
        pass


TERMINATE_GRACE_S = 1.0  # SIGTERM to SIGKILL, for a worker that does not die at once
STOP_SIGNALS = frozenset(s for s in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", None)) if s)


@contextmanager
def _stop_signals_blocked() -> Iterator[None]:
    """Hold SIGINT/SIGTERM/SIGHUP pending in this thread (the sweep's main thread) while a worker
    is forked: the child starts with them blocked and unblocks them once it has reset their
    handlers, so none reaches it while it still has the sweep's handlers."""
    if not hasattr(signal, "pthread_sigmask"):  # not POSIX
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _worker_init() -> None:
    """In each worker: leave SIGINT to the parent, die on SIGTERM/SIGHUP, die with the parent,
    then let the signals blocked around the fork in."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for sig in STOP_SIGNALS - {signal.SIGINT}:
        signal.signal(sig, signal.SIG_DFL)
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, int(signal.SIGTERM), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: terminate() still reaps them
        pass
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


def _worker_main(conn: Connection, task: Task, simulate: Any) -> None:
    """A worker's loop: a plan in (a 1-tuple), its result (or the reason it failed) out, until
    ``None`` or the end of the pipe."""
    _worker_init()
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        (scn,) = msg
        try:
            out = task(simulate, scn)
        except Exception as exc:
            out = f"simulation failed: {exc!r}"
        try:
            conn.send(out)
        except OSError:  # the sweep is gone
            return
        except Exception as exc:  # a result that does not pickle; nothing was written
            conn.send(f"simulation failed: unpicklable result: {exc!r}")


def _death(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exited with code {exitcode}"


@dataclass
class _Worker:
    proc: Any  # multiprocessing.process.BaseProcess
    conn: Connection
    tag: Any = None  # the plan it is running: the caller's tag and the scenario
    scn: Any = None
    busy: bool = False


class PoolExecutor:
    """``jobs`` worker processes, one plan each at a time (module docstring)."""

    def __init__(self, task: Task, simulate: Any, jobs: int):
        import multiprocessing

        self.ctx = multiprocessing.get_context()
        self.task, self.simulate = task, simulate
        self.slots = jobs
        self.workers: list[_Worker] = []
        self.backlog: deque[tuple[Any, Any]] = deque()  # plans submitted beyond the free workers
        try:
            for _ in range(jobs):
                self._start(len(self.workers))
        except BaseException:  # SIGTERM while starting: stop the ones started
            self.terminate()
            raise

    def _start(self, at: int) -> None:
        """Start a worker as ``self.workers[at]`` (appended when ``at`` is the length)."""
        mine, theirs = self.ctx.Pipe()
        proc = self.ctx.Process(target=_worker_main, args=(theirs, self.task, self.simulate), daemon=True,
                                name="clustersim-sweep-worker")
        worker = _Worker(proc, mine)
        with _stop_signals_blocked():  # and no signal's exception before it is listed: terminate() finds it
            proc.start()
            theirs.close()
            if at == len(self.workers):
                self.workers.append(worker)
            else:
                self.workers[at] = worker

    def submit(self, tag: Any, scn: Any) -> None:
        self.backlog.append((tag, scn))
        self._dispatch()

    def _dispatch(self) -> None:
        for w in self.workers:
            if not self.backlog:
                return
            if w.busy:
                continue
            w.tag, w.scn = self.backlog.popleft()
            w.busy = True
            try:
                w.conn.send((w.scn,))  # a 1-tuple: None is the stop message
            except OSError:  # the worker is dead: wait() sees it and fails the plan
                pass

    def wait(self, timeout: float) -> list[tuple[Any, Any]]:
        from multiprocessing.connection import wait

        busy = [i for i, w in enumerate(self.workers) if w.busy]
        if not busy:
            return []
        handles = [self.workers[i].conn for i in busy] + [self.workers[i].proc.sentinel for i in busy]
        ready = set(wait(handles, timeout))
        out = []
        for i in busy:
            w = self.workers[i]
            if w.conn not in ready and w.proc.sentinel not in ready:
                continue
            try:
                if not w.conn.poll():  # exited, nothing sent: the plan died with it
                    raise EOFError
                out.append((w.tag, w.conn.recv()))
            except (EOFError, OSError):
                w.proc.join(TERMINATE_GRACE_S)
                if w.proc.exitcode is None:  # closed its end yet alive: not to be trusted with a plan
                    w.proc.kill()
                    w.proc.join(TERMINATE_GRACE_S)
                w.conn.close()
                self._start(i)
                code = w.proc.exitcode
                if code is not None and -code in STOP_SIGNALS:
                    # stopped, not failed: a SIGTERM/SIGHUP sent to the whole process group (a batch
                    # job cancelled) can reach a worker before the sweep; the sweep then stops too,
                    # and the plan, not recorded, runs again on resume (or now, if only the worker
                    # was stopped)
                    self.backlog.appendleft((w.tag, w.scn))
                else:
                    out.append((w.tag, f"simulation failed: its worker process {_death(code)}"))
            w.tag, w.scn, w.busy = None, None, False
        self._dispatch()
        return out

    def in_flight(self) -> int:
        return len(self.backlog) + sum(w.busy for w in self.workers)

    def terminate(self) -> None:
        """Stop every worker now: SIGTERM, at most :data:`TERMINATE_GRACE_S` for them to die,
        then SIGKILL for the ones still alive (one that ignores SIGTERM, or stopped). The plans in
        flight are dropped, not reported: a resumed sweep runs them. A second signal while
        waiting kills them at once."""
        self.backlog.clear()
        try:
            self._stop(TERMINATE_GRACE_S)
        except BaseException:
            self._stop(0.0)
            raise

    def _stop(self, grace_s: float) -> None:
        procs = [w.proc for w in self.workers if w.proc.pid is not None]
        if grace_s > 0:
            for p in procs:
                p.terminate()
            deadline = time.monotonic() + grace_s
            for p in procs:
                p.join(max(0.0, deadline - time.monotonic()))
        for p in procs:
            if p.exitcode is None:
                p.kill()
        for p in procs:
            p.join(TERMINATE_GRACE_S)  # SIGKILL cannot be ignored: this returns once the kernel has reaped it
        for w in self.workers:
            w.conn.close()

    def close(self) -> None:
        """After the last result: every worker is idle; tell each to stop, then reap them (and
        kill any that does not stop)."""
        for w in self.workers:
            try:
                w.conn.send(None)
            except OSError:
                pass
        deadline = time.monotonic() + TERMINATE_GRACE_S
        for w in self.workers:
            w.proc.join(max(0.0, deadline - time.monotonic()))
        self._stop(TERMINATE_GRACE_S)


RAY_CONNECT_TIMEOUT_S = 10.0


def _check_reachable(address: str) -> None:
    """Refuse a ``--ray`` address whose host does not resolve or whose port does not answer,
    before ``ray.init``: Ray retries an unreachable head for minutes (over 13 on a 2-core
    machine for ``bogus:1``) before giving up with a ConnectionError."""
    from simulator.errors import InputError

    hostport = address.split("://", 1)[-1].rstrip("/")
    host, sep, port = hostport.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise InputError(f"{address!r}: expected 'auto', HOST:PORT or ray://HOST:PORT", source="command line",
                         field="--ray")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=RAY_CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        raise InputError(f"cannot reach a Ray cluster at {address!r}: {exc.strerror or exc}", source="command line",
                         field="--ray") from None


class RayExecutor:
    """Plans as Ray tasks. ``address``: ``auto`` (the cluster this machine belongs to, started
    with ``ray start``; a local instance when there is none) or ``ray://host:10001`` /
    ``host:6379``. A Ray instance already initialised in this process (a test's, a notebook's)
    is used as it is."""

    def __init__(self, task: Task, simulate: Any, address: str):
        loaded = sys.modules.get("ray")
        if address != "auto" and not (loaded is not None and loaded.is_initialized()):
            _check_reachable(address)  # before the import: a bad address is named with or without Ray
        try:
            import ray
        except ImportError:
            from simulator.errors import InputError

            raise InputError("Ray is not installed; pip install 'clustersim[ray]' (or pip install ray)",
                             source="command line", field="--ray") from None
        self.ray = ray
        self.owned = False
        if not ray.is_initialized():
            try:
                ray.init(address=address, logging_level="ERROR", log_to_driver=False)
            except ConnectionError as exc:
                if address != "auto":
                    from simulator.errors import InputError

                    raise InputError(f"cannot connect to a Ray cluster at {address!r}: {exc}",
                                     source="command line", field="--ray") from None
                ray.init(logging_level="ERROR", log_to_driver=False, include_dashboard=False)
            self.owned = True
        self.remote = ray.remote(task)
        self.slots = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self.refs: dict[Any, Any] = {}
        self.simulate = simulate

    def submit(self, tag: Any, scn: Any) -> None:
        self.refs[self.remote.remote(self.simulate, scn)] = tag

    def wait(self, timeout: float) -> list[tuple[Any, Any]]:
        if not self.refs:
            return []
        ready, rest = self.ray.wait(list(self.refs), num_returns=1, timeout=timeout)
        if ready and rest:
            ready += self.ray.wait(rest, num_returns=len(rest), timeout=0)[0]
        out = []
        for ref in ready:
            tag = self.refs.pop(ref)
            try:
                out.append((tag, self.ray.get(ref)))
            except Exception as exc:  # a task that died (node lost): the plan failed, the sweep goes on
                out.append((tag, f"simulation failed: {type(exc).__name__}: {exc}"))
        return out

    def in_flight(self) -> int:
        return len(self.refs)

    def terminate(self) -> None:
        for ref in list(self.refs):
            try:
                self.ray.cancel(ref, force=True)
            except Exception:
                pass
        self.refs.clear()
        self.close()

    def close(self) -> None:
        if self.owned and self.ray.is_initialized():
            self.ray.shutdown()
            self.owned = False

"""Where a sweep's plans replay: in this process, in a local pool of worker processes, or as Ray
tasks on a cluster. All three take plans one at a time (``submit``) and hand back finished ones
(``wait``), so the sweep can keep only a few plans in flight and prune the queue as results
arrive; all three stop at once on ``terminate`` and leave no process behind.

* :class:`InlineExecutor` (``--jobs 1``): runs each plan when it is submitted.
* :class:`PoolExecutor` (``--jobs N``): ``multiprocessing.Pool`` workers that ignore SIGINT
  (a Ctrl-C reaches the whole process group: the sweep, not each worker, decides what to do) and
  ask Linux to send them SIGTERM when the sweep process dies (``PR_SET_PDEATHSIG``), so even a
  SIGKILLed sweep leaves no orphan replaying plans. ``terminate`` kills and reaps them.
* :class:`RayExecutor` (``--ray auto|ADDRESS``): each plan is a Ray task running the same
  function; ``terminate`` cancels the tasks in flight (force) and disconnects.
"""

from __future__ import annotations

import queue
import signal
import socket
import sys
from typing import Any, Callable

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


def _worker_init() -> None:
    """In each pool worker: leave SIGINT to the parent, die on SIGTERM (the parent's handler,
    inherited through fork, would turn it into an exception the pool's task loop catches), and
    die with the parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for sig in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if sig is not None:
            signal.signal(sig, signal.SIG_DFL)
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, int(signal.SIGTERM), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: terminate() still reaps them
        pass


class PoolExecutor:
    def __init__(self, task: Task, simulate: Any, jobs: int):
        import multiprocessing

        self.task, self.simulate = task, simulate
        self.slots = jobs
        self.pool = multiprocessing.get_context().Pool(jobs, initializer=_worker_init)
        # SimpleQueue, not Queue: SIGTERM raises Interrupted in the main thread while it waits here,
        # and Queue.get's Python-level lock can be left held by an exception raised between its
        # acquire and its ``with`` block; the pool's result thread then blocks for good on put, and
        # terminate() joins it. SimpleQueue's get and put are single C calls.
        self.results: queue.SimpleQueue = queue.SimpleQueue()
        self.pending = 0

    def submit(self, tag: Any, scn: Any) -> None:
        def done(result: Any) -> None:
            self.results.put((tag, result))

        def failed(exc: BaseException) -> None:
            self.results.put((tag, f"simulation failed: {exc!r}"))

        self.pending += 1
        self.pool.apply_async(self.task, (self.simulate, scn), callback=done, error_callback=failed)

    def wait(self, timeout: float) -> list[tuple[Any, Any]]:
        out = []
        try:
            out.append(self.results.get(timeout=timeout))
            while True:
                out.append(self.results.get_nowait())
        except queue.Empty:
            pass
        self.pending -= len(out)
        return out

    def in_flight(self) -> int:
        return self.pending

    def terminate(self) -> None:
        self.pool.terminate()
        self.pool.join()

    def close(self) -> None:
        self.pool.close()
        self.pool.join()


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

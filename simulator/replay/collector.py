"""CPython's cyclic garbage collector kept off the long-lived objects of a simulation.

A replay allocates millions of short-lived objects (events, heap entries, flow records) beside
hundreds of thousands that live through it (every op of the schedule, the reduced schedules of
folding, plans, routes). With the default thresholds the collector's passes rescan the
long-lived ones again and again: 0.65 of 5.6 CPU s of the GPT-3 175B plan tp4sp pp8 dp32 z1 went
to collections (gc.callbacks), 0.10 s with :func:`collector_spared`. A schedule built with the
collector off (``build_schedule`` turns it off while it builds) is scanned whole by the first
collection after the collector is back on, since every object it made is still in the youngest
generation: 0.40 s for tp4sp pp64 dp4 z0 (1.7 M ops) and 0.76 s for tp8sp pp32 dp4 z1, where
:func:`built_frozen` freezes them as built. Results never depend on any of this: the collector
frees only unreachable objects.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Any, Callable, Iterator, TypeVar

# The youngest generation of the cyclic garbage collector is scanned every this many allocations
# while the collector is spared (CPython's default: 700).
REPLAY_GC_GEN0 = 50_000

# Whether the outermost open spare froze the objects alive at its start (None: none is open).
_open: list[bool] = []

T = TypeVar("T")


@contextmanager
def collector_spared() -> Iterator[bool]:
    """Keep the collector off the objects alive at the start for the duration: they are frozen
    out of it (``gc.freeze``; unfrozen after, unless the caller had frozen objects itself) and
    the youngest generation is collected every REPLAY_GC_GEN0 allocations. Nothing is kept
    alive longer than the spare: cycles made during it are still collected, and frozen objects
    return to the oldest generation at its end. Yields whether objects made during it may be
    frozen too (:func:`built_frozen`): whether the spare froze, and so will unfreeze. A spare
    opened inside another changes nothing and yields what the outer one did."""
    if _open:
        yield _open[0]
        return
    if not gc.isenabled():
        yield False
        return
    thresholds = gc.get_threshold()
    freeze = gc.get_freeze_count() == 0
    if freeze:
        gc.freeze()
    gc.set_threshold(max(thresholds[0], REPLAY_GC_GEN0), *thresholds[1:])
    _open.append(freeze)
    try:
        yield freeze
    finally:
        _open.pop()
        gc.set_threshold(*thresholds)
        if freeze:
            gc.unfreeze()


def built_frozen(build: Callable[..., T]) -> Callable[..., T]:
    """``build`` (a schedule's builder) run with the collector off and what it made frozen at
    once, inside a spare that froze (:func:`collector_spared` yielded True): a schedule is
    hundreds of thousands of objects without cycles, and the first collection after the build
    (which turns the collector back on itself) would scan every one of them."""

    def run(*args: Any, **kwargs: Any) -> T:
        gc.disable()
        try:
            return build(*args, **kwargs)
        finally:
            gc.freeze()
            gc.enable()

    return run

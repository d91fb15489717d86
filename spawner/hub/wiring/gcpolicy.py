"""The hub's garbage collection: one full collection every few minutes, not a long pause every few seconds.

A hub for a whole cluster holds objects that live as long as it does: every
user, their spawners and their database rows.  CPython's collection of its
oldest generation walks all of them, and it runs whenever enough young
objects survived: at 5,000 users and 500 sessions under the load of their
open home pages, a 100-285 ms pause every ~15 s, growing as the heap grew
(tests/perf/bench_scale.py).  Every request that arrived meanwhile waited:
the largest part of the p99 of each page and API call.

So, every `INTERVAL` seconds (the first `FIRST` seconds after JupyterHub has
loaded its users and runs): what was frozen is unfrozen, collected with
the rest (cyclic garbage among long-lived objects waits at most `INTERVAL` to
be freed, never forever) and the survivors frozen again (`gc.freeze`: left out
of the automatic collections, which then walk only what is newer).  The cost:
that full collection still pauses the hub (about as long as one of the old
pauses) once every `INTERVAL`, and garbage frozen with the rest (a request in
flight at that moment) is freed up to `INTERVAL` later.

Every other collection that holds the hub for `LONG` seconds or more is said in
the hub's log (`CollectionTimer`): JupyterHub says only that its event loop
"was unresponsive for at least N s" (once in a full soak, 1.05 s, with no
cause in the log), and the next such stall then names this cause or rules it out.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time

# Not a minute: until the first freeze the automatic collections walk every object of the hub's start (~315,000):
# the dev cluster's soak logged 0.57-2.28 s pauses in the minute after each hub restart, and JupyterHub's "Event
# loop was unresponsive for at least 1.28s" with one
FIRST = 1.0
INTERVAL = 600.0
LONG = 0.2
_OWN = [False]  # the policy's own collection runs now

log = logging.getLogger("JupyterHub")


def collect_and_freeze() -> tuple[int, int, float]:
    """(objects freed, objects frozen, seconds it took)."""
    started = time.perf_counter()
    _OWN[0] = True  # logged by the caller, not as a stall
    try:
        gc.unfreeze()
        freed = gc.collect()
        gc.freeze()
    finally:
        _OWN[0] = False
    return freed, gc.get_freeze_count(), time.perf_counter() - started


class CollectionTimer:
    """A `gc.callbacks` entry: times each automatic collection and logs the long ones."""

    def __init__(self, long: float = LONG, clock=time.perf_counter):
        self.long, self.clock = long, clock
        self.started: float | None = None

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self.started = None if _OWN[0] else self.clock()
        elif phase == "stop" and self.started is not None:
            took, self.started = self.clock() - self.started, None
            if took >= self.long:
                log.warning(
                    "A garbage collection (generation %d, %d objects freed) held the hub for %.2f s",
                    info.get("generation", -1),
                    info.get("collected", 0),
                    took,
                )


def watch_collections() -> bool:
    """Time the process's collections from now on; once per process (False when already)."""
    if any(isinstance(c, CollectionTimer) for c in gc.callbacks):
        return False
    gc.callbacks.append(CollectionTimer())
    return True


async def keep_collecting(first: float = FIRST, interval: float = INTERVAL) -> None:
    """Collect and freeze after `first` seconds, then every `interval` seconds (the hub's loop); the others timed."""
    watch_collections()
    await asyncio.sleep(first)
    while True:
        freed, frozen, took = collect_and_freeze()
        log.info(
            "Garbage collection: %d objects freed in %.0f ms, %d long-lived ones frozen", freed, took * 1000, frozen
        )
        await asyncio.sleep(interval)

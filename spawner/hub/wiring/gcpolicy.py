"""The hub's garbage collection: one full collection every few minutes, not a long pause every few seconds.

A hub for a whole cluster holds objects that live as long as it does: every
user, their spawners and their database rows.  CPython's collection of its
oldest generation walks all of them, and it runs whenever enough young
objects survived: at 5,000 users and 500 sessions under the load of their
open home pages, a 100-285 ms pause every ~15 s, growing as the heap grew
(tests/perf/bench_scale.py).  Every request that arrived meanwhile waited:
the largest part of the p99 of each page and API call.

So, every `INTERVAL` seconds (the first `FIRST` seconds after the start, once
JupyterHub has loaded its users): what was frozen is unfrozen, collected with
the rest (cyclic garbage among long-lived objects waits at most `INTERVAL` to
be freed, never forever) and the survivors frozen again (`gc.freeze`: left out
of the automatic collections, which then walk only what is newer).  The cost:
that full collection still pauses the hub (about as long as one of the old
pauses) once every `INTERVAL`, and garbage frozen with the rest (a request in
flight at that moment) is freed up to `INTERVAL` later.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time

FIRST = 60.0
INTERVAL = 600.0

log = logging.getLogger("JupyterHub")


def collect_and_freeze() -> tuple[int, int, float]:
    """(objects freed, objects frozen, seconds it took)."""
    started = time.perf_counter()
    gc.unfreeze()
    freed = gc.collect()
    gc.freeze()
    return freed, gc.get_freeze_count(), time.perf_counter() - started


async def keep_collecting(first: float = FIRST, interval: float = INTERVAL) -> None:
    """Collect and freeze after `first` seconds, then every `interval` seconds (the hub's loop)."""
    await asyncio.sleep(first)
    while True:
        freed, frozen, took = collect_and_freeze()
        log.info(
            "Garbage collection: %d objects freed in %.0f ms, %d long-lived ones frozen", freed, took * 1000, frozen
        )
        await asyncio.sleep(interval)

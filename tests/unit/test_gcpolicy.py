"""The hub's garbage collection policy (spawner/hub/wiring/gcpolicy.py): long-lived objects are left out of the
automatic collections, and cyclic garbage among them is still freed at the next full collection."""

from __future__ import annotations

import asyncio
import gc
import logging
import weakref

from spawner.hub.wiring import gcpolicy


class Node:
    def __init__(self):
        self.other = self


def test_survivors_are_frozen_and_a_cycle_that_dies_later_is_freed_at_the_next_round():
    try:
        cycle = Node()
        alive = weakref.ref(cycle)
        _, frozen, _ = gcpolicy.collect_and_freeze()
        assert frozen == gc.get_freeze_count() > 0
        del cycle
        gc.collect()  # what the automatic collections do: frozen objects are not theirs
        assert alive() is not None
        freed, _, _ = gcpolicy.collect_and_freeze()
        assert alive() is None and freed >= 1
    finally:
        gc.unfreeze()


def test_the_rounds_run_on_the_loop_after_the_first_delay_and_then_each_interval(monkeypatch):
    async def main():
        loop, rounds, two = asyncio.get_running_loop(), [], asyncio.Event()

        def round_():
            rounds.append(loop.time())
            if len(rounds) == 2:
                two.set()
            return 0, 0, 0.0

        monkeypatch.setattr(gcpolicy, "collect_and_freeze", round_)
        began = loop.time()
        collecting = asyncio.create_task(gcpolicy.keep_collecting(first=0.05, interval=0.2))
        await asyncio.wait_for(two.wait(), 10)
        collecting.cancel()
        return rounds[0] - began, rounds[1] - rounds[0]

    first, between = asyncio.run(main())
    assert first >= 0.045 and between >= 0.195


def test_a_long_automatic_collection_is_said_in_the_log_and_the_policys_own_is_not(caplog):
    ticks = iter([0.0, 0.05, 1.0, 1.3])
    timer = gcpolicy.CollectionTimer(long=0.2, clock=lambda: next(ticks))
    with caplog.at_level(logging.WARNING, "JupyterHub"):
        timer("start", {"generation": 0})
        timer("stop", {"generation": 0, "collected": 3})  # 0.05 s: not worth a line
        timer("start", {"generation": 2})
        timer("stop", {"generation": 2, "collected": 41})  # 0.3 s
        gcpolicy._OWN[0] = True
        try:
            timer("start", {"generation": 2})  # the policy's own: no clock read, no line
            timer("stop", {"generation": 2, "collected": 0})
        finally:
            gcpolicy._OWN[0] = False
    lines = [r.getMessage() for r in caplog.records]
    assert lines == ["A garbage collection (generation 2, 41 objects freed) held the hub for 0.30 s"]
    assert gcpolicy.watch_collections() in (True, False) and not gcpolicy.watch_collections()  # once per process
    gc.callbacks[:] = [c for c in gc.callbacks if not isinstance(c, gcpolicy.CollectionTimer)]

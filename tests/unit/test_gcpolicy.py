"""The hub's garbage collection policy (spawner/hub/wiring/gcpolicy.py): long-lived objects are left out of the
automatic collections, and cyclic garbage among them is still freed at the next full collection."""

from __future__ import annotations

import asyncio
import gc
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

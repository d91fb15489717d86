"""The hub's background loops: started once the hub runs, each named in the log, cancelled at its stop
(spawner/hub/wiring/lifecycle.py), and the portal's list of them (spawner/hub/wiring/hubconfig.py)."""

from __future__ import annotations

import asyncio
import logging

from spawner.hub.slurm.client import CommandStarts
from spawner.hub.wiring import shutdown
from spawner.hub.wiring.lifecycle import HubLifecycle, Loop


class Hub:
    """A JupyterHub as far as the lifecycle sees it: not running until `http_server` is set."""

    def __init__(self):
        self.http_server = None
        self.calls: list[str] = []

    async def cleanup(self) -> None:
        self.calls.append("JupyterHub's cleanup")


def a_loop(name: str, beats: list[str], ended: list[str]):
    async def run() -> None:
        try:
            while True:
                beats.append(name)
                await asyncio.sleep(0.01)
        finally:
            ended.append(name)

    return Loop(name, run)


async def wait_for(condition, seconds: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


async def test_the_loops_start_once_the_hub_runs_and_end_at_its_stop(caplog):
    caplog.set_level(logging.INFO, logger="JupyterHub.lifecycle")
    hub, beats, ended, asked = Hub(), [], [], []

    def loops():
        asked.append(True)
        return [a_loop("reconciler", beats, ended), a_loop("shares", beats, ended)]

    lifecycle = HubLifecycle(loops, lambda: hub.http_server is not None)
    assert lifecycle.begin() is True
    assert lifecycle.begin() is False  # a second begin (the config loaded twice) starts nothing more
    await asyncio.sleep(0.3)
    assert beats == [] and asked == []  # JupyterHub is still starting: no loop reads its users yet
    hub.http_server = object()
    await wait_for(lambda: {"reconciler", "shares"} <= set(beats))
    assert asked == [True] and set(lifecycle.tasks) == {"reconciler", "shares"}
    assert "Started the reconciler loop" in caplog.text and "Started the shares loop" in caplog.text

    await lifecycle.stop()
    assert sorted(ended) == ["reconciler", "shares"]  # cancelled, and their cleanup ran
    assert all(task.done() for task in lifecycle.tasks.values())
    count = len(beats)
    await asyncio.sleep(0.1)
    assert len(beats) == count  # nothing runs after the stop
    assert "Stopped the portal's 2 background loops" in caplog.text


async def test_a_stop_before_the_hub_ran_cancels_the_waiting_start():
    hub, beats, ended = Hub(), [], []
    lifecycle = HubLifecycle(lambda: [a_loop("tracker", beats, ended)], lambda: hub.http_server is not None)
    lifecycle.begin()
    await lifecycle.stop()
    hub.http_server = object()
    await asyncio.sleep(0.3)
    assert beats == [] and lifecycle.tasks == {}


async def test_a_loop_that_fails_is_logged_started_again_and_the_others_go_on(caplog):
    runs: list[float] = []

    async def broken() -> None:
        runs.append(asyncio.get_running_loop().time())
        raise RuntimeError("a bad pass")

    hub, beats, ended = Hub(), [], []
    hub.http_server = object()
    lifecycle = HubLifecycle(
        lambda: [Loop("metrics", broken), a_loop("tokens", beats, ended)], lambda: True, restart=(0.05, 0.2)
    )
    lifecycle.begin()
    await wait_for(lambda: len(runs) >= 4 and len(beats) >= 3)
    assert not lifecycle.tasks["metrics"].done() and not lifecycle.tasks["tokens"].done()  # the failing one retries
    assert "The metrics loop failed; it starts again in 0.05 s" in caplog.text
    assert runs[3] - runs[2] >= 0.19  # the delay doubled up to its bound: a loop failing at once is no busy loop
    await lifecycle.stop()
    assert ended == ["tokens"]


async def test_loops_whose_preparation_failed_are_prepared_again(caplog):
    """The attack's way in: one failed database read at the hub's start must not leave shares unexpired and
    tokens unswept for the hub's whole life."""
    hub, beats, ended, tries = Hub(), [], [], []
    hub.http_server = object()

    def loops():
        tries.append(True)
        if len(tries) == 1:
            raise RuntimeError("the database is not there yet")
        return [a_loop("shares", beats, ended)]

    lifecycle = HubLifecycle(loops, lambda: True, restart=(0.05, 0.2))
    lifecycle.begin()
    await wait_for(lambda: beats)
    assert len(tries) == 2 and "Preparing the portal's background loops failed" in caplog.text
    await lifecycle.stop()


async def test_the_hubs_stop_ends_the_loops_before_jupyterhubs_cleanup():
    hub, beats, ended = Hub(), [], []
    hub.http_server = None
    lifecycle = HubLifecycle(lambda: [a_loop("accounting", beats, ended)], lambda: True)
    lifecycle.begin()
    await wait_for(lambda: beats)

    async def stop_loops() -> None:
        await lifecycle.stop()
        hub.calls.append(f"loops ended: {ended}")

    assert shutdown.install(hub, CommandStarts(), then=stop_loops) is True  # not the process's own gate
    await hub.cleanup()
    assert hub.calls == ["loops ended: ['accounting']", "JupyterHub's cleanup"]

"""The hub's stop: what it relies on in JupyterHub, and its gate for Slurm commands (spawner/hub/wiring/shutdown.py)."""

from __future__ import annotations

import asyncio
import inspect

from jupyterhub.app import JupyterHub

from spawner.hub.slurm.client import CommandStarts
from spawner.hub.wiring import shutdown


def test_jupyterhub_awaits_cleanup_before_it_cancels_its_tasks_at_sigterm():
    """spawner/hub/wiring/shutdown.py wraps JupyterHub.cleanup: this fails when JupyterHub's stop no longer goes so."""
    signals = inspect.getsource(JupyterHub.init_signal)
    assert "signal.SIGTERM" in signals and "self.shutdown_cancel_tasks" in signals
    stop = inspect.getsource(JupyterHub.shutdown_cancel_tasks)
    assert stop.index("await self.cleanup()") < stop.index(".cancel()")
    assert JupyterHub.http_server is None  # the attribute it stops (JupyterHub's own stop() does the same)
    assert "self.http_server.stop()" in inspect.getsource(JupyterHub.stop)


class Listening:
    def __init__(self, calls: list[str]):
        self.calls = calls

    def stop(self) -> None:
        self.calls.append("stopped listening")


class App:
    def __init__(self):
        self.calls: list[str] = []
        self.http_server = Listening(self.calls)

    async def cleanup(self) -> None:
        self.calls.append("JupyterHub's cleanup")


async def test_the_hub_stops_listening_and_starting_commands_before_jupyterhubs_cleanup():
    app, starts = App(), CommandStarts()
    assert shutdown.install(app, starts) is True
    assert shutdown.install(app, starts) is False  # once
    await app.cleanup()
    assert app.calls == ["stopped listening", "JupyterHub's cleanup"]
    assert starts.shut


async def test_once_shut_no_command_starts_and_those_starting_are_waited_for():
    starts = CommandStarts()
    await starts.enter()  # a command starting
    shutting = asyncio.ensure_future(starts.shut_down(5))
    later = asyncio.ensure_future(starts.enter())  # a command asked for after the stop began
    done, _ = await asyncio.wait({shutting, later}, timeout=0.05)
    assert not done and starts.starting == 1
    starts.leave()  # the first one has started
    assert await shutting is True
    done, _ = await asyncio.wait({later}, timeout=0.05)
    assert not done and starts.starting == 0  # never starts: it waits for the hub's stop to cancel it
    later.cancel()
    await asyncio.gather(later, return_exceptions=True)
    assert later.cancelled()


async def test_a_command_that_does_not_finish_starting_does_not_hold_the_stop():
    starts = CommandStarts()
    await starts.enter()
    assert await starts.shut_down(0.05) is False
    assert await CommandStarts().shut_down(0.05) is True  # none starting: at once

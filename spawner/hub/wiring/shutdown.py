"""The hub's stop (SIGTERM, SIGINT): it takes no more requests and starts no Slurm command, then JupyterHub's.

JupyterHub stops by awaiting its `cleanup()` (managed services, the proxy it
started), then cancelling every task of its event loop and waiting for all of
them before it stops the loop; its HTTP server accepts requests until then.
A Slurm command whose subprocess was starting at that moment never finished
(spawner/hub/slurm/client.py, CommandStarts), so the hub went on serving, starting
sessions and runs, until supervisord killed it 30 s later (seen in the soak).

JupyterHub has no hook for its stop: `install` wraps the application's
`cleanup`, a public method that its signal handler awaits first (its `stop()`
too), through spawner/hub/base/upstream_jupyterhub.py.  Before JupyterHub's cleanup: the hub's HTTP server stops listening (as
JupyterHub's own `stop()` does), no Slurm command starts any more and those
starting are awaited (milliseconds).  The rest is JupyterHub's, unchanged:
what is in flight is cancelled.  tests/unit/test_shutdown.py fails when
JupyterHub stops awaiting `cleanup()` before it cancels its tasks.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from ..base.upstream_jupyterhub import run_before_cleanup
from ..slurm.client import STARTS, CommandStarts

log = logging.getLogger("JupyterHub").getChild("shutdown")  # in the hub's log, its format

START_WAIT = 5.0  # seconds the stop waits for Slurm commands still starting (each takes milliseconds)


async def stop_taking_work(app, starts: CommandStarts) -> None:
    """No new request reaches the hub's handlers and no Slurm command starts; those starting have started."""
    log.info("The hub is stopping: it takes no new requests and starts no Slurm command")
    if app.http_server is not None:
        app.http_server.stop()
    if not await starts.shut_down(START_WAIT):
        log.warning("%d Slurm command(s) still starting after %g s; stopping anyway", starts.starting, START_WAIT)


def install(app, starts: CommandStarts = STARTS, then: Callable[[], Awaitable[None]] | None = None) -> bool:
    """Run stop_taking_work first when `app` (the running JupyterHub) stops; once.  Whether it was installed now.

    `starts`: the gate of the Slurm commands (the hub process's own, spawner/hub/slurm/client.py); `then`: what
    stops next, before JupyterHub's cleanup (the portal's background loops, spawner/hub/wiring/lifecycle.py)."""

    async def first() -> None:
        await stop_taking_work(app, starts)
        if then is not None:
            await then()

    return run_before_cleanup(app, first)

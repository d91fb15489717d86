"""The hub's background loops, started and stopped in one place with the hub (hub side).

Each concept keeps its own loop, a coroutine that runs until it is cancelled:

    reconciler       spawner/hub/session/reconciler.py   session jobs no session owns are cancelled
    session tokens   spawner/hub/session/token.py        tokens of no running session deleted
    new tokens       spawner/hub/sharing/handover.py     a share's end: the session's new token delivered again
    shares           spawner/hub/sharing/shares.py       shares end at their time, groups follow the directory
    continuations    spawner/hub/continuation/automatic.py sessions chosen to continue, before their end
    runs tracker     spawner/hub/runs/tracker.py         runs' ends and sessions' time left, with their mails
    cluster metrics  spawner/hub/usage/clustermetrics.py GPUs, queue and waits for Prometheus
    accounting       spawner/hub/usage/accounting.py     Slurm's numbers into the sessions' summaries
    gc policy        spawner/hub/wiring/gcpolicy.py      one full collection every few minutes
    proxy routes     spawner/hub/apps/proxy.py           a restarted proxy's routes added back

`HubLifecycle.begin` (from the hub's config, spawner/hub/wiring/hubconfig.py)
waits until JupyterHub runs (its HTTP server exists: users and database are
loaded), then starts each loop once, named in the log.  At the hub's stop
(spawner/hub/wiring/shutdown.py, before JupyterHub's own cleanup) `stop`
cancels them and waits for them to end, so no loop acts on a hub that is
going away.  Each loop already outlives a bad pass on its own; one that fails
anyway (or their
preparation) is logged and started again after a delay that doubles up to
five minutes: the shares' and tokens' loops end a revoked guest's access.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ..base.notices import public_home
from ..continuation.automatic import keep_continuing
from ..runs.tracker import Tracker
from ..session.lookup import hub_spawners, load_users_with_runs
from ..session.reconciler import Reconciler, hub_handed_over_jobs, hub_owned_jobs
from ..session.token import keep_swept
from ..sharing.handover import keep_delivering
from ..sharing.shares import keep_shares
from ..usage.accounting import keep_filling, usage_listing
from ..usage.clustermetrics import ClusterReader
from .gcpolicy import keep_collecting

log = logging.getLogger("JupyterHub").getChild("lifecycle")  # in the hub's log, its format

RUNNING_POLL = 0.1  # seconds between looks at whether JupyterHub runs yet
STOP_WAIT = 5.0  # seconds the stop waits for the cancelled loops to end
RESTART = (5.0, 300.0)  # a failed loop (or their preparation) starts again after 5 s, doubling up to 5 minutes
HEALTHY = 600.0  # seconds a loop must have run for its next failure to wait the first delay again


@dataclass(frozen=True)
class Loop:
    """One background loop: its name in the log and the coroutine that runs it until cancelled."""

    name: str
    run: Callable[[], Awaitable[None]]


class HubLifecycle:
    """The hub's background loops: `begin` once from the config, `stop` once at the hub's stop."""

    def __init__(
        self,
        loops: Callable[[], list[Loop]],
        running: Callable[[], bool],
        restart: tuple[float, float] = RESTART,
    ):
        self._loops = loops  # () -> the loops, asked once the hub runs (they read the hub's users then)
        self._running = running  # () -> whether JupyterHub runs yet
        self._restart = restart
        self._starting: asyncio.Task | None = None
        self.tasks: dict[str, asyncio.Task] = {}

    def begin(self) -> bool:
        """Start the loops once the hub runs (on the running event loop); False if already begun."""
        if self._starting is not None:
            return False
        self._starting = asyncio.get_running_loop().create_task(self._start_when_running(), name="dsportal:start")
        return True

    async def _start_when_running(self) -> None:
        while not self._running():
            await asyncio.sleep(RUNNING_POLL)
        delay = self._restart[0]
        while True:  # the loops expire shares and end tokens: they must run, whatever failed once
            try:
                loops = self._loops()
                break
            except Exception:
                log.exception("Preparing the portal's background loops failed; trying again in %g s", delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, self._restart[1])
        for loop in loops:
            self.tasks[loop.name] = asyncio.get_running_loop().create_task(
                self._watched(loop), name=f"dsportal:{loop.name}"
            )
            log.info("Started the %s loop", loop.name)
        log.info("The portal's %d background loops run", len(self.tasks))

    async def _watched(self, loop: Loop) -> None:
        """Run `loop`; one that fails (or returns) is logged and started again after a delay, the others go on."""
        delay = self._restart[0]
        while True:
            began = asyncio.get_running_loop().time()
            try:
                await loop.run()
                log.error("The %s loop returned; it starts again in %g s", loop.name, delay)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("The %s loop failed; it starts again in %g s (the others go on)", loop.name, delay)
            await asyncio.sleep(delay)
            healthy = asyncio.get_running_loop().time() - began >= HEALTHY
            delay = self._restart[0] if healthy else min(delay * 2, self._restart[1])

    async def stop(self, wait: float = STOP_WAIT) -> None:
        """Cancel every loop (and a start still waiting) and wait up to `wait` seconds for them to end."""
        tasks = [t for t in [self._starting, *self.tasks.values()] if t is not None and not t.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            done, pending = await asyncio.wait(tasks, timeout=wait)
            for task in pending:
                log.warning("The %s loop did not end within %g s", task.get_name(), wait)
        log.info("Stopped the portal's %d background loops", len(self.tasks))


def running_hub():
    """The JupyterHub application whose config is loading now, inside its event loop; None elsewhere
    (`dsportal check-config`, a test that applies the config alone)."""
    from jupyterhub.app import JupyterHub

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return None
    return JupyterHub.instance() if JupyterHub.initialized() else None


def hub_runs(app) -> bool:
    """JupyterHub has started serving: its users, spawners and database are loaded (JupyterHub.start)."""
    return app.http_server is not None


def portal_loops(app, services) -> list[Loop]:
    """The portal's loops for the running hub `app` and its shared `services` (spawner/hub/slurm/services.py)."""

    def spawners() -> list:
        return hub_spawners(app)

    settings, usage = services.settings, services.settings.usage
    reconciler = Reconciler(
        services.client,
        lambda: hub_owned_jobs(app),
        settings.slurm.reconcile_seconds,
        handed_over=lambda: hub_handed_over_jobs(app),
    )
    tracker = Tracker(services, spawners, lambda: public_home(settings))

    async def track_runs() -> None:
        load_users_with_runs(app)  # the tracker says when their runs end (and mails) without a login
        await tracker.run_forever()

    reader = ClusterReader(services, spawners)
    return [
        Loop("reconciler", reconciler.run_forever),
        Loop("session tokens", lambda: keep_swept(spawners, lambda: app.db)),
        Loop("new tokens", lambda: keep_delivering(spawners)),
        Loop("shares", lambda: keep_shares(spawners)),
        Loop("continuations", lambda: keep_continuing(spawners)),
        Loop("runs tracker", track_runs),
        Loop("cluster metrics", lambda: reader.run(usage.cluster_seconds)),
        Loop(
            "accounting",
            lambda: keep_filling(usage_listing(services), spawners, usage.accounting_seconds, usage.days),
        ),
        Loop("gc policy", keep_collecting),
        Loop("proxy routes", lambda: app.proxy.keep_routed(app)),
    ]

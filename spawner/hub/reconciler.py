"""Every portal job in Slurm has an owner: jobs no session tracks are cancelled.

Runs in the hub, at its start and then every `slurm.reconcile_seconds`, on the
shared squeue listing (spawner/hub/watcher.py), so it adds no Slurm query of
its own beyond that cadence.  A job of the portal's name (`slurm.job_name`)
that is pending or running, whose id no spawner's saved state holds, is
cancelled as its user; a cancel that fails is retried with back-off.  This
covers an sbatch that timed out but ran later, a stop that Slurm did not
answer (the spawner then marks its job "stopping", which the reconciler takes
over), and a start abandoned by a hub crash.

Ownership is read from the hub's database, where the spawner saves the job id
the moment sbatch answers (spawner/hub/spawner.py), so it is right from the
hub's first second, before any spawner object exists.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable

from portal.settings import is_username

from .record import SessionRecord
from .slurm import JobInfo, SlurmClient, SlurmError
from .watcher import Listing

log = logging.getLogger("JupyterHub").getChild("reconciler")  # in the hub's log, its format

MAX_BACKOFF = 3600.0


def orphans(listing: Listing, owned: set[str], busy_users: Iterable[str]) -> list[JobInfo]:
    """Portal jobs still holding (or waiting for) resources that no session owns, oldest id first.

    Users with an sbatch in flight are left for the next pass: their new job
    exists in Slurm a moment before its id reaches the spawner's state.
    """
    busy = set(busy_users)
    found = [
        job
        for job in listing.values()
        if (job.pending or job.running) and job.job_id not in owned and job.user not in busy and is_username(job.user)
    ]
    return sorted(found, key=lambda job: int(job.job_id))


def owned_in_states(states: Iterable[dict | None]) -> set[str]:
    """Job ids held by saved spawner states (of any version); a job marked "stopping" is handed to the reconciler."""
    records = (SessionRecord.from_state(state) for state in states if state)
    return {record.job_id for record in records if record.job_id and not record.stopping}


def hub_owned_jobs() -> set[str] | None:
    """Job ids in the running hub's database; None while the hub has no database yet."""
    from jupyterhub import orm
    from jupyterhub.app import JupyterHub

    if not JupyterHub.initialized():
        return None
    db = getattr(JupyterHub.instance(), "db", None)
    if db is None:
        return None
    return owned_in_states(state for (state,) in db.query(orm.Spawner.state))


class Reconciler:
    def __init__(
        self, client: SlurmClient, owned: Callable[[], set[str] | None], interval: float, max_age: float = 5.0
    ):
        self.client = client
        self.owned = owned
        self.interval = interval
        self.max_age = max_age
        self._retry: dict[str, tuple[int, float]] = {}  # job id -> (failed cancels, next attempt)
        self.cancelled: list[str] = []  # job ids cancelled, for logs and tests
        self.passes = 0

    async def run_once(self) -> list[str]:
        """One pass; returns the job ids it cancelled."""
        try:
            listing = await self.client.watcher.listing(self.max_age)
        except SlurmError as e:
            log.warning("Reconciler: Slurm did not answer (%s); next check in %g s", e, self.interval)
            return []
        # Who owns what is read after the listing arrived, with no await in between: every job in it was
        # submitted before, so its sbatch is either still in flight (client.submitting) or has answered, and
        # the spawner saved its id in the same step.  Read before the listing, a start whose sbatch answered
        # meanwhile would look like an orphan (the scale rig lost 50 starts to this).
        owned = self.owned()
        if owned is None:
            return []
        self.passes += 1
        now = time.monotonic()
        done = []
        found = orphans(listing, owned, self.client.submitting)
        for job in found:
            failures, due = self._retry.get(job.job_id, (0, 0.0))
            if now < due:
                continue
            where = f" on {job.node}" if job.node else ""
            log.warning(
                "Job %s of %s (%s%s) is a portal session job no session owns: cancelling it",
                job.job_id,
                job.user,
                job.state,
                where,
            )
            try:
                await self.client.cancel(job.user, job.job_id)
            except SlurmError as e:
                delay = min(self.interval * 2**failures, MAX_BACKOFF)
                self._retry[job.job_id] = (failures + 1, now + delay)
                log.error("Could not cancel job %s of %s (%s); trying again in %g s", job.job_id, job.user, e, delay)
                continue
            self._retry[job.job_id] = (failures, now + self.interval)  # cancelled: check it left next time
            self.cancelled.append(job.job_id)
            done.append(job.job_id)
        still = {job.job_id for job in found}
        for job_id in [j for j in self._retry if j not in still]:
            log.info("Job %s is no longer in the queue", job_id)
            del self._retry[job_id]
        return done

    async def run_forever(self, first_delay: float = 5.0) -> None:
        await asyncio.sleep(first_delay)
        while True:
            try:
                await self.run_once()
            except Exception:  # the reconciler must outlive any one bad pass
                log.exception("Reconciler pass failed")
            await asyncio.sleep(self.interval)

"""Every portal job in Slurm has an owner: jobs no session tracks are cancelled.

Runs in the hub, at its start and then every `slurm.reconcile_seconds`, on the
shared squeue listing of every job (spawner/hub/slurm/watcher.py) and one squeue of
the ids of the portal's name, so it adds one Slurm query of its own at that
cadence.  A job of the portal's name (`slurm.job_name`) that is pending or
running, whose id no spawner's saved state holds, is cancelled as its user;
a cancel that fails is retried with back-off.  This covers an sbatch that
timed out but ran later, a stop that Slurm did not answer (the spawner then
marks its job "stopping", which the reconciler takes over by its id and user,
whatever its owner renamed it to), and a start abandoned by a hub crash.

Ownership is read from the hub's database, where the spawner saves the job id
the moment sbatch answers (spawner/hub/session/submit.py), so it is right from the
hub's first second, before any spawner object exists; and from the spawners the
hub holds, which are what acts on a job: a job a live spawner holds (and does
not hand over as "stopping") is never cancelled, and a record that lost it is
saved again, with a warning.  A job is cancelled only when two passes in a row
found it without an owner: one pass may read a start between Slurm queueing its
job and the hub learning the id (CI saw a starting session's job cancelled so).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable

from portal.settings import is_username

from ..base.logname import log_name
from ..slurm.client import JobInfo, SlurmClient, SlurmError
from ..slurm.watcher import Listing
from .record import SessionRecord

log = logging.getLogger("JupyterHub").getChild("reconciler")  # in the hub's log, its format

MAX_BACKOFF = 3600.0


def orphans(
    listing: Listing, owned: set[str], busy_users: Iterable[str], named: set[str], handed_over: dict[str, str]
) -> list[JobInfo]:
    """Portal jobs still holding (or waiting for) resources that no session owns, oldest id first.

    Portal jobs: those of the portal's name (`named`: ids), and those sessions handed over when their stop
    was not confirmed (`handed_over`: id -> user, whatever the job is called now, if still that user's).
    Users with an sbatch in flight are left for the next pass: their new job
    exists in Slurm a moment before its id reaches the spawner's state.
    """
    busy = set(busy_users)
    found = [
        job
        for job in listing.values()
        if (job.job_id in named or handed_over.get(job.job_id) == job.user)
        and (job.pending or job.running)
        and job.job_id not in owned
        and job.user not in busy
        and is_username(job.user)
    ]
    return sorted(found, key=lambda job: int(job.job_id))


def owned_in_states(states: Iterable[dict | None]) -> set[str]:
    """Job ids held by saved spawner states (of any version); a job marked "stopping" is handed to the reconciler."""
    records = (SessionRecord.from_state(state) for state in states if state)
    return {record.job_id for record in records if record.job_id and not record.stopping}


def handed_over_in(rows: Iterable[tuple[dict | None, str]]) -> dict[str, str]:
    """Job id -> user, of saved records (state, user name) whose session handed its job over ("stopping")."""
    records = ((SessionRecord.from_state(state), user) for state, user in rows if state)
    return {record.job_id: user for record, user in records if record.job_id and record.stopping}


def hub_handed_over_jobs(app) -> dict[str, str]:
    """Job id -> user of the sessions in the running hub's (`app`'s) database that handed their job over."""
    from jupyterhub import orm

    rows = app.db.query(orm.Spawner, orm.User.name).join(orm.User, orm.Spawner.user_id == orm.User.id)
    return handed_over_in((spawner.state, name) for spawner, name in rows)


def held_by(spawners: Iterable) -> dict[str, object]:
    """Job id -> the live spawner holding it, of spawners that have not handed their job over ("stopping")."""
    return {s.job_id: s for s in spawners if getattr(s, "job_id", "") and not s.record.stopping}


def hub_owned_jobs(app) -> set[str]:
    """Job ids in the running hub's (`app`'s) database and its live spawners.

    A live spawner's job missing from the database (its record was written without it) is saved again.
    """
    from jupyterhub import orm

    db = app.db
    # whole rows, not the state column: a query of JupyterHub's JSONDict column cannot be cached by SQLAlchemy,
    # which then warns on every pass; the rows are the ones the hub's users already hold
    saved = owned_in_states(orm_spawner.state for orm_spawner in db.query(orm.Spawner))
    live = held_by(s for user in list(app.users.values()) for s in list(user.spawners.values()) if hasattr(s, "record"))
    return with_live(saved, live)


def with_live(saved: set[str], live: dict) -> set[str]:
    """The jobs saved records hold and those live spawners hold; a live one's record that lost its job is saved
    again (the database is what a restarted hub knows)."""
    for job_id in sorted(set(live) - saved, key=lambda j: (len(j), j)):
        spawner = live[job_id]
        log.warning(
            "Job %s of %s is held by the hub but was missing from its database: saving its record again",
            job_id,
            log_name(spawner),
        )
        spawner.save_state()
    return saved | set(live)


class Reconciler:
    def __init__(
        self,
        client: SlurmClient,
        owned: Callable[[], set[str] | None],
        interval: float,
        max_age: float = 5.0,
        handed_over: Callable[[], dict[str, str]] = dict,
    ):
        self.client = client
        self.owned = owned
        self.handed_over = handed_over
        self.interval = interval
        self.max_age = max_age
        self._retry: dict[str, tuple[int, float]] = {}  # job id -> (failed cancels, next attempt)
        self._unowned: set[str] = set()  # jobs the last pass found without an owner (cancelled if still so)
        self.cancelled: list[str] = []  # job ids cancelled, for logs and tests
        self.passes = 0

    async def run_once(self) -> list[str]:
        """One pass; returns the job ids it cancelled."""
        try:
            # the names first: a job submitted after them waits for the next pass (it may be a start in flight)
            named = await self.client.named_jobs()
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
        busy = set(self.client.submitting)
        handed_over = self.handed_over()
        found = orphans(listing, owned, busy, named, handed_over)
        seen_before = self._unowned
        # a job passed over only while its user has an sbatch in flight keeps its first sighting: a user who
        # always has one in flight at every other check must not keep an orphan alive
        held_over = {
            job.job_id
            for job in orphans(listing, owned, (), named, handed_over)
            if job.job_id in seen_before and job.user in busy
        }
        self._unowned = {job.job_id for job in found} | held_over
        for job in found:
            if job.job_id not in seen_before:
                log.info("Job %s of %s has no owner in the hub; cancelled if still so next check", job.job_id, job.user)
                continue
            if await self._cancel_orphan(job, now):
                done.append(job.job_id)
        still = self._unowned  # found now, or passed over while its user submits
        for job_id in [j for j in self._retry if j not in still]:
            log.info("Job %s is no longer in the queue", job_id)
            del self._retry[job_id]
        return done

    async def _cancel_orphan(self, job: JobInfo, now: float) -> bool:
        """Cancel a job found without an owner at two checks in a row, unless its retry is not due; whether it was."""
        failures, due = self._retry.get(job.job_id, (0, 0.0))
        if now < due:
            return False
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
            return False
        self._retry[job.job_id] = (failures, now + self.interval)  # cancelled: check it left next time
        self.cancelled.append(job.job_id)
        return True

    async def run_forever(self, first_delay: float = 5.0) -> None:
        await asyncio.sleep(first_delay)
        while True:
            try:
                await self.run_once()
            except Exception:  # the reconciler must outlive any one bad pass
                log.exception("Reconciler pass failed")
            await asyncio.sleep(self.interval)

"""A session's end: a stop (scancel until Slurm confirms the job gone), a poll that finds it ended, and its history.

Mixed into SlurmGPUSpawner (spawner/hub/session/spawner.py).  A job Slurm has
not confirmed gone stays the session's, saved as "stopping", and the hub's
reconciler keeps cancelling it.
"""

from __future__ import annotations

import asyncio
from datetime import datetime

from batchspawner import JobStatus

from ...slurmvocab import ENDING
from ..base.logname import log_name
from ..base.metrics import CULLED, CULLED_GPU_HOURS, USER_GPU_BUSY_HOURS, USER_GPU_HOURS
from ..base.upstream_jupyterhub import cancel_start
from ..slurm.client import SlurmError
from ..slurm.clusterinfo import shares_offered
from ..slurm.services import services_for
from . import token as sessiontoken
from .idle import idle_words
from .progress import clock, ended_words
from .record import add_to_history, history_entry
from .usagelog import add_to_log, allocation_of, gpu_hours, hours_left, log_entry, session_hours, session_usage
from .userrecord import save_user_record, user_record

ENDED_WAIT = 20.0  # seconds a session whose server exited waits for its job to end by itself


class StopMixin:
    """Stopping the job, noticing that it ended, and the ended session's history entry."""

    def cancel_start(self) -> bool:
        """Cancel this session's start under way, as JupyterHub's stop API does; whether there was one
        (portal/auth.py: the starts of an account that lost access)."""
        return cancel_start(self)

    async def stop(self, now: bool = False):
        """scancel the job (as the user) and wait until Slurm confirms it has left the queue.

        The job stays this spawner's ("stopping", saved) until then: a failed
        scancel is retried with back-off for stop_timeout, then by the reconciler.
        The session's history entry is written with the "stopping" mark, in the
        same step: a hub that restarts before Slurm confirms hands the job to its
        reconciler, which writes no history (the soak lost a session so).
        """
        self.claimed = False  # a start that ends here (stopped, or failed before its job existed) frees its claim
        if not self.job_id:
            return
        job_id = self.job_id
        if not self.record.stopping:  # once per session, whichever stop comes first
            self._remember_stop(job_id, datetime.now())
        self.record.stopping = True
        self.save_state()  # a hub that dies from here on leaves the job to the reconciler, not to a "running" session
        self.log.info("Stopping session job %s of %s", job_id, log_name(self))
        if await self._end_job(job_id, timeout=self.stop_timeout):
            self.gone_confirmed = True
        self.stop_cause = ""

    async def poll(self):
        if not self.job_id:
            return 1
        if self.record.stopping:
            return 1  # asked to stop: not a session any more, though Slurm has not confirmed the job gone
        if not self.record.start_done and self.pending not in ("spawn", "stop"):
            # Saved by a start the hub did not live to finish (it restarted meanwhile):
            # nothing will connect to this job, so it must not keep its GPUs.
            self.log.warning(
                "Session job %s of %s was still starting when the hub restarted: cancelling it",
                self.job_id,
                log_name(self),
            )
            await self.stop()
            return 1
        if self.stop_cause == "ended":
            # Its server has exited and its route is gone (spawner/hub/session/handlers.py): the job ends by itself in a
            # moment; its final state says why.  A job that does not end is left to stop(), which cancels it.
            if not await self._gone_by(self.job_id, asyncio.get_running_loop().time() + ENDED_WAIT):
                return None
            self.stop_cause = ""
        else:
            status = await self.query_job_status(max_age=self.poll_max_age)
            if status in (JobStatus.PENDING, JobStatus.RUNNING, JobStatus.UNKNOWN):
                return None
        info = self.job_info
        self.log.info(
            "Session job %s of %s has ended (%s)",
            self.job_id,
            log_name(self),
            f"{info.state}|{info.reason}|{info.node}" if info else "gone",
        )
        now = datetime.now()
        self.record.last_end = ended_words(self.job_id, self.job_info, self.record.limit, now, now)
        self.remember_session(self.record.last_end, now)
        self.gone_confirmed = True  # Slurm said so: a final state, or absent from a listing that succeeded
        self.clear_state()
        return 1

    def server_exited(self) -> None:
        """The session's port keeper says the server has exited (spawner/hub/session/handlers.py).

        JupyterHub's stop then removes the route (first: no await comes
        before it) and polls: poll waits for the job's final state, which says
        why (COMPLETED: JupyterLab shut down; CANCELLED: scancel outside the
        portal; TIMEOUT ...).
        """
        self.stop_cause = "ended"

    def stopping_message(self) -> str:
        """What the user reads while an old job is not confirmed gone ("" when there is none)."""
        if not (self.record.stopping and self.job_id):
            return ""
        if self._listed_gone():
            return ""  # the next start confirms it gone and forgets it
        info = self.slurm_client.watcher.last_known(self.job_id)
        if info is not None and info.state in ENDING:
            return (
                f"Your previous session (job {self.job_id}) is still ending: Slurm is cleaning up "
                f"on {info.node or 'its node'}. Try again in a minute."
            )
        return (
            f"Your previous session (job {self.job_id}) is stopping (the scheduler is not answering yet). "
            "It is cancelled as soon as Slurm answers; you can start a new session then."
        )

    async def _end_job(self, job_id: str, timeout: float) -> bool:
        """scancel `job_id` (retried with back-off), then wait for Slurm to confirm it gone, up to `timeout` s."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        delay = 0.5
        while True:
            try:
                if await self.slurm_client.cancel(self.user.name, job_id):
                    return True  # Slurm no longer knows it, as its user asked
                break
            except SlurmError as e:
                if loop.time() + delay >= deadline:
                    self.log.error("scancel %s for %s failed for %.0f s (%s)", job_id, log_name(self), timeout, e)
                    return False
                self.log.warning(
                    "scancel %s for %s failed (%s); trying again in %g s", job_id, log_name(self), e, delay
                )
                await asyncio.sleep(delay)
                delay = min(delay * 2, 10.0)
        if await self._gone_by(job_id, deadline):
            return True
        self.log.warning(
            "Session job %s of %s is still in the queue %.0f s after scancel", job_id, log_name(self), timeout
        )
        return False

    async def _gone_by(self, job_id: str, deadline: float) -> bool:
        """Wait until Slurm confirms `job_id` gone (its final state in self.job_info), until `deadline`."""
        loop = asyncio.get_running_loop()
        while loop.time() < deadline:
            try:
                info = await self.slurm_client.status(job_id)
            except SlurmError as e:
                self.log.warning("Slurm did not answer about job %s while it ends: %s", job_id, e)
            else:
                self.job_info = info
                if info is None or not info.in_queue:
                    return True
            await asyncio.sleep(self.startup_poll_interval)
        return False

    def _remember_stop(self, job_id: str, now: datetime) -> None:
        """The history entry of a session being stopped, with why (and the idle cullers' metrics)."""
        left = hours_left(self.job_info.end if self.job_info else "", now)
        if self.stop_cause == "idle":
            self.record.last_end = idle_words(
                self.orm_spawner.last_activity if self.orm_spawner is not None else None, now, datetime.utcnow()
            )
            self.log.info("Session job %s of %s stopped for being idle", job_id, log_name(self))
            resources = self.current_resources()
            CULLED.labels(resources.partition if resources else "").inc()
            CULLED_GPU_HOURS.labels(resources.partition if resources else "").inc(
                left * (resources.gpu_share if resources else 0)
            )
            self.remember_session(self.record.last_end, now)
        elif self.exited_in_start:  # the start failed: its server exited before it answered (start() said why)
            self.record.last_end = (
                f"Your session's server exited while it started {clock(now, now)}; its job (job {job_id}) was "
                f"cancelled. Its log: ~/.dsportal-session-{job_id}.log."
            )
            self.remember_session(self.record.last_end, now)
        elif self.stop_cause == "ended":  # its server had exited, but the job did not end by itself
            self.record.last_end = (
                f"Your session's server ended {clock(now, now)}; its job (job {job_id}) was then cancelled."
            )
            self.remember_session(self.record.last_end, now)
        else:
            self.remember_session(f"Stopped through the portal {clock(now, now)}.", now)

    def remember_session(self, why: str, ended: datetime) -> None:
        """Add the session that just ended to the home page's list: in the user's record (userrecord.py), so it
        outlives a named session that is removed.  With it what the session used
        (its last report; Slurm's accounting is filled in later) and the user's GPU-hours for the metrics."""
        resources = self.current_resources()
        entry = history_entry(
            self.job_id,
            resources.summary() if resources else "",
            dict(self.user_options or {}),
            self.record.submitted,
            ended,
            why,
        )
        if self.name:
            entry["name"] = self.name
        nodes = services_for(self.config_file).cluster.latest_nodes()  # the latest shared sinfo: no new call
        offered = shares_offered(nodes, resources.partition, self.settings.slurm) if resources else 0
        given = allocation_of(resources, offered)
        entry["usage"] = usage = session_usage(self.record.usage, given)
        self.record.usage = {}  # this session's: the next session of the record starts without it
        record = user_record(self)
        record.history = add_to_history(record.history, entry, self.settings.sessions.history)
        # GPU-hours: what the hub gave times how long it saw the job run, whatever the session reported (or not);
        # a job never seen running held none (Slurm's accounting adds what it finds)
        hours = session_hours(self.record.started, self.record.submitted if self.record.start_done else "", ended)
        counted = any(e.get("job_id") == self.job_id for e in record.usage_log)  # once per job, however it ended
        partition = resources.partition if resources else ""
        record.usage_log = add_to_log(record.usage_log, log_entry(self.job_id, ended, partition, usage, given, hours))
        if not counted:
            allocated, busy = gpu_hours(given.gpus, hours, usage)
            USER_GPU_HOURS.labels(self.user.name).inc(allocated)
            USER_GPU_BUSY_HOURS.labels(self.user.name).inc(busy)
        save_user_record(self)

    def run_post_stop_hook(self):
        """The session has ended: so has every server token of it, also those a restarted hub does not know
        (JupyterHub deletes only the one it holds), then the admin's post_stop_hook."""
        revoked = sessiontoken.revoke(self)
        if revoked:
            self.log.info("Session %s has ended: %d server token(s) of it deleted", log_name(self), revoked)
        return super().run_post_stop_hook()

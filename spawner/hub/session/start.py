"""A session's start: submit, wait for Slurm to run the job, then for its server to prove itself.

Mixed into SlurmGPUSpawner (spawner/hub/session/spawner.py).  A start that
fails says why, with the last lines of the session's log; one that waited in
the queue is mailed to a user who opted in.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from urllib.parse import urlparse

from batchspawner import JobStatus
from jupyterhub import apihandlers

from ..base.logname import log_name
from ..base.metrics import START_SECONDS
from ..base.notices import public_home, session_started_mail, tell, waited_words
from ..request.jobspec import output_path
from ..request.refusal import SessionRefused
from . import handlers as session_handlers
from .progress import never_starts
from .readiness import wait_for_proof
from .userrecord import user_record

QUICK_START_SECONDS = 10.0  # a start's first seconds: its job state is followed closely
# then a queued job's state may come from a listing a tenth of its wait old, within these bounds (seconds)
QUEUED_LISTING_AGE = (2.0, 15.0)


class StartMixin:
    """The start sequence, from the submit to a server that proved to be the session's."""

    async def start(self):
        if not session_handlers.served(apihandlers.default_handlers):
            # without the portal's routes the session could not report its port, and batchspawner's
            # handler (any attribute of this spawner, set by any caller) would be served
            self.log.error("The portal's routes are not installed: the hub's config must call apply_portal_config")
            raise RuntimeError(
                "This hub is not set up for DS Portal sessions (its config does not apply the portal's); "
                "tell the cluster admins."
            )
        if self.job_id:  # a job of an earlier session that Slurm has not confirmed gone
            await self._settle_earlier_job()
        self.record.start_done = self.record.stopping = self.gone_confirmed = self.exited_in_start = False
        self.record.last_end = ""
        self.ip = self.traits()["ip"].default_value
        self.port = 0
        if self.server:
            self.server.port = self.port
        self.job_info = None
        self.answering = False
        await self.submit_batch_script()
        self._submitted_at = asyncio.get_running_loop().time()
        while await self._status_during_start() != JobStatus.RUNNING:
            await asyncio.sleep(self.startup_poll_interval)
        self.ip = self.job_info.node
        self.record.started = datetime.now().isoformat(timespec="seconds")  # its GPU-hours count from here
        checks = 0
        while self.port == 0:  # set by the port callback (spawner/hub/session/handlers.py), once the server listens
            await asyncio.sleep(0.05)  # a check of one attribute: cheap, and the session is ready when it is set
            checks += 1
            if checks % 20 == 0 or self.exited_in_start:  # Slurm itself, once a second; the server's exit at once
                await self._status_during_start()
        port = await self._wait_until_answering()
        self.record.start_done = True
        self._tell_if_it_waited(asyncio.get_running_loop().time() - self._submitted_at)
        START_SECONDS.labels(self.resources.partition).observe(asyncio.get_running_loop().time() - self._submitted_at)
        self.port = port  # the proven one, whatever was reported since
        self.log.info("Session job %s of %s: JupyterLab at %s:%s", self.job_id, log_name(self), self.ip, port)
        return self.ip, port

    async def _settle_earlier_job(self) -> None:
        """Cancel what is left of an earlier session; refuse the start until Slurm confirms it gone."""
        job_id = self.job_id
        self.record.stopping = True
        self.log.info("Session of %s: earlier job %s is not confirmed gone; ending it first", log_name(self), job_id)
        if await self._end_job(job_id, timeout=min(self.stop_timeout, 15.0)):
            # forget the old job only: clear_state() would also drop this start's new API token
            self.job_id = self.job_status = ""
            self.job_info = None
            self.record.stopping = False
            self.save_state()
            return
        why = (
            self.stopping_message() or f"Your previous session (job {job_id}) is still stopping. Try again in a minute."
        )
        self.log.warning("Start of %s refused: earlier job %s is not confirmed gone", log_name(self), job_id)
        raise SessionRefused(why, 409)

    async def _status_during_start(self) -> JobStatus:
        if (
            self.exited_in_start
        ):  # the port keeper's report (spawner/hub/session/handlers.py): the job would run on, port held
            raise await self._exited_error()
        status = await self.query_job_status(max_age=self._start_listing_age())
        if status == JobStatus.UNKNOWN and self.job_hidden:
            raise RuntimeError(
                f"The portal cannot follow your session (job {self.job_id}): the cluster's Slurm hides other users' "
                "jobs from it (PrivateData). Your job is cancelled; tell the cluster admins (`dsportal doctor` says "
                "what to change)."
            )
        if status == JobStatus.UNKNOWN:
            raise RuntimeError(
                f"Slurm stopped answering while your session (job {self.job_id}) was starting. "
                "Try again in a few minutes; if this persists, tell the cluster admins."
            )
        if status == JobStatus.NOTFOUND:
            raise await self._ended_error()
        why = never_starts(self.job_info.reason) if status == JobStatus.PENDING and self.job_info else ""
        if why:  # waiting would hold the user until start_timeout for nothing: refused (400), its job is cancelled
            self.log.warning(
                "Session job %s of %s will not start: %s", self.job_id, log_name(self), self.job_info.reason
            )
            raise SessionRefused(
                f"Slurm will not start your session (job {self.job_id}): {why} ({self.job_info.reason}). Ask for "
                "fewer GPUs or hours, or choose another account; the cluster admins can say what the limits are."
            )
        return status

    def _start_listing_age(self) -> float:
        """How old a shared listing a starting session may use.

        Fresh until the job was first seen (a listing begun before the submit
        lacks it, and absent means gone); then one poll interval old for the
        first seconds, so an idle cluster's start is noticed at once; then a
        tenth of the wait so far, from 2 s up to 15 s: a start after a minute in
        the queue is noticed within 6 s, and a queue of sessions waiting for
        hours costs the hub one squeue per 15 s, whatever their number.
        """
        if self.job_info is None:
            return 0.0
        waited = asyncio.get_running_loop().time() - self._submitted_at
        if waited < QUICK_START_SECONDS:
            return self.startup_poll_interval
        shortest, longest = QUEUED_LISTING_AGE
        return min(max(waited / 10, shortest), longest)

    async def _wait_until_answering(self) -> int:
        """Wait until the server on the reported port proves it is the session's (spawner/hub/session/readiness.py)."""
        port = self.port  # the port proven is the port routed (returned to start())
        base = urlparse(self.server.base_url if self.server else self.user.url).path

        def slow() -> None:
            self.log.warning(
                "Session job %s of %s: nothing that proves to be the session answers on %s:%s yet",
                self.job_id,
                log_name(self),
                self.ip,
                port,
            )

        await wait_for_proof(self.ip, port, base, self.api_token, self._status_during_start, slow)
        self.answering = True
        return port

    async def _ended_error(self) -> RuntimeError:
        info = self.job_info
        how = f"{info.state.lower()}{f', {info.reason}' if info.reason else ''}" if info else "no longer in the queue"
        return await self._error_with_log(f"Your session job {self.job_id} ended before JupyterLab started ({how}).")

    async def _exited_error(self) -> RuntimeError:
        self.log.warning("Session job %s of %s: its server exited while it started", self.job_id, log_name(self))
        return await self._error_with_log(
            f"JupyterLab exited while your session (job {self.job_id}) was starting; its job is cancelled."
        )

    async def _error_with_log(self, what: str) -> RuntimeError:
        """`what` happened, with the last lines of the session's log (read as the user)."""
        account = self.account()
        log_file = output_path(account.home).replace("%j", self.job_id)
        tail = await self.slurm_client.output_tail(account.name, log_file)
        return RuntimeError(f"{what} Last lines of {log_file}:\n{tail.strip() or '(empty)'}")

    def _tell_if_it_waited(self, waited: float) -> None:
        """A session that waited in the queue has started: mail the user who opted in (spawner/hub/base/notices.py)."""
        if waited < self.settings.notify.queued_seconds or not user_record(self).notify_mail:
            return
        url = self.session_url()  # with one origin per user (hub.subdomain_host) a full URL already
        if not url.startswith("http"):
            url = public_home(self.settings).rsplit("/hub/", 1)[0] + url
        subject, body = session_started_mail(self.job_id, self.ip, waited_words(waited), url)
        told = asyncio.ensure_future(tell(self.settings.notify, self.user, True, subject, body))
        self.services.keep(told)  # held until sent: the loop keeps only weak references to tasks

    def server_exited_while_starting(self) -> None:
        """The port keeper's report came while the start is pending (spawner/hub/session/handlers.py).

        Before the server proved itself the start fails at once: start() raises
        with the session log's last lines (the keeper holds the port, so the job
        would otherwise run on, GPUs held, until start_timeout), and JupyterHub's
        cleanup stops the session: scancel.  Proven already, JupyterHub's own
        check of the server fails the start; its stop then ends as an ended one.
        """
        if self.record.start_done:
            self.server_exited()
        else:
            self.exited_in_start = True

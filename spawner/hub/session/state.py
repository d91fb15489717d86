"""A session's saved state: its record in the hub's database, and Slurm's word on its job.

Mixed into SlurmGPUSpawner (spawner/hub/session/spawner.py).  The record
(spawner/hub/session/record.py) holds what outlives the hub, with
batchspawner's job id and status; a restarted hub knows the session's API token
by its digest only.
"""

from __future__ import annotations

import dataclasses
import hmac
from datetime import datetime, timedelta

from batchspawner import JobStatus
from jupyterhub.spawner import Spawner
from sqlalchemy.orm import object_session

from ...contract import token_digest
from ...slurmvocab import JobInfo, parse_end
from ..base.logname import log_name
from ..slurm.client import JobsHidden, SlurmError
from . import token as sessiontoken
from .record import SessionRecord

END_GRACE = timedelta(minutes=5)  # past its time limit (and Slurm's KillWait) a job has ended, seen or not


def past_its_end(info: JobInfo | None, now: datetime) -> bool:
    """Whether a job last seen running had its time limit more than END_GRACE before `now` (pure).  A session
    Slurm hides from the hub is kept until then: never for ever, so a dead session's route does not outlive its
    job's time by more than that (a port keeper killed with its node cannot say it ended)."""
    end = parse_end(info.end) if info is not None else None
    return end is not None and now - end > END_GRACE


class StateMixin:
    """What is saved of the session, and the job's state as Slurm last told it."""

    def holds_token(self, token: str) -> bool:
        """Whether `token` is this session's own API token (after a hub restart too)."""
        if not token:
            return False
        if self.api_token:
            return hmac.compare_digest(self.api_token, token)
        digest = self.record.token_sha256
        return bool(digest) and hmac.compare_digest(digest, token_digest(token))

    def _remember(self, token: str) -> None:
        self.record.token_sha256 = token_digest(token)
        db = object_session(self.orm_spawner) if self.orm_spawner is not None else None
        self.record.token_id = sessiontoken.token_id_of(db, token) if db is not None else 0

    def get_state(self) -> dict:
        """The saved record (spawner/hub/session/record.py), with batchspawner's job id and status."""
        digest = token_digest(self.api_token) if self.api_token and self.job_id else self.record.token_sha256
        return dataclasses.replace(
            self.record, job_id=self.job_id, job_status=self.job_status, token_sha256=digest
        ).to_state()

    def load_state(self, state: dict) -> None:
        """A saved record of any version (an upgraded hub reads what an older one saved)."""
        Spawner.load_state(self, state)
        self.record = SessionRecord.from_state(state)
        self.job_id = self.record.job_id
        self.job_status = self.record.job_status

    def save_state(self) -> None:
        """Write the state to the hub's database now; JupyterHub saves it only after start() returns."""
        session = object_session(self.orm_spawner) if self.orm_spawner is not None else None
        if session is not None:
            self.orm_spawner.state = self.get_state()
            session.commit()

    def clear_state(self):
        session = object_session(self.orm_spawner) if self.orm_spawner is not None else None
        if session is not None and sessiontoken.end_shares(
            session, self.orm_spawner
        ):  # a share is of a running session
            self.log.info("Session %s has ended: its shares ended with it", log_name(self))
        if self.record.stopping and self.job_id and not self.gone_confirmed:
            # Slurm has not confirmed the job gone: it stays ours, saved as "stopping"
            # (the reconciler cancels it; the next start waits for it).
            Spawner.clear_state(self)  # JupyterHub's part only (the API token), not the job id
            self.log.warning(
                "Session job %s of %s is not confirmed gone yet; the hub keeps cancelling it",
                self.job_id,
                log_name(self),
            )
            return
        super().clear_state()
        self.job_info = None
        self.gone_confirmed = False
        # the job's part goes; why the last session ended stays for the home page (what is the user's is in the
        # user's record, spawner/hub/session/userrecord.py, or still unread from an older hub)
        self.record = SessionRecord(
            last_end=self.record.last_end, warned_job=self.record.warned_job, legacy_user=self.record.legacy_user
        )

    async def query_job_status(self, max_age: float = 0.0) -> JobStatus:
        """Ask the shared watcher; a Slurm outage is UNKNOWN (the session is kept)."""
        if not self.job_id:
            self.job_status = ""
            return JobStatus.NOTFOUND
        try:
            info = await self.slurm_client.status(self.job_id, max_age)
        except JobsHidden:
            self.job_hidden = True  # the admins were told (spawner/hub/slurm/visibility.py)
            if not past_its_end(self.job_info, datetime.now()):
                return JobStatus.UNKNOWN  # kept: it may be running
            self.log.warning(
                "Job %s of %s, hidden by Slurm, is past its time limit: ended", self.job_id, log_name(self)
            )
            info = None
        except SlurmError as e:
            self.log.warning(
                "Slurm did not answer about job %s of %s (%s); keeping the session", self.job_id, log_name(self), e
            )
            return JobStatus.UNKNOWN
        self.job_hidden = False
        self.job_info = info
        self.job_status = f"{info.state}|{info.reason}|{info.node}" if info else ""
        if info is None or not (info.pending or info.running):
            return JobStatus.NOTFOUND
        return JobStatus.RUNNING if info.running else JobStatus.PENDING

    def state_ispending(self) -> bool:
        return self.job_status.split("|")[0] in ("PENDING", "CONFIGURING") if self.job_status else False

    def state_isrunning(self) -> bool:
        return self.job_status.split("|")[0] == "RUNNING" if self.job_status else False

    def state_gethost(self) -> str:
        return self.job_status.split("|")[2] if self.job_status.count("|") == 2 else ""

"""The portal's spawner: one JupyterLab session = one Slurm job on one GPU node.

Built on batchspawner's SlurmSpawner, keeping its job-state model (JobStatus),
state persistence (job_id, job_status) and the hub-facing lifecycle.  Replaced,
because batchspawner does them unsafely: every command (it joins shell strings
and runs them in a shell), the job script (two template languages in a code
string, `--get-user-env`), option handling (it passes user_options straight
into the script) and the port callback (see spawner/hub/session/handlers.py).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import hmac
import os
import pwd
import shlex
from datetime import datetime
from typing import Any
from urllib.parse import urlparse

from batchspawner import JobStatus, SlurmSpawner
from jupyterhub import apihandlers
from jupyterhub.spawner import Spawner
from sqlalchemy.orm import object_session
from traitlets import Float, Unicode, default, observe

from portal.config import config_path
from portal.settings import PortalSettings

from ...contract import SESSION_VAR
from ...slurmvocab import ENDING
from ..base.metrics import CULLED, CULLED_GPU_HOURS, START_SECONDS, USER_GPU_BUSY_HOURS, USER_GPU_HOURS, count_user
from ..base.notices import public_home, session_started_mail, tell, waited_words
from ..request.accounts import AccountRefused, UnixAccount, lookup, refusal
from ..request.form import render_options_form
from ..request.jobspec import ACCOUNT_VARIABLES, HUB_VARIABLES, Account, job_script, output_path, sbatch_argv
from ..request.options import OptionsError, SessionRequest, options_from_form, parse_options
from ..request.refusal import SessionRefused, quiet_refusals
from ..request.resources import Resources, duration_words, resources_for
from ..request.sessionlimits import Held, name_problem, room_problem, user_sessions
from ..request.sessionspec import build_session_spec
from ..slurm.client import JobInfo, SlurmClient, SlurmError, SlurmUnavailable
from ..slurm.services import services_for
from . import handlers as session_handlers
from . import token as sessiontoken
from .idle import idle_words, join_idle_groups, timeout_for
from .progress import clock, ended_words, place_in_queue, start_progress
from .readiness import wait_for_proof
from .record import SessionRecord, add_to_history, history_entry
from .usagelog import add_to_log, allocation_of, gpu_hours, hours_left, log_entry, session_hours, session_usage

ENDED_WAIT = 20.0  # seconds a session whose server exited waits for its job to end by itself
_TELLING: set[asyncio.Task] = set()
QUICK_START_SECONDS = 10.0  # a start's first seconds: its job state is followed closely
# then a queued job's state may come from a listing a tenth of its wait old, within these bounds (seconds)
QUEUED_LISTING_AGE = (2.0, 15.0)


class LinkSpawnRefused(ValueError):
    """Options arrived in a GET URL; only the form's POST and the REST API start sessions."""


def _refuse(message: str, status: int = 400) -> SessionRefused:
    return SessionRefused(message, status)


def token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class SlurmGPUSpawner(SlurmSpawner):
    """JupyterLab in a Slurm job: partition, GPUs and hours from the form or REST API."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        quiet_refusals(self.log)  # a refused start: the spawner's one WARNING, not JupyterHub's ERRORs
        # What outlives the hub (saved by get_state; job_id and job_status are batchspawner's traits).
        self.record = SessionRecord()
        if self.api_token:  # given to the constructor, before the record existed
            self._remember(self.api_token)
        # What lives only as long as this hub process:
        self.request: SessionRequest | None = None  # the user's validated options
        self.resources: Resources | None = None  # what they come to in Slurm's terms
        self.job_info: JobInfo | None = None  # the job as Slurm last listed it
        self.answering = False  # JupyterLab in the job answers HTTP
        self.gone_confirmed = False  # Slurm confirmed the job gone (a final state, or absent from a listing)
        self.idle_timeout = 0  # seconds without use before an idle culler stops this session; 0 = never
        self.stop_cause = (
            ""  # "idle": an idle culler asked (spawner/hub/session/handlers.py); "ended": the server exited
        )
        self.exited_in_start = False  # the session's port keeper said its server exited before the start was done
        self.queue_place: int | None = None  # a queued job's place in its partition's line
        # This start passed the admin's limits: it counts against them from that moment (before its job exists)
        # until its start ends, so that starts racing each other see it (see counts_against_limits).
        self.claimed = False
        self._submitted_at = 0.0  # the event loop's time of the submit

    config_file = Unicode(
        help="""The portal's admin YAML file.

        Default: $DSPORTAL_CONFIG, else /etc/dsportal/portal.yaml.
        Example: c.SlurmGPUSpawner.config_file = "/etc/dsportal/portal.yaml"
        """,
    ).tag(config=True)

    @default("config_file")
    def _default_config_file(self) -> str:
        return str(config_path())

    startup_poll_interval = Float(
        0.25,
        help="""Seconds between job-state checks while a session starts (default 0.25).

        Example: c.SlurmGPUSpawner.startup_poll_interval = 0.5
        """,
    ).tag(config=True)

    poll_max_age = Float(
        5.0,
        help="""Seconds a shared squeue answer may be reused by the hub's periodic poll (default 5).

        All sessions share one squeue call; a larger value means fewer calls on a big cluster.
        Example: c.SlurmGPUSpawner.poll_max_age = 10
        """,
    ).tag(config=True)

    stop_timeout = Float(
        help="""Seconds a stop retries scancel and waits for the job to leave the queue.

        Default: slurm.stop_timeout of the admin YAML (60).  Past it the job stays
        the session's, marked stopping, and the hub's reconciler keeps cancelling it.
        """,
    ).tag(config=True)

    @default("stop_timeout")
    def _default_stop_timeout(self) -> int:
        return self.settings.slurm.stop_timeout  # slurm.stop_timeout in the admin YAML

    def holds_token(self, token: str) -> bool:
        """Whether `token` is this session's own API token (after a hub restart too)."""
        if not token:
            return False
        if self.api_token:
            return hmac.compare_digest(self.api_token, token)
        digest = self.record.token_sha256
        return bool(digest) and hmac.compare_digest(digest, token_digest(token))

    @observe("api_token")
    def _remember_token(self, change) -> None:
        """The record keeps what a restarted hub needs of the session's token: its digest and its row
        (JupyterHub gives a restarted hub no token; spawner/hub/session/token.py)."""
        if change.new and hasattr(self, "record"):  # "": JupyterHub's clear_state; no record: given to __init__
            self._remember(change.new)

    def _remember(self, token: str) -> None:
        self.record.token_sha256 = token_digest(token)
        db = object_session(self.orm_spawner) if self.orm_spawner is not None else None
        self.record.token_id = sessiontoken.token_id_of(db, token) if db is not None else 0

    def run_post_stop_hook(self):
        """The session has ended: so has every server token of it, also those a restarted hub does not know
        (JupyterHub deletes only the one it holds), then the admin's post_stop_hook."""
        revoked = sessiontoken.revoke(self)
        if revoked:
            self.log.info("Session %s has ended: %d server token(s) of it deleted", self._log_name, revoked)
        return super().run_post_stop_hook()

    # --- configuration -------------------------------------------------------
    @property
    def settings(self) -> PortalSettings:
        return services_for(self.config_file).settings

    @property
    def slurm_client(self) -> SlurmClient:
        return services_for(self.config_file).client

    @default("start_timeout")
    def _default_start_timeout(self) -> int:
        return self.settings.slurm.start_timeout

    @default("options_form")
    def _default_options_form(self):
        return lambda spawner: render_options_form(spawner.settings.slurm)

    @default("apply_user_options")
    def _default_apply_user_options(self):
        return lambda spawner, user_options: spawner.apply_session_options(user_options)

    def options_from_form(self, formdata: dict[str, list[str]]) -> dict[str, Any]:
        return options_from_form(formdata)

    def options_from_query(self, query_data: dict[str, list[str]]) -> dict[str, Any]:
        """A link (GET /hub/spawn?opt-gpus=4) never starts a job: a page of anyone's could make it.

        Raising makes JupyterHub show the form instead, with this message.
        """
        self.log.warning("Refused a start from a link for %s (options in the URL)", self._log_name)
        raise LinkSpawnRefused("A link cannot start a session: choose the resources below and press Start.")

    def apply_session_options(self, user_options: Any) -> None:
        """Validate the user's options against the admin config (HTTP 400 if refused)."""
        try:
            self.request = parse_options(user_options, self.settings.slurm)
        except OptionsError as e:
            self.log.warning("Refused session options for %s: %s", self._log_name, e)
            raise _refuse(str(e)) from None
        self.unix_account()  # refused accounts learn it now, before the spawn is accepted
        self.resources = resources_for(self.request, self.settings.slurm)
        sessions = self.settings.sessions
        why = name_problem(self.name) if self.name else ""
        # The check and the claim are one step (no await between them): a start of the same user that checks
        # next, while this one still waits for its sbatch, counts this one (five starts at once: one passes).
        self.claimed = False
        why = why or room_problem(
            self.held_beside(), self.resources.gpus, sessions.max_per_user, sessions.max_gpus_per_user
        )
        if why:
            self.log.warning("Session %s refused: %s", self._log_name, why)
            raise _refuse(why)
        self.claimed = True

    def counts_against_limits(self) -> bool:
        """Whether this session holds a share of the user's limits: a start that passed them and has not ended
        (its job may not exist yet), or a job Slurm still holds: one being stopped counts until the shared listing
        shows it gone (a stop followed at once by a start must not hold both sessions' GPUs at one time)."""
        if self.claimed and self.pending == "spawn":  # JupyterHub ends "spawn" when the start succeeds or fails
            return True
        if not self.job_id:
            return False
        return not self.record.stopping or not self._listed_gone()

    def _listed_gone(self) -> bool:
        """Whether the hub's latest shared listing shows this session's job out of the queue (Slurm not asked)."""
        watcher = self.slurm_client.watcher
        info = watcher.last_known(self.job_id)
        return watcher.listed() and (info is None or not info.in_queue)

    def held_beside(self) -> list[Held]:
        """The user's other sessions that hold or wait for resources (what the admin's limits count)."""
        held = []
        for other in user_sessions(self.user):
            if other is self or not other.counts_against_limits():
                continue
            resources = other.current_resources()
            held.append(Held(other.name, resources.gpus if resources else 0))
        return held

    def owner_record(self) -> SessionRecord:
        """The record of what is the user's, not one session's (runs, the e-mail opt-in): the unnamed session's."""
        if not self.name:
            return self.record
        default = self.user.spawners[""]
        return default.record if hasattr(default, "record") else self.record

    def session_url(self) -> str:
        """This session's JupyterLab address (a full URL with one origin per user, hub.subdomain_host)."""
        return self.user.server_url(self.name)

    # --- batchspawner's shell path is never used -----------------------------
    async def run_command(self, cmd, input=None, env=None):
        raise NotImplementedError("SlurmGPUSpawner runs Slurm through spawner.hub.slurm.client, never a shell")

    # --- the job ---------------------------------------------------------------
    # The unix account lookups, seams tests replace (no test hook in this code).
    getpwnam = staticmethod(pwd.getpwnam)
    getgrouplist = staticmethod(os.getgrouplist)

    def unix_account(self) -> UnixAccount:
        """The account the job runs as; HTTP 403 for root, system accounts and anyone else refused."""
        try:
            return lookup(self.user.name, self.settings.slurm, self.getpwnam, self.getgrouplist)
        except AccountRefused as e:
            self.log.warning("Session of %s refused: %s", self._log_name, e)
            raise _refuse(str(e), 403) from None

    async def check_directory_account(self, account: UnixAccount) -> None:
        """With auth_state, the directory's uidNumber must be the unix account's uid (HTTP 403 otherwise)."""
        auth_state = await self.user.get_auth_state() or {}
        uid_number = auth_state.get("uidNumber")
        why = refusal(account, self.settings.slurm, uid_number if isinstance(uid_number, int) else None)
        if why:
            self.log.warning("Session of %s refused: %s", self._log_name, why)
            raise _refuse(why, 403)

    def account(self) -> Account:
        return Account(name=self.user.name, home=self.unix_account().home)

    def user_env(self, env: dict[str, str]) -> dict[str, str]:
        """batchspawner's hook: the account's basics, from the same lookup as the job."""
        account = self.unix_account()
        env.update(USER=account.name, LOGNAME=account.name, HOME=account.home, SHELL=account.shell, LANG="C.UTF-8")
        return env

    def job_command(self) -> list[str]:
        prefix = self.settings.environment.prefix.rstrip("/")
        return [f"{prefix}/bin/dsportal-singleuser", *self.get_args()]

    def session_spec(self) -> str:
        """The typed session spec (spawner/sessionspec.py) the job reads once on the node."""
        return build_session_spec(self.settings, self.idle_timeout).to_json()

    def job_environment(self) -> dict[str, str]:
        """What the job gets: the hub's variables (API token included), the account's basics, the session spec."""
        env = {k: v for k, v in self.get_env().items() if k in HUB_VARIABLES or k in ACCOUNT_VARIABLES}
        env[SESSION_VAR] = self.session_spec()
        # how often the session tells the hub when it was last used (the idle cullers read it)
        env["JUPYTERHUB_ACTIVITY_INTERVAL"] = str(self.settings.sessions.activity_seconds)
        return env

    async def submit_batch_script(self) -> str:
        if self.resources is None:  # options not applied yet (e.g. a direct start)
            self.apply_session_options(self.user_options)
        unix = self.unix_account()  # one lookup for the checks and the job
        await self.check_directory_account(unix)
        account = Account(name=unix.name, home=unix.home)
        self.idle_timeout = timeout_for(self.resources.partition, unix.groups, self.settings.sessions)
        others = [s for s in user_sessions(self.user) if s is not self and s.job_id]
        join_idle_groups(self.user, [self.idle_timeout, *(s.session_idle_timeout() for s in others)])
        env = self.job_environment()
        names = sorted(env)
        argv = sbatch_argv(self.settings.slurm, self.resources, account, names, self.settings.sessions.save_minutes)
        script = job_script(self.settings.slurm, account, self.job_command())
        # sudo needs a PATH of its own; everything else reaches it only as named variables
        call_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **env}
        self.log.info("Submitting session of %s (%s): %s", self._log_name, self.resources.summary(), shlex.join(argv))
        try:
            self.job_id = await self.slurm_client.submit_as(account.name, argv, script, call_env)
        except SlurmUnavailable as e:
            self.log.error("sbatch for %s: %s", self._log_name, e)
            raise RuntimeError(
                "The cluster's scheduler (Slurm) is not answering, so no session was started. "
                "Try again in a few minutes; if this persists, tell the cluster admins."
            ) from None
        except SlurmError as e:
            self.log.error("sbatch for %s refused: %s", self._log_name, e)
            raise RuntimeError(f"Slurm refused the session: {e.stderr or e}") from None
        self.record.minutes = self.resources.minutes
        self.record.limit = duration_words(self.record.minutes)
        self.record.submitted = datetime.now().isoformat(timespec="minutes")
        self.record.started = ""  # set when the hub sees it run
        count_user(self.user.name)  # the user's GPU-hours series, at 0 until the session ends
        self.record.usage = {}  # a new job: nothing of an earlier one's tally
        self.save_state()  # now: a hub that dies while the job waits or starts still knows it
        self.log.info("Session job %s submitted for %s", self.job_id, self._log_name)
        return self.job_id

    # --- state -------------------------------------------------------------------
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
            self.log.info("Session %s has ended: its shares ended with it", self._log_name)
        if self.record.stopping and self.job_id and not self.gone_confirmed:
            # Slurm has not confirmed the job gone: it stays ours, saved as "stopping"
            # (the reconciler cancels it; the next start waits for it).
            Spawner.clear_state(self)  # JupyterHub's part only (the API token), not the job id
            self.log.warning(
                "Session job %s of %s is not confirmed gone yet; the hub keeps cancelling it",
                self.job_id,
                self._log_name,
            )
            return
        super().clear_state()
        self.job_info = None
        self.gone_confirmed = False
        # the job's part goes; why the last sessions ended stays for the home page
        self.record = SessionRecord(
            last_end=self.record.last_end,
            history=self.record.history,
            usage_log=self.record.usage_log,
            runs=self.record.runs,
            notify_mail=self.record.notify_mail,
            warned_job=self.record.warned_job,
        )

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

    async def query_job_status(self, max_age: float = 0.0) -> JobStatus:
        """Ask the shared watcher; a Slurm outage is UNKNOWN (the session is kept)."""
        if not self.job_id:
            self.job_status = ""
            return JobStatus.NOTFOUND
        try:
            info = await self.slurm_client.status(self.job_id, max_age)
        except SlurmError as e:
            self.log.warning(
                "Slurm did not answer about job %s of %s (%s); keeping the session", self.job_id, self._log_name, e
            )
            return JobStatus.UNKNOWN
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

    async def _ended_error(self) -> RuntimeError:
        info = self.job_info
        how = f"{info.state.lower()}{f', {info.reason}' if info.reason else ''}" if info else "no longer in the queue"
        return await self._error_with_log(f"Your session job {self.job_id} ended before JupyterLab started ({how}).")

    async def _exited_error(self) -> RuntimeError:
        self.log.warning("Session job %s of %s: its server exited while it started", self.job_id, self._log_name)
        return await self._error_with_log(
            f"JupyterLab exited while your session (job {self.job_id}) was starting; its job is cancelled."
        )

    async def _error_with_log(self, what: str) -> RuntimeError:
        """`what` happened, with the last lines of the session's log (read as the user)."""
        account = self.account()
        log_file = output_path(account.home).replace("%j", self.job_id)
        tail = await self.slurm_client.output_tail(account.name, log_file)
        return RuntimeError(f"{what} Last lines of {log_file}:\n{tail.strip() or '(empty)'}")

    async def _status_during_start(self) -> JobStatus:
        if (
            self.exited_in_start
        ):  # the port keeper's report (spawner/hub/session/handlers.py): the job would run on, port held
            raise await self._exited_error()
        status = await self.query_job_status(max_age=self._start_listing_age())
        if status == JobStatus.UNKNOWN:
            raise RuntimeError(
                f"Slurm stopped answering while your session (job {self.job_id}) was starting. "
                "Try again in a few minutes; if this persists, tell the cluster admins."
            )
        if status == JobStatus.NOTFOUND:
            raise await self._ended_error()
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
        self.log.info("Session job %s of %s: JupyterLab at %s:%s", self.job_id, self._log_name, self.ip, port)
        return self.ip, port

    def _tell_if_it_waited(self, waited: float) -> None:
        """A session that waited in the queue has started: mail the user who opted in (spawner/hub/base/notices.py)."""
        if waited < self.settings.notify.queued_seconds or not self.owner_record().notify_mail:
            return
        url = self.session_url()  # with one origin per user (hub.subdomain_host) a full URL already
        if not url.startswith("http"):
            url = public_home(self.settings).rsplit("/hub/", 1)[0] + url
        subject, body = session_started_mail(self.job_id, self.ip, waited_words(waited), url)
        told = asyncio.ensure_future(tell(self.settings.notify, self.user, True, subject, body))
        _TELLING.add(told)  # held until sent: the loop keeps only weak references to tasks
        told.add_done_callback(_TELLING.discard)

    async def _settle_earlier_job(self) -> None:
        """Cancel what is left of an earlier session; refuse the start until Slurm confirms it gone."""
        job_id = self.job_id
        self.record.stopping = True
        self.log.info("Session of %s: earlier job %s is not confirmed gone; ending it first", self._log_name, job_id)
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
        self.log.warning("Start of %s refused: earlier job %s is not confirmed gone", self._log_name, job_id)
        raise _refuse(why, 409)

    async def _end_job(self, job_id: str, timeout: float) -> bool:
        """scancel `job_id` (retried with back-off), then wait for Slurm to confirm it gone, up to `timeout` s."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        delay = 0.5
        while True:
            try:
                await self.slurm_client.cancel(self.user.name, job_id)
                break
            except SlurmError as e:
                if loop.time() + delay >= deadline:
                    self.log.error("scancel %s for %s failed for %.0f s (%s)", job_id, self._log_name, timeout, e)
                    return False
                self.log.warning(
                    "scancel %s for %s failed (%s); trying again in %g s", job_id, self._log_name, e, delay
                )
                await asyncio.sleep(delay)
                delay = min(delay * 2, 10.0)
        if await self._gone_by(job_id, deadline):
            return True
        self.log.warning(
            "Session job %s of %s is still in the queue %.0f s after scancel", job_id, self._log_name, timeout
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

    async def _wait_until_answering(self) -> int:
        """Wait until the server on the reported port proves it is the session's (spawner/hub/session/readiness.py)."""
        port = self.port  # the port proven is the port routed (returned to start())
        base = urlparse(self.server.base_url if self.server else self.user.url).path

        def slow() -> None:
            self.log.warning(
                "Session job %s of %s: nothing that proves to be the session answers on %s:%s yet",
                self.job_id,
                self._log_name,
                self.ip,
                port,
            )

        await wait_for_proof(self.ip, port, base, self.api_token, self._status_during_start, slow)
        self.answering = True
        return port

    def server_exited(self) -> None:
        """The session's port keeper says the server has exited (spawner/hub/session/handlers.py).

        JupyterHub's stop then removes the route (first: no await comes
        before it) and polls: poll waits for the job's final state, which says
        why (COMPLETED: JupyterLab shut down; CANCELLED: scancel outside the
        portal; TIMEOUT ...).
        """
        self.stop_cause = "ended"

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

    async def poll(self):
        if not self.job_id:
            return 1
        if self.record.stopping:
            return 1  # asked to stop: not a session any more, though Slurm has not confirmed the job gone
        if not self.record.start_done and not (self._spawn_pending or self._stop_pending):
            # Saved by a start the hub did not live to finish (it restarted meanwhile):
            # nothing will connect to this job, so it must not keep its GPUs.
            self.log.warning(
                "Session job %s of %s was still starting when the hub restarted: cancelling it",
                self.job_id,
                self._log_name,
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
            self._log_name,
            f"{info.state}|{info.reason}|{info.node}" if info else "gone",
        )
        now = datetime.now()
        self.record.last_end = ended_words(self.job_id, self.job_info, self.record.limit, now, now)
        self.remember_session(self.record.last_end, now)
        self.gone_confirmed = True  # Slurm said so: a final state, or absent from a listing that succeeded
        self.clear_state()
        return 1

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
        self.log.info("Stopping session job %s of %s", job_id, self._log_name)
        if await self._end_job(job_id, timeout=self.stop_timeout):
            self.gone_confirmed = True
        self.stop_cause = ""

    def _remember_stop(self, job_id: str, now: datetime) -> None:
        """The history entry of a session being stopped, with why (and the idle cullers' metrics)."""
        left = hours_left(self.job_info.end if self.job_info else "", now)
        if self.stop_cause == "idle":
            self.record.last_end = idle_words(
                self.orm_spawner.last_activity if self.orm_spawner is not None else None, now, datetime.utcnow()
            )
            self.log.info("Session job %s of %s stopped for being idle", job_id, self._log_name)
            resources = self.current_resources()
            CULLED.labels(resources.partition if resources else "").inc()
            CULLED_GPU_HOURS.labels(resources.partition if resources else "").inc(
                left * (resources.gpus if resources else 0)
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
        """Add the session that just ended to the home page's list: the user's, in the unnamed session's record
        (saved with the state), so it outlives a named session that is removed.  With it what the session used
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
        given = allocation_of(resources)
        entry["usage"] = usage = session_usage(self.record.usage, given)
        self.record.usage = {}  # this session's: the next session of the record starts without it
        record = self.owner_record()
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
        if record is not self.record:
            self.user.spawners[""].save_state()

    def session_idle_timeout(self) -> int:
        """Seconds without use after which an idle culler may stop this session (0 = never); after a hub
        restart worked out again from the saved options and the account's groups."""
        if self.idle_timeout or not self.job_id:
            return self.idle_timeout
        resources = self.current_resources()
        if resources is None:
            return 0
        try:
            groups = self.unix_account().groups
        except SessionRefused:
            return 0
        self.idle_timeout = timeout_for(resources.partition, groups, self.settings.sessions)
        return self.idle_timeout

    def current_resources(self) -> Resources | None:
        """The session's resources; after a hub restart, from the saved options (JupyterHub keeps them)."""
        if self.resources is None and self.user_options:
            try:
                self.resources = resources_for(
                    parse_options(self.user_options, self.settings.slurm), self.settings.slurm
                )
            except OptionsError:
                return None
        return self.resources

    # --- progress --------------------------------------------------------------
    def progress_message(self) -> str:
        return self.progress_event()["message"]

    def progress_event(self) -> dict:
        """Where the start is, in Slurm's words, with a rough percentage for the page's bar."""
        partition = self.request.partition if self.request else "the cluster"
        return start_progress(self.job_id, self.job_info, partition, self.port, self.answering, self.queue_place)

    async def update_queue_place(self) -> None:
        """The job's place among its partition's pending jobs (a shared, cached squeue)."""
        if not (self.job_id and self.job_info and self.job_info.pending and self.request):
            self.queue_place = None
            return
        try:
            order = await services_for(self.config_file).queue_order(self.request.partition)
        except SlurmError:
            return  # keep the last place; the line says what Slurm said last
        self.queue_place = place_in_queue(order, self.job_id)

    async def progress(self):
        last = None
        ticks = 0
        while True:
            if ticks % 10 == 0:  # every 5 s; the answer itself is shared and cached
                await self.update_queue_place()
            ticks += 1
            event = self.progress_event()
            if event != last:
                yield event
                last = event
            await asyncio.sleep(0.5)

"""A session's job: the unix account it runs as, its environment, and its sbatch.

Mixed into SlurmGPUSpawner (spawner/hub/session/spawner.py).  The arguments
and the script are pure builders (spawner/hub/request/jobspec.py); sbatch runs
as the user through the shared Slurm client, never a shell.
"""

from __future__ import annotations

import asyncio
import os
import pwd
import shlex
import time
from datetime import datetime

from portal.settings.environment import reserved
from portal.settings.kinds import is_env_name

from ...contract import SESSION_VAR
from ..base.logname import log_name
from ..base.metrics import count_user
from ..request.accounts import AccountRefused, UnixAccount, lookup, refusal
from ..request.jobrequest import sbatch_argv
from ..request.jobspec import ACCOUNT_VARIABLES, HUB_VARIABLES, Account, job_script, session_job, site_lines
from ..request.refusal import SessionRefused
from ..request.resources import duration_words
from ..request.sessionlimits import user_sessions
from ..request.specbuilder import build_session_spec
from ..slurm.client import SlurmError, SlurmUnavailable
from ..slurm.held import start_comment
from .idle import join_idle_groups, timeout_for
from .userrecord import save_user_record, user_record

_ORPHANS: set[asyncio.Task] = set()  # scancels of jobs whose start was cancelled while sbatch ran


class SubmitMixin:
    """The account the job runs as, what it gets, and its submission."""

    # batchspawner's shell path is never used
    async def run_command(self, cmd, input=None, env=None):
        raise NotImplementedError("SlurmGPUSpawner runs Slurm through spawner.hub.slurm.client, never a shell")

    # The unix account lookups, seams tests replace (no test hook in this code).
    getpwnam = staticmethod(pwd.getpwnam)
    getgrouplist = staticmethod(os.getgrouplist)

    def unix_account(self) -> UnixAccount:
        """The account the job runs as; HTTP 403 for root, system accounts and anyone else refused."""
        try:
            return lookup(self.user.name, self.settings.slurm, self.getpwnam, self.getgrouplist)
        except AccountRefused as e:
            self.log.warning("Session of %s refused: %s", log_name(self), e)
            raise SessionRefused(str(e), 403) from None

    async def check_directory_account(self, account: UnixAccount) -> None:
        """With auth_state, the directory's uidNumber must be the unix account's uid (HTTP 403 otherwise)."""
        auth_state = await self.user.get_auth_state() or {}
        uid_number = auth_state.get("uidNumber")
        why = refusal(account, self.settings.slurm, uid_number if isinstance(uid_number, int) else None)
        if why:
            self.log.warning("Session of %s refused: %s", log_name(self), why)
            raise SessionRefused(why, 403)

    async def sbatch_or_cancel(self, username: str, argv: list[str], script: str, env: dict[str, str]) -> str:
        """The job id of the session's sbatch.  A start cancelled while sbatch runs (the user pressed Stop a moment
        after Start) lets sbatch finish and cancels the job it made at once: cancelled with it, sbatch's answer was
        lost, and the job held its GPUs until the reconciler's second check (CI: still there 20 s after the
        stop)."""
        # Start, Stop, Start... in a loop: at most one sbatch more than the sessions the user may start at once
        if self.slurm_client.submitting.get(username, 0) > self.settings.sessions.max_per_user:
            raise RuntimeError(
                "Your earlier starts are still being submitted to Slurm, which is slow to answer now; "
                "wait a minute, then start again."
            )
        submitting = asyncio.ensure_future(self.slurm_client.submit_as(username, argv, script, env))
        try:
            return await asyncio.shield(submitting)
        except asyncio.CancelledError:
            submitting.add_done_callback(lambda done: self._cancel_orphan(username, done))
            raise

    def _cancel_orphan(self, username: str, done: asyncio.Future) -> None:
        if done.cancelled() or done.exception() is not None:  # a job sbatch made anyway is the reconciler's
            self.log.warning(
                "The sbatch of %s's cancelled start gave no job id; a job it made is the reconciler's", log_name(self)
            )
            return
        job_id = done.result()
        self.log.info(
            "Session job %s of %s: its start was cancelled while sbatch ran; cancelling it", job_id, log_name(self)
        )

        async def cancel() -> None:
            try:
                await self.slurm_client.cancel(username, job_id)
            except Exception:  # the reconciler cancels it at its next two checks (the job's name is the portal's)
                self.log.exception("Cancelling job %s of %s", job_id, log_name(self))

        task = asyncio.ensure_future(cancel())
        _ORPHANS.add(task)  # held until done: the loop keeps weak references only
        task.add_done_callback(_ORPHANS.discard)

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
        return build_session_spec(
            self.settings, self.idle_timeout, self.resources.partition, self.request.continue_from
        ).to_json()

    def site_variables(self) -> dict[str, str]:
        """c.Spawner.environment (a site's own hub config), honoured: what the job script exports.  A name the job
        gets through sudo (JUPYTERHUB_*, HOME, ...) is JupyterHub's to resolve, as in any hub (job_environment); a
        name the portal or Slurm sets in the job, or no variable's name, is left out, with words in the log."""
        given = {k: str(v) for k, v in self.get_env().items() if k in self.environment}
        through_sudo = set(HUB_VARIABLES) | set(ACCOUNT_VARIABLES)
        kept = {
            k: v
            for k, v in given.items()
            if k not in through_sudo and is_env_name(k) and not reserved(k) and "\x00" not in v
        }
        for name in sorted(set(given) - set(kept) - through_sudo):
            why = (
                "it is no variable's name (letters, digits, _)"
                if not is_env_name(name)
                else "the portal's sessions take only the hub's own JupyterHub variables"
                if name.startswith(("JUPYTERHUB_", "JPY_"))
                else "the portal or Slurm sets it in the job"
            )
            self.log.error(
                "c.Spawner.environment's %r is not set in %s's session: %s. Remove it from the hub's config.",
                name[:100],
                log_name(self),
                why,
            )
        return kept

    def job_environment(self) -> dict[str, str]:
        """What the job gets: the hub's variables (API token included), the account's basics, the session spec."""
        env = {k: v for k, v in self.get_env().items() if k in HUB_VARIABLES or k in ACCOUNT_VARIABLES}
        env[SESSION_VAR] = self.session_spec()
        # how often the session tells the hub when it was last used (the idle cullers read it)
        env["JUPYTERHUB_ACTIVITY_INTERVAL"] = str(self.settings.sessions.activity_seconds)
        return env

    async def submit_batch_script(self) -> str:
        if self.resources is None:  # options not applied yet (e.g. a direct start)
            await self.apply_options_and_claim(self.user_options)
        unix = self.unix_account()  # one lookup for the checks and the job
        await self.check_directory_account(unix)
        account = Account(name=unix.name, home=unix.home)
        self.idle_timeout = timeout_for(self.resources.partition, unix.groups, self.settings.sessions)
        others = [s for s in user_sessions(self.user) if s is not self and s.job_id]
        join_idle_groups(self.user, [self.idle_timeout, *(s.session_idle_timeout() for s in others)])
        env = self.job_environment()
        names = sorted(env)
        argv = sbatch_argv(
            self.settings.slurm,
            session_job(
                self.settings.slurm,
                self.resources,
                account,
                names,
                self.settings.sessions.save_minutes,
                comment=start_comment(self.start_tag) if self.start_tag else "",
            ),
        )
        site = site_lines(self.settings.environment, self.site_variables())
        script = job_script(self.settings.slurm, account, self.job_command(), site)
        # sudo needs a PATH of its own; everything else reaches it only as named variables
        call_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **env}
        self.log.info("Submitting session of %s (%s): %s", log_name(self), self.resources.summary(), shlex.join(argv))
        try:
            self.job_id = await self.sbatch_or_cancel(account.name, argv, script, call_env)
        except SlurmUnavailable as e:
            self.log.error("sbatch for %s: %s", log_name(self), e)
            raise RuntimeError(
                "The cluster's scheduler (Slurm) is not answering, so no session was started. "
                "Try again in a few minutes; if this persists, tell the cluster admins."
            ) from None
        except SlurmError as e:
            self.log.error("sbatch for %s refused: %s", log_name(self), e)
            raise RuntimeError(f"Slurm refused the session: {e.stderr or e}") from None
        self.submit_began = time.monotonic()  # the job exists: a listing begun from now on shows it until it ends
        self.record.minutes = self.resources.minutes
        self.record.limit = duration_words(self.record.minutes)
        self.record.submitted = datetime.now().isoformat(timespec="minutes")
        self.record.started = ""  # set when the hub sees it run
        count_user(self.user.name)  # the user's GPU-hours series, at 0 until the session ends
        self.record.usage = {}  # a new job: nothing of an earlier one's tally
        self.save_state()  # now: a hub that dies while the job waits or starts still knows it
        self.log.info("Session job %s submitted for %s", self.job_id, log_name(self))
        if user_record(self).continuations.pop(self.name, None):  # its job loads them: no later start does
            save_user_record(self)
        return self.job_id

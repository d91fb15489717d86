"""A session's options and the admin's limits: what the user asked for, checked before anything is submitted.

Mixed into SlurmGPUSpawner (spawner/hub/session/spawner.py).  The options are
parsed and validated against the admin config (spawner/hub/request/), and a
start counts against the user's limits from the moment it passes them.
"""

from __future__ import annotations

import secrets
from typing import Any

from ..base.logname import log_name
from ..request.options import AccountFacts, OptionsError, options_from_form, parse_options
from ..request.refusal import SessionRefused
from ..request.resources import Resources, resources_for
from ..request.sessionlimits import Held, name_problem, room_problem, untracked_jobs, user_sessions
from ..slurm.client import SlurmError
from ..slurm.clusterinfo import partition_gpu_types
from ..slurm.held import HeldJob, start_comment
from ..slurm.services import services_for
from .idle import timeout_for


class LinkSpawnRefused(ValueError):
    """Options arrived in a GET URL; only the form's POST and the REST API start sessions."""


class LimitsMixin:
    """The user's options, validated and claimed against the admin's limits."""

    def options_from_form(self, formdata: dict[str, list[str]]) -> dict[str, Any]:
        return options_from_form(formdata)

    def options_from_query(self, query_data: dict[str, list[str]]) -> dict[str, Any]:
        """A link (GET /hub/spawn?opt-gpus=4) never starts a job: a page of anyone's could make it.

        Raising makes JupyterHub show the form instead, with this message.
        """
        self.log.warning("Refused a start from a link for %s (options in the URL)", log_name(self))
        raise LinkSpawnRefused("A link cannot start a session: choose the resources below and press Start.")

    async def apply_options_and_claim(self, user_options: Any) -> None:
        """JupyterHub's apply_user_options hook: the options validated, the limits checked and claimed against the
        sessions the hub tracks (no Slurm call for a refusal, and starts racing this one count it from here on),
        then checked once more counting what Slurm itself holds for the user (the job of a start whose sbatch
        timed out) and the GPUs of their runs and sweeps: a start can only lose its claim there."""
        self.apply_session_options(user_options, *(await self.slurm_facts(user_options)))
        try:
            in_slurm = await self.held_in_slurm()
            runs = await self.runs_listing()
            why = self.room_problem(in_slurm, runs)
            if why and runs is not None:  # judged again on a fresh squeue: a run ended a moment ago holds nothing
                why = self.room_problem(in_slurm, await self.runs_listing(fresh=True))
            if why:
                self.log.warning("Session %s refused: %s", log_name(self), why)
                raise SessionRefused(why)
        except BaseException:  # refused, Slurm silent, or the start cancelled meanwhile: the claim goes with it
            self.claimed, self.start_tag = False, ""
            raise

    async def runs_listing(self, fresh: bool = False) -> tuple[list, list] | None:
        """The user's jobs in the shared listing (`fresh`: squeue asked now, waited for a moment), when the GPU cap
        has GPUs of this start to count."""
        if not (self.settings.sessions.max_gpus_per_user and self.resources.gpus):
            return None
        listed, accounted, _ = await services_for(self.config_file).listing.of_user(self.user.name, fresh=fresh)
        return listed, accounted

    async def slurm_facts(
        self, user_options: Any
    ) -> tuple[dict[str, set[str]] | None, tuple[str, ...] | None, AccountFacts | None]:
        """What Slurm knows of what the options name, from the hub's shared answers: each partition's GPU types
        when they name a type, the user's accounts when they name an account, what their associations allow (QOS,
        allocations).  None for what they do not name, or when Slurm did not answer: the name's form is checked
        then, and sbatch refuses what Slurm does not allow."""

        def named(key: str) -> bool:
            return isinstance(user_options, dict) and user_options.get(key) not in (None, "", [""])

        services = services_for(self.config_file)
        types = accounts = facts = None
        try:
            if named("gpu_type"):
                types = partition_gpu_types(await services.cluster.nodes())
            # asked when the options name an account or QOS; else the form's fresh answer if any (an allocation
            # used up is then refused here, or in Slurm's words once it queues the job)
            known = await services.accounts() if named("account") or named("qos") else services.accounts_cached()
            if known is not None:
                accounts = known.of(self.user.name) if named("account") else None
                facts = known.facts(self.user.name)
        except SlurmError as e:
            self.log.warning("Options of %s's start not checked against Slurm's: %s", log_name(self), e)
        return types, accounts, facts

    def apply_session_options(
        self,
        user_options: Any,
        gpu_types: dict[str, set[str]] | None = None,
        accounts: tuple[str, ...] | None = None,
        facts: AccountFacts | None = None,
    ) -> None:
        """Validate the user's options against the admin config (and Slurm's GPU types and the user's accounts and
        QOS, when known) and claim room under the limits (HTTP 400 if refused), counting the sessions the hub
        tracks only."""
        try:
            self.request = parse_options(user_options, self.settings.slurm, gpu_types, accounts=accounts, facts=facts)
        except OptionsError as e:
            self.log.warning("Refused session options for %s: %s", log_name(self), e)
            raise SessionRefused(str(e)) from None
        self.unix_account()  # refused accounts learn it now, before the spawn is accepted
        self.resources = resources_for(self.request, self.settings.slurm)
        self.claim_room()

    async def held_in_slurm(self) -> dict[str, HeldJob]:
        """The user's jobs of the portal's name that Slurm holds now; a start is refused when Slurm cannot say
        (its sbatch would likely fail too, and a job Slurm holds unseen would pass the limits)."""
        try:
            return await self.slurm_client.held_jobs(self.user.name)
        except SlurmError as e:
            self.log.warning("Session %s refused: Slurm did not list the user's session jobs (%s)", log_name(self), e)
            stopping = self.stopping_message()  # this session's previous job, not yet confirmed gone, says more
            if stopping:
                raise SessionRefused(stopping, 409) from None
            raise SessionRefused(
                "The cluster's scheduler (Slurm) is not answering, so no session was started. Try again in a minute.",
                503,
            ) from None

    def claim_room(self) -> None:
        """Check the admin's limits against the sessions the hub tracks and claim this start's share of them, in
        one step (no await between them): a start of the same user that checks next, while this one still waits
        for its sbatch, counts this one (five starts at once: one passes).  The claim carries the comment its
        job will have."""
        self.claimed = False
        why = (name_problem(self.name) if self.name else "") or self.room_problem({})
        if why:
            self.log.warning("Session %s refused: %s", log_name(self), why)
            raise SessionRefused(why)
        self.claimed = True
        self.start_tag = secrets.token_hex(8)

    def room_problem(self, in_slurm: dict[str, HeldJob], runs: tuple[list, list] | None = None) -> str:
        """Why this start does not fit the admin's limits beside what the user holds ("" when it does): their
        other sessions, and once `runs` (the user's jobs in the shared listing) is known, their runs and sweeps
        and those on their way to sbatch (spawner/hub/request/gpuclaims.py)."""
        sessions = self.settings.sessions
        held = self.held_beside(in_slurm)
        if runs is not None:
            held += services_for(self.config_file).gpu_claims.held_in_runs(self.user, runs)
        return room_problem(held, self.resources.gpus, sessions.max_per_user, sessions.max_gpus_per_user)

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
        """Whether the hub's latest shared listing shows this session's job out of the queue (Slurm not asked).

        Absent from a listing whose query began before the job's sbatch answered is not gone: while slurmctld is down the
        latest listing that succeeded can be older than the job (the CI's soak saw such a job, uncounted, take a
        user past the session limit)."""
        watcher = self.slurm_client.watcher
        began = watcher.listing_began()
        if began is None:
            return False
        info = watcher.last_known(self.job_id)
        if info is None:  # unlisted; not gone where Slurm hides other users' jobs from the hub (PrivateData)
            return began > self.submit_began and not self.slurm_client.visibility.hides_jobs_now
        return not info.in_queue

    def held_beside(self, in_slurm: dict[str, HeldJob] | None = None) -> list[Held]:
        """The user's other sessions that hold or wait for resources (what the admin's limits count), and the
        jobs of the portal's name that Slurm holds for the user (`in_slurm`) but no session owns.  A session
        whose job Slurm holds counts, however the hub's own view of it reads, with the GPUs Slurm holds for it
        if they are more than its options say (options edited while it stopped, a restart asking for fewer)."""
        held, tracked, in_flight = [], {self.job_id}, []
        in_slurm = in_slurm or {}
        for other in user_sessions(self.user):
            tracked.add(other.job_id)
            if other is self or not (other.counts_against_limits() or other.job_id in in_slurm):
                continue
            resources = other.current_resources()
            gpus = resources.gpus if resources else 0
            in_job = in_slurm.get(other.job_id)
            held.append(Held(other.name, max(gpus, in_job.gpus) if in_job else gpus))
            if not other.job_id and other.start_tag:  # its sbatch has not answered: its job may be in Slurm's list
                in_flight.append((start_comment(other.start_tag), gpus))
        return held + untracked_jobs(in_slurm, tracked, in_flight)

    def current_resources(self) -> Resources | None:
        """The session's resources; after a hub restart, from the saved options (JupyterHub keeps them)."""
        if self.resources is None and self.user_options:
            try:
                self.resources = resources_for(
                    parse_options(self.user_options, self.settings.slurm, saved=True), self.settings.slurm
                )
            except OptionsError:
                return None
        return self.resources

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

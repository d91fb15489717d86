"""A session and the admin's limits: a start counts against the user's limits from the moment it passes them.

Mixed into SlurmGPUSpawner (spawner/hub/session/spawner.py).  A start that
passed its options' checks (options.py) claims its room among the sessions the
hub tracks at once, then is judged again beside what Slurm holds for the user
and the GPUs of their runs and sweeps (the rules: spawner/hub/request/
sessionlimits.py, gpuclaims.py).
"""

from __future__ import annotations

import secrets

from ..base.logname import log_name
from ..request.refusal import SessionRefused
from ..request.sessionlimits import Held, name_problem, room_problem, untracked_jobs, user_sessions
from ..slurm.client import SlurmError
from ..slurm.held import HeldJob, start_comment
from ..slurm.services import services_for


class LimitsMixin:
    """The session's room under the admin's limits: claimed, held, and judged beside what the user holds."""

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
        return room_problem(held, self.resources.gpu_share, sessions.max_per_user, sessions.max_gpus_per_user)

    async def runs_listing(self, fresh: bool = False) -> tuple[list, list] | None:
        """The user's jobs in the shared listing (`fresh`: squeue asked now, waited for a moment), when the GPU cap
        has GPUs of this start to count."""
        if not (self.settings.sessions.max_gpus_per_user and self.resources.gpu_share):
            return None
        listed, accounted, _ = await services_for(self.config_file).listing.of_user(self.user.name, fresh=fresh)
        return listed, accounted

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
        per_gpu = self.settings.slurm.shards.per_gpu  # a share of a GPU held counts as its fraction
        for other in user_sessions(self.user):
            tracked.add(other.job_id)
            if other is self or not (other.counts_against_limits() or other.job_id in in_slurm):
                continue
            resources = other.current_resources()
            gpus = resources.gpus if resources else 0
            in_job = in_slurm.get(other.job_id)
            share = resources.gpu_share if resources else 0  # a share of a GPU counts as its fraction
            held.append(Held(other.name, max(share, in_job.gpu_share(per_gpu)) if in_job else share))
            if not other.job_id and other.start_tag:  # its sbatch has not answered: its job may be in Slurm's list
                in_flight.append((start_comment(other.start_tag), gpus, resources.shards if resources else 0))
        return held + untracked_jobs(in_slurm, tracked, in_flight, per_gpu)

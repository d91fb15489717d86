"""A session's options and the admin's limits: what the user asked for, checked before anything is submitted.

Mixed into SlurmGPUSpawner (spawner/hub/session/spawner.py).  The options are
parsed and validated against the admin config (spawner/hub/request/), and a
start counts against the user's limits from the moment it passes them.
"""

from __future__ import annotations

from typing import Any

from ..base.logname import log_name
from ..request.options import OptionsError, options_from_form, parse_options
from ..request.refusal import SessionRefused
from ..request.resources import Resources, resources_for
from ..request.sessionlimits import Held, name_problem, room_problem, user_sessions
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

    def apply_session_options(self, user_options: Any) -> None:
        """Validate the user's options against the admin config (HTTP 400 if refused)."""
        try:
            self.request = parse_options(user_options, self.settings.slurm)
        except OptionsError as e:
            self.log.warning("Refused session options for %s: %s", log_name(self), e)
            raise SessionRefused(str(e)) from None
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
            self.log.warning("Session %s refused: %s", log_name(self), why)
            raise SessionRefused(why)
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

"""A session's options: what the user asked for, checked before anything is submitted.

Mixed into SlurmGPUSpawner (spawner/hub/session/spawner.py).  JupyterHub's
hooks hand the form's or the REST API's options here; they are parsed and
validated against the admin config and what Slurm says of GPU types and
accounts (spawner/hub/request/), become the session's request and resources,
and then claim room under the admin's limits (limits.py).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..base.logname import log_name
from ..request.options import OptionsError, SlurmFacts, options_from_form, parse_options, parse_with
from ..request.refusal import SessionRefused
from ..request.resources import Resources, resources_for
from ..slurm.client import SlurmError
from ..slurm.clusterinfo import nodes_facts
from ..slurm.services import services_for
from .idle import timeout_for
from .userrecord import user_record


class LinkSpawnRefused(ValueError):
    """Options arrived in a GET URL; only the form's POST and the REST API start sessions."""


class OptionsMixin:
    """The user's options, validated into the session's request, then claimed against the admin's limits."""

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
        known = await self.slurm_facts(user_options)  # Slurm's GPU types and the user's accounts, when it says
        self.apply_session_options(user_options, known)
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

    async def slurm_facts(self, user_options: Any) -> SlurmFacts:
        """What Slurm knows of what the options name, from the hub's shared answers: each partition's GPU types
        (and the most of each on one node) when they name a type, its shards when they ask for shares of a GPU, the
        user's accounts when they name an account, what their associations allow (QOS, allocations).  None for
        what they do not name, or when Slurm did not answer: the name's form is checked then, and sbatch refuses
        what Slurm does not allow."""

        def named(key: str) -> bool:
            return isinstance(user_options, dict) and user_options.get(key) not in (None, "", [""])

        services = services_for(self.config_file)
        found: dict[str, Any] = {}
        try:
            if named("gpu_type") or (named("shards") and user_options["shards"] not in ("0", 0, ["0"])):
                nodes = await services.cluster.nodes()
                found.update(nodes_facts(nodes))
            # asked when the options name an account or QOS; else the form's fresh answer if any (an allocation
            # used up is then refused here, or in Slurm's words once it queues the job)
            known = await services.accounts() if named("account") or named("qos") else services.accounts_cached()
            if known is not None:
                found.update(accounts=known.of(self.user.name) if named("account") else None)
                found.update(facts=known.facts(self.user.name))
        except SlurmError as e:
            self.log.warning("Options of %s's start not checked against Slurm's: %s", log_name(self), e)
        return SlurmFacts(**found)

    def apply_session_options(self, user_options: Any, known: SlurmFacts | None = None) -> None:
        """Validate the user's options against the admin config (and what Slurm says of the names they use:
        `known`) and claim room under the limits (HTTP 400 if refused), counting the sessions the hub tracks
        only."""
        try:
            self.request = parse_with(user_options, self.settings.slurm, known or SlurmFacts())
        except OptionsError as e:
            self.log.warning("Refused session options for %s: %s", log_name(self), e)
            raise SessionRefused(str(e)) from None
        self.unix_account()  # refused accounts learn it now, before the spawn is accepted
        self.resources = resources_for(self.request, self.settings.slurm)
        waiting = user_record(self).continuations.get(self.name, "")
        if waiting and not self.request.continue_from:  # a continuation whose new job did not start: this one loads
            self.request = replace(self.request, continue_from=waiting)
        if not self.request.continue_from:
            self.continued = ""  # a start afresh: no longer the continuation of an earlier job
        self.claim_room()

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

"""The portal's spawner: one JupyterLab session = one Slurm job on one GPU node.

Built on batchspawner's SlurmSpawner, keeping its job-state model (JobStatus),
state persistence (job_id, job_status) and the hub-facing lifecycle.  Replaced,
because batchspawner does them unsafely: every command (it joins shell strings
and runs them in a shell), the job script (two template languages in a code
string, `--get-user-env`), option handling (it passes user_options straight
into the script) and the port callback (see spawner/hub/session/handlers.py).

The class holds the traits, the configuration and the progress messages; its
steps are mixins beside it, one module each: options.py (the user's options
checked into the session's request), limits.py (its room under the admin's
limits), submit.py (the account and the sbatch), start.py (the
start sequence), stop.py (stop, poll and the ended session's history) and
state.py (the saved record and Slurm's word on the job).
"""

from __future__ import annotations

import asyncio

from batchspawner import SlurmSpawner
from traitlets import Float, Unicode, default, observe

from portal.config import config_path
from portal.settings import PortalSettings

from ..request.form import render_options_form
from ..request.options import SessionRequest
from ..request.refusal import quiet_refusals
from ..request.resources import Resources
from ..slurm.client import JobInfo, SlurmClient, SlurmError
from ..slurm.services import HubServices, services_for
from .limits import LimitsMixin
from .options import OptionsMixin
from .progress import place_in_queue, start_progress
from .record import SessionRecord
from .start import StartMixin
from .state import StateMixin
from .stop import StopMixin
from .submit import SubmitMixin


class SlurmGPUSpawner(StartMixin, StopMixin, SubmitMixin, OptionsMixin, LimitsMixin, StateMixin, SlurmSpawner):
    """JupyterLab in a Slurm job: partition, GPUs and hours from the form or REST API."""

    token_delivery: asyncio.Task | None = None  # a new token on its way to the session (sharing/handover.py)
    continuing = False  # a continuation of this session is under way (spawner/hub/continuation/service.py)
    continued = ""  # what the continuation that started this session carried, in words (the same service)

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
        self.job_hidden = False  # the job is missing from a listing while Slurm hides other users' jobs from the hub
        self.idle_timeout = 0  # seconds without use before an idle culler stops this session; 0 = never
        self.stop_cause = (
            ""  # "idle": an idle culler asked (spawner/hub/session/handlers.py); "ended": the server exited
        )
        self.exited_in_start = False  # the session's port keeper said its server exited before the start was done
        self.queue_place: int | None = None  # a queued job's place in its partition's line
        # This start passed the admin's limits: it counts against them from that moment (before its job exists)
        # until its start ends, so that starts racing each other see it (see counts_against_limits).
        self.claimed = False
        self.start_tag = ""  # the claim's own tag, its job's comment (spawner/hub/slurm/held.py)
        self._submitted_at = 0.0  # the event loop's time of the submit
        # time.monotonic() when its sbatch answered: a shared listing begun before then may lack the job without its
        # being gone (0 for a job this spawner did not submit, loaded from the saved state: a job of an earlier hub
        # process, or of this one before JupyterHub made the spawner anew; the fresh squeue of a start counts it)
        self.submit_began = 0.0

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

    @observe("api_token")
    def _remember_token(self, change) -> None:
        """The record keeps what a restarted hub needs of the session's token: its digest and its row
        (JupyterHub gives a restarted hub no token; spawner/hub/session/token.py)."""
        if change.new and hasattr(self, "record"):  # "": JupyterHub's clear_state; no record: given to __init__
            self._remember(change.new)

    # --- configuration -------------------------------------------------------
    @property
    def services(self) -> HubServices:
        """The hub's shared services of this session's admin file (spawner/hub/slurm/services.py)."""
        return services_for(self.config_file)

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
        return lambda spawner: render_options_form(spawner.settings.slurm, spawner.hub.base_url)

    @default("apply_user_options")
    def _default_apply_user_options(self):
        return lambda spawner, user_options: spawner.apply_options_and_claim(user_options)

    def session_url(self) -> str:
        """This session's JupyterLab address (a full URL with one origin per user, hub.subdomain_host)."""
        return self.user.server_url(self.name)

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

"""What the hub shares between all sessions of one admin config: Slurm client, listings, reconciler.

Runs in the hub.  One `HubServices` per admin YAML file: the spawners, the
reconciler and the REST handlers (spawner/hub/clusterapi.py) all use it, so
every user shares the same cached Slurm answers.
"""

from __future__ import annotations

import asyncio
import dataclasses
import pwd

from portal.config import config_path, load_config
from portal.settings import PortalSettings, is_username
from portal.throttle import LoginThrottle

from ..slurmvocab import NodeState
from .clusterinfo import ClusterInfo, SharedAnswers, availability, starts_now
from .joblisting import JobListing
from .jobspec import Account, job_script, sbatch_argv
from .options import OptionsError, parse_options
from .reconciler import Reconciler, hub_handed_over_jobs, hub_owned_jobs
from .resources import resources_for
from .slurm import SlurmClient

ESTIMATE_STEP_MINUTES = 15  # the form offers hours in quarters: estimates are asked for that shape
NEW_ESTIMATES_PER_MINUTE = 10  # per user: questions Slurm really gets (shared, cached answers are free)


class TooManyEstimates(Exception):
    """A user asked for more new estimates than Slurm should run for one person."""


def estimate_minutes(minutes: int) -> int:
    """A session length rounded up to the form's quarter hour: one estimate (and one cache entry) per step,
    whatever minute a script asks for."""
    return -(-minutes // ESTIMATE_STEP_MINUTES) * ESTIMATE_STEP_MINUTES


class HubServices:
    def __init__(self, path: str):
        self.path = path
        self.settings: PortalSettings = load_config(path)
        slurm = self.settings.slurm
        self.client = SlurmClient(slurm)
        self.cluster = ClusterInfo(self.client, slurm.cluster_info_seconds)
        self.estimates = SharedAnswers(slurm.cluster_info_seconds)  # per session shape
        self.estimate_asks = LoginThrottle(NEW_ESTIMATES_PER_MINUTE, 60, 0)  # counts only: per user, per minute
        self._orders = SharedAnswers(slurm.cluster_info_seconds)  # per partition
        self.listing = JobListing(self.client, self.settings.jobs)  # every user's jobs: one squeue, one sacct
        self.reconciler: Reconciler | None = None
        self._reconciling: asyncio.Task | None = None

    def start_reconciler(self, loop: asyncio.AbstractEventLoop) -> Reconciler:
        if self.reconciler is None:
            self.reconciler = Reconciler(
                self.client, hub_owned_jobs, self.settings.slurm.reconcile_seconds, handed_over=hub_handed_over_jobs
            )
            self._reconciling = loop.create_task(self.reconciler.run_forever())
        return self.reconciler

    async def queue_order(self, partition: str) -> list[str]:
        """The partition's pending jobs in Slurm's priority order, shared for cluster_info_seconds."""
        return await self._orders.get(partition, lambda: self.client.queue_order(partition))

    def partitions(self, nodes: list[NodeState]) -> list[dict]:
        slurm = self.settings.slurm
        free = availability(nodes, slurm)
        return [
            {
                **free[p.name].to_dict(),
                "display_name": p.display_name or p.name,
                "max_gpus": p.max_gpus,
                "starts_now": {str(g): starts_now(nodes, p.name, g, slurm) for g in range(p.max_gpus + 1)},
            }
            for p in slurm.partitions
        ]

    async def estimate(self, username: str, query: dict) -> dict:
        """Whether a session of this shape starts now, else Slurm's expected start (asked as `username`)."""
        slurm = self.settings.slurm
        try:
            request = parse_options(query, slurm)
        except OptionsError as e:
            raise ValueError(str(e)) from None
        res = resources_for(request, slurm)
        if starts_now(await self.cluster.nodes(), request.partition, request.gpus, slurm):
            return {"starts_now": True, "start": None, "message": f"{res.summary()}: can start now."}
        try:
            home = pwd.getpwnam(username).pw_dir if is_username(username) else None
        except KeyError:
            home = None
        if home is None:  # e.g. a service's token: estimates are asked as a cluster account
            raise ValueError(f"{username!r} has no cluster account, so Slurm cannot estimate its start.")
        account = Account(name=username, home=home)
        shape = dataclasses.replace(res, minutes=estimate_minutes(res.minutes))
        argv = sbatch_argv(slurm, shape, account, [])
        script = job_script(slurm, account, ["/bin/true"])
        # cached per shape, whoever asks: one estimate serves every user looking at the same choice
        key = (request.partition, request.gpus, shape.minutes)
        if not self.estimates.fresh(key):  # a new question for Slurm: bounded per user
            if self.estimate_asks.failures(username) >= NEW_ESTIMATES_PER_MINUTE:
                raise TooManyEstimates(
                    f"Too many start estimates asked; try again in a minute "
                    f"(at most {NEW_ESTIMATES_PER_MINUTE} new ones a minute)."
                )
            self.estimate_asks.attempt([username])
        when = await self.estimates.get(key, lambda: self.client.expected_start(argv, script))
        if when is None:
            message = f"{res.summary()}: not free now, and Slurm gives no estimate of when it would start."
        else:
            message = f"{res.summary()}: not free now; Slurm expects it could start at {when.replace('T', ' ')}."
        return {"starts_now": False, "start": when, "message": message}


_services: dict[str, HubServices] = {}
_hub_path: list[str] = []  # the config the running hub was started with (spawner/hub/hubconfig.py)


def services_for(path: str) -> HubServices:
    path = str(path)
    if path not in _services:
        _services[path] = HubServices(path)
    return _services[path]


def start_in_hub(path: str) -> HubServices | None:
    """The hub's start: remember its config and start the reconciler on the running event loop.

    JupyterHub loads its config inside its event loop; without one (check-config) nothing starts.
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    _hub_path[:] = [str(path)]
    services = services_for(str(path))
    services.start_reconciler(loop)
    return services


def hub_services() -> HubServices:
    return services_for(_hub_path[0] if _hub_path else str(config_path()))

"""What the hub shares between all sessions of one admin config: the Slurm client and its shared answers.

Runs in the hub.  One `HubServices` per admin YAML file: the spawners, the
background loops (spawner/hub/wiring/lifecycle.py) and the REST handlers all use
it, so every user shares the same cached Slurm answers.  Handlers reach it
through tornado's settings (`Bounded.services`, spawner/hub/base/requestlimits.py),
spawners through their config file (`services_for`).  What a concept above this folder shares across the hub
(the usage listing, the rate limiters, the directory groups' members, the tasks kept until done) hangs here too,
made at first use (`shared`, `keep`): no concept keeps a registry of its own in a module.
"""

from __future__ import annotations

import asyncio
import dataclasses
import pwd
from collections.abc import Callable, Hashable
from typing import Any

from portal.config import loaded_config
from portal.settings import PortalSettings, is_username
from portal.throttle import LoginThrottle

from ...slurmvocab import NodeState
from ..request.gpuclaims import GpuClaims
from ..request.jobrequest import sbatch_argv
from ..request.jobspec import Account, job_script, session_job
from ..request.options import OptionsError, SlurmFacts, parse_options, parse_with
from ..request.resources import resources_for
from .associations import Accounts
from .client import SlurmClient
from .clusterinfo import (
    ClusterInfo,
    SharedAnswers,
    availability,
    nodes_facts,
    starts_now,
)
from .fileparse import FileParses
from .joblisting import JobListing

ESTIMATE_STEP_MINUTES = 15  # the form offers hours in quarters: estimates are asked for that shape
NEW_ESTIMATES_PER_MINUTE = 10  # per user: questions Slurm really gets (shared, cached answers are free)
ALL_NEW_ESTIMATES_PER_MINUTE = 120  # every user together: what the scheduler's will-run checks may cost


ALL_USERS = "*"  # the estimate counter's key for every user together (no username has a "*")


ORDER_WAIT = 0.5  # s a place in the line waits for a new squeue when an older order is at hand


class TooManyEstimates(Exception):
    """A user asked for more new estimates than Slurm should run for one person."""


def estimate_minutes(minutes: int) -> int:
    """A session length rounded up to the form's quarter hour: one estimate (and one cache entry) per step,
    whatever minute a script asks for."""
    return -(-minutes // ESTIMATE_STEP_MINUTES) * ESTIMATE_STEP_MINUTES


class HubServices:
    def __init__(self, path: str):
        self.path = path
        self.settings: PortalSettings = loaded_config(path)
        slurm = self.settings.slurm
        self.client = SlurmClient(slurm)
        self.cluster = ClusterInfo(self.client, slurm.cluster_info_seconds)
        self.estimates = SharedAnswers(slurm.cluster_info_seconds)  # per session shape
        # counts only, per minute: per user, and for everyone under ALL_USERS
        self.estimate_asks = LoginThrottle(ALL_NEW_ESTIMATES_PER_MINUTE, 60, 0)
        self._orders = SharedAnswers(slurm.cluster_info_seconds)  # per partition
        self._accounts = SharedAnswers(slurm.accounts_seconds)  # every user's Slurm accounts: one key
        self.listing = JobListing(self.client, self.settings.runs)  # every user's jobs: one squeue, one sacct
        self.file_parses = FileParses(slurm)  # users' notebooks read and parsed outside the hub, a few at once
        self.gpu_claims = GpuClaims()  # runs and sweeps on their way to sbatch, under sessions.max_gpus_per_user
        self._shared: dict[Hashable, Any] = {}  # the concepts' own shared objects (`shared`)
        self._kept: dict[asyncio.Task, Any] = {}  # tasks held until done (`keep`), each with what it serves

    def shared(self, key: Hashable, make: Callable[[], Any]) -> Any:
        """The hub's one object under `key`, made by `make` at first use: a concept above slurm/ keeps what every
        user shares here (its key names it: ("usage listing",), ("rate limiter", 60, 10))."""
        if key not in self._shared:
            self._shared[key] = make()
        return self._shared[key]

    def keep(self, task: asyncio.Task, serves: Any = None) -> asyncio.Task:
        """Hold `task` until it is done (the event loop keeps only weak references to tasks); `serves`: what it
        works for, as `kept` lists it."""
        self._kept[task] = serves
        task.add_done_callback(lambda done: self._kept.pop(done, None))
        return task

    def kept(self) -> list[Any]:
        """What the tasks held now serve (`keep`'s `serves`)."""
        return list(self._kept.values())

    def __copy__(self) -> HubServices:
        return self  # shared by design: JupyterHub's config copies tornado_settings, where the handlers find it

    def __deepcopy__(self, memo: dict) -> HubServices:
        return self

    async def accounts(self) -> Accounts:
        """Every user's Slurm accounts (sacctmgr), shared for slurm.accounts_seconds."""
        return await self._accounts.get("all", self.client.accounts)

    def accounts_cached(self) -> Accounts | None:
        """The latest answer of accounts() if fresh (the form keeps it so), else None: no Slurm call."""
        return self._accounts.cached("all")

    async def queue_order(self, partition: str, wait: float = ORDER_WAIT) -> list[str]:
        """The partition's pending jobs in Slurm's priority order, shared for cluster_info_seconds; while a new
        squeue is slow, the older order after `wait` (a page that shows a place in the line waited for it)."""
        return await self._orders.get(partition, lambda: self.client.queue_order(partition), wait=wait)

    def partitions(self, nodes: list[NodeState]) -> list[dict]:
        slurm = self.settings.slurm
        free = availability(nodes, slurm)
        return [
            {
                **free[p.name].to_dict(),
                "display_name": p.display_name or p.name,
                "max_gpus": p.max_gpus,
                "starts_now": {str(g): starts_now(nodes, p.name, g, slurm) for g in range(p.max_gpus + 1)},
                "starts_now_shards": {
                    str(k): starts_now(nodes, p.name, 0, slurm, shards=k)
                    for k in range(1, slurm.shards.per_gpu if free[p.name].shards_total else 0)
                },
            }
            for p in slurm.partitions
        ]

    async def estimate(self, username: str, query: dict) -> dict:
        """Whether a session of this shape starts now, else Slurm's expected start (asked as `username`)."""
        slurm = self.settings.slurm
        # the user's accounts as the form last read them (no sacctmgr call here): an account they are not in, a
        # QOS it does not allow, is refused before Slurm is asked; none at hand: sbatch --test-only refuses it
        known = self.accounts_cached()
        facts = known.facts(username) if known is not None else None
        accounts = known.of(username) if known is not None else None
        try:
            request = parse_options(query, slurm, accounts=accounts, facts=facts)  # even while Slurm is silent
            nodes = await self.cluster.nodes()
            if request.gpu_type or request.shards:
                request = parse_with(query, slurm, SlurmFacts(accounts=accounts, facts=facts, **nodes_facts(nodes)))
        except OptionsError as e:
            raise ValueError(str(e)) from None
        res = resources_for(request, slurm)
        if starts_now(nodes, request.partition, request.gpus, slurm, request.gpu_type, request.shards):
            return {"starts_now": True, "start": None, "message": f"{res.summary()}: can start now."}
        try:
            home = pwd.getpwnam(username).pw_dir if is_username(username) else None
        except KeyError:
            home = None
        if home is None:  # e.g. a service's token: estimates are asked as a cluster account
            raise ValueError(f"{username!r} has no cluster account, so Slurm cannot estimate its start.")
        account = Account(name=username, home=home)
        shape = dataclasses.replace(res, minutes=estimate_minutes(res.minutes))
        argv = sbatch_argv(slurm, session_job(slurm, shape, account, []))
        script = job_script(slurm, account, ["/bin/true"])
        # cached per shape, whoever asks: one estimate serves every user looking at the same choice (an account's
        # or a QOS's limits and priority change when the job may start, so each is a shape of its own)
        # the account charged, as far as the hub knows it (no account named: the admin's, else the user's default)
        charged = facts.charged(request.account, slurm) if facts is not None else request.account or slurm.account
        key = (
            request.partition,
            request.gpus,
            request.shards,
            request.gpu_type,
            shape.minutes,
            charged,
            request.qos or slurm.qos,
        )
        if not self.estimates.fresh(key):  # a new question for Slurm: bounded per user
            if self.estimate_asks.failures(username) >= NEW_ESTIMATES_PER_MINUTE:
                raise TooManyEstimates(
                    f"Too many start estimates asked; try again in a minute "
                    f"(at most {NEW_ESTIMATES_PER_MINUTE} new ones a minute)."
                )
            if self.estimate_asks.failures(ALL_USERS) >= ALL_NEW_ESTIMATES_PER_MINUTE:
                raise TooManyEstimates("The cluster is answering many start estimates; try again in a minute.")
            self.estimate_asks.attempt([username, ALL_USERS])
        when = await self.estimates.get(key, lambda: self.client.expected_start(argv, script))
        if when is None:
            message = f"{res.summary()}: not free now, and Slurm gives no estimate of when it would start."
        else:
            message = f"{res.summary()}: not free now; Slurm expects it could start at {when.replace('T', ' ')}."
        return {"starts_now": False, "start": when, "message": message}


_services: dict[str, HubServices] = {}


def services_for(path: str) -> HubServices:
    """The one `HubServices` of the admin file at `path` (the hub's config, its spawners and handlers share it)."""
    path = str(path)
    if path not in _services:
        _services[path] = HubServices(path)
    return _services[path]

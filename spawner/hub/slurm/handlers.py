"""The hub's REST API for what is free, readable by any logged-in user (scripts and the form use it).

    GET /hub/api/dsportal/partitions
        {"partitions": [{"partition", "gpus_free", "gpus_total", "largest_block", "nodes_up", "nodes",
                         "types": [{"gpu_type", "label", "gpus_free", "gpus_total", "largest_block"}],
                         "summary", "types_summary", "starts_now": {"0": true, "1": true, ...}}]}
    GET /hub/api/dsportal/estimate?partition=sxm2&gpus=2&hours=8[&gpu_type=a100]
        {"starts_now": false, "start": "2026-11-22T11:00:00" or null, "message": "..."}
    GET /hub/api/dsportal/alternatives?partition=sxm2&gpus=2&hours=8[&gpu_type=a100]
        {"alternatives": [{"options", "asked", "difference", "starts_now", "start", "message"}]}: what else fits
        the shape (other types, partitions, fewer hours), soonest first (spawner/hub/slurm/alternatives.py)
    GET /hub/api/dsportal/accounts
        {"accounts": ["vision", "nlp"], "default": "vision", "qos": [...], "allocations": {...}}: the Slurm
        accounts the user may charge

Both come from shared, cached Slurm answers (spawner/hub/slurm/clusterinfo.py).
"""

from __future__ import annotations

import asyncio
import json

from jupyterhub.apihandlers import APIHandler
from tornado import web

from ..base.requestlimits import Bounded
from .alternatives import alternatives
from .client import SlurmError
from .services import HubServices, TooManyEstimates

PARTITIONS_URL = "/api/dsportal/partitions"
ESTIMATE_URL = "/api/dsportal/estimate"
ALTERNATIVES_URL = "/api/dsportal/alternatives"
ACCOUNTS_URL = "/api/dsportal/accounts"
UNAVAILABLE = "The scheduler (Slurm) is not answering; what is free cannot be shown right now."


class _Base(Bounded, APIHandler):
    def check_user(self):
        # Not tornado's @web.authenticated: for a GET it redirects to the login page
        # (a 200 with HTML to a script); an API answers 403.
        if self.current_user is None:
            raise web.HTTPError(403, "Log in to see what is free on the cluster.")


async def what_is_free(services: HubServices, wait: float | None = None) -> list[dict]:
    """What is free per partition, from the shared sinfo of the hub's `services`.  SlurmError if Slurm did not answer; with `wait`,
    TimeoutError after that many seconds (the shared call goes on for whoever else waits on it)."""
    asking = services.cluster.nodes()
    nodes = await (asyncio.wait_for(asyncio.shield(asking), wait) if wait is not None else asking)
    return services.partitions(nodes)


class PartitionsHandler(_Base):
    async def get(self):
        self.check_user()
        try:
            partitions = await what_is_free(self.portal_services)
        except SlurmError as e:
            self.log.warning("sinfo for the partitions API: %s", e)
            raise web.HTTPError(503, UNAVAILABLE) from None
        self.finish(json.dumps({"partitions": partitions}))


class EstimateHandler(_Base):
    """When a shape would start (the form's line under the resources)."""

    async def answer(self, services: HubServices, query: dict) -> dict:
        return await services.estimate(self.current_user.name, query)

    async def get(self):
        self.check_user()
        query = {
            k: self.get_argument(k)
            for k in ("partition", "gpus", "hours", "gpu_type", "account", "qos")
            if self.get_argument(k, None)
        }
        try:
            answer = await self.answer(self.portal_services, query)
        except ValueError as e:  # refused options: the same words as the form
            raise web.HTTPError(400, str(e)) from None
        except TooManyEstimates as e:
            self.log.warning("Start estimate for %s refused: %s", self.current_user.name, e)
            raise web.HTTPError(429, str(e)) from None
        except SlurmError as e:
            self.log.warning("Start estimate for %s: %s", self.current_user.name, e)
            raise web.HTTPError(503, UNAVAILABLE) from None
        self.finish(json.dumps(answer))


class AlternativesHandler(EstimateHandler):
    """What else fits the shape and when each would start (the form's list under the estimate)."""

    async def answer(self, services: HubServices, query: dict) -> dict:
        return await alternatives(services, self.current_user.name, query)


class AccountsHandler(_Base):
    """The Slurm accounts the logged-in user may charge, their default first (the form's choice)."""

    async def get(self):
        self.check_user()
        try:
            accounts = await self.portal_services.accounts()
        except SlurmError as e:
            self.log.warning("sacctmgr for the accounts API: %s", e)
            raise web.HTTPError(
                503, "Slurm's accounting is not answering; your accounts cannot be shown right now."
            ) from None
        self.finish(
            json.dumps(accounts.to_dict(self.current_user.name, self.portal_services.settings.slurm.qos_choices))
        )


HANDLERS = [
    (PARTITIONS_URL, PartitionsHandler),
    (ESTIMATE_URL, EstimateHandler),
    (ALTERNATIVES_URL, AlternativesHandler),
    (ACCOUNTS_URL, AccountsHandler),
]  # installed by spawner/hub/wiring/routes.py

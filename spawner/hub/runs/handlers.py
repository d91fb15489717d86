"""The hub's REST API for runs: notebooks and scripts as Slurm jobs of the user.

    GET    /hub/api/dsportal/runs?limit=100&offset=0  a page of the user's jobs, runs among them: {"jobs":
                                                    [row ...], "total", "limit", "offset", "error": ""}
                                                    (runs/board.py, runs/jobspage.py)
    GET    /hub/api/dsportal/runs/form?path=P       the dialog: {"path", "kind", "parameters", "partitions",
                                                    "defaults", "max_hours"}
    POST   /hub/api/dsportal/runs                   {"path", "partition", "nodes", "gpus", "hours",
                                                    "parameters"} -> 201 {"job": run}
    POST   /hub/api/dsportal/runs/ID/cancel         -> {"job_id": ID}
    POST   /hub/api/dsportal/runs/ID/again          the same settings again -> 201 {"job": run}
    GET    /hub/api/dsportal/runs/ID/log?lines=N    {"log": the tail of the job's log}
    GET    /hub/api/dsportal/runs/ID/tasks          a sweep's table: {"tasks": [...], "results", ...}
                                                    (runs/sweeps.py; POST runs with "sweep" submits one)
    GET    /hub/api/dsportal/notify                 {"mail": bool, "address": ""}
    POST   /hub/api/dsportal/notify                 {"mail": bool} -> the same

0.1 named these routes /hub/api/dsportal/jobs...; they answer there too until 0.3 (OLD_RUNS_URL), so that a
session started before an upgrade (0.1's JupyterLab extension) and an admin's scripts keep working.

The caller is the logged-in user (the home page's cookie, with JupyterHub's
XSRF check), the user's session passing JupyterLab's requests on
(spawner/jupyter/runs/handlers.py) or a token of theirs that may use their server.
A refusal is a 4xx with the words a user acts on; nothing is submitted then.
"""

from __future__ import annotations

import json

from jupyterhub.apihandlers import APIHandler
from tornado import web

from ...slurmvocab import JOB_ID_IN_PATH
from ..base.notices import mail_address
from ..base.requestlimits import Bounded
from ..session.lookup import own_spawner
from ..session.userrecord import save_user_record, user_record
from . import service
from .jobspage import DEFAULT_LIMIT, page_bounds
from .service import RunRefused

# Per user and minute: what makes the hub read files as the user (sudo head or tail, a parse) or build rows of
# their jobs; the panel's live log asks every 3 s, its list every 10 s, a person opens the dialog and submits a
# few times a minute.  Parses are bounded at once too (spawner/hub/slurm/fileparse.py).
READS_PER_MINUTE = {"read": 30, "log": 60, "list": 240}

RUNS_URL = "/api/dsportal/runs"
OLD_RUNS_URL = "/api/dsportal/jobs"  # 0.1's name, answered until 0.3
NOTIFY_URL = "/api/dsportal/notify"
MAX_LOG_LINES = 2000


class _Base(Bounded, APIHandler):
    def own_spawner(self):
        return own_spawner(self, "Log in to see your jobs.")

    def body(self) -> object:
        try:
            return json.loads(self.request.body or b"{}")
        except ValueError:
            raise web.HTTPError(400, "The request body must be JSON.") from None

    def count(self, kind: str) -> None:
        """429 with words when this user asked for more file reads of `kind` than a minute allows."""
        limit = READS_PER_MINUTE[kind]
        words = f"Too many requests for your files in a minute (at most {limit}); try again shortly."
        self.count_per_minute(("run file reads", kind), limit, words)

    async def answer(self, call, status: int = 200) -> None:
        try:
            result = await call
        except RunRefused as e:
            raise web.HTTPError(e.status, str(e)) from None
        self.set_status(status)
        self.finish(json.dumps(result))


class RunsHandler(_Base):
    async def get(self):
        spawner = self.own_spawner()
        try:
            limit, offset = page_bounds(
                self.get_argument("limit", str(DEFAULT_LIMIT)), self.get_argument("offset", "0")
            )
        except ValueError as e:
            raise web.HTTPError(400, str(e)) from None
        self.count("list")
        await self.answer(service.jobs(self.portal_services, spawner, limit, offset))

    async def post(self):
        spawner = self.own_spawner()
        self.count("read")
        await self.answer(_wrapped(service.submit(self.portal_services, spawner, self.body())), 201)


async def _wrapped(call) -> dict:
    return {"job": await call}


class FormHandler(_Base):
    async def get(self):
        spawner = self.own_spawner()
        self.count("read")
        await self.answer(service.form(self.portal_services, spawner, self.get_argument("path", "")))


class CancelHandler(_Base):
    async def post(self, job_id: str):
        spawner = self.own_spawner()
        await self.answer(_cancelled(service.cancel(self.portal_services, spawner, job_id), job_id))


async def _cancelled(call, job_id: str) -> dict:
    await call
    return {"job_id": job_id}


class AgainHandler(_Base):
    async def post(self, job_id: str):
        spawner = self.own_spawner()
        self.count("read")
        await self.answer(_wrapped(service.again(self.portal_services, spawner, job_id)), 201)


class LogHandler(_Base):
    async def get(self, job_id: str):
        lines = self.get_argument("lines", "200")
        if not lines.isdigit() or not 1 <= int(lines) <= MAX_LOG_LINES:
            raise web.HTTPError(400, f"lines must be a whole number from 1 to {MAX_LOG_LINES}.")
        spawner = self.own_spawner()
        self.count("log")
        await self.answer(_logged(service.log_tail(self.portal_services, spawner, job_id, int(lines))))


async def _logged(call) -> dict:
    return {"log": await call}


class TasksHandler(_Base):
    async def get(self, job_id: str):
        spawner = self.own_spawner()
        self.count("log")  # one head of the tasks' results files, as the user
        await self.answer(service.tasks(self.portal_services, spawner, job_id))


class NotifyHandler(_Base):
    async def _state(self, spawner) -> dict:
        return {"mail": user_record(spawner).notify_mail, "address": await mail_address(spawner.user)}

    async def get(self):
        self.finish(json.dumps(await self._state(self.own_spawner())))

    async def post(self):
        spawner = self.own_spawner()
        body = self.body()
        if not isinstance(body, dict) or set(body) != {"mail"} or not isinstance(body["mail"], bool):
            raise web.HTTPError(400, 'Send {"mail": true} or {"mail": false}.')
        if body["mail"] and not await mail_address(spawner.user):
            raise web.HTTPError(
                409, "The directory has no e-mail address for you, so no mail can be sent; ask the cluster admins."
            )
        user_record(spawner).notify_mail = body["mail"]
        save_user_record(spawner)
        self.finish(json.dumps(await self._state(spawner)))


HANDLERS = [
    *(
        route
        for url in (RUNS_URL, OLD_RUNS_URL)
        for route in (
            (url, RunsHandler),
            (url + "/form", FormHandler),
            (url + rf"/({JOB_ID_IN_PATH})/cancel", CancelHandler),
            (url + rf"/({JOB_ID_IN_PATH})/again", AgainHandler),
            (url + rf"/({JOB_ID_IN_PATH})/log", LogHandler),
            (url + rf"/({JOB_ID_IN_PATH})/tasks", TasksHandler),
        )
    ),
    (NOTIFY_URL, NotifyHandler),
]  # installed by spawner/hub/wiring/routes.py

"""The hub's REST API for a user's own session (the home page's card, JupyterLab's "extend" button).

    GET  /hub/api/dsportal/session          {"session": card, "history": [...], "last_end", "presets",
                                             "server_url"} of the unnamed session, and "sessions": each
                                             session's {"name", "session", "last_end", "server_url"},
                                             "limits" (spawner/hub/home/page.py)
         ?free=1                            and "partitions": what is free, as GET /hub/api/dsportal/partitions
                                             answers (or "partitions_error": why not): the home page asks
                                             for both in one request
         ?shares=1                          and "shares": the user's shares and those with them, as
                                             GET /hub/api/dsportal/shares answers (spawner/hub/sharing/handlers.py)
         ?jobs=1                            and "jobs": the user's jobs, as GET /hub/api/dsportal/runs answers
                                             (and "jobs_error": a sentence when a Slurm source did not answer)
    POST /hub/api/dsportal/session/extend   the clock's (spawner/hub/clock/handlers.py), answered with the card
    GET  /hub/dsportal/static/home.js       the page's script and its rules (templates/static/, to anyone:
         /hub/dsportal/static/homerules.js  it holds no secret), kept for years when asked with ?v=
                                            (spawner/hub/base/pagescripts.py)

The caller is the logged-in user (the page's cookie, with JupyterHub's XSRF
check) or a token of theirs that may use their server: the session's own
server asks with its token when the user presses "extend" in JupyterLab.
"""

from __future__ import annotations

import asyncio
import json
import re

from jupyterhub.apihandlers import APIHandler
from tornado import web

from ..base import pagescripts as script
from ..base.requestlimits import Bounded
from ..request.sessionlimits import user_sessions
from ..runs import service as runs_service
from ..session.lookup import own_spawner
from ..sharing.handlers import shares_view
from ..slurm.client import SlurmError
from ..slurm.handlers import UNAVAILABLE, what_is_free
from .page import card, home_data

SESSION_URL = "/api/dsportal/session"
FREE_WAIT = 3.0  # seconds a home page's refresh waits for what is free


async def none() -> None:
    return None


class _Base(Bounded, APIHandler):
    def own_spawner(self):
        return own_spawner(self, "Log in to see your session.")


class SessionHandler(_Base):
    async def get(self):
        spawner = self.own_spawner()
        # each queued session's place (one shared, cached squeue a partition) and the jobs, asked at once
        jobs = runs_service.jobs(self.portal_services, spawner) if self.get_argument("jobs", "") == "1" else none()
        *_, listing = await asyncio.gather(*(s.update_queue_place() for s in user_sessions(spawner.user)), jobs)
        answer = home_data(spawner)
        if self.get_argument("free", "") == "1":
            # One request where an open home page made two: JupyterHub's authentication of each request
            # (a user query and its eager loads) was most of the hub's time at 500 open pages.
            # A slow sinfo must not hold the card: at most FREE_WAIT.
            try:
                answer["partitions"] = await what_is_free(self.portal_services, FREE_WAIT)
            except (TimeoutError, SlurmError) as e:
                self.log.warning("sinfo for the home page: %s", e or "no answer yet")
                answer["partitions_error"] = UNAVAILABLE
        if self.get_argument("shares", "") == "1":
            answer["shares"] = shares_view(self.users, spawner)
        if listing is not None:
            answer["jobs"], answer["jobs_error"] = listing["jobs"], listing["error"]
        self.finish(json.dumps(answer))


class ScriptHandler(Bounded, web.StaticFileHandler):
    rate_limited = limit_anonymous = False  # a public file: bodies bounded, callers not (requestlimits)

    def get_content_type(self) -> str:
        return "text/javascript; charset=utf-8"  # what a module script needs, whatever the OS's mime types say


HANDLERS = [(SESSION_URL, SessionHandler)]  # installed by spawner/hub/wiring/routes.py


def extended(spawner) -> dict:
    """What the clock's extend answers (spawner/hub/clock/handlers.py): the session's new card, as this API's."""
    return {"session": card(spawner)}


def handlers() -> list[tuple]:
    """The page's script files, each by its name only (pages' routes: JupyterHub prefixes them with /hub)."""
    return [
        (f"/{script.STATIC_URL}({re.escape(name)})", ScriptHandler, {"path": str(script.folder())})
        for name in script.FILES
    ]

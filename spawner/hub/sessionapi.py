"""The hub's REST API for a user's own session (the home page's card, JupyterLab's "extend" button).

    GET  /hub/api/dsportal/session          {"session": card, "history": [...], "last_end", "presets",
                                             "server_url"}  (SlurmGPUSpawner.home_data)
    POST /hub/api/dsportal/session/extend   one more slurm.extend_step_hours -> {"session": card}

The caller is the logged-in user (the page's cookie, with JupyterHub's XSRF
check) or a token of theirs that may use their server: the session's own
server asks with its token when the user presses "extend" in JupyterLab.
"""

from __future__ import annotations

import json

from jupyterhub.apihandlers import APIHandler, default_handlers
from tornado import web

from ..contract import EXTEND_PATH

SESSION_URL = "/api/dsportal/session"


class _Base(APIHandler):
    def own_spawner(self):
        user = self.current_user
        if user is None or not hasattr(user, "spawner"):  # a service's token is no user
            raise web.HTTPError(403, "Log in to see your session.")
        if not self.has_scope(f"access:servers!server={user.name}/"):
            raise web.HTTPError(403, "This token may not use your session; use one that may access your server.")
        return user.spawner


class SessionHandler(_Base):
    async def get(self):
        spawner = self.own_spawner()
        await spawner.update_queue_place()  # a queued session's place (one shared, cached squeue per partition)
        self.finish(json.dumps(spawner.home_data()))


class ExtendHandler(_Base):
    async def post(self):
        from .spawner import ExtendRefused  # the spawner module imports this one

        spawner = self.own_spawner()
        try:
            card = await spawner.extend()
        except ExtendRefused as e:
            raise web.HTTPError(e.status, str(e)) from None
        self.finish(json.dumps({"session": card}))


for url, handler in ((SESSION_URL, SessionHandler), ("/api" + EXTEND_PATH, ExtendHandler)):
    if (url, handler) not in default_handlers:
        default_handlers.append((url, handler))

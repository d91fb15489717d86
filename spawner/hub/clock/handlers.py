"""The hub's REST API for a session's time (hub side).

    POST /hub/api/dsportal/session/extend   one more slurm.extend_step_hours -> the wiring's answer (the home
                                            page's card: {"session": card}, spawner/hub/home/handlers.py)
         ?server=NAME                       of the named session NAME (a session's own token: that session)

The caller is the logged-in user (the page's cookie, with JupyterHub's XSRF check) or a token of theirs that may
use their server: the session's own server asks with its token when the user presses "extend" in JupyterLab.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from jupyterhub.apihandlers import APIHandler
from tornado import web

from ...contract import EXTEND_PATH
from ..base.requestlimits import Bounded
from ..request.sessionlimits import user_sessions
from ..session.lookup import own_spawner
from .extension import ExtendRefused, extend_session


class ExtendHandler(Bounded, APIHandler):
    def initialize(self, answer: Callable[[object], dict]) -> None:
        self.answer = answer  # the extended session as its caller shows it (the wiring names it)

    def chosen_session(self):
        """The session to extend: the one whose own token asks (JupyterLab's button), else `?server=NAME`."""
        default = own_spawner(self, "Log in to see your session.")
        token = self.get_auth_token() or ""
        sessions = user_sessions(default.user)
        by_token = next((s for s in sessions if s.holds_token(token)), None)
        if by_token is not None:
            return by_token
        name = self.get_argument("server", "")
        found = next((s for s in sessions if s.name == name), None)
        if found is None:
            raise web.HTTPError(404, f"You have no session called {name!r}.")
        return found

    async def post(self):
        spawner = self.chosen_session()
        try:
            await extend_session(spawner)
        except ExtendRefused as e:
            raise web.HTTPError(e.status, str(e)) from None
        self.finish(json.dumps(self.answer(spawner)))


EXTEND_URL = "/api" + EXTEND_PATH  # installed by spawner/hub/wiring/routes.py, with the answer

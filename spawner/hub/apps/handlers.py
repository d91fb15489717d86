"""The apps' routes API, for the sessions themselves (hub side).

    POST   /hub/api/dsportal/apps/routes      {"app": "<12 hex>"} -> {"origin": "https://apps--....<host>:PORT"}
    DELETE /hub/api/dsportal/apps/routes/ID   the app stopped: its route goes

A session that starts an app asks, with its own token, for the app's own
origin (proxy.py routes it to the session's server).  Only a running
session's own token may ask, for its own server only; a guest's code can
read that token, and at most MAX_APP_ROUTES routes of the session are kept
(409 past them), each to that session's own server: a guest gains nothing by
asking.
"""

from __future__ import annotations

import json
import re

from jupyterhub.apihandlers import APIHandler
from tornado import web

from ...contract import APPS_ROUTES_PATH
from ..session.handlers import SessionTokenHandler
from .proxy import PortalProxy, TooManyRoutes

APP_ID = re.compile(r"[0-9a-f]{12}")


def parse_route_body(body: bytes) -> str:
    """The app's id from the request's body; ValueError saying what to send (pure)."""
    try:
        parsed = json.loads(body or b"null")
    except ValueError:
        raise ValueError('Send {"app": "<the app\'s id>"}') from None
    if not isinstance(parsed, dict) or set(parsed) != {"app"} or not isinstance(parsed["app"], str):
        raise ValueError('Send {"app": "<the app\'s id>"}')
    if not APP_ID.fullmatch(parsed["app"]):
        raise ValueError("An app's id is 12 hex digits.")
    return parsed["app"]


class AppRoutesHandler(SessionTokenHandler, APIHandler):
    rate_limited = True  # not the session's lifeline: a guest's flood with its token waits like any other

    @web.authenticated
    async def post(self):
        spawner = self.session_spawner()
        if spawner is None or not spawner.ready:
            raise web.HTTPError(403, "Only a running session's own token may route its apps.")
        try:
            app_id = parse_route_body(self.request.body)
        except ValueError as e:
            raise web.HTTPError(400, str(e)) from None
        if not isinstance(self.proxy, PortalProxy) or not self.subdomain_host:
            raise web.HTTPError(503, "This portal serves no apps: they need per-user origins (hub.subdomain_host).")
        try:
            origin = await self.proxy.route_app(self.current_user, spawner, app_id)
        except TooManyRoutes as e:
            raise web.HTTPError(409, str(e)) from None
        self.set_status(201)
        self.finish(json.dumps({"origin": origin}))


class AppRouteHandler(SessionTokenHandler, APIHandler):
    """DELETE /hub/api/dsportal/apps/routes/ID: the app stopped, its origin goes (the session's own token)."""

    rate_limited = True

    @web.authenticated
    async def delete(self, app_id: str):
        spawner = self.session_spawner()
        if spawner is None or not isinstance(self.proxy, PortalProxy):
            raise web.HTTPError(403, "Only a running session's own token may route its apps.")
        await self.proxy.unroute_app(self.current_user, spawner, app_id)
        self.set_status(204)
        self.finish()


HANDLERS = [
    (rf"/api{APPS_ROUTES_PATH}", AppRoutesHandler),
    (rf"/api{APPS_ROUTES_PATH}/([0-9a-f]{{12}})", AppRouteHandler),
]

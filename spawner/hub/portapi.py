"""The session's two calls to the hub about its port: which one it took, and that its server has exited.

The port callback replaces batchspawner's `/hub/api/batchspawner` handler,
which sets any attribute the caller names on the spawner.  This one accepts
exactly ``{"port": <int>}``, only from the token of the session that is
starting, only while it starts, and once per start.  Importing this module
batchspawner's handler is taken out of JupyterHub's handler list by
spawner/hub/routes.py, so it is never served.

The ended report comes from the session's port keeper
(spawner/jupyter/keeper.py) once the server has exited: the hub stops the
session (the route first) before it answers, so the port is released only
when no traffic is routed to it any more.
"""

from __future__ import annotations

import asyncio
import json
import time

from batchspawner.api import BatchSpawnerAPIHandler
from jupyterhub.apihandlers import APIHandler
from jupyterhub.utils import safe_log
from tornado import web

from ..contract import ENDED_CALLBACK, PORT_CALLBACK
from .requestlimits import Bounded

PORT_URL = "/api" + PORT_CALLBACK  # under the hub's /hub prefix
ENDED_URL = "/api" + ENDED_CALLBACK
PORT_RANGE = (1024, 65535)
ROUTE_WAIT = 10  # seconds an ended report waits for the session's route to go before removing it itself


def parse_port_body(body: object) -> int:
    """The request body -> the port; ValueError with the reason otherwise."""
    if not isinstance(body, dict) or set(body) != {"port"}:
        keys = sorted(map(str, body)) if isinstance(body, dict) else type(body).__name__
        raise ValueError(f'only {{"port": <integer>}} is accepted, got {safe_log(keys, 200)}')
    port = body["port"]
    low, high = PORT_RANGE
    if isinstance(port, bool) or not isinstance(port, int) or not low <= port <= high:
        raise ValueError(f"port must be an integer from {low} to {high}, got {safe_log(port, 50)}")
    return port


class SessionTokenHandler(Bounded, APIHandler):
    # The session's lifeline (its port, its end): never refused for a rate that its guests' flood with the same
    # token could use up (spawner/hub/requestlimits.py)
    rate_limited = False

    def session_spawner(self):
        """The spawner whose session's own token made this request, while the session starts, runs or stops
        (None: any other token, or a session that has ended)."""
        token = self.get_auth_token() or ""
        spawners = getattr(self.current_user, "spawners", {}).values()
        return next(
            (
                s
                for s in spawners
                if hasattr(s, "holds_token") and s.holds_token(token) and (s.active or s.record.stopping)
            ),
            None,
        )


class PortHandler(SessionTokenHandler):
    @web.authenticated
    def post(self):
        user = self.current_user
        spawner = self.session_spawner()
        if spawner is None or spawner.pending != "spawn":
            self.log.warning("Port callback refused for %s: not the token of a starting session", user.name)
            raise web.HTTPError(400, "This token does not belong to a session that is starting")
        try:
            body = json.loads(self.request.body or b"null")
            port = parse_port_body(body)
        except ValueError as e:  # json.JSONDecodeError is a ValueError too
            self.log.warning("Port callback refused for %s: %s", spawner._log_name, e)
            raise web.HTTPError(400, "Invalid port callback: %s", str(e)) from None
        if spawner.port:
            # One report per start: the hub proves and routes the port it was told first.  A second report
            # (a session switching ports during the readiness check) would route to an unproven listener.
            self.log.warning(
                "Port callback refused for %s: port %d was already reported (this one: %d)",
                spawner._log_name,
                spawner.port,
                port,
            )
            raise web.HTTPError(409, "This session has reported its port already")
        spawner.port = port
        self.log.info("Session of %s reported port %d", spawner._log_name, port)
        self.set_status(201)
        self.finish(json.dumps({"port": port}))


class EndedHandler(SessionTokenHandler):
    """200 only once no route to the session exists; 503 (the keeper asks again) while one may."""

    @web.authenticated
    async def post(self):
        spawner = self.session_spawner()
        if spawner is None:
            raise web.HTTPError(400, "This token does not belong to a session")
        if spawner.pending == "spawn":
            # Exited while starting: a start not yet proven fails at once (spawner.start raises with the session
            # log's last lines; JupyterHub's cleanup then cancels the job) and no route is added; the answer waits
            # for that.  Proven but not routed yet, perhaps: JupyterHub's own check fails first (the keeper's held
            # port answers nothing), and no route is then added.
            spawner.server_exited_while_starting()
            if not (spawner.exited_in_start and await self.start_failed(spawner)):
                raise web.HTTPError(503, "The session is still starting; report again")
        elif spawner.ready and not spawner.pending:
            # The session ended outside the portal (shut down, time limit, scancel): stop it.  JupyterHub's stop
            # removes the route first; its poll then waits for the job's final state (spawner.server_exited).
            self.log.info("Session of %s: its server has exited; stopping it", spawner._log_name)
            spawner.server_exited()
            asyncio.ensure_future(self.stop_single_user(self.current_user, spawner.name))
        if not await self.route_gone(spawner):
            self.log.warning(
                "Session of %s: its route is still there %d s after its server exited", spawner._log_name, ROUTE_WAIT
            )
            raise web.HTTPError(503, "The session's route is still there; report again")
        self.set_status(200)
        self.finish(json.dumps({"routed": False}))

    async def start_failed(self, spawner) -> bool:
        """Wait (up to ROUTE_WAIT) for the start of a session whose server exited to have failed."""
        deadline = time.monotonic() + ROUTE_WAIT
        while spawner.pending == "spawn":
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.05)
        return True

    async def route_gone(self, spawner) -> bool:
        """Wait (up to ROUTE_WAIT) for the session's route to be gone; remove it here if the stop did not."""
        deadline = time.monotonic() + ROUTE_WAIT
        while await self.proxy.get_route(spawner.proxy_spec) is not None:
            if time.monotonic() >= deadline:
                await self.proxy.delete_route(spawner.proxy_spec)  # JupyterHub's stop swallows a failed delete
                return await self.proxy.get_route(spawner.proxy_spec) is None
            await asyncio.sleep(0.05)
        return True


HANDLERS = [(PORT_URL, PortHandler), (ENDED_URL, EndedHandler)]  # installed by spawner/hub/routes.py
# batchspawner's port callback, which sets any attribute the caller names on the spawner: never served
REPLACED_CALLBACK = BatchSpawnerAPIHandler


def served(handlers: list[tuple]) -> bool:
    """Whether JupyterHub's handler list serves the portal's port callback and not batchspawner's."""
    classes = {route[1] for route in handlers}
    return PortHandler in classes and REPLACED_CALLBACK not in classes

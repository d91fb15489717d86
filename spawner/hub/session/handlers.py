"""The session's HTTP handlers in the hub: its port, its end, and JupyterHub's start and stop API.

    POST   /hub/api/dsportal/port           the port the session's server took (its own token, while it starts)
    POST   /hub/api/dsportal/ended          the session's server has exited (its port keeper)
    POST, DELETE /hub/api/users/NAME/server[s/SERVER]   JupyterHub's, with the portal's words and cullers

The port callback replaces batchspawner's `/hub/api/batchspawner` handler,
which sets any attribute the caller names on the spawner.  This one accepts
exactly ``{"port": <int>}``, only from the token of the session that is
starting, only while it starts, and once per start.  batchspawner's handler
(added to JupyterHub's list when batchspawner is imported) is taken out by
spawner/hub/wiring/routes.py, so it is never served.

The ended report comes from the session's port keeper
(spawner/jupyter/session/keeper.py) once the server has exited: the hub stops the
session (the route first) before it answers, so the port is released only
when no traffic is routed to it any more.

JupyterHub's own handler for DELETE /hub/api/users/NAME/server is served
instead of it, with one addition: when the caller is one of the portal's
idle cullers (spawner/hub/session/idle.py), the spawner learns that the session is
stopped for being idle, so the home page can say so (and a culler stops only
sessions of its own timeout); a new session's name that JupyterHub refuses is
refused first with the rule in words.  JupyterHub's handler has no hook for
the caller's identity; everything else is JupyterHub's.
"""

from __future__ import annotations

import asyncio
import json
import time

from batchspawner.api import BatchSpawnerAPIHandler
from jupyterhub.apihandlers import APIHandler
from jupyterhub.apihandlers.users import UserServerAPIHandler
from jupyterhub.utils import maybe_future, safe_log
from tornado import web

from ...contract import ENDED_CALLBACK, PORT_CALLBACK
from ..base.logname import log_name
from ..base.requestlimits import Bounded
from ..request.sessionlimits import label, name_problem
from .idle import culler_timeout, is_culler

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
    # token could use up (spawner/hub/base/requestlimits.py)
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
            self.log.warning("Port callback refused for %s: %s", log_name(spawner), e)
            raise web.HTTPError(400, "Invalid port callback: %s", str(e)) from None
        if spawner.port:
            # One report per start: the hub proves and routes the port it was told first.  A second report
            # (a session switching ports during the readiness check) would route to an unproven listener.
            self.log.warning(
                "Port callback refused for %s: port %d was already reported (this one: %d)",
                log_name(spawner),
                spawner.port,
                port,
            )
            raise web.HTTPError(409, "This session has reported its port already")
        spawner.port = port
        self.log.info("Session of %s reported port %d", log_name(spawner), port)
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
            self.log.info("Session of %s: its server has exited; stopping it", log_name(spawner))
            spawner.server_exited()
            asyncio.ensure_future(self.stop_single_user(self.current_user, spawner.name))
        if not await self.route_gone(spawner):
            self.log.warning(
                "Session of %s: its route is still there %d s after its server exited", log_name(spawner), ROUTE_WAIT
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


HANDLERS = [
    (PORT_URL, PortHandler),
    (ENDED_URL, EndedHandler),
]  # installed by spawner/hub/wiring/routes.py
# batchspawner's port callback, which sets any attribute the caller names on the spawner: never served
REPLACED_CALLBACK = BatchSpawnerAPIHandler


def served(handlers: list[tuple]) -> bool:
    """Whether JupyterHub's handler list serves the portal's port callback and not batchspawner's."""
    classes = {route[1] for route in handlers}
    return PortHandler in classes and REPLACED_CALLBACK not in classes


class PortalUserServerAPIHandler(Bounded, UserServerAPIHandler):
    async def post(self, user_name, server_name=""):
        user = self.find_user(user_name)
        new = bool(server_name) and user is not None and server_name not in user.orm_spawners
        if new:
            why = name_problem(server_name)  # JupyterHub's own answer names no rule ("Invalid server_name")
            if why:
                raise web.HTTPError(400, why)
        try:
            return await super().post(user_name, server_name)
        except asyncio.CancelledError:
            if asyncio.current_task().cancelling():
                raise  # this request itself is cancelled (the hub is stopping): tornado's answer
            # The start it waits for was cancelled: a stop of the same session came in the start's first second
            # (JupyterHub's DELETE cancels a pending start), and JupyterHub's handler lets that through (a 500).
            self.log.info("The start of %s/%s was stopped before it was answered", user_name, server_name)
            raise web.HTTPError(409, stopped_while_starting(server_name)) from None
        except Exception:  # a 400 of JupyterHub's, or the spawner's refusal that JupyterHub turns into one
            # a new name whose start was refused (one session too many, bad options) leaves no kept session behind
            if new and server_name in user.orm_spawners:
                self.portal_services.keep(asyncio.ensure_future(forget_refused(user, server_name)))
            raise

    async def delete(self, user_name, server_name=""):
        caller = self.current_user
        if getattr(caller, "kind", "") == "service" and is_culler(caller.name):
            user = self.find_user(user_name)
            spawner = user.spawners.get(server_name) if user is not None else None
            if spawner is not None and hasattr(spawner, "session_idle_timeout"):
                # a user with sessions of different timeouts is in each culler's group: each stops only its own
                if spawner.session_idle_timeout() != culler_timeout(caller.name):
                    raise web.HTTPError(403, "This session has another idle timeout; its own culler stops it.")
                spawner.stop_cause = "idle"
        try:
            return await super().delete(user_name, server_name)
        except (RuntimeError, KeyError):
            # JupyterHub's handler cancels a pending start, waits a second, then stops; a session whose start is
            # cancelled exits and reports its end (spawner/hub/session/handlers.py), which begins the stop meanwhile, and
            # JupyterHub's stop_single_user raises on a stop already pending, or (KeyError) on a spawner that
            # stop has already forgotten (a 500 either way).  The server is stopping or stopped, as asked: answer
            # as JupyterHub does when the stop was pending from the first, or was done.
            user = self.find_user(user_name)
            spawner = user.spawners.get(server_name) if user is not None else None
            if spawner is not None and spawner.pending == "spawn":
                # JupyterHub's start of a running session checks it (poll) with a start marked pending; a stop
                # whose own check ended first found that mark and raised (a 500, seen when Slurm was slow): the
                # session runs, and the stop can be asked again once the check is done
                raise web.HTTPError(409, stop_beside_start_check(server_name)) from None
            if user is None or (server_name in user.spawners and user.spawners[server_name].pending != "stop"):
                raise
            stopped = server_name not in user.spawners
            state = "stopped" if stopped else "stopping"
            self.log.info("%s/%s was already %s (its own end report)", user_name, server_name, state)
            if server_name and (self.get_json_body() or {}).get("remove"):
                self.portal_services.keep(asyncio.ensure_future(forget_refused(user, server_name, wait=STOP_WAIT)))
            self.set_header("Content-Type", "text/plain")
            self.set_status(204 if stopped else 202)


def stop_beside_start_check(server_name: str) -> str:
    """The answer to a stop that met a start request's check of the same running session."""
    what = label(server_name)
    return (
        f"{what[0].upper()}{what[1:]} is being checked by a start request sent at the same time, so it was not "
        "stopped; it is still running. Stop it again in a few seconds."
    )


def stopped_while_starting(server_name: str) -> str:
    """The answer to a start that a stop of the same session interrupted before the start was answered."""
    what = label(server_name)
    return (
        f"{what[0].upper()}{what[1:]} was stopped while it started (a stop request came before the start was "
        "answered); what it had started is being stopped. Start it again when you want it."
    )


STOP_WAIT = 120.0  # seconds a named session asked to be removed may take to stop before it is


async def forget_refused(user, server_name: str, wait: float = 5.0) -> None:
    """Remove the named session a refused start created (or one asked to be removed while it was already
    stopping), once JupyterHub has finished with it."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    spawner = user.spawners[server_name]
    while spawner.active and loop.time() < deadline:
        await asyncio.sleep(0.1)
    if not spawner.active and server_name in user.orm_spawners and not spawner.job_id:
        # as JupyterHub's DELETE with {"remove": true} does (its `_remove_spawner`), through the public hook
        # its own removal calls first (a failure there is logged and the session removed all the same)
        try:
            await maybe_future(spawner.delete_forever())
        except Exception:
            spawner.log.exception("Error cleaning up persistent resources on %s", log_name(spawner))
        user.db.delete(spawner.orm_spawner)
        user.spawners.pop(server_name, None)
        user.db.commit()


REPLACED = {UserServerAPIHandler: PortalUserServerAPIHandler}  # JupyterHub's -> ours, by spawner/hub/wiring/routes.py

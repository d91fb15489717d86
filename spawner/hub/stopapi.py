"""JupyterHub's API to start and stop a user's sessions, with the portal's words and cullers (hub side).

JupyterHub's own handler for DELETE /hub/api/users/NAME/server, served
instead of it, with one addition: when the caller is one of the portal's
idle cullers (spawner/hub/idle.py), the spawner learns that the session is
stopped for being idle, so the home page can say so (and a culler stops only
sessions of its own timeout); a new session's name that JupyterHub refuses is
refused first with the rule in words.  JupyterHub's handler has no hook for
the caller's identity; everything else is JupyterHub's.
"""

from __future__ import annotations

import asyncio

from jupyterhub.apihandlers.users import UserServerAPIHandler
from tornado import web

from .idle import culler_timeout, is_culler
from .requestlimits import Bounded
from .sessions import label, name_problem


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
                _FORGETTING.add(asyncio.ensure_future(forget_refused(user, server_name)))
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
            # cancelled exits and reports its end (spawner/hub/portapi.py), which begins the stop meanwhile, and
            # JupyterHub's stop_single_user raises on a stop already pending, or (KeyError) on a spawner that
            # stop has already forgotten (a 500 either way).  The server is stopping or stopped, as asked: answer
            # as JupyterHub does when the stop was pending from the first, or was done.
            user = self.find_user(user_name)
            if user is None or (server_name in user.spawners and user.spawners[server_name].pending != "stop"):
                raise
            stopped = server_name not in user.spawners
            state = "stopped" if stopped else "stopping"
            self.log.info("%s/%s was already %s (its own end report)", user_name, server_name, state)
            if server_name and (self.get_json_body() or {}).get("remove"):
                _FORGETTING.add(asyncio.ensure_future(forget_refused(user, server_name, wait=STOP_WAIT)))
            self.set_header("Content-Type", "text/plain")
            self.set_status(204 if stopped else 202)


def stopped_while_starting(server_name: str) -> str:
    """The answer to a start that a stop of the same session interrupted before the start was answered."""
    what = label(server_name)
    return (
        f"{what[0].upper()}{what[1:]} was stopped while it started (a stop request came before the start was "
        "answered); what it had started is being stopped. Start it again when you want it."
    )


_FORGETTING: set = set()  # held until done: the loop keeps only weak references to tasks
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
        # as JupyterHub's DELETE with {"remove": true} does (its `_remove_spawner`)
        await user._delete_spawner(spawner)
        user.db.delete(spawner.orm_spawner)
        user.spawners.pop(server_name, None)
        user.db.commit()
    _FORGETTING.discard(asyncio.current_task())


REPLACED = {UserServerAPIHandler: PortalUserServerAPIHandler}  # JupyterHub's -> ours, by spawner/hub/routes.py

"""The proxy's routes to each app's own origin (hub side).

Each app of a session is served at an origin of its own, apart from the
session's Jupyter server and from every other app (spawner/jupyter/apps/origin.py
says why): `https://apps--RANDOM.<hub.subdomain_host's name>:PORT`.  When a
session starts an app it asks the hub for its route (handlers.py, with the
session's own token); the hub draws the label (24 random hex digits: no one
can tell it in advance, nor make an account of that name for it) and routes
that host, for the app's own path only (`/user/NAME[/SESSION]/dsportal/apps/ID/`),
to the session's server.  Everything else on that host reaches the hub, which
serves nothing of a session there.

A restarted proxy (configurable-http-proxy is its own service: a crash, an
admin's restart) holds no route, and JupyterHub adds them back only from the
activity loop the portal turns off: `keep_routed` (one of the hub's background
loops) puts a mark of its own in the proxy (`MARK_ROUTE`) and asks for it
every few seconds, one small request; when it is gone, JupyterHub's check
adds every running session's route back (and, through `add_user`, their
apps'); a full check runs every few minutes besides.  `get_route` asks
configurable-http-proxy for the one route (`GET /api/routes/PATH`), where
JupyterHub's asks for every route and picks one; `delete_route` passes over
a route already gone without JupyterHub's ERROR line (a start cancelled
before it was routed: JupyterHub's stop deletes its route all the same).

JupyterHub's proxy knows only the routes of users' servers and services: its
periodic check deletes any other as stale.  `PortalProxy` (JupyterHub's
`proxy_class`, its documented extension point) keeps the apps' routes of
each running session in `self.app_routes` (their one owner), adds them back
with the session's own route (a restarted proxy), adopts those it finds of a
running session's job (a restarted hub), and removes them before the
session's own route at its end, and with any session not running.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from dataclasses import dataclass
from urllib.parse import urlsplit

from aiohttp import ClientTimeout
from jupyterhub.httpclient import fetch
from jupyterhub.proxy import ConfigurableHTTPProxy
from jupyterhub.utils import url_path_join

from ...contract import APPS_LABEL_PREFIX
from ..base.upstream_jupyterhub import check_routes

MARK = "dsportal_apps"  # in a route's data: one of these routes (its value: the user's name)
MAX_APP_ROUTES = 20  # per session (a session runs apps.max_running at once, 20 at most; a stopped app's goes)
ROUTED_EVERY = 5.0  # seconds between looks at the portal's mark in the proxy (keep_routed)
# The mark: a route of the portal's own that only a restarted proxy lacks.  Not one of JupyterHub's (no
# "jupyterhub" in its data), so JupyterHub's check never removes it as stale; a host name of the reserved .invalid
# domain where the proxy routes by host (a path prefix where it does not), to the hub: a request that names it
# (a client may send any Host) reaches the hub, where anything unrouted goes anyway.
MARK_ROUTE = "/dsportal-routes-kept.invalid"
MARK_ROUTE_DATA = "dsportal_mark"
FULL_CHECK_EVERY = 300.0  # seconds between full checks of every route, JupyterHub's default pace for its own
ROUTE_TIMEOUT = 10.0  # seconds a look at one route may take


class TooManyRoutes(Exception):
    """The session may route no more apps now; str(e) says why."""


@dataclass(frozen=True)
class AppRoute:
    spec: str  # the proxy's routespec: host and path
    origin: str  # https://LABEL.<domain>[:port]
    job_id: str  # the session job it belongs to


def app_route(subdomain_host: str, label: str, base_url: str, app_id: str, job_id: str) -> AppRoute:
    """An app's route (pure): its host under the hub's, the app's path on the session's server."""
    hub = urlsplit(subdomain_host)
    domain = f"{label}.{hub.hostname}"
    port = f":{hub.port}" if hub.port else ""
    spec = url_path_join(domain, base_url, f"dsportal/apps/{app_id}/")
    return AppRoute(spec, f"{hub.scheme}://{domain}{port}", job_id)


def route_data(user: str, server: str, app_id: str, route: AppRoute) -> dict:
    return {MARK: user, "server_name": server, "app": app_id, "job": route.job_id, "origin": route.origin}


def chp_path(routespec: str) -> str:
    """A routespec as configurable-http-proxy's API names it (pure): a leading slash, no trailing one."""
    path = routespec if routespec.startswith("/") else "/" + routespec
    return path.rstrip("/") or "/"


def running_job(users: dict, user: str, server: str) -> str:
    """The job of `user`'s session `server` if it is ready, else "" (pure; `users` by name: JupyterHub's UserDict
    is keyed by id, and its get() finds no name)."""
    found = users.get(user)
    spawner = found.spawners.get(server) if found is not None else None
    return getattr(spawner, "job_id", "") if spawner is not None and spawner.ready else ""


class PortalProxy(ConfigurableHTTPProxy):
    """configurable-http-proxy, with each app's route beside its session's own."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.app_routes: dict[tuple[str, str], dict[str, AppRoute]] = {}  # (user, session) -> app id -> route

    async def _ask(self, method: str, path: str, body: dict | None = None):
        """One request of configurable-http-proxy's routes API at `path`: its JSON answer (a GET's; {} for the
        others), or None when it has no such route.  Not JupyterHub's `api_request`: that one logs a missing
        route (404, an answer here) as an ERROR and raises, and retries a proxy that is away for 30 s, where the
        callers here ask again themselves or fall back to it."""
        async with self.semaphore:
            answer = await fetch(
                url_path_join(self.api_url, "api/routes", path),
                method=method,
                headers={"Authorization": f"token {self.auth_token}"},
                data=None if body is None else json.dumps(body),
                raise_for_status=False,
                timeout=ClientTimeout(total=ROUTE_TIMEOUT),
            )
            try:
                if answer.status == 404:
                    return None
                answer.raise_for_status()
                return await answer.json() if method == "GET" else {}
            finally:
                answer.release()  # the connection back to the pool, its body read or not

    async def get_route(self, routespec):
        """The route `routespec` (JupyterHub's form of it), or None: one small request (JupyterHub's asks for the
        whole table, hundreds of kilobytes with thousands of sessions, and a session's ended report asks every
        50 ms; spawner/hub/session/handlers.py).  configurable-http-proxy answers `/` with the whole table."""
        routespec = self.validate_routespec(routespec)
        path = chp_path(routespec)
        if path == "/":
            return await super().get_route(routespec)
        route = await self._ask("GET", path)
        if not isinstance(route, dict) or not route.pop("jupyterhub", False):
            return None  # none, or not one of JupyterHub's (get_all_routes leaves those out too)
        return {"routespec": routespec, "target": route.pop("target", ""), "data": route}

    async def delete_route(self, routespec):
        """Remove the route; one already gone is passed over in a line of INFO (JupyterHub's own logs an ERROR
        first).  A proxy that does not answer is JupyterHub's to retry."""
        try:
            gone = await self._ask("DELETE", chp_path(self.validate_routespec(routespec))) is None
        except Exception:  # noqa: BLE001 - away for a moment, or refused: JupyterHub's delete, with its retries
            return await super().delete_route(routespec)
        if gone:
            self.log.info("Route %s was already gone", routespec)

    async def keep_routed(self, app, every: float = ROUTED_EVERY, full_every: float = FULL_CHECK_EVERY) -> None:
        """Add the routes back after the proxy restarted (see above), until cancelled: the hub's background loop
        (spawner/hub/wiring/lifecycle.py).  The mark goes back before the check, so a second restart during a
        long check is seen at the next pass; a check that failed is tried again at each pass until one succeeds,
        and a failed full check waits its full pace like a good one."""
        loop = asyncio.get_running_loop()
        checked, marked, owed = loop.time(), False, False
        while True:
            try:
                if marked and await self._ask("GET", MARK_ROUTE) is None:
                    self.log.warning("The proxy has lost its routes (it restarted): adding every route back")
                    marked, owed = False, True
                if not marked:  # at the first pass, and after a loss: before the check
                    await self._ask("POST", MARK_ROUTE, {"target": app.hub.host, MARK_ROUTE_DATA: True})
                    marked = True
                if owed or loop.time() - checked >= full_every:
                    checked = loop.time()
                    await check_routes(app)
                    owed = False
            except Exception as e:  # noqa: BLE001 - the proxy away for a moment: the next pass asks again
                self.log.warning("Checking the proxy's routes failed (%s); again in %g s", e, every)
            await asyncio.sleep(every)

    async def route_app(self, user, spawner, app_id: str) -> str:
        """Route the app `app_id` of a running session at an origin of its own; that origin.  TooManyRoutes
        when the session holds MAX_APP_ROUTES (its apps' routes go when they stop: unroute_app)."""
        key, job_id = (user.name, spawner.name), getattr(spawner, "job_id", "")
        routes = self.app_routes.setdefault(key, {})
        found = routes.get(app_id)
        if found is not None and found.job_id == job_id:
            return found.origin
        if len(routes) >= MAX_APP_ROUTES:
            raise TooManyRoutes(f"This session holds {len(routes)} apps' addresses, the most it may; stop an app.")
        label = APPS_LABEL_PREFIX + secrets.token_hex(12)
        route = app_route(self.app.subdomain_host, label, spawner.server.base_url, app_id, job_id)
        routes[app_id] = route  # before the await: a second start counts it
        await self.add_route(route.spec, spawner.server.host, route_data(user.name, spawner.name, app_id, route))
        if self.app_routes.get(key) is not routes or not spawner.ready:  # the session ended meanwhile
            await self.delete_route(route.spec)
            raise TooManyRoutes("The session has ended.")
        return route.origin

    async def unroute_app(self, user, spawner, app_id: str) -> None:
        """The app stopped: its origin goes."""
        route = self.app_routes.get((user.name, spawner.name), {}).pop(app_id, None)
        if route is not None:
            await self.delete_route(route.spec)

    async def add_user(self, user, server_name=""):
        await super().add_user(user, server_name)
        spawner = user.spawners[server_name]
        if spawner.server is None or spawner.pending == "stop":
            # the session ended while the route was being added (JupyterHub asks once, before a request it may
            # retry for half a minute after a restart): its port may be free for anyone on the node by now
            self.log.warning("The session of %s ended while its route was added: removing it", user.name)
            await self.delete_route(spawner.proxy_spec)
            return
        job_id = getattr(spawner, "job_id", "")
        for app_id, route in self.app_routes.get((user.name, server_name), {}).items():
            if route.job_id == job_id:
                await self.add_route(route.spec, spawner.server.host, route_data(user.name, server_name, app_id, route))

    async def delete_user(self, user, server_name=""):
        # the apps' routes first: once the session's own route is gone, its port may be released (the ended
        # callback waits for that route only) and taken by another account on the node
        self.app_routes.pop((user.name, server_name), None)
        for spec, route in (await self.get_all_routes()).items():
            data = route.get("data", {})
            if data.get(MARK) == user.name and data.get("server_name") == server_name:
                self.log.info("Removing the apps of %s's session %r from the proxy", user.name, server_name)
                await self.delete_route(spec)
        await super().delete_user(user, server_name)

    async def check_routes(self, user_dict, service_dict, routes=None):
        routes = routes or await self.get_all_routes()
        apps = {spec: route for spec, route in routes.items() if MARK in route.get("data", {})}
        others = {spec: route for spec, route in routes.items() if spec not in apps}
        await super().check_routes(user_dict, service_dict, others)
        users = {user.name: user for user in user_dict.values()}
        for spec, route in apps.items():  # a restarted hub adopts the routes of its running sessions' jobs
            data = route["data"]
            job_id = running_job(users, data[MARK], data.get("server_name", ""))
            if job_id and job_id == data.get("job") and data.get("app") and data.get("origin"):
                kept = self.app_routes.setdefault((data[MARK], data.get("server_name", "")), {})
                kept.setdefault(data["app"], AppRoute(spec, data["origin"], job_id))
            else:
                self.log.warning("Deleting the stale route to an app %s", spec)
                await self.delete_route(spec)
        for (user, server), kept in list(self.app_routes.items()):
            job_id = running_job(users, user, server)
            if not job_id:
                del self.app_routes[(user, server)]
                continue
            target = users[user].spawners[server].server.host
            for app_id, route in kept.items():
                if route.job_id == job_id and apps.get(route.spec, {}).get("target") != target:
                    self.log.warning("Adding the missing route to an app of %s (%s)", user, route.spec)
                    await self.add_route(route.spec, target, route_data(user, server, app_id, route))

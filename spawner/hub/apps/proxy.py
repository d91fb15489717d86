"""The proxy's routes to each session's apps' own origin (hub side).

A session's apps are served at an origin of their own, apart from the
session's Jupyter server (spawner/jupyter/apps/origin.py says why):
`https://apps--HASH.<hub.subdomain_host's name>:PORT`, the label derived from
the user, the session's name and its Slurm job (spawner/contract.py).  The
proxy routes only the apps' path there, `/user/NAME[/SESSION]/dsportal/apps/`,
to the session's server; everything else on that host reaches the hub, which
serves nothing of a session there.

JupyterHub's proxy knows only the routes of users' servers and services: its
periodic check deletes any other as stale.  `PortalProxy` (JupyterHub's
`proxy_class`, its documented extension point) adds and removes the apps'
route with the server's own, and keeps its check from deleting them while it
adds any that are missing.  No route is added for a session whose job the hub
does not know.
"""

from __future__ import annotations

from jupyterhub.proxy import ConfigurableHTTPProxy
from jupyterhub.utils import url_path_join

from ...contract import apps_label

MARK = "dsportal_apps"  # in a route's data: one of these routes (its value: the user's name)


def apps_routespec(domain: str, user: str, server: str, base_url: str, job_id: str) -> str:
    """The proxy's routespec of a session's apps (pure): host and path, as JupyterHub writes a user's."""
    return url_path_join(f"{apps_label(user, server, job_id)}.{domain}", base_url, "dsportal/apps/")


def wanted_routes(domain: str, users) -> dict[str, tuple[str, dict]]:
    """routespec -> (target, data) of every ready session's apps, from JupyterHub's users (pure)."""
    wanted = {}
    for user in users:
        for name, spawner in user.spawners.items():
            job_id = getattr(spawner, "job_id", "")
            if spawner.ready and job_id and spawner.server is not None:
                spec = apps_routespec(domain, user.name, name, spawner.server.base_url, job_id)
                wanted[spec] = (spawner.server.host, {MARK: user.name, "server_name": name})
    return wanted


class PortalProxy(ConfigurableHTTPProxy):
    """configurable-http-proxy, with each session's apps' route beside the session's own."""

    @property
    def domain(self) -> str:
        return self.app.domain if self.app.subdomain_host else ""

    async def add_user(self, user, server_name=""):
        await super().add_user(user, server_name)
        spawner = user.spawners[server_name]
        job_id = getattr(spawner, "job_id", "")
        if self.domain and job_id:
            spec = apps_routespec(self.domain, user.name, server_name, spawner.server.base_url, job_id)
            await self.add_route(spec, spawner.server.host, {MARK: user.name, "server_name": server_name})

    async def delete_user(self, user, server_name=""):
        # the apps' route first: once the session's own route is gone, its port may be released (the ended
        # callback waits for that route only) and taken by another account on the node
        if self.domain:
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
        wanted = wanted_routes(self.domain, user_dict.values()) if self.domain else {}
        for spec, (target, data) in wanted.items():
            if apps.get(spec, {}).get("target") != target:
                self.log.warning("Adding the missing route to %s's apps (%s)", data[MARK], spec)
                await self.add_route(spec, target, data)
        for spec in apps.keys() - wanted.keys():
            self.log.warning("Deleting the stale route to apps %s", spec)
            await self.delete_route(spec)

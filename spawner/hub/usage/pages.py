"""The user's usage page and the admins' status page, and plotly.js for their plots (hub side).

    GET /hub/dsportal/usage                    the logged-in user's GPU-hours and efficiency over time
    GET /hub/dsportal/status[?range=24h|7d]    the cluster at a glance, from Prometheus: hub admins only (403)
    GET /hub/dsportal/static/plotly.min.js     the charting library, from the installed `plotly` package

Both pages extend the portal's page (templates/usage.html, status.html) and
hand their figures (spawner/hub/usage/charts.py) to plotly.js.  The static
route serves that one file: plotly's package folder holds nothing else a
page needs.
"""

from __future__ import annotations

import importlib.util
from datetime import datetime
from pathlib import Path

from jupyterhub.handlers import BaseHandler
from tornado import web

from ..homepage import portal_spawner
from ..requestlimits import Bounded
from ..services import hub_services
from ..slurm import SlurmError
from .accounting import NO_ACCOUNTING, usage_listing
from .prometheus import RANGES, Prometheus
from .status import status_data
from .userusage import usage_page

PLOTLY_FILE = "plotly.min.js"


def plotly_folder() -> str:
    """The installed plotly package's folder of plotly.js (found without importing plotly's Python side)."""
    spec = importlib.util.find_spec("plotly")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the plotly package is not installed: the usage pages cannot draw their plots")
    return str(Path(list(spec.submodule_search_locations)[0]) / "package_data")


class UsagePageHandler(Bounded, BaseHandler):
    @web.authenticated
    async def get(self):
        user = self.current_user
        spawner = portal_spawner(user)
        if spawner is None:
            raise web.HTTPError(404, "This hub's sessions are not the portal's.")
        error = ""
        try:
            jobs = [job for job in (await usage_listing(hub_services()).jobs()).values() if job.user == user.name]
        except SlurmError as e:
            self.log.warning("Slurm's accounting for %s's usage page: %s", user.name, e)
            jobs, error = None, NO_ACCOUNTING
        data = usage_page(jobs, spawner.record.usage_log, datetime.now(), error)
        self.finish(await self.render_template("usage.html", data=data, plotly_url=self.plotly_url()))

    def plotly_url(self) -> str:
        return self.hub.base_url + "dsportal/static/" + PLOTLY_FILE


class StatusPageHandler(UsagePageHandler):
    @web.authenticated
    async def get(self):
        if not self.current_user.admin:
            raise web.HTTPError(403, "The cluster's status page is for the portal's admins.")
        window = self.get_argument("range", "24h")
        if window not in RANGES:
            raise web.HTTPError(400, f"range must be one of {', '.join(RANGES)}.")
        usage = hub_services().settings.usage
        data = await status_data(Prometheus(usage.prometheus_url, usage.prometheus_timeout), window)
        self.finish(await self.render_template("status.html", data=data, plotly_url=self.plotly_url()))


class PlotlyHandler(Bounded, web.StaticFileHandler):
    def set_extra_headers(self, path):
        self.set_header("Cache-Control", "public, max-age=86400")


def handlers() -> list[tuple]:
    return [
        ("/dsportal/usage", UsagePageHandler),
        ("/dsportal/status", StatusPageHandler),
        (r"/dsportal/static/(plotly\.min\.js)", PlotlyHandler, {"path": plotly_folder()}),
    ]

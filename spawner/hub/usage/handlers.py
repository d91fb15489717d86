"""The usage concept's HTTP handlers in the hub: the user's usage page, the admins' status page, plotly.js, and the sessions' reports.

    GET  /hub/dsportal/usage                    the logged-in user's GPU-hours (per account and type) and efficiency
    GET  /hub/dsportal/status[?range=24h|7d]    the cluster at a glance, from Prometheus and Slurm's accounting
                                                (GPU-hours per account and type): hub admins only (403)
    GET  /hub/dsportal/static/plotly.min.js     the charting library, from the installed `plotly` package
    POST /hub/api/dsportal/session/usage        a session's tally (spawner/usage.py), with its own token -> 204

Both pages extend the portal's page (templates/usage.html, status.html) and
hand their figures (spawner/hub/usage/charts.py) to plotly.js.  The static
route serves that one file: plotly's package folder holds nothing else a
page needs.

The session's server (spawner/jupyter/usage/sampler.py) sends its whole tally
every `usage.report_seconds`; the hub keeps the last one in the session's
record, and the session's end turns it into the summary.  Only a session's
own token may report, for that session; a report that does not read is a 400
and changes nothing.  A user can forge their own session's report (the token
is theirs): it is their own summary they would spoil, and the accounting's
CPU and memory come from Slurm.
"""

from __future__ import annotations

import importlib.util
from datetime import datetime
from pathlib import Path

from jupyterhub.apihandlers import APIHandler
from jupyterhub.handlers import BaseHandler
from tornado import web

from ...contract import USAGE_PATH
from ...usage import UsageTally
from ..base.requestlimits import Bounded
from ..request.sessionlimits import user_sessions
from ..session.lookup import own_spawner, portal_spawner
from ..session.userrecord import user_record
from ..slurm.client import SlurmError
from .accounting import NO_ACCOUNTING, usage_listing
from .prometheus import RANGES, Prometheus
from .status import status_data
from .userusage import split_gpu_hours, usage_page

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
            jobs = [job for job in (await usage_listing(self.portal_services).jobs()).values() if job.user == user.name]
        except SlurmError as e:
            self.log.warning("Slurm's accounting for %s's usage page: %s", user.name, e)
            jobs, error = None, NO_ACCOUNTING
        label = self.portal_services.settings.slurm.gpu_label
        data = usage_page(jobs, user_record(spawner).usage_log, datetime.now(), error, label)
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
        usage = self.portal_services.settings.usage
        data = await status_data(Prometheus(usage.prometheus_url, usage.prometheus_timeout), window)
        try:  # every user's GPU-hours per account and type: Slurm's accounting, the listing the usage pages share
            jobs = list((await usage_listing(self.portal_services).jobs()).values())
            data["split"] = split_gpu_hours(jobs, datetime.now(), self.portal_services.settings.slurm.gpu_label)
            data["split_error"] = ""
        except SlurmError as e:
            self.log.warning("Slurm's accounting for the status page: %s", e)
            data["split"], data["split_error"] = [], NO_ACCOUNTING
        self.finish(await self.render_template("status.html", data=data, plotly_url=self.plotly_url()))


class PlotlyHandler(Bounded, web.StaticFileHandler):
    rate_limited = limit_anonymous = False  # a public file: bodies bounded, callers not (requestlimits)

    def set_extra_headers(self, path):
        self.set_header("Cache-Control", "public, max-age=86400")


def handlers() -> list[tuple]:
    return [
        ("/dsportal/usage", UsagePageHandler),
        ("/dsportal/status", StatusPageHandler),
        (r"/dsportal/static/(plotly\.min\.js)", PlotlyHandler, {"path": plotly_folder()}),
    ]


class UsageReportHandler(Bounded, APIHandler):
    def post(self):
        default = own_spawner(self, "Only a session's own server reports what it used.")
        token = self.get_auth_token() or ""
        session = next((s for s in user_sessions(default.user) if s.holds_token(token)), None)
        if session is None or not session.job_id:
            raise web.HTTPError(403, "Only a running session's own server reports what it used, with its token.")
        try:
            tally = UsageTally.from_dict(self.get_json_body())
        except ValueError as e:
            raise web.HTTPError(400, f"This usage report does not read: {e}.") from None
        if not session.record.stopping:  # a stop took the last tally for the summary: a late one is dropped
            session.record.usage = tally.to_dict()
        self.set_status(204)
        self.finish()


HANDLERS = [("/api" + USAGE_PATH, UsageReportHandler)]  # installed by spawner/hub/wiring/routes.py

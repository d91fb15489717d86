"""JupyterLab's jobs panel and "Run as a job" dialog, passed on to the hub (the user's Jupyter server).

    GET  {base}dsportal/runs?limit=&offset=   a page of the user's jobs -> GET  {hub api}/dsportal/runs
    GET  {base}dsportal/runs/form?path=P      the dialog's fields      -> GET  .../dsportal/runs/form?path=P
    POST {base}dsportal/runs                  submit                   -> POST .../dsportal/runs
    POST {base}dsportal/runs/ID/cancel|again  cancel, run again        -> POST .../dsportal/runs/ID/cancel|again
    GET  {base}dsportal/runs/ID/log?lines=N   the log's tail           -> GET  .../dsportal/runs/ID/log?lines=N
    GET  {base}dsportal/runs/ID/tasks         a sweep's table          -> GET  .../dsportal/runs/ID/tasks
    GET|POST {base}dsportal/notify            e-mail opt-in            -> .../dsportal/notify
    POST {base}dsportal/runs/defaults         a copy of a notebook with chosen defaults (runs/defaults.py: here, not the hub)

The hub does everything (it validates, runs Slurm as the user, shares one
listing of every user's jobs); this only carries the session's own token
(spawner/jupyter/session/hubcall.py).  The frontend is spawner/labext/src/runs/.
"""

from __future__ import annotations

from urllib.parse import urlencode

from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web

from ...slurmvocab import JOB_ID_IN_PATH
from ..session.hubcall import ask_hub
from . import defaults

# what may be passed on: the hub's routes for runs, nothing else (a job id is Slurm's: 123, 123_4, 82+1, its + as
# encodeURIComponent writes it); `jobs` is their name in 0.1, answered until 0.3: a browser tab that loaded 0.1's
# extension before an upgrade keeps working
ROUTE = rf"((?:runs|jobs)(?:/form|/{JOB_ID_IN_PATH}/(?:cancel|again|log|tasks))?|notify)"
QUERY_KEYS = ("path", "lines", "limit", "offset")


class RunsHandler(APIHandler):
    def _query(self) -> str:
        query = {k: self.get_argument(k) for k in QUERY_KEYS if self.get_argument(k, None) is not None}
        return "?" + urlencode(query) if query else ""

    async def _pass_on(self, method: str, route: str) -> None:
        status, body = await ask_hub(method, f"/dsportal/{route}{self._query()}", self.request.body or None)
        self.set_status(status)
        self.finish(body)

    @web.authenticated
    async def get(self, route: str):
        await self._pass_on("GET", route)

    @web.authenticated
    async def post(self, route: str):
        await self._pass_on("POST", route)


def load(serverapp) -> None:
    """Install the handlers (spawner/jupyter/extension.py calls this)."""
    base = serverapp.web_app.settings["base_url"]
    serverapp.web_app.add_handlers(
        ".*$",
        [
            (url_path_join(base, "dsportal", ROUTE), RunsHandler),
            (url_path_join(base, "dsportal", defaults.ROUTE), defaults.DefaultsHandler),
        ],
    )

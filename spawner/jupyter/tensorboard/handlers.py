"""TensorBoard for any folder, behind the session's login (in the user's Jupyter server, in the Slurm job).

    POST   {base}dsportal/tensorboard/api/instances        {"logdir": "logs"} -> {"id", "logdir", "url"}
    GET    {base}dsportal/tensorboard/api/instances        running instances
    DELETE {base}dsportal/tensorboard/api/instances/ID     stop one
    GET    {base}dsportal/tensorboard/                      a page listing them, with stop buttons
    *      {base}dsportal/tensorboard/ID/...                TensorBoard itself (instances.py)

Every handler requires the session's own Jupyter login (the hub's OAuth); the frontend (spawner/labext) adds
"Open TensorBoard" to the file browser and the launcher.
"""

from __future__ import annotations

import asyncio
import html
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from jupyter_server.base.handlers import APIHandler, JupyterHandler
from jupyter_server.utils import url_path_join
from tornado import web
from tornado.wsgi import WSGIContainer

from ...sessionspec import SessionSpec
from ..session.listpage import running_page
from ..session.origin import same_origin
from ..session.upstream_tornado import answered_by_container
from .instances import LogdirError, TensorBoards, TooManyError

SETTINGS_KEY = "dsportal_tensorboards"


class _Base(JupyterHandler):
    @property
    def boards(self) -> TensorBoards:
        return self.settings[SETTINGS_KEY]


class InstancesHandler(_Base, APIHandler):
    @web.authenticated
    def get(self):
        self.finish(json.dumps([i.to_dict() for i in self.boards.list()]))

    # Opening reads the folder and builds TensorBoard (imports, plugins): seconds on
    # a slow filesystem, so never on the event loop that serves the whole session.
    opener = ThreadPoolExecutor(2, thread_name_prefix="tensorboard-open")

    @web.authenticated
    async def post(self):
        body = self.get_json_body() or {}
        if not isinstance(body, dict) or set(body) != {"logdir"}:
            raise web.HTTPError(400, 'Send {"logdir": "<folder>"}')
        try:
            instance, started = await asyncio.get_running_loop().run_in_executor(
                self.opener, self.boards.open, body["logdir"]
            )
        except TooManyError as e:
            raise web.HTTPError(409, str(e)) from None
        except LogdirError as e:
            raise web.HTTPError(400, str(e)) from None
        self.set_status(201 if started else 200)
        self.finish(json.dumps(instance.to_dict()))


class InstanceHandler(_Base, APIHandler):
    @web.authenticated
    def delete(self, id_: str):
        if not self.boards.close(id_):
            raise web.HTTPError(404, "No such TensorBoard")
        self.set_status(204)
        self.finish()


class ListPageHandler(_Base):
    @web.authenticated
    def get(self):
        rows = (
            "".join(
                f'<tr><td><a href="{html.escape(i.url)}" target="_blank" rel="noopener">{html.escape(i.logdir)}</a></td>'
                f'<td><button type="button" data-id="{i.id}">Stop</button></td></tr>'
                for i in self.boards.list()
            )
            or '<tr><td colspan="2">No TensorBoard is running. In the file browser, right-click a folder and choose "Open TensorBoard".</td></tr>'
        )
        self.finish(
            running_page(
                "TensorBoard",
                "Running TensorBoards",
                rows,
                "Each stops by itself when your session ends.",
                url_path_join(self.base_url, "dsportal/tensorboard/api/instances"),
                self.xsrf_token.decode(),
            )
        )


class TensorBoardHandler(_Base):
    """TensorBoard's WSGI application, for the session's owner only."""

    executor = ThreadPoolExecutor(8, thread_name_prefix="tensorboard")

    def check_xsrf_cookie(self):
        # TensorBoard's own page sends its data queries as POSTs without Jupyter's
        # XSRF token.  From the session's own origin that is safe: browsers send
        # Origin on cross-origin POSTs and no page script can forge it.  Anything
        # else, a POST from another origin or one without Origin or Referer, must
        # carry the XSRF token as every Jupyter request does.
        if same_origin(self.request.headers):
            return None
        return super().check_xsrf_cookie()

    @web.authenticated
    async def _serve(self, id_: str, rest: str | None = None):
        instance = self.boards.get(id_)
        if instance is None:
            raise web.HTTPError(404, "This TensorBoard was stopped; open it again from the file browser.")
        await WSGIContainer(instance.app, executor=self.executor).handle_request(self.request)
        answered_by_container(self)  # the container wrote the whole response

    get = post = head = _serve


def load(serverapp, spec: SessionSpec) -> str:
    """Install TensorBoard's handlers (spawner/jupyter/extension.py calls this); returns their prefix."""
    base = serverapp.web_app.settings["base_url"]
    boards = TensorBoards(
        Path(serverapp.root_dir).expanduser(),
        base,
        max_instances=spec.tensorboard.max_instances,
        big_roots=tuple(spec.storage.values()),
    )
    serverapp.web_app.settings[SETTINGS_KEY] = boards
    prefix = url_path_join(base, "dsportal/tensorboard")
    serverapp.web_app.add_handlers(
        ".*$",
        [
            (url_path_join(prefix, "api/instances"), InstancesHandler),
            (url_path_join(prefix, r"api/instances/([0-9a-f]{12})"), InstanceHandler),
            (prefix + "/?", ListPageHandler),
            (url_path_join(prefix, r"([0-9a-f]{12})(/.*)?"), TensorBoardHandler),
        ],
    )
    return prefix

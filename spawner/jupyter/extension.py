"""Jupyter server extension: TensorBoard for any folder, behind the session's login.

    POST   {base}dsportal/tensorboard/api/instances        {"logdir": "logs"} -> {"id", "logdir", "url"}
    GET    {base}dsportal/tensorboard/api/instances        running instances
    DELETE {base}dsportal/tensorboard/api/instances/ID     stop one
    GET    {base}dsportal/tensorboard/                      a page listing them, with stop buttons
    *      {base}dsportal/tensorboard/ID/...                TensorBoard itself (spawner/jupyter/tensorboard/instances.py)

Every handler requires the session's own Jupyter login (the hub's OAuth);
the frontend (spawner/labext) adds "Open TensorBoard" to the file browser
and the launcher.
"""

from __future__ import annotations

import asyncio
import html
import json
import os
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from jupyter_server.auth.decorator import allow_unauthenticated
from jupyter_server.base.handlers import APIHandler, JupyterHandler
from jupyter_server.utils import url_path_join
from tornado import web
from tornado.wsgi import WSGIContainer

from ..contract import READY_PATH, readiness_proof
from ..sessionspec import SessionSpec
from .apps import handlers as apps
from .clock import handlers as sessionapi
from .runs import handlers as jobs
from .session import token as sessiontoken
from .session.listpage import running_page
from .session.origin import same_origin
from .session.upstream_tornado import answered_by_container
from .tensorboard.instances import LogdirError, TensorBoards, TooManyError

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


class ReadyHandler(JupyterHandler):
    """The hub's readiness check: this server proves it is the session's (it alone holds the token)."""

    @allow_unauthenticated
    def get(self):
        nonce = self.get_argument("nonce", "")
        if not re.fullmatch(r"[0-9a-f]{16,64}", nonce):
            raise web.HTTPError(400, "nonce must be 16 to 64 hex digits")
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps({"proof": readiness_proof(sessiontoken.current(), nonce)}))


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


def _jupyter_server_extension_points():
    return [{"module": "spawner.jupyter.extension"}]


def _load_jupyter_server_extension(serverapp):
    base = serverapp.web_app.settings["base_url"]
    # what the admin set; under dsportal-singleuser its start (spawner/job/session/start.py) has already read it
    spec = SessionSpec.from_environ(os.environ)
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
            (url_path_join(base, READY_PATH), ReadyHandler),
            (url_path_join(prefix, "api/instances"), InstancesHandler),
            (url_path_join(prefix, r"api/instances/([0-9a-f]{12})"), InstanceHandler),
            (prefix + "/?", ListPageHandler),
            (url_path_join(prefix, r"([0-9a-f]{12})(/.*)?"), TensorBoardHandler),
        ],
    )
    running_apps = apps.load(serverapp, spec.apps)
    sessionapi.load(serverapp, spec.clock, spec.idle, spec.usage)
    jobs.load(serverapp)
    sessiontoken.load(serverapp)  # the hub hands the session a new token when a share ends
    serverapp.log.info(
        "DS Portal extension loaded: TensorBoard at %s, apps (%s), the session's clock, the jobs panel",
        prefix,
        ", ".join(running_apps.offered) or "none",
    )


def _unload_jupyter_server_extension(serverapp):
    """Jupyter Server's hook at its end: the apps' process groups are stopped with it."""
    running_apps = serverapp.web_app.settings.get(apps.SETTINGS_KEY)
    if running_apps is not None:
        running_apps.stop_all_now()

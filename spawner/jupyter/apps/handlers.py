"""The apps' API and page in the session's server (in the Slurm job, as the user).

    GET    {base}dsportal/apps/api/kinds              the apps this session offers: [{"name", "title", "target"}]
    GET    {base}dsportal/apps/api/instances          the apps started: [{"id", "kind", "title", "target", "url",
                                                      "state", "ended"}]
    POST   {base}dsportal/apps/api/instances          {"kind": "vscode"|"mlflow"|"streamlit"|"dash"|"auto",
                                                      "target": "<file or folder>"} -> the app (201 started)
    DELETE {base}dsportal/apps/api/instances/ID       stop it
    GET    {base}dsportal/apps/                       a page listing them, with stop buttons
    *      {base}dsportal/apps/ID/...                 the app itself (proxy.py)

Every handler requires the session's Jupyter login.
"""

from __future__ import annotations

import html
import importlib.util
import json
import os
import shutil
import sys
from pathlib import Path

from jupyter_server.base.handlers import APIHandler, JupyterHandler
from jupyter_server.utils import url_path_join
from tornado import web

from ...contract import KERNEL_PYTHON_VAR
from ...sessionspec import AppsSpec
from ..session.listpage import running_page
from .catalog import KINDS, offered_kinds
from .instances import AppError, Apps, TooManyError
from .proxy import SETTINGS_KEY, AppProxyHandler

__all__ = ["SETTINGS_KEY", "load"]

MAX_TARGET = 4096


class _Base(JupyterHandler):
    @property
    def apps(self) -> Apps:
        return self.settings[SETTINGS_KEY]


class KindsHandler(_Base, APIHandler):
    @web.authenticated
    def get(self):
        kinds = [KINDS[k] for k in self.apps.offered]
        self.finish(json.dumps([{"name": k.name, "title": k.title, "target": k.target} for k in kinds]))


def parse_open(body: object) -> tuple[str, str]:
    """The request's body -> (kind, target); ValueError saying what to send (pure)."""
    if not isinstance(body, dict) or set(body) != {"kind", "target"}:
        raise ValueError('Send {"kind": "<app>", "target": "<file or folder>"}')
    kind, target = body["kind"], body["target"]
    if not isinstance(kind, str) or (kind not in KINDS and kind != "auto"):
        raise ValueError(f"kind must be one of {', '.join([*KINDS, 'auto'])}")
    if not isinstance(target, str) or len(target) > MAX_TARGET:
        raise ValueError(f"target must be a path of at most {MAX_TARGET} characters")
    return kind, target


class InstancesHandler(_Base, APIHandler):
    @web.authenticated
    def get(self):
        self.finish(json.dumps([a.to_dict() for a in self.apps.list()]))

    @web.authenticated
    async def post(self):
        try:
            kind, target = parse_open(self.get_json_body())
            app, started = await self.apps.open(kind, target)
        except TooManyError as e:
            raise web.HTTPError(409, str(e)) from None
        except (AppError, ValueError) as e:
            raise web.HTTPError(400, str(e)) from None
        self.set_status(201 if started else 200)
        self.finish(json.dumps(app.to_dict()))


class InstanceHandler(_Base, APIHandler):
    @web.authenticated
    async def delete(self, id_: str):
        if not await self.apps.stop(id_):
            raise web.HTTPError(404, "No such app")
        self.set_status(204)
        self.finish()


class ListPageHandler(_Base):
    @web.authenticated
    def get(self):
        rows = "".join(
            f"<tr><td>{html.escape(a.to_dict()['title'])}</td><td>"
            + (
                f'<a href="{html.escape(a.url)}" target="_blank" rel="noopener">{html.escape(a.target)}</a>'
                if a.state == "running"
                else f"{html.escape(a.target)} ({html.escape(a.ended)})"
            )
            + f'</td><td><button type="button" data-id="{a.id}">Stop</button></td></tr>'
            for a in self.apps.list()
        ) or (
            '<tr><td colspan="3">No app is running. Open VS Code or MLflow from the launcher, or right-click a '
            'Streamlit or Dash file and choose "Open as app".</td></tr>'
        )
        self.finish(
            running_page(
                "Apps",
                "Running apps",
                rows,
                "Each app is yours alone: it listens on a private socket of this session, reached only through your "
                "login. It stops when your session ends; nothing restarts it by itself.",
                url_path_join(self.base_url, "dsportal/apps/api/instances"),
                self.xsrf_token.decode(),
            )
        )


def has_module(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def app_python() -> str:
    """The Python that runs the user's apps: the Python 3 kernel's, which sees the user's own packages (the
    layer spawner/job/kernels/userlayer.py makes at the session's start), else the server's."""
    return os.environ.get(KERNEL_PYTHON_VAR) or sys.executable


def load(serverapp, spec: AppsSpec) -> Apps:
    """Offer the apps this node can serve (each one left out says why in the session's log) and route them."""
    offered, notes = offered_kinds(spec.offered, spec.code_server, shutil.which, has_module)
    for note in notes:
        serverapp.log.warning("dsportal: %s", note)
    base = serverapp.web_app.settings["base_url"]
    runtime = Path(os.environ.get("JUPYTER_RUNTIME_DIR") or serverapp.runtime_dir)
    apps = Apps(
        Path(serverapp.root_dir).expanduser(),
        runtime,
        base,
        offered,
        app_python(),
        spec.code_server,
        spec.max_running,
        spec.start_seconds,
    )
    serverapp.web_app.settings[SETTINGS_KEY] = apps
    prefix = url_path_join(base, "dsportal/apps")
    serverapp.web_app.add_handlers(
        ".*$",
        [
            (url_path_join(prefix, "api/kinds"), KindsHandler),
            (url_path_join(prefix, "api/instances"), InstancesHandler),
            (url_path_join(prefix, r"api/instances/([0-9a-f]{12})"), InstanceHandler),
            (prefix + "/?", ListPageHandler),
            (url_path_join(prefix, r"([0-9a-f]{12})(/.*)?"), AppProxyHandler),
        ],
    )
    return apps

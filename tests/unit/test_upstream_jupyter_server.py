"""What the session's server relies on past Jupyter Server's public hooks: each test fails when Jupyter Server
changes it.  The places are listed, with why, in spawner/jupyter/session/upstream_jupyter_server.py."""

from __future__ import annotations

import asyncio
import inspect
import shutil
import socket
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest
from jupyter_server.serverapp import ServerApp, ServerWebApplication
from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager
from jupyterhub.singleuser import extension
from tornado import web

from spawner.jupyter.session.upstream_jupyter_server import (
    LISTING_TRIES,
    SessionContentsManager,
    last_activity_without,
    report_activity_by,
    serve_on_sockets,
)

T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)


def test_jupyter_server_finds_its_port_then_binds_it_through_these_two_methods():
    start = inspect.getsource(ServerApp.init_httpserver)
    assert "self._find_http_port()" in start and "self._bind_http_server" in start
    assert "self._bind_http_server_tcp()" in inspect.getsource(ServerApp._bind_http_server)
    assert list(inspect.signature(ServerApp._find_http_port).parameters) == ["self"]
    assert list(inspect.signature(ServerApp._bind_http_server_tcp).parameters) == ["self"]


class Listening:
    def __init__(self):
        self.added: list = []

    def add_sockets(self, sockets) -> None:
        self.added.extend(sockets)


def test_the_server_serves_on_the_sockets_bound_before_it_started():
    bound = socket.socket()
    bound.bind(("127.0.0.1", 0))
    listening: list[bool] = []
    serverapp = SimpleNamespace(port=0, http_server=Listening())
    try:
        serve_on_sockets(serverapp, [bound], lambda: listening.append(True))
        serverapp._find_http_port()
        assert serverapp.port == bound.getsockname()[1]
        assert serverapp._bind_http_server_tcp() is True
        assert serverapp.http_server.added == [bound] and listening == [True]
    finally:
        bound.close()


class Kernels:
    last_kernel_activity = T0 + timedelta(minutes=1)


def settings() -> dict:
    return {
        "started": T0,
        "kernel_manager": Kernels(),
        "api_last_activity": T0 + timedelta(hours=3),
        "terminal_last_activity": T0 + timedelta(minutes=5),
        "last_activity_times": {"a": T0 + timedelta(minutes=2)},
        "base_url": "/user/alice/",
    }


def test_the_copy_of_last_activity_counts_what_jupyter_servers_own_counts():
    upstream = ServerWebApplication.last_activity(SimpleNamespace(settings=settings()))
    assert last_activity_without(settings(), ()) == upstream == T0 + timedelta(hours=3)
    assert last_activity_without(settings(), ("api_last_activity",)) == T0 + timedelta(minutes=5)


def test_jupyterhub_reports_the_applications_last_activity_asked_at_each_report():
    assert "self.serverapp.web_app.last_activity()" in inspect.getsource(extension.JupyterHubSingleUser.notify_activity)
    web_app = SimpleNamespace(last_activity=lambda: T0)
    report_activity_by(SimpleNamespace(web_app=web_app), lambda: T0 + timedelta(hours=1))
    assert web_app.last_activity() == T0 + timedelta(hours=1)


# --- a folder's listing while its files change (SessionContentsManager) ---


def vanishing(base: type, name: str, times: int) -> type:
    """`base`, whose listing sees `name` go between reading the folder's names and asking about it, `times` times
    (SQLite's journal of MLflow's database while a notebook logs metrics)."""

    class Manager(base):
        gone = 0

        async def get(self, path, content=True, type=None, format=None, require_hash=False):
            if path.endswith("/" + name) and self.gone < times:
                self.gone += 1
                (self.root_path / path).unlink()  # gone after the listing's lstat, before this get
                try:
                    return await super().get(path, content=content, type=type, format=format)
                finally:
                    (self.root_path / path).write_text("")  # and back, for the next write
            return await super().get(path, content=content, type=type, format=format, require_hash=require_hash)

    return Manager


def a_folder(tmp_path):
    (tmp_path / "templates").mkdir()
    for name in ("train.ipynb", "mlflow.db", "mlflow.db-journal"):
        (tmp_path / "templates" / name).write_text("")
    return tmp_path


def listing(manager_class: type, root) -> dict:
    manager = manager_class(root_dir=str(root))
    manager.root_path = root
    return asyncio.run(manager.get("templates", content=True))


def test_a_file_gone_between_the_names_and_its_details_fails_jupyter_servers_listing(tmp_path):
    with pytest.raises(web.HTTPError) as refused:  # what JupyterLab's file browser got: "Directory not found"
        listing(vanishing(AsyncLargeFileManager, "mlflow.db-journal", 1), a_folder(tmp_path))
    assert refused.value.status_code == 404


def test_the_sessions_listing_is_read_again_and_comes_out_whole(tmp_path):
    model = listing(vanishing(SessionContentsManager, "mlflow.db-journal", 1), a_folder(tmp_path))
    assert sorted(item["name"] for item in model["content"]) == ["mlflow.db", "mlflow.db-journal", "train.ipynb"]


def test_a_folder_that_changes_at_every_read_still_fails_and_one_that_went_at_once(tmp_path):
    root = a_folder(tmp_path)
    manager = vanishing(SessionContentsManager, "mlflow.db-journal", LISTING_TRIES)(root_dir=str(root))
    manager.root_path = root
    with pytest.raises(web.HTTPError):
        asyncio.run(manager.get("templates", content=True))
    assert manager.gone == LISTING_TRIES  # bounded: it stops trying

    class FolderGoes(SessionContentsManager):  # the whole folder removed while it was listed
        asked = 0

        async def get(self, path, content=True, type=None, format=None, require_hash=False):
            if path.startswith("templates/"):
                self.asked += 1
                shutil.rmtree(root / "templates")
            return await super().get(path, content=content, type=type, format=format)

    going = FolderGoes(root_dir=str(root))
    with pytest.raises(web.HTTPError) as refused:
        asyncio.run(going.get("templates", content=True))
    assert (refused.value.status_code, going.asked) == (404, 1)  # not read again: the 404 is the answer


def test_the_port_keeper_imports_no_contents_manager_before_the_sessions_preparation():
    """The session's first process (spawner/jupyter/singleuser.py) imports this module before it prepares the
    session; the contents manager's base class imports nbformat's validator, 1.9 s of every start here, so it is
    made only when Jupyter Server loads it by name, in the forked server."""
    probe = (
        "import sys, spawner.jupyter.singleuser as s\n"
        "print(sorted(m for m in sys.modules if m.startswith(('nbformat', 'jupyter_server.services.contents'))))\n"
        "from traitlets.utils.importstring import import_item\n"
        "c = import_item('spawner.jupyter.session.upstream_jupyter_server.SessionContentsManager')\n"
        "print(c.__name__, c.__mro__[1].__name__, 'nbformat' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.splitlines() == ["[]", "SessionContentsManager AsyncLargeFileManager True"]

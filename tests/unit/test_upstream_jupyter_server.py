"""What the session's server relies on past Jupyter Server's public hooks: each test fails when Jupyter Server
changes it.  The places are listed, with why, in spawner/jupyter/session/upstream_jupyter_server.py."""

from __future__ import annotations

import inspect
import socket
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

from jupyter_server.serverapp import ServerApp, ServerWebApplication
from jupyterhub.singleuser import extension

from spawner.jupyter.session.upstream_jupyter_server import (
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

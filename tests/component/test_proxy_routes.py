"""The hub's look at the proxy's routes (spawner/hub/apps/proxy.py) against a real configurable-http-proxy.

`get_route` asks for one route, `keep_routed` notices a restarted proxy by the mark it put there and has
JupyterHub's check add the routes back, once per restart.  The dev cluster's test restarts its proxy with a
session running (tests/integration/test_proxy_restart.py)."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import subprocess
import time
from contextlib import contextmanager
from types import SimpleNamespace

import pytest

from spawner.hub.apps.proxy import MARK_ROUTE, PortalProxy
from tests.support.http import free_port, wait_until

TOKEN = "a-token-of-the-proxys-api"


@contextmanager
def a_proxy(api_port: int):
    """configurable-http-proxy on loopback, routing by host as the portal's does; stopped afterwards."""
    program = shutil.which("configurable-http-proxy")
    assert program, "configurable-http-proxy is not installed: run `deploy/devcluster up` first"
    argv = [program, "--ip", "127.0.0.1", "--port", str(free_port()), "--api-ip", "127.0.0.1"]
    argv += ["--api-port", str(api_port), "--host-routing", "--default-target", "http://127.0.0.1:9"]
    process = subprocess.Popen(
        argv, env={**os.environ, "CONFIGPROXY_AUTH_TOKEN": TOKEN}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_until(lambda: _answers(api_port), 20, "configurable-http-proxy's API answering")
        yield process
    finally:
        process.terminate()
        process.wait(10)


def _answers(port: int) -> bool:
    import socket

    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def portal_proxy(api_port: int) -> PortalProxy:
    return PortalProxy(api_url=f"http://127.0.0.1:{api_port}", auth_token=TOKEN, should_start=False, host_routing=True)


def test_one_route_is_asked_for_alone_and_one_already_gone_is_no_error(caplog):
    caplog.set_level(logging.INFO)
    port = free_port()
    with a_proxy(port):
        proxy = portal_proxy(port)

        async def scenario():
            spec = "alice.hpc.example.org/user/alice/"
            assert await proxy.get_route(spec) is None
            await proxy.add_route(spec, "http://node001:40000", {"user": "alice", "server_name": ""})
            found = await proxy.get_route(spec)
            assert found == (await proxy.get_all_routes())[spec]  # as JupyterHub's way reads it from the table
            assert (found["target"], found["data"]["user"]) == ("http://node001:40000", "alice")
            await proxy.add_route("/", "http://127.0.0.1:8081", {"hub": True})
            hub = await proxy.get_route("/")  # "/" is the whole table to configurable-http-proxy: read from it
            assert hub == (await proxy.get_all_routes())["/"] and hub["target"] == "http://127.0.0.1:8081"
            await proxy.delete_route(spec)
            assert await proxy.get_route(spec) is None
            await proxy.delete_route(spec)  # already gone: passed over, not an error

        asyncio.run(scenario())
        assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text
        assert "Route alice.hpc.example.org/user/alice/ was already gone" in caplog.text


def test_a_restarted_proxy_is_noticed_by_the_mark_and_its_routes_checked_until_a_check_succeeds(monkeypatch):
    port = free_port()
    checks, failing = [], []

    async def check_routes(app):
        checks.append(time.monotonic())
        if failing:
            failing.pop()
            raise RuntimeError("the proxy answered 500")

    monkeypatch.setattr("spawner.hub.apps.proxy.check_routes", check_routes)
    app = SimpleNamespace(hub=SimpleNamespace(host="http://127.0.0.1:8081"))
    with a_proxy(port) as first:
        proxy = portal_proxy(port)

        async def scenario():
            kept = asyncio.create_task(proxy.keep_routed(app, every=0.2, full_every=3600))
            try:
                await asyncio.sleep(1.0)
                assert checks == []  # the mark is there: nothing to add back
                assert await proxy._ask("GET", MARK_ROUTE) is not None
                assert await proxy.get_all_routes() == {}  # not one of JupyterHub's: its check never removes it
                first.terminate()
                first.wait(10)
                failing.append(1)  # the first check after the restart fails: tried again at the next pass
                with a_proxy(port):  # the same address, an empty table
                    await asyncio.sleep(2.0)
                    assert len(checks) == 2, checks  # noticed once, checked until a check succeeded, no more
                    assert await proxy._ask("GET", MARK_ROUTE) is not None  # the mark back
            finally:
                kept.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await kept

        asyncio.run(scenario())

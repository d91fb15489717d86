"""What the apps' proxy relies on in jupyter-server-proxy (spawner/jupyter/apps/upstream_jupyter_server_proxy.py):
fails when jupyter-server-proxy records activity, or streams, some other way (checked against 4.6.0)."""

from __future__ import annotations

import inspect

from jupyter_server_proxy.handlers import ProxyHandler

from spawner.jupyter.apps.proxy import AppProxyHandler
from spawner.jupyter.apps.upstream_jupyter_server_proxy import ProxyOverrides


def test_jupyter_server_proxy_still_records_activity_through_the_method_replaced():
    for method in (ProxyHandler.proxy, ProxyHandler._proxy_buffered, ProxyHandler.proxy_open, ProxyHandler.on_message):
        assert "self._record_activity()" in inspect.getsource(method), method
    assert "last_activity_times" in inspect.getsource(ProxyHandler._record_activity)


def test_jupyter_server_proxy_still_streams_through_the_method_replaced_and_buffers_with_the_one_used():
    source = inspect.getsource(ProxyHandler)
    assert "self._proxy_progressive(" in source and "self._proxy_buffered(" in source
    progressive, buffered = (
        inspect.signature(m) for m in (ProxyHandler._proxy_progressive, ProxyHandler._proxy_buffered)
    )
    assert list(progressive.parameters) == list(buffered.parameters) == [
        "self", "host", "port", "proxied_path", "body", "client",
    ]  # fmt: skip


def test_the_apps_handler_takes_both_replacements_before_jupyter_server_proxys_own():
    assert AppProxyHandler._record_activity is ProxyOverrides._record_activity
    assert AppProxyHandler._proxy_progressive is ProxyOverrides._proxy_progressive

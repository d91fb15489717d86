"""What the portal relies on past tornado's public API: each test fails when tornado changes it.  The places are
listed, with why, in spawner/hub/base/upstream_tornado.py (the hub) and spawner/jupyter/session/upstream_tornado.py
(the session's server)."""

from __future__ import annotations

import asyncio
import inspect
from types import SimpleNamespace

from tornado import web, websocket
from tornado.httpclient import AsyncHTTPClient
from tornado.httpserver import HTTPServer
from tornado.netutil import bind_sockets, bind_unix_socket

from portal.clientaddress import UNIX_PEER, peer_of
from spawner.hub.base.upstream_tornado import finished, limit_hub_bodies
from spawner.jupyter.session import upstream_tornado as session_tornado
from spawner.jupyter.session.upstream_tornado import (
    answered_by_container,
    ended_before_open,
    ignore_further_frames,
)


def test_a_handler_is_finished_by_this_flag_which_tornado_reads_after_prepare():
    assert "self._finished = True" in inspect.getsource(web.RequestHandler.finish)
    execute = inspect.getsource(web.RequestHandler._execute)
    assert execute.index("self.prepare()") < execute.index("if self._finished:")


def test_a_handler_answered_by_a_wsgi_container_is_marked_as_tornados_fallback_handler_marks_itself():
    fallback = inspect.getsource(web.FallbackHandler.prepare)
    assert "self._finished = True" in fallback and "self.on_finish()" in fallback
    finishes: list[bool] = []
    handler = SimpleNamespace(_finished=False)
    handler.on_finish = lambda: finishes.append(handler._finished)
    answered_by_container(handler)
    assert finishes == [True]


def test_a_websocket_that_closed_or_was_refused_says_so_by_these_flags():
    assert "self._on_close_called = True" in inspect.getsource(websocket.WebSocketHandler.on_connection_close)
    assert "self._on_close_called = False" in inspect.getsource(websocket.WebSocketHandler.__init__)
    assert not ended_before_open(SimpleNamespace(_on_close_called=False, _finished=False))
    assert ended_before_open(SimpleNamespace(_on_close_called=True, _finished=False))
    assert ended_before_open(SimpleNamespace(_on_close_called=False, _finished=True))


def test_a_connection_marked_terminated_reads_and_hands_on_no_more_frames():
    protocol = websocket.WebSocketProtocol13
    assert "while not self.client_terminated:" in inspect.getsource(protocol._receive_frame_loop)
    assert "if self.client_terminated:" in inspect.getsource(protocol._handle_message)
    connection = SimpleNamespace(client_terminated=False)
    ignore_further_frames(connection)
    assert connection.client_terminated is True


class Peer(web.RequestHandler):
    def get(self):
        before = finished(self)
        self.finish(f"{peer_of(self)} {self.request.remote_ip} {before}")
        assert finished(self)


def serve(xheaders: bool = True) -> HTTPServer:
    return HTTPServer(web.Application([("/", Peer)]), xheaders=xheaders)


async def test_the_peer_is_the_sockets_address_whatever_the_headers_say():
    server, sockets = serve(), bind_sockets(0, "127.0.0.1")
    server.add_sockets(sockets)
    url = f"http://127.0.0.1:{sockets[0].getsockname()[1]}/"
    try:
        answer = await AsyncHTTPClient(force_instance=True).fetch(url, headers={"X-Real-Ip": "10.9.8.7"})
    finally:
        server.stop()
    assert answer.body.decode() == "127.0.0.1 10.9.8.7 False"


async def ask_unix(path: str, headers: str) -> str:
    reader, writer = await asyncio.open_unix_connection(path)
    writer.write(f"GET / HTTP/1.1\r\nHost: hub\r\n{headers}Connection: close\r\n\r\n".encode())
    answer = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    return answer.decode().rsplit("\r\n\r\n", 1)[-1]


async def test_a_peer_on_a_unix_socket_is_tornados_own_stand_in_whatever_the_headers_say(tmp_path):
    path = str(tmp_path / "hub.sock")
    server = serve()
    server.add_socket(bind_unix_socket(path))
    try:
        assert await ask_unix(path, "") == f"{UNIX_PEER} {UNIX_PEER} False"
        assert await ask_unix(path, "X-Real-Ip: 10.9.8.7\r\n") == f"{UNIX_PEER} 10.9.8.7 False"
    finally:
        server.stop()


def test_a_handlers_response_headers_are_this_object_which_flush_sends():
    flush = inspect.getsource(web.RequestHandler.flush)
    assert "self._headers" in flush and "write_headers" in flush
    handler = SimpleNamespace(_headers={"X": "1"}, _finished=False)
    assert session_tornado.response_headers(handler) is handler._headers
    assert session_tornado.finished(handler) is False
    assert "self._finished" in inspect.getsource(web.RequestHandler._execute)


def test_tornado_logs_each_request_through_the_handlers_log_method():
    assert "self._log()" in inspect.getsource(web.RequestHandler.finish)
    assert "self.application.log_request(self)" in inspect.getsource(web.RequestHandler._log)


async def test_a_body_limit_set_before_the_server_is_made_is_what_its_server_keeps():
    # the hub's config sets it before JupyterHub makes its server (spawner/hub/wiring/hubconfig.py)
    saved = HTTPServer._save_configuration()  # tornado's own tests restore a Configurable so
    try:
        limit_hub_bodies(1024)

        class Echo(web.RequestHandler):
            def post(self):
                self.write(str(len(self.request.body)))

        sockets = bind_sockets(0, "127.0.0.1")
        server = HTTPServer(web.Application([("/", Echo)]))
        server.add_sockets(sockets)
        url = f"http://127.0.0.1:{sockets[0].getsockname()[1]}/"
        client = AsyncHTTPClient()
        try:
            assert (await client.fetch(url, method="POST", body=b"x" * 1024)).body == b"1024"
            over = await client.fetch(url, method="POST", body=b"x" * 1025, raise_error=False)
            assert over.code == 400  # tornado's "Content-Length too long": the handler never runs
        finally:
            server.stop()
    finally:
        HTTPServer._restore_configuration(saved)

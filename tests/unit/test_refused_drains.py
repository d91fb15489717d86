"""At most MAX_DRAINS refused bodies are read and dropped at once (portal/refusedbody.py): the login form's need
no login, and the second hostile review's 24 uploads of 100 MB at once held another user's request 1.59 s."""

from __future__ import annotations

import asyncio

from tornado import httpserver, netutil, web

from portal.refusedbody import DRAINS_KEY, MAX_DRAINS, RefusesAfterBody

LIMIT = 16


@web.stream_request_body
class Small(RefusesAfterBody):
    def prepare(self):
        if int(self.request.headers.get("Content-Length", "0")) > LIMIT:

            def answer():
                raise web.HTTPError(413, "too large")

            if not self.refuse_after_body(answer):
                answer()

    def data_received(self, chunk: bytes) -> None:
        self.kept(chunk)

    def post(self):
        self.finish("ok")


def test_at_most_max_drains_refused_bodies_are_read_at_once_and_each_ends_its_count():
    async def scenario():
        app = web.Application([("/", Small)])
        listeners = netutil.bind_sockets(0, "127.0.0.1")
        server = httpserver.HTTPServer(app)
        server.add_sockets(listeners)
        port = listeners[0].getsockname()[1]
        head = f"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: {1024 * 1024}\r\nX-Forwarded-For: 10.0.0.9\r\n\r\n"
        senders = []
        for _ in range(MAX_DRAINS):  # each sends a part of its body and holds on
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(head.encode() + b"x" * 1000)
            await writer.drain()
            senders.append((reader, writer))
        for _ in range(100):
            if app.settings.get(DRAINS_KEY) and app.settings[DRAINS_KEY].running == MAX_DRAINS:
                break
            await asyncio.sleep(0.02)
        assert app.settings[DRAINS_KEY].running == MAX_DRAINS, app.settings.get(DRAINS_KEY)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)  # one more: refused at once
        writer.write(head.encode())
        await writer.drain()
        assert (await asyncio.wait_for(reader.readline(), 5)).startswith(b"HTTP/1.1 413")
        writer.close()
        reader, writer = senders.pop()  # one sends the rest: it gets its 413 once all of it arrived
        writer.write(b"x" * (1024 * 1024 - 1000))
        await writer.drain()
        assert (await asyncio.wait_for(reader.readline(), 5)).startswith(b"HTTP/1.1 413")
        writer.close()
        for _, writer in senders:  # the others go away while sending
            writer.close()
        for _ in range(100):
            if app.settings[DRAINS_KEY].running == 0:
                break
            await asyncio.sleep(0.02)
        assert app.settings[DRAINS_KEY].running == 0
        server.stop()

    asyncio.run(scenario())

"""The login page's handler with a small request body (runs in the hub).

The login form is the one endpoint anyone may post to.  Tornado reads a
whole request body (up to 100 MB by default) before any handler code runs,
so the limit has to be set while the body streams in: this handler streams
its body, refuses anything over MAX_BODY with HTTP 413 (once the rest has
arrived, dropped: portal/refusedbody.py, or the proxy turns the refusal into
a 503), then hands the form to JupyterHub's own LoginHandler.
"""

from __future__ import annotations

from jupyterhub.handlers.login import LoginHandler
from tornado import httputil, web

from .refusedbody import DRAIN_BYTES, RefusesAfterBody, declared_size

MAX_BODY = 16 * 1024  # a username, a password and the XSRF token fit many times over


@web.stream_request_body
class SmallLoginHandler(RefusesAfterBody, LoginHandler):
    _body_read = False

    def check_xsrf_cookie(self):
        # Tornado asks before a streamed body has arrived (the token is in it); post() asks once it has.
        if self._body_read:
            return super().check_xsrf_cookie()
        return None

    async def prepare(self):
        self._chunks: list[bytes] = []
        if self.request.method == "POST":
            size = declared_size(self.request.headers)
            # a body that grows past MAX_BODY is refused in data_received, and read on (dropped) up to DRAIN_BYTES
            self.request.connection.set_max_body_size(MAX_BODY if size is not None else DRAIN_BYTES)
            if size is not None and size > MAX_BODY:
                return self.too_large()
        await super().prepare()

    def too_large(self) -> None:
        self._chunks = []

        def answer() -> None:
            raise web.HTTPError(413, "The login form was too large.")

        if not self.refuse_after_body(answer):
            answer()

    def data_received(self, chunk: bytes) -> None:
        if not self.kept(chunk):
            return
        self._chunks.append(chunk)
        if self.received > MAX_BODY:
            self.too_large()

    async def post(self):
        self.request.body = b"".join(self._chunks)
        httputil.parse_body_arguments(
            self.request.headers.get("Content-Type", ""),
            self.request.body,
            self.request.body_arguments,
            self.request.files,
            self.request.headers,
        )
        for name, values in self.request.body_arguments.items():
            self.request.arguments.setdefault(name, []).extend(values)
        self._body_read = True
        self.check_xsrf_cookie()
        return await super().post()

"""The login page's handler with a small request body (runs in the hub).

The login form is the one endpoint anyone may post to.  Tornado reads a
whole request body (up to 100 MB by default) before any handler code runs,
so the limit has to be set while the body streams in: this handler streams
its body, refuses anything over MAX_BODY with HTTP 413, then hands the form
to JupyterHub's own LoginHandler.
"""

from __future__ import annotations

from jupyterhub.handlers.login import LoginHandler
from tornado import httputil, web

MAX_BODY = 16 * 1024  # a username, a password and the XSRF token fit many times over


@web.stream_request_body
class SmallLoginHandler(LoginHandler):
    _body_read = False

    def check_xsrf_cookie(self):
        # Tornado asks before a streamed body has arrived (the token is in it); post() asks once it has.
        if self._body_read:
            return super().check_xsrf_cookie()
        return None

    async def prepare(self):
        self._chunks: list[bytes] = []
        if self.request.method == "POST":
            length = self.request.headers.get("Content-Length", "")
            if length.isdigit() and int(length) > MAX_BODY:
                raise web.HTTPError(413, "The login form was too large.")
            self.request.connection.set_max_body_size(MAX_BODY)  # a body that grows past it is cut off
        await super().prepare()

    def data_received(self, chunk: bytes) -> None:
        self._chunks.append(chunk)

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

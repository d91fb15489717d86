"""A request body refused for its size is read to its end and dropped before the refusal is sent (runs in the hub).

Tornado closes the connection of a request whose body it has not read
once it has answered.  The hub refused a 30 MB body with 413 in 13 ms,
while the client (configurable-http-proxy) was still sending it: the
hub's kernel answered the next bytes with a reset, which can discard the
answer not yet read, and the proxy turned the reset into a 503 page, so
nobody read the 413's words.  So a handler that refuses a body for its
size reads the rest of it, keeping none of it (memory stays at one
chunk), and answers once all of it has arrived: the connection is clean
and the proxy passes the refusal on as it is.

Up to DRAIN_BYTES (tornado's own default limit on a body, which the hub
read whole before it had limits): a body declared larger is answered at
once as before, and the client may see the proxy's 503 in place of the
words; so is a body a direct client holds back until it hears `100
Continue`, not one that comes through the proxy, which sends it anyway.  A slow sender holds its one connection while it sends, as any
upload does, until tornado's idle timeout.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from tornado import web

DRAIN_BYTES = 100 * 1024 * 1024  # bytes of a refused body read and dropped before the answer
# refused bodies read at once, for everyone (no login needed: the login form's too): past it a refusal is answered
# at once, and its client may see the proxy's 503.  The second hostile review held 24 uploads of 100 MB to the
# login form at once: another user's request waited up to 1.59 s.
MAX_DRAINS = 4
DRAIN_SECONDS = 60.0  # the longest a refused body may take to arrive (100 MB at ~1.7 MB/s)
DRAINS_KEY = "dsportal_drains"  # in tornado's application settings: the count's one owner, the hub's app


class Drains:
    """How many refused bodies are being read and dropped now (one per hub application)."""

    def __init__(self) -> None:
        self.running = 0


def declared_size(headers) -> int | None:
    """The body's declared length; None when undeclared (chunked) or not a number."""
    length = headers.get("Content-Length", "")
    return int(length) if length.isdigit() else None


def through_proxy(request) -> bool:
    """Whether the request came through configurable-http-proxy, which says so (X-Forwarded-For).  The proxy
    answers a client's `Expect: 100-continue` itself and sends the body on whatever the hub answers: curl's
    large uploads then met the hub's early refusal as a reset, and the proxy's 503.  A direct client that
    claims it only has its body read and dropped."""
    return "X-Forwarded-For" in request.headers


class RefusesAfterBody(web.RequestHandler):
    """A base of a `@web.stream_request_body` handler: `refuse_after_body` instead of answering a body too large
    while it arrives; `data_received` counts each chunk with `kept` and stores it only when that says so."""

    _refusal: Callable[[], Awaitable[None] | None] | None = None
    received = 0  # bytes of the body that arrived so far

    def refuse_after_body(self, answer: Callable[[], Awaitable[None] | None]) -> bool:
        """Drop the rest of the body and `answer` once it has arrived (in place of the handler's method: tornado
        calls that once the body is read, so an instance attribute of its name is the answer).  False when the
        request has no body, one declared too large to read, or one not sent before an answer (Expect:
        100-continue): answer now."""
        size = declared_size(self.request.headers)
        chunked = "chunked" in self.request.headers.get("Transfer-Encoding", "").lower()
        if not (size or chunked) or (size or 0) > DRAIN_BYTES:
            return False  # no body to wait for, or one too large to read
        if self.request.headers.get("Expect", "").lower() == "100-continue" and not through_proxy(self.request):
            return False  # the client waits for the word to send its body: it gets the refusal in its place
        drains = self.settings.setdefault(DRAINS_KEY, Drains())
        if drains.running >= MAX_DRAINS:
            return False  # enough bodies read for nothing already: answer now
        drains.running += 1
        self._draining = drains
        self.request.connection.set_body_timeout(DRAIN_SECONDS)  # a body that stops coming frees its slot
        self._refusal = answer
        self.request.connection.set_max_body_size(DRAIN_BYTES)
        setattr(self, self.request.method.lower(), self._answer_refusal)
        return True

    _draining: Drains | None = None

    def _drained(self) -> None:
        if self._draining is not None:
            self._draining.running -= 1
            self._draining = None

    def _answer_refusal(self, *args, **kwargs):
        self._drained()
        return self._refusal()

    def on_connection_close(self):
        self._drained()  # the client went away while sending
        super().on_connection_close()

    def kept(self, chunk: bytes) -> bool:
        """Count `chunk`; whether the handler keeps it (False once its body is refused: it is dropped)."""
        self.received += len(chunk)
        return self._refusal is None

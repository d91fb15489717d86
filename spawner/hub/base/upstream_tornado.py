"""Where the hub goes past tornado's public API: each place, why, and what it relies on (hub side).

Checked against tornado 6.6.1 (pyproject.toml pins tornado>=6.2,<7 for this
module); tests/unit/test_upstream_tornado.py fails when tornado changes what a
place below relies on.

- `RequestHandler._finished` (`finished`): whether a handler has answered
  already.  The portal's `prepare` (spawner/hub/base/requestlimits.py) runs the
  `prepare` of the handler's other bases (JupyterHub's) first; when one of them
  has answered, tornado runs nothing more of the handler and the portal's
  `prepare` must not answer again.  Tornado reads the same flag itself after
  `prepare` and has no public word for it.

Public, but for the whole process: `limit_hub_bodies` sets every request
body's most for each HTTPServer made after it, through tornado's
`HTTPServer.configure` (a Configurable's class-wide defaults): the hub's
config calls it before JupyterHub creates its server, which takes it
(JupyterHub offers no setting of its own for it).

Not private, but undocumented: the connection context's `address` (the
socket's peer, which X-Real-Ip and X-Forwarded-For do not change), read by
portal/clientaddress.py, and tornado's "0.0.0.0" for a peer without an IP
address; the test checks both.
"""

from __future__ import annotations

from tornado.httpserver import HTTPServer


def finished(handler) -> bool:
    """Whether `handler` (a tornado RequestHandler) has sent its whole answer."""
    return handler._finished


def limit_hub_bodies(max_body_bytes: int) -> None:
    """Every request body of the hub's own server (JupyterHub's endpoints too) at most `max_body_bytes`."""
    HTTPServer.configure(None, max_body_size=max_body_bytes)

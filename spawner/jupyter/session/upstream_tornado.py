"""Where the session's server goes past tornado's public API: each place, why, and what it relies on.

Runs in the session's Jupyter server (in the Slurm job, as the user).
Checked against tornado 6.6.1 (pyproject.toml pins tornado>=6.2,<7 for this
module and the hub's, spawner/hub/base/upstream_tornado.py);
tests/unit/test_upstream_tornado.py fails when tornado changes what a place
below relies on.

- `RequestHandler._finished`, set (`answered_by_container`): TensorBoard's
  WSGI application answers a request through tornado's WSGIContainer, which
  writes the whole response to the connection itself
  (spawner/jupyter/tensorboard/handlers.py); the handler, an authenticated Jupyter
  handler, must then count as finished, as tornado's own FallbackHandler
  marks itself after its container has answered.
- `RequestHandler._finished` and `WebSocketHandler._on_close_called`, read
  (`ended_before_open`): the check of guests' open websockets
  (spawner/jupyter/sharing/guests.py) must tell a connection still opening
  from one that closed or never opened; tornado holds no connection object
  before a websocket's handshake is done nor after it closes, and these two
  flags, which tornado itself reads, are the only word on which it is.
- `RequestHandler._headers`, read (`response_headers`): jupyter-server-proxy
  writes an app's response headers into it directly (it replaces the whole
  object), so the apps' proxy (spawner/jupyter/apps/proxy.py) reads and mends
  them there before the first flush sends them; tornado has no public getter.
- `RequestHandler._finished`, read (`finished`): jupyter-server-proxy's
  `prepare` may answer a request itself (a redirect to log in) and return;
  tornado reads the flag after `prepare` to run nothing more, and so must a
  subclass's `prepare` that goes on after it.
- `WebSocketProtocol.client_terminated`, set (`ignore_further_frames`): tornado
  hands a closed connection's frames on until the other side answers the close
  (or for 5 s); with it set, tornado drops every frame that arrives, and a
  guest's connection is cut off at once.
- `RequestHandler._log`, overridden (the session's token offers,
  spawner/jupyter/sharing/handover.py): tornado logs each request through it
  (its docstring keeps it "for the benefit of existing apps that have
  overridden this method"); JupyterHub's single-user extension logs through
  its own log function, not the handler's logger, so a stranger's refused
  offers, counted instead, are left out there.
"""

from __future__ import annotations


def answered_by_container(handler) -> None:
    """`handler` (a tornado RequestHandler) has been answered whole by a WSGIContainer: it is finished."""
    handler._finished = True
    handler.on_finish()


def ended_before_open(handler) -> bool:
    """Whether `handler`, a tornado WebSocketHandler without a connection, closed or answered (a failed
    handshake) rather than still opening."""
    return getattr(handler, "_on_close_called", False) or getattr(handler, "_finished", False)


def ignore_further_frames(connection) -> None:
    """`connection` (a websocket's, tornado's WebSocketProtocol) hands on no frame that arrives from now on."""
    connection.client_terminated = True


def response_headers(handler):
    """The response headers `handler` (a tornado RequestHandler) will send, as the object it sends them from."""
    return handler._headers


def finished(handler) -> bool:
    """Whether `handler` has answered its request already."""
    return handler._finished

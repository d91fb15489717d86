"""`dsportal-singleuser`: the session's Jupyter server, in the Slurm job, on the compute node, as the user.

Prepares the session (spawner/job/session/start.py), binds the session's port, then
forks: the child runs JupyterHub's single-user server (one interpreter start,
not two) with kernels no other account can reach (spawner/job/kernels/isolation.py);
the parent keeps the port until the hub has stopped routing to it
(spawner/jupyter/session/keeper.py).

The port is held from the moment it is chosen.  Jupyter Server picks a port
by binding a socket, closing it and binding again later; between the two,
another account on a shared node could take the port and receive the
traffic the hub routes there.  Here the socket bound first is the one that
serves (spawner/jupyter/session/upstream_jupyter_server.py: Jupyter Server has
no hook for it), on IPv4 and IPv6 alike (the proxy reaches the node by name,
which may resolve to either), and the port goes to the hub's callback only
once the server listens on it.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import sys
from datetime import datetime
from urllib.parse import urlparse

from tornado.httpclient import AsyncHTTPClient, HTTPRequest
from tornado.netutil import bind_sockets

from ..contract import PORT_CALLBACK
from ..job.kernels.isolation import server_args
from ..job.session.start import prepare, say
from .clock.clock import hold_warning
from .session import tokenpipe
from .session.deferred import (
    defer_rfc3987_syntax,
    hold_collection,
    import_labapp_without_yarn_probe,
    resume_collection,
)
from .session.keeper import fork_server, keep
from .session.upstream_jupyter_server import serve_on_sockets

CALLBACK_TIMEOUT = 30


def callback_request(api_url: str, token: str, port: int) -> HTTPRequest:
    return HTTPRequest(
        api_url.rstrip("/") + PORT_CALLBACK,
        method="POST",
        body=json.dumps({"port": port}),
        headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
        request_timeout=CALLBACK_TIMEOUT,
    )


def session_sockets(ip: str) -> list[socket.socket]:
    """The session's listening sockets: one port, on every address family the node has unless `ip` names one
    address (a wildcard IPv4 bind alone would leave the same port free on IPv6 for anyone)."""
    address = None if ip in ("", "0.0.0.0", "::", "*") else ip
    for _ in range(20):  # the port the OS gave for IPv4 may be taken on IPv6: take another one
        try:
            return bind_sockets(0, address)
        except OSError as e:
            if e.errno != errno.EADDRINUSE:
                raise
    return bind_sockets(0, address)


def hold_port(serverapp, sockets: list[socket.socket]) -> None:
    """Make `serverapp` serve on `sockets`, bound before it started, and report the port once it listens."""
    serve_on_sockets(serverapp, sockets, lambda: listening(serverapp))


def listening(serverapp) -> None:
    """The server listens: its start is over (garbage collection again, session/deferred.py); the hub is told."""
    resume_collection()
    serverapp.io_loop.add_callback(report_port, serverapp)


async def report_port(serverapp) -> None:
    request = callback_request(os.environ["JUPYTERHUB_API_URL"], os.environ["JUPYTERHUB_API_TOKEN"], serverapp.port)
    try:
        await AsyncHTTPClient().fetch(request)
    except Exception as e:  # noqa: BLE001 - whatever failed, the session cannot be reached: end it visibly
        serverapp.log.critical("dsportal: could not report port %s to the hub (%s); stopping", serverapp.port, e)
        serverapp.io_loop.stop()
        sys.exit(1)
    serverapp.log.info("dsportal: listening on port %s, reported to the hub", serverapp.port)


def serve(sockets: list[socket.socket], argv: list[str]) -> None:
    defer_rfc3987_syntax()
    import_labapp_without_yarn_probe()
    from jupyter_server.services.shutdown import ShutdownHandler

    from .clock import handlers as clock
    from .runs import handlers as runs
    from .runs.defaults import DefaultsHandler
    from .session.upstream_jupyterhub import launch_singleuser
    from .sharing import guests

    # what a guest of a shared session may not do: stop it, extend it, run or cancel the owner's jobs, or act on
    # the owner's runs (their sweeps' best parameters made a notebook's defaults)
    guests.install((ShutdownHandler, clock.ExtendHandler, runs.RunsHandler, DefaultsHandler))
    launch_singleuser([*server_args(), *argv], prepare=lambda serverapp: hold_port(serverapp, sockets))


def main(argv: list[str] | None = None) -> None:
    hold_warning()  # Slurm's warning may come at once (a short session): noted for the server, not fatal
    hold_collection()  # until the server listens, or the keeper has forked it (session/deferred.py)
    os.environ.update(prepare())
    # a mark in the session's log for the start's timeline (tests/perf/bench_spawn.py)
    say(f"prepared at {datetime.now().astimezone().isoformat(timespec='milliseconds')}")
    sockets = session_sockets(urlparse(os.environ.get("JUPYTERHUB_SERVICE_URL", "")).hostname or "")
    tokens, to_keeper = os.pipe()  # the session's token when a share's end replaces it (tokenpipe.py)
    child = fork_server()  # Slurm's signals blocked across the fork: none is lost (keeper.py)
    if child:
        resume_collection()
        os.close(to_keeper)
        sys.exit(keep(sockets, child, token=tokenpipe.Latest(tokens, os.environ["JUPYTERHUB_API_TOKEN"])))
    os.close(tokens)
    tokenpipe.to_keeper(to_keeper)
    serve(sockets, sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    main()

"""`dsportal-singleuser`: the session's Jupyter server, in the Slurm job, on the compute node, as the user.

Prepares the session (spawner/job/session.py), then runs JupyterHub's
single-user server in this same process (one interpreter start, not two),
holding its port from the moment it is chosen:

Jupyter Server picks a port by binding a socket, closing it and binding
again later; between the two, another account on a shared node could take
the port and receive the traffic the hub routes there.  Here the socket
bound first is the one that serves (`_find_http_port` and
`_bind_http_server_tcp` are replaced on this one server), and the port goes
to the hub's callback only once the server listens on it.
"""

from __future__ import annotations

import json
import os
import sys

from tornado.httpclient import AsyncHTTPClient, HTTPRequest
from tornado.netutil import bind_sockets

from ..contract import PORT_CALLBACK
from ..job.session import prepare

CALLBACK_TIMEOUT = 30


def callback_request(api_url: str, token: str, port: int) -> HTTPRequest:
    return HTTPRequest(api_url.rstrip("/") + PORT_CALLBACK, method="POST", body=json.dumps({"port": port}),
                       headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
                       request_timeout=CALLBACK_TIMEOUT)


def hold_port(serverapp) -> None:
    """Make `serverapp` serve on the very socket it picks, and report the port once it listens."""

    def find_http_port() -> None:
        serverapp._dsportal_sockets = bind_sockets(0, serverapp.ip or None)
        serverapp.port = serverapp._dsportal_sockets[0].getsockname()[1]

    def bind_http_server_tcp() -> bool:
        serverapp.http_server.add_sockets(serverapp._dsportal_sockets)
        serverapp.io_loop.add_callback(report_port, serverapp)
        return True

    serverapp._find_http_port = find_http_port
    serverapp._bind_http_server_tcp = bind_http_server_tcp


async def report_port(serverapp) -> None:
    request = callback_request(os.environ["JUPYTERHUB_API_URL"], os.environ["JUPYTERHUB_API_TOKEN"], serverapp.port)
    try:
        await AsyncHTTPClient().fetch(request)
    except Exception as e:  # noqa: BLE001 - whatever failed, the session cannot be reached: end it visibly
        serverapp.log.critical("dsportal: could not report port %s to the hub (%s); stopping", serverapp.port, e)
        serverapp.io_loop.stop()
        sys.exit(1)
    serverapp.log.info("dsportal: listening on port %s, reported to the hub", serverapp.port)


def main(argv: list[str] | None = None) -> None:
    os.environ.update(prepare())
    from jupyterhub.singleuser.extension import JupyterHubSingleUser

    make_serverapp = JupyterHubSingleUser.make_serverapp.__func__

    def make_held_serverapp(cls, **kwargs):
        serverapp = make_serverapp(cls, **kwargs)
        hold_port(serverapp)
        return serverapp

    JupyterHubSingleUser.make_serverapp = classmethod(make_held_serverapp)
    JupyterHubSingleUser.launch_instance(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    main()

"""`dsportal-singleuser`: run in the session job, on the compute node, as the user.

Prepares the session (spawner/job/session.py), picks a free port, reports it to the hub's port callback (the session's own
token, port only), then replaces itself with `jupyterhub-singleuser` on that
port.  Few imports, so the session starts fast.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import urllib.request
from urllib.parse import urlparse, urlunparse

from ..contract import PORT_CALLBACK
from .session import prepare

CALLBACK_TIMEOUT = 30


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def report_port(api_url: str, token: str, port: int) -> None:
    request = urllib.request.Request(
        api_url.rstrip("/") + PORT_CALLBACK,
        data=json.dumps({"port": port}).encode(),
        headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=CALLBACK_TIMEOUT) as response:
        response.read()


def with_port(service_url: str, port: int) -> str:
    url = urlparse(service_url)
    return urlunparse(url._replace(netloc=f"{url.hostname}:{port}"))


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    os.environ.update(prepare())
    port = free_port()
    report_port(os.environ["JUPYTERHUB_API_URL"], os.environ["JUPYTERHUB_API_TOKEN"], port)
    os.environ["JUPYTERHUB_SERVICE_URL"] = with_port(os.environ["JUPYTERHUB_SERVICE_URL"], port)
    server = os.path.join(os.path.dirname(sys.executable), "jupyterhub-singleuser")
    os.execv(server, [server, *args])


if __name__ == "__main__":
    main()

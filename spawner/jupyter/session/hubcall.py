"""The session's calls to the hub's API with the session's own token (the user's Jupyter server).

JupyterLab cannot reach the hub's API itself (the session is its own web
origin); its requests come here and go on with the token the hub gave the
session (the one it handed over last when a share ended: sessiontoken.py),
which may act only for this user.  The hub's refusal words come back
unchanged.
"""

from __future__ import annotations

import os

from tornado import web
from tornado.escape import json_decode
from tornado.httpclient import AsyncHTTPClient, HTTPClientError, HTTPRequest

from . import token as sessiontoken

HUB_TIMEOUT = 60  # the hub may run Slurm commands (sbatch, an extension) before it answers
NO_ANSWER = "The hub did not answer; try again in a minute."


async def ask_hub(
    method: str, path: str, body: bytes | str | None = None, timeout: float = HUB_TIMEOUT
) -> tuple[int, bytes]:
    """(status, body) of the hub's answer at {JUPYTERHUB_API_URL}{path}; web.HTTPError with the hub's words
    when it refuses or cannot be reached."""
    request = HTTPRequest(
        os.environ["JUPYTERHUB_API_URL"].rstrip("/") + path,
        method=method,
        body=(body or "{}") if method in ("POST", "PUT", "PATCH") else None,
        headers={"Authorization": f"token {sessiontoken.current()}", "Content-Type": "application/json"},
        request_timeout=timeout,
    )
    try:
        answer = await AsyncHTTPClient().fetch(request)
    except HTTPClientError as e:
        message = NO_ANSWER
        if e.response is not None and e.code != 599:
            try:
                message = json_decode(e.response.body).get("message") or message
            except ValueError:
                pass
        raise web.HTTPError(e.code if e.code != 599 else 503, message) from None
    except OSError:
        raise web.HTTPError(503, NO_ANSWER) from None
    return answer.code, answer.body

"""Small helpers the tests share: one JSON request, waiting for a condition, a free port."""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request


def json_request(method: str, url: str, body=None, token: str | None = None, raw: bytes | None = None,
                 timeout: float = 30) -> tuple[int, dict | list | str]:
    """(status, parsed JSON body, or the text when it is not JSON); HTTP errors are answers, not exceptions."""
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"token {token}"
    req = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            status, text = r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read().decode()
    try:
        return status, json.loads(text) if text else {}
    except json.JSONDecodeError:
        return status, text


def wait_until(predicate, timeout: float = 20.0, what: str = "condition", every: float = 0.1):
    """The first truthy value of predicate(), polled until `timeout` seconds; else an AssertionError."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"{what} not reached within {timeout} s")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

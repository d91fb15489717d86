"""Talk to a user's JupyterLab through the hub's proxy: run code in a kernel, type in a terminal."""

from __future__ import annotations

import asyncio
import json
import time
import uuid

from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

from tests.support.cluster import Cluster, url_for


def _ws_request(cluster: Cluster, path: str) -> HTTPRequest:
    return HTTPRequest(
        url_for(path).replace("https", "wss", 1),
        headers={"Authorization": f"token {cluster.token}"},
        request_timeout=60,
    )


def run_code(cluster: Cluster, user: str, kernel: str, code: str, timeout: float = 120) -> tuple[str, str]:
    """Start `kernel` in `user`'s server, run `code`; return (status, printed text)."""
    status, started = cluster.request("POST", f"/user/{user}/api/kernels", {"name": kernel})
    assert status == 201, started
    try:
        return asyncio.run(_execute(cluster, f"/user/{user}/api/kernels/{started['id']}/channels", code, timeout))
    finally:
        cluster.request("DELETE", f"/user/{user}/api/kernels/{started['id']}")


async def _execute(cluster: Cluster, path: str, code: str, timeout: float) -> tuple[str, str]:
    ws = await websocket_connect(_ws_request(cluster, path))
    msg_id = uuid.uuid4().hex
    ws.write_message(
        json.dumps(
            {
                "header": {
                    "msg_id": msg_id,
                    "username": "test",
                    "session": uuid.uuid4().hex,
                    "msg_type": "execute_request",
                    "version": "5.3",
                    "date": "",
                },
                "parent_header": {},
                "metadata": {},
                "channel": "shell",
                "buffers": [],
                "content": {
                    "code": code,
                    "silent": False,
                    "store_history": False,
                    "user_expressions": {},
                    "allow_stdin": False,
                    "stop_on_error": True,
                },
            }
        )
    )
    text, status, idle = [], None, False
    deadline = time.monotonic() + timeout
    while not (status and idle):
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"no reply in {timeout} s; got {text}"
        raw = await asyncio.wait_for(ws.read_message(), remaining)
        assert raw is not None, "the kernel websocket closed"
        msg = json.loads(raw)
        if msg.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        kind = msg["header"]["msg_type"]
        if kind == "stream":
            text.append(msg["content"]["text"])
        elif kind in ("execute_result", "display_data"):
            text.append(msg["content"]["data"].get("text/plain", ""))
        elif kind == "error":
            text.append("\n".join(msg["content"]["traceback"]))
        elif kind == "execute_reply":
            status = msg["content"]["status"]
        elif kind == "status" and msg["content"]["execution_state"] == "idle":
            idle = True
    ws.close()
    return status, "".join(text)


def run_in_terminal(cluster: Cluster, user: str, command: str, expect: str, timeout: float = 60) -> str:
    status, term = cluster.request("POST", f"/user/{user}/api/terminals")
    assert status == 200, term
    try:
        return asyncio.run(_type(cluster, f"/user/{user}/terminals/websocket/{term['name']}", command, expect, timeout))
    finally:
        cluster.request("DELETE", f"/user/{user}/api/terminals/{term['name']}")


async def _type(cluster: Cluster, path: str, command: str, expect: str, timeout: float) -> str:
    ws = await websocket_connect(_ws_request(cluster, path))
    ws.write_message(json.dumps(["stdin", command + "\r"]))
    screen = ""
    deadline = time.monotonic() + timeout
    while expect not in screen.split(command)[-1]:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"{expect!r} not seen in {timeout} s:\n{screen}"
        raw = await asyncio.wait_for(ws.read_message(), remaining)
        assert raw is not None, "the terminal websocket closed"
        kind, *data = json.loads(raw)
        if kind == "stdout":
            screen += data[0]
    ws.close()
    return screen


async def closed_after(path: str, token: str, action, timeout: float = 20) -> int | None:
    """Open a websocket at `path` with `token`, run `action` (blocking), then wait for the server to close the
    connection: its close code (None: still open after `timeout` s)."""
    request = HTTPRequest(url_for(path).replace("https", "wss", 1), headers={"Authorization": f"token {token}"})
    ws = await websocket_connect(request)
    await asyncio.get_running_loop().run_in_executor(None, action)
    deadline = time.monotonic() + timeout
    try:
        while (left := deadline - time.monotonic()) > 0:
            if await asyncio.wait_for(ws.read_message(), left) is None:
                return ws.close_code
    except TimeoutError:
        pass
    ws.close()
    return None

"""Proving that what answers on a session's port is the session's own server (hub side).

Any HTTP answer is not enough: on a shared node something else could answer
on that port.  The session's server alone holds its API token, so only it
can answer the nonce (spawner/contract.py).  The port is asked at a steady
pace (JupyterHub's own check backs off exponentially, 0.2, 0.4, 0.8 ... s,
and would notice a server that takes a few seconds to load up to seconds late).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import secrets
from collections.abc import Awaitable, Callable

from tornado.httpclient import AsyncHTTPClient, HTTPClientError

from ...contract import READY_PATH, readiness_proof

MAX_BYTES = 4096  # the readiness proof is a short JSON object; a larger answer is no proof
PACE = 0.1  # seconds between two asks
SLOW_AFTER = 50  # asks (5 s) before `slow` is called once


def proof_url(host: str, port: int, base_path: str, nonce: str) -> str:
    return f"http://{host}:{port}{base_path.rstrip('/')}/{READY_PATH}?nonce={nonce}"


async def wait_for_proof(
    host: str,
    port: int,
    base_path: str,
    token: str,
    each_second: Callable[[], Awaitable[object]],
    slow: Callable[[], None],
) -> None:
    """Return once the server on host:port proves it holds `token`.

    `each_second` runs once a second meanwhile (the spawner checks the job is
    still there: it raises to end the wait); `slow` once, when 5 s passed.
    """
    nonce = secrets.token_hex(16)
    url = proof_url(host, port, base_path, nonce)
    expected = readiness_proof(token, nonce).encode()
    # its own client, bounded: whatever answers on a shared node's port may send anything, or nothing
    client = AsyncHTTPClient(force_instance=True, max_body_size=MAX_BYTES)
    try:
        asks = 0
        while not await _proven(client, url, expected):
            asks += 1
            if asks == SLOW_AFTER:
                slow()
            if asks % 10 == 0:
                await each_second()
            await asyncio.sleep(PACE)
    finally:
        client.close()


async def _proven(client: AsyncHTTPClient, url: str, expected: bytes) -> bool:
    try:
        answer = await client.fetch(url, request_timeout=5, connect_timeout=5, follow_redirects=False)
        return hmac.compare_digest(str(json.loads(answer.body).get("proof", "")).encode(), expected)
    except HTTPClientError:
        return False  # not up yet (599), or something that is not the session's server
    except (OSError, ValueError, AttributeError):
        return False  # an answer that is no proof at all: whatever it is, it is not the session

"""The readiness proof (spawner/hub/session/readiness.py): only the holder of the session's token is taken as the session."""

from __future__ import annotations

import asyncio
import json

import pytest
from tornado import web
from tornado.httpserver import HTTPServer
from tornado.netutil import bind_sockets

from spawner.contract import readiness_proof
from spawner.hub.session import readiness


def test_the_proof_is_asked_under_the_sessions_prefix():
    assert readiness.proof_url("node001", 45123, "/user/alice/", "n0") == (
        "http://node001:45123/user/alice/dsportal/ready?nonce=n0"
    )


def serving(answers: list[str]) -> tuple[HTTPServer, int]:
    """A server that answers each ask with the next of `answers` (the last one for ever)."""

    class Ready(web.RequestHandler):
        def get(self):
            nonce = self.get_argument("nonce")
            token = answers.pop(0) if len(answers) > 1 else answers[0]
            self.finish(json.dumps({"proof": readiness_proof(token, nonce)}))

    sockets = bind_sockets(0, "127.0.0.1")  # non-blocking, as tornado's server needs them
    server = HTTPServer(web.Application([(r"/user/alice/dsportal/ready", Ready)]))
    server.add_sockets(sockets)
    return server, sockets[0].getsockname()[1]


async def test_a_server_that_holds_another_token_is_not_the_session():
    server, port = serving(["bobs-token"] * 3 + ["alices-token"])
    checks = []

    async def each_second():
        checks.append(1)

    try:
        await asyncio.wait_for(
            readiness.wait_for_proof("127.0.0.1", port, "/user/alice/", "alices-token", each_second, lambda: None), 10
        )
    finally:
        server.stop()
    assert checks == []  # proven within the first second (the fourth ask)


async def test_no_proof_keeps_waiting_and_checks_the_job_each_second():
    server, port = serving(["bobs-token"])

    class JobGone(Exception):
        pass

    async def each_second():
        raise JobGone

    try:
        with pytest.raises(JobGone):  # the wait ends only through the job check: no proof was taken
            await asyncio.wait_for(
                readiness.wait_for_proof("127.0.0.1", port, "/user/alice/", "alices-token", each_second, lambda: None),
                10,
            )
    finally:
        server.stop()

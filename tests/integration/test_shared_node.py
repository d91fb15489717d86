"""Another account on a session's compute node: it may bind any free port, but never gets a session's traffic."""

from __future__ import annotations

import json
import subprocess
import sys

from deploy.dev.slurmconf import GPU_NODES
from tests.support.hosts import on_node

# Binds port after port as carol (ports the OS hands out, as a session's server asks for), accepts and
# records whatever connects, until its stdin closes (or 300 s); then prints what it saw as JSON.
SQUATTER = r"""
import json, select, socket, sys, time
held, seen, end = [], [], time.monotonic() + 300
while time.monotonic() < end:
    if len(held) < 300:
        s = socket.socket(); s.bind(("0.0.0.0", 0)); s.listen(8); s.setblocking(False); held.append(s)
    ready, _, _ = select.select(held + [sys.stdin], [], [], 0.01)
    if sys.stdin in ready:
        break
    for s in ready:
        conn, peer = s.accept(); seen.append(s.getsockname()[1]); conn.close()
print(json.dumps({"ports": len(held), "connections": seen}))
"""


def test_a_port_squatter_never_receives_a_sessions_traffic(cluster):
    squatters = [  # carol in a terminal on each GPU node: alice's sessions land on one of them
        subprocess.Popen(
            on_node(node, [sys.executable, "-c", SQUATTER], user="carol"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for node in GPU_NODES
    ]
    try:
        for _ in range(3):
            assert cluster.start("alice", {"gpus": 0, "hours": 1}) in (201, 202)
            cluster.wait_ready("alice")
            status, home = cluster.request("GET", "/user/alice/api/contents/")
            assert status == 200 and "templates" in {i["name"] for i in home["content"]}  # alice's own server
            cluster.stop("alice")
    finally:
        seen = [json.loads(squatter.communicate(timeout=120)[0]) for squatter in squatters]
    assert [s["ports"] for s in seen] == [300] * len(GPU_NODES)  # each held ports throughout the starts
    assert [s["connections"] for s in seen] == [[]] * len(GPU_NODES)  # not one of the sessions' requests reached them

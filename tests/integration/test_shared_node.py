"""Another account on a session's compute node: it may bind any free port, but never gets a session's traffic."""

from __future__ import annotations

import json
import subprocess
import sys

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
    squatter = subprocess.Popen(
        ["runuser", "-u", "carol", "--", sys.executable, "-c", SQUATTER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        for _ in range(3):
            assert cluster.start("alice", {"gpus": 0, "hours": 1}) in (201, 202)
            cluster.wait_ready("alice")
            status, home = cluster.request("GET", "/user/alice/api/contents/")
            assert status == 200 and "templates" in {i["name"] for i in home["content"]}  # alice's own server
            cluster.stop("alice")
    finally:
        out, _ = squatter.communicate(timeout=120)
    seen = json.loads(out)
    assert seen["ports"] == 300  # it held ports throughout the starts
    assert seen["connections"] == []  # and not one of the sessions' requests reached it

"""Traffic meant for a session never reaches whoever binds its port after the session's server exits.

The attack, as bob on alice's node: wait for alice's session port to come
free (bind it on IPv4 and IPv6, again and again), then accept what arrives.
alice's session ends outside the portal (File > Shut Down; scancel in her
own terminal) while her browser keeps asking her server.  Before the fix the
port came free as the server exited, the proxy kept routing her origin there
until the hub's next poll, and bob received her requests with her token; and
the server bound IPv4 only, so bob could take the same port on IPv6 while
she worked.  Now the session's port keeper holds the port until the hub has
removed the route (spawner/jupyter/session/keeper.py), on both families.
"""

from __future__ import annotations

import json
import pwd
import socket
import subprocess
import sys
import threading
import time

import pytest

from tests.support.hosts import listening, node_of, on_node

# the dev cluster to itself (tests/support/lanes.py): one case restarts the hub
pytestmark = pytest.mark.alone

# bob's squatter: binds PORT on IPv4 and on IPv6 as soon as each comes free, accepts and counts what
# connects; ends when its stdin closes (or after 180 s) and prints JSON (times are time.monotonic()).
SQUATTER = r"""
import json, select, socket, sys, time

port = int(sys.argv[1])
held, bound, seen, end = {}, {}, [], time.monotonic() + 180
while time.monotonic() < end:
    for family, host in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
        if family not in held:
            s = socket.socket(family)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past the old connections' TIME_WAIT
            if family == socket.AF_INET6:
                s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                s.bind((host, port)); s.listen(16); s.setblocking(False)
                held[family], bound[int(family)] = s, time.monotonic()
            except OSError:
                s.close()
    ready, _, _ = select.select(list(held.values()) + [sys.stdin], [], [], 0.01)
    if sys.stdin in ready:
        break
    for s in ready:
        conn, _ = s.accept(); seen.append(conn.recv(300).decode("latin-1")); conn.close()
print(json.dumps({"bound": bound, "seen": seen}))
"""


def alices_server_port(node: str) -> int:
    """The one TCP port alice's processes listen on for everyone on `node` (her session's; kernels have none)."""
    loopback = ("0100007F", "00000000000000000000000001000000")  # 127.0.0.1 and ::1, as the tables write them
    ports = {port for address, port in listening(node, pwd.getpwnam("alice").pw_uid) if address not in loopback}
    assert len(ports) == 1, ports
    return ports.pop()


def end_by_shutdown(cluster, job):
    status, _ = cluster.request("POST", "/user/alice/api/shutdown")  # JupyterLab's File > Shut Down
    assert status == 200


def end_by_scancel(cluster, job):
    out = subprocess.run(["runuser", "-u", "alice", "--", "scancel", job], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr


def end_by_shutdown_after_a_hub_restart(cluster, job):
    cluster.restart_hub()  # the restarted hub knows the session's token by its saved digest only
    cluster.wait_ready("alice")
    end_by_shutdown(cluster, job)


@pytest.mark.parametrize(
    "end",
    [end_by_shutdown, end_by_scancel, end_by_shutdown_after_a_hub_restart],
    ids=["shut-down", "scancel", "shut-down-after-hub-restart"],
)
def test_bob_never_receives_traffic_for_alices_ended_session(cluster, end):
    assert cluster.start("alice", {"gpus": 0, "hours": 1}) in (201, 202)
    cluster.wait_ready("alice")
    job = cluster.job_of("alice")
    node = node_of(job)
    port = alices_server_port(node)
    squatter = subprocess.Popen(  # bob's terminal on her node
        on_node(node, [sys.executable, "-c", SQUATTER, str(port)], user="bob"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    asked, stop = [], threading.Event()

    def alices_browser():  # keeps asking her server, as an open JupyterLab tab does
        while not stop.is_set():
            asked.append(cluster.request("GET", "/user/alice/api/status", timeout=10)[0])
            stop.wait(0.1)

    browser = threading.Thread(target=alices_browser, daemon=True)
    browser.start()
    try:
        cluster.wait(lambda: 200 in asked, 30, "alice's server answering through the proxy")
        # when the last look that still found her server ready was sent (at first: just before her session
        # ends): the hub answered "ready" before it began the stop, and the keeper lets the port go only once
        # the stop has removed the route
        last_ready = [time.monotonic()]
        end(cluster, job)

        def not_ready() -> bool:
            sent = time.monotonic()
            if (cluster.server("alice") or {}).get("ready"):
                last_ready[0] = sent
                return False
            return True

        cluster.wait(not_ready, 60, "the hub seeing the session end")
        ended = last_ready[0]
        cluster.wait(lambda: job not in cluster.jobs(), 60, f"job {job} gone")
        count = len(asked)
        cluster.wait(lambda: len(asked) >= count + 5, 30, "five more requests after the job ended")
    finally:
        stop.set()
        browser.join(timeout=30)
        squatter.stdin.close()
        out = squatter.stdout.read()
        squatter.wait(timeout=30)
    found = json.loads(out)
    assert found["seen"] == []  # not one of alice's requests reached bob
    ipv6 = str(int(socket.AF_INET6))
    assert ipv6 not in found["bound"] or found["bound"][ipv6] > ended  # IPv6 not taken while she worked
    assert found["bound"], "bob never got the port: the keeper did not release it at the end"

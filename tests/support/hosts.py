"""The dev cluster's hosts as the tests reach them (deploy/dev/hosts.py): a command on a node, as one of its accounts.

The tests run on the head node.  A neighbour's attack on a session runs where a neighbour would be: on the
session's node, in its network namespace (its loopback, its /proc/net/tcp) and with its /tmp, as an account with a
terminal there.  From the head node a node's loopback and /tmp are another host's: an attack started there finds
nothing and proves nothing.
"""

from __future__ import annotations

import subprocess

from deploy.dev import hosts

ADDRESSES = hosts.ADDRESSES  # node -> its address on the cluster network
HEAD_ADDRESS = hosts.HEAD_ADDRESS


def on_node(node: str, argv: list[str], user: str = "root") -> list[str]:
    """argv that runs `argv` on `node` as `user` (their environment otherwise the caller's, as runuser keeps it)."""
    return hosts.onhost_argv(node, argv if user == "root" else ["runuser", "-u", user, "--", *argv])


def node_of(job_id: str) -> str:
    """The node a running job is on (its first, for a job over several)."""
    out = subprocess.run(
        ["scontrol", "show", "hostnames", _nodelist(job_id)], capture_output=True, text=True, timeout=30, check=True
    ).stdout
    return out.split()[0]


def _nodelist(job_id: str) -> str:
    return subprocess.run(
        ["squeue", "-h", "-j", job_id, "-o", "%N"], capture_output=True, text=True, timeout=30, check=True
    ).stdout.strip()


def proc_net(node: str, table: str) -> str:
    """/proc/net/TABLE (tcp, tcp6) as read on `node`: its sockets, which the head's own table does not show."""
    return subprocess.run(
        on_node(node, ["cat", f"/proc/net/{table}"]), capture_output=True, text=True, timeout=30, check=True
    ).stdout


def listening(node: str, uid: int) -> set[tuple[str, int]]:
    """What processes of `uid` listen on over TCP on `node`, as any account there reads it (/proc/net/tcp, tcp6):
    (the local address as the table writes it, in hex; the port)."""
    found = set()
    for table in ("tcp", "tcp6"):
        for line in proc_net(node, table).splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[7] == str(uid):
                address, port = fields[1].rsplit(":", 1)
                found.add((address, int(port, 16)))
    return found

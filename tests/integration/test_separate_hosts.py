"""The dev cluster's compute nodes are hosts of their own (deploy/dev/hosts.py), as on a real site.

Before, every node shared the head node's loopback and /tmp (/etc/hosts sent node001-node003 to 127.0.0.1):
anything that worked only because of that passed here and failed at a site.  Now a job on a node has the node's
name and address, its own /tmp, and reaches nothing of the head's loopback (the proxy's API, MariaDB, Prometheus
and slapd listen there); a session stalls while its node's network is cut and is neither ended nor lost.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time

import pytest

from deploy.dev import hosts
from deploy.dev.slurmconf import CPU_NODES, MIG_NODE
from tests.support import hublog
from tests.support.cluster import url_for
from tests.support.hosts import ADDRESSES, HEAD_ADDRESS, node_of, on_node
from tests.support.http import json_request

CUT_SECONDS = 12  # below anything that would end a session: Slurm's SlurmdTimeout (300 s), the hub's poll

# the head node's services that listen on its loopback only (the proxy 8000 and its API 8001, MariaDB 3306, slapd
# 389, Prometheus 9090, the registry 5443, exim 25), and those the nodes need at its address (the hub's API 8081,
# slurmctld 6817, slurmdbd 6819)
HEADS_OWN = [8000, 8001, 3306, 389, 9090, 5443, 25]
FOR_THE_NODES = [8081, 6817, 6819]

# what a job sees of its host: its name and that name's address, its /tmp, and which of those ports it reaches on
# its own loopback (a shared one would be the head's) and at the head's address
LOOK = r"""
import json, os, socket, sys
mark, head, ports = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
def reached(host):
    found = []
    for port in ports:
        try:
            socket.create_connection((host, port), timeout=2).close()
            found.append(port)
        except OSError:
            pass
    return found
name = socket.gethostname()
first = not os.path.exists("/tmp/" + mark)
open("/tmp/" + mark, "a").close()
print(json.dumps({"name": name, "address": socket.gethostbyname(name), "first_in_tmp": first,
                  "loopback": reached("127.0.0.1"), "head": reached(head)}))
"""


def partition_of(node: str) -> str:
    return "cpu" if node in CPU_NODES else "mig" if node == MIG_NODE else "debug"


def look_from(node: str, mark: str) -> dict:
    done = subprocess.run(
        ["runuser", "-u", "alice", "--", "srun", f"--nodelist={node}", f"--partition={partition_of(node)}"]
        # one core and a little memory: without --mem a job is given its whole node's (the cluster sets no
        # DefMemPerCPU) and waits until the node is empty
        + [
            "--time=2",
            "--cpus-per-task=1",
            "--mem=64M",
            "--chdir=/home/alice",
            "/usr/bin/python3",
            "-c",
            LOOK,
            mark,
            HEAD_ADDRESS,
        ]
        + [json.dumps(HEADS_OWN + FOR_THE_NODES)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.alone  # a job on every node, GPU nodes too: beside the lanes a node may stay full past the timeout
def test_each_node_has_its_own_name_address_and_tmp_and_reaches_of_the_head_only_what_nodes_need():
    mark = f"dsportal-host-{time.monotonic_ns()}"
    seen = {node: look_from(node, mark) for node in ADDRESSES}
    for node, look in seen.items():
        assert (look["name"], look["address"]) == (node, ADDRESSES[node]), look
        assert look["first_in_tmp"], (node, "another host's file was in this node's /tmp")  # each /tmp its own
        assert look["loopback"] == [], (node, look)  # the head's loopback is another host's
        assert look["head"] == FOR_THE_NODES, (node, look)  # at its address: what the nodes need, nothing else
    again = look_from("node001", mark)
    assert not again["first_in_tmp"]  # the node's /tmp is kept between its jobs, as a disk is
    for node in ADDRESSES:
        subprocess.run(on_node(node, ["rm", "-f", f"/tmp/{mark}"]), check=True, timeout=30)


@pytest.mark.alone  # cuts a node's network: nothing else may run there meanwhile
def test_a_session_stalls_through_a_cut_of_its_nodes_network_and_is_neither_ended_nor_lost(cluster):
    assert cluster.start("alice", {"gpus": 0, "hours": 1}) in (201, 202)
    cluster.wait_ready("alice")
    job = cluster.job_of("alice")
    node = node_of(job)
    mark = hublog.mark()
    answered: list[tuple[float, int]] = []  # another user's look at the hub while the node is away
    stop = threading.Event()

    def bobs_look() -> None:
        bob = cluster.user_token("bob")
        while not stop.is_set():
            sent = time.monotonic()
            status = json_request("GET", url_for("/hub/api/users/bob"), token=bob, timeout=30)[0]
            answered.append((time.monotonic() - sent, status))
            stop.wait(0.5)

    looker = threading.Thread(target=bobs_look, daemon=True)
    hosts.cut(node)
    try:
        looker.start()
        deadline = time.monotonic() + CUT_SECONDS
        while time.monotonic() < deadline:
            assert (cluster.server("alice") or {}).get("ready"), "the hub took alice's session for ended"
            time.sleep(1)
    finally:
        hosts.mend(node)
        stop.set()
        looker.join(timeout=60)
    # back: her own server answers through the proxy again, the same job, and the hub never ended it
    cluster.wait(lambda: cluster.request("GET", "/user/alice/api/status")[0] == 200, 60, "alice's server again")
    assert cluster.job_of("alice") == job
    assert cluster.server("alice")["ready"]
    log = hublog.since(mark)
    assert f"Session job {job} of alice has ended" not in log, log[-3000:]
    assert answered and {status for _, status in answered} == {200}, answered  # the hub answered others throughout
    print(
        f"bob's looks during the {CUT_SECONDS}-s cut of {node}: {len(answered)}, longest wait "
        f"{max(w for w, _ in answered):.2f} s"
    )
    cluster.stop("alice")


def test_the_hub_is_reached_by_the_nodes_at_its_address_on_the_cluster_network():
    """The sessions' API calls go to the head node's address (hub.internal_connect_url), not its loopback."""
    listening = subprocess.run(["ss", "-Hltn", "sport = :8081"], capture_output=True, text=True, timeout=30).stdout
    assert f"{HEAD_ADDRESS}:8081" in listening, listening
    assert "127.0.0.1:8081" not in listening, listening

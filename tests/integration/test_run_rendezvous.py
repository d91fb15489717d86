"""A neighbour against a run over several nodes: bob, another account on the nodes of alice's 2-node run of a
torch script, attacks every socket alice's processes listen on (tests/support/neighbour.py) while it runs.

torchrun's c10d rendezvous (what the portal used before) is a TCP store without authentication that every
agent reads with pickle.loads: bob wrote his pickle into it and it ran as alice.  The portal's processes now
find each other through a private folder (spawner/job/runs/distributed.py); what still listens is gloo's socket per
process, which carries the training's tensors, and every connection it hands out is proven with the run's
secret before anything else goes over it.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import struct
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from deploy.dev.slurmconf import GPU_NODES
from tests.support.demo import uid_of
from tests.support.jobs import JobsClient
from tests.support.neighbour import Neighbour

# the dev cluster to itself (tests/support/lanes.py): needs 2 GPUs free on each node at once
pytestmark = pytest.mark.alone

PATTERN = 4321.123456789  # what each rank adds (plus its rank), so that bob knows it when he reads it
ENDED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"}


def train_script(steps: int, delay: float) -> str:
    """A user's script that runs under torchrun (env://) and under the portal (README): all-reduce and broadcast
    known numbers `steps` times, checking every answer; rank r waits `delay` x r seconds before it connects."""
    return f"""
import os, sys, time
import torch
import torch.distributed as dist

time.sleep({delay} * int(os.environ.get("RANK", "0")))
if "DSPORTAL_DIST_INIT" in os.environ:  # started by the portal: a private folder, every peer proven
    from spawner.job.runs.distributed import init_process_group
    init_process_group("gloo")
else:  # started by torchrun: its env:// rendezvous
    dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
sys.stdout.write(f"rank {{rank}} of {{world}} on {{os.environ['SLURMD_NODENAME']}}\\n")
# every pair of ranks exchanges a number, so that whatever connection bob holds carries one
mine = torch.full((256,), {PATTERN} + rank, dtype=torch.float64)
theirs = {{peer: torch.zeros(256, dtype=torch.float64) for peer in range(world) if peer != rank}}
works = [dist.isend(mine, peer) for peer in theirs] + [dist.irecv(t, peer) for peer, t in theirs.items()]
for work in works:
    work.wait()
if not all(bool(torch.all(t == {PATTERN} + peer)) for peer, t in theirs.items()):
    sys.stdout.write(f"rank {{rank}}: ALTERED exchange\\n")
    sys.exit(3)
for step in range({steps}):
    x = torch.full((256,), {PATTERN} + rank, dtype=torch.float64)
    dist.all_reduce(x)
    y = torch.full((256,), {PATTERN} if rank == 0 else 0.0, dtype=torch.float64)
    dist.broadcast(y, 0)
    if not (torch.all(x == world * {PATTERN} + sum(range(world))) and torch.all(y == {PATTERN})):
        sys.stdout.write(f"rank {{rank}}: ALTERED at step {{step}}\\n")
        sys.exit(3)
    time.sleep(0.5)
dist.barrier()
sys.stdout.write(f"rank {{rank}} done\\n")
dist.destroy_process_group()
"""


def patterns(world: int) -> tuple[bytes, ...]:
    """Every value that travels between the ranks: each rank's own, and every partial sum of them."""
    values = [PATTERN + r for r in range(world)]
    sums = {sum(c) for n in range(1, world + 1) for c in itertools.combinations(values, n)}
    return tuple(struct.pack("<d", v) for v in sorted(sums))


@pytest.fixture(scope="module")
def alice() -> JobsClient:
    return JobsClient.for_user("alice")


@pytest.fixture
def marker() -> Iterator[Path]:
    """Where bob's pickle writes, if it ever runs: a folder every account may write to, on the shared storage (a
    node's /tmp is that node's: a marker written there would never reach this test on the head node)."""
    folder = tempfile.mkdtemp(prefix="dsportal-attack-", dir="/mnt/isilon")
    os.chmod(folder, 0o1777)
    yield Path(folder) / "pwned"
    shutil.rmtree(folder)


def ran_as(marker: Path) -> str:
    return f"bob's pickle ran as uid {marker.read_text()}" if marker.exists() else ""


def test_a_neighbour_cannot_plant_a_pickle_in_a_multi_node_run_nor_take_its_port(alice, cluster, marker):
    alice.write("runs/rdzv/train.py", train_script(steps=50, delay=0))
    bobs = [Neighbour("bob", uid_of("alice"), "alice", str(marker), seconds=400, node=n) for n in GPU_NODES]
    try:
        run = alice.submit({"path": "runs/rdzv/train.py", "nodes": 2, "gpus": 2, "hours": 0.25})
        state = alice.wait_state(run["job_id"], ENDED, 300)  # Slurm's word: the hub may restart meanwhile
    finally:
        seens = [bob.result() for bob in bobs]
    log = alice.log(run["job_id"])
    assert not marker.exists(), (ran_as(marker), seens, log)
    for seen in seens:  # no store of alice's took bob's writes, on either node
        assert (seen["stores"], seen["read_back"]) == ([], []), seen
    assert (state, "dsportal-run: done" in log) == ("COMPLETED", True), (log, seens)
    ranks = re.findall(r"rank ([0-9]+) of 4 on (node[0-9]+)", log)
    assert sorted(ranks) == [("0", "node001"), ("1", "node001"), ("2", "node002"), ("3", "node002")], log
    assert "ALTERED" not in log and sorted(re.findall(r"^rank ([0-9]) done$", log, re.M)) == ["0", "1", "2", "3"], log
    # the attack was real: on each node bob found alice's listening sockets while the run ran, and hit each
    for seen in seens:
        assert seen["listeners"], seen
        assert seen["raw_sent"] >= len(seen["listeners"]), seen
        assert seen["ports_held"] == 200, seen
    assert not list(alice.home.glob(".dsportal-dist-*"))  # the private folder went with the processes


def test_a_neighbour_who_takes_a_ranks_connection_reads_nothing_and_the_run_stops(alice, cluster, marker):
    # rank r connects 3 r seconds after rank 0: the window in which bob, introducing himself to a rank's gloo
    # socket with the sequence number its peer will send, is handed the connection meant for that peer
    alice.write("runs/rdzv/late.py", train_script(steps=10, delay=3))
    bobs = [
        Neighbour("bob", uid_of("alice"), "alice", str(marker), seconds=400, node=n, seq=True, patterns=patterns(4))
        for n in GPU_NODES
    ]
    try:
        run = alice.submit({"path": "runs/rdzv/late.py", "nodes": 2, "gpus": 2, "hours": 0.25})
        state = alice.wait_state(run["job_id"], ENDED, 300)
    finally:
        seens = [bob.result() for bob in bobs]
    log = alice.log(run["job_id"])
    assert not marker.exists(), (ran_as(marker), seens, log)
    assert [seen["patterns_seen"] for seen in seens] == [[], []], seens  # not one number of the training reached bob
    assert "ALTERED" not in log, log
    # bob reached alice's gloo sockets on each node while they waited for their peers
    assert all(seen["listeners"] for seen in seens), seens
    if any(seen["hijacked"] for seen in seens):  # gloo gave bob a connection: its rank found no proof and stopped
        assert (state, "did not prove" in log) == ("FAILED", True), (log, seens)
    else:
        assert (state, "dsportal-run: done" in log) == ("COMPLETED", True), (log, seens)
    assert not list(alice.home.glob(".dsportal-dist-*"))

"""Slurm confines each session to its own GPUs, cores and memory (task/cgroup, cgroup.conf's Constrain*).

The dev cluster's stand-in GPUs are character devices of their own numbers (/dev/dsportal-dev/NODE-nvidiaN, 195:N)
with no driver behind them: an open the job's device cgroup allows fails with ENXIO, one it refuses with EPERM.  A
session's kernel opens every GPU device of its node; only its own GPU is not refused.
"""

from __future__ import annotations

import errno
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.support.cluster import Cluster, job_gpus
from tests.support.jupyter import run_code

DEVICES = Path("/dev/dsportal-dev")
OPEN_EACH = """
import errno, json, os
found = {}
for name in sorted(os.listdir("/dev/dsportal-dev")):
    if name.startswith(os.environ["SLURMD_NODENAME"] + "-"):
        try:
            os.close(os.open("/dev/dsportal-dev/" + name, os.O_RDONLY))
            found[name] = "opened"
        except OSError as e:
            found[name] = errno.errorcode[e.errno]
print(json.dumps({"devices": found, "cpus": sorted(os.sched_getaffinity(0))}))
"""


def job_cgroup(job_id: str, controller: str) -> Path:
    """The job's folder in a cgroup v1 controller: slurm_NODE/uid_UID/job_ID (multiple-slurmd's prefix)."""
    (folder,) = Path("/sys/fs/cgroup", controller).glob(f"slurm_*/uid_*/job_{job_id}")
    return folder


def in_the_session(cluster: Cluster, user: str) -> dict:
    status, out = run_code(cluster, user, "python3", OPEN_EACH)
    assert status == "ok", out
    return json.loads(out.strip().splitlines()[-1])


def test_a_session_opens_its_own_gpu_and_its_node_refuses_the_others_with_eperm(cluster):
    for user in ("alice", "bob"):
        cluster.ensure_user(user)
    assert cluster.start("alice", {"partition": "sxm2", "gpus": 1, "gpu_type": "v100", "hours": 1}) in (201, 202)
    assert cluster.start("bob", {"partition": "sxm2", "gpus": 0, "hours": 1}) in (201, 202)
    cluster.wait_ready("alice")
    cluster.wait_ready("bob")
    job = cluster.job_of("alice")
    node, (mine,) = job_gpus(job)
    assert node == "node001"  # the V100 node

    alice = in_the_session(cluster, "alice")
    own = f"{node}-nvidia{mine}"
    assert alice["devices"] == {
        f"{node}-nvidia{n}": "ENXIO" if f"{node}-nvidia{n}" == own else "EPERM" for n in range(4)
    }
    # bob, without GPUs, opens none of his node's (were it alice's node, her GPU too)
    bob = in_the_session(cluster, "bob")
    assert set(bob["devices"].values()) == {"EPERM"}, bob
    # outside any job (the test, as root) none is refused: the EPERM above is the cgroup's, not the device's
    for name in alice["devices"]:
        with pytest.raises(OSError) as outside:
            os.open(DEVICES / name, os.O_RDONLY)
        assert outside.value.errno == errno.ENXIO, name

    # memory: the job's cgroup holds it to what Slurm granted; cores: its cpuset is the one its kernel runs on
    granted = re.search(r"\bMinMemoryNode=(\d+)([MG])", cluster.scontrol(job))
    assert granted, cluster.scontrol(job)
    mib = int(granted.group(1)) * (1024 if granted.group(2) == "G" else 1)
    limit = int((job_cgroup(job, "memory") / "memory.limit_in_bytes").read_text())
    # a dev node declares more memory than this machine has: Slurm holds the job to what the machine has
    machine_mib = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") >> 20
    assert limit == min(mib, machine_mib) << 20, (limit, mib, machine_mib)
    cpuset = (job_cgroup(job, "cpuset") / "cpuset.cpus").read_text().strip()
    assert set(alice["cpus"]) <= cpus_of(cpuset), (alice["cpus"], cpuset)


def cpus_of(cpuset: str) -> set[int]:
    """'0-1,3' -> {0, 1, 3}"""
    cpus: set[int] = set()
    for part in cpuset.split(","):
        first, _, last = part.partition("-")
        cpus |= set(range(int(first), int(last or first) + 1))
    return cpus


def test_a_job_above_its_memory_is_killed_by_its_cgroup():
    """ConstrainRAMSpace: bob's step of --mem=64M touching 256 MiB ends Out Of Memory (the node is not at risk)."""
    touch = "b = bytearray(256 << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\nprint('survived')"
    out = subprocess.run(
        ["sudo", "-u", "bob", "srun", "--partition=debug", "--mem=64M", "--time=2", "--chdir=/home/bob"]
        + ["python3", "-c", touch],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode != 0 and "survived" not in out.stdout, out
    assert "Out Of Memory" in out.stderr or "oom-kill" in out.stderr, out.stderr

"""GPU types on the real dev cluster: node001's four V100 and node002's four A100 (typed GRES, gres.conf Type=).

The hub reads each partition's types from Slurm (sinfo), labels them from the admin config (slurm.gpu_types), and
submits a session of one type with --gres=gpu:TYPE:N; "any type" keeps --gres=gpu:N, so Slurm takes whichever
is free first.
"""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.support.cluster import Cluster

# the dev cluster to itself (tests/support/lanes.py): takes every V100 and needs the A100s free at once
pytestmark = pytest.mark.alone

NO_H100 = (
    'gpu_type: partition sxm2 has no GPUs of type "h100" to ask for; choose one of a100 (A100 80 GB), '
    "v100 (V100 32 GB), or any type."
)


def sxm2(user: Cluster) -> dict:
    return user.request("GET", "/hub/api/dsportal/partitions")[1]["partitions"][0]


def block_the_v100_node() -> None:
    """bob's job takes node001's four V100 for 10 minutes."""
    subprocess.run(
        ["sudo", "-u", "bob", "sbatch", "--job-name=blocker", "--partition=sxm2", "--gres=gpu:v100:4", "--time=10"]
        + ["--chdir=/home/bob", "--output=/dev/null", "--wrap", "sleep 600"],
        check=True,
        timeout=30,
        capture_output=True,
    )


@pytest.mark.slurm
def test_a_session_of_one_gpu_type_and_of_any_type_while_the_other_type_is_busy(cluster):
    cluster.ensure_user("alice")
    status, token = cluster.request("POST", "/hub/api/users/alice/tokens", {"note": "types", "expires_in": 600})
    assert status == 201, token
    as_alice = Cluster(token["token"])
    types = cluster.wait(lambda: sxm2(as_alice)["types"], 30, "sxm2's GPU types in the hub's answer")
    assert [(t["gpu_type"], t["label"], t["gpus_total"]) for t in types] == [
        ("a100", "A100 80 GB", 4),
        ("v100", "V100 32 GB", 4),
    ]
    assert NO_H100 in cluster.refused_start("alice", {"gpus": 1, "gpu_type": "h100", "hours": 1})
    assert not cluster.jobs("alice")  # nothing was submitted

    block_the_v100_node()
    try:
        cluster.wait(lambda: [j for j in cluster.jobs("bob").values() if j["state"] == "RUNNING"], 60, "the blocker")

        def v100_busy() -> dict | None:
            """No V100 free and every A100 free, in the hub's answer and in Slurm's own state of the A100 node: a
            job of the test before may still be completing there (seen on Slurm 24.11, whose sbatch --test-only
            then expected the A100 free 10 s later)."""
            free = {t["gpu_type"]: t["gpus_free"] for t in sxm2(as_alice)["types"]}
            node = subprocess.run(
                ["sinfo", "--noheader", "--nodes=node002", "--format=%T"], capture_output=True, text=True, timeout=30
            ).stdout.split()
            return free if free == {"a100": 4, "v100": 0} and set(node) == {"idle"} else None

        cluster.wait(v100_busy, 30, "no V100 free and the A100 node idle")
        for gpu_type, now in (("v100", False), ("a100", True), ("", True)):
            query = "partition=sxm2&gpus=1&hours=1" + (f"&gpu_type={gpu_type}" if gpu_type else "")
            status, when = as_alice.request("GET", f"/hub/api/dsportal/estimate?{query}")
            assert status == 200 and when["starts_now"] is now, (gpu_type, when)

        # the fastest start: a V100 is not free; "any type" and the A100 are, and Slurm's estimate says when the
        # V100 would be
        status, found = as_alice.request(
            "GET", "/hub/api/dsportal/alternatives?partition=sxm2&gpus=1&hours=1&gpu_type=v100"
        )
        assert status == 200, found
        ways = {a["difference"]: a for a in found["alternatives"]}
        assert ways["any GPU type (whichever is free first)"]["starts_now"] is True
        assert ways["A100 80 GB"]["starts_now"] is True
        assert ways["as asked"]["starts_now"] is False and ways["as asked"]["asked"] is True
        assert found["alternatives"][-1]["asked"]  # the asked one, not free now, comes after those that are
        assert ways["A100 80 GB"]["options"] == {"partition": "sxm2", "gpus": "1", "hours": "1", "gpu_type": "a100"}

        # one A100 by name, then one GPU of any type: both go to the A100 node, the V100 node being full
        # the card says the type: the one asked for, or the one Slurm gave "any type" (the A100, being free first)
        for options, gres, shown in (
            ({"gpu_type": "a100"}, "gpu:a100:1", "A100 80 GB"),
            ({}, "gpu:1", "A100 80 GB (whichever was free first)"),
        ):
            assert cluster.start("alice", {"gpus": 1, "hours": 1, **options}) in (201, 202)
            cluster.wait_ready("alice")
            job = cluster.job_of("alice")
            assert cluster.jobs("alice")[job]["node"] == "node002"
            assert re.search(rf"TresPerNode=gres[:/]{gres}\b", cluster.scontrol(job)), cluster.scontrol(job)
            status, home = as_alice.request("GET", "/hub/api/dsportal/session")
            assert status == 200 and home["session"]["gpu_type"] == shown, home["session"]
            cluster.stop("alice")
    finally:
        subprocess.run(["scancel", "--name=blocker", "--user=bob"], check=False, timeout=30)
        cluster.stop("alice")

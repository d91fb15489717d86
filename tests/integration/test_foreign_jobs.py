"""Any account may submit a job named like the portal's, of any shape: it costs its own listing lines, no more.

The attack: bob holds a heterogeneous job named `dsportal` (squeue lists it
as 82+0 and 82+1).  Before the fix every listing of the portal's jobs was
unreadable while it was there: alice's start failed ("Slurm stopped
answering"), stops never confirmed, the reconciler was blind.
"""

from __future__ import annotations

import subprocess

HETJOB = """#!/bin/bash
#SBATCH --job-name=dsportal
#SBATCH --partition=sxm2
#SBATCH --hold
#SBATCH --output=/dev/null
#SBATCH hetjob
#SBATCH --partition=sxm2
sleep 600
"""


def test_a_held_hetjob_named_like_the_portals_blinds_nobody(cluster):
    out = subprocess.run(
        ["runuser", "-u", "bob", "--", "sbatch", "--parsable", "--chdir=/home/bob"],
        input=HETJOB,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    hetjob = out.stdout.strip().split(";")[0]
    try:
        listed = subprocess.run(
            ["squeue", "-h", "--name=dsportal", "-o", "%i"], capture_output=True, text=True, timeout=30
        ).stdout.split()
        assert f"{hetjob}+0" in listed and f"{hetjob}+1" in listed, listed  # what the hub's listing meets
        assert cluster.start("alice", {"gpus": 1, "hours": 1}) in (201, 202)
        cluster.wait_ready("alice")
        job = cluster.job_of("alice")
        cluster.stop("alice")  # confirmed gone: the listing still reads
        cluster.wait(lambda: job not in cluster.jobs(), 60, f"alice's job {job} gone")
        assert cluster.start("alice", {"gpus": 0, "hours": 1}) in (201, 202)  # no "previous session is stopping"
        cluster.wait_ready("alice")
        assert (
            f"{hetjob}+0"
            in subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True, timeout=30).stdout.split()
        )  # the hub leaves bob's own job alone
    finally:
        subprocess.run(["scancel", hetjob], timeout=30)

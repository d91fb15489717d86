"""The dev cluster's Slurm keeps job data private (PrivateData=jobs,usage,users,accounts), as many sites do.

Users see only their own jobs in Slurm; the hub's service account sees every job as a coordinator of the
projects (deploy/dev/associations.py), the least rank that does (docs/admins/slurm.md).  Before the portal knew
of PrivateData, a site that turned it on without that rank lost every session: the hub's squeue, as its own
account, listed none of them, and a running session missing from a listing that succeeded was taken for ended
(its route removed, its token deleted, its job running on with its GPUs).
"""

from __future__ import annotations

import json
import subprocess

import pytest

from spawner.hub.slurm.held import held_jobs_argv
from spawner.slurmvocab import (
    ALL_PARTITIONS,
    jobs_argv,
    named_jobs_argv,
    partitions_gres_argv,
    sinfo_nodes_argv,
    user_jobs_argv,
)
from tests.support import hublog
from tests.support.cluster import url_for
from tests.support.http import json_request

pytestmark = pytest.mark.slurm  # run again on Slurm 24.11 (deploy/devcluster test, phase 3)

DSPORTAL = "/opt/dsportal/venv/bin/dsportal"
SACCTMGR = ["sacctmgr", "--immediate", "--noheader", "--parsable2"]
PROJECTS = "nlp,spent,vision"  # deploy/dev/associations.py: the accounts the hub's account coordinates


def as_user(user: str, *argv: str) -> str:
    done = subprocess.run(["runuser", "-u", user, "--", *argv], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_users_see_only_their_own_jobs_and_the_hub_sees_all(cluster):
    alice = cluster.user_token("alice")
    assert json_request("POST", url_for("/hub/api/users/alice/server"), {"gpus": 0, "hours": 1}, token=alice)[0] in (
        201,
        202,
    )
    cluster.wait_ready("alice")
    job = cluster.job_of("alice")
    assert "jobs" in as_user("bob", "scontrol", "show", "config").split("PrivateData", 1)[1].split("\n", 1)[0]
    assert job in as_user("alice", "squeue", "--noheader", "--format=%i").split()
    assert job not in as_user("bob", "squeue", "--noheader", "--format=%i").split()  # Slurm hides it from bob
    assert job not in as_user("bob", "sacct", "--allusers", "--noheader", "--format=JobID").split()
    assert job in as_user("dsportal", "squeue", "--noheader", "--format=%i").split()  # the hub's account sees it
    # and through the portal, bob still sees none of alice's jobs
    bob = cluster.user_token("bob")
    status, panel = json_request("GET", url_for("/hub/api/dsportal/runs"), token=bob)
    # in no field: as a whole value or an array task's ("3", "3_1"), not as digits of any number (a young
    # cluster's job id is "3")
    shown = json.dumps(panel)
    assert status == 200 and f'"{job}"' not in shown and f'"{job}_' not in shown, panel
    cluster.stop("alice")


@pytest.mark.alone  # the hub cannot see anyone's jobs for a moment: nothing else may start meanwhile
def test_a_hub_that_cannot_see_the_jobs_keeps_every_running_session(cluster):
    alice = cluster.user_token("alice")
    start = url_for("/hub/api/users/alice/server")
    assert json_request("POST", start, {"gpus": 0, "hours": 1}, token=alice)[0] in (201, 202)
    cluster.wait_ready("alice")
    job = cluster.job_of("alice")
    mark = hublog.mark()
    subprocess.run(
        [*SACCTMGR, "remove", "coordinator", f"account={PROJECTS}", "names=dsportal"], check=True, timeout=30
    )
    try:
        cluster.wait(
            lambda: job not in as_user("dsportal", "squeue", "--noheader", "--format=%i").split(),
            30,
            "Slurm to hide alice's job from the hub's account",
        )

        def poked_and_told() -> bool:
            json_request("POST", start, {"gpus": 0, "hours": 1}, token=alice)  # JupyterHub polls the session
            return "PrivateData (jobs,usage,users,accounts) hides from dsportal" in hublog.since(mark)

        cluster.wait(poked_and_told, 60, "the hub's log to name PrivateData")
        status, body = json_request("POST", start, {"gpus": 0, "hours": 1}, token=alice)
        assert status == 400 and "already running" in body["message"], (status, body)
        assert (cluster.server("alice") or {}).get("ready") and cluster.jobs("alice")[job]["state"] == "RUNNING"
        said = hublog.since(mark)
        assert f"Session job {job} of alice has ended" not in said, said
        assert "Make dsportal a coordinator of the accounts the portal's users charge" in said
        doctor = subprocess.run([DSPORTAL, "doctor"], capture_output=True, text=True, timeout=180)
        assert "FIX  slurm private data: Slurm's PrivateData (jobs,usage,users,accounts) hides from dsportal" in (
            doctor.stdout
        ), doctor.stdout
        assert f"`sacctmgr add coordinator account={PROJECTS} names=dsportal`" in doctor.stdout, doctor.stdout
    finally:
        subprocess.run(
            [*SACCTMGR, "add", "coordinator", f"account={PROJECTS}", "names=dsportal"], check=True, timeout=30
        )
    # the rank back, the same session is the hub's to follow and to stop
    cluster.stop("alice")
    cluster.wait(lambda: job not in cluster.jobs("alice"), 60, f"alice's job {job} cancelled")
    page = json_request("GET", url_for("/hub/api/dsportal/session"), token=alice)[1]
    ended = next(h for h in page["history"] if h["job_id"] == job)
    assert ended["why"].startswith("Stopped through the portal"), ended


@pytest.mark.alone  # adds a partition for a moment: no other test may read the cluster's partitions meanwhile
def test_the_hubs_listings_hold_jobs_in_a_partition_its_account_may_not_use(cluster):
    # a site's partition for one group (AllowGroups): squeue and sinfo, as the hub's account, list its jobs and
    # nodes only when asked for every partition (--all); without it, a session there was taken for gone at its
    # first poll
    partition = "datasci-only"
    subprocess.run(
        ["scontrol", "create", f"PartitionName={partition}", "Nodes=node003", "AllowGroups=datasci", "State=UP"],
        check=True,
        timeout=30,
    )
    job = ""
    try:
        submit = ["sbatch", "--parsable", f"--partition={partition}", "--job-name=hidden-test", "--time=5"]
        job = as_user("alice", *submit, "--output=/dev/null", "--chdir=/tmp", "--wrap", "sleep 300").strip()

        def listed(argv: list[str]) -> bool:
            return job in {line.split("|")[0] for line in as_user("dsportal", *argv).split()}

        for argv in (
            jobs_argv("squeue"),
            named_jobs_argv("squeue", "hidden-test"),
            user_jobs_argv("squeue", "alice"),
            held_jobs_argv("squeue", "hidden-test", "alice"),
        ):
            assert listed(argv), argv
            assert not listed([a for a in argv if a != ALL_PARTITIONS]), argv  # what the hub asked before
        # and sinfo, which hid the partition's nodes and their GPUs the same way
        for argv in (sinfo_nodes_argv("sinfo"), partitions_gres_argv("sinfo")):
            assert partition in as_user("dsportal", *argv), argv
            assert partition not in as_user("dsportal", *[a for a in argv if a != ALL_PARTITIONS]), argv
    finally:
        if job:
            subprocess.run(["scancel", job], timeout=30)
        subprocess.run(["scontrol", "delete", f"PartitionName={partition}"], check=True, timeout=30)

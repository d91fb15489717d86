"""More time for a running session on the real dev cluster: the hub's API, sudo and the root-owned helper."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.support.cluster import url_for
from tests.support.http import json_request, wait_until

pytestmark = pytest.mark.slurm  # run again on Slurm 24.11 (deploy/devcluster test, phase 3)

HELPER = "/opt/dsportal/venv/bin/dsportal-extend-session"


def as_hub_account(*argv: str) -> subprocess.CompletedProcess:
    """What the hub's service account may run with sudo (deploy/sudoers.d/dsportal)."""
    return subprocess.run(
        ["runuser", "-u", "dsportal", "--", "sudo", "-n", *argv], capture_output=True, text=True, timeout=60
    )


def limit_of(cluster, job_id: str) -> str:
    return next(w.split("=", 1)[1] for w in cluster.scontrol(job_id).split() if w.startswith("TimeLimit="))


def test_a_running_session_gets_more_time_up_to_the_limit(cluster):
    cluster.start("bob", {"gpus": 0, "hours": 11})
    cluster.wait_ready("bob")
    job_id = cluster.job_of("bob")
    assert limit_of(cluster, job_id) == "11:00:00"
    status, token = cluster.request("POST", "/hub/api/users/bob/tokens", {"note": "extend test"})
    assert status == 201, token

    def extend():
        return json_request("POST", url_for("/hub/api/dsportal/session/extend"), {}, token=token["token"], timeout=90)

    # JupyterLab's button: the session's own server asks the hub with its token
    status, answer = cluster.request("POST", "/user/bob/dsportal/session/extend", {}, timeout=90)
    assert status == 200, answer
    assert answer["session"]["limit"] == "12 h"
    assert limit_of(cluster, job_id) == "12:00:00"  # Slurm itself holds the new limit; the end moved with it
    status, clock = cluster.request("GET", "/user/bob/dsportal/session/clock?fresh=1")
    assert status == 200 and 11.9 * 3600 < clock["seconds_left"] <= 12 * 3600, clock  # the countdown follows
    status, answer = extend()
    assert (status, answer["message"]) == (
        400,
        "Your session already has 12 h; with extensions a session may last at most 12 h here.",
    )
    assert limit_of(cluster, job_id) == "12:00:00"
    cluster.stop("bob")


def test_the_hub_account_may_run_the_helper_only_as_it_checks(cluster):
    cluster.start("alice", {"gpus": 0, "hours": 1})
    cluster.wait_ready("alice")
    session = cluster.job_of("alice")
    other = subprocess.run(
        ["runuser", "-u", "alice", "--", "sbatch", "--parsable", "--job-name=mine", "--time=5", "--wrap", "sleep 300"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout.strip()
    try:
        for argv, status, words in [
            ((session, "abc"), 2, "usage: dsportal-extend-session JOB_ID NEW_LIMIT_MINUTES"),
            ((f"{session};id", "120"), 2, "usage"),
            ((session, "120", "--partition=x"), 2, "usage"),
            ((other, "10"), 3, f"Job {other} is not a session of this portal."),
            ((session, "30"), 3, "already has 60 minutes; an extension must add time"),
            ((session, "721"), 3, "at most 12 h with extensions"),
        ]:
            done = as_hub_account(HELPER, *argv)
            assert (done.returncode, words in done.stderr) == (status, True), (argv, done.stderr)
        # nothing else as root: not scontrol itself, not a shell
        for argv in (["scontrol", "update", f"JobId={session}", "TimeLimit=700"], ["/bin/sh", "-c", "id"]):
            done = as_hub_account(*argv)
            assert done.returncode != 0 and "password is required" in done.stderr, done
        assert limit_of(cluster, session) == "01:00:00"
        done = as_hub_account(HELPER, session, "120")
        assert (done.returncode, done.stdout.strip()) == (0, f"Job {session}: time limit now 120 minutes."), done.stderr
        assert limit_of(cluster, session) == "02:00:00"
    finally:
        subprocess.run(["scancel", other], timeout=30)
        cluster.stop("alice")


def test_a_session_in_a_short_qos_is_not_extended_past_its_wall_time(cluster):
    """root is held to no QOS MaxWall by Slurm: before the helper checked it, alice's 1-hour QOS short session
    (a QOS a site may give a higher priority) was extended to 2 h, then on to 12."""
    assert cluster.start("alice", {"gpus": 0, "hours": 1, "qos": "short"}) in (201, 202)
    cluster.wait_ready("alice")
    session = cluster.job_of("alice")
    try:
        status, answer = cluster.request("POST", "/user/alice/dsportal/session/extend", {}, timeout=90)
        assert status == 400 and answer["message"] == (
            "The session's QOS short has a MaxWall of 01:00:00: at most 60 minutes per job."
        )
        assert limit_of(cluster, session) == "01:00:00"
    finally:
        cluster.stop("alice")


def held_max_wall(user: str, account: str) -> str:
    """The MaxWall slurmctld holds `user`'s association in `account` to, in minutes ('' = none): what it enforces."""
    out = subprocess.run(
        ["scontrol", "--oneliner", "show", "assoc_mgr", f"users={user}", f"accounts={account}", "flags=assoc"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    match = re.search(rf"^ClusterName=\S+ Account={account} UserName={user}\(.*? MaxWallPJ=(\S*)", out, re.M)
    assert match, out
    return match.group(1)


@contextmanager
def association_max_wall(user: str, account: str, wall: str, minutes: str) -> Iterator[None]:
    """`user`'s association in `account` with a MaxWall (sacctmgr, as a Slurm admin sets it), put back afterwards."""
    sacctmgr = ["sacctmgr", "--immediate", "modify", "user", user, "where", f"account={account}", "set"]

    def held(value: str) -> None:
        wait_until(lambda: held_max_wall(user, account) == value, 60, f"slurmctld holding MaxWall {value!r}")

    subprocess.run([*sacctmgr, f"MaxWall={wall}"], capture_output=True, timeout=60, check=True)
    try:
        held(minutes)
        yield
    finally:
        subprocess.run([*sacctmgr, "MaxWall=-1"], capture_output=True, timeout=60, check=True)
        held("")


def test_a_session_is_not_extended_past_its_users_association_maxwall(cluster):
    """root is held to no association limit by Slurm: before the helper read them, dave's session was extended to
    2 h through the hub's API where his association's MaxWall is 1 h (his own `sbatch -t 120` stays pending,
    AssocMaxWallDurationPerJobLimit)."""
    with association_max_wall("dave", "vision", "01:00:00", "60"):
        assert cluster.start("dave", {"gpus": 0, "hours": 1}) in (201, 202)
        cluster.wait_ready("dave")
        session = cluster.job_of("dave")
        try:
            status, token = cluster.request("POST", "/hub/api/users/dave/tokens", {"note": "extend", "expires_in": 600})
            assert status == 201, token
            status, answer = json_request(
                "POST", url_for("/hub/api/dsportal/session/extend"), {}, token=token["token"], timeout=90
            )
            assert status == 400, (answer, limit_of(cluster, session))  # before: 200, and TimeLimit=02:00:00
            assert answer["message"] == (
                "Your Slurm association (user dave, account vision) has a MaxWall of 01:00:00: "
                "at most 60 minutes per job."
            )
            assert limit_of(cluster, session) == "01:00:00"  # the answer came after the helper: nothing changed
            done = as_hub_account(HELPER, session, "61")  # the helper itself, one minute past
            assert (done.returncode, "MaxWall of 01:00:00" in done.stderr) == (3, True), done.stderr
            assert limit_of(cluster, session) == "01:00:00"
        finally:
            cluster.stop("dave")

"""A session job its owner renames on the real dev cluster: no forged fields, and still the hub's.

Slurm lets a job's owner rename it to anything, a line break included
(`scontrol update JobId=X JobName=$'dsportal\\nfoo'`).  The attacks, before the fix:
- the root helper (`dsportal-extend-session`) read the name as the first field of the one line squeue printed
  for the job, so a name carrying a line break and fields of its own chose the partition the helper checked:
  alice's session on the 1-hour debug partition was given 2 hours;
- the hub listed its sessions' jobs by name, so a renamed job vanished from its listing: the hub took the
  session for ended (its server gone from JupyterHub), and the job ran on, cancelled by no one.
"""

from __future__ import annotations

import subprocess

import pytest

from tests.support.cluster import url_for
from tests.support.http import json_request

HELPER = "/opt/dsportal/venv/bin/dsportal-extend-session"


def as_hub_account(*argv: str) -> subprocess.CompletedProcess:
    """What the hub's service account may run with sudo (deploy/sudoers.d/dsportal)."""
    return subprocess.run(
        ["runuser", "-u", "dsportal", "--", "sudo", "-n", *argv], capture_output=True, text=True, timeout=60
    )


def rename_as_owner(user: str, job_id: str, name: str) -> None:
    """What any job's owner may do: rename it (Slurm takes a line break in the name)."""
    subprocess.run(
        ["runuser", "-u", user, "--", "scontrol", "update", f"JobId={job_id}", f"JobName={name}"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )


def field_of(cluster, job_id: str, key: str) -> str:
    text = cluster.scontrol(job_id)
    start = text.index(f" {key}=") + len(key) + 2
    return text[start:].split(" ", 1)[0].split("\n", 1)[0]


@pytest.mark.slurm
@pytest.mark.alone  # a debug session beside the side lane's count of debug sessions
def test_a_renamed_session_job_gets_no_time_past_its_partitions_limit(cluster):
    alice = cluster.user_token("alice")
    status, _ = json_request(
        "POST", url_for("/hub/api/users/alice/server"), {"partition": "debug", "gpus": 0, "hours": 1}, token=alice
    )
    assert status in (201, 202)
    cluster.wait_ready("alice")
    job = cluster.job_of("alice")
    assert (field_of(cluster, job, "Partition"), field_of(cluster, job, "TimeLimit")) == ("debug", "01:00:00")
    # alice's forged name: squeue's line for her job would begin with what reads as a session on sxm2 (12 h)
    rename_as_owner("alice", job, "dsportal|alice|RUNNING|60|sxm2\nx")
    assert "JobName=dsportal|alice|RUNNING|60|sxm2\nx" in cluster.scontrol(job)

    done = as_hub_account(HELPER, job, "120")
    assert done.returncode == 3, (done.returncode, done.stdout, done.stderr)
    assert f"Job {job} is not a session of this portal" in done.stderr, done.stderr
    # through the hub's API (JupyterLab's button): refused with words, nothing changed
    status, body = json_request("POST", url_for("/hub/api/dsportal/session/extend"), {}, token=alice, timeout=90)
    assert status == 400 and "not a session of this portal" in body["message"], (status, body)
    assert field_of(cluster, job, "TimeLimit") == "01:00:00"

    cluster.stop("alice")  # the hub cancels it by its id, whatever its name
    cluster.wait(lambda: job not in cluster.jobs("alice"), 60, f"alice's renamed job {job} cancelled")


@pytest.mark.slurm
def test_a_renamed_session_job_stays_the_hubs_to_track_and_cancel(cluster):
    alice = cluster.user_token("alice")
    start = url_for("/hub/api/users/alice/server")
    assert json_request("POST", start, {"gpus": 0, "hours": 1}, token=alice)[0] in (201, 202)
    cluster.wait_ready("alice")
    job = cluster.job_of("alice")
    rename_as_owner("alice", job, "mine\nnow")
    assert "JobName=mine\nnow" in cluster.scontrol(job)

    # a second session's start makes the hub list Slurm's jobs afresh, after the rename
    probe = url_for("/hub/api/users/alice/servers/probe")
    assert json_request("POST", probe, {"gpus": 0, "hours": 1}, token=alice)[0] in (201, 202)
    cluster.wait(lambda: (cluster.server("alice", "probe") or {}).get("ready"), 120, "alice's probe ready")
    # starting the running session again makes JupyterHub poll it: the hub still finds its job, running
    status, body = json_request("POST", start, {"gpus": 0, "hours": 1}, token=alice)
    assert status == 400 and "already running" in body["message"], (status, body)
    assert (cluster.server("alice") or {}).get("ready") and cluster.jobs("alice")[job]["state"] == "RUNNING"

    cluster.stop("alice")  # stopped the normal way: cancelled, its end in the history
    cluster.wait(lambda: job not in cluster.jobs("alice"), 60, f"alice's renamed job {job} cancelled")
    history = cluster.request("GET", "/hub/api/users/alice")[1]  # the user model: the session is not running
    assert "" not in history["servers"], history
    page = json_request("GET", url_for("/hub/api/dsportal/session"), token=alice)[1]
    ended = next(h for h in page["history"] if h["job_id"] == job)
    assert ended["why"].startswith("Stopped through the portal"), ended
    cluster.stop_named("alice", "probe")

"""Every session job has an owner, on the real dev cluster: Slurm down or hung, the hub killed, stray jobs.

Each test ends with Slurm's own queue holding no portal job the hub does not
track.  The dev config shortens slurm.stop_timeout (20 s) and
slurm.reconcile_seconds (10 s) so these finish in about a minute each.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.cluster import HUB, ROOT, supervisorctl
from tests.support.demo import password_of
from tests.support.hub import FormBrowser
from tests.support.hublog import HUB_LOG

# the dev cluster to itself (tests/support/lanes.py): stops, pauses and kills Slurm, the hub and the supervisor;
# counts every portal job
pytestmark = pytest.mark.alone

STOPPING = "is stopping (the scheduler is not answering yet)"


def program_pid(name: str) -> int:
    return int(supervisorctl("pid", name).strip())


def slurm_answers() -> bool:
    return subprocess.run(["squeue", "-h"], capture_output=True, timeout=30).returncode == 0


def untracked_jobs(cluster) -> list[str]:
    """Portal jobs in Slurm's queue (pending or running) of users the hub shows no server for."""
    out = subprocess.run(
        ["squeue", "-h", "--name=dsportal", "-o", "%i|%u"], capture_output=True, text=True, timeout=30, check=True
    ).stdout
    jobs = [line.split("|") for line in out.split()]
    return [job for job, user in jobs if not cluster.server(user)]


def start_hub_again(cluster) -> None:
    supervisorctl("start", "jupyterhub")
    cluster.wait(lambda: cluster.request("GET", "/hub/api/")[0] == 200, 90, "the hub answering")


@pytest.fixture
def slurm_restored(cluster):
    """Whatever a test does to slurmctld or the hub, both answer again afterwards."""
    yield cluster
    subprocess.run(["pkill", "-CONT", "-x", "slurmctld"], timeout=30)
    supervisorctl("start", "slurmctld")
    subprocess.run(["scontrol", "update", "PartitionName=sxm2", "State=UP"], capture_output=True, timeout=30)
    supervisorctl("start", "jupyterhub")
    cluster.wait(slurm_answers, 60, "slurmctld answering")
    cluster.wait(lambda: cluster.request("GET", "/hub/api/")[0] == 200, 90, "the hub answering")


def test_a_stop_during_a_slurm_outage_keeps_the_job_until_slurm_confirms_it_gone(slurm_restored):
    cluster = slurm_restored
    cluster.start("alice", {"gpus": 1, "hours": 1})
    cluster.wait_ready("alice")
    job_id = cluster.job_of("alice")
    supervisorctl("stop", "slurmctld")
    status, _ = cluster.request("DELETE", "/hub/api/users/alice/server", timeout=60)
    assert status in (202, 204)
    cluster.wait(lambda: not cluster.server("alice"), 90, "the stop handed to the reconciler")

    # the user is told, and a new session waits for the old job
    browser = FormBrowser(HUB)
    assert browser.login("alice", password_of("alice"))[0] == 302
    status, page, _ = browser.get("/hub/home")
    assert status == 200 and f"Your previous session (job {job_id}) {STOPPING}" in page
    # refused with those words: at once (409), or on the progress page when the refusal took over a second
    status, body = cluster.request("POST", "/hub/api/users/alice/server", {"gpus": 1}, timeout=60)
    if status == 409:
        assert STOPPING in body["message"], body
    else:
        assert status in (201, 202), (status, body)
        assert any(STOPPING in m for m in cluster.progress("alice", until=STOPPING, timeout=90))

    supervisorctl("start", "slurmctld")
    cluster.wait(slurm_answers, 60, "slurmctld answering")
    cluster.wait(lambda: job_id not in cluster.jobs(), 90, f"job {job_id} cancelled once Slurm answered")
    assert untracked_jobs(cluster) == []
    assert cluster.start("alice", {"gpus": 1, "hours": 1}) in (201, 202)
    cluster.wait_ready("alice")
    assert cluster.job_of("alice") != job_id


def test_a_hub_killed_while_a_session_waits_in_the_queue_cancels_that_job_when_it_comes_back(slurm_restored):
    cluster = slurm_restored
    subprocess.run(["scontrol", "update", "PartitionName=sxm2", "State=DOWN"], check=True, timeout=30)
    cluster.start("alice", {"gpus": 1, "hours": 1})
    job_id = cluster.job_of("alice")
    assert cluster.jobs("alice")[job_id]["state"] == "PENDING"
    os.kill(program_pid("jupyterhub"), signal.SIGKILL)  # a crash: no shutdown code runs
    subprocess.run(["scontrol", "update", "PartitionName=sxm2", "State=UP"], check=True, timeout=30)
    start_hub_again(cluster)
    cluster.wait(lambda: job_id not in cluster.jobs(), 90, f"the abandoned start's job {job_id} cancelled")
    assert not cluster.server("alice") and untracked_jobs(cluster) == []


def test_a_hub_crash_keeps_running_sessions_and_says_how_long_reattaching_took(slurm_restored):
    cluster = slurm_restored
    for user in ("alice", "bob"):
        cluster.start(user, {"gpus": 1, "hours": 1})
    jobs = {user: cluster.wait_ready(user) and cluster.job_of(user) for user in ("alice", "bob")}
    os.kill(program_pid("jupyterhub"), signal.SIGKILL)
    began = time.monotonic()
    start_hub_again(cluster)
    for user in ("alice", "bob"):
        cluster.wait(
            lambda user=user: cluster.request("GET", f"/user/{user}/api/status")[0] == 200, 60, f"{user} reachable"
        )
    print(f"\nhub crash: restarted and both sessions answering again after {time.monotonic() - began:.1f} s")
    assert {user: cluster.job_of(user) for user in ("alice", "bob")} == jobs  # none lost, none replaced


def test_a_stray_portal_job_is_cancelled(cluster):
    out = subprocess.run(
        [
            "sudo",
            "-u",
            "bob",
            "sbatch",
            "--parsable",
            "--job-name=dsportal",
            "--partition=sxm2",
            "--chdir=/home/bob",
            "--output=/dev/null",
            "--wrap",
            "sleep 600",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    job_id = out.strip().split(";")[0]
    cluster.wait(lambda: cluster.jobs().get(job_id, {}).get("state") == "RUNNING", 30, f"stray job {job_id} running")
    cluster.wait(lambda: job_id not in cluster.jobs(), 60, f"stray job {job_id} cancelled")
    assert f"Job {job_id} of bob" in HUB_LOG.read_text() and untracked_jobs(cluster) == []


def test_an_sbatch_that_timed_out_is_a_clear_error_and_leaves_no_job(slurm_restored):
    cluster = slurm_restored
    subprocess.run(["pkill", "-STOP", "-x", "slurmctld"], check=True, timeout=30)
    try:
        assert cluster.start("bob", {"gpus": 1, "hours": 1}) in (201, 202)
        message = "not answering, so no session was started"
        assert any(message in m for m in cluster.progress("bob", until=message, timeout=90))
    finally:
        subprocess.run(["pkill", "-CONT", "-x", "slurmctld"], check=True, timeout=30)
    cluster.wait(slurm_answers, 60, "slurmctld answering")
    # whatever sbatch queued meanwhile is the reconciler's: within two of its passes the queue holds nothing of bob's
    cluster.wait(lambda: not cluster.jobs("bob"), 60, "no job of bob in the queue")
    assert untracked_jobs(cluster) == []


def test_a_session_start_runs_no_login_shell(cluster):
    profile = Path("/home/alice/.profile")
    marker = Path("/home/alice/.dsportal-login-shell-ran")
    original = profile.read_bytes() if profile.exists() else None
    marker.unlink(missing_ok=True)
    with open(profile, "a") as f:
        f.write(f"\ntouch {marker}  # written by tests/integration/test_ownership.py\n")
    try:
        subprocess.run(["sudo", "-u", "alice", "bash", "-lc", "true"], check=True, timeout=30)
        assert marker.exists()  # the marker works: a login shell leaves it
        marker.unlink()
        cluster.start("alice", {"gpus": 1, "hours": 1})
        cluster.wait_ready("alice")
        assert not marker.exists(), "sbatch ran alice's login shell (SLURM_GET_USER_ENV)"
    finally:
        if original is None:
            profile.unlink()
        else:
            profile.write_bytes(original)
        marker.unlink(missing_ok=True)


def test_devcluster_up_after_its_supervisor_died_restarts_what_was_left_running(slurm_restored):
    cluster = slurm_restored
    cluster.start("bob", {"gpus": 1, "hours": 1})
    cluster.wait_ready("bob")
    job_id = cluster.job_of("bob")
    supervisord = int(Path("/run/dsportal-dev-supervisord.pid").read_text())
    os.kill(supervisord, signal.SIGKILL)  # the proxy, slurmctld, slapd ... keep running, orphaned
    os.kill(program_pid_from_proc("jupyterhub"), signal.SIGKILL)  # and the hub crashes with it
    up = subprocess.run(
        ["/usr/bin/python3", "-m", "deploy.dev", "up"], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert up.returncode == 0, up.stdout + up.stderr
    assert "outlived the supervisord that started it" in up.stdout + up.stderr
    status = subprocess.run(
        ["/usr/bin/python3", "-m", "deploy.dev", "status"], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert status.returncode == 0, status.stdout
    cluster.wait(lambda: cluster.request("GET", "/user/bob/api/status")[0] == 200, 90, "bob's session reachable")
    assert cluster.job_of("bob") == job_id


def program_pid_from_proc(name: str) -> int:
    """A supervised program's pid without its supervisord (which is gone): by its command line."""
    out = subprocess.run(
        ["pgrep", "-u", "dsportal", "-f", f"bin/{name} "], capture_output=True, text=True, timeout=30
    ).stdout.split()
    assert len(out) == 1, out
    return int(out[0])
